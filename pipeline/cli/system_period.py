"""`ratings rate-period --rules SYSTEM`: one period of a rating system of pipeline/systems from list and game files."""

from __future__ import annotations

import sys

import polars as pl

from pipeline.cli.period_files import read_period_games
from pipeline.formats.table_files import InputFileError, read_table
from pipeline.months import month_index
from pipeline.systems import ALIASES, REGISTRY, rate_system_period
from pipeline.systems.config import load_system_rules


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
            value = pl.col(given).cast(dtype).fill_null(default)
        else:
            value = default
        if name == "games":
            value = value.fill_null(0)
        columns.append(value.alias(name))
    return previous.select(columns).select(list(schema)).cast(schema).sort("player_id")


def rate_system_files(rules_name: str, month: str, list_path: str, games_path: str, overrides: tuple[str, ...]):
    """The new list (player_id, rating, games_total, and the system's state columns) after `month`."""
    rules = load_system_rules(rules_name, overrides, init=None)
    period = month_index(month)
    previous = read_table(list_path, "previous list")
    state = system_state_from_list(previous, rules, period)
    games = read_period_games(games_path, month)
    raw = read_table(games_path, "games")
    if "date" in raw.columns:
        games = games.with_columns(
            date=raw["date"].cast(pl.Utf8).str.strip_chars().str.replace_all(r"\.", "-").str.to_date(strict=False)
        )
    result = rate_system_period(rules.system, state, games, rules.params, period)
    new = result.state.rename({"games": "games_total"})
    if rules.system.unrated is not None:
        new = new.with_columns(rating=pl.when(rules.system.unrated).then(None).otherwise(pl.col("rating")))
    print(f"{month} rated under {rules.name}: {games.height:,} games, {new.height:,} players", file=sys.stderr)
    return new
