"""Report stage: monthly accuracy per scenario, yearly/window pages and charts, the scenario comparison and the index."""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream, table_key
from assets.metadata import KINDS, OWNERS, redact_url, static_metadata
from assets.ratings import rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.analytics import (
    SONAS_WINDOWS,
    band_trend,
    combine_band_trends,
    combine_crosstables,
    combine_score_curves,
    compare_accuracy,
    january_lists,
    parse_window,
    predictive_accuracy,
    rating_distributions,
    score_curve,
    years_of,
)
from pipeline.analytics.windows import PeriodWindow
from pipeline.months import add_months
from pipeline.reports import (
    CROSS_SCENARIO,
    INDEX_NAME,
    REPORTS_PREFIX,
    ReportEntry,
    accuracy_comparison_markdown,
    accuracy_markdown,
    crosstable_markdown,
    index_href_from,
    plot_accuracy,
    plot_band_trend,
    plot_rating_distribution,
    plot_score_curves,
    render_crosstable_html,
    render_index,
    render_table_page,
    report_path,
)
from pipeline.scenarios import Scenario, rate_scenario_month
from pipeline.storage import ObjectStore
from pipeline.truth import rating_error_vs_truth
from schemas import Accuracy, Games, TruthError
from schemas.util import empty_frame

ALL_MONTHS = dg.AllPartitionMapping()
# What the score curves and band trends read of rated_games (a third of its bytes).
CURVE_COLUMNS = ["month", "white_score", "white_rating_used", "black_rating_used", "white_expected", "black_expected"]
TRUTH_KEY = "truth/strength.parquet"

ACCURACY_DESCRIPTION = """How well scenario `{name}`'s ratings predicted each month's results (Sonas; Kaggle 2010 and 2011).

Per player-month: error = points scored - points expected under the scenario's rules; total and mean
absolute error, RMSE; per game the capped log10 binomial deviance (predictions clipped to
[0.01, 0.99]). Lower is better. Stored per month so windows pool exactly."""

REPORTS_DESCRIPTION = """Pages and charts of scenario `{name}` under `reports/{name}/` in the object store.

Summary crosstables per calendar year and per window (HTML laid out like Sonas's tables, plus the
data), favourite's score vs rating advantage by window, band-vs-band trend by year, the rating
distribution of each January list and, where the scenario compresses ratings, before and after.
Rebuilt from the stored monthly tables; linked from `reports/index.html`."""

TRUTH_DESCRIPTION = """Scenario `{name}`'s list against the synthetic federation's true strengths (`truth/strength.parquet`).

Per month, for the whole list and per 100-point band: mean and spread of rating - strength, and the
error of rating differences against strength differences (positive: rating gaps overstate strength
gaps, i.e. favourites will under-perform). Empty for real data, which has no ground truth."""

COMPARISON_DESCRIPTION = """Predictive accuracy of every scenario side by side: pooled errors and the share of months each beats `actual`.

Written to `reports/all-scenarios/` as data, a table page and a monthly chart."""

INDEX_DESCRIPTION = """`reports/index.html`: every page, chart and data file under `reports/`, by scenario and period.

Relative links only, so the folder can be copied and read offline."""


def stored_months(store: ObjectStore, asset_path: list[str], partitions: dg.PartitionsDefinition) -> list[str]:
    """The partitions of an asset that are in the store, in order."""
    return [m for m in partitions.get_partition_keys() if store.exists(table_key(asset_path, m))]


def windows_for(months: list[str]) -> list[PeriodWindow]:
    """Sonas's windows that overlap the data, or the whole span as one window when none does."""
    windows = [w for w in map(parse_window, SONAS_WINDOWS) if any(w.contains(m) for m in months)]
    return windows or [PeriodWindow(f"{months[0]}..{months[-1]}", months[0], months[-1])]


def build_report_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    key = scenario.key
    text = {"name": scenario.name}

    def monthly_analysis(name: str, upstream: dg.AssetKey, description: str, model) -> dict:
        """Decorator arguments shared by the scenario's monthly analysis tables."""
        return {
            "key": [key, name], "group_name": key, "kinds": KINDS, "owners": OWNERS, "tags": {"stage": "analyse"},
            "code_version": code_version("analyse"), "partitions_def": partitions,
            "backfill_policy": dg.BackfillPolicy.single_run(), "ins": {upstream.path[-1]: dg.AssetIn(upstream)},
            "description": description.format(**text), "metadata": static_metadata(model),
        }

    @dg.asset(**monthly_analysis("accuracy", rated_games_key(scenario), ACCURACY_DESCRIPTION, Accuracy))
    def accuracy(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        months = list(context.partition_keys)

        def per_month() -> Iterator[tuple[str, pl.DataFrame]]:
            for done, month in enumerate(months, start=1):
                row = predictive_accuracy(rated_games[month], month, scenario.name)
                context.add_asset_metadata({"preview": dg.MetadataValue.md(accuracy_markdown(row))}, partition_key=month)
                progress.report(f"accuracy {scenario.name}", month, done, len(months))
                yield month, row

        return MonthStream(per_month())

    @dg.asset(
        key=[key, "reports"],
        group_name=key,
        kinds={"html", "png", "parquet"},
        owners=OWNERS,
        tags={"stage": "report"},
        code_version=code_version("analyse", scenario.model_dump_json()),
        deps=[
            dg.AssetDep(dg.AssetKey([key, "crosstable"]), partition_mapping=ALL_MONTHS),
            dg.AssetDep(rated_games_key(scenario), partition_mapping=ALL_MONTHS),
            dg.AssetDep(rating_list_key(scenario), partition_mapping=ALL_MONTHS),
        ],
        description=REPORTS_DESCRIPTION.format(**text),
    )
    def reports(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        months = stored_months(object_store, [key, "crosstable"], partitions)
        if not months:
            raise dg.Failure(f"no stored {key}/crosstable month: materialize the scenario's months first")
        written = write_scenario_reports(object_store, scenario, months)
        latest_year = years_of(months)[-1].label
        latest = object_store.read_parquet(f"{REPORTS_PREFIX}/{report_path(scenario.name, 'crosstable', latest_year, 'parquet')}")
        return dg.MaterializeResult(
            metadata={
                "files": len(written),
                "months": len(months),
                "index": redact_url(object_store.url(REPORTS_PREFIX, INDEX_NAME)),
                f"crosstable_{latest_year}": dg.MetadataValue.md(crosstable_markdown(latest)),
                "pages": dg.MetadataValue.md("\n".join(f"- `{path}`" for path in written if path.endswith((".html", ".png")))),
            }
        )

    @dg.asset(**monthly_analysis("truth_error", rating_list_key(scenario), TRUTH_DESCRIPTION, TruthError))
    def truth_error(context: dg.AssetExecutionContext, store: ObjectStoreResource, rating_list: MonthlyFrames) -> MonthStream:
        months = list(context.partition_keys)
        object_store = store.store()
        truth = object_store.scan_parquet(TRUTH_KEY) if object_store.exists(TRUTH_KEY) else None

        def per_month() -> Iterator[tuple[str, pl.DataFrame]]:
            for month in months:
                if truth is None:  # real federation data: there is no ground truth to compare with
                    yield month, empty_frame(TruthError)
                    continue
                table = rating_error_vs_truth(rating_list[month], truth, month)
                overall = table.filter(pl.col("band") == "all")
                if overall.height:
                    context.add_asset_metadata(
                        {"pair_error_mean": float(overall["pair_error_mean"][0] or 0.0),
                         "pair_error_rms": float(overall["pair_error_rms"][0] or 0.0),
                         "slope": float(overall["slope"][0] or 0.0)},
                        partition_key=month,
                    )
                yield month, table

        return MonthStream(per_month())

    return [accuracy, reports, truth_error]


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

    crosstables = {m: store.read_parquet(table_key([key, "crosstable"], m)) for m in months}
    curves, trends = {}, []
    for month in months:
        games = store.read_parquet(table_key([key, "rated_games"], month), columns=CURVE_COLUMNS)
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

    januaries = {label: store.read_parquet(table_key([key, "rating_list"], m)) for label, m in january_lists(months).items()}
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
    after = store.read_parquet(table_key([scenario.key, "rating_list"], month))
    previous_month = add_months(month, -1)
    previous_key = table_key([scenario.key, "rating_list"], previous_month)
    if not store.exists(previous_key):
        return after, after

    def games_of(m: str) -> pl.DataFrame:
        key = table_key(["games"], m)
        return store.read_parquet(key) if store.exists(key) else empty_frame(Games)

    no_events = scenario.model_copy(update={"events": ()})
    before = rate_scenario_month(no_events, store.read_parquet(previous_key), games_of, month).rating_list
    return before, after


def build_cross_scenario_assets(partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]) -> list[dg.AssetsDefinition]:
    accuracy_keys = [dg.AssetKey([s.key, "accuracy"]) for s in scenarios.values()]
    report_keys = [dg.AssetKey([s.key, "reports"]) for s in scenarios.values()]
    baseline = "actual" if "actual" in scenarios else None

    @dg.asset(
        name="accuracy_comparison",
        group_name="reports",
        kinds={"html", "png", "parquet"},
        owners=OWNERS,
        tags={"stage": "report"},
        code_version=code_version("analyse"),
        deps=[dg.AssetDep(k, partition_mapping=ALL_MONTHS) for k in accuracy_keys],
        description=COMPARISON_DESCRIPTION,
    )
    def accuracy_comparison(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        rows = [
            object_store.read_parquet(table_key(list(k.path), m))
            for k in accuracy_keys
            for m in stored_months(object_store, list(k.path), partitions)
        ]
        if not rows:
            raise dg.Failure("no stored accuracy month in any scenario")
        monthly = pl.concat(rows)
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
            store_report(object_store, relative, data)
        return dg.MaterializeResult(metadata={"preview": dg.MetadataValue.md(accuracy_comparison_markdown(comparison)),
                                              "scenarios": comparison.height})

    @dg.asset(
        name="report_index",
        group_name="reports",
        kinds={"html"},
        owners=OWNERS,
        tags={"stage": "report"},
        code_version=code_version("analyse"),
        deps=[*report_keys, "accuracy_comparison"],
        description=INDEX_DESCRIPTION,
    )
    def report_index(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        entries = []
        for path in object_store.list_files(REPORTS_PREFIX):
            relative = path[len(REPORTS_PREFIX) + 1:]
            parts = relative.split("/")
            if len(parts) == 3 and "." in parts[2]:
                entries.append(ReportEntry(scenario=parts[0], kind=parts[1], period=parts[2].rsplit(".", 1)[0], href=relative))
        html = render_index(entries, note="Summary crosstables, curves, distributions and accuracy of every scenario.")
        object_store.write_text(html, REPORTS_PREFIX, INDEX_NAME)
        return dg.MaterializeResult(metadata={"links": len(entries), "path": redact_url(object_store.url(REPORTS_PREFIX, INDEX_NAME))})

    return [accuracy_comparison, report_index]
