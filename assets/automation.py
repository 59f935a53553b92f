"""Unattended operation: the monthly schedule and the landing-zone sensor that re-rates corrected months.

What they request is decided in pipeline.operations.automation; when they run comes from pipeline.settings.Settings.
"""

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import dagster as dg

from assets.storage import ObjectStoreResource
from pipeline.ingest.landing import inventory, landing_versions, months_held
from pipeline.months import add_months, first_day, month_of
from pipeline.operations.automation import (
    SCHEDULE_DESCRIPTION,
    SENSOR_DESCRIPTION,
    decode_cursor,
    encode_cursor,
    list_paths,
    recalculated_lists,
    requests_made,
    scheduled_run,
    sensor_run,
    unpartitioned_months,
    unrated_months,
)
from pipeline.operations.automation import range_tags as range_tags  # re-exported: runs and tests tag ranges with it
from pipeline.scenarios.model import Scenario
from pipeline.settings import Settings

SCHEDULE_NAME = "monthly_rating_list"
SENSOR_NAME = "landing_zone_changes"


# Both stopped unless RATINGS_AUTOMATION=on: a deployment opts in to running unattended.
SCHEDULE_STATUS = {"on": dg.DefaultScheduleStatus.RUNNING, "off": dg.DefaultScheduleStatus.STOPPED}
SENSOR_STATUS = {"on": dg.DefaultSensorStatus.RUNNING, "off": dg.DefaultSensorStatus.STOPPED}


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
        default_status=SCHEDULE_STATUS[settings.automation],
        description=SCHEDULE_DESCRIPTION.format(day=day, hour=hour, timezone=timezone),
    )
    def monthly_rating_list(context: dg.ScheduleEvaluationContext, store: ObjectStoreResource):
        tick: datetime = context.scheduled_execution_time.astimezone(ZoneInfo(timezone))
        this_month = month_of(tick.date())
        # The partitions are UTC months: east of UTC the month just closed here has not ended in UTC at the tick.
        end_of_last = datetime.combine(first_day(this_month), time(), UTC)
        months = partitions.get_partition_keys(current_time=end_of_last)
        plan = scheduled_run(
            add_months(this_month, -1),
            months,
            lambda: unrated_months(store.store(), list_paths(scenarios), months),
            recalculated_lists(scenarios),
            lambda: months_held(inventory(store.store())),
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
        default_status=SENSOR_STATUS[settings.automation],
        description=SENSOR_DESCRIPTION,
    )
    def landing_zone_changes(context: dg.SensorEvaluationContext, store: ObjectStoreResource) -> dg.SensorResult:
        months = partitions.get_partition_keys()
        if not months:
            return dg.SensorResult(skip_reason="no partitions yet")
        object_store = store.store()
        versions = landing_versions(object_store)
        # Months after the last partition stay out of the cursor: dumps landing early wait for their month.
        current = versions.rerate_fingerprints(months[0], months[-1])
        unrated = unrated_months(object_store, list_paths(scenarios), months)
        requested = requests_made(context.cursor)
        plan = sensor_run(decode_cursor(context.cursor), current, unrated, months[-1], requested)
        unseen = unpartitioned_months(versions.dumps, months[-1], month_of(datetime.now(UTC).date()))
        if isinstance(plan, str):
            reason = f"{plan}; {unseen}" if unseen else plan
            return dg.SensorResult(skip_reason=reason, cursor=encode_cursor(current, requested))
        context.log.info(plan.note)
        if unseen:
            context.log.warning(unseen)
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=plan.run_key, tags=plan.tags)],
            cursor=encode_cursor(current, requested + 1),
        )

    return landing_zone_changes
