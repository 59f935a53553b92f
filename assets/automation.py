"""Unattended operation: the monthly schedule and the landing-zone sensor that re-rates corrected months.

What they request is decided in pipeline.operations.automation; when they run comes from pipeline.settings.Settings.
"""

from datetime import UTC, datetime

import dagster as dg

from assets.storage import ObjectStoreResource
from pipeline.ingest.landing import inventory, landing_versions, months_held
from pipeline.months import month_of
from pipeline.operations.automation import (
    SCHEDULE_DESCRIPTION,
    SENSOR_DESCRIPTION,
    list_paths,
    month_closed_at,
    recalculated_lists,
    scheduled_run,
    sensor_tick,
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
        closed, complete_at = month_closed_at(context.scheduled_execution_time, timezone)
        months = partitions.get_partition_keys(current_time=complete_at)
        plan = scheduled_run(
            closed,
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
        unrated = unrated_months(object_store, list_paths(scenarios), months)
        today = month_of(datetime.now(UTC).date())
        versions = landing_versions(object_store)
        tick = sensor_tick(context.cursor, versions, unrated, months, today, settings.first_month is not None)
        if tick.run is None:
            return dg.SensorResult(skip_reason=tick.skip_reason, cursor=tick.cursor)
        context.log.info(tick.run.note)
        if tick.unseen:
            context.log.warning(tick.unseen)
        request = dg.RunRequest(run_key=tick.run.run_key, tags=tick.run.tags)
        return dg.SensorResult(run_requests=[request], cursor=tick.cursor)

    return landing_zone_changes
