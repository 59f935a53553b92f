"""Glicko (Glickman 1999): a rating and a rating deviation per player, monthly rating periods."""

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


class GlickoParams(SystemParams):
    init_rating: float = Field(1500.0, description="Step 1a: an unrated player's rating")
    init_rd: float = Field(350.0, gt=0, description="Step 1a: an unrated player's RD")
    c: float = Field(
        15.0, ge=0, description="Step 1b: RD growth per period without games, RD = min(sqrt(RD_old^2 + c^2 t), rd_max)"
    )
    rd_max: float = Field(350.0, gt=0, description="Step 1b: ceiling of the pre-period RD")
    rd_min: float = Field(
        0.0,
        ge=0,
        description="'Implementation issues': a floor under the post-period RD (Glickman suggests e.g. 30); 0 = none",
    )

    @model_validator(mode="after")
    def _bounds(self) -> GlickoParams:
        if self.init_rd > self.rd_max:
            raise ValueError("init_rd cannot exceed rd_max")
        return self


def pre_period_variance(players: pl.DataFrame, c: float, rd_max: float) -> pl.Expr:
    """Step 1b over t periods at once: RD^2 = min(RD_old^2 + c^2 t, rd_max^2), t = periods since the last rated one.

    A new player enters with (init_rating, init_rd) as if rated the period before, so t = 1 for him
    too (as PlayerRatings does); with init_rd = rd_max that is exactly Step 1a.
    """
    return pl.min_horizontal(pl.col("deviation").pow(2) + c * c * pl.col("lag"), pl.lit(rd_max * rd_max))


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: GlickoParams, period: int) -> pl.DataFrame:
    players = players.with_columns(variance=pre_period_variance(players, params.c, params.rd_max))
    sides = with_opponents(sides, players, ["rating", "variance"]).with_columns(g=glicko_g(pl.col("opp_variance")))
    # Step 2: E(s | r, r_j, RD_j), White's advantage inside the difference.
    sides = sides.with_columns(
        expected=glicko_expectancy(pl.col("g"), pl.col("own_rating") - pl.col("opp_rating") + signed_advantage(params))
    )
    sums = sides.group_by("player_id").agg(
        # d^2 = [q^2 sum g(RD_j)^2 E (1 - E)]^-1: summed here as 1/d^2.
        inv_d2=(Q * Q * pl.col("g").pow(2) * pl.col("expected") * (1.0 - pl.col("expected"))).sum(),
        gain=(pl.col("g") * (pl.col("score") - pl.col("expected"))).sum(),
    )
    # RD' = sqrt((1/RD^2 + 1/d^2)^-1); r' = r + q / (1/RD^2 + 1/d^2) sum g(RD_j)(s_j - E).
    return (
        players.join(sums, on="player_id", how="left")
        .with_columns(new_variance=1.0 / (1.0 / pl.col("variance") + pl.col("inv_d2")))
        .select(
            "player_id",
            rating=pl.col("rating") + Q * pl.col("new_variance") * pl.col("gain"),
            deviation=pl.max_horizontal(pl.col("new_variance").sqrt(), pl.lit(params.rd_min)),
        )
    )


SYSTEM = RatingSystem(
    name="glicko",
    description="Glicko: rating and RD, RD growing by c^2 per idle period up to rd_max; games of a period simultaneous",
    source="Glickman (1999), Applied Statistics 48, 377-394; 'The Glicko system' (PlayerRatings inst/doc/glicko.pdf)",
    params=GlickoParams,
    state_columns=("rating", "deviation"),
    initial=lambda params: {"rating": params.init_rating, "deviation": params.init_rd},
    expected=combined_deviation_expected,
    update=_update,
)
