"""The Deflation Index of a month: the favourites' expected minus actual score, percent, by band (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class DeflationIndex(pa.DataFrameModel):
    """One row per band of the favourite's rating used, and one for every band ('all'), of one month's games rated for
    both sides between unequal ratings.
    """

    month: pl.Utf8 = pa.Field(description="Rating period (YYYY-MM)")
    band: pl.Utf8 = pa.Field(description="The favourite's 200-point band of its rating used ('1800-1999'), or 'all'")
    games: pl.Int64 = pa.Field(ge=0, description="Games rated for both sides, between unequal ratings")
    expected: pl.Float64 = pa.Field(ge=0, description="The favourites' expected points (the rule set's)")
    score: pl.Float64 = pa.Field(ge=0, description="The favourites' points")
    index_pct: pl.Float64 = pa.Field(
        nullable=True, description="100 x (expected - score) / games: positive when favourites under-score (deflation)"
    )

    class Config:
        strict = True
