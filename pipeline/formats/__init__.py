"""Readers of the landing-zone dump formats (TRF, PGN, CSV, Parquet), each turning bytes into RawGames rows."""

from __future__ import annotations

import polars as pl

from pipeline.formats.common import (
    UnreadableDump,
    decode_text,
    decompress,
    event_key,
    finish_batch,
    finish_records,
    preview,
    strip_compression,
    unreadable_record,
)
from pipeline.formats.pgn import parse_pgn_bytes
from pipeline.formats.tabular import parse_csv, parse_parquet
from pipeline.formats.trf import is_trf_text, parse_trf_batch

#: Extension (after any .gz/.zst) -> format code in RawGames.format. '.txt' is TRF when it looks like TRF.
EXTENSION_FORMATS = {".trf": "trf", ".txt": "trf", ".pgn": "pgn", ".csv": "csv", ".parquet": "parquet"}
UNKNOWN_FORMAT = "unknown"
# TRF texts parsed in one batch: large enough to amortise Polars' per-call cost over many files.
TRF_BATCH_CHARACTERS = 64 << 20

__all__ = ["EXTENSION_FORMATS", "UNKNOWN_FORMAT", "detect_format", "read_dump", "read_dumps"]


def detect_format(name: str) -> str:
    """Format code of a dump from its name; 'unknown' for extensions the pipeline does not read."""
    inner, _ = strip_compression(name)
    lowered = inner.lower()
    for extension, fmt in EXTENSION_FORMATS.items():
        if lowered.endswith(extension):
            return fmt
    return UNKNOWN_FORMAT


def inner_name_is_txt(name: str) -> bool:
    """'.txt' dumps are TRF only when their content says so (federations also upload notes)."""
    return strip_compression(name)[0].lower().endswith(".txt")


def read_dump(data: bytes, name: str, federation: str, month: str) -> pl.DataFrame:
    """RawGames rows of one dump; bad content becomes a parse_error row, never an exception.

    `name` is the dump's key relative to raw/ (e.g. 'GER/2024-01/open-a.trf'): it is the
    source_file of every row and, without extensions, the default event id.
    """
    return read_dumps([(data, name, federation)], month)[0]


def read_dumps(dumps: list[tuple[bytes, str, str]], month: str) -> list[pl.DataFrame]:
    """RawGames rows of many dumps (bytes, name, federation) of one month, in the same order.

    TRF files are parsed together in batches (a month holds thousands of small tournament files);
    the other formats file by file.
    """
    results: list[pl.DataFrame | None] = [None] * len(dumps)
    trf: list[tuple[int, str]] = []  # (dump index, decoded text)
    for index, (data, name, federation) in enumerate(dumps):
        fmt = detect_format(name)
        try:
            if fmt == UNKNOWN_FORMAT:
                raise UnreadableDump(f"unknown file type {name.rsplit('/', 1)[-1]!r}")
            content = decompress(data, strip_compression(name)[1])
            if fmt == "trf":
                text = decode_text(content)
                if not text.strip():
                    raise UnreadableDump("empty file")
                if inner_name_is_txt(name) and not is_trf_text(text):
                    raise UnreadableDump("text file does not start with TRF records")
                trf.append((index, text))
                continue
            results[index] = finish_records(_parse_other(content, name, fmt), name, federation, month, fmt)
        except UnreadableDump as problem:
            results[index] = unreadable_record(name, federation, month, fmt, str(problem), preview(data))
    for batch in _trf_batches(trf):
        names = [dumps[index][1] for index, _ in batch]
        records = parse_trf_batch([text for _, text in batch], [event_key(name) for name in names])
        finished = finish_batch(records, names, [dumps[index][2] for index, _ in batch], month, "trf")
        by_file = finished.with_columns(records["file"]).partition_by("file", as_dict=True, include_key=False)
        for position, (index, _) in enumerate(batch):
            results[index] = by_file[(position,)]
    return results


def _parse_other(content: bytes, name: str, fmt: str) -> pl.DataFrame:
    """Records of a PGN, CSV or Parquet dump (raises UnreadableDump for content that is not one)."""
    key = event_key(name)
    if fmt == "parquet":
        return parse_parquet(content, key)
    if not content or content.isspace():  # isspace stops at the first other byte; strip would copy the file
        raise UnreadableDump("empty file")
    if fmt == "pgn":
        return parse_pgn_bytes(content, key)
    return parse_csv(decode_text(content), key)


def _trf_batches(trf: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Consecutive groups of TRF texts of at most TRF_BATCH_CHARACTERS (one group at least per file)."""
    batches: list[list[tuple[int, str]]] = []
    size = TRF_BATCH_CHARACTERS
    for item in trf:
        if size + len(item[1]) > TRF_BATCH_CHARACTERS:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += len(item[1])
    return batches
