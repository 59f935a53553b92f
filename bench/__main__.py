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
from bench.workloads_backfill import LAST

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
    if "playerratings_ratio" in result:
        extra += (
            f"  CPU {result['engine_cpu_seconds']:.2f} s against PlayerRatings {result['playerratings_version']}'s"
            f" fide() {result['playerratings_cpu_seconds']:.2f} s: {result['playerratings_ratio']}x"
        )
    if "scheduled_month_cpu_seconds" in result:
        extra += (
            f"  then {LAST} as the schedule rates a new month: {result['scheduled_month_seconds']:.1f} s,"
            f" CPU {result['scheduled_month_cpu_seconds']:.1f} s"
            f" ({result['scheduled_month_share']:.1%} of the history's)"
        )
    if "cores_busy" in result:
        extra += f"  CPU {result['cpu_seconds']:,.1f} s ({result['cores_busy']} cores busy)"
    if "peak_tree_rss_mb" in result:
        extra += f"  (with its worker processes: peak {result['peak_tree_rss_mb']:,} MB, {result['runs']} runs)"
    return f"{result['workload']:24} {result['seconds']:8.2f} s{rate}  peak {result['peak_rss_mb']:,.0f} MB{extra}"


# The speed goals (docs/performance.md): (what, workload, its figure, or two workloads' figures divided, the bound, at
# most or at least, how the figure prints). Each is measured in the one `make bench` run that prints it.
GOALS = [
    (
        "4-scenario history CPU / one-scenario history CPU",
        ("backfill-fide-4-scenarios", "cpu_seconds"),
        ("backfill-fide", "cpu_seconds"),
        2.0,
        "max",
        "{:.2f}",
    ),
    (
        "scheduled month CPU / its history's CPU",
        ("backfill-fide", "scheduled_month_share"),
        None,
        0.03,
        "max",
        "{:.1%}",
    ),
    (
        "PlayerRatings fide() CPU / the engine's, same games",
        ("engine-vs-playerratings", "playerratings_ratio"),
        None,
        15.0,
        "min",
        "{:.1f}x",
    ),
    (
        "the engine's CPU / the bare yardstick's, same games",
        ("engine-vs-yardstick", "cpu_ratio"),
        None,
        1.2,
        "max",
        "{:.2f}x",
    ),
    (
        "peak memory of the 4-scenario history (2.5 GB)",
        ("backfill-fide-4-scenarios", "peak_tree_rss_mb"),
        None,
        2.5 * 1024,
        "max",
        "{:.0f} MB",
    ),
]


def ratio_goals(by_name: dict[str, dict]) -> list[dict]:
    """Each goal whose workloads ran (and were not skipped) in this run: the figure, the bound and whether it holds."""
    goals = []
    for what, (workload, figure), over, bound, kind, shown in GOALS:
        found = by_name.get(workload, {})
        value = found.get(figure)
        if over is not None and value is not None:
            below = by_name.get(over[0], {}).get(over[1])
            value = value / below if below else None
        if value is None:
            continue
        holds = value <= bound if kind == "max" else value >= bound
        target = ("<= " if kind == "max" else ">= ") + shown.format(bound)
        goals.append(
            {
                "goal": what,
                "measured": shown.format(value),
                "value": value,
                "target": target,
                "verdict": "holds" if holds else "MISSED",
            }
        )
    return goals


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
    goals = ratio_goals({result["workload"]: result for result in results})
    if goals:
        print("speed goals, measured side by side in this run:")
        for goal in goals:
            print(f"  {goal['goal']:58} {goal['measured']:>10}  goal {goal['target']:>8}  {goal['verdict']}")
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": __import__("os").cpu_count()}
    RESULTS.write_text(json.dumps({"machine": machine, "results": results, "goals": goals}, indent=2) + "\n")
    print(f"results: {RESULTS}")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
