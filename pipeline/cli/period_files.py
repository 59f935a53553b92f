"""The files `ratings rate-period` reads: the previous list and the period's games, with errors naming file and line."""

from __future__ import annotations

import sys

import polars as pl

from pipeline.formats.fields import parse_clock
from pipeline.formats.table_files import InputFileError, converted, decode_pending, read_table
from pipeline.months import first_day
from pipeline.rules.time_controls import not_ratable_detail, time_control_class
from schemas.games import RESULT_SCORES, TIME_CONTROLS
from schemas.rating_list import POOL_ENTRY, RatingList
from schemas.util import polars_schema

GAMES_COLUMNS = ("event_id", "white_id", "black_id", "result", "white_rating", "black_rating", "date", "time_control")


def warn_unknown_columns(path: str, columns: list[str], known) -> None:
    """One line on stderr naming the columns rate-period does not read (a misspelt name is otherwise silent)."""
    unknown = [name for name in columns if name not in known]
    if unknown:
        print(f"ratings rate-period: warning: {path}: ignoring unknown column(s) {', '.join(unknown)}", file=sys.stderr)


#: rate-period's PREV may give, for a rapid or blitz list, each player's standard rating: the starting rating of a
#: player unrated on that list (regulations.seeded_from_standard).
STANDARD_RATING = "standard_rating"


def read_previous_list(path: str) -> pl.DataFrame:
    """PREV: player_id, rating (empty = unrated), optional k, games_total, birth_year, ever_2400 (or a full list),
    and standard_rating for a rapid or blitz list.
    """
    frame = decode_pending(read_table(path, "previous list"))
    warn_unknown_columns(path, frame.columns, {**polars_schema(RatingList), STANDARD_RATING: pl.Int32})
    if STANDARD_RATING in frame.columns and frame.schema[STANDARD_RATING] == pl.Utf8:
        frame = frame.with_columns(converted(frame, STANDARD_RATING, pl.Int32, path, "previous list"))
    if "player_id" not in frame.columns:
        raise InputFileError(f"{path}: previous list needs a player_id column (has: {', '.join(frame.columns)})")
    columns = []
    for name, dtype in polars_schema(RatingList).items():
        if name not in frame.columns or frame.schema[name] != pl.Utf8 or dtype in (pl.Utf8, pl.List(POOL_ENTRY)):
            continue
        if dtype == pl.Boolean:
            columns.append(
                frame[name].str.strip_chars().str.to_lowercase().is_in(["true", "1", "yes", "y"]).alias(name)
            )
        else:
            columns.append(converted(frame, name, dtype, path, "previous list"))
    frame = frame.with_columns(columns)
    missing_ids = frame["player_id"].is_null()
    if missing_ids.any():
        raise InputFileError(f"{path}: line {int(missing_ids.arg_true()[0]) + 2}: previous list row has no player_id")
    duplicates = frame.filter(pl.col("player_id").is_duplicated())["player_id"].unique().sort()
    if len(duplicates):
        raise InputFileError(f"{path}: previous list has duplicate player_id values: {duplicates.head(5).to_list()}")
    return frame


def read_period_games(path: str, month: str, default_class: str = "classical") -> pl.DataFrame:
    """GAMES: event_id, white_id, black_id, result, optional white_rating, black_rating, date, time_control.

    A game whose time control the file does not state is of `default_class` (the class of the list rated: a
    rapid period's games file need not say that its games are rapid).
    """
    frame = read_table(path, "games")
    warn_unknown_columns(path, frame.columns, GAMES_COLUMNS)
    required = ["event_id", "white_id", "black_id", "result"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputFileError(
            f"{path}: games file lacks required column(s) {', '.join(missing)} (has: {', '.join(frame.columns)})"
        )
    result_text = frame["result"].cast(pl.Utf8).str.strip_chars()
    unknown = result_text.is_null() | ~result_text.is_in(list(RESULT_SCORES))
    if unknown.any():
        index = int(unknown.arg_true()[0])
        raise InputFileError(f"{path}: line {index + 2}: result {frame['result'][index]!r} is not 1-0, 0-1 or 1/2-1/2")
    games = pl.DataFrame(
        {
            "game_id": pl.Series(range(frame.height), dtype=pl.UInt64),
            "event_id": frame["event_id"].cast(pl.Utf8).fill_null(""),
            "white_id": converted(frame, "white_id", pl.Int64, path, "games"),
            "black_id": converted(frame, "black_id", pl.Int64, path, "games"),
            "white_score": result_text.replace_strict(RESULT_SCORES, return_dtype=pl.Float64),
        }
    )
    for column in ("white_id", "black_id"):
        if games[column].is_null().any():
            raise InputFileError(f"{path}: line {int(games[column].is_null().arg_true()[0]) + 2}: {column} is empty")
    for source, target in (("white_rating", "white_rating_used"), ("black_rating", "black_rating_used")):
        if source in frame.columns:
            games = games.with_columns(converted(frame, source, pl.Int32, path, "games").alias(target))
    # The era of a clock is the game's day, else its event's start (validation's rule), else the month's first day.
    month_start = pl.lit(first_day(month))
    day = pl.select(pl.repeat(month_start, frame.height)).to_series()
    if "date" in frame.columns:
        dates = (
            frame["date"]
            .cast(pl.Utf8)
            .str.strip_chars()
            .str.replace_all(r"\.", "-")
            .str.to_date("%Y-%m-%d", strict=False)
        )
        bad = frame["date"].is_not_null() & (frame["date"].cast(pl.Utf8).str.strip_chars() != "") & dates.is_null()
        if bad.any():
            index = int(bad.arg_true()[0])
            raise InputFileError(f"{path}: line {index + 2}: date {frame['date'][index]!r} is not YYYY-MM-DD")
        # The event starts on its first game's date; the list in force then is the one given as PREV.
        games = games.with_columns(dates.alias("date")).with_columns(
            event_start=pl.col("date").min().over("event_id").fill_null(month_start)
        )
        day = games.select(pl.coalesce("date", "event_start"))["date"]
        games = games.drop("date")
    if "time_control" in frame.columns:
        games = games.with_columns(period_time_controls(frame["time_control"], path, default_class, day))
    else:
        games = games.with_columns(time_control=pl.lit(default_class))
    self_play = games["white_id"] == games["black_id"]
    if self_play.any():
        raise InputFileError(
            f"{path}: line {int(self_play.arg_true()[0]) + 2}: white_id and black_id are the same player"
        )
    return games


def period_time_controls(
    column: pl.Series, path: str, default_class: str = "classical", day: pl.Series | None = None
) -> pl.DataFrame:
    """time_control, tc_base_seconds, tc_increment_seconds from a class or a clock, per game.

    A class (classical, modern, rapid, blitz) is kept as given. A clock ('90+30', '5400+30', '90',
    '40/90+30:30+30', '90 min + 30 s') fills the engine's clock columns (formats.fields.parse_clock:
    a unit-less base up to 150 is minutes, above it seconds) and its class is FIDE's for that clock
    in the era of the game's `day` (rules.time_controls, as validation classes it; no day: the current
    era), so rule sets that weight by minutes use them. An empty cell is `default_class`. A clock FIDE
    does not rate on its day (rules.time_controls.not_ratable_detail) stops the run: validation would
    quarantine it, and a games file of an officer should not hold it.
    """
    stripped = pl.col("text").str.strip_chars()
    frame = pl.DataFrame({"text": column.cast(pl.Utf8)}).select(pl.when(stripped != "").then(stripped).alias("text"))
    if day is not None:
        frame = frame.with_columns(day.alias("day"))
    clock_day = pl.col("day") if day is not None else None
    named = pl.col("text").str.to_lowercase()
    base, increment = parse_clock(pl.col("text"))
    is_class = named.is_in(list(TIME_CONTROLS))
    parsed = frame.with_columns(
        tc_base_seconds=pl.when(~is_class).then(base),
        tc_increment_seconds=pl.when(~is_class).then(increment),
    ).with_columns(
        time_control=pl.when(pl.col("text").is_null())
        .then(pl.lit(default_class))
        .when(is_class)
        .then(named)
        .otherwise(time_control_class(pl.col("tc_base_seconds"), pl.col("tc_increment_seconds"), clock_day)),
    )
    clock_seconds = pl.col("tc_base_seconds") + pl.col("tc_increment_seconds").fill_null(0)
    bad = parsed.select(pl.col("text").is_not_null() & ~is_class & (clock_seconds.is_null() | (clock_seconds <= 0)))[
        "text"
    ]
    if bad.any():
        index = int(bad.arg_true()[0])
        raise InputFileError(
            f"{path}: line {index + 2}: time_control {column[index]!r} is not {', '.join(TIME_CONTROLS)} "
            "or a clock such as 90+30 (minutes + seconds a move), 5400+30 (seconds + seconds) or 90 (minutes)"
        )
    too_fast = parsed.select(
        not_ratable_detail(pl.col("tc_base_seconds"), pl.col("tc_increment_seconds"), clock_day)
    ).to_series()
    if too_fast.is_not_null().any():
        lines = too_fast.is_not_null().arg_true()
        index, more = int(lines[0]), len(lines) - 1
        on = f" on {day[index]}" if day is not None else ""
        others = f" (and {more:,} more such game{'s' if more > 1 else ''})" if more else ""
        raise InputFileError(
            f"{path}: line {index + 2}: time_control {column[index]!r}{on} is not ratable by FIDE "
            f"({too_fast[index]}): remove the game{others}"
        )
    return parsed.select("time_control", "tc_base_seconds", "tc_increment_seconds")


def standard_list_of(previous: pl.DataFrame) -> pl.DataFrame | None:
    """The standard ratings PREV gives (player_id, rating, birth_year), or None when it gives none."""
    if STANDARD_RATING not in previous.columns:
        return None
    birth_year = pl.col("birth_year") if "birth_year" in previous.columns else pl.lit(None, dtype=pl.Int32)
    return previous.select(
        "player_id", pl.col(STANDARD_RATING).cast(pl.Int32).alias("rating"), birth_year.alias("birth_year")
    ).filter(pl.col("rating").is_not_null())
