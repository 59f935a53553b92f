"""National scenarios: a scenario restricted to one federation's players or dumps, and the DWZ 2025 upgrade.

The upgrade is a one-time event of a dwz scenario.
"""

import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assets.automation import range_tags
from pipeline.engine.period import normalize_list
from pipeline.ingest.registry import registry_history, registry_in_force
from pipeline.months import month_index
from pipeline.rules.model import RulesError
from pipeline.scenarios.model import Scenario, compared_scenarios, load_scenarios, nothing_compared
from pipeline.scenarios.restriction import Restriction, restricted_games
from pipeline.scenarios.system_step import rate_system_month, seed_state, with_registered_births
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.systems import rate_system_period

TINY_START, TINY_END = "2024-01", "2024-04"


def write_scenarios(tmp_path: Path, body: str) -> str:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n" + body)
    return str(path)


@pytest.mark.parametrize(
    "body, message",
    [
        ("  d:\n    system: dwz\n    restrict: {players: ger}\n", r"scenario 'd': .*'ger' is not a federation code"),
        ("  d:\n    system: dwz\n    restrict: {reported_by: GERM}\n", r"scenario 'd': .*'GERM' is not a federation"),
        (
            "  d:\n    system: dwz\n    restrict: {players: GER, reported_by: GER}\n",
            r"scenario 'd': restrict: .*give one of 'players: <FED>'",
        ),
        ("  d:\n    system: dwz\n    restrict: {federation: GER}\n", r"scenario 'd': restrict.federation: Extra input"),
        (
            "  g:\n    system: glicko2\n    events: [{after: '2024-02', dwz_upgrade: {}}]\n",
            r"scenario 'g': .*dwz_upgrade is an event of system dwz, not of 'glicko2'",
        ),
        (
            "  f:\n    rules: fide-2024\n    events: [{after: '2024-02', dwz_upgrade: {}}]\n",
            r"scenario 'f': .*dwz_upgrade is an event of system dwz, not of a rule set",
        ),
        (
            "  d:\n    system: dwz\n    events: [{after: '2024-02', compress: {}}]\n",
            r"scenario 'd': .*events: only a rule-set scenario has compress events",
        ),
        ("  d:\n    system: dwz\n    events: [{after: '2024-02'}]\n", r"scenario 'd': .*give one change"),
    ],
)
def test_a_wrong_national_scenario_names_the_scenario_and_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        load_scenarios(write_scenarios(tmp_path, body))


def test_the_shipped_dwz_ger_scenario_is_german_players_under_dwz_with_the_upgrade() -> None:
    scenarios = load_scenarios()
    dwz = scenarios["dwz_ger"]
    assert dwz.system_rules().system.name == "dwz"
    assert dwz.restrict == Restriction(players="GER")
    assert [event.after for event in dwz.events if event.dwz_upgrade is not None] == ["2024-12"]
    # Compared month by month with the others it is not (other games); on the leaderboard it is.
    assert "dwz_ger" not in compared_scenarios(scenarios)
    assert "dwz_ger" in compared_scenarios(scenarios, national=True)


def test_the_baseline_is_actual_else_the_first_compared_scenario_and_the_comparison_is_against_it() -> None:
    from pipeline.analytics.accuracy import compare_accuracy
    from pipeline.scenarios.model import baseline_name
    from schemas import Accuracy
    from schemas.util import conform

    fide, sonas = Scenario(name="fide", rules="fide-2024"), Scenario(name="sonas", rules="sonas-2002")
    german = Scenario(name="german", system="dwz", restrict={"players": "GER"})
    assert baseline_name({"sonas": sonas, "actual": fide.model_copy(update={"name": "actual"})}) == "actual"
    assert baseline_name({}) is None and compared_scenarios({}) == {}
    # Without `actual`: the first scenario, for the scenarios compared and for the report's comparison alike.
    assert baseline_name({"sonas": sonas, "fide": fide}) == "sonas"
    # A national first scenario chooses the list compared, but is not compared: the comparison's baseline is the
    # first scenario it holds.
    compared = compared_scenarios({"german": german, "fide": fide, "sonas": sonas})
    assert list(compared) == ["fide", "sonas"] and baseline_name(compared) == "fide"
    monthly = pl.DataFrame(
        {
            "month": ["2024-01", "2024-02"] * 2,
            "scenario": ["fide", "fide", "sonas", "sonas"],
            **{"players": [10] * 4, "games": [20] * 4, "sides": [40] * 4},
            "total_abs_error": [5.0, 6.0, 4.0, 7.0],
            "sum_squared_error": [4.0, 5.0, 3.0, 6.0],
            "deviance_sum": [5.0, 5.0, 4.0, 6.0],
        }
    ).with_columns(
        mean_abs_error=pl.col("total_abs_error") / 10,
        rmse=(pl.col("sum_squared_error") / 10).sqrt(),
        deviance=pl.col("deviance_sum") / 20,
    )
    table = compare_accuracy(Accuracy.validate(conform(monthly, Accuracy)), baseline_name(compared))
    assert table["scenario"].to_list() == ["fide", "sonas"] and set(table["baseline"]) == {"fide"}
    assert table.filter(pl.col("scenario") == "sonas")["share_better_mean_abs_error"].item() == 0.5


def test_the_shipped_ecf_eng_scenario_is_englands_reports_under_ecf_with_six_lists_recalculated() -> None:
    scenarios = load_scenarios()
    ecf = scenarios["ecf_eng"]
    assert ecf.system_rules().system.name == "ecf"
    assert ecf.restrict == Restriction(reported_by="ENG")
    assert ecf.recalculation_policy() == 6
    assert "ecf_eng" not in compared_scenarios(scenarios)


GAMES = pl.DataFrame(
    {
        "game_id": [1, 2, 3, 4],
        "federation": ["GER", "GER", "ENG", "ENG"],
        "white_id": [1, 1, 3, 2],
        "black_id": [2, 3, 4, 4],
    }
)
REGISTRY = pl.DataFrame({"player_id": [1, 2, 3, 4], "federation": ["GER", "GER", "ENG", "ENG"]})


@pytest.mark.parametrize(
    "restriction, kept",
    [
        (Restriction(players="GER"), [1]),  # 1-3 is a German dump's game against an English player
        (Restriction(players="ENG"), [3]),
        (Restriction(reported_by="GER"), [1, 2]),
        (Restriction(reported_by="ENG"), [3, 4]),
    ],
)
def test_a_restriction_keeps_its_federations_players_or_dumps(restriction: Restriction, kept: list[int]) -> None:
    assert restricted_games(GAMES, restriction, REGISTRY)["game_id"].to_list() == kept


# -- the DWZ 2025 upgrade as an event ----------------------------------------------------------------


def upgraded(rating: float) -> float:
    """The DSB commission's formula (2024), written out here apart from pipeline.systems.dwz."""
    if rating < 1000:
        return rating + 400
    if rating < 2110:
        return float(round(0.64 * rating + 760))
    return rating


def test_the_dwz_upgrade_event_moves_that_months_list_and_the_next_month_continues_from_it() -> None:
    plain = Scenario(name="d", system="dwz")
    event = Scenario(name="d", system="dwz", events=[{"after": "2024-02", "dwz_upgrade": {}}])
    # Players on each band: below 1000, 1000-2110 (both ends), from 2110 on.
    ratings = [700, 990, 1000, 1500, 2000, 2109, 2110, 2400]
    ids = list(range(1, len(ratings) + 1))
    seed = pl.DataFrame({"player_id": ids, "rating": ratings})
    pairs = list(zip(ids[::2], ids[1::2], strict=True))
    games = pl.DataFrame(
        {
            "game_id": list(range(1, len(pairs) + 1)),
            "event_id": ["e"] * len(pairs),
            "white_id": [w for w, _ in pairs],
            "black_id": [b for _, b in pairs],
            "white_score": [1.0, 0.0, 0.5, 1.0],
            "time_control": ["classical"] * len(pairs),
        }
    )
    chains = {}
    for scenario in (plain, event):
        previous, state = normalize_list(seed), seed_state(scenario, seed, "2024-01")
        months = []
        for month in ("2024-01", "2024-02", "2024-03"):
            result = rate_system_month(scenario, previous, state, games, month)
            previous, state = result.rating_list, result.state
            months.append(result)
        chains[scenario.events != ()] = months
    without, with_event = chains[False], chains[True]
    assert_frame_equal(without[0].rating_list, with_event[0].rating_list)  # before the event, the same chain
    regular = without[1].state.sort("player_id")
    expected = [upgraded(r) for r in regular["rating"]]
    assert with_event[1].state.sort("player_id")["rating"].to_list() == expected
    listed = with_event[1].rating_list.sort("player_id")
    assert listed["rating"].to_list() == [int(r) for r in expected]
    bands = sorted({"below" if r < 1000 else "band" if r < 2110 else "above" for r in regular["rating"]})
    assert bands == ["above", "band", "below"]  # every clause of the formula is exercised
    # The change on the list includes the upgrade: the previous list's rating to the upgraded one.
    assert (listed["change"] == listed["rating"] - with_event[0].rating_list.sort("player_id")["rating"]).all()
    # March: the system's own step from the upgraded state, and so not the chain without the event.
    rules = event.system_rules()
    by_hand = rate_system_period(rules.system, with_event[1].state, games, rules.params, month_index("2024-03")).state
    march = with_event[2].state.sort("player_id")
    assert_frame_equal(march, by_hand.select(march.columns).sort("player_id"))
    assert with_event[2].state["rating"].to_list() != without[2].state["rating"].to_list()


# -- national scenarios in Dagster ------------------------------------------------------------------

DWZ_GER = Scenario(
    name="dwz_ger",
    system="dwz",
    restrict={"players": "GER"},
    events=[{"after": "2024-02", "dwz_upgrade": {}}],
)
ELO_ENG = Scenario(name="elo_eng", system="elo", restrict={"reported_by": "ENG"})
PLAIN = Scenario(name="plain", rules="fide-historical")
SCENARIOS = {"dwz_ger": DWZ_GER, "elo_eng": ELO_ENG, "plain": PLAIN}


@pytest.fixture(scope="module")
def national_runs(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    from assets.definitions import build_defs

    root = tmp_path_factory.mktemp("national") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    defs = build_defs(TINY_START, TINY_END, root=str(root), scenarios=SCENARIOS)
    job = defs.resolve_job_def("all_months")
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), tags=range_tags(TINY_START, TINY_END))
    return SimpleNamespace(store=ObjectStore(str(root)), result=result)


def registry(store: ObjectStore, month: str) -> pl.DataFrame:
    return registry_in_force(registry_history(store, month), month)


def test_a_scenario_restricted_to_ger_players_rates_only_their_games_and_lists_only_them(
    national_runs: SimpleNamespace,
) -> None:
    assert national_runs.result.success
    store = national_runs.store
    for month in ("2024-01", "2024-02", "2024-03", "2024-04"):
        games = store.read_parquet(table_key(["games"], month))
        german = set(registry(store, month).filter(pl.col("federation") == "GER")["player_id"])
        both = games.filter(pl.col("white_id").is_in(list(german)) & pl.col("black_id").is_in(list(german)))
        assert 0 < both.height < games.height  # a restriction that keeps something and drops something
        rated = store.read_parquet(table_key(["dwz_ger", "rated_games"], month))
        assert sorted(rated["game_id"]) == sorted(both["game_id"].cast(pl.UInt64))
        listed = store.read_parquet(table_key(["dwz_ger", "rating_list"], month))
        assert set(listed["player_id"]) <= german and listed.height > 0
        state = store.read_parquet(table_key(["dwz_ger", "system_state"], month))
        assert set(state["player_id"]) <= german
        # The unrestricted scenario beside it rates every game.
        assert store.read_parquet(table_key(["plain", "rated_games"], month)).height == games.height


def test_a_scenario_restricted_to_engs_dumps_rates_exactly_the_games_eng_reported(
    national_runs: SimpleNamespace,
) -> None:
    store = national_runs.store
    for month in ("2024-01", "2024-04"):
        games = store.read_parquet(table_key(["games"], month))
        reported = games.filter(pl.col("federation") == "ENG")
        assert 0 < reported.height < games.height
        rated = store.read_parquet(table_key(["elo_eng", "rated_games"], month))
        assert sorted(rated["game_id"]) == sorted(reported["game_id"].cast(pl.UInt64))


def test_the_upgrade_month_of_the_national_chain_is_the_formula_on_its_regular_state(
    national_runs: SimpleNamespace,
) -> None:
    store = national_runs.store
    rules = DWZ_GER.system_rules()
    before = store.read_parquet(table_key(["dwz_ger", "system_state"], "2024-01"))
    games = store.read_parquet(table_key(["games"], "2024-02"))
    rated_ids = store.read_parquet(table_key(["dwz_ger", "rated_games"], "2024-02"))["game_id"]
    games = games.filter(pl.col("game_id").cast(pl.UInt64).is_in(rated_ids.implode()))
    games = games.filter(pl.col("time_control").is_in(["classical", "modern"]))
    # As the chain gives it the month's players' registered birth years (E from age).
    registered = registry_in_force(registry_history(store, "2024-02"), "2024-02").select("player_id", "birth_year")
    before = with_registered_births(rules, before, pl.concat([games["white_id"], games["black_id"]]), registered)
    regular = rate_system_period(rules.system, before, games, rules.params, month_index("2024-02")).state
    stored = store.read_parquet(table_key(["dwz_ger", "system_state"], "2024-02")).sort("player_id")
    regular = regular.sort("player_id")
    rated_before = regular["dwz_index"] > 0
    expected = [upgraded(r) if held else r for r, held in zip(regular["rating"], rated_before, strict=True)]
    assert stored["rating"].to_list() == expected
    assert (regular.filter(rated_before)["rating"] < 2110).any()
    listed = store.read_parquet(table_key(["dwz_ger", "rating_list"], "2024-02")).join(stored, on="player_id")
    assert (listed["rating"] == listed["rating_right"].round(0).cast(pl.Int32)).all()


def test_national_scenarios_have_crosstables_accuracy_and_an_unranked_leaderboard_row(
    national_runs: SimpleNamespace,
) -> None:
    store = national_runs.store
    for name in ("dwz_ger", "elo_eng"):
        assert store.read_parquet(table_key([name, "crosstable"], "2024-04")).height > 0
        assert store.read_parquet(table_key([name, "accuracy"], "2024-04"))["games"][0] > 0
        assert store.exists(f"lists/{name}/2024-04.csv")
    board = store.read_parquet("evaluation/leaderboard.parquet")
    rows = {row["scenario"]: row for row in board.iter_rows(named=True)}
    assert rows["plain"]["rank"] == 1
    for name in ("dwz_ger", "elo_eng"):
        assert rows[name]["rank"] is None and rows[name]["deviance_log10"] is not None
        assert 0 < rows[name]["common_games"] < rows["plain"]["common_games"]
    assert "GER players' games only" in rows["dwz_ger"]["setting"]
    # The month-by-month comparison stays on the games every scenario of the whole pool rates.
    comparison = store.read_parquet("reports/all-scenarios/accuracy-comparison/2024-2024.parquet")
    assert set(comparison["scenario"]) == {"plain"}


@pytest.mark.parametrize(
    "system, seed_ratings",
    [("uscf", {1: 1500}), ("dwz", {1: 1500, 2: 1400})],  # USCF: a newcomer's initial rating; DWZ: a rated junior's E
)
def test_a_chain_gives_the_system_the_registered_birth_year_of_its_players(system: str, seed_ratings: dict) -> None:
    """USCF's initial rating and DWZ's E read the player's age: a chain month passes the registry's birth years into
    the state before the games, as a `rate-period` list gives them.
    """
    scenario = Scenario(name="n", system=system)
    seed = pl.DataFrame({"player_id": list(seed_ratings), "rating": list(seed_ratings.values())})
    games = pl.DataFrame(
        {
            "game_id": [1, 2, 3, 4, 5],
            "event_id": ["e"] * 5,
            "white_id": [1, 2, 1, 2, 1],
            "black_id": [2, 1, 2, 1, 2],
            "white_score": [0.5, 0.5, 1.0, 0.0, 0.5],
            "time_control": ["classical"] * 5,
            "tc_base_seconds": [5400] * 5,
            "tc_increment_seconds": [30] * 5,
        }
    )
    players = pl.DataFrame({"player_id": [1, 2], "birth_year": [1980, 2014]})
    previous, state = normalize_list(seed), seed_state(scenario, seed, "2024-01")
    with_births = rate_system_month(scenario, previous, state, games, "2024-01", players=players)
    without = rate_system_month(scenario, previous, state, games, "2024-01")
    assert with_births.state.filter(pl.col("player_id") == 2)["birth_year"].to_list() == [2014]
    assert without.state.filter(pl.col("player_id") == 2)["birth_year"].to_list() == [None]
    # The ten-year-old's age moves the ratings (USCF: a prior of 500, not 1300; DWZ: a junior's E).
    assert (
        with_births.state.sort("player_id")["rating"].to_list() != without.state.sort("player_id")["rating"].to_list()
    )


def test_a_restricted_windowed_system_is_rated_again_from_a_later_month(
    tiny_landing_zone: Path, tmp_path: Path, capsys
) -> None:
    """The shipped ecf_eng (ENG's dumps, six lists recalculated) failed every run from a later month with 'schema
    lengths differ': the other federations' games it never rated are looked at as waiting, and a month without a
    TRF stating its tournaments' ends (2024-02 without GER's dumps here) gave its games fewer columns than the others.
    """
    from assets.runtime.cli import main

    store = tmp_path / "store"
    shutil.copytree(tiny_landing_zone, store / "raw")
    shutil.rmtree(store / "raw" / "GER" / "2024-02")
    scenarios = write_scenarios(
        tmp_path,
        "  plain:\n    description: p\n    rules: fide-historical\n"  # a scenario the pages compare
        "  ecf_eng:\n    description: e\n    system: ecf\n    restrict: {reported_by: ENG}\n"
        "    recalculation: {window: 2}\n",
    )
    run = ["run", "--store", str(store), "--scenarios", scenarios, "--dagster-home", str(tmp_path / "home")]
    assert main(run) == 0, capsys.readouterr().out
    stored = (store / "ecf_eng" / "rating_list" / "2024-04.parquet").read_bytes()
    capsys.readouterr()
    assert main([*run, "--from", "2024-04"]) == 0, capsys.readouterr().out
    assert "Run done: 1 months 2024-04..2024-04" in capsys.readouterr().out
    assert (store / "ecf_eng" / "rating_list" / "2024-04.parquet").read_bytes() == stored


def test_national_scenarios_alone_skip_the_accuracy_comparison_saying_why_not_failing_the_run(tmp_path: Path) -> None:
    """Store G of the registry audit: a scenarios file holding only a `restrict: {players: GER}` scenario failed the
    run at accuracy_comparison ("no stored accuracy month in any scenario"): compared_scenarios leaves a national
    scenario out, so there was nothing to compare. The asset now says so and the run goes on.
    """
    from assets.partitions import monthly_partitions
    from assets.report import build_cross_scenario_assets
    from assets.storage import ObjectStoreResource

    scenarios = {"ger": Scenario(name="ger", rules="fide-2024", restrict=Restriction(players="GER"))}
    assert compared_scenarios(scenarios) == {}
    assets = build_cross_scenario_assets(monthly_partitions("2024-01", "2024-02"), scenarios)
    comparison = next(a for a in assets if a.key == dg.AssetKey("accuracy_comparison"))
    result = comparison(context=dg.build_asset_context(), store=ObjectStoreResource(root=str(tmp_path)))
    assert result.metadata["skipped"] == nothing_compared(scenarios)
    assert not (tmp_path / "reports").exists()


def test_the_comparison_has_nothing_to_compare_only_where_every_scenario_of_the_baselines_list_is_national() -> None:
    ger = Scenario(name="ger", rules="fide-2024", restrict=Restriction(players="GER"))
    plain, rapid = Scenario(name="plain", rules="fide-2024"), Scenario(name="rapid", rules="fide-rapid-2024")
    assert "rating the standard list is national" in str(nothing_compared({"ger": ger}))
    assert "rating the standard list is national" in str(nothing_compared({"ger": ger, "rapid": rapid}))
    assert nothing_compared({"ger": ger, "plain": plain}) is None and compared_scenarios({"ger": ger, "plain": plain})
