"""Monthly partitions ('YYYY-MM' keys, one per rating period), from arguments or the environment."""

from __future__ import annotations

import os

import dagster as dg

from pipeline.months import add_months, parse_month

FIRST_MONTH_ENV = "RATINGS_FIRST_MONTH"
LAST_MONTH_ENV = "RATINGS_LAST_MONTH"
DEFAULT_FIRST_MONTH = "2015-01"

# The rating period key: partition keys are plain 'YYYY-MM' like every month in pipeline/ and the
# object store. Changing the format later would rename every partition, so it is fixed here.
MONTH_FMT = "%Y-%m"

# Month M of an asset depends on month M-1 of the same asset (the rating-list chain).
PREVIOUS_MONTH = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def monthly_partitions(first_month: str = DEFAULT_FIRST_MONTH, last_month: str | None = None) -> dg.MonthlyPartitionsDefinition:
    """Months first_month..last_month (inclusive); without last_month, up to the last completed month."""
    parse_month(first_month)
    end_date = None
    if last_month is not None:
        parse_month(last_month)
        if last_month < first_month:
            raise ValueError(f"{LAST_MONTH_ENV}={last_month} is before {FIRST_MONTH_ENV}={first_month}")
        # Dagster's end_date is exclusive: the month after the last one we want.
        end_date = add_months(last_month, 1)
    return dg.MonthlyPartitionsDefinition(start_date=first_month, end_date=end_date, fmt=MONTH_FMT)


def months_from_env() -> tuple[str, str | None]:
    """(first, last) months from RATINGS_FIRST_MONTH (default 2015-01) and RATINGS_LAST_MONTH (optional)."""
    first = os.environ.get(FIRST_MONTH_ENV) or DEFAULT_FIRST_MONTH
    last = os.environ.get(LAST_MONTH_ENV) or None
    return first, last
