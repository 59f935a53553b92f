"""A rating list against the generator's ground truth: offsets and rating-difference errors per band."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class TruthError(pa.DataFrameModel):
    """A scenario's list against the synthetic federation's true strengths (`truth/strength.parquet`).

    One row for the whole list (`all`) and one per 100-point band, per month: mean and spread of rating -
    strength, and the error of rating differences against strength differences (positive: rating gaps
    overstate strength gaps, i.e. favourites will under-perform). Empty for real data, which has no
    ground truth.
    """

    month: pl.Utf8 = pa.Field(description="Rating period (YYYY-MM)")
    band: pl.Utf8 = pa.Field(description="'all', or a rating band such as '1400-1499' or '2500+'")
    band_floor: pl.Int32 = pa.Field(nullable=True, description="Lowest rating of the band (null for 'all')")
    players: pl.Int64 = pa.Field(ge=0, description="Rated players on the list with a true strength that month")
    mean_rating: pl.Float64 = pa.Field(nullable=True, description="Mean published rating")
    mean_strength: pl.Float64 = pa.Field(nullable=True, description="Mean true strength")
    mean_offset: pl.Float64 = pa.Field(nullable=True, description="Mean of rating - strength")
    sd_offset: pl.Float64 = pa.Field(nullable=True, description="Standard deviation of rating - strength")
    pair_error_mean: pl.Float64 = pa.Field(
        nullable=True, description="Mean error of rating differences against strength differences"
    )
    pair_error_rms: pl.Float64 = pa.Field(nullable=True, description="Root mean square of that error")
    slope: pl.Float64 = pa.Field(
        nullable=True, description="'all' only: slope of rating on strength (1 = faithful scale)"
    )

    class Config:
        strict = True
