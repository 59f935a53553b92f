"""dwz: the German federation's DWZ (DSB Wertungsordnung), tournament by tournament, and its 2025 upgrade."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, SystemParams
from schemas.system_state import DwzState

SOURCE = "DSB Wertungsordnung (Stand 30 May 2014, online edition): 2.2.3, 3.3, 3.4, 4.1.1, Anhang 2.1 and 2.4"


class DwzParams(SystemParams):
    init_rating: float = Field(1000.0, description="the rating an unrated player is predicted with (no DWZ yet)")
    first_min_games: int = Field(
        5, ge=1, description="a first DWZ needs this many games against rated opponents (Wertungsordnung 3.4.1.1)"
    )
    rest_expiry_months: int = Field(
        24, ge=1, description="Restpartien lapse after this many months (Wertungsordnung 4.1.1: 2 years)"
    )
    e_max: float = Field(30.0, description="upper bound of E without braking (Anhang 2.4)")
    e_max_braking: float = Field(150.0, description="upper bound of E with the braking term (Anhang 2.4)")


# -- expectancy (3.3, Anhang 2.1) ---------------------------------------------------------------


#: Abramowitz & Stegun 7.1.26: erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p x), x >= 0.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _as_erf_of_abs(x_abs: Any, exp: Callable[[Any], Any]) -> Any:
    """7.1.26 on |x| (a Polars expression or a NumPy array; `exp` is the matching exponential)."""
    t = 1.0 / (1.0 + _AS_P * x_abs)
    a1, a2, a3, a4, a5 = _AS_A
    return 1.0 - t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5)))) * exp(-(x_abs * x_abs))


def erf(x: pl.Expr) -> pl.Expr:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): erf from Polars arithmetic (odd: the sign of x)."""
    value = _as_erf_of_abs(x.abs(), lambda v: v.exp())
    return pl.when(x >= 0).then(value).otherwise(-value)


def _win_expectancy_numpy(difference: np.ndarray) -> np.ndarray:
    """win_expectancy on a NumPy array (the same formula), for the bisection of performance_difference."""
    x = difference / 400.0
    return 0.5 * (1.0 + np.sign(x) * _as_erf_of_abs(np.abs(x), np.exp))


def win_expectancy(difference: pl.Expr) -> pl.Expr:
    """Wertungsordnung 3.3.1: P(D) from the normal distribution with sigma = 200 sqrt 2 for the difference
    D = own DWZ - opponent's DWZ, i.e. (1 + erf(D / 400)) / 2 (the table of Anhang 2.1, FIDE's table).
    """
    return 0.5 * (1.0 + erf(difference / 400.0))


def performance_difference(p: np.ndarray) -> np.ndarray:
    """Anhang 2.2, the inverse D(P) of P(D): solved by bisection on `win_expectancy` (vectorised, 60 halvings)."""
    lo, hi = np.full(p.shape, -2000.0), np.full(p.shape, 2000.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        value = _win_expectancy_numpy(mid)
        below = value < p
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


# -- development coefficient (Anhang 2.4) -------------------------------------------------------


def age_term(age: pl.Expr) -> pl.Expr:
    """Anhang 2.4: J = 5 for youths (up to 20), 10 for 21-25, 15 from 26 (and where the age is unknown)."""
    return pl.when(age <= 20).then(5.0).when(age <= 25).then(10.0).otherwise(15.0)


def acceleration(rating: pl.Expr, youth: pl.Expr) -> pl.Expr:
    """Anhang 2.4: fB = Ro / 2000 within [0.5, 1.0] for youths; 1.0 for everybody else."""
    return pl.when(youth).then((rating / 2000.0).clip(0.5, 1.0)).otherwise(1.0)


def braking(rating: pl.Expr, youth: pl.Expr, score: pl.Expr, expected: pl.Expr) -> pl.Expr:
    """Anhang 2.4: SBr = e^((1300 - Ro) / 150) - 1 for a youth with Ro < 1300 and W <= We; 0 otherwise."""
    return (
        pl.when(youth & (rating < 1300.0) & (score <= expected))
        .then(((1300.0 - rating) / 150.0).exp() - 1.0)
        .otherwise(0.0)
    )


def development_coefficient(rating: pl.Expr, age: pl.Expr, index: pl.Expr, score: pl.Expr, expected: pl.Expr, params):
    """Anhang 2.4: E = ((Ro/1000)^4 + J) fB + SBr, rounded to a whole number (as the tables of Anhang 2.4 give it),
    then 5 <= E <= min(30, 5 x Index) without braking, 5 <= E <= 150 with it (Index 0 counts as 1).
    """
    youth = age <= 20
    sbr = braking(rating, youth, score, expected)
    raw = ((rating / 1000.0).pow(4) + age_term(age)) * acceleration(rating, youth) + sbr
    cap = (
        pl.when(sbr > 0)
        .then(params.e_max_braking)
        .otherwise(pl.min_horizontal(pl.lit(params.e_max), 5.0 * pl.max_horizontal(index, pl.lit(1)).cast(pl.Float64)))
    )
    return raw.round(0).clip(lower_bound=5.0).clip(upper_bound=cap)


def new_rating(rating: pl.Expr, score: pl.Expr, expected: pl.Expr, e: pl.Expr, n: pl.Expr) -> pl.Expr:
    """Wertungsordnung 3.2 / Anhang 2.4: Rn = Ro + 800 (W - We) / (E + n), a whole number."""
    return (rating + 800.0 * (score - expected) / (e + n.cast(pl.Float64))).round(0)


def first_rating(opponents_sum: pl.Expr, games: pl.Expr, score: pl.Expr) -> pl.Expr:
    """Wertungsordnung 3.4 with Anhang 2.2: a first DWZ from the performance Rc + D(W/n), Rc the opponents' mean.

    The Wertungsordnung solves the first DWZ by a simultaneous iteration (3.4.4) over the tournament; with
    Restpartien kept as sums (games, points, opponents' ratings) the performance formula is what they allow.
    """
    share = (score / games.cast(pl.Float64)).clip(1e-9, 1 - 1e-9)
    difference = share.map_batches(lambda s: pl.Series(performance_difference(s.to_numpy())), return_dtype=pl.Float64)
    return (opponents_sum / games.cast(pl.Float64) + difference).round(0)


# -- the 2025 upgrade ---------------------------------------------------------------------------


def upgrade_2025(rating: pl.Expr) -> pl.Expr:
    """DSB's DWZ upgrade of 2025 (commission, as quoted by the Main-Taunus club page; systems-and-calendar.md 1.7):
    DWZ + 400 below 1000, 0.64 x DWZ + 760 from 1000 to below 2110 (rounded), unchanged from 2110.
    """
    return (
        pl.when(rating < 1000.0)
        .then(rating + 400.0)
        .when(rating < 2110.0)
        .then((0.64 * rating + 760.0).round(0))
        .otherwise(rating)
    )


def apply_upgrade_2025(state: pl.DataFrame) -> pl.DataFrame:
    """The 2025 upgrade on a dwz state: every player holding a DWZ (dwz_index > 0); unrated ones keep nothing."""
    return state.with_columns(
        rating=pl.when(pl.col("dwz_index") > 0).then(upgrade_2025(pl.col("rating"))).otherwise(pl.col("rating"))
    )


# -- one tournament per player ------------------------------------------------------------------


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: DwzParams, period: int) -> pl.DataFrame:
    rated = players.select("player_id", "rating", pre=pl.col("dwz_index") > 0)
    sides = sides.join(
        rated.select(pl.col("player_id").alias("opponent_id"), opp=pl.col("rating"), opp_rated=pl.col("pre")),
        on="opponent_id",
    )
    # Restpartien older than the expiry lapse (4.1.1); newcomers then count this tournament's games against
    # rated opponents plus the Restpartien left (3.4.1.1).
    live = (pl.lit(period) - pl.col("rest_since")) < params.rest_expiry_months
    newcomers = players.filter(pl.col("dwz_index") == 0).with_columns(
        rest_games=pl.when(live).then(pl.col("rest_games")).otherwise(0),
        rest_score=pl.when(live).then(pl.col("rest_score")).otherwise(0.0),
        rest_opponents=pl.when(live).then(pl.col("rest_opponents")).otherwise(0.0),
        rest_since=pl.when(live).then(pl.col("rest_since")),
    )
    against_rated = (
        sides.filter(pl.col("opp_rated"))
        .group_by("player_id")
        .agg(n=pl.len().cast(pl.Int64), w=pl.col("score").sum(), opp_sum=pl.col("opp").sum())
    )
    newcomers = (
        newcomers.join(against_rated, on="player_id", how="left")
        .with_columns(
            n=pl.col("rest_games") + pl.col("n").fill_null(0),
            w=pl.col("rest_score") + pl.col("w").fill_null(0.0),
            opp_sum=pl.col("rest_opponents") + pl.col("opp_sum").fill_null(0.0),
        )
        .with_columns(
            qualifies=(pl.col("n") >= params.first_min_games) & (pl.col("w") > 0) & (pl.col("w") < pl.col("n"))
        )
    )
    firsts = newcomers.filter("qualifies").with_columns(
        new=first_rating(pl.col("opp_sum"), pl.col("n"), pl.col("w")), new_index=pl.lit(1, dtype=pl.Int64)
    )
    carried = newcomers.filter(~pl.col("qualifies")).select(
        "player_id",
        new=pl.col("rating"),
        new_index=pl.lit(0, dtype=pl.Int64),
        rest_games="n",
        rest_score="w",
        rest_opponents="opp_sum",
        rest_since=pl.when(pl.col("n") > 0).then(pl.coalesce("rest_since", pl.lit(period, dtype=pl.Int64))),
    )
    # Rated players count games against rated opponents and against newcomers who got their first DWZ here (3.3.2).
    now = rated.join(firsts.select("player_id", "new"), on="player_id", how="left").select(
        pl.col("player_id").alias("opponent_id"),
        opp_now=pl.when(pl.col("pre")).then(pl.col("rating")).otherwise(pl.col("new")),
    )
    counted = (
        sides.join(rated.filter("pre").select("player_id"), on="player_id")
        .join(now, on="opponent_id")
        .filter(pl.col("opp_now").is_not_null())
    )
    year = pl.col("year").max() if "year" in counted.columns else pl.lit(None, dtype=pl.Int64)
    tallies = (
        counted.join(rated.select("player_id", own=pl.col("rating")), on="player_id")
        .group_by("player_id")
        .agg(
            n=pl.len().cast(pl.Int64),
            w=pl.col("score").sum(),
            we=win_expectancy(pl.col("own") - pl.col("opp_now")).sum(),
            year=year,
        )
    )
    established = (
        players.filter(pl.col("dwz_index") > 0)
        .join(tallies, on="player_id", how="left")
        .with_columns(n=pl.col("n").fill_null(0))
        .with_columns(
            e=development_coefficient(
                pl.col("rating"),
                pl.col("year") - pl.col("birth_year"),
                pl.col("dwz_index"),
                pl.col("w"),
                pl.col("we"),
                params,
            )
        )
        .select(
            "player_id",
            new=pl.when(pl.col("n") > 0)
            .then(new_rating(pl.col("rating"), pl.col("w"), pl.col("we"), pl.col("e"), pl.col("n")))
            .otherwise(pl.col("rating")),
            new_index=pl.col("dwz_index") + (pl.col("n") > 0).cast(pl.Int64),
            rest_games=pl.lit(0, dtype=pl.Int64),
            rest_score=pl.lit(0.0),
            rest_opponents=pl.lit(0.0),
            rest_since=pl.lit(None, dtype=pl.Int64),
        )
    )
    firsts = firsts.select(
        "player_id",
        "new",
        "new_index",
        rest_games=pl.lit(0, dtype=pl.Int64),
        rest_score=pl.lit(0.0),
        rest_opponents=pl.lit(0.0),
        rest_since=pl.lit(None, dtype=pl.Int64),
    )
    out = pl.concat([established, firsts, carried], how="vertical_relaxed")
    return out.join(players.select("player_id", "birth_year"), on="player_id").select(
        "player_id",
        rating="new",
        dwz_index="new_index",
        rest_games="rest_games",
        rest_score="rest_score",
        rest_opponents="rest_opponents",
        rest_since="rest_since",
        birth_year="birth_year",
    )


def _expected(params: DwzParams) -> pl.Expr:
    return win_expectancy(pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"))


SYSTEM = RatingSystem(
    name="dwz",
    description=(
        "dwz: DSB's DWZ, tournament by tournament: normal expectancy, Rn = Ro + 800 (W - We)/(E + n) with E from age "
        "and rating (acceleration, braking), first DWZ from performance after 5 games, Restpartien carried forward"
    ),
    source=SOURCE,
    params=DwzParams,
    state_columns=("rating", "dwz_index", "rest_games", "rest_score", "rest_opponents", "rest_since", "birth_year"),
    initial=lambda params: {
        "rating": params.init_rating,
        "dwz_index": 0,
        "rest_games": 0,
        "rest_score": 0.0,
        "rest_opponents": 0.0,
        "rest_since": None,
        "birth_year": None,
    },
    expected=_expected,
    update=_update,
    extra_state={
        "birth_year": pl.Int64,
        "dwz_index": pl.Int64,
        "rest_games": pl.Int64,
        "rest_score": pl.Float64,
        "rest_opponents": pl.Float64,
        "rest_since": pl.Int64,
    },
    state_model=DwzState,
    # Wertungsordnung 2.2.4: a FIDE (or foreign) rating used as the starting value carries index 6.
    seeded=lambda params: {"dwz_index": 6},
    unrated=pl.col("dwz_index") == 0,
    by_event=True,
)
