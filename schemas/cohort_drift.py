"""Rating drift of a stable cohort between two published rating lists (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class CohortDrift(pa.DataFrameModel):
    """One row per consecutive pair of lists: the median rating change of the steadily active adults on both."""

    transition: pl.Int32 = pa.Field(ge=1, unique=True, description="The pair, as PoolTransitions numbers it")
    from_list: pl.Utf8 = pa.Field(description="The earlier list, as named by the caller (its file)")
    to_list: pl.Utf8 = pa.Field(description="The later list")
    months: pl.Int32 = pa.Field(
        nullable=True, description="Months from the earlier list to the later; null when a list's date is unknown"
    )
    age_low: pl.Int32 = pa.Field(ge=0, description="Youngest age of the cohort, counted at the later list's year")
    age_high: pl.Int32 = pa.Field(ge=0, description="Oldest age of the cohort (inclusive)")
    activity: pl.Utf8 = pa.Field(
        description="The tests of activity the lists allowed: the inactive flag, games on the later list"
    )
    players: pl.Int64 = pa.Field(ge=0, description="Cohort size: players on both lists who pass every test")
    median_change: pl.Float64 = pa.Field(
        nullable=True, description="Median of later minus earlier rating over the cohort; null for an empty cohort"
    )
    annual_drift: pl.Float64 = pa.Field(
        nullable=True,
        description="median_change x 12 / months; null when the months are unknown or not positive",
    )
    note: pl.Utf8 = pa.Field(nullable=True, description="Why a figure is missing or limited, when it is")

    class Config:
        strict = True
