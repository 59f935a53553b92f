"""uscf: the US Chess rating system (Glickman & Doan), event by event, one of its lists by time control."""

from __future__ import annotations

from typing import Literal

import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, SystemParams
from schemas.system_state import UscfState

#: Glickman & Doan, "The US Chess Rating system" (proposal of 2 September 2020; the algorithm of the June 2015
#: edition), the edition every clause below cites as "G&D 2020".
SOURCE = (
    "Glickman & Doan, 'The US Chess Rating system' (2 Sep 2020), Steps 1-5, ss. 2-5; US Chess rulebook ch. 8 s. 5; "
    "rule 5C (its lists by time control)"
)

# "Rule 5C" below: the US Chess rulebook's rule on ratable time controls as the "Update to the USCF Rulebook" wrote it
# for events from 1 March 2013 (the Blitz system's start), which the 7th edition keeps (T. Just, chief editor of the
# 5th to 7th editions, "Just Rules: time control ratings quiz", new.uschess.org); with G&D 2020's footnote 1.

#: US Chess's three over-the-board lists (G&D 2020: the OTB Regular, Quick Chess and Blitz systems).
RatingList = Literal["regular", "quick", "blitz"]
#: The list kind of the pipeline (a scenario's `rates`) each US Chess list is: regular is the standard list.
LIST_TYPES: dict[str, str] = {"regular": "standard", "quick": "rapid", "blitz": "blitz"}
#: The US Chess list of a game whose clock is unknown, from its FIDE time-control class (schemas.games.TIME_CONTROLS).
CLASS_LISTS: dict[str, str] = {"classical": "regular", "modern": "regular", "rapid": "quick", "blitz": "blitz"}

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
    rating_list: RatingList = Field(
        "regular",
        description=(
            "the US Chess list rated: regular (mm + ss >= 30), quick (10 < mm + ss <= 65) or blitz (5 <= mm + ss "
            "<= 10), mm the main time in minutes and ss the increment or delay in seconds; 30-65 is dual-rated, in "
            "both regular and quick (rule 5C; G&D 2020 footnote 1)"
        ),
    )
    seed_games_cap: int = Field(
        10,
        ge=0,
        description=(
            "a quick or blitz player unrated there starts from the regular rating (the scenario's standard_chain) "
            "as resting on its games, at most this many (G&D 2020 s. 2; 10 as US Chess describes it); 0: never"
        ),
    )


# -- which list rates a game (rule 5C) ----------------------------------------------------------


def total_playing_time(base_seconds: pl.Expr, increment_seconds: pl.Expr) -> pl.Expr:
    """Rule 5C: "For the purposes of rating G/minutes and inc/seconds (or d/seconds), add minutes (mm) and seconds
    (ss) for total playing time for each player", mm + ss, in minutes (G&D 2020 footnote 1: mm the total main time
    in minutes, ss the delay or increment in seconds); a missing increment is none. The same number as FIDE's time
    for 60 moves. Rule 5C adds the minutes of every period of a multi-period control; a game keeps its first
    period's base only (formats.fields.parse_time_control), so such a control may come out faster than 5C counts.
    """
    return base_seconds.cast(pl.Float64) / 60.0 + increment_seconds.cast(pl.Float64).fill_null(0.0)


def regular_only(total: pl.Expr) -> pl.Expr:
    """Rule 5C: "Regular only: total playing time for each player is greater than 65 minutes. mm+ss > 65"."""
    return total > 65.0


def dual_rated(total: pl.Expr) -> pl.Expr:
    """Rule 5C: "Dual (both regular and quick): total playing time for each player is from 30 to 65 minutes"; G&D 2020
    footnote 1: the Regular systems from mm + ss >= 30, OTB Quick "through mm+ss <= 65 ... ('dual rating')"; US Chess
    FAQ ("I've never played quick chess, why do I have a quick rating?"): Game/30 through Game/65 "must be rated as
    both regular and quick chess events. This is not an option". Over the board only (online lists are not dual).
    """
    return (total >= 30.0) & (total <= 65.0)


def quick_only(total: pl.Expr) -> pl.Expr:
    """Rule 5C: "Quick only: total playing time for each player is more than 10 and less than 30 minutes"; G&D 2020
    footnote 1: the QC systems for 10 < mm + ss < 30.
    """
    return (total > 10.0) & (total < 30.0)


def blitz_time(total: pl.Expr) -> pl.Expr:
    """Rule 5C: "Blitz: total playing time for each player is from 5 to 10 minutes inclusive"; G&D 2020 footnote 1:
    5 <= mm + ss <= 10 (G/5d0, G/3+2, G/7d3). US Chess, "USCF Blitz Rating in Effect" (2 Mar 2013): the Blitz system
    rates events starting on or after 1 March 2013; a 5-10 control Quick rated before is Blitz from then on.
    """
    return (total >= 5.0) & (total <= 10.0)


def main_time_allowed(base_seconds: pl.Expr, blitz: bool) -> pl.Expr:
    """Rule 5C: "For Regular, Dual and Quick the primary time (mm in minutes) must be at least 5 minutes"; Blitz: "the
    primary time control must be at least 3 minutes" (G/4 inc/25 is not Quick rated: Just, time control quiz).
    """
    return base_seconds >= (3 if blitz else 5) * 60


def list_of_class(time_control: pl.Expr) -> pl.Expr:
    """A game whose clock is unknown (no tc_base_seconds) goes to the list of its FIDE class: classical and modern to
    regular, rapid to quick, blitz to blitz (CLASS_LISTS). A reading, not US Chess's text, which classes by the clock
    only: without it a FIDE rapid game of 30-59 minutes cannot be told dual-rated, so it is quick only, and a classical
    game of 60-65 minutes regular only.
    """
    return time_control.replace_strict(CLASS_LISTS, default=None)


def rated_in_list(rating_list: str) -> pl.Expr:
    """Whether a game (Games: time_control, tc_base_seconds, tc_increment_seconds) is rated in US Chess's list
    `rating_list`: by its clock (rule 5C: the bands above and the minimum main time), else by its class
    (list_of_class). A dual-rated game is in both regular and quick. Rule 5C classes an event's single control,
    the pipeline each game's.
    """
    base, increment = pl.col("tc_base_seconds"), pl.col("tc_increment_seconds")
    total = total_playing_time(base, increment)
    by_clock = {
        "regular": (regular_only(total) | dual_rated(total)) & main_time_allowed(base, blitz=False),
        "quick": (quick_only(total) | dual_rated(total)) & main_time_allowed(base, blitz=False),
        "blitz": blitz_time(total) & main_time_allowed(base, blitz=True),
    }[rating_list]
    by_class = list_of_class(pl.col("time_control")) == rating_list
    return pl.when(base.is_not_null()).then(by_clock).otherwise(by_class).fill_null(False)


# -- Step 1 and Step 2 ---------------------------------------------------------------------------


def imputed_rating(age: pl.Expr, default: float) -> pl.Expr:
    """G&D 2020, Step 1 (s. 2, unrated players without a FIDE or other rating): from age, 100 below 2, 50 x age
    from 2 to 26, 1300 above 26; `default` (1300) where the age is unknown. The rating rests on N = 0 games.
    """
    by_age = pl.when(age < 2).then(100.0).when(age <= 26).then(50.0 * age.cast(pl.Float64)).otherwise(1300.0)
    return pl.when(age.is_null()).then(pl.lit(default)).otherwise(by_age)


def initial_from_regular(state: pl.DataFrame, seeds: pl.DataFrame, params: UscfParams) -> pl.DataFrame:
    """G&D 2020, Step 1 (s. 2), as the US Chess forum quotes it: "If a player has no rating under a given system, as
    many as seven other sources may provide rating information: the five other US Chess ratings, FIDE ... and CFC
    ... A weighted average of these will be used as an initial estimate of the player's rating—the weights will be
    expressed in terms of the number of 'games' worth of information the rating provides. If none of these ratings
    exist, the initial rating will be the age-based rating ... with ... N, set to 0."

    Built for the one source a scenario can name: the regular list (its standard_chain) seeding quick or blitz.
    The average of one rating is that rating, on N = min(its games, `seed_games_cap`): the cap of 10 is how US Chess's
    ratings staff describe the weights (forum, "P/10": an established regular player starts quick "with P/10", one
    with fewer regular games "with a provisional based on that number"; "From unrated to P15": "capped at 10"); the
    2020 weight table itself was not available. Blitz from regular, not quick: US Chess forum, "Rating supplements
    with blitz ratings in them" ("blitz ratings will be initialized from regular rather than from quick"). A row with
    games 0 (unrated) and a regular rating on games > 0 is seeded; every other row is kept. `seeds`: player_id,
    rating, games (null: not known, weighed as the cap: rate-period's PREV may give a regular rating alone).
    """
    if params.seed_games_cap == 0:
        return state
    cap = params.seed_games_cap
    games = pl.col("games").fill_null(cap)
    usable = seeds.filter((games > 0) & pl.col("rating").is_not_null()).select(
        "player_id", _seed_rating=pl.col("rating"), _seed_games=pl.min_horizontal(games, pl.lit(cap)).cast(pl.Int64)
    )
    seeded = (pl.col("games") == 0) & pl.col("_seed_rating").is_not_null()
    return (
        state.join(usable, on="player_id", how="left", maintain_order="left")
        .with_columns(
            rating=pl.when(seeded).then(pl.col("_seed_rating")).otherwise(pl.col("rating")),
            games=pl.when(seeded).then(pl.col("_seed_games")).otherwise(pl.col("games")),
        )
        .select(state.columns)
    )


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
        "wins/losses), K = 800/(N' + m) with bonus, intermediate then final ratings, absolute and peak floors; "
        "the regular, quick or blitz list by the clock (rule 5C, dual-rated 30-65 minutes)"
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
    selects_games=lambda params: rated_in_list(params.rating_list),
    list_type=lambda params: LIST_TYPES[params.rating_list],
    seeded_from=initial_from_regular,
)
