"""The checks of one table's stored months: its schema (from the Parquet footers) and duplicate ids."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from pipeline.invariants.catalog import MonthProblems
from pipeline.store.monthly import read_stored_month, table_key
from pipeline.store.object_store import ObjectStore
from schemas.conformance import ascends_strictly

# Footers are tiny: fetch many at once so a 200-month check on S3 is not 200 sequential round trips.
FOOTER_READ_THREADS = 16


def schema_problems(
    store: ObjectStore, asset_path: Sequence[str], expected: pl.Schema, months: Sequence[str]
) -> MonthProblems:
    """Months whose stored file is missing or whose footer schema differs from `expected` (names, order, types)."""

    def footer(month: str) -> dict[str, pl.DataType] | None:
        key = table_key(asset_path, month)
        return store.parquet_schema(key) if store.exists(key) else None

    with ThreadPoolExecutor(max_workers=min(FOOTER_READ_THREADS, max(1, len(months)))) as pool:
        footers = list(pool.map(footer, months))
    problems = []
    want = list(expected.items())
    for month, found in zip(months, footers, strict=True):
        if found is None:
            problems.append(f"{month}: not stored")
        elif list(found.items()) != want:
            missing = [n for n in expected if n not in found]
            extra = [n for n in found if n not in expected]
            retyped = [f"{n} {found[n]} (want {t})" for n, t in want if n in found and found[n] != t]
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unexpected {', '.join(extra)}" if extra else "",
                    f"types {', '.join(retyped)}" if retyped else "",
                    "column order" if not (missing or extra or retyped) else "",
                )
                if part
            )
            problems.append(f"{month}: {detail}")
    return MonthProblems(problems, {"columns": len(want)})


def duplicate_ids(frame: pl.DataFrame, column: str) -> list:
    """Values of `column` that occur more than once, sorted."""
    if ascends_strictly(frame[column]):  # a list in id order: known unique without hashing 737,000 ids
        return []
    return sorted(frame.group_by(column).len().filter(pl.col("len") > 1)[column].to_list())


def duplicate_problems(
    store: ObjectStore, asset_path: Sequence[str], column: str, months: Sequence[str]
) -> MonthProblems:
    """Months whose stored table is missing or holds a value of `column` more than once."""
    problems, rows = [], 0
    for month in months:
        frame = read_stored_month(store, asset_path, month, [column])
        if frame is None:
            problems.append(f"{month}: not stored")
            continue
        rows += frame.height
        twice = duplicate_ids(frame, column)
        if twice:
            problems.append(f"{month}: {len(twice)} duplicate {column}(s), e.g. {twice[:5]}")
    return MonthProblems(problems, {"rows": rows})
