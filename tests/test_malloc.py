"""pipeline.malloc: a process importing the pipeline keeps few malloc arenas and Polars' freed memory, unless told."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import malloc
from pipeline.malloc import (
    MALLOC_ARENAS,
    POLARS_ALLOCATOR_VARIABLE,
    POLARS_KEEPS_FREED_MEMORY,
    POLARS_OWN_SETTING,
    POLARS_RETURNS_FREED_MEMORY,
    limit_malloc_arenas,
    polars_returning_freed_memory_in_children,
)

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


def run_script(script: str, imports: str, variable: str, env: dict[str, str] | None) -> subprocess.CompletedProcess:
    """The script in a fresh Python, importing the pipeline or not, with `variable` only as `env` sets it."""
    environment = {k: v for k, v in os.environ.items() if k != variable} | (env or {})
    return subprocess.run(
        [sys.executable, "-c", script, imports], capture_output=True, text=True, check=True, cwd=ROOT, env=environment
    )


def arenas(imports: str, env: dict[str, str] | None = None) -> int:
    return run_script(THREADS_ALLOCATING, imports, "MALLOC_ARENA_MAX", env).stderr.count("Arena ")


def test_importing_the_pipeline_caps_the_malloc_arenas() -> None:
    assert arenas("nothing") > MALLOC_ARENAS  # glibc's default: an arena for each thread that meets contention
    assert 1 <= arenas("pipeline") <= MALLOC_ARENAS


def test_an_arena_limit_in_the_environment_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    assert arenas("pipeline", {"MALLOC_ARENA_MAX": "3"}) == 3
    monkeypatch.setenv("MALLOC_ARENA_MAX", "3")
    assert limit_malloc_arenas() is False


# Polars makes and drops 320 MB twice, waiting long enough between for its allocator to give freed pages back; the
# page faults of the loop say whether they were given back (and faulted in again) or kept for reuse.
POLARS_CHURNING = r"""
import os, resource, sys, time
if sys.argv[1] == "pipeline":
    import pipeline
import polars as pl
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(2):
    frame = pl.select(x=pl.int_range(20_000_000)).with_columns(y=pl.col("x") * 2)
    del frame
    time.sleep(0.8)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults, os.environ.get("_RJEM_MALLOC_CONF"))
"""


def page_faults(imports: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    faults, setting = run_script(POLARS_CHURNING, imports, POLARS_ALLOCATOR_VARIABLE, env).stdout.split()
    return int(faults), setting


def test_importing_the_pipeline_first_keeps_polars_freed_memory_for_reuse() -> None:
    kept, setting = page_faults("pipeline")
    returned, _ = page_faults("pipeline", {POLARS_ALLOCATOR_VARIABLE: "dirty_decay_ms:0,muzzy_decay_ms:0"})
    assert setting.endswith(POLARS_KEEPS_FREED_MEMORY)  # after Polars' own, which it puts first
    assert kept < 0.7 * returned  # 320 MB is 80,000 pages: faulted in once (kept), or again after the pause
    # A setting in the environment is the user's: left alone (and passed on to child processes).
    assert page_faults("pipeline", {POLARS_ALLOCATOR_VARIABLE: "dirty_decay_ms:0"})[1].endswith(",dirty_decay_ms:0")


def test_processes_side_by_side_start_with_the_workers_setting_then_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, f"dirty_decay_ms:500,{POLARS_KEEPS_FREED_MEMORY}")
    monkeypatch.setattr(malloc, "_CHOSEN", None)
    with polars_returning_freed_memory_in_children():
        assert os.environ[POLARS_ALLOCATOR_VARIABLE] == POLARS_RETURNS_FREED_MEMORY
    assert os.environ[POLARS_ALLOCATOR_VARIABLE] == f"dirty_decay_ms:500,{POLARS_KEEPS_FREED_MEMORY}"
    monkeypatch.setattr(malloc, "_CHOSEN", "narenas:1")
    with polars_returning_freed_memory_in_children():
        assert os.environ[POLARS_ALLOCATOR_VARIABLE] == f"{POLARS_RETURNS_FREED_MEMORY},narenas:1"


def test_what_polars_and_the_pipeline_wrote_is_not_taken_for_the_environments_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Polars puts its own setting first in the variable when it loads (polars/__init__.py), in this process or in a
    parent that passed the variable on, and a parent that ran the pipeline passes on the setting it keeps memory
    with: what the environment chose is what follows them, and nothing when nothing does.
    """
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, f"{POLARS_OWN_SETTING},narenas:1")
    assert malloc._chosen_setting() == "narenas:1"
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, POLARS_OWN_SETTING)
    assert malloc._chosen_setting() is None
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, f"{POLARS_OWN_SETTING},{POLARS_OWN_SETTING},narenas:1")
    assert malloc._chosen_setting() == "narenas:1"  # passed on by two processes that loaded Polars
    # A parent that ran the pipeline passes on its own setting: not a choice. A worker's setting is one.
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, f"{POLARS_OWN_SETTING},{POLARS_KEEPS_FREED_MEMORY}")
    assert malloc._chosen_setting() is None
    monkeypatch.setenv(POLARS_ALLOCATOR_VARIABLE, f"{POLARS_OWN_SETTING},{POLARS_RETURNS_FREED_MEMORY}")
    assert malloc._chosen_setting() == POLARS_RETURNS_FREED_MEMORY
    monkeypatch.delenv(POLARS_ALLOCATOR_VARIABLE)
    assert malloc._chosen_setting() is None
