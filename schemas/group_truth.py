"""The points ledger's groups over a year: the points they gained in games beside their true strength change."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class GroupTruth(pa.DataFrameModel):
    """One row per December list of a scenario, grouping and group: the players rated on the list a year before who
    played a rated game in the year, grouped on that list as points_flow groups the sides (kind: newcomer, junior,
    adult; band: 200 points), their rating points gained in the year's games and, on generated data, their change of
    true strength over the same year. The other months have none.
    """

    month: pl.Utf8 = pa.Field(description="The list (YYYY-12): the year's last period")
    year: pl.Int32 = pa.Field(description="The year the change covers")
    grouping: pl.Utf8 = pa.Field(isin=["kind", "band"], description="kind: newcomer, junior, adult; band: 200 points")
    group: pl.Utf8 = pa.Field(description="The group on the list a year before (kind, or band such as '1800-1999')")
    players: pl.Int64 = pa.Field(ge=0, description="Players of the group who played a rated game in the year")
    games: pl.Int64 = pa.Field(ge=0, description="Their rated games in the year")
    points: pl.Float64 = pa.Field(
        description="Rating points their sides of the year's games moved: sum of K x weight x (score - expected), "
        "before rounding and without one-time events (a rating system: its lists' change)"
    )
    true_change: pl.Float64 = pa.Field(
        nullable=True, description="Generated data: sum of their true strength changes over the year; null otherwise"
    )
    gap: pl.Float64 = pa.Field(
        nullable=True, description="points - true_change: positive when the group gained more points than strength"
    )

    class Config:
        strict = True
