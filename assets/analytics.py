"""Analyse stage, per scenario: monthly summary crosstables (band vs band, actual vs expected) and performance ratings."""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream
from assets.metadata import KINDS, OWNERS, static_metadata
from assets.versions import code_version
from assets.ratings import rated_games_key
from pipeline.analytics.performance import performance_ratings
from pipeline.crosstable import summary_crosstable
from pipeline.reports import crosstable_markdown
from pipeline.scenarios import Scenario
from schemas import Crosstable, Performance

CROSSTABLE_DESCRIPTION = """Summary crosstable of the month under scenario `{name}` (Sonas 2023): 100-point bands of the rating used, 2500+ lumped.

Cell (band A, band B): games between the bands, A's actual and expected score % and the difference
(positive = A over-performs); same-band games are excluded. Rows with opponent_band `all` are A's
totals against every other band, e.g. `+4.5% in 6,865 games`. Only games rated for both sides count."""

PERFORMANCE_DESCRIPTION = """Performance ratings of the month under scenario `{name}`, per player (scope `month`) and per player and event (scope `event`).

FIDE: Ra + dp (table 8.1.1, p to two decimals half up, +/-800 only for a perfect or zero score),
rounded half up; algorithm of 400: (sum of opponents' ratings + 400 x (wins - losses)) / games.
A game counts against an opponent with a rating used, in a time control the scenario rates."""


def build_analytics_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    def from_rated_games(table: str, description: str, model: type) -> dict:
        """The attributes every monthly analysis of the scenario's rated games shares."""
        return dict(
            key=[scenario.key, table], group_name=scenario.key, kinds=KINDS, tags={"stage": "analyse"}, owners=OWNERS,
            code_version=code_version("analyse"), partitions_def=partitions, backfill_policy=dg.BackfillPolicy.single_run(),
            ins={"rated_games": dg.AssetIn(rated_games_key(scenario))}, description=description.format(name=scenario.name),
            metadata=static_metadata(model),
        )

    @dg.asset(**from_rated_games("crosstable", CROSSTABLE_DESCRIPTION, Crosstable))
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
                        "preview": dg.MetadataValue.md(crosstable_markdown(table) if summaries.height else "no game counted for both sides"),
                    },
                    partition_key=month,
                )
                progress.report(f"crosstable {scenario.name}", month, done, len(months))
                yield month, table

        return MonthStream(per_month())

    @dg.asset(**from_rated_games("performance", PERFORMANCE_DESCRIPTION, Performance))
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

    return [crosstable, performance]
