"""The evaluation leaderboard: every scenario's rule set or system predicting the same held-out months, best first."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class Leaderboard(pa.DataFrameModel):
    """Every scenario's rule set or rating system predicting the same held-out months: one row each, best first.

    Train: every stored month but the last `test_months` (12 by default, at most half the months); each
    scenario's chain as stored up to the last training month (`train_to`) is frozen (its list, and a
    system's state). Test: every game of the test months is predicted from the frozen ratings
    (pipeline/evaluation/protocol.py's metrics): Kaggle 2011 capped log10 deviance, PlayerRatings' bdev, Kaggle
    2010 player-month RMSE and Sonas's mean absolute error, all over the common games (every scenario
    predicts both sides of them), so rows compare on equal terms. Lower is better for each metric. Also
    written to `reports/evaluation/leaderboard.html`, linked from `reports/index.html`.
    """

    rank: pl.Int64 = pa.Field(
        ge=1,
        nullable=True,
        description="Order by deviance_log10, best (lowest) first; empty: no metric, or a national scenario (restrict),"
        " scored on its federation's common games only, not ranked",
    )
    scenario: pl.Utf8 = pa.Field(unique=True, description="Scenario name")
    kind: pl.Utf8 = pa.Field(
        isin=["rule set", "system"], description="Rated by FIDE-style rule sets or by a rating system"
    )
    setting: pl.Utf8 = pa.Field(description="The rule set(s) of the test months, or the system and its parameters")
    train_from: pl.Utf8 = pa.Field(description="First training month (YYYY-MM)")
    train_to: pl.Utf8 = pa.Field(
        description="Last training month: its stored list (and state) is frozen and predicts every test game"
    )
    train_games: pl.Int64 = pa.Field(ge=0, description="Validated games of the training months")
    test_from: pl.Utf8 = pa.Field(description="First test month")
    test_to: pl.Utf8 = pa.Field(description="Last test month")
    test_games: pl.Int64 = pa.Field(ge=0, description="Validated games of the test months, every time control")
    predicted_games: pl.Int64 = pa.Field(
        ge=0, description="Test games this scenario predicts for both sides (rated players, rated time control)"
    )
    common_games: pl.Int64 = pa.Field(
        ge=0, description="Test games every scenario predicts for both sides: the games the metrics are over"
    )
    player_months: pl.Int64 = pa.Field(ge=0, description="Player-months of the common games")
    deviance_log10: pl.Float64 = pa.Field(
        nullable=True, description="Kaggle 2011: mean capped log10 binomial deviance per game (lower is better)"
    )
    bdev: pl.Float64 = pa.Field(
        nullable=True,
        description="PlayerRatings' bdev: 100 x deviance_log10 / log10 2, a coin flip is 100 (lower is better)",
    )
    player_month_rmse: pl.Float64 = pa.Field(
        nullable=True,
        description="Kaggle 2010: RMSE of predicted minus actual points per player-month (lower is better)",
    )
    mean_abs_error: pl.Float64 = pa.Field(
        nullable=True, description="Sonas: mean |actual - expected points| per player-month (lower is better)"
    )

    class Config:
        strict = True
