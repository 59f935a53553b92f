"""Period windows for the analyses: calendar years and multi-year windows such as Sonas's 2008-12."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl

from pipeline.months import month_range, parse_month

_YEAR = re.compile(r"^(\d{4})$")
# '2008-12' and '2008-2012' are both years 2008..2012; the two-digit end inherits the century.
_YEARS = re.compile(r"^(\d{4})-(\d{2}|\d{4})$")

# The windows Sonas compared in his 2023 report (PRODUCT.md 4); a default, not a rule.
SONAS_WINDOWS = ("2008-12", "2013-16", "2017-20", "2021-23")


@dataclass(frozen=True)
class PeriodWindow:
    """A labelled, inclusive range of rating periods (months)."""

    label: str
    first_month: str
    last_month: str

    def __post_init__(self) -> None:
        parse_month(self.first_month)
        parse_month(self.last_month)
        if self.last_month < self.first_month:
            raise ValueError(f"window {self.label!r} ends ({self.last_month}) before it starts ({self.first_month})")

    def months(self) -> list[str]:
        return month_range(self.first_month, self.last_month)

    def contains(self, month: str) -> bool:
        # YYYY-MM strings sort chronologically.
        return self.first_month <= month <= self.last_month


def year_window(year: int) -> PeriodWindow:
    """The calendar year as a window labelled '2019'."""
    return PeriodWindow(f"{year:04d}", f"{year:04d}-01", f"{year:04d}-12")


def parse_window(text: str) -> PeriodWindow:
    """'2019' -> the year; '2008-12' or '2008-2012' -> January 2008 .. December 2012, labelled as written.

    Windows are whole years, so '2008-12' is read as years (Sonas's notation), never as a month.
    """
    text = text.strip()
    if match := _YEAR.match(text):
        return year_window(int(match.group(1)))
    match = _YEARS.match(text)
    if not match:
        raise ValueError(f"not a year window such as '2019', '2008-12' or '2008-2012': {text!r}")
    first = int(match.group(1))
    end = match.group(2)
    last = int(end) if len(end) == 4 else (first // 100) * 100 + int(end)
    if last < first:
        raise ValueError(f"window {text!r} ends before it starts")
    return PeriodWindow(text, f"{first:04d}-01", f"{last:04d}-12")


def years_of(months: Iterable[str]) -> list[PeriodWindow]:
    """One calendar-year window per year that has at least one of the months, in order."""
    return [year_window(year) for year in sorted({parse_month(month)[0] for month in months})]


def frames_in_window(monthly: Mapping[str, pl.DataFrame], window: PeriodWindow) -> list[pl.DataFrame]:
    """The monthly frames (keyed by YYYY-MM) that fall in the window, in month order."""
    return [monthly[month] for month in sorted(monthly) if window.contains(month)]
