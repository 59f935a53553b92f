"""`ratings demo`: generate the default data set if absent, then materialize every asset for all months in one run."""

import logging
import os
import shutil
import sys
import time
import warnings
from typing import Any, TextIO

import dagster as dg
import polars as pl

from assets import progress
from assets.checks import RECONCILIATION, stored_rows
from assets.definitions import build_defs
from assets.io_manager import table_key
from assets.metadata import redact_url
from assets.ratings import rating_list_key
from pipeline.generator import DEFAULT_DEMO, generate
from pipeline.months import parse_month
from pipeline.scenarios import load_scenarios
from pipeline.storage import ObjectStore, store_root_from_env

DEFAULT_DAGSTER_HOME = ".dagster_home"
# Instance settings shipped with the project (telemetry off); `make ui` installs the same file.
INSTANCE_YAML = os.path.join(os.path.dirname(__file__), "dagster.yaml")
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def landing_zone_months(store: ObjectStore) -> list[str]:
    """Every YYYY-MM folder under raw/<federation>/ (the player registry included), sorted."""
    months: set[str] = set()
    for federation in store.list_dirs("raw"):
        for name in store.list_dirs("raw", federation):
            try:
                parse_month(name)
            except ValueError:
                continue  # not a month folder; the readers ignore it too
            months.add(name)
    return sorted(months)


def range_tags(first_month: str, last_month: str) -> dict[str, str]:
    """Run tags that make one run cover first_month..last_month (every asset has a single-run backfill policy)."""
    return {RANGE_START_TAG: first_month, RANGE_END_TAG: last_month}


def _quiet_dagster() -> dict[str, Any]:
    """Run config keeping Dagster's console logger to warnings and errors: the progress line says the rest."""
    return {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(
    root: str | None = None,
    dagster_home: str | None = None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Generate DEFAULT_DEMO into root when root has no raw/, rate every month of every scenario in one Dagster run.

    root defaults to $RATINGS_STORE, else ./data; dagster_home to $DAGSTER_HOME, else ./.dagster_home.
    The run and its per-month materializations are recorded in that persistent Dagster instance, so
    `DAGSTER_HOME=<dagster_home> dagster dev` shows them afterwards.
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    store = ObjectStore(root)
    where = redact_url(store.url())
    started = time.monotonic()

    if not store.exists("raw"):
        print(f"No landing zone at {where}/raw: generating the default data set {DEFAULT_DEMO} ...", file=out, flush=True)
        summary = generate(root, **DEFAULT_DEMO)
        print(
            f"Generated {summary.games:,} games of {summary.players:,} players over {summary.months} months "
            f"({summary.files:,} files, federations {', '.join(map(str, summary.federations))}) "
            f"in {time.monotonic() - started:.0f}s",
            file=out,
            flush=True,
        )
    months = landing_zone_months(store)
    if not months:
        raise RuntimeError(f"no month folders under {where}/raw")
    first, last = months[0], months[-1]

    home = os.path.abspath(dagster_home or os.environ.get("DAGSTER_HOME") or DEFAULT_DAGSTER_HOME)
    os.makedirs(home, exist_ok=True)
    if os.path.isfile(INSTANCE_YAML) and not os.path.exists(os.path.join(home, "dagster.yaml")):
        shutil.copyfile(INSTANCE_YAML, os.path.join(home, "dagster.yaml"))
    scenarios = load_scenarios()
    print(
        f"Rating {len(months)} months {first}..{last} under {len(scenarios)} scenarios "
        f"({', '.join(scenarios)}) in one Dagster run (instance {home}) ...",
        file=out,
        flush=True,
    )

    previous_reporter = progress.install(progress.ConsoleProgress())
    run_started = time.monotonic()
    try:
        with warnings.catch_warnings():
            # Beta/preview notices about backfill policies and partitioned checks are not news to a demo user.
            warnings.simplefilter("ignore")
            defs = build_defs(first, last, root=root, scenarios=scenarios)
            instance = dg.DagsterInstance.from_config(home)
            logging.getLogger("dagster").setLevel(logging.WARNING)
            result = dg.materialize(
                [*defs.assets, *defs.asset_checks],
                instance=instance,
                resources=defs.resources,
                tags=range_tags(first, last),
                run_config=_quiet_dagster(),
                raise_on_error=False,
            )
    finally:
        progress.install(previous_reporter)
    run_seconds = time.monotonic() - run_started

    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    games = sum(stored_rows(store, "games", m) or 0 for m in months)
    quarantined = sum(stored_rows(store, "quarantine", m) or 0 for m in months)
    rated: dict[str, int] = {}
    for name, scenario in scenarios.items():
        final_key = table_key(rating_list_key(scenario).path, last)
        if store.exists(final_key):
            rated[name] = store.read_parquet(final_key).filter(pl.col("rating").is_not_null()).height
    summary = {
        "success": result.success,
        "run_id": result.run_id,
        "months": len(months),
        "first_month": first,
        "last_month": last,
        "scenarios": list(scenarios),
        "games": games,
        "quarantined": quarantined,
        "rated_players": rated,
        "reconciliation_passed": checks.get(RECONCILIATION),
        "run_seconds": round(run_seconds, 1),
        "elapsed_seconds": round(time.monotonic() - started, 1),
        "store": where,
        "dagster_home": home,
    }
    status = "done" if result.success else "FAILED (see the run in the Dagster UI)"
    print(
        "\n".join(
            [
                f"Demo {status}: {len(months)} months {first}..{last}, scenarios {', '.join(scenarios)}",
                f"  games rated: {games:,}   quarantined records: {quarantined:,}   "
                f"reconciliation: {'passed' if checks.get(RECONCILIATION) else 'FAILED'}",
                f"  rated players on the {last} list: " + ", ".join(f"{n} {c:,}" for n, c in rated.items()),
                f"  run {result.run_id} took {run_seconds:.0f}s ({summary['elapsed_seconds']:.0f}s in all)",
                f"  outputs: {where}/<raw_games|games|quarantine>/<YYYY-MM>.parquet and "
                f"{where}/<scenario>/<rating_list|rated_games|crosstable>/<YYYY-MM>.parquet",
                f"  UI: make ui, then http://127.0.0.1:3000 (or: DAGSTER_HOME={home} RATINGS_STORE={root} "
                f"RATINGS_FIRST_MONTH={first} dagster dev --host 127.0.0.1)",
            ]
        ),
        file=out,
        flush=True,
    )
    return summary

