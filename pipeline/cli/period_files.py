"""The files `ratings rate-period` reads: the previous list and the period's games, with errors naming file and line."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import polars as pl

from pipeline.formats.fide_list import RATING_PLAUSIBLE
from pipeline.formats.fields import parse_clock, result_as_read
from pipeline.formats.table_files import InputFileError, converted, decode_pending, read_table, where
from pipeline.months import MONTH_PATTERN, add_months, first_day, parse_month
from pipeline.rules.time_controls import not_ratable_detail, time_control_class
from schemas.games import RESULTS, TIME_CONTROLS
from schemas.rating_list import RatingList
from schemas.util import polars_schema

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

GAMES_COLUMNS = ("event_id", "white_id", "black_id", "result", "white_rating", "black_rating", "date", "time_control")


def warn_unknown_columns(path: str, columns: list[str], known) -> None:
    """One line on stderr naming the columns rate-period does not read (a misspelt name is otherwise silent)."""
    unknown = [name for name in columns if name not in known]
    if unknown:
        print(f"ratings rate-period: warning: {path}: ignoring unknown column(s) {', '.join(unknown)}", file=sys.stderr)


#: rate-period's PREV may give, for a rapid or blitz list, each player's standard rating: the starting rating of a
#: player unrated on that list (regulations.seeded_from_standard).
STANDARD_RATING = "standard_rating"


#: What PREV's columns may hold, beyond their type (docs: README, "Rating one period by hand"): a rating is a rating of
#: a list (RatingList: up to 4000), 0 not read as unrated (empty is); a K is not negative (a rule set of one's own may
#: give any K, and its NEW is read back as the next PREV); a birth year from 1850 to the year rated.
PREV_RANGES: dict[str, tuple[int, int | None]] = {
    "player_id": (1, None),
    "rating": (1, 4000),
    "k": (0, None),
    "k_used": (0, None),
    "games": (0, None),
    "games_total": (0, None),
    "pending_games": (0, None),
    STANDARD_RATING: (1, 4000),
}
PREV_ALLOWED = {
    "rating": "a rating from 1 to 4000; an empty cell is an unrated player, 0 is not read as one",
    STANDARD_RATING: "a rating from 1 to 4000; an empty cell is none",
}
#: The spellings of a PREV flag (ever_2400, inactive, ...); any other is refused, not read as false.
TRUE_WORDS, FALSE_WORDS = ("true", "t", "yes", "y", "1"), ("false", "f", "no", "n", "0")


def read_previous_list(
    path: str, month: str | None = None, extra: dict[str, PolarsDataType] | None = None
) -> pl.DataFrame:
    """PREV: player_id, rating (empty = unrated), optional k, games_total, birth_year, ever_2400 (or a full list),
    and standard_rating for a rapid or blitz list; `extra`: the columns (and types) a rating system reads beside them.

    Every value is checked against its column's type and range (PREV_RANGES), a month (last_played, pending_since, a
    pool's) against `month`; an error names the file, the line (a Parquet file's row), the column and what it allows.
    """
    frame = read_table(path, "previous list")
    known = {**polars_schema(RatingList), STANDARD_RATING: pl.Int32, **(extra or {})}
    warn_unknown_columns(path, frame.columns, known)
    for required in ("player_id", "rating"):
        if required not in frame.columns:
            close = [c for c in frame.columns if c.lower() == required]
            hint = f": {close[0]!r} is not {required!r} (column names are lower-case)" if close else ""
            raise InputFileError(
                f"{path}: previous list needs a {required} column (empty cells: unrated players){hint} "
                f"(has: {', '.join(frame.columns)})"
            )
    frame = decode_pending(frame, path, month)
    year = parse_month(month)[0] if month else None
    columns = []
    for name, dtype in known.items():
        if name not in frame.columns or name == "pending":
            continue
        if dtype == pl.Boolean:
            columns.append(_flag(frame, name, path))
        elif name in ("last_played", "pending_since"):
            columns.append(_month_column(frame, name, path, month))
        elif dtype == pl.Utf8:
            continue
        else:
            low, high = PREV_RANGES.get(name, (None, None))
            if name == "birth_year":
                low, high = 1850, year
            columns.append(converted(frame, name, dtype, path, "previous list", PREV_ALLOWED.get(name, ""), low, high))
    frame = frame.with_columns(columns)
    missing_ids = frame["player_id"].is_null()
    if missing_ids.any():
        raise InputFileError(
            f"{path}: {where(path, int(missing_ids.arg_true()[0]))}: previous list row has no player_id"
        )
    duplicates = frame.filter(pl.col("player_id").is_duplicated())["player_id"].unique().sort()
    if len(duplicates):
        raise InputFileError(f"{path}: previous list has duplicate player_id values: {duplicates.head(5).to_list()}")
    if "pending" in frame.columns and "pending_games" in frame.columns:  # without it, the pool's games are its count
        pooled = frame["pending"].list.eval(pl.element().struct.field("games")).list.sum().fill_null(0)
        stated = frame["pending_games"].fill_null(0)
        differ = pooled != stated
        if differ.any():
            index = int(differ.arg_true()[0])
            raise InputFileError(
                f"{path}: {where(path, index)}: previous list column 'pending_games' has {stated[index]}, but the pool "
                f"in 'pending' holds {pooled[index]} games (a pool as rate-period writes it holds pending_games games)"
            )
    return frame


def _flag(frame: pl.DataFrame, name: str, path: str) -> pl.Series:
    """A flag column as booleans: a spelling of TRUE_WORDS or FALSE_WORDS, or empty (false); any other refused."""
    raw = frame[name]
    if raw.dtype in (pl.Boolean, pl.Null):
        return raw.cast(pl.Boolean)
    if raw.dtype != pl.Utf8:
        raise InputFileError(f"{path}: previous list column {name!r} holds {raw.dtype} values, not true/false values")
    word = raw.str.strip_chars().str.to_lowercase()
    bad = word.is_not_null() & (word != "") & ~word.is_in([*TRUE_WORDS, *FALSE_WORDS])
    if bad.any():
        index = int(bad.arg_true()[0])
        raise InputFileError(
            f"{path}: {where(path, index)}: previous list column {name!r} has {raw[index]!r}, not a valid value "
            f"({' or '.join(['true', 'false'])}; also {', '.join(TRUE_WORDS[1:])} / {', '.join(FALSE_WORDS[1:])})"
        )
    return word.is_in(TRUE_WORDS).alias(name)


def _month_column(frame: pl.DataFrame, name: str, path: str, month: str | None) -> pl.Series:
    """A month column (last_played, pending_since) as YYYY-MM text: a month no later than `month`, or empty."""
    raw = frame[name]
    if raw.dtype not in (pl.Utf8, pl.Null):
        raise InputFileError(f"{path}: previous list column {name!r} holds {raw.dtype} values, not months (YYYY-MM)")
    text = raw.cast(pl.Utf8).str.strip_chars()
    text = pl.select(pl.when(text != "").then(text)).to_series().alias(name)
    bad = text.is_not_null() & ~text.str.contains(MONTH_PATTERN.pattern)
    if month:
        bad = bad | (text > month).fill_null(False)
    if bad.any():
        index = int(bad.arg_true()[0])
        later = f", no later than {month} (the month rated)" if month else ""
        raise InputFileError(
            f"{path}: {where(path, index)}: previous list column {name!r} has {raw[index]!r}, not a valid value "
            f"(a month YYYY-MM{later})"
        )
    return text


def read_period_games(
    path: str,
    month: str,
    default_class: str = "classical",
    stated_ratings: tuple[int, int | None] = RATING_PLAUSIBLE,
) -> pl.DataFrame:
    """GAMES: event_id, white_id, black_id, result, optional white_rating, black_rating, date, time_control.

    A game whose time control the file does not state is of `default_class` (the class of the list rated: a
    rapid period's games file need not say that its games are rapid). A stated rating is a whole number within
    `stated_ratings`: FIDE's plausible ratings for a rule set (validation's bound); a rating system's scale is its
    own (a USCF scholastic 900).
    """
    frame = read_table(path, "games")
    warn_unknown_columns(path, frame.columns, GAMES_COLUMNS)
    nested = [name for name in GAMES_COLUMNS if name in frame.columns and frame.schema[name].is_nested()]
    if nested:
        raise InputFileError(
            f"{path}: games column {nested[0]!r} holds {frame.schema[nested[0]]} values, not one value a game"
        )
    required = ["event_id", "white_id", "black_id", "result"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputFileError(
            f"{path}: games file lacks required column(s) {', '.join(missing)} (has: {', '.join(frame.columns)})"
        )
    result_text = pl.select(result_as_read(pl.lit(frame["result"].cast(pl.Utf8).str.strip_chars()))).to_series()
    unknown = result_text.is_null() | ~result_text.is_in(list(RESULTS))
    if unknown.any():
        index = int(unknown.arg_true()[0])
        given = "is empty, not" if not result_text[index] else f"{frame['result'][index]!r} is not"
        raise InputFileError(f"{path}: {where(path, index)}: result {given} 1-0, 0-1 or 1/2-1/2")
    games = pl.DataFrame(
        {
            "game_id": pl.Series(range(frame.height), dtype=pl.UInt64),
            "event_id": frame["event_id"].cast(pl.Utf8).fill_null(""),
            "white_id": converted(frame, "white_id", pl.Int64, path, "games", low=1),
            "black_id": converted(frame, "black_id", pl.Int64, path, "games", low=1),
            "white_score": result_text.replace_strict(RESULTS, return_dtype=pl.Float64),
        }
    )
    for column in ("white_id", "black_id"):
        if games[column].is_null().any():
            raise InputFileError(
                f"{path}: {where(path, int(games[column].is_null().arg_true()[0]))}: {column} is empty"
            )
    # For a FIDE rule set a stated rating outside RATING_PLAUSIBLE is a typo, not a rating: validation quarantines it
    # (rating_implausible).
    low, high = stated_ratings
    for source, target in (("white_rating", "white_rating_used"), ("black_rating", "black_rating_used")):
        if source in frame.columns:
            rating = converted(frame, source, pl.Int32, path, "games", low=low, high=high)
            games = games.with_columns(rating.alias(target))
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
            raise InputFileError(f"{path}: {where(path, index)}: date {frame['date'][index]!r} is not YYYY-MM-DD")
        # Reading chosen (README): a game may be reported after its month (an event rated late, with the list of its
        # start), never before it is played: a day after the month rated is a typo.
        later = (dates >= first_day(add_months(month, 1))).fill_null(False)
        if later.any():
            index = int(later.arg_true()[0])
            raise InputFileError(
                f"{path}: {where(path, index)}: date {frame['date'][index]!r} is after {month}, the month rated "
                f"(a game is rated in its month or, reported late, a later one)"
            )
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
            f"{path}: {where(path, int(self_play.arg_true()[0]))}: white_id and black_id are the same player"
        )
    return games


def unrated_players_stay_unrated(
    games: pl.DataFrame, previous: pl.DataFrame, path: str, seeded: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The games with each white_rating or black_rating given for a player unrated on PREV (or absent from it) left
    out (the game stays, rated with the list's ratings), named in a warning: as the pipeline reads a dump's stated
    ratings (scenarios.ratings_used), a rating a games file states never makes a player the list does not rate count
    as rated, for their opponents or for themselves. A player `seeded` by a standard rating (a rapid or blitz list)
    counts as rated.
    """
    rated = previous.filter(pl.col("rating").is_not_null())["player_id"]
    if seeded is not None:
        rated = pl.concat([rated, seeded["player_id"]])
    rated = rated.implode()
    dropped = []
    for side in ("white", "black"):
        column = f"{side}_rating_used"
        if column not in games.columns:
            continue
        unrated = games[column].is_not_null() & ~games[f"{side}_id"].is_in(rated)
        if unrated.any():
            dropped.append((int(unrated.arg_true()[0]), int(unrated.sum()), side))
            games = games.with_columns(pl.when(~unrated).then(pl.col(column)).alias(column))
    if dropped:
        index, _, side = min(dropped)
        more = sum(count for _, count, _ in dropped) - 1
        print(
            f"ratings rate-period: warning: {path}: {where(path, index)}: {side}_rating given for a player unrated on "
            f"the previous list{f' (and {more:,} more such)' if more else ''}: not used; as in the pipeline, a rating "
            "a file states never makes a player the list does not rate count as rated",
            file=sys.stderr,
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
            f"{path}: {where(path, index)}: time_control {column[index]!r} is not {', '.join(TIME_CONTROLS)} "
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
            f"{path}: {where(path, index)}: time_control {column[index]!r}{on} is not ratable by FIDE "
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
