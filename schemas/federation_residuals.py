"""Each federation's players' actual minus expected score against other federations' players, per month."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class FederationResiduals(pa.DataFrameModel):
    """One row per month and federation of the registry in force: its players' sides of the month's games rated for
    both players against a player of another federation (both federations known), and the points they scored against
    the points the scenario expected of them (the rule set's, 400-point rule included).
    """

    month: pl.Utf8 = pa.Field(description="Rating period (YYYY-MM)")
    federation: pl.Utf8 = pa.Field(description="Three-letter federation code of the player (registry in force)")
    games: pl.Int64 = pa.Field(ge=0, description="Games of the federation's players against other federations'")
    score: pl.Float64 = pa.Field(ge=0, description="Points the federation's players scored in them")
    expected: pl.Float64 = pa.Field(ge=0, description="Points the scenario expected of them (rated_games' expected)")
    residual: pl.Float64 = pa.Field(description="score - expected: positive when the federation's players out-score")
    residual_per_game: pl.Float64 = pa.Field(description="residual / games, points per game")

    class Config:
        strict = True
