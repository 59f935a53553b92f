"""The `ratings` command: the commands of pure code (pipeline.cli) plus `run`, `demo` and `ui`, which run Dagster."""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys

from pipeline.cli.encoding import utf8_process
from pipeline.cli.run_options import add_run_commands, exposed_ui_warning, starting_line, ui_command
from pipeline.operations.instance_dirs import instance_dir

# Nothing heavier at import: `ratings run` prints its first line (main) before the pipeline and Dagster load.

#: The shell's code for a command ended by SIGINT (128 + 2); by SIGTERM, 143 (assets.runtime.interrupts).
EXIT_INTERRUPTED = 130
#: The commands that end on Ctrl-C or SIGTERM with one line (assets.runtime.interrupts) and the shell's code.
INTERRUPTIBLE = ("run", "demo", "ui")


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
    add_run_commands(commands, run_handler=command_run, demo_handler=command_demo, ui_handler=command_ui)


def main(argv: list[str] | None = None) -> int:
    utf8_process(entry=argv is None)  # the command line's own process: file names as UTF-8 whatever the locale
    arguments = sys.argv[1:] if argv is None else argv
    if argv is None:
        # Python ends by collecting the objects left (Dagster's and the imports', some 300,000): a CPU-second of a
        # month's run. Frozen (gc.freeze, run last of the exit handlers), they are freed without that walk.
        atexit.register(gc.freeze)

    def command() -> int:
        # `run` and `demo` say where they are going before the seconds of loading the pipeline and Dagster.
        first = starting_line(arguments)
        if first:
            print(first, flush=True)
        from pipeline.cli import commands as cli

        return cli.main(arguments, more_commands=add_dagster_commands)

    if not arguments or arguments[0] not in INTERRUPTIBLE:
        return command()
    from assets.runtime.interrupts import interrupted_line, run_quietly

    # Quiet (stderr passed through a pipe, muted once a signal arrives) as the installed command only: a test
    # calling main keeps its own stderr and signal handlers. Not `ui`, which starts no process before it becomes the
    # one that is quiet itself (command_ui): the pipe's reader would not outlive that.
    quiet = argv is None and arguments[0] != "ui"
    return run_quietly(command, lambda signum, note: interrupted_line(arguments[0], signum, note), quiet=quiet)
