"""Asset checks: reconciliation of every month (raw records = games + quarantine), blocking the rating."""

import dagster as dg
import pyarrow.parquet as pq

from assets.io_manager import table_key
from assets.metadata import counts_table
from assets.resources import ObjectStoreResource
from pipeline.storage import ObjectStore

RECONCILIATION = "reconciliation"

RECONCILIATION_DESCRIPTION = """raw_games rows = games rows + quarantine rows, for every month of the run.

Nothing is lost between the landing zone and the validated tables. Blocking: a failing month stops
the rating of the run."""


def stored_rows(store: ObjectStore, asset: str, month: str) -> int | None:
    """Row count of a stored month from the Parquet footer (no data read); None when it is missing."""
    key = table_key([asset], month)
    if not store.exists(key):
        return None
    with store.open(key) as handle:
        return pq.ParquetFile(handle).metadata.num_rows


def reconcile(store: ObjectStore, months: list[str]) -> tuple[list[str], dict[str, int]]:
    """(failing months with their counts, totals) for the stored raw_games / games / quarantine."""
    failing: list[str] = []
    totals = {"raw_games": 0, "games": 0, "quarantine": 0}
    for month in months:
        counts = {asset: stored_rows(store, asset, month) for asset in totals}
        if any(n is None for n in counts.values()):
            missing = ", ".join(a for a, n in counts.items() if n is None)
            failing.append(f"{month}: not stored ({missing})")
            continue
        for asset, n in counts.items():
            totals[asset] += n
        if counts["raw_games"] != counts["games"] + counts["quarantine"]:
            failing.append(f"{month}: raw {counts['raw_games']} != games {counts['games']} + quarantine {counts['quarantine']}")
    return failing, totals


def build_checks(partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @dg.asset_check(
        asset="games",
        name=RECONCILIATION,
        blocking=True,
        # Same partitions as the asset, so the check covers the months just materialized (without
        # it Dagster evaluates the check against the wrong partition).
        partitions_def=partitions,
        additional_deps=["raw_games", "quarantine"],
        description=RECONCILIATION_DESCRIPTION,
    )
    def reconciliation(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> dg.AssetCheckResult:
        months = list(context.partition_keys)
        failing, totals = reconcile(store.store(), months)
        metadata: dict[str, object] = {
            "months_checked": len(months),
            "first_month": months[0],
            "last_month": months[-1],
            **{f"{asset}_rows": n for asset, n in totals.items()},
        }
        if failing:
            metadata["failing_months"] = dg.MetadataValue.md("\n".join(f"- {line}" for line in failing))
            metadata["failing_count"] = len(failing)
        else:
            metadata["totals"] = counts_table(totals, "table")
        return dg.AssetCheckResult(passed=not failing, metadata=metadata)

    return [reconciliation]
