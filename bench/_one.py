"""Run one workload in this process and print its metrics and peak memory as JSON (see bench/__main__.py)."""

import importlib
import json
import resource
import sys
import time

if __name__ == "__main__":
    name, module = sys.argv[1], sys.argv[2]
    started = time.perf_counter()
    metrics = importlib.import_module(module).WORKLOADS[name]()
    metrics["wall_seconds_total"] = round(time.perf_counter() - started, 2)
    metrics["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps({"workload": name, **metrics}))
