"""Per-month progress hook for long range runs: a no-op unless a reporter (e.g. the demo's) is installed."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

Reporter = Callable[[str, str, int, int], None]

_reporter: Reporter | None = None


def report(step: str, month: str, done: int, total: int) -> None:
    """Tell the installed reporter that `step` finished `month`, the done-th of total months."""
    if _reporter is not None:
        _reporter(step, month, done, total)


def install(reporter: Reporter | None) -> Reporter | None:
    """Install a reporter (None removes it); returns the previous one so callers can restore it."""
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


class ConsoleProgress:
    """A one-line progress display on a terminal (stderr by default), rewritten in place."""

    def __init__(self, stream: TextIO | None = None, width: int = 30):
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._last_length = 0
        self._interactive = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, step: str, month: str, done: int, total: int) -> None:
        filled = int(self.width * done / total) if total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self.started
        line = f"{step:<12} [{bar}] {done:>4}/{total:<4} {month}  {elapsed:6.1f}s"
        if self._interactive:
            # Pad over a longer previous line; a newline only when a step completes.
            self.stream.write("\r" + line.ljust(self._last_length))
            self._last_length = len(line)
            if done == total:
                self.stream.write("\n")
                self._last_length = 0
        elif done == total or done == 1 or done % max(1, total // 10) == 0:
            # Not a terminal (CI logs): a few plain lines instead of carriage returns.
            self.stream.write(line + "\n")
        self.stream.flush()
