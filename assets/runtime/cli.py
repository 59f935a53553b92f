"""The `ratings` command: the commands of pure code (pipeline.cli) plus `run`, `demo` and `ui`, which run Dagster."""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys

from assets.runtime.interrupts import DAGSTER_COMMANDS, interrupted_line, run_quietly

TYPE_CHECKING = False  # as in assets.runtime.interrupts: argparse (2 ms) loads with the commands, after the handlers
if TYPE_CHECKING:
    import argparse

# Nothing of the pipeline at import (the standard library's and interrupts' few milliseconds): main's handlers of
# Ctrl-C and SIGTERM go on before the pipeline loads (a second for the commands' modules), and `ratings run` prints
# its first line before the pipeline and Dagster load. Python's own start (some 20 ms) comes before either.

#: The shell's code for a command ended by SIGINT (128 + 2); by SIGTERM, 143 (assets.runtime.interrupts).
EXIT_INTERRUPTED = 130


def command_run(args: argparse.Namespace) -> int:
    from assets.runtime.runs import run_store  # Dagster loads only for the commands that need it
    from pipeline.store.lock import EXIT_LOCKED, StoreLocked
    from pipeline.text import escape_text

    try:
        summary = run_store(
            args.store,
            args.first,
            args.last,
            args.scenarios,
            args.dagster_home,
            workers=args.workers,
            wait=args.wait,
            publish=args.publish,
        )
    except StoreLocked as locked:  # not an error of this run: a scheduler should try again later
        print(f"ratings run: {escape_text(str(locked))}", file=sys.stderr)
        return EXIT_LOCKED
    return 0 if summary["success"] else 1


def command_demo(args: argparse.Namespace) -> int:
    from assets.runtime.runs import run_demo
    from pipeline.store.lock import EXIT_LOCKED, StoreLocked
    from pipeline.text import escape_text

    try:
        summary = run_demo(
            args.store, args.dagster_home, generate_data=args.generate, workers=args.workers, publish=args.publish
        )
    except StoreLocked as locked:
        print(f"ratings demo: {escape_text(str(locked))}", file=sys.stderr)
        return EXIT_LOCKED
    return 0 if summary["success"] else 1


def ui_target(store_root: str, dagster_home: str | None) -> tuple[str, str, str]:
    """(store, instance directory, where the directory came from) of `ratings ui --store store_root`: the store as
    the definitions read it (absolute for a local folder, whatever directory `dg dev` runs in) and its instance
    (operations.instance_dirs.instance_dir), nothing made. ValueError for a local store folder that does not exist:
    its UI would show nothing, and its own instance would make the folder.
    """
    from pipeline.operations.instance_dirs import instance_dir
    from pipeline.store.object_store import ObjectStore, redact_url

    store = ObjectStore(store_root)
    if store.is_local and not os.path.isdir(store.base):
        raise ValueError(
            f"{store.base} does not exist: no store to show (rate one first: `ratings run --store DIR`, or "
            "`make run` for the demo)"
        )
    where = redact_url(store.url())
    home, source = instance_dir(dagster_home, where)
    return (store.base if store.is_local else store.url()), home, source


def command_ui(args: argparse.Namespace) -> int:
    """`dg dev` over the store and its instance: the definitions read the store's months and scenarios, nothing to
    export. Says first when the instance also holds other stores' runs.
    """
    import dagster as dg

    from assets.runtime.instance import instance_home, instance_notes, open_storages
    from pipeline.cli.run_options import exposed_ui_warning, ui_command
    from pipeline.store.object_store import redact_url, store_root_from_env

    store, home, source = ui_target(args.store or store_root_from_env(), args.dagster_home)
    instance_home(args.dagster_home, redact_url(store))  # made, with the shipped dagster.yaml
    with dg.DagsterInstance.from_config(home) as instance:
        open_storages(instance)  # the schema made here, not by the webserver and the daemon at once
        for note in instance_notes(instance, home, source, redact_url(store)):
            print(note, file=sys.stderr)
    command, environment = ui_command(store, home, args.host, args.port)
    warning = exposed_ui_warning(args.host)
    if warning:
        print(warning, file=sys.stderr)
    print(
        f"Dagster UI for {redact_url(store)} (instance {home}, {source}) on http://{args.host}:{args.port} "
        "(Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    # This process becomes a small one (nothing of the pipeline or Dagster kept in memory) that runs `dg dev` as its
    # child: Ctrl-C while the servers start made them print tracebacks, which it drops, and it ends with the shell's
    # code and one line (assets.runtime.interrupts).
    supervised = [sys.executable, "-m", "assets.runtime.interrupts", *command]
    os.execve(supervised[0], supervised, environment)


def add_dagster_commands(commands: argparse._SubParsersAction) -> None:
    """`ratings run`, `ratings demo` and `ratings ui` (their options: pipeline.cli.run_options)."""
    from pipeline.cli.run_options import add_run_commands

    add_run_commands(commands, run_handler=command_run, demo_handler=command_demo, ui_handler=command_ui)


def main(argv: list[str] | None = None) -> int:
    """Every command, ended by Ctrl-C or SIGTERM with the shell's code and one line (assets.runtime.interrupts): for
    `run`, `demo` and `ui` what the rating cut short, for the others what they wrote (pipeline.cli.interrupted).
    """
    if argv is None:  # the command line's own process: file names as UTF-8 whatever the locale (it may run again)
        from pipeline.cli.encoding import utf8_process

        utf8_process()
    arguments = sys.argv[1:] if argv is None else argv
    if argv is None:
        # Python ends by collecting the objects left (Dagster's and the imports', some 300,000): a CPU-second of a
        # month's run. Frozen (gc.freeze, run last of the exit handlers), they are freed without that walk.
        atexit.register(gc.freeze)
    named = arguments[0] if arguments and re.fullmatch(r"[a-z][a-z-]*", arguments[0]) else ""
    # The command's arguments once parsed and what its output files were before it ran, for its line.
    parsed: list[tuple[argparse.Namespace, dict]] = []

    def command() -> int:
        from pipeline.cli.run_options import starting_line

        # `run` and `demo` say where they are going before the seconds of loading the pipeline and Dagster.
        first = starting_line(arguments)
        if first:
            print(first, flush=True)
        from pipeline.cli import commands as cli
        from pipeline.cli.interrupted import outputs_before

        args = cli.build_parser(more_commands=add_dagster_commands).parse_args(arguments)
        parsed.append((args, outputs_before(args)))
        return cli.run_command(args)

    def line(signum: int, note: str) -> str:
        name = parsed[0][0].command if parsed else named
        if name in DAGSTER_COMMANDS:
            return interrupted_line(name, signum, note)
        from pipeline.cli.interrupted import written_note

        return interrupted_line(name, signum, written_note(*parsed[0]) if parsed else written_note(None, None))

    if argv is None and named in ("run", "demo"):
        # The allocators' settings (pipeline.malloc, at the package's import) before run_quietly's thread starts.
        import pipeline  # noqa: F401
    # Quiet (stderr muted once a signal arrives) as the installed command only: a test calling main keeps its own
    # stderr and signal handlers. `run` and `demo` start processes, whose stderr passes through a pipe; the others
    # start none (`ui` becomes the supervisor of its servers, quiet itself: command_ui).
    return run_quietly(command, line, quiet=argv is None, children=named in ("run", "demo"))
