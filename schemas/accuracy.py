"""Predictive accuracy of one scenario's ratings in one month (docs/analytics.md)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class Accuracy(pa.DataFrameModel):
    """How well a scenario's ratings predicted a month's results (Sonas; Kaggle 2010 and 2011).

    Per player-month: error = points scored - points expected under the scenario's rules; total and mean
    absolute error, RMSE; per game the capped log10 binomial deviance (predictions clipped to
    [0.01, 0.99]). Lower is better. One row per month and scenario; the sums are additive so windows
    pool exactly.
    """

    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Rating period (YYYY-MM)")
    scenario: pl.Utf8 = pa.Field(description="Scenario whose ratings and expectancy made the predictions")
    players: pl.Int64 = pa.Field(ge=0, description="Player-months: players with at least one predicted game this month")
    games: pl.Int64 = pa.Field(ge=0, description="Games with at least one predicted side")
    sides: pl.Int64 = pa.Field(ge=0, description="Predicted (player, game) sides: 1 or 2 per game")
    total_abs_error: pl.Float64 = pa.Field(
        ge=0, description="Sonas: sum over players of |sum of scores - sum of expected scores|"
    )
    sum_squared_error: pl.Float64 = pa.Field(
        ge=0, description="Sum over players of (sum of scores - sum of expected scores)^2"
    )
    deviance_sum: pl.Float64 = pa.Field(ge=0, description="Sum over games of the capped log10 binomial deviance")
    mean_abs_error: pl.Float64 = pa.Field(
        nullable=True, ge=0, description="total_abs_error / players; null without predictions"
    )
    rmse: pl.Float64 = pa.Field(
        nullable=True, ge=0, description="Kaggle 2010: sqrt(sum_squared_error / players); null without predictions"
    )
    deviance: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        description="Kaggle 2011: deviance_sum / games (predictions clipped to [0.01, 0.99]); null without predictions",
    )

    class Config:
        strict = True
