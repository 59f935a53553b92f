"""`ratings run` as waves of runs, then the comparison.

The shared tables by month ranges and the scenarios side by side in worker processes.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from itertools import accumulate
from multiprocessing import reduction
from typing import Any, NamedTuple

from pipeline.malloc import polars_returning_freed_memory_in_children
from pipeline.months import add_months
from pipeline.operations import progress

SHARED_GROUPS = ("ingest", "validate")
COMPARISON_GROUPS = ("reports", "evaluation")
# The monthly tables made from every compared chain (each month's accuracy on the games they all rated): after the
# chains, before the comparison, over every month of the run.
COMMON_GROUPS = ("common_games",)


# `ratings run --publish`: which months' readable lists (CSV, TXT, HTML under lists/) a run makes (run_plan.
# published_months). A rating officer reads the list just rated and an analyst any month on demand (`ratings list`).
PUBLISH_LAST, PUBLISH_ALL, PUBLISH_NONE = "last", "all", "none"
PUBLISH_CHOICES = (PUBLISH_LAST, PUBLISH_ALL, PUBLISH_NONE)

# What a stage does with the scenarios' published lists (the `publish` stage's assets): select them with the rest,
# leave them out, select them beside the stage's groups, or select them alone.
LISTS_KEPT, LISTS_LEFT_OUT, LISTS_ADDED, LISTS_ONLY = "kept", "left_out", "added", "only"


class Stage(NamedTuple):
    """One run of `ratings run`: a name (its `ratings/stage` tag), the asset groups it selects (none: all), its first
    and last month (None: every month of the `ratings run`), what it does with the published lists (LISTS_*), and
    groups it leaves out.
    """

    name: str
    groups: tuple[str, ...]
    months: tuple[str, str] | None = None
    lists: str = LISTS_KEPT
    left_out: tuple[str, ...] = ()


# One run unless asked for more: one run already keeps about 1.4 of the 2 cores busy (Polars' threads,
# the Parquet writer), so a second process adds little (docs/performance.md, "Side by side").
DEFAULT_WORKERS = 1


def stages(
    scenarios: Sequence[str],
    workers: int,
    months: Sequence[str] = (),
    weights: Sequence[int] = (),
    published: Sequence[str] | None = None,
    seeded: Sequence[str] = (),
) -> list[list[Stage]]:
    """The runs in waves: one run of everything with one worker; else the shared tables in `workers` runs of
    consecutive months (months are independent there; `weights`, e.g. each month's dump bytes, balance them),
    then each scenario's chain in its own run (`workers` at a time: chains are independent), then the monthly tables
    made from every chain (COMMON_GROUPS), then what compares them.

    `published`: the months whose readable lists the runs make (None: every month). Where that is not every month,
    the chains leave the lists out and runs over the published months' stretches make them, the last of these
    with the comparison, so that the report index links the lists just made. `seeded`: the scenarios whose month
    reads another chain's list (a rapid or blitz list seeded by a standard list): their chains run in a wave after
    the others.
    """
    every = published is None or list(published) == list(months)
    blocks = [] if every else consecutive_stretches(list(published or ()))
    publishing = [[Stage("publish", (), block, LISTS_ONLY)] for block in blocks[:-1]]
    closing = Stage("comparison", COMPARISON_GROUPS, blocks[-1], LISTS_ADDED) if blocks else None
    if workers <= 1:
        if every:
            return [[Stage("all", ())]]
        if closing is None:
            return [[Stage("all", (), lists=LISTS_LEFT_OUT)]]
        return [[Stage("all", (), lists=LISTS_LEFT_OUT, left_out=COMPARISON_GROUPS)], *publishing, [closing]]
    ranges = month_ranges(months, weights or [1] * len(months), workers)
    shared = [Stage("shared", SHARED_GROUPS, first_last) for first_last in ranges] if len(ranges) > 1 else []
    chains = [Stage(name, (name,), lists=LISTS_KEPT if every else LISTS_LEFT_OUT) for name in scenarios]
    chain_waves = [
        wave for wave in ([c for c in chains if c.name not in seeded], [c for c in chains if c.name in seeded]) if wave
    ]
    return [
        shared or [Stage("shared", SHARED_GROUPS)],
        *chain_waves,
        [Stage("common_games", COMMON_GROUPS)],
        *publishing,
        [closing or Stage("comparison", COMPARISON_GROUPS)],
    ]


def consecutive_stretches(months: Sequence[str]) -> list[tuple[str, str]]:
    """Sorted months as (first, last) runs of consecutive months: ['2024-01', '2024-02', '2024-05'] ->
    [('2024-01', '2024-02'), ('2024-05', '2024-05')].
    """
    stretches: list[tuple[str, str]] = []
    for month in months:
        if stretches and add_months(stretches[-1][1], 1) == month:
            stretches[-1] = (stretches[-1][0], month)
        else:
            stretches.append((month, month))
    return stretches


def month_ranges(months: Sequence[str], weights: Sequence[int], parts: int) -> list[tuple[str, str]]:
    """`months` (in order) cut into at most `parts` runs of consecutive months of about equal total weight.

    Each cut falls at the month boundary nearest its equal share of the total; no range is empty. Weights
    that are all zero count each month as one.
    """
    if len(months) != len(weights):
        raise ValueError(f"{len(months)} months but {len(weights)} weights")
    if not months:
        return []
    counted = [max(weight, 0) for weight in weights]
    running = list(accumulate(counted if any(counted) else [1] * len(months)))
    ends: list[int] = []  # the index of each range's last month but the final one's
    for part in range(1, parts):
        share = running[-1] * part / parts
        end = bisect_left(running, share)
        if end > 0 and share - running[end - 1] < running[end] - share:
            end -= 1
        end = max(end, ends[-1] + 1 if ends else 0)
        if end >= len(months) - 1:
            break
        ends.append(end)
    starts = [0, *(end + 1 for end in ends)]
    return [(months[start], months[end]) for start, end in zip(starts, [*ends, len(months) - 1], strict=True)]


# The progress queue of a worker process, handed over when the process starts (a queue cannot travel with a task).
_progress_queue: Any = None


# <linux/prctl.h>: prctl's option naming the signal the kernel sends a process when the thread that started it ends.
PR_SET_PDEATHSIG = 1


class _HandedOver:
    """A descriptor of this process that a spawned worker process receives as its own, open on the same file (a
    spawned process otherwise starts with none of its parent's descriptors).
    """

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        # DupFd while the process is being spawned: the descriptor is passed to the new process as it starts.
        return _received, (reduction.DupFd(self.fd),)


def _received(handle: Any) -> int:
    fd: int = handle.detach()
    os.set_inheritable(fd, False)  # the worker's own: not handed on to what the worker starts
    return fd


def _end_with(parent: int) -> None:
    """Have the kernel kill this worker process when `parent`, which started it, ends (Linux), and end now if it
    already has: a stage is a whole Dagster run, which an orphan would go on writing to the store (the lock held
    with the parent's open lock file: held_lock_files). Elsewhere a no-op: an orphan finishes its stage.
    """
    if sys.platform.startswith("linux"):
        # Sent when the thread that started the worker ends: the caller's or the pool's manager thread (which
        # replaces ended workers), both outliving the pool's workers. A failed call leaves an orphan its stage
        # (a local store's lock still held), which is no reason to refuse the run.
        with contextlib.suppress(OSError, AttributeError):
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl.argtypes, prctl.restype = [ctypes.c_int, *[ctypes.c_ulong] * 4], ctypes.c_int
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died before the call above: this process then belongs to another one already.
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(messages: Any, parent: int, lock_files: Sequence[Any]) -> None:
    """A worker process's initializer: end with `parent`, keep the queue its QueueReporter puts reports on, and end
    without Python's last collection. `lock_files`: the descriptors of the store's lock (held_lock_files), handed
    over (_HandedOver) and open until this process ends, so that the lock is free only once every process of the
    run has ended.
    """
    global _progress_queue
    _end_with(parent)
    _progress_queue = messages
    # Python ends by walking every object left for cycles (Dagster's and the imports', some 300,000) although the
    # process's memory goes with it: about 1 CPU-second a worker, 3 after a scenario's chain. Frozen (registered
    # before the stage's imports, so after their exit handlers), they are not walked; the `ratings` command's own
    # process does the same (assets/runtime/cli.py).
    atexit.register(gc.freeze)


class QueueReporter:
    """A progress reporter for a worker process: sends each report to the parent through the queue the process was
    started with (picklable, unlike a lambda, and stateless: the queue is the process's own).
    """

    def __call__(self, step: str, month: str, done: int, total: int) -> None:
        if _progress_queue is not None:
            _progress_queue.put((step, month, done, total))


def _forward_progress(messages: Any, stop: threading.Event) -> None:
    """Render in this process the progress the worker processes send (one console line, not several), until `stop`
    and the queue is empty. This process never writes to the queue: a worker killed while writing cannot hang it.
    """
    while True:
        try:
            progress.report(*messages.get(timeout=0.2))
        except queue.Empty:
            if stop.is_set():
                return


# Once the command is interrupted, how long a wave's running stages have to end by themselves (a terminal's Ctrl-C
# reaches every process of its group: Dagster fails each worker's run), then to end on the SIGINT they are sent,
# before they are killed.
STOP_GRACE_SECONDS = (2.0, 10.0)


def _stop_stages(futures: Sequence[Future[Any]]) -> None:
    """End an interrupted wave: its stages not yet started are cancelled; its worker processes have
    STOP_GRACE_SECONDS[0] to end by themselves, then are sent SIGINT (a signal to this process alone did not reach
    them), and are killed if still running STOP_GRACE_SECONDS[1] later (the next run marks their Dagster runs failed).
    A worker the pool starts meanwhile (for a stage it had already queued) is sent SIGINT at once. Once no worker is
    left, nothing more is waited for: the pool's thread may have died starting one (its results would never come).
    Once every stage has ended, the pool ends its workers as usual.
    """
    for future in futures:
        future.cancel()  # only those not yet handed to a worker
    reached = {child.pid for child in multiprocessing.active_children()}  # by a terminal's Ctrl-C, if it was one
    signalled: set[int] = set()
    started = time.monotonic()
    none_since: float | None = None
    while not all(future.done() for future in futures) and time.monotonic() < started + sum(STOP_GRACE_SECONDS):
        children = multiprocessing.active_children()
        none_since = None if children else (none_since or time.monotonic())
        if none_since is not None and time.monotonic() - none_since > 0.5:
            break
        for child in children:
            late = child.pid not in reached or time.monotonic() > started + STOP_GRACE_SECONDS[0]
            if child.pid is not None and child.pid not in signalled and late:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGINT)
                signalled.add(child.pid)
        wait(futures, timeout=0.1)
    if all(future.done() for future in futures):
        return  # a worker still ending, or one started to replace it, is the pool's to end (killed, it could die
        # holding a lock of the pool's queues that the others then wait for)
    for child in multiprocessing.active_children():
        child.kill()
        child.join()


def run_waves(
    waves: list[list[Stage]], execute: Callable[..., dict[str, Any]], args: tuple, workers: int
) -> list[dict[str, Any]]:
    """execute(stage, *args, reporter) for every stage, wave after wave, a wave's stages `workers` at a time in
    spawned worker processes, a fresh one per stage (`execute` must pickle); nothing after a wave with an outcome
    not `success`, nor after Ctrl-C (KeyboardInterrupt: the wave's workers are ended first, _stop_stages). With one
    worker, every stage runs in this process.

    A wave of one stage goes to a worker process too: the closing run (the comparison and every scenario's lists)
    made this process, which keeps Polars' freed memory for reuse, the history's peak (2.49 of 2.52 GB, four
    scenarios); a worker gives it back as it goes, and this process stays at the size of its imports.
    """
    outcomes: list[dict[str, Any]] = []
    for wave in waves:
        if workers <= 1:
            done = [execute(stage, *args, None) for stage in wave]
        else:
            context = multiprocessing.get_context("spawn")  # no forked Polars thread pools
            # A plain queue handed to each worker as it starts, not a Manager's: a Manager is a server process of
            # its own, which imports what this one did (about 220 MB and 2 CPU-s a wave, beside the workers' peak).
            messages, stop = context.Queue(), threading.Event()
            forwarder = threading.Thread(target=_forward_progress, args=(messages, stop), daemon=True)
            forwarder.start()
            # The workers belong to this run's lock: they hold its file too (a local store's flock is then free only
            # once every process of the run has ended) and die with this process (Linux). Not at import: the
            # store's libraries load slowly.
            from pipeline.store.lock import held_lock_files

            lock_files = [_HandedOver(fd) for fd in held_lock_files()]
            # A fresh process per stage: a process that ran one scenario's chain keeps what its allocators
            # hold (about 150 MB at the fide scale), and the next chain would start from there. Side by side,
            # their peaks add up: they give freed memory back after 2 s (pipeline.malloc.POLARS_RETURNS_FREED_MEMORY).
            try:
                with (
                    polars_returning_freed_memory_in_children(),
                    ProcessPoolExecutor(
                        min(workers, len(wave)),
                        mp_context=context,
                        max_tasks_per_child=1,
                        initializer=_start_worker,
                        initargs=(messages, os.getpid(), lock_files),
                    ) as pool,
                ):
                    futures: list[Future[dict[str, Any]]] = []
                    try:
                        for stage in wave:
                            futures.append(pool.submit(execute, stage, *args, QueueReporter()))
                        done = [future.result() for future in futures]
                    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: no stage starts, and those running end
                        _stop_stages(futures)
                        raise
            finally:
                stop.set()
                forwarder.join()
                messages.close()
        outcomes += done
        if not all(outcome["success"] for outcome in done):
            break
    return outcomes
