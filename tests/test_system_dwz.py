"""The German DWZ (pipeline/systems/dwz.py): the Wertungsordnung's tables and formulas, first DWZ, 2025 upgrade."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.systems import empty_state, get_system, rate_system_period
from pipeline.systems.dwz import apply_upgrade_2025, development_coefficient, upgrade_2025, win_expectancy
from schemas.system_state import DwzState

DWZ = get_system("dwz")


def state(rows: list[dict]) -> pl.DataFrame:
    base = {"games": 200, "wins": 80, "draws": 40, "losses": 80, "last_period": 0, "deviation": None}
    base |= {"volatility": None, "birth_year": 1970, "dwz_index": 20, "rest_games": 0, "rest_score": 0.0}
    base |= {"rest_opponents": 0.0, "rest_since": None}
    return pl.DataFrame([base | row for row in rows], schema=DWZ.state_schema())


def row(frame: pl.DataFrame, player: int) -> dict:
    return frame.filter(pl.col("player_id") == player).to_dicts()[0]


# Anhang 2.1 (the DSB's probability table, identical to FIDE's): P(D) for the stronger player, as the DSB's
# two-digit excerpt gives it (truncated, hence the tolerance of a little more than half a hundredth).
@pytest.mark.parametrize(
    ("d", "p"),
    [(0, 0.50), (50, 0.57), (100, 0.64), (150, 0.70), (200, 0.76), (250, 0.81), (300, 0.85), (350, 0.89),
     (400, 0.92), (450, 0.94)],
)  # fmt: skip
def test_probability_table(d, p):
    assert pl.select(win_expectancy(pl.lit(float(d)))).item() == pytest.approx(p, abs=0.006)
    assert pl.select(win_expectancy(pl.lit(float(-d)))).item() == pytest.approx(1 - p, abs=0.006)


# Anhang 2.4: E = ((Ro/1000)^4 + J) fB + SBr, rounded, 5 <= E <= 30 (5 x index) or 150 with braking.
@pytest.mark.parametrize(
    ("ro", "age", "index", "w", "we", "e"),
    [
        (1700, 40, 10, 3.0, 2.0, 23),  # 1.7^4 + 15 = 23.35
        (1700, 23, 10, 3.0, 2.0, 18),  # + 10 for 21-25
        (1700, 15, 10, 3.0, 2.0, 11),  # youth: (8.35 + 5) x fB 0.85 = 11.35, no braking above 1300
        (1000, 12, 10, 1.0, 2.0, 9),  # (1 + 5) x 0.5 + e^2 - 1 = 9.39: braking (W <= We)
        (1000, 12, 10, 3.0, 2.0, 5),  # (1 + 5) x 0.5 = 3 -> at least 5
        (2400, 40, 10, 3.0, 2.0, 30),  # 33.2 + 15 -> at most 30
        (1700, 40, 2, 3.0, 2.0, 10),  # at most 5 x index
        (1700, None, 10, 3.0, 2.0, 23),  # unknown age: the adult class
    ],
)
def test_development_coefficient(ro, age, index, w, we, e):
    expr = development_coefficient(
        pl.lit(float(ro)), pl.lit(age, dtype=pl.Int64), pl.lit(index), pl.lit(w), pl.lit(we), DWZ.params()
    )
    assert pl.select(expr).item() == e


def test_rated_player_after_a_tournament():
    # A senior at 1700 (index 20) scores 3.5 against 1600, 1650, 1700, 1800, 1900, 2000 (1, 0, 1, 1/2, 1, 0):
    # E = round(1.7^4 + 15) = 23, Rn = 1700 + 800 (3.5 - We) / (23 + 6).
    rows = [{"player_id": 1, "rating": 1700.0}]
    rows += [
        {"player_id": p, "rating": r} for p, r in zip(range(2, 8), (1600, 1650, 1700, 1800, 1900, 2000), strict=True)
    ]
    games = pl.DataFrame(
        {"white_id": [1] * 6, "black_id": list(range(2, 8)), "white_score": [1.0, 0.0, 1.0, 0.5, 1.0, 0.0]}
    )
    result = rate_system_period(DWZ, state(rows), games, DWZ.params(), 24300).state
    we = pl.select(win_expectancy(pl.lit(pl.Series([100.0, 50, 0, -100, -200, -300]))).sum()).item()
    assert we == pytest.approx(2.46, abs=0.01)  # the table's 0.64 + 0.57 + 0.50 + 0.36 + 0.24 + 0.15
    assert row(result, 1)["rating"] == round(1700 + 800 * (3.5 - we) / 29)
    assert row(result, 1)["dwz_index"] == 21
    DwzState.validate(result)


def test_first_dwz_needs_five_rated_games_and_carries_restpartien():
    rows = [{"player_id": p, "rating": 1500.0} for p in range(2, 8)]
    four = pl.DataFrame({"white_id": [1] * 4, "black_id": [2, 3, 4, 5], "white_score": [1.0, 0.5, 1.0, 0.5]})
    after = rate_system_period(DWZ, state(rows), four, DWZ.params(), 24300).state
    assert row(after, 1)["dwz_index"] == 0 and row(after, 1)["rest_games"] == 4
    # The fifth game, a month later, completes the five: performance Rc + D(3.5/5) = 1500 + D(0.70).
    one = pl.DataFrame({"white_id": [1], "black_id": [6], "white_score": [0.5]})
    later = rate_system_period(DWZ, after, one, DWZ.params(), 24301).state
    assert row(later, 1)["dwz_index"] == 1 and row(later, 1)["rest_games"] == 0
    assert pl.select(win_expectancy(pl.lit(row(later, 1)["rating"] - 1500.0))).item() == pytest.approx(0.7, abs=0.002)


def test_no_first_dwz_from_an_extreme_result():
    rows = [{"player_id": p, "rating": 1500.0} for p in range(2, 7)]
    games = pl.DataFrame({"white_id": [1] * 5, "black_id": [2, 3, 4, 5, 6], "white_score": [1.0] * 5})
    result = rate_system_period(DWZ, state(rows), games, DWZ.params(), 24300).state
    assert row(result, 1)["dwz_index"] == 0 and row(result, 1)["rest_games"] == 5


def test_restpartien_lapse_after_two_years():
    games = pl.DataFrame({"white_id": [1] * 2, "black_id": [2, 3], "white_score": [1.0, 0.0]})
    rows = [{"player_id": p, "rating": 1500.0} for p in (2, 3)]
    first = rate_system_period(DWZ, state(rows), games, DWZ.params(), 24300).state
    late = rate_system_period(DWZ, first, games, DWZ.params(), 24300 + 24).state
    assert row(late, 1)["rest_games"] == 2  # the old two lapsed, the new two are kept


@pytest.mark.parametrize(
    ("before", "after"),
    [(500, 900), (999, 1399), (1000, 1400), (1500, 1720), (2000, 2040), (2109, 2110), (2110, 2110), (2600, 2600)],
)
def test_upgrade_2025(before, after):
    assert pl.select(upgrade_2025(pl.lit(float(before)))).item() == after


def test_upgrade_2025_on_a_list():
    ratings = [800.0, 1000.0, 1234.0, 1777.0, 2109.0, 2300.0]
    listed = state([{"player_id": i, "rating": r} for i, r in enumerate(ratings)])
    unrated = state([{"player_id": 99, "rating": 1000.0, "dwz_index": 0}])
    upgraded = apply_upgrade_2025(pl.concat([listed, unrated]))
    band = upgraded.filter(pl.col("player_id").is_in([1, 2, 3, 4]))
    assert band["rating"].to_list() == [round(0.64 * r + 760) for r in ratings[1:5]]
    assert row(upgraded, 0)["rating"] == 1200.0 and row(upgraded, 5)["rating"] == 2300.0
    assert row(upgraded, 99)["rating"] == 1000.0


def test_newcomers_only_tournament_rates_nobody():
    games = pl.DataFrame({"white_id": [1, 2], "black_id": [2, 3], "white_score": [1.0, 0.5]})
    result = rate_system_period(DWZ, empty_state(DWZ), games, DWZ.params(), 24300).state
    assert result["dwz_index"].to_list() == [0, 0, 0] and result["rest_games"].to_list() == [0, 0, 0]


def test_rate_period_files_with_a_system(tmp_path):
    from pipeline.cli.system_period import rate_system_files

    (tmp_path / "prev.csv").write_text("player_id,rating,games_total,birth_year\n1,1700,200,1970\n2,1600,50,2010\n")
    (tmp_path / "games.csv").write_text(
        "event_id,white_id,black_id,result,date\nA,1,2,1-0,2025-03-02\nB,3,1,0-1,2025-03-09\n"
    )
    new = rate_system_files("dwz", "2025-03", str(tmp_path / "prev.csv"), str(tmp_path / "games.csv"), ())
    assert {"player_id", "rating", "games_total", "birth_year", "dwz_index"} <= set(new.columns)
    assert row(new, 3)["rating"] is None  # a newcomer with one game has no DWZ: the list shows it empty
    assert row(new, 1)["dwz_index"] == 7  # a listed DWZ without an index starts at 6 (Wertungsordnung 2.2.4)
    assert row(new, 1)["rating"] > 1700 and row(new, 2)["rating"] < 1600
