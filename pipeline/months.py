"""Month arithmetic on YYYY-MM strings, the rating-period keys used everywhere."""

from __future__ import annotations

import re
from datetime import date

import polars as pl

#: A rating period key, YYYY-MM: the one spelling of a month folder and a partition.
MONTH_PATTERN = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def parse_month(month: str) -> tuple[int, int]:
    """'2024-03' -> (2024, 3); raises ValueError with the offending text otherwise."""
    match = MONTH_PATTERN.match(month or "")
    if not match:
        raise ValueError(f"not a month in YYYY-MM form: {month!r}")
    return int(match.group(1)), int(match.group(2))


def month_index(month: str) -> int:
    """Months since year 0, so that differences count months."""
    year, mon = parse_month(month)
    return year * 12 + mon - 1


def month_from_index(index: int) -> str:
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def add_months(month: str, n: int) -> str:
    return month_from_index(month_index(month) + n)


def month_range(start: str, end: str) -> list[str]:
    """Inclusive list of months from start to end."""
    first, last = month_index(start), month_index(end)
    if last < first:
        raise ValueError(f"end month {end} is before start month {start}")
    return [month_from_index(i) for i in range(first, last + 1)]


def first_day(month: str) -> date:
    year, mon = parse_month(month)
    return date(year, mon, 1)


def is_december(month: str) -> bool:
    """A year's last list: the yearly pool-health tables (cohort drift, group truth) are made from it alone."""
    return month.endswith("-12")


def month_of(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


# -- the same arithmetic on Polars columns --------------------------------------------------------------------------
def month_index_of(month: pl.Expr) -> pl.Expr:
    """month_index of YYYY-MM texts (Int64); text that is no month (MONTH_PATTERN) is to be told apart by the caller."""
    return (
        month.str.slice(0, 4).cast(pl.Int64, strict=False) * 12 + month.str.slice(5, 2).cast(pl.Int64, strict=False) - 1
    )


def month_index_of_day(day: pl.Expr) -> pl.Expr:
    """The month index (month_index) of each Date's month, as Int32."""
    return day.dt.year().cast(pl.Int32) * 12 + day.dt.month().cast(pl.Int32) - 1


def month_label(index: pl.Expr) -> pl.Expr:
    """month_from_index of month indices: 'YYYY-MM', the year padded to four digits."""
    return pl.concat_str(
        (index // 12).cast(pl.Utf8).str.zfill(4), pl.lit("-"), (index % 12 + 1).cast(pl.Utf8).str.zfill(2)
    )


def month_start(index: pl.Expr) -> pl.Expr:
    """first_day of month indices: the 1st of each month as a Date."""
    return pl.date((index // 12).cast(pl.Int32), (index % 12 + 1).cast(pl.Int8), 1)
