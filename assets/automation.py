"""Unattended operation: the monthly schedule and the landing-zone sensor that re-rates corrected months."""

import hashlib
import os
from datetime import datetime

import dagster as dg

from assets.ratings import rating_list_key
from assets.resources import ObjectStoreResource
from pipeline.automation import (
    changed_months,
    decode_cursor,
    encode_cursor,
    rerate_start,
    unrated_months,
)
from pipeline.landing import landing_versions
from pipeline.months import add_months, month_of
from pipeline.scenarios import Scenario

SCHEDULE_NAME = "monthly_rating_list"
SENSOR_NAME = "landing_zone_changes"
SCHEDULE_DAY_ENV = "RATINGS_SCHEDULE_DAY"
SCHEDULE_HOUR_ENV = "RATINGS_SCHEDULE_HOUR"
SCHEDULE_TIMEZONE_ENV = "RATINGS_SCHEDULE_TIMEZONE"
SENSOR_INTERVAL_ENV = "RATINGS_SENSOR_INTERVAL_SECONDS"
AUTOMATION_ENV = "RATINGS_AUTOMATION"
DEFAULT_SCHEDULE_DAY = 1
DEFAULT_SCHEDULE_HOUR = 2
DEFAULT_SENSOR_INTERVAL_SECONDS = 300
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
TRIGGER_TAG = "ratings/trigger"
CHANGED_MONTHS_TAG = "ratings/changed_months"

SCHEDULE_DESCRIPTION = """Rates the month just closed, on day {day} of each month at {hour:02d}:00 ({timezone}).

FIDE closes a period a few days before the list is published, so the day is configurable
(RATINGS_SCHEDULE_DAY, RATINGS_SCHEDULE_HOUR, RATINGS_SCHEDULE_TIMEZONE). When an earlier month of
the chain has no list yet (a failed or missed month), the run starts there instead, so one run
catches the whole chain up."""

SENSOR_DESCRIPTION = """Watches the landing zone (raw/<federation>/<YYYY-MM>/ and the registry raw/players/<YYYY-MM>/).

Each month's fingerprint is a digest of its files' keys, sizes and ETags (S3) or modification times
(local), from the same landing-zone inventory that gives `landing_zone` its data versions, kept in
the cursor as JSON. A new, replaced or removed file in month M - a late correction included -
requests one range run re-rating M and every later month of the chain. Months after the
last partition are left out of the cursor, so dumps that land early are noticed once their month
closes. On its first evaluation the sensor only rates months that have no list yet."""


# -- configuration -------------------------------------------------------------------------------


def _int_from_env(name: str, default: int, low: int, high: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"{name}={raw!r}: expected a whole number from {low} to {high}")
    return int(raw)


def schedule_day() -> int:
    """Day of the month the schedule fires (1-28, so every month has it): $RATINGS_SCHEDULE_DAY, default 1."""
    return _int_from_env(SCHEDULE_DAY_ENV, DEFAULT_SCHEDULE_DAY, 1, 28)


def schedule_hour() -> int:
    return _int_from_env(SCHEDULE_HOUR_ENV, DEFAULT_SCHEDULE_HOUR, 0, 23)


def automation_status() -> tuple[dg.DefaultScheduleStatus, dg.DefaultSensorStatus]:
    """Both stopped unless RATINGS_AUTOMATION=on: a deployment opts in to running unattended."""
    value = os.environ.get(AUTOMATION_ENV, "off").strip().lower()
    if value not in ("on", "off"):
        raise ValueError(f"{AUTOMATION_ENV}={value!r}: expected on or off")
    if value == "on":
        return dg.DefaultScheduleStatus.RUNNING, dg.DefaultSensorStatus.RUNNING
    return dg.DefaultScheduleStatus.STOPPED, dg.DefaultSensorStatus.STOPPED


# -- what needs rating ---------------------------------------------------------------------------


def list_paths(scenarios: dict[str, Scenario]) -> list[str]:
    """The table path of every scenario's rating list, for pipeline.automation.unrated_months."""
    return ["/".join(rating_list_key(scenario).path) for scenario in scenarios.values()]


def range_tags(first_month: str, last_month: str) -> dict[str, str]:
    """Run tags that make one run cover first_month..last_month (every asset has a single-run backfill policy)."""
    return {RANGE_START_TAG: first_month, RANGE_END_TAG: last_month}


def _short(months: list[str]) -> str:
    return ",".join(months) if len(months) <= 12 else f"{','.join(months[:12])},... ({len(months)} months)"


# -- definitions ---------------------------------------------------------------------------------


def build_monthly_schedule(
    job_name: str, partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> dg.ScheduleDefinition:
    """The month just closed, on RATINGS_SCHEDULE_DAY at RATINGS_SCHEDULE_HOUR, catching up any earlier gap."""
    day, hour = schedule_day(), schedule_hour()
    timezone = os.environ.get(SCHEDULE_TIMEZONE_ENV) or "UTC"
    schedule_status, _ = automation_status()

    @dg.schedule(
        name=SCHEDULE_NAME,
        job_name=job_name,
        cron_schedule=f"0 {hour} {day} * *",
        execution_timezone=timezone,
        default_status=schedule_status,
        description=SCHEDULE_DESCRIPTION.format(day=day, hour=hour, timezone=timezone),
    )
    def monthly_rating_list(context: dg.ScheduleEvaluationContext, store: ObjectStoreResource):
        tick: datetime = context.scheduled_execution_time
        month = add_months(month_of(tick.date()), -1)
        months = partitions.get_partition_keys(current_time=tick)
        if month not in months:
            return dg.SkipReason(
                f"{month} is not a partition ({months[0] if months else '-'}..{months[-1] if months else '-'})"
            )
        earlier_gaps = [m for m in unrated_months(store.store(), list_paths(scenarios), months) if m < month]
        start = earlier_gaps[0] if earlier_gaps else month
        tags = {**range_tags(start, month), TRIGGER_TAG: "schedule"}
        return dg.RunRequest(run_key=f"monthly-{month}", tags=tags)

    return monthly_rating_list


def build_landing_sensor(
    job_name: str, partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> dg.SensorDefinition:
    """Requests one range run from the earliest new or corrected month to the last month of the chain."""
    _, sensor_status = automation_status()

    @dg.sensor(
        name=SENSOR_NAME,
        job_name=job_name,
        minimum_interval_seconds=_int_from_env(SENSOR_INTERVAL_ENV, DEFAULT_SENSOR_INTERVAL_SECONDS, 30, 86400),
        default_status=sensor_status,
        description=SENSOR_DESCRIPTION,
    )
    def landing_zone_changes(context: dg.SensorEvaluationContext, store: ObjectStoreResource) -> dg.SensorResult:
        months = partitions.get_partition_keys()
        if not months:
            return dg.SensorResult(skip_reason="no partitions yet")
        object_store = store.store()
        previous = decode_cursor(context.cursor)
        current = landing_versions(object_store).rerate_fingerprints(months[0], months[-1])
        changed = changed_months(previous or {}, current)
        start = rerate_start(changed, unrated_months(object_store, list_paths(scenarios), months), previous is None)
        cursor = encode_cursor(current)
        if start is None:
            reason = (
                "no month has changed"
                if previous is not None
                else f"fingerprinted {len(current)} month(s); every list exists"
            )
            return dg.SensorResult(skip_reason=reason, cursor=cursor)
        digest = hashlib.sha256(cursor.encode()).hexdigest()[:12]
        tags = {
            **range_tags(start, months[-1]),
            TRIGGER_TAG: "landing_zone",
            CHANGED_MONTHS_TAG: _short(changed) or "none",
        }
        context.log.info(f"re-rating {start}..{months[-1]}: changed months {_short(changed) or 'none'}")
        request = dg.RunRequest(run_key=f"rerate-{start}-{months[-1]}-{digest}", tags=tags)
        return dg.SensorResult(run_requests=[request], cursor=cursor)

    return landing_zone_changes
