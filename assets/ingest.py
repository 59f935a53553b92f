"""Ingest stage: the landing zone's raw dumps of each month as one raw_games table."""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthStream
from assets.metadata import KINDS, OWNERS, static_metadata
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.ingest import read_month
from pipeline.landing import inventory
from schemas import RawGames

GROUP = "ingest"

RAW_GAMES_DESCRIPTION = """Every record of the month's federation dumps, one row per record, before validation.

Reads `raw/<federation>/<YYYY-MM>/` in the object store (TRF, PGN, CSV or Parquet, optionally
.gz/.zst). Unreadable records are kept with `parse_error` set, so that
raw_games rows = games rows + quarantine rows for every month (the reconciliation check).
The landing zone itself is never modified."""


def build_ingest_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.asset(
        name="raw_games",
        group_name=GROUP,
        kinds=KINDS,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        description=RAW_GAMES_DESCRIPTION,
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

        def per_month():
            for done, month in enumerate(months, start=1):
                frame = read_month(object_store, month, entries)
                context.add_asset_metadata(
                    {
                        "records": frame.height,
                        "unreadable_records": frame.filter(pl.col("parse_error").is_not_null()).height,
                        "federations": frame["federation"].n_unique(),
                        "files": frame["source_file"].n_unique(),
                    },
                    partition_key=month,
                )
                progress.report("raw_games", month, done, len(months))
                yield month, frame

        return MonthStream(per_month())

    return [raw_games]
