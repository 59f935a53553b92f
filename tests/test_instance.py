"""The shipped Dagster instance: Dagster's SQLite files and schema, with connections kept open."""

import multiprocessing
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.events import ASSET_EVENTS
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from assets.runtime import instance as instance_module
from assets.runtime.runs import INSTANCE_YAML
from pipeline.operations.automation import range_tags

MONTHS = dg.StaticPartitionsDefinition(["2024-01", "2024-02", "2024-03"])


@dg.asset(partitions_def=MONTHS, check_specs=[dg.AssetCheckSpec("positive", asset="numbers")])
def numbers(context: dg.AssetExecutionContext):
    yield dg.Output(len(context.partition_key))
    yield dg.AssetCheckResult(check_name="positive", passed=True)


def shipped_instance(home: Path) -> dg.DagsterInstance:
    home.mkdir(exist_ok=True)
    shutil.copyfile(INSTANCE_YAML, home / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(home))


def stock_instance(home: Path, config_dir: Path) -> dg.DagsterInstance:
    """Dagster's own SQLite instance on the same files: the shipped settings without the instance class."""
    settings = yaml.safe_load(Path(INSTANCE_YAML).read_text())
    del settings["instance_class"]
    config_dir.mkdir()
    (config_dir / "dagster.yaml").write_text(yaml.safe_dump(settings))
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), config_dir=str(config_dir)))


def materialize_month(instance: dg.DagsterInstance, month: str) -> str:
    result = dg.materialize([numbers], partition_key=month, instance=instance)
    assert result.success
    return result.run_id


def test_runs_land_in_dagsters_own_files_and_stock_dagster_reads_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    instance = shipped_instance(home)
    assert type(instance).__name__ == "RatingsInstance"
    assert type(instance.event_log_storage).__name__ == "PooledSqliteEventLogStorage"
    run_ids = [materialize_month(instance, month) for month in ("2024-01", "2024-02")]
    instance.dispose()

    assert (home / "history" / "runs.db").is_file()
    assert (home / "history" / "runs" / "index.db").is_file()
    assert all((home / "history" / "runs" / f"{run_id}.db").is_file() for run_id in run_ids)
    stock = stock_instance(home, tmp_path / "stock")
    assert type(stock.run_storage).__name__ == "SqliteRunStorage"
    assert sorted(run.run_id for run in stock.get_runs()) == sorted(run_ids)
    records = stock.fetch_materializations(dg.AssetKey("numbers"), limit=10).records
    assert sorted(record.partition_key for record in records) == ["2024-01", "2024-02"]
    checks = stock.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("numbers"), "positive"), limit=10
    )
    assert len(checks) == 2
    # And the other way round: the pooled instance reads what stock Dagster wrote.
    stock_run = materialize_month(stock, "2024-03")
    stock.dispose()
    again = shipped_instance(home)
    assert stock_run in {run.run_id for run in again.get_runs()}
    assert again.get_latest_materialization_event(dg.AssetKey("numbers")) is not None


def test_a_database_connection_is_reused_and_its_commits_skip_the_flush_in_wal(tmp_path: Path) -> None:
    storage = shipped_instance(tmp_path / "home").event_log_storage
    with storage.index_connection() as conn:
        first = conn.connection.dbapi_connection
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL (Dagster's default: 2, FULL)
    with storage.index_connection() as conn:
        assert conn.connection.dbapi_connection is first


def test_only_the_last_databases_used_stay_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instance_module, "OPEN_EVENT_LOG_SHARDS", 2)
    instance = shipped_instance(tmp_path / "home")
    run_ids = [materialize_month(instance, month) for month in MONTHS.get_partition_keys()]
    open_shards = list(instance.event_log_storage._shard_engines)  # type: ignore[attr-defined]
    assert len(open_shards) == 2 and "index" in open_shards
    # A closed run's database opens again on demand.
    assert instance.get_run_stats(run_ids[0]).steps_succeeded == 1


def test_wiping_the_instance_closes_its_files_first(tmp_path: Path) -> None:
    instance = shipped_instance(tmp_path / "home")
    materialize_month(instance, "2024-01")
    instance.wipe()
    assert instance.get_runs() == []
    run_id = materialize_month(instance, "2024-02")
    assert [run.run_id for run in instance.get_runs()] == [run_id]


def _child_reads_and_writes(instance: dg.DagsterInstance, queue: multiprocessing.Queue) -> None:
    runs = len(instance.get_runs())
    instance.report_runless_asset_event(dg.AssetMaterialization("from_the_child"))
    queue.put(runs)


def test_a_forked_process_opens_its_own_connections(tmp_path: Path) -> None:
    instance = shipped_instance(tmp_path / "home")
    materialize_month(instance, "2024-01")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_reads_and_writes, args=(instance, queue))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 1
    # The parent's pooled connections still work, and see what the child wrote.
    assert instance.get_latest_materialization_event(dg.AssetKey("from_the_child")) is not None
    assert materialize_month(instance, "2024-02") in {run.run_id for run in instance.get_runs()}


def test_the_schema_questions_of_each_event_are_asked_once_and_absent_tables_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    asked: list[str] = []
    dagsters_answer = SqliteEventLogStorage.has_table
    monkeypatch.setattr(
        SqliteEventLogStorage, "has_table", lambda self, name: asked.append(name) or dagsters_answer(self, name)
    )
    instance = shipped_instance(tmp_path / "home")
    run_ids = [materialize_month(instance, month) for month in ("2024-01", "2024-02")]
    # Each asset event and check result asks; Dagster's own storage was asked once per table.
    assert sorted(asked) == ["asset_check_executions", "asset_event_tags"]
    storage = instance.event_log_storage
    assert not storage.has_table("no_such_table") and not storage.has_table("no_such_table")
    assert asked.count("no_such_table") == 2  # an absent table is asked each time: a migration may add it
    # The events landed with the answers remembered: the materializations and their check results.
    assert instance.get_latest_materialization_event(dg.AssetKey("numbers")).run_id == run_ids[-1]
    history = storage.get_asset_check_execution_history(dg.AssetCheckKey(dg.AssetKey("numbers"), "positive"), limit=5)
    assert sorted(execution.run_id for execution in history) == sorted(run_ids)
    instance.wipe()  # forgets the answers: the tables are made anew
    materialize_month(instance, "2024-03")
    assert asked.count("asset_event_tags") == 2


@dg.asset(partitions_def=MONTHS, backfill_policy=dg.BackfillPolicy.single_run())
def monthly_counts(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"months_in_run": len(context.partition_keys)})


@dg.multi_asset_check(specs=[dg.AssetCheckSpec("counted", asset="monthly_counts", partitions_def=MONTHS)])
def counted(context: dg.AssetCheckExecutionContext) -> Iterator:
    """As a range step's checks report (assets/checks.py): an evaluation for each month, then the range's result."""
    for month in context.partition_keys:
        yield dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey("monthly_counts"), check_name="counted", passed=True, partition=month
        )
    yield dg.AssetCheckResult(asset_key="monthly_counts", check_name="counted", passed=True)


def _range_run(instance: dg.DagsterInstance) -> str:
    keys = MONTHS.get_partition_keys()
    job = dg.Definitions(assets=[monthly_counts], asset_checks=[counted]).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, tags=range_tags(keys[0], keys[-1]))
    assert result.success
    return result.run_id


def _rows(database: Path) -> dict[str, list[tuple]]:
    """Every table's rows in insertion order, without the columns stamped with the time the database was made or a row
    was inserted.
    """
    with sqlite3.connect(database) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {}
        for table in tables:
            info = connection.execute(f"PRAGMA table_info({table})")
            columns = [f'"{c[1]}"' for c in info if c[1] not in ("create_timestamp", "migration_completed")]
            rows[table] = connection.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
    return rows


def test_a_month_ranges_events_are_stored_together_with_the_rows_dagster_stores_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage_class = instance_module.PooledSqliteEventLogStorage
    together: list[list[str]] = []

    def spied(stored: Any) -> Any:
        return lambda self, events: (
            together.append([e.dagster_event_type.value for e in events]) or stored(self, events)
        )

    for method in ("_store_asset_events", "_store_together"):
        monkeypatch.setattr(storage_class, method, spied(getattr(storage_class, method)))
    instance = shipped_instance(tmp_path / "home")
    run_id = _range_run(instance)
    # The run's planned events (the three months' materializations, the check's), then the step's three
    # materializations and the check step's three evaluations: each stored together.
    assert any(kinds.count("ASSET_MATERIALIZATION_PLANNED") == 3 for kinds in together)
    assert ["ASSET_MATERIALIZATION"] * 3 in together and ["ASSET_CHECK_EVALUATION"] * 3 in together
    assert instance.get_latest_materialization_event(dg.AssetKey("monthly_counts")).run_id == run_id
    assert instance.get_materialized_partitions(dg.AssetKey("monthly_counts")) == set(MONTHS.get_partition_keys())
    logs = instance.all_logs(run_id)
    instance.dispose()

    # The same events stored as Dagster's own SQLite storage stores them, and by the pooled storage as Dagster hands
    # them over (a step's asset events of one kind as a batch), leave the same rows in the run's database and in the
    # index, ids included.
    stock = SqliteEventLogStorage(str(tmp_path / "stock"))
    for entry in logs:
        stock.store_event(entry)
    stock.dispose()
    pooled = shipped_instance(tmp_path / "pooled").event_log_storage
    batch: list[Any] = []
    for entry in [*logs, None]:
        if entry is not None and entry.dagster_event_type in ASSET_EVENTS:
            if batch and batch[-1].dagster_event_type != entry.dagster_event_type:
                pooled.store_event_batch(batch)
                batch = []
            batch.append(entry)
            continue
        if batch:
            pooled.store_event_batch(batch)
            batch = []
        if entry is not None:
            pooled.store_event(entry)
    pooled.dispose()
    runs = tmp_path / "pooled" / "history" / "runs"
    assert _rows(runs / "index.db") == _rows(tmp_path / "stock" / "index.db")
    assert _rows(runs / f"{run_id}.db") == _rows(tmp_path / "stock" / f"{run_id}.db")
    checks = _rows(runs / "index.db")["asset_check_executions"]
    assert sorted(str(row[3]) for row in checks) == ["2024-01", "2024-02", "2024-03", "None"]  # a month's, the range's
    assert _rows(runs / "index.db")["asset_keys"]
