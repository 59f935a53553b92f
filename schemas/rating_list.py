"""A monthly rating list, per scenario (README, Where the outputs land)."""

from __future__ import annotations

from typing import Annotated

import pandera.polars as pa
import polars as pl

#: The largest K a list publishes: 40, FIDE's newcomer and junior K since July 2014 (B.02 §8.3.3; 30 for newcomers
#: from July 2011, 25 before), and the largest any preset declares (tests/test_seed_values.py checks it). A seed list's
#: `k` is the K published on that list: a larger one is no list's (400 for 40), and is not read
#: (pipeline.ingest.registry.seed_problems). A list this pipeline writes holds its rule set's K, whatever it is.
LARGEST_LIST_K = 40

POOL_ENTRY = pl.Struct({"month": pl.Utf8, "games": pl.Int32, "points_x2": pl.Int32, "opponent_rating_sum": pl.Int64})


class RatingList(pa.DataFrameModel):
    """Monthly rating list: every player known to the pool, rated or not, after the month's games.

    List M is list M-1 plus the validated games of M, rated under the rule set the scenario gives for
    M (before July 2012 FIDE published lists every two or three months: in the months between, the
    list is carried unchanged and the games are rated on the next list). The first month starts from
    the seed list in `raw/players/`. A range run rates the months in order in one process; a later
    single month continues from the stored list of the month before, and fails if that month was never
    materialized.
    """

    player_id: pl.Int64 = pa.Field(gt=0, unique=True, description="FIDE id")
    rating: pl.Int32 = pa.Field(nullable=True, ge=0, le=4000, description="Published rating; null = unrated")
    change: pl.Int32 = pa.Field(
        nullable=True, description="Rating change this period (null when unrated before or after)"
    )
    correction: pl.Int32 = pa.Field(
        nullable=True,
        description=(
            "Points added on this list for corrections of games an earlier stored list rated (recalculation "
            "forward): rating = previous rating + change + correction; null when none"
        ),
    )
    k: pl.Int16 = pa.Field(
        nullable=True,
        ge=0,
        description=(
            "K factor for the next period, before the K x n cap (as FIDE lists it); null = derive from the rule set"
        ),
    )
    k_used: pl.Int16 = pa.Field(nullable=True, description="K applied this period, after the K x n cap")
    games: pl.Int32 = pa.Field(ge=0, description="Rated games this period (for a new rating: the games it rests on)")
    games_total: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description=(
            "Rated games since the player's first rating, pool included; null = unknown (treated as established)"
        ),
    )
    inactive: pl.Boolean = pa.Field(description="No rated game for the configured number of months (FIDE flag i)")
    delisted: pl.Boolean = pa.Field(description="Fell below the floor this period and became unrated")
    newly_rated: pl.Boolean = pa.Field(description="Received a first rating this period")
    birth_year: pl.Int32 = pa.Field(nullable=True, description="Year of birth (junior K)")
    ever_2400: pl.Boolean = pa.Field(
        description="A published rating has reached the rule set's k.elite_from (FIDE: 2400), so K 10 for good"
    )
    last_played: pl.Utf8 = pa.Field(
        nullable=True,
        description=(
            "Last month with a rated game (YYYY-MM); for a seeded player who has not played since, the month before "
            "the seed list's, from which the inactivity clock runs"
        ),
    )
    pending_games: pl.Int32 = pa.Field(ge=0, description="Unrated player: pooled games against rated opponents")
    pending_since: pl.Utf8 = pa.Field(nullable=True, description="Unrated player: first month of the pool")
    pending: Annotated[pl.List, POOL_ENTRY] = pa.Field(
        description="Unrated player: pooled results by month (games, half points, sum of opponent ratings)"
    )

    class Config:
        strict = True


class SystemRatingList(RatingList):
    """Monthly rating list of a scenario rated by a rating system (pipeline/systems): RatingList plus the system's
    estimate.

    One rating period per month (a month without games for a player is an idle period: the system grows
    the deviation when they next play). `rating` is the system's rating rounded half away from zero (the
    systems publish whole points); FIDE's columns a system has no notion of stay empty: `k`, `k_used`
    null, no pools, nobody delisted. The first month starts from the seed list in `raw/players/` (rated
    players at their seed rating). The unrounded state the next month starts from is
    `<scenario>/system_state`.
    """

    deviation: pl.Float64 = pa.Field(
        nullable=True,
        gt=0,
        description=(
            "Rating deviation RD as of the player's last rated month (Glicko, Glicko-2, Stephenson); the system "
            "grows it by the idle months when the player next plays; null without one"
        ),
    )
    volatility: pl.Float64 = pa.Field(
        nullable=True, gt=0, description="Rating volatility sigma (Glicko-2); null otherwise"
    )
