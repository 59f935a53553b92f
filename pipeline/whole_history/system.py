"""Whole-History Rating as a scenario's rating system (`system: whr`): its parameters and what a chain reads of it."""

from __future__ import annotations

import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, logistic_expectancy
from pipeline.whole_history.whr import WhrParams


class WhrScenarioParams(WhrParams):
    """WhrParams plus the full sweeps of a monthly chain: month by month, only the month's players are swept, and
    the rest of the history catches up slowly (docs/results.md); `full_sweeps_every` months it is swept whole.
    """

    full_sweeps_every: int = Field(
        0,
        ge=0,
        description="sweep every player after each month whose index is a multiple of this (12: after every "
        "December); 0: never (each month sweeps its own players only)",
    )
    full_sweeps: int = Field(
        0, ge=0, description="the sweeps over every player then; 0: a full fit (to tolerance, at most max_sweeps)"
    )
    checkpoint_every: int = Field(
        12,
        ge=1,
        description="store every player-month after each month whose index is a multiple of this (12: after every "
        "December), as after a full sweep; the months between store the player-months they changed",
    )

    def full_sweep_after(self, month_index: int) -> int | None:
        """The full sweeps due after the month of `month_index` (None: none; 0: a fit to tolerance). By calendar
        month, not by the run's, so a run from any month sweeps where a run from the start did.
        """
        if self.full_sweeps_every == 0 or (month_index + 1) % self.full_sweeps_every:
            return None
        return self.full_sweeps

    def checkpoint_after(self, month_index: int) -> bool:
        """Whether the month of `month_index` stores every player-month (a checkpoint), by calendar month as the full
        sweeps, which change every player-month and so are checkpoints too.
        """
        return (month_index + 1) % self.checkpoint_every == 0 or self.full_sweep_after(month_index) is not None


def _no_period_update(players: pl.DataFrame, sides: pl.DataFrame, params: WhrScenarioParams, _: int) -> pl.DataFrame:
    raise NotImplementedError(
        "whr re-estimates the whole history: a chain rates it with pipeline.scenarios.whole_history_step, "
        "`ratings evaluate` with pipeline.evaluation.raters (no period update)"
    )


def _expected(params: WhrScenarioParams) -> pl.Expr:
    """Bradley-Terry in Elo units (whr.expected_score, its NumPy twin), from the ratings alone: WHR's prediction has
    no deviation.
    """
    return logistic_expectancy(pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage"))


SYSTEM: RatingSystem = RatingSystem(
    name="whr",
    description="Whole-History Rating: every player-month re-estimated from all games, month by month",
    source='R. Coulom, "Whole-History Rating", Computers and Games 2008 (LNCS 5131)',
    params=WhrScenarioParams,
    state_columns=("rating", "deviation"),
    initial=lambda params: {"rating": params.init_rating, "deviation": None},
    expected=_expected,
    update=_no_period_update,
)
