"""Column-level lineage for the UI: schemas.lineage's table of upstream columns as Dagster's TableColumnLineage."""

import dagster as dg

from schemas.lineage import COLUMN_LINEAGE, SHARED_TABLES


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
