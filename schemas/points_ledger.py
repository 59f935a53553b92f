"""The pool's rating points, list to list: where they came from and where they went (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class PointsLedger(pa.DataFrameModel):
    """One row per list of a rule-set scenario: the change of the pool's total rating points from the list before,
    split into channels that add up to it exactly.

    The pool is the published list's active part: the players with a rating, not flagged inactive. pool_after -
    pool_before = games_change + corrections + one_time_events + newcomers + seeded + returning - became_inactive -
    delisted - left_the_list; `unexplained` is that identity's remainder, 0 when every point is accounted for (the
    blocking `ledger_balance` check). games_change splits into games_not_zero_sum + games_rounding (floats).
    """

    month: pl.Utf8 = pa.Field(unique=True, description="Rating period (YYYY-MM): the list after its games")
    players_before: pl.Int64 = pa.Field(ge=0, description="Players in the pool on the list before")
    players_after: pl.Int64 = pa.Field(ge=0, description="Players in the pool on this list")
    pool_before: pl.Int64 = pa.Field(description="Total rating points of the pool on the list before")
    pool_after: pl.Int64 = pa.Field(description="Total rating points of the pool on this list")
    pool_change: pl.Int64 = pa.Field(description="pool_after - pool_before")
    games_change: pl.Int64 = pa.Field(
        description="Sum of the rounded changes from this period's games of every player who was or is in the pool"
    )
    games_points_moved: pl.Float64 = pa.Field(
        ge=0,
        description="Points won in games, before rounding: the sum of every counting side's positive K x W x (S - E)",
    )
    games_not_zero_sum: pl.Float64 = pa.Field(
        description=(
            "Sum over counting sides of K x W x (S - E), before rounding: nonzero where the two players' K differ, "
            "where a game counts for one side only, or where a capped difference applies to one side only"
        )
    )
    games_rounding: pl.Float64 = pa.Field(description="games_change - games_not_zero_sum: what rounding added")
    corrections: pl.Int64 = pa.Field(
        description="Points added on this list for corrections of games an earlier stored list rated"
    )
    one_time_events: pl.Int64 = pa.Field(description="Points a one-time event of the month added (the compression)")
    newcomers: pl.Int64 = pa.Field(description="First ratings of the players rated for the first time, as rated")
    seeded: pl.Int64 = pa.Field(
        description="Ratings of players who joined rated without a first rating: seeded from the standard list"
    )
    returning: pl.Int64 = pa.Field(description="Ratings on the list before of inactive players who played again")
    became_inactive: pl.Int64 = pa.Field(description="Ratings of the pool's players flagged inactive on this list")
    delisted: pl.Int64 = pa.Field(
        description="Ratings after their games (and corrections) of the players who fell below the floor"
    )
    left_the_list: pl.Int64 = pa.Field(description="Ratings of pool players absent from this list (none by design)")
    unexplained: pl.Int64 = pa.Field(description="pool_change minus every channel: 0 when the ledger balances")

    class Config:
        strict = True


class PointsFlow(pa.DataFrameModel):
    """One row per list, grouping, group and opponent group: the rating points a group's players won (positive) or
    lost in this period's games against the opponent group's, before rounding. The rows of one grouping add up to the
    ledger's games_not_zero_sum.
    """

    month: pl.Utf8 = pa.Field(description="Rating period (YYYY-MM)")
    grouping: pl.Utf8 = pa.Field(isin=["kind", "band"], description="kind: newcomer, junior, adult; band: 200 points")
    group: pl.Utf8 = pa.Field(description="The side's group on the list in force (kind, or band such as '1800-1999')")
    opponent_group: pl.Utf8 = pa.Field(description="The opponent's group (unrated opponents: 'unrated')")
    sides: pl.Int64 = pa.Field(ge=0, description="Counting sides of the group's players against that group")
    points: pl.Float64 = pa.Field(description="Sum of K x W x (S - E) over those sides")

    class Config:
        strict = True
