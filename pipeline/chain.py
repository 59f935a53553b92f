"""A scenario's chain of lists month after month: where it starts, what a month carries on, what it stores."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pandera.polars as pa
import polars as pl

from pipeline.engine import normalize_list
from pipeline.ingest import read_players, read_seed_list
from pipeline.monthly import table_key
from pipeline.months import add_months
from pipeline.scenarios import Scenario, rate_scenario_month
from pipeline.storage import ObjectStore, redact_url
from pipeline.system_scenarios import rate_system_month, seed_state
from schemas import Games, RatedGames, RatingList, SystemRatingList
from schemas.util import empty_frame


class ChainTable(NamedTuple):
    """One table a scenario's chain stores every month."""

    name: str
    model: type[pa.DataFrameModel]
    unique: str | None  # the column no value may repeat in within a month
    carried: bool = False  # month M starts from this table's month M-1


def chain_tables(scenario: Scenario) -> list[ChainTable]:
    """The tables the chain writes, in the order a month's outputs are stored (the carried state before the games)."""
    if scenario.is_system:
        return [
            ChainTable("rating_list", SystemRatingList, "player_id", carried=True),
            ChainTable("system_state", scenario.system_rules().system.state_model, None, carried=True),
            ChainTable("rated_games", RatedGames, "game_id"),
        ]
    return [
        ChainTable("rating_list", RatingList, "player_id", carried=True),
        ChainTable("rated_games", RatedGames, "game_id"),
    ]


class MissingMonth(LookupError):
    """The stored table of the month before the first month of a run is missing: the chain cannot continue."""

    def __init__(self, table: str, month: str, before: str, location: str):
        super().__init__(
            f"{table} for {before} is missing, so {month} cannot be rated (the list for {month} is the list for "
            f"{before} plus {month}'s games). Materialize it for {before} first, or run a range starting earlier."
        )
        self.missing_month, self.location = before, location


def read_scenario_seed(store: ObjectStore, scenario: Scenario) -> pl.DataFrame | None:
    """The scenario's own seed list (a CSV or Parquet key in the store), else the landing zone's."""
    if scenario.seed_list is None:
        return read_seed_list(store)
    with store.open(scenario.seed_list) as handle:
        data = handle.read()
    if scenario.seed_list.endswith(".parquet"):
        return pl.read_parquet(data)
    return pl.read_csv(data, schema_overrides={"player_id": pl.Int64, "rating": pl.Int32})


def _stored_month_before(store: ObjectStore, path: Sequence[str], month: str) -> pl.DataFrame:
    before = add_months(month, -1)
    key = table_key(path, before)
    if not store.exists(key):
        raise MissingMonth("/".join(path), month, before, redact_url(store.url(key)))
    return store.read_parquet(key)


def previous_list(store: ObjectStore, scenario: Scenario, month: str, first_partition: str) -> pl.DataFrame:
    """The list in force before `month`: the seed list for the first partition, else the stored list of M-1."""
    if month == first_partition:
        seed = read_scenario_seed(store, scenario)
        return normalize_list(seed) if seed is not None else empty_frame(RatingList)
    return _stored_month_before(store, [scenario.name, "rating_list"], month)


def previous_state(store: ObjectStore, scenario: Scenario, month: str, first_partition: str) -> pl.DataFrame:
    """A system's state before `month`: from the seed list for the first partition, else the stored state of M-1."""
    if month == first_partition:
        return seed_state(scenario, previous_list(store, scenario, month, first_partition), month)
    return _stored_month_before(store, [scenario.name, "system_state"], month)


def month_figures(frames: Mapping[str, pl.DataFrame], rules_name: str) -> dict[str, dict[str, Any]]:
    """What the UI shows of a month of each chain table (by name). Of the list, what a rating officer checks first:
    size, rated players, newcomers, games, range and the rules it was rated under.
    """
    rating_list, rated_games = frames["rating_list"], frames["rated_games"]
    rated = rating_list.filter(pl.col("rating").is_not_null())
    low, high = rated["rating"].min(), rated["rating"].max()
    figures: dict[str, dict[str, Any]] = {
        "rating_list": {
            "players": rating_list.height,
            "rated_players": rated.height,
            "newly_rated": int(rating_list["newly_rated"].sum()),
            "games": rated_games.height,
            "rating_range": f"{low!s}-{high!s}" if rated.height else "no rated players",
            "rules": rules_name,
        },
        "rated_games": {"games": rated_games.height},
    }
    if "system_state" in frames:
        figures["system_state"] = {"players": frames["system_state"].height}
    return figures


def rate_months(
    store: ObjectStore, scenario: Scenario, months: Sequence[str], first_partition: str
) -> Callable[[str, Callable[[str], pl.DataFrame]], tuple[pl.DataFrame, ...]]:
    """A function rating the run's months in order, each from the one before, returning chain_tables' frames.

    The month before the run is read (or refused with MissingMonth) before anything is rated, so a
    gap fails before any month is written. The registry is read once: a month sees the players
    registered up to it (birth years of newcomers).
    """
    carried = {"list": previous_list(store, scenario, months[0], first_partition)}
    if scenario.is_system:
        carried["state"] = previous_state(store, scenario, months[0], first_partition)
    registry = read_players(store, months[-1])

    def rate(month: str, games_of: Callable[[str], pl.DataFrame]) -> tuple[pl.DataFrame, ...]:
        players = registry.filter(pl.col("registered") <= month)
        if scenario.is_system:
            system = rate_system_month(scenario, carried["list"], carried["state"], games_of(month), month, players)
            carried.update(list=system.rating_list, state=system.state)
            return system.rating_list, system.state, system.rated_games
        result = rate_scenario_month(scenario, carried["list"], games_of, month, players=players)
        carried["list"] = result.rating_list
        return result.rating_list, result.rated_games

    return rate


def games_or_empty(games: Any) -> Callable[[str], pl.DataFrame]:
    """Month -> validated games; months before the first partition have none (nothing was ingested for them)."""
    return lambda month: games[month] if month in games else empty_frame(Games)
