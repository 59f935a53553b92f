"""Score vs rating difference: the favourite's actual vs expected score by rating-advantage bin (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class ScoreCurve(pa.DataFrameModel):
    """One row per rating-advantage bin of one period (month, year or window such as '2008-12')."""

    period: pl.Utf8 = pa.Field(description="Month (YYYY-MM), year or window label the curve covers")
    bin: pl.Utf8 = pa.Field(description="Rating-advantage bin, e.g. '0-49', '350-399', or '800+' for the open last bin")
    bin_low: pl.Int32 = pa.Field(ge=0, description="Lowest advantage of the bin: |White's rating used - Black's|")
    games: pl.Int64 = pa.Field(ge=0, description="Games rated for both sides whose advantage falls in the bin")
    score: pl.Float64 = pa.Field(
        ge=0, description="Points scored by the favourite (higher-rated side); equal ratings count 0.5"
    )
    expected: pl.Float64 = pa.Field(
        ge=0, description="Favourite's expected points under the rule set (400-point rule included)"
    )
    score_pct: pl.Float64 = pa.Field(description="Favourite's actual score, percent")
    expected_pct: pl.Float64 = pa.Field(description="Favourite's expected score, percent")
    diff_pct: pl.Float64 = pa.Field(
        description="Actual minus expected, percentage points (negative = favourites under-perform)"
    )

    class Config:
        strict = True
