"""Analyse stage, per scenario: monthly summary crosstables (rating band vs rating band, actual vs expected)."""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream
from assets.metadata import KINDS, OWNERS, static_metadata
from assets.versions import code_version
from assets.ratings import rated_games_key
from pipeline.crosstable import summary_crosstable
from pipeline.reports import crosstable_markdown
from pipeline.scenarios import Scenario
from schemas import Crosstable

CROSSTABLE_DESCRIPTION = """Summary crosstable of the month under scenario `{name}` (Sonas 2023): 100-point bands of the rating used, 2500+ lumped.

Cell (band A, band B): games between the bands, A's actual and expected score % and the difference
(positive = A over-performs); same-band games are excluded. Rows with opponent_band `all` are A's
totals against every other band, e.g. `+4.5% in 6,865 games`. Only games rated for both sides count."""


def build_analytics_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    @dg.asset(
        key=[scenario.key, "crosstable"],
        group_name=scenario.key,
        kinds=KINDS,
        tags={"stage": "analyse"},
        owners=OWNERS,
        code_version=code_version("analyse"),
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"rated_games": dg.AssetIn(rated_games_key(scenario))},
        description=CROSSTABLE_DESCRIPTION.format(name=scenario.name),
        metadata=static_metadata(Crosstable),
    )
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

    return [crosstable]
