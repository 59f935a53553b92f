"""Rating systems beside FIDE's Elo behind one interface.

Previous state + a period's games -> new state and expectations.

A system is one module of this package defining `SYSTEM`, a `RatingSystem`: its parameter model,
the state columns it keeps, a new player's initial values, its expectancy (White's predicted score)
and its period update. `REGISTRY` maps names to modules (data, not branches): adding a system is
one module and one line there, and touches no other system. A system with its parameters, from a
preset, a YAML file or a bare name, is a `config.SystemRules`.

Everything works on a whole period at once with Polars: games become one row per (game, side),
quantities are summed per player with `group_by`; no Python loop runs over games or players. A system
that rates event by event (`by_event`: uscf, dwz) gets the period's events in (end date, event_id)
order, batched in waves of events that share no player (`event_waves`): one update call per wave.

Games (`normalised_games`): `white_id`, `black_id`, `white_score` (1, 0.5, 0), `colour_known` (false: the
first player need not be White, so no White advantage applies to that game, in the prediction or in
the update), optional `event_id` (uscf counts events) and optional `date` (the order of events for a
`by_event` system; without it events go by event_id). State: `schemas.system_state.SystemState`
plus the system's `extra_state` columns.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

import polars as pl
from pydantic import BaseModel, ConfigDict

from schemas.system_state import SystemState
from schemas.util import polars_schema

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

#: system name -> module defining SYSTEM.
REGISTRY: dict[str, str] = {
    "elo": "pipeline.systems.elo",
    "glicko": "pipeline.systems.glicko",
    "glicko2": "pipeline.systems.glicko2",
    "dwz": "pipeline.systems.dwz",
    "ecf": "pipeline.systems.ecf",
    "stephenson": "pipeline.systems.stephenson",
    "uscf": "pipeline.systems.uscf",
}
#: Systems a scenario may name beside REGISTRY's that rate no single period: whole-history ones, whose chain
#: re-estimates every past month (pipeline.scenarios.whole_history_step).
WHOLE_HISTORY: dict[str, str] = {"whr": "pipeline.whole_history.system"}
#: Other spellings users meet in the literature (PlayerRatings calls Stephenson's function steph()).
ALIASES: dict[str, str] = {"steph": "stephenson", "glicko-2": "glicko2", "glicko1": "glicko"}

STATE_SCHEMA: dict[str, pl.DataType] = dict(polars_schema(SystemState))


class SystemParams(BaseModel):
    """Knobs every system has; each system's model adds its own (YAML keys and `--set` names)."""

    # NaN or infinity in a parameter makes every prediction NaN (or 0.5): refused with its key.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)

    init_rating: float = 1500.0
    white_advantage: float = 0.0


#: A system's parameter model: its `initial`, `expected` and `update` take that model, not the base.
P = TypeVar("P", bound=SystemParams)


@dataclass(frozen=True)
class RatingSystem(Generic[P]):
    """One rating system: what it keeps per player, how it predicts a game, how it rates a period.

    - `initial(params)`: a new player's values of `state_columns` (before any game).
    - `expected(params)`: an expression for White's expected score over a frame holding
      `white_<col>` and `black_<col>` for every state column and `advantage` (the White advantage in
      rating points, already 0 for games whose colours are unknown).
    - `update(players, sides, params, period)`: new values of `state_columns` for the period's
      players. `players` has one row per player of the period: the state before it (the player's
      `state_columns`, `games`, `wins`, `draws`, `losses`, `last_period`), `lag` (periods since the
      last rated one: 1 for a player who played last period or is new) and the period's
      `period_games`, `period_wins`, `period_draws`. `sides` has one row per (game, side):
      `player_id`, `opponent_id`, `score`, `colour` (+1 White, -1 Black, 0 unknown), `event_id`.
    """

    name: str
    description: str
    source: str
    params: type[P]
    state_columns: tuple[str, ...]
    initial: Callable[[P], dict[str, float | int | None]]
    expected: Callable[[P], pl.Expr]
    update: Callable[[pl.DataFrame, pl.DataFrame, P, int], pl.DataFrame]
    extra_state: Mapping[str, PolarsDataType] = field(default_factory=dict)
    #: The Pandera model of the stored state (`<scenario>/system_state`): SystemState, or one adding `extra_state`.
    state_model: type = SystemState
    #: The invariants a scenario's checks may hold this system to. Every system here predicts with a
    #: symmetric expectancy (White's and Black's expected scores add up to 1), so each declares it; none
    #: conserves rating points in general (Glicko's steps depend on each player's deviation, uscf's K on
    #: games played), so no FIDE-style conservation is declared.
    invariants: frozenset[str] = frozenset({"zero_sum_expectation"})
    #: True: the system rates a period event by event in (end date, event_id) order, each event from the state
    #: the earlier ones left (US Chess, DWZ); `update` then sees one event per player and `sides` has `year`
    #: (the event's year, null when unknown). False: every game of the period is simultaneous.
    by_event: bool = False
    #: Values a player of a seed list (or a rated row of rate-period's list) starts with beyond `initial`: what a
    #: rating from elsewhere counts as (DWZ: index 6, Wertungsordnung 2.2.4).
    seeded: Callable[[P], dict[str, float | int | None]] = lambda params: {}
    #: Which state rows hold no rating yet (a list shows their rating empty); None: every row is rated.
    unrated: pl.Expr | None = None
    #: Which games of a games table (`time_control`, `tc_base_seconds`, `tc_increment_seconds`) the system rates under
    #: its parameters, where it has time-control rules of its own (US Chess: its regular, quick and blitz lists by
    #: the clock); None: a scenario's `time_controls` classes decide.
    selects_games: Callable[[P], pl.Expr] | None = None
    #: The list kind (standard, rapid, blitz) the games `selects_games` picks are of, for what a scenario `rates`.
    list_type: Callable[[P], str] | None = None
    #: A list another list of the same system seeds (US Chess: quick and blitz from regular): `(state, seeds, params)`
    #: -> the state with its unrated rows (games 0) started from `seeds` (player_id, rating, games: the seeding list's
    #: state); None: no list of the system is seeded by another.
    seeded_from: Callable[[pl.DataFrame, pl.DataFrame, P], pl.DataFrame] | None = None
    #: The one-time changes of its state a scenario's `events` may name, by the event's key (DWZ: `dwz_upgrade`, the
    #: DSB's upgrade of 2025): state -> the state after the change, applied after the month's games.
    one_time_events: Mapping[str, Callable[[pl.DataFrame], pl.DataFrame]] = field(default_factory=dict)

    def state_schema(self) -> pl.Schema:
        return pl.Schema({**STATE_SCHEMA, **self.extra_state})


class PeriodResult(NamedTuple):
    state: pl.DataFrame  # every player seen so far, by player_id
    games: pl.DataFrame  # the period's games with white_expected, black_expected (from the state before the period)


def system_names() -> list[str]:
    return sorted(REGISTRY)


def get_system(name: str) -> RatingSystem:
    """The system registered under `name` (or an alias); ValueError naming the known ones otherwise."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in REGISTRY:
        raise ValueError(f"unknown rating system {name!r}; systems: {', '.join(system_names())}")
    return importlib.import_module(REGISTRY[key]).SYSTEM


def scenario_system(name: str) -> RatingSystem:
    """The system a scenario names: a period system (get_system) or a whole-history one (WHOLE_HISTORY)."""
    if name.lower() in WHOLE_HISTORY:
        return importlib.import_module(WHOLE_HISTORY[name.lower()]).SYSTEM
    if ALIASES.get(name.lower(), name.lower()) not in REGISTRY:
        known = ", ".join(sorted([*REGISTRY, *WHOLE_HISTORY]))
        raise ValueError(f"unknown rating system {name!r}; systems: {known}")
    return get_system(name)


# -- shared formulas ---------------------------------------------------------------------------

#: Glickman (1999) "The Glicko system", Step 2: q = ln 10 / 400.
Q = 0.0057564627324851142


def glicko_g(variance: pl.Expr) -> pl.Expr:
    """g(RD) = 1 / sqrt(1 + 3 q^2 RD^2 / pi^2) (Glickman 1999, Step 2), taking RD^2."""
    return 1.0 / (1.0 + 3.0 * Q * Q * variance / 3.141592653589793**2).sqrt()


def logistic_expectancy(diff: pl.Expr, scale: float = 400.0) -> pl.Expr:
    """Elo (1978) 8.4, logistic form: W_e = 1 / (1 + 10^(-D / scale)), D the rating difference (own - opponent, White's
    advantage inside it); WHR's Bradley-Terry in Elo units is the same curve (pipeline.whole_history.whr).
    """
    return 1.0 / (1.0 + pl.lit(10.0).pow(-diff / scale))


def glicko_expectancy(g: pl.Expr, diff: pl.Expr) -> pl.Expr:
    """Glickman (1999), Step 2: E = 1 / (1 + 10^(-g (r - r_j) / 400)), the logistic of the difference scaled by g
    (g(RD_j) in the update, g of the combined deviation in a prediction); White's advantage inside `diff`.
    """
    return 1.0 / (1.0 + pl.lit(10.0).pow(-g * diff / 400.0))


def combined_deviation_expected(params: SystemParams) -> pl.Expr:
    """Glickman (1999), "Expected outcome of a game": E = 1 / (1 + 10^(-g(sqrt(RD_i^2 + RD_j^2)) (r_i - r_j) / 400)),
    with the White advantage added to White's side of the difference.
    """
    g = glicko_g(pl.col("white_deviation").pow(2) + pl.col("black_deviation").pow(2))
    return glicko_expectancy(g, pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"))


def with_opponents(sides: pl.DataFrame, players: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Add `own_<col>` and `opp_<col>` (the period's pre-game values) to every side."""
    own = players.select("player_id", *[pl.col(c).alias(f"own_{c}") for c in columns])
    opp = players.select(pl.col("player_id").alias("opponent_id"), *[pl.col(c).alias(f"opp_{c}") for c in columns])
    return sides.join(own, on="player_id", how="left").join(opp, on="opponent_id", how="left")


def signed_advantage(params: SystemParams) -> pl.Expr:
    """The White advantage from this side's point of view: +a as White, -a as Black, 0 when colours are unknown."""
    return pl.col("colour") * params.white_advantage


# -- the driver --------------------------------------------------------------------------------


def empty_state(system: RatingSystem) -> pl.DataFrame:
    return pl.DataFrame(schema=system.state_schema())


def normalised_games(games: pl.DataFrame) -> pl.DataFrame:
    """The columns the systems read, typed; `colour_known` defaults to true, `event_id` to null."""
    missing = [c for c in ("white_id", "black_id", "white_score") if c not in games.columns]
    if missing:
        raise ValueError(f"games lack column(s) {', '.join(missing)}")
    colour = (
        pl.col("colour_known").cast(pl.Boolean).fill_null(True) if "colour_known" in games.columns else pl.lit(True)
    )
    event = pl.col("event_id").cast(pl.Utf8) if "event_id" in games.columns else pl.lit(None, dtype=pl.Utf8)
    return games.select(
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        pl.col("white_score").cast(pl.Float64),
        colour.alias("colour_known"),
        event.alias("event_id"),
    )


def with_players(
    system: RatingSystem, state: pl.DataFrame, player_ids: pl.Series, params: SystemParams
) -> pl.DataFrame:
    """`state` plus a row of initial values for every id it does not hold yet."""
    new_ids = player_ids.unique().to_frame("player_id").join(state.select("player_id"), on="player_id", how="anti")
    if new_ids.height == 0:
        return state
    schema = system.state_schema()
    initial = system.initial(params)
    defaults: dict[str, object] = {"games": 0, "wins": 0, "draws": 0, "losses": 0, **initial}
    new_rows = new_ids.with_columns(
        pl.lit(defaults.get(name), dtype=dtype).alias(name) for name, dtype in schema.items() if name != "player_id"
    ).select(list(schema))
    return pl.concat([state.select(list(schema)), new_rows.cast(schema)]).sort("player_id")


def seeded_from_list(
    system: RatingSystem, state: pl.DataFrame, seeds: pl.DataFrame, player_ids: pl.Series, params: SystemParams
) -> pl.DataFrame:
    """`state` with the players of `player_ids` it does not rate yet started from the list that seeds this one
    (`seeds`: player_id, rating, games; RatingSystem.seeded_from), before their first games in it. Unchanged for a
    system whose lists no other list seeds.
    """
    if system.seeded_from is None:
        return state
    state = with_players(system, state, player_ids, params)
    seeds = seeds.select(pl.col("player_id").cast(pl.Int64), pl.col("rating").cast(pl.Float64), pl.col("games"))
    return system.seeded_from(state, seeds.filter(pl.col("player_id").is_in(player_ids.implode())), params)


def predict(system: RatingSystem, state: pl.DataFrame, games: pl.DataFrame, params: SystemParams) -> pl.Series:
    """White's expected score in every game from frozen `state`; players it lacks get the initial values.

    The White advantage applies only where `colour_known` is true.
    """
    games = normalised_games(games)
    columns = list(system.state_columns)
    initial = system.initial(params)
    frame = games.with_row_index("_row")
    for side in ("white", "black"):
        part = state.select(pl.col("player_id").alias(f"{side}_id"), *[pl.col(c).alias(f"{side}_{c}") for c in columns])
        frame = frame.join(part, on=f"{side}_id", how="left", maintain_order="left")
        frame = frame.with_columns(
            pl.col(f"{side}_{c}").fill_null(initial[c]) for c in columns if initial.get(c) is not None
        )
    frame = frame.with_columns(
        advantage=pl.when(pl.col("colour_known")).then(pl.lit(float(params.white_advantage))).otherwise(0.0)
    )
    return frame.sort("_row").select(system.expected(params).alias("white_expected")).to_series()


def game_sides(games: pl.DataFrame) -> pl.DataFrame:
    """One row per (game, side): player_id, opponent_id, score, colour (+1 White, -1 Black, 0 unknown), event_id."""
    known = pl.col("colour_known").cast(pl.Float64)
    white = games.select(
        pl.col("white_id").alias("player_id"),
        pl.col("black_id").alias("opponent_id"),
        pl.col("white_score").alias("score"),
        known.alias("colour"),
        "event_id",
    )
    black = games.select(
        pl.col("black_id").alias("player_id"),
        pl.col("white_id").alias("opponent_id"),
        (1.0 - pl.col("white_score")).alias("score"),
        (-known).alias("colour"),
        "event_id",
    )
    return pl.concat([white, black])


def event_order(games: pl.DataFrame) -> pl.DataFrame:
    """One row per event of the period: `event_id` (null events are one event), `end_date` (null without dates),
    `order` (0, 1, ... by end date, then event_id) and `year`.

    The DSB's Wertungsordnung 2.2.3 orders evaluations by the day of an event's last game, then by its code;
    US Chess rates events as they end. Without a `date` column the event ids give the order.
    """
    if "date" not in games.columns:
        date = pl.lit(None, dtype=pl.Date)
    elif games.schema["date"] == pl.Utf8:
        date = pl.col("date").str.replace_all(".", "-", literal=True).str.to_date(strict=False)
    else:
        date = pl.col("date").cast(pl.Date, strict=False)
    events = (
        games.select(pl.col("event_id").cast(pl.Utf8).fill_null(""), date.alias("_date"))
        .group_by("event_id")
        .agg(end_date=pl.col("_date").max())
        .sort("end_date", "event_id", nulls_last=True)
    )
    return events.with_row_index("order").with_columns(
        pl.col("order").cast(pl.Int64), year=pl.col("end_date").dt.year().cast(pl.Int64)
    )


def event_waves(games: pl.DataFrame, order: pl.DataFrame) -> pl.DataFrame:
    """`order` plus `wave`: 1 + the largest wave of the earlier events that share a player with the event.

    Events of one wave share no player, so they can be rated together and the result is the one of rating
    the events one by one in order. A fixed point over vectorised passes (as many as the deepest chain of
    events sharing players), not a loop over events.
    """
    keyed = games.with_columns(pl.col("event_id").cast(pl.Utf8).fill_null("")).join(
        order.select("event_id", "order"), on="event_id"
    )
    members = (
        pl.concat([keyed.select("order", player_id="white_id"), keyed.select("order", player_id="black_id")])
        .unique()
        .sort("player_id", "order")
    )
    waves = order.select("order", wave=pl.lit(1, dtype=pl.Int64))
    while True:
        earlier = members.join(waves, on="order").with_columns(
            before=pl.col("wave").cum_max().shift(1).over("player_id", order_by="order").fill_null(0)
        )
        new = earlier.group_by("order").agg(wave=(pl.col("before").max() + 1).cast(pl.Int64))
        merged = waves.join(new, on="order", suffix="_new")
        if (merged["wave"] == merged["wave_new"]).all():
            return order.join(waves, on="order")
        waves = merged.select("order", wave="wave_new")


def _rate_batch(
    system: RatingSystem,
    state: pl.DataFrame,
    games: pl.DataFrame,
    params: SystemParams,
    period: int,
    last_before: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """New state after rating `games` at once; `last_before` (player_id, last_period) gives the lag when earlier
    events of the same period already moved `last_period`.
    """
    sides = game_sides(games)
    if "year" in games.columns:
        sides = sides.with_columns(year=pl.concat([games["year"], games["year"]]))
    tallies = sides.group_by("player_id").agg(
        period_games=pl.len().cast(pl.Int64),
        period_wins=(pl.col("score") == 1.0).sum().cast(pl.Int64),
        period_draws=(pl.col("score") == 0.5).sum().cast(pl.Int64),
        period_losses=(pl.col("score") == 0.0).sum().cast(pl.Int64),
    )
    if last_before is None:
        players = state.join(tallies, on="player_id", how="inner").with_columns(
            lag=(pl.lit(period, dtype=pl.Int64) - pl.col("last_period")).fill_null(1)
        )
    else:
        players = (
            state.join(tallies, on="player_id", how="inner")
            .join(last_before.rename({"last_period": "_before"}), on="player_id", how="left")
            .with_columns(lag=(pl.lit(period, dtype=pl.Int64) - pl.col("_before")).fill_null(1))
            .drop("_before")
        )
    if (players["lag"] < 1).any():
        raise ValueError(f"period {period} is not after a period its players were already rated in")
    updated = system.update(players, sides, params, period)
    keep = [c for c in system.state_columns]
    new_rows = (
        players.drop(keep)
        .join(updated.select("player_id", *keep), on="player_id", how="left")
        .with_columns(
            games=pl.col("games") + pl.col("period_games"),
            wins=pl.col("wins") + pl.col("period_wins"),
            draws=pl.col("draws") + pl.col("period_draws"),
            losses=pl.col("losses") + pl.col("period_losses"),
            last_period=pl.lit(period, dtype=pl.Int64),
        )
    )
    schema = system.state_schema()
    rest = state.join(players.select("player_id"), on="player_id", how="anti")
    return pl.concat([rest.select(list(schema)), new_rows.select(list(schema)).cast(schema)]).sort("player_id")


def rate_system_period(
    system: RatingSystem, state: pl.DataFrame, games: pl.DataFrame, params: SystemParams, period: int
) -> PeriodResult:
    """Rate one period: every game in it is simultaneous (the systems' rating period), all players at once; a
    `by_event` system rates the period's events in order, wave by wave (`event_waves`).

    Returns the new state (every player seen so far) and the period's games with the expectations
    the state before the period gave them (the predictions the period is judged by, for every system).
    `period` is a month index (year x 12 + month - 1) in scenarios; a by_event system takes an event's
    year from its dates, else from such a period.
    """
    raw = games
    games = normalised_games(games)
    if games.height == 0:
        return PeriodResult(
            state,
            games.with_columns(
                white_expected=pl.lit(None, dtype=pl.Float64), black_expected=pl.lit(None, dtype=pl.Float64)
            ),
        )
    if (games["white_id"] == games["black_id"]).any():
        raise ValueError("a game has the same player on both sides")
    state = with_players(system, state, pl.concat([games["white_id"], games["black_id"]]), params)
    expected = predict(system, state, games, params)
    if not system.by_event:
        new_state = _rate_batch(system, state, games, params, period)
    else:
        dated = games.with_columns(raw["date"]) if "date" in raw.columns else games
        waves = event_waves(dated, event_order(dated))
        # Without dates the period's month gives the year (a month index; a small file period gives none).
        fallback = period // 12 if period >= 12 * 1000 else None
        keyed = dated.with_columns(_event=pl.col("event_id").fill_null("")).join(
            waves.select(
                pl.col("event_id").alias("_event"), "wave", pl.col("year").fill_null(pl.lit(fallback, pl.Int64))
            ),
            on="_event",
            how="left",
            maintain_order="left",
        )
        last_before = state.select("player_id", "last_period")
        new_state = state
        for wave in range(1, int(waves["wave"].max()) + 1):  # type: ignore[arg-type]
            batch = keyed.filter(pl.col("wave") == wave).select(*games.columns, "year")
            new_state = _rate_batch(system, new_state, batch, params, period, last_before)
    return PeriodResult(new_state, games.with_columns(white_expected=expected, black_expected=1.0 - expected))
