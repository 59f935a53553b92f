"""Scenarios rated by a rating system (pipeline/systems).

Scenario-file validation, and a system chain in Dagster against rate_system_period by hand.
"""

import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assets.automation import range_tags
from pipeline.ingest.registry import read_seed_list
from pipeline.months import add_months, month_index
from pipeline.rules.model import RulesError
from pipeline.scenarios.model import Scenario, load_scenarios
from pipeline.scenarios.system_step import rate_system_month, seed_state
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.systems import rate_system_period

TINY_START, TINY_END = "2024-01", "2024-04"
GLICKO2 = Scenario(name="g2", description="Glicko-2, tau 0.5", system="glicko2", set={"tau": 0.5, "init_rd": 250})
STEPH = Scenario(
    name="steph",
    description="Stephenson",
    system="stephenson",
    set={"cval": 5, "hval": 5, "lambda": 4, "init_rating": 1500},
)
PLAIN = Scenario(name="plain", description="FIDE's regulations", rules="fide-historical")
SCENARIOS = {"g2": GLICKO2, "steph": STEPH, "plain": PLAIN}


# -- the scenario file -------------------------------------------------------------------------


def write_scenarios(tmp_path: Path, body: str) -> str:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n" + body)
    return str(path)


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "  g:\n    system: glicko7\n",
            r"scenario 'g': system: .*unknown rating system 'glicko7'; systems: dwz, ecf, elo, glicko, glicko2",
        ),
        ("  g:\n    system: glicko2\n    set: {tau: -1}\n", r"scenario 'g': set.tau: Input should be greater than 0"),
        (
            "  g:\n    system: glicko2\n    set: {c: 15}\n",
            r"scenario 'g': set.c: Extra inputs are not permitted \(glicko2 parameters: .*tau",
        ),
        (
            "  g:\n    system: glicko2\n    rules: fide-2024\n",
            r"scenario 'g': .*either 'rules' \(a rule set\) or 'system'",
        ),
        ("  g:\n    description: neither\n", r"scenario 'g': .*either 'rules'"),
        (
            "  g:\n    system: glicko2\n    events: [{after: '2024-02', compress: {}}]\n",
            r"scenario 'g': .*events: only a rule-set scenario",
        ),
        (
            "  g:\n    system: glicko2\n    time_controls: [bullet]\n",
            r"scenario 'g': time_controls: .*unknown time control\(s\) bullet",
        ),
        (
            "  g:\n    rules: fide-2024\n    time_controls: [rapid]\n",
            r"scenario 'g': .*time_controls: only a system scenario",
        ),
    ],
)
def test_a_wrong_system_scenario_names_the_scenario_and_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        load_scenarios(write_scenarios(tmp_path, body))


def test_the_shipped_scenarios_include_glicko2_and_stephenson_beside_fides() -> None:
    scenarios = load_scenarios()
    assert {"actual", "glicko2", "stephenson"} <= set(scenarios)
    assert scenarios["glicko2"].system_rules().system.name == "glicko2"
    assert scenarios["stephenson"].system_rules().params.lambda_ == 4
    assert scenarios["glicko2"].period_months("2008-03") == ["2008-03"]  # one period a month, even before 2012


def test_seed_players_start_at_their_rating_with_the_initial_deviation() -> None:
    seed = pl.DataFrame(
        {"player_id": [1, 2], "rating": [2400, None]}, schema={"player_id": pl.Int64, "rating": pl.Int32}
    )
    state = seed_state(GLICKO2, seed, "2024-01")
    assert state.rows(named=True) == [
        {
            "player_id": 1,
            "rating": 2400.0,
            "deviation": 250.0,
            "volatility": 0.06,
            "games": 0,
            "wins": 0,
            "draws": 0,
            "losses": 0,
            "last_period": month_index("2023-12"),
        }
    ]


def test_a_system_list_says_ever_2400_for_a_seed_player_who_reached_it_and_dropped() -> None:
    """A system has no K: its list's ever_2400 keeps FIDE's meaning (reached 2400), also from a seed list that
    states nothing (regulations.reached_elite under the default K policy).
    """
    from pipeline.engine.period import normalize_list

    seed = pl.DataFrame({"player_id": [1, 2], "rating": [2405, 2395]})
    previous, state = normalize_list(seed), seed_state(GLICKO2, seed, "2024-01")
    assert previous["ever_2400"].to_list() == [False, False]  # the seed list says nothing
    games = pl.DataFrame(
        {
            "game_id": [1],
            "event_id": ["e"],
            "white_id": [1],
            "black_id": [2],
            "white_score": [0.0],
            "time_control": ["classical"],
        }
    )
    rating_list = rate_system_month(GLICKO2, previous, state, games, "2024-01").rating_list
    assert rating_list["rating"][0] < 2400 < rating_list["rating"][1]
    assert rating_list["ever_2400"].to_list() == [True, True]


def test_an_idle_player_keeps_the_list_rating_and_deviation_grows_when_he_plays_again() -> None:
    seed = pl.DataFrame({"player_id": [1, 2], "rating": [2000, 2000]})
    from pipeline.engine.period import normalize_list

    previous, state = normalize_list(seed), seed_state(GLICKO2, seed, "2024-01")
    game = {
        "game_id": [1],
        "event_id": ["e"],
        "white_id": [1],
        "black_id": [2],
        "white_score": [1.0],
        "time_control": ["classical"],
    }
    for month in ("2024-01", "2024-02", "2024-03"):
        games = pl.DataFrame(game) if month != "2024-02" else pl.DataFrame(game).clear()
        result = rate_system_month(GLICKO2, previous, state, games, month)
        previous, state = result.rating_list, result.state
        if month == "2024-02":
            assert result.rating_list["change"].to_list() == [0, 0] and result.rating_list["games"].to_list() == [0, 0]
    # By hand: period 1, then period 3 (the idle month 2 grows phi^2 by sigma^2 inside rate_system_period).
    system, params = GLICKO2.system_rules().system, GLICKO2.system_rules().params
    by_hand = seed_state(GLICKO2, seed, "2024-01")
    for month in ("2024-01", "2024-03"):
        by_hand = rate_system_period(system, by_hand, pl.DataFrame(game), params, month_index(month)).state
    assert_frame_equal(state, by_hand)


# -- a system chain in Dagster -------------------------------------------------------------------


@pytest.fixture(scope="module")
def system_runs(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Months 1-3 in one range run, then month 4 alone, for two systems and a rule set side by side."""
    from assets.definitions import build_defs

    root = tmp_path_factory.mktemp("systems") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    defs = build_defs(TINY_START, TINY_END, root=str(root), scenarios=SCENARIOS)
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("all_months")
    ranged = job.execute_in_process(instance=instance, tags=range_tags(TINY_START, "2024-03"))
    single = job.execute_in_process(instance=instance, partition_key=TINY_END)
    return SimpleNamespace(root=str(root), store=ObjectStore(str(root)), ranged=ranged, single=single)


def by_hand(store: ObjectStore, scenario: Scenario, months: list[str]) -> list[pl.DataFrame]:
    """The system's state after each month: systems.rate_system_period on the stored validated games, nothing else."""
    rules = scenario.system_rules()
    system, params = rules.system, rules.params
    seed = read_seed_list(store)
    rated = seed.filter(pl.col("rating").is_not_null())
    values = {
        "games": 0,
        "wins": 0,
        "draws": 0,
        "losses": 0,
        **system.initial(params),
        "last_period": month_index(add_months(months[0], -1)),
    }
    state = pl.DataFrame(
        {
            "player_id": rated["player_id"].cast(pl.Int64),
            "rating": rated["rating"].cast(pl.Float64),
            **{
                column: pl.Series([values.get(column)] * rated.height, dtype=dtype)
                for column, dtype in system.state_schema().items()
                if column not in ("player_id", "rating")
            },
        }
    ).sort("player_id")
    states = []
    for month in months:
        games = store.read_parquet(table_key(["games"], month)).filter(
            pl.col("time_control").is_in(["classical", "modern"])
        )
        state = rate_system_period(system, state, games, params, month_index(month)).state
        states.append(state)
    return states


@pytest.mark.parametrize("scenario", [GLICKO2, STEPH], ids=lambda s: s.name)
def test_the_stored_chain_is_rate_period_month_by_month(system_runs: SimpleNamespace, scenario: Scenario) -> None:
    assert system_runs.ranged.success and system_runs.single.success
    store = system_runs.store
    months = ["2024-01", "2024-02", "2024-03", "2024-04"]
    for month, expected in zip(months, by_hand(store, scenario, months), strict=True):
        state = store.read_parquet(table_key([scenario.name, "system_state"], month))
        assert_frame_equal(state, expected, check_exact=False, rel_tol=1e-12)
        stored = store.read_parquet(table_key([scenario.name, "rating_list"], month)).join(
            expected, on="player_id", how="inner", suffix="_state"
        )
        assert stored.height == expected.height
        # The published rating is the state's, rounded half away from zero; deviation and volatility as kept.
        assert (stored["rating"] == (stored["rating_state"].abs() + 0.5).floor() * stored["rating_state"].sign()).all()
        assert_frame_equal(stored.select("deviation"), expected.select("deviation"), check_exact=False)
        if "volatility" in scenario.system_rules().system.state_columns:
            assert_frame_equal(stored.select("volatility"), expected.select("volatility"), check_exact=False)
        else:
            assert stored["volatility"].null_count() == stored.height


def test_rated_games_carry_the_systems_expectancy_from_the_state_before_the_month(system_runs: SimpleNamespace) -> None:
    from pipeline.systems import predict

    store = system_runs.store
    rules = GLICKO2.system_rules()
    before = store.read_parquet(table_key(["g2", "system_state"], "2024-02"))
    rated = store.read_parquet(table_key(["g2", "rated_games"], "2024-03"))
    counted = rated.filter(pl.col("weight") > 0)
    assert counted.height and counted["white_expected"].null_count() == 0
    expected = predict(rules.system, before, counted, rules.params)
    assert (counted["white_expected"] - expected).abs().max() < 1e-12
    assert ((counted["white_expected"] + counted["black_expected"] - 1.0).abs() < 1e-12).all()
    # Every game of the month is in the table, as for the rule set, so crosstables cover the same games.
    plain = store.read_parquet(table_key(["plain", "rated_games"], "2024-03"))
    assert sorted(rated["game_id"]) == sorted(plain["game_id"])


def test_crosstables_accuracy_published_list_and_checks_exist_for_the_systems(system_runs: SimpleNamespace) -> None:
    store = system_runs.store
    for key in ("g2", "steph"):
        for month in ("2024-03", "2024-04"):
            assert store.read_parquet(table_key([key, "crosstable"], month)).height > 0
            accuracy = store.read_parquet(table_key([key, "accuracy"], month))
            assert accuracy["games"][0] > 0 and accuracy["deviance"][0] is not None
        listed = store.read_parquet(table_key([key, "rating_list"], "2024-04")).filter(pl.col("rating").is_not_null())
        published = pl.read_csv(store.read_bytes(f"lists/{key}/2024-04.csv"))
        assert_frame_equal(
            published.filter(pl.col("rating").is_not_null())
            .select(player_id="id", rating=pl.col("rating").cast(pl.Int32))
            .sort("player_id"),
            listed.select("player_id", "rating").sort("player_id"),
        )
    for result in (system_runs.ranged, system_runs.single):
        evaluations = result.get_asset_check_evaluations()
        names = {(e.asset_key.path[0], e.check_name) for e in evaluations}
        assert {
            ("g2", "list_continuity"),
            ("g2", "rating_points_conserved"),
            ("steph", "schema"),
            ("g2", "floor_respected"),
        } <= names
        failed = [(e.asset_key.to_user_string(), e.check_name) for e in evaluations if not e.passed]
        assert failed == []
    comparison = store.read_parquet("reports/all-scenarios/accuracy-comparison/2024-2024.parquet")
    assert set(comparison["scenario"]) == {"g2", "steph", "plain"}


def test_the_leaderboard_has_one_row_per_scenario_with_every_metric(system_runs: SimpleNamespace) -> None:
    store = system_runs.store
    board = store.read_parquet("evaluation/leaderboard.parquet")
    assert sorted(board["scenario"]) == ["g2", "plain", "steph"]
    assert board["rank"].to_list() == [1, 2, 3]
    assert board["deviance_log10"].is_sorted()
    for metric in ("deviance_log10", "bdev", "player_month_rmse", "mean_abs_error"):
        assert board[metric].null_count() == 0, metric
    first = board.row(0, named=True)
    # Four months: the last two are the test (at most half), trained on the first two.
    assert (first["train_from"], first["train_to"], first["test_from"], first["test_to"]) == (
        "2024-01",
        "2024-02",
        "2024-03",
        "2024-04",
    )
    assert set(board["common_games"]) == {first["common_games"]} and 0 < first["common_games"] <= first["test_games"]
    systems = board.filter(pl.col("kind") == "system")
    assert (systems["predicted_games"] >= board.filter(pl.col("kind") == "rule set")["predicted_games"][0]).all()
    page = store.read_bytes("reports/evaluation/leaderboard.html").decode()
    assert "lower is better" in page.lower() and "2024-03..2024-04" in page
    assert 'href="evaluation/leaderboard.html"' in store.read_bytes("reports/index.html").decode()
