"""ecf: the English Chess Federation's monthly rating (since 2020): P passes for new and partial players, then K."""

from __future__ import annotations

import polars as pl
from pydantic import Field

from pipeline.months import month_index
from pipeline.rules.regulations import round_half_away
from pipeline.rules.tables import DP_BY_PERCENT, PD_HIGHER_HUNDREDTHS, PD_MAX_DIFFERENCE
from pipeline.systems import RatingSystem, SystemParams
from schemas.system_state import EcfState

#: The ECF's rating help page (ecfrating.org.uk/v2/help/help_rating.php: definitions 1-8 and the three passes), the
#: ECF's "calculation of ECF grades on a monthly basis" note, its "ECF rating categories" note (version 8 December
#: 2021, englishchess.org.uk) and the categories as the ECF rating website gives them from June 2022 (quoted by
#: dorsetchess.co.uk, "New Rating Categories"), as summarised in ../shared/reference/systems-and-calendar.md ("English
#: ECF"); every clause below cites the help page as "ECF help" and the categories text as "categories (2022)".
SOURCE = (
    "ECF rating help (ecfrating.org.uk/v2/help/help_rating.php): definitions 1-8, passes 1-3; ECF monthly calculation "
    "note; ECF rating categories (note of 8 Dec 2021; the rating website's text from June 2022): A, H, K, P, unrated "
    "and the returning player's dummy game; FIDE table 8.1.1 and 8.1.2 for the expectancy and dp"
)

#: ecf_status values: what the rating a player holds is, in the help page's words.
NONE, PARTIAL, FULL = 0, 1, 2

_PD_SERIES = pl.Series("pd", PD_HIGHER_HUNDREDTHS.astype("int32"))
_DP_SERIES = pl.Series("dp", DP_BY_PERCENT.astype("int32"))
#: Months kept in `recent_games` (the activity window of category A).
WINDOW = 12


class EcfParams(SystemParams):
    init_rating: float = Field(
        1500.0, description="the rating a player without an ECF rating is predicted with (the ECF publishes none)"
    )
    k: float = Field(20.0, gt=0, description="K of the K Rating, R1 = R0 + K (W - We) (ECF monthly calculation: 20)")
    k_partial_opponent: float = Field(
        40.0,
        gt=0,
        description=(
            "the K used for an opponent rated on a Partial Rating (ECF help, pass 3: 40, 'reducing any rating "
            "adjustment by 50%'): the game's adjustment is scaled by k / k_partial_opponent"
        ),
    )
    full_min_games: int = Field(
        10, ge=1, description="a P Rating on at least this many games is a Full Rating (ECF help, definitions 3-4)"
    )
    fictional_opponent_rating: float | None = Field(
        None,
        description=(
            "the 'nominal rating' of the fictional opponent a P Rating adds a draw against (ECF help, definition 2); "
            "unset: init_rating, the rating the system assumes for a player it knows nothing about"
        ),
    )
    lapse_months: int = Field(
        36,
        ge=1,
        description=(
            "a rated player with no rated result in this many months is unrated and a New Player on return (categories "
            "(2022): 36; the help page's definitions 5-7 of 2020 give 60)"
        ),
    )
    unlisted_months: int = Field(
        36,
        ge=1,
        description="a rating with no rated result in this many months is shown as unrated (categories (2022))",
    )
    h_max_results: int = Field(
        9,
        ge=1,
        description=(
            "category H: an inherited rating resting on fewer than this many rated results in the 60 months before "
            "it was inherited (categories (2022): 'less than 9')"
        ),
    )
    h_converted_on: str = Field(
        "2022-12",
        pattern=r"^\d{4}-\d{2}$",
        description=(
            "the month whose list (of its first day, the list after the month before) converts every remaining H "
            "rating to unrated (categories (2022): 1 December 2022; the 2021 note planned 1 September 2022)"
        ),
    )
    active_min_games: int = Field(
        30, ge=1, description="category A: at least this many rated results in the last 12 months (ECF categories)"
    )


# -- expectancy and performance (FIDE tables 8.1.2 and 8.1.1) -----------------------------------


def expected_score(difference: pl.Expr) -> pl.Expr:
    """ECF monthly calculation: We from FIDE's table 8.1.2 (B.02 2024 s. 8.1.2) for D = own - opponent, rounded to a
    whole point; the higher-rated side takes PD, the lower 1 - PD. No 400-point cap: the ECF's text names none.
    """
    d = round_half_away(difference).cast(pl.Int64)
    pd = pl.lit(_PD_SERIES).gather(d.abs().clip(0, PD_MAX_DIFFERENCE)).cast(pl.Float64) / 100.0
    return pl.when(d >= 0).then(pd).otherwise(1.0 - pd)


def performance_rating(opponents_sum: pl.Expr, games: pl.Expr, score: pl.Expr, fictional: pl.Expr | float) -> pl.Expr:
    """ECF help, definition 2 (P Rating): "an Elo performance rating ... based solely on performance versus opponents
    ratings ... ECF includes a fictional draw against a fictional opponent of nominal rating".

    Elo's performance Ra + dp(p) with dp from FIDE's table 8.1.1 (p rounded half up to the hundredth, as FIDE's
    B.02 s. 8.2 does), over the real games plus the fictional draw against `fictional` (`fictional_opponent`); a whole
    number, as ECF ratings are published. Without a real game it is the fictional opponent's rating (a draw).
    """
    n_all = games.cast(pl.Float64) + 1.0
    percent = ((100.0 * (score + 0.5) / n_all) + 0.5).floor().cast(pl.Int64)
    dp = pl.lit(_DP_SERIES).gather(percent.clip(0, 100)).cast(pl.Float64)
    return round_half_away((opponents_sum + fictional) / n_all + dp).cast(pl.Float64)


def nominal_rating(params: EcfParams) -> float:
    """The fictional opponent's rating for a player the ECF never rated (ECF help, definition 2, "nominal rating";
    its value is not published: `fictional_opponent_rating`, else `init_rating`).
    """
    if params.fictional_opponent_rating is None:
        return params.init_rating
    return params.fictional_opponent_rating


def fictional_opponent(params: EcfParams) -> pl.Expr:
    """The fictional opponent of a player's P Rating: categories (2022), "An unrated player, on return, will be treated
    as a new player with one dummy game assuming a draw against an opponent with the players last full rating"
    (`p_fictional`, kept while the returning player's rating is Partial); for everybody else the nominal rating.
    """
    return pl.coalesce(pl.col("p_fictional"), pl.lit(nominal_rating(params)))


def k_rating(rating: pl.Expr, adjustment: pl.Expr, k: float) -> pl.Expr:
    """ECF help, definition 1 and pass 3 (K Rating): R1 = R0 + K sum(w (W - We)), w the game's weight
    (`opponent_weight`); a whole number, as ECF ratings are published.
    """
    return round_half_away(rating + k * adjustment).cast(pl.Float64)


def opponent_weight(opponent_partial: pl.Expr, params: EcfParams) -> pl.Expr:
    """ECF help, pass 3: "When using an opponents Partial Rating use a K of 40 for that opponent. This has the effect
    of reducing any rating adjustment by 50%." Read as the ratio K / 40 (= 1/2 at the defaults) applied to the game.
    """
    return pl.when(opponent_partial).then(params.k / params.k_partial_opponent).otherwise(1.0)


def is_full(games: pl.Expr, params: EcfParams) -> pl.Expr:
    """ECF help, definitions 3-4: a P Rating on fewer than 10 games is a Partial Rating, on 10 or more a Full Rating."""
    return games >= params.full_min_games


def lapsed(lag: pl.Expr, params: EcfParams) -> pl.Expr:
    """Categories (2022): "Unrated: Any K or P rating where the player has no rated result in the previous 36 calendar
    months ... An unrated player, on return, will be treated as a new player". (ECF help, definitions 5-7, of 2020:
    Fully and Partially Rated Players have "played at least one rated game in the prior 60 months"; `lapse_months`.)
    """
    return lag > params.lapse_months


def h_rating(period: int, params: EcfParams) -> pl.Expr:
    """Categories (2022), category H: "For OTB, players who inherited a rating on 1st July 2020, but who has less than 9
    rated results in the 60 calendar months prior to 1st July 2020 and has not played since ... When a player with an
    H rating subsequently plays, their rating will convert to category K ... On 1st December 2022, any player still
    with an H rating will be converted to unrated (but will not become unrated before then)."

    `inherited_results` holds the rated results an inherited (seeded) rating rested on in the 60 months before; it is
    cleared when the player plays. True on the list after `period` while that list is dated before `h_converted_on`.
    """
    before_conversion = period + 1 < month_index(params.h_converted_on)
    return (
        pl.col("inherited_results").is_not_null()
        & (pl.col("inherited_results") < params.h_max_results)
        & pl.lit(before_conversion)
    )


def h_converted(period: int, params: EcfParams) -> pl.Expr:
    """An H rating the conversion made unrated by `period` (categories (2022)): such a player is a New Player on
    return, like any unrated one.
    """
    return (
        pl.col("inherited_results").is_not_null()
        & (pl.col("inherited_results") < params.h_max_results)
        & pl.lit(period >= month_index(params.h_converted_on))
    )


# -- activity and categories --------------------------------------------------------------------


def _counts(column: str) -> pl.Expr:
    return pl.col(column).fill_null("").str.extract_all(r"\d+").cast(pl.List(pl.Int64))


def shifted_recent_games(params: EcfParams) -> pl.Expr:
    """`recent_games` after this period: its games first, a 0 for each month skipped, then the older months; 12 kept."""
    zeros = pl.lit(0, dtype=pl.Int64).repeat_by((pl.col("lag") - 1).clip(0, WINDOW))
    counts = pl.concat_list(pl.col("period_games").cast(pl.Int64), zeros, _counts("recent_games")).list.head(WINDOW)
    return counts.cast(pl.List(pl.Utf8)).list.join(" ")


def category(period: int, params: EcfParams) -> pl.Expr:
    """ECF rating categories (2021 note; the rating website's text from June 2022) on the list after `period`:

    - H: an inherited rating on few results, not played since (`h_rating`), until its conversion: never unrated
      before it;
    - A: a Full Rating with at least 30 rated results in the last 12 months;
    - K: any other Full Rating; P: a Partial Rating;
    - null: no rating, no rated result in the last 36 months (shown as unrated), or an H rating after the conversion.
    """
    since = pl.lit(period, dtype=pl.Int64) - pl.col("last_period")
    in_window = (WINDOW - since).clip(0, WINDOW)
    last_year = _counts("recent_games").list.head(in_window).list.sum()
    listed = (pl.col("ecf_status") > NONE) & (since < params.unlisted_months) & ~h_converted(period + 1, params)
    return (
        pl.when(h_rating(period, params) & (pl.col("ecf_status") == FULL))
        .then(pl.lit("H"))
        .when(~listed)
        .then(pl.lit(None, dtype=pl.Utf8))
        .when(pl.col("ecf_status") == PARTIAL)
        .then(pl.lit("P"))
        .when(last_year >= params.active_min_games)
        .then(pl.lit("A"))
        .otherwise(pl.lit("K"))
    )


# -- the month: pass 1 and pass 2 (P), pass 3 (K) -----------------------------------------------


def _p_pass(p_players: pl.DataFrame, sides: pl.DataFrame, opponents: pl.DataFrame, params: EcfParams) -> pl.DataFrame:
    """One P pass over New and Partially Rated Players: their earlier partial games (sums) plus this month's games
    against the opponents `opponents` rates; player_id, n, w, opp (the sums) and `p`, the P Rating.
    """
    month = (
        sides.join(p_players.select("player_id"), on="player_id")
        .join(opponents, on="opponent_id")
        .group_by("player_id")
        .agg(n=pl.len().cast(pl.Int64), w=pl.col("score").sum(), opp=pl.col("opp").sum())
    )
    return (
        p_players.join(month, on="player_id", how="left")
        .with_columns(
            n=pl.col("p_games") + pl.col("n").fill_null(0),
            w=pl.col("p_score") + pl.col("w").fill_null(0.0),
            opp=pl.col("p_opponents") + pl.col("opp").fill_null(0.0),
        )
        .with_columns(p=performance_rating(pl.col("opp"), pl.col("n"), pl.col("w"), fictional_opponent(params)))
        .select("player_id", "n", "w", "opp", "p")
    )


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: EcfParams, period: int) -> pl.DataFrame:
    # Definitions 5-7 and categories (2022): who is Fully Rated, Partially Rated or New this month. An unrated player
    # (no result in 36 months, or an H rating after its conversion) starts anew, his fictional opponent at his last
    # Full Rating; an H rating played before its conversion turns K (it is never unrated before then).
    inherited_h = pl.col("inherited_results").is_not_null() & (pl.col("inherited_results") < params.h_max_results)
    players = (
        players.with_columns(
            unrated=pl.when(inherited_h).then(h_converted(period, params)).otherwise(lapsed(pl.col("lag"), params))
        )
        .with_columns(
            status=pl.when("unrated").then(pl.lit(NONE, dtype=pl.Int64)).otherwise("ecf_status"),
            p_fictional=pl.when(pl.col("unrated") & (pl.col("ecf_status") == FULL))
            .then("rating")
            .when(pl.col("ecf_status") == PARTIAL)
            .then("p_fictional"),
        )
        .with_columns(
            p_games=pl.when(pl.col("status") == PARTIAL).then("p_games").otherwise(0),
            p_score=pl.when(pl.col("status") == PARTIAL).then("p_score").otherwise(0.0),
            p_opponents=pl.when(pl.col("status") == PARTIAL).then("p_opponents").otherwise(0.0),
        )
    )
    full = players.filter(pl.col("status") == FULL)
    p_players = players.filter(pl.col("status") != FULL)
    prior = players.filter(pl.col("status") > NONE).select(pl.col("player_id").alias("opponent_id"), opp="rating")
    fully = full.select(pl.col("player_id").alias("opponent_id"), opp="rating")

    # Pass 1: P Ratings "A" against the opponents' ratings before the month; a New Player's games against New Players
    # have no opponent rating yet, so only the fictional draw and the games against rated opponents count.
    pass1 = _p_pass(p_players, sides, prior, params)
    # Pass 2: P Ratings "B", New and Partially Rated opponents at their "A".
    a = pass1.select(pl.col("player_id").alias("opponent_id"), opp="p")
    pass2 = _p_pass(p_players, sides, pl.concat([fully, a]), params)
    b = pass2.with_columns(b_full=is_full(pl.col("n"), params))
    # Pass 3: K Ratings for the Fully Rated; New and Partially Rated opponents count at their "B" (K 40 if partial).
    b_opponents = b.select(pl.col("player_id").alias("opponent_id"), opp="p", opp_partial=~pl.col("b_full"))
    opponents = pl.concat([fully.with_columns(opp_partial=pl.lit(False)), b_opponents])
    adjustments = (
        sides.join(full.select("player_id", own="rating"), on="player_id")
        .join(opponents, on="opponent_id")
        .group_by("player_id")
        .agg(
            adj=(
                opponent_weight(pl.col("opp_partial"), params)
                * (pl.col("score") - expected_score(pl.col("own") - pl.col("opp")))
            ).sum()
        )
    )
    rated = full.join(adjustments, on="player_id", how="left").select(
        "player_id",
        new=k_rating(pl.col("rating"), pl.col("adj").fill_null(0.0), params.k),
        new_status=pl.lit(FULL, dtype=pl.Int64),
        new_games=pl.lit(0, dtype=pl.Int64),
        new_score=pl.lit(0.0),
        new_opponents=pl.lit(0.0),
        new_fictional=pl.lit(None, dtype=pl.Float64),
    )
    performed = b.join(p_players.select("player_id", "p_fictional"), on="player_id").select(
        "player_id",
        new="p",
        new_status=pl.when(pl.col("b_full"))
        .then(pl.lit(FULL, dtype=pl.Int64))
        .otherwise(pl.lit(PARTIAL, dtype=pl.Int64)),
        # A Partial Rating keeps the games it rests on; a Full Rating moves by K from now on.
        new_games=pl.when(pl.col("b_full")).then(0).otherwise("n"),
        new_score=pl.when(pl.col("b_full")).then(0.0).otherwise("w"),
        new_opponents=pl.when(pl.col("b_full")).then(0.0).otherwise("opp"),
        new_fictional=pl.when(pl.col("b_full")).then(None).otherwise("p_fictional"),
    )
    out = pl.concat([rated, performed], how="vertical_relaxed")
    return out.join(
        players.select("player_id", recent=shifted_recent_games(params)), on="player_id", how="left"
    ).select(
        "player_id",
        rating="new",
        ecf_status="new_status",
        p_games="new_games",
        p_score="new_score",
        p_opponents="new_opponents",
        p_fictional="new_fictional",
        recent_games="recent",
        # A player who plays is no longer an H rating (categories (2022): it converts to K).
        inherited_results=pl.lit(None, dtype=pl.Int64),
    )


def _expected(params: EcfParams) -> pl.Expr:
    return expected_score(pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"))


SYSTEM = RatingSystem(
    name="ecf",
    description=(
        "ecf: the English federation's monthly rating: FIDE's table 8.1.2, P Ratings (performance with a fictional "
        "draw) for new and partial players in two passes, then K 20 for the fully rated, K 40 against partial "
        "opponents; Full Rating from 10 games"
    ),
    source=SOURCE,
    params=EcfParams,
    state_columns=(
        "rating",
        "ecf_status",
        "p_games",
        "p_score",
        "p_opponents",
        "p_fictional",
        "recent_games",
        "inherited_results",
    ),
    initial=lambda params: {
        "rating": params.init_rating,
        "ecf_status": NONE,
        "p_games": 0,
        "p_score": 0.0,
        "p_opponents": 0.0,
        "p_fictional": None,
        "recent_games": None,
        "inherited_results": None,
    },
    expected=_expected,
    update=_update,
    extra_state={
        "ecf_status": pl.Int64,
        "p_games": pl.Int64,
        "p_score": pl.Float64,
        "p_opponents": pl.Float64,
        "p_fictional": pl.Float64,
        "recent_games": pl.Utf8,
        "inherited_results": pl.Int64,
    },
    state_model=EcfState,
    # A rating from a seed list (or a rated row of rate-period's list) counts as a Full Rating: it moves by K. Its
    # `inherited_results` (category H) is unknown unless the list gives it.
    seeded=lambda params: {"ecf_status": FULL},
    unrated=pl.col("ecf_status") == NONE,
)
