"""Band-vs-band trend: how one rating range scores against another, year by year (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class BandTrend(pa.DataFrameModel):
    """One row per year and band pair, e.g. 1400-1599 (usually the underdog) vs 2000-2199."""

    period: pl.Utf8 = pa.Field(str_matches=r"^\d{4}$", description="Calendar year (YYYY) of the games' rating periods")
    pair: pl.Utf8 = pa.Field(description="Pair label, e.g. '1400-1599 vs 2000-2199'")
    band: pl.Utf8 = pa.Field(description="Row band (whose score is shown), e.g. '1400-1599'")
    opponent_band: pl.Utf8 = pa.Field(description="Opponent band, e.g. '2000-2199'")
    band_low: pl.Int32 = pa.Field(description="Lowest rating used of the row band (inclusive)")
    band_high: pl.Int32 = pa.Field(description="Highest rating used of the row band (inclusive)")
    opponent_low: pl.Int32 = pa.Field(description="Lowest rating used of the opponent band (inclusive)")
    opponent_high: pl.Int32 = pa.Field(description="Highest rating used of the opponent band (inclusive)")
    games: pl.Int64 = pa.Field(ge=0, description="Games between the two bands, rated for both sides")
    score: pl.Float64 = pa.Field(ge=0, description="Points scored by the row band")
    expected: pl.Float64 = pa.Field(
        ge=0, description="Row band's expected points under the rule set (400-point rule included)"
    )
    score_pct: pl.Float64 = pa.Field(description="Row band's actual score, percent")
    expected_pct: pl.Float64 = pa.Field(description="Row band's expected score, percent")
    diff_pct: pl.Float64 = pa.Field(
        description="Actual minus expected, percentage points (positive = row band over-performs)"
    )

    class Config:
        strict = True
