"""Analyse stage, per scenario and month: the analyses of pipeline.analytics.monthly (summary crosstables, performance
ratings, predictive accuracy, the error against the truth), each with the checks of its table.
"""

import dagster as dg

from assets.checks import CheckedTable, stage_checks
from assets.metadata import table_attributes
from assets.storage import ObjectStoreResource
from pipeline.analytics.monthly import MARKDOWN_FIGURES, MONTHLY_ANALYSES, MonthlyAnalysis
from pipeline.operations import progress
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import MonthlyFrames, MonthStream, stream_months


def build_analytics_defs(partitions: dg.PartitionsDefinition, scenario: Scenario) -> dg.Definitions:
    """The scenario's monthly analyses, each checked against its Pandera model."""

    def monthly(analysis: MonthlyAnalysis) -> dg.AssetsDefinition:
        @dg.asset(
            key=[scenario.name, analysis.table],
            group_name=scenario.name,
            partitions_def=partitions,
            backfill_policy=dg.BackfillPolicy.single_run(),
            ins={"month_tables": dg.AssetIn(dg.AssetKey([scenario.name, analysis.reads]))},
            **table_attributes(analysis.model, "analyse", scenario),
        )
        def analyse(
            context: dg.AssetExecutionContext, store: ObjectStoreResource, month_tables: MonthlyFrames
        ) -> MonthStream:
            months = list(context.partition_keys)
            table_of = analysis.prepare(store.store(), scenario)

            def one_month(month: str):
                table = table_of(month_tables.read(month, analysis.columns), month)
                figures = analysis.figures(table)
                if figures:
                    metadata = {
                        k: dg.MetadataValue.md(str(v)) if k in MARKDOWN_FIGURES else v for k, v in figures.items()
                    }
                    context.add_asset_metadata(metadata, partition_key=month)
                return table

            def reporter(month: str, done: int) -> None:
                progress.report(f"{analysis.table} {scenario.name}", month, done, len(months))

            return stream_months(analysis.model, months, one_month, reporter)

        return analyse

    analyses = {monthly(analysis): analysis.model for analysis in MONTHLY_ANALYSES}
    return dg.Definitions(
        assets=list(analyses),
        asset_checks=[
            stage_checks(asset.node_def.name, partitions, [CheckedTable(asset.key, model)])
            for asset, model in analyses.items()
        ],
    )
