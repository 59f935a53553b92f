"""Every RATINGS_* setting in one typed object, read from the environment once, with one-line errors."""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping
from typing import Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.fields import FieldInfo

from pipeline.months import add_months, month_of, parse_month


class SettingsError(ValueError):
    """A RATINGS_* variable is wrong; the message names the variable and why."""


DEFAULT_FIRST_MONTH = "2015-01"
# FIDE adopted Elo's system in 1970 and published its first list in 1971: a month folder before this is
# far more likely a typo (1900-01, 0202-01) than a dump. Historical research sets RATINGS_EARLIEST_MONTH.
DEFAULT_EARLIEST_MONTH = "1970-01"
DEFAULT_STORE = "./data"
# An IANA time-zone name: ZoneInfo reads the name as a path under the zone database, so a name with dots or
# a leading slash ('../../etc/passwd') is refused before it is opened.
TIME_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*$")

# Environment variable -> Settings field. The names are part of the interface (README, Configuration).
ENVIRONMENT = {
    "RATINGS_STORE": "store",
    "RATINGS_FIRST_MONTH": "first_month",
    "RATINGS_LAST_MONTH": "last_month",
    "RATINGS_EARLIEST_MONTH": "earliest_month",
    "RATINGS_SCENARIOS": "scenarios",
    "RATINGS_AUTOMATION": "automation",
    "RATINGS_SCHEDULE_DAY": "schedule_day",
    "RATINGS_SCHEDULE_HOUR": "schedule_hour",
    "RATINGS_SCHEDULE_TIMEZONE": "schedule_timezone",
    "RATINGS_SENSOR_INTERVAL_SECONDS": "sensor_interval_seconds",
    "RATINGS_EXECUTOR": "executor",
    "RATINGS_CELERY_BROKER": "celery_broker",
    "RATINGS_CELERY_BACKEND": "celery_backend",
}


def _bounds(field: FieldInfo) -> tuple[int, int]:
    """The (ge, le) bounds a numeric field declares."""
    low = next(m.ge for m in field.metadata if isinstance(m, Ge))
    high = next(m.le for m in field.metadata if isinstance(m, Le))
    return cast(int, low), cast(int, high)


class Settings(BaseModel):
    """What the Dagster definitions are built from. Unset months come from the store's landing zone (see months_for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store: str = Field(default=DEFAULT_STORE, description="Object-store root: a directory or s3://bucket/prefix")
    first_month: str | None = Field(
        default=None,
        description=(
            "First monthly partition (default: the landing zone's first month, not before the stored lists' first; "
            "else 2015-01)"
        ),
    )
    last_month: str | None = Field(
        default=None,
        description="Last monthly partition (default: the landing zone's last month; open-ended with automation on)",
    )
    earliest_month: str = Field(
        default=DEFAULT_EARLIEST_MONTH,
        description=(
            "Earliest month a landing-zone folder may name: a folder before it (or after the current month) is "
            "misplaced, not a month to rate"
        ),
    )
    scenarios: str | None = Field(
        default=None, description="Scenarios YAML (default: pipeline/scenarios/scenarios.yaml)"
    )
    automation: Literal["on", "off"] = Field(
        default="off", description="on: the monthly schedule and the landing-zone sensor start running"
    )
    schedule_day: int = Field(
        default=1, ge=1, le=28, description="Day of the month the schedule rates the month just closed"
    )
    schedule_hour: int = Field(default=2, ge=0, le=23, description="Hour of that day")
    schedule_timezone: str = Field(default="UTC", description="Time zone of the schedule")
    sensor_interval_seconds: int = Field(
        default=300, ge=30, le=86400, description="How often the sensor lists the landing zone"
    )
    executor: Literal["in_process", "multiprocess", "celery", "k8s"] = Field(
        default="in_process",
        description=(
            "How a run executes its steps: in one process, a process per step, on Celery workers, or a "
            "Kubernetes job per step"
        ),
    )
    celery_broker: str | None = Field(
        default=None, description="Celery broker URL (required with executor celery), e.g. redis://host:6379/0"
    )
    celery_backend: str | None = Field(default=None, description="Celery result backend URL (default: the broker)")

    @field_validator("schedule_day", "schedule_hour", "sensor_interval_seconds", mode="before")
    @classmethod
    def _whole_number_in_range(cls, value: object, info: ValidationInfo) -> object:
        """A whole number within the field's bounds, the error saying both: 'expected a whole number from 1 to 28'."""
        low, high = _bounds(cls.model_fields[str(info.field_name)])
        number = value.strip() if isinstance(value, str) else value
        if isinstance(number, str) and number.isdigit():
            number = int(number)
        if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
            raise ValueError(f"expected a whole number from {low} to {high}")
        return number

    @field_validator("first_month", "last_month", "earliest_month")
    @classmethod
    def _a_month(cls, value: str | None) -> str | None:
        if value is not None:
            parse_month(value)
        return value

    @field_validator("schedule_timezone")
    @classmethod
    def _a_time_zone(cls, value: str) -> str:
        if TIME_ZONE_NAME.match(value):
            try:
                ZoneInfo(value)
                return value
            except (ZoneInfoNotFoundError, ValueError, OSError):  # unknown, not a zone file, or a folder ('Europe')
                pass
        raise ValueError("not a time zone (IANA name such as Europe/Berlin)")

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_name(cls, value: object) -> object:
        return value.strip().lower().replace("-", "_") if isinstance(value, str) else value

    @model_validator(mode="after")
    def _celery_needs_a_broker(self) -> Settings:
        if self.executor == "celery" and not self.celery_broker:
            raise ValueError("the celery executor needs RATINGS_CELERY_BROKER (e.g. redis://127.0.0.1:6379/0)")
        return self

    @field_validator("automation", mode="before")
    @classmethod
    def _on_or_off(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from RATINGS_* variables (empty means unset); SettingsError naming a wrong variable."""
        environ = os.environ if environ is None else environ
        values = {field: environ[name].strip() for name, field in ENVIRONMENT.items() if environ.get(name, "").strip()}
        try:
            return cls(**values)
        except ValidationError as error:
            variables = {field: name for name, field in ENVIRONMENT.items()}
            problems = "; ".join(
                f"{variables.get(str(e['loc'][0]), e['loc'][0])}={values.get(str(e['loc'][0]), '')!r}: "
                f"{str(e['msg']).removeprefix('Value error, ')}"
                if e["loc"]
                else str(e["msg"]).removeprefix("Value error, ")  # a rule across settings (model validator)
                for e in error.errors()
            )
            raise SettingsError(f"bad setting: {problems}") from None

    @classmethod
    def one_from_env(cls, field: str, environ: Mapping[str, str] | None = None) -> object:
        """One setting from its RATINGS_* variable, the others at their defaults (a wrong other one does not matter)."""
        environ = os.environ if environ is None else environ
        own = {name: value for name, value in environ.items() if ENVIRONMENT.get(name) == field}
        return getattr(cls.from_env(own), field)

    def chains_first_month(
        self,
        landing_first: str,
        stored_first: str | None,
        landing_source: str = "the landing zone's first month holding dumps",
    ) -> tuple[str, str]:
        """The month every scenario's chain starts from the seed list, and where it comes from (named as
        `landing_source` when it is `landing_first`): RATINGS_FIRST_MONTH where set, else the landing zone's first
        month, but not before `stored_first`, the first month of the stored lists. The one home of this rule: the
        Dagster partitions (months_for) and a run and its printed commands (run_plan) start there.
        """
        if self.first_month is not None:
            return self.first_month, "RATINGS_FIRST_MONTH"
        # A stray or mistyped earlier month folder must not restart the chains before their lists.
        if stored_first is not None and landing_first < stored_first:
            return stored_first, "the stored lists' first month"
        return landing_first, landing_source

    def months_for(
        self, held: list[str], current: str | None = None, stored_first: str | None = None
    ) -> tuple[str, str | None]:
        """(first, last) partition months: the settings where given, else the landing zone's `held` months that have
        ended (`current`: the month in progress, default today's, UTC); SettingsError for a RATINGS_LAST_MONTH before
        the first month, or a first month that has not ended (a month is a partition once it has: run_plan).
        Without RATINGS_FIRST_MONTH the first is not before `stored_first`, the first month of the stored lists
        (pipeline.operations.first_month.definitions_months), as if the setting were that month.

        With automation on and no last month the range stays open (up to the last completed month), so
        the schedule finds next month's partition; a UI or a run over a store shows the months it holds.
        """
        current = current or month_of(datetime.datetime.now(datetime.UTC).date())
        ended = [month for month in held if month < current]
        # A landing zone holding only the month in progress shows the month before it: no month is rated yet.
        landing_first = ended[0] if ended else add_months(current, -1) if held else DEFAULT_FIRST_MONTH
        started = stored_first if stored_first is not None and stored_first < current else None
        first, source = self.chains_first_month(landing_first, started, "the landing zone's first month")
        if first >= current:
            raise SettingsError(
                f"bad setting: RATINGS_FIRST_MONTH={first!r}: a month is rated once it has ended, and {current} has "
                f"not (the last month that has is {add_months(current, -1)})"
            )
        if self.last_month is not None and self.last_month < first:
            raise SettingsError(
                f"bad setting: RATINGS_LAST_MONTH={self.last_month!r}: before the first month {first} ({source})"
            )
        if self.last_month is not None or self.automation == "on":
            return first, self.last_month
        last = ended[-1] if ended and ended[-1] >= first else None
        return first, last


# A step on a Redis broker is redelivered to another worker when it runs longer than the visibility
# timeout (Celery's default is one hour); a 17-year chain of one scenario is one step.
CELERY_VISIBILITY_TIMEOUT_SECONDS = 12 * 3600


def celery_config(broker_env: str = "RATINGS_CELERY_BROKER", backend_env: str | None = None) -> dict:
    """The celery_executor's config: what the run and the workers (`dagster-celery worker start -y`) share.

    The broker and result-backend URLs are read from the environment when the executor starts (the
    backend defaults to the broker), so a broker password never lands in a job's config or in the UI.
    """
    return {
        "broker": {"env": broker_env},
        "backend": {"env": backend_env or broker_env},
        "config_source": {
            "broker_transport_options": {
                "max_retries": 3,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
                "visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS,
            },
            "worker_prefetch_multiplier": 1,  # a worker takes one step at a time; the others wait on the queue
        },
    }
