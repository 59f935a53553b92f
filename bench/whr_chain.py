"""A `system: whr` chain on a store, month by month as `ratings run` rates it, without Dagster.

What it stores and holds in memory, and what a restart reads.

`python -m bench.whr_chain --store DIR --to 2024-11` rates the store's validated games (`games/<M>`, made by a run
or by ingest alone) from its first month with `rate_months` and writes each month's tables through the store's
writer (`write_tables`, as the rate asset does); per month it prints the seconds, the rows and Parquet bytes of
each table and the resident memory. `--from 2024-12` then continues the stored chain in a new process (a restart:
the history rebuilt from what is stored) and also prints every stored file the restart opened. `--set k=v`
overrides the scenario's parameters (e.g. fewer full sweeps to measure faster); `--discard TABLE,...` removes
those tables' months once measured, except the last (a store without room for every month of them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from pipeline.months import month_range
from pipeline.scenarios.chain import chain_tables, rate_months
from pipeline.scenarios.model import load_scenarios
from pipeline.store.monthly import MonthlyFrames, stored_table_months, write_tables
from pipeline.store.object_store import ObjectStore
from schemas.conformance import validated

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "scenarios-whr.yaml"


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ReadLog:
    """Every stored file the chain opens for reading (key, bytes on disk, the columns asked for), by patching the
    store's readers.
    """

    def __init__(self, store: ObjectStore) -> None:
        self.opened: list[dict[str, Any]] = []
        # A local store: read_parquet opens the file itself, not through open (which would count it twice).
        for name in ("read_parquet", "read_bytes", "open", "scan_parquet"):
            setattr(store, name, self._logged(store, name, getattr(store, name)))

    def _logged(self, store: ObjectStore, name: str, read: Any) -> Any:
        def logged(*parts: str, **options: Any) -> Any:
            path = store.path(*parts)
            size = _bytes_read(path, options.get("columns")) if os.path.exists(path) else 0
            self.opened.append({"key": "/".join(parts), "bytes": size, "how": name, "columns": options.get("columns")})
            return read(*parts, **options)

        return logged

    def summary(self) -> dict[str, Any]:
        tables: dict[str, dict[str, float]] = {}
        for entry in self.opened:
            table = entry["key"].rsplit("/", 1)[0] if entry["key"].endswith(".parquet") else entry["key"]
            table = table.split("/")[0] + "/players" if table.startswith("raw/players") else table
            row = tables.setdefault(table, {"files": 0, "mb": 0.0})
            row["files"] += 1
            row["mb"] = round(row["mb"] + entry["bytes"] / 2**20, 1)
        return {"files": len(self.opened), "mb": round(sum(e["bytes"] for e in self.opened) / 2**20, 1), **tables}


def _bytes_read(path: str, columns: list[str] | None) -> int:
    """The bytes a read of `path` takes: the whole file, or of a Parquet file read for some columns, those columns'
    compressed chunks and the footer.
    """
    if columns is None or not path.endswith(".parquet"):
        return os.path.getsize(path)
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    chunks = (meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns))
    return meta.serialized_size + sum(c.total_compressed_size for c in chunks if c.path_in_schema in columns)


def run(args: argparse.Namespace) -> dict[str, Any]:
    store = ObjectStore(args.store)
    scenario = load_scenarios(args.scenarios)[args.scenario]
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    scenario = scenario.model_copy(update={"set": {**scenario.set, **overrides}})
    held = stored_table_months(store, ["games"])
    chain_start = held[0]
    months = month_range(args.first or chain_start, args.last or held[-1])
    log = ReadLog(store) if args.first and args.first > chain_start else None
    started, cpu = time.perf_counter(), time.process_time()
    rate = rate_months(store, scenario, months, chain_start)
    start_seconds = time.perf_counter() - started
    restart = {"seconds": round(start_seconds, 1), "peak_mb": round(peak_mb()), "read": log.summary() if log else None}
    if log:
        print(f"  restart: {json.dumps(restart)}", file=sys.stderr, flush=True)
        log.opened.clear()
    games = MonthlyFrames(store, ["games"], held)
    tables = chain_tables(scenario)
    paths = [([scenario.name, t.name], t.model) for t in tables]
    per_month: dict[str, dict[str, Any]] = {}
    discard = set(args.discard.split(",")) if args.discard else set()

    def frames() -> Iterator[tuple[str, tuple[pl.DataFrame, ...]]]:
        for month in months:
            t0 = time.perf_counter()
            made = rate(month, games.__getitem__)
            per_month[month] = {"seconds": round(time.perf_counter() - t0, 2), "rss_mb": round(rss_mb())}
            yield month, made

    def written(index: int, month: str, key: str, rows: int) -> None:
        name = tables[index].name
        size = os.path.getsize(store.path(key))
        per_month[month][name] = [rows, size]
        if name in discard and month != months[-1]:
            store.remove(key)
        if index == len(tables) - 1:
            per_month[month]["peak_mb"] = round(peak_mb())
            print(f"  {month}: {json.dumps(per_month[month])}", file=sys.stderr, flush=True)

    write_tables(store, paths, months, frames(), lambda model, frame, _: validated(model, frame), written)
    totals = {
        t.name: {
            "rows": sum(m[t.name][0] for m in per_month.values()),
            "mb": round(sum(m[t.name][1] for m in per_month.values()) / 2**20, 1),
            "largest_month_mb": round(max(m[t.name][1] for m in per_month.values()) / 2**20, 1),
        }
        for t in tables
    }
    return {
        "store": args.store,
        "months": f"{months[0]}..{months[-1]}",
        "params": scenario.set,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "peak_mb": round(peak_mb()),
        "restart": restart if log else None,
        "tables": totals,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--scenarios", default=str(EXAMPLE))
    parser.add_argument("--scenario", default="whr")
    parser.add_argument("--from", dest="first", default=None, metavar="YYYY-MM")
    parser.add_argument("--to", dest="last", default=None, metavar="YYYY-MM")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--discard", default="", metavar="TABLE,...")
    args = parser.parse_args(argv)
    print(json.dumps(run(args), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
