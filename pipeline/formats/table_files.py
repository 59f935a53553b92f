"""Reading and writing the files a command's user names (the rate-period files: CSV or Parquet chosen by extension;
any --out file written whole), with clear errors.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import polars as pl

from pipeline.store.object_store import write_local_file
from schemas.rating_list import POOL_ENTRY

if TYPE_CHECKING:
    from polars._typing import PolarsDataType


class InputFileError(ValueError):
    """A user-supplied file cannot be used; the message names the file, the line and the problem."""


def read_table(path: str | Path, what: str) -> pl.DataFrame:
    """Read a CSV (all columns as text, so that bad values are reported, not guessed) or Parquet file."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: {what} file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix in (".csv", ".txt"):
            return read_csv_text(path, path, what)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputFileError(f"{path}: cannot read {what}: {first_line(exc)}") from None
    raise InputFileError(f"{path}: {what} must be a .csv or .parquet file")


def first_line(error: BaseException) -> str:
    """An error's first line: Polars follows its message with advice about its own options, no help to the user."""
    return (str(error).strip().splitlines() or [""])[0]


def read_csv_text(data: str | Path | BinaryIO, path: str | Path, what: str) -> pl.DataFrame:
    """A CSV file (`data`, read from `path`) with every column as text; a file Polars cannot read raises an
    InputFileError naming `path`, the first line whose fields do not match the header's, and the header.
    """
    try:
        return pl.read_csv(data, infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        if not isinstance(data, (str, Path)):
            data.seek(0)
        problem = _ragged_line(data, what)
        raise InputFileError(f"{path}: {problem or f'cannot read {what}: {first_line(exc)}'}") from None


# What a header shown in an error may hold: a file of another kind (a TRF, a PGN) can have a long first line.
_HEADER_SHOWN = 60


def _ragged_line(data: str | Path | BinaryIO, what: str) -> str | None:
    """'line N: ...' for the first record with more fields than the header names (Polars takes fewer as blanks) or
    with quotes Python's csv module cannot close; read on the error's path only. None when neither is found.
    """
    handle = open(data, "rb") if isinstance(data, (str, Path)) else data
    line = 1
    try:
        records = csv.reader(io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline=""), strict=True)
        header = next(records, [])
        line = records.line_num + 1
        for record in records:
            if len(record) > len(header):
                shown = ", ".join(header)
                shown = shown if len(shown) <= _HEADER_SHOWN else shown[: _HEADER_SHOWN - 3] + "..."
                columns = f"{len(header)} column{'s' if len(header) != 1 else ''}"
                return (
                    f"line {line}: {len(record)} fields, where the header (line 1: {shown}) names {columns}: a {what} "
                    "file's lines each hold one field per column of its header"
                )
            line = records.line_num + 1
        return None
    except csv.Error as error:
        reason = "a quote opened on it is never closed" if str(error) == "unexpected end of data" else str(error)
        return f"line {line}: cannot read {what}: {reason}"
    finally:
        if isinstance(data, (str, Path)):
            handle.close()


def write_file_whole(path: str | Path, write: Callable[[BinaryIO], object], option: str = "--out") -> None:
    """What `write` writes into a binary handle, as the file `path` the user named with `option`, whole or not at all
    (the store's local writer: a write that fails leaves the old file and no other). A symlink's file is the one
    replaced, beside it; an existing file keeps its permission bits, and one the user may not write (or that nobody
    may: no write bit) is refused; a FIFO or a device (/dev/stdout) is written into, not replaced. The folder must
    exist. Errors name `option` and `path`, not the file made beside it.
    """
    named = f"{option} {path}" if option else str(path)
    try:
        status: os.stat_result | None = os.stat(path)  # through a symlink: what the user's path names
    except FileNotFoundError:
        status = None
    except OSError as error:  # a loop of symlinks, a file where a folder should be
        raise OSError(f"{named}: cannot be written: {error.strerror or error}") from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OSError(f"{named}: is a folder, not a file")
    if status is not None and not stat.S_ISREG(status.st_mode):
        try:
            with open(path, "wb") as handle:
                write(handle)
        except OSError as error:
            raise OSError(f"{named}: cannot be written: {error.strerror or error}") from None
        return
    folder = os.path.dirname(path) or "."
    if status is None and not os.path.islink(path) and not os.path.isdir(folder):
        raise OSError(f"{named}: folder {folder} does not exist (create it first)")
    # A symlink is followed to its file (a dangling one to the file it names), which is made beside that file.
    target = os.path.realpath(path)
    if status is not None and (not os.access(target, os.W_OK) or not status.st_mode & 0o222):
        raise OSError(f"{named}: is read-only: not replaced (make it writable, or name another file)")
    try:
        write_local_file(target, write, None if status is None else stat.S_IMODE(status.st_mode) & 0o777)
    except OSError as error:
        beside = "" if error.filename in (None, target) else f" (making a file beside it in {os.path.dirname(target)})"
        raise OSError(f"{named}: cannot be written: {error.strerror or error}{beside}") from None


def write_table(frame: pl.DataFrame, path: str | Path) -> None:
    """Write by extension (write_file_whole); in CSV the nested `pending` pool is stored as JSON text."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise InputFileError(f"--out {path}: must be a .csv or .parquet file")
    if suffix == ".parquet":
        write_file_whole(path, frame.write_parquet)
        return
    if "pending" in frame.columns:
        frame = frame.with_columns(
            pl.struct("pending").struct.json_encode().str.slice(11).str.head(-1).alias("pending")
        )
    write_file_whole(path, frame.write_csv)


def decode_pending(frame: pl.DataFrame) -> pl.DataFrame:
    """Undo write_table's JSON encoding of the newcomer pool when a list comes back from CSV."""
    if "pending" in frame.columns and frame.schema["pending"] == pl.Utf8:
        return frame.with_columns(pl.col("pending").fill_null("[]").str.json_decode(pl.List(POOL_ENTRY)))
    return frame


def converted(
    frame: pl.DataFrame, column: str, dtype: PolarsDataType, path: str | Path, what: str, allowed: str = ""
) -> pl.Series:
    """Cast a text column, raising an error that names the first bad line (header is line 1)."""
    raw = frame[column]
    values = raw.cast(dtype, strict=False) if raw.dtype != dtype else raw
    bad = raw.is_not_null() & values.is_null()
    if raw.dtype == pl.Utf8:
        bad = bad & (raw.str.strip_chars() != "")
    if bad.any():
        index = int(bad.arg_true()[0])
        hint = f" ({allowed})" if allowed else ""
        raise InputFileError(
            f"{path}: line {index + 2}: {what} column {column!r} has {raw[index]!r}, not a valid value{hint}"
        )
    return values
