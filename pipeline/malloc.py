"""The C allocator's settings for this process: few malloc arenas, so that memory one thread frees others reuse."""

from __future__ import annotations

import ctypes
import os

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
