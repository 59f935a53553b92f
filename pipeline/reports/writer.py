"""Writes the report pages, charts and data files under reports/ from the stored monthly tables of an ObjectStore."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

import polars as pl

from pipeline.analytics import (
    DISTRIBUTION_COLUMNS,
    accuracy_on_common_sides,
    combine_band_trends,
    combine_crosstables,
    combine_score_curves,
    compare_accuracy,
    covered_months,
    covering_windows,
    describe_coverage,
    january_lists,
    rating_distributions,
    years_of,
)
from pipeline.analytics.monthly import MONTHLY_ANALYSES
from pipeline.analytics.previews import crosstable_markdown
from pipeline.analytics.windows import PeriodWindow
from pipeline.months import is_december
from pipeline.operations.instance_dirs import location_commands
from pipeline.publish.lists import LISTS_PREFIX, list_command, readable_list_months
from pipeline.reports.accuracy_page import render_accuracy_page
from pipeline.reports.chart_pages import render_band_trend_page, render_distribution_page, render_score_curves_page
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
from pipeline.reports.pool_health import (
    drift_side_by_side,
    index_side_by_side,
    render_drift_comparison_page,
    render_pool_health_page,
    yearly_index,
    yearly_ledger,
    yearly_residuals,
)
from pipeline.scenarios.chain import FLOWS, LEDGER
from pipeline.scenarios.ledger import CHANNELS
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.recalculation import stands_as_stored
from pipeline.store.kept import BEFORE_EVENTS_COLUMNS, list_before_events
from pipeline.store.monthly import Model, read_stored_months, stored_table_months
from pipeline.store.object_store import TEMP_MARK, ObjectStore, is_safe_part, redact_url
from pipeline.text import CommandLines, Placeholder
from schemas import Accuracy, PointsFlow, PointsLedger, YearlyDrift
from schemas.util import empty_frame

# The report assets as the UI describes them (assets/report.py), beside the writers of what they describe.
REPORTS_DESCRIPTION = """Pages and charts of scenario `{name}` under `reports/{name}/` in the object store.

Summary crosstables per calendar year and per window (HTML laid out like Sonas's tables, plus the
data), favourite's score vs rating advantage by window, band-vs-band trend by year, the rating
distribution of each January list and, where the scenario compresses ratings, before and after.
Rebuilt from the stored monthly tables; linked from `reports/index.html`."""

COMPARISON_DESCRIPTION = """Predictive accuracy of every scenario of the baseline's list side by side (`actual`, \
else the scenarios file's first: scenarios.model.baseline_name): pooled errors and the share of months each beats the \
baseline (a rapid or blitz list predicts other games: it is not compared here).

Written to `reports/all-scenarios/` as data, a table page and a monthly chart."""

POOL_HEALTH_DESCRIPTION = """The stable cohort's drift of every scenario side by side: the median yearly rating \
change of the steadily active adults aged 25-45 on each scenario's December lists, and on generated data their true \
change.

Did a repair stop the drift, and when. Written to `reports/all-scenarios/pool-health/` as data, a chart and a page."""

INDEX_DESCRIPTION = """`reports/index.html`: every page, chart and data file under `reports/`, by scenario and period.

Relative links only, so the folder can be copied and read offline."""

INDEX_NOTE = "Summary crosstables, curves, distributions and accuracy of every scenario."


def _table(scenario_key: str, table: str, month: str) -> str:
    return ObjectStore.table_key(f"{scenario_key}/{table}", month)


def windows_for(months: list[str]) -> list[PeriodWindow]:
    """Sonas's windows that overlap the data plus windows labelled by their years for the years none
    covers, in chronological order: the last window reaches the latest year with data.
    """
    return covering_windows(months)


def year_span(months: Sequence[str]) -> str:
    """'2015-2024' for the years of sorted months ('2024-2024' for one year: the names others read)."""
    return f"{months[0][:4]}-{months[-1][:4]}"


def store_report(store: ObjectStore, relative: str, data: bytes | str | pl.DataFrame) -> None:
    """Write one report file under reports/: a table as Parquet, a page as UTF-8 text, a chart as bytes."""
    target = f"{REPORTS_PREFIX}/{relative}"
    if isinstance(data, pl.DataFrame):
        store.write_parquet(data, target)
    else:
        store.write_bytes(data.encode("utf-8") if isinstance(data, str) else data, target)


#: The monthly analyses a scenario's pages read, and of them those the pool-health page over every scenario reads.
POOL_HEALTH_ANALYSES = ("cohort_drift", "deflation_index")
REPORTED_ANALYSES = (
    "crosstable",
    "score_curve",
    "band_trend",
    *POOL_HEALTH_ANALYSES,
    "group_truth",
    "federation_residuals",
)


def drawn_chart(
    store: ObjectStore,
    relative: str,
    data: pl.DataFrame,
    draw: Callable[[], bytes],
    *labels: str,
) -> bytes:
    """The chart under reports/`relative` drawn from `data` and `labels` by `draw`: the stored one where its stamp
    (charts.chart_stamp) says it was drawn from the same, else drawn now and stamped. Drawing is most of a monthly
    run's report pages (a 17-panel chart of January lists is over a CPU-second); most charts do not change.
    """
    # The charts' module here, not at the top: it loads matplotlib (0.4-0.6 CPU-s), which a process that writes no
    # report never needs (the shared tables' and each chain's worker process import this module with the definitions).
    from pipeline.reports.charts import chart_stamp, stamp_of, stamped

    stamp = chart_stamp(data, *labels)
    target = f"{REPORTS_PREFIX}/{relative}"
    if store.exists(target):
        stored = store.read_bytes(target)
        if stamp_of(stored) == stamp:
            return stored
    return stamped(draw(), stamp)


def write_scenario_reports(
    store: ObjectStore, scenario: Scenario, months: list[str], warn: Callable[[str], None] | None = None
) -> list[str]:
    """Every page, chart and data file of one scenario; returns their paths relative to reports/. `warn` is told
    what a page lacks, in the run's words (put_compression_page).
    """
    key = name = scenario.name
    written: list[str] = []

    def put(relative: str, data: bytes | str | pl.DataFrame) -> None:
        store_report(store, relative, data)
        written.append(relative)

    # The months' sums, made by the analyse stage (pipeline.analytics.monthly): a few hundred rows each. A month an
    # older version rated may lack one (it made no score curve): the pages rest on the others and say so.
    crosstables, curves, trends = (
        read_stored_months(store, [key, table], months, TABLE_MODELS[table]) for table in PAGE_ANALYSES
    )
    lacking = {
        table: [m for m in months if m not in held]
        for table, held in zip(PAGE_ANALYSES, (crosstables, curves, trends), strict=True)
    }
    page_note = lacking_note(lacking, _page_commands(store))
    if page_note and warn is not None:
        warn(f"{name}: {lacking_note(lacking, location_commands(store))}")

    # Pages rest on the months with games: a year or window without any gets no page at all, so
    # the index never links an empty one.
    with_games = [m for m in crosstables if crosstables[m].height]
    # Each month's rule set named once: a month is in a year's page and a window's, and a name resolves the rule set.
    rule_names = {m: scenario.rules_name(m) for m in with_games}
    for window in [*years_of(with_games), *windows_for(with_games)]:
        in_window = covered_months(window, with_games)
        table = combine_crosstables([crosstables[m] for m in in_window], window.label)
        page = report_path(name, "crosstable", window.label, "html")
        put(report_path(name, "crosstable", window.label, "parquet"), table)
        rules = ", ".join(sorted({rule_names[m] for m in in_window}))
        put(
            page,
            render_crosstable_html(
                table,
                name,
                rules,
                period=window.label,
                back_href=index_href_from(page),
                window=window,
                months=in_window,
                note=page_note,
            ),
        )

    curve_months = [m for m in curves if curves[m].height]
    # The years the curves rest on, not the stored months: no label promises years without games.
    span = year_span(curve_months) if curve_months else ""
    if curve_months:
        windows = windows_for(curve_months)
        windowed = pl.concat(
            [combine_score_curves([curves[m] for m in curve_months if w.contains(m)], w.label) for w in windows]
        )
        page = report_path(name, "score-curves", span, "html")
        put(report_path(name, "score-curves", span, "parquet"), windowed)
        chart, title = report_path(name, "score-curves", span, "png"), f"{name}: favourite's score vs rating advantage"
        from pipeline.reports.charts import plot_score_curves  # matplotlib where a chart is drawn (drawn_chart)

        put(chart, drawn_chart(store, chart, windowed, lambda: plot_score_curves(windowed, title), title))
        coverage = {w.label: describe_coverage(w, curve_months) for w in windows}
        back = index_href_from(page)
        put(page, render_score_curves_page(windowed, name, f"{span}.png", coverage, back_href=back, note=page_note))
    trend = combine_band_trends(list(trends.values()))
    if trend.height:
        page = report_path(name, "band-trend", span, "html")
        put(report_path(name, "band-trend", span, "parquet"), trend)
        chart, title = report_path(name, "band-trend", span, "png"), f"{name}: band vs band by year"
        from pipeline.reports.charts import plot_band_trend  # matplotlib where a chart is drawn (drawn_chart)

        put(chart, drawn_chart(store, chart, trend, lambda: plot_band_trend(trend, title), title))
        back = index_href_from(page)
        put(page, render_band_trend_page(trend, name, f"{span}.png", curve_months, back_href=back, note=page_note))

    put_pool_health(store, put, scenario, months)

    january = january_lists(months)
    # Only the columns a distribution counts: 17 whole January lists held 0.5 GB for the fide-scale history.
    januaries = {
        label: store.read_parquet(_table(key, "rating_list", m), columns=DISTRIBUTION_COLUMNS)
        for label, m in january.items()
    }
    distribution = rating_distributions(januaries) if januaries else None
    if distribution is not None and distribution.height:
        put_distribution(store, put, name, "january-lists", distribution, "January lists", january, "share_pct")
    for event in scenario.events:
        if event.compress is not None and event.after in months:
            put_compression_page(store, put, scenario, event.after, warn)
    for path in store.list_files(FORMER_REPORT_INPUTS, name):
        store.remove(path)
    remove_stale_reports(store, name, written)
    return written


#: The monthly analyses the crosstable, score-curve and band-trend pages rest on.
PAGE_ANALYSES = ("crosstable", "score_curve", "band_trend")


def lacking_note(lacking: dict[str, list[str]], commands: CommandLines) -> str | None:
    """What the pages lack (`lacking`: table -> the months of the reports not stored, as an older version rated them
    without it) and the run that makes them; None when nothing is lacking.
    """
    parts = [f"{table} of {_months_named(missing)}" for table, missing in lacking.items() if missing]
    if not parts:
        return None
    every = sorted({month for missing in lacking.values() for month in missing})
    command = commands.ratings("run", "--from", every[0], "--to", every[-1])
    return (
        f"These pages rest on the stored months alone: {'; '.join(parts)} are not stored (rated by a version that did "
        f"not make them). Make them: {command}"
    )


def _months_named(months: Sequence[str]) -> str:
    """'2024-04' or '3 months, 2023-01..2024-04'."""
    return months[0] if len(months) == 1 else f"{len(months)} months, {months[0]}..{months[-1]}"


def _page_commands(store: ObjectStore) -> CommandLines:
    """The commands a page names: those of the run (location_commands) with placeholders for the store and, when the
    run was given them, its scenarios file and instance, so that the page's bytes are the same wherever the store is
    (and a URL can be private).
    """
    run = location_commands(store)
    scenarios = Placeholder("<the run's scenarios file>") if run.scenarios else None
    home = Placeholder("<the run's Dagster home>") if run.dagster_home else None
    return CommandLines(Placeholder("<this store>"), scenarios, home)


def report_figures(
    store: ObjectStore, scenario: Scenario, months: list[str], written: list[str]
) -> tuple[dict[str, int | str], dict[str, str]]:
    """What the UI shows of a scenario's reports: the counts and the index's address, and as Markdown the latest
    year's crosstable and the pages and charts written.
    """
    year = years_of(months)[-1].label
    key = f"{REPORTS_PREFIX}/{report_path(scenario.name, 'crosstable', year, 'parquet')}"
    latest = crosstable_markdown(store.read_parquet(key)) if store.exists(key) else None
    pages = "\n".join(f"- `{path}`" for path in written if path.endswith((".html", ".png")))
    figures: dict[str, int | str] = {
        "files": len(written),
        "months": len(months),
        "index": redact_url(store.url(REPORTS_PREFIX, INDEX_NAME)),
    }
    # No crosstable page when no game of the year was rated for both players.
    return figures, {f"crosstable_{year}": latest or "_No game was rated for both players._", "pages": pages}


def stored_accuracy(store: ObjectStore, scenarios: Sequence[str], months: Sequence[str]) -> pl.DataFrame | None:
    """Every stored accuracy month of the scenarios as one frame (None when none is stored)."""
    frames = [frame for name in scenarios if (frame := stored_frames(store, name, "accuracy", months)) is not None]
    return pl.concat(frames) if frames else None


#: The model of each monthly table the pages read over several months: every month is read as it says, so a month an
#: older version wrote (group_truth's points were integers) concatenates with the others.
TABLE_MODELS: dict[str, Model] = {
    **{analysis.table: analysis.model for analysis in MONTHLY_ANALYSES},
    LEDGER: PointsLedger,
    FLOWS: PointsFlow,
}


def stored_frames(store: ObjectStore, scenario: str, table: str, months: Sequence[str]) -> pl.DataFrame | None:
    """The stored months of a scenario's monthly table as one frame, each month read as its model says (TABLE_MODELS;
    None when none is stored).
    """
    frames = read_stored_months(store, [scenario, table], months, TABLE_MODELS[table])
    # Concatenated as read, one chunk a month: a sum over the months then adds in the order it always did.
    return pl.concat(frames.values()) if frames else None


def put_pool_health(
    store: ObjectStore,
    put: Callable[[str, bytes | str | pl.DataFrame], None],
    scenario: Scenario,
    months: list[str],
) -> None:
    """The scenario's pool-health page (pipeline.reports.pool_health): its ledger by year with its chart, the stable
    cohort's drift, the Deflation Index, the ledger's groups against the truth, the federations' residuals and the
    flows between groups of every year; none without a ledger or a drift. The yearly tables beside it as Parquet.
    """
    name = scenario.name
    ledgers = stored_frames(store, name, LEDGER, months)
    drift = stored_frames(store, name, "cohort_drift", [m for m in months if is_december(m)])
    drift = drift if drift is not None else empty_frame(YearlyDrift)
    if ledgers is None and not drift.height:
        return
    span = year_span(months)
    page = report_path(name, "pool-health", span, "html")
    yearly, chart = None, None
    if ledgers is not None:
        yearly = yearly_ledger(ledgers)
        put(report_path(name, "pool-health", span, "parquet"), yearly)
        chart = report_path(name, "pool-health", span, "png")
        title = f"{name}: where the pool's rating points came from and went, by year"
        channels = list(CHANNELS)
        from pipeline.reports.charts import plot_pool_ledger  # matplotlib where a chart is drawn (drawn_chart)

        put(chart, drawn_chart(store, chart, yearly, lambda: plot_pool_ledger(yearly, channels, title), title))
    indexes = stored_frames(store, name, "deflation_index", months)
    index = yearly_index(indexes) if indexes is not None else None
    groups = stored_frames(store, name, "group_truth", [m for m in months if is_december(m)])
    residuals = stored_frames(store, name, "federation_residuals", months)
    residuals = yearly_residuals(residuals) if residuals is not None else None
    for label, table in (("groups", groups), ("federations", residuals)):
        if table is not None:
            put(report_path(name, f"pool-health-{label}", span, "parquet"), table)
    flows = stored_frames(store, name, FLOWS, months) if ledgers is not None else None
    png = posixpath.basename(chart) if chart else None
    html = render_pool_health_page(
        name, yearly, drift, index, flows, png, months, index_href_from(page), residuals, groups
    )
    put(page, html)


def write_drift_comparison(store: ObjectStore, scenarios: Sequence[str], months: Sequence[str]) -> str | None:
    """The stable cohort's drift of every scenario side by side under reports/all-scenarios/pool-health/ (data,
    chart, page); returns the page's path relative to reports/, None when no scenario has a drift.
    """
    decembers = [m for m in months if is_december(m)]
    drifts = {
        name: frame
        for name in scenarios
        if (frame := stored_frames(store, name, "cohort_drift", decembers)) is not None
    }
    table = drift_side_by_side(drifts)
    if not table.height:
        return None
    span = f"{table['year'][0]}-{table['year'][-1]}"
    page = report_path(CROSS_SCENARIO, "pool-health", span, "html")
    chart = report_path(CROSS_SCENARIO, "pool-health", span, "png")
    title = "The stable cohort's median yearly rating change, by scenario"
    from pipeline.reports.charts import plot_cohort_drift  # matplotlib where a chart is drawn (drawn_chart)

    store_report(store, report_path(CROSS_SCENARIO, "pool-health", span, "parquet"), table)
    store_report(store, chart, drawn_chart(store, chart, table, lambda: plot_cohort_drift(table, title), title))
    stored_indexes = {name: stored_frames(store, name, "deflation_index", months) for name in scenarios}
    indexes = index_side_by_side({name: yearly_index(f) for name, f in stored_indexes.items() if f is not None})
    html = render_drift_comparison_page(table, posixpath.basename(chart), index_href_from(page), indexes)
    store_report(store, page, html)
    return page


def put_distribution(
    store: ObjectStore,
    put: Callable[[str, bytes | str | pl.DataFrame], None],
    scenario: str,
    label: str,
    distribution: pl.DataFrame,
    title: str,
    lists: dict[str, str],
    value: str,
    note: str | None = None,
) -> None:
    """The data, chart (one panel per list: drawn_chart) and page of a rating distribution, with `note` on the page."""
    page = report_path(scenario, "rating-distribution", label, "html")
    put(report_path(scenario, "rating-distribution", label, "parquet"), distribution)
    chart, heading = report_path(scenario, "rating-distribution", label, "png"), f"{scenario}: {title}"
    from pipeline.reports.charts import plot_rating_distribution  # matplotlib where a chart is drawn (drawn_chart)

    put(
        chart,
        drawn_chart(
            store,
            chart,
            distribution,
            lambda: plot_rating_distribution(distribution, heading, value),
            heading,
            value,
        ),
    )
    put(
        page,
        render_distribution_page(
            distribution, scenario, title, f"{label}.png", lists, back_href=index_href_from(page), note=note
        ),
    )


def remove_stale_reports(store: ObjectStore, scenario: str, written: Sequence[str]) -> None:
    """Delete the scenario's report files this run did not write (e.g. a page of a year that has no
    game any more, or one an older version wrote), so the index never links them.
    """
    keep = {f"{REPORTS_PREFIX}/{path}" for path in written}
    for path in store.list_files(REPORTS_PREFIX, scenario):
        # Another writer's temporary file is not a report: its rename must still find it.
        if path not in keep and TEMP_MARK not in path:
            store.remove(path)


#: Where older versions kept what the compression page's list, rated again, was made from: removed when met.
FORMER_REPORT_INPUTS = "kept/reports"

#: What the compression page says when the list before the compression is not kept (kept.list_before_events).
BEFORE_NOT_KEPT = (
    "The list of {month} before the compression is not kept: the chain keeps it when it rates the month, and this "
    "month was rated by a version that did not, or its record under kept/rate/ was deleted. Rate the month again to "
    "draw it beside the list after: {command}"
)
#: What it says when rating the month again would keep nothing: its stored list stands (LateReports.keeps).
BEFORE_NOT_DRAWN = (
    "The list of {month} before the compression is not kept, and cannot be drawn: the chain keeps it when it rates "
    "the month, this month was rated by a version that did not, and its stored list stands as it is under the "
    "scenario's recalculation policy (a game it rated is given otherwise or gone now), so a run of the month rates "
    "nothing again and keeps nothing"
)


def put_compression_page(
    store: ObjectStore,
    put: Callable[[str, bytes | str | pl.DataFrame], None],
    scenario: Scenario,
    month: str,
    warn: Callable[[str], None] | None = None,
) -> None:
    """The rating distributions of the event month's list before and after its compression (list_before_and_after).
    When the list before is not kept, the list after alone, the page and `warn` saying so and how to get it: the
    month rated again outside the chain would not be the list compressed.
    """
    before, after = list_before_and_after(store, scenario, month)
    label = f"compression-{month}"
    lists = {f"{month} before compression": before, f"{month} after compression": after}
    title, note = f"The list of {month} before and after compression", None
    if before is None:
        title = f"The list of {month} after compression"
        rerun = ("run", "--from", month, "--to", month)
        chain_start = stored_table_months(store, [scenario.name, "rating_list"])[0]
        if stands_as_stored(store, scenario, month, chain_start):
            note = where = BEFORE_NOT_DRAWN.format(month=month)
        else:
            note = BEFORE_NOT_KEPT.format(month=month, command=_page_commands(store).ratings(*rerun))
            where = BEFORE_NOT_KEPT.format(month=month, command=location_commands(store).ratings(*rerun))
        if warn is not None:
            warn(f"{scenario.name}: the compression page shows the list after the compression alone. {where}")
    drawn = {name: frame for name, frame in lists.items() if frame is not None}
    distribution = rating_distributions(drawn)
    if distribution.height:
        periods = dict.fromkeys(drawn, month)
        put_distribution(store, put, scenario.name, label, distribution, title, periods, "players", note)


def list_before_and_after(
    store: ObjectStore, scenario: Scenario, month: str
) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """The list of an event month before its one-time events as the chain kept it (None when it is not kept for the
    stored list: kept.list_before_events) and as stored.
    """
    after = store.read_parquet(_table(scenario.name, "rating_list", month), columns=LIST_COLUMNS)
    return list_before_events(store, scenario.name, month, after), after


#: What the compression page reads of the stored list: the distribution's columns and what the kept list goes with.
LIST_COLUMNS = list(dict.fromkeys([*BEFORE_EVENTS_COLUMNS, *DISTRIBUTION_COLUMNS]))


# What the accuracy reads of rated_games.
ACCURACY_COLUMNS = ["game_id", "white_id", "black_id", "white_score", "white_expected", "black_expected"]


#: The monthly table of each compared scenario's accuracy on the games they all rated (assets/report.py).
COMMON_ACCURACY = "common_accuracy"


def common_games_accuracy(store: ObjectStore, scenarios: Sequence[str], months: Sequence[str]) -> pl.DataFrame:
    """Accuracy rows (per month and scenario) on the sides of games every one of `scenarios` predicted that month
    (accuracy_on_common_sides); a month one of them has not rated has none.
    """
    rows = []
    for month in months:
        stored = {name: _table(name, "rated_games", month) for name in scenarios}
        frames = {
            name: store.read_parquet(t, columns=ACCURACY_COLUMNS) for name, t in stored.items() if store.exists(t)
        }
        if not frames:
            continue
        template = next(iter(frames.values())).clear()
        rows.append(accuracy_on_common_sides({name: frames.get(name, template) for name in scenarios}, month))
    return pl.concat(rows) if rows else empty_frame(Accuracy)


def write_accuracy_comparison(
    store: ObjectStore,
    monthly: pl.DataFrame,
    baseline: str | None,
    stored: Sequence[str] | None = None,
    common: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The scenarios' accuracy side by side under reports/all-scenarios/ (data, monthly chart, page); returns the
    comparison.

    With `stored` (the scenarios of `monthly` whose rated_games are in the store) the comparison is computed on
    the games every scenario rated: `common` where given (the stored COMMON_ACCURACY months), else read from
    their rated_games; `monthly` (each scenario on its own games) is shown beside it for context.
    Nothing is written when no game was predicted.
    """
    months = sorted(monthly["month"].unique().to_list())
    names = monthly["scenario"].unique(maintain_order=True).to_list()
    if common is None:
        common = common_games_accuracy(store, [name for name in names if name in stored], months) if stored else monthly
    comparison = compare_accuracy(common, baseline=baseline)
    # Labelled by the years with predicted games, not by every stored month.
    predicted = sorted(common.filter(pl.col("games") > 0)["month"].unique().to_list()) or months
    span = year_span(predicted)
    page = report_path(CROSS_SCENARIO, "accuracy-comparison", span, "html")
    chart = report_path(CROSS_SCENARIO, "accuracy", span, "png")
    title = "Predictive accuracy by month: deviance on the games every scenario rated (lower is better)"
    from pipeline.reports.charts import plot_accuracy  # matplotlib where a chart is drawn (drawn_chart)

    files: dict[str, bytes | str | pl.DataFrame] = {
        report_path(CROSS_SCENARIO, "accuracy-comparison", span, "parquet"): comparison,
        report_path(CROSS_SCENARIO, "accuracy", span, "parquet"): common,
        chart: drawn_chart(store, chart, common, lambda: plot_accuracy(common, title=title), title),
        page: render_accuracy_page(
            comparison,
            common,
            compare_accuracy(monthly, baseline=baseline),
            monthly,
            baseline,
            png_href=f"../accuracy/{span}.png",
            back_href=index_href_from(page),
        ),
    }
    if int(common["games"].sum()) == 0:
        files = {}
    for relative, data in files.items():
        store_report(store, relative, data)
    for kind in ("accuracy", "accuracy-comparison"):
        for path in store.list_files(REPORTS_PREFIX, CROSS_SCENARIO, kind):
            if path[len(REPORTS_PREFIX) + 1 :] not in files and TEMP_MARK not in path:
                store.remove(path)
    return comparison


def write_report_index(store: ObjectStore) -> list[ReportEntry]:
    """reports/index.html linking every <scenario>/<kind>/<period>.<ext> file under reports/; returns its entries."""
    entries = []
    for path in store.list_files(REPORTS_PREFIX):
        relative = path[len(REPORTS_PREFIX) + 1 :]
        parts = relative.split("/")
        if len(parts) == 3 and "." in parts[2]:
            entries.append(
                ReportEntry(scenario=parts[0], kind=parts[1], period=parts[2].rsplit(".", 1)[0], href=relative)
            )
        elif len(parts) == 2 and parts[1].endswith((".html", ".parquet")):
            # A section's one report, e.g. evaluation/leaderboard.html: rebuilt whole, no period of its own.
            entries.append(
                ReportEntry(scenario=parts[0], kind=parts[1].rsplit(".", 1)[0], period="latest", href=relative)
            )
    readable = {
        name: months
        for name in store.list_dirs(LISTS_PREFIX)
        if is_safe_part(name) and (months := readable_list_months(store, name))
    }
    # The store's place is left out: the index's bytes are the same wherever the store is (and a URL can be private).
    command = list_command(CommandLines("<this store>"), Placeholder("<scenario>"), Placeholder("<YYYY-MM>"))
    store.write_text(
        render_index(entries, note=INDEX_NOTE, readable_lists=readable, list_command=command),
        REPORTS_PREFIX,
        INDEX_NAME,
    )
    return entries
