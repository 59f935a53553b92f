"""The chain's start is the store's: a run of any range continues the stored lists and refuses a broken one.

A seeded player's inactivity clock runs from the seed list; stray month folders add no months to a run.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import shlex
import shutil
import warnings
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.runtime.cli import main
from pipeline.ingest.landing import MISPLACED, classify, inventory, months_held
from pipeline.months import month_range
from pipeline.operations.run_plan import (
    MADE_OTHERWISE,
    RunPlan,
    StoreError,
    chain_start,
    held_gaps,
    months_to_rate,
    plan_run,
    waiting_lines,
)
from pipeline.scenarios.chain import MissingMonth, chain_continues, previous_list, rate_months, seeded_list
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from schemas import Games
from schemas.util import empty_frame

SCENARIOS = """scenarios:
  actual:
    description: FIDE's regulations as they were
    rules: fide-historical
  glicko2:
    description: a rating system, whose state is carried too
    system: glicko2
"""
OUTPUTS = (".parquet", ".csv", ".txt", ".html")


@pytest.fixture(scope="module")
def rated_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Five generated months rated whole once (the reference), and the scenarios file."""
    from pipeline.generator import generate

    root = tmp_path_factory.mktemp("chain")
    scenarios = root / "scenarios.yaml"
    scenarios.write_text(SCENARIOS)
    generate(str(root / "full"), seed=3, players=400, start="2024-01", end="2024-05")
    # Every month's readable lists, so that a rerun of any month (which publishes its last month) rewrites its own.
    assert _run(root / "full", scenarios, root / "home", "--publish", "all") == 0
    return root / "full", scenarios


def _run(store: Path, scenarios: Path, home: Path, *extra: str) -> int:
    return main(["run", "--store", str(store), "--scenarios", str(scenarios), "--dagster-home", str(home), *extra])


def _outputs(store: Path) -> dict[str, bytes]:
    """Every output file of the store (not the landing zone, not the generator's truth), by key."""
    found = {}
    for folder, _, names in os.walk(store):
        for name in names:
            key = os.path.relpath(os.path.join(folder, name), store)
            if name.endswith(OUTPUTS) and key.split(os.sep)[0] not in ("raw", "truth"):
                found[key] = Path(folder, name).read_bytes()
    return found


def _carried(scenarios: Path, home: Path) -> str:
    """The options of a run with --scenarios and --dagster-home that the commands it prints repeat."""
    return f" --scenarios {scenarios} --dagster-home {home}"


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def test_one_month_rerun_writes_what_the_full_run_wrote(rated_store, tmp_path: Path, capsys) -> None:
    full, scenarios = rated_store
    reference = _outputs(full)
    for month in ("2024-01", "2024-03", "2024-05"):
        store = _copy(full, tmp_path / month)
        assert _run(store, scenarios, tmp_path / "home", "--from", month, "--to", month) == 0
        out = capsys.readouterr().out
        rerun = _outputs(store)
        assert rerun.keys() == reference.keys()
        changed = sorted(key for key in reference if rerun[key] != reference[key])
        assert changed == [], f"--from {month} --to {month} changed {changed[:5]}"
        # The months after it were rated from the list it replaced: the summary names them and the command.
        following = f"{month[:5]}{int(month[5:]) + 1:02d}"
        if month != "2024-05":
            # The month was re-rated from unchanged dumps: the next list still continues it, but was not re-rated.
            assert f"may be stale (the {following} list still continues" in out
            assert f"--from {following}{_carried(scenarios, tmp_path / 'home')}`" in out
            # The UI shows it too: the month after's list_continuity, evaluated against the new list, names them.
            check = dg.AssetCheckKey(dg.AssetKey(["actual", "rating_list"]), "list_continuity")
            with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
                history = instance.event_log_storage.get_asset_check_execution_history(check, limit=400)
            evaluations = [r.evaluation for r in history if isinstance(r.evaluation, dg.AssetCheckEvaluation)]
            stale = [e for e in evaluations if e.partition == following and "stale_months" in e.metadata]
            assert stale and stale[0].check_name == "list_continuity"
            assert stale[0].metadata["stale_months"].value.startswith(following)
        else:
            assert "stale" not in out


@pytest.mark.integration
def test_the_same_month_rated_twice_records_the_stale_lists_twice_and_a_failed_record_keeps_the_summary(
    rated_store, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrected dump re-rated twice the README's way: the second run's note of the stale lists is its own, not a
    second runless evaluation of the same check and month (which Dagster's unique key refused, after the lists were
    written and before the summary).
    """
    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    check = dg.AssetCheckKey(dg.AssetKey(["actual", "rating_list"]), "list_continuity")
    for _ in range(2):
        assert _run(store, scenarios, home, "--from", "2024-02", "--to", "2024-02") == 0
        out = capsys.readouterr().out
        assert "Run done: 1 months 2024-02..2024-02" in out and "may be stale (the 2024-03 list" in out
    with dg.DagsterInstance.from_config(str(home)) as instance:
        history = instance.event_log_storage.get_asset_check_execution_history(check, limit=400)
    stale = [r for r in history if r.partition == "2024-03" and "stale_months" in r.evaluation.metadata]
    assert len(stale) == 2 and len({r.run_id for r in stale}) == 2

    # Whatever fails in recording it, the lists are written: the summary is printed and says what was not recorded.
    def failing(*_args: object) -> None:
        raise RuntimeError("database is locked")

    monkeypatch.setattr("assets.runtime.runs.mark_stale_lists", failing)
    assert _run(store, scenarios, home, "--from", "2024-02", "--to", "2024-02") == 0
    out = capsys.readouterr().out
    assert "Run done" in out and "ratings ui --store" in out
    assert "WARNING: the UI's note of the stale lists was not recorded (RuntimeError: database is locked)" in out


def _printed_commands(text: str) -> list[str]:
    """The `ratings ...` commands quoted in a run's output, as printed."""
    return re.findall(r"`(ratings [^`]*)`", text)


def _planned(command: str) -> RunPlan:
    """The plan of a printed `ratings run` command, parsed by the command line's own parser: StoreError where that
    run would be refused before it starts.
    """
    from assets.runtime.cli import add_dagster_commands
    from pipeline.cli.commands import build_parser

    args = build_parser(add_dagster_commands).parse_args(shlex.split(command)[1:])
    assert args.command == "run", command
    return plan_run(args.store, args.first, args.last, args.scenarios, dagster_home=args.dagster_home)


def test_the_commands_a_run_with_its_own_scenarios_file_prints_run_as_printed(
    rated_store, tmp_path: Path, capsys
) -> None:
    """A run with --scenarios printed `ratings run --store S --from M` for the lists it left stale, which read the
    shipped scenarios file and was refused for their missing lists (or rated other chains). Every command a run
    prints carries its scenarios file and instance: each `ratings run` plans as printed; so does the rebuild a refused
    run names.
    """
    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    _correct_one_result(store, "2024-02")
    assert _run(store, scenarios, home, "--from", "2024-02", "--to", "2024-02") == 0
    out = capsys.readouterr().out
    printed = _printed_commands(out)
    assert any("--from 2024-03" in command for command in printed), out  # the lists after it are stale
    # The UI's note of the stale lists names the same command.
    check = dg.AssetCheckKey(dg.AssetKey(["actual", "rating_list"]), "list_continuity")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        history = instance.event_log_storage.get_asset_check_execution_history(check, limit=400)
    notes = [r.evaluation.metadata for r in history if r.partition == "2024-03"]
    noted = [metadata["bring_up_to_date"].value for metadata in notes if "bring_up_to_date" in metadata]
    assert noted and noted[0] in printed
    for command in [*printed, *noted]:
        if command.startswith("ratings list"):
            assert command.endswith(f" --scenarios {scenarios}"), command
        elif command.startswith("ratings run"):
            assert command.endswith(_carried(scenarios, home)), command
            assert _planned(command).scenarios.keys() == {"actual", "glicko2"}
    # The UI's definitions read the scenarios file from the environment (`ratings ui` has no --scenarios).
    assert f"RATINGS_SCENARIOS={scenarios} ratings ui --store {store} --dagster-home {home}" in out
    assert f"ratings list --store {store} --scenario <scenario> --month <YYYY-MM>" in out
    # A run refused for a missing list names the run that rebuilds it, with the same options.
    (store / "actual" / "rating_list" / "2024-04.parquet").unlink()
    assert _run(store, scenarios, home, "--from", "2024-05", "--to", "2024-05") == 2
    [rebuild] = _printed_commands(capsys.readouterr().err)
    assert rebuild == f"ratings run --store {store} --from 2024-04{_carried(scenarios, home)}"
    assert _planned(rebuild).months[0] == "2024-04"


def test_a_missing_truncated_or_foreign_list_before_the_run_stops_it_before_anything_is_written(
    rated_store, tmp_path: Path, capsys
) -> None:
    full, scenarios = rated_store
    store = _copy(full, tmp_path / "store")
    before = store / "actual" / "rating_list" / "2024-02.parquet"
    intact = before.read_bytes()
    stamps = {key: os.stat(store / key).st_mtime_ns for key in _outputs(store)}
    breakages = {
        "is missing": lambda: before.unlink(),
        "cannot be read": lambda: before.write_bytes(intact[: len(intact) // 2]),
        "names month 2024-04 in last_played": lambda: shutil.copyfile(
            store / "actual" / "rating_list" / "2024-04.parquet", before
        ),
        "does not pass the RatingList model": lambda: shutil.copyfile(
            store / "glicko2" / "rating_list" / "2024-02.parquet", before
        ),
    }
    for problem, breaking in breakages.items():
        breaking()
        assert _run(store, scenarios, tmp_path / "home", "--from", "2024-03", "--to", "2024-03") == 2
        err = capsys.readouterr().err
        assert f"actual/rating_list for 2024-02 {problem}" in err, err
        assert f"ratings run --store {store} --from 2024-02" in err
        after = {key: os.stat(store / key).st_mtime_ns for key in _outputs(store) if key in stamps}
        assert {k: v for k, v in after.items() if not k.endswith("2024-02.parquet")} == {
            k: v for k, v in stamps.items() if not k.endswith("2024-02.parquet")
        }, "a refused run wrote"
        before.write_bytes(intact)
    # The system's carried state is checked too.
    state = store / "glicko2" / "system_state" / "2024-02.parquet"
    state.unlink()
    assert _run(store, scenarios, tmp_path / "home", "--from", "2024-03", "--to", "2024-03") == 2
    assert "glicko2/system_state for 2024-02 is missing" in capsys.readouterr().err


def test_a_correction_rerated_from_its_month_gives_what_a_full_run_on_the_corrected_dumps_gives(
    rated_store, tmp_path: Path, capsys
) -> None:
    full, scenarios = rated_store
    store = _copy(full, tmp_path / "store")
    corrected = _correct_one_result(store, "2024-03")
    fresh = tmp_path / "fresh"
    shutil.copytree(store / "raw", fresh / "raw")
    shutil.copytree(store / "truth", fresh / "truth")

    # A run from the month after says the corrected month's tables no longer match its dumps (as the instance that
    # rated them observed the dumps), and how to bring it in.
    shutil.copytree(full.parent / "home", tmp_path / "home")
    # A run from the corrected month killed after it ingested the month, before its chains rated it: the month's
    # raw_games are made from the corrected dumps, its lists still from the dumps of before.
    from assets.runtime.runs import observe_landing_zone
    from pipeline.ingest.landing import landing_versions

    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        observe_landing_zone(instance, landing_versions(ObjectStore(str(store))).dumps, ["2024-03"])
        instance.report_runless_asset_event(dg.AssetMaterialization("raw_games", partition="2024-03"))
    assert _run(store, scenarios, tmp_path / "home", "--from", "2024-04") == 0
    out = capsys.readouterr().out
    warning = (
        "WARNING: the dumps of 2024-03 changed since its stored tables were made, and this run starts at 2024-04: "
        f"bring them in with `ratings run --store {store} --from 2024-03{_carried(scenarios, tmp_path / 'home')}`"
    )
    assert out.count(warning) == 2, out  # in the plan and in the summary

    # Re-rated alone, the corrected month leaves the lists after it stale, and the summary says how to mend them.
    assert _run(store, scenarios, tmp_path / "home", "--from", "2024-03", "--to", "2024-03") == 0
    out = capsys.readouterr().out
    assert "are stale (the 2024-04 list no longer continues the new 2024-03 list in actual" in out
    assert f"`ratings run --store {store} --from 2024-04{_carried(scenarios, tmp_path / 'home')}`" in out
    assert _run(store, scenarios, tmp_path / "home", "--from", "2024-04") == 0
    out = capsys.readouterr().out
    assert "stale" not in out and "changed since" not in out
    assert _run(fresh, scenarios, tmp_path / "home2", "--publish", "all") == 0
    rerated, reference = _outputs(store), _outputs(fresh)
    assert sorted(key for key in reference if rerated.get(key) != reference[key]) == []
    # The correction did change the chain: March on is not the original's.
    assert (store / "actual/rating_list/2024-03.parquet").read_bytes() != (
        full / "actual/rating_list/2024-03.parquet"
    ).read_bytes(), f"the corrected game {corrected} changed nothing"


def test_a_changed_definition_registry_or_late_file_before_the_run_is_named_with_where_to_start(
    rated_store, tmp_path: Path, capsys
) -> None:
    """What a run from a later month leaves as it was, though it changes what the earlier months rate: a scenario's
    definition (its `set:`), a registry folder, a dump; and under `recalculation: forward`, what going on without them
    costs the games they add.
    """
    from assets.runtime.runs import landing_changed_before, lists_made_otherwise
    from pipeline.ingest.landing import landing_versions

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    shutil.copytree(full.parent / "home", home)
    # Nothing changed since the full run: nothing to name.
    plan = plan_run(str(store), "2024-05", "2024-05", str(scenarios))
    versions = landing_versions(ObjectStore(str(store)))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        registry = versions.registry_from(plan.chain_start)
        assert landing_changed_before(instance, plan, versions.dumps, registry) == ([], [])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert lists_made_otherwise(instance, plan) == {}
        # The chain's definitions are built to ask them their version: Dagster's Beta and Preview notes stay silent.
        assert [str(w.message) for w in caught if issubclass(w.category, (dg.BetaWarning, dg.PreviewWarning))] == []

    changed = tmp_path / "changed.yaml"
    changed.write_text(
        SCENARIOS.replace("rules: fide-historical", "rules: fide-historical\n    recalculation: forward")
        + "    set: {tau: 0.4}\n    recalculation: {window: 2}\n"
    )
    players = store / "raw" / "players" / "2024-02" / "players.csv"
    header, first, *rest = players.read_text().splitlines()
    players.write_text("\n".join([header, first, *rest, "9" + first[1:]]) + "\n")  # a new player
    _correct_one_result(store, "2024-03")
    (store / "actual" / "rating_list" / "2024-05.parquet").unlink()  # this run's list, made anew under forward
    assert _run(store, changed, home, "--from", "2024-05", "--to", "2024-05") == 0
    out = capsys.readouterr().out
    where, carried = f"`ratings run --store {store} --from", _carried(changed, home)
    for warning in (
        "WARNING: the dumps of 2024-03 and the registry read from 2024-02 (raw/players/) changed since their stored "
        f"tables were made, and this run starts at 2024-05: bring them in with {where} 2024-02{carried}`",
        "WARNING: the stored lists of actual from 2024-01 and glicko2 from 2024-01 were made by another definition of "
        f"the scenario (or another version of the code) than this run's, and this run starts at 2024-05: bring them "
        f"in line with {where} 2024-01{carried}`; for actual (recalculation: forward), glicko2 (recalculation: window "
        "2) it does so only in part",
        # A registry folder changes what its months rate too (an unknown player now known adds a game): both count.
        "WARNING: actual (recalculation: forward): going on without 2024-02..2024-03 (2 months) makes the games their "
        "files add, which would go into this run's list of 2024-05, wait for a later list (2024-06 at the earliest), "
        "where those of tournaments that ended in 2024-02 are past their reporting window (not rated)",
        # A rating system under a window is named too: asking it for a rule set lost every scenario's line.
        "WARNING: glicko2 (recalculation: window 2): going on without 2024-02..2024-03 (2 months) makes the games "
        "their files add, which would go into this run's list of 2024-05, wait for a later list (2024-06 at the "
        "earliest), where those of tournaments that ended in 2024-02 are past their reporting window (not rated)",
    ):
        assert out.count(warning) == 2, (warning, out)  # in the plan and in the summary
    assert "(could not" not in out, out
    # The Dagster rate step says it too (as in a run the schedule, sensor or UI launch), of the list it continues.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for name in ("actual", "glicko2"):
            key = dg.AssetKey([name, "rating_list"])
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=["2024-05"]), limit=1
            ).records
            said = records[0].asset_materialization.metadata[MADE_OTHERWISE].value
            assert said.startswith(
                f"WARNING: the stored lists of {name} from 2024-04 (or earlier) were made by another definition of the "
                "scenario (or another version of the code) than this run's, and this run starts at 2024-05: bring them "
                "in line with `ratings run"
            ), said
            assert " --from 2024-04" in said, said
            # Printed inside the CLI's run, the command carries the run's --scenarios and --dagster-home as its own.
            assert f" --from 2024-04{carried}`" in said, said
            policy = {"actual": "forward", "glicko2": "window 2"}[name]
            assert (
                "`, or from the first such month before it (a `ratings run` names it); for "
                f"{name} (recalculation: {policy}) it does so only in part"
            ) in said, said
    # A run launched as the UI does (no `ratings run` around it to say so) logs it as a WARNING too; the CLI's did not.
    from assets.definitions import build_defs
    from pipeline.scenarios.model import load_scenarios

    defs = build_defs("2024-01", "2024-05", root=str(store), scenarios=load_scenarios(str(changed)))
    key = dg.AssetKey(["actual", "rating_list"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        cli_run = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=["2024-05"]), limit=1
        ).records[0]
        result = dg.materialize(
            [*defs.assets], selection=[key], partition_key="2024-05", instance=instance, resources=defs.resources
        )
        assert result.success

        def warnings_of(run_id: str) -> list[str]:
            return [e.user_message for e in instance.all_logs(run_id) if e.level == logging.WARNING]

        logged = [line for line in warnings_of(result.run_id) if "were made by another definition" in line]
        assert len(logged) == 1 and logged[0].startswith(
            "WARNING: the stored lists of actual from 2024-04 (or earlier)"
        )
        assert not [line for line in warnings_of(cli_run.run_id) if "were made by another definition" in line]


def test_games_stored_by_another_version_of_the_readers_or_validation_are_named_with_where_to_start(
    rated_store, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that changes only how games are read or validated leaves the rating code's version as it was, yet
    the stored games of earlier months (and the lists rated on them) are not what a run from scratch makes: said.
    """
    from assets.runtime import runs

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    shutil.copytree(full.parent / "home", home)
    plan = plan_run(str(store), "2024-05", "2024-05", str(scenarios))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert runs.tables_made_otherwise(instance, plan) == []
    # The validation's code changed since the stored games were made (the readers' and the rating code's did not).
    real = runs.code_version
    changed = {"validate": "x"}
    monkeypatch.setattr(runs, "code_version", lambda stage, extra="": real(stage, extra) + changed.get(stage, ""))
    assert _run(store, scenarios, home, "--from", "2024-05", "--to", "2024-05") == 0
    out = capsys.readouterr().out
    warning = (
        "WARNING: the stored games of 2024-01..2024-04 (4 months) were read or validated by another version of the "
        "code than this run's, and this run starts at 2024-05: the lists rated on them may differ from a rating from "
        f"scratch; bring them in line with `ratings run --store {store} --from 2024-01{_carried(scenarios, home)}`"
    )
    assert out.count(warning) == 2, out  # in the plan and in the summary
    assert "another definition of the scenario" not in out  # the lists' own versions are the code's of now
    with dg.DagsterInstance.from_config(str(home)) as instance:  # nor does the rate step say so of its list
        key = dg.AssetKey(["actual", "rating_list"])
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=["2024-05"]), limit=2
        ).records
        assert len(records) == 2 and records[0].storage_id > records[1].storage_id  # the run's, then the fixture's
        assert MADE_OTHERWISE not in records[0].asset_materialization.metadata


def test_the_remedy_of_lists_or_games_made_by_another_version_says_what_frozen_lists_keep() -> None:
    """`ratings run --from` brings a `full` scenario's lists in line with the code of now; under `forward` or a window
    a stored list is rated again on the games it rated only, and kept where the files give them otherwise now: the
    warning says so of those scenarios alone, rather than promise what the run does not do.
    """
    from pipeline.operations.instance_dirs import command_lines
    from pipeline.operations.run_plan import games_made_otherwise_line, made_otherwise_line

    scenarios = {
        "actual": Scenario(name="actual", rules="fide-2014"),
        "frozen": Scenario(name="frozen", rules="fide-2014", recalculation="forward"),
        "recent": Scenario(name="recent", system="glicko2", recalculation={"window": 3}),
    }
    commands = command_lines("/s", None, None)
    frozen = "; for frozen (recalculation: forward), recent (recalculation: window 3) it does so only in part: "
    games = games_made_otherwise_line(["2024-01", "2024-02"], commands, "2024-04", scenarios)
    assert f"bring them in line with `{commands.ratings('run', '--from', '2024-01')}`{frozen}" in games
    assert "kept as stored where the files give those games otherwise now" in games
    assert "no command rates them anew" in games
    full_only = made_otherwise_line({"actual": "2024-02"}, commands, "2024-04", scenarios=scenarios)
    assert full_only.endswith(f"`{commands.ratings('run', '--from', '2024-02')}`")
    both = made_otherwise_line({"actual": "2024-02", "frozen": "2024-01"}, commands, "2024-04", scenarios=scenarios)
    assert "; for frozen (recalculation: forward) it does so only in part" in both and "recent" not in both


def test_going_on_without_changed_months_names_the_list_the_games_miss_and_who_is_then_too_late(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    for month in ("2024-01", "2024-02", "2024-03", "2024-04"):
        store.write_bytes(b"stored", f"actual/rating_list/{month}.parquet")
    forward = {"actual": Scenario(name="actual", rules="fide-2014", recalculation="forward")}
    # The run's 2024-04 is stored (frozen): the games would go into its first list made anew, 2024-05.
    (line,) = waiting_lines(store, forward, ["2024-04", "2024-05"], ["2024-02"])
    assert line == (
        "WARNING: actual (recalculation: forward): going on without 2024-02 makes the games its files add, which would "
        "go into this run's list of 2024-05, wait for a later list (2024-06 at the earliest), where those of "
        "tournaments that ended in 2024-02 are past their reporting window (not rated)"
    )
    assert waiting_lines(store, forward, ["2024-03", "2024-04"], ["2024-02"]) == []  # no list of the run made anew
    assert waiting_lines(store, forward, ["2024-05"], []) == []  # nothing changed
    full = {"actual": Scenario(name="actual", rules="fide-2014")}
    assert waiting_lines(store, full, ["2024-05"], ["2024-02"]) == []  # the run from 2024-02 re-rates them all
    # A rating system lists every month: asked for a rule set, it raised RulesError ('rated by system ecf').
    ecf_eng = Scenario(name="ecf_eng", system="ecf", restrict={"reported_by": "ENG"}, recalculation={"window": 2})
    (line,) = waiting_lines(store, {"ecf_eng": ecf_eng}, ["2024-04", "2024-05"], ["2024-02"])
    assert line.startswith(
        "WARNING: ecf_eng (recalculation: window 2): going on without 2024-02 makes the games its files add, which "
        "would go into this run's list of 2024-04, wait for a later list (2024-05 at the earliest), where "
    )


def _correct_one_result(store: Path, month: str) -> list[str]:
    """Turn the first decisive game between two FIDE ids of the month's CSV dump around; the row changed."""
    path = sorted((store / "raw").glob(f"*/{month}/*.csv"))[0]
    rows = list(csv.reader(io.StringIO(path.read_text())))
    header = rows[0]
    result, white, black = header.index("result"), header.index("white_id"), header.index("black_id")
    row = next(r for r in rows[1:] if r[result] == "1-0" and r[white] and r[black])
    row[result] = "0-1"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())
    return row


# -- the seeded player's inactivity clock (pure) -----------------------------------------------------


def test_a_seeded_player_who_never_plays_is_inactive_a_year_after_the_seed_list(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    store.write_text(
        "player_id,rating,games_total\n4100001,2500,300\n4100002,2100,80\n4100003,1900,40\n4100004,,\n",
        "raw/players/2023-01/seed_list.csv",
    )
    store.write_text("player_id,inactive\n", "raw/GER/2023-01/empty.csv")  # a landing zone
    scenario = Scenario(name="actual", rules="fide-2014")
    rate = rate_months(store, scenario, months := [f"2023-{m:02d}" for m in range(1, 13)] + ["2024-01"], "2023-01")
    flags = {}
    for month in months:
        rating_list, *_ = rate(month, lambda _month: empty_frame(Games))
        flags[month] = dict(rating_list.select("player_id", "inactive").iter_rows())
    # The seed (raw/players/2023-01/) is the list in force from January 2023: its players played by December 2022
    # at the latest, so a year without a game makes them inactive on the list after December 2023.
    assert flags["2023-11"][4100001] is False
    assert all(flags["2023-12"][player] for player in (4100001, 4100002, 4100003))
    assert flags["2023-12"][4100004] is False  # unrated: no inactivity flag to carry


def test_seeded_list_keeps_the_seeds_own_flags_and_dates() -> None:
    seed = pl.DataFrame(
        {
            "player_id": [1, 2, 3],
            "rating": [2000, 2100, None],
            "inactive": [False, True, False],
            "last_played": [None, None, None],
        },
        schema_overrides={"last_played": pl.Utf8, "rating": pl.Int32},
    )
    listed = seeded_list(seed, "2003-12")
    assert listed.select("player_id", "inactive", "last_played").rows() == [
        (1, False, "2003-12"),  # the clock starts at the seed's date
        (2, True, None),  # flagged inactive by the seed: stays so until they play
        (3, False, None),  # unrated
    ]


def test_previous_list_at_the_chain_start_is_the_seed_and_after_it_the_stored_list(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    store.write_text("player_id,rating\n7,1800\n", "raw/players/2024-01/seed_list.csv")
    scenario = Scenario(name="actual", rules="fide-2014")
    assert previous_list(store, scenario, "2024-01", "2024-01")["player_id"].to_list() == [7]
    with pytest.raises(MissingMonth, match="actual/rating_list for 2024-02 is missing"):
        previous_list(store, scenario, "2024-03", "2024-01")
    chain_continues(store, scenario, "2024-01", "2024-01")  # the chain's start needs no stored list
    with pytest.raises(MissingMonth, match=r"--store .* --from 2024-01"):
        chain_continues(store, scenario, "2024-02", "2024-01")


def test_a_chain_missing_several_months_is_rebuilt_from_the_first_of_them(tmp_path: Path) -> None:
    """A scenario added to a store, or lists lost for several months: the command names the chain's first month
    without a stored list, not the month before the run (from which a run would stop at the month before it, and so on
    one month per attempt).
    """
    store = ObjectStore(str(tmp_path))
    store.write_text("player_id,rating\n7,1800\n", "raw/players/2023-09/seed_list.csv")
    added, kept = Scenario(name="added", rules="sonas-2002"), Scenario(name="actual", rules="fide-2014")
    with pytest.raises(MissingMonth) as refused:
        chain_continues(store, added, "2024-03", "2023-09")
    assert "added/rating_list for 2024-02 is missing" in str(refused.value)
    assert "--from 2023-09` (2023-09: the chain's first month without one)" in str(refused.value)
    for month in ("2023-09", "2023-10"):
        store.write_bytes(b"stored", f"actual/rating_list/{month}.parquet")
    with pytest.raises(MissingMonth, match=r"for 2024-02 is missing .* --from 2023-11` \(2023-11: the chain's first"):
        chain_continues(store, kept, "2024-03", "2023-09")
    # Only the month before missing: the command is the one it always was.
    for month in ("2023-11", "2023-12", "2024-01"):
        store.write_bytes(b"stored", f"actual/rating_list/{month}.parquet")
    with pytest.raises(MissingMonth, match=r"--from 2024-02` \(or a range starting earlier\)"):
        chain_continues(store, kept, "2024-03", "2023-09")


# -- the range is sane ------------------------------------------------------------------------------


def test_month_folders_before_the_earliest_month_or_in_the_future_are_misplaced() -> None:
    bounds = ("1970-01", "2026-11")
    for key in ("raw/RED/1900-01/a.pgn", "raw/RED/2099-12/a.pgn", "raw/RED/2026-12/a.pgn"):
        entry = classify(key, bounds=bounds)
        assert entry.kind == MISPLACED and entry.month is None, key
        assert "not read" in entry.problem
    assert "before 1970-01" in classify("raw/RED/1900-01/a.pgn", bounds=bounds).problem
    assert "in the future" in classify("raw/RED/2099-12/a.pgn", bounds=bounds).problem
    assert classify("raw/RED/2026-11/a.pgn", bounds=bounds).month == "2026-11"  # the current month is held
    assert classify("raw/players/1960-01/seed_list.csv", bounds=bounds).month == "1960-01"  # a registry is no dump


def test_a_stray_month_folder_adds_no_months_to_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ObjectStore(str(tmp_path))
    for month in ("2024-01", "2024-02"):
        store.write_text('[White "A"]\n', f"raw/GER/{month}/a.pgn")
    store.write_text('[White "A"]\n', "raw/RED/1900-01/stray.pgn")
    store.write_text('[White "A"]\n', "raw/RED/2099-12/stray.pgn")
    assert months_held(inventory(store)) == ["2024-01", "2024-02"]
    plan = plan_run(str(tmp_path), None, None, None)
    assert plan.months == ["2024-01", "2024-02"] and plan.chain_start == "2024-01"
    # RATINGS_EARLIEST_MONTH moves the bound: a historian's 1900 is a month then, and the run's range needs asking.
    monkeypatch.setenv("RATINGS_EARLIEST_MONTH", "1850-01")
    assert months_held(inventory(store))[0] == "1900-01"
    with pytest.raises(StoreError, match=r"1900-01\.\.2024-02 is 1490 months, 1487 of them without dumps"):
        plan_run(str(tmp_path), None, None, None)
    assert len(plan_run(str(tmp_path), "1900-01", "2024-02", None).months) == 1490  # asked for explicitly


def test_a_run_from_before_the_stores_first_month_is_refused_before_anything_is_written(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mistyped year (2019 for 2024) wrote made-up lists from the seed list, and a --from a month early moved every
    chain's start, rewriting every stored list (frozen ones too), until the next default run moved it back.
    """
    from pipeline.generator import generate

    monkeypatch.delenv("RATINGS_FIRST_MONTH", raising=False)
    generate(str(store := tmp_path / "store"), seed=3, players=60, start="2024-01", end="2024-02")
    for first, last in (("2019-01", "2019-02"), ("2023-11", None)):
        extra = ("--to", last) if last else ()
        assert (
            main(["run", "--store", str(store), "--dagster-home", str(tmp_path / "home"), "--from", first, *extra]) == 2
        )
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"--from {first} is before the store's first month 2024-01 (the landing zone's first month" in err
        assert f"set RATINGS_FIRST_MONTH={first}" in err
        assert _outputs(store) == {} and not (tmp_path / "home").exists()
    with pytest.raises(StoreError, match="before the store's first month 2024-01"):
        plan_run(str(store), "2023-12", "2024-01", None)
    # Starting earlier on purpose: the setting is the store's first month, and the chains start there.
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2023-11")
    assert plan_run(str(store), "2023-11", None, None).chain_start == "2023-11"
    with pytest.raises(StoreError, match=r"before the store's first month 2023-11 \(RATINGS_FIRST_MONTH\)"):
        plan_run(str(store), "2023-10", None, None)
    # A setting after the first dumps: a default run starts at it, and its plan names the dumps it leaves out.
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-02")
    plan = plan_run(str(store), None, None, None)
    assert plan.months == ["2024-02"] and plan.chain_start == "2024-02"
    assert "not rated: the dumps of 2024-01, before RATINGS_FIRST_MONTH 2024-02 (the store's first month)" in plan.notes


def test_a_stray_earlier_month_folder_does_not_move_the_stored_chains_start(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2019-01 folder beside stored lists from 2024-01 made the first dumps the chains' start: a default run rated
    every stored list again from the seed list there (frozen forward ones too), saying only that there was a gap.
    """
    monkeypatch.delenv("RATINGS_FIRST_MONTH", raising=False)
    store = ObjectStore(str(tmp_path / "store"))
    (scenarios := tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    for month in ("2024-01", "2024-02"):
        store.write_text('[White "A"]\n', f"raw/GER/{month}/a.pgn")
        for scenario in ("actual", "glicko2"):
            store.write_text("", f"{scenario}/rating_list/{month}.parquet")  # listed, never read: refused before
    store.write_text('[White "A"]\n', "raw/GER/2019-01/a.pgn")
    store.write_text('[White "A"]\n', "raw/ENG/2019-01/b.pgn")
    for first in (None, "2019-01"):
        with pytest.raises(StoreError) as refused:
            plan_run(str(tmp_path / "store"), first, None, str(scenarios))
        message = str(refused.value)
        assert "first month holding dumps is now 2019-01 (raw/ENG/2019-01, raw/GER/2019-01), before 2024-01" in message
        assert "set RATINGS_FIRST_MONTH=2024-01 to keep the chains' start" in message
        assert "set RATINGS_FIRST_MONTH=2019-01 for this run and every later one" in message
    home = tmp_path / "home"
    assert main(["run", "--store", str(tmp_path / "store"), "--scenarios", str(scenarios), "--dagster-home", str(home)])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Nothing written" in err, err
    assert not home.exists()
    # A run from where the stored lists start is not refused: its plan names the stray folders it leaves unrated,
    # with the refusal's remedies.
    plan = plan_run(str(tmp_path / "store"), "2024-01", None, str(scenarios))
    assert plan.chain_start == "2024-01"
    assert plan.notes[0] == (
        "not rated: the dumps of raw/ENG/2019-01, raw/GER/2019-01, before 2024-01, where the stored lists start: this "
        "run from 2024-01 continues them, and no run rates those dumps. A stray or mistyped month folder? Move it, or "
        "set RATINGS_FIRST_MONTH=2024-01 to keep the chains' start (its dumps are then not rated); to start the chains "
        "at 2019-01 on purpose, set RATINGS_FIRST_MONTH=2019-01 for this run and every later one"
    )
    # The setting keeps the chains' start (the stray month is then named, not rated, whatever the run's --from), or
    # moves it on purpose.
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-01")
    for first in (None, "2024-01"):
        plan = plan_run(str(tmp_path / "store"), first, None, str(scenarios))
        assert plan.chain_start == "2024-01"
        assert (
            plan.notes[0]
            == "not rated: the dumps of 2019-01, before RATINGS_FIRST_MONTH 2024-01 (the store's first month)"
        )
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2019-01")
    assert plan_run(str(tmp_path / "store"), None, None, str(scenarios)).chain_start == "2019-01"


def _dumps_and_listed_lists(tmp_path: Path, list_months: tuple[str, ...]) -> tuple[Path, Path]:
    """A store with dumps of 2024-01..03 and, for `list_months`, empty files where actual's and glicko2's lists are
    (listed, never read: what is checked is refused or planned before any list is read); its scenarios file.
    """
    root = tmp_path / "store"
    store = ObjectStore(str(root))
    (scenarios := tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    for month in ("2024-01", "2024-02", "2024-03"):
        store.write_text('[White "A"]\n', f"raw/GER/{month}/a.pgn")
    for month in list_months:
        for scenario in ("actual", "glicko2"):
            store.write_text("", f"{scenario}/rating_list/{month}.parquet")
    return root, scenarios


def test_a_first_month_setting_after_the_stored_lists_is_refused_before_anything_is_written(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RATINGS_FIRST_MONTH set after the first month of the stored lists restarted the chains there from the seed list:
    a run rated every stored list from it again (a frozen forward list too), or failed late on a list_continuity
    check. `ratings run` refuses it before anything is written; the Dagster definitions, which cannot refuse it
    without leaving the UI empty, say so.
    """
    from pipeline.operations.first_month import definitions_months
    from pipeline.scenarios.model import load_scenarios
    from pipeline.settings import Settings

    root, scenarios = _dumps_and_listed_lists(tmp_path, ("2024-01", "2024-02", "2024-03"))
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-02")
    for first in (None, "2024-02"):
        with pytest.raises(StoreError) as refused:
            plan_run(str(root), first, None, str(scenarios))
        message = str(refused.value)
        assert (
            "the stored lists start at 2024-01, and RATINGS_FIRST_MONTH=2024-02 starts the chains at 2024-02" in message
        )
        assert "Nothing written. Unset RATINGS_FIRST_MONTH (or set it to 2024-01)" in message
    home = tmp_path / "home"
    assert main(["run", "--store", str(root), "--scenarios", str(scenarios), "--dagster-home", str(home)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the stored lists start at 2024-01" in err, err
    assert not home.exists() and sorted(p.name for p in (root / "actual" / "rating_list").iterdir()) == [
        f"{month}.parquet" for month in ("2024-01", "2024-02", "2024-03")
    ]
    settings = Settings.from_env({"RATINGS_STORE": str(root), "RATINGS_FIRST_MONTH": "2024-02"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert definitions_months(settings, load_scenarios(str(scenarios)))[0] == "2024-02"
    [warning] = [str(w.message) for w in caught if w.category is UserWarning]
    assert warning.startswith("the stored lists start at 2024-01, and RATINGS_FIRST_MONTH=2024-02")
    assert "a run of the UI, the schedule or the sensor would (`ratings run` refuses)" in warning
    # The setting at the stored lists' start (or earlier, to restart on purpose) is taken as it is.
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-01")
    assert plan_run(str(root), None, None, str(scenarios)).chain_start == "2024-01"


def test_a_later_first_month_setting_refuses_only_a_run_from_it_and_names_the_remedy_that_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run from after a RATINGS_FIRST_MONTH later than the stored lists continues the stored list before it, and was
    refused too. With dumps held before the stored lists (why the setting was made), "Unset RATINGS_FIRST_MONTH" led
    into the stray-folder refusal.
    """
    held = ["2024-01", "2024-02", "2024-03"]
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-02")
    assert chain_start(held, "2024-03", "2024-01") == "2024-02"  # continues the stored list of 2024-02
    with pytest.raises(StoreError, match=r"Nothing written\. Unset RATINGS_FIRST_MONTH \(or set it to 2024-01\)"):
        chain_start(held, "2024-02", "2024-01")
    with pytest.raises(StoreError) as refused:
        chain_start(["2023-11", *held], "2024-02", "2024-01")
    assert "Nothing written. Set RATINGS_FIRST_MONTH=2024-01 (dumps before it are held)" in str(refused.value)
    assert "Unset" not in str(refused.value)
    # The remedy named runs: from 2024-01 the run continues nothing earlier, and the dumps before it are left out.
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-01")
    assert chain_start(["2023-11", *held], "2024-01", "2024-01") == "2024-01"


def test_the_hints_start_the_chains_where_a_run_does_not_at_a_stray_earlier_month_folder(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a stray 2019-01 folder beside lists from 2024-01, `ratings list` and a refused run's rebuild hint named
    `ratings run --from 2019-01`, which is refused; a month before the stored lists was to be rated from there too.
    """
    monkeypatch.delenv("RATINGS_FIRST_MONTH", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the store's own instance: the hints name no --dagster-home
    root, scenarios = _dumps_and_listed_lists(tmp_path, ("2024-01", "2024-02"))
    store = ObjectStore(str(root))
    store.write_text('[White "A"]\n', "raw/GER/2019-01/a.pgn")
    base = ["list", "--store", str(root), "--scenarios", str(scenarios)]
    assert main([*base, "--month", "2024-04"]) == 1
    err = capsys.readouterr().err.strip()
    assert f"rate it first (`ratings run --store {root} --from 2024-03 --to 2024-04 --scenarios {scenarios}`)" in err
    assert main([*base, "--month", "2023-06"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "it is before the store's first month 2024-01 (the stored lists' first month), where every chain starts, so "
        "no list of it is rated"
    )
    with pytest.raises(StoreError, match=r"Rebuild it with `ratings run --store \S+ --from 2024-03 "):
        plan_run(str(root), "2024-04", "2024-04", str(scenarios))
    # The hinted start is a run's: not refused, where a run from the stray month is.
    entries = inventory(store)
    assert chain_start(months_held(entries), "2024-03", "2024-01", entries) == "2024-01"
    with pytest.raises(StoreError, match="first month holding dumps is now 2019-01"):
        chain_start(months_held(entries), "2019-01", "2024-01", entries)


def test_pinned_months_load_the_definitions_without_listing_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """With RATINGS_FIRST_MONTH and RATINGS_LAST_MONTH both set, every load of the code location (each step process
    of a Celery run) listed every scenario's lists, and warned on each when the store could not be reached.
    """
    from pipeline.operations.first_month import definitions_months
    from pipeline.scenarios.model import load_scenarios
    from pipeline.settings import Settings

    listed: list[str] = []

    def unreachable(*_: object) -> list:
        listed.append("listed")
        raise OSError("connection refused")

    monkeypatch.setattr("pipeline.operations.first_month.stored_lists_span", unreachable)
    monkeypatch.setattr("pipeline.operations.first_month.inventory", unreachable)
    environment = {"RATINGS_STORE": "/nonexistent/store", "RATINGS_FIRST_MONTH": "2024-02"}
    pinned = Settings.from_env({**environment, "RATINGS_LAST_MONTH": "2024-05"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert definitions_months(pinned, load_scenarios(None)) == ("2024-02", "2024-05")
    assert [str(w.message) for w in caught if w.category is UserWarning] == [] and listed == []
    # Unpinned, the store is listed (and its being unreachable said).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        definitions_months(Settings.from_env(environment), load_scenarios(None))
    assert listed and any("could not list" in str(w.message) for w in caught)


def test_the_dagster_definitions_start_at_the_stored_lists_not_at_a_stray_earlier_month_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2019-01 folder beside stored lists from 2023-01 made 2019-01 the definitions' first partition, where the rate
    assets start the chains from the seed list: the sensor requested 2019-01.. as unrated months and a UI backfill
    rated the same, every stored list again, without a word. The partitions now start where the stored lists do, and
    loading the definitions names the folders; RATINGS_FIRST_MONTH still starts the chains earlier on purpose.
    """
    from assets.definitions import build_defs_from_settings
    from pipeline.settings import Settings

    for variable in ("RATINGS_FIRST_MONTH", "RATINGS_LAST_MONTH", "RATINGS_AUTOMATION"):
        monkeypatch.delenv(variable, raising=False)
    root = tmp_path / "store"
    store = ObjectStore(str(root))
    (scenarios := tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    for month in ("2023-01", "2023-02"):
        store.write_text('[White "A"]\n', f"raw/GER/{month}/a.pgn")
        store.write_text("", f"glicko2/rating_list/{month}.parquet")  # listed, never read
    store.write_text("", "actual/rating_list/2023-02.parquet")  # the earliest list of any scenario is the start
    store.write_text('[White "A"]\n', "raw/GER/2019-01/x.pgn")
    store.write_text('[White "A"]\n', "raw/ENG/2019-01/y.pgn")

    def loaded(**environment: str) -> tuple[list[str], list[str]]:
        """The definitions' partitions, and the warnings loading them gave (Dagster's Beta notes left out)."""
        settings = Settings.from_env({"RATINGS_STORE": str(root), "RATINGS_SCENARIOS": str(scenarios), **environment})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            defs = build_defs_from_settings(settings)
        keys = defs.resolve_job_def("all_months").partitions_def.get_partition_keys()
        return keys, [str(w.message) for w in caught if w.category is UserWarning]

    keys, [warning] = loaded()
    assert (keys[0], keys[-1]) == ("2023-01", "2023-02")
    assert "holds dumps before 2023-01, where the stored lists start (raw/ENG/2019-01, raw/GER/2019-01)" in warning
    assert "Move it" in warning and "set RATINGS_FIRST_MONTH=2019-01" in warning

    def unreachable(*_: object) -> list:
        raise OSError("connection refused")

    # The setting is the chains' start, as for `ratings run`: taken as it is, without a word when it is not after the
    # stored lists (which a store that cannot be listed leaves unknown, and says so).
    assert loaded(RATINGS_FIRST_MONTH="2019-01") == (month_range("2019-01", "2023-02"), [])
    assert loaded(RATINGS_FIRST_MONTH="2023-01") == (["2023-01", "2023-02"], [])
    with monkeypatch.context() as patched:
        patched.setattr("pipeline.operations.first_month.stored_lists_span", unreachable)
        keys, [warning] = loaded(RATINGS_FIRST_MONTH="2019-01")
        assert keys == month_range("2019-01", "2023-02")
        assert warning == "could not list the stored lists to check RATINGS_FIRST_MONTH=2019-01 (OSError)"
    # An unreachable store still loads the default months, saying so.
    with monkeypatch.context() as patched:
        patched.setattr("pipeline.operations.first_month.inventory", unreachable)
        keys, [warning] = loaded()
        assert keys[0] == "2015-01" and warning.startswith("could not list the landing zone for the partition range")
    # Without stored lists the landing zone's first month is the store's first, as before.
    for stored in ("actual/rating_list/2023-02", *(f"glicko2/rating_list/{m}" for m in ("2023-01", "2023-02"))):
        (root / f"{stored}.parquet").unlink()
    assert loaded() == (month_range("2019-01", "2023-02"), [])


def test_the_first_partition_is_not_before_the_stored_lists_unless_the_setting_says_so() -> None:
    from pipeline.settings import Settings, SettingsError

    held = ["2019-01", "2023-01", "2023-02"]
    unset, setting = Settings.from_env({}), Settings.from_env({"RATINGS_FIRST_MONTH": "2019-01"})
    assert unset.months_for(held, "2024-06", stored_first="2023-01") == ("2023-01", "2023-02")
    assert unset.months_for(held, "2024-06") == ("2019-01", "2023-02")  # no stored list: the landing zone's
    assert setting.months_for(held, "2024-06", stored_first="2023-01") == ("2019-01", "2023-02")
    # Stored lists from before the landing zone's first month (dumps moved away) do not move it earlier.
    assert unset.months_for(held[1:], "2024-06", stored_first="2022-06") == ("2023-01", "2023-02")
    # A list of the month in progress is no partition's.
    assert unset.months_for(held, "2024-06", stored_first="2024-06") == ("2019-01", "2023-02")
    with pytest.raises(SettingsError, match=r"before the first month 2023-01 \(the stored lists' first month\)$"):
        Settings.from_env({"RATINGS_LAST_MONTH": "2022-12"}).months_for(held, "2024-06", stored_first="2023-01")


def test_gaps_of_more_than_a_year_are_named() -> None:
    held = ["2020-01", "2020-02", "2022-03", "2022-04"]
    assert held_gaps(held, "2020-01", "2022-04") == ["no dumps for 24 months between 2020-02 and 2022-03"]
    assert held_gaps(held, "2022-03", "2022-04") == []
    assert months_to_rate(held, None, None, "store")[-1] == "2022-04"  # named, not refused
    # From a month on, a run re-rates through the last stored list unless --to says otherwise.
    assert months_to_rate(held, "2022-03", None, "store", stored_last="2022-06")[-1] == "2022-06"
    assert months_to_rate(held, "2022-03", "2022-03", "store", stored_last="2022-06") == ["2022-03"]
    assert months_to_rate(held, None, None, "store", stored_last="2022-06")[-1] == "2022-04"


def test_a_list_stored_before_the_correction_column_continues_the_chain(tmp_path: Path):
    """A list stored before lists had a `correction` column is the month before as it is, with none; rated again to
    the same ratings, it is no amendment.
    """
    from pipeline.engine.period import normalize_list, rate_period
    from pipeline.rules.model import load_rules
    from pipeline.scenarios.amendments import record_amendment
    from pipeline.store.monthly import table_key

    store = ObjectStore(str(tmp_path))
    scenario = Scenario(name="old", rules="fide-2024")
    previous = normalize_list(pl.DataFrame({"player_id": [1, 2], "rating": [2000, 1900]}))
    games = pl.DataFrame({"game_id": [1], "white_id": [1], "black_id": [2], "white_score": [1.0]})
    january = rate_period(previous, games, load_rules("fide-2024"), "2024-01").rating_list
    store.write_parquet(january.drop("correction"), table_key(["old", "rating_list"], "2024-01"))

    chain_continues(store, scenario, "2024-02", "2024-01")  # not refused as another table
    listed = previous_list(store, scenario, "2024-02", "2024-01")

    assert listed.columns == january.columns and listed["correction"].null_count() == listed.height
    assert listed.drop("correction").equals(january.drop("correction"))
    assert record_amendment(store, "old", ["old", "rating_list"], "2024-01", january, lambda _: pl.DataFrame()) is None
    # One that carries a correction is one.
    corrected = january.with_columns(correction=pl.lit(5, dtype=pl.Int32))
    unnamed = pl.DataFrame({"player_id": [1, 2], "name": [None, None]}, schema={"player_id": pl.Int64, "name": pl.Utf8})
    assert record_amendment(store, "old", ["old", "rating_list"], "2024-01", corrected, lambda _: unnamed) is not None


def test_lists_made_otherwise_are_named_from_their_footers_where_the_instance_has_no_record(
    rated_store, tmp_path: Path
) -> None:
    """A store rated under another instance (an object store's, from a fresh machine) is judged by the code version
    each list's footer records, as the instance would judge it; the games of the month before the run by theirs.
    """
    from assets.runtime.runs import lists_made_otherwise, tables_made_otherwise
    from pipeline.store.monthly import CODE_VERSION_FOOTER

    full, scenarios = rated_store
    store = _copy(full, tmp_path / "store")
    lists = store / "actual" / "rating_list"
    for table in (lists, store / "games", store / "raw_games"):  # a step's tables, and an IO manager's
        assert pl.read_parquet_metadata(table / "2024-04.parquet")[CODE_VERSION_FOOTER]
    changed = tmp_path / "changed.yaml"
    changed.write_text(SCENARIOS + "    set: {tau: 0.4}\n")  # glicko2's definition, so its version, changes
    with dg.DagsterInstance.ephemeral() as instance:  # no record of any list
        assert lists_made_otherwise(instance, plan_run(str(store), "2024-05", "2024-05", str(scenarios))) == {}
        assert lists_made_otherwise(instance, plan_run(str(store), "2024-05", "2024-05", str(changed))) == {
            "glicko2": "2024-01"
        }
        # A list without a footer was written before lists recorded their version: by other code.
        pl.read_parquet(lists / "2024-04.parquet").write_parquet(lists / "2024-04.parquet")
        assert lists_made_otherwise(instance, plan_run(str(store), "2024-05", "2024-05", str(scenarios))) == {
            "actual": "2024-04"
        }
        # The shared tables of the month before the run alike (a Dagster rate step judges them so too); the chain's
        # first month's footer says whether the months between may be so as well.
        plan = plan_run(str(store), "2024-05", "2024-05", str(scenarios))
        assert tables_made_otherwise(instance, plan) == []
        games = store / "games"
        pl.read_parquet(games / "2024-04.parquet").write_parquet(games / "2024-04.parquet", metadata={"other": "x"})
        assert tables_made_otherwise(instance, plan) == ["2024-04"]
        pl.read_parquet(games / "2024-01.parquet").write_parquet(games / "2024-01.parquet")
        assert tables_made_otherwise(instance, plan) == ["2024-01", "2024-04"]


def test_an_instance_s_stale_record_of_a_table_rated_again_elsewhere_does_not_name_it(
    rated_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list or month of games rated again under another instance (a shared $DAGSTER_HOME, a store rated elsewhere
    and brought back) records in its footer the version that wrote it: this instance's older record of it is stale.
    """
    from assets.runtime import runs
    from pipeline.store.monthly import CODE_VERSION_FOOTER

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    changed = tmp_path / "changed.yaml"
    changed.write_text(SCENARIOS + "    set: {tau: 0.4}\n")  # glicko2's definition, so its version, changes
    assert _run(store, changed, home, "--to", "2024-04") == 0  # this instance records glicko2's lists so
    for month in ("2024-01", "2024-02", "2024-03", "2024-04"):  # ... then they are rated again elsewhere
        shutil.copy(full / "glicko2" / "rating_list" / f"{month}.parquet", store / "glicko2" / "rating_list")
    plan = plan_run(str(store), "2024-05", "2024-05", str(scenarios))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert runs.lists_made_otherwise(instance, plan) == {}
        assert runs.tables_made_otherwise(instance, plan) == []
        # The validation's code changes, and one month's games are validated again elsewhere by the new code.
        games = store / "games" / "2024-02.parquet"
        pl.read_parquet(games).write_parquet(games, metadata={CODE_VERSION_FOOTER: "validated-anew"})
        real = runs.code_version
        anew = {"validate": "validated-anew"}
        monkeypatch.setattr(runs, "code_version", lambda stage: anew.get(stage) or real(stage))
        assert runs.tables_made_otherwise(instance, plan) == ["2024-01", "2024-03", "2024-04"]


def _rated_by_dagster(
    store: Path, scenarios: Path, home: Path, month: str, names: tuple[str, ...], *upstream: str
) -> tuple[list[str], dict[str, dict[str, object]]]:
    """Materialize the `names` scenarios' lists of `month` (and the `upstream` tables' month) as the UI, the schedule
    or the sensor does, no `ratings run` around it: the run's warnings of stored tables made otherwise, and each
    list's metadata of those warnings.
    """
    from assets.definitions import build_defs
    from assets.runtime.upgrades import GAMES_MADE_OTHERWISE
    from pipeline.scenarios.model import load_scenarios

    defs = build_defs("2024-01", month, root=str(store), scenarios=load_scenarios(str(scenarios)))
    lists = [dg.AssetKey([name, "rating_list"]) for name in names]
    # Each chain's tables of the month (a rating system's next month reads its state) and the upstream tables'.
    chains = [
        k for a in defs.assets or () if isinstance(a, dg.AssetsDefinition) and set(lists) & a.keys for k in a.keys
    ]
    selection = dg.AssetSelection.assets(*chains, *map(dg.AssetKey, upstream)).required_multi_asset_neighbors()
    home.mkdir(exist_ok=True)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = dg.materialize(
            [*defs.assets], selection=selection, partition_key=month, instance=instance, resources=defs.resources
        )
        assert result.success
        logged = [
            e.user_message
            for e in instance.all_logs(result.run_id)
            if e.level == logging.WARNING and e.user_message.startswith("WARNING: the stored")
        ]
    said: dict[str, dict[str, object]] = {name: {} for name in names}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key in lists:
            metadata = materialization.metadata
            said[materialization.asset_key.path[0]] = {
                k: metadata[k].value for k in (MADE_OTHERWISE, GAMES_MADE_OTHERWISE) if k in metadata
            }
    return logged, said


def test_a_dagster_rate_step_on_a_fresh_instance_judges_the_month_before_by_its_footers(
    rated_store, tmp_path: Path
) -> None:
    """A schedule on a machine whose instance has no record of the month before (a fresh $DAGSTER_HOME over an object
    store, a store rated under another instance) judges its list, raw_games and games by their footers.
    """
    from assets.runtime.upgrades import GAMES_MADE_OTHERWISE
    from pipeline.store.monthly import CODE_VERSION_FOOTER

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "fresh-home"
    listed = store / "actual" / "rating_list" / "2024-04.parquet"
    pl.read_parquet(listed).write_parquet(listed, metadata={CODE_VERSION_FOOTER: "rated-before-the-upgrade"})
    logged, said = _rated_by_dagster(store, scenarios, home, "2024-05", ("actual", "glicko2"))
    (line,) = logged
    assert line.startswith(
        "WARNING: the stored lists of actual from 2024-04 (or earlier) were made by another definition of the scenario "
        "(or another version of the code) than this run's, and this run starts at 2024-05: bring them in line with "
        f"`ratings run --store {store} --from 2024-04"
    ), line
    assert said == {"actual": {MADE_OTHERWISE: line}, "glicko2": {}}
    # The games of the month before validated by other code: said of every list continuing them.
    games = store / "games" / "2024-04.parquet"
    pl.read_parquet(games).write_parquet(games, metadata={CODE_VERSION_FOOTER: "validated-before-the-upgrade"})
    logged, said = _rated_by_dagster(store, scenarios, home, "2024-05", ("glicko2",))
    (line,) = logged
    assert line.startswith(
        "WARNING: the stored games of 2024-04 (or earlier) were read or validated by another version of the code than "
        f"this run's, and this run starts at 2024-05: the lists rated on them may differ from a rating from scratch; "
        f"bring them in line with `ratings run --store {store} --from 2024-04"
    ), line
    assert "`, or from the first such month before it (a `ratings run` names it)" in line
    assert said == {"glicko2": {GAMES_MADE_OTHERWISE: line}}


def test_a_dagster_rate_step_names_games_an_older_validation_made_though_its_list_s_version_is_today_s(
    rated_store, tmp_path: Path
) -> None:
    """An upgrade of the readers or the validation alone leaves the rate stage's version, so the list's, as it was;
    the games of the month before, which the instance and their footer say older validation code made, are named.
    """
    from assets.runtime.upgrades import CODE_VERSION_TAG, GAMES_MADE_OTHERWISE
    from pipeline.store.monthly import CODE_VERSION_FOOTER

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    shutil.copytree(full.parent / "home", home)
    games = store / "games" / "2024-04.parquet"
    pl.read_parquet(games).write_parquet(games, metadata={CODE_VERSION_FOOTER: "validated-before-the-upgrade"})
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "games", partition="2024-04", tags={CODE_VERSION_TAG: "validated-before-the-upgrade"}
            )
        )
    logged, said = _rated_by_dagster(store, scenarios, home, "2024-05", ("actual",))
    (line,) = logged
    assert line.startswith("WARNING: the stored games of 2024-04 (or earlier) were read or validated by another"), line
    assert said == {"actual": {GAMES_MADE_OTHERWISE: line}}


def test_a_dagster_rate_step_trusts_the_footer_over_an_instance_s_stale_record(rated_store, tmp_path: Path) -> None:
    """The instance records another version of the month before's list and games than today's, but those tables were
    written again since (under another instance) by today's code, as their footers record: nothing is said.
    """
    from assets.runtime.upgrades import CODE_VERSION_TAG

    full, scenarios = rated_store
    store, home = _copy(full, tmp_path / "store"), tmp_path / "home"
    shutil.copytree(full.parent / "home", home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for key in (dg.AssetKey(["glicko2", "rating_list"]), dg.AssetKey("games"), dg.AssetKey("raw_games")):
            instance.report_runless_asset_event(
                dg.AssetMaterialization(key, partition="2024-04", tags={CODE_VERSION_TAG: "made-elsewhere-before"})
            )
    assert _rated_by_dagster(store, scenarios, home, "2024-05", ("glicko2",)) == ([], {"glicko2": {}})


def test_dagster_months_after_a_ratings_run_or_a_dagster_month_of_the_same_code_say_nothing(
    rated_store, tmp_path: Path
) -> None:
    """A `ratings run` of two months, then the third and the fourth launched by Dagster (ingest, validation and the
    lists), with the same code and definitions: no stored table was made otherwise, and no step says so.
    """
    full, scenarios = rated_store
    store, home = tmp_path / "store", tmp_path / "home"
    shutil.copytree(full / "raw", store / "raw")
    assert _run(store, scenarios, home, "--to", "2024-02") == 0
    for month in ("2024-03", "2024-04"):
        said = _rated_by_dagster(store, scenarios, home, month, ("actual", "glicko2"), "raw_games", "games")
        assert said == ([], {"actual": {}, "glicko2": {}}), month
