"""Pool ledger between published rating lists: entries, exits and rating changes by group (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

POOL_DIMENSIONS = ["all", "band", "age", "federation"]


class PoolTransitions(pa.DataFrameModel):
    """One row per consecutive pair of lists and group of players.

    A player is on a list when the list gives them a rating (inactive players included). An entrant is
    grouped by what the later list says of them, everybody else by the earlier list; ages are counted at
    the later list's year. Each row balances: points_after - points_before = points_entered - points_left +
    stayers_change, and the groups of one dimension add up to the pair's `all` row.
    """

    transition: pl.Int32 = pa.Field(ge=1, description="1 for the first and second list given, 2 for the next pair...")
    from_list: pl.Utf8 = pa.Field(description="The earlier list, as named by the caller (its file)")
    to_list: pl.Utf8 = pa.Field(description="The later list")
    from_period: pl.Utf8 = pa.Field(
        nullable=True, str_matches=r"^\d{4}-\d{2}$", description="YYYY-MM of the earlier list; null = unknown"
    )
    to_period: pl.Utf8 = pa.Field(
        nullable=True, str_matches=r"^\d{4}-\d{2}$", description="YYYY-MM of the later list; null = unknown"
    )
    dimension: pl.Utf8 = pa.Field(
        isin=POOL_DIMENSIONS,
        description="all (the whole pool), band (200-point band of the rating), age (junior, adult, senior, "
        "unknown) or federation (the largest federations of the later list, then other and unknown)",
    )
    group: pl.Utf8 = pa.Field(description="The group within the dimension, e.g. 'all', '1800-1999', 'adult', 'GER'")
    entered: pl.Int64 = pa.Field(ge=0, description="Players on the later list only")
    left: pl.Int64 = pa.Field(ge=0, description="Players on the earlier list only")
    changed: pl.Int64 = pa.Field(ge=0, description="Players on both lists whose rating differs")
    unchanged: pl.Int64 = pa.Field(ge=0, description="Players on both lists with the same rating")
    points_before: pl.Int64 = pa.Field(
        ge=0, description="Earlier ratings of the group's leavers and stayers (the `all` row: the earlier list's total)"
    )
    points_after: pl.Int64 = pa.Field(
        ge=0, description="Later ratings of the group's stayers and entrants (the `all` row: the later list's total)"
    )
    points_entered: pl.Int64 = pa.Field(ge=0, description="Rating points the entrants bring: their later ratings")
    points_left: pl.Int64 = pa.Field(ge=0, description="Rating points the leavers take away: their earlier ratings")
    stayers_change: pl.Int64 = pa.Field(
        description="Net change of the players on both lists: sum of later minus earlier ratings"
    )
    stayers_gained: pl.Int64 = pa.Field(ge=0, description="Sum of the stayers' rises")
    stayers_lost: pl.Int64 = pa.Field(ge=0, description="Sum of the stayers' falls, as a positive number")
    net_change: pl.Int64 = pa.Field(
        description="points_after - points_before = points_entered - points_left + stayers_change"
    )

    class Config:
        strict = True
