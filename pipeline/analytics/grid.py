"""A crosstable frame reshaped for display: ordered bands, cells by (band, opponent band), row summaries."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.analytics.crosstable import SUMMARY_BAND

DEFAULT_MIN_GAMES = 30


@dataclass(frozen=True)
class Cell:
    """One displayed figure: games, actual and expected score %, and their difference."""

    games: int
    score_pct: float
    expected_pct: float
    diff_pct: float


@dataclass(frozen=True)
class CrosstableGrid:
    period: str
    bands: list[str]  # ordered by lowest rating; rows and columns alike
    cells: dict[tuple[str, str], Cell]
    summaries: dict[str, Cell]

    @property
    def games_counted(self) -> int:
        """Games between different bands: each appears in exactly two row summaries."""
        return sum(cell.games for cell in self.summaries.values()) // 2


def crosstable_grid(crosstable: pl.DataFrame) -> CrosstableGrid:
    """Reshape one period's Crosstable frame; raises if it mixes periods (render one table at a time)."""
    periods = crosstable["period"].unique().to_list()
    if len(periods) > 1:
        raise ValueError(f"a crosstable page shows one period, got {sorted(periods)}")
    lows = pl.concat(
        [
            crosstable.select(label="band", low="band_low"),
            crosstable.filter(pl.col("opponent_band") != SUMMARY_BAND).select(
                label="opponent_band", low="opponent_band_low"
            ),
        ]
    ).unique()
    bands = lows.sort("low", "label")["label"].to_list()
    cells: dict[tuple[str, str], Cell] = {}
    summaries: dict[str, Cell] = {}
    for row in crosstable.iter_rows(named=True):
        cell = Cell(row["games"], row["score_pct"], row["expected_pct"], row["diff_pct"])
        if row["opponent_band"] == SUMMARY_BAND:
            summaries[row["band"]] = cell
        else:
            cells[(row["band"], row["opponent_band"])] = cell
    return CrosstableGrid(periods[0] if periods else "", bands, cells, summaries)
