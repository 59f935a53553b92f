"""Report stage: each scenario's pages and charts, the scenario comparison and the index.

Written by pipeline.reports.writer.
"""

from typing import Any

import dagster as dg
import polars as pl

from assets.checks import CheckedTable, stage_checks
from assets.metadata import table_attributes
from assets.rate import chain_key
from assets.storage import ObjectStoreResource
from pipeline.analytics.previews import accuracy_comparison_markdown
from pipeline.code_versions import code_version
from pipeline.operations import progress
from pipeline.reports.index import INDEX_NAME, REPORTS_PREFIX
from pipeline.reports.writer import (
    COMMON_ACCURACY,
    COMPARISON_DESCRIPTION,
    INDEX_DESCRIPTION,
    POOL_HEALTH_ANALYSES,
    POOL_HEALTH_DESCRIPTION,
    REPORTED_ANALYSES,
    REPORTS_DESCRIPTION,
    common_games_accuracy,
    report_figures,
    stored_accuracy,
    write_accuracy_comparison,
    write_drift_comparison,
    write_report_index,
    write_scenario_reports,
)
from pipeline.scenarios.chain import FLOWS, LEDGER, chain_tables
from pipeline.scenarios.model import Scenario, baseline_name, compared_scenarios, nothing_compared
from pipeline.store.monthly import MonthStream, months_stored, stream_months
from pipeline.store.object_store import ObjectStore, redact_url
from schemas import Accuracy

ALL_MONTHS = dg.AllPartitionMapping()
#: What the pages over every scenario share: their stage and their code.
REPORT_PAGE: dict[str, Any] = {"tags": {"stage": "report"}, "code_version": code_version("analyse")}
# The group of the monthly tables made from every compared chain (pipeline.operations.waves.COMMON_GROUPS runs it after
# the chains, before the comparison).
COMMON_GROUP = "common_games"


def build_report_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    """The scenario's report pages (its monthly analyses are built by assets.analyse)."""
    key = scenario.name
    reads = [dg.AssetKey([key, t]) for t in REPORTED_ANALYSES]
    reads += [chain_key(scenario, t.name) for t in chain_tables(scenario) if t.name in ("rating_list", LEDGER, FLOWS)]

    @dg.asset(
        key=[key, "reports"],
        group_name=key,
        kinds={"html", "png", "parquet"},
        tags={"stage": "report"},
        code_version=code_version("analyse", scenario.model_dump_json()),
        deps=[dg.AssetDep(read, partition_mapping=ALL_MONTHS) for read in reads],
        description=REPORTS_DESCRIPTION.format(name=scenario.name),
    )
    def reports(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        months = months_stored(object_store, [key, "crosstable"], partitions.get_partition_keys())
        if not months:
            raise dg.Failure(f"no stored {key}/crosstable month: materialize the scenario's months first")
        written = write_scenario_reports(object_store, scenario, months, context.log.warning)
        figures, markdown = report_figures(object_store, scenario, months, written)
        return dg.MaterializeResult(metadata={**figures, **{k: dg.MetadataValue.md(v) for k, v in markdown.items()}})

    return [reports]


def build_cross_scenario_checks(partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The checks of the cross-scenario monthly table: its model, on its own partitions."""
    return [stage_checks(COMMON_ACCURACY, partitions, [CheckedTable(dg.AssetKey(COMMON_ACCURACY), Accuracy)])]


def build_cross_scenario_assets(
    partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> list[dg.AssetsDefinition]:
    compared = compared_scenarios(scenarios)
    accuracy_keys = [dg.AssetKey([s.name, "accuracy"]) for s in compared.values()]
    report_keys = [dg.AssetKey([s.name, "reports"]) for s in scenarios.values()]
    drift_keys = [dg.AssetKey([s.name, t]) for s in scenarios.values() for t in POOL_HEALTH_ANALYSES]
    list_keys = [dg.AssetKey([s.name, "published_list"]) for s in scenarios.values()]
    baseline = baseline_name(compared)  # compared with the first of them where no scenario is `actual`

    # Each month's accuracy on the games every compared scenario rated, so that the comparison over the whole history
    # reads a few rows a month and a monthly run computes its month only.
    @dg.asset(
        key=[COMMON_ACCURACY],
        group_name=COMMON_GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[chain_key(s, "rated_games") for s in compared.values()],
        **table_attributes(Accuracy, "analyse", None, " ".join(compared)),
    )
    def common_accuracy(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> MonthStream:
        object_store, months = store.store(), list(context.partition_keys)

        def reporter(month: str, done: int) -> None:
            progress.report(COMMON_ACCURACY, month, done, len(months))

        return stream_months(
            Accuracy, months, lambda month: common_games_accuracy(object_store, list(compared), [month]), reporter
        )

    @dg.asset(
        name="accuracy_comparison",
        group_name="reports",
        **REPORT_PAGE,
        kinds={"html", "png", "parquet"},
        deps=[
            *(dg.AssetDep(k, partition_mapping=ALL_MONTHS) for k in accuracy_keys),
            dg.AssetDep(COMMON_ACCURACY, partition_mapping=ALL_MONTHS),
        ],
        description=COMPARISON_DESCRIPTION,
    )
    def accuracy_comparison(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        if skipped := nothing_compared(scenarios):  # nothing failed: said as the leaderboard says it
            context.log.warning(f"no accuracy comparison: {skipped}")
            return dg.MaterializeResult(metadata={"skipped": skipped})
        object_store = store.store()
        all_months = partitions.get_partition_keys()
        monthly = stored_accuracy(object_store, list(compared), all_months)
        if monthly is None:
            raise dg.Failure("no stored accuracy month in any scenario")
        stored = months_stored(object_store, [COMMON_ACCURACY], all_months)
        keys = [ObjectStore.table_key(COMMON_ACCURACY, m) for m in stored]
        common_frame = pl.concat(object_store.read_parquets(keys)) if keys else None
        comparison = write_accuracy_comparison(
            object_store, monthly, baseline, stored=list(compared), common=common_frame
        )
        return dg.MaterializeResult(
            metadata={
                "preview": dg.MetadataValue.md(accuracy_comparison_markdown(comparison)),
                "scenarios": comparison.height,
            }
        )

    @dg.asset(
        name="pool_health_comparison",
        group_name="reports",
        **REPORT_PAGE,
        kinds={"html", "png", "parquet"},
        deps=[dg.AssetDep(drift, partition_mapping=ALL_MONTHS) for drift in drift_keys],
        description=POOL_HEALTH_DESCRIPTION,
    )
    def pool_health_comparison(store: ObjectStoreResource) -> dg.MaterializeResult:
        page = write_drift_comparison(store.store(), list(scenarios), partitions.get_partition_keys())
        return dg.MaterializeResult(metadata={"page": page or "none: no December lists a year apart"})

    @dg.asset(
        name="report_index",
        group_name="reports",
        **REPORT_PAGE,
        kinds={"html"},
        # The evaluation leaderboard's page is linked too, and the readable lists published so far.
        deps=[
            *report_keys,
            "accuracy_comparison",
            "pool_health_comparison",
            dg.AssetKey(["evaluation", "leaderboard"]),
            *(dg.AssetDep(key, partition_mapping=ALL_MONTHS) for key in list_keys),
        ],
        description=INDEX_DESCRIPTION,
    )
    def report_index(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> dg.MaterializeResult:
        object_store = store.store()
        entries = write_report_index(object_store)
        return dg.MaterializeResult(
            metadata={"links": len(entries), "path": redact_url(object_store.url(REPORTS_PREFIX, INDEX_NAME))}
        )

    return [common_accuracy, accuracy_comparison, pool_health_comparison, report_index]
