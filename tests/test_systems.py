"""Rating systems beside FIDE's Elo (pipeline/systems).

The papers' worked examples, the glicko2 package, White advantage.
"""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl
import pytest

from pipeline.systems import REGISTRY, empty_state, get_system, predict, rate_system_period
from pipeline.systems.glicko2 import illinois_root, new_volatility
from schemas.system_state import SystemState

Q = math.log(10) / 400


def state_of(system_name: str, rows: list[dict]) -> pl.DataFrame:
    """A state frame with the bookkeeping columns filled: everybody last rated in period 0."""
    system = get_system(system_name)
    full = [
        {
            "games": 50,
            "wins": 0,
            "draws": 0,
            "losses": 0,
            "last_period": 0,
            "deviation": None,
            "volatility": None,
            **{name: None for name in system.extra_state},
            **row,
        }
        for row in rows
    ]
    return pl.DataFrame(full, schema=system.state_schema())


def rating_of(state: pl.DataFrame, player: int, column: str = "rating") -> float:
    return state.filter(pl.col("player_id") == player)[column].item()


# The example of both papers: a 1500 player (RD 200) beats a 1400 (RD 30), loses to a 1550 (RD 100) and a 1700 (RD 300).
PAPER_GAMES = pl.DataFrame({"white_id": [1, 3, 4], "black_id": [2, 1, 1], "white_score": [1.0, 1.0, 1.0]})
PAPER_PLAYERS = [
    {"player_id": 1, "rating": 1500.0, "deviation": 200.0},
    {"player_id": 2, "rating": 1400.0, "deviation": 30.0},
    {"player_id": 3, "rating": 1550.0, "deviation": 100.0},
    {"player_id": 4, "rating": 1700.0, "deviation": 300.0},
]


def test_glicko_reproduces_glickmans_example():
    glicko = get_system("glicko")
    # c = 0: the example starts from the pre-period RDs (Step 1 already applied).
    result = rate_system_period(glicko, state_of("glicko", PAPER_PLAYERS), PAPER_GAMES, glicko.params(c=0), 1)
    assert rating_of(result.state, 1) == pytest.approx(1464, abs=0.5)  # "= 1500 - 36 = 1464"
    assert rating_of(result.state, 1, "deviation") == pytest.approx(151.4, abs=0.05)  # "sqrt(22918.9) = 151.4"
    SystemState.validate(result.state)


def test_glicko_expected_outcome_example():
    # "a player rated 1400 with an RD of 80 competes against a player rated 1500 with an RD of 150 ... E = 0.376"
    glicko = get_system("glicko")
    state = state_of(
        "glicko",
        [{"player_id": 1, "rating": 1400.0, "deviation": 80.0}, {"player_id": 2, "rating": 1500.0, "deviation": 150.0}],
    )
    expected = predict(
        glicko, state, pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [0.0]}), glicko.params()
    )
    assert expected[0] == pytest.approx(0.376, abs=0.0005)


def test_glicko_step1_grows_the_deviation_with_idle_periods():
    glicko = get_system("glicko")
    params = glicko.params(c=50, rd_max=350)
    state = state_of(
        "glicko",
        [
            {"player_id": 1, "rating": 1500.0, "deviation": 100.0},
            {"player_id": 2, "rating": 1500.0, "deviation": 100.0, "last_period": 4},
        ],
    )
    # Player 1 idle for periods 1-4: RD = min(sqrt(100^2 + 50^2 x 5), 350) = 150 before period 5's games;
    # player 2 played in period 4: sqrt(100^2 + 50^2). A draw between equals leaves the ratings alone.
    result = rate_system_period(
        glicko, state, pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [0.5]}), params, 5
    )
    for player, pre_rd, opp_rd in ((1, 150.0, math.hypot(100, 50)), (2, math.hypot(100, 50), 150.0)):
        g = 1 / math.sqrt(1 + 3 * Q**2 * opp_rd**2 / math.pi**2)
        assert rating_of(result.state, player, "deviation") == pytest.approx(
            math.sqrt(1 / (1 / pre_rd**2 + Q**2 * g**2 * 0.25)), rel=1e-9
        )
        assert rating_of(result.state, player) == pytest.approx(1500.0)


def test_glicko2_reproduces_glickmans_example():
    glicko2 = get_system("glicko2")
    players = [{**row, "volatility": 0.06} for row in PAPER_PLAYERS]
    result = rate_system_period(glicko2, state_of("glicko2", players), PAPER_GAMES, glicko2.params(tau=0.5), 1)
    assert rating_of(result.state, 1) == pytest.approx(1464.06, abs=0.01)
    assert rating_of(result.state, 1, "deviation") == pytest.approx(151.52, abs=0.01)
    assert rating_of(result.state, 1, "volatility") == pytest.approx(
        0.05999, abs=0.00001
    )  # e^(-5.62696/2), printed to 4 digits
    SystemState.validate(result.state)


def test_glicko2_illinois_iteration_converges_as_in_the_paper():
    # The example's Step 5: v = 1.7785, Delta = -0.4834, phi = 1.1513, sigma = 0.06, tau = 0.5 -> A = -5.62696.
    sigma = new_volatility(np.array([-0.4834]), np.array([1.1513**2]), np.array([1.7785]), np.array([0.06]), 0.5, 1e-6)
    assert math.log(sigma[0] ** 2) == pytest.approx(-5.62696, abs=0.00001)


@pytest.mark.parametrize(
    ("low", "high", "root"),
    [
        (0.0, 2.0, 1.0),  # the first C is the root: f(C) = 0 exactly
        (0.0, 2.0, 2.0),  # the bound B is the root from the start: f(B) = 0 exactly
        (-3.0, 1.0, -1.0),
    ],
)
def test_glicko2_illinois_step_takes_an_exact_zero_as_the_root(low: float, high: float, root: float):
    """Glickman's Step 5.4(b) is "if f_C f_B <= 0": a C where f is exactly 0 becomes the new A, so the bracket closes
    on the root. With a strict < 0, A keeps its stale value while f_A is halved and never reaches it.
    """
    line = lambda x: x - root  # noqa: E731 (f(C) is exactly 0 at the root: C is computed exactly on a line)
    found = illinois_root(line, np.array([low]), np.array([high]), 1e-6)
    assert found[0] == root


def test_glicko2_matches_the_glicko2_package():
    package = pytest.importorskip("glicko2")
    rng = random.Random(7)
    # glicko2 2.1.0's Step 5 f(x) writes mu^2 where Glickman writes phi^2 (Player._f uses the rating), so
    # the package follows the paper only for players with mu^2 = phi^2: ratings 1500 +- RD.
    deviations = [rng.uniform(40, 300) for _ in range(8)]
    players = [
        {
            "player_id": i,
            "rating": 1500 + rng.choice([-1, 1]) * rd,
            "deviation": rd,
            "volatility": rng.uniform(0.04, 0.09),
        }
        for i, rd in enumerate(deviations, 1)
    ]
    pairs = [(a, b) for a in range(1, 9) for b in range(a + 1, 9) if rng.random() < 0.6]
    games = pl.DataFrame(
        {
            "white_id": [a for a, _ in pairs],
            "black_id": [b for _, b in pairs],
            "white_score": [rng.choice([0.0, 0.5, 1.0]) for _ in pairs],
        }
    )
    glicko2 = get_system("glicko2")
    ours = rate_system_period(
        glicko2, state_of("glicko2", players), games, glicko2.params(tau=0.5, rd_max=10_000), 1
    ).state
    by_id = {p["player_id"]: p for p in players}
    for player in by_id:
        opponents, outcomes = [], []
        for white, black, score in games.iter_rows():
            if player in (white, black):
                opponents.append(black if player == white else white)
                outcomes.append(score if player == white else 1 - score)
        if not opponents:
            continue
        reference = package.Player(
            rating=by_id[player]["rating"], rd=by_id[player]["deviation"], vol=by_id[player]["volatility"]
        )
        reference._tau = 0.5
        reference.update_player(
            [by_id[o]["rating"] for o in opponents], [by_id[o]["deviation"] for o in opponents], outcomes
        )
        assert rating_of(ours, player) == pytest.approx(reference.rating, abs=1e-4)
        assert rating_of(ours, player, "deviation") == pytest.approx(reference.rd, abs=1e-4)
        assert rating_of(ours, player, "volatility") == pytest.approx(reference.vol, abs=1e-6)


ONE_GAME = {"white_id": [1], "black_id": [2], "white_score": [0.5]}


@pytest.mark.parametrize("known", [True, False])
def test_elo_white_advantage_in_prediction_and_update(known: bool):
    elo = get_system("elo")
    params = elo.params(k=20, white_advantage=30, init_rating=2200)
    games = pl.DataFrame({**ONE_GAME, "colour_known": [known]})
    result = rate_system_period(elo, empty_state(elo), games, params, 1)
    # Equal ratings: White expects 1 / (1 + 10^(-30/400)) with colours known, a coin flip otherwise.
    white_expected = 1 / (1 + 10 ** (-30 / 400)) if known else 0.5
    assert result.games["white_expected"][0] == pytest.approx(white_expected, rel=1e-12)
    assert rating_of(result.state, 1) == pytest.approx(2200 + 20 * (0.5 - white_expected), rel=1e-12)
    assert rating_of(result.state, 2) == pytest.approx(2200 - 20 * (0.5 - white_expected), rel=1e-12)


def test_glicko_white_advantage_enters_the_update():
    glicko = get_system("glicko")
    params = glicko.params(c=0, white_advantage=40)
    state = state_of(
        "glicko",
        [{"player_id": 1, "rating": 1600.0, "deviation": 120.0}, {"player_id": 2, "rating": 1600.0, "deviation": 80.0}],
    )
    result = rate_system_period(glicko, state, pl.DataFrame(ONE_GAME), params, 1)
    g_black = 1 / math.sqrt(1 + 3 * Q**2 * 80**2 / math.pi**2)
    e_white = 1 / (1 + 10 ** (-g_black * 40 / 400))
    variance = 1 / (1 / 120**2 + Q**2 * g_black**2 * e_white * (1 - e_white))
    assert rating_of(result.state, 1) == pytest.approx(1600 + Q * variance * g_black * (0.5 - e_white), rel=1e-12)
    # The prediction uses both deviations (Glicko's expected outcome) and the same advantage.
    g_both = 1 / math.sqrt(1 + 3 * Q**2 * (120**2 + 80**2) / math.pi**2)
    assert result.games["white_expected"][0] == pytest.approx(1 / (1 + 10 ** (-g_both * 40 / 400)), rel=1e-12)
    unknown = rate_system_period(glicko, state, pl.DataFrame({**ONE_GAME, "colour_known": [False]}), params, 1)
    assert rating_of(unknown.state, 1) == pytest.approx(1600.0)  # a draw between equals, no advantage: no change


def test_stephenson_update_by_hand():
    steph = get_system("stephenson")
    params = steph.params(cval=10, hval=5, bval=1, **{"lambda": 2}, white_advantage=0)
    state = state_of(
        "stephenson",
        [{"player_id": 1, "rating": 2200.0, "deviation": 100.0}, {"player_id": 2, "rating": 2400.0, "deviation": 60.0}],
    )
    result = rate_system_period(
        steph, state, pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [1.0]}), params, 1
    )
    # Appendix: v = v + c t (c = 100, t = 1); v* = (1/(v + h m) + d)^-1 (h = 25, m = 1);
    # r* = r + q v* k (s - e + b) + lambda (rbar - r), b = 0.01, lambda = 0.02.
    v1, v2 = 100**2 + 100, 60**2 + 100
    k = 1 / math.sqrt(1 + 3 * Q**2 * v2 / math.pi**2)
    e = 1 / (1 + 10 ** (-k * (2200 - 2400) / 400))
    v_star = 1 / (1 / (v1 + 25) + Q**2 * k**2 * e * (1 - e))
    assert rating_of(result.state, 1) == pytest.approx(2200 + Q * v_star * k * (1 - e + 0.01) + 0.02 * 200, rel=1e-12)
    assert rating_of(result.state, 1, "deviation") == pytest.approx(math.sqrt(v_star), rel=1e-12)


def test_stephenson_without_h_b_lambda_is_glicko():
    players = [{"player_id": i, "rating": 1500.0 + 37 * i, "deviation": 50.0 + 20 * i} for i in range(1, 6)]
    games = pl.DataFrame(
        {"white_id": [1, 2, 3, 4, 5, 1], "black_id": [2, 3, 4, 5, 1, 3], "white_score": [1.0, 0.5, 0.0, 1.0, 0.5, 0.0]}
    )
    glicko, steph = get_system("glicko"), get_system("stephenson")
    a = rate_system_period(glicko, state_of("glicko", players), games, glicko.params(c=12), 3).state
    b = rate_system_period(
        steph, state_of("stephenson", players), games, steph.params(cval=12, hval=0, bval=0, **{"lambda": 0}), 3
    ).state
    assert np.allclose(a["rating"].to_numpy(), b["rating"].to_numpy(), rtol=0, atol=1e-9)
    assert np.allclose(a["deviation"].to_numpy(), b["deviation"].to_numpy(), rtol=0, atol=1e-9)


# uscf's worked examples and hand cases: tests/test_system_uscf.py; dwz's: tests/test_system_dwz.py;
# ecf's: tests/test_system_ecf.py.


def test_registry_and_state_columns():
    assert set(REGISTRY) == {"dwz", "ecf", "elo", "glicko", "glicko2", "stephenson", "uscf"}
    assert get_system("steph").name == "stephenson"
    with pytest.raises(ValueError, match="unknown rating system"):
        get_system("trueskill")
    games = pl.DataFrame({"white_id": [1, 2, 3], "black_id": [2, 3, 1], "white_score": [1.0, 0.5, 0.0]})
    for name in REGISTRY:
        system = get_system(name)
        assert set(system.state_columns) <= {"rating", "deviation", "volatility", *system.extra_state}
        state = rate_system_period(system, empty_state(system), games, system.params(), 7).state
        SystemState.validate(state)
        assert state["games"].to_list() == [2, 2, 2] and state["last_period"].to_list() == [7, 7, 7]
        with pytest.raises(ValueError, match="not after"):
            rate_system_period(system, state, games, system.params(), 7)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_bare_system_name_starts_unrated_players_at_the_systems_own_init_rating(name):
    from pipeline.evaluation.raters import load_rater
    from pipeline.scenarios.model import Scenario
    from pipeline.systems.config import DEFAULT_INIT, load_system_rules

    own = get_system(name).params().init_rating
    assert load_system_rules(name).params == Scenario(name="own", system=name).system_rules().params
    assert load_system_rules(name).params.init_rating == own
    assert load_system_rules(name, ["init_rating=1234"]).params.init_rating == 1234
    # `ratings evaluate`'s protocol starts everybody at 2200 (README, "Protocol"), whatever the system's own.
    assert load_rater(name).settings()["init_rating"] == DEFAULT_INIT


def test_rate_period_with_a_bare_system_name_rates_a_newcomer_from_its_own_init_rating(tmp_path):
    from pipeline.cli.system_period import rate_system_files

    (tmp_path / "prev.csv").write_text(
        "player_id,rating,games_total\n" + "".join(f"{p},1500,100\n" for p in (1, 2, 3, 4))
    )
    (tmp_path / "games.csv").write_text(
        "event_id,white_id,black_id,result,date\n" + "".join(f"E,9,{p},1-0,2025-03-01\n" for p in (1, 2, 3, 4))
    )
    files = str(tmp_path / "prev.csv"), str(tmp_path / "games.csv")
    bare = rate_system_files("uscf", "2025-03", *files, ())
    stated = rate_system_files("uscf", "2025-03", *files, ("init_rating=1300",))
    newcomer = bare.filter(pl.col("player_id") == 9)["rating"].item()
    # US Chess's Step 1 imputes 1300 without a birth year; from 2200 (the evaluation protocol's) he kept 2200.
    assert newcomer == stated.filter(pl.col("player_id") == 9)["rating"].item() == pytest.approx(1893.12, abs=0.01)


def test_a_system_rule_file_is_read_as_written_and_never_stands_in_for_a_preset(tmp_path, monkeypatch):
    from pipeline.systems.config import load_system_rules, rules_document

    monkeypatch.chdir(tmp_path)
    # A file named like a preset, in the current directory, is not read for it.
    (tmp_path / "playerratings-elo").write_text("system: elo\nk: 99\n")
    assert rules_document("playerratings-elo")["k"] != 99
    # A key given twice is refused, naming it, not resolved silently.
    (tmp_path / "twice.yaml").write_text("system: elo\nk: 20\nk: 30\n")
    with pytest.raises(ValueError, match="twice|duplicate"):
        load_system_rules("twice.yaml")


# -- the expectancies the systems share ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("diff", "scale", "expected"),
    [
        (0.0, 400.0, 0.5),  # Elo (1978) 8.4: equal ratings, an even game
        (400.0, 400.0, 10 / 11),  # the scale is the difference at which the favourite's odds are 10 to 1
        (-400.0, 400.0, 1 / 11),
        (200.0, 200.0, 10 / 11),
    ],
)
def test_the_logistic_expectancy_is_elos_curve(diff: float, scale: float, expected: float) -> None:
    from pipeline.systems import logistic_expectancy

    assert pl.select(logistic_expectancy(pl.lit(diff), scale)).item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    # Glickman (1999), "The Glicko system", the example: a 1500 player against these opponents.
    ("opponent", "deviation", "expected"),
    [(1400.0, 30.0, 0.639), (1550.0, 100.0, 0.432), (1700.0, 300.0, 0.303)],
)
def test_the_glicko_expectancy_is_glickmans_worked_example(opponent: float, deviation: float, expected: float) -> None:
    from pipeline.systems import glicko_expectancy, glicko_g

    g = glicko_g(pl.lit(deviation * deviation))
    assert pl.select(glicko_expectancy(g, pl.lit(1500.0 - opponent))).item() == pytest.approx(expected, abs=5e-4)


def test_whrs_polars_expectancy_is_its_numpy_twin() -> None:
    from pipeline.systems import scenario_system
    from pipeline.whole_history.whr import expected_score

    whr = scenario_system("whr")
    white, black = (a.ravel() for a in np.meshgrid(np.arange(800.0, 2900.0, 37.5), np.arange(800.0, 2900.0, 53.0)))
    advantage = np.where(np.arange(len(white)) % 3 == 0, 0.0, 35.0)
    frame = pl.DataFrame({"white_rating": white, "black_rating": black, "advantage": advantage})
    rule = frame.select(whr.expected(whr.params())).to_series().to_numpy()
    # 10^(-D/400) and e^(-D ln 10/400): the same curve, a few ulps apart.
    np.testing.assert_allclose(rule, expected_score(white, black, advantage), rtol=1e-13, atol=0)


def test_a_systems_one_time_events_are_what_it_declares() -> None:
    from dataclasses import replace

    from pipeline.scenarios.model import Scenario
    from pipeline.scenarios.system_step import one_time_events

    dwz = get_system("dwz")
    assert set(dwz.one_time_events) == {"dwz_upgrade"}
    assert all(not get_system(name).one_time_events for name in REGISTRY if name != "dwz")
    scenario = Scenario(name="d", system="dwz", events=[{"after": "2024-02", "dwz_upgrade": {}}])
    state = pl.DataFrame({"player_id": [1], "rating": [1500.0]})
    marked = replace(dwz, one_time_events={"dwz_upgrade": lambda s: s.with_columns(pl.col("rating") + 1.0)})
    assert one_time_events(scenario, marked, state, "2024-02")["rating"].item() == 1501.0
    assert one_time_events(scenario, marked, state, "2024-03").equals(state)  # another month: no event
