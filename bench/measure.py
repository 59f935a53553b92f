"""Timing helpers for workloads."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


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
