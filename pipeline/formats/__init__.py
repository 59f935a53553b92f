"""Readers of the landing-zone dump formats (TRF, PGN, CSV, Parquet), each turning bytes into RawGames rows."""

from __future__ import annotations

import polars as pl

from pipeline.formats.common import (
    UnreadableDump,
    decode_text,
    decompress,
    event_key,
    finish_records,
    preview,
    strip_compression,
    unreadable_record,
)
from pipeline.formats.pgn import parse_pgn
from pipeline.formats.tabular import parse_csv, parse_parquet
from pipeline.formats.trf import is_trf_text, parse_trf

#: Extension (after any .gz/.zst) -> format code in RawGames.format. '.txt' is TRF when it looks like TRF.
EXTENSION_FORMATS = {".trf": "trf", ".txt": "trf", ".pgn": "pgn", ".csv": "csv", ".parquet": "parquet"}
UNKNOWN_FORMAT = "unknown"

__all__ = ["EXTENSION_FORMATS", "UNKNOWN_FORMAT", "detect_format", "read_dump"]


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
    fmt = detect_format(name)
    if fmt == UNKNOWN_FORMAT:
        return unreadable_record(name, federation, month, fmt, f"unknown file type {name.rsplit('/', 1)[-1]!r}", preview(data))
    _, compression = strip_compression(name)
    key = event_key(name)
    try:
        content = decompress(data, compression)
        if fmt == "parquet":
            records = parse_parquet(content, key)
        else:
            text = decode_text(content)
            if not text.strip():
                raise UnreadableDump("empty file")
            if fmt == "trf":
                if inner_name_is_txt(name) and not is_trf_text(text):
                    raise UnreadableDump("text file does not start with TRF records")
                records = parse_trf(text, key)
            elif fmt == "pgn":
                records = parse_pgn(text, key)
            else:
                records = parse_csv(text, key)
    except UnreadableDump as problem:
        return unreadable_record(name, federation, month, fmt, str(problem), preview(data))
    return finish_records(records, name, federation, month, fmt)
