"""uscf: the US Chess rating system (Glickman & Doan), event by event: special and standard formulas, bonus, floors."""

from __future__ import annotations

import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, SystemParams
from schemas.system_state import UscfState

#: Glickman & Doan, "The US Chess Rating system" (proposal of 2 September 2020; the algorithm of the June 2015
#: edition), the edition every clause below cites as "G&D 2020".
SOURCE = "Glickman & Doan, 'The US Chess Rating system' (2 Sep 2020), Steps 1-5, ss. 2-5; US Chess rulebook ch. 8 s. 5"

#: Tolerance of the special formula's root search (G&D 2020 s. 4.1: "a tolerance to detect values different from 0").
EPSILON = 1e-7


class UscfParams(SystemParams):
    init_rating: float = Field(
        1300.0,
        description="Step 1: an unrated player's initial rating when the age is unknown (G&D 2020 s. 2: adults 1300)",
    )
    bonus_threshold: float = Field(
        12.0,
        ge=0,
        description=(
            "B of the bonus max(0, K(S-E) - B sqrt(max(m, 4))) (G&D 2020 s. 4.2): 10 in the 2004 edition, "
            "12 later, 14 for events ending 1 May 2017 on, 12 again for events ending 1 Feb 2023 on"
        ),
    )
    bonus_min_games: int = Field(
        3, ge=0, description="an event gives bonus points from this many games (G&D 2020 s. 4.2)"
    )
    special_max_games: int = Field(
        8, ge=0, description="the special formula rates a player with at most this many games (G&D 2020 s. 4.1)"
    )
    special_cap: float = Field(2700.0, description="a special (provisional) rating is at most this (G&D 2020 s. 4.1)")
    established_after: int = Field(
        25, ge=0, description="a rating is established when based on more than this many games (G&D 2020 s. 1)"
    )
    floors: bool = Field(True, description="apply the absolute and peak-based floors (rulebook ch. 8 s. 5)")


# -- Step 1 and Step 2 ---------------------------------------------------------------------------


def imputed_rating(age: pl.Expr, default: float) -> pl.Expr:
    """G&D 2020, Step 1 (s. 2, unrated players without a FIDE or other rating): from age, 100 below 2, 50 x age
    from 2 to 26, 1300 above 26; `default` (1300) where the age is unknown. The rating rests on N = 0 games.
    """
    by_age = pl.when(age < 2).then(100.0).when(age <= 26).then(50.0 * age.cast(pl.Float64)).otherwise(1300.0)
    return pl.when(age.is_null()).then(pl.lit(default)).otherwise(by_age)


def effective_games(rating: pl.Expr, games: pl.Expr) -> pl.Expr:
    """G&D 2020, Step 2 (s. 3): N* = 50 / sqrt(0.662 + 0.00000739 (2569 - R0)^2) for R0 <= 2355, else 50;
    the effective number of games N' is the smaller of N and N*.
    """
    n_star = pl.when(rating <= 2355).then(50.0 / (0.662 + 0.00000739 * (2569.0 - rating).pow(2)).sqrt()).otherwise(50.0)
    return pl.min_horizontal(games.cast(pl.Float64), n_star)


# -- the special formula (s. 4.1) ---------------------------------------------------------------


def provisional_expectancy(rating: pl.Expr, opponent: pl.Expr) -> pl.Expr:
    """G&D 2020 s. 4.1: PWe(R, Ri) = 0 if R <= Ri - 400, 1 if R >= Ri + 400, else 0.5 + (R - Ri) / 800."""
    return (0.5 + (rating - opponent) / 800.0).clip(0.0, 1.0)


def adjusted_prior(prior: pl.Expr, score: pl.Expr, n_eff: pl.Expr, all_wins: pl.Expr, all_losses: pl.Expr):
    """G&D 2020 s. 4.1: after all wins R0' = R0 - 400 and S' = S + N'; after all losses R0' = R0 + 400 and
    S' = S; otherwise R0' = R0 and S' = S + N'/2. Returns (R0', S').
    """
    r_adj = pl.when(all_wins).then(prior - 400.0).when(all_losses).then(prior + 400.0).otherwise(prior)
    s_adj = pl.when(all_wins).then(score + n_eff).when(all_losses).then(score).otherwise(score + n_eff / 2.0)
    return r_adj, s_adj


def special_ratings(opponents: pl.DataFrame, heads: pl.DataFrame, cap: float) -> pl.DataFrame:
    """G&D 2020 s. 4.1: the rating R at which N' PWe(R, R0') + sum_i PWe(R, R_i) = S', the special formula.

    `opponents`: player_id, opp_rating (one row per game); `heads`: player_id, prior (R0), prior_adj (R0'),
    n_eff (N'), s_adj (S'). The objective f is piecewise linear and non-decreasing with knots at R_i +- 400 and
    R0' +- 400, so its roots form an interval [lo, hi] found from f at the knots; where f is flat at zero
    (several equally good ratings) the paper's iteration ends at R0 held within that interval, which is what
    clipping R0 to [lo, hi] gives. A special rating is at most `cap` (2700).
    """
    terms = pl.concat(
        [
            opponents.select("player_id", at=pl.col("opp_rating"), w=pl.lit(1.0)),
            heads.filter(pl.col("n_eff") > 0).select("player_id", at=pl.col("prior_adj"), w=pl.col("n_eff")),
        ]
    )
    knots = pl.concat(
        [terms.select("player_id", b=pl.col("at") - 400.0), terms.select("player_id", b=pl.col("at") + 400.0)]
    )
    f = (
        knots.unique()
        .join(terms, on="player_id")
        .group_by("player_id", "b")
        .agg(value=(pl.col("w") * provisional_expectancy(pl.col("b"), pl.col("at"))).sum())
        .join(heads.select("player_id", "s_adj"), on="player_id")
        .with_columns(f=pl.col("value") - pl.col("s_adj"))
    )
    below, above = pl.col("f") < -EPSILON, pl.col("f") > EPSILON
    ends = f.group_by("player_id").agg(
        b_a=pl.col("b").filter(below).max(),
        f_a=pl.col("f").filter(below).max(),
        b_b=pl.col("b").filter(~below).min(),
        f_b=pl.col("f").filter(~below).min(),
        b_c=pl.col("b").filter(~above).max(),
        f_c=pl.col("f").filter(~above).max(),
        b_d=pl.col("b").filter(above).min(),
        f_d=pl.col("f").filter(above).min(),
    )
    inf = float("inf")
    lo = (
        pl.when(pl.col("b_a").is_null())
        .then(-inf)
        .otherwise(pl.col("b_a") - pl.col("f_a") * (pl.col("b_b") - pl.col("b_a")) / (pl.col("f_b") - pl.col("f_a")))
    )
    hi = (
        pl.when(pl.col("b_d").is_null())
        .then(inf)
        .otherwise(pl.col("b_c") - pl.col("f_c") * (pl.col("b_d") - pl.col("b_c")) / (pl.col("f_d") - pl.col("f_c")))
    )
    return (
        heads.select("player_id", "prior")
        .join(ends.with_columns(lo=lo, hi=hi), on="player_id", how="left")
        .select("player_id", special=pl.min_horizontal(pl.col("prior").clip(pl.col("lo"), pl.col("hi")), pl.lit(cap)))
    )


# -- the standard formula (s. 4.2) --------------------------------------------------------------


def k_factor(n_eff: pl.Expr, m: pl.Expr) -> pl.Expr:
    """G&D 2020 s. 4.2: K = 800 / (N' + m)."""
    return 800.0 / (n_eff + m.cast(pl.Float64))


def bonus(change: pl.Expr, m: pl.Expr, eligible: pl.Expr, threshold: float) -> pl.Expr:
    """G&D 2020 s. 4.2: max(0, K(S - E) - B sqrt(m')) with m' = max(m, 4), only when m >= 3 and the player meets no
    opponent more than twice in the event.
    """
    extra = (change - threshold * pl.max_horizontal(m, pl.lit(4)).cast(pl.Float64).sqrt()).clip(lower_bound=0.0)
    return pl.when(eligible).then(extra).otherwise(0.0)


def standard_expectancy(rating: pl.Expr, opponent: pl.Expr) -> pl.Expr:
    """G&D 2020 s. 4.2: We(R, Ri) = 1 / (1 + 10^(-(R - Ri) / 400))."""
    return 1.0 / (1.0 + pl.lit(10.0).pow(-(rating - opponent) / 400.0))


# -- floors (rulebook ch. 8 s. 5) ---------------------------------------------------------------


def absolute_floor(wins: pl.Expr, draws: pl.Expr, events_3plus: pl.Expr) -> pl.Expr:
    """US Chess rulebook ch. 8 s. 5 (G&D 2020 s. 5): min(100 + 4 wins + 2 draws + events with 3+ games, 150)."""
    return pl.min_horizontal(100 + 4 * wins + 2 * draws + events_3plus, pl.lit(150)).cast(pl.Float64)


def peak_floor(peak: pl.Expr) -> pl.Expr:
    """US Chess rulebook ch. 8 s. 5: the highest established rating minus 200, last two digits set to zero, from
    1200 (peaks 1400-1499) to 2100; none below a 1400 peak. (The 2200 floor of Original Life Masters and prize
    floors need data we do not hold.)
    """
    floor = ((peak - 200.0) / 100.0).floor() * 100.0
    return pl.when(floor >= 1200.0).then(pl.min_horizontal(floor, pl.lit(2100.0)))


# -- Steps 3 to 5 on one event per player -------------------------------------------------------


def event_rating(
    heads: pl.DataFrame, sides: pl.DataFrame, params: UscfParams, opponent_rating: str, prior_games: str
) -> pl.DataFrame:
    """A rating for every player of `heads` from their event: the special formula for players with N <= 8 or only
    wins or only losses before (G&D 2020 s. 4.1), the standard formula with bonus otherwise (s. 4.2).

    `heads`: player_id, prior (R0), `prior_games` (N for N'), games, wins, losses (before the event), score, m,
    eligible (bonus). `sides`: player_id, opponent_id, and the opponents' ratings in `opponent_rating`.
    """
    n = pl.col("games")
    heads = heads.with_columns(n_eff=effective_games(pl.col("prior"), pl.col(prior_games)))
    all_wins = (n > 0) & (pl.col("wins") == n)
    all_losses = (n > 0) & (pl.col("losses") == n)
    special_rows = heads.with_columns(use_special=(n <= params.special_max_games) | all_wins | all_losses)
    r_adj, s_adj = adjusted_prior(pl.col("prior"), pl.col("score"), pl.col("n_eff"), all_wins, all_losses)
    special_heads = special_rows.filter("use_special").with_columns(prior_adj=r_adj, s_adj=s_adj)
    special = special_ratings(
        sides.join(special_heads.select("player_id"), on="player_id").select(
            "player_id", opp_rating=pl.col(opponent_rating)
        ),
        special_heads,
        params.special_cap,
    )
    expectation = (
        sides.join(heads.select("player_id", "prior"), on="player_id")
        .group_by("player_id")
        .agg(expected=standard_expectancy(pl.col("prior"), pl.col(opponent_rating)).sum())
    )
    k = k_factor(pl.col("n_eff"), pl.col("m"))
    change = k * (pl.col("score") - pl.col("expected"))
    standard = (
        special_rows.filter(~pl.col("use_special"))
        .join(expectation, on="player_id")
        .select(
            "player_id",
            standard=pl.col("prior") + change + bonus(change, pl.col("m"), pl.col("eligible"), params.bonus_threshold),
        )
    )
    return (
        special_rows.join(special, on="player_id", how="left")
        .join(standard, on="player_id", how="left")
        .select("player_id", new=pl.coalesce("special", "standard"))
    )


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: UscfParams, period: int) -> pl.DataFrame:
    # The driver hands one event per player (by_event); without event ids the period is that event.
    year = sides.group_by("player_id").agg(pl.col("year").max()) if "year" in sides.columns else None
    heads = players.join(
        sides.group_by("player_id").agg(
            score=pl.col("score").sum(),
            m=pl.len().cast(pl.Int64),
            most_against_one=pl.col("opponent_id").unique_counts().max(),
        ),
        on="player_id",
    )
    if year is not None:
        heads = heads.join(year, on="player_id", how="left")
    else:
        heads = heads.with_columns(year=pl.lit(None, dtype=pl.Int64))
    unrated = pl.col("games") == 0
    heads = heads.with_columns(
        prior=pl.when(unrated)
        .then(imputed_rating(pl.col("year") - pl.col("birth_year"), params.init_rating))
        .otherwise(pl.col("rating")),
        eligible=(pl.col("m") >= params.bonus_min_games) & (pl.col("most_against_one") <= 2),
    )
    priors = heads.select("player_id", "prior")

    def opponents_at(frame: pl.DataFrame, column: str) -> pl.DataFrame:
        return sides.join(
            frame.select(pl.col("player_id").alias("opponent_id"), pl.col(column).alias("opp")), on="opponent_id"
        )

    # Step 3: unrated players' first estimates (N' = 1 around the Step 1 rating), used only by their opponents.
    first = heads.filter(unrated).with_columns(one=pl.lit(1))
    estimates = event_rating(first, opponents_at(priors, "prior"), params, "opp", "one") if first.height else None
    step3 = (
        priors.join(estimates, on="player_id", how="left") if estimates is not None else priors.with_columns(new=None)
    )
    step3 = step3.select("player_id", r=pl.coalesce("new", "prior"))
    # Step 4: intermediate ratings against the pre-event ratings (the Step 3 estimates for unrated opponents).
    intermediate = event_rating(heads, opponents_at(step3, "r"), params, "opp", "games")
    # Step 5: final ratings from the pre-event rating against the opponents' intermediate ratings.
    final = event_rating(heads, opponents_at(intermediate, "new"), params, "opp", "games")
    frame = heads.join(final, on="player_id").with_columns(
        events_3plus=pl.col("events_3plus") + (pl.col("m") >= 3).cast(pl.Int64),
        established=(pl.col("games") + pl.col("m")) > params.established_after,
    )
    if params.floors:
        floor = pl.max_horizontal(
            absolute_floor(
                pl.col("wins") + pl.col("period_wins"), pl.col("draws") + pl.col("period_draws"), pl.col("events_3plus")
            ),
            pl.when(pl.col("established")).then(peak_floor(pl.col("peak"))),
        )
        frame = frame.with_columns(new=pl.max_horizontal(pl.col("new"), floor))
    return frame.select(
        "player_id",
        rating="new",
        # The peak that floors rest on: the highest rating reached while established.
        peak=pl.when(pl.col("established"))
        .then(pl.max_horizontal(pl.col("peak"), pl.col("new")))
        .otherwise(pl.col("peak")),
        events_3plus="events_3plus",
        birth_year="birth_year",
    )


def _expected(params: UscfParams) -> pl.Expr:
    return standard_expectancy(pl.col("white_rating") + pl.col("advantage"), pl.col("black_rating"))


SYSTEM = RatingSystem(
    name="uscf",
    description=(
        "uscf: US Chess, event by event: imputed initial ratings, effective games, special formula (N <= 8 or all "
        "wins/losses), K = 800/(N' + m) with bonus, intermediate then final ratings, absolute and peak floors"
    ),
    source=SOURCE,
    params=UscfParams,
    state_columns=("rating", "peak", "events_3plus", "birth_year"),
    initial=lambda params: {"rating": params.init_rating, "peak": None, "events_3plus": 0, "birth_year": None},
    expected=_expected,
    update=_update,
    extra_state={"peak": pl.Float64, "events_3plus": pl.Int64, "birth_year": pl.Int64},
    state_model=UscfState,
    by_event=True,
)
