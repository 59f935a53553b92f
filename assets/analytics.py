"""Analyse stage, per scenario and month: summary crosstables, performance ratings, predictive accuracy and the error
against the truth, each with its schema check.
"""

from collections.abc import Callable

import dagster as dg
import pandera.polars as pa
import polars as pl

from assets.checks import CheckedTable, stage_checks
from assets.metadata import KINDS, static_metadata, table_description
from assets.ratings import rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from pipeline import progress
from pipeline.analytics import predictive_accuracy, summary_crosstable
from pipeline.analytics.performance import performance_ratings
from pipeline.monthly import MonthlyFrames, MonthStream, stream_months
from pipeline.reports import accuracy_markdown, crosstable_markdown
from pipeline.scenarios import Scenario
from pipeline.truth import TRUTH_KEY, rating_error_vs_truth
from pipeline.versions import code_version
from schemas import Accuracy, Crosstable, Performance, TruthError
from schemas.util import empty_frame


def build_analytics_defs(partitions: dg.PartitionsDefinition, scenario: Scenario) -> dg.Definitions:
    """The scenario's monthly analyses, each checked against its Pandera model."""

    def monthly_analysis(table: str, upstream: dg.AssetKey, model: type[pa.DataFrameModel]) -> dict:
        """The attributes every monthly analysis of the scenario shares."""
        return {
            "key": [scenario.name, table],
            "group_name": scenario.name,
            "kinds": KINDS,
            "tags": {"stage": "analyse"},
            "code_version": code_version("analyse"),
            "partitions_def": partitions,
            "backfill_policy": dg.BackfillPolicy.single_run(),
            "ins": {upstream.path[-1]: dg.AssetIn(upstream)},
            "description": table_description(model, scenario),
            "metadata": static_metadata(model),
        }

    def reporter(step: str, months: list[str]) -> Callable[[str, int], None]:
        return lambda month, done: progress.report(f"{step} {scenario.name}", month, done, len(months))

    @dg.asset(**monthly_analysis("crosstable", rated_games_key(scenario), Crosstable))
    def crosstable(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        def one_month(month: str) -> pl.DataFrame:
            table = summary_crosstable(rated_games[month], month)
            summaries = table.filter(pl.col("opponent_band") == "all")
            context.add_asset_metadata(
                {
                    "bands": summaries.height,
                    "games_counted": int(summaries["games"].sum()) // 2 if summaries.height else 0,
                    "preview": dg.MetadataValue.md(
                        crosstable_markdown(table) if summaries.height else "no game counted for both sides"
                    ),
                },
                partition_key=month,
            )
            return table

        months = list(context.partition_keys)
        return stream_months(Crosstable, months, one_month, reporter("crosstable", months))

    @dg.asset(**monthly_analysis("performance", rated_games_key(scenario), Performance))
    def performance(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        def one_month(month: str) -> pl.DataFrame:
            table = performance_ratings(rated_games[month], month)
            events = table.filter(pl.col("scope") == "event")
            context.add_asset_metadata(
                {"players": table.height - events.height, "events": events["event_id"].n_unique()},
                partition_key=month,
            )
            return table

        months = list(context.partition_keys)
        return stream_months(Performance, months, one_month, reporter("performance", months))

    @dg.asset(**monthly_analysis("accuracy", rated_games_key(scenario), Accuracy))
    def accuracy(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        def one_month(month: str) -> pl.DataFrame:
            row = predictive_accuracy(rated_games[month], month, scenario.name)
            context.add_asset_metadata({"preview": dg.MetadataValue.md(accuracy_markdown(row))}, partition_key=month)
            return row

        months = list(context.partition_keys)
        return stream_months(Accuracy, months, one_month, reporter("accuracy", months))

    @dg.asset(**monthly_analysis("truth_error", rating_list_key(scenario), TruthError))
    def truth_error(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, rating_list: MonthlyFrames
    ) -> MonthStream:
        object_store = store.store()
        truth = object_store.scan_parquet(TRUTH_KEY) if object_store.exists(TRUTH_KEY) else None

        def one_month(month: str) -> pl.DataFrame:
            if truth is None:  # real federation data: there is no ground truth to compare with
                return empty_frame(TruthError)
            table = rating_error_vs_truth(rating_list[month], truth, month)
            overall = table.filter(pl.col("band") == "all")
            if overall.height:
                context.add_asset_metadata(
                    {name: float(overall[name][0] or 0.0) for name in ("pair_error_mean", "pair_error_rms", "slope")},
                    partition_key=month,
                )
            return table

        return stream_months(TruthError, list(context.partition_keys), one_month, lambda month, done: None)

    analyses = {crosstable: Crosstable, performance: Performance, accuracy: Accuracy, truth_error: TruthError}
    return dg.Definitions(
        assets=list(analyses),
        asset_checks=[
            stage_checks(asset.node_def.name, partitions, [CheckedTable(asset.key, model)])
            for asset, model in analyses.items()
        ],
    )
