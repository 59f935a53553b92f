"""What every dump reader shares.

The RawGames columns it fills, the dump handle and its errors, event keys, the reasons a reader settles, and the
finished frame with its record ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import polars as pl

from pipeline.formats.byes import with_byes
from pipeline.hashing import continue_hash, hash_state  # the record id is stable_hash of the key
from pipeline.text import capped_detail
from schemas.raw_games import RawGames
from schemas.util import conform, polars_schema

if TYPE_CHECKING:
    pass

RAW_SCHEMA = polars_schema(RawGames)

#: Columns a format reader fills itself; the rest (month, federation, ...) come from `finish_records`.
RECORD_COLUMNS = [
    "source_line",
    "position",
    "raw_text",
    "parse_error",
    "event_id",
    "event_start",
    "event_end",
    "date",
    "date_from",
    "date_to",
    "round",
    "white_id",
    "black_id",
    "white_name",
    "black_name",
    "result",
    "unplayed",
    "time_control",
    "tc_base_seconds",
    "tc_increment_seconds",
    "white_rating",
    "black_rating",
    "colour_known",
    "white_title",
    "black_title",
    "white_federation",
    "black_federation",
]

COMPRESSION_SUFFIXES = (".gz", ".zst")


class UnreadableDump(Exception):
    """The bytes of a dump cannot be turned into text or a table (the whole file is quarantined)."""


class DumpTooLarge(UnreadableDump):
    """A dump beyond MAX_DECOMPRESSED_BYTES or MAX_LINES_PER_FILE (quarantined whole, its name in the reason)."""


class StorageReadError(OSError):
    """Reading a DumpFile from storage failed: the store's problem, not the dump's (raised, never quarantined)."""


def unread_reason(error: OSError) -> str | None:
    """Why a listed dump could not be read when the file failed, not the store: gone since the landing zone was
    listed, or refused; None for any other error (the store unreachable, EIO), which no other read would escape.
    """
    while isinstance(error.__cause__, OSError):  # StorageReadError's wrapping of the store's own error
        error = error.__cause__
    if isinstance(error, FileNotFoundError):
        return "the file is gone: it was deleted or renamed after the landing zone was listed"
    if isinstance(error, (PermissionError, IsADirectoryError, NotADirectoryError)):
        return f"the file could not be read: {type(error).__name__}: {error.strerror or error}"
    return None


class DumpFile:
    """A dump in storage, opened only when its reader needs it, in place of its bytes (see read_dumps).

    A .pgn.zst is decompressed straight from `open()`'s file object, so that the compressed file is
    never held whole either; every other dump is `read()` whole, as its reader needs all of it.
    `opener` returns a new binary file object at the start of the dump each time it is called;
    `closes`: whether the readers close that object when done (False for a caller's own handle).
    """

    def __init__(self, opener: Callable[[], BinaryIO], closes: bool = True) -> None:
        self._opener = opener
        self.closes = closes

    def open(self) -> BinaryIO:
        try:
            return self._opener()
        except Exception as error:
            raise StorageReadError(f"cannot open the dump: {error}") from error

    def read(self, size: int = -1) -> bytes:
        """The dump's bytes (the first `size` of them when size >= 0)."""
        handle = self.open()
        try:
            return handle.read(size)
        except Exception as error:
            raise StorageReadError(f"cannot read the dump: {error}") from error
        finally:
            if self.closes:
                handle.close()


# -- names -----------------------------------------------------------------------------------------
def strip_compression(name: str) -> tuple[str, str | None]:
    """'a/b.pgn.gz' -> ('a/b.pgn', 'gz'); names without a compression suffix come back unchanged."""
    for suffix in COMPRESSION_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, None


def event_key(name: str) -> str:
    """The dump's key without compression and format extensions: the default event id."""
    inner, _ = strip_compression(name)
    slash = inner.rfind("/")
    dot = inner.rfind(".")
    return inner[:dot] if dot > slash + 1 else inner


# -- byes written as an opponent, reasons a reader settles -----------------------------------------
# Quarantine reasons a reader decides itself (schemas.quarantine): a record whose parse_error reads
# '<reason>: <detail>' is quarantined under that reason, not as unparseable (pipeline.validate.split).
DUPLICATE_PLAYER = "duplicate_player"  # TRF: one FIDE id on two 001 lines of a file
CONFLICTING_TAGS = "conflicting_tags"  # PGN: a tag given twice in a game with different values
READER_REASONS = (DUPLICATE_PLAYER, CONFLICTING_TAGS)


# Formats whose reader leaves its byes to finish_batch (with_byes); TRF and PGN mark theirs where it is cheap.
_BYES_AT_FINISH = ("csv", "parquet")


# -- output ----------------------------------------------------------------------------------------
def finish_records(records: pl.DataFrame, source_file: str, federation: str, month: str, fmt: str) -> pl.DataFrame:
    """Add the landing-zone columns and the record id, fill absent columns, conform to RawGames."""
    return finish_batch(
        records.with_columns(pl.lit(0, dtype=pl.Int32).alias("file")), [source_file], [federation], month, fmt
    )


def finish_batch(
    records: pl.DataFrame, source_files: list[str], federations: list[str], month: str, fmt: str
) -> pl.DataFrame:
    """finish_records for the records of many dumps; `records.file` indexes source_files / federations."""
    missing = [
        pl.lit(None, dtype=RAW_SCHEMA.get(name, pl.Utf8)).alias(name)
        for name in RECORD_COLUMNS
        if name not in records.columns
    ]
    file = records["file"].cast(pl.Int64).to_numpy()
    records = records.with_columns(missing)
    if fmt in _BYES_AT_FINISH:
        records = with_byes(records)
    records = records.with_columns(
        pl.lit(month).alias("month"),
        pl.Series("federation", federations, dtype=pl.Utf8).gather(file),
        pl.Series("source_file", source_files, dtype=pl.Utf8).gather(file),
        pl.lit(fmt).alias("format"),
        pl.col("raw_text").fill_null(""),
        capped_detail(pl.col("parse_error")).alias("parse_error"),
    )
    # record_id = stable_hash('<source_file>:<source_line>:<position>'), the file part hashed once per file.
    states = np.array([hash_state(name + ":") for name in source_files], dtype=np.uint64)
    states = states[file] if len(file) else np.zeros(0, np.uint64)
    record_id = record_ids(states, records["source_line"], records["position"])
    return conform(records.with_columns(record_id), RawGames)


def record_ids(states: np.ndarray, source_line: pl.Series, position: pl.Series) -> pl.Series:
    """continue_hash(states, '<source_line>:<position>' of each row), without making those strings.

    FNV-1a is a left fold over the bytes: the line's digits, then ':', then the position's bytes.
    A row whose line or position is null hashes no suffix at all (its suffix is null, read as '').
    """
    line_text, position_text = source_line.cast(pl.Utf8), position.cast(pl.Utf8)
    hashes = continue_hash(states.astype(np.uint64, copy=True), line_text)
    hashes = hash_state(":", hashes)
    hashes = continue_hash(hashes, position_text)
    missing = (line_text.is_null() | position_text.is_null()).to_numpy()
    if missing.any():
        hashes[missing] = states[missing]
    return pl.Series("record_id", hashes, dtype=pl.UInt64)


def unreadable_record(
    source_file: str,
    federation: str,
    month: str,
    fmt: str,
    problem: str,
    raw_text: str = "",
    source_line: int = 1,
    position: str = "file",
) -> pl.DataFrame:
    """The single RawGames row standing for a dump that could not be read at all (or for an unreadable part of it)."""
    record = pl.DataFrame(
        {"source_line": [source_line], "position": [position], "raw_text": [raw_text], "parse_error": [problem]},
        schema={"source_line": pl.Int64, "position": pl.Utf8, "raw_text": pl.Utf8, "parse_error": pl.Utf8},
    )
    return finish_records(
        record.with_columns(pl.lit(event_key(source_file)).alias("event_id")), source_file, federation, month, fmt
    )


def preview(data: bytes, limit: int = 200) -> str:
    """A printable excerpt of unreadable bytes for the quarantine's raw_text."""
    return data[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
