"""Analyse stage, per scenario and month: the analyses of pipeline.analytics.monthly as one step.

The analyses: summary crosstables, performance ratings, predictive accuracy, the error against the truth, pool health;
with the checks of their tables.
"""

from collections.abc import Iterator

import dagster as dg

from assets.checks import CheckedTable, stage_checks
from assets.metadata import table_attributes
from assets.storage import ObjectStoreResource, write_month_tables
from pipeline.analytics.monthly import MARKDOWN_FIGURES, MONTHLY_ANALYSES, month_analyses
from pipeline.operations import progress
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import MonthlyFrames


def build_analytics_defs(partitions: dg.PartitionsDefinition, scenario: Scenario) -> dg.Definitions:
    """The scenario's monthly analyses, each a table of its own (lineage, code version, checks against its model),
    made in one step that reads each month's per-game table and list once for all of them: a step each read the same
    month again ten times (seven readers of a fide-scale chain's `rated_games`, about 1.8 CPU-s each) and paid
    Dagster's start, events and end for each step and its checks' step.
    """
    keys = {a.table: dg.AssetKey([scenario.name, a.table]) for a in MONTHLY_ANALYSES}
    deps = {a.table: [dg.AssetKey([scenario.name, a.reads])] for a in MONTHLY_ANALYSES}
    attributes = {a.table: table_attributes(a.model, "analyse", scenario) for a in MONTHLY_ANALYSES}

    @dg.multi_asset(
        name=f"analyse_{scenario.name}",
        can_subset=True,
        group_name=scenario.name,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        # skippable: a subset (one analysis materialized from the UI) stores only what was selected.
        specs=[dg.AssetSpec(keys[t], deps=deps[t], skippable=True, **attributes[t]) for t in keys],
    )
    def analyse(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> Iterator[dg.MaterializeResult]:
        months, object_store = list(context.partition_keys), store.store()
        selected = [a for a in MONTHLY_ANALYSES if keys[a.table] in context.selected_asset_keys]
        prepared = {a.table: a.prepare(object_store, scenario) for a in selected}
        read = {a.reads: MonthlyFrames(object_store, [scenario.name, a.reads], months) for a in selected}

        def one_month(month: str) -> tuple:
            done = month_analyses(selected, prepared, lambda name, columns: read[name].read(month, columns), month)
            for analysis, (_, figures) in zip(selected, done, strict=True):
                if not figures:
                    continue
                metadata = {k: dg.MetadataValue.md(str(v)) if k in MARKDOWN_FIGURES else v for k, v in figures.items()}
                context.add_asset_metadata(metadata, asset_key=keys[analysis.table], partition_key=month)
            progress.report(f"analyse {scenario.name}", month, months.index(month) + 1, len(months))
            return tuple(table for table, _ in done)

        stored = [(keys[a.table], a.model) for a in selected]
        write_month_tables(context, object_store, stored, months, ((month, one_month(month)) for month in months))
        yield from (dg.MaterializeResult(asset_key=keys[a.table]) for a in selected)

    tables = [CheckedTable(keys[a.table], a.model) for a in MONTHLY_ANALYSES]
    return dg.Definitions(assets=[analyse], asset_checks=[stage_checks(analyse.node_def.name, partitions, tables)])
