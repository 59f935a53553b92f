"""Scale-out on an existing engine: the same definitions on dagster-celery, a real Redis broker and two workers.

A range of two scenarios runs with the Celery executor (every step a Celery task, executed by one of
two `dagster-celery worker` processes) and must write exactly the bytes an in-process run writes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets.automation import range_tags
from assets.definitions import ALL_MONTHS_JOB, build_defs
from assets.rate import chain_key
from pipeline.months import month_range
from pipeline.scenarios.model import load_scenarios
from pipeline.settings import celery_config
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from tests.servers import RedisServer, stored_objects

pytest.importorskip("dagster_celery", reason="dagster-celery is not installed (test extras: pip install -e '.[test]')")
# dagster-celery registers its step task again for every step it submits; Celery keeps the first (the same code).
pytestmark = pytest.mark.filterwarnings("ignore:Task name 'execute_plan' is already registered")

FIRST, LAST = "2024-01", "2024-03"
SCENARIOS = {
    "scenarios": {
        "plain": {"description": "FIDE's regulations, no events", "rules": "fide-historical"},
        "sonas-2002": {"description": "Sonas's 2002 linear formula", "rules": "sonas-2002"},
    }
}
WORKERS = 2
WORKER_READY_SECONDS = 60.0
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def copy_landing_zone(source: Path, root: Path) -> str:
    shutil.copytree(source, root / "raw")
    return str(root)


def celery_app(broker: str):
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app

    return make_app(
        CeleryExecutor.for_cli(broker=broker, backend=broker, config_source=celery_config()["config_source"]).app_args()
    )


def wait_for_workers(broker: str, names: set[str], processes: list[subprocess.Popen], logs: list[Path]) -> None:
    """Until every named worker answers a ping through the broker (a worker that exits fails the test with its log)."""
    app = celery_app(broker)
    deadline = time.monotonic() + WORKER_READY_SECONDS
    while True:
        for process, log in zip(processes, logs, strict=True):
            if process.poll() is not None:
                pytest.fail(
                    f"a Celery worker exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
                )
        answered = {name.split("@", 1)[0] for reply in (app.control.ping(timeout=1.0) or []) for name in reply}
        if names <= answered:
            return
        if time.monotonic() > deadline:
            tails = "\n".join(log.read_text(errors="replace")[-1500:] for log in logs)
            pytest.fail(
                f"Celery workers {sorted(names - answered)} did not answer within {WORKER_READY_SECONDS:.0f}s:\n{tails}"
            )
        time.sleep(0.2)


def _signal_group(process: subprocess.Popen, signum: int) -> bool:
    """Signal the process group of a worker we started (the CLI and the celery it spawned); False when it is gone."""
    try:
        os.killpg(process.pid, signum)
        return True
    except ProcessLookupError:
        return False


def stop(processes: list[subprocess.Popen]) -> None:
    """Stop the workers we started: SIGTERM to each one's own process group at once, SIGKILL after 20 s."""
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in processes:
        # The celery child can outlive the CLI that spawned it: wait until the whole group is gone.
        while _signal_group(process, 0) and time.monotonic() < deadline:
            process.poll()  # reap the CLI if it has exited
            time.sleep(0.1)
        _signal_group(process, signal.SIGKILL)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass


def test_the_executor_is_in_process_unless_ratings_executor_names_another() -> None:
    from assets.executors import executor_def
    from pipeline.settings import Settings, SettingsError

    assert executor_def(Settings.from_env({})) is dg.in_process_executor
    assert executor_def(Settings.from_env({"RATINGS_EXECUTOR": "multiprocess"})) is dg.multiprocess_executor
    celery = executor_def(
        Settings.from_env({"RATINGS_EXECUTOR": "celery", "RATINGS_CELERY_BROKER": "redis://127.0.0.1:6379/0"})
    )
    assert celery.name == "celery"
    k8s = Settings.from_env({"RATINGS_EXECUTOR": "k8s"})
    try:
        import dagster_k8s  # noqa: F401 - not a test dependency: without it, a message says what to install
    except ImportError:
        with pytest.raises(ImportError, match=r"chess-ratings\[k8s\]"):
            executor_def(k8s)
    else:
        assert executor_def(k8s).name == "k8s"
    with pytest.raises(SettingsError, match="RATINGS_CELERY_BROKER"):
        Settings.from_env({"RATINGS_EXECUTOR": "celery"})
    with pytest.raises(SettingsError, match="RATINGS_EXECUTOR='celery-k8s'"):
        Settings.from_env({"RATINGS_EXECUTOR": "celery-k8s"})


@pytest.fixture
def celery_deployment(
    redis_server: RedisServer, tiny_landing_zone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict]:
    """The environment a deployment shares between the run and the workers, and two workers started on it."""
    broker = redis_server.url(0)
    home = tmp_path / "dagster_home"
    home.mkdir()
    # One event-log database for every run, made here before any worker starts: with SQLite's default
    # of one file per run, the two workers writing the same run's first events may both create it.
    # (A real deployment shares PostgreSQL: assets/runtime/dagster.yaml.)
    event_log = {
        "module": "dagster._core.storage.event_log",
        "class": "ConsolidatedSqliteEventLogStorage",
        "config": {"base_dir": str(home / "history" / "runs")},
    }
    instance_settings = {"telemetry": {"enabled": False}, "event_log_storage": event_log}
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_settings))
    dg.DagsterInstance.from_config(str(home)).dispose()
    scenarios_file = tmp_path / "scenarios.yaml"
    scenarios_file.write_text(yaml.safe_dump(SCENARIOS))
    # The executor block the workers start from: the settings the run's executor uses, the broker URL
    # from RATINGS_CELERY_BROKER in both.
    worker_config = tmp_path / "celery.yaml"
    worker_config.write_text(yaml.safe_dump({"execution": {"config": celery_config()}}))
    environment = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "RATINGS_STORE": copy_landing_zone(tiny_landing_zone, tmp_path / "celery-store"),
        "RATINGS_SCENARIOS": str(scenarios_file),
        "RATINGS_FIRST_MONTH": FIRST,
        "RATINGS_LAST_MONTH": LAST,
        "RATINGS_EXECUTOR": "celery",
        "RATINGS_CELERY_BROKER": broker,
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    bin_dir = str(Path(sys.executable).parent)
    worker_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    names = {f"ratings-{i}" for i in range(1, WORKERS + 1)}
    processes, logs = [], []
    try:
        for name in sorted(names):
            log_path = tmp_path / f"{name}.log"
            with open(log_path, "wb") as log:
                processes.append(
                    subprocess.Popen(
                        [
                            str(Path(bin_dir) / "dagster-celery"),
                            "worker",
                            "start",
                            "-A",
                            "dagster_celery.app",
                            "-y",
                            str(worker_config),
                            "--name",
                            name,
                            "--loglevel",
                            "WARNING",
                            "--",
                            "--concurrency",
                            "1",
                            "--without-gossip",
                            "--without-mingle",
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=worker_env,
                        cwd=tmp_path,
                        start_new_session=True,
                    )
                )
            logs.append(log_path)
        wait_for_workers(broker, names, processes, logs)
        yield {"root": environment["RATINGS_STORE"], "scenarios": str(scenarios_file), "logs": logs, "names": names}
    finally:
        stop(processes)


def test_a_celery_backfill_on_two_workers_writes_the_bytes_of_an_in_process_run(
    celery_deployment: dict, tiny_landing_zone: Path, tmp_path: Path
) -> None:
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._serdes import serialize_value

    # The run: the code location every Dagster process loads (`-m assets.definitions`), whose executor
    # RATINGS_EXECUTOR=celery selects; the workers rebuild the job from the same pointer and environment.
    job = ReconstructableRepository.for_module("assets.definitions", "defs").get_reconstructable_job(ALL_MONTHS_JOB)
    assert job.get_definition().executor_def.name == "celery"
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(job, instance=instance, tags=range_tags(FIRST, LAST), run_config=QUIET)
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        # Every step ran as a Celery task, and both workers took some.
        records = instance.all_logs(result.run_id)
        delegated = [
            r.dagster_event.engine_event_data.metadata
            for r in records
            if r.dagster_event is not None
            and r.dagster_event.is_engine_event
            and "in celery worker" in (r.dagster_event.message or "")
        ]
        steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
        assert len(delegated) == len(steps) > 0
        hosts = {entry["Celery worker"].value.split("@", 1)[0] for entry in delegated}
        assert hosts == celery_deployment["names"], hosts
        # The broker URL is read from the environment, never stored with the run or its job.
        run = instance.get_run_by_id(result.run_id)
        stored = serialize_value(run) + serialize_value(instance.get_job_snapshot(run.job_snapshot_id))
        assert "redis://" not in stored and os.environ["RATINGS_CELERY_BROKER"] not in stored

    # The reference: the same months and scenarios in one process, into another store.
    reference_root = copy_landing_zone(tiny_landing_zone, tmp_path / "in-process-store")
    defs = build_defs(FIRST, LAST, root=reference_root, scenarios=load_scenarios(celery_deployment["scenarios"]))
    assert defs.resolve_job_def(ALL_MONTHS_JOB).executor_def is dg.in_process_executor
    reference = defs.resolve_job_def(ALL_MONTHS_JOB).execute_in_process(tags=range_tags(FIRST, LAST), run_config=QUIET)
    assert reference.success

    celery_outputs = stored_objects(ObjectStore(celery_deployment["root"]))
    in_process_outputs = stored_objects(ObjectStore(reference_root))
    assert sorted(celery_outputs) == sorted(in_process_outputs)
    for scenario in load_scenarios(celery_deployment["scenarios"]).values():
        lists = {table_key(chain_key(scenario, "rating_list").path, month) for month in month_range(FIRST, LAST)}
        assert lists <= set(celery_outputs), scenario.name
    different = [key for key in sorted(celery_outputs) if celery_outputs[key] != in_process_outputs[key]]
    assert different == [], f"{len(different)} of {len(celery_outputs)} outputs differ"
