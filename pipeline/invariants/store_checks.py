"""The checks over the whole store for a run's months.

Reconciliation, the landing zone's layout, the quarantine share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.formats.decoding import CAP_PER_FILE
from pipeline.ingest.landing import inventory, unplaced
from pipeline.invariants.catalog import LANDING_ZONE_LAYOUT, QUARANTINE_SHARE, RECONCILIATION, MonthProblems
from pipeline.store.monthly import read_stored_month, stored_rows, table_key
from pipeline.store.object_store import ObjectStore
from pipeline.validate.month_figures import QUARANTINE_WARNING_SHARE
from pipeline.validate.split import reconcile_files

# What the per-file reconciliation reads of each month's tables.
RECONCILED_COLUMNS = {
    "raw_games": ["source_file", "record_id"],
    "games": ["source_file", "game_id"],
    "quarantine": ["source_file", "record_id"],
}
# Expected scores are stored as hundredths / 100 in float64; identities hold to far better than this.


def reconcile_months(store: ObjectStore, months: list[str]) -> tuple[list[str], dict[str, int]]:
    """(failing months and files with their counts, totals) for the stored raw_games / games / quarantine.

    Per month, then per source file by record id (pipeline.validate.split.reconcile_files): every raw record of
    every file is exactly one game or one quarantined record. Each table is read once, two columns.
    """
    failing: list[str] = []
    totals = {"raw_games": 0, "games": 0, "quarantine": 0, "files": 0}
    for month in months:
        stored = {
            asset: read_stored_month(store, [asset], month, columns) for asset, columns in RECONCILED_COLUMNS.items()
        }
        tables = {asset: table for asset, table in stored.items() if table is not None}
        if len(tables) < len(stored):
            missing = ", ".join(asset for asset, table in stored.items() if table is None)
            failing.append(f"{month}: not stored ({missing})")
            continue
        counts = {asset: table.height for asset, table in tables.items()}
        for asset, n in counts.items():
            totals[asset] += n
        if counts["raw_games"] != counts["games"] + counts["quarantine"]:
            failing.append(
                f"{month}: raw {counts['raw_games']} != games {counts['games']} + quarantine {counts['quarantine']}"
            )
        per_file = reconcile_files(tables["raw_games"], tables["games"], tables["quarantine"])
        totals["files"] += per_file.height
        for file, records, games, quarantined in (
            per_file.filter(~pl.col("ok")).select("source_file", "records", "games", "quarantined").iter_rows()
        ):
            counted = (
                "the record ids differ"
                if records == games + quarantined
                else f"{games} games + {quarantined} quarantined"
            )
            failing.append(f"{month} {file}: {records} records, {counted}")
    return failing, totals


def mostly_quarantined(store: ObjectStore, months: Sequence[str], share: float = QUARANTINE_WARNING_SHARE) -> list[str]:
    """'<month>: q of n records (p%) quarantined' for the months whose quarantine exceeds `share` of the records."""
    found = []
    for month in months:
        records, quarantined = stored_rows(store, "raw_games", month), stored_rows(store, "quarantine", month)
        if records and quarantined is not None and quarantined > share * records:
            found.append(f"{month}: {quarantined:,} of {records:,} records ({quarantined / records:.0%}) quarantined")
    return found


def files_not_read_whole(store: ObjectStore, months: Sequence[str]) -> list[str]:
    """'<file>: <why>' for each dump of `months` a cap per file kept from being read whole (its quarantined record
    says so: decoding.CAP_PER_FILE), in month and file order: one record of the file stands for all it holds.
    """
    found = []
    for month in months:
        key = table_key(["quarantine"], month)
        if not store.exists(key):
            continue
        capped = (
            store.scan_parquet(key)
            .filter((pl.col("reason") == "unparseable") & pl.col("detail").str.contains(CAP_PER_FILE, literal=True))
            .select("source_file", "detail")
            .unique(maintain_order=True)
            .collect()
        )
        found += [f"{file}: {detail.removeprefix(f'{file}: ')}" for file, detail in capped.sort("source_file").rows()]
    return found


def reconciliation_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The reconciliation check: failing months and files (reconcile_months), and the rows and files it counted."""
    failing, totals = reconcile_months(store, months)
    rows = {f"{asset}_rows": totals[asset] for asset in RECONCILED_COLUMNS}
    return MonthProblems(failing, {"source_files_checked": totals["files"], **rows})


def quarantine_share_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The quarantine-share check: the months more than half quarantined."""
    found = mostly_quarantined(store, months)
    return MonthProblems(found, {"mostly_quarantined_months": len(found)})


def landing_layout_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The landing-zone layout check: the files under raw/ that no month accounts for (the same for every month)."""
    found = [f"{entry.key}: {entry.problem}" for entry in unplaced(inventory(store))]
    return MonthProblems(found, {"unplaced_files": len(found)})


@dataclass(frozen=True)
class StoreCheck:
    """A check over the whole store for the months of a run, declared on the table it guards."""

    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]
    reads: tuple[str, ...] = ()  # the other tables it reads
    # A warning's months are rated all the same: the dumps in place, every record accounted for.
    warning: bool = False


STORE_CHECKS = {
    RECONCILIATION: StoreCheck(reconciliation_problems, reads=("raw_games", "quarantine")),
    LANDING_ZONE_LAYOUT: StoreCheck(landing_layout_problems, warning=True),
    QUARANTINE_SHARE: StoreCheck(quarantine_share_problems, reads=("raw_games",), warning=True),
}


def problems_by_month(problems: Sequence[str], months: Sequence[str]) -> dict[str, list[str]]:
    """Each month's problems: those whose text starts with the month ('2024-02: ...'), and those naming no month
    (a whole-store problem fails every month).
    """
    store_wide = [p for p in problems if not any(p.startswith(month) for month in months)]
    return {month: [p for p in problems if p.startswith(month)] + store_wide for month in months}
