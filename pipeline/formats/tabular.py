"""CSV and Parquet game tables -> raw records; every cell is read as text so bad cells become parse errors."""

from __future__ import annotations

import csv
import difflib
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.formats.common import UnreadableDump
from pipeline.formats.decoding import (
    MAX_DECOMPRESSED_BYTES,
    MAX_ROWS_PER_FILE,
    decoded_cap_message,
    row_cap_message,
    split_lines,
)
from pipeline.formats.fields import (
    KAGGLE_COLUMNS,
    blank_to_null,
    classify_time_control,
    int_error,
    join_errors,
    month_cell_error,
    parse_flag,
    parse_int,
    parse_iso_date,
    parse_month_cell,
    quoted,
    result_as_read,
)
from schemas.games import TIME_CONTROLS

# The columns of a games CSV or Parquet file (README, "Rating your own federation's files"): a file needs the two
# ids and the result, written as `result` or as White's score (`white_score`, Kaggle's Player1Score).
REQUIRED = ["white_id", "black_id", "result"]
SCORE = "white_score"  # may stand for `result`
OPTIONAL = [
    "event_id",
    "event_start",
    "date",
    "month",
    "round",
    "time_control",
    "tc_base_seconds",
    "tc_increment_seconds",
    "white_rating",
    "black_rating",
    "white_name",
    "black_name",
    SCORE,
    "colour_known",
]
# Other spellings met in hand-made files (the rate-period GAMES layout says "ratings used"), and the Kaggle 2011
# contest's names, which `ratings evaluate` reads too (pipeline.formats.fields.KAGGLE_COLUMNS): its Player1 is
# not necessarily White, so such a file's colours are unknown unless it has a colour_known column.
ALIASES = {
    "white_rating_used": "white_rating",
    "black_rating_used": "black_rating",
    "white": "white_name",
    "black": "black_name",
}
# Kaggle's names, as _canonical writes them; each stands for its column when the file does not also have that one.
KAGGLE_ALIASES = {name.lower(): column for name, column in KAGGLE_COLUMNS.items()}
SCORE_RESULTS = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}
TRUE_TEXT = ("true", "1", "yes", "y", "t")
FALSE_TEXT = ("false", "0", "no", "n", "f")
FORFEIT_RESULTS = ["+-", "-+", "--", "+:-", "-:+"]
TIME_CONTROL_SPELLINGS = {"standard": "classical", "std": "classical"}
# Ids are digits only, as written ('4.600003e6' and '1.5e7' are no ids).
_IDS = ("white_id", "black_id")
# The csv module refuses fields above 131,072 characters by default, and cannot go on after that
# error: one long quoted field would swallow the rest of the file. A field is bounded by the file.
csv.field_size_limit(min(sys.maxsize, 2 * MAX_DECOMPRESSED_BYTES))
# The most columns a table file may have (a games, registry or seed-list CSV, a Parquet file): real ones have 10 to 20.
# Polars allocates per column before it reads a row: a 50 MB header of 26 million columns aborted the process (Rust's
# allocation failure, no exception), stopping every other file of the month; one of 1,000,000 columns took 2.9 GB and
# 50 s, one of 300,000 1.1 GB. A file with more is refused whole before any parser sees it (too_many_columns).
MAX_COLUMNS = 1_000
# A Parquet file's metadata (its footer) is parsed whole before its columns can be counted; about 160 bytes a column
# and row group, it costs some 13 times its size to parse. 16 MiB is 100,000 column chunks (15 columns in 6,000 row
# groups), far beyond a real file; a larger footer is refused unparsed.
MAX_PARQUET_METADATA_BYTES = 16 << 20
# What a header's fields may be separated by: a comma, or a spreadsheet's other separators (_check_separator).
HEADER_SEPARATORS = (",", ";", "\t")
# Integer columns and their types, in the order their errors are reported.
_INTEGERS = {
    "white_id": pl.Int64,
    "black_id": pl.Int64,
    "white_rating": pl.Int32,
    "black_rating": pl.Int32,
    "round": pl.Int32,
    "tc_base_seconds": pl.Int32,
    "tc_increment_seconds": pl.Int32,
}


@dataclass(frozen=True)
class TableCells:
    """A CSV or Parquet file read as text cells, before its values are parsed (table_records parses many at once)."""

    cells: pl.DataFrame  # the rows that are records: a text column per file column, source_line, raw_text
    ragged: pl.DataFrame  # rows that are not (wrong field count, NUL byte): source_line, raw_text, parse_error
    header_line: int  # a record's position is its source_line minus this
    trimmed: frozenset[str] = frozenset()  # columns whose cells are known not blank or padded
    extra_errors: pl.Series | None = None  # per row of `cells`, problems met while reading (binary cells), or null
    kaggle: bool = False  # the header uses the Kaggle 2011 names: colours unknown unless a colour_known column says


def too_many_columns(text: str) -> str | None:
    """header_too_wide of a CSV dump's text."""
    return header_too_wide(text[at : at + HEADER_CHUNK] for at in range(0, len(text), HEADER_CHUNK))


# A header is read this much at a time, up to its end only: a 50 MB line is counted without being held.
HEADER_CHUNK = 1 << 16
_HEADER_TEXT: dict[type, re.Pattern[Any]] = {str: re.compile(r"[^\s,;]"), bytes: re.compile(rb"[^\s,;]")}


def header_too_wide(chunks: Iterable[str] | Iterable[bytes]) -> str | None:
    """Why a CSV cannot be read when its header (its first line with more than separators and blanks) has more than
    MAX_COLUMNS fields, counting commas, semicolons or tabs, whichever there are most of; else None. `chunks`: the
    file's text or bytes in order, read up to the header's end (a comma inside quotes counts too: the bound is far
    above any real header).
    """
    line, started, counts = 1, False, [0] * len(HEADER_SEPARATORS)
    chunk: Any  # str or bytes, the same throughout
    for chunk in chunks:
        text = isinstance(chunk, str)
        newline, cr = ("\n", "\r") if text else (b"\n", b"\r")
        if not started:
            first = _HEADER_TEXT[type(chunk)].search(chunk)
            if first is None:
                line += line_breaks(chunk)
                continue
            line_start = max(chunk.rfind(newline, 0, first.start()), chunk.rfind(cr, 0, first.start())) + 1
            line += line_breaks(chunk[:line_start])
            chunk, started = chunk[line_start:], True
        end = min((at for at in (chunk.find(newline), chunk.find(cr)) if at >= 0), default=len(chunk))
        for index, separator in enumerate(HEADER_SEPARATORS):
            counts[index] += chunk.count(separator if text else separator.encode(), 0, end)
        if end < len(chunk):
            break
    return too_many_columns_problem(max(counts) + 1, line)


def line_breaks(text: str | bytes) -> int:
    """The line ends in `text` (LF, CR or CRLF, as split_lines splits)."""
    if isinstance(text, str):
        return text.count("\n") + text.count("\r") - text.count("\r\n")
    return text.count(b"\n") + text.count(b"\r") - text.count(b"\r\n")


def too_many_columns_problem(columns: int, line: int | None = 1) -> str | None:
    """Why a table of `columns` columns is not read (`line`: its header's line; None for a Parquet file, which has no
    header line), None when it has at most MAX_COLUMNS.
    """
    if columns <= MAX_COLUMNS:
        return None
    where = "the file" if line is None else "the header" if line <= 1 else f"the header (line {line})"
    return (
        f"{where} has {columns:,} columns, more than {MAX_COLUMNS:,}, the most a table file may have (MAX_COLUMNS): "
        "the file is not read"
    )


def csv_cells(text: str) -> TableCells:
    """The cells of a CSV games file (position = data row number; source_line = physical line)."""
    too_wide = too_many_columns(text)
    if too_wide is not None:
        raise UnreadableDump(too_wide)
    # Files without quotes are split by Polars, and so are files whose quotes only wrap whole fields (what
    # spreadsheets and generators write around 'Last, First'); other quoted files need the csv module.
    split = _split_plain if '"' not in text else _split_quoted
    header_line, cells, ragged = split(text)
    if "\x00" in text:  # a NUL byte spoils its row, not the file
        nul = pl.col("raw_text").str.contains("\x00", literal=True)
        spoiled = cells.filter(nul).select("source_line", "raw_text", pl.lit(NUL_PROBLEM).alias("parse_error"))
        cells = cells.filter(~nul)
        ragged = pl.concat(
            [
                ragged.with_columns(
                    pl.when(nul).then(pl.lit(NUL_PROBLEM)).otherwise(pl.col("parse_error")).alias("parse_error")
                ),
                spoiled,
            ]
        )
    cells, kaggle = _with_kaggle_names(cells)
    if missing_columns(header_names(cells)):
        _check_separator(text, header_line)
    _check_header(header_names(cells), header_line)
    return TableCells(cells, ragged, header_line, kaggle=kaggle)


_OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs"}


def _check_separator(text: str, header_line: int) -> None:
    """UnreadableDump when a header that lacks a required column has them all split at semicolons or tabs.

    Such a file (a spreadsheet's export where the decimal mark is a comma) is said to be one, not read: which
    separator a file uses is read from nothing but its header, and its cells could hold the other.
    """
    line = re.split(r"\r\n|\r|\n", text, maxsplit=header_line)[header_line - 1]
    for separator, name in _OTHER_SEPARATORS.items():
        names = _column_names(line.split(separator))
        # Kaggle's names ('MonthID;Player1;...') stand for the required columns here as in a comma-separated header.
        known = [KAGGLE_ALIASES.get(name, name) for name in names]
        if separator in line and not missing_columns(known):
            raise UnreadableDump(
                f"the header (line {header_line}) is not comma-separated: it is separated by {name} (columns: "
                f"{', '.join(names)}), so none of its rows is read; a games file separates its columns with commas: "
                "save it as CSV with commas (README, 'Rating your own federation's files')"
            )


def table_records(files: Sequence[TableCells], event_keys: Sequence[str]) -> pl.DataFrame:
    """Records of CSV or Parquet files, `file` indexing `files`: the values of all of them parsed in one pass.

    A month holds many small files; parsing each alone cost a few milliseconds of fixed work per file.
    """
    # Each row tagged with its file's index, event key, header line and missing-column message.
    file = np.repeat(np.arange(len(files), dtype=np.int32), [table.cells.height for table in files])
    per_file = {
        "_event_key": pl.Series(list(event_keys), dtype=pl.Utf8),
        "_header_line": pl.Series([table.header_line for table in files], dtype=pl.Int64),
        "_colours_stated": pl.Series([not table.kaggle for table in files], dtype=pl.Boolean),
    }
    extra_errors = (
        pl.concat(
            [
                table.extra_errors
                if table.extra_errors is not None
                else pl.repeat(None, table.cells.height, dtype=pl.Utf8, eager=True)
                for table in files
            ]
        )
        if any(table.extra_errors is not None for table in files)
        else pl.repeat(None, len(file), dtype=pl.Utf8, eager=True)
    )
    tagged = pl.concat([table.cells for table in files], how="diagonal").with_columns(
        pl.Series("file", file),
        *[values.gather(file).alias(name) for name, values in per_file.items()],
        extra_errors.alias("_extra_errors"),
    )
    trimmed = frozenset.intersection(*(table.trimmed for table in files)) if files else frozenset()
    records = _records(tagged, trimmed)
    ragged = [
        table.ragged.with_columns(
            pl.lit(index, dtype=pl.Int32).alias("file"),
            pl.lit(event_key, dtype=pl.Utf8).alias("event_id"),
            pl.lit(table.header_line, dtype=pl.Int64).alias("_header_line"),
        )
        for index, (table, event_key) in enumerate(zip(files, event_keys, strict=True))
        if table.ragged.height
    ]
    if ragged:
        records = pl.concat([records, *ragged], how="diagonal_relaxed").sort("file", "source_line", maintain_order=True)
    position = (pl.col("source_line") - pl.col("_header_line")).cast(pl.Utf8).alias("position")
    return records.with_columns(position).drop("_header_line")


def header_names(cells: pl.DataFrame) -> list[str]:
    """The file's column names as read (_column_names), without the columns the reader adds."""
    return [name for name in cells.columns if name not in ("source_line", "raw_text")]


def missing_columns(names: Sequence[str]) -> list[str]:
    """The required columns a header lacks (`result` is there when `white_score` stands for it)."""
    present = set(names) | ({"result"} if SCORE in names else set())
    return [name for name in REQUIRED if name not in present]


def _check_header(names: list[str], header_line: int) -> None:
    """UnreadableDump when the header lacks a required column: the file's one problem, said once (not on every row),
    naming what the header has, what it lacks and the spellings that come close.
    """
    missing = missing_columns(names)
    if not missing:
        return
    where = "the header" if header_line <= 1 else f"the header (line {header_line})"
    lacks = ", ".join("result (or white_score)" if name == "result" else name for name in missing)
    unknown = [name for name in names if name not in REQUIRED + OPTIONAL]
    close = []
    for name in missing:
        for wanted in [name, SCORE] if name == "result" else [name]:
            found = difflib.get_close_matches(wanted, unknown, n=1, cutoff=0.7)
            if found:
                close.append(f"'{found[0]}' for {wanted}?")
                break
    if not any(any(character.isalpha() for character in name) for name in names):
        hint = "; the first line holds no column names: a games file starts with a header row"
    else:
        hint = f"; {' '.join(close)}" if close else ""
    raise UnreadableDump(
        f"{where} has no column(s) {lacks}, so none of its rows is read (columns: {', '.join(names) or 'none'}{hint}; "
        f"a games file needs white_id, black_id and result: README, 'Rating your own federation's files')"
    )


def _with_kaggle_names(cells: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """(cells with Kaggle's columns under their names here, whether the file's colours are unknown by default: it uses
    Kaggle's names and has no colour_known column).
    """
    kaggle = any(name in cells.columns for name in KAGGLE_ALIASES)
    renamed = cells.rename(
        {alias: name for alias, name in KAGGLE_ALIASES.items() if alias in cells.columns and name not in cells.columns}
    )
    return renamed, kaggle and "colour_known" not in cells.columns


NUL_PROBLEM = "row holds a NUL byte (binary data)"
_RAGGED_SCHEMA = {"source_line": pl.Int64, "raw_text": pl.Utf8, "parse_error": pl.Utf8}


def _split_plain(text: str) -> tuple[int, pl.DataFrame, pl.DataFrame]:
    """(header line, text cells of well-formed rows, ragged rows) of a CSV without quote characters."""
    lines = _numbered_lines(text).filter(
        pl.col("raw_text").str.replace_all(",", "").str.strip_chars() != ""  # blank lines are not records
    )
    if lines.is_empty():
        raise UnreadableDump("CSV file has no header row")
    header_line, header_text = lines.row(0)
    _check_duplicates(header_text.split(","), _column_names(header_text.split(",")))
    header = _column_names(header_text.split(","))
    rows = lines.slice(1).with_columns(pl.col("raw_text").str.count_matches(",", literal=True).alias("_commas"))
    good = rows.filter(pl.col("_commas") == len(header) - 1)
    fields = good.select(pl.col("raw_text").str.split_exact(",", len(header) - 1)).to_series().struct.unnest()
    cells = fields.rename(dict(zip(fields.columns, header, strict=True))).with_columns(
        good["source_line"], good["raw_text"]
    )
    ragged = rows.filter(pl.col("_commas") != len(header) - 1).select(
        "source_line",
        "raw_text",
        pl.format("expected {} fields, found {}", pl.lit(len(header)), pl.col("_commas") + 1).alias("parse_error"),
    )
    return header_line, cells, ragged


# A field whose quotes (if any) wrap it whole, with no quote inside: a line of such fields is "simple", and Polars'
# CSV reader and Python's csv module read it alike, so it needs no Python per row.
_SIMPLE_FIELD = r'(?:"[^"]*"|[^",]*)'
_SIMPLE_LINE = f"^{_SIMPLE_FIELD}(?:,{_SIMPLE_FIELD})*$"
_QUOTED_FIELD = r'"[^"]*"'
# Fields that are blank (the csv module's cell.strip() == ""), quoted or not, and nothing else.
_BLANK_LINE = r'^(?:"\s*"|\s*)(?:,(?:"\s*"|\s*))*$'
# str.strip() strips these, Polars' strip_chars does not (they are not Unicode white space); with NUL, they send a
# file to the csv module.
_CSV_MODULE_ONLY = ("\x00", "\x1c", "\x1d", "\x1e", "\x1f")


def _split_quoted(text: str) -> tuple[int, pl.DataFrame, pl.DataFrame]:
    """Like _split_plain for a CSV with quotes: by Polars when every line is simple, else by the csv module."""
    split = None if any(c in text for c in _CSV_MODULE_ONLY) else _split_simple_quoted(_numbered_lines(text))
    return split if split is not None else _split_by_csv_module(text)


def _numbered_lines(text: str) -> pl.DataFrame:
    lines = pl.DataFrame({"raw_text": split_lines(text)}, schema={"raw_text": pl.Utf8}).with_row_index(
        "source_line", offset=1
    )
    return lines.with_columns(pl.col("source_line").cast(pl.Int64))


def _split_simple_quoted(lines: pl.DataFrame) -> tuple[int, pl.DataFrame, pl.DataFrame] | None:
    """_split_quoted by Polars; None when a line is not simple (_SIMPLE_LINE)."""
    lines = lines.filter(~pl.col("raw_text").str.contains(_BLANK_LINE))
    if lines.is_empty():
        raise UnreadableDump("CSV file has no header row")
    header_line, header_text = lines.row(0)
    if not pl.select(pl.lit(header_text).str.contains(_SIMPLE_LINE)).item():
        return None
    (row,) = csv.reader([header_text])
    _check_duplicates(row, _column_names(row))
    header = _column_names(row)
    # One pattern finds the rows of exactly len(header) simple fields, most of a file; only the others are
    # looked at again, to be counted (simple) or handed to the csv module (not simple).
    rows = lines.slice(1)
    well_formed = pl.col("raw_text").str.contains(f"^{_SIMPLE_FIELD}{f',{_SIMPLE_FIELD}' * (len(header) - 1)}$")
    good, others = rows.filter(well_formed), rows.filter(~well_formed)
    if not others["raw_text"].str.contains(_SIMPLE_LINE).all():
        return None
    schema = {name: pl.Utf8 for name in header}
    fields = (
        pl.read_csv(
            io.BytesIO(good["raw_text"].str.join("\n").item().encode()),
            has_header=False,
            schema=schema,
            quote_char='"',
            empty_string_is_null=False,
        )
        if good.height
        else pl.DataFrame(schema=schema)
    )
    found = pl.col("raw_text").str.replace_all(_QUOTED_FIELD, "").str.count_matches(",", literal=True) + 1
    ragged = others.select(
        "source_line",
        "raw_text",
        pl.format("expected {} fields, found {}", pl.lit(len(header)), found).alias("parse_error"),
    )
    return header_line, fields.with_columns(good["source_line"], good["raw_text"]), ragged


def _split_by_csv_module(text: str) -> tuple[int, pl.DataFrame, pl.DataFrame]:
    """_split_quoted by Python's csv module: quoted fields may hold quotes and span lines."""
    lines = split_lines(text)
    text_ended = False

    def text_then_end() -> Iterator[str]:
        # The reader asks for the line after the text's last only when a quoted field is still open (else it is
        # done with the text, and the extra line break is a blank line). Without strict=True, which also refuses
        # the '"Alpha" Anna' the reader reads and cannot go on after it, end of file closes an open field silently.
        nonlocal text_ended
        yield from io.StringIO(text, newline="")
        text_ended = True
        yield "\n"

    reader = csv.reader(text_then_end())
    header: list[str] | None = None
    header_line = 1
    good_rows: list[list[str]] = []
    good_spans: list[tuple[int, int]] = []
    ragged: list[tuple[int, int, str]] = []
    next_line = 1
    try:
        for row in reader:
            first_line, next_line = next_line, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue  # blank lines are not records
            if text_ended:  # the file ended inside a quoted field: the rest of the file is this record
                opened = min(max(first_line, len(lines) - len(split_lines(row[-1][:-1])) + 1), len(lines))
                ragged.append((first_line, len(lines), _unclosed_quote_problem(opened, len(lines))))
                break
            if header is None:
                _check_duplicates(row, _column_names(row))
                header, header_line = _column_names(row), first_line
            elif len(row) == len(header):
                good_rows.append(row)
                good_spans.append((first_line, reader.line_num))
            else:
                ragged.append((first_line, reader.line_num, f"expected {len(header)} fields, found {len(row)}"))
    except csv.Error as error:
        # The reader cannot resume after an error: the rest of the file becomes one record.
        ragged.append((next_line, len(lines), f"CSV error: {error}"))
    if header is None:
        raise UnreadableDump("CSV file has no header row")

    def raw(first: int, last: int) -> str:
        return "\n".join(lines[first - 1 : last])

    cells = pl.DataFrame(good_rows, schema={name: pl.Utf8 for name in header}, orient="row").with_columns(
        pl.Series("source_line", [first for first, _ in good_spans], dtype=pl.Int64),
        pl.Series("raw_text", [raw(first, last) for first, last in good_spans], dtype=pl.Utf8),
    )
    bad = pl.DataFrame(
        {
            "source_line": [first for first, _, _ in ragged],
            "raw_text": [raw(first, last) for first, last, _ in ragged],
            "parse_error": [problem for _, _, problem in ragged],
        },
        schema=_RAGGED_SCHEMA,
    )
    return header_line, cells, bad


def _unclosed_quote_problem(opened: int, last: int) -> str:
    """Why the record that holds a quote never closed is no game (its lines run to the end of the file)."""
    return f"a quote opened on line {opened} is never closed, so the record runs to the end of the file (line {last})"


def parquet_cells(data: bytes, max_rows: int | None = None, max_bytes: int | None = None) -> TableCells:
    """The cells of a Parquet games file (source_line = 1-based row number).

    Columns the pipeline does not use are ignored whatever their type (lists, structs, maps,
    durations, binary data); a used column of a type that holds no text or number is a problem of
    the whole file. Date and datetime columns are read as dates, whole floats as integers.

    Bounded like a text dump: the first rows up to MAX_ROWS_PER_FILE and MAX_DECOMPRESSED_BYTES of
    decoded values are read (the metadata says how many before any value is decoded, see
    _parquet_rows_to_read; the text the rows make is measured before it is made), and the rows beyond
    are one record whose problem names the cap. The rows read are rated: a cap cuts a file between two
    rows, never inside one, as a text file's records are whole lines.
    """
    # The caps are read when called, not when defined: a test lowers them on the module.
    max_rows = MAX_ROWS_PER_FILE if max_rows is None else max_rows
    max_bytes = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
    too_wide = parquet_too_many_columns(data)
    if too_wide is not None:
        raise UnreadableDump(too_wide)
    try:
        rows, to_read, beyond_cap = _parquet_rows_to_read(data, max_rows, max_bytes)
        table = pl.read_parquet(io.BytesIO(data), n_rows=to_read)
    except Exception as error:  # any reader failure is a bad file, not a bug here
        raise UnreadableDump(f"not a readable Parquet file: {error}") from error
    names = _column_names(table.columns)
    _check_duplicates(table.columns, names)
    table, kaggle = _with_kaggle_names(table.rename(dict(zip(table.columns, names, strict=True))))
    _check_header(table.columns, 1)
    text_rows = _rows_within_text_cap(table, max_bytes)
    if text_rows < table.height:
        table = table.head(text_rows)
        beyond_cap = partial(decoded_cap_message, limit=max_bytes)
    used = set(REQUIRED + OPTIONAL)
    columns: list[pl.Series] = []
    invalid_text: list[str] = []
    for name, dtype in table.schema.items():
        try:
            column = _parquet_text(table[name])
        except Exception as error:
            if name in used:
                raise UnreadableDump(
                    f"column {name!r} has type {dtype}, which holds no value the pipeline can read"
                ) from error
            continue  # not used: left out of the records (and of their raw text)
        if name in used and dtype == pl.Binary and column.null_count() > table[name].null_count():
            invalid_text.append(name)
        columns.append(column)
    as_text = pl.DataFrame(columns)
    # Numbers, dates and booleans print neither blank nor padded: blank_to_null would leave them as they are.
    trimmed = {
        name for name, dtype in table.schema.items() if dtype.is_numeric() or dtype.is_temporal() or dtype == pl.Boolean
    }
    raw_text = (
        as_text.select(pl.concat_str(pl.all().fill_null(""), separator=",")).to_series()
        if as_text.width
        else pl.repeat("", table.height, eager=True)
    )
    cells = (
        as_text.with_columns(
            pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("source_line"),
            raw_text.alias("raw_text"),
        )
        if as_text.width
        else pl.DataFrame(
            {"source_line": pl.int_range(1, table.height + 1, dtype=pl.Int64, eager=True), "raw_text": raw_text}
        )
    )
    # Binary cells that are not UTF-8 text: the row's problem, not a missing value.
    extra_errors = None
    if invalid_text:
        extra_errors = pl.select(
            join_errors(
                *[
                    pl.when(pl.Series(table[name].is_not_null() & as_text[name].is_null())).then(
                        pl.lit(f"{name} is binary data, not UTF-8 text")
                    )
                    for name in invalid_text
                ]
            )
        ).to_series()
    excess = pl.DataFrame(schema=_RAGGED_SCHEMA)
    if beyond_cap is not None and table.height < rows:
        first = table.height + 1
        excess = pl.DataFrame(
            {"source_line": [first], "raw_text": [""], "parse_error": [beyond_cap(first, rows)]}, schema=_RAGGED_SCHEMA
        )
    return TableCells(cells, excess, 0, frozenset(trimmed), extra_errors, kaggle)


def parquet_too_many_columns(source: bytes | str | Path) -> str | None:
    """Why a Parquet file (its bytes or its path) cannot be read when it has more than MAX_COLUMNS columns, or metadata
    beyond MAX_PARQUET_METADATA_BYTES (told from its last 8 bytes, before the metadata is parsed); else None. A file
    that is no Parquet file is left to the reader, which says so.
    """
    if isinstance(source, bytes):
        tail = source[-8:]
    else:
        with open(source, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 8))
            tail = handle.read(8)
    if len(tail) < 8 or tail[4:] != b"PAR1":
        return None
    footer = int.from_bytes(tail[:4], "little")
    if footer > MAX_PARQUET_METADATA_BYTES:
        return (
            f"its metadata takes {footer:,} bytes, more than {MAX_PARQUET_METADATA_BYTES:,} "
            "(MAX_PARQUET_METADATA_BYTES: thousands of columns or row groups): the file is not read"
        )
    try:
        columns = pq.read_metadata(pa.BufferReader(source) if isinstance(source, bytes) else source).num_columns
    except Exception:  # the reader says what is wrong with the file
        return None
    return too_many_columns_problem(columns, None)


# Bytes a decoded value takes in memory, by Parquet physical type (text: a 16-byte view, its bytes counted apart).
_DECODED_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8, "BYTE_ARRAY": 16}
# Characters a value other than text or an integer takes at most as text (a double: 24; a date: 10).
_TEXT_WIDTH = 24


def _parquet_rows_to_read(
    data: bytes, max_rows: int, max_bytes: int
) -> tuple[int, int, Callable[[int, int], str] | None]:
    """(rows in the file, rows to read, the message maker of the cap that stops the reading, or None) from the
    Parquet metadata alone, before any value is decoded.

    A row group's decoded size is estimated per column from what the metadata states: its values
    times the width of their type (dictionary and run-length encoding store a million equal values
    in a few bytes), plus the uncompressed bytes of text columns. Row groups are taken whole while
    both caps hold; the one that crosses a cap is read up to its share of what is left (rows are
    assumed equally large within a group).
    """
    metadata = pq.read_metadata(pa.BufferReader(data))
    schema = metadata.schema
    widths = [
        schema.column(i).length if schema.column(i).physical_type == "FIXED_LEN_BYTE_ARRAY" else None
        for i in range(metadata.num_columns)
    ]
    rows_read, bytes_read = 0, 0
    for group_index in range(metadata.num_row_groups):
        group = metadata.row_group(group_index)
        size = 0
        for i in range(group.num_columns):
            column = group.column(i)
            width = widths[i] or _DECODED_WIDTH.get(column.physical_type, 16)
            size += column.num_values * width
            if column.physical_type == "BYTE_ARRAY":
                size += column.total_uncompressed_size
        if rows_read + group.num_rows <= max_rows and bytes_read + size <= max_bytes:
            rows_read, bytes_read = rows_read + group.num_rows, bytes_read + size
            continue
        by_rows = max_rows - rows_read
        by_bytes = (max_bytes - bytes_read) * group.num_rows // size if size else group.num_rows
        if by_rows <= by_bytes:
            return metadata.num_rows, rows_read + max(0, by_rows), partial(row_cap_message, limit=max_rows)
        return metadata.num_rows, rows_read + max(0, by_bytes), partial(decoded_cap_message, limit=max_bytes)
    return metadata.num_rows, rows_read, None


def _rows_within_text_cap(table: pl.DataFrame, max_bytes: int) -> int:
    """How many of the first rows make at most `max_bytes` of raw_text (their values as a CSV line: what a text
    dump's cap counts), counted before any text is made: a dictionary-encoded column can repeat a megabyte-long
    value in every row for a few bytes of file.
    """
    if table.is_empty() or table.width == 0:
        return table.height
    sizes = []
    for name, dtype in table.schema.items():
        column = pl.col(name)
        if dtype == pl.Utf8:
            sizes.append(column.str.len_bytes().cast(pl.UInt64).fill_null(0))
        elif isinstance(dtype, (pl.Categorical, pl.Enum)):
            sizes.append(column.cat.len_bytes().cast(pl.UInt64).fill_null(0))
        elif dtype == pl.Binary:
            sizes.append(column.bin.size().cast(pl.UInt64).fill_null(0))
        elif isinstance(dtype, (pl.List, pl.Array, pl.Struct, pl.Object)) or dtype == pl.Duration:
            continue  # never made text (_parquet_text leaves such columns out)
        elif dtype.is_integer():  # its digits (and sign), without making the text: log10 of at most 2^64
            magnitude = column.cast(pl.Float64).abs().clip(lower_bound=1.0).log10().floor() + 1
            sizes.append((magnitude + (column < 0).cast(pl.Float64)).cast(pl.UInt64).fill_null(0))
        else:
            sizes.append(pl.repeat(_TEXT_WIDTH, pl.len(), dtype=pl.UInt64))
    if not sizes:
        return table.height
    # A row's raw_text as a CSV line would be: its values, the commas and the line end (the cells repeat it once).
    row_bytes = pl.sum_horizontal(sizes) + len(sizes)
    return int(table.select((row_bytes.cum_sum() <= max_bytes).sum()).item())


def _parquet_text(column: pl.Series) -> pl.Series:
    """A Parquet column as text cells: dates as YYYY-MM-DD, whole floats without '.0', binary as UTF-8 (invalid ->
    null).
    """
    dtype = column.dtype
    if dtype == pl.Datetime:
        column = column.dt.date()
    elif dtype.is_float():
        # Beyond Int64 a whole float stays a float's text ('1e+20'), which no integer column reads: a bad cell, not
        # a missing one.
        whole = column.is_finite() & (column == column.round()) & (column.abs() < 2.0**63)
        return (
            pl.select(
                pl.when(whole).then(column.cast(pl.Int64, strict=False).cast(pl.Utf8)).otherwise(column.cast(pl.Utf8))
            )
            .to_series()
            .alias(column.name)
        )
    elif dtype == pl.Binary:
        try:
            return column.cast(pl.Utf8)  # all valid UTF-8: the usual case, vectorised
        except pl.exceptions.PolarsError:  # some values are not text: only then value by value
            return pl.Series(
                column.name,
                [None if value is None else _utf8_or_none(value) for value in column.to_list()],
                dtype=pl.Utf8,
            )
    elif isinstance(dtype, (pl.List, pl.Array, pl.Struct, pl.Object)) or dtype == pl.Duration:
        raise TypeError(f"{dtype} is not a scalar")
    return column.cast(pl.Utf8, strict=False)


def _utf8_or_none(value: bytes) -> str | None:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _check_duplicates(raw_names: list[str], names: list[str]) -> None:
    """UnreadableDump naming the columns that give the same used column twice ('result' and 'Result',
    'white' and 'white_name'): which one holds the data cannot be told, so the file is not guessed at.
    """
    used = set(REQUIRED + OPTIONAL)
    by_name: dict[str, list[str]] = {}
    for raw in raw_names:
        canonical = _canonical(raw)
        if canonical in used:
            by_name.setdefault(canonical, []).append(raw.strip())
    twice = {name: raws for name, raws in by_name.items() if len(raws) > 1}
    if twice:
        listed = "; ".join(f"{name} ({', '.join(repr(raw) for raw in raws)})" for name, raws in twice.items())
        raise UnreadableDump(f"column(s) given more than once in the header: {listed}; the file is not read")


def normalised_header(raw: str) -> str:
    """A CSV header cell as a column name, the one normalisation of every CSV the pipeline reads (games, registry, seed
    list): lower-case, trimmed (a BOM and quotes too), blanks and dashes inside as '_' ('White ID' is white_id, 'FIDE
    ID' fide_id, 'B-day' b_day). Each reader then resolves its own aliases.
    """
    return re.sub(r"(?<=[a-z0-9])[\s-]+(?=[a-z])", "_", raw.strip().lstrip("\ufeff").strip().strip('"').strip().lower())


def _canonical(raw: str) -> str:
    """A games file's header cell's column name (normalised_header), aliases resolved."""
    name = normalised_header(raw)
    return ALIASES.get(name, name)


def _column_names(names: list[str]) -> list[str]:
    """Lower-case, trimmed, aliases resolved, duplicates made unique (so a frame can hold them)."""
    seen: dict[str, int] = {}
    result = []
    for raw in names:
        name = _canonical(raw) or "column"
        count = seen.get(name, 0)
        seen[name] = count + 1
        result.append(name if count == 0 else f"{name}_{count + 1}")
    return result


# An id as a table writes it: digits, with a minus sign for a negative number (a Parquet integer column's -5, a
# spreadsheet's). A negative id is read as the number it is and quarantined as invalid_id by the one id check
# (pipeline.validate.identity.id_problems); '+5', '1.5e7' and '4600003.0' are no ids.
_ID_TEXT = r"^-?\d+$"


def _parse_id(text: pl.Expr) -> pl.Expr:
    """An id cell (stripped) -> Int64: digits with an optional minus sign; anything else, or too long a number, null."""
    stripped = text.str.strip_chars()
    # The cast reads digits with a sign; only '+' is refused here (cheaper than a pattern on every cell).
    return pl.when(~stripped.str.starts_with("+")).then(stripped.cast(pl.Int64, strict=False))


def _id_error(text: pl.Expr, label: str, parsed: pl.Expr) -> pl.Expr:
    """Why a present id cell is no number (_parse_id), or null."""
    digits = text.str.strip_chars().str.contains(_ID_TEXT)
    return (
        pl.when(text.is_not_null() & parsed.is_null() & digits)
        .then(pl.format(f"{label} {{}} is too long a number for a player id", quoted(text)))
        .when(text.is_not_null() & parsed.is_null())
        .then(pl.format(f"{label} {{}} is not a number (an id is written in digits only)", quoted(text)))
    )


def _records(cells: pl.DataFrame, trimmed: Set[str] = frozenset()) -> pl.DataFrame:
    """Typed record columns from text cells (tagged by table_records), with one error message per bad cell
    (`trimmed`: cells known not blank or padded).
    """
    cells = cells.with_columns(
        [pl.lit(None, dtype=pl.Utf8).alias(name) for name in REQUIRED + OPTIONAL if name not in cells.columns]
    ).with_columns([blank_to_null(pl.col(name)).alias(name) for name in REQUIRED + OPTIONAL if name not in trimmed])
    # Eager Polars evaluates a repeated sub-expression every time: each parse runs once, into a column
    # of its own, which both the value and its error message read.
    cells = cells.with_columns(
        *[
            (_parse_id(pl.col(name)) if name in _IDS else parse_int(pl.col(name), dtype)).alias(f"_{name}")
            for name, dtype in _INTEGERS.items()
        ],
        parse_iso_date(pl.col("event_start")).alias("_event_start"),
        parse_iso_date(pl.col("date")).alias("_date"),
        parse_month_cell(pl.col("month")).alias("_month"),
        result_as_read(pl.col("result")).alias("_stated_result"),
        pl.col(SCORE).cast(pl.Float64, strict=False).replace_strict(SCORE_RESULTS, default=None).alias("_score"),
        pl.col("time_control").str.to_lowercase().replace(TIME_CONTROL_SPELLINGS).alias("_time_control"),
        parse_flag(pl.col("colour_known"), TRUE_TEXT, FALSE_TEXT).alias("_colour_known"),
    )
    # White's score stands for a result the row does not state.
    cells = cells.with_columns(pl.coalesce("_stated_result", "_score").alias("_result"))
    event_start, date, result, time_control, month, score = (
        pl.col("_event_start"),
        pl.col("_date"),
        pl.col("_result"),
        pl.col("_time_control"),
        pl.col("_month"),
        pl.col("_score"),
    )
    base, increment = pl.col("_tc_base_seconds"), pl.col("_tc_increment_seconds")
    errors = [
        *[
            (
                _id_error(pl.col(name), name, pl.col(f"_{name}"))
                if name in _IDS
                else int_error(pl.col(name), name, parsed=pl.col(f"_{name}"))
            )
            for name in _INTEGERS
        ],
        pl.when(pl.col("event_start").is_not_null() & event_start.is_null()).then(
            pl.format("event_start {} is not a date", quoted(pl.col("event_start")))
        ),
        pl.when(pl.col("date").is_not_null() & date.is_null()).then(
            pl.format("date {} is not a date", quoted(pl.col("date")))
        ),
        month_cell_error(pl.col("month"), month),
        # The month column stands for an undated game's day; beside a date of another month one of them is wrong,
        # and which one decides the rating period, so neither is guessed.
        pl.when(date.is_not_null() & month.is_not_null() & (date.dt.truncate("1mo") != month)).then(
            pl.format("month {} and date {} disagree", quoted(pl.col("month")), quoted(pl.col("date")))
        ),
        pl.when(pl.col(SCORE).is_not_null() & score.is_null()).then(
            pl.format(f"{SCORE} {{}} is not 1, 0.5 or 0", quoted(pl.col(SCORE)))
        ),
        pl.when(
            score.is_not_null() & pl.col("_stated_result").is_not_null() & (score != pl.col("_stated_result"))
        ).then(pl.format(f"result {{}} and {SCORE} {{}} disagree", quoted(pl.col("result")), quoted(pl.col(SCORE)))),
        pl.when(pl.col("colour_known").is_not_null() & pl.col("_colour_known").is_null()).then(
            pl.format("colour_known {} is not true or false", quoted(pl.col("colour_known")))
        ),
        pl.when(time_control.is_not_null() & ~time_control.is_in(TIME_CONTROLS)).then(
            pl.format(
                "time_control {} is not one of {}", quoted(pl.col("time_control")), pl.lit(", ".join(TIME_CONTROLS))
            )
        ),
        pl.col("_extra_errors"),
    ]
    return cells.select(
        "file",
        "_header_line",
        "source_line",
        "raw_text",
        join_errors(*errors).alias("parse_error"),
        pl.col("event_id").fill_null(pl.col("_event_key")).alias("event_id"),
        # A month alone is the month the game was played: its first day is the event's start, the day the rating
        # period is known by (a game of another month than its folder's is quarantined as date_outside_month).
        pl.coalesce(event_start, month).alias("event_start"),
        date.alias("date"),
        pl.col("_round").alias("round"),
        pl.col("_white_id").alias("white_id"),
        pl.col("_black_id").alias("black_id"),
        pl.col("white_name"),
        pl.col("black_name"),
        result.alias("result"),
        pl.when(result.is_in(FORFEIT_RESULTS)).then(pl.lit("forfeit")).alias("unplayed"),
        pl.coalesce(
            pl.when(time_control.is_in(TIME_CONTROLS)).then(time_control),
            classify_time_control(base, increment),
        ).alias("time_control"),
        base.alias("tc_base_seconds"),
        increment.alias("tc_increment_seconds"),
        pl.col("_white_rating").alias("white_rating"),
        pl.col("_black_rating").alias("black_rating"),
        # Whether White is known to be the first player (Kaggle's Player1 need not be): as the file states it, else
        # unknown for a file with Kaggle's names and known for any other.
        pl.when(pl.col("colour_known").is_null())
        .then(pl.col("_colours_stated"))
        .otherwise(pl.col("_colour_known"))
        .alias("colour_known"),
    )
