"""Glicko-2 (Glickman 2001; worked example 2012/2013): rating, deviation and volatility per player, monthly periods."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
from pydantic import Field, model_validator

from pipeline.systems import RatingSystem, SystemParams, combined_deviation_expected, signed_advantage, with_opponents

#: Step 2: mu = (r - 1500) / 173.7178, phi = RD / 173.7178.
SCALE = 173.7178
# The Illinois iteration halves the bracket at worst every other step; 200 steps is far beyond the
# paper's observed maximum of 19 and only guards against a NaN input looping forever.
MAX_ITERATIONS = 200


class Glicko2Params(SystemParams):
    init_rating: float = Field(1500.0, description="Step 1a: an unrated player's rating")
    init_rd: float = Field(350.0, gt=0, description="Step 1a: an unrated player's RD")
    init_volatility: float = Field(0.06, gt=0, description="Step 1a: an unrated player's volatility sigma")
    tau: float = Field(
        0.5,
        gt=0,
        description=(
            "Step 1: system constant constraining volatility change ('reasonable choices are between 0.3 and 1.2')"
        ),
    )
    rd_max: float = Field(
        350.0, gt=0, description="ceiling of the RD (Glicko's 350; the volatility is bounded by rd_max/173.7178 too)"
    )
    rd_min: float = Field(
        0.0, ge=0, description="floor under the stored RD (Glickman's Glicko advice, e.g. 30); 0 = none"
    )
    tolerance: float = Field(
        1e-6, gt=0, description="Step 5.1: convergence tolerance epsilon of the Illinois iteration"
    )

    @model_validator(mode="after")
    def _bounds(self) -> Glicko2Params:
        if self.init_rd > self.rd_max:
            raise ValueError("init_rd cannot exceed rd_max")
        return self


def new_volatility(
    delta: np.ndarray, phi2: np.ndarray, v: np.ndarray, sigma: np.ndarray, tau: float, eps: float
) -> np.ndarray:
    """Step 5 (revised 22 February 2012), for many players at once: sigma' by the Illinois algorithm."""
    a = np.log(sigma**2)
    tau2 = tau * tau

    def f(x: np.ndarray) -> np.ndarray:
        # f(x) = e^x (Delta^2 - phi^2 - v - e^x) / (2 (phi^2 + v + e^x)^2) - (x - a) / tau^2
        ex = np.exp(x)
        return ex * (delta**2 - phi2 - v - ex) / (2.0 * (phi2 + v + ex) ** 2) - (x - a) / tau2

    # 5.2: A = a; B = ln(Delta^2 - phi^2 - v) if Delta^2 > phi^2 + v, else a - k tau for the first
    # k = 1, 2, ... with f(a - k tau) >= 0.
    big = delta**2 > phi2 + v
    A = a.copy()
    B = np.where(big, np.log(np.where(big, delta**2 - phi2 - v, 1.0)), a - tau)
    searching = ~big & (f(B) < 0)
    k = 1
    while searching.any() and k < MAX_ITERATIONS:
        k += 1
        B = np.where(searching, a - k * tau, B)
        searching &= f(B) < 0
    A = illinois_root(f, A, B, eps)
    # 5.5: sigma' = e^(A/2).
    return np.exp(A / 2.0)


def illinois_root(f: Callable[[np.ndarray], np.ndarray], A: np.ndarray, B: np.ndarray, eps: float) -> np.ndarray:
    """Step 5.4 of Glickman, "Example of the Glicko-2 system" (revised 22 February 2012; 30 November 2013 edition):
    the Illinois iteration from the bracket (A, B), each element on its own, returning the final A.

    (a) C = A + (A - B) f_A / (f_B - f_A); (b) if f_C f_B <= 0, then A <- B and f_A <- f_B, otherwise just
    f_A <- f_A / 2; (c) B <- C and f_B <- f_C; (d) stop when |B - A| <= epsilon. Step (b) is `<= 0`, not `< 0`:
    when f is exactly 0 at C the root is C, and only taking A <- B lets the bracket close on it; with `< 0` A
    stays on its stale value while f_A is halved and B sits at the root, so |B - A| never shrinks.
    """
    fA, fB = f(A), f(B)
    active = np.abs(B - A) > eps
    for _ in range(MAX_ITERATIONS):
        if not active.any():
            break
        C = A + (A - B) * fA / (fB - fA)
        fC = f(C)
        swap = active & (fC * fB <= 0)
        A = np.where(swap, B, A)
        fA = np.where(swap, fB, np.where(active, fA / 2.0, fA))
        B = np.where(active, C, B)
        fB = np.where(active, fC, fB)
        active = np.abs(B - A) > eps
    return A


def _g(phi2: pl.Expr) -> pl.Expr:
    # Step 3: g(phi) = 1 / sqrt(1 + 3 phi^2 / pi^2).
    return 1.0 / (1.0 + 3.0 * phi2 / np.pi**2).sqrt()


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: Glicko2Params, period: int) -> pl.DataFrame:
    phi_max2 = (params.rd_max / SCALE) ** 2
    players = players.with_columns(
        mu=(pl.col("rating") - 1500.0) / SCALE,
        # Step 6 for each idle period ("only Step 6 applies": phi' = sqrt(phi^2 + sigma^2)), bounded like Glicko's RD.
        phi2=pl.min_horizontal(
            (pl.col("deviation") / SCALE).pow(2) + (pl.col("lag") - 1) * pl.col("volatility").pow(2), pl.lit(phi_max2)
        ),
    )
    sides = with_opponents(sides, players, ["mu", "phi2"]).with_columns(g=_g(pl.col("opp_phi2")))
    # Step 3: E(mu, mu_j, phi_j) = 1 / (1 + exp(-g(phi_j)(mu - mu_j))), White's advantage on the same scale.
    sides = sides.with_columns(
        expected=1.0
        / (1.0 + (-pl.col("g") * (pl.col("own_mu") - pl.col("opp_mu") + signed_advantage(params) / SCALE)).exp())
    )
    sums = sides.group_by("player_id").agg(
        info=(pl.col("g").pow(2) * pl.col("expected") * (1.0 - pl.col("expected"))).sum(),
        gain=(pl.col("g") * (pl.col("score") - pl.col("expected"))).sum(),
    )
    frame = players.join(sums, on="player_id", how="left").with_columns(v=1.0 / pl.col("info"))  # Step 3: v
    frame = frame.with_columns(delta=pl.col("v") * pl.col("gain"))  # Step 4: Delta = v sum g (s - E)
    sigma = new_volatility(
        frame["delta"].to_numpy(),
        frame["phi2"].to_numpy(),
        frame["v"].to_numpy(),
        frame["volatility"].to_numpy(),
        params.tau,
        params.tolerance,
    )
    sigma = np.minimum(sigma, params.rd_max / SCALE)
    frame = (
        frame.with_columns(sigma=pl.Series(sigma))
        .with_columns(
            phi_star2=pl.col("phi2") + pl.col("sigma").pow(2)  # Step 6: phi* = sqrt(phi^2 + sigma'^2)
        )
        .with_columns(
            # Step 7: phi' = 1 / sqrt(1/phi*^2 + 1/v), mu' = mu + phi'^2 sum g (s - E).
            phi_new2=pl.min_horizontal(1.0 / (1.0 / pl.col("phi_star2") + 1.0 / pl.col("v")), pl.lit(phi_max2))
        )
    )
    # Step 8: back to the Glicko scale.
    return frame.select(
        "player_id",
        rating=(pl.col("mu") + pl.col("phi_new2") * pl.col("gain")) * SCALE + 1500.0,
        deviation=pl.max_horizontal(pl.col("phi_new2").sqrt() * SCALE, pl.lit(params.rd_min)),
        volatility=pl.col("sigma"),
    )


SYSTEM = RatingSystem(
    name="glicko2",
    description=(
        "Glicko-2: rating, RD and volatility (tau), RD growing by sigma^2 per idle period; games of a period "
        "simultaneous"
    ),
    source=(
        "Glickman (2001), J. Applied Statistics 28, 673-689; 'Example of the Glicko-2 system' (PlayerRatings "
        "inst/doc/glicko2.pdf)"
    ),
    params=Glicko2Params,
    state_columns=("rating", "deviation", "volatility"),
    initial=lambda params: {
        "rating": params.init_rating,
        "deviation": params.init_rd,
        "volatility": params.init_volatility,
    },
    # Glickman gives no Glicko-2 prediction formula; the Glicko one on the same (Elo) scale is it (g is scale-free).
    expected=combined_deviation_expected,
    update=_update,
)
