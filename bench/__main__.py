"""Run the benchmark workloads, each in its own process so that peak memory is its own.

Workloads live in bench/workloads_*.py modules as `WORKLOADS = {name: function}`; a function does
its own set-up, times the measured part with `bench.measure.timed`, and returns a dict of metrics
(at least `seconds`, plus `items` and `unit` for throughput).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import subprocess
import sys
from pathlib import Path

import bench

RESULTS = Path(__file__).resolve().parent / "results.json"


# Short workloads first: quick feedback, and they are timed before the backfills fill the page cache.
MODULE_ORDER = ["workloads_engine", "workloads_ingest", "workloads_generate", "workloads_backfill"]


def discover() -> dict[str, str]:
    """Workload name -> module name, in MODULE_ORDER (other modules after, by name)."""
    modules = sorted(
        (m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("workloads_")),
        key=lambda name: (MODULE_ORDER.index(name) if name in MODULE_ORDER else len(MODULE_ORDER), name),
    )
    found: dict[str, str] = {}
    for module in modules:
        full = f"bench.{module}"
        for name in importlib.import_module(full).WORKLOADS:
            found[name] = full
    return found


def describe(result: dict) -> str:
    if "error" in result:
        return f"{result['workload']:24} ERROR {result['error']}"
    if "skipped" in result:
        return f"{result['workload']:24} SKIPPED: {result['skipped']}"
    rate = ""
    if result.get("items") and result.get("seconds"):
        rate = f"  {result['items'] / result['seconds']:>12,.0f} {result.get('unit', 'items')}/s"
    extra = ""
    if "speedup" in result:
        lists = "identical" if result.get("identical") else "DIFFERENT"
        extra = f"  {result['speedup']}x the reference ({result['reference_seconds']:.2f} s), lists {lists}"
    if "cpu_ratio" in result:
        extra += (
            f"  CPU {result['engine_cpu_seconds']:.2f} s"
            f" against the yardstick's {result['yardstick_cpu_seconds']:.2f} s:"
            f" {result['cpu_ratio']}x"
        )
    if "cores_busy" in result:
        extra += f"  CPU {result['cpu_seconds']:,.1f} s ({result['cores_busy']} cores busy)"
    if "peak_tree_rss_mb" in result:
        extra += f"  (with its worker processes: peak {result['peak_tree_rss_mb']:,} MB, {result['runs']} runs)"
    return f"{result['workload']:24} {result['seconds']:8.2f} s{rate}  peak {result['peak_rss_mb']:,.0f} MB{extra}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="workloads to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the workloads")
    args = parser.parse_args(argv)
    workloads = discover()
    if args.list:
        print("\n".join(workloads))
        return 0
    unknown = [n for n in args.names if n not in workloads]
    if unknown:
        print(f"unknown workload(s): {', '.join(unknown)}; known: {', '.join(workloads)}", file=sys.stderr)
        return 2
    results = []
    for name in args.names or list(workloads):
        # A fresh interpreter per workload, so that its peak memory is its own.
        child = subprocess.run(
            [sys.executable, "-m", "bench._one", name, workloads[name]], capture_output=True, text=True
        )
        result = (
            json.loads(child.stdout)
            if child.returncode == 0 and child.stdout.strip()
            else {"workload": name, "error": (child.stderr.strip().splitlines() or ["failed"])[-1]}
        )
        results.append(result)
        print(describe(result), flush=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": __import__("os").cpu_count()}
    RESULTS.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"results: {RESULTS}")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
