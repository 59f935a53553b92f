"""The Stephenson rating system (Kaggle 2011 FIDE-prize winner as PlayerRatings' steph()).

Glicko plus per-game RD growth, a bonus and a pull to the opponents.
"""

from __future__ import annotations

import polars as pl
from pydantic import Field, model_validator

from pipeline.systems import (
    Q,
    RatingSystem,
    SystemParams,
    combined_deviation_expected,
    glicko_expectancy,
    glicko_g,
    signed_advantage,
    with_opponents,
)
from pipeline.systems.glicko import pre_period_variance


class StephensonParams(SystemParams):
    """Names and units as steph()'s arguments: cval = sqrt(c), hval = sqrt(h), bval = 100 b, lambda = 100 lambda."""

    init_rating: float = Field(2200.0, description="a new player's rating (steph() default)")
    init_rd: float = Field(300.0, gt=0, description="a new player's rating deviation (steph() default)")
    cval: float = Field(
        10.0, ge=0, description="Step 1: variance growth per period since the last game, v = v + c t, c = cval^2"
    )
    hval: float = Field(10.0, ge=0, description="Step 2: variance growth per game of the period, v + h m, h = hval^2")
    bval: float = Field(0.0, ge=0, description="Step 2: bonus per game b = bval/100 added to each score (inflationary)")
    lambda_: float = Field(
        2.0, ge=0, alias="lambda", description="Step 2: neighbourhood pull lambda/100 toward the average opponent"
    )
    rd_max: float = Field(
        350.0, gt=0, description="Step 1's ceiling on the deviation (so that h = b = lambda = 0 is Glicko)"
    )

    @model_validator(mode="after")
    def _bounds(self) -> StephensonParams:
        if self.init_rd > self.rd_max:
            raise ValueError("init_rd cannot exceed rd_max")
        return self


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: StephensonParams, period: int) -> pl.DataFrame:
    # Step 1 (ChessRatings.pdf appendix): v = v + c t, t periods since the player last competed, capped at rd_max^2.
    players = players.with_columns(variance=pre_period_variance(players, params.cval, params.rd_max))
    sides = with_opponents(sides, players, ["rating", "variance"]).with_columns(k=glicko_g(pl.col("opp_variance")))
    # e_j = 1 / (1 + 10^(-k_j (r - r_j + gamma w_j)/400)), w_j = +1 White, -1 Black, 0 unknown: Glicko's Step 2.
    sides = sides.with_columns(
        expected=glicko_expectancy(pl.col("k"), pl.col("own_rating") - pl.col("opp_rating") + signed_advantage(params))
    )
    bonus = params.bval / 100.0
    sums = sides.group_by("player_id").agg(
        d=(
            Q * Q * pl.col("k").pow(2) * pl.col("expected") * (1.0 - pl.col("expected"))
        ).sum(),  # d = q^2 sum k_j^2 e_j (1 - e_j)
        gain=(pl.col("k") * (pl.col("score") - pl.col("expected") + bonus)).sum(),
        mean_opponent=pl.col("opp_rating").mean(),  # r-bar = (sum r_j) / m
    )
    h = params.hval * params.hval
    # v* = (1/(v + h m) + d)^-1; r* = r + q v* sum k_j (s_j - e_j + b) + lambda (r-bar - r).
    return (
        players.join(sums, on="player_id", how="left")
        .with_columns(new_variance=1.0 / (1.0 / (pl.col("variance") + h * pl.col("period_games")) + pl.col("d")))
        .select(
            "player_id",
            rating=pl.col("rating")
            + Q * pl.col("new_variance") * pl.col("gain")
            + params.lambda_ / 100.0 * (pl.col("mean_opponent") - pl.col("rating")),
            deviation=pl.col("new_variance").sqrt(),
        )
    )


SYSTEM = RatingSystem(
    name="stephenson",
    description=(
        "Stephenson: Glicko with per-game deviation growth (hval), per-game bonus (bval) and a pull toward the "
        "opponents (lambda)"
    ),
    source=(
        "A. Stephenson, 'Comparing predictive performance of chess ratings with the PlayerRatings package' "
        "(2012), appendix; PlayerRatings steph()"
    ),
    params=StephensonParams,
    state_columns=("rating", "deviation"),
    initial=lambda params: {"rating": params.init_rating, "deviation": params.init_rd},
    expected=combined_deviation_expected,  # the appendix's "Prediction": k_ab from v_a + v_b
    update=_update,
)
