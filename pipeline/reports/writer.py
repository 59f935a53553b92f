"""Writes the report pages, charts and data files under reports/ from the stored monthly tables of an ObjectStore."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.analytics import (
    SONAS_WINDOWS,
    band_trend,
    combine_band_trends,
    combine_crosstables,
    combine_score_curves,
    compare_accuracy,
    january_lists,
    parse_window,
    rating_distributions,
    score_curve,
    years_of,
)
from pipeline.analytics.windows import PeriodWindow
from pipeline.months import add_months
from pipeline.reports.charts import (
    plot_accuracy,
    plot_band_trend,
    plot_rating_distribution,
    plot_score_curves,
)
from pipeline.reports.crosstable_html import render_crosstable_html
from pipeline.reports.index import (
    CROSS_SCENARIO,
    INDEX_NAME,
    REPORTS_PREFIX,
    ReportEntry,
    index_href_from,
    render_index,
    report_path,
)
from pipeline.reports.page import render_table_page
from pipeline.scenarios import Scenario, rate_scenario_month
from pipeline.storage import ObjectStore
from schemas import Games
from schemas.util import empty_frame

# What the score curves and band trends read of rated_games (a third of its bytes).
CURVE_COLUMNS = ["month", "white_score", "white_rating_used", "black_rating_used", "white_expected", "black_expected"]
INDEX_NOTE = "Summary crosstables, curves, distributions and accuracy of every scenario."


def _table(scenario_key: str, table: str, month: str) -> str:
    return ObjectStore.table_key(f"{scenario_key}/{table}", month)


def stored_months(store: ObjectStore, asset_path: Sequence[str], months: Sequence[str]) -> list[str]:
    """The months of `months` for which a table is in the store, in order."""
    return [m for m in months if store.exists(ObjectStore.table_key("/".join(asset_path), m))]


def windows_for(months: list[str]) -> list[PeriodWindow]:
    """Sonas's windows that overlap the data, or the whole span as one window when none does."""
    windows = [w for w in map(parse_window, SONAS_WINDOWS) if any(w.contains(m) for m in months)]
    return windows or [PeriodWindow(f"{months[0]}..{months[-1]}", months[0], months[-1])]


def store_report(store: ObjectStore, relative: str, data: bytes | str | pl.DataFrame) -> None:
    """Write one report file under reports/: a table as Parquet, a page as UTF-8 text, a chart as bytes."""
    target = f"{REPORTS_PREFIX}/{relative}"
    if isinstance(data, pl.DataFrame):
        store.write_parquet(data, target)
    else:
        store.write_bytes(data.encode("utf-8") if isinstance(data, str) else data, target)


def write_scenario_reports(store: ObjectStore, scenario: Scenario, months: list[str]) -> list[str]:
    """Every page, chart and data file of one scenario; returns their paths relative to reports/."""
    key, name = scenario.key, scenario.name
    written: list[str] = []

    def put(relative: str, data: bytes | str | pl.DataFrame) -> None:
        store_report(store, relative, data)
        written.append(relative)

    crosstables = {m: store.read_parquet(_table(key, "crosstable", m)) for m in months}
    curves, trends = {}, []
    for month in months:
        games = store.read_parquet(_table(key, "rated_games", month), columns=CURVE_COLUMNS)
        curves[month] = score_curve(games, month)
        trends.append(band_trend(games))

    for window in [*years_of(months), *windows_for(months)]:
        in_window = [m for m in months if window.contains(m)]
        table = combine_crosstables([crosstables[m] for m in in_window], window.label)
        page = report_path(name, "crosstable", window.label, "html")
        put(report_path(name, "crosstable", window.label, "parquet"), table)
        rules = ", ".join(sorted({scenario.rules_for(m).name for m in in_window}))
        put(page, render_crosstable_html(table, name, rules, period=window.label, back_href=index_href_from(page)))

    span = f"{months[0][:4]}-{months[-1][:4]}"
    windowed = pl.concat([combine_score_curves([curves[m] for m in months if w.contains(m)], w.label) for w in windows_for(months)])
    put(report_path(name, "score-curves", span, "parquet"), windowed)
    put(report_path(name, "score-curves", span, "png"), plot_score_curves(windowed, f"{name}: favourite's score vs rating advantage"))
    trend = combine_band_trends(trends)
    put(report_path(name, "band-trend", span, "parquet"), trend)
    put(report_path(name, "band-trend", span, "png"), plot_band_trend(trend, f"{name}: band vs band by year"))

    januaries = {label: store.read_parquet(_table(key, "rating_list", m)) for label, m in january_lists(months).items()}
    if januaries:
        distribution = rating_distributions(januaries)
        put(report_path(name, "rating-distribution", "january-lists", "parquet"), distribution)
        put(report_path(name, "rating-distribution", "january-lists", "png"),
            plot_rating_distribution(distribution, f"{name}: January lists", value="share_pct"))
    for event in scenario.events:
        if event.compress is not None and event.after in months:
            before, after = list_before_and_after(store, scenario, event.after)
            distribution = rating_distributions({f"{event.after} before compression": before, f"{event.after} after compression": after})
            label = f"compression-{event.after}"
            put(report_path(name, "rating-distribution", label, "parquet"), distribution)
            put(report_path(name, "rating-distribution", label, "png"),
                plot_rating_distribution(distribution, f"{name}: the list of {event.after} before and after compression"))
    return written


def list_before_and_after(store: ObjectStore, scenario: Scenario, month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The list of an event month before its one-time events (re-rated from the stored M-1) and as stored."""
    after = store.read_parquet(_table(scenario.key, "rating_list", month))
    previous_key = _table(scenario.key, "rating_list", add_months(month, -1))
    if not store.exists(previous_key):
        return after, after

    def games_of(m: str) -> pl.DataFrame:
        key = ObjectStore.table_key("games", m)
        return store.read_parquet(key) if store.exists(key) else empty_frame(Games)

    no_events = scenario.model_copy(update={"events": ()})
    before = rate_scenario_month(no_events, store.read_parquet(previous_key), games_of, month).rating_list
    return before, after


def write_accuracy_comparison(store: ObjectStore, monthly: pl.DataFrame, baseline: str | None) -> pl.DataFrame:
    """The scenarios' accuracy side by side under reports/all-scenarios/ (data, monthly chart, table page); returns the comparison."""
    comparison = compare_accuracy(monthly, baseline=baseline)
    span = f"{monthly['month'].min()[:4]}-{monthly['month'].max()[:4]}"
    page = report_path(CROSS_SCENARIO, "accuracy-comparison", span, "html")
    for relative, data in (
        (report_path(CROSS_SCENARIO, "accuracy-comparison", span, "parquet"), comparison),
        (report_path(CROSS_SCENARIO, "accuracy", span, "parquet"), monthly),
        (report_path(CROSS_SCENARIO, "accuracy", span, "png"), plot_accuracy(monthly)),
        (page, render_table_page(comparison, "Predictive accuracy by scenario",
                                 caption=f"Months {span}; baseline {baseline}", back_href=index_href_from(page))),
    ):
        store_report(store, relative, data)
    return comparison


def write_report_index(store: ObjectStore) -> list[ReportEntry]:
    """reports/index.html linking every <scenario>/<kind>/<period>.<ext> file under reports/; returns its entries."""
    entries = []
    for path in store.list_files(REPORTS_PREFIX):
        relative = path[len(REPORTS_PREFIX) + 1:]
        parts = relative.split("/")
        if len(parts) == 3 and "." in parts[2]:
            entries.append(ReportEntry(scenario=parts[0], kind=parts[1], period=parts[2].rsplit(".", 1)[0], href=relative))
    store.write_text(render_index(entries, note=INDEX_NOTE), REPORTS_PREFIX, INDEX_NAME)
    return entries
