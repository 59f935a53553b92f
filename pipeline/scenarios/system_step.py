"""The chain step of a scenario rated by a rating system.

The month's games -> the system's new state, its list and per-game table.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from pipeline.engine.period import round_half_away
from pipeline.months import add_months, month_index
from pipeline.rules.regulations import reached_elite
from pipeline.scenarios.model import SYSTEM_K_POLICY, Scenario
from pipeline.systems import RatingSystem, empty_state, rate_system_period, seeded_from_list, with_players
from pipeline.systems.config import SystemRules
from schemas.rated_games import RatedGames
from schemas.rating_list import POOL_ENTRY, SystemRatingList
from schemas.util import conform, polars_schema

#: The published rating is a whole number in RatingList's range; a system's scale is unbounded.
RATING_MIN, RATING_MAX = 0, 4000


class SystemMonth(NamedTuple):
    rating_list: pl.DataFrame  # SystemRatingList
    rated_games: pl.DataFrame  # RatedGames
    state: pl.DataFrame  # the system's state_model: what the next month starts from


def period_of(month: str) -> int:
    """A month is one rating period of the system, numbered by its month index (idle months count as periods)."""
    return month_index(month)


def seed_state(scenario: Scenario, seed_list: pl.DataFrame | None, first_month: str) -> pl.DataFrame:
    """The state the chain starts from: every rated player of the seed list at their seed rating.

    Everything else is the system's initial values (deviation, volatility...): a FIDE rating says
    nothing about how certain it is. `last_period` is the month before the first, so that a seed
    player's deviation grows by the months they sit out like anybody else's. Unrated seed players
    are not in the state: they start from the initial values when they first play.
    """
    rules = scenario.system_rules()
    system = rules.system
    schema = system.state_schema()
    if seed_list is None or "rating" not in seed_list.columns:
        return empty_state(system)
    rated = seed_list.filter(pl.col("rating").is_not_null()).select(
        pl.col("player_id").cast(pl.Int64), pl.col("rating").cast(pl.Float64)
    )
    values: dict[str, object] = {
        "games": 0,
        "wins": 0,
        "draws": 0,
        "losses": 0,
        **system.initial(rules.params),
        **system.seeded(rules.params),
        "last_period": period_of(add_months(first_month, -1)),
    }
    state = rated.with_columns(
        pl.lit(values.get(name), dtype=dtype).alias(name)
        for name, dtype in schema.items()
        if name not in ("player_id", "rating")
    )
    return state.select(list(schema)).cast(schema).sort("player_id")


def published_rating(rating: pl.Expr) -> pl.Expr:
    """The system's rating as published: rounded half away from zero, inside RatingList's 0..4000."""
    return round_half_away(rating).clip(RATING_MIN, RATING_MAX).cast(pl.Int32)


def rate_system_month(
    scenario: Scenario,
    previous_list: pl.DataFrame,
    state: pl.DataFrame,
    games: pl.DataFrame,
    month: str,
    players: pl.DataFrame | None = None,
    seeds: pl.DataFrame | None = None,
) -> SystemMonth:
    """Month `month` of a system scenario: `pipeline.systems.rate_system_period` on the month's games it rates
    (Scenario.rates_game: its time controls, or its system's own rules).

    `previous_list` is the list in force before the month (a SystemRatingList, or the seed list as a
    RatingList), `state` the system's state after the month before (`seed_state` for the first).
    Every game of the month is in the per-game table, as in a rule-set scenario; a game of a time
    control the scenario does not rate has weight 0 and no expected scores. The ratings used are
    the state before the month, rounded like the list (a new player's: the initial rating).
    `seeds` (player_id, rating, games): the state of the list that seeds this one (Scenario.standard_chain) before
    the month; the month's players unrated here start from it as the system says (RatingSystem.seeded_from), and
    their games are predicted from there.
    """
    rules = scenario.system_rules()
    to_rate = games.filter(scenario.rates_game())
    sides = pl.concat([to_rate["white_id"], to_rate["black_id"]]).cast(pl.Int64).unique()
    state = with_registered_births(rules, state, sides, players)
    if seeds is not None:
        state = seeded_from_list(rules.system, state, seeds, sides, rules.params)
    result = rate_system_period(rules.system, state, to_rate, rules.params, period_of(month))
    new_state = one_time_events(scenario, rules.system, result.state.select(list(rules.system.state_schema())), month)
    rated_games = _rated_games(games, to_rate, result.games, state, rules, month)
    rating_list = _rating_list(previous_list, state, new_state, to_rate, month, players)
    return SystemMonth(conform(rating_list, SystemRatingList), conform(rated_games, RatedGames), new_state)


def with_registered_births(
    rules: SystemRules, state: pl.DataFrame, sides: pl.Series, players: pl.DataFrame | None
) -> pl.DataFrame:
    """`state` with the birth years the registry in force gives the month's players (`sides`: their ids; `players`:
    their registry rows), where the system
    keeps one (USCF's initial rating from age, DWZ's E from age): a player new to the state gets a row of initial
    values with it, before the games, as a `rate-period` list gives it; the registry's year wins over a stored one
    (a corrected birth date).
    """
    if "birth_year" not in rules.system.state_schema() or players is None or "birth_year" not in players.columns:
        return state
    state = with_players(rules.system, state, sides, rules.params)
    births = players.select(
        pl.col("player_id").cast(pl.Int64), registered=pl.col("birth_year").cast(pl.Int64, strict=False)
    ).unique("player_id", keep="first")
    return (
        state.join(births, on="player_id", how="left", maintain_order="left")
        .with_columns(birth_year=pl.coalesce("registered", "birth_year"))
        .drop("registered")
    )


def one_time_events(scenario: Scenario, system: RatingSystem, state: pl.DataFrame, month: str) -> pl.DataFrame:
    """The system's state after the scenario's events of `month` (Scenario.events), after the month's games: each the
    change the system declares for it (RatingSystem.one_time_events: DWZ's upgrade of 2025), so the month's list and
    every later month start from the changed ratings. Scenario checks that its system declares each of its events.
    """
    for event in scenario.events_after(month):
        state = system.one_time_events[event.kind](state)
    return state


def _rated_games(
    games: pl.DataFrame, to_rate: pl.DataFrame, predicted: pl.DataFrame, state: pl.DataFrame, rules, month: str
) -> pl.DataFrame:
    initial = float(rules.system.initial(rules.params)["rating"])
    expectations = to_rate.select(pl.col("game_id").cast(pl.UInt64)).with_columns(
        white_expected=predicted["white_expected"],
        black_expected=predicted["black_expected"],
        weight=pl.lit(1.0),
    )
    before = state.select("player_id", used=published_rating(pl.col("rating")))
    table = games.select(
        pl.col("game_id").cast(pl.UInt64),
        pl.lit(month).alias("month"),
        "event_id",
        "white_id",
        "black_id",
        "white_score",
        "time_control",
    )
    for side in ("white", "black"):
        table = table.join(
            before.rename({"player_id": f"{side}_id", "used": f"{side}_rating_used"}), on=f"{side}_id", how="left"
        )
    return (
        table.join(expectations, on="game_id", how="left")
        .with_columns(
            # A player new to the system is predicted at its initial rating; only rated games have one.
            *(
                pl.when(pl.col("weight").is_not_null())
                .then(pl.col(f"{side}_rating_used").fill_null(published_rating(pl.lit(initial))))
                .otherwise(pl.col(f"{side}_rating_used"))
                .alias(f"{side}_rating_used")
                for side in ("white", "black")
            ),
            pl.col("weight").fill_null(0.0),
            # A system has no K (its steps are its own: deviation, games played).
            white_k_used=pl.lit(None, dtype=pl.Int16),
            black_k_used=pl.lit(None, dtype=pl.Int16),
        )
        .sort("game_id")
    )


def _rating_list(
    previous: pl.DataFrame,
    state: pl.DataFrame,
    new_state: pl.DataFrame,
    to_rate: pl.DataFrame,
    month: str,
    players: pl.DataFrame | None,
) -> pl.DataFrame:
    # The list in force read as the engine reads a list (a seed list states only what its file says); `ever_2400`
    # keeps the column's FIDE meaning.
    previous = previous.with_columns(ever_2400=reached_elite(SYSTEM_K_POLICY))
    sides = pl.concat([to_rate.select(player_id="white_id"), to_rate.select(player_id="black_id")])
    played = sides.group_by("player_id").agg(games=pl.len().cast(pl.Int32))
    deviation = pl.col("deviation") if "deviation" in new_state.columns else pl.lit(None, dtype=pl.Float64)
    volatility = pl.col("volatility") if "volatility" in new_state.columns else pl.lit(None, dtype=pl.Float64)
    estimate = new_state.select(
        "player_id", new_rating=published_rating(pl.col("rating")), deviation=deviation, volatility=volatility
    )
    # Not the newcomer pools either: a system's list has none (set empty below), and a full join carrying the
    # List(Struct) column took 0.7 GB for a FIDE-scale list (700,000 players) where the join itself takes 0.1 GB.
    prev_columns = [
        c
        for c in polars_schema(SystemRatingList)
        if c in previous.columns and c not in ("deviation", "volatility", "games", "pending")
    ]
    frame = (
        previous.select(prev_columns)
        .join(estimate, on="player_id", how="full", coalesce=True)
        .join(played, on="player_id", how="left")
    )
    if players is not None and "birth_year" in players.columns:
        births = players.select(
            pl.col("player_id").cast(pl.Int64), registry_birth_year=pl.col("birth_year").cast(pl.Int32)
        )
        frame = frame.join(births.unique("player_id", keep="first"), on="player_id", how="left")
    else:
        frame = frame.with_columns(registry_birth_year=pl.lit(None, dtype=pl.Int32))
    games = pl.col("games").fill_null(0)
    return frame.with_columns(
        rating=pl.col("new_rating"),
        change=pl.col("new_rating") - pl.col("rating"),
        correction=pl.lit(None, dtype=pl.Int32),  # a system's chain carries no corrections (rule sets only)
        k=pl.lit(None, dtype=pl.Int16),
        k_used=pl.lit(None, dtype=pl.Int16),
        games=games,
        # Unknown for an established seed player (null), else the games this chain rated.
        games_total=pl.when(pl.col("rating").is_null() & pl.col("games_total").is_null())
        .then(0)
        .otherwise(pl.col("games_total"))
        + games,
        # A system has no inactivity rule: the deviation tells how stale a rating is.
        inactive=pl.lit(False),
        delisted=pl.lit(False),
        newly_rated=pl.col("rating").is_null() & pl.col("new_rating").is_not_null(),
        birth_year=pl.coalesce("birth_year", "registry_birth_year"),
        ever_2400=reached_elite(SYSTEM_K_POLICY, rating="new_rating"),
        last_played=pl.when(games > 0).then(pl.lit(month)).otherwise(pl.col("last_played")),
        pending_games=pl.lit(0, dtype=pl.Int32),
        pending_since=pl.lit(None, dtype=pl.Utf8),
        pending=pl.lit([], dtype=pl.List(POOL_ENTRY)),
    ).sort("player_id")
