"""The options of `ratings run`, `ratings demo` and `ratings ui`: an interface (scripts call them). The commands run
Dagster, so assets/runtime/cli.py gives the handlers; pipeline/cli/commands.py has the commands of pure code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]


def ui_command(store: str, dagster_home: str, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The `dagster dev` command line and environment of `ratings ui`: the store and instance passed, telemetry off."""
    environment = {**os.environ, "RATINGS_STORE": store, "DAGSTER_HOME": dagster_home, "DAGSTER_DISABLE_TELEMETRY": "1"}
    dagster = os.path.join(os.path.dirname(sys.executable), "dagster")
    return [dagster, "dev", "--host", host, "--port", str(port), "-m", "assets.definitions"], environment


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def exposed_ui_warning(host: str) -> str | None:
    """What `ratings ui` says before listening on `host` when that address is reachable from other machines."""
    if host in LOOPBACK_HOSTS or host.startswith("127."):
        return None
    return (
        f"WARNING: the UI will listen on {host}, which other machines can reach, and it has no login: anyone who "
        "can reach that address can launch runs, wipe materializations and delete runs. Use 127.0.0.1 with an SSH "
        "tunnel, or a reverse proxy that authenticates (docs/operations.md, Security)."
    )


def add_workers_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes: the shared tables in N runs of consecutive months side by side, then the "
        "scenario chains N at a time, each in its own process and Dagster run (default 1: everything in one run)",
    )


def add_run_commands(
    commands: argparse._SubParsersAction, run_handler: Handler, demo_handler: Handler, ui_handler: Handler
) -> None:
    """`ratings run`, `ratings demo` and `ratings ui`, each calling its handler with the parsed options."""
    run = commands.add_parser(
        "run",
        help="rate an existing landing zone (raw/ in the store): every month, every scenario",
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
    add_workers_option(run)
    run.add_argument(
        "--wait",
        action="store_true",
        help="when another run holds the store's lock, wait for it to finish instead of refusing "
        "(refused runs exit with 75, 'try again later')",
    )
    run.set_defaults(handler=run_handler)

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
    add_workers_option(demo)
    demo.set_defaults(handler=demo_handler)

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
    ui.set_defaults(handler=ui_handler)
