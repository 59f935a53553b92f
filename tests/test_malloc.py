"""pipeline.malloc: a process that imports the pipeline keeps few malloc arenas, unless its environment chose."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.malloc import MALLOC_ARENAS, limit_malloc_arenas

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's")

# Eight threads allocating at once, then glibc's own report of its arenas (malloc_stats, on stderr).
THREADS_ALLOCATING = r"""
import ctypes, sys, threading
if sys.argv[1] == "pipeline":
    import pipeline
start = threading.Barrier(8)
held = []
def allocate():
    start.wait()
    held.extend(bytearray(100_000) for _ in range(200))
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
ctypes.CDLL(None).malloc_stats()
"""


def arenas(imports: str, env: dict[str, str] | None = None) -> int:
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | (env or {})
    result = subprocess.run(
        [sys.executable, "-c", THREADS_ALLOCATING, imports],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=environment,
    )
    return result.stderr.count("Arena ")


def test_importing_the_pipeline_caps_the_malloc_arenas() -> None:
    assert arenas("nothing") > MALLOC_ARENAS  # glibc's default: an arena for each thread that meets contention
    assert 1 <= arenas("pipeline") <= MALLOC_ARENAS


def test_an_arena_limit_in_the_environment_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    assert arenas("pipeline", {"MALLOC_ARENA_MAX": "3"}) == 3
    monkeypatch.setenv("MALLOC_ARENA_MAX", "3")
    assert limit_malloc_arenas() is False
