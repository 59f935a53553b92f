"""The yearly drift of the stable cohort (issue 37, part 2): who is in it, its median change, and its true change."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.analytics.drift import cohort_drift
from schemas import YearlyDrift


def december(year: int, rows: list[tuple]) -> pl.DataFrame:
    """A list from (player_id, rating, inactive, birth_year, last_played) rows."""
    return pl.DataFrame(
        rows,
        schema={
            "player_id": pl.Int64,
            "rating": pl.Int32,
            "inactive": pl.Boolean,
            "birth_year": pl.Int32,
            "last_played": pl.Utf8,
        },
        orient="row",
    )


def test_the_cohort_is_the_steadily_active_adults_on_both_lists_and_its_truth_beside_it():
    earlier = december(
        2023,
        [
            (1, 2000, False, 1990, "2023-12"),  # 34: in, -10
            (2, 1800, False, 1980, "2023-10"),  # 44: in, +4
            (3, 1700, False, 1979, "2023-11"),  # 45 in 2024: in, -30
            (4, 1600, False, 2000, "2023-12"),  # 24 in 2024: too young
            (5, 1900, True, 1985, "2023-12"),  # inactive before
            (6, 1500, False, 1985, "2023-08"),  # not recent before (September to December)
            (7, 2100, False, 1985, "2023-12"),  # unrated on the later list
        ],
    )
    later = december(
        2024,
        [
            (1, 1990, False, 1990, "2024-12"),
            (2, 1804, False, 1980, "2024-11"),
            (3, 1670, False, 1979, "2024-10"),
            (4, 1650, False, 2000, "2024-12"),
            (5, 1950, False, 1985, "2024-12"),
            (6, 1510, False, 1985, "2024-12"),
            (7, None, False, 1985, "2024-12"),
            (8, 1700, False, 1985, "2024-12"),  # new: not on the earlier list
        ],
    )
    truth = pl.DataFrame(
        {
            "player_id": [1, 2, 3, 1, 2, 3, 4],
            "month": ["2023-12"] * 3 + ["2024-12"] * 4,
            "strength": [2000.0, 1800.0, 1700.0, 2002.0, 1801.0, 1700.5, 1600.0],
        }
    )
    row = cohort_drift(earlier, later, "2024-12", truth.lazy())
    YearlyDrift.validate(row)
    drift = row.row(0, named=True)
    assert (drift["year"], drift["players"]) == (2024, 3)
    assert drift["median_change"] == -10 and drift["mean_change"] == pytest.approx((-10 + 4 - 30) / 3)
    assert drift["true_median_change"] == 1.0 and drift["true_mean_change"] == pytest.approx(3.5 / 3)
    # Without a truth (real data) the true figures are empty; other months and a missing year before give no row.
    assert cohort_drift(earlier, later, "2024-12").row(0, named=True)["true_median_change"] is None
    assert cohort_drift(earlier, later, "2024-11").is_empty() and cohort_drift(None, later, "2024-12").is_empty()


def test_the_deflation_index_is_the_favourites_expected_minus_actual_score_by_band():
    from pipeline.analytics.curves import deflation_index
    from schemas import DeflationIndex

    games = pl.DataFrame(
        {
            "white_rating_used": [2000, 1500, 1900, 1800, 1700],
            "black_rating_used": [1800, 1700, 1900, 1600, None],
            "white_score": [0.5, 1.0, 1.0, 1.0, 1.0],
            "white_expected": [0.75, 0.24, 0.5, 0.76, None],
            "black_expected": [0.25, 0.76, 0.5, 0.24, None],
            "month": ["2024-03"] * 5,
        }
    )
    table = deflation_index(games, "2024-03")
    DeflationIndex.validate(table)
    rows = {row["band"]: row for row in table.iter_rows(named=True)}
    # Favourites: white 2000 (scored 0.5 of 0.75), black 1700 (0 of 0.76), white 1800 (1 of 0.76); the equal pair and
    # the game rated for one side only do not count.
    assert rows["all"]["games"] == 3
    assert rows["all"]["index_pct"] == pytest.approx(100 * ((0.75 + 0.76 + 0.76) - (0.5 + 0.0 + 1.0)) / 3)
    assert rows["2000-2199"]["index_pct"] == pytest.approx(25.0) and rows["1600-1799"]["games"] == 1
    assert rows["1800-1999"]["index_pct"] == pytest.approx(-24.0)
