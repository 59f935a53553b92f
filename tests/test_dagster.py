"""The Dagster layer: definitions, the Parquet IO manager, the reconciliation check, and month-range runs end to end."""

import io
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import dagster as dg
import pandera.polars as pa
import polars as pl
import pytest
from dagster._core.execution.backfill import BulkActionStatus
from dagster._core.launcher import RunLauncher
from dagster._serdes import ConfigurableClass
from polars.testing import assert_frame_equal

from assets.automation import range_tags
from assets.checks import CheckedTable, stage_checks
from assets.definitions import build_resources
from assets.partitions import monthly_partitions
from assets.storage import ObjectStoreResource, ParquetIOManager
from pipeline.invariants.catalog import QUARANTINE_SHARE, RECONCILIATION
from pipeline.invariants.store_checks import reconcile_months
from pipeline.months import add_months
from pipeline.operations import progress
from pipeline.operations.automation import RANGE_END_TAG, RANGE_START_TAG
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import MonthlyFrames, MonthStream, Table, table_key
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import markdown_text
from schemas import Games, Quarantine

# The months conftest.tiny_landing_zone generates.
ROOT = Path(__file__).resolve().parents[1]
TINY_START, TINY_END = "2024-01", "2024-04"
# One plain scenario keeps these tests fast; tests/test_scenarios.py covers several side by side.
PLAIN = Scenario(name="plain", description="FIDE's regulations, no events", rules="fide-historical")
SCENARIOS = {"plain": PLAIN}
ASSET_GROUPS = {
    "landing_zone": "ingest",
    "raw_games": "ingest",
    "games": "validate",
    "quarantine": "validate",
    "identity": "validate",
    "plain/rating_list": "plain",
    "plain/rated_games": "plain",
    "plain/points_ledger": "plain",
    "plain/points_flow": "plain",
    "plain/crosstable": "plain",
    "plain/accuracy": "plain",
    "plain/performance": "plain",
    "plain/reports": "plain",
    "plain/truth_error": "plain",
    "plain/score_curve": "plain",
    "plain/band_trend": "plain",
    "plain/cohort_drift": "plain",
    "plain/deflation_index": "plain",
    "plain/group_truth": "plain",
    "plain/federation_residuals": "plain",
    "plain/published_list": "plain",
    "common_accuracy": "common_games",
    "accuracy_comparison": "reports",
    "pool_health_comparison": "reports",
    "report_index": "reports",
    "evaluation/leaderboard": "evaluation",
}
# Lineage snapshot: a change here changes what the UI shows data engineers, so it must be deliberate.
ASSET_DEPS = {
    "landing_zone": set(),
    "raw_games": {"landing_zone"},
    "games": {"raw_games"},
    "quarantine": {"raw_games"},
    "identity": {"raw_games"},
    "plain/rating_list": {"plain/rating_list", "games"},
    "plain/rated_games": {"plain/rating_list", "games"},
    "plain/points_ledger": {"plain/rating_list", "games"},
    "plain/points_flow": {"plain/rating_list", "games"},
    "plain/crosstable": {"plain/rated_games"},
    "plain/accuracy": {"plain/rated_games"},
    "plain/performance": {"plain/rated_games"},
    "plain/reports": {
        "plain/crosstable",
        "plain/score_curve",
        "plain/band_trend",
        "plain/rating_list",
        "plain/cohort_drift",
        "plain/deflation_index",
        "plain/group_truth",
        "plain/federation_residuals",
        "plain/points_ledger",
        "plain/points_flow",
    },
    "plain/truth_error": {"plain/rating_list"},
    "plain/score_curve": {"plain/rated_games"},
    "plain/band_trend": {"plain/rated_games"},
    "plain/cohort_drift": {"plain/rating_list"},
    "plain/deflation_index": {"plain/rated_games"},
    "plain/group_truth": {"plain/rating_list"},
    "plain/federation_residuals": {"plain/rated_games"},
    "plain/published_list": {"plain/rating_list"},
    "common_accuracy": {"plain/rated_games"},
    "accuracy_comparison": {"plain/accuracy", "common_accuracy"},
    "pool_health_comparison": {"plain/cohort_drift", "plain/deflation_index"},
    "report_index": {
        "plain/reports",
        "accuracy_comparison",
        "pool_health_comparison",
        "evaluation/leaderboard",
        "plain/published_list",
    },
    "evaluation/leaderboard": {"games", "plain/rating_list"},
}
# Monthly tables (one materialization per month); the reports are rebuilt whole.
MONTHLY = [
    a
    for a in ASSET_GROUPS
    if a
    not in (
        "landing_zone",
        "plain/reports",
        "accuracy_comparison",
        "pool_health_comparison",
        "report_index",
        "evaluation/leaderboard",
    )
]


def materializations(result: dg.ExecuteInProcessResult) -> list[tuple[str, str | None, dict]]:
    """(asset key, partition, metadata) of every materialization the run recorded."""
    found = []
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        found.append((mat.asset_key.to_user_string(), mat.partition, dict(mat.metadata)))
    return found


def materialize_all(defs: dg.Definitions, **kwargs) -> dg.ExecuteInProcessResult:
    return dg.materialize([*defs.assets, *defs.asset_checks], resources=defs.resources, **kwargs)


def failure_text(event) -> str:
    """A step failure's message with the messages of its causes (Dagster wraps IO-manager errors)."""
    error, parts = event.step_failure_data.error, []
    while error is not None:
        parts.append(error.message)
        error = error.cause
    return "\n".join(parts)


def leftover_temp_files(root: str) -> list[Path]:
    return [p for p in Path(root).rglob("*") if ".tmp-" in p.name]


# -- partitions ----------------------------------------------------------------------------------


def test_monthly_partitions_are_yyyy_mm_with_inclusive_last_month() -> None:
    partitions = monthly_partitions("2023-11", "2024-02")
    assert partitions.get_partition_keys() == ["2023-11", "2023-12", "2024-01", "2024-02"]
    with pytest.raises(ValueError):
        monthly_partitions("2024-03", "2024-02")
    with pytest.raises(ValueError):
        monthly_partitions("2024-1")


def test_a_month_is_a_partition_only_once_it_has_ended(tmp_path: Path) -> None:
    """A list is made after its month ends: a partition of the current month (or a later one) let the sensor and the
    UI rate a month not yet over, and a run freeze its list under `forward`. The clock is fixed in the month, and
    after it.
    """
    from datetime import UTC, datetime

    from assets.automation import SENSOR_NAME
    from assets.definitions import build_defs
    from pipeline.months import month_of

    months = ["2026-08", "2026-09", "2026-10", "2026-11"]
    for now in (datetime(2026, 11, 30, 23), datetime(2026, 11, 1)):
        assert monthly_partitions("2026-08", "2027-03").get_partition_keys(current_time=now) == months[:3], now
        assert monthly_partitions("2026-08").get_partition_keys(current_time=now) == months[:3], now
    assert monthly_partitions("2026-08", "2026-11").get_partition_keys(current_time=datetime(2027, 3, 1)) == months
    # The landing sensor, with a last month far ahead: its run ends with the last completed month (the real clock's).
    this_month = month_of(datetime.now(UTC).date())
    root = str(tmp_path / "store")
    ObjectStore(root).write_text("white_id,black_id,result,date\n1001,1002,1-0\n", f"raw/GER/{this_month}/a.csv")
    defs = build_defs(add_months(this_month, -2), "2099-12", root=root, scenarios=SCENARIOS)
    context = dg.build_sensor_context(cursor=None, resources={"store": ObjectStoreResource(root=root)})
    [request] = defs.resolve_sensor_def(SENSOR_NAME).evaluate_tick(context).run_requests or []
    assert request.tags[RANGE_END_TAG] == add_months(this_month, -1)


def test_settings_months_come_from_the_environment_else_from_the_landing_zone() -> None:
    from pipeline.settings import Settings

    assert Settings.from_env({}).months_for([]) == ("2015-01", None)
    assert Settings.from_env({}).months_for(["2019-03", "2024-12"]) == ("2019-03", "2024-12")
    both = Settings.from_env({"RATINGS_FIRST_MONTH": "2020-05", "RATINGS_LAST_MONTH": "2020-07"})
    assert both.months_for(["2019-03", "2024-12"]) == ("2020-05", "2020-07")
    # With automation on the range stays open: next month's partition must exist for the schedule.
    assert Settings.from_env({"RATINGS_AUTOMATION": "ON"}).months_for(["2019-03", "2024-12"]) == ("2019-03", None)


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("RATINGS_FIRST_MONTH", "2024-13", "RATINGS_FIRST_MONTH='2024-13'"),
        ("RATINGS_AUTOMATION", "maybe", "RATINGS_AUTOMATION='maybe'"),
        ("RATINGS_SCHEDULE_DAY", "31", "RATINGS_SCHEDULE_DAY='31'"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable(variable: str, value: str, message: str) -> None:
    from pipeline.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="bad setting") as refused:
        Settings.from_env({variable: value})
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_ui_shows_the_months_the_store_holds(tiny_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from assets.definitions import defs as load_defs

    for variable in ("RATINGS_FIRST_MONTH", "RATINGS_LAST_MONTH", "RATINGS_AUTOMATION"):
        monkeypatch.delenv(variable, raising=False)
    keys = load_defs().resolve_job_def("all_months").partitions_def.get_partition_keys()
    assert (keys[0], keys[-1], len(keys)) == (TINY_START, TINY_END, 4)


# -- IO manager ----------------------------------------------------------------------------------


def io_only(root: str) -> dict[str, ParquetIOManager]:
    return {"io_manager": ParquetIOManager(store=ObjectStoreResource(root=root))}


class Numbers(pa.DataFrameModel):
    month: pl.Utf8
    n: pl.Int64


class Totals(pa.DataFrameModel):
    n: pl.Int64


def io_test_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    """Two small partitioned assets: one streams (month, frame) pairs, the next reads them lazily."""

    @dg.asset(partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run())
    def numbers(context: dg.AssetExecutionContext) -> MonthStream:
        # Month number = row count, so each stored file is recognisable.
        rows = {m: int(m[-2:]) for m in context.partition_keys}
        return MonthStream(
            Numbers, ((m, pl.DataFrame({"month": [m] * n, "n": list(range(n))})) for m, n in rows.items())
        )

    @dg.asset(partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run())
    def totals(context: dg.AssetExecutionContext, numbers: MonthlyFrames) -> MonthStream:
        assert list(numbers) == list(context.partition_keys)
        return MonthStream(Totals, {m: numbers[m].select(pl.col("n").sum()) for m in numbers})

    return [numbers, totals]


def test_io_manager_single_month_round_trip(store_root: str) -> None:
    partitions = monthly_partitions("2024-01", "2024-03")
    result = dg.materialize(io_test_assets(partitions), partition_key="2024-02", resources=io_only(store_root))
    assert result.success
    store = ObjectStore(store_root)
    assert store.list_files() == ["numbers/2024-02.parquet", "totals/2024-02.parquet"]
    assert store.read_parquet("numbers/2024-02.parquet").height == 2
    assert store.read_parquet("totals/2024-02.parquet")["n"].to_list() == [0 + 1]
    [(key, month, metadata)] = [m for m in materializations(result) if m[0] == "numbers"]
    assert month == "2024-02"
    assert metadata["dagster/partition_row_count"].value == 2
    assert metadata["path"].value == store.url("numbers/2024-02.parquet")
    assert "rows_per_month" not in metadata  # one month: the row count says it all


def test_io_manager_range_writes_each_month_once_with_its_own_metadata(store_root: str) -> None:
    partitions = monthly_partitions("2024-01", "2024-06")
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        io_test_assets(partitions),
        tags=range_tags("2024-02", "2024-04"),
        resources=io_only(store_root),
        instance=instance,
    )
    assert result.success
    found = materializations(result)
    for asset in ("numbers", "totals"):
        assert sorted(m for key, m, _ in found if key == asset) == ["2024-02", "2024-03", "2024-04"]
    numbers = {m: md for key, m, md in found if key == "numbers"}
    assert [numbers[m]["dagster/partition_row_count"].value for m in ("2024-02", "2024-03", "2024-04")] == [2, 3, 4]
    assert numbers["2024-03"]["path"].value.endswith("numbers/2024-03.parquet")
    # A month shows its own figures only; the run's totals are in the run's log.
    assert "rows" not in numbers["2024-03"] and "rows_per_month" not in numbers["2024-03"]
    assert "numbers: 9 rows over 3 months 2024-02..2024-04" in [
        e.user_message for e in instance.all_logs(result.run_id)
    ]
    store = ObjectStore(store_root)
    assert store.read_parquet("totals/2024-04.parquet")["n"].to_list() == [0 + 1 + 2 + 3]
    assert not store.exists("numbers/2024-05.parquet")
    assert leftover_temp_files(store_root) == []


def test_io_manager_on_a_non_local_fsspec_root() -> None:
    # memory:// goes through the same non-local code path as s3:// (single PUT, URL in metadata).
    root = "memory://io-manager-test/prefix"
    partitions = monthly_partitions("2024-01", "2024-02")
    result = dg.materialize(io_test_assets(partitions), tags=range_tags("2024-01", "2024-02"), resources=io_only(root))
    assert result.success
    paths = sorted(md["path"].value for key, _, md in materializations(result) if key == "totals")
    assert all(p.startswith("memory://") for p in paths)
    assert [p.split("io-manager-test/prefix/")[1] for p in paths] == [
        "totals/2024-01.parquet",
        "totals/2024-02.parquet",
    ]
    assert ObjectStore(root).read_parquet("totals/2024-02.parquet")["n"].to_list() == [0 + 1]


def test_io_manager_unpartitioned_round_trip(store_root: str) -> None:
    manager = ParquetIOManager(store=ObjectStoreResource(root=store_root))
    frame = pl.DataFrame({"n": [1, 2, 3]})
    out = dg.build_output_context(asset_key=dg.AssetKey(["scenarios", "summary"]))
    manager.handle_output(out, Table(Totals, frame))
    assert Path(store_root, "scenarios", "summary.parquet").is_file()
    assert out.get_logged_metadata()["dagster/row_count"].value == 3
    loaded = manager.load_input(dg.build_input_context(asset_key=dg.AssetKey(["scenarios", "summary"])))
    assert_frame_equal(loaded, frame)
    with pytest.raises(TypeError, match="expected a Table"):
        manager.handle_output(out, frame)  # a table names its model


def test_io_manager_stores_only_frames_that_match_the_assets_pandera_model(store_root: str) -> None:
    """Every month is validated against the model its MonthStream names before it is written."""
    from schemas import Accuracy
    from schemas.util import empty_frame

    partitions = monthly_partitions("2024-01", "2024-03")
    good = empty_frame(Accuracy)
    bad = good.drop("month")  # a column missing: refused

    @dg.asset(partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run())
    def monthly(context: dg.AssetExecutionContext) -> MonthStream:
        return MonthStream(Accuracy, iter([("2024-01", good), ("2024-02", bad)]))

    result = dg.materialize(
        [monthly], tags=range_tags("2024-01", "2024-02"), resources=io_only(store_root), raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "monthly 2024-02 does not match schemas.Accuracy" in str(
        failure.step_failure_data.user_failure_data.description
    )
    # The month before the bad one was validated and written; the bad one was never stored.
    assert Path(store_root, "monthly", "2024-01.parquet").is_file()
    assert not Path(store_root, "monthly", "2024-02.parquet").exists()


def test_io_manager_refuses_incomplete_or_ambiguous_range_outputs(store_root: str) -> None:
    partitions = monthly_partitions("2024-01", "2024-03")

    @dg.asset(partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run())
    def short(context: dg.AssetExecutionContext) -> MonthStream:
        return MonthStream(Totals, {"2024-01": pl.DataFrame({"n": [1]})})  # 2024-02 forgotten

    @dg.asset(partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run())
    def lumped(context: dg.AssetExecutionContext) -> pl.DataFrame:
        return pl.DataFrame({"n": [1]})  # one frame for two months, and no model named

    for asset, error in ((short, "2024-02"), (lumped, "expected a MonthStream")):
        result = dg.materialize(
            [asset], tags=range_tags("2024-01", "2024-02"), resources=io_only(store_root), raise_on_error=False
        )
        assert not result.success
        [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        assert error in failure_text(failure)


def test_monthly_frames_reads_on_access_and_names_missing_months(store_root: str) -> None:
    store = ObjectStore(store_root)
    store.write_parquet(pl.DataFrame({"x": [1], "y": ["a"]}), table_key(["games"], "2024-01"))
    frames = MonthlyFrames(store, ["games"], ["2024-01", "2024-02"])
    assert len(frames) == 2 and list(frames) == ["2024-01", "2024-02"] and "2024-02" in frames
    assert frames["2024-01"]["x"].to_list() == [1] and frames["2024-01"].columns == ["x", "y"]
    assert frames.read("2024-01", ("y",)).columns == ["y"]  # only the columns asked for
    with pytest.raises(FileNotFoundError, match="2024-02"):
        frames["2024-02"]
    with pytest.raises(FileNotFoundError, match="2024-02"):
        frames.read("2024-02", ("x",))
    with pytest.raises(KeyError):
        frames["2023-12"]
    with pytest.raises(TypeError):
        frames["2024-03"] = pl.DataFrame()  # read-only


def test_metadata_never_carries_credentials(store_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"AWS_ACCESS_KEY_ID": "AKIATESTKEYID123", "AWS_SECRET_ACCESS_KEY": "s3cr3t/SECRET+value"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    partitions = monthly_partitions("2024-01", "2024-02")
    result = dg.materialize(
        io_test_assets(partitions), tags=range_tags("2024-01", "2024-02"), resources=io_only(store_root)
    )
    text = repr([e.event_specific_data for e in result.all_events])
    assert not any(value in text for value in secrets.values())
    assert redact_url("s3://AKIA:s3cr3t@bucket/prefix") == "s3://bucket/prefix"
    assert redact_url("/data/local") == "/data/local"


# -- reconciliation check ----------------------------------------------------------------------


def write_counts(store: ObjectStore, counts: dict[str, tuple[int, int, int]], file: str = "GER/dump.trf") -> None:
    """raw_games, games and quarantine of each month: records 0..raw-1 of one file; games first, then quarantined."""
    for month, (raw, games, quarantined) in counts.items():
        ids = pl.Series(range(raw), dtype=pl.UInt64)
        tables = {
            "raw_games": pl.DataFrame({"source_file": pl.Series([file] * raw, dtype=pl.Utf8), "record_id": ids}),
            "games": pl.DataFrame({"source_file": pl.Series([file] * games, dtype=pl.Utf8), "game_id": ids[:games]}),
            "quarantine": pl.DataFrame(
                {
                    "source_file": pl.Series([file] * quarantined, dtype=pl.Utf8),
                    "record_id": ids[games : games + quarantined],
                }
            ),
        }
        for asset, frame in tables.items():
            store.write_parquet(frame, table_key([asset], month))


def test_reconcile_lists_failing_and_missing_months(store_root: str) -> None:
    store = ObjectStore(store_root)
    write_counts(store, {"2024-01": (5, 4, 1), "2024-02": (5, 3, 1)})
    failing, totals = reconcile_months(store, ["2024-01", "2024-02", "2024-03"])
    assert failing == [
        "2024-02: raw 5 != games 3 + quarantine 1",
        "2024-02 GER/dump.trf: 5 records, 3 games + 1 quarantined",
        "2024-03: not stored (raw_games, games, quarantine)",
    ]
    assert totals == {"raw_games": 10, "games": 7, "quarantine": 2, "files": 2}


def test_reconcile_names_the_file_whose_records_were_swapped(store_root: str) -> None:
    """Equal counts are not enough: a record replaced by another id fails its file, and only its file."""
    store = ObjectStore(store_root)
    write_counts(store, {"2024-01": (4, 3, 1)}, file="GER/a.trf")
    raw = pl.concat(
        [
            store.read_parquet(table_key(["raw_games"], "2024-01")),
            pl.DataFrame({"source_file": ["ENG/b.pgn"] * 2, "record_id": pl.Series([10, 11], dtype=pl.UInt64)}),
        ]
    )
    quarantine = pl.concat(
        [
            store.read_parquet(table_key(["quarantine"], "2024-01")),
            pl.DataFrame({"source_file": ["ENG/b.pgn"] * 2, "record_id": pl.Series([10, 12], dtype=pl.UInt64)}),
        ]
    )
    store.write_parquet(raw, table_key(["raw_games"], "2024-01"))
    store.write_parquet(quarantine, table_key(["quarantine"], "2024-01"))
    failing, totals = reconcile_months(store, ["2024-01"])
    assert failing == ["2024-01 ENG/b.pgn: 2 records, the record ids differ"]
    assert totals["files"] == 2


def test_reconciliation_check_covers_the_run_range_or_its_one_partition(store_root: str) -> None:
    partitions = monthly_partitions("2024-01", "2024-03")
    check = stage_checks(
        "validate_games", partitions, [CheckedTable(dg.AssetKey("games"), Games, "game_id", (RECONCILIATION,))]
    )
    specs = [dg.AssetSpec(key, partitions_def=partitions) for key in ("raw_games", "games", "quarantine")]
    reconciliation = dg.AssetCheckKey(dg.AssetKey("games"), RECONCILIATION)
    job = dg.define_asset_job("check_only", selection=dg.AssetSelection.checks(reconciliation))
    defs = dg.Definitions(assets=specs, asset_checks=[check], jobs=[job], resources=build_resources(store_root))
    job_def = defs.resolve_job_def("check_only")
    write_counts(ObjectStore(store_root), {"2024-01": (5, 4, 1), "2024-02": (5, 3, 1), "2024-03": (2, 0, 2)})

    ranged = job_def.execute_in_process(tags=range_tags("2024-01", "2024-03"), raise_on_error=False)
    [evaluation] = [e for e in ranged.get_asset_check_evaluations() if e.partition is None]
    # The failing month fails alone in the UI: the others show passed.
    assert sorted((e.partition, e.passed) for e in ranged.get_asset_check_evaluations() if e.partition) == [
        ("2024-01", True),
        ("2024-02", False),
        ("2024-03", True),
    ]
    assert evaluation.check_name == RECONCILIATION and not evaluation.passed
    assert evaluation.metadata["months_checked"].value == 3
    assert markdown_text("2024-02: raw 5 != games 3 + quarantine 1") in evaluation.metadata["problems"].value
    assert evaluation.metadata["raw_games_rows"].value == 12

    # A checks-only job refuses partition_key= (no selected asset to take the partitions from);
    # the partition tag is what partition_key= would set.
    single = job_def.execute_in_process(tags={"dagster/partition": "2024-03"})
    [evaluation] = single.get_asset_check_evaluations()
    assert evaluation.passed and evaluation.partition == "2024-03"
    # Every record accounted for, though all quarantined (the quarantine_share check warns of that).
    assert evaluation.metadata["months_checked"].value == 1


def test_quarantine_share_warns_for_the_month_mostly_quarantined_only(store_root: str) -> None:
    partitions = monthly_partitions("2024-01", "2024-03")
    share = stage_checks(
        "validate_games", partitions, [CheckedTable(dg.AssetKey("quarantine"), Quarantine, None, (QUARANTINE_SHARE,))]
    )
    specs = [dg.AssetSpec(key, partitions_def=partitions) for key in ("raw_games", "games", "quarantine")]
    quarantine_share = dg.AssetCheckKey(dg.AssetKey("quarantine"), QUARANTINE_SHARE)
    job = dg.define_asset_job("share_only", selection=dg.AssetSelection.checks(quarantine_share))
    defs = dg.Definitions(assets=specs, asset_checks=[share], jobs=[job], resources=build_resources(store_root))
    write_counts(ObjectStore(store_root), {"2024-01": (5, 4, 1), "2024-02": (4, 1, 3), "2024-03": (2, 1, 1)})
    ranged = defs.resolve_job_def("share_only").execute_in_process(tags=range_tags("2024-01", "2024-03"))
    assert ranged.success  # a warning never fails the run
    per_month = {e.partition: (e.passed, e.severity) for e in ranged.get_asset_check_evaluations() if e.partition}
    # 3 of 4 records in February is more than half; 1 of 2 in March is not.
    assert per_month == {
        "2024-01": (True, dg.AssetCheckSeverity.WARN),
        "2024-02": (False, dg.AssetCheckSeverity.WARN),
        "2024-03": (True, dg.AssetCheckSeverity.WARN),
    }


# -- progress ------------------------------------------------------------------------------------


def test_progress_is_a_noop_until_a_reporter_is_installed() -> None:
    progress.report("rate", "2024-01", 1, 2)  # nothing installed: nothing happens
    stream = io.StringIO()
    previous = progress.install(progress.ConsoleProgress(stream))
    try:
        progress.report("rate", "2024-01", 1, 2)
        progress.report("rate", "2024-02", 2, 2)
    finally:
        progress.install(previous)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "2/2" in lines[1] and "2024-02" in lines[1] and lines[1].startswith("rate")


# -- definitions ---------------------------------------------------------------------------------


@pytest.fixture
def defs() -> dg.Definitions:
    from assets.definitions import build_defs

    return build_defs(TINY_START, TINY_END, scenarios=SCENARIOS)


def test_definitions_load() -> None:
    from assets.definitions import defs as load_defs

    module_defs = load_defs()
    dg.Definitions.validate_loadable(module_defs)
    job = module_defs.resolve_job_def("all_months")
    expected = {"raw_games", "validate_games", "validate_games_checks", "raw_games_checks"}
    for scenario in ("actual", "sonas_2017", "sonas_2002", "elo_480"):
        expected |= {f"rate_{scenario}", f"analyse_{scenario}", f"analyse_{scenario}_checks"}
    assert expected <= {n.name for n in job.nodes}


def test_no_description_holds_text_the_ui_takes_for_an_html_tag(defs: dg.Definitions) -> None:
    """The UI renders asset, check and column descriptions as Markdown and drops an unknown tag such as <FED>: a
    placeholder belongs in a code span.
    """
    graph = defs.resolve_asset_graph()
    texts = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        texts[key.to_user_string()] = node.description or ""
        for column in getattr(node.metadata.get("dagster/column_schema"), "columns", []):
            texts[f"{key.to_user_string()}.{column.name}"] = column.description or ""
    texts |= {str(check): graph.get_check_spec(check).description or "" for check in graph.asset_check_keys}
    tags = {name: re.findall(r"<[A-Za-z/!?][^>]*>", re.sub(r"`[^`]*`", "", text)) for name, text in texts.items()}
    assert {name: found for name, found in tags.items() if found} == {}


def test_assets_groups_kinds_and_lineage(defs: dg.Definitions) -> None:
    graph = defs.resolve_asset_graph()
    nodes = {key.to_user_string(): graph.get(key) for key in graph.get_all_asset_keys()}
    assert {name: node.group_name for name, node in nodes.items()} == ASSET_GROUPS
    assert {name: {p.to_user_string() for p in node.parent_keys} for name, node in nodes.items()} == ASSET_DEPS
    for name, node in nodes.items():
        assert node.description, name
        if name == "landing_zone":
            assert node.is_observable and not node.is_materializable
            continue
        # The published list is files for people (CSV, TXT, HTML), not a Parquet table.
        tables = name in MONTHLY and name != "plain/published_list"
        assert node.kinds == ({"polars", "parquet"} if tables else node.kinds) and node.kinds, name
        assert node.owners == ["team:rating-office"] and node.code_version, name
        assert node.description, name
        if name in MONTHLY:
            assert node.metadata["dagster/column_schema"].columns, name
            assert (
                isinstance(node.backfill_policy, dg.BackfillPolicy)
                and node.backfill_policy.max_partitions_per_run is None
            ), name
    # A rule set's month reads the lists in force at its late events' start (issue 36): the months before, up to the
    # look-back; its partitions show which.
    from pipeline.scenarios.recalculation import LOOK_BACK_MONTHS

    rate = defs.resolve_assets_def(dg.AssetKey(["plain", "rating_list"]))
    mapping = rate.get_partition_mapping(dg.AssetKey(["plain", "rating_list"]))
    assert isinstance(mapping, dg.TimeWindowPartitionMapping)
    assert (mapping.start_offset, mapping.end_offset) == (-LOOK_BACK_MONTHS, -1)
    assert rate.partitions_def is not None
    keys = rate.partitions_def.get_partition_keys()
    upstream = graph.get_parents_partitions(dg.AssetKey(["plain", "rated_games"]), keys[-1]).parent_partitions
    months = sorted(p.partition_key for p in upstream if p.asset_key == dg.AssetKey(["plain", "rating_list"]))
    assert len(keys) > 2 and months == keys[max(0, len(keys) - 1 - LOOK_BACK_MONTHS) : -1], "the lists before it"
    checks = {key.name for key in graph.asset_check_keys}
    # Every partitioned table's checks (tests/test_operations.py covers each one).
    assert checks == {
        RECONCILIATION,
        "landing_zone_layout",
        "quarantine_share",
        "schema",
        "no_duplicate_games",
        "no_duplicate_players",
        "floor_respected",
        "list_continuity",
        "rating_points_conserved",
        "ledger_balance",
    }


def test_definitions_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from assets.definitions import defs

    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2023-11")
    monkeypatch.setenv("RATINGS_LAST_MONTH", "2024-02")
    job = defs().resolve_job_def("all_months")
    assert job.partitions_def.get_partition_keys() == ["2023-11", "2023-12", "2024-01", "2024-02"]


# -- end to end on a tiny generated federation ---------------------------------------------------


@pytest.fixture(scope="module")
def tiny_runs(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Months 1-3 in one range run, then month 4 alone, against one store and one instance."""
    from assets.definitions import build_defs

    root = tmp_path_factory.mktemp("runs") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    defs = build_defs(TINY_START, TINY_END, root=str(root), scenarios=SCENARIOS)
    instance = dg.DagsterInstance.ephemeral()
    calls: list[tuple[str, str, int, int]] = []
    previous = progress.install(lambda *args: calls.append(args))
    try:
        ranged = materialize_all(defs, instance=instance, tags=range_tags("2024-01", "2024-03"))
        single = materialize_all(defs, instance=instance, partition_key="2024-04")
    finally:
        progress.install(previous)
    return SimpleNamespace(root=str(root), defs=defs, instance=instance, ranged=ranged, single=single, calls=calls)


def engine_chain(
    store: ObjectStore, months: list[str], previous: pl.DataFrame | None = None, rules: str = "fide-historical"
) -> pl.DataFrame:
    """The rating list after `months`, computed with the pure pipeline only (no Dagster)."""
    from pipeline.engine.period import rate_period
    from pipeline.ingest.dumps import read_month
    from pipeline.ingest.registry import read_players, read_seed_list
    from pipeline.rules.model import resolve_rules
    from pipeline.scenarios.chain import seed_clock_month, seeded_list
    from pipeline.scenarios.model import Scenario
    from pipeline.validate.split import split_games

    if previous is None:
        clock = seed_clock_month(store, Scenario(name="by_hand", rules=rules), months[0])
        previous = seeded_list(read_seed_list(store), clock)
    lists = {add_months(months[0], -1): previous}

    def list_of(month: str) -> pl.DataFrame:
        # A tournament reported late is rated with the list in force at its start: the list of the month before.
        if month not in lists:
            lists[month] = store.read_parquet(table_key(["plain", "rating_list"], month))
        return lists[month]

    for month in months:
        players = read_players(store, month)
        games, _ = split_games(read_month(store, month), players, month)
        started = games["event_start"].dt.strftime("%Y-%m")
        for start in sorted(set(started.to_list()) - {month}):
            listed = list_of(add_months(start, -1)).select("player_id", "rating")
            for side in ("white", "black"):
                found = games.join(listed, left_on=f"{side}_id", right_on="player_id", how="left")["rating"]
                earlier = (started == start) & games[f"{side}_rating_used"].is_null()
                games = games.with_columns(
                    pl.when(earlier).then(found).otherwise(pl.col(f"{side}_rating_used")).alias(f"{side}_rating_used")
                )
        previous = rate_period(previous, games, resolve_rules(rules, month), month, players=players).rating_list
        lists[month] = previous
    return previous


def test_range_run_records_one_materialization_per_month_per_asset(tiny_runs: SimpleNamespace) -> None:
    assert tiny_runs.ranged.success and tiny_runs.single.success
    found = materializations(tiny_runs.ranged)
    for asset in MONTHLY:
        assert sorted(m for key, m, _ in found if key == asset) == ["2024-01", "2024-02", "2024-03"], asset
        records = tiny_runs.instance.fetch_materializations(dg.AssetKey.from_user_string(asset), limit=100).records
        assert sorted(r.partition_key for r in records) == ["2024-01", "2024-02", "2024-03", "2024-04"], asset
    assert leftover_temp_files(tiny_runs.root) == []


def test_reconciliation_passed_for_every_month(tiny_runs: SimpleNamespace) -> None:
    evaluations = [e for e in tiny_runs.ranged.get_asset_check_evaluations() if e.check_name == RECONCILIATION]
    [ranged] = [e for e in evaluations if e.partition is None]
    assert ranged.passed and ranged.metadata["months_checked"].value == 3
    # One evaluation per month as well, so the UI shows every month of the range passed, not skipped.
    assert sorted((e.partition, e.passed) for e in evaluations if e.partition) == [
        ("2024-01", True),
        ("2024-02", True),
        ("2024-03", True),
    ]
    [single] = [e for e in tiny_runs.single.get_asset_check_evaluations() if e.check_name == RECONCILIATION]
    assert single.passed and single.partition == "2024-04"


def test_month_3_list_equals_the_engine_chained_by_hand(tiny_runs: SimpleNamespace) -> None:
    store = ObjectStore(tiny_runs.root)
    stored = store.read_parquet(table_key(["plain", "rating_list"], "2024-03"))
    assert_frame_equal(stored, engine_chain(store, ["2024-01", "2024-02", "2024-03"]))
    assert stored.filter(pl.col("rating").is_not_null()).height > 0


def test_single_month_run_continues_from_the_stored_month(tiny_runs: SimpleNamespace) -> None:
    store = ObjectStore(tiny_runs.root)
    march = store.read_parquet(table_key(["plain", "rating_list"], "2024-03"))
    stored = store.read_parquet(table_key(["plain", "rating_list"], "2024-04"))
    assert_frame_equal(stored, engine_chain(store, ["2024-04"], previous=march))
    assert ("rate plain", "2024-04", 1, 1) in tiny_runs.calls
    assert ("rate plain", "2024-03", 3, 3) in tiny_runs.calls


def test_rating_list_metadata_per_month(tiny_runs: SimpleNamespace) -> None:
    store = ObjectStore(tiny_runs.root)
    found = {(key, m): md for key, m, md in materializations(tiny_runs.ranged)}
    metadata = found[("plain/rating_list", "2024-02")]
    stored = store.read_parquet(table_key(["plain", "rating_list"], "2024-02"))
    assert metadata["dagster/partition_row_count"].value == stored.height == metadata["players"].value
    assert metadata["rated_players"].value == stored.filter(pl.col("rating").is_not_null()).height
    assert metadata["path"].value == store.url(table_key(["plain", "rating_list"], "2024-02"))
    assert metadata["rules"].value == "fide-2022"
    assert metadata["dagster/column_lineage"].value.deps_by_column["rating"]
    crosstable = store.read_parquet(table_key(["plain", "crosstable"], "2024-02"))
    assert set(crosstable["period"]) <= {"2024-02"}


def test_federation_residuals_of_a_month_recount_its_games_across_federations(tiny_runs: SimpleNamespace) -> None:
    from pipeline.ingest.registry import read_players

    store = ObjectStore(tiny_runs.root)
    found = {(key, m): md for key, m, md in materializations(tiny_runs.ranged)}
    stored = store.read_parquet(table_key(["plain", "federation_residuals"], "2024-03"))
    assert found[("plain/federation_residuals", "2024-03")]["federations"].value == stored.height == 3
    # Recounted side by side in plain Python from the stored games and the month's registry.
    federation = dict(read_players(store, "2024-03").select("player_id", "federation").iter_rows())
    games = store.read_parquet(table_key(["plain", "rated_games"], "2024-03"))
    counts: dict[str, list[float]] = {}
    for game in games.iter_rows(named=True):
        sides = [
            (game["white_id"], game["black_id"], game["white_score"], game["white_expected"]),
            (game["black_id"], game["white_id"], 1 - game["white_score"], game["black_expected"]),
        ]
        rated = None not in (game["white_rating_used"], game["black_rating_used"], *(s[3] for s in sides))
        for player, opponent, score, expected in sides:
            own, other = federation.get(player) or None, federation.get(opponent) or None
            if rated and own and other and own != other:
                counts.setdefault(own, [0, 0.0, 0.0])
                counts[own] = [counts[own][0] + 1, counts[own][1] + score, counts[own][2] + expected]
    assert sorted(stored["federation"]) == sorted(counts)
    for row in stored.iter_rows(named=True):
        games_of, score, expected = counts[row["federation"]]
        assert row["games"] == games_of and row["residual"] == pytest.approx(score - expected)
    # No December list in the run: the groups against the truth are materialized empty.
    assert store.read_parquet(table_key(["plain", "group_truth"], "2024-03")).is_empty()
    # The pool-health page shows the residuals and the year's flows; the residuals' yearly table is beside it.
    page = store.read_bytes("reports/plain/pool-health/2024-2024.html").decode()
    assert "Federation residuals" in page and '<details id="flows-2024" open>' in page
    yearly = store.read_parquet("reports/plain/pool-health-federations/2024-2024.parquet")
    assert sorted(yearly["federation"]) == sorted(counts)


def test_each_scenarios_list_is_expected_by_the_end_of_the_schedules_day() -> None:
    from datetime import timedelta

    from assets.definitions import build_defs
    from pipeline.settings import Settings

    # Open-ended months reach the month just closed: only then is a list expected (assets.definitions).
    defs = build_defs(TINY_START, None, scenarios=SCENARIOS, settings=Settings(schedule_day=5))
    graph = defs.resolve_asset_graph()
    policy = graph.get(dg.AssetKey(["plain", "rating_list"])).freshness_policy
    assert policy is not None and policy.deadline_cron == "59 23 5 * *"
    # Due after the month closed (the 1st) and by the end of the 5th: nothing older than the 1st counts.
    assert policy.lower_bound_delta == timedelta(days=4, hours=23, minutes=59)
    assert graph.get(dg.AssetKey(["plain", "rated_games"])).freshness_policy is None


def launch_one_table_again(runs: SimpleNamespace, tmp_path: Path, table: str, left_alone: str) -> tuple[bool, bool]:
    """Delete `plain/<table>` of 2024-04 in a copy of the tiny runs' store, launch that asset alone for the month (as
    the UI's Materialize does); (the same bytes written again, `plain/<left_alone>` of the month untouched).
    """
    root = tmp_path / "store"
    shutil.copytree(runs.root, root)
    target, other = (root / "plain" / name / "2024-04.parquet" for name in (table, left_alone))
    before = (target.read_bytes(), other.stat().st_mtime_ns)
    target.unlink()
    scenarios = tmp_path / "scenarios.yaml"
    # The same definition as PLAIN's (its version, in each table's footer, is the run's): the same bytes again.
    scenarios.write_text(f'scenarios:\n  plain:\n    description: "{PLAIN.description}"\n    rules: fide-historical\n')
    environment = {
        **os.environ,
        "RATINGS_STORE": str(root),
        "RATINGS_SCENARIOS": str(scenarios),
        "DAGSTER_HOME": str(tmp_path / "home"),
    }
    (tmp_path / "home").mkdir()
    command = [str(Path(sys.executable).parent / "dg"), "launch", "--target-path", str(ROOT)]
    command += ["--assets", f"plain/{table}", "--partition", "2024-04"]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "DagsterInvalidSubsetError" not in done.stderr
    return target.read_bytes() == before[0], other.stat().st_mtime_ns == before[1]


def test_the_list_alone_materializes_without_the_per_game_table(tiny_runs: SimpleNamespace, tmp_path: Path) -> None:
    """Selecting one table of the rate step is a valid selection: the month is computed, only the list is stored."""
    assert launch_one_table_again(tiny_runs, tmp_path, "rating_list", "rated_games") == (True, True)


def test_one_analysis_alone_materializes_without_the_others(tiny_runs: SimpleNamespace, tmp_path: Path) -> None:
    """The analyses are one step; selecting one of them (from the UI) stores that table alone, the same bytes."""
    assert launch_one_table_again(tiny_runs, tmp_path, "performance", "crosstable") == (True, True)


def test_a_range_of_the_list_alone_writes_every_month_of_it(tiny_store: str) -> None:
    from assets.definitions import build_defs

    defs = build_defs(TINY_START, TINY_END, root=tiny_store, scenarios=SCENARIOS)
    upstream = dg.materialize(
        [*defs.assets],
        resources=defs.resources,
        selection=["raw_games", "games", "quarantine", "identity"],
        tags=range_tags("2024-01", "2024-02"),
    )
    assert upstream.success
    result = dg.materialize(
        [*defs.assets], resources=defs.resources, selection="plain/rating_list", tags=range_tags("2024-01", "2024-02")
    )
    assert result.success
    assert sorted(m for key, m, _ in materializations(result)) == ["2024-01", "2024-02"]
    store = ObjectStore(tiny_store)
    assert store.exists(table_key(["plain", "rating_list"], "2024-02"))
    assert not store.exists(table_key(["plain", "rated_games"], "2024-01"))


def test_a_scenario_from_a_config_file_needs_no_code(
    tiny_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets.definitions import build_defs

    config = tmp_path / "scenarios.yaml"
    config.write_text("scenarios:\n  plain-elo:\n    description: plain Elo\n    rules: elo-32\n")
    monkeypatch.setenv("RATINGS_SCENARIOS", str(config))
    defs = build_defs(TINY_START, TINY_END, root=tiny_store)
    assert {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} >= {
        "plain_elo/rating_list",
        "plain_elo/rated_games",
        "plain_elo/crosstable",
    }
    result = materialize_all(defs, tags=range_tags("2024-01", "2024-02"))
    found = {(key, m): md for key, m, md in materializations(result)}
    assert found[("plain_elo/rating_list", "2024-02")]["rules"].value == "elo-32"
    store = ObjectStore(tiny_store)
    stored = store.read_parquet(table_key(["plain_elo", "rating_list"], "2024-02"))
    assert_frame_equal(stored, engine_chain(store, ["2024-01", "2024-02"], rules="elo-32"))


def test_a_month_after_a_gap_fails_naming_the_missing_month(tiny_store: str) -> None:
    from assets.definitions import build_defs

    defs = build_defs(TINY_START, TINY_END, root=tiny_store, scenarios=SCENARIOS)
    result = materialize_all(defs, partition_key="2024-03", raise_on_error=False)
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert [e.step_key for e in failures] == ["rate_plain"]
    assert "plain/rating_list for 2024-02 is missing" in failures[0].step_failure_data.user_failure_data.description
    assert not ObjectStore(tiny_store).exists(table_key(["plain", "rating_list"], "2024-03"))


def test_a_missing_month_in_a_dagster_run_names_the_rebuild_with_the_location_s_scenarios_and_instance(
    tiny_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets.definitions import build_defs

    scenarios_file, home = tmp_path / "my scenarios.yaml", tmp_path / "home"
    monkeypatch.setenv("RATINGS_SCENARIOS", str(scenarios_file))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    defs = build_defs(TINY_START, TINY_END, root=tiny_store, scenarios=SCENARIOS)
    result = materialize_all(defs, partition_key="2024-03", raise_on_error=False)
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    description = failure.step_failure_data.user_failure_data.description
    # Run as printed, the rebuild rates the same scenarios into the same instance as the code location.
    assert f"--from 2024-01 --scenarios '{scenarios_file}' --dagster-home {home}`" in description


def test_demo_rates_the_scenarios_side_by_side_with_the_bytes_of_one_run(
    tiny_store: str, tiny_landing_zone: Path, tmp_path: Path
) -> None:
    from assets.runtime.runs import run_demo, run_store

    out = io.StringIO()
    summary = run_demo(tiny_store, dagster_home=str(tmp_path / "home"), out=out, workers=2)
    assert summary["success"] and summary["reconciliation_passed"]
    assert (summary["months"], summary["first_month"], summary["last_month"]) == (4, TINY_START, TINY_END)
    assert summary["games"] > 0 and set(summary["rated_players"]) == {
        "actual",
        "sonas_2017",
        "sonas_2002",
        "elo_480",
        "glicko2",
        "stephenson",
        "dwz_ger",
        "ecf_eng",
        "actual_rapid",
        "actual_blitz",
    }
    assert all(count > 0 for count in summary["rated_players"].values())
    assert "Demo done" in out.getvalue()
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    # The shared tables in two runs of consecutive months side by side, one run per scenario (two at a time; the
    # rapid and blitz chains, which read actual's lists, after the others), the tables made from every chain, the
    # comparison: all of the named job.
    runs = instance.get_runs()
    chains = ["actual", "sonas_2017", "sonas_2002", "elo_480", "glicko2", "stephenson", "dwz_ger", "ecf_eng"]
    assert sorted(run.tags["ratings/stage"] for run in runs) == sorted(
        ["shared", "shared", "common_games", "comparison", *chains, "actual_rapid", "actual_blitz"]
    )
    started = {run.tags["ratings/stage"]: instance.get_run_record_by_id(run.run_id).start_time for run in runs}
    ended = {run.tags["ratings/stage"]: instance.get_run_record_by_id(run.run_id).end_time for run in runs}
    assert min(started["actual_rapid"], started["actual_blitz"]) >= max(ended[name] for name in chains)
    shared = sorted(
        (run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) for run in runs if run.tags["ratings/stage"] == "shared"
    )
    assert shared[0][0] == TINY_START and shared[1][1] == TINY_END
    assert shared[1][0] == add_months(shared[0][1], 1)  # consecutive, no month twice or left out
    assert {(run.job_name, run.status) for run in runs} == {("all_months", dg.DagsterRunStatus.SUCCESS)}
    assert set(summary["run_ids"]) == {run.run_id for run in runs}
    assert min(started["comparison"], started["common_games"]) >= max(ended[name] for name in chains)
    assert started["comparison"] >= ended["common_games"]
    assert "14 runs of all_months" in out.getvalue()
    # One run for everything (--workers 1) writes the same bytes.
    one_run = tmp_path / "one-run"
    shutil.copytree(tiny_landing_zone, one_run / "raw")
    single = run_store(str(one_run), dagster_home=str(tmp_path / "home-1"), out=io.StringIO(), workers=1)
    assert len(single["run_ids"]) == 2  # everything but the last month's lists, then those with the comparison
    written = {p.relative_to(tiny_store) for p in Path(tiny_store).rglob("*") if p.is_file()}
    assert written == {p.relative_to(one_run) for p in one_run.rglob("*") if p.is_file()}
    assert [p for p in sorted(written) if (Path(tiny_store) / p).read_bytes() != (one_run / p).read_bytes()] == []
    records = instance.fetch_materializations(dg.AssetKey(["sonas_2017", "crosstable"]), limit=100).records
    assert sorted(r.partition_key for r in records) == ["2024-01", "2024-02", "2024-03", "2024-04"]
    # The reports: an index linking a crosstable page per scenario, the charts and the comparison.
    store = ObjectStore(tiny_store)
    index = store.read_bytes("reports/index.html").decode()
    for scenario in ("actual", "sonas_2017", "sonas_2002", "elo_480", "glicko2", "stephenson", "dwz_ger", "ecf_eng"):
        page = f"reports/{scenario}/crosstable/2024.html"
        assert store.exists(page) and f'href="{scenario}/crosstable/2024.html"' in index, scenario
        assert store.exists(f"reports/{scenario}/score-curves/2024-2024.png"), scenario
    assert store.exists("reports/actual/rating-distribution/compression-2024-02.png")
    # The pool-health page of a rule-set scenario: its ledger by year, with the compression's channel.
    assert 'href="actual/pool-health/2024-2024.html"' in index and store.exists(
        "reports/actual/pool-health/2024-2024.png"
    )
    yearly = store.read_parquet("reports/actual/pool-health/2024-2024.parquet").row(0, named=True)
    assert yearly["one_time_events"] > 0 and yearly["unexplained"] == 0
    assert store.exists("reports/all-scenarios/accuracy-comparison/2024-2024.html")
    # The comparison rests on the monthly common_accuracy tables: the same rows as computed from every rated_games.
    from polars.testing import assert_frame_equal

    from pipeline.reports.writer import common_games_accuracy
    from pipeline.scenarios.model import compared_scenarios, load_scenarios

    compared = list(compared_scenarios(load_scenarios()))
    direct = common_games_accuracy(store, compared, ["2024-01", "2024-02", "2024-03", "2024-04"])
    shown = store.read_parquet("reports/all-scenarios/accuracy/2024-2024.parquet")
    assert shown.height == direct.height == 4 * len(compared)
    assert_frame_equal(shown.sort("month", "scenario"), direct.sort("month", "scenario"))


def test_column_lineage_points_at_real_assets(defs: dg.Definitions) -> None:
    """Every upstream of a table's column lineage is an asset of the graph (the columns themselves are checked
    against the schemas in test_ingest_validate's pure test).
    """
    from assets.storage import column_lineage
    from schemas.lineage import COLUMN_LINEAGE

    keys = defs.resolve_asset_graph().get_all_asset_keys()
    for table in COLUMN_LINEAGE:
        key = dg.AssetKey([table]) if table in ("games", "quarantine") else dg.AssetKey(["plain", table])
        lineage = column_lineage(key)
        assert lineage is not None and lineage.deps_by_column, table
        upstream = {dep.asset_key for deps in lineage.deps_by_column.values() for dep in deps}
        assert upstream <= keys, (table, upstream - keys)


def test_s3_stores_add_the_s3_kind() -> None:
    from assets.definitions import build_defs

    graph = build_defs(TINY_START, TINY_END, root="s3://bucket/prefix", scenarios=SCENARIOS).resolve_asset_graph()
    assert "s3" in graph.get(dg.AssetKey(["plain", "rating_list"])).kinds
    assert (
        "s3"
        not in build_defs(TINY_START, TINY_END, root="/tmp/x", scenarios=SCENARIOS)
        .resolve_asset_graph()
        .get(dg.AssetKey(["plain", "rating_list"]))
        .kinds
    )


def test_a_backfill_can_run_each_chain_whole_in_one_run() -> None:
    """What Dagster's asset backfill needs to put a chain's tables and months in one run (1.13, asset_backfill.py):
    no table of a chain depends on itself and on another table of its step (such a table went to a later run, after
    the one its checks looked for it in), and a table of a rapid or blitz chain waits for its standard chain's month
    itself, the first month too (the first, reading the seed only, went to a run of its own).
    """
    from assets.definitions import build_defs
    from pipeline.scenarios.model import load_scenarios

    defs = build_defs("2023-09", "2024-04", scenarios=load_scenarios())
    graph = defs.resolve_asset_graph()
    first = "2023-09"
    assets = [asset for asset in defs.assets or [] if isinstance(asset, dg.AssetsDefinition)]
    chains = [asset for asset in assets if asset.node_def.name.startswith("rate_")]
    assert len(chains) == 10
    seeded = set()
    for chain in chains:
        for key in chain.keys:
            parents = graph.get(key).parent_keys
            siblings = parents & (set(chain.keys) - {key})
            assert not (key in parents and siblings), f"{key.to_user_string()} depends on itself and on {siblings}"
            for parent in parents - set(chain.keys) - {dg.AssetKey("games")}:
                upstream = graph.get_parents_partitions(key, first).parent_partitions
                assert (parent, first) in {(p.asset_key, p.partition_key) for p in upstream}, (key, parent)
                seeded.add(key.path[0])
    assert seeded == {"actual_rapid", "actual_blitz"}


class DeferredRunLauncher(RunLauncher, ConfigurableClass):
    """Runs a backfill launches are queued here, and run by the test between the daemon's ticks: a tick sees the runs
    of the last one in progress, as the daemon does while they run.
    """

    launched: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, inst_data: Any = None) -> None:
        self._inst_data = inst_data
        super().__init__()

    @property
    def inst_data(self) -> Any:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> "DeferredRunLauncher":
        return cls(inst_data=inst_data)

    def launch_run(self, context: Any) -> None:
        self.launched.append((context.dagster_run.run_id, context.job_code_origin))

    def terminate(self, run_id: str) -> bool:
        raise NotImplementedError


def test_a_ui_backfill_of_every_asset_rates_each_chain_in_one_run_and_leaves_no_list_stale(
    tiny_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI's Materialize all over every month (launchPartitionBackfill), run by the daemon's backfill iterations: a
    rule-set chain, a system's and a rapid one seeded by the first each go in one run over the four months, no run
    fails, and no list is stale after it (the split chains failed their first run, and their lists showed stale).
    """
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._core.execution.api import execute_run
    from dagster._core.execution.backfill import PartitionBackfill
    from dagster._core.test_utils import create_test_daemon_workspace_context, instance_for_test
    from dagster._core.workspace.load_target import ModuleTarget
    from dagster._daemon.backfill import execute_backfill_iteration
    from dagster._utils.hosted_user_process import recon_job_from_origin

    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text(
        "scenarios:\n"
        "  actual: {description: actual, rules: fide-historical}\n"
        "  glicko2: {description: glicko2, system: glicko2}\n"
        "  actual_rapid: {description: rapid, rules: fide-rapid-historical, standard_chain: actual}\n"
    )
    monkeypatch.setenv("RATINGS_STORE", tiny_store)
    monkeypatch.setenv("RATINGS_SCENARIOS", str(scenarios))
    launcher = {"module": __name__, "class": DeferredRunLauncher.__name__}
    coordinator = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
    target = ModuleTarget("assets.definitions", "defs", str(ROOT), "ratings")
    with (
        instance_for_test(overrides={"run_launcher": launcher, "run_coordinator": coordinator}) as instance,
        create_test_daemon_workspace_context(target, instance) as workspace,
    ):
        context = workspace.create_request_context()
        graph = context.asset_graph
        months = ["2024-01", "2024-02", "2024-03", "2024-04"]
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id="ui",
            asset_graph=graph,
            backfill_timestamp=time.time(),
            tags={},
            asset_selection=[key for key in graph.get_all_asset_keys() if graph.get(key).is_materializable],
            partition_names=months,
            dynamic_partitions_store=instance,
            all_partitions=False,
            title=None,
            description=None,
            run_config=None,
        )
        instance.add_backfill(backfill)
        DeferredRunLauncher.launched.clear()
        for _ in range(30):
            for _ in range(2):  # the second tick sees the first's runs in progress
                list(execute_backfill_iteration(workspace, logging.getLogger("backfill")))
            if not DeferredRunLauncher.launched:
                break
            while DeferredRunLauncher.launched:
                run_id, origin = DeferredRunLauncher.launched.pop(0)
                execute_run(recon_job_from_origin(origin), instance.get_run_by_id(run_id), instance)
        status = instance.get_backfill("ui").status
        runs = instance.get_runs()
        stale = CachingStaleStatusResolver(instance, context.asset_graph, context)
        chains = ("actual", "glicko2", "actual_rapid")
        lists = {name: stale.get_status(dg.AssetKey([name, "rating_list"]), months[-1]) for name in chains}
    assert [run.status for run in runs if run.status != dg.DagsterRunStatus.SUCCESS] == []
    assert status == BulkActionStatus.COMPLETED_SUCCESS
    for chain in chains:
        rating = [run for run in runs if {dg.AssetKey([chain, t]) for t in CHAIN} & set(run.asset_selection or ())]
        assert len(rating) == 1, f"{chain} rated in {len(rating)} runs"
        assert (rating[0].tags[RANGE_START_TAG], rating[0].tags[RANGE_END_TAG]) == (months[0], months[-1])
    assert lists == dict.fromkeys(lists, StaleStatus.FRESH)


CHAIN = {"rating_list", "system_state", "rated_games", "points_ledger", "points_flow"}
