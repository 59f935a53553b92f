"""`ratings run` and `ratings demo` in Dagster: heal orphaned runs, observe the landing zone, run the `all_months` job.

What they decide and say without Dagster is pipeline.operations.run_plan.
"""

import gc
import logging
import os
import socket
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, TextIO, TypeVar

import dagster as dg

from assets.checks import month_targets
from assets.definitions import ALL_MONTHS_JOB, build_defs
from assets.partitions import monthly_partitions
from assets.publish import PUBLISH_STAGE
from assets.rate import build_rating_defs
from assets.runtime.instance import INSTANCE_YAML as INSTANCE_YAML  # re-exported: tests copy it into instances
from assets.runtime.instance import instance_home, instance_notes
from assets.runtime.interrupts import Interrupted, raise_if_received
from assets.runtime.upgrades import SHARED_TABLES, STAGE_TAG, made_otherwise
from pipeline.code_versions import code_version
from pipeline.ingest.landing import dump_bytes, landing_versions, listing_of_the_run
from pipeline.ingest.registry import keep_registry_history
from pipeline.invariants.catalog import LIST_CONTINUITY
from pipeline.months import add_months, month_range
from pipeline.operations import progress
from pipeline.operations.automation import range_tags
from pipeline.operations.instance_dirs import instance_dir
from pipeline.operations.run_plan import (
    RunPlan,
    changed_before_line,
    checks_passed,
    closing_lines,
    games_made_otherwise_line,
    generate_demo,
    made_otherwise_line,
    opening_line,
    plan_run,
    remove_interrupted_writes,
    runs_summary,
    stale_before_line,
    waiting_lines,
)
from pipeline.operations.waves import (
    DEFAULT_WORKERS,
    LISTS_ADDED,
    LISTS_LEFT_OUT,
    LISTS_ONLY,
    PUBLISH_LAST,
    Stage,
    run_waves,
    stages,
)
from pipeline.scenarios.amendments import COUNT_KEYS
from pipeline.scenarios.chain import JOINED_FROM_LATER_LIST
from pipeline.scenarios.model import Scenario, load_scenarios
from pipeline.scenarios.ratings_used import STATED_DIFFERING
from pipeline.scenarios.recalculation import LATE_REPORTS
from pipeline.store.lock import STORE_TAG, WAIT_POLL_SECONDS, StoreLocked, store_lock
from pipeline.store.object_store import (
    UNREACHABLE_ERRORS,
    ObjectStore,
    fault_line,
    process_alive,
    redact_url,
    store_root_from_env,
)
from pipeline.text import markdown_list_lines
from pipeline.validate.month_figures import REPORTED_LATE

PID_TAG, HOST_TAG = "ratings/pid", "ratings/host"
MAX_RETRIES_TAG = "dagster/max_retries"  # dagster._core.storage.tags.MAX_RETRIES_TAG, a tag users may set


#: What a warning's look-up returns.
T = TypeVar("T")


def _runner_tags() -> dict[str, str]:
    """Tags naming the process that executes a CLI run in-process, so a later run can tell it was orphaned; and
    saying that the instance does not retry it when it fails.

    The instance's run_retries (dagster.yaml) would tag a failed CLI run, one Ctrl-C ended too, dagster/will_retry
    = true, and the daemon (`ratings ui`) then finds no code location to launch it from (it ran in-process) and logs
    that it cannot retry it: the UI shows it waiting for a retry that never comes. `ratings run` is run again by hand.
    """
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), MAX_RETRIES_TAG: "0"}


def heal_orphaned_runs(instance: dg.DagsterInstance, interrupted: bool = False) -> list[str]:
    """Mark failed the unfinished runs that an earlier CLI process of this machine left behind when it was killed;
    `interrupted` (this process is ending on Ctrl-C): its own and its ended workers' too.

    A run executed in-process stays STARTED for ever once its process dies, and with one run at a
    time (the shipped dagster.yaml) every queued run would wait behind it. Returns the healed run ids.
    """
    unfinished = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]
    healed = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=unfinished, tags={HOST_TAG: socket.gethostname()})):
        pid = run.tags.get(PID_TAG, "")
        mine = pid == str(os.getpid())
        if pid.isdigit() and (interrupted if mine else not process_alive(int(pid))):
            instance.report_run_failed(run, f"the process that ran it (pid {pid}) ended without finishing it")
            healed.append(run.run_id)
    return healed


# A run Dagster launched (UI, schedule, sensor) in these states is writing its store; a queued one waits behind
# this run's own (its tag limit counts them).
WRITING = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def wait_for_dagster_runs(store: ObjectStore, dagster_home: str | None, wait: bool, out: TextIO) -> None:
    """StoreLocked (with `wait`: waiting instead) while the store's instance holds an unfinished run over the store.

    Runs that Dagster launches take no store lock, only their queue's limit of one run per store: without this a
    `ratings run` started beside one wrote the same chains at the same time. Orphaned CLI runs are healed first.
    A run without the store's tag is over the store too, unless it names another: the UI's runs carry no tag (only
    the all_months job has it), and an instance is the store's own unless one is shared (docs/operations.md).
    """
    where = redact_url(store.url())
    with dg.DagsterInstance.from_config(instance_home(dagster_home, where)) as instance:
        for run_id in heal_orphaned_runs(instance):
            print(f"Marked run {run_id} failed: its process was killed before it finished", file=out, flush=True)
        told = False
        while runs := [
            r for r in instance.get_runs(dg.RunsFilter(statuses=WRITING)) if r.tags.get(STORE_TAG, where) == where
        ]:
            who = f"Dagster run {runs[0].run_id} of {runs[0].job_name}, {runs[0].status.value.lower()}"
            if not wait:
                raise StoreLocked(where, None, who)
            if not told:
                print(f"Waiting for {who} to finish ...", file=out, flush=True)
                told = True
            time.sleep(WAIT_POLL_SECONDS)


# Dagster's tag for an observation's data version (dagster._core.definitions.data_version).
DATA_VERSION_TAG = "dagster/data_version"


# The digest of the registry folders a month reads first (LandingVersions.registry_from), beside the data version.
REGISTRY_VERSION_TAG = "ratings/registry_version"


def observe_landing_zone(
    instance: dg.DagsterInstance,
    fingerprints: Mapping[str, str],
    months: Sequence[str],
    registry: Mapping[str, str] | None = None,
) -> None:
    """Record the landing zone's data version of each month of the run (`fingerprints`: landing_versions' dumps), as
    observing `landing_zone` in the UI does, and the version of the registry folders it reads first (`registry`:
    LandingVersions.registry_from), which the validation and the chains read but not raw_games.

    An observable source asset is not executed by a job run; without this the UI would say
    "Never observed" and could not tell which months' dumps changed after the run.
    """
    for month in months:
        registry_tag = {} if registry is None else {REGISTRY_VERSION_TAG: registry.get(month, "empty")}
        instance.report_runless_asset_event(
            dg.AssetObservation(
                asset_key="landing_zone",
                partition=month,
                tags={DATA_VERSION_TAG: fingerprints.get(month, "empty"), **registry_tag},
            )
        )


def landing_changed_before(
    instance: dg.DagsterInstance, plan: RunPlan, fingerprints: Mapping[str, str], registry: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """The months from the chain's start to the run's first month, not rated by the run, whose dumps now differ from
    those their stored tables were made from, and those whose registry folders (`registry`: LandingVersions.
    registry_from) do: the landing zone's versions observed last before the oldest of the month's latest raw_games
    and scenarios' lists (observe_landing_zone records them before every `ratings run`) against this run's listing.
    The oldest: a run killed after it ingested a corrected month, before its chains rated it, has the month's
    raw_games made from the dumps of now and its lists from those of before.

    No dump is read: one query per table for the months' latest materializations, one per such month for its
    observation (a month never observed before it was made, as by a run launched from the UI without observing, is
    not named; nor is a registry observed before its version was recorded).
    """
    first = plan.months[0]
    if plan.chain_start >= first:
        return [], []
    earlier = set(month_range(plan.chain_start, add_months(first, -1)))
    made: dict[str, int] = {}
    for key in [dg.AssetKey("raw_games"), *(dg.AssetKey([name, "rating_list"]) for name in plan.scenarios)]:
        latest = instance.get_latest_storage_id_by_partition(key, dg.DagsterEventType.ASSET_MATERIALIZATION, earlier)
        for month, storage_id in latest.items():
            made[month] = min(storage_id, made.get(month, storage_id))
    changed: tuple[list[str], list[str]] = [], []
    for month, storage_id in sorted(made.items()):
        records = instance.fetch_observations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("landing_zone"), asset_partitions=[month], before_storage_id=storage_id
            ),
            limit=1,
        ).records
        tags = records[0].asset_observation.tags if records and records[0].asset_observation is not None else {}
        if DATA_VERSION_TAG in tags and tags[DATA_VERSION_TAG] != fingerprints.get(month, "empty"):
            changed[0].append(month)
        if REGISTRY_VERSION_TAG in tags and tags[REGISTRY_VERSION_TAG] != registry.get(month, "empty"):
            changed[1].append(month)
    return changed


def lists_made_otherwise(instance: dg.DagsterInstance, plan: RunPlan) -> dict[str, str]:
    """Scenario -> the first of its stored lists between the chain's start and the run's first month made by another
    code version than the one its rating_list asset declares now: the scenario's definition (its rules, schedule,
    `set:`) or the code rating it changed since, and this run continues from them. Judged as a Dagster rate step judges
    the month before its own (upgrades.made_otherwise): the instance's record confirmed by the footer, the list of the
    month before the run by its footer where the instance has none (a list recording none: by other code).
    """
    first = plan.months[0]
    if plan.chain_start >= first:
        return {}
    earlier = month_range(plan.chain_start, add_months(first, -1))
    partitions = monthly_partitions(plan.chain_start, plan.months[-1])
    store = ObjectStore(plan.root)

    def declared(scenario: Scenario, key: dg.AssetKey) -> str | None:
        # The version the chain's specs declare (the rate stage's sources and the scenario's definition), asked of
        # them: its definition is made without reading anything (about 5 ms a scenario).
        with warnings.catch_warnings():  # Dagster's Beta and Preview notes, as build_defs silences them
            warnings.filterwarnings("ignore", category=dg.BetaWarning)
            warnings.filterwarnings("ignore", category=dg.PreviewWarning)
            defs = build_rating_defs(partitions, scenario)
        chains = [a for a in defs.assets or () if isinstance(a, dg.AssetsDefinition)]
        return chains[0].code_versions_by_key[key]

    made: dict[str, str] = {}
    for name, scenario in plan.scenarios.items():
        key = dg.AssetKey([name, "rating_list"])
        other = made_otherwise(instance, store, key, earlier, partial(declared, scenario, key), first=True)
        if other:
            made[name] = other[0]
    return made


def tables_made_otherwise(instance: dg.DagsterInstance, plan: RunPlan) -> list[str]:
    """The months between the chain's start and the run's first month whose stored raw_games or games were made by
    another code version than the ingest and validate stages' now (SHARED_TABLES): the lists this run continues were
    rated on games a run from scratch would read or validate otherwise (an upgrade of the readers or the validation).
    Judged as the lists are (upgrades.made_otherwise): the instance's record confirmed by the footer, the month before
    the run by its footer where the instance has none.
    """
    first = plan.months[0]
    if plan.chain_start >= first:
        return []
    earlier = month_range(plan.chain_start, add_months(first, -1))
    store = ObjectStore(plan.root)
    other: set[str] = set()
    for table, stage in SHARED_TABLES.items():
        other |= set(made_otherwise(instance, store, dg.AssetKey(table), earlier, partial(code_version, stage)))
    return sorted(other)


#: What the summary says of a step Dagster stopped on Ctrl-C (SIGINT): its error names no cause of the step's own.
INTERRUPTED = "interrupted (Ctrl-C): run the same command again to finish"


#: The metadata of a list rated again that differs from the stored one (pipeline.scenarios.amendments.record_amendment).
CHANGES_FILE = "changes_file"


def _changed_after(instance: dg.DagsterInstance, key: dg.AssetKey, month: str, storage_id: int) -> bool:
    """Whether a materialization of `key`'s `month` after `storage_id` replaced a stored list with another (its
    metadata names the changes file): one rated again as it was stored leaves what was made from it as good as it was.
    """
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[month], after_storage_id=storage_id), limit=1000
    ).records
    return any(
        record.asset_materialization is not None and CHANGES_FILE in record.asset_materialization.metadata
        for record in records
    )


def lists_unchanged_since_next(instance: dg.DagsterInstance, plan: RunPlan) -> set[str]:
    """The scenarios whose list of the run's last month has not changed since the stored list of the month after was
    made (every rating of it since was as stored): the lists after the run are not stale. A rating system's list is not
    its whole state, and a list made under another instance is not known here: neither is counted unchanged. A rapid
    or blitz list counts unchanged only if the standard list it is seeded from does too.
    """
    last = plan.months[-1]
    following = add_months(last, 1)
    unchanged = set()
    for name, scenario in plan.scenarios.items():
        if scenario.is_system:
            continue
        key = dg.AssetKey([name, "rating_list"])
        made = instance.get_latest_storage_id_by_partition(key, dg.DagsterEventType.ASSET_MATERIALIZATION, {following})
        if following in made and not _changed_after(instance, key, last, made[following]):
            unchanged.add(name)
    return {
        name
        for name in unchanged
        if plan.scenarios[name].standard_chain is None or plan.scenarios[name].standard_chain in unchanged
    }


def lists_stale_before(instance: dg.DagsterInstance, plan: RunPlan) -> dict[str, str]:
    """Scenario -> the first of its stored lists between the chain's start and the run's first month that was made
    before the list of the month before it changed (a run of earlier months that stopped short of them, or was killed
    before it reached them): this run continues from lists made from a list that is no longer the stored one.
    """
    first = plan.months[0]
    earlier = month_range(plan.chain_start, add_months(first, -1)) if plan.chain_start < first else []
    stale: dict[str, str] = {}
    for name in plan.scenarios if len(earlier) > 1 else []:
        key = dg.AssetKey([name, "rating_list"])
        made = instance.get_latest_storage_id_by_partition(key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(earlier))
        for before, month in zip(earlier, earlier[1:], strict=False):
            if before in made and month in made and made[before] > made[month]:
                if _changed_after(instance, key, before, made[month]):
                    stale[name] = month
                    break
    return stale


def _root_cause(error: Any, failed_checks: str | None = None) -> str:
    """The first line of the innermost error Dagster wrapped (the user's exception, not the step wrapper); for a step
    that failed its blocking checks, `failed_checks` (_failed_checks: Dagster's error names the checks, not why).
    """
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    if getattr(error, "cls_name", None) == "DagsterExecutionInterruptedError":
        return INTERRUPTED
    if getattr(error, "cls_name", None) == "DagsterAssetCheckFailedError" and failed_checks:
        return failed_checks
    return ((error.message if error is not None else "").strip().splitlines() or [""])[0]


def _failed_checks(events: Iterable[Any]) -> dict[str, str]:
    """Each step's failed blocking checks in their own words: step key -> '<check> of <asset>: <its first problem>
    (and N more)', from the problems the evaluations' metadata lists (assets.checks).
    """
    found: dict[str, dict[tuple[str, str], tuple[list[str], int]]] = {}
    for event in events:
        if event.event_type_value != "ASSET_CHECK_EVALUATION":
            continue
        evaluation = event.event_specific_data
        if evaluation.passed or evaluation.severity != dg.AssetCheckSeverity.ERROR:
            continue
        checks = found.setdefault(event.step_key, {})
        key = (evaluation.check_name, evaluation.asset_key.to_user_string())
        problems, count = checks.get(key, ([], 0))
        values = {name: entry.value for name, entry in evaluation.metadata.items()}
        # A range's evaluation lists the first problems and then how many more ("... and N more"): problem_count.
        for line in markdown_list_lines(str(values.get("problems", ""))):
            if line not in problems and not line.startswith("... and "):
                problems.append(line)
        checks[key] = problems, max(count, int(values.get("problem_count", 0)), len(problems))
    return {
        step: "; ".join(
            f"{check} of {asset}: "
            + (problems[0] if problems else "failed")
            + (f" (and {count - 1} more)" if count > 1 else "")
            for (check, asset), (problems, count) in checks.items()
        )
        for step, checks in found.items()
    }


def _store_fault(error: Any) -> str | None:
    """The line naming the path and cause of the store fault a step failed on (pipeline.store.object_store.StoreFault,
    an unreachable store), None when it failed otherwise.
    """
    while error is not None:
        name = getattr(error, "cls_name", None) or ""
        first = ((getattr(error, "message", "") or "").strip().splitlines() or [""])[0]
        prefix, _, rest = first.partition(": ")
        first = rest if rest and prefix.rsplit(".", 1)[-1] == name else first
        if name == "StoreFault":
            return first
        if name in UNREACHABLE_ERRORS:
            return f"object store unreachable: {UNREACHABLE_ERRORS[name]} ({first})"
        error = getattr(error, "cause", None) or getattr(error, "context", None)
    return None


# Run config keeping Dagster's console logger to warnings and errors: the progress line says the rest.
QUIET_DAGSTER = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(
    root: str | None = None,
    dagster_home: str | None = None,
    out: TextIO | None = None,
    generate_data: bool = False,
    workers: int | None = None,
    publish: str = PUBLISH_LAST,
) -> dict[str, Any]:
    """`ratings demo`: generate DEFAULT_DEMO where allowed (pipeline.operations.run_plan.generate_demo), then
    run_store over every month.

    root defaults to $RATINGS_STORE, else ./data; dagster_home to $DAGSTER_HOME, else the store's own instance
    (assets.runtime.instance.instance_home).
    """
    out = out or sys.stdout
    root = root or store_root_from_env()
    try:
        generate_demo(root, explicit=generate_data, out=out)
    except KeyboardInterrupt as stop:
        store = ObjectStore(root)
        if store.is_local:  # raw/ is moved into place whole once generated, or not at all (pipeline.generator)
            raise Interrupted(
                "while generating its data: none of it was kept (it is made in a temporary folder and moved into "
                "place once complete): run the same command again"
                if not store.exists("raw")
                else "once its data was generated (whole): run the same command again to rate it"
            ) from stop
        if not store.exists("raw"):
            raise
        # On S3 the files are written in place (a prefix cannot be renamed): a rerun would rate them as it finds them.
        raise Interrupted(
            f"while generating its data: remove {redact_url(store.url())}/raw before running it again"
        ) from stop
    return run_store(root, dagster_home=dagster_home, out=out, title="Demo", workers=workers, publish=publish)


@contextmanager
def _young_garbage_collected() -> Iterator[None]:
    """Within the block, Python's full garbage collections look only at objects made inside it, so they run often.

    Frames and arrays caught in reference cycles are freed only by a full collection, which Python
    runs only once the objects surviving since the last one number a quarter of all long-lived
    objects, and the definitions and Dagster's machinery are hundreds of thousands. A run that
    allocates few Python objects (the instance no longer opens a database per event) then held the
    garbage of whole steps: the 204-month backfill with --workers 2 peaked at 2.8 GB instead of 2.2 GB.
    Frozen, the objects alive before the run leave that count until the block ends.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def stage_selection(stage: Stage) -> dg.AssetSelection:
    """The assets a stage's run materializes: its groups (all without), less the groups it leaves out, with, without
    or beside the published lists as the stage says (pipeline.operations.waves.LISTS_*), never the landing zone.
    """
    selection: dg.AssetSelection = dg.AssetSelection.groups(*stage.groups) if stage.groups else dg.AssetSelection.all()
    if stage.left_out:
        selection -= dg.AssetSelection.groups(*stage.left_out)
    published_lists = dg.AssetSelection.tag("stage", PUBLISH_STAGE)
    if stage.lists == LISTS_ONLY:
        return published_lists
    if stage.lists == LISTS_LEFT_OUT:
        selection -= published_lists
    elif stage.lists == LISTS_ADDED:
        selection |= published_lists
    return selection - dg.AssetSelection.assets("landing_zone")  # observed by run_store instead


@contextmanager
def _as_the_run_s_location(scenarios_file: str | None, home: str) -> Iterator[None]:
    """RATINGS_SCENARIOS and DAGSTER_HOME set, for the block, to the run's scenarios file and instance, as a code
    location's are: what its steps print (instance_dirs.location_commands: a missing month's rebuild, the upgrade
    warning) then carries the run's --scenarios and --dagster-home. Restored after.
    """
    given = {"DAGSTER_HOME": home, **({"RATINGS_SCENARIOS": os.path.abspath(scenarios_file)} if scenarios_file else {})}
    before = {name: os.environ.get(name) for name in given}
    os.environ.update(given)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute_stage(
    stage: Stage,
    first: str,
    last: str,
    partition_range: tuple[str, str],
    root: str,
    scenarios_file: str | None,
    home: str,
    reporter: Any,
) -> dict[str, Any]:
    """One run of the `all_months` job over `stage`'s assets (and their checks); what the summary needs of it.

    The definitions' partitions are the store's months (`partition_range`: from the chain's start, as
    the UI's are): the run materializes first..last, its first month continues the stored list of the
    month before unless it is the chain's start, and pages over every month read all the stored ones.
    Called in this process or in a worker process (then `reporter` forwards progress to the parent).
    """
    first, last = stage.months or (first, last)
    raise_if_received()
    if reporter is not None:
        progress.install(reporter)
    with warnings.catch_warnings(), _as_the_run_s_location(scenarios_file, home):
        # Beta/preview notices about backfill policies and partitioned checks are not news to a user.
        warnings.simplefilter("ignore")
        logging.getLogger("dagster").setLevel(logging.WARNING)
        defs = build_defs(*partition_range, root=root, scenarios=load_scenarios(scenarios_file))
        job = defs.resolve_job_def(ALL_MONTHS_JOB)
        selection = stage_selection(stage)
        # The named job, not an ad-hoc one: every run shows under `all_months` and can be re-executed.
        # Disposed after the run: the instance keeps its database connections open (assets/runtime/instance.py).
        with dg.DagsterInstance.from_config(home) as instance, _young_garbage_collected():
            result = job.execute_in_process(
                instance=instance,
                tags={**range_tags(first, last), **_runner_tags(), STAGE_TAG: stage.name},
                run_config=QUIET_DAGSTER,
                raise_on_error=False,
                asset_selection=list(selection.resolve(defs.resolve_asset_graph())),
            )
    # Dagster takes Ctrl-C within its run as its own (it fails the run, or the signal came as it ended): the command
    # stops here too, rather than summarise or start the next stage.
    raise_if_received()
    failed_checks = _failed_checks(result.all_events)
    return {
        "run_id": result.run_id,
        "success": result.success,
        "checks": checks_passed((e.check_name, e.passed) for e in result.get_asset_check_evaluations()),
        "failed_steps": {
            event.step_key: _store_fault(event.step_failure_data.error)
            or _root_cause(event.step_failure_data.error, failed_checks.get(event.step_key or ""))
            for event in result.all_events
            if event.event_type_value == "STEP_FAILURE"
        },
        **_materialization_notes(result),
        "faults": [
            fault
            for event in result.all_events
            if event.event_type_value == "STEP_FAILURE" and (fault := _store_fault(event.step_failure_data.error))
        ],
    }


def _materialization_notes(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    """What the run's materializations say for the summary, in one pass over them: the lists rated again that differ
    from the stored ones (`amended`: scenario, month, counts; pipeline.scenarios.amendments), the stated ratings that
    differ from the list in force per scenario (ratings_used), the players a later list brought in at its rating per
    scenario and month (chain.with_later_list_newcomers), the games reported late (validation) and the recalculation
    policy's words (recalculation).
    """
    amended: list[dict[str, Any]] = []
    stated: dict[str, int] = {}
    joined: dict[str, dict[str, int]] = {}
    reported_late, late_reports = 0, []
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        metadata, key = materialization.metadata, materialization.asset_key
        values = {name: entry.value for name, entry in metadata.items()}
        if "changes_file" in values:
            month = materialization.partition
            amended.append(
                {"scenario": key.path[0], "month": month, **{k: values[k] for k in (*COUNT_KEYS, "changes_file")}}
            )
        if isinstance(count := values.get(STATED_DIFFERING), int):
            stated[key.path[0]] = stated.get(key.path[0], 0) + count
        if isinstance(count := values.get(JOINED_FROM_LATER_LIST), int):
            joined.setdefault(key.path[0], {})[str(materialization.partition)] = count
        if key == dg.AssetKey("games") and isinstance(late := values.get(REPORTED_LATE), int):
            reported_late += late
        if LATE_REPORTS in values:
            late_reports += str(values[LATE_REPORTS]).splitlines()
    return {
        "amended": amended,
        "stated_ratings_differing": stated,
        JOINED_FROM_LATER_LIST: joined,
        "reported_late": reported_late,
        "late_reports": late_reports,
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
    wait: bool = False,
    publish: str = PUBLISH_LAST,
) -> dict[str, Any]:
    """`ratings run`: rate an existing landing zone's months and print what happened, under the store's lock from
    before the plan to after the summary (one writer per store).

    One Dagster run by default; with more `workers`, runs of the shared tables over consecutive months, then one
    run per scenario, each wave `workers` side by side in their own processes (they belong to this run: the lock
    is this process's for the whole run), then the comparison. Never writes into raw/. Months default to the
    first..last month holding dumps. The summary lists quarantined records by reason and by file, months mostly
    quarantined, how players were identified, and where the lists are; `success` is False when the run failed
    or rated no game at all. pipeline.store.lock.StoreLocked when another run holds the lock, unless `wait`.
    """
    out = out or sys.stdout
    store = ObjectStore(root or store_root_from_env())
    with store_lock(store, wait=wait, out=out):
        # The plan first: a run refused for its own arguments or store is refused without the instance.
        plan = plan_run(
            root, first_month, last_month, scenarios_file, out=out, publish=publish, dagster_home=dagster_home
        )
        wait_for_dagster_runs(store, dagster_home, wait, out)
        return _rate_planned(plan, scenarios_file, dagster_home, out, title, workers)


def _rate_planned(
    plan: RunPlan, scenarios_file: str | None, dagster_home: str | None, out: TextIO, title: str, workers: int | None
) -> dict[str, Any]:
    """run_store's runs of `plan` and its summary, the lock held."""
    where = redact_url(plan.store.url())
    home, source = instance_home(dagster_home, where), instance_dir(dagster_home, where)[1]
    print(opening_line(plan.months, where, plan.scenarios, home, plan.published), file=out, flush=True)
    for note in plan.notes:
        print(f"  {note}", file=out, flush=True)

    workers = DEFAULT_WORKERS if workers is None else workers
    started = time.monotonic()
    previous_reporter = progress.install(progress.ConsoleProgress())
    outcomes: list[dict[str, Any]] = []
    waves: list[list[Stage]] = []
    fault = None
    stale_before: dict[str, str] = {}
    changed_before: list[str] = []
    registry_before: list[str] = []
    waiting: list[str] = []
    made_otherwise: dict[str, str] = {}
    games_otherwise: list[str] = []
    try:
        with dg.DagsterInstance.from_config(home) as instance:
            for note in instance_notes(instance, home, source, where):
                print(f"  {note}", file=out, flush=True)
            # Orphaned runs were healed by wait_for_dagster_runs, before this run took the store.
            remove_interrupted_writes(plan.store, out)
            versions = landing_versions(plan.store, plan.entries)
            fingerprints, registry = versions.dumps, versions.registry_from(plan.chain_start)

            def looked_up(what: str, look: Callable[[], T]) -> T | None:
                try:
                    return look()
                except Exception as error:  # a warning's look-up: never the reason a run does not start
                    print(f"  (could not {what}: {type(error).__name__})", file=out, flush=True)
                    return None

            compared = looked_up(
                "compare the earlier months' dumps",
                lambda: landing_changed_before(instance, plan, fingerprints, registry),
            )
            changed_before, registry_before = compared or ([], [])
            if changed_before or registry_before:
                line = changed_before_line(changed_before, plan.commands, plan.months[0], registry_before)
                print(f"  {line}", file=out, flush=True)
            # A registry folder changes what its months rate too (an unknown player now known adds a game).
            changed = sorted({*changed_before, *registry_before})
            waiting = (
                looked_up(
                    "say which games wait", lambda: waiting_lines(plan.store, plan.scenarios, plan.months, changed)
                )
                or []
            )
            for line in waiting:
                print(f"  {line}", file=out, flush=True)
            made_otherwise = (
                looked_up("compare the lists' versions", lambda: lists_made_otherwise(instance, plan)) or {}
            )
            if made_otherwise:
                line = made_otherwise_line(made_otherwise, plan.commands, plan.months[0], scenarios=plan.scenarios)
                print(f"  {line}", file=out, flush=True)
            games_otherwise = (
                looked_up("compare the stored games' versions", lambda: tables_made_otherwise(instance, plan)) or []
            )
            if games_otherwise:
                line = games_made_otherwise_line(games_otherwise, plan.commands, plan.months[0], plan.scenarios)
                print(f"  {line}", file=out, flush=True)
            stale_before = (
                looked_up("compare the earlier months' lists", lambda: lists_stale_before(instance, plan)) or {}
            )
            if stale_before:
                print(f"  {stale_before_line(stale_before, plan.commands, plan.months[0])}", file=out, flush=True)
            observe_landing_zone(instance, fingerprints, plan.months, registry)
        waves = stages(
            list(plan.scenarios),
            workers,
            plan.months,
            dump_bytes(plan.entries, plan.months),
            list(plan.published),
            seeded=[name for name, scenario in plan.scenarios.items() if scenario.standard_chain],
        )
        run_args = (plan.months[0], plan.months[-1], plan.partition_range, plan.root, scenarios_file, home)
        raise_if_received()
        with listing_of_the_run(plan.store, list(plan.entries)):
            keep_registry_history(plan.store, plan.months[-1])
            try:
                outcomes = run_waves(waves, execute_stage, run_args, workers)
            except KeyboardInterrupt:
                # Ctrl-C: the runs Dagster had not ended as failed (one interrupted before it started, a worker's
                # killed) are now, or nothing would run after them in the UI until the next `ratings run`.
                with suppress(Exception), dg.DagsterInstance.from_config(home) as instance:
                    heal_orphaned_runs(instance, interrupted=True)
                raise
    except Exception as error:  # the store failed outside any step: still summarise, naming where and why
        fault = fault_line(plan.store.url(), error)
        if fault is None:
            raise
    finally:
        progress.install(previous_reporter)

    unchanged: set[str] = set()
    if fault is None:
        try:
            with dg.DagsterInstance.from_config(home) as instance:
                unchanged = lists_unchanged_since_next(instance, plan)
        except Exception:  # not known: every scenario with later lists is named stale, as it may be
            unchanged = set()
    summary = runs_summary(plan, outcomes, sum(map(len, waves)), time.monotonic() - started, home, fault, unchanged)
    summary["dumps_changed_before"] = changed_before
    summary["registry_changed_before"] = registry_before
    summary["waiting_before"] = waiting
    summary["lists_made_otherwise"] = made_otherwise
    summary["games_made_otherwise"] = games_otherwise
    summary["lists_stale_before"] = stale_before
    if summary["stale_after"]:
        try:
            with dg.DagsterInstance.from_config(home) as instance:
                mark_stale_lists(instance, plan, summary["stale_after"], summary["run_ids"])
        except Exception as error:  # the lists are written: a bookkeeping failure must not swallow the summary
            first = (str(error).strip().splitlines() or [""])[0]
            summary["bookkeeping"] = (
                f"the UI's note of the stale lists was not recorded ({type(error).__name__}: {first})"
            )
    print(closing_lines(summary, plan.scenarios, title), file=out, flush=True)
    return summary


def mark_stale_lists(
    instance: dg.DagsterInstance, plan: RunPlan, stale: dict[str, dict[str, list[str]]], run_ids: Sequence[str]
) -> None:
    """Record in the UI that each scenario's stored lists after the run's last month were rated from a list the run
    replaced (run_report.stale_after): the list_continuity check of the month after, evaluated against the new
    list (failed when it no longer continues it), naming every later month and the command that re-rates them.

    Dagster by itself marks only that month's list unsynced (its upstream, the month before, is newer);
    the months after it are stale as well, and the check's metadata says so.

    The evaluation is recorded in the Dagster run that wrote the new list (else the last of `run_ids`), not as a
    runless event: Dagster keeps one execution per check, partition and run, and every runless event has the same
    run id (''), so the second run of the same range failed on the first one's evaluation (UNIQUE constraint
    failed: asset_check_executions). Within a run Dagster updates the execution in place.
    """
    last = plan.months[-1]
    command = plan.commands.ratings("run", "--from", add_months(last, 1))
    for name, lists in stale.items():
        months, problems = lists["months"], lists["problems"]
        key = dg.AssetKey([plan.scenarios[name].name, "rating_list"])
        targets = month_targets(instance, key, [last, months[0]])
        run_id = targets[last].run_id if last in targets else (run_ids[-1] if run_ids else None)
        if run_id is None:  # no Dagster run started: the summary alone says it
            continue
        evaluation = dg.AssetCheckEvaluation(
            asset_key=key,
            check_name=LIST_CONTINUITY,
            passed=not problems,
            partition=months[0],
            # The month's stored list is what it verified: the UI counts the evaluation for that month.
            target_materialization_data=targets.get(months[0]),
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "stale_months": f"{months[0]}..{months[-1]} ({len(months)})",
                "rated_from": f"the list of {last} that a later run replaced",
                "bring_up_to_date": command,
                **({"problems": "\n".join(problems)} if problems else {}),
            },
        )
        instance.report_dagster_event(
            dg.DagsterEvent(
                dg.DagsterEventType.ASSET_CHECK_EVALUATION.value, ALL_MONTHS_JOB, event_specific_data=evaluation
            ),
            run_id=run_id,
        )
