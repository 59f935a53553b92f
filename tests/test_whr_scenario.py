"""A `system: whr` scenario (issue 39, part 4) rated through the Dagster run path.

The list of a month as it stood, the history as it stands now, and a rerun from the stored warm start.
"""

import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assets.automation import range_tags
from pipeline.ingest.registry import read_seed_list
from pipeline.months import month_index
from pipeline.rules.model import RulesError
from pipeline.scenarios.model import Scenario, load_scenarios
from pipeline.scenarios.whole_history_step import new_history, rated_of
from pipeline.scenarios.whole_history_stored import history_as_it_stands
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.whole_history.system import WhrScenarioParams

START, END = "2024-01", "2024-03"
MONTHS = ["2024-01", "2024-02", "2024-03"]
WHR = Scenario(name="w", description="WHR", system="whr", set={"w2": 30, "virtual_draws": 4})
PLAIN = Scenario(name="plain", description="FIDE's regulations", rules="fide-historical")
TABLES = ("rating_list", "system_state", "whr_state", "rated_games")


@pytest.fixture(scope="module")
def whr_runs(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Months 1-3 in one range run (the history held in memory), bytes kept; then month 3 alone (a new chain
    continuing from the stored warm start of month 2).
    """
    from assets.definitions import build_defs

    root = tmp_path_factory.mktemp("whr") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    defs = build_defs(START, END, root=str(root), scenarios={"w": WHR, "plain": PLAIN})
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("all_months")
    store = ObjectStore(str(root))
    ranged = job.execute_in_process(instance=instance, tags=range_tags(START, END))
    first = {t: store.read_bytes(table_key(["w", t], END)) for t in TABLES}
    single = job.execute_in_process(instance=instance, partition_key=END)
    return SimpleNamespace(store=store, ranged=ranged, single=single, first=first)


def by_hand(store: ObjectStore, months: list[str]) -> list[SimpleNamespace]:
    """The list and history after each month, from WholeHistory on the stored validated games, held in memory."""
    history = new_history(WHR, read_seed_list(store))
    after = []
    for month in months:
        games = rated_of(WHR, store.read_parquet(table_key(["games"], month)))
        history.add_month(month_index(month), games)
        after.append(SimpleNamespace(list=history.list_at(month_index(month)), history=history.history()))
    return after


def test_the_list_of_a_month_stays_as_it_stood_and_the_history_re_estimates_it(whr_runs: SimpleNamespace) -> None:
    assert whr_runs.ranged.success and whr_runs.single.success
    store = whr_runs.store
    expected = by_hand(store, MONTHS)
    for month, hand in zip(MONTHS, expected, strict=True):
        listed = store.read_parquet(table_key(["w", "rating_list"], month))
        estimate = hand.list.join(listed, on="player_id", how="inner", suffix="_listed")
        assert estimate.height == hand.list.height > 0
        # The list of M is WHR's estimate right after M (rounded), not as later months re-estimate it.
        assert (estimate["rating_listed"] == (estimate["rating"] + 0.5).floor().cast(pl.Int32)).all()
        assert_frame_equal(estimate.select("deviation_listed"), estimate.select(deviation_listed="deviation"))
    history = history_as_it_stands(store, WHR, "2024-03")
    assert not history.select("player_id", "month").is_duplicated().any(), "one row per player-month"
    now = expected[-1].history
    assert_frame_equal(
        history.select("player_id", "rating", "deviation"), now.select("player_id", "rating", "deviation")
    )
    # Month 1 as it stands after month 3 is not month 1 as it stood: later games moved its estimates.
    then = history_as_it_stands(store, WHR, "2024-01")
    again = history_as_it_stands(store, WHR, month="2024-01").join(then, on=["player_id", "month"], suffix="_then")
    assert again.height == then.height > 0
    moved = (again["rating"] - again["rating_then"]).abs()
    assert moved.max() > 1.0
    # ...while the list of month 1 stored by the first run is still the one month 1 made.
    first_list = store.read_parquet(table_key(["w", "rating_list"], "2024-01"))
    made = expected[0].list.join(first_list, on="player_id", suffix="_listed")
    assert (made["rating_listed"] == (made["rating"] + 0.5).floor().cast(pl.Int32)).all()


def test_a_rerun_from_the_stored_warm_start_writes_the_same_bytes(whr_runs: SimpleNamespace) -> None:
    for table in TABLES:
        assert whr_runs.store.read_bytes(table_key(["w", table], END)) == whr_runs.first[table], table


def test_rated_games_are_predicted_from_the_state_before_the_month(whr_runs: SimpleNamespace) -> None:
    store = whr_runs.store
    before = store.read_parquet(table_key(["w", "system_state"], "2024-02"))
    rated = store.read_parquet(table_key(["w", "rated_games"], "2024-03")).filter(pl.col("weight") > 0)
    assert rated.height
    ratings = dict(zip(before["player_id"], before["rating"], strict=True))
    white = np.array([ratings.get(p, 1500.0) for p in rated["white_id"]])
    black = np.array([ratings.get(p, 1500.0) for p in rated["black_id"]])
    assert np.abs(rated["white_expected"].to_numpy() - 1 / (1 + 10 ** ((black - white) / 400))).max() < 1e-12
    checks = whr_runs.ranged.get_asset_check_evaluations() + whr_runs.single.get_asset_check_evaluations()
    assert [(e.asset_key.to_user_string(), e.check_name) for e in checks if not e.passed] == []
    board = store.read_parquet("evaluation/leaderboard.parquet")
    assert sorted(board["scenario"]) == ["plain", "w"]


def test_a_whr_scenario_file_is_read_and_its_full_sweeps_go_by_the_calendar(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n  w:\n    system: whr\n    set: {w2: 10, full_sweeps_every: 12, full_sweeps: 5}\n")
    params = load_scenarios(str(path))["w"].system_rules().params
    assert isinstance(params, WhrScenarioParams)
    assert [params.full_sweep_after(month_index(m)) for m in ("2023-11", "2023-12", "2024-01")] == [None, 5, None]
    path.write_text("scenarios:\n  w:\n    system: whr\n    set: {sweep_every: 12}\n")
    with pytest.raises(
        RulesError, match=r"set.sweep_every: Extra inputs are not permitted \(whr parameters: .*full_sweeps_every"
    ):
        load_scenarios(str(path))


def test_a_month_whose_fit_to_tolerance_stops_at_max_sweeps_says_so(whr_runs: SimpleNamespace) -> None:
    """A scenario fitting to tolerance after each month (full_sweeps 0) whose fit stops at max_sweeps: the chain's
    notes carry the warning the rate step logs and puts in the month's list metadata; a fixed number of full sweeps
    stops there by design and says nothing.
    """
    from pipeline.scenarios.chain import ChainNotes, rate_months

    def notes_of(settings: dict[str, int]) -> dict[str, str]:
        scenario = Scenario(name="wu", system="whr", set={"w2": 30, "virtual_draws": 4, **settings})
        notes = ChainNotes()
        rate = rate_months(whr_runs.store, scenario, MONTHS[:1], START, notes=notes)
        rate(START, lambda month: whr_runs.store.read_parquet(table_key(["games"], month)))
        return notes.unconverged

    unconverged = notes_of({"full_sweeps_every": 1, "full_sweeps": 0, "max_sweeps": 1})
    assert list(unconverged) == [START]
    assert unconverged[START].startswith(f"wu {START}: the whole-history fit stopped at max_sweeps (1 sweep)")
    assert notes_of({"full_sweeps_every": 1, "full_sweeps": 1}) == {}
    assert notes_of({"full_sweeps_every": 1, "full_sweeps": 0}) == {}
