"""Reading and writing the files a command's user names, with clear errors.

The rate-period files: CSV or Parquet chosen by extension; any --out file written whole.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import polars as pl

from pipeline.formats.tabular import HEADER_CHUNK, header_too_wide, parquet_too_many_columns
from pipeline.months import MONTH_PATTERN
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
            too_wide = parquet_too_many_columns(path)
            if too_wide is not None:
                raise InputFileError(f"{path}: cannot read {what}: {too_wide}")
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
    too_wide = too_wide_header(data)
    if too_wide is not None:
        raise InputFileError(f"{path}: cannot read {what}: {too_wide}")
    try:
        frame = pl.read_csv(data, infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        if not isinstance(data, (str, Path)):
            data.seek(0)
        problem = _ragged_line(data, what)
        raise InputFileError(f"{path}: {problem or f'cannot read {what}: {first_line(exc)}'}") from None
    # Polars names a header's second column of one name NAME_duplicated_0: which of the two is meant is the user's say.
    for name in frame.columns:
        first = re.sub(r"_duplicated_\d+$", "", name)
        if first != name and first in frame.columns:
            raise InputFileError(f"{path}: line 1: column {first!r} is named twice in the header of the {what} file")
    return frame


def too_wide_header(data: str | Path | BinaryIO) -> str | None:
    """tabular.header_too_wide of a CSV file, read in blocks up to its header's end, never held (a BinaryIO is read
    from and rewound): Polars allocates per column before it reads a row.
    """
    handle = open(data, "rb") if isinstance(data, (str, Path)) else data
    try:
        return header_too_wide(iter(partial(handle.read, HEADER_CHUNK), b""))
    finally:
        if isinstance(data, (str, Path)):
            handle.close()
        else:
            handle.seek(0)


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


#: What a pool entry (write_table's JSON of POOL_ENTRY) holds, for an error's hint.
_POOL_SHAPE = '[{"month": "YYYY-MM", "games": N, "points_x2": N, "opponent_rating_sum": N}, ...]'


def decode_pending(frame: pl.DataFrame, path: str | Path = "", month: str | None = None) -> pl.DataFrame:
    """Undo write_table's JSON encoding of the newcomer pool when a list comes back from CSV, checking each entry: a
    month YYYY-MM no later than `month`, games at least 1, half points from 0 to twice the games, an opponents' sum
    from 0; an entry lacking a key (a renamed one) or of another shape is refused with its line, not dropped.
    """
    if "pending" not in frame.columns:
        return frame
    raw = frame["pending"]
    if raw.dtype == pl.Utf8:
        text = raw.str.strip_chars().fill_null("[]")
        text = pl.select(pl.when(text == "").then(pl.lit("[]")).otherwise(text)).to_series()
        try:
            pools = text.str.json_decode(pl.List(POOL_ENTRY))
        except pl.exceptions.PolarsError:
            pools = None
        if pools is None or pools.null_count():
            index = _first_bad_pool(text)
            raise InputFileError(
                f"{path}: {where(path, index)}: previous list column 'pending' has {raw[index]!r}, not a pool "
                f"({_POOL_SHAPE})"
            )
    elif raw.dtype == pl.List(POOL_ENTRY) or raw.dtype == pl.Null:
        pools = raw.cast(pl.List(POOL_ENTRY))
    else:
        raise InputFileError(f"{path}: previous list column 'pending' holds {raw.dtype} values, not pools")
    entries = pl.DataFrame({"row": pl.int_range(0, len(pools), eager=True), "pending": pools}).explode("pending")
    entries = entries.filter(pl.col("pending").is_not_null()).unnest("pending")
    fields = [pl.col(name) for name in POOL_ENTRY.to_schema()]
    bad = (
        pl.any_horizontal(field.is_null() for field in fields)
        | ~pl.col("month").str.contains(MONTH_PATTERN.pattern)
        | (pl.col("games") < 1)
        | (pl.col("points_x2") < 0)
        | (pl.col("points_x2") > 2 * pl.col("games"))
        | (pl.col("opponent_rating_sum") < 0)
    )
    if month is not None:
        bad = bad | (pl.col("month") > month)
    wrong = entries.filter(bad.fill_null(True))
    if wrong.height:
        index = int(wrong["row"][0])
        later = f" no later than {month}" if month else ""
        raise InputFileError(
            f"{path}: {where(path, index)}: previous list column 'pending' has {raw[index]!r}, not a pool "
            f"(entries {_POOL_SHAPE}: a month YYYY-MM{later}, games from 1, points_x2 from 0 to twice the games)"
        )
    return frame.with_columns(pools.alias("pending"))


def _first_bad_pool(text: pl.Series) -> int:
    """The row of the first pool that is not POOL_ENTRY's JSON (on the error's path only: one row at a time)."""
    for index, cell in enumerate(text):
        try:
            value = json.loads(cell)
        except ValueError:
            return index
        if not isinstance(value, list) or not all(
            isinstance(entry, dict)
            and set(entry) == set(POOL_ENTRY.to_schema())
            and isinstance(entry["month"], str)
            and all(
                isinstance(entry[key], int) and not isinstance(entry[key], bool)
                for key in POOL_ENTRY.to_schema()
                if key != "month"
            )
            for entry in value
        ):
            return index
    return 0


def where(path: str | Path, index: int) -> str:
    """Where row `index` (from 0) of a file stands as its user counts: a CSV's line (the header is line 1), a Parquet
    file's row (from 1: it has no header line).
    """
    return f"row {index + 1}" if Path(path).suffix.lower() == ".parquet" else f"line {index + 2}"


def _kind(dtype: PolarsDataType) -> str:
    if dtype.is_integer():
        return "whole numbers"
    if dtype.is_numeric():
        return "numbers"
    return "true/false values" if dtype == pl.Boolean else "text"


def converted(
    frame: pl.DataFrame,
    column: str,
    dtype: PolarsDataType,
    path: str | Path,
    what: str,
    allowed: str = "",
    low: int | None = None,
    high: int | None = None,
) -> pl.Series:
    """Cast a text column (or a Parquet file's typed one), raising an error that names the first bad line or row, the
    column and what it allows: a value that does not parse, a fraction where whole numbers are due (a cast would
    truncate it), or one outside `low`..`high`. A Parquet column of another kind (a boolean or a list for a number) is
    refused whole, naming its type.
    """
    raw = frame[column]
    same_kind = raw.dtype in (dtype, pl.Utf8, pl.Null) or (dtype.is_numeric() and raw.dtype.is_numeric())
    if not same_kind:
        raise InputFileError(
            f"{path}: {what} column {column!r} holds {raw.dtype} values, not {_kind(dtype)}"
            + (f" ({allowed})" if allowed else "")
        )
    values = raw.cast(dtype, strict=False) if raw.dtype != dtype else raw
    bad = raw.is_not_null() & values.is_null()
    if raw.dtype == pl.Utf8:
        bad = bad & (raw.str.strip_chars() != "")
    if dtype.is_integer() and raw.dtype.is_float():
        bad = bad | (raw.is_not_null() & (raw != raw.floor())).fill_null(True)
    if low is not None:
        bad = bad | (values < low).fill_null(False)
    if high is not None:
        bad = bad | (values > high).fill_null(False)
    if bad.any():
        index = int(bad.arg_true()[0])
        if not allowed and low is not None:
            allowed = f"a {_kind(dtype)[:-1]} from {low}" + (f" to {high}" if high is not None else " up")
        hint = f" ({allowed})" if allowed else ""
        raise InputFileError(
            f"{path}: {where(path, index)}: {what} column {column!r} has {raw[index]!r}, not a valid value{hint}"
        )
    return values
