"""Timing helper for workloads."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started
