"""Unattended operation: the monthly schedule and the landing-zone sensor that re-rates corrected months.

What they request is decided in pipeline.automation; when they run comes from pipeline.settings.Settings.
"""

from datetime import datetime

import dagster as dg

from assets.resources import ObjectStoreResource
from pipeline.automation import (
    decode_cursor,
    encode_cursor,
    list_paths,
    scheduled_run,
    sensor_run,
    unrated_months,
)
from pipeline.automation import range_tags as range_tags  # re-exported: runs and tests tag ranges with it
from pipeline.landing import landing_versions
from pipeline.months import add_months, month_of
from pipeline.scenarios import Scenario
from pipeline.settings import Settings

SCHEDULE_NAME = "monthly_rating_list"
SENSOR_NAME = "landing_zone_changes"

SCHEDULE_DESCRIPTION = """Rates the month just closed, on day {day} of each month at {hour:02d}:00 ({timezone}).

When an earlier month of the chain has no list yet (a failed or missed month), the run starts there
instead. RATINGS_SCHEDULE_DAY, RATINGS_SCHEDULE_HOUR, RATINGS_SCHEDULE_TIMEZONE set the time."""

SENSOR_DESCRIPTION = """Re-rates from the earliest month whose files under raw/ (dumps or registry) changed.

The cursor keeps each month's fingerprint (its files' keys, sizes and ETags or modification times);
a new, replaced or removed file in month M requests one range run from M to the last month. The
first evaluation only rates months that have no list yet."""


def automation_status(settings: Settings) -> tuple[dg.DefaultScheduleStatus, dg.DefaultSensorStatus]:
    """Both stopped unless RATINGS_AUTOMATION=on: a deployment opts in to running unattended."""
    if settings.automation == "on":
        return dg.DefaultScheduleStatus.RUNNING, dg.DefaultSensorStatus.RUNNING
    return dg.DefaultScheduleStatus.STOPPED, dg.DefaultSensorStatus.STOPPED


def build_monthly_schedule(
    job_name: str,
    partitions: dg.PartitionsDefinition,
    scenarios: dict[str, Scenario],
    settings: Settings | None = None,
) -> dg.ScheduleDefinition:
    """The month just closed, on the settings' schedule day and hour, catching up any earlier gap."""
    settings = settings or Settings.from_env()
    day, hour, timezone = settings.schedule_day, settings.schedule_hour, settings.schedule_timezone

    @dg.schedule(
        name=SCHEDULE_NAME,
        job_name=job_name,
        cron_schedule=f"0 {hour} {day} * *",
        execution_timezone=timezone,
        default_status=automation_status(settings)[0],
        description=SCHEDULE_DESCRIPTION.format(day=day, hour=hour, timezone=timezone),
    )
    def monthly_rating_list(context: dg.ScheduleEvaluationContext, store: ObjectStoreResource):
        tick: datetime = context.scheduled_execution_time
        months = partitions.get_partition_keys(current_time=tick)
        plan = scheduled_run(
            add_months(month_of(tick.date()), -1),
            months,
            lambda: unrated_months(store.store(), list_paths(scenarios), months),
        )
        if isinstance(plan, str):
            return dg.SkipReason(plan)
        return dg.RunRequest(run_key=plan.run_key, tags=plan.tags)

    return monthly_rating_list


def build_landing_sensor(
    job_name: str,
    partitions: dg.PartitionsDefinition,
    scenarios: dict[str, Scenario],
    settings: Settings | None = None,
) -> dg.SensorDefinition:
    """Requests one range run from the earliest new or corrected month to the last month of the chain."""
    settings = settings or Settings.from_env()

    @dg.sensor(
        name=SENSOR_NAME,
        job_name=job_name,
        minimum_interval_seconds=settings.sensor_interval_seconds,
        default_status=automation_status(settings)[1],
        description=SENSOR_DESCRIPTION,
    )
    def landing_zone_changes(context: dg.SensorEvaluationContext, store: ObjectStoreResource) -> dg.SensorResult:
        months = partitions.get_partition_keys()
        if not months:
            return dg.SensorResult(skip_reason="no partitions yet")
        object_store = store.store()
        # Months after the last partition stay out of the cursor: dumps landing early wait for their month.
        current = landing_versions(object_store).rerate_fingerprints(months[0], months[-1])
        unrated = unrated_months(object_store, list_paths(scenarios), months)
        plan = sensor_run(decode_cursor(context.cursor), current, unrated, months[-1])
        cursor = encode_cursor(current)
        if isinstance(plan, str):
            return dg.SensorResult(skip_reason=plan, cursor=cursor)
        context.log.info(plan.note)
        return dg.SensorResult(run_requests=[dg.RunRequest(run_key=plan.run_key, tags=plan.tags)], cursor=cursor)

    return landing_zone_changes
