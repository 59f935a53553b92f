"""Analyse stage, per scenario and month: summary crosstables, performance ratings, predictive accuracy and the error
against the truth.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream
from assets.metadata import KINDS, OWNERS, static_metadata
from assets.ratings import rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.analytics import predictive_accuracy, summary_crosstable
from pipeline.analytics.performance import performance_ratings
from pipeline.reports import accuracy_markdown, crosstable_markdown
from pipeline.scenarios import Scenario
from pipeline.truth import TRUTH_KEY, rating_error_vs_truth
from schemas import Accuracy, Crosstable, Performance, TruthError
from schemas.util import empty_frame

CROSSTABLE_DESCRIPTION = """Summary crosstable of the month under scenario `{name}` (Sonas 2023): 100-point bands of \
the rating used, 2500+ lumped.

Cell (band A, band B): games between the bands, A's actual and expected score % and the difference
(positive = A over-performs); same-band games are excluded. Rows with opponent_band `all` are A's
totals against every other band, e.g. `+4.5% in 6,865 games`. Only games rated for both sides count."""

PERFORMANCE_DESCRIPTION = """Performance ratings of the month under scenario `{name}`, per player (scope `month`) and \
per player and event (scope `event`).

FIDE: Ra + dp (table 8.1.1, p to two decimals half up, +/-800 only for a perfect or zero score),
rounded half up; algorithm of 400: (sum of opponents' ratings + 400 x (wins - losses)) / games.
A game counts against an opponent with a rating used, in a time control the scenario rates."""

ACCURACY_DESCRIPTION = """How well scenario `{name}`'s ratings predicted each month's results (Sonas; Kaggle 2010 and \
2011).

Per player-month: error = points scored - points expected under the scenario's rules; total and mean
absolute error, RMSE; per game the capped log10 binomial deviance (predictions clipped to
[0.01, 0.99]). Lower is better. Stored per month so windows pool exactly."""

TRUTH_DESCRIPTION = """Scenario `{name}`'s list against the synthetic federation's true strengths \
(`truth/strength.parquet`).

Per month, for the whole list and per 100-point band: mean and spread of rating - strength, and the
error of rating differences against strength differences (positive: rating gaps overstate strength
gaps, i.e. favourites will under-perform). Empty for real data, which has no ground truth."""


def build_analytics_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    def monthly_analysis(table: str, upstream: dg.AssetKey, description: str, model: type) -> dict:
        """The attributes every monthly analysis of the scenario shares."""
        return {
            "key": [scenario.key, table],
            "group_name": scenario.key,
            "kinds": KINDS,
            "tags": {"stage": "analyse"},
            "owners": OWNERS,
            "code_version": code_version("analyse"),
            "partitions_def": partitions,
            "backfill_policy": dg.BackfillPolicy.single_run(),
            "ins": {upstream.path[-1]: dg.AssetIn(upstream)},
            "description": description.format(name=scenario.name),
            "metadata": static_metadata(model),
        }

    @dg.asset(**monthly_analysis("crosstable", rated_games_key(scenario), CROSSTABLE_DESCRIPTION, Crosstable))
    def crosstable(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        months = list(context.partition_keys)

        def per_month():
            for done, month in enumerate(months, start=1):
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
                progress.report(f"crosstable {scenario.name}", month, done, len(months))
                yield month, table

        return MonthStream(per_month())

    @dg.asset(**monthly_analysis("performance", rated_games_key(scenario), PERFORMANCE_DESCRIPTION, Performance))
    def performance(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        months = list(context.partition_keys)

        def per_month():
            for done, month in enumerate(months, start=1):
                table = performance_ratings(rated_games[month], month)
                events = table.filter(pl.col("scope") == "event")
                context.add_asset_metadata(
                    {"players": table.height - events.height, "events": events["event_id"].n_unique()},
                    partition_key=month,
                )
                progress.report(f"performance {scenario.name}", month, done, len(months))
                yield month, table

        return MonthStream(per_month())

    @dg.asset(**monthly_analysis("accuracy", rated_games_key(scenario), ACCURACY_DESCRIPTION, Accuracy))
    def accuracy(context: dg.AssetExecutionContext, rated_games: MonthlyFrames) -> MonthStream:
        months = list(context.partition_keys)

        def per_month() -> Iterator[tuple[str, pl.DataFrame]]:
            for done, month in enumerate(months, start=1):
                row = predictive_accuracy(rated_games[month], month, scenario.name)
                context.add_asset_metadata(
                    {"preview": dg.MetadataValue.md(accuracy_markdown(row))}, partition_key=month
                )
                progress.report(f"accuracy {scenario.name}", month, done, len(months))
                yield month, row

        return MonthStream(per_month())

    @dg.asset(**monthly_analysis("truth_error", rating_list_key(scenario), TRUTH_DESCRIPTION, TruthError))
    def truth_error(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, rating_list: MonthlyFrames
    ) -> MonthStream:
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
                        {
                            "pair_error_mean": float(overall["pair_error_mean"][0] or 0.0),
                            "pair_error_rms": float(overall["pair_error_rms"][0] or 0.0),
                            "slope": float(overall["slope"][0] or 0.0),
                        },
                        partition_key=month,
                    )
                yield month, table

        return MonthStream(per_month())

    return [crosstable, performance, accuracy, truth_error]
