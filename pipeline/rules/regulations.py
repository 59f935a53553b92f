"""FIDE's rating regulations as the engine applies them, one function per rule.

Each function is under the clause and edition it implements.

Every knob of a RuleSet (pipeline/rules/model.py) is read here and nowhere else in the rating arithmetic:
the engine (pipeline/engine/period.py) composes these functions, the invariant checks
(pipeline/invariants/chain.py) ask them what a rule allows, and the rule-set documentation
(pipeline/rules/doc.py) describes each knob with their words. Clause numbers are those of FIDE
Handbook B.02, 2024 edition, unless another edition is named; docs/regulations.md summarises each
clause and its source. Tables 8.1.1 and 8.1.2 are data in pipeline/rules/tables.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import polars as pl

from pipeline.months import add_months, parse_month
from pipeline.rules.model import KPolicy, RuleSet
from pipeline.rules.tables import DP_BY_PERCENT, PD_HIGHER_HUNDREDTHS, PD_MAX_DIFFERENCE

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then


class _MonthTexts(Protocol):
    """YYYY-MM texts the engine holds as arrays (pipeline.engine.arrays.Strings), compared with one month."""

    def compare(self, op: str, bound: str) -> np.ndarray: ...


#: A pool's totals as initial_rating's shared steps take them: Polars expressions or NumPy arrays.
_Pool = TypeVar("_Pool", pl.Expr, np.ndarray)

_PD_SERIES = pl.Series("pd", PD_HIGHER_HUNDREDTHS.astype("int32"))
_DP_SERIES = pl.Series("dp", DP_BY_PERCENT.astype("int32"))


# -- §5.1 and §8.3.1: the games that count ----------------------------------------------------------
# A rated player's rating changes only through games against rated opponents (§8.3.1: "the opponent's rating"),
# and a first rating pools only such games (§7.1.4, §8.2); forfeits and byes never reach the engine (§5.1, the
# validation stage). Here a side counts when its opponent has a rating used and the list rates the game's time
# control (its weight, game_weight, above 0); the side's own rating plays no part.


def counting_game(weight: pl.Expr, opponent_rating: pl.Expr) -> pl.Expr:
    """Whether a game side counts: a weight above 0 (game_weight) and an opponent with a rating used."""
    return (weight > 0) & opponent_rating.is_not_null()


def _counting_game_numpy(weight: np.ndarray, opponent_known: np.ndarray) -> np.ndarray:
    """counting_game on NumPy arrays, one value per side: a bool array."""
    return (weight > 0) & opponent_known


# -- §8.3.1: the rating difference, and the 400-point rule ----------------------------------------
# "A difference in rating of more than 400 points shall be counted for rating purposes as though it
# were a difference of 400 points." Editions differ in when: 350 points before July 2009; every game
# 2009-2021 and March 2024 - September 2025; once per event 2022 - February 2024 (the 2022 text);
# from 1 October 2025 "for players rated below 2650. For players rated 2650 and above, the difference
# between ratings shall be used in all cases" (the cap applies to one side only).


def rating_difference(rules: RuleSet) -> pl.Expr:
    """D = own - opponent after the 400-point rule, per game (the once-per-event edition: once_per_event_cap)."""
    diff = pl.col("own_rating") - pl.col("opponent_rating")
    if rules.cap_mode == "off" or rules.cap_mode == "once-per-event":
        return diff
    cap = rules.cap_difference
    assert cap is not None  # RuleSet requires cap_difference unless cap_mode is "off"
    clipped = diff.clip(-cap, cap)
    if rules.cap_mode == "exempt-top":
        return pl.when(pl.col("own_rating") >= rules.cap_exempt_from).then(diff).otherwise(clipped)
    return clipped


# The engine works on NumPy arrays: a rule it applies there has a twin `_<rule>_numpy` beside it, under the same
# clause, computing the same values to the last bit (tests/test_engine.py compares each twin with its rule on every
# input row). The twins are the rule's implementation on arrays, not rules of their own: docs/regulations.md
# documents the rule under its name.
def _rating_difference_numpy(rules: RuleSet, own: np.ndarray, opponent: np.ndarray) -> np.ndarray:
    """rating_difference on NumPy arrays (int32 ratings, none missing): the same D, int32, per game."""
    diff = own - opponent
    if rules.cap_mode == "off" or rules.cap_mode == "once-per-event":
        return diff
    cap = rules.cap_difference
    assert cap is not None  # RuleSet requires cap_difference unless cap_mode is "off"
    clipped = np.clip(diff, -cap, cap).astype(diff.dtype)
    if rules.cap_mode == "exempt-top":
        return clipped + (own >= rules.cap_exempt_from) * (diff - clipped)
    return clipped


def once_per_event_cap(rows: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """The 2022 edition (§8.3.1): the 400-point rule applies once per event, to the player's game with the greatest
    difference.

    `rows`: one row per rated player's counting game with `d` (rating_difference), player_id,
    event_id, game_id. Unchanged for the other editions.
    """
    if rules.cap_mode != "once-per-event":
        return rows
    cap = rules.cap_difference
    assert cap is not None  # RuleSet requires cap_difference unless cap_mode is "off"
    return (
        rows.with_columns(abs_d=pl.col("d").abs())
        .sort(["player_id", "event_id", "abs_d", "game_id"], descending=[False, False, True, False])
        .with_columns(first_in_event=pl.int_range(pl.len()).over(["player_id", "event_id"]) == 0)
        .with_columns(
            d=pl.when(pl.col("first_in_event") & (pl.col("abs_d") > cap))
            .then(pl.col("d").clip(-cap, cap))
            .otherwise(pl.col("d"))
        )
        .drop("abs_d", "first_in_event")
    )


def events_matter(rules: RuleSet) -> bool:
    """Whether a player's games must be told apart by event: the 2022 edition's once-per-event 400-point
    rule (§8.3.1, once_per_event_cap) or rounding per event (rounds_per_event, §8.3.4's one known exception).
    """
    return rules.cap_mode == "once-per-event" or rounds_per_event(rules)


def cap_may_be_one_sided(rules: RuleSet) -> pl.Expr:
    """Games (columns white/black_rating_used) where the 400-point rule may hold for one side only.

    Such games are not zero-sum by design (the 2650 exemption; the once-per-event edition caps a
    different game per player), so the conservation check leaves them out.
    """
    if rules.cap_mode in ("off", "every-game") or rules.cap_difference is None:
        return pl.lit(False)
    beyond_cap = (pl.col("white_rating_used") - pl.col("black_rating_used")).abs() > rules.cap_difference
    if rules.cap_mode == "exempt-top":
        exempt = (pl.col("white_rating_used") >= rules.cap_exempt_from) | (
            pl.col("black_rating_used") >= rules.cap_exempt_from
        )
        return beyond_cap & exempt
    return beyond_cap


def describe_rating_difference(rules: RuleSet) -> str:
    """The 400-point rule of a rule set in a few words (for docs/rules.md)."""
    if rules.cap_mode == "off":
        return "off"
    text = f"{rules.cap_difference}, {rules.cap_mode}"
    return f"{text} (not for {rules.cap_exempt_from}+)" if rules.cap_mode == "exempt-top" else text


# -- §8.3.2 a: the expected score (table 8.1.2, or another expectancy) -----------------------------


def expected_score(rules: RuleSet) -> pl.Expr:
    """The player's expected score in hundredths from the column `d` (and `is_white` for Sonas).

    fide-table: table 8.1.2 (PD, integer hundredths; the lower-rated player gets 100 - PD).
    logistic: 1 / (1 + 10^(-D / scale)) (Elo 1978; Sonas 2011 proposed scale 480).
    elo-davidson: (10^(D/s) + kappa/2) / (10^(-D/s) + kappa + 10^(D/s)) (kappa 2 = logistic).
    sonas-linear: White expects 0.541767 + 0.001164 x (White - Black), the difference clamped to
    [-460, +390] (Sonas 2002; docs/regulations.md); Black's expectancy is the complement.
    """
    d = pl.col("d")
    if rules.expectancy == "fide-table":
        pd = pl.lit(_PD_SERIES).gather(d.abs().clip(0, PD_MAX_DIFFERENCE)).cast(pl.Float64)
        return pl.when(d >= 0).then(pd).otherwise(100.0 - pd)
    if rules.expectancy == "logistic":
        return 100.0 / (1.0 + pl.lit(10.0).pow(-d.cast(pl.Float64) / rules.scale))
    if rules.expectancy == "elo-davidson":
        up = pl.lit(10.0).pow(d.cast(pl.Float64) / rules.scale)
        down = pl.lit(10.0).pow(-d.cast(pl.Float64) / rules.scale)
        return 100.0 * (up + rules.kappa / 2.0) / (down + rules.kappa + up)
    low, high = rules.sonas_clamp
    white_diff = pl.when(pl.col("is_white")).then(d).otherwise(-d).clip(low, high).cast(pl.Float64)
    white_expected = rules.sonas_intercept + rules.sonas_slope * white_diff
    return 100.0 * pl.when(pl.col("is_white")).then(white_expected).otherwise(1.0 - white_expected)


def _expected_score_numpy(rules: RuleSet, d: np.ndarray, is_white: np.ndarray) -> np.ndarray:
    """expected_score on NumPy arrays: hundredths (float64) from D (int32) and whether the player had White.

    Table 8.1.2 is one gather from the literal table laid out for a signed D (_EXPECTED_BY_SIGNED_D); the other
    expectancies evaluate expected_score itself (their floating-point formulas stay in one place).
    """
    if rules.expectancy == "fide-table":
        return _EXPECTED_BY_SIGNED_D[np.clip(d, -PD_MAX_DIFFERENCE, PD_MAX_DIFFERENCE) + PD_MAX_DIFFERENCE]
    frame = pl.DataFrame({"d": pl.Series(d, dtype=pl.Int32), "is_white": pl.Series(is_white, dtype=pl.Boolean)})
    return frame.select(expected_score(rules)).to_series().to_numpy()


#: Table 8.1.2 by signed D + PD_MAX_DIFFERENCE: 100 - PD for D < 0, PD from 0 (float hundredths, as expected_score).
_EXPECTED_BY_SIGNED_D = np.concatenate(
    [100.0 - PD_HIGHER_HUNDREDTHS[:0:-1].astype(np.float64), PD_HIGHER_HUNDREDTHS.astype(np.float64)]
)


# -- Sonas 2002: weights by time control -----------------------------------------------------------


def game_weight(rules: RuleSet) -> pl.Expr:
    """Weight of a game's rating change: by time-control class, or by minutes through move 40 when known; 0 for an
    event the list does not rate yet (rated_event).

    FIDE's standard rules rate classical games only (weight 1; rapid and blitz 0, their own lists).
    Sonas (2002; docs/regulations.md) weights a game by the time each player has for 40 moves,
    interpolated between the points of `weights_by_minutes`; an unknown clock falls back to the class.
    """
    by_class = pl.col("time_control").replace_strict(rules.weights, default=0.0, return_dtype=pl.Float64)
    weight = by_class
    if rules.weights_by_minutes:
        minutes = (pl.col("tc_base_seconds") + 40 * pl.col("tc_increment_seconds").fill_null(0)).cast(pl.Float64) / 60
        points = rules.weights_by_minutes
        chain: Then | ChainedThen = pl.when(minutes <= points[0][0]).then(pl.lit(points[0][1]))
        for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
            chain = chain.when(minutes <= x1).then(y0 + (minutes - x0) * (y1 - y0) / (x1 - x0))
        by_minutes = chain.otherwise(pl.lit(points[-1][1]))
        weight = pl.when(minutes.is_not_null()).then(by_minutes).otherwise(by_class)
    return weight if rules.events_from is None else pl.when(rated_event(rules)).then(weight).otherwise(0.0)


def _game_weight_numpy(rules: RuleSet, games: pl.DataFrame) -> np.ndarray:
    """game_weight per row of `games` as a float64 array: by class with one comparison per class, none per row."""
    if rules.weights_by_minutes or not games.height:
        return games.select(game_weight(rules).cast(pl.Float64)).to_series().to_numpy()
    time_control = games["time_control"]
    first = time_control[0]
    if time_control.null_count() == 0 and bool((time_control == first).all()):
        # One class the whole period (a standard-only dump): one comparison, not one per class.
        weight = np.full(games.height, float(rules.weights.get(first, 0.0)))
    else:
        weight = np.zeros(games.height, dtype=np.float64)
        for name, value in rules.weights.items():
            # replace_strict's default: a class not in `weights` (or none) weighs 0; the classes are distinct, so a
            # class of weight 0 needs no comparison.
            if value:
                weight[(time_control == name).fill_null(False).to_numpy()] = value
    if rules.events_from is not None:
        weight[~games.select(rated_event(rules)).to_series().to_numpy()] = 0.0
    return weight


# -- Rapid and blitz: the events the lists rate ------------------------------------------------------
# FIDE news 5721 (16 Nov 2011), as docs/rules.md quotes it: "Tournaments commencing on or after 1st January 2012 may
# be registered" for the new rapid and blitz lists (first lists 1 July 2012). Reading chosen (docs/rules.md): the
# event's start is its `event_start` (a dump without one: its first game's day; an undated game, its month's first
# day), so a rapid event of December 2011 reported in January 2012 is not rated on either list.


def rated_event(rules: RuleSet) -> pl.Expr:
    """Whether a game's event (`event_start`) is one the list rates: every event, or those starting on or after the
    rule set's `events_from`.
    """
    if rules.events_from is None:
        return pl.lit(True)
    return pl.col("event_start") >= pl.lit(rules.events_from, dtype=pl.Date)


# -- Rapid and blitz: games not rated for a rating gap ------------------------------------------------
# B.02 Rapid and Blitz Rating Regulations 2024, §7.3.1, second paragraph: "Effective from 1 December 2024:
# Games played between players with a rating difference of 600 points or more shall not be rated if at least
# one of the players is rated above 2600 on the relevant list." Reading chosen (docs/rules.md): the game is not
# rated for either player (the subject is the game), 600 counts ("or more"), 2600 itself does not ("above"),
# and the ratings are those used for the game (the list in force at the event's start).


def gap_not_rated(rules: RuleSet) -> pl.Expr:
    """True for the games `gap_not_rated` leaves unrated, from white_rating_used and black_rating_used (both
    known: a game against a player without a rating has no gap).
    """
    gap = rules.gap_not_rated
    if gap is None:
        return pl.lit(False)
    white, black = pl.col("white_rating_used"), pl.col("black_rating_used")
    return (((white - black).abs() >= gap.difference) & (pl.max_horizontal(white, black) > gap.above)).fill_null(False)


def _gap_not_rated_numpy(
    rules: RuleSet, white: np.ndarray, white_known: np.ndarray, black: np.ndarray, black_known: np.ndarray
) -> np.ndarray:
    """gap_not_rated on the ratings used (int32) and whether each is known: a bool array, per game."""
    gap = rules.gap_not_rated
    if gap is None:
        return np.zeros(len(white), dtype=bool)
    white, black = white.astype(np.int64), black.astype(np.int64)
    wide = (np.abs(white - black) >= gap.difference) & (np.maximum(white, black) > gap.above)
    return white_known & black_known & wide


# -- Rapid and blitz: an unrated player who holds a standard rating --------------------------------
# FIDE news 5721 (16 November 2011), launching the rapid and blitz lists for events from 1 January 2012: "For
# players with existing FIDE ratings, their initial rating on both of the new lists will be that rating." B.02
# Rapid and Blitz 2024, §7.2.1: "If an unrated player has a standard rating at the beginning of a rapid or blitz
# tournament, their standard rating is used for rating calculation. Such a player is considered to be rated, and
# 7.2.2 to 7.2.5 below do not apply." Reading chosen (docs/rules.md): the standard list in force during the
# period (the list of the period before), a seeded player's pool of unrated games is dropped, and the player
# starts the list as one with no games on it (K of a newcomer to the list where the K policy has one).


def seeds_from_standard(rules: RuleSet) -> bool:
    """Whether a standard rating seeds the rule set's list (`seed_from_standard`)."""
    return rules.seed_from_standard


def seeded_from_standard(
    rules: RuleSet, rating_list: pl.DataFrame, standard: pl.DataFrame, player_ids: pl.Series
) -> pl.DataFrame:
    """The rows of `rating_list` (a full RatingList) the standard list seeds: the players of `player_ids` unrated
    on (or absent from) `rating_list` who are rated on `standard` (player_id, rating, optional birth_year), at
    that rating, as partial list rows (player_id, rating, games_total 0, birth_year) for the engine to merge.
    Empty when the rule set does not seed.
    """
    schema = {"player_id": pl.Int64, "rating": pl.Int32, "games_total": pl.Int32, "birth_year": pl.Int32}
    if not seeds_from_standard(rules):
        return pl.DataFrame(schema=schema)
    wanted = pl.DataFrame({"player_id": player_ids.cast(pl.Int64)}).unique()
    rated_here = rating_list.filter(pl.col("rating").is_not_null()).select("player_id")
    births = (
        pl.col("birth_year").cast(pl.Int32, strict=False)
        if "birth_year" in standard.columns
        else pl.lit(None, dtype=pl.Int32)
    )
    holders = standard.select(
        pl.col("player_id").cast(pl.Int64), pl.col("rating").cast(pl.Int32, strict=False), births.alias("birth_year")
    ).filter(pl.col("rating").is_not_null())
    return (
        holders.join(wanted, on="player_id", how="semi")
        .join(rated_here, on="player_id", how="anti")
        .unique("player_id", keep="first")
        .select("player_id", "rating", pl.lit(0, dtype=pl.Int32).alias("games_total"), "birth_year")
        .sort("player_id")
    )


# -- §8.3.3: the development coefficient K ----------------------------------------------------------
# "K = 40 for a player new to the rating list until they have completed events with at least 30
# games; K = 20 as long as a player's rating remains under 2400; K = 10 once a player's published
# rating has reached 2400 and remains at that level subsequently, even if the rating drops below
# 2400; K = 40 for all players until the end of the year of their 18th birthday, as long as their
# rating remains under 2300." (2024; the 2014 text: to the 18th birthday; 2009-2014: 25/15/10, and
# 30 for newcomers from July 2011.) A list's K column is the K of the period that follows it.


def reached_elite(policy: KPolicy, rating: str = "rating") -> pl.Expr:
    """§8.3.3: "K = 10 once a player's published rating has reached 2400 and remains at that level subsequently,
    even if the rating drops below 2400" (2024; the 2014 and 2022 texts alike): whether the player has reached
    the elite threshold `elite_from` (2400 in every preset), for good.

    From the columns ever_2400 (reached it on an earlier list) and `rating` (the published rating now;
    null: unrated). The list column keeps FIDE's name `ever_2400`, stored on every list; it means
    "reached the rule set's elite threshold (`elite_from`)", 2400 unless a rule set says otherwise. This
    is the one place the threshold is read: the K of a period (development_coefficient), every list
    that enters the engine (mark_elite_reached) and every list the engine or a rating system writes.
    """
    return pl.col("ever_2400").fill_null(False) | (pl.col(rating) >= policy.elite_from).fill_null(False)


def _reached_elite_numpy(policy: KPolicy, ever_2400: np.ndarray, rating: np.ndarray, rated: np.ndarray) -> np.ndarray:
    """reached_elite on NumPy arrays: ever_2400 and rated (bool), rating (any value where not rated)."""
    return ever_2400 | (rated & (rating >= policy.elite_from))


def year_of_list_k(month: str) -> int:
    """The year whose K the list of period `month` states: a list's K column is the K of the period that follows it,
    so a December list states K for January's year (development_coefficient's `year`).
    """
    return parse_month(add_months(month, 1))[0]


# B.02 2024 §8.3.3 (and each K policy's edition): K = 40 "for a new player to the rating list until he has completed
# events with at least 30 games" (the policy's newcomer_until_games).
def still_a_newcomer(policy: KPolicy) -> pl.Expr:
    """Whether a listed player still counts as a new player by their rated games (games_total below the policy's
    newcomer_until_games). An unknown games_total (an empty cell, or a list without the column, as FIDE's own lists)
    counts as established, not as a newcomer: a rated player on a list has a record behind the rating; normalize_list
    keeps it null for rated players (0 for unrated).
    """
    return pl.col("games_total").fill_null(policy.newcomer_until_games) < policy.newcomer_until_games


def _still_a_newcomer_numpy(policy: KPolicy, games_total: np.ndarray, games_total_known: np.ndarray) -> np.ndarray:
    """still_a_newcomer on NumPy arrays (an unknown count is a False mask beside its array): bool."""
    return games_total_known & (games_total < policy.newcomer_until_games)


def development_coefficient(policy: KPolicy, year: int, birth_year: str = "birth_year") -> pl.Expr:
    """K for a period of `year` from the columns rating, games_total, `birth_year`, ever_2400 (or the constant K)."""
    if policy.kind == "constant":
        return pl.lit(policy.value, dtype=pl.Int16)
    elite = reached_elite(policy)
    junior = pl.lit(False)
    if policy.junior is not None:
        last_junior_year = pl.col(birth_year) + policy.junior_until_age
        young = (pl.lit(year) <= last_junior_year) if policy.junior_end_of_year else (pl.lit(year) < last_junior_year)
        junior = young.fill_null(False) & (pl.col("rating").fill_null(0) < policy.junior_below)
    newcomer = still_a_newcomer(policy)
    return (
        pl.when(elite)
        .then(pl.lit(policy.elite))
        .when(junior)
        .then(pl.lit(policy.junior if policy.junior is not None else policy.standard))
        .when(newcomer)
        .then(pl.lit(policy.newcomer))
        .otherwise(pl.lit(policy.standard))
        .cast(pl.Int16)
    )


def _development_coefficient_numpy(
    policy: KPolicy,
    year: int,
    rating: np.ndarray,
    rated: np.ndarray,
    games_total: np.ndarray,
    games_total_known: np.ndarray,
    birth_year: np.ndarray,
    birth_year_known: np.ndarray,
    ever_2400: np.ndarray,
) -> np.ndarray:
    """development_coefficient on NumPy arrays (a missing value is a False mask beside its array): int16 K.

    The tiers are taken in the same order (elite, junior, newcomer, standard): each player's tiers are bits of a
    byte (newcomer 1, junior 2, elite 4) and K is looked up by it, a few passes over bytes and no branches.
    """
    if policy.kind == "constant":
        return np.full(len(rating), policy.value, dtype=np.int16)
    tiers = _still_a_newcomer_numpy(policy, games_total, games_total_known).view(np.uint8)
    if policy.junior is not None:
        last_junior_year = birth_year + np.int32(policy.junior_until_age)  # Int32, as the Polars expression
        young = (year <= last_junior_year) if policy.junior_end_of_year else (year < last_junior_year)
        # A missing rating counts as 0: below junior_below when that is positive.
        below = rating < policy.junior_below
        below = below | ~rated if 0 < policy.junior_below else below & rated
        young &= birth_year_known & below
        tiers |= young.view(np.uint8) << np.uint8(1)
    tiers |= _reached_elite_numpy(policy, ever_2400, rating, rated).view(np.uint8) << np.uint8(2)
    return np.take(_k_by_tiers(policy), tiers)


def _k_by_tiers(policy: KPolicy) -> np.ndarray:
    """K by the tier bits of _development_coefficient_numpy (newcomer 1, junior 2, elite 4), the highest tier first."""
    junior = policy.junior if policy.junior is not None else policy.standard  # no junior bit without a junior tier
    return np.array(
        [
            policy.elite if bits & 4 else junior if bits & 2 else policy.newcomer if bits & 1 else policy.standard
            for bits in range(8)
        ],
        dtype=np.int16,
    )


def _list_k_tells_elite(policy: KPolicy) -> bool:
    """Whether a list K equal to `policy.elite` can only mean the elite tier (no other tier has that K)."""
    if policy.kind == "constant":
        return False
    return policy.elite not in {policy.newcomer, policy.standard, policy.junior}


def mark_elite_reached(rating_list: pl.DataFrame, policy: KPolicy) -> pl.DataFrame:
    """The list with `ever_2400` set for every player who has reached the elite threshold: it sets no K, the K of a
    period reads the flag (§8.3.3: "K = 10 once a player's published rating has reached 2400 ... even if the
    rating drops below 2400").

    Applied to every list that enters the engine (seed lists, rate-period's PREV, a previous period's
    list): `ever_2400` is set where the list's rating has reached `elite_from` (reached_elite; a list
    read without a rule set, such as a seed list, states only what its file says), and where the list
    K is the elite K of a tiered policy, which means the player has reached the threshold once (FIDE's
    own published lists show players below 2400 with K 10). The elite K then stays in force in every
    later period. The list K counts only when the elite K is distinct from the policy's other tiers
    (10 against 15/20/25/30/40 in every FIDE edition); a constant K says nothing.
    """
    elite = reached_elite(policy)
    if _list_k_tells_elite(policy) and "k" in rating_list.columns:
        elite = elite | (pl.col("k") == policy.elite).fill_null(False)
    return rating_list.with_columns(ever_2400=elite)


def k_from_previous_list(policy: KPolicy, year: int) -> pl.Expr:
    """K of a rated player for the period, before the K x n cap: "take K from the previous list"
    (docs/regulations.md, K from the list).

    Under a tiered (FIDE) policy the previous list's K wins when it gives one, since FIDE rates with
    the K it published; else the policy's K from the player's state. A constant-K rule set (Sonas
    2002: K 24, Elo: 32) uses its own K always: a list's K was set under other rules.
    """
    return _listed_k_wins(policy, pl.col("k"), development_coefficient(policy, year))


# §8.3.3's junior K ("K = 40 for all players until the end of the year of their 18th birthday, as long as their rating
# remains under 2300", 2024) rests on the birth year: a list's K stated under a year the registry has since corrected
# (docs/federation-files.md, "Your own CSV files": the registry's year counts for the junior K from its folder's month
# on) is the K of a birth year that no longer holds. The tiers a player keeps once reached stand: K 10 once 2400 was
# reached, K 40 until 30 games.
def k_for_corrected_birth_years(
    rating_list: pl.DataFrame, stated_birth_year: pl.Series, policy: KPolicy, year: int
) -> pl.DataFrame:
    """`rating_list` (its birth_year the year in force now) with column k decided again for a period of `year` where
    the K rests on the birth year `stated_birth_year` gave the list (row by row) and it has changed: where the policy
    gives another K under the year now than under the year stated, the policy's K under the year now (which keeps the
    elite K once reached, the list's own K of 10 telling it as mark_elite_reached reads it, and a newcomer's K by
    games_total); elsewhere the list's K stands (k_from_previous_list). A constant K rests on no birth year.
    """
    if policy.kind == "constant" or "k" not in rating_list.columns:
        return rating_list
    stated = "_stated_birth_year"
    marked = mark_elite_reached(rating_list, policy).with_columns(stated_birth_year.alias(stated))
    now, before = development_coefficient(policy, year), development_coefficient(policy, year, stated)
    corrected = pl.col(stated).ne_missing(pl.col("birth_year")) & pl.col("k").is_not_null() & (now != before)
    k = marked.select(pl.when(corrected).then(now).otherwise(pl.col("k")).cast(rating_list.schema["k"]))
    return rating_list.with_columns(k.to_series().alias("k"))


def _listed_k_wins(policy: KPolicy, listed: pl.Expr, own: pl.Expr) -> pl.Expr:
    """The K a list published (`listed`, null where it gives none) over the rule set's own K, under a tiered policy;
    a constant-K rule set keeps its own (k_from_previous_list).
    """
    if policy.kind == "constant":
        return own
    return pl.coalesce(listed, own)


def _k_from_previous_list_numpy(
    policy: KPolicy, year: int, k: np.ndarray, k_known: np.ndarray, **state: np.ndarray
) -> np.ndarray:
    """k_from_previous_list on NumPy arrays (`state`: the arrays of _development_coefficient_numpy): int16 K."""
    return _listed_k_wins_numpy(policy, k, k_known, _development_coefficient_numpy(policy, year, **state))


def _listed_k_wins_numpy(policy: KPolicy, listed: np.ndarray, listed_known: np.ndarray, own: np.ndarray) -> np.ndarray:
    """_listed_k_wins on NumPy arrays: `listed` where `listed_known`, else `own` (int16 K)."""
    if policy.kind == "constant":
        return own
    return own + listed_known.astype(np.int16) * (listed.astype(np.int16) - own)


def k_times_games_cap(k_start: pl.Expr, games: pl.Expr, rules: RuleSet) -> pl.Expr:
    """K x n cap: "If the number of games (n) ... multiplied by K exceeds 700, then K shall be the largest whole
    number such that K x n does not exceed 700" (§8.3.3, in force from 2017; `k_games_cap`).
    """
    if rules.k_games_cap is None:
        return k_start
    over = k_start.cast(pl.Int32) * games > rules.k_games_cap
    return pl.when(over).then(pl.lit(rules.k_games_cap) // games).otherwise(k_start)


def _k_times_games_cap_numpy(k_start: np.ndarray, games: np.ndarray, rules: RuleSet) -> np.ndarray:
    """k_times_games_cap on NumPy arrays (int16 K, int32 n > 0): the K used, int16."""
    if rules.k_games_cap is None:
        return k_start
    over = np.flatnonzero(k_start.astype(np.int32) * games > rules.k_games_cap)
    k = k_start.astype(np.int16)
    k[over] = rules.k_games_cap // games[over]
    return k


# -- §9.1: a tournament rated on a later list -------------------------------------------------------
# B.02 2024 §9.1 lets a tournament be reported up to "the third list after the tournament ends", so it may be
# rated in a later period than the one it started in. Which list it is rated with is not written in the Rating
# Regulations: the Title Regulations (B.01) §1.4.6 a and FIDE's published calculations take the ratings of the
# list in force at the event's start [S]; those calculations print K per tournament, and issue 36 reads the rule
# as ratings and K alike (docs/rules.md, "the ratings of a tournament started before its period"). Every rule set
# whose games state the K of their start's list (rated_games' white_k_used and black_k_used) is rated so.


def k_at_event_start(policy: KPolicy) -> pl.Expr:
    """K of a rated player's side in an event that started before its period, before the K x n cap: the K the list
    in force at the event's start published (column k_at_start, null where that list gives the player none) under
    a tiered (FIDE) policy, as k_from_previous_list takes a list's K; else the period's (column k_of_period).
    """
    return _listed_k_wins(policy, pl.col("k_at_start"), pl.col("k_of_period"))


def _k_at_event_start_numpy(
    policy: KPolicy, k_of_period: np.ndarray, k_listed_at_start: np.ndarray, listed_known: np.ndarray
) -> np.ndarray:
    """k_at_event_start on NumPy arrays (int16 K; `listed_known`: the list at the start gives one): int16 K."""
    return _listed_k_wins_numpy(policy, k_listed_at_start, listed_known, k_of_period)


# -- §8.3.4: rounding ------------------------------------------------------------------------------


def round_half_away(x: pl.Expr) -> pl.Expr:
    """§8.3.4: "The Rating Change for a Rating Period is rounded to the nearest whole number. 0.5 is rounded away
    from zero."
    """
    return (x.sign() * (x.abs() + 0.5).floor()).cast(pl.Int32)


def _round_half_away_numpy(x: np.ndarray) -> np.ndarray:
    """round_half_away on a float64 array: int32."""
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int32)


#: Polars divides a float column by a literal as a product with its reciprocal; the NumPy arithmetic does the same,
#: so that every value is the one the relational engine computes, to the last bit.
_HUNDREDTH = 1.0 / 100.0


def _rating_changes_numpy(
    per_event: bool,
    k_used: np.ndarray,
    delta_sum_h: np.ndarray,
    delta_h: np.ndarray,
    player: np.ndarray | None,
    side_k: np.ndarray,
    events: pl.Series | None,
) -> tuple[np.ndarray, np.ndarray]:
    """§8.3.2 d and §8.3.4: each player's change for the period, K x the sum of the games' dR, as (the exact change,
    float64; the change rounded, 0.5 away from zero, int32), one value per player.

    Per player: `k_used` (K after the K x n cap, int16) and `delta_sum_h` (the sum of delta_h over its sides, in
    side order). Per counting side: `delta_h` (100 x (score - expected) x weight), `player` (its player's index;
    None: every side is rated with its player's k_used, which rounding per period then needs no more than), `side_k`
    (the K the side is rated with: k_used, or that of its event's start, k_at_event_start) and `events` (its
    event_id; needed only when rounding per event). The change is rounded once per period: K x the sum where the
    player's sides share one K, else the sum of K x dR; or, `per_event` (rounds_per_event of the rule set), each
    event's K x the sum of its dR rounded, then summed (an event's sides share one K, its start's list's).
    """
    if not per_event:
        exact = k_used.astype(np.float64) * delta_sum_h * _HUNDREDTH
        if player is not None and (differs := side_k != k_used[player]).any():
            # A player with an event rated under another list's K: the sum of K x dR over the sides, rounded once.
            mixed = np.unique(player[differs])
            weighted = np.bincount(player, weights=side_k.astype(np.float64) * delta_h, minlength=len(k_used))
            exact[mixed] = weighted[mixed] * _HUNDREDTH
        return exact, _round_half_away_numpy(exact)
    assert player is not None and events is not None  # rounding per event reads each side's player and event
    rows = pl.DataFrame(
        {
            "event_id": events,
            "player": pl.Series(player, dtype=pl.Int64),
            "delta_h": pl.Series(delta_h),
            "k": pl.Series(side_k, dtype=pl.Int16),
        }
    )
    by_event = (
        rows.group_by("player", "event_id")
        .agg(pl.col("delta_h").sum(), pl.col("k").first())
        .with_columns(exact=pl.col("k").cast(pl.Float64) * pl.col("delta_h") / 100.0)
        .with_columns(change=round_half_away(pl.col("exact")))
        .group_by("player")
        .agg(pl.col("exact").sum(), pl.col("change").sum().cast(pl.Int32))
    )
    exact, change = np.zeros(len(k_used), dtype=np.float64), np.zeros(len(k_used), dtype=np.int32)
    exact[by_event["player"].to_numpy()] = by_event["exact"].to_numpy()
    change[by_event["player"].to_numpy()] = by_event["change"].to_numpy()
    return exact, change


def rounds_per_event(rules: RuleSet) -> bool:
    """Whether the change is rounded per event and then summed (`rounding: per-event`), not once per period.

    §8.3.4 (2024) rounds the change "for a Rating Period" once; FIDE's published calculations agree in 13
    of 14 periods where the two ways differ, the one unexplained exception (F-P02) matching rounding per
    tournament. No written rule is known before 2024 [U]: every preset rounds once per period.
    """
    return rules.rounding == "per-event"


# -- §7.1.4 and §7.2.1: the floor ----------------------------------------------------------------


def below_floor(rating: pl.Expr, rules: RuleSet) -> pl.Expr:
    """A rating under the list's floor: "a player whose rating drops below 1400 is listed as unrated"
    (§7.2.1), and a first rating must reach it to be published (§7.1.4). 1400 in 2024, 1000 in
    2012-2024, 1200 from 2009, 1400 before; `floor: null` keeps every rating.
    """
    return (rating < rules.floor) if rules.floor is not None else pl.lit(False)


def _below_floor_numpy(rating: np.ndarray, rules: RuleSet) -> np.ndarray:
    """below_floor on an integer array (no rating missing)."""
    return rating < rules.floor if rules.floor is not None else np.zeros(len(rating), dtype=bool)


def has_floor(rules: RuleSet) -> bool:
    """Whether the rule set publishes only ratings from a floor up (every FIDE edition; not plain Elo)."""
    return rules.floor is not None


def lowest_published_rating(rules: RuleSet) -> int | None:
    """The floor below_floor holds ratings to, as a message names it (§7.2.1); None where every rating is kept."""
    return rules.floor


# -- §7.2.2: inactivity ---------------------------------------------------------------------------
# A player who plays no rated game for one year becomes inactive (the list's flag i), and is active again
# on the list after their next rated game (2024; the 2014 text alike). An inactive player's rating still
# counts for their opponents: the flag changes no rating.


def inactive(rules: RuleSet, month: str) -> pl.Expr:
    """Whether the list of period `month` flags a player inactive, from the column last_played (YYYY-MM, the
    last period with a rated game): `inactive_after_months` (12) or more periods without one. Null where the
    player never played (the list's earlier flag holds: a seed list's, until they play).
    """
    return pl.col("last_played") <= add_months(month, -rules.inactive_after_months)  # YYYY-MM sorts as months


def _inactive_numpy(rules: RuleSet, month: str, last_played: pl.Series | _MonthTexts) -> np.ndarray:
    """The rule `inactive` on a last_played column (Utf8 or string views, or the engine's Strings): a bool array,
    False where never played.
    """
    cutoff = add_months(month, -rules.inactive_after_months)
    if isinstance(last_played, pl.Series):
        return (last_played <= cutoff).fill_null(False).to_numpy()
    return last_played.compare("<=", cutoff)


# -- §8.1: table 8.1.1 and Ra + dp ------------------------------------------------------------------
# Table 8.1.1 (2024; 8.1(a) before) gives the rating difference dp of a fractional score p, read in steps of 0.01:
# a first rating is "Ru = Ra + dp" (§8.2.3), and a performance rating Ra + dp (the Title Regulations' norm table
# 1.4.9 is the same table; pipeline/analytics/performance.py). p is rounded to the hundredth, half up (the
# regulations are silent; FIDE's published first ratings agree), and Ra + dp to the nearest whole number, half up,
# both exactly in integers. The functions take Polars expressions or NumPy arrays alike.


def percent_half_up(n: _Pool, points_x2: _Pool) -> _Pool:
    """The score p in hundredths, to the nearest hundredth half up, exactly in integers (table 8.1.1's row)."""
    return (100 * points_x2 + n) // (2 * n)


def dp_of_percent(percent: pl.Expr) -> pl.Expr:
    """Table 8.1.1's dp (Int64) for a score in hundredths, 0 to 100 (a value outside reads the nearest end)."""
    return pl.lit(_DP_SERIES).gather(percent.clip(0, 100)).cast(pl.Int64)


def _dp_of_percent_numpy(percent: np.ndarray) -> np.ndarray:
    """dp_of_percent on an integer array: int64."""
    return DP_BY_PERCENT[np.clip(percent, 0, 100)].astype(np.int64)


def ra_plus_dp_rounded(n: _Pool, opp_sum: _Pool, dp: _Pool) -> _Pool:
    """round(Ra + dp), half up, exactly in integers (Ra = opp_sum / n)."""
    return (2 * opp_sum + 2 * dp * n + n) // (2 * n)


# -- §8.2 and §7.1.4: the first rating of an unrated player -------------------------------------------
# 2024, in our words: a player new to the list gets a published rating only after at least 5 games
# against rated opponents (§7.1.4); the results of tournaments in consecutive rating periods of not more
# than 26 months are pooled (§7.1.4); a zero score in an unrated player's first event is disregarded
# (§8.2.1). The 2014 and 2022 texts alike; before July 2014, 9 games. The 2003 handbook pooled the same
# and the next 7 periods (quarterly lists), asked for 3 rated opponents in an event and disregarded a
# score of 0 or 1/2; the presets keep 26 months and a zero, and do not model the per-event conditions [U].
# Only games against rated opponents in a rated time control reach these rules (the counting games of
# §8.3.1).


def in_pool_window(rules: RuleSet, month: str) -> pl.Expr:
    """§7.1.4: whether a pool entry (column month, YYYY-MM: the period of its results) still counts on the list of
    period `month`: the last `pool_months` (26) periods, this one included. Older entries are dropped from
    the pool; an entry without a month does not count.
    """
    return (pl.col("month") >= _pool_window_start(rules, month)).fill_null(False)


def _pool_window_start(rules: RuleSet, month: str) -> str:
    """The first period of the pool window of period `month`."""
    return add_months(month, 1 - rules.initial.pool_months)  # YYYY-MM strings sort like the months


def _in_pool_window_numpy(rules: RuleSet, month: str, entry_months: pl.Series | _MonthTexts) -> np.ndarray:
    """in_pool_window on a column of pool entries' months (Utf8 or string views, or the engine's Strings): a bool
    array.
    """
    start = _pool_window_start(rules, month)
    if isinstance(entry_months, pl.Series):
        return (entry_months >= start).fill_null(False).to_numpy()
    return entry_months.compare(">=", start)


def enough_games_for_first_rating(n_pool: pl.Expr, rules: RuleSet) -> pl.Expr:
    """§7.1.4: whether a pool of `n_pool` games against rated opponents is large enough for a first rating:
    at least `min_games` (5 since July 2014, 9 before). The rating is then published if it reaches the floor
    (below_floor).
    """
    return n_pool >= rules.initial.min_games


def _enough_games_for_first_rating_numpy(n_pool: np.ndarray, rules: RuleSet) -> np.ndarray:
    """enough_games_for_first_rating on an integer array: bool."""
    return n_pool >= rules.initial.min_games


def played_before() -> pl.Expr:
    """§8.2.1's "first event" is an unrated player's very first: whether a player has a rated game behind them, from
    the list's columns last_played (a period with a counting game) and pending_games (a pool held). A player
    without is one whose first event disregarded_first_event looks for.
    """
    return pl.col("last_played").is_not_null() | (pl.col("pending_games").fill_null(0) > 0)


def _played_before_numpy(last_played_known: np.ndarray, pending_games: np.ndarray) -> np.ndarray:
    """played_before on NumPy arrays (last_played known, pending_games with 0 where missing): a bool array."""
    return last_played_known | (pending_games > 0)


def disregarded_first_event(rules: RuleSet) -> pl.Expr:
    """§8.2.1: a zero score in an unrated player's first event is disregarded: True for the games disregarded
    (`disregard_zero_first_event`; every edition). The rapid and blitz lists asked more until February 2024: a
    first event counts when it scores `first_event_min_points` (1: "score at least one point", FIDE news 5721 of
    2011 as the English federation reported it; the 2017-2021 rapid and blitz regulations as read in 2021).

    Evaluated on the counting games of unrated players without any earlier rated game (no pool, no
    period played), one row per game with the columns player_id, event_id, event_start and points_x2
    (the player's half points). The first event is the player's event that started first, ties by
    event_id; its games are disregarded when the player scored nothing in it. Only the very first
    event: a zero in a later one counts.
    """
    if not rules.initial.disregard_zero_first_event:
        return pl.lit(False)
    first_event = pl.col("event_id").sort_by("event_start", "event_id").first().over("player_id")
    in_first = pl.col("event_id") == first_event
    points_in_first = pl.when(in_first).then(pl.col("points_x2")).otherwise(0).sum().over("player_id")
    return in_first & (points_in_first < _first_event_min_points_x2(rules))


def _first_event_min_points_x2(rules: RuleSet) -> int:
    """The half points a first event needs (1: anything but a zero)."""
    return round(2 * rules.initial.first_event_min_points)


def _disregarded_first_event_numpy(
    rules: RuleSet, player: np.ndarray, event: pl.Series, event_start: pl.Series, points_x2: np.ndarray
) -> np.ndarray:
    """disregarded_first_event on the games' arrays (player: any integer id, event: event_id, event_start: Date,
    points_x2: int): a bool array, one sort of the games and no per-player Python.
    """
    if not rules.initial.disregard_zero_first_event or not len(player):
        return np.zeros(len(player), dtype=bool)
    # Event ids as integers in event_id order, so that (start, code) orders the events as (start, event_id).
    code = event.cast(pl.Enum(event.unique().sort())).to_physical().to_numpy().astype(np.int64)
    start = event_start.to_physical().to_numpy()
    order = _lexsorted(code, start, player)
    by_player = player[order]
    new_player = np.concatenate([[True], by_player[1:] != by_player[:-1]])
    leads = order[new_player]  # each player's first game
    # Each game's player numbered in player order (np.unique's inverse), from the sort already made.
    who = np.empty(len(player), dtype=np.int64)
    who[order] = np.cumsum(new_player) - 1
    first_event = np.empty(len(leads), dtype=np.int64)
    first_event[who[leads]] = code[leads]
    in_first = code == first_event[who]
    first_points = np.bincount(who[in_first], weights=points_x2[in_first], minlength=len(leads))
    return in_first & (first_points < _first_event_min_points_x2(rules))[who]


def _lexsorted(*keys: np.ndarray) -> np.ndarray:
    """np.lexsort(keys) of integer keys (the last one first): the same order from one stable sort of a combined int64
    key when the keys' ranges fit in it (one radix sort, not three passes of lexsort).
    """
    span, combined = 1, np.zeros(len(keys[0]), dtype=np.int64)
    for key in keys:
        low = int(key.min()) if len(key) else 0
        width = (int(key.max()) - low + 1) if len(key) else 1
        if span * width >= 2**62:
            return np.lexsort(keys)
        combined += (key.astype(np.int64) - low) * span
        span *= width
    return np.argsort(combined, kind="stable")


def initial_rating(rules: RuleSet) -> pl.Expr:
    """First rating from the pooled totals n_pool, p2_pool (half points) and os_pool (sum of opponents' ratings).

    2024 (§8.2.2-8.2.3): "Ra is the average rating of the player's rated opponents plus two
    hypothetical opponents rated 1800 ... considered as a draw"; "Ru = Ra + dp", rounded to the
    nearest whole number, at most 2200 (formula hypothetical-draws). 2014-2022 (§8.21 of those texts):
    Ra + 20 per half point over 50 %, Ra + dp below 50 % (formula plus-score). p is rounded to the
    hundredth, half up, to read table 8.1.1 (the regulations are silent; FIDE's published first
    ratings agree).
    """
    initial = rules.initial
    # n is clipped to 1 because the expression is evaluated on every row, eligible or not.
    n, points_x2, opp_sum = _with_hypothetical_draws(
        rules,
        pl.col("n_pool").cast(pl.Int64).clip(lower_bound=1),
        pl.col("p2_pool").cast(pl.Int64),
        pl.col("os_pool").cast(pl.Int64),
    )
    dp = dp_of_percent(percent_half_up(n, points_x2))
    if initial.formula == "hypothetical-draws":
        rating = ra_plus_dp_rounded(n, opp_sum, dp)
    else:
        average = opp_sum.cast(pl.Float64) / n
        above = pl.when(points_x2 > n).then(initial.plus_score_per_half_point * (points_x2 - n).cast(pl.Float64))
        bonus = above.when(points_x2 == n).then(0.0).otherwise(dp.cast(pl.Float64))
        rating = (average + bonus + 0.5).floor().cast(pl.Int64)
    if initial.max_rating is not None:
        rating = rating.clip(upper_bound=initial.max_rating)
    return rating.cast(pl.Int32)


# The steps of initial_rating that read the same on Polars expressions and NumPy arrays, written once for both.
def _with_hypothetical_draws(rules: RuleSet, n: _Pool, points_x2: _Pool, opp_sum: _Pool) -> tuple[_Pool, _Pool, _Pool]:
    """(games, half points, sum of the opponents' ratings) the formula reads: the pool's, plus the hypothetical
    opponents' drawn games (hypothetical-draws; the pool as it is otherwise).
    """
    initial = rules.initial
    if initial.formula != "hypothetical-draws":
        return n, points_x2, opp_sum
    h = initial.hypothetical_games
    return n + h, points_x2 + h, opp_sum + h * initial.hypothetical_rating


@dataclass(frozen=True)
class InitialRatingTerms:
    """The figures of initial_rating for each pool (NumPy arrays), as FIDE's calculation of a newcomer shows them."""

    n: np.ndarray  # games the formula counts: the pool's, the hypothetical ones included (int64)
    points_x2: np.ndarray  # half points, the hypothetical draws included (int64)
    opponent_sum: np.ndarray  # sum of the opponents' ratings, the hypothetical opponents included (int64)
    percent: np.ndarray  # p in hundredths as table 8.1.1 is read (int64)
    dp: np.ndarray  # table 8.1.1's dp for `percent` (int64)
    bonus: np.ndarray  # what is added to Ra: dp, or the plus-score's points over 50 % (float64)
    uncapped: np.ndarray  # Ru rounded, before max_rating (int64)
    rating: np.ndarray  # the first rating (int32)


def initial_rating_terms(
    rules: RuleSet, n_pool: np.ndarray, p2_pool: np.ndarray, os_pool: np.ndarray
) -> InitialRatingTerms:
    """initial_rating on NumPy arrays of the pooled totals (games, half points, sum of opponents' ratings), with the
    figures it passes through (Ra = opponent_sum / n, p, dp, Ru before the cap): the engine's first ratings
    (_initial_rating_numpy) and the player card's calculation of them.
    """
    initial = rules.initial
    n, points_x2, opp_sum = _with_hypothetical_draws(
        rules, np.maximum(n_pool.astype(np.int64), 1), p2_pool.astype(np.int64), os_pool.astype(np.int64)
    )
    percent = percent_half_up(n, points_x2)
    dp = _dp_of_percent_numpy(percent)
    if initial.formula == "hypothetical-draws":
        bonus = dp.astype(np.float64)
        rating = ra_plus_dp_rounded(n, opp_sum, dp)
    else:
        average = opp_sum.astype(np.float64) / n.astype(np.float64)
        above = initial.plus_score_per_half_point * (points_x2 - n).astype(np.float64)
        bonus = np.where(points_x2 > n, above, np.where(points_x2 == n, 0.0, dp.astype(np.float64)))
        rating = np.floor(average + bonus + 0.5).astype(np.int64)
    capped = rating if initial.max_rating is None else np.minimum(rating, initial.max_rating)
    return InitialRatingTerms(n, points_x2, opp_sum, percent, dp, bonus, rating, capped.astype(np.int32))


@dataclass(frozen=True)
class FirstRatingRule:
    """A rule set's first-rating rule in figures (§7.1.4, §8.2), for a calculation to show beside its terms."""

    min_games: int  # games against rated opponents a first rating needs
    pool_months: int  # the months whose results are pooled
    first_event_min_points: float | None  # a first event scoring less is disregarded (None: none is)
    floor: int | None  # the lowest rating published (None: every rating)
    hypothetical_games: int  # drawn games against hypothetical opponents added to the pool (0: none)
    hypothetical_rating: int  # their rating
    per_half_point: float | None  # plus-score: points per half point over 50 % (None: Ra + dp at every score)
    max_rating: int | None  # the highest first rating (None: no cap)


def first_rating_rule(rules: RuleSet) -> FirstRatingRule:
    """The figures of the rule set's first rating (in_pool_window, enough_games_for_first_rating,
    disregarded_first_event, below_floor, initial_rating) as a calculation names them: `ratings player` shows a
    newcomer's first rating with them.
    """
    initial = rules.initial
    hypothetical = initial.formula == "hypothetical-draws"
    return FirstRatingRule(
        min_games=initial.min_games,
        pool_months=initial.pool_months,
        first_event_min_points=initial.first_event_min_points if initial.disregard_zero_first_event else None,
        floor=rules.floor,
        hypothetical_games=initial.hypothetical_games if hypothetical else 0,
        hypothetical_rating=initial.hypothetical_rating,
        per_half_point=None if hypothetical else initial.plus_score_per_half_point,
        max_rating=initial.max_rating,
    )


def _initial_rating_numpy(rules: RuleSet, n_pool: np.ndarray, p2_pool: np.ndarray, os_pool: np.ndarray) -> np.ndarray:
    """initial_rating on NumPy arrays of the pooled totals (games, half points, sum of opponents' ratings): int32."""
    return initial_rating_terms(rules, n_pool, p2_pool, os_pool).rating
