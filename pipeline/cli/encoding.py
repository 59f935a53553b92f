"""One text encoding whatever the locale: the `ratings` processes run in Python's UTF-8 mode.

Output they cannot encode is escaped instead of ending the command.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TextIO

#: Python's UTF-8 mode (PEP 540) as the environment asks for it: the child processes inherit it.
UTF8_MODE_VARIABLE = "PYTHONUTF8"
#: The text encoding (and error handler, after a colon) of stdin, stdout and stderr the environment may choose.
IO_ENCODING_VARIABLE = "PYTHONIOENCODING"
#: What is written for a character the terminal's encoding cannot encode ('ü' as \xfc).
UNENCODABLE = "backslashreplace"


def _is_utf8(encoding: str | None) -> bool:
    try:
        return codecs.lookup(encoding or "").name == "utf-8"
    except LookupError:
        return False


def file_names_are_utf8() -> bool:
    """Whether this process decodes file names as UTF-8 (a UTF-8 locale, or Python's UTF-8 mode)."""
    return _is_utf8(sys.getfilesystemencoding())


def not_utf8_line() -> str:
    """Why a process whose file-system encoding is not UTF-8 does not rate (the landing zone's file names are the
    keys of its records, games and events: decoded otherwise, they change), and what to do.
    """
    return (
        f"file names are decoded as {sys.getfilesystemencoding()} here (the locale's encoding), not UTF-8: the "
        "landing zone's file names name its records, games and events, and decoded otherwise they would change "
        f"them; set {UTF8_MODE_VARIABLE}=1 in the environment (or run Python with -X utf8)"
    )


def require_utf8_file_names() -> None:
    """RuntimeError (not_utf8_line) where the file-system encoding is not UTF-8: what loads the definitions without
    the `ratings` command (`dg dev`, a deployment's code server) must not rate a store differently from it.
    """
    if not file_names_are_utf8():
        raise RuntimeError(not_utf8_line())


def utf8_process(entry: bool = True) -> None:
    """At the start of the `ratings` command (`entry`: its process's own command line, not a caller's argv): under a
    locale whose encoding is not UTF-8, run the same command again in Python's UTF-8 mode, with PYTHONUTF8=1 for the
    processes it starts (a UTF-8 locale, the usual case, costs a lookup). Then stdout and stderr in an encoding
    other than UTF-8 (PYTHONIOENCODING=ascii) escape what they cannot encode, as the processes it starts do.
    """
    if not entry:
        return
    if not file_names_are_utf8():
        _run_again_in_utf8_mode()
    for stream in (sys.stdout, sys.stderr):
        _escape_unencodable(stream)
    chosen = os.environ.get(IO_ENCODING_VARIABLE, "")
    if chosen and ":" not in chosen:
        os.environ[IO_ENCODING_VARIABLE] = f"{chosen}:{UNENCODABLE}"


def _run_again_in_utf8_mode() -> None:
    if os.environ.get(UTF8_MODE_VARIABLE) == "1" or not sys.executable:
        # PYTHONUTF8=1 was not enough (`-X utf8=0` on the command line): running again would not change that.
        print(f"ratings: error: {not_utf8_line()}", file=sys.stderr)
        raise SystemExit(2)
    os.environ[UTF8_MODE_VARIABLE] = "1"
    # sys.orig_argv is the command as the shell gave it: the console script's path, or `-m pipeline` / `-m assets`;
    # os.execv encodes each argument back to its own bytes (surrogateescape).
    command = [sys.executable, "-X", "utf8", *sys.orig_argv[1:]]
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os.execv(command[0], command)


def _escape_unencodable(stream: TextIO | None) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if stream is not None and reconfigure is not None and not _is_utf8(getattr(stream, "encoding", None)):
        reconfigure(errors=UNENCODABLE)
