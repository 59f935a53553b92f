"""The yearly rating drift of a scenario's stable cohort of adults, beside its true drift (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class YearlyDrift(pa.DataFrameModel):
    """One row per December list of a scenario (the list FIDE publishes on 1 January): the median rating change over
    the year of the steadily active adults on both that list and the one a year before; the other months have none.
    """

    month: pl.Utf8 = pa.Field(unique=True, description="The list (YYYY-12): the year's last period")
    year: pl.Int32 = pa.Field(description="The year the change covers")
    age_low: pl.Int32 = pa.Field(ge=0, description="Youngest age of the cohort in that year")
    age_high: pl.Int32 = pa.Field(ge=0, description="Oldest age of the cohort (inclusive)")
    players: pl.Int64 = pa.Field(ge=0, description="Cohort size")
    median_change: pl.Float64 = pa.Field(nullable=True, description="Median rating change over the year; null: empty")
    mean_change: pl.Float64 = pa.Field(nullable=True, description="Mean rating change over the year")
    true_median_change: pl.Float64 = pa.Field(
        nullable=True, description="Generated data: the same cohort's median change of true strength; null otherwise"
    )
    true_mean_change: pl.Float64 = pa.Field(nullable=True, description="Generated data: its mean change of strength")

    class Config:
        strict = True
