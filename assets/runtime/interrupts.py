"""Ctrl-C and SIGTERM in every `ratings` command: the shell's code and one line, no traceback of any process."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import tty
from collections.abc import Callable
from contextlib import suppress
from types import FrameType

# Every command imports this module before its handlers go on (assets/runtime/cli.py main), so nothing slow to load
# comes first: subprocess (4 ms) is imported where `ratings ui`'s supervisor uses it, typing not at all.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

#: The signals that end a command quietly, as its line names them. The exit code is the shell's: 128 + the signal.
ENDING: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
#: How long a child process (the UI's `dg dev`) has to end by itself once the command is interrupted.
CHILD_GRACE_SECONDS = 30.0
#: The commands that run Dagster and start processes (assets/runtime/cli.py); the others are pure code, whose line
#: ends with what they wrote (pipeline.cli.interrupted).
DAGSTER_COMMANDS = ("run", "demo", "ui")

# The first ending signal this process received, and whether this module has raised KeyboardInterrupt for it.
_received: list[int] = []
_raised: list[bool] = []
_muted = threading.Event()


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt that says what it cut short where the command's usual line would not be true."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


def interrupted_line(command: str, signum: int, note: str = "") -> str:
    """What a `ratings` command says last when SIGINT (Ctrl-C) or SIGTERM ended it. `note`: for `run`, `demo` or `ui`,
    what it cut short where that is not the rating (Interrupted); for a command of pure code (or '': the command was
    not known yet), what it wrote and how to go on (pipeline.cli.interrupted).
    """
    if command not in DAGSTER_COMMANDS:
        return f"ratings{' ' + command if command else ''}: interrupted ({ENDING[signum]}); {note}"
    if note:
        return f"ratings {command}: interrupted ({ENDING[signum]}) {note}"
    if command == "ui":
        return f"ratings ui: stopped ({ENDING[signum]}); the UI's servers have ended"
    more = ", or with --from the first month without its lists" if command == "run" else ""
    return (
        f"ratings {command}: interrupted ({ENDING[signum]}). Every file written is whole (writes are atomic): the "
        "months whose lists were written are complete, a month cut off mid-way is not and is rated again. No worker "
        f"process is left and the store's lock is released: run the same command again to finish{more}"
    )


def received() -> int | None:
    """The first SIGINT or SIGTERM the command received (within run_quietly), else None."""
    return _received[0] if _received else None


def raise_if_received() -> None:
    """KeyboardInterrupt when the command received SIGINT or SIGTERM: a checkpoint where it stops even though the
    signal's own KeyboardInterrupt did not stop it: Dagster took the signal as its own (an in-process run it failed
    as interrupted, or finished), or it was raised where Python drops it (a finalizer's "Exception ignored").
    """
    if _received:
        raise KeyboardInterrupt


def _record(signum: int) -> None:
    if signum in ENDING:
        if not _received:
            _received.append(signum)
        _muted.set()


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # Once only: a second Ctrl-C must not cut short the cleanup the first one started (the lock, the workers) with a
    # traceback; it ends the command at once instead (_forward).
    _record(signum)
    if not _raised:
        _raised.append(True)
        raise KeyboardInterrupt


def _write_all(fd: int, data: bytes) -> None:
    with suppress(OSError):  # the reader of stderr went away: nothing to tell it
        while data:
            data = data[os.write(fd, data) :]


def _say(real: int, last: bytearray, text: str) -> None:
    """`text` as a line of the real stderr, on a line of its own after what was copied there (`last`: its end) and
    after the ^C a terminal shows for Ctrl-C.
    """
    apart = last != b"\n" or (os.isatty(real) and _received[:1] == [signal.SIGINT])
    _write_all(real, (b"\n" if apart else b"") + (text + "\n").encode())


def _pending_signal() -> int | None:
    """An ending signal sent to this process that no thread of it has taken yet (Linux's /proc; elsewhere None). The
    kernel holds one until the thread it chose leaves the system call it is in (a disk flush takes a while), and the
    other processes of a terminal's group may be printing their tracebacks by then.
    """
    try:
        with open("/proc/self/status", "rb") as status:
            for row in status:
                if row.startswith(b"ShdPnd:"):
                    mask = int(row.split()[1], 16)
                    return next((signum for signum in ENDING if mask >> (signum - 1) & 1), None)
    except (OSError, ValueError):
        pass
    return None


def _take_signals(wakeup: int) -> int:
    """Record the signals this process took (their numbers come through `wakeup`, Python's signal wakeup descriptor,
    whichever handler Dagster has installed) or has pending; how many ending ones it took.
    """
    pending = _pending_signal()
    if pending is not None:
        _record(pending)
    taken = b""
    with suppress(BlockingIOError):
        taken = os.read(wakeup, 64)
    for signum in taken:
        _record(signum)
    return sum(signum in ENDING for signum in taken)


def _forward(source: int, real: int, wakeup: int, stop: int, last: bytearray, end_now: Callable[[], None]) -> None:
    """Copy what the command's processes write to stderr (`source`) to the real stderr until a signal arrives, then
    drop it; end once `stop` is written to, after what `source` still holds. `last` keeps the last byte copied.
    A second Ctrl-C (or SIGTERM) calls `end_now`: the way out of a cleanup that does not end.
    """
    stopping, taken = False, 0
    while True:
        if taken > 1:
            end_now()
        if not stopping:
            ready = select.select([source, wakeup, stop], [], [])[0]
            stopping = stop in ready
            if stopping:
                os.set_blocking(source, False)  # what it still holds, then the end
            elif source not in ready:
                taken += _take_signals(wakeup)
                continue
        try:
            data = os.read(source, 65536)
        except BlockingIOError:
            return
        except OSError:  # a pseudo-terminal none of whose writers is left
            data = b""
        taken += _take_signals(wakeup)  # before writing: what was read may be the traceback of a signal not yet taken
        if not data:
            return
        if not _muted.is_set():
            _write_all(real, data)
            last[:] = data[-1:]


def run_quietly(
    command: Callable[[], int], line: Callable[[int, str], str], quiet: bool = True, children: bool = True
) -> int:
    """command()'s code, or, once SIGINT or SIGTERM reached it, 128 + the signal after `line(signal, note)` on
    stderr (`note`: an Interrupted's, else '').

    `quiet` (the installed command): from the signal on, nothing the command's threads and processes write to stderr
    reaches it. A terminal's Ctrl-C goes to every process of its group (Dagster's watchers of a run's logs, the worker
    processes, `dg dev`'s servers), which print tracebacks of their own; so fd 2 of this process, and of all it starts,
    is a pipe that a thread copies to the real stderr until then (a pseudo-terminal when stderr is a terminal:
    whatever asks isatty still sees one). Without `children` (a command that starts no process) there is no pipe: the
    signal's handler sends this process's own stderr to /dev/null (_run_alone). Without `quiet` (a test calling main)
    only KeyboardInterrupt is caught.
    """
    real = None
    if quiet and threading.current_thread() is threading.main_thread():  # where signal handlers can be set
        with suppress(OSError):  # no stderr to pass on
            real = os.dup(2)
    if real is None:
        try:
            return command()
        except KeyboardInterrupt as interruption:
            print(line(signal.SIGINT, getattr(interruption, "note", "")), file=sys.stderr)
            return 128 + signal.SIGINT
    sys.stderr.flush()
    for state in (_received, _raised):
        state.clear()
    _muted.clear()
    if not children:
        return _run_alone(command, line, real)
    source, sink = os.openpty() if os.isatty(real) else os.pipe()
    if os.isatty(sink):
        tty.setraw(sink)  # bytes as written: the real terminal translates line ends itself
    wakeup, wakeup_sink = os.pipe()
    stop, stop_sink = os.pipe()
    os.set_blocking(wakeup_sink, False)  # as Python requires of a wakeup descriptor
    os.set_blocking(wakeup, False)
    os.dup2(sink, 2)
    os.close(sink)
    last = bytearray(b"\n")

    def end_now() -> None:
        # Not the cleanup the first signal started: the kernel drops a local store's lock and kills the workers
        # (pipeline.operations.waves), the next run marks the Dagster runs failed and removes the temporary files.
        _say(real, last, line(_received[0], ""))
        os._exit(128 + _received[0])

    forwarder = threading.Thread(target=_forward, args=(source, real, wakeup, stop, last, end_now), daemon=True)
    forwarder.start()
    previous_wakeup = signal.set_wakeup_fd(wakeup_sink, warn_on_full_buffer=False)
    previous = {ending: signal.signal(ending, _on_signal) for ending in ENDING}
    code, note = None, ""
    try:
        code = command()
    except KeyboardInterrupt as interruption:
        _record(signal.SIGINT)  # raised by the command itself (no signal seen): said as Ctrl-C
        note = getattr(interruption, "note", "")
    except BaseException:
        if not _received:
            raise
    finally:
        for ending, handler in previous.items():
            signal.signal(ending, handler)
        signal.set_wakeup_fd(previous_wakeup)
        with suppress(ValueError, OSError):
            sys.stderr.flush()
        if _received:  # what this process writes from now on (exit handlers, threads ending) is dropped too
            _mute_stderr()
        else:
            os.dup2(real, 2)
        os.write(stop_sink, b".")
        forwarder.join(timeout=2)
        for fd in (wakeup, wakeup_sink, stop, stop_sink) + (() if forwarder.is_alive() else (source,)):
            os.close(fd)
    if code is not None and not _received:
        _over()
        os.close(real)
        return code
    _say(real, last, line(_received[0], note))
    _over()
    os.close(real)
    return 128 + _received[0]


def _exit_at_once(signum: int, _frame: FrameType | None) -> None:
    os._exit(128 + signum)


def _over() -> None:
    """The command is over, ended or interrupted: what is left is this process's exit (exit handlers, threads joined,
    the interpreter's teardown), which SIGINT or SIGTERM now ends at once with the shell's code. Python's own handling
    there printed a KeyboardInterrupt's traceback, or SIGTERM killed the process without a word. Standard output is
    written out first: os._exit does not.
    """
    with suppress(OSError, ValueError):  # a reader gone (`| head`): the command said it already
        sys.stdout.flush()
    for ending in ENDING:
        signal.signal(ending, _exit_at_once)


def _mute_stderr() -> None:
    """Stderr (fd 2) goes to /dev/null: nothing this process writes there from now on is seen."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _run_alone(command: Callable[[], int], line: Callable[[int, str], str], real: int) -> int:
    """run_quietly for a command that starts no process (the commands of pure code, `ui` until it becomes its
    supervisor), `real` its stderr: the first SIGINT or SIGTERM mutes stderr and raises KeyboardInterrupt, which ends
    the command through its `finally`s (a temporary file removed, a thread pool's writes awaited); a second one ends
    the process at once, with the same line.

    Muted in the handler itself, before the KeyboardInterrupt unwinds anything: raised inside a finalizer, Python
    prints it as "Exception ignored in ..." with a traceback, and one that reaches interpreter shutdown is dumped
    whole. Nothing here touches sys.stderr, which the handler may have interrupted mid-write.
    """

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        _record(signum)
        if not _raised:
            _raised.append(True)
            _mute_stderr()
            raise KeyboardInterrupt
        _say(real, bytearray(b"\n"), line(_received[0], ""))  # the cleanup the first one started does not end
        os._exit(128 + _received[0])

    previous = {ending: signal.signal(ending, on_signal) for ending in ENDING}
    code, note = None, ""
    try:
        code = command()
    except KeyboardInterrupt as interruption:
        if not _received:  # raised by the command itself (no signal seen): said as Ctrl-C
            _mute_stderr()
            _record(signal.SIGINT)
        note = getattr(interruption, "note", "")
    except BaseException:
        if not _received:
            raise
    finally:
        if not _received:  # else a second signal still ends the process at once, until the line is said
            for ending, handler in previous.items():
                signal.signal(ending, handler)
    if code is not None and not _received:
        _over()
        os.close(real)
        return code
    _say(real, bytearray(b"\n"), line(_received[0], note))
    _over()
    os.close(real)
    return 128 + _received[0]


def wait_ending(child: subprocess.Popen[bytes]) -> int:
    """child.wait(); interrupted, the child ends too before the KeyboardInterrupt goes on: a terminal's Ctrl-C reached
    it already, a signal to this process alone is passed on; killed after CHILD_GRACE_SECONDS.
    """
    import subprocess

    try:
        return child.wait()
    except KeyboardInterrupt:
        try:
            child.wait(1.0)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                child.send_signal(received() or signal.SIGINT)
            try:
                child.wait(CHILD_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise


def serve(command: list[str]) -> int:
    """`ratings ui` once it has become `python -m assets.runtime.interrupts dg dev ...` (assets/runtime/cli.py,
    command_ui): `command` run as a child until it ends, or until Ctrl-C or SIGTERM ends both, quietly.
    """
    import subprocess

    def run() -> int:
        try:
            child = subprocess.Popen(command)
        except OSError as error:  # `dg` missing or not runnable: as the command line says any error of a file
            from pipeline.text import escape_text

            print(f"ratings ui: error: {escape_text(str(error))}", file=sys.stderr)
            return 2
        return wait_ending(child)

    return run_quietly(run, lambda signum, note: interrupted_line("ui", signum, note))


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1:]))
