"""dwz: the German federation's DWZ (DSB Wertungsordnung), tournament by tournament, and its 2025 upgrade."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import polars as pl
from pydantic import Field

from pipeline.rules.regulations import round_half_away
from pipeline.systems import RatingSystem, SystemParams
from schemas.system_state import DwzState

#: The Wertungsordnung's online edition at schachbund.de (chapter 3 as renumbered after the edition "Stand 30. Mai
#: 2014"; "WO" below): 2.2.3, 3.3, 3.4.1-3.4.4, 3.5, 4.1.1. Where a clause of that edition could not be read here,
#: the clause of the 2002-2009 edition (section 4.7, as quoted in the Chess League Manager's DWZ calculator) or of
#: the 2009 online Anhang 2.4 (schachbund.de/anhang-24.html) is named instead; docs/systems.md says which.
SOURCE = (
    "DSB Wertungsordnung (online edition after 'Stand 30 May 2014'): 2.2.3, 3.3, 3.4.1-3.4.4, 3.5, 4.1.1, "
    "Anhang 1.2/2.1/2.4; first DWZ by the Gesamtiteration as the 2002-2009 edition's 4.7.2-4.7.4 words it"
)

#: The Gesamtiteration (WO 3.4.4) runs "bis zur Konstanz der Einerstellen"; the text sets no bound. Newton-like steps
#: settle in a handful of rounds; this bound only stops a pathological tournament.
ITERATION_LIMIT = 100


class DwzParams(SystemParams):
    init_rating: float = Field(1000.0, description="the rating an unrated player is predicted with (no DWZ yet)")
    first_min_games: int = Field(
        5,
        ge=1,
        description=(
            "a first DWZ needs this many games against rated opponents (first Zusatzstufe, WO 3.4.1.1) or against "
            "Auswahl I (second Zusatzstufe, WO 3.4.1.2), Restpartien included"
        ),
    )
    rest_expiry_months: int = Field(
        24, ge=1, description="Restpartien lapse after this many months (Wertungsordnung 4.1.1: 2 years)"
    )
    e_max: float = Field(30.0, description="upper bound of E without braking (Anhang 2.4)")
    e_max_braking: float = Field(150.0, description="upper bound of E with the braking term (Anhang 2.4)")
    e_edition: Literal[2014, 2009] = Field(
        2014,
        description=(
            "the edition of E's clauses: 2014 (WO 3.5.1: the braking term SBr is age-independent; Anhang 1.2: the "
            "youth acceleration fB only when W >= We) or 2009 (Anhang 2.4: fB for every youth, SBr for youths only)"
        ),
    )


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


#: Winitzki's approximation of erfinv (constant a; relative error about 2e-3), the start of the Newton steps below.
_WINITZKI_A = 0.147


def performance_difference(p: np.ndarray) -> np.ndarray:
    """Anhang 2.2, the inverse D(P) of P(D) = (1 + erf(D / 400)) / 2, on a NumPy array of P in (0, 1).

    400 erfinv(2P - 1) from Winitzki's approximation, then Newton steps on `_win_expectancy_numpy` itself, so that
    P(D(p)) = p to about 1e-12 (the table of Anhang 2.2 rounds D to whole points).
    """
    x = np.clip(2.0 * np.asarray(p, dtype=np.float64) - 1.0, -1.0 + 1e-15, 1.0 - 1e-15)
    log = np.log1p(-x * x)
    first = 2.0 / (np.pi * _WINITZKI_A) + log / 2.0
    d = 400.0 * np.sign(x) * np.sqrt(np.sqrt(first * first - log / _WINITZKI_A) - first)
    target = (x + 1.0) / 2.0
    for _ in range(4):
        slope = np.exp(-((d / 400.0) ** 2)) / (400.0 * np.sqrt(np.pi))
        d = d - (_win_expectancy_numpy(d) - target) / np.maximum(slope, 1e-300)
    return np.clip(d, -2000.0, 2000.0)


# -- development coefficient (Anhang 2.4) -------------------------------------------------------


def age_term(age: pl.Expr) -> pl.Expr:
    """Anhang 2.4: J = 5 for youths (up to 20), 10 for 21-25, 15 from 26 (and where the age is unknown)."""
    return pl.when(age <= 20).then(5.0).when(age <= 25).then(10.0).otherwise(15.0)


def acceleration(rating: pl.Expr, youth: pl.Expr, score: pl.Expr, expected: pl.Expr, params: DwzParams) -> pl.Expr:
    """The youth acceleration fB = Ro / 2000 within [0.5, 1.0], else 1.0. 2014 edition, Anhang 1.2 (as the Chess
    League Manager quotes it, and as every DWZ calculator found builds it): for a youth (up to 20) with W >= We. 2009
    edition, Anhang 2.4: for every youth.
    """
    applies = youth & (score >= expected) if params.e_edition == 2014 else youth
    return pl.when(applies).then((rating / 2000.0).clip(0.5, 1.0)).otherwise(1.0)


def braking(rating: pl.Expr, youth: pl.Expr, score: pl.Expr, expected: pl.Expr, params: DwzParams) -> pl.Expr:
    """SBr = e^((1300 - Ro) / 150) - 1 for Ro < 1300 and W <= We, else 0. 2014 edition, WO 3.5.1: "der
    altersunabhängige Bremszuschlag SBr" (every age). 2009 edition, Anhang 2.4: youths only ("Für Junioren und
    Senioren ist fB = 1,0 und SBr = 0").
    """
    weak = (rating < 1300.0) & (score <= expected)
    applies = weak if params.e_edition == 2014 else weak & youth
    return pl.when(applies).then(((1300.0 - rating) / 150.0).exp() - 1.0).otherwise(0.0)


def development_coefficient(
    rating: pl.Expr, age: pl.Expr, index: pl.Expr, score: pl.Expr, expected: pl.Expr, params: DwzParams
) -> pl.Expr:
    """Anhang 2.4 (Anhang 1.2 of the 2014 edition): E = ((Ro/1000)^4 + J) fB + SBr, rounded to a whole number (as the
    tables give it), then 5 <= E <= min(30, 5 x Index) without braking, 5 <= E <= 150 with it (Index 0 counts as 1).
    """
    youth = age <= 20
    sbr = braking(rating, youth, score, expected, params)
    raw = ((rating / 1000.0).pow(4) + age_term(age)) * acceleration(rating, youth, score, expected, params) + sbr
    cap = (
        pl.when(sbr > 0)
        .then(params.e_max_braking)
        .otherwise(pl.min_horizontal(pl.lit(params.e_max), 5.0 * pl.max_horizontal(index, pl.lit(1)).cast(pl.Float64)))
    )
    return round_half_away(raw).cast(pl.Float64).clip(lower_bound=5.0).clip(upper_bound=cap)


def new_rating(rating: pl.Expr, score: pl.Expr, expected: pl.Expr, e: pl.Expr, n: pl.Expr) -> pl.Expr:
    """WO 3.5.2: Rn = Ro + 800 (W - We) / (E + n), a whole number (WO 2.2.1: DWZ are whole numbers)."""
    return round_half_away(rating + 800.0 * (score - expected) / (e + n.cast(pl.Float64))).cast(pl.Float64)


# -- players without a DWZ (3.4) ----------------------------------------------------------------


def qualifies(games: pl.Expr, score: pl.Expr, params: DwzParams) -> pl.Expr:
    """WO 3.4.1.1 and 3.4.1.2: at least 5 games (Restpartien included) against the stage's opponents and no extreme
    result ("kein Extremresultat (100% oder 0%)") in them.
    """
    return (games >= params.first_min_games) & (score > 0) & (score < games.cast(pl.Float64))


def starting_value(opponents_sum: pl.Expr, games: pl.Expr, score: pl.Expr) -> pl.Expr:
    """2002-2009 edition 4.7.2.1.1, "Ermittlung eines Ausgangswertes": Rp = Rc + D(W / n), Rc = sum Ro / n the
    opponents' mean; D the inverse of P (Anhang 2.2). The start of the Gesamtiteration.
    """
    share = (score / games.cast(pl.Float64)).clip(1e-9, 1 - 1e-9)
    difference = share.map_batches(lambda s: pl.Series(performance_difference(s.to_numpy())), return_dtype=pl.Float64)
    return opponents_sum / games.cast(pl.Float64) + difference


def gesamtiteration(
    start: np.ndarray,
    player: np.ndarray,
    opponent: np.ndarray,
    opponent_fixed: np.ndarray,
    score: np.ndarray,
    games: np.ndarray,
    event: np.ndarray,
) -> np.ndarray:
    """WO 3.4.4, "Berechnung der Erst-DWZ durch Gesamtiteration": one simultaneous iteration over every player of
    both Zusatzstufen, each rated against Auswahl II (established players at R0, the other newcomers at their
    current iterate) and his Restpartien. The step is the one of the 2002-2009 edition's iterations (4.7.2.1.3, as the
    Chess League Manager notes it: "P(D) - Durchschnitt = (W - We) / n + 0,500"; har64/DWZ-Calc steps alike):
    Ri <- Ri + D((W - We) / n + 0.5); the stop is 4.7.4's "bis zur Konstanz der Einerstellen" (until no player's ones
    digit moves; a tournament stops on its own, so tournaments rated together in one call do not move each other).

    Arrays: `start` (per newcomer), and per counted game `player` (the newcomer's index), `opponent` (a newcomer's
    index, or -1 for a fixed rating in `opponent_fixed`); per newcomer `score` W, `games` n and `event` (a code).
    """
    rating = start.astype(np.float64).copy()
    active = np.ones(rating.shape, dtype=bool)
    events = int(event.max()) + 1 if event.size else 0
    for _ in range(ITERATION_LIMIT):
        against = np.where(opponent >= 0, rating[np.maximum(opponent, 0)], opponent_fixed)
        expected = np.bincount(player, weights=_win_expectancy_numpy(rating[player] - against), minlength=rating.size)
        step = performance_difference(np.clip((score - expected) / games + 0.5, 1e-9, 1 - 1e-9))
        moved = active & (np.floor(rating + step) != np.floor(rating))
        rating = np.where(active, rating + step, rating)
        active = (np.bincount(event, weights=moved, minlength=events) > 0)[event]
        if not active.any():
            break
    return rating


def first_dwz(iterated: pl.Expr) -> pl.Expr:
    """2002-2009 edition 4.7.4: the last iterate Ri is the first DWZ; only below 800 it is Rn = 700 + Ri / 8. A whole
    number; index 1 (WO 3.4.1).
    """
    return round_half_away(pl.when(iterated < 800.0).then(700.0 + iterated / 8.0).otherwise(iterated)).cast(pl.Float64)


def live_restpartien(newcomers: pl.DataFrame, period: int, params: DwzParams) -> pl.DataFrame:
    """WO 4.1.1: Restpartien are dropped 2 years after the tournament they were played in (kept here as one block
    that lapses `rest_expiry_months` after its oldest tournament).
    """
    live = (pl.lit(period) - pl.col("rest_since")) < params.rest_expiry_months
    return newcomers.with_columns(
        rest_games=pl.when(live).then(pl.col("rest_games")).otherwise(0),
        rest_score=pl.when(live).then(pl.col("rest_score")).otherwise(0.0),
        rest_opponents=pl.when(live).then(pl.col("rest_opponents")).otherwise(0.0),
        rest_ratings=pl.when(live).then(pl.col("rest_ratings")),
        rest_since=pl.when(live).then(pl.col("rest_since")),
    )


def restpartien_rows(newcomers: pl.DataFrame) -> pl.DataFrame:
    """One row per Restpartie (player_id, opp: the opponent's DWZ then). A state stored before `rest_ratings` was
    kept has only the sums: its Restpartien count at their opponents' mean.
    """
    listed = (
        pl.col("rest_ratings")
        .fill_null("")
        .str.split(" ")
        .list.eval(pl.element().filter(pl.element() != "").cast(pl.Float64))
    )
    mean = pl.col("rest_opponents") / pl.col("rest_games").cast(pl.Float64)
    return (
        newcomers.filter(pl.col("rest_games") > 0)
        .select(
            "player_id",
            opp=pl.when(listed.list.len() == pl.col("rest_games"))
            .then(listed)
            .otherwise(mean.repeat_by(pl.col("rest_games"))),
        )
        .explode("opp")
    )


def _tallies(who: pl.DataFrame, games: pl.DataFrame) -> pl.DataFrame:
    """The Restpartien of `who` plus `games` (player_id, opp, score): player_id, n, w, opp_sum."""
    counted = games.group_by("player_id").agg(
        g=pl.len().cast(pl.Int64), gw=pl.col("score").sum(), go=pl.col("opp").sum()
    )
    return who.join(counted, on="player_id", how="left").select(
        "player_id",
        n=pl.col("rest_games") + pl.col("g").fill_null(0),
        w=pl.col("rest_score") + pl.col("gw").fill_null(0.0),
        opp_sum=pl.col("rest_opponents") + pl.col("go").fill_null(0.0),
    )


def zusatzstufen(newcomers: pl.DataFrame, sides: pl.DataFrame, params: DwzParams) -> tuple[pl.DataFrame, pl.DataFrame]:
    """WO 3.4.1.1 and 3.4.1.2: the first Zusatzstufe (newcomers with 5 games against established players, no extreme
    result) and the second (the other newcomers with 5 games against Auswahl I = established + first stage, no
    extreme result), each with its `start` (`starting_value`; the second stage's against the first stage's starts).
    `sides` are the newcomers' games with `opp` and `opp_established`.
    """
    established = sides.filter("opp_established").select("player_id", "score", "opp")
    one = _tallies(newcomers, established)
    first = one.filter(qualifies(pl.col("n"), pl.col("w"), params)).select(
        "player_id", start=starting_value(pl.col("opp_sum"), pl.col("n"), pl.col("w"))
    )
    against_first = sides.join(
        first.select(pl.col("player_id").alias("opponent_id"), first_start="start"), on="opponent_id"
    ).select("player_id", "score", opp="first_start")
    others = newcomers.join(first.select("player_id"), on="player_id", how="anti")
    two = _tallies(others, pl.concat([established, against_first]))
    second = two.filter(qualifies(pl.col("n"), pl.col("w"), params)).select(
        "player_id", start=starting_value(pl.col("opp_sum"), pl.col("n"), pl.col("w"))
    )
    return first, second


def first_ratings(
    first: pl.DataFrame, second: pl.DataFrame, newcomers: pl.DataFrame, sides: pl.DataFrame
) -> pl.DataFrame:
    """The first DWZ of both Zusatzstufen (player_id, new): the Gesamtiteration over Auswahl II's games and the
    newcomers' Restpartien, then `first_dwz`.
    """
    stages = pl.concat([first, second]).with_row_index("i").with_columns(pl.col("i").cast(pl.Int64))
    if stages.height == 0:
        return pl.DataFrame(schema={"player_id": pl.Int64, "new": pl.Float64})
    index = stages.select("player_id", "i")
    games = sides.join(index, on="player_id").join(
        index.rename({"player_id": "opponent_id", "i": "j"}), on="opponent_id", how="left"
    )
    # Auswahl II: established opponents (at R0) and the other newcomers of both stages; nobody else counts.
    games = games.filter(pl.col("opp_established") | pl.col("j").is_not_null())
    rest = restpartien_rows(newcomers).join(index, on="player_id")
    rows = pl.concat(
        [
            games.select("i", j=pl.col("j").fill_null(-1), opp=pl.when(pl.col("j").is_null()).then("opp")),
            rest.select("i", j=pl.lit(-1, dtype=pl.Int64), opp="opp"),
        ]
    )
    per = (
        stages.join(newcomers.select("player_id", "rest_games", "rest_score"), on="player_id")
        .join(
            games.group_by("i").agg(
                g=pl.len().cast(pl.Int64), gw=pl.col("score").sum(), event=pl.col("event_id").fill_null("").first()
            ),
            on="i",
            how="left",
        )
        .sort("i")
        .with_columns(
            n=pl.col("rest_games") + pl.col("g").fill_null(0),
            w=pl.col("rest_score") + pl.col("gw").fill_null(0.0),
            code=pl.col("event").fill_null("").rank("dense").cast(pl.Int64) - 1,
        )
    )
    iterated = gesamtiteration(
        per["start"].to_numpy(),
        rows["i"].to_numpy(),
        rows["j"].to_numpy(),
        rows["opp"].fill_null(0.0).to_numpy(),
        per["w"].to_numpy(),
        per["n"].to_numpy().astype(np.float64),
        per["code"].to_numpy(),
    )
    return per.select("player_id", r=pl.Series(iterated)).select("player_id", new=first_dwz(pl.col("r")))


# -- the 2025 upgrade ---------------------------------------------------------------------------


def upgrade_2025(rating: pl.Expr) -> pl.Expr:
    """DSB's DWZ upgrade of 2025 (commission, as quoted by the Main-Taunus club page; systems-and-calendar.md 1.7):
    DWZ + 400 below 1000, 0.64 x DWZ + 760 from 1000 to below 2110 (rounded), unchanged from 2110.
    """
    return (
        pl.when(rating < 1000.0)
        .then(rating + 400.0)
        .when(rating < 2110.0)
        .then(round_half_away(0.64 * rating + 760.0).cast(pl.Float64))
        .otherwise(rating)
    )


def apply_upgrade_2025(state: pl.DataFrame) -> pl.DataFrame:
    """The 2025 upgrade on a dwz state: every player holding a DWZ (dwz_index > 0), and each opponent's DWZ a
    newcomer's Restpartien keep (`rest_ratings`, `rest_opponents`), so his first DWZ rates them on the new scale as
    his new games (a reading: the DSB's text names DWZ only; docs/systems.md).
    """
    rest = _listed_rest().str.split(" ").list.eval(upgrade_2025(pl.element().cast(pl.Float64)).cast(pl.Int64))
    pending = pl.col("rest_games") > 0
    return state.with_columns(
        rating=pl.when(pl.col("dwz_index") > 0).then(upgrade_2025(pl.col("rating"))).otherwise(pl.col("rating")),
        rest_ratings=pl.when(pending).then(rest.list.eval(pl.element().cast(pl.Utf8)).list.join(" ")),
        rest_opponents=pl.when(pending).then(rest.list.sum().cast(pl.Float64)).otherwise(pl.col("rest_opponents")),
    )


# -- one tournament per player ------------------------------------------------------------------


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: DwzParams, period: int) -> pl.DataFrame:
    known = players.select("player_id", "rating", established=pl.col("dwz_index") > 0)
    sides = sides.join(
        known.select(pl.col("player_id").alias("opponent_id"), opp="rating", opp_established="established"),
        on="opponent_id",
    )
    newcomers = live_restpartien(players.filter(pl.col("dwz_index") == 0), period, params)
    newcomer_sides = sides.join(newcomers.select("player_id"), on="player_id")
    if newcomers.height:
        first, second = zusatzstufen(newcomers, newcomer_sides, params)
        firsts = first_ratings(first, second, newcomers, newcomer_sides)
    else:  # most waves of a month: nobody without a DWZ plays
        first = pl.DataFrame(schema={"player_id": pl.Int64, "start": pl.Float64})
        firsts = pl.DataFrame(schema={"player_id": pl.Int64, "new": pl.Float64})

    # WO 3.4.2: the other newcomers keep their games against Auswahl I (established players at R0, the first stage
    # at its new Rn) as Restpartien, added to those they had.
    rated_now = pl.concat(
        [
            known.filter("established").select("player_id", now="rating"),
            firsts.join(first.select("player_id"), on="player_id").select("player_id", now="new"),
        ]
    )
    others = newcomers.join(firsts.select("player_id"), on="player_id", how="anti")
    new_rest = (
        newcomer_sides.join(others.select("player_id"), on="player_id")
        .join(rated_now.rename({"player_id": "opponent_id"}), on="opponent_id")
        .group_by("player_id")
        .agg(
            g=pl.len().cast(pl.Int64),
            gw=pl.col("score").sum(),
            go=pl.col("now").sum(),
            listed=round_half_away(pl.col("now")).cast(pl.Int64).cast(pl.Utf8).str.join(" "),
        )
    )
    carried = others.join(new_rest, on="player_id", how="left").select(
        "player_id",
        new=pl.col("rating"),
        new_index=pl.lit(0, dtype=pl.Int64),
        rest_games=pl.col("rest_games") + pl.col("g").fill_null(0),
        rest_score=pl.col("rest_score") + pl.col("gw").fill_null(0.0),
        rest_opponents=pl.col("rest_opponents") + pl.col("go").fill_null(0.0),
        rest_ratings=_joined(_listed_rest(), pl.col("listed")),
        rest_since=pl.when((pl.col("rest_games") + pl.col("g").fill_null(0)) > 0).then(
            pl.coalesce("rest_since", pl.lit(period, dtype=pl.Int64))
        ),
    )

    # WO 3.5.2 with 3.3.2: an established player counts his games against Auswahl II, its newcomers at their Rn.
    now = pl.concat(
        [known.filter("established").select("player_id", opp_now="rating"), firsts.select("player_id", opp_now="new")]
    ).rename({"player_id": "opponent_id"})
    counted = sides.join(known.filter("established").select("player_id"), on="player_id").join(now, on="opponent_id")
    year = pl.col("year").max() if "year" in counted.columns else pl.lit(None, dtype=pl.Int64)
    tallies = (
        counted.join(known.select("player_id", own="rating"), on="player_id")
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
        )
    )
    cleared = {
        "rest_games": pl.lit(0, dtype=pl.Int64),
        "rest_score": pl.lit(0.0),
        "rest_opponents": pl.lit(0.0),
        "rest_ratings": pl.lit(None, dtype=pl.Utf8),
        "rest_since": pl.lit(None, dtype=pl.Int64),
    }
    out = pl.concat(
        [
            established.with_columns(**cleared),
            firsts.select("player_id", "new", new_index=pl.lit(1, dtype=pl.Int64), **cleared),
            carried,
        ],
        how="vertical_relaxed",
    )
    return out.join(players.select("player_id", "birth_year"), on="player_id").select(
        "player_id",
        rating="new",
        dwz_index="new_index",
        rest_games="rest_games",
        rest_score="rest_score",
        rest_opponents="rest_opponents",
        rest_ratings="rest_ratings",
        rest_since="rest_since",
        birth_year="birth_year",
    )


def _listed_rest() -> pl.Expr:
    """The Restpartien's opponents as `rest_ratings` lists them; from the sums when a stored state lacks the list."""
    mean = round_half_away(pl.col("rest_opponents") / pl.col("rest_games").cast(pl.Float64)).cast(pl.Utf8)
    count = (
        pl.col("rest_ratings")
        .fill_null("")
        .str.split(" ")
        .list.eval(pl.element().filter(pl.element() != ""))
        .list.len()
    )
    return (
        pl.when(pl.col("rest_games") == 0)
        .then(pl.lit(None, dtype=pl.Utf8))
        .when(count == pl.col("rest_games"))
        .then(pl.col("rest_ratings"))
        .otherwise(mean.repeat_by(pl.col("rest_games")).list.join(" "))
    )


def _joined(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    """Two space-separated lists (either may be null) as one; null when both are."""
    return pl.concat_str([left, right], separator=" ", ignore_nulls=True).replace("", None)


def _expected(params: DwzParams) -> pl.Expr:
    return win_expectancy(pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"))


SYSTEM = RatingSystem(
    name="dwz",
    description=(
        "dwz: DSB's DWZ, tournament by tournament: normal expectancy, Rn = Ro + 800 (W - We)/(E + n) with E from age "
        "and rating (acceleration, braking), first DWZ by the Gesamtiteration over both Zusatzstufen (5 games, no "
        "extreme result), Restpartien carried forward"
    ),
    source=SOURCE,
    params=DwzParams,
    state_columns=(
        "rating",
        "dwz_index",
        "rest_games",
        "rest_score",
        "rest_opponents",
        "rest_ratings",
        "rest_since",
        "birth_year",
    ),
    initial=lambda params: {
        "rating": params.init_rating,
        "dwz_index": 0,
        "rest_games": 0,
        "rest_score": 0.0,
        "rest_opponents": 0.0,
        "rest_ratings": None,
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
        "rest_ratings": pl.Utf8,
        "rest_since": pl.Int64,
    },
    state_model=DwzState,
    # Wertungsordnung 2.2.4: a FIDE (or foreign) rating used as the starting value carries index 6.
    seeded=lambda params: {"dwz_index": 6},
    unrated=pl.col("dwz_index") == 0,
    by_event=True,
    one_time_events={"dwz_upgrade": apply_upgrade_2025},
)
