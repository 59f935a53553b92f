"""`ratings run` and `ratings demo`: materialize every asset of a landing zone's months in one Dagster run, then say what happened."""

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
from assets.checks import RECONCILIATION, mostly_quarantined, stored_rows
from assets.definitions import build_defs
from assets.io_manager import table_key
from assets.metadata import redact_url
from assets.ratings import rating_list_key
from pipeline.generator import DEFAULT_DEMO, generate
from pipeline.landing import REGISTRY, inventory, months_held, unplaced
from pipeline.months import month_range, parse_month
from pipeline.scenarios import load_scenarios
from pipeline.storage import DEFAULT_ROOT, ObjectStore, process_alive, store_root_from_env
from pipeline.text import escape_text

DEFAULT_DAGSTER_HOME = ".dagster_home"
# Instance settings shipped with the project (telemetry off); `make ui` installs the same file.
INSTANCE_YAML = os.path.join(os.path.dirname(__file__), "dagster.yaml")
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
PID_TAG, HOST_TAG = "ratings/pid", "ratings/host"
SUMMARY_FILES = 10  # files and warnings named in the closing summary; the tables hold them all


LANDING_ZONE_HELP = """A landing zone is a folder raw/ in the store:
  raw/<FED>/<YYYY-MM>/<dump>     the month's dumps (TRF, PGN, CSV, Parquet; .gz/.zst too), e.g. raw/GER/2024-01/open.trf
  raw/players/<YYYY-MM>/...       optional: players.csv and seed_list.csv, or a FIDE rating list (.txt)
See the README, "Rating your own federation's files"."""


class StoreError(ValueError):
    """The store cannot be rated or generated into as asked; printed as one line, without a traceback."""


def landing_zone_months(store: ObjectStore, include_players: bool = True) -> list[str]:
    """Months holding dumps (or entries quarantined there), plus the registry's months unless include_players=False."""
    entries = inventory(store)
    months = set(months_held(entries))
    if include_players:
        months.update(entry.month for entry in entries if entry.kind == REGISTRY and entry.month is not None)
    return sorted(months)


def range_tags(first_month: str, last_month: str) -> dict[str, str]:
    """Run tags that make one run cover first_month..last_month (every asset has a single-run backfill policy)."""
    return {RANGE_START_TAG: first_month, RANGE_END_TAG: last_month}


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
        print(f"No landing zone at {where}/raw: generating the default data set {DEFAULT_DEMO} ...", file=out, flush=True)
        summary = generate(root, **DEFAULT_DEMO)
        print(
            f"Generated {summary.games:,} games of {summary.players:,} players over {summary.months} months "
            f"({summary.files:,} files, federations {', '.join(map(str, summary.federations))}) "
            f"in {time.monotonic() - started:.0f}s",
            file=out,
            flush=True,
        )
    return run_store(root, dagster_home=dagster_home, out=out, title="Demo")


def may_generate(store: ObjectStore, root: str, explicit: bool) -> str | None:
    """None when the demo data may be generated into `store` (which has no raw/), else why not.

    Without --generate only into a local store that is the default one or an existing empty folder:
    a mistyped --store path (or bucket) must not fill with a synthetic federation.
    """
    if explicit:
        return None
    if not store.is_local:
        return (f"{redact_url(store.url())} has no raw/ landing zone; `ratings demo` generates synthetic data only "
                f"into a local store unless you add --generate")
    if os.path.isdir(store.base) and not os.listdir(store.base):
        return None
    if os.path.abspath(root) == os.path.abspath(DEFAULT_ROOT) and not os.path.exists(store.base):
        return None
    state = "holds other files" if os.path.exists(store.base) else "does not exist"
    return (f"{store.base} {state} and has no raw/ landing zone: not generating the demo data there "
            f"(add --generate to do it anyway, or use `ratings run` to rate your own dumps)")


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
    held = landing_zone_months(store, include_players=False)
    for month in (first_month, last_month):
        if month is not None:
            parse_month(month)
    if not held and (first_month is None or last_month is None):
        raise StoreError(f"{where}/raw holds no dumps in month folders.\n{LANDING_ZONE_HELP}")
    first, last = first_month or held[0], last_month or held[-1]
    if first > last:
        raise StoreError(f"--from {first} is after --to {last}")
    months = month_range(first, last)

    home = os.path.abspath(dagster_home or os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME)
    os.makedirs(home, exist_ok=True)
    if os.path.isfile(INSTANCE_YAML) and not os.path.exists(os.path.join(home, "dagster.yaml")):
        shutil.copyfile(INSTANCE_YAML, os.path.join(home, "dagster.yaml"))
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
            logging.getLogger("dagster").setLevel(logging.WARNING)
            result = dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=defs.resources,
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
        for event in result.all_events if event.event_type_value == "STEP_FAILURE"
    }
    outcome = run_outcome(store, months)
    rated: dict[str, int] = {}
    for name, scenario in scenarios.items():
        final_key = table_key(rating_list_key(scenario).path, last)
        if store.exists(final_key):
            rated[name] = store.read_parquet(final_key, columns=["rating"]).filter(pl.col("rating").is_not_null()).height
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
    print(closing_lines(summary, scenarios, title, root), file=out, flush=True)
    return summary


def run_outcome(store: ObjectStore, months: Sequence[str]) -> dict[str, Any]:
    """What the stored tables of `months` say: games, quarantine by reason and file, mostly-quarantined months, identities."""
    games = sum(stored_rows(store, "games", month) or 0 for month in months)
    quarantine = [store.read_parquet(table_key(["quarantine"], m), columns=["reason", "source_file"])
                  for m in months if store.exists(table_key(["quarantine"], m))]
    quarantine_frame = pl.concat(quarantine) if quarantine else pl.DataFrame(schema={"reason": pl.Utf8, "source_file": pl.Utf8})
    identities = [store.read_parquet(table_key(["identity"], m), columns=["status", "records"])
                  for m in months if store.exists(table_key(["identity"], m))]
    identity_frame = pl.concat(identities) if identities else pl.DataFrame(schema={"status": pl.Utf8, "records": pl.UInt32})

    def counted(frame: pl.DataFrame, column: str) -> dict[str, int]:
        return dict(frame.group_by(column).len().sort("len", column, descending=[True, False]).iter_rows())

    return {
        "games": games,
        "quarantined": quarantine_frame.height,
        "quarantined_by_reason": counted(quarantine_frame, "reason"),
        "quarantined_by_file": counted(quarantine_frame, "source_file"),
        "mostly_quarantined_months": mostly_quarantined(store, months),
        "players_by_identity": dict(identity_frame.group_by("status").len().sort("status").iter_rows()),
        "unplaced_files": [f"{entry.key}: {entry.problem}" for entry in unplaced(inventory(store))],
    }


def _root_cause(error: Any) -> str:
    """The first line of the innermost error Dagster wrapped (the user's exception, not the step wrapper)."""
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    return ((error.message if error is not None else "").strip().splitlines() or [""])[0]


def closing_lines(summary: dict[str, Any], scenarios: dict[str, Any], title: str, root: str) -> str:
    """The summary a person reads at the end of a run: what was rated, what was not and why, where it is."""
    where, first, last = summary["store"], summary["first_month"], summary["last_month"]
    if not summary["run_succeeded"]:
        status = "FAILED (see the run in the Dagster UI)"
    elif summary["games"] == 0:
        status = "FAILED: no game was rated"
    else:
        status = "done"
    reconciliation = {True: "passed", False: "FAILED", None: "not run"}[summary["reconciliation_passed"]]
    lines = [
        f"{title} {status}: {summary['months']} months {first}..{last}, scenarios {', '.join(scenarios)}",
        f"  games rated: {summary['games']:,}   quarantined records: {summary['quarantined']:,}   "
        f"reconciliation: {reconciliation}",
    ]
    for step, message in summary["failed_steps"].items():
        lines.append(f"  step {step} failed: {escape_text(message)}")
    if summary["quarantined_by_reason"]:
        lines.append("  quarantined by reason: " + ", ".join(f"{r} {n:,}" for r, n in summary["quarantined_by_reason"].items()))
        files = list(summary["quarantined_by_file"].items())
        lines.append("  quarantined by file: " + ", ".join(f"{escape_text(f)} {n:,}" for f, n in files[:SUMMARY_FILES])
                     + (f" and {len(files) - SUMMARY_FILES} more files" if len(files) > SUMMARY_FILES else ""))
    identities = summary["players_by_identity"]
    if identities:
        lines.append("  players not identified by a registered id (see identity/<YYYY-MM>.parquet): "
                     + ", ".join(f"{status} {n:,}" for status, n in identities.items()))
    for problem in summary["unplaced_files"][:SUMMARY_FILES]:
        lines.append(f"  WARNING: not read: {escape_text(problem)}")
    if len(summary["unplaced_files"]) > SUMMARY_FILES:
        lines.append(f"  WARNING: ... and {len(summary['unplaced_files']) - SUMMARY_FILES} more files not read")
    for warning in summary["mostly_quarantined_months"][:SUMMARY_FILES]:
        lines.append(f"  WARNING: {warning}")
    if summary["mostly_quarantined_months"]:
        lines.append("  (a registry or a month folder may be missing; the reasons are in quarantine/<YYYY-MM>.parquet)")
    if summary["games"] == 0:
        lines.append("  no game was rated: every record was quarantined, or the months hold no dumps")
    if summary["rated_players"]:
        lines.append(f"  rated players on the {last} list: " + ", ".join(f"{n} {c:,}" for n, c in summary["rated_players"].items()))
    lines += [
        f"  run {summary['run_id']} took {summary['run_seconds']:.0f}s",
        f"  lists: {where}/lists/<scenario>/<YYYY-MM>.csv|.txt|.html; tables: {where}/<scenario>/<table>/<YYYY-MM>.parquet",
        f"  reports: {where}/reports/index.html",
        f"  UI: DAGSTER_HOME={summary['dagster_home']} RATINGS_STORE={root} RATINGS_FIRST_MONTH={first} "
        f"RATINGS_LAST_MONTH={last} dagster dev --host 127.0.0.1 -m assets.definitions",
    ]
    return "\n".join(lines)
