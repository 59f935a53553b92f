"""The `ratings` command: the commands of pure code (pipeline.cli) plus `run`, `demo` and `ui`, which run Dagster."""

from __future__ import annotations

import argparse
import os
import sys

from pipeline import cli
from pipeline.storage import redact_url, store_root_from_env


def command_run(args: argparse.Namespace) -> int:
    from assets.runs import run_store  # Dagster loads only for the commands that need it

    summary = run_store(
        root=args.store,
        first_month=args.first,
        last_month=args.last,
        scenarios_file=args.scenarios,
        dagster_home=args.dagster_home,
    )
    return 0 if summary["success"] else 1


def command_demo(args: argparse.Namespace) -> int:
    from assets.runs import run_demo

    summary = run_demo(root=args.store, dagster_home=args.dagster_home, generate_data=args.generate)
    return 0 if summary["success"] else 1


def command_ui(args: argparse.Namespace) -> int:
    """`dagster dev` over the store: the definitions read the store's months and scenarios, nothing to export by
    hand.
    """
    from assets.runs import instance_home

    store = args.store or store_root_from_env()
    environment = {
        **os.environ,
        "RATINGS_STORE": store,
        "DAGSTER_HOME": instance_home(args.dagster_home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    dagster = os.path.join(os.path.dirname(sys.executable), "dagster")
    command = [dagster, "dev", "--host", args.host, "--port", str(args.port), "-m", "assets.definitions"]
    print(
        f"Dagster UI for {redact_url(store)} on http://{args.host}:{args.port} (Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    os.execve(dagster, command, environment)  # the UI replaces this process: Ctrl-C goes straight to it


def add_dagster_commands(commands: argparse._SubParsersAction) -> None:
    """`ratings run` and `ratings demo` (their options are an interface: scripts call them)."""
    run = commands.add_parser(
        "run",
        help="rate an existing landing zone (raw/ in the store): every month, every scenario, one Dagster run",
        description="Rate the dumps under <store>/raw/<FED>/<YYYY-MM>/ (never generates or changes them) and print "
        "what was rated, what was quarantined and why, and where the lists are. Exit 1 when the run "
        "failed or rated no game.",
    )
    run.add_argument("--store", default=None, help="object-store root holding raw/ (default: $RATINGS_STORE or ./data)")
    run.add_argument(
        "--from",
        dest="first",
        default=None,
        metavar="YYYY-MM",
        help="first month (default: the first month holding dumps)",
    )
    run.add_argument(
        "--to", dest="last", default=None, metavar="YYYY-MM", help="last month (default: the last month holding dumps)"
    )
    run.add_argument(
        "--scenarios",
        default=None,
        metavar="FILE",
        help="scenarios YAML (default: $RATINGS_SCENARIOS or the shipped one)",
    )
    run.add_argument(
        "--dagster-home", default=None, help="Dagster instance directory (default: $DAGSTER_HOME or ./.dagster_home)"
    )
    run.set_defaults(handler=command_run)

    demo = commands.add_parser(
        "demo", help="generate the default data set if absent and materialize every month through Dagster"
    )
    demo.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    demo.add_argument(
        "--dagster-home", default=None, help="Dagster instance directory (default: $DAGSTER_HOME or ./.dagster_home)"
    )
    demo.add_argument(
        "--generate",
        action="store_true",
        help=(
            "generate the demo data even into a store that is not the default one or not empty"
            " (never over an existing raw/)"
        ),
    )
    demo.set_defaults(handler=command_demo)

    ui = commands.add_parser(
        "ui", help="the Dagster UI over a store: its months and scenarios, its runs (http://127.0.0.1:3000)"
    )
    ui.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    ui.add_argument("--port", type=int, default=3000, help="port (default 3000)")
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; the UI has no login)",
    )
    ui.add_argument(
        "--dagster-home", default=None, help="Dagster instance directory (default: $DAGSTER_HOME or ./.dagster_home)"
    )
    ui.set_defaults(handler=command_ui)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, more_commands=add_dagster_commands)
