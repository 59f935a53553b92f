"""Report stage: each scenario's pages and charts, the scenario comparison and the index (written by
pipeline.reports.writer).
"""

import dagster as dg

from assets.ratings import rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from pipeline.reports import (
    INDEX_NAME,
    REPORTS_PREFIX,
    accuracy_comparison_markdown,
    crosstable_markdown,
)
from pipeline.reports.writer import (
    latest_crosstable,
    stored_accuracy,
    stored_months,
    write_accuracy_comparison,
    write_report_index,
    write_scenario_reports,
)
from pipeline.scenarios import Scenario
from pipeline.storage import redact_url
from pipeline.versions import code_version

ALL_MONTHS = dg.AllPartitionMapping()

REPORTS_DESCRIPTION = """Pages and charts of scenario `{name}` under `reports/{name}/` in the object store.

Summary crosstables per calendar year and per window (HTML laid out like Sonas's tables, plus the
data), favourite's score vs rating advantage by window, band-vs-band trend by year, the rating
distribution of each January list and, where the scenario compresses ratings, before and after.
Rebuilt from the stored monthly tables; linked from `reports/index.html`."""

COMPARISON_DESCRIPTION = """Predictive accuracy of every scenario side by side: pooled errors and the share of months \
each beats `actual`.

Written to `reports/all-scenarios/` as data, a table page and a monthly chart."""

INDEX_DESCRIPTION = """`reports/index.html`: every page, chart and data file under `reports/`, by scenario and period.

Relative links only, so the folder can be copied and read offline."""


def build_report_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    """The scenario's report pages (its monthly analyses are built by assets.analytics)."""
    key = scenario.name

    @dg.asset(
        key=[key, "reports"],
        group_name=key,
        kinds={"html", "png", "parquet"},
        tags={"stage": "report"},
        code_version=code_version("analyse", scenario.model_dump_json()),
        deps=[
            dg.AssetDep(dg.AssetKey([key, "crosstable"]), partition_mapping=ALL_MONTHS),
            dg.AssetDep(rated_games_key(scenario), partition_mapping=ALL_MONTHS),
            dg.AssetDep(rating_list_key(scenario), partition_mapping=ALL_MONTHS),
        ],
        description=REPORTS_DESCRIPTION.format(name=scenario.name),
    )
    def reports(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        months = stored_months(object_store, [key, "crosstable"], partitions.get_partition_keys())
        if not months:
            raise dg.Failure(f"no stored {key}/crosstable month: materialize the scenario's months first")
        written = write_scenario_reports(object_store, scenario, months)
        latest_year, latest = latest_crosstable(object_store, scenario.name, months)
        return dg.MaterializeResult(
            metadata={
                "files": len(written),
                "months": len(months),
                "index": redact_url(object_store.url(REPORTS_PREFIX, INDEX_NAME)),
                f"crosstable_{latest_year}": dg.MetadataValue.md(
                    crosstable_markdown(latest) if latest is not None else "_No game was rated for both players._"
                ),
                "pages": dg.MetadataValue.md(
                    "\n".join(f"- `{path}`" for path in written if path.endswith((".html", ".png")))
                ),
            }
        )

    return [reports]


def build_cross_scenario_assets(
    partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> list[dg.AssetsDefinition]:
    accuracy_keys = [dg.AssetKey([s.name, "accuracy"]) for s in scenarios.values()]
    report_keys = [dg.AssetKey([s.name, "reports"]) for s in scenarios.values()]
    baseline = "actual" if "actual" in scenarios else None

    @dg.asset(
        name="accuracy_comparison",
        group_name="reports",
        kinds={"html", "png", "parquet"},
        tags={"stage": "report"},
        code_version=code_version("analyse"),
        deps=[dg.AssetDep(k, partition_mapping=ALL_MONTHS) for k in accuracy_keys],
        description=COMPARISON_DESCRIPTION,
    )
    def accuracy_comparison(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        monthly = stored_accuracy(object_store, list(scenarios), partitions.get_partition_keys())
        if monthly is None:
            raise dg.Failure("no stored accuracy month in any scenario")
        comparison = write_accuracy_comparison(object_store, monthly, baseline, stored=list(scenarios))
        return dg.MaterializeResult(
            metadata={
                "preview": dg.MetadataValue.md(accuracy_comparison_markdown(comparison)),
                "scenarios": comparison.height,
            }
        )

    @dg.asset(
        name="report_index",
        group_name="reports",
        kinds={"html"},
        tags={"stage": "report"},
        code_version=code_version("analyse"),
        # The evaluation leaderboard's page is linked too.
        deps=[*report_keys, "accuracy_comparison", dg.AssetKey(["evaluation", "leaderboard"])],
        description=INDEX_DESCRIPTION,
    )
    def report_index(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        entries = write_report_index(object_store)
        return dg.MaterializeResult(
            metadata={"links": len(entries), "path": redact_url(object_store.url(REPORTS_PREFIX, INDEX_NAME))}
        )

    return [accuracy_comparison, report_index]
