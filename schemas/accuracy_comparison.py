"""Predictive accuracy of scenarios side by side, against a baseline scenario (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class AccuracyComparison(pa.DataFrameModel):
    """One row per scenario: metrics pooled over its months and how often it beats the baseline."""

    scenario: pl.Utf8 = pa.Field(unique=True, description="Scenario")
    baseline: pl.Utf8 = pa.Field(
        nullable=True, description="Scenario compared against (normally 'actual'); null = no comparison"
    )
    months: pl.Int64 = pa.Field(ge=0, description="Months with an accuracy row for the scenario")
    player_months: pl.Int64 = pa.Field(ge=0, description="Player-months with a prediction, all months together")
    games: pl.Int64 = pa.Field(ge=0, description="Games with a prediction, all months together")
    mean_abs_error: pl.Float64 = pa.Field(
        nullable=True, ge=0, description="Pooled |actual - expected| total per player-month"
    )
    rmse: pl.Float64 = pa.Field(nullable=True, ge=0, description="Pooled RMSE of player-month totals (Kaggle 2010)")
    deviance: pl.Float64 = pa.Field(
        nullable=True, ge=0, description="Pooled mean capped log10 binomial deviance per game (Kaggle 2011)"
    )
    months_compared: pl.Int64 = pa.Field(
        nullable=True,
        ge=0,
        description=(
            "Months in which both the scenario and the baseline predicted at least one game: the months the "
            "shares come from; null for the baseline"
        ),
    )
    share_better_mean_abs_error: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="Share of compared months with a lower mean absolute error than the baseline",
    )
    share_better_rmse: pl.Float64 = pa.Field(
        nullable=True, ge=0, le=1, description="Share of compared months with a lower RMSE than the baseline"
    )
    share_better_deviance: pl.Float64 = pa.Field(
        nullable=True, ge=0, le=1, description="Share of compared months with a lower deviance than the baseline"
    )

    class Config:
        strict = True
