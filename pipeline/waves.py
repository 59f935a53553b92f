"""`ratings run` as waves of runs: the shared tables, the scenarios side by side in worker processes, the comparison."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NamedTuple

from pipeline import progress

SHARED_GROUPS = ("ingest", "validate")
COMPARISON_GROUPS = ("reports", "evaluation")


class Stage(NamedTuple):
    """One run of `ratings run`: a name (its `ratings/stage` tag) and the asset groups it selects (none: all)."""

    name: str
    groups: tuple[str, ...]


# One run unless asked for more: on the 2-core machine two scenario chains side by side took as long
# as one after the other (the demo: 360 s either way; docs/operations.md, section 7).
DEFAULT_WORKERS = 1


def stages(scenarios: Sequence[str], workers: int) -> list[list[Stage]]:
    """The runs in waves: one run of everything with one worker; else the shared tables, then each scenario's chain
    in its own run (`workers` at a time: chains are independent), then what compares them.
    """
    if workers <= 1:
        return [[Stage("all", ())]]
    return [
        [Stage("shared", SHARED_GROUPS)],
        [Stage(name, (name,)) for name in scenarios],
        [Stage("comparison", COMPARISON_GROUPS)],
    ]


class QueueReporter:
    """A progress reporter for a worker process: sends each report to the parent (picklable, unlike a lambda)."""

    def __init__(self, messages: Any):
        self.messages = messages

    def __call__(self, step: str, month: str, done: int, total: int) -> None:
        self.messages.put((step, month, done, total))


def _forward_progress(messages: Any) -> None:
    """Render in this process the progress the worker processes send (one console line, not several)."""
    while (message := messages.get()) is not None:
        progress.report(*message)


def run_waves(
    waves: list[list[Stage]], execute: Callable[..., dict[str, Any]], args: tuple, workers: int
) -> list[dict[str, Any]]:
    """execute(stage, *args, reporter) for every stage, wave after wave, a wave's stages `workers` at a time in
    spawned worker processes (`execute` must pickle); nothing after a wave with an outcome not `success`.
    """
    outcomes: list[dict[str, Any]] = []
    for wave in waves:
        if len(wave) == 1 or workers <= 1:
            done = [execute(stage, *args, None) for stage in wave]
        else:
            context = multiprocessing.get_context("spawn")  # no forked Polars thread pools
            with context.Manager() as manager:
                messages = manager.Queue()
                forwarder = threading.Thread(target=_forward_progress, args=(messages,), daemon=True)
                forwarder.start()
                with ProcessPoolExecutor(min(workers, len(wave)), mp_context=context) as pool:
                    futures = [pool.submit(execute, stage, *args, QueueReporter(messages)) for stage in wave]
                    done = [future.result() for future in futures]
                messages.put(None)
                forwarder.join()
        outcomes += done
        if not all(outcome["success"] for outcome in done):
            break
    return outcomes
