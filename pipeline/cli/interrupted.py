"""What a `ratings` command of pure code had written when Ctrl-C or SIGTERM ended it: the end of its last line."""

from __future__ import annotations

import argparse
import os
import stat

NOTHING_WRITTEN = "nothing was written"
# Where a command writes a file the user names (pipeline.formats.table_files.write_file_whole): into a temporary file
# beside it, renamed over it once whole, removed when the write is cut short.
WHOLE_OR_NOT_AT_ALL = "files are written whole or not at all: a temporary file, renamed over it once complete"

#: A file's identity: device, inode, modification time (a replaced file is a new inode); None where there is none.
Identity = tuple[int, int, int] | None


def _identity(path: str) -> Identity:
    try:
        status = os.stat(path)  # through a symlink: the file write_file_whole replaces
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino, status.st_mtime_ns


def _written_into(path: str) -> bool:
    """Whether `path` is a FIFO or a device (/dev/stdout), which write_file_whole writes into, not replaces."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def output_files(args: argparse.Namespace) -> list[str]:
    """The files the command writes where its options say, each whole or not at all (generate's: its store's raw/
    and truth/, local stores only; player's card in the store is not among them: its id is not known yet).
    """
    command = getattr(args, "command", None)
    if command in ("rate-period", "list", "history") and args.out:
        return [args.out]
    if command == "player" and args.html:
        from pipeline.cli.commands import STORE_CARD

        return [] if args.html == STORE_CARD else [args.html]
    if command == "generate":
        from pipeline.cli.commands import GENERATED_KEYS
        from pipeline.store.object_store import ObjectStore

        try:
            store = ObjectStore(args.out)
        except Exception:  # a root the command refuses, saying why
            return []
        return [store.path(key) for key in GENERATED_KEYS] if store.is_local else []
    return []


def outputs_before(args: argparse.Namespace) -> dict[str, Identity]:
    """The identities of the command's output files before it runs, for written_note."""
    return {path: _identity(path) for path in output_files(args)}


def written_note(args: argparse.Namespace | None, before: dict[str, Identity] | None) -> str:
    """What the command `args` (None: cut short before its arguments were read) wrote before Ctrl-C or SIGTERM ended
    it, and how to go on: its output files compared with `before` (outputs_before), which tells a file replaced
    just before the signal from one left as it was.
    """
    if args is None or before is None:
        return NOTHING_WRITTEN
    if args.command == "generate":
        return _generated_note(args, before)
    if args.command == "player" and args.html and not before:  # the card in the store, at the very end
        return f"{NOTHING_WRITTEN}, unless it said 'wrote' its card in the store (written whole or not at all, last)"
    written = [path for path in before if _identity(path) != before[path]]
    into = [path for path in before if _written_into(path)]
    if into:  # a FIFO or a device (/dev/stdout) is written into: its reader may have part of the output
        return f"{', '.join(into)} may have received part of the output: run the same command again"
    if written:
        return f"{', '.join(written)} was written whole before it stopped"
    if before:
        return f"{', '.join(before)} was not written ({WHOLE_OR_NOT_AT_ALL}): run the same command again"
    if args.command in ("list", "history"):
        return f"{NOTHING_WRITTEN} (standard output may hold part of it)"
    return NOTHING_WRITTEN


def _generated_note(args: argparse.Namespace, before: dict[str, Identity]) -> str:
    """generate's: into a local store without raw/, the data set is made in a temporary folder and moved into place
    once complete (pipeline.generator.generate), raw/ first; on S3, or into a raw/ under --force, each file is written
    whole in place, and the same command with --force writes the same files again.
    """
    in_place = (
        "any files written so far are whole, under {raw} among the others ({why} they are written in place): run the "
        "same command again with --force to finish (the same arguments make the same files)"
    )
    if not before:  # on S3, or a root refused at once
        if "://" not in args.out:
            return NOTHING_WRITTEN
        return in_place.format(raw=f"{args.out}/raw", why="an S3 prefix cannot be renamed, so")
    raw, truth = before
    if before[raw] is not None:
        return in_place.format(raw=raw, why="under --force") if args.force else NOTHING_WRITTEN  # else refused
    if _identity(truth) != before[truth]:
        return f"{raw} and {truth} were written whole before it stopped"
    if _identity(raw) is not None:
        return f"{raw} was moved into place but not {truth}: run the same command again with --force"
    return (
        f"{NOTHING_WRITTEN} (the data set is made in a temporary folder inside the store and moved into place once "
        "complete): run the same command again"
    )
