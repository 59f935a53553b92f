"""The games file of `ratings evaluate` and `tune`: CSV, Parquet or Kaggle 2011 columns; errors name the line."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.formats.common import UnreadableDump
from pipeline.formats.fields import KAGGLE_COLUMNS, result_as_read
from pipeline.formats.table_files import InputFileError, first_line, read_csv_text
from pipeline.formats.tabular import FALSE_TEXT, TRUE_TEXT, csv_cells, parquet_too_many_columns
from pipeline.months import MONTH_PATTERN, month_index, month_index_of
from schemas.games import RESULTS


def parse_period(text: str) -> int:
    """A period as the games file writes it: YYYY-MM (-> month index) or an integer (Kaggle's MonthID)."""
    text = str(text).strip()
    if MONTH_PATTERN.match(text):
        return month_index(text)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"period {text!r} is neither YYYY-MM nor an integer") from None


def _base_name(path: Path) -> str:
    name = path.name.lower()
    return name[:-3] if name.endswith(".gz") else name


def _read_any(path: Path) -> pl.DataFrame:
    base = _base_name(path)
    try:
        data: Any = path
        if path.name.lower().endswith(".gz"):
            with gzip.open(path) as stream:
                data = io.BytesIO(stream.read())
        if base.endswith(".parquet"):
            too_wide = parquet_too_many_columns(data.getvalue() if isinstance(data, io.BytesIO) else path)
            if too_wide is not None:
                raise InputFileError(f"{path}: cannot read games: {too_wide}")
            return pl.read_parquet(data)
        if base.endswith((".csv", ".txt")):
            return read_csv_text(data, path, "games")
    except (pl.exceptions.PolarsError, OSError, EOFError) as exc:
        raise InputFileError(f"{path}: cannot read games: {first_line(exc)}") from None
    raise InputFileError(f"{path}: games must be .csv or .parquet (optionally .gz)")


def _bad_line(path: Path, mask: pl.Series, frame: pl.DataFrame, column: str, problem: str) -> InputFileError:
    index = int(mask.arg_true()[0])
    return InputFileError(f"{path}: {_where(path, index, frame)}: {column} {frame[column][index]!r} {problem}")


def _where(path: Path, index: int, frame: pl.DataFrame) -> str:
    """Where the frame's row `index` is in the file: its physical line in a CSV, as the pipeline's CSV reader
    (formats.tabular.csv_cells) numbers a record's lines, since a quoted field may hold line breaks and the line is
    then not the row + 2; read on the error's path only.
    """
    if _base_name(path).endswith(".parquet"):
        return f"row {index + 1}"
    try:
        with gzip.open(path) if path.name.lower().endswith(".gz") else path.open("rb") as stream:
            cells = csv_cells(stream.read().decode("utf-8", errors="replace"))
    except (UnreadableDump, OSError, EOFError):
        cells = None
    # Polars keeps a blank line as a row of empty cells where csv_cells skips it: the other rows pair with its
    # records in order, and a blank row is the line after the record (or header) before it and the blanks between.
    blank = pl.all_horizontal(pl.col(c).cast(pl.Utf8).str.strip_chars().fill_null("") == "" for c in frame.columns)
    is_blank = frame.select(blank).to_series()
    if cells is not None:
        records = pl.concat([cells.cells, cells.ragged], how="diagonal_relaxed").sort("source_line")
        if records.height == int((~is_blank).sum()):
            before = int((~is_blank[:index]).sum())  # the records above the row
            if not is_blank[index]:
                return f"line {records['source_line'][before]}"
            previous = records.row(before - 1, named=True) if before else None
            end = cells.header_line if previous is None else previous["source_line"] + previous["raw_text"].count("\n")
            last_record = int(is_blank[:index].not_().arg_true()[-1]) if before else -1
            return f"line {end + index - last_record}"
    # The two readers count the records differently (a file Polars reads otherwise than the csv module): the row is
    # named by its number rather than by a line that could be another's.
    return f"record {index + 1} after the header"


def read_games(path: str | Path) -> pl.DataFrame:
    """GAMES as the protocol reads them: period (Int64), month (the label as written), white_id, black_id,
    white_score, colour_known, and event_id when given.

    Columns: `month` (YYYY-MM or an integer period), `white_id`, `black_id`, and `white_score`
    (1, 0.5, 0) or `result` (1-0, 0-1, 1/2-1/2); optional `colour_known` (default true) and
    `event_id`. The Kaggle 2011 names `MonthID`, `Player1`, `Player2`, `Player1Score` are accepted;
    such a file's colours are unknown unless it has a `colour_known` column.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: games file not found")
    frame = _read_any(path)
    kaggle = any(alias in frame.columns for alias in KAGGLE_COLUMNS)
    frame = frame.rename({a: c for a, c in KAGGLE_COLUMNS.items() if a in frame.columns and c not in frame.columns})
    score_column = "white_score" if "white_score" in frame.columns else "result"
    missing = [c for c in ("month", "white_id", "black_id", score_column) if c not in frame.columns]
    if missing:
        raise InputFileError(
            f"{path}: games lack column(s) {', '.join(missing)} (need month, white_id, black_id and white_score or "
            f"result; has: {', '.join(frame.columns)})"
        )
    text = {c: frame[c].cast(pl.Utf8).str.strip_chars() for c in ("month", "white_id", "black_id", score_column)}
    months = text["month"]
    is_month = months.str.contains(MONTH_PATTERN.pattern)
    as_int = months.cast(pl.Int64, strict=False)
    bad = months.is_null() | (~is_month.fill_null(False) & as_int.is_null())
    if bad.any():
        raise _bad_line(path, bad, frame, "month", "is neither YYYY-MM nor an integer period")
    period = pl.select(pl.when(is_month).then(month_index_of(pl.lit(months))).otherwise(as_int)).to_series()
    ids = {}
    for column in ("white_id", "black_id"):
        ids[column] = text[column].cast(pl.Int64, strict=False)
        if ids[column].is_null().any():
            raise _bad_line(path, ids[column].is_null(), frame, column, "is not a whole-number player id")
        # Ids count from 1, as rate-period and validation read them: 0 or -5 is a mistake, not a player.
        if (ids[column] < 1).any():
            raise _bad_line(path, ids[column] < 1, frame, column, "is not a player id (a whole number from 1)")
    if score_column == "white_score":
        score = text["white_score"].cast(pl.Float64, strict=False)
        bad = score.is_null() | ~score.is_in([0.0, 0.5, 1.0])
        if bad.any():
            raise _bad_line(path, bad, frame, "white_score", "is not 1, 0.5 or 0")
    else:
        result = pl.select(result_as_read(pl.lit(text["result"]))).to_series()
        bad = result.is_null() | ~result.is_in(list(RESULTS))
        if bad.any():
            raise _bad_line(path, bad, frame, "result", "is not 1-0, 0-1 or 1/2-1/2")
        score = result.replace_strict(RESULTS, return_dtype=pl.Float64)
    if "colour_known" in frame.columns:
        flag = frame["colour_known"].cast(pl.Utf8).str.strip_chars().str.to_lowercase()
        bad = flag.is_not_null() & ~flag.is_in([*TRUE_TEXT, *FALSE_TEXT, ""])
        if bad.any():
            raise _bad_line(path, bad, frame, "colour_known", "is not true or false")
        colour_known = ~flag.is_in(list(FALSE_TEXT))
    else:
        colour_known = pl.Series([not kaggle] * frame.height, dtype=pl.Boolean)
    games = pl.DataFrame(
        {
            "period": period,
            "month": months,
            "white_id": ids["white_id"],
            "black_id": ids["black_id"],
            "white_score": score,
            "colour_known": colour_known,
        }
    )
    if "event_id" in frame.columns:
        games = games.with_columns(event_id=frame["event_id"].cast(pl.Utf8))
    self_play = games["white_id"] == games["black_id"]
    if self_play.any():
        raise _bad_line(path, self_play, frame, "white_id", "plays himself (white_id equals black_id)")
    return games
