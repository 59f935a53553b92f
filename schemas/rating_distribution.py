"""Rating distribution of one list: rated players per rating bin (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class RatingDistribution(pa.DataFrameModel):
    """One row per bin from the lowest to the highest occupied bin of one list (empty bins included)."""

    period: pl.Utf8 = pa.Field(
        description="Which list: its period or a label such as 'January 2024' or 'after compression'"
    )
    bin_low: pl.Int32 = pa.Field(ge=0, description="Lowest rating of the bin (inclusive)")
    bin_high: pl.Int32 = pa.Field(ge=0, description="Highest rating of the bin (inclusive)")
    players: pl.Int64 = pa.Field(ge=0, description="Rated players whose rating falls in the bin")
    share_pct: pl.Float64 = pa.Field(
        ge=0, le=100, description="Players in the bin as a percentage of the list's rated players counted"
    )

    class Config:
        strict = True
