"""The English ECF rating (pipeline/systems/ecf.py): table 8.1.2, P Ratings in two passes, K Ratings, categories."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.systems import empty_state, get_system, rate_system_period
from pipeline.systems.ecf import category, expected_score, k_rating, performance_rating
from schemas.system_state import EcfState

ECF = get_system("ecf")
PARAMS = ECF.params()  # K 20, K 40 for partial opponents, Full Rating from 10 games, nominal rating 1500
MAY = 2024 * 12 + 4


def state(rows: list[dict]) -> pl.DataFrame:
    base = {"games": 100, "wins": 40, "draws": 20, "losses": 40, "last_period": MAY - 1, "deviation": None}
    base |= {"volatility": None, "ecf_status": 2, "p_games": 0, "p_score": 0.0, "p_opponents": 0.0}
    base |= {"p_fictional": None, "recent_games": "3", "inherited_results": None}
    return pl.DataFrame([base | row for row in rows], schema=ECF.state_schema())


def row(frame: pl.DataFrame, player: int) -> dict:
    return frame.filter(pl.col("player_id") == player).to_dicts()[0]


def games(*triples: tuple[int, int, float]) -> pl.DataFrame:
    white, black, score = zip(*triples, strict=True)
    return pl.DataFrame({"white_id": list(white), "black_id": list(black), "white_score": list(score)})


# FIDE table 8.1.2 (B.02 2024), which the ECF's monthly calculation uses for We: D -> PD of the player D above.
@pytest.mark.parametrize(
    ("d", "pd"),
    [(0, 0.50), (3, 0.50), (4, 0.51), (43, 0.56), (100, 0.64), (200, 0.76), (-200, 0.24), (400, 0.92), (735, 0.99),
     (736, 1.00), (-1000, 0.00)],
)  # fmt: skip
def test_expectancy_is_fides_table(d, pd):
    assert pl.select(expected_score(pl.lit(float(d)))).item() == pytest.approx(pd)


# P Rating (ECF help, definition 2): Ra + dp(p) over the games plus a draw against the nominal rating N,
# Ra = (sum of opponents + N) / (n + 1), p = (W + 1/2) / (n + 1) to the hundredth, dp from FIDE table 8.1.1.
@pytest.mark.parametrize(
    ("opponents", "n", "w", "nominal", "p_rating"),
    [
        (5 * 1600, 5, 3.0, 1500, 1640),  # Ra 9500/6 = 1583.3, p 3.5/6 = .58 -> dp 57
        (1800, 1, 1.0, 1500, 1843),  # Ra 1650, p .75 -> dp 193
        (10 * 1600, 10, 5.0, 1500, 1591),  # Ra 17500/11 = 1590.9, p .50 -> dp 0
        (2000, 1, 0.0, 2000, 1807),  # Ra 2000, p .25 -> dp -193
        (0, 0, 0.0, 1500, 1500),  # no real game: a draw against N
    ],
)
def test_p_rating(opponents, n, w, nominal, p_rating):
    expr = performance_rating(pl.lit(float(opponents)), pl.lit(n), pl.lit(w), nominal)
    assert pl.select(expr).item() == p_rating


def test_ratings_round_half_away_from_zero_as_the_rest_of_the_project():
    # Ra + dp at exactly .5 (an average over n + 1 games): 1500.5 and 1501.5 both go up, not to the even neighbour.
    assert pl.select(performance_rating(pl.lit(4502.0), pl.lit(3), pl.lit(1.5), 1500.0)).item() == 1501
    assert pl.select(performance_rating(pl.lit(4506.0), pl.lit(3), pl.lit(1.5), 1500.0)).item() == 1502
    assert pl.select(k_rating(pl.lit(1800.0), pl.lit(0.0625), 8.0)).item() == 1801  # 1800.5
    assert pl.select(k_rating(pl.lit(1801.0), pl.lit(-0.0625), 8.0)).item() == 1801  # 1800.5


def test_rate_period_rounds_a_p_rating_tie_up(tmp_path):
    listed = {1: 1501, 2: 1501, 3: 1500, 4: 1503, 5: 1503, 6: 1500}
    new = _rate_period_ecf(
        tmp_path,
        "player_id,rating,games_total\n" + "".join(f"{p},{r},100\n" for p, r in listed.items()),
        "E,9,1,1-0,2025-03-01\nE,9,2,1/2-1/2,2025-03-01\nE,9,3,0-1,2025-03-01\n"
        "F,8,4,1-0,2025-03-01\nF,8,5,1/2-1/2,2025-03-01\nF,8,6,0-1,2025-03-01\n",
        "init_rating=1500",
    )
    # 50 %, dp 0: player 9's P Rating (1501 + 1501 + 1500 + 1500) / 4 = 1500.5, player 8's 6006 / 4 = 1501.5.
    assert row(new, 9)["rating"] == 1501 and row(new, 8)["rating"] == 1502


# K Rating (ECF help, definition 1): R1 = R0 + 20 (W - We), We from table 8.1.2; whole numbers.
@pytest.mark.parametrize(
    ("own", "opponent", "score", "after"),
    [
        (1800, 1600, 1.0, 1805),  # D 200: We .76, + 20 x .24 = 4.8
        (1800, 1600, 0.0, 1785),  # - 20 x .76 = 15.2
        (1600, 1800, 0.5, 1605),  # We .24, + 20 x .26 = 5.2
        (2000, 2000, 0.5, 2000),
    ],
)
def test_k_rating_of_fully_rated_players(own, opponent, score, after):
    before = state([{"player_id": 1, "rating": float(own)}, {"player_id": 2, "rating": float(opponent)}])
    new = rate_system_period(ECF, before, games((1, 2, score)), PARAMS, MAY).state
    assert row(new, 1)["rating"] == after and row(new, 1)["ecf_status"] == 2
    EcfState.validate(new)


def test_k_of_40_for_a_partially_rated_opponent_halves_the_adjustment():
    # Newcomer 2 beats 1800-rated 1: P Rating (1800 + 1500) / 2 + dp(.75) = 1843 in both passes (a Partial Rating).
    # Player 1 against 1843: D -43, We .44; adjustment halved: 1800 + 20 x (0 - .44) / 2 = 1795.6.
    before = state([{"player_id": 1, "rating": 1800.0}])
    new = rate_system_period(ECF, before, games((2, 1, 1.0)), PARAMS, MAY).state
    assert row(new, 2)["rating"] == 1843 and row(new, 2)["ecf_status"] == 1
    assert row(new, 1)["rating"] == 1796
    plain = rate_system_period(ECF, before, games((2, 1, 1.0)), ECF.params(k_partial_opponent=20), MAY).state
    assert row(plain, 1)["rating"] == 1791  # 1800 - 8.8 with K 20 for the opponent too


def test_pass_two_rates_new_players_against_the_pass_one_ratings():
    # New 1 beats new 2 and draws with 1600-rated 3; new 2 beats 1400-rated 4.
    # Pass 1 (rated opponents only, plus the draw against 1500): A1 = 3100/2 + dp(.50) = 1550;
    # A2 = 2900/2 + dp(.75) = 1450 + 193 = 1643.
    # Pass 2: B1 = (1643 + 1600 + 1500)/3 + dp(2/3 = .67) = 1581 + 125 = 1706;
    #         B2 = (1550 + 1400 + 1500)/3 + dp(1.5/3 = .50) = 1483.3 -> 1483.
    before = state([{"player_id": 3, "rating": 1600.0}, {"player_id": 4, "rating": 1400.0}])
    new = rate_system_period(ECF, before, games((1, 2, 1.0), (1, 3, 0.5), (2, 4, 1.0)), PARAMS, MAY).state
    assert row(new, 1)["rating"] == 1706 and row(new, 2)["rating"] == 1483
    # Pass 3: 3 draws with 1's Partial Rating 1706 (D -106, We .36): 1600 + 20 x .14 / 2 = 1601.4.
    assert row(new, 3)["rating"] == 1601
    # 4 loses to 2's Partial Rating 1483 (D -83, We .39): 1400 - 20 x .39 / 2 = 1396.1.
    assert row(new, 4)["rating"] == 1396


def test_partial_games_accumulate_to_a_full_rating_at_ten():
    rated = state([{"player_id": p, "rating": 1600.0} for p in range(2, 12)])
    four = games(*[(1, p, s) for p, s in zip(range(2, 6), (1.0, 0.0, 1.0, 0.0), strict=True)])
    after = rate_system_period(ECF, rated, four, PARAMS, MAY).state
    # 4 games, 2 points: (6400 + 1500)/5 + dp(2.5/5) = 1580, a Partial Rating resting on the 4 games.
    assert row(after, 1)["rating"] == 1580 and row(after, 1)["ecf_status"] == 1 and row(after, 1)["p_games"] == 4
    six = games(*[(1, p, s) for p, s in zip(range(6, 12), (1.0, 0.0, 1.0, 0.0, 0.5, 0.5), strict=True)])
    later = rate_system_period(ECF, after, six, PARAMS, MAY + 1).state
    # 10 games (the opponents still at 1600 in pass 1 and 2), 5 points: 17500/11 + dp(.50) = 1591, a Full Rating.
    assert row(later, 1)["rating"] == 1591 and row(later, 1)["ecf_status"] == 2 and row(later, 1)["p_games"] == 0


def test_a_full_rating_from_ten_games_in_one_month_moves_by_k_next_month():
    rated = state([{"player_id": p, "rating": 1600.0} for p in range(2, 12)])
    ten = games(*[(1, p, 0.5) for p in range(2, 12)])
    first = rate_system_period(ECF, rated, ten, PARAMS, MAY).state
    assert row(first, 1)["rating"] == 1591 and row(first, 1)["ecf_status"] == 2
    # A full newcomer's opponents move with K 20 in full: 1600 + 20 x (.5 - .51) = 1599.8 (D 9 -> We .51).
    assert row(first, 2)["rating"] == 1600
    second = rate_system_period(ECF, first, games((1, 2, 1.0)), PARAMS, MAY + 1).state
    assert row(second, 1)["rating"] == 1591 + round(20 * (1 - 0.49))  # D -9: We .49


def test_a_player_back_after_three_years_is_a_new_player_with_a_dummy_game_at_his_last_full_rating():
    # Categories (2022): unrated after 36 months without a rated result; "on return ... a new player with one dummy
    # game assuming a draw against an opponent with the players last full rating": (1700 + 2100)/2 + dp(.75) = 2093.
    before = state([{"player_id": 1, "rating": 2100.0, "last_period": MAY - 37}, {"player_id": 2, "rating": 1700.0}])
    new = rate_system_period(ECF, before, games((1, 2, 1.0)), PARAMS, MAY).state
    assert row(new, 1)["rating"] == 2093 and row(new, 1)["ecf_status"] == 1 and row(new, 1)["p_fictional"] == 2100
    # Still partial a month later, the dummy game stays at 2100: (1700 + 1700 + 2100)/3 + dp(1.5/3) = 1833.
    later = rate_system_period(ECF, new, games((2, 1, 1.0)), PARAMS, MAY + 1).state
    assert row(later, 1)["rating"] == round((1700 + row(new, 2)["rating"] + 2100) / 3) and row(later, 1)["p_games"] == 2
    recent = state([{"player_id": 1, "rating": 2100.0, "last_period": MAY - 36}, {"player_id": 2, "rating": 1700.0}])
    assert row(rate_system_period(ECF, recent, games((1, 2, 1.0)), PARAMS, MAY).state, 1)["ecf_status"] == 2
    # The help page's definitions 5-7 (2020): 60 months.
    sixty = ECF.params(lapse_months=60)
    assert row(rate_system_period(ECF, before, games((1, 2, 1.0)), sixty, MAY).state, 1)["ecf_status"] == 2


def test_a_new_player_draws_with_the_nominal_rating():
    # Definition 2: a player never rated has his fictional draw against the nominal rating (a knob: 1500 here).
    before = state([{"player_id": 2, "rating": 1700.0}])
    new = rate_system_period(ECF, before, games((1, 2, 1.0)), PARAMS, MAY).state
    assert row(new, 1)["rating"] == round((1700 + 1500) / 2 + 193) and row(new, 1)["p_fictional"] is None


JULY_2020 = 2020 * 12 + 6


def test_category_h():
    # Categories (2022): an inherited rating (1 July 2020) on fewer than 9 results in the 60 months before, not played
    # since, is H, never unrated before 1 December 2022, and unrated from that day's list (after November 2022).
    players = state(
        [
            {"player_id": 1, "rating": 1600.0, "last_period": JULY_2020 - 30, "inherited_results": 5},  # H
            {"player_id": 2, "rating": 1600.0, "last_period": JULY_2020 - 30, "inherited_results": 9},  # not H
            {"player_id": 3, "rating": 1600.0, "last_period": JULY_2020 - 1, "inherited_results": 3},  # H
        ]
    )

    def labels(period: int) -> list:
        return players.select(category(period, PARAMS).alias("c"))["c"].to_list()

    assert labels(JULY_2020 - 1) == ["H", "K", "H"]
    assert labels(2022 * 12 + 9) == ["H", None, "H"]  # the list of 1 November 2022: 2 has been unrated since 2020-12
    assert labels(2022 * 12 + 10) == [None, None, None]  # the list of 1 December 2022: H converted to unrated
    # The 2021 note's planned date: 1 September 2022.
    planned = players.select(category(2022 * 12 + 7, ECF.params(h_converted_on="2022-09")).alias("c"))["c"]
    assert planned.to_list() == [None, None, None]


def test_an_h_rating_that_plays_turns_k_and_after_the_conversion_starts_anew():
    h = {"player_id": 1, "rating": 1600.0, "last_period": JULY_2020 - 30, "inherited_results": 5}
    opponent = {"player_id": 2, "rating": 1600.0, "last_period": 2022 * 12}
    played = rate_system_period(ECF, state([h, opponent]), games((1, 2, 1.0)), PARAMS, 2022 * 12 + 2).state
    # Before the conversion: a K update (1600 + 20 x .5), the H mark gone.
    assert row(played, 1)["rating"] == 1610 and row(played, 1)["ecf_status"] == 2
    assert row(played, 1)["inherited_results"] is None
    assert row(played.with_columns(c=category(2022 * 12 + 2, PARAMS)), 1)["c"] == "K"
    # After it: unrated, so a New Player with the dummy game at his last Full Rating: (1600 + 1600)/2 + dp(.75).
    late = rate_system_period(ECF, state([h, opponent]), games((1, 2, 1.0)), PARAMS, 2023 * 12).state
    assert row(late, 1)["rating"] == 1600 + 193 and row(late, 1)["ecf_status"] == 1


def test_categories_from_activity():
    players = state(
        [
            {"player_id": 1, "rating": 2000.0, "recent_games": "10 0 0 10 5 5"},  # 30 in the 12 months: A
            {"player_id": 2, "rating": 2000.0, "recent_games": "10 0 0 10 5 4"},  # 29: K
            {"player_id": 3, "rating": 1500.0, "ecf_status": 1, "p_games": 3},  # P
            {"player_id": 4, "rating": 1500.0, "ecf_status": 0},  # no rating
            {"player_id": 5, "rating": 1800.0, "last_period": MAY - 37},  # none in the 36 months to MAY - 1
            {"player_id": 6, "rating": 1800.0, "last_period": MAY - 36},  # the 36th month back: listed
        ]
    )

    def labels(period: int) -> list:
        return players.select(category(period, PARAMS).alias("c"))["c"].to_list()

    assert labels(MAY - 1) == ["A", "K", "P", None, None, "K"]
    # Player 1's six months (newest first, the newest MAY - 1) stay in the 12 months up to MAY + 4 ...
    assert labels(MAY + 4)[0] == "A"
    # ... and at MAY + 6 the oldest of them (5 results) falls out: 25 results, K.
    assert labels(MAY + 6)[0] == "K"


def test_recent_games_shift_with_skipped_months():
    before = state([{"player_id": 1, "rating": 1800.0, "recent_games": "2 1"}, {"player_id": 2, "rating": 1800.0}])
    new = rate_system_period(ECF, before, games((1, 2, 0.5), (2, 1, 0.5)), PARAMS, MAY + 2).state
    assert row(new, 1)["recent_games"] == "2 0 0 2 1"  # this month, two empty months, then the older ones
    long = state([{"player_id": 1, "rating": 1800.0, "recent_games": " ".join(["1"] * 12)}])
    long = pl.concat([long, state([{"player_id": 2, "rating": 1800.0}])])
    assert (
        len(row(rate_system_period(ECF, long, games((1, 2, 1.0)), PARAMS, MAY).state, 1)["recent_games"].split()) == 12
    )


def test_seeded_players_are_fully_rated_and_new_players_have_no_rating():
    assert ECF.seeded(PARAMS) == {"ecf_status": 2}
    new = rate_system_period(ECF, empty_state(ECF), games((1, 2, 1.0)), PARAMS, MAY).state
    # Two newcomers: pass 1 gives both the nominal 1500 (a draw against it), pass 2 rates them against it.
    assert row(new, 1)["rating"] == 1500 + 193 and row(new, 2)["rating"] == 1500 - 193
    assert new["ecf_status"].to_list() == [1, 1]


def _rate_period_ecf(tmp_path, previous: str, games: str, setting: str) -> pl.DataFrame:
    """`ratings rate-period --rules ecf` of March 2025 on the list and games given (the games' rows, after the
    header), with one --set; the new list.
    """
    (tmp_path / "prev.csv").write_text(previous)
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result,date\n" + games)
    out = tmp_path / "new.csv"
    code = main(
        ["rate-period", "--rules", "ecf", "--month", "2025-03", "--list", str(tmp_path / "prev.csv")]
        + ["--games", str(tmp_path / "games.csv"), "--out", str(out), "--set", setting]
    )
    assert code == 0
    return pl.read_csv(out)


def test_rate_period_command_with_ecf(tmp_path):
    new = _rate_period_ecf(
        tmp_path,
        "player_id,rating,games_total\n1,1800,200\n2,,0\n",
        "A,2,1,1-0,2025-03-02\nB,3,2,0-1,2025-03-09\n",
        "fictional_opponent_rating=1500",
    )
    assert {"player_id", "rating", "games_total", "ecf_status", "p_games", "recent_games"} <= set(new.columns)
    assert row(new, 1)["ecf_status"] == 2 and row(new, 1)["rating"] < 1800  # listed rating: a Full Rating
    assert row(new, 2)["ecf_status"] == 1 and row(new, 3)["ecf_status"] == 1


def test_evaluate_command_with_ecf(tmp_path, capsys):
    path = tmp_path / "games.csv"
    path.write_text("month,white_id,black_id,result\n2024-01,1,2,1-0\n2024-01,3,4,1/2-1/2\n2024-02,1,3,1-0\n")
    code = main(["evaluate", "--games", str(path), "--rules", "ecf"]
                + ["--train-to", "2024-01", "--test-from", "2024-02", "--test-to", "2024-02"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "ecf" in out


def test_an_ecf_scenario_declares_the_six_list_window():
    from pipeline.scenarios.model import Scenario

    scenario = Scenario(name="england", description="ECF", system="ecf", recalculation={"window": 6})
    assert scenario.recalculation_policy() == 6


def test_a_scenario_month_moves_seed_list_players_by_k():
    from pipeline.engine.period import normalize_list
    from pipeline.scenarios.model import Scenario
    from pipeline.scenarios.system_step import rate_system_month, seed_state

    scenario = Scenario(name="england", description="ECF", system="ecf")
    seed = pl.DataFrame({"player_id": [1, 2], "rating": [2000, 1800]})
    game = {"game_id": [1], "event_id": ["e"], "white_id": [1], "black_id": [2], "white_score": [1.0]}
    game |= {"time_control": ["classical"]}
    result = rate_system_month(
        scenario, normalize_list(seed), seed_state(scenario, seed, "2024-01"), pl.DataFrame(game), "2024-01"
    )
    # Seed ratings are Full Ratings: D 200, We .76, 2000 + 20 x .24 = 2004.8 and 1800 - 4.8.
    assert result.rating_list.sort("player_id")["rating"].to_list() == [2005, 1795]
    EcfState.validate(result.state)
