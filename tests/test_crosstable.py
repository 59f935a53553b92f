"""Summary crosstable: cells and row summaries checked against hand-computed figures."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.analytics.crosstable import format_row_summary, summary_crosstable
from schemas import Crosstable, RatedGames
from schemas.util import conform, polars_schema


def rated_games(rows: list[tuple[int | None, int | None, float, float | None, float | None]]) -> pl.DataFrame:
    """A RatedGames frame from (white_rating, black_rating, white_score, white_expected, black_expected)."""
    frame = pl.DataFrame(
        {
            "game_id": list(range(1, len(rows) + 1)),
            "month": ["2024-03"] * len(rows),
            "event_id": ["E1"] * len(rows),
            "white_id": [2 * i + 1 for i in range(len(rows))],
            "black_id": [2 * i + 2 for i in range(len(rows))],
            "white_score": [r[2] for r in rows],
            "time_control": ["classical"] * len(rows),
            "white_rating_used": [r[0] for r in rows],
            "black_rating_used": [r[1] for r in rows],
            "white_expected": [r[3] for r in rows],
            "black_expected": [r[4] for r in rows],
            "weight": [1.0] * len(rows),
            "white_k_used": [20] * len(rows),
            "black_k_used": [20] * len(rows),
        },
        schema_overrides={"white_expected": pl.Float64, "black_expected": pl.Float64},
    )
    return RatedGames.validate(conform(frame, RatedGames))


GAMES = [
    (1250, 1420, 1.0, 0.3, 0.7),  # 1200-99 beats 1400-99
    (1420, 1290, 0.5, 0.6, 0.4),  # draw, 1400-99 as White
    (1210, 1299, 0.0, 0.45, 0.55),  # same band: diagonal, excluded
    (2550, 2700, 0.5, 0.4, 0.6),  # both lumped into 2500+: diagonal, excluded
    (2610, 1480, 0.0, 0.9, 0.1),  # 2500+ loses to 1400-99
    (1300, 1400, 1.0, None, 0.36),  # one side not counted: excluded
    (2499, 2500, 1.0, 0.5, 0.5),  # 2400-99 vs 2500+
]


@pytest.fixture
def table() -> pl.DataFrame:
    return summary_crosstable(rated_games(GAMES), "2024-03")


def cell(table: pl.DataFrame, band: str, opponent: str) -> dict:
    rows = table.filter((pl.col("band") == band) & (pl.col("opponent_band") == opponent)).to_dicts()
    assert len(rows) == 1, (band, opponent, rows)
    return rows[0]


def test_schema_is_the_crosstable_model(table: pl.DataFrame) -> None:
    Crosstable.validate(table)
    assert table.schema == polars_schema(Crosstable)
    assert set(table["period"]) == {"2024-03"}


def test_cell_by_hand(table: pl.DataFrame) -> None:
    # Games 1 and 2 from 1200-99's side: 1 + 0.5 points, 0.3 + 0.4 expected, 2 games.
    got = cell(table, "1200-99", "1400-99")
    assert got["band_low"] == 1200 and got["opponent_band_low"] == 1400
    assert got["games"] == 2
    assert got["score"] == pytest.approx(1.5)
    assert got["expected"] == pytest.approx(0.7)
    assert got["score_pct"] == pytest.approx(75.0)
    assert got["expected_pct"] == pytest.approx(35.0)
    assert got["diff_pct"] == pytest.approx(40.0)
    # The mirror cell holds Black's side: 0 + 0.5 points, 0.7 + 0.6 expected.
    mirror = cell(table, "1400-99", "1200-99")
    assert mirror["games"] == 2
    assert mirror["score"] == pytest.approx(0.5)
    assert mirror["expected"] == pytest.approx(1.3)


def test_row_summary_by_hand(table: pl.DataFrame) -> None:
    # 1400-99: vs 1200-99 (2 games, 0.5 pts, 1.3 exp) and vs 2500+ (1 game, 1 pt, 0.1 exp).
    got = cell(table, "1400-99", "all")
    assert got["opponent_band_low"] is None
    assert got["games"] == 3
    assert got["score"] == pytest.approx(1.5)
    assert got["expected"] == pytest.approx(1.4)
    assert got["diff_pct"] == pytest.approx(100 * 1.5 / 3 - 100 * 1.4 / 3)
    assert format_row_summary(got["diff_pct"], got["games"]) == "+3.3% in 3 games"


def test_diagonal_excluded_and_top_band_lumped(table: pl.DataFrame) -> None:
    assert table.filter(pl.col("band") == pl.col("opponent_band")).height == 0
    # 2550 vs 2700 is a 2500+ diagonal game, so 2500+ only has its games vs 1400-99 and 2400-99.
    top = cell(table, "2500+", "all")
    assert top["band_low"] == 2500
    assert top["games"] == 2
    assert top["score"] == pytest.approx(0.0)
    assert top["expected"] == pytest.approx(1.4)
    assert cell(table, "2400-99", "2500+")["games"] == 1
    assert cell(table, "2500+", "2400-99")["expected"] == pytest.approx(0.5)
    # 1210 vs 1299 was diagonal: 1200-99 has only its two games against 1400-99.
    assert cell(table, "1200-99", "all")["games"] == 2


def test_bands_come_from_the_data(table: pl.DataFrame) -> None:
    assert table["band"].unique(maintain_order=True).to_list() == ["1200-99", "1400-99", "2400-99", "2500+"]
    # Each band's summary row comes after its cells.
    assert table.filter(pl.col("band") == "1400-99")["opponent_band"].to_list() == ["1200-99", "2500+", "all"]


def test_wider_bands_and_other_top() -> None:
    table = summary_crosstable(rated_games(GAMES), "2024", band_width=200, top_band=2400)
    assert set(table["band"]) == {"1200-1399", "1400-1599", "2400+"}


def test_empty_input_gives_empty_frame_with_schema() -> None:
    empty = rated_games([])
    table = summary_crosstable(empty, "2024-03")
    assert table.height == 0 and table.schema == polars_schema(Crosstable)
    # Only uncounted or diagonal games: also empty.
    only_diagonal = rated_games([(1210, 1299, 0.0, 0.45, 0.55), (1300, 1900, 1.0, None, None)])
    assert summary_crosstable(only_diagonal, "2024-03").schema == polars_schema(Crosstable)
    assert summary_crosstable(only_diagonal, "2024-03").height == 0


@pytest.mark.parametrize(
    ("diff", "games", "text"),
    [
        (4.5, 6865, "+4.5% in 6,865 games"),
        (-2.345, 120, "-2.3% in 120 games"),
        (-0.04, 1_234_567, "+0.0% in 1,234,567 games"),
        (0.0, 1, "+0.0% in 1 game"),
    ],
)
def test_format_row_summary(diff: float, games: int, text: str) -> None:
    assert format_row_summary(diff, games) == text
