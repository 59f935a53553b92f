"""The US Chess system (pipeline/systems/uscf.py): Glickman & Doan's worked examples and hand cases of its formulas."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline.systems import empty_state, event_order, event_waves, get_system, rate_system_period
from pipeline.systems.uscf import imputed_rating, k_factor, special_ratings
from schemas.system_state import UscfState

USCF = get_system("uscf")


def state(rows: list[dict]) -> pl.DataFrame:
    base = {"games": 200, "wins": 80, "draws": 40, "losses": 80, "last_period": 0, "deviation": None}
    base |= {"volatility": None, "peak": None, "events_3plus": 10, "birth_year": None}
    return pl.DataFrame([base | row for row in rows], schema=USCF.state_schema())


def rating(frame: pl.DataFrame, player: int) -> float:
    return frame.filter(pl.col("player_id") == player)["rating"].item()


def n_star(r: float) -> float:
    """G&D 2020 s. 3, written out again for the hand cases."""
    return 50 / math.sqrt(0.662 + 0.00000739 * (2569 - r) ** 2) if r <= 2355 else 50.0


def we(r: float, ri: float) -> float:
    return 1 / (1 + 10 ** (-(r - ri) / 400))


# G&D 2020 s. 4.2, the table of K for N' and m (full K).
@pytest.mark.parametrize(
    ("n_eff", "m", "k"),
    [(6, 4, 80), (6, 6, 66.67), (6, 10, 50), (20, 4, 33.33), (20, 6, 30.77), (20, 10, 26.67), (50, 4, 14.81),
     (50, 6, 14.29), (50, 10, 13.33)],
)  # fmt: skip
def test_k_table_of_the_paper(n_eff, m, k):
    value = pl.select(k_factor(pl.lit(float(n_eff)), pl.lit(m))).item()
    assert value == pytest.approx(k, abs=0.005)


@pytest.mark.parametrize(("age", "expected"), [(1, 100.0), (10, 500.0), (26, 1300.0), (40, 1300.0), (None, 1450.0)])
def test_imputed_initial_rating_from_age(age, expected):
    assert pl.select(imputed_rating(pl.lit(age, dtype=pl.Int64), 1450.0)).item() == expected


def test_special_formula_example_of_the_approximation_paper():
    # "Approximating formulas" (Glickman, 2015/2020): a player rated 1500 on 6 games wins against 1400, loses
    # against 1550 and draws against 1650: 1511 (every opponent within 400, so the exact formula agrees).
    opponents = pl.DataFrame({"player_id": [1, 1, 1], "opp_rating": [1400.0, 1550.0, 1650.0]})
    heads = pl.DataFrame({"player_id": [1], "prior": [1500.0], "prior_adj": [1500.0], "n_eff": [6.0], "s_adj": [4.5]})
    assert round(special_ratings(opponents, heads, 2700.0)["special"].item()) == 1511


def test_newcomer_scoring_half_against_three_2200s_gets_about_2200():
    players = state([{"player_id": i, "rating": 2200.0} for i in (2, 3, 4)])
    games = pl.DataFrame({"white_id": [1, 1, 1], "black_id": [2, 3, 4], "white_score": [1.0, 0.0, 0.5]})
    result = rate_system_period(USCF, players, games, USCF.params(), 1).state
    assert rating(result, 1) == pytest.approx(2200, abs=10)
    UscfState.validate(result)


def test_provisional_player_with_six_games_two_passes():
    # N = 6 <= 8: the special formula, against the opponents' intermediate ratings (Step 5); with everybody within
    # 400 it is (N' R0 + sum R_i + 800 (S - m/2)) / (N' + m).
    rows = [{"player_id": 1, "rating": 1500.0, "games": 6, "wins": 3, "draws": 1, "losses": 2}]
    rows += [{"player_id": p, "rating": r} for p, r in ((2, 1400.0), (3, 1550.0), (4, 1650.0))]
    games = pl.DataFrame({"white_id": [1, 1, 1], "black_id": [2, 3, 4], "white_score": [1.0, 0.0, 0.5]})
    result = rate_system_period(USCF, state(rows), games, USCF.params(), 1).state
    # Step 4 for an opponent (200 games, one game): standard formula against the player's pre-event 1500.
    inter = [r + 800 / (n_star(r) + 1) * (s - we(r, 1500)) for r, s in ((1400, 0), (1550, 1), (1650, 0.5))]
    assert rating(result, 1) == pytest.approx((6 * 1500 + sum(inter) + 800 * (1.5 - 1.5)) / 9, abs=1e-6)


def test_player_due_bonus_points():
    # An established 1800 (200 games) scores 4/4 against four 1800s in one event: K(S - E) above 12 sqrt(4).
    rows = [{"player_id": i, "rating": 1800.0} for i in range(1, 6)]
    games = pl.DataFrame({"white_id": [1] * 4, "black_id": [2, 3, 4, 5], "white_score": [1.0] * 4, "event_id": "x"})
    result = rate_system_period(USCF, state(rows), games, USCF.params(), 1).state
    opponent = 1800 + 800 / (n_star(1800) + 1) * (0 - 0.5)  # each opponent's intermediate rating
    k = 800 / (n_star(1800) + 4)
    change = k * (4 - 4 * we(1800, opponent))
    assert rating(result, 1) == pytest.approx(1800 + change + max(0.0, change - 12 * 2), abs=1e-6)
    assert change - 12 * 2 > 0  # the case gives bonus points
    # B = 14 (May 2017 - Jan 2023) gives 2 x 2 points less.
    fewer = rate_system_period(USCF, state(rows), games, USCF.params(bonus_threshold=14), 1).state
    assert rating(result, 1) - rating(fewer, 1) == pytest.approx(4.0, abs=1e-6)


def test_no_bonus_in_two_game_events():
    rows = [{"player_id": i, "rating": 1800.0} for i in range(1, 4)]
    games = pl.DataFrame({"white_id": [1, 1], "black_id": [2, 3], "white_score": [1.0, 1.0]})
    result = rate_system_period(USCF, state(rows), games, USCF.params(), 1).state
    opponent = 1800 + 800 / (n_star(1800) + 1) * (0 - 0.5)
    assert rating(result, 1) == pytest.approx(1800 + 800 / (n_star(1800) + 2) * 2 * (1 - we(1800, opponent)))


@pytest.mark.parametrize(
    ("peak", "games", "floor"),
    [
        (1850.0, 100, 1600.0),  # 1850 - 200 = 1650 -> 1600
        (1450.0, 100, 1200.0),  # 1250 -> 1200
        (2450.0, 100, 2100.0),  # 2250 -> 2200, but no floor above 2100
        (1850.0, 10, None),  # not established: no peak floor
    ],
)
def test_peak_floor(peak, games, floor):
    start = (floor or 1300.0) + 20
    rows = [{"player_id": 1, "rating": start, "games": games, "peak": peak, "wins": 5, "losses": 4, "draws": 1}]
    rows.append({"player_id": 2, "rating": start})
    games_ = pl.DataFrame({"white_id": [1, 1], "black_id": [2, 2], "white_score": [0.0, 0.0]})
    result = rating(rate_system_period(USCF, state(rows), games_, USCF.params(), 1).state, 1)
    if floor is not None:
        assert result == floor
    else:
        assert result < start - 20


def test_absolute_floor():
    # A newcomer losing all three games of one event: the special formula has no lower bound; the floor is
    # min(100 + 4 x 0 + 2 x 0 + 1 event with 3+ games, 150) = 101.
    games = pl.DataFrame({"white_id": [1, 1, 1], "black_id": [2, 3, 4], "white_score": [0.0, 0.0, 0.0]})
    result = rate_system_period(USCF, empty_state(USCF), games, USCF.params(init_rating=110), 1).state
    assert rating(result, 1) == 101.0
    assert result.filter(pl.col("player_id") == 1)["events_3plus"].item() == 1


def test_events_rated_in_date_order_in_waves():
    games = pl.DataFrame(
        {
            "white_id": [1, 3, 1, 5],
            "black_id": [2, 4, 3, 6],
            "white_score": [1.0, 1.0, 1.0, 0.0],
            "event_id": ["e1", "e2", "e3", "e0"],
            "date": ["2024-03-05", "2024-03-06", "2024-03-20", "2024-03-28"],
        }
    )
    waves = event_waves(games, event_order(games)).sort("order")
    assert waves["event_id"].to_list() == ["e1", "e2", "e3", "e0"]  # by end date, not by id
    assert waves["wave"].to_list() == [1, 1, 2, 1]
    # The newcomer 1's second event starts from the rating the first one gave (not from the imputed 1300).
    known = state([{"player_id": 3, "rating": 1700.0}, {"player_id": 4, "rating": 1700.0}])
    first = rate_system_period(USCF, known, games.head(1), USCF.params(), 1).state
    both = rate_system_period(USCF, known, games.filter(pl.col("white_id") == 1), USCF.params(), 1).state
    assert rating(first, 1) != 1300.0
    assert rating(both, 1) != rating(first, 1)
    assert both.filter(pl.col("player_id") == 1)["games"].item() == 2


def test_birth_year_imputes_the_first_rating():
    players = state([{"player_id": 1, "rating": 1300.0, "games": 0, "wins": 0, "draws": 0, "losses": 0,
                      "birth_year": 2014, "events_3plus": 0}, {"player_id": 2, "rating": 500.0}])  # fmt: skip
    games = pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [0.5], "date": ["2024-06-01"]})
    result = rate_system_period(USCF, players, games, USCF.params(), 1).state
    # Age 10 -> 500 on N = 0; a draw with a 500 keeps a newcomer at the opponent's rating.
    assert rating(result, 1) == pytest.approx(500.0, abs=1e-6)
