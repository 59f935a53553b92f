"""Timing helpers for workloads."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from typing import Any


def cpu_seconds(children: bool = False) -> float:
    """User and system CPU of this process, all threads, and with `children` that of its ended child processes too
    (a run's worker processes): games per CPU-second is the one-core throughput.
    """
    usages = [resource.getrusage(resource.RUSAGE_SELF)]
    if children:
        usages.append(resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(usage.ru_utime + usage.ru_stime for usage in usages)


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def repeated(function: Callable[[], Any], runs: int) -> tuple[Any, float, float]:
    """(result of the last call, best seconds, median seconds) over `runs` calls.

    The best of several runs is the usual measure of a short computation: the first call in a
    process also pays one-time costs (thread pools, allocator growth) and a shared machine adds noise.
    """
    times = []
    result = None
    for _ in range(runs):
        result, seconds = timed(function)
        times.append(seconds)
    return result, min(times), statistics.median(times)
