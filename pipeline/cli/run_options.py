"""The options of `ratings run`, `ratings demo` and `ratings ui`: an interface (scripts call them).

The commands run Dagster, so assets/runtime/cli.py gives the handlers; pipeline/cli/commands.py has the commands of
pure code.

The default of their `--dagster-home` (which instance a store's runs go to) is pipeline.operations.instance_dirs.
"""

from __future__ import annotations

import argparse
import os
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.operations.instance_dirs import instance_dir
from pipeline.operations.waves import PUBLISH_CHOICES, PUBLISH_LAST

Handler = Callable[[argparse.Namespace], int]


def project_root() -> Path | None:
    """The source tree the project runs from (editable install): the folder of pyproject.toml with [tool.dg]."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        return root if "[tool.dg]" in pyproject.read_text(encoding="utf-8") else None
    except OSError:
        return None


def ui_command(store: str, dagster_home: str, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The `dg dev` command line and environment of `ratings ui`: the store and its instance passed, telemetry off.

    From the project's source tree `dg dev` loads the project as `dg check defs` does ([tool.dg] in
    pyproject.toml: code location `chess_ratings`); an installed copy without it names the module instead. `store`
    is absolute for a local store: `dg dev` runs from the project's folder.
    """
    environment = {**os.environ, "RATINGS_STORE": store, "DAGSTER_HOME": dagster_home, "DAGSTER_DISABLE_TELEMETRY": "1"}
    if sys.prefix != sys.base_prefix:  # dg compares the project's .venv with the active one, and says so otherwise
        environment["VIRTUAL_ENV"] = sys.prefix
    dg = os.path.join(os.path.dirname(sys.executable), "dg")
    root = project_root()
    target = ["--target-path", str(root)] if root else ["-m", "assets.definitions"]
    return [dg, "dev", *target, "--host", host, "--port", str(port)], environment


def starting_line(argv: Sequence[str]) -> str | None:
    """What `ratings run` and `ratings demo` say at once, before the pipeline and Dagster load (seconds): the store,
    its Dagster instance and where that came from. None for another command, for help, or for options the
    command line parser will refuse (it says why).
    """
    if not argv or argv[0] not in ("run", "demo") or {"-h", "--help"} & set(argv):
        return None
    parser = _QuietParser(prog="ratings")
    add_run_commands(parser.add_subparsers(dest="command"), _no_handler, _no_handler, _no_handler)
    try:
        args, _ = parser.parse_known_args(list(argv))
        from pipeline.store.object_store import ObjectStore, redact_url, store_root_from_env

        where = redact_url(ObjectStore(args.store or store_root_from_env()).url())
    except Exception:  # a bad option or store: the command itself says what is wrong, and no line comes first
        return None
    home, source = instance_dir(args.dagster_home, where)
    return f"{args.command.capitalize()} over {where} (Dagster instance {home}, {source}): loading the pipeline ..."


class _QuietParser(argparse.ArgumentParser):
    """A parser that raises on bad options instead of printing them and exiting (the real parser does that)."""

    def error(self, message: str) -> typing.NoReturn:
        raise ValueError(message)


def _no_handler(_args: argparse.Namespace) -> int:
    return 0


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


DAGSTER_HOME_HELP = (
    "Dagster instance directory (default: $DAGSTER_HOME when set, else the store's own: <store>/.dagster for a "
    "local store, ~/.local/state/chess-ratings/instances/<store> for S3)"
)


def port_number(value: str) -> int:
    """--port: a TCP port, 1 to 65535 (99999 was handed on to `dg dev`)."""
    try:
        port = int(value)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: a TCP port, 1 to 65535")
    return port


def workers_count(value: str) -> int:
    """--workers: a whole number of at least 1 (0 or a negative count ran as one worker, silently)."""
    try:
        workers = int(value)
    except ValueError:
        workers = 0
    if workers < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: the number of worker processes, at least 1")
    return workers


def instance_directory(value: str) -> str:
    """--dagster-home: a directory, made when absent; an existing file is refused here, not by the makedirs of the
    instance with `[Errno 17] File exists`.
    """
    if os.path.exists(value) and not os.path.isdir(value):
        raise argparse.ArgumentTypeError(f"{value} is a file: give the Dagster instance's directory")
    return value


def add_workers_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--workers",
        type=workers_count,
        default=None,
        metavar="N",
        help="worker processes: the shared tables in N runs of consecutive months side by side, then the "
        "scenario chains N at a time, each in its own process and Dagster run (default 1: everything in one run; "
        "when --publish makes the readable lists of some months of the range but not all, as last does over several "
        "months, those lists and the comparison follow in one more run per stretch of published months)",
    )


def add_publish_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--publish",
        choices=PUBLISH_CHOICES,
        default=PUBLISH_LAST,
        help="readable lists (CSV, FIDE TXT, HTML under <store>/lists/) of: the last month of the range, and again "
        "the months of the range published before (last, the default); every month (all); none. Any month's list is "
        "made on demand by `ratings list`",
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
        help="first month (default: the first month holding dumps, from RATINGS_FIRST_MONTH on when it is set)",
    )
    run.add_argument(
        "--to",
        dest="last",
        default=None,
        metavar="YYYY-MM",
        help="last month (default: the last month holding dumps that has ended; with --from, the last month with a "
        "stored list when that is later, so that the chain is rated to its end; never the current month, whose list "
        "is made after it ends)",
    )
    run.add_argument(
        "--scenarios",
        default=None,
        metavar="FILE",
        help="scenarios YAML (default: $RATINGS_SCENARIOS or the shipped one)",
    )
    run.add_argument("--dagster-home", default=None, metavar="DIR", type=instance_directory, help=DAGSTER_HOME_HELP)
    add_workers_option(run)
    add_publish_option(run)
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
    demo.add_argument("--dagster-home", default=None, metavar="DIR", type=instance_directory, help=DAGSTER_HOME_HELP)
    demo.add_argument(
        "--generate",
        action="store_true",
        help=(
            "generate the demo data even into a store that is not the default one or not empty"
            " (never over an existing raw/)"
        ),
    )
    add_workers_option(demo)
    add_publish_option(demo)
    demo.set_defaults(handler=demo_handler)

    ui = commands.add_parser(
        "ui",
        help="the Dagster UI over a store: its months and scenarios, its runs (http://127.0.0.1:3000)",
        description="`dg dev` over the store (its months and scenarios) and the store's Dagster instance (its runs "
        "and materializations only, unless --dagster-home or $DAGSTER_HOME names a shared one).",
    )
    ui.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    ui.add_argument("--port", type=port_number, default=3000, help="port (default 3000)")
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; the UI has no login)",
    )
    ui.add_argument("--dagster-home", default=None, metavar="DIR", type=instance_directory, help=DAGSTER_HOME_HELP)
    ui.set_defaults(handler=ui_handler)
