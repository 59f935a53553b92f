"""Period windows for the analyses: calendar years and multi-year windows such as Sonas's 2008-12."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl

from pipeline.months import month_range, parse_month

_YEAR = re.compile(r"^(\d{4})$")
# '2008-12' and '2008-2012' are both years 2008..2012; a two-digit end is the first year from the start that ends so.
_YEARS = re.compile(r"^(\d{4})-(\d{2}|\d{4})$")

# The windows Sonas compared in his 2023 report (docs/analytics.md); a default, not a rule.
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


#: The longest window a two-digit end may name across a century ('1998-02': 4 years).
MAX_CENTURY_CROSSING_YEARS = 20


def parse_window(text: str) -> PeriodWindow:
    """'2019' -> the year; '2008-12' or '2008-2012' -> January 2008 .. December 2012, labelled as written; '1998-02'
    crosses the century (1998 .. 2002).

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
    last = int(end) if len(end) == 4 else first + (int(end) - first % 100) % 100  # '1998-02': 1998..2002
    if last < first:
        raise ValueError(f"window {text!r} ends before it starts")
    # Two digits that cross a century name a short window ('1998-02'); '2012-08' is a slip, not 2012..2108.
    if len(end) == 2 and last // 100 != first // 100 and last - first > MAX_CENTURY_CROSSING_YEARS:
        raise ValueError(f"window {text!r} would end in {last}: write both years in full, e.g. '{first}-{first + 4}'")
    return PeriodWindow(text, f"{first:04d}-01", f"{last:04d}-12")


def years_of(months: Iterable[str]) -> list[PeriodWindow]:
    """One calendar-year window per year that has at least one of the months, in order."""
    return [year_window(year) for year in sorted({parse_month(month)[0] for month in months})]


def frames_in_window(monthly: Mapping[str, pl.DataFrame], window: PeriodWindow) -> list[pl.DataFrame]:
    """The monthly frames (keyed by YYYY-MM) that fall in the window, in month order."""
    return [monthly[month] for month in sorted(monthly) if window.contains(month)]


def covering_windows(months: Iterable[str], named: Iterable[str] = SONAS_WINDOWS) -> list[PeriodWindow]:
    """The `named` windows that overlap the months, plus one window per run of years none of them
    covers (labelled by those years, e.g. '2024' or '2005-2007'), in chronological order.

    Every year with data is in some window, so the last window reaches the latest year. A named
    window keeps its label even where the data covers only part of it (`covered_months` says which).
    """
    months = sorted(set(months))
    if not months:
        return []
    windows = [w for w in map(parse_window, named) if any(w.contains(m) for m in months)]
    uncovered = sorted({parse_month(m)[0] for m in months if not any(w.contains(m) for w in windows)})
    runs: list[list[int]] = []
    for year in uncovered:
        if runs and year == runs[-1][-1] + 1:
            runs[-1].append(year)
        else:
            runs.append([year])
    for run in runs:
        label = f"{run[0]:04d}" if len(run) == 1 else f"{run[0]:04d}-{run[-1]:04d}"
        windows.append(PeriodWindow(label, f"{run[0]:04d}-01", f"{run[-1]:04d}-12"))
    return sorted(windows, key=lambda w: (w.first_month, w.last_month))


def covered_months(window: PeriodWindow, months: Iterable[str]) -> list[str]:
    """The months of `months` inside the window, in order (what a window's page actually covers)."""
    return sorted(m for m in set(months) if window.contains(m))


def describe_coverage(window: PeriodWindow, months: Iterable[str]) -> str:
    """The months a window's page covers, in words: '2017-01 to 2020-12 (48 months)', or, when the data
    covers only part of the window, '2015-01 to 2016-12 only: 24 of the 48 months of 2013-16 (2013-01 to 2016-12)'.
    """
    covered = covered_months(window, months)
    total = len(window.months())
    if not covered:
        return f"no month with data in {window.first_month} to {window.last_month}"
    span = covered[0] if len(covered) == 1 else f"{covered[0]} to {covered[-1]}"
    if len(covered) == total:
        return f"{span} ({total} months)"
    return (
        f"{span} only: {len(covered)} of the {total} months of {window.label} ({window.first_month} to "
        f"{window.last_month})"
    )
