"""The allocators' settings for this process: few malloc arenas, and Polars' allocator keeping freed memory a while."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# glibc gives each thread that meets contention an arena of its own, up to 8 per core, and keeps what is freed in
# an arena for that arena. The publish threads make 50-80 MB of text a month each, NumPy and Python allocate
# through glibc (Polars has its own allocator): 102 months of published lists ended at 1.48 GB of resident
# memory with the default and at 0.77 GB with two arenas, in the same time.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number for the arena limit (glibc's malloc.h)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap the process's malloc arenas (glibc's mallopt); whether it was done.

    Arenas made before the call stay; later threads share the capped ones. Not done where the
    environment sets MALLOC_ARENA_MAX (glibc applied that already) or the C library is not glibc
    (macOS, musl: their allocators have no such arenas, and mallopt's numbers differ).
    """
    if "MALLOC_ARENA_MAX" in os.environ or not _is_glibc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))


def _is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None  # 'glibc 2.36'; no such name elsewhere
    except (ValueError, OSError, AttributeError):
        return False


# Polars' allocator (jemalloc) is set by Polars to give pages freed for 0.5 s back to the system (1 s for those half
# given back), and a month's work then faults the same memory in again: 2.5 million page faults and 12 s of system
# time in 24 FIDE-scale months. Kept 10 s, the same run took 0.8 million faults and 6-7 s (docs/performance.md,
# "Polars' allocator"), for about 0.25 GB more resident memory. Polars puts its own setting first in the variable
# when it loads, so a setting made before that follows it, and wins.
POLARS_ALLOCATOR_VARIABLE = "_RJEM_MALLOC_CONF"
POLARS_KEEPS_FREED_MEMORY = "dirty_decay_ms:10000,muzzy_decay_ms:10000"
POLARS_OWN_SETTING = "dirty_decay_ms:500,muzzy_decay_ms:1000"  # what Polars puts first in the variable
# Worker processes side by side (`ratings run --workers N`), whose peaks add up: freed memory given back after 2 s
# (4 s for the half given back). A month frees and takes back the same few hundred MB, and Polars' own 0.5 s made it
# fault in again: two fide-scale chains side by side, 204 months, 143-144 -> 132-133 CPU-s each (system 14.6 -> 10.5
# s), for a peak 100 MB higher (1,827 -> 1,930 MB for the two; kept 10 s: 131 CPU-s, 2,010 MB); the shared tables'
# two workers 209 -> 199 CPU-s, 1,944 -> 2,104 MB.
POLARS_RETURNS_FREED_MEMORY = "dirty_decay_ms:2000,muzzy_decay_ms:4000"


def _chosen_setting() -> str | None:
    """The variable as the environment gave it to this process (the user's choice, or a parent process's), without
    what Polars and this module wrote there on their own: Polars puts its own setting first when it loads (in this
    process or in parents that passed it on, a test runner's workers twice), and a parent that ran the pipeline
    passes on keep_polars_freed_memory's setting (the benchmarks', a `ratings` command started by another). Only
    the rest is a choice: worker processes are given theirs (polars_returning_freed_memory_in_children).
    """
    setting = os.environ.get(POLARS_ALLOCATOR_VARIABLE)
    while setting is not None and setting.startswith(POLARS_OWN_SETTING):
        setting = setting.removeprefix(POLARS_OWN_SETTING).removeprefix(",") or None
    return None if setting == POLARS_KEEPS_FREED_MEMORY else setting


_CHOSEN = _chosen_setting()


def keep_polars_freed_memory() -> bool:
    """Before Polars loads, ask its allocator to keep freed memory for reuse (POLARS_KEEPS_FREED_MEMORY); whether it
    was done. Not where the environment chose already (its choice stands) or Polars is loaded (its allocator has
    read the variable).
    """
    if _CHOSEN is not None or "polars" in sys.modules:
        return False
    os.environ[POLARS_ALLOCATOR_VARIABLE] = POLARS_KEEPS_FREED_MEMORY
    return True


@contextmanager
def polars_returning_freed_memory_in_children() -> Iterator[None]:
    """Within the block, child processes start with POLARS_RETURNS_FREED_MEMORY, then whatever the environment chose
    (the later wins): processes side by side give memory back soon, as their peaks add up. This process's allocator
    is not changed (it started already).
    """
    before = os.environ.get(POLARS_ALLOCATOR_VARIABLE)
    os.environ[POLARS_ALLOCATOR_VARIABLE] = ",".join(filter(None, [POLARS_RETURNS_FREED_MEMORY, _CHOSEN]))
    try:
        yield
    finally:
        if before is None:
            del os.environ[POLARS_ALLOCATOR_VARIABLE]
        else:
            os.environ[POLARS_ALLOCATOR_VARIABLE] = before
