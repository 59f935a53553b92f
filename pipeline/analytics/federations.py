"""Federation residuals: each federation's players' actual minus expected score against other federations' players."""

from __future__ import annotations

import polars as pl

from pipeline.analytics.common import counted_for_both_sides, game_totals
from schemas.federation_residuals import FederationResiduals
from schemas.util import conform, empty_frame


def federation_residuals(rated_games: pl.DataFrame, federations: pl.DataFrame, month: str) -> pl.DataFrame:
    """The month's FederationResiduals: per federation, its players' points minus the points the scenario expected of
    them (rated_games' own expectations) in the games rated for both players against a player of another federation,
    with the games behind it. The FIDE-watchers' "cross-border federation residuals" (Zugzwang Foundation,
    Chess-ELO-Rating docs/research/PRIOR-WORK_2026-10-10.md G2-G4; ../shared/reference/systems-and-calendar.md 1.1),
    the per-federation view of the cross-federation Deflation Index (Ghita, The Rating Revolution, 2026, p. 50: 3.83 %
    across federations against 1.67 % within, 2025). `federations` is (player_id, federation) as the month's list
    names its players (publish.ranked_registry.federations_in_force: the registry in force, else the dumps); a player
    without one (empty or absent) counts for nobody, and a game within a federation is left out.
    """
    counted = counted_for_both_sides(rated_games)
    # The registry's players who played (a tenth of a fide-scale registry's 900,000) before the joins: each join would
    # hash the whole registry again (53 -> 28 ms a month).
    players = pl.concat([counted["white_id"], counted["black_id"]]).unique().cast(pl.Int64).to_frame("player_id")
    known = (
        federations.select(pl.col("player_id").cast(pl.Int64), pl.col("federation"))
        .join(players, on="player_id", how="semi")
        .filter(pl.col("federation").is_not_null() & (pl.col("federation") != ""))
    )
    sides = pl.concat(
        [
            counted.select(
                player=pl.col("white_id"), opponent=pl.col("black_id"), score="white_score", expected="white_expected"
            ),
            counted.select(
                player=pl.col("black_id"),
                opponent=pl.col("white_id"),
                score=1.0 - pl.col("white_score"),
                expected=pl.col("black_expected"),
            ),
        ]
    )
    # Left order kept through both joins: in_order_sum then adds each federation's floats in the same order every run.
    across = (
        sides.join(known, left_on="player", right_on="player_id", maintain_order="left")
        .join(
            known.rename({"federation": "opponent_federation"}),
            left_on="opponent",
            right_on="player_id",
            maintain_order="left",
        )
        .filter(pl.col("federation") != pl.col("opponent_federation"))
    )
    if across.is_empty():
        return empty_frame(FederationResiduals)
    totals = across.group_by("federation").agg(game_totals()).sort("federation")
    rows = totals.with_columns(month=pl.lit(month), residual=pl.col("score") - pl.col("expected")).with_columns(
        residual_per_game=pl.col("residual") / pl.col("games")
    )
    return conform(rows, FederationResiduals)
