"""Where tables live in Dagster: the object-store resource, and the Parquet IO manager over it.

The IO manager: one file per asset and month, range outputs streamed, column lineage for the UI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import dagster as dg
import polars as pl
from pydantic import Field

from assets.metadata import Metadata, validate
from pipeline.store import monthly
from pipeline.store.monthly import Model, MonthlyFrames, MonthStream, Table, table_key, write_months, write_tables
from pipeline.store.object_store import ObjectStore, redact_url, store_root_from_env
from schemas.lineage import COLUMN_LINEAGE, SHARED_TABLES

ROOT_DESCRIPTION = (
    "Object-store root: a local directory or any fsspec URL such as s3://bucket/prefix. "
    "Empty means $RATINGS_STORE, else ./data. Credentials come from the usual AWS variables, never from here."
)


class ObjectStoreResource(dg.ConfigurableResource):
    """Where the landing zone (raw/) and every table live; assets that read raw files or earlier months use it."""

    root: str | None = Field(default=None, description=ROOT_DESCRIPTION)

    def store(self) -> ObjectStore:
        return ObjectStore(self.root or store_root_from_env())  # the settings' store, read at run time


def column_lineage(asset_key: dg.AssetKey) -> dg.TableColumnLineage | None:
    """The lineage of a stored table, its upstream keys resolved within the asset's scenario."""
    *prefix, table = asset_key.path
    spec = COLUMN_LINEAGE.get(table)
    if spec is None:
        return None

    def upstream(name: str) -> dg.AssetKey:
        return dg.AssetKey([name]) if name in SHARED_TABLES else dg.AssetKey([*prefix, name])

    return dg.TableColumnLineage(
        deps_by_column={
            column: [
                dg.TableColumnDep(asset_key=upstream(table_name), column_name=source) for table_name, source in sources
            ]
            for column, sources in spec.items()
        }
    )


def stored_month_metadata(store: ObjectStore, asset_key: dg.AssetKey, key: str, rows: int) -> Metadata:
    """What the UI shows of a stored month: its rows, where it is, and where its columns come from."""
    metadata: Metadata = {"dagster/partition_row_count": rows, "path": redact_url(store.url(key))}
    lineage = column_lineage(asset_key)
    if lineage is not None:
        metadata["dagster/column_lineage"] = lineage
    return metadata


def write_month_tables(
    context: dg.AssetExecutionContext,
    store: ObjectStore,
    tables: Sequence[tuple[dg.AssetKey, Model] | None],
    months: Sequence[str],
    frames: Iterable[tuple[str, tuple[pl.DataFrame, ...]]],
) -> None:
    """A multi-asset step's tables (key and model, or None: not stored) written month by month as they are made
    (pipeline.store.monthly.write_tables), each month's rows, path and lineage on that month's materialization.
    """
    stored_keys = {index: table[0] for index, table in enumerate(tables) if table is not None}

    def written(index: int, month: str, key: str, rows: int) -> None:
        asset_key = stored_keys[index]  # write_tables reports stored tables only
        metadata = stored_month_metadata(store, asset_key, key, rows)
        context.add_asset_metadata(metadata, asset_key=asset_key, partition_key=month)

    stored = [(table[0].path, table[1]) if table else None for table in tables]
    versions = context.assets_def.code_versions_by_key
    # Each table's code version in its footer as well: what a run compares where the instance has no record of it.
    footers = [{monthly.CODE_VERSION_FOOTER: versions[t[0]]} if t and versions.get(t[0]) else None for t in tables]
    write_tables(store, stored, months, frames, validate, written, footers)


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores each asset month as <root>/<asset>/<YYYY-MM>.parquet (atomic writes) and loads inputs lazily.

    Outputs name their Pandera model: a Table (an unpartitioned asset) or a MonthStream of (month,
    DataFrame) pairs (the months of the run). Every frame is validated against its model before it is
    stored. Partitioned inputs load as a read-only month -> DataFrame mapping that reads each month
    only when the asset asks for it.
    """

    # The same store resource the assets use: one root, configured once.
    store: ObjectStoreResource = Field(default_factory=ObjectStoreResource, description=ROOT_DESCRIPTION)

    def _store(self) -> ObjectStore:
        return self.store.store()

    # -- output --------------------------------------------------------------------------------
    def handle_output(self, context: dg.OutputContext, obj: object) -> None:
        store = self._store()
        path = list(context.asset_key.path)
        expected_type = MonthStream if context.has_asset_partitions else Table
        if not isinstance(obj, expected_type):
            raise TypeError(f"{'/'.join(path)}: expected a {expected_type.__name__}, got {type(obj).__name__}")

        try:  # in each file too, as write_month_tables writes it; a context built without its spec has none
            version = context.asset_spec.code_version
        except dg.DagsterInvariantViolationError:
            version = None
        footer = {monthly.CODE_VERSION_FOOTER: version} if version else None
        if isinstance(obj, Table):
            key = table_key(path, None)
            validate(obj.model, obj.frame, "/".join(path))
            store.write_parquet(obj.frame, key, footer=footer)
            context.add_output_metadata({"dagster/row_count": obj.frame.height, "path": redact_url(store.url(key))})
            return

        def written(month: str, key: str, rows: int) -> None:
            # Partition-scoped metadata lands on that month's materialization only, so a 120-month run
            # shows each month's own row count and path.
            metadata = stored_month_metadata(store, context.asset_key, key, rows)
            context.step_context.add_asset_metadata(metadata, asset_key=context.asset_key, partition_key=month)

        # Every table is checked against its Pandera model (schemas/) before it is stored.
        rows = write_months(store, path, obj, list(context.asset_partition_keys), validate, written, footer)

        # Run-wide figures go to the run's log: as output metadata they would land on every month's
        # materialization, above the month's own figures in the UI.
        if len(rows) > 1:
            context.log.info(
                f"{'/'.join(path)}: {sum(rows.values()):,} rows over {len(rows)} months {min(rows)}..{max(rows)}"
            )

    # -- input ---------------------------------------------------------------------------------
    def load_input(self, context: dg.InputContext) -> Mapping[str, pl.DataFrame] | pl.DataFrame:
        store = self._store()
        path = list(context.asset_key.path)
        if context.has_asset_partitions:
            return MonthlyFrames(store, path, list(context.asset_partition_keys))
        key = table_key(path, None)
        if not store.exists(key):
            raise FileNotFoundError(f"{'/'.join(path)} is not stored yet ({redact_url(store.url(key))})")
        return store.read_parquet(key)
