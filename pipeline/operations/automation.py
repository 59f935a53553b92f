"""What unattended runs rate, and the run the schedule or the sensor requests (its key and tags).

The sensor's cursor of landing-zone fingerprints, changed and unrated months, the start month.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, time
from typing import NamedTuple
from zoneinfo import ZoneInfo

from pipeline.ingest.landing import LandingVersions
from pipeline.months import add_months, first_day, month_of
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import stored_table_months
from pipeline.store.object_store import ObjectStore

# The schedule and the sensor as the UI describes them (assets/automation.py), beside what decides their runs.
SCHEDULE_DESCRIPTION = """Rates the month just closed, on day {day} of each month at {hour:02d}:00 ({timezone}).

When an earlier month of the chain has no list yet (a failed or missed month), the run starts there
instead; a scenario that recalculates its last N lists (recalculation: window N) makes it start N-1
months earlier. A month that holds no dump yet is skipped, saying so. RATINGS_SCHEDULE_DAY,
RATINGS_SCHEDULE_HOUR, RATINGS_SCHEDULE_TIMEZONE set the time."""

SENSOR_DESCRIPTION = """Re-rates from the earliest month whose files under raw/ (dumps or registry) changed.

The cursor keeps each month's fingerprint (its files' keys, sizes and ETags or modification times);
a new, replaced or removed file in month M requests one range run from M to the last month. The
first evaluation only rates months that have no list yet. A month that lands after the last
partition is not seen until the partitions include it; one before the first (a stray folder before
the stored lists) is never rated. The skip reason names both."""

# Version 2: fingerprints from pipeline.ingest.landing.LandingVersions.rerate_fingerprints (one inventory for
# the UI's data versions and the sensor). Version 1 digested another listing (20 hex digits), so its
# months can never equal today's: decode_cursor reads it as no cursor, and the first tick after the
# upgrade rates only months without a list, as every first tick does, instead of re-rating the chain.
CURSOR_VERSION = 2
# Dagster's tags that make one run cover a range of partitions (every asset has a single-run backfill policy).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
TRIGGER_TAG = "ratings/trigger"
CHANGED_MONTHS_TAG = "ratings/changed_months"
UNRATED_MONTHS_TAG = "ratings/unrated_months"  # the first evaluation's: months without a list, not changed ones
MONTHS_NAMED = 12  # months a tag or a log line names before it only counts the rest


class RunRequestPlan(NamedTuple):
    """A run the schedule or the sensor requests: its key (Dagster requests a key once), its tags, what to log."""

    run_key: str
    tags: dict[str, str]
    note: str = ""


def range_tags(first_month: str, last_month: str) -> dict[str, str]:
    """Run tags that make one run cover first_month..last_month (every asset has a single-run backfill policy)."""
    return {RANGE_START_TAG: first_month, RANGE_END_TAG: last_month}


def short_months(months: list[str]) -> str:
    """The months comma-separated, the first MONTHS_NAMED of them and a count when there are more."""
    if len(months) <= MONTHS_NAMED:
        return ",".join(months)
    return f"{','.join(months[:MONTHS_NAMED])},... ({len(months)} months)"


def list_paths(scenarios: Mapping[str, Scenario]) -> list[str]:
    """The table path of every scenario's rating list ('actual/rating_list'), for unrated_months."""
    return [f"{scenario.name}/rating_list" for scenario in scenarios.values()]


def changed_months(previous: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Months whose fingerprint appeared, changed or disappeared, sorted."""
    return sorted(m for m in set(previous) | set(current) if previous.get(m) != current.get(m))


def unrated_months(store: ObjectStore, list_paths: Iterable[str], months: Sequence[str]) -> list[str]:
    """Months lacking the list of at least one chain; `list_paths` are the lists' table paths ('actual/rating_list')."""
    missing: set[str] = set()
    for path in list_paths:  # one listing per chain
        stored = set(stored_table_months(store, path.split("/")))
        missing.update(m for m in months if m not in stored)
    return sorted(missing)


def rerate_start(changed: list[str], unrated: list[str], first_tick: bool) -> str | None:
    """The first month to re-rate: the earliest change, or earlier when the chain has a gap before it.

    On the first tick (no cursor) only months without a list are rated: existing outputs are trusted.
    """
    if first_tick:
        return unrated[0] if unrated else None
    if not changed:
        return None
    start = changed[0]
    gaps = [m for m in unrated if m < start]
    return gaps[0] if gaps else start


def encode_cursor(fingerprints: Mapping[str, str], requested: int = 0) -> str:
    """The cursor: the fingerprints, and how many runs the sensor has requested (each request's key counts them)."""
    document = {"version": CURSOR_VERSION, "months": dict(sorted(fingerprints.items())), "requested": requested}
    return json.dumps(document, separators=(",", ":"))


def decode_cursor(cursor: str | None) -> dict[str, str] | None:
    """The fingerprints of the last evaluation; None on the first one, or when the cursor is of another version."""
    if not cursor:
        return None
    try:
        document = json.loads(cursor)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or document.get("version") != CURSOR_VERSION:
        return None
    months = document.get("months")
    return {str(k): str(v) for k, v in months.items()} if isinstance(months, dict) else None


def requests_made(cursor: str | None) -> int:
    """The runs the sensor requested before this evaluation (0 for a cursor that does not count them)."""
    try:
        document = json.loads(cursor or "{}")
    except json.JSONDecodeError:
        return 0
    requested = document.get("requested") if isinstance(document, dict) else None
    return requested if isinstance(requested, int) and not isinstance(requested, bool) and requested >= 0 else 0


def scheduled_run(
    month: str,
    months: Sequence[str],
    unrated: Callable[[], Sequence[str]],
    recalculated: int = 1,
    held: Callable[[], Collection[str]] | None = None,
) -> RunRequestPlan | str:
    """The schedule's run for `month` (the month just closed), from the earliest unrated month before it when the
    chain has a gap; a skip reason when `month` is not a partition, or holds no dump. `unrated` lists the store,
    only when needed. `recalculated`: the lists a run rates again (the widest `window: N` of the scenarios'
    recalculation policies, pipeline.scenarios.recalculation): the run then starts N-1 months before `month`.
    `held`: the months the landing zone holds files of (pipeline.ingest.landing.months_held).
    """
    if month not in months:
        return f"{month} is not a partition ({months[0] if months else '-'}..{months[-1] if months else '-'})"
    # Rated empty, the month would be published (and frozen under `forward`) without the dumps that land late.
    if held is not None and month not in held():
        return (
            f"{month} holds no dumps yet: no file under raw/<federation>/{month}/. The landing-zone sensor rates it "
            f"when they land; else the next scheduled run starts from it"
        )
    earlier_gaps = [m for m in unrated() if m < month]
    window_start = months[max(0, months.index(month) - (recalculated - 1))]
    start = min([*earlier_gaps[:1], window_start])
    return RunRequestPlan(f"monthly-{month}", {**range_tags(start, month), TRIGGER_TAG: "schedule"})


def recalculated_lists(scenarios: Mapping[str, Scenario]) -> int:
    """The lists a scheduled run rates: the widest `window: N` of the scenarios' recalculation policies, else 1."""
    windows = [p for s in scenarios.values() if isinstance(p := s.recalculation_policy(), int)]
    return max(windows, default=1)


def sensor_run(
    previous: Mapping[str, str] | None,
    current: Mapping[str, str],
    unrated: list[str],
    last_month: str,
    requested: int = 0,
) -> RunRequestPlan | str:
    """The sensor's run re-rating from the earliest new or corrected month (or gap) to `last_month`, else why not.

    `previous` is the last evaluation's fingerprints (None on the first one), `current` this one's;
    `requested` the runs requested before (requests_made).
    The run key counts the requests: Dagster drops a request whose key it has seen, so a key made of the
    landing zone's state alone dropped a correction put back after it was undone (C, O, C again).
    A tick retried before its cursor was saved counts the same and is still requested once.
    """
    changed = changed_months(previous or {}, current)
    start = rerate_start(changed, unrated, previous is None)
    if start is None:
        if previous is not None:
            return "no month has changed"
        return f"fingerprinted {len(current)} month(s); every list exists"
    digest = hashlib.sha256(encode_cursor(current).encode()).hexdigest()[:12]
    tags = {**range_tags(start, last_month), TRIGGER_TAG: "landing_zone"}
    if previous is None:  # the first evaluation changed nothing: it rates the months without a list
        tags[UNRATED_MONTHS_TAG] = short_months(unrated)
        note = f"rating {start}..{last_month}: first evaluation, unrated months {short_months(unrated)}"
    else:
        tags[CHANGED_MONTHS_TAG] = short_months(changed) or "none"
        note = f"re-rating {start}..{last_month}: changed months {short_months(changed) or 'none'}"
    return RunRequestPlan(f"rerate-{start}-{last_month}-{requested + 1}-{digest}", tags, note)


def unpartitioned_months(held: Iterable[str], last_month: str, this_month: str, first_month: str = "") -> str:
    """Why months the landing zone holds before the first partition (`first_month`), or closed months after the last,
    are not rated ('' when there are none).

    The partitions are fixed when the definitions load (RATINGS_LAST_MONTH, or the landing zone's last month with
    RATINGS_AUTOMATION off); a month closed since needs them loaded again. The month in progress is not due yet.
    A month before the first (the stored lists' first month: a stray folder) is never rated: the chains start at the
    first partition, from the seed list. `first_month` is '' when the first partition is RATINGS_FIRST_MONTH: the
    months before it are left out on purpose (`ratings run` names them as not rated), not strays (sensor_tick).
    """
    held = sorted(held)
    early = [m for m in held if m < first_month]
    late = [m for m in held if last_month < m < this_month]
    lines = []
    if early:
        lines.append(
            f"{_hold(early)} dumps but {'is' if len(early) == 1 else 'are'} before the first partition {first_month}, "
            f"where the chains start from the seed list: not rated. A stray or mistyped month folder? Move it. To "
            f"start the chains at {early[0]} on purpose, set RATINGS_FIRST_MONTH={early[0]} (every stored list is then "
            f"rated again from the seed list)"
        )
    if late:
        lines.append(
            f"{_hold(late)} dumps but {'is' if len(late) == 1 else 'are'} not a partition (the last is {last_month}): "
            f"reload the code location or set RATINGS_AUTOMATION=on (with RATINGS_LAST_MONTH unset or later)"
        )
    return "; ".join(lines)


def _hold(months: list[str]) -> str:
    """'2024-05 holds' or '2024-04,2024-05 hold'."""
    return f"{short_months(months)} {'holds' if len(months) == 1 else 'hold'}"


def month_closed_at(tick: datetime, timezone: str) -> tuple[str, datetime]:
    """(The month just closed in `timezone` at the schedule's `tick`, the UTC instant its partition is complete): the
    partitions are UTC months, and east of UTC the month just closed here has not ended in UTC at the tick.
    """
    this_month = month_of(tick.astimezone(ZoneInfo(timezone)).date())
    return add_months(this_month, -1), datetime.combine(first_day(this_month), time(), UTC)


class SensorTick(NamedTuple):
    """What one evaluation of the landing-zone sensor does: request `run` (None: skip, saying `skip_reason`), store
    `cursor`, and warn of `unseen` months (unpartitioned_months; empty: none).
    """

    run: RunRequestPlan | None
    skip_reason: str
    cursor: str
    unseen: str


def sensor_tick(
    cursor: str | None,
    versions: LandingVersions,
    unrated: list[str],
    months: Sequence[str],
    this_month: str,
    first_month_set: bool = False,
) -> SensorTick:
    """The sensor's evaluation over the partitions `months` (sensor_run), with its new cursor. `first_month_set`: the
    first partition is RATINGS_FIRST_MONTH (Settings.first_month), so the months before it go unnamed on every tick.
    """
    # Months after the last partition stay out of the cursor: dumps landing early wait for their month.
    current = versions.rerate_fingerprints(months[0], months[-1])
    requested = requests_made(cursor)
    plan = sensor_run(decode_cursor(cursor), current, unrated, months[-1], requested)
    unseen = unpartitioned_months(versions.dumps, months[-1], this_month, "" if first_month_set else months[0])
    if isinstance(plan, str):
        return SensorTick(None, f"{plan}; {unseen}" if unseen else plan, encode_cursor(current, requested), "")
    return SensorTick(plan, "", encode_cursor(current, requested + 1), unseen)
