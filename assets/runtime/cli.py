"""The `ratings` command: the commands of pure code (pipeline.cli) plus `run`, `demo` and `ui`, which run Dagster."""

from __future__ import annotations

import argparse
import os
import sys

from pipeline.cli import commands as cli
from pipeline.cli.run_options import add_run_commands, exposed_ui_warning, ui_command
from pipeline.store.lock import EXIT_LOCKED, StoreLocked
from pipeline.store.object_store import redact_url, store_root_from_env
from pipeline.text import escape_text


def command_run(args: argparse.Namespace) -> int:
    from assets.runtime.runs import run_store  # Dagster loads only for the commands that need it

    try:
        summary = run_store(
            args.store, args.first, args.last, args.scenarios, args.dagster_home, workers=args.workers, wait=args.wait
        )
    except StoreLocked as locked:  # not an error of this run: a scheduler should try again later
        print(f"ratings run: {escape_text(str(locked))}", file=sys.stderr)
        return EXIT_LOCKED
    return 0 if summary["success"] else 1


def command_demo(args: argparse.Namespace) -> int:
    from assets.runtime.runs import run_demo

    try:
        summary = run_demo(args.store, args.dagster_home, generate_data=args.generate, workers=args.workers)
    except StoreLocked as locked:
        print(f"ratings demo: {escape_text(str(locked))}", file=sys.stderr)
        return EXIT_LOCKED
    return 0 if summary["success"] else 1


def command_ui(args: argparse.Namespace) -> int:
    """`dagster dev` over the store: the definitions read the store's months and scenarios, nothing to export."""
    from assets.runtime.runs import instance_home

    store = args.store or store_root_from_env()
    command, environment = ui_command(store, instance_home(args.dagster_home), args.host, args.port)
    warning = exposed_ui_warning(args.host)
    if warning:
        print(warning, file=sys.stderr)
    print(f"Dagster UI for {redact_url(store)} on http://{args.host}:{args.port} (Ctrl-C stops it)", file=sys.stderr)
    os.execve(command[0], command, environment)  # the UI replaces this process: Ctrl-C goes straight to it


def add_dagster_commands(commands: argparse._SubParsersAction) -> None:
    """`ratings run`, `ratings demo` and `ratings ui` (their options: pipeline.cli.run_options)."""
    add_run_commands(commands, run_handler=command_run, demo_handler=command_demo, ui_handler=command_ui)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, more_commands=add_dagster_commands)
