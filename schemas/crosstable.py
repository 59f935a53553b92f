"""Summary crosstable: rating band vs rating band, actual vs expected score (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class Crosstable(pa.DataFrameModel):
    """Summary crosstable of a month (Sonas 2023): 100-point bands of the rating used, 2500+ lumped.

    One row per (band, opponent band) cell: games between the bands, the row band's actual and expected
    score and the difference (positive = the row band over-performs); same-band games are excluded.
    Rows with opponent_band `all` are a band's totals against every other band, e.g. `+4.5% in 6,865
    games`. Only games rated for both sides count.
    """

    period: pl.Utf8 = pa.Field(description="Month (YYYY-MM) or window label the table covers")
    band: pl.Utf8 = pa.Field(description="Row band of the rating used, e.g. '1200-99' or '2500+'")
    band_low: pl.Int32 = pa.Field(description="Lowest rating of the row band")
    opponent_band: pl.Utf8 = pa.Field(description="Column band, or 'all' for the row summary")
    opponent_band_low: pl.Int32 = pa.Field(
        nullable=True, description="Lowest rating of the column band; null for 'all'"
    )
    games: pl.Int64 = pa.Field(ge=0, description="Games between the two bands (counted once per game)")
    score: pl.Float64 = pa.Field(ge=0, description="Points scored by the row band")
    expected: pl.Float64 = pa.Field(
        ge=0, description="Expected points of the row band (rule set's expectancy, 400-point rule included)"
    )
    score_pct: pl.Float64 = pa.Field(description="Actual score, percent")
    expected_pct: pl.Float64 = pa.Field(description="Expected score, percent")
    diff_pct: pl.Float64 = pa.Field(
        description="Actual minus expected, percentage points (positive = over-performance)"
    )

    class Config:
        strict = True
