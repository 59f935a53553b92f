"""Ingest stage: the landing zone's raw dumps of each month as one raw_games table (pipeline.ingest)."""

import dagster as dg
import polars as pl

from assets.metadata import KINDS, OWNERS, static_metadata, table_description
from assets.resources import ObjectStoreResource
from pipeline import progress
from pipeline.ingest import read_month
from pipeline.landing import inventory
from pipeline.month_report import raw_figures
from pipeline.monthly import MonthStream, stream_months
from pipeline.versions import code_version
from schemas import RawGames


def build_ingest_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.asset(
        name="raw_games",
        group_name="ingest",
        kinds=KINDS,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        description=table_description(RawGames),
        # Lineage (and staleness) from the landing zone's per-month data versions; read from the store.
        deps=["landing_zone"],
        code_version=code_version("ingest"),
        owners=OWNERS,
        tags={"stage": "ingest"},
        metadata=static_metadata(RawGames, source="raw/<federation>/<YYYY-MM>/"),
    )
    def raw_games(context: dg.AssetExecutionContext, store: ObjectStoreResource) -> MonthStream:
        months = list(context.partition_keys)
        object_store = store.store()
        entries = inventory(object_store)  # one listing of the landing zone for the whole range

        def one_month(month: str) -> pl.DataFrame:
            frame = read_month(object_store, month, entries)
            context.add_asset_metadata(raw_figures(frame), partition_key=month)
            return frame

        return stream_months(
            RawGames, months, one_month, lambda month, done: progress.report("raw_games", month, done, len(months))
        )

    return [raw_games]
