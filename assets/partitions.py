"""Monthly partitions ('YYYY-MM' keys, one per rating period)."""

from __future__ import annotations

import dagster as dg

from pipeline.months import add_months, parse_month

# The rating period key: partition keys are plain 'YYYY-MM' like every month in pipeline/ and the
# object store. Changing the format later would rename every partition, so it is fixed here.
MONTH_FMT = "%Y-%m"

# Month M of an asset depends on month M-1 of the same asset (the rating-list chain).
PREVIOUS_MONTH = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def monthly_partitions(first_month: str, last_month: str | None = None) -> dg.MonthlyPartitionsDefinition:
    """Months first_month..last_month (inclusive); without last_month, up to the last completed month."""
    parse_month(first_month)
    end_date = None
    if last_month is not None:
        parse_month(last_month)
        if last_month < first_month:
            raise ValueError(f"the last month {last_month} is before the first month {first_month}")
        # Dagster's end_date is exclusive: the month after the last one we want.
        end_date = add_months(last_month, 1)
    return dg.MonthlyPartitionsDefinition(start_date=first_month, end_date=end_date, fmt=MONTH_FMT)
