"""`ratings run` and `ratings demo` in Dagster: heal orphaned runs, observe the landing zone, run the `all_months`
job.
"""

import logging
import os
import shutil
import socket
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

import dagster as dg
import polars as pl

from assets import progress
from assets.automation import range_tags
from assets.checks import RECONCILIATION
from assets.definitions import ALL_MONTHS_JOB, build_defs
from assets.io_manager import table_key
from assets.ratings import rating_list_key
from pipeline.generator import DEFAULT_DEMO, generate
from pipeline.landing import LandingEntry, inventory, landing_versions, months_held
from pipeline.months import month_range, parse_month
from pipeline.run_report import (
    LANDING_ZONE_HELP,
    StoreError,
    closing_lines,
    may_generate,
    run_outcome,
)
from pipeline.scenarios import load_scenarios
from pipeline.storage import ObjectStore, process_alive, redact_url, store_root_from_env

DEFAULT_DAGSTER_HOME = ".dagster_home"
# Instance settings shipped with the project (telemetry off); `make ui` installs the same file.
INSTANCE_YAML = os.path.join(os.path.dirname(__file__), "dagster.yaml")
PID_TAG, HOST_TAG = "ratings/pid", "ratings/host"


def instance_home(dagster_home: str | None) -> str:
    """The Dagster instance directory ($DAGSTER_HOME, else ./.dagster_home), made, with the shipped dagster.yaml."""
    home = os.path.abspath(dagster_home or os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME)
    os.makedirs(home, exist_ok=True)
    if os.path.isfile(INSTANCE_YAML) and not os.path.exists(os.path.join(home, "dagster.yaml")):
        shutil.copyfile(INSTANCE_YAML, os.path.join(home, "dagster.yaml"))
    return home


def _runner_tags() -> dict[str, str]:
    """Tags naming the process that executes a CLI run in-process, so a later run can tell it was orphaned."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def heal_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the unfinished runs that an earlier CLI process of this machine left behind when it was killed.

    A run executed in-process stays STARTED for ever once its process dies, and with one run at a
    time (the shipped dagster.yaml) every queued run would wait behind it. Returns the healed run ids.
    """
    unfinished = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]
    healed = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=unfinished, tags={HOST_TAG: socket.gethostname()})):
        pid = run.tags.get(PID_TAG, "")
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            instance.report_run_failed(run, f"the process that ran it (pid {pid}) ended without finishing it")
            healed.append(run.run_id)
    return healed


def observe_landing_zone(
    instance: dg.DagsterInstance, store: ObjectStore, entries: list[LandingEntry], months: Sequence[str]
) -> None:
    """Record the landing zone's data version of each month of the run, as observing `landing_zone` in the UI does.

    An observable source asset is not executed by a job run; without this the UI would say
    "Never observed" and could not tell which months' dumps changed after the run.
    """
    fingerprints = landing_versions(store, entries).dumps
    for month in months:
        instance.report_runless_asset_event(
            dg.AssetObservation(
                asset_key="landing_zone",
                partition=month,
                # Dagster's tag for an observation's data version (dagster._core.definitions.data_version).
                tags={"dagster/data_version": fingerprints.get(month, "empty")},
            )
        )


def _root_cause(error: Any) -> str:
    """The first line of the innermost error Dagster wrapped (the user's exception, not the step wrapper)."""
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    return ((error.message if error is not None else "").strip().splitlines() or [""])[0]


def _quiet_dagster() -> dict[str, Any]:
    """Run config keeping Dagster's console logger to warnings and errors: the progress line says the rest."""
    return {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(
    root: str | None = None,
    dagster_home: str | None = None,
    out: TextIO | None = None,
    generate_data: bool = False,
) -> dict[str, Any]:
    """`ratings demo`: generate DEFAULT_DEMO where allowed (see may_generate), then run_store over every month.

    root defaults to $RATINGS_STORE, else ./data; dagster_home to $DAGSTER_HOME, else ./.dagster_home.
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    store = ObjectStore(root)
    if not store.exists("raw"):
        refusal = may_generate(store, root, explicit=generate_data)
        if refusal:
            raise StoreError(refusal)
        where = redact_url(store.url())
        started = time.monotonic()
        print(
            f"No landing zone at {where}/raw: generating the default data set {DEFAULT_DEMO} ...", file=out, flush=True
        )
        summary = generate(root, **DEFAULT_DEMO)
        print(
            f"Generated {summary.games:,} games of {summary.players:,} players over {summary.months} months "
            f"({summary.files:,} files, federations {', '.join(map(str, summary.federations))}) "
            f"in {time.monotonic() - started:.0f}s",
            file=out,
            flush=True,
        )
    return run_store(root, dagster_home=dagster_home, out=out, title="Demo")


def run_store(
    root: str | None = None,
    first_month: str | None = None,
    last_month: str | None = None,
    scenarios_file: str | None = None,
    dagster_home: str | None = None,
    out: TextIO | None = None,
    title: str = "Run",
) -> dict[str, Any]:
    """`ratings run`: rate an existing landing zone's months in one Dagster run and print what happened.

    Never writes into raw/. Months default to the first..last month holding dumps. The summary lists
    quarantined records by reason and by file, months mostly quarantined, how players were identified,
    and where the lists are; `success` is False when the run failed or rated no game at all.
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    store = ObjectStore(root)
    where = redact_url(store.url())
    if not store.exists("raw"):
        raise StoreError(f"{where} has no landing zone (no raw/ folder).\n{LANDING_ZONE_HELP}")
    # One listing of the landing zone serves the months, the observations and the closing summary.
    entries = inventory(store)
    held = months_held(entries)
    for month in (first_month, last_month):
        if month is not None:
            parse_month(month)
    if not held and (first_month is None or last_month is None):
        raise StoreError(f"{where}/raw holds no dumps in month folders.\n{LANDING_ZONE_HELP}")
    first, last = first_month or held[0], last_month or held[-1]
    if first > last:
        raise StoreError(f"--from {first} is after --to {last}")
    months = month_range(first, last)

    home = instance_home(dagster_home)
    scenarios = load_scenarios(scenarios_file)
    print(
        f"Rating {len(months)} months {first}..{last} of {where} under {len(scenarios)} scenarios "
        f"({', '.join(scenarios)}) in one Dagster run (instance {home}) ...",
        file=out,
        flush=True,
    )

    started = time.monotonic()
    previous_reporter = progress.install(progress.ConsoleProgress())
    try:
        with warnings.catch_warnings():
            # Beta/preview notices about backfill policies and partitioned checks are not news to a user.
            warnings.simplefilter("ignore")
            defs = build_defs(first, last, root=root, scenarios=scenarios)
            instance = dg.DagsterInstance.from_config(home)
            for run_id in heal_orphaned_runs(instance):
                print(f"Marked run {run_id} failed: its process was killed before it finished", file=out, flush=True)
            removed = store.remove_orphaned_temp_files()
            if removed:
                print(f"Removed {removed} temporary file(s) left by interrupted writes", file=out, flush=True)
            observe_landing_zone(instance, store, entries, months)
            logging.getLogger("dagster").setLevel(logging.WARNING)
            # The named job, not an ad-hoc selection: the run shows under `all_months` in the UI and
            # can be re-executed from there.
            result = defs.resolve_job_def(ALL_MONTHS_JOB).execute_in_process(
                instance=instance,
                tags={**range_tags(first, last), **_runner_tags()},
                run_config=_quiet_dagster(),
                raise_on_error=False,
            )
    finally:
        progress.install(previous_reporter)
    run_seconds = time.monotonic() - started

    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    failed_steps = {
        event.step_key: _root_cause(event.step_failure_data.error)
        for event in result.all_events
        if event.event_type_value == "STEP_FAILURE"
    }
    outcome = run_outcome(store, months, entries)
    rated: dict[str, int] = {}
    for name, scenario in scenarios.items():
        final_key = table_key(rating_list_key(scenario).path, last)
        if store.exists(final_key):
            rated[name] = (
                store.read_parquet(final_key, columns=["rating"]).filter(pl.col("rating").is_not_null()).height
            )
    summary = {
        "success": result.success and outcome["games"] > 0,
        "run_succeeded": result.success,
        "run_id": result.run_id,
        "months": len(months),
        "first_month": first,
        "last_month": last,
        "scenarios": list(scenarios),
        **outcome,
        "rated_players": rated,
        "reconciliation_passed": checks.get(RECONCILIATION),
        "failed_steps": failed_steps,
        "run_seconds": round(run_seconds, 1),
        "store": where,
        "dagster_home": home,
    }
    print(closing_lines(summary, scenarios, title), file=out, flush=True)
    return summary
