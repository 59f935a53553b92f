"""`ratings rate-period --rules SYSTEM`: one period of a rating system of pipeline/systems from list and game files."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import polars as pl

from pipeline.cli.period_files import STANDARD_RATING, read_period_games, read_previous_list
from pipeline.formats.table_files import InputFileError, converted, read_table
from pipeline.months import month_index
from pipeline.rules.model import unstated_time_control
from pipeline.systems import ALIASES, REGISTRY, rate_system_period, seeded_from_list
from pipeline.systems.config import load_system_rules

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

#: rate-period's PREV may give, beside STANDARD_RATING, the games that standard rating rests on: a system that seeds a
#: list from its standard list (uscf: quick and blitz from regular) weighs it by them.
STANDARD_GAMES = "standard_games"


def is_system_name(name: str) -> bool:
    """True when `--rules` names a rating system (or an alias) rather than a FIDE rule set."""
    return ALIASES.get(name.lower(), name.lower()) in REGISTRY


def system_state_from_list(previous: pl.DataFrame, rules, period: int) -> pl.DataFrame:
    """The state a system's PREV list gives: `player_id`, `rating` (empty = unrated), `games_total` (the games the
    rating rests on), optional `birth_year` and the system's own state columns (e.g. `peak`, `dwz_index`).

    A rated row lacking a state column takes the system's `seeded` value, an unrated one its initial value.
    """
    system = rules.system
    schema = system.state_schema()
    if "player_id" not in previous.columns or "rating" not in previous.columns:
        raise InputFileError(
            f"a {system.name} list needs player_id and rating columns (has: {', '.join(previous.columns)})"
        )
    initial = system.initial(rules.params)
    seeded = {**initial, **system.seeded(rules.params)}
    rated = pl.col("rating").is_not_null()
    columns: list[pl.Expr] = [pl.col("player_id").cast(pl.Int64)]
    for name, dtype in schema.items():
        if name == "player_id":
            continue
        given = "games_total" if name == "games" else name
        default = (
            pl.when(rated).then(pl.lit(seeded.get(name), dtype=dtype)).otherwise(pl.lit(initial.get(name), dtype=dtype))
        )
        if name in ("wins", "draws", "losses"):
            default = pl.lit(0, dtype=dtype)
        if name == "last_period":
            default = pl.when(rated).then(pl.lit(period - 1, dtype=dtype))
        if name == "rating":
            value = pl.col("rating").cast(dtype).fill_null(pl.lit(initial["rating"], dtype=dtype))
        elif given in previous.columns:
            # Checked where PREV is read (read_previous_list): a cast here loses no line.
            value = pl.col(given).cast(dtype).fill_null(default)
        else:
            value = default
        if name == "games":
            value = value.fill_null(0)
        columns.append(value.alias(name))
    return previous.select(columns).select(list(schema)).cast(schema).sort("player_id")


def system_columns(rules) -> dict[str, PolarsDataType]:
    """The columns a system's PREV may hold beside RatingList's, as the system's NEW writes them (read back by the next
    period): its state (unrounded rating, games as games_total), its change and K as written (with_period_columns).
    """
    schema = {name: dtype for name, dtype in rules.system.state_schema().items() if name not in ("player_id", "games")}
    return {**schema, "change": pl.Float64, "k": pl.Float64, STANDARD_GAMES: pl.Int64}


def with_period_columns(new: pl.DataFrame, previous: pl.DataFrame, state: pl.DataFrame, params) -> pl.DataFrame:
    """NEW with PRODUCT section 7's `change` (rating minus PREV's, null where unrated on either), `k` (the system's
    constant K where it has one, else null) and `games` (the games rated this period) after the system's columns.
    """
    before = previous.select("player_id", pl.col("rating").cast(pl.Float64).alias("_before")).join(
        state.select("player_id", pl.col("games").alias("_games_before")), on="player_id", how="left"
    )
    k = getattr(params, "k", None)
    return (
        new.join(before, on="player_id", how="left", maintain_order="left")
        .with_columns(
            change=pl.col("rating") - pl.col("_before"),
            k=pl.lit(k if isinstance(k, (int, float)) else None, dtype=pl.Float64),
            games=(pl.col("games_total") - pl.col("_games_before").fill_null(0)).cast(pl.Int32),
        )
        .drop("_before", "_games_before")
    )


def standard_seeds(previous: pl.DataFrame, list_path: str) -> pl.DataFrame | None:
    """PREV's standard ratings as a seeding list's state (player_id, rating, games): STANDARD_RATING on STANDARD_GAMES
    games (null where not given: the system weighs such a rating fully); None without STANDARD_RATING.
    """
    if STANDARD_RATING not in previous.columns:
        return None
    rating = converted(previous, STANDARD_RATING, pl.Float64, list_path, "previous list")
    if STANDARD_GAMES in previous.columns:
        games = converted(previous, STANDARD_GAMES, pl.Int64, list_path, "previous list")
    else:
        games = pl.Series(STANDARD_GAMES, [None] * previous.height, dtype=pl.Int64)
    return pl.DataFrame(
        {
            "player_id": converted(previous, "player_id", pl.Int64, list_path, "previous list"),
            "rating": rating,
            "games": games,
        }
    ).filter(pl.col("rating").is_not_null())


def rate_system_files(rules_name: str, month: str, list_path: str, games_path: str, overrides: tuple[str, ...]):
    """The new list (player_id, rating, games_total, and the system's state columns) after `month`.

    A system with time-control rules of its own (uscf) rates the file's games of its list (`--set rating_list=quick`);
    a game the file states no time control for is of the class of that list. For a list its system seeds from the
    standard list (uscf: quick and blitz), PREV's STANDARD_RATING (and STANDARD_GAMES) seed its unrated players.
    """
    rules = load_system_rules(rules_name, overrides, init=None)
    system = rules.system
    period = month_index(month)
    previous = read_previous_list(list_path, month, system_columns(rules))
    state = system_state_from_list(previous, rules, period)
    list_type = system.list_type(rules.params) if system.list_type is not None else "standard"
    games = read_period_games(
        games_path, month, default_class=unstated_time_control(list_type), stated_ratings=(1, None)
    )
    raw = read_table(games_path, "games")
    if "date" in raw.columns:
        games = games.with_columns(
            date=raw["date"].cast(pl.Utf8).str.strip_chars().str.replace_all(r"\.", "-").str.to_date(strict=False)
        )
    given = games.height
    if system.selects_games is not None:
        clock = [c for c in ("tc_base_seconds", "tc_increment_seconds") if c not in games.columns]
        games = games.with_columns(pl.lit(None, dtype=pl.Int32).alias(c) for c in clock)
        games = games.filter(system.selects_games(rules.params))
    seeds = standard_seeds(previous, list_path)
    if seeds is not None and system.seeded_from is not None and list_type != "standard":
        players = pl.concat([games["white_id"], games["black_id"]]).unique()
        state = seeded_from_list(system, state, seeds, players, rules.params)
    elif seeds is not None:
        print(
            f"ratings rate-period: warning: {list_path}: column {STANDARD_RATING} is not used: {rules.name} rates the "
            f"{list_type} list, which no standard rating seeds",
            file=sys.stderr,
        )
    result = rate_system_period(system, state, games, rules.params, period)
    new = result.state.rename({"games": "games_total"})
    if system.unrated is not None:
        new = new.with_columns(rating=pl.when(system.unrated).then(None).otherwise(pl.col("rating")))
    new = with_period_columns(new, previous, state, rules.params)
    left_out = f" ({given - games.height:,} in time controls its list does not rate)" if given > games.height else ""
    print(
        f"{month} rated under {rules.name}: {games.height:,} games{left_out}, {new.height:,} players", file=sys.stderr
    )
    return new
