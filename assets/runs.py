"""`ratings run` and `ratings demo` in Dagster: heal orphaned runs, observe the landing zone, run the `all_months`
job. What they decide and say without Dagster is pipeline.run_report.
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

from assets.checks import RECONCILIATION
from assets.definitions import ALL_MONTHS_JOB, build_defs
from pipeline import progress
from pipeline.automation import range_tags
from pipeline.landing import LandingEntry, inventory, landing_versions, months_held
from pipeline.run_report import (
    closing_lines,
    generate_demo,
    months_to_rate,
    opening_line,
    require_landing_zone,
    run_summary,
)
from pipeline.scenarios import load_scenarios
from pipeline.storage import ObjectStore, process_alive, redact_url, store_root_from_env
from pipeline.waves import DEFAULT_WORKERS, Stage, run_waves, stages

DEFAULT_DAGSTER_HOME = ".dagster_home"
# Instance settings shipped with the project (telemetry off); `make ui` installs the same file.
INSTANCE_YAML = os.path.join(os.path.dirname(__file__), "dagster.yaml")
PID_TAG, HOST_TAG, STAGE_TAG = "ratings/pid", "ratings/host", "ratings/stage"


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
    workers: int | None = None,
) -> dict[str, Any]:
    """`ratings demo`: generate DEFAULT_DEMO where allowed (pipeline.run_report.generate_demo), then run_store over
    every month.

    root defaults to $RATINGS_STORE, else ./data; dagster_home to $DAGSTER_HOME, else ./.dagster_home.
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    generate_demo(root, explicit=generate_data, out=out)
    return run_store(root, dagster_home=dagster_home, out=out, title="Demo", workers=workers)


def execute_stage(
    stage: Stage, first: str, last: str, root: str, scenarios_file: str | None, home: str, reporter: Any
) -> dict[str, Any]:
    """One run of the `all_months` job over `stage`'s assets (and their checks); what the summary needs of it.

    Called in this process or in a worker process (then `reporter` forwards progress to the parent).
    """
    if reporter is not None:
        progress.install(reporter)
    with warnings.catch_warnings():
        # Beta/preview notices about backfill policies and partitioned checks are not news to a user.
        warnings.simplefilter("ignore")
        logging.getLogger("dagster").setLevel(logging.WARNING)
        defs = build_defs(first, last, root=root, scenarios=load_scenarios(scenarios_file))
        job = defs.resolve_job_def(ALL_MONTHS_JOB)
        everything = dg.AssetSelection.groups(*stage.groups) if stage.groups else dg.AssetSelection.all()
        selection = everything - dg.AssetSelection.assets("landing_zone")  # observed by run_store instead
        # The named job, not an ad-hoc one: every run shows under `all_months` and can be re-executed.
        result = job.execute_in_process(
            instance=dg.DagsterInstance.from_config(home),
            tags={**range_tags(first, last), **_runner_tags(), STAGE_TAG: stage.name},
            run_config=_quiet_dagster(),
            raise_on_error=False,
            asset_selection=list(selection.resolve(defs.resolve_asset_graph())),
        )
    return {
        "run_id": result.run_id,
        "success": result.success,
        # A check passed when every evaluation of it passed (one per month, and the range's).
        "checks": {
            name: all(e.passed for e in result.get_asset_check_evaluations() if e.check_name == name)
            for name in {e.check_name for e in result.get_asset_check_evaluations()}
        },
        "failed_steps": {
            event.step_key: _root_cause(event.step_failure_data.error)
            for event in result.all_events
            if event.event_type_value == "STEP_FAILURE"
        },
    }


def run_store(
    root: str | None = None,
    first_month: str | None = None,
    last_month: str | None = None,
    scenarios_file: str | None = None,
    dagster_home: str | None = None,
    out: TextIO | None = None,
    title: str = "Run",
    workers: int | None = None,
) -> dict[str, Any]:
    """`ratings run`: rate an existing landing zone's months and print what happened.

    One Dagster run with one worker; with more (default: one per core, at most one per scenario), a run
    of the shared tables, then one run per scenario `workers` at a time, then the comparison. Never
    writes into raw/. Months default to the first..last month holding dumps. The summary lists
    quarantined records by reason and by file, months mostly quarantined, how players were identified,
    and where the lists are; `success` is False when the run failed or rated no game at all.
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    store = ObjectStore(root)
    require_landing_zone(store)
    # One listing of the landing zone serves the months, the observations and the closing summary.
    entries = inventory(store)
    months = months_to_rate(months_held(entries), first_month, last_month, redact_url(store.url()))
    first, last = months[0], months[-1]

    home = instance_home(dagster_home)
    scenarios = load_scenarios(scenarios_file)
    print(opening_line(months, redact_url(store.url()), scenarios, home), file=out, flush=True)

    workers = DEFAULT_WORKERS if workers is None else workers
    started = time.monotonic()
    previous_reporter = progress.install(progress.ConsoleProgress())
    try:
        instance = dg.DagsterInstance.from_config(home)
        for run_id in heal_orphaned_runs(instance):
            print(f"Marked run {run_id} failed: its process was killed before it finished", file=out, flush=True)
        removed = store.remove_orphaned_temp_files()
        if removed:
            print(f"Removed {removed} temporary file(s) left by interrupted writes", file=out, flush=True)
        observe_landing_zone(instance, store, entries, months)
        waves = stages(list(scenarios), workers)
        outcomes = run_waves(waves, execute_stage, (first, last, root, scenarios_file, home), workers)
    finally:
        progress.install(previous_reporter)

    summary = run_summary(
        store,
        months,
        entries,
        scenarios,
        run_succeeded=len(outcomes) == sum(map(len, waves)) and all(o["success"] for o in outcomes),
        run_id=outcomes[0]["run_id"],
        reconciliation_passed=outcomes[0]["checks"].get(RECONCILIATION),
        failed_steps={step: cause for o in outcomes for step, cause in o["failed_steps"].items()},
        run_seconds=time.monotonic() - started,
        dagster_home=home,
    )
    summary["run_ids"] = [outcome["run_id"] for outcome in outcomes]
    print(closing_lines(summary, scenarios, title), file=out, flush=True)
    return summary
