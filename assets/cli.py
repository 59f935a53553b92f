"""The `ratings` command: the commands of pure code (pipeline.cli) plus `run` and `demo`, which run Dagster."""

from __future__ import annotations

import argparse

from pipeline import cli


def command_run(args: argparse.Namespace) -> int:
    from assets.runs import run_store  # Dagster loads only for the commands that need it

    summary = run_store(root=args.store, first_month=args.first, last_month=args.last,
                        scenarios_file=args.scenarios, dagster_home=args.dagster_home)
    return 0 if summary["success"] else 1


def command_demo(args: argparse.Namespace) -> int:
    from assets.runs import run_demo

    summary = run_demo(root=args.store, dagster_home=args.dagster_home, generate_data=args.generate)
    return 0 if summary["success"] else 1


def add_dagster_commands(commands: argparse._SubParsersAction) -> None:
    """`ratings run` and `ratings demo` (their options are an interface: scripts call them)."""
    run = commands.add_parser(
        "run", help="rate an existing landing zone (raw/ in the store): every month, every scenario, one Dagster run",
        description="Rate the dumps under <store>/raw/<FED>/<YYYY-MM>/ (never generates or changes them) and print "
                    "what was rated, what was quarantined and why, and where the lists are. Exit 1 when the run "
                    "failed or rated no game.")
    run.add_argument("--store", default=None, help="object-store root holding raw/ (default: $RATINGS_STORE or ./data)")
    run.add_argument("--from", dest="first", default=None, metavar="YYYY-MM", help="first month (default: the first month holding dumps)")
    run.add_argument("--to", dest="last", default=None, metavar="YYYY-MM", help="last month (default: the last month holding dumps)")
    run.add_argument("--scenarios", default=None, metavar="FILE", help="scenarios YAML (default: $RATINGS_SCENARIOS or the shipped one)")
    run.add_argument("--dagster-home", default=None, help="Dagster instance directory (default: $DAGSTER_HOME or ./.dagster_home)")
    run.set_defaults(handler=command_run)

    demo = commands.add_parser("demo", help="generate the default data set if absent and materialize every month through Dagster")
    demo.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    demo.add_argument("--dagster-home", default=None, help="Dagster instance directory (default: $DAGSTER_HOME or ./.dagster_home)")
    demo.add_argument("--generate", action="store_true",
                      help="generate the demo data even into a store that is not the default one or not empty (never over an existing raw/)")
    demo.set_defaults(handler=command_demo)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, more_commands=add_dagster_commands)
