"""Ingest stage: the landing zone and its raw dumps of each month as one raw_games table (pipeline.ingest.dumps).

The landing zone is observed: a data version per month.
"""

import dagster as dg
import polars as pl

from assets.metadata import table_attributes
from assets.storage import ObjectStoreResource
from pipeline.ingest.dumps import read_month
from pipeline.ingest.landing import LANDING_DESCRIPTION, inventory, landing_versions
from pipeline.operations import progress
from pipeline.store.monthly import MonthStream, stream_months
from pipeline.validate.month_figures import raw_figures
from schemas import RawGames


def build_ingest_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.asset(
        name="raw_games",
        group_name="ingest",
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        # Lineage (and staleness) from the landing zone's per-month data versions; read from the store.
        deps=["landing_zone"],
        **table_attributes(RawGames, "ingest", source="raw/<federation>/<YYYY-MM>/"),
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


def build_landing_asset(partitions: dg.PartitionsDefinition) -> dg.SourceAsset:
    """The landing zone as an observable source asset: a data version per month from the dumps it holds."""

    @dg.observable_source_asset(
        name="landing_zone",
        group_name="ingest",
        partitions_def=partitions,
        description=LANDING_DESCRIPTION,
        tags={"stage": "ingest"},
    )
    def landing_zone(context, store: ObjectStoreResource) -> dg.DataVersionsByPartition:
        # Without the registry's digests: raw_games does not read the registry (the sensor re-rates for it instead).
        fingerprints = landing_versions(store.store()).dumps
        months = partitions.get_partition_keys()
        return dg.DataVersionsByPartition({month: fingerprints.get(month, "empty") for month in months})

    return landing_zone
