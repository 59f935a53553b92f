"""Elo with a logistic expectancy and one constant K for everybody (PlayerRatings' elo(); the evaluation's baseline)."""

from __future__ import annotations

import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, SystemParams, logistic_expectancy, signed_advantage, with_opponents


class EloParams(SystemParams):
    init_rating: float = 2200.0
    k: float = Field(27.0, ge=0, description="development coefficient for every player and game")
    scale: float = Field(400.0, gt=0, description="rating difference at which the favourite's odds are 10 to 1")


def _expected(params: EloParams) -> pl.Expr:
    return logistic_expectancy(pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"), params.scale)


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: EloParams, period: int) -> pl.DataFrame:
    sides = with_opponents(sides, players, ["rating"]).with_columns(
        expected=logistic_expectancy(
            pl.col("own_rating") - pl.col("opp_rating") + signed_advantage(params), params.scale
        )
    )
    # R_n = R_o + K (W - W_e), the period's games summed (all games of a period are simultaneous).
    change = sides.group_by("player_id").agg(delta=(pl.col("score") - pl.col("expected")).sum())
    return (
        players.select("player_id", "rating")
        .join(change, on="player_id", how="left")
        .select("player_id", rating=pl.col("rating") + params.k * pl.col("delta").fill_null(0.0))
    )


SYSTEM = RatingSystem(
    name="elo",
    description=(
        "Elo: logistic expectancy (scale 400), constant K (27, PlayerRatings' default), optional White advantage"
    ),
    source="Elo, The Rating of Chessplayers (1978) 8.4; PlayerRatings elo() (Stephenson & Sonas)",
    params=EloParams,
    state_columns=("rating",),
    initial=lambda params: {"rating": params.init_rating},
    expected=_expected,
    update=_update,
)
