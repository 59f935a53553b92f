"""The `ratings` commands of pure code (those that run no Dagster).

Rate a period, validate files, performance, player, list, history, pool-health, evaluate, rules, generate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from pipeline.cli.period_files import (
    STANDARD_RATING,
    read_period_games,
    read_previous_list,
    standard_list_of,
    unrated_players_stay_unrated,
)
from pipeline.engine.period import EngineInputError, compress, normalize_list, rate_period
from pipeline.formats.table_files import InputFileError, write_file_whole, write_table
from pipeline.generator.config import SCALES
from pipeline.months import parse_month
from pipeline.rules.model import (
    RulesError,
    load_rules,
    preset_names,
    resolve_rules,
    schedule_of,
    unstated_time_control,
)
from pipeline.rules.regulations import seeds_from_standard
from pipeline.text import CommandLines, escape_lines, escape_text
from schemas.fide_list import LIST_TYPES

if TYPE_CHECKING:
    from pipeline.store.object_store import ObjectStore

DEBUG_ENV = "RATINGS_DEBUG"


# `ratings list --format`: pipeline.publish.lists.PUBLISHED_FORMATS, spelled here so that the parser loads no
# publishing code (a test holds the two equal).
LIST_FORMATS = ("csv", "txt", "html", "combined")


# How every file a user names for output is written (pipeline.formats.table_files.write_file_whole), for --help.
OUT_FILE_HELP = (
    "its folder must exist; an existing file is replaced whole, keeping its permissions (through a symlink, the file "
    "it points to; a read-only file is refused), a FIFO or a device is written into"
)


class UsageError(ValueError):
    """Bad arguments; printed without a traceback."""


def finite_number(text: str) -> float:
    """An option's number, refused as argparse refuses a bad type when it is NaN or infinite (no rating is)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` (to `high`), refused as argparse refuses a bad type, naming the
    option (a Python slice would take --top -1 as 'all but the last').
    """
    allowed = f"from {low}" + (f" to {high}" if high is not None else "")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number {allowed}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected a whole number {allowed}, got {text!r}")
        return value

    return parse


# -- rate-period -------------------------------------------------------------------------------


def command_rate_period(args: argparse.Namespace) -> int:
    parse_month(args.month)
    from pipeline.cli.system_period import is_system_name, rate_system_files

    if is_system_name(args.rules):
        if args.compress:
            # A system's state is not a FIDE list: compressing it has no meaning (as a scenario's events say).
            raise UsageError(f"--compress: only a FIDE rule set's list has the compression; {args.rules!r} is a system")
        write_table(rate_system_files(args.rules, args.month, args.list, args.games, tuple(args.set or ())), args.out)
        return 0
    rules = resolve_rules(args.rules, args.month, tuple(args.set or ()))
    given = read_previous_list(args.list, args.month)
    standard = standard_list_of(given)
    if standard is not None and not seeds_from_standard(rules):
        print(
            f"ratings rate-period: warning: {args.list}: column {STANDARD_RATING} is not used: {rules.name} rates "
            f"the {rules.list_type} list, which no standard rating seeds",
            file=sys.stderr,
        )
    previous = normalize_list(given.drop(STANDARD_RATING, strict=False))
    games = read_period_games(args.games, args.month, default_class=unstated_time_control(rules.list_type))
    seeded = standard if seeds_from_standard(rules) else None
    games = unrated_players_stay_unrated(games, previous, args.games, seeded)
    result = rate_period(previous, games, rules, args.month, standard=standard)
    new_list = compress(result.rating_list) if args.compress else result.rating_list
    write_table(new_list, args.out)
    rated = new_list.filter(pl.col("rating").is_not_null())
    # A game of weight 0 (a class the list does not rate, an event before events_from, a rating gap) changes nobody.
    unrated_games = int((result.rated_games["weight"] == 0).sum())
    left_out = (
        f" ({unrated_games:,} the rule set does not rate: time control, event start or rating gap)"
        if unrated_games
        else ""
    )
    print(
        f"{args.month} rated under {rules.name}{' + compression' if args.compress else ''}: "
        f"{games.height - unrated_games:,} games{left_out}, {new_list.height:,} players ({rated.height:,} rated, "
        f"{new_list['newly_rated'].sum():,} newly rated, {new_list['delisted'].sum():,} delisted) -> {args.out}",
        file=sys.stderr,
    )
    return 0


# -- generate / demo / rules -------------------------------------------------------------------


def command_generate(args: argparse.Namespace) -> int:
    from pipeline.generator import generate

    for month in (args.start, args.end):
        if month is not None:
            parse_month(month)
    if not args.force:
        refuse_generating_over(args.out)
    started = time.perf_counter()
    summary = generate(args.out, seed=args.seed, players=args.players, start=args.start, end=args.end, scale=args.scale)
    print(
        f"generated {summary.games:,} games of {summary.players:,} players over {summary.months} months "
        f"({', '.join(summary.federations)}) in {summary.files:,} files under {summary.root} "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 0


# The landing zone and the one file `generate` writes outside it (pipeline.generator).
GENERATED_KEYS = ("raw/", "truth/strength.parquet")


def refuse_generating_over(out: str) -> None:
    """UsageError when the store `out` holds a landing zone (raw/) or the generator's truth table: generating there
    would overwrite a federation's dumps of the same names and mix new ones among them. Asked through the object store
    (local or S3): a lookup each.
    """
    from pipeline.store.object_store import ObjectStore, redact_url

    store = ObjectStore(out)
    held = [key for key in GENERATED_KEYS if store.exists(key)]
    if held:
        raise UsageError(
            f"{redact_url(store.url())} already holds {' and '.join(held)}: generating there would overwrite files "
            "of the same names and mix new dumps among the others; give an empty or new folder (or --force to "
            "write over them)"
        )


def command_rules(args: argparse.Namespace) -> int:
    """The rule sets, the rating systems and the systems' presets, each with one line; or one of them in full."""
    from pipeline.systems import WHOLE_HISTORY, get_system, scenario_system, system_names
    from pipeline.systems.config import load_system_rules, rules_document, system_preset_names

    if not args.name:
        names = preset_names()
        systems = system_names()
        system_presets = system_preset_names()
        width = max(map(len, [*names, *systems, *system_presets])) + 1
        print("rule sets (FIDE-style, rated by the engine; `ratings run` scenarios, `ratings evaluate --rules`):")
        for name in names:
            schedule = schedule_of(name)
            if schedule:
                print(f"  {name:{width}} schedule: " + ", ".join(schedule_entries(schedule)))
            else:
                print(f"  {name:{width}} {load_rules(name).description}")
        print("rating systems (`system:` scenarios, `ratings evaluate --rules`, parameters with --set):")
        for name in systems:
            print(f"  {name:{width}} {get_system(name).description}")
        print(
            f"  {'whr':{width}} Whole-History Rating (Coulom 2008): every player-month re-estimated from all games "
            "(`system: whr` scenarios of `ratings run`, e.g. examples/scenarios-whr.yaml, and `ratings evaluate`; "
            "not `ratings rate-period`; w2, virtual_draws)"
        )
        print("system presets (a system with its parameters):")
        for name in system_presets:
            print(f"  {name:{width}} {rules_document(name).get('description', '')}")
        return 0
    if args.name in WHOLE_HISTORY:  # not in the systems' registry: a whole-history fit, not a rating period's update
        if args.month is not None:
            raise UsageError(f"--month does not apply: {args.name} is a rating system, the same in every month")
        from pipeline.systems.config import system_params

        # The parameters a `system: whr` scenario takes (the evaluation's, and its chain's full sweeps).
        whole = scenario_system(args.name)
        params = system_params({"name": whole.name, "system": whole.name}, whole.params, tuple(args.set or ()))
        print(json.dumps({"name": whole.name, "system": whole.name, **params.model_dump()}, indent=2))
        return 0
    if args.name in system_names() or args.name in system_preset_names():
        if args.month is not None:
            raise UsageError(f"--month does not apply: {args.name} is a rating system, the same in every month")
        rules = load_system_rules(args.name, tuple(args.set or ()))
        print(json.dumps({"name": rules.name, "system": rules.system.name, **rules.settings()}, indent=2))
        return 0
    schedule = schedule_of(args.name)
    if args.month is not None:
        parse_month(args.month)
        if schedule is None:
            raise UsageError(
                f"--month does not apply: {args.name} is one rule set, in force in every month, not a schedule "
                f"(`ratings rules {args.name}` shows it)"
            )
        print(resolve_rules(args.name, args.month, tuple(args.set or ())).model_dump_json(indent=2))
        return 0
    if schedule is None:
        print(load_rules(args.name, tuple(args.set or ())).model_dump_json(indent=2))
        return 0
    if args.set:
        raise UsageError(
            f"{args.name} is a schedule of rule sets by month: add --month YYYY-MM to set keys of the one in force then"
        )
    # A schedule is no one rule set: its months and the rule set in force from each, and how to see one.
    print(f"{args.name}: a schedule of rule sets by rating period (the month whose games are rated)")
    for entry in schedule_entries(schedule, sep="  "):
        print(f"  from {entry}")
    print(
        f"Months before {schedule[0][0]} use {schedule[0][1]}. One month's rules in full: "
        f"`ratings rules {args.name} --month YYYY-MM` (or `ratings rules {schedule[-1][1]}`); "
        f"`ratings rate-period --rules {args.name} --month YYYY-MM` rates under them."
    )
    return 0


def schedule_entries(schedule: list[tuple[str, str, tuple[str, ...]]], sep: str = " ") -> list[str]:
    """'2011-07 fide-2009 (k.newcomer=30)' for each entry of a schedule (rules.model.schedule_of)."""
    return [f"{start}{sep}{rules}" + (f" ({', '.join(sets)})" if sets else "") for start, rules, sets in schedule]


# -- validate ----------------------------------------------------------------------------------


def command_validate(args: argparse.Namespace) -> int:
    """Per file: format, records, rated games, players, quarantine by reason; exit 1 only if nothing was readable."""
    from pipeline.validate.file_report import report_files

    reports = report_files(args.files)
    for report in reports:
        # Problems name file and line; with --json they go to stderr so that stdout stays one JSON object.
        for problem in report.problems:
            print(f"{report.path}: {problem}", file=sys.stderr)
        if not args.json:
            print(report.summary())
    if args.json:
        print(json.dumps({"files": [report.as_json() for report in reports]}))
    if not any(report.readable for report in reports):
        print("ratings validate: error: no file could be read", file=sys.stderr)
        return 1
    return 0


# -- performance / player ----------------------------------------------------------------------


def command_performance(args: argparse.Namespace) -> int:
    """Performance ratings of one tournament file, from the ratings the file states."""
    from pipeline.analytics.performance import file_performance, file_performance_json, file_performance_text

    left_out: list[str] = []
    table = file_performance(args.file, left_out)
    # As `ratings validate` names them; on stderr, so that stdout stays the table or one JSON object.
    for problem in left_out:
        print(f"{args.file}: {escape_text(problem)}", file=sys.stderr)
    print(json.dumps(file_performance_json(table)) if args.json else file_performance_text(table, args.file))
    return 0


# `ratings player --html` without a file: the card goes to the store's players/<id>.html, where the lists link.
STORE_CARD = "<store>"


def command_player(args: argparse.Namespace) -> int:
    """One player (by id or name) under every scenario, a list's calculation and performance; optionally as HTML.

    A name several players hold lists them (id, name, federation, birth year) and exits 1.
    """
    from pipeline.operations.instance_dirs import command_lines
    from pipeline.publish.lists import list_command, published_list_key
    from pipeline.reports.player_card import (
        AmbiguousPlayerError,
        matches_text,
        player_page_key,
        player_report,
        render_html,
        render_text,
        resolve_player,
    )
    from pipeline.scenarios.model import load_scenarios
    from pipeline.store.object_store import ObjectStore, redact_url

    if args.month is not None:
        parse_month(args.month)
    store = ObjectStore(args.store) if args.store else ObjectStore()
    try:
        player_id = resolve_player(store, " ".join(args.player))
    except AmbiguousPlayerError as ambiguous:
        print(matches_text(ambiguous))
        print(f"ratings player: {ambiguous}", file=sys.stderr)
        return 1
    scenarios = load_scenarios(args.scenarios) if args.scenarios else None
    report = player_report(store, player_id, args.scenario, args.month, all_months=args.all_months, scenarios=scenarios)
    print(render_text(report))
    where = redact_url(store.url())
    page = published_list_key(report.scenario, report.month, "html")
    made_by = (
        None
        if store.exists(page)
        else list_command(command_lines(where, args.scenarios), report.scenario, report.month)
    )
    if made_by is None:
        print(f"readable list of {report.month}: {redact_url(store.url(page))}")
    else:
        print(f"no readable list of {report.month} stored; make it with: {made_by} --out {report.month}.html")
    if args.html == STORE_CARD:
        key = player_page_key(player_id)
        store.write_text(render_html(report, in_store=True, list_made_by=made_by), key)
        print(f"wrote {redact_url(store.url(key))}")
    elif args.html:
        page_bytes = render_html(report).encode("utf-8")
        write_file_whole(args.html, lambda handle: handle.write(page_bytes), option="--html")
        print(f"wrote {args.html}")
    return 0


# -- list: any stored month's readable list, on demand ----------------------------------------


def combined_partners(scenario: str, scenarios_file: str | None) -> dict[str, str]:
    """The rapid and blitz chains scenario `scenario`'s standard list seeds, by the scenarios file (none where the
    file does not name the scenario). UsageError where the file says `scenario` rates a rapid or blitz list: the
    combined layout is a standard list with the lists it seeds, and its standard columns would show that list's
    ratings as standard ones.
    """
    from pipeline.scenarios.model import canonical_name, load_scenarios, seeded_lists

    scenarios = load_scenarios(scenarios_file)
    own = scenarios.get(scenario)
    if own is not None and own.list_type() != "standard":
        ask = (
            f"ask for its standard list: --scenario {canonical_name(own.standard_chain)}"
            if own.standard_chain is not None
            else "no standard scenario seeds it; --format csv, txt or html give its own list"
        )
        raise UsageError(
            f"--format combined: {scenario} rates the {own.list_type()} list, and the combined layout is a standard "
            f"list's, with the rapid and blitz lists it seeds; {ask}"
        )
    return seeded_lists(scenarios, scenario)


def _list_type(scenario: str, scenarios_file: str | None) -> str | None:
    """The list the scenario rates, by the scenarios file: which seed list is the list before its first month (None:
    a seed file of its own).
    """
    from pipeline.rules.model import RulesError
    from pipeline.scenarios.model import load_scenarios

    try:
        own = load_scenarios(scenarios_file).get(scenario)
    except RulesError:  # a store rated with a file not at hand: its list is read as a standard one
        return "standard"
    if own is None:
        return "standard"
    return own.list_type() if own.seed_list is None else None


def unrated_month_advice(store: ObjectStore, month: str, scenarios_file: str | None, commands: CommandLines) -> str:
    """What `ratings list` says of a month the store holds no list of: the `ratings run` that makes it (from the first
    month it must rate for every chain of the scenarios file to reach `month`), or why no run does.
    """
    from pipeline.ingest.landing import inventory, month_bounds, months_held
    from pipeline.operations.first_month import stored_lists_span
    from pipeline.operations.run_plan import chains_first_month, first_month_to_rate, month_not_ended
    from pipeline.scenarios.model import load_scenarios

    # `ratings run` refuses a month before the chains' start: no advice to run it. Its own reading, so that a month
    # folder holding no dump (which it passes over) moves neither, nor does a stray folder before the stored lists.
    scenarios = load_scenarios(scenarios_file)
    stored = stored_lists_span(store, scenarios)
    first = chains_first_month(months_held(inventory(store)), stored[0] if stored else None)
    start = first[0] if first is not None else None
    if first is not None and month < first[0]:
        return (
            f"it is before the store's first month {first[0]} ({first[1]}), where every chain starts, so no list of "
            f"it is rated"
        )
    current = month_bounds()[1]
    if month >= current:
        return month_not_ended("--month", month, current)
    begin = month if start is None else first_month_to_rate(store, scenarios, month, start)
    return f"rate it first (`{commands.ratings('run', '--from', begin, '--to', month)}`)"


def command_list(args: argparse.Namespace) -> int:
    """One stored month's list as CSV, FIDE TXT, HTML or FIDE's combined layout, to standard output or --out: the bytes
    publishing writes (pipeline.publish.lists.write_published_file), from the stored Parquet list.
    """
    from pipeline.operations.instance_dirs import command_lines
    from pipeline.publish.lists import stored_combined_month, stored_published_month, write_published_file
    from pipeline.reports.player_card import stored_list_months
    from pipeline.scenarios.model import canonical_name
    from pipeline.store.object_store import ObjectStore, redact_url

    store = ObjectStore(args.store) if args.store else ObjectStore()
    where = redact_url(store.url())
    commands = command_lines(where, args.scenarios)
    if args.month is not None:
        parse_month(args.month)
    lists = stored_list_months(store)
    if not lists:
        print(
            f"ratings list: {where} holds no rating list: rate it first (`{commands.ratings('run')}`)",
            file=sys.stderr,
        )
        return 1
    scenario = canonical_name(args.scenario) if args.scenario else next(iter(lists))
    if scenario not in lists:
        print(
            f"ratings list: scenario {escape_text(args.scenario)!r} has no rating list in {where} "
            f"(has: {', '.join(lists)})",
            file=sys.stderr,
        )
        return 1
    month = args.month or lists[scenario][-1]
    if month not in lists[scenario]:
        held = lists[scenario]
        print(
            f"ratings list: {scenario} has no stored list of {month} in {where} (it has {held[0]}..{held[-1]}, "
            f"{len(held)} months): {unrated_month_advice(store, month, args.scenarios, commands)}",
            file=sys.stderr,
        )
        return 1
    if args.format == "combined":
        made = stored_combined_month(store, scenario, month, combined_partners(scenario, args.scenarios))
    else:
        made = stored_published_month(store, scenario, month, _list_type(scenario, args.scenarios))
    if args.out:
        write_file_whole(args.out, lambda handle: write_published_file(made, args.format, handle))
        print(f"wrote {args.out} ({scenario} {month}, {args.format}, {made.rows.height:,} players)", file=sys.stderr)
    else:
        sys.stdout.flush()
        try:
            write_published_file(made, args.format, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as error:  # Polars' writers report a reader gone (`| head`) as an OSError of their own
            if "Broken pipe" not in str(error):
                raise
            raise BrokenPipeError(str(error)) from None
    return 0


# -- history: a whole-history scenario's estimates as they stand after a month ------------------


def command_history(args: argparse.Namespace) -> int:
    """A `system: whr` scenario's player-months (or one month's, or a month's list) as they stand after --as-of, as
    CSV to standard output or --out: pipeline.scenarios.whole_history_stored, from the stored WhrState months.
    """
    from pipeline.scenarios.model import default_scenarios_path, load_scenarios
    from pipeline.scenarios.whole_history_step import is_whole_history
    from pipeline.scenarios.whole_history_stored import history_as_it_stands, list_as_it_stands, stored_months
    from pipeline.store.object_store import ObjectStore, redact_url

    for month in (args.month, args.as_of):
        if month is not None:
            parse_month(month)
    if args.list and args.month is None:
        raise UsageError("--list needs --month (the list of which month)")
    store = ObjectStore(args.store) if args.store else ObjectStore()
    if store.is_local and not os.path.isdir(store.base):
        raise UsageError(f"{store.base} does not exist: no store to read (--store, default $RATINGS_STORE or ./data)")
    scenarios = {n: s for n, s in load_scenarios(args.scenarios).items() if is_whole_history(s)}
    if not scenarios:
        raise UsageError(
            f"the scenarios file {args.scenarios or default_scenarios_path()} has no whole-history (system: whr) "
            "scenario: give the file the store was rated with (--scenarios), or add one as "
            "examples/scenarios-whr.yaml does and rate it (ratings run --scenarios FILE)"
        )
    name = args.scenario or next(iter(scenarios))
    if name not in scenarios:
        raise UsageError(
            f"{escape_text(str(name))!r} is not a whole-history scenario of the scenarios file "
            f"(it has: {', '.join(scenarios)}; give the file the store was rated with, --scenarios)"
        )
    scenario = scenarios[name]
    try:
        held = stored_months(store, scenario)
    except FileNotFoundError:
        print(f"ratings history: {redact_url(store.url())} holds no {name} chain: rate it first", file=sys.stderr)
        return 1
    as_of = args.as_of or held[-1]
    if as_of not in held:
        print(f"ratings history: {name} has no stored month {as_of} (it has {held[0]}..{held[-1]})", file=sys.stderr)
        return 1
    # A month not rated (yet, as of --as-of) has no player-months: a header-only CSV would read as a month of none.
    if args.month is not None and args.month not in held:
        print(
            f"ratings history: {name} has no stored month {args.month} (it has {held[0]}..{held[-1]})", file=sys.stderr
        )
        return 1
    if args.month is not None and args.month > as_of:
        print(
            f"ratings history: --month {args.month} is after --as-of {as_of}: {name} had not rated it yet",
            file=sys.stderr,
        )
        return 1
    if args.list:
        frame = list_as_it_stands(store, scenario, args.month, as_of)
    else:
        frame = history_as_it_stands(store, scenario, as_of, args.month)
    if args.out:
        write_file_whole(args.out, frame.write_csv)
        print(f"wrote {args.out} ({name} as it stands after {as_of}, {frame.height:,} rows)", file=sys.stderr)
    else:
        frame.write_csv(sys.stdout.buffer)
    return 0


# -- pool-health: the list-to-list ledger of published FIDE lists -----------------------------


def command_pool_health(args: argparse.Namespace) -> int:
    """Entries, exits and rating changes by group, and a stable cohort's drift, over FIDE lists given in order."""
    from pipeline.analytics.pool_lists import (
        pool_health,
        pool_health_json,
        pool_health_text,
        read_pool_list,
        with_periods,
    )

    if len(args.lists) < 2:
        raise UsageError(f"{args.lists[0]}: only one list given; pool-health compares two or more lists, in order")
    if args.federations < 0:
        raise UsageError(f"--federations must be 0 or more, got {args.federations}")
    months = [month.strip() for month in args.months.split(",")] if args.months else None
    if months is not None and len(months) != len(args.lists):
        raise UsageError(f"--months: {len(months)} given for {len(args.lists)} lists; give one per list, in order")
    # The first list decides the rating type unless --type does (a combined list is standard by default).
    first = read_pool_list(args.lists[0], args.type)
    lists = [first] + [read_pool_list(path, args.type or first.rating_type) for path in args.lists[1:]]
    for pool in lists:
        for problem in pool.rejected_lines:
            print(f"ratings pool-health: warning: {escape_text(pool.name)}: {escape_text(problem)}", file=sys.stderr)
        if pool.rejected > len(pool.rejected_lines):
            more = pool.rejected - len(pool.rejected_lines)
            print(
                f"ratings pool-health: warning: {escape_text(pool.name)}: {more:,} more lines rejected", file=sys.stderr
            )
    if months is not None:
        lists = with_periods(lists, months)
    health = pool_health(lists, federations=args.federations)
    print(json.dumps(pool_health_json(health)) if args.json else pool_health_text(health))
    return 0


# -- evaluate / tune (rating systems beside FIDE's Elo: pipeline/systems, pipeline/evaluation) -


def command_evaluate(args: argparse.Namespace) -> int:
    """Rate --games up to --train-to with one system, freeze, predict the test months, print the metrics."""
    from pipeline.evaluation.games_file import read_games
    from pipeline.evaluation.protocol import evaluate, evaluation_text
    from pipeline.evaluation.raters import load_rater

    rules = load_rater(args.rules, tuple(args.set or ()), args.init)
    games = read_games(args.games)
    test_games = read_games(args.test) if args.test else None
    outcome = evaluate(games, args.train_to, args.test_from, args.test_to, rules, test_games)
    for warning in outcome["warnings"]:
        print(f"ratings evaluate: warning: {warning}", file=sys.stderr)
    print(json.dumps(outcome) if args.json else evaluation_text(outcome))
    return 0


def command_tune(args: argparse.Namespace) -> int:
    """A grid search over named parameters on one train/validation split, best first."""
    from pipeline.evaluation.games_file import read_games
    from pipeline.evaluation.protocol import leaderboard_text, parse_grid, tune

    games = read_games(args.games)
    test_games = read_games(args.test) if args.test else None
    outcome = tune(
        games,
        args.train_to,
        args.test_from,
        args.test_to,
        args.rules,
        parse_grid(args.grid or ()),
        tuple(args.set or ()),
        args.init,
        args.metric,
        test_games,
        args.held_out,
    )
    for warning in outcome["warnings"]:
        print(f"ratings tune: warning: {warning}", file=sys.stderr)
    if args.top is not None:
        outcome["results"] = outcome["results"][: args.top]
    print(json.dumps(outcome) if args.json else leaderboard_text(outcome))
    return 0


# -- entry point -------------------------------------------------------------------------------


def build_parser(more_commands: Callable[[argparse._SubParsersAction], None] | None = None) -> argparse.ArgumentParser:
    """The commands of pure code; `more_commands` adds others (assets.runtime.cli adds run and demo: Dagster)."""
    parser = argparse.ArgumentParser(
        prog="ratings", description="FIDE-style monthly rating lists from federation game dumps."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    if more_commands is not None:
        more_commands(commands)

    rate = commands.add_parser("rate-period", help="rate one period from files (CSV or Parquet by extension)")
    rate.add_argument(
        "--rules",
        required=True,
        help="preset name (see `ratings rules`), a rule-set YAML file, or a rating system (uscf, dwz, ecf, elo, ...)",
    )
    rate.add_argument("--month", required=True, help="rating period YYYY-MM")
    rate.add_argument(
        "--list",
        required=True,
        help="previous list: player_id, rating (empty = unrated), optional k, games_total, birth_year, ever_2400",
    )
    rate.add_argument(
        "--games",
        required=True,
        help="games: event_id, white_id, black_id, result, optional white_rating, black_rating, date, time_control",
    )
    rate.add_argument("--out", required=True, help=f"new list (.csv or .parquet); {OUT_FILE_HELP}")
    rate.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a rule-set key, e.g. --set k.standard=24 (a K by player, as fide-2024), --set k.value=24 (a "
        "constant K, as elo-32, sonas-2002 and the rapid and blitz lists before October 2022) (repeatable)",
    )
    rate.add_argument(
        "--compress", action="store_true", help="apply the one-time compression below 2000 after the period"
    )
    rate.set_defaults(handler=command_rate_period)

    gen = commands.add_parser("generate", help="write a synthetic federation's raw dumps (deterministic)")
    gen.add_argument(
        "--out",
        required=True,
        help="object-store root to write raw/ and truth/ under (a folder, made if missing, or s3://bucket/prefix); "
        "one that holds raw/ or truth/strength.parquet is refused unless --force",
    )
    gen.add_argument(
        "--scale",
        choices=sorted(SCALES),
        default="small",
        help="preset: small (the demo: 30,000 players, 2015-2024), medium, fide (2008-2024 at the real pool's size)",
    )
    gen.add_argument("--seed", type=whole_number(0), default=None, help="random seed (default: the preset's)")
    gen.add_argument(
        "--players", type=whole_number(1), default=None, help="players over the whole span (default: the preset's)"
    )
    gen.add_argument("--start", default=None, help="first month YYYY-MM (default: the preset's)")
    gen.add_argument("--end", default=None, help="last month YYYY-MM (default: the preset's)")
    gen.add_argument(
        "--force",
        action="store_true",
        help="write even into a store that already holds a landing zone (raw/) or truth/strength.parquet, replacing "
        "the files of the same names and adding the others among its dumps (default: refuse such a store)",
    )
    gen.set_defaults(handler=command_generate)

    validate = commands.add_parser(
        "validate",
        help="read dumps, registries or FIDE list files and report format, records, games, players and quarantine",
        description=(
            "Validate loose files (no registry: any FIDE id present counts as known; a dump's month is its own)."
        ),
    )
    validate.add_argument(
        "files", nargs="+", metavar="FILE", help="TRF, PGN, CSV, Parquet (.gz/.zst too), players CSV or FIDE list TXT"
    )
    validate.add_argument(
        "--json",
        action="store_true",
        help=(
            'print one JSON object: {"files": [{"path", "format", "records", "games", "players", "quarantined", '
            '"encoding"}]}'
        ),
    )
    validate.set_defaults(handler=command_validate)

    performance = commands.add_parser(
        "performance",
        help="performance ratings (FIDE's Ra + dp and the algorithm of 400) of one TRF or PGN file",
        description="Per player: games against opponents with a rating stated in the file, score, average opponent, "
        "FIDE's performance (Ra + dp, table 8.1.1) and the algorithm of 400. Unplayed games do not count.",
    )
    performance.add_argument("file", metavar="FILE", help="a TRF or PGN file (CSV and Parquet dumps work too)")
    performance.add_argument(
        "--json",
        action="store_true",
        help=(
            'print one JSON object: {"players": [{"id", "name", "games", "score", "average_opponent", '
            '"performance_fide", "performance_400"}]}'
        ),
    )
    performance.set_defaults(handler=command_performance)

    player = commands.add_parser(
        "player",
        help="one player from the store (by id or name): rating history under every scenario, a list's calculation",
        description=(
            "Reads <store>/<scenario>/rating_list and rated_games (only the player's rows). A name is looked up in the "
            "registry and the names the dumps wrote (blanks, case and accents aside; every word of it must be in the "
            "name); when several players hold it they are listed with their ids."
        ),
    )
    player.add_argument(
        "player",
        nargs="+",
        metavar="NAME|ID",
        help="FIDE id or local id, or the player's name ('Carlsen, Magnus', 'Magnus Carlsen', 'carlsen')",
    )
    player.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    player.add_argument(
        "--scenario", default=None, help="scenario of the calculation (default: actual if stored, else the first)"
    )
    player.add_argument(
        "--month",
        default=None,
        metavar="YYYY-MM",
        help="list of the calculation (default: the latest list on which the player had rated games)",
    )
    player.add_argument(
        "--all-months",
        action="store_true",
        help="show every month of the history (default: months with games, a rating change or a flag, and the latest)",
    )
    player.add_argument(
        "--scenarios",
        default=None,
        metavar="FILE",
        help="scenarios YAML the store was rated with, for which months each list rates "
        "(default: $RATINGS_SCENARIOS or the shipped one)",
    )
    player.add_argument(
        "--html",
        nargs="?",
        const=STORE_CARD,
        default=None,
        metavar="FILE",
        help="also write a self-contained HTML page with a chart of the history; without FILE it goes to "
        f"<store>/players/<id>.html, the card the HTML lists link to; {OUT_FILE_HELP}",
    )
    player.set_defaults(handler=command_player)

    listing = commands.add_parser(
        "list",
        help="one stored month's rating list as CSV, FIDE TXT, HTML or FIDE's combined layout (any month, on demand)",
        description=(
            "Makes a month's readable list from the stored Parquet list "
            "(<store>/<scenario>/rating_list/<YYYY-MM>.parquet) and the registry and dumps' names of that month: "
            "the same bytes `ratings run` publishes under "
            "<store>/lists/<scenario>/<YYYY-MM>.csv|txt|html (it publishes the last month of its range; --publish all "
            "for every month). `combined` is FIDE's players_list_foa.txt layout: the standard list with the rapid "
            "and blitz lists its ratings seed (the scenarios file's standard_chain), every player of any of the three."
        ),
    )
    listing.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    listing.add_argument("--scenario", default=None, help="scenario (default: actual if stored, else the first)")
    listing.add_argument(
        "--month", default=None, metavar="YYYY-MM", help="rating period (default: the scenario's latest stored list)"
    )
    listing.add_argument("--format", default="csv", choices=LIST_FORMATS, help="csv (default), txt, html or combined")
    listing.add_argument(
        "--out", default=None, metavar="FILE", help=f"write to FILE (default: standard output); {OUT_FILE_HELP}"
    )
    listing.add_argument(
        "--scenarios",
        default=None,
        metavar="FILE",
        help="scenarios YAML the store was rated with, for the rapid and blitz lists of --format combined "
        "(default: $RATINGS_SCENARIOS or the shipped one)",
    )
    listing.set_defaults(handler=command_list)

    history = commands.add_parser(
        "history",
        help="a whole-history (system: whr) scenario's estimates as they stand after a month: every player-month, "
        "one month's, or a month's list",
        description=(
            "Reads <store>/<scenario>/whr_state: the last month up to --as-of that stored every player-month and the "
            "months after it, each of which stored the player-months it changed. Without --month: every "
            "player-month as it stands after --as-of (player_id, month, rating, deviation, games), as CSV. With "
            "--month K: month K's player-months as they stand; with --list too, the list of K as it stands "
            "(player_id, rating, deviation, last_month, games up to K). The list of K as it stood after K is "
            "`ratings list --scenario <scenario> --month K`."
        ),
    )
    history.add_argument("--store", default=None, help="object-store root (default: $RATINGS_STORE or ./data)")
    history.add_argument(
        "--scenarios",
        default=None,
        metavar="FILE",
        help="scenarios YAML the store was rated with, e.g. examples/scenarios-whr.yaml (default: $RATINGS_SCENARIOS "
        "or the shipped one)",
    )
    history.add_argument("--scenario", default=None, help="the whole-history scenario (default: the file's first)")
    history.add_argument(
        "--as-of", default=None, metavar="YYYY-MM", help="the estimates after this month (default: the last stored)"
    )
    history.add_argument("--month", default=None, metavar="YYYY-MM", help="only this month's player-months")
    history.add_argument("--list", action="store_true", help="the list of --month as it stands")
    history.add_argument(
        "--out", default=None, metavar="FILE", help=f"write the CSV to FILE (default: standard output); {OUT_FILE_HELP}"
    )
    history.set_defaults(handler=command_history)

    pool = commands.add_parser(
        "pool-health",
        help="entries, exits and rating changes by group, and a stable cohort's drift, from published FIDE lists",
        description=(
            "Compares each list with the next, in the order given (FIDE list files of any layout since 2001, also "
            ".gz, .zst or FIDE's .zip download): the players who entered (on the later list only), left (on the "
            "earlier only), changed rating or kept it, and the rating points each brings, takes or moves, in total "
            "and by 200-point band, age group and federation; then the median rating change of the steadily "
            "active players aged 25-45 on both lists. A player is on a list when it gives them a rating, inactive "
            "or not. See docs/analytics.md."
        ),
    )
    pool.add_argument("lists", nargs="+", metavar="LIST", help="two or more FIDE list files, earliest first")
    pool.add_argument(
        "--months",
        default=None,
        metavar="YYYY-MM,...",
        help="the lists' months, one per list in order (default: from each file's header or name, e.g. JAN04FRL.TXT)",
    )
    pool.add_argument(
        "--type",
        default=None,
        choices=list(LIST_TYPES),
        help="the rating compared: the column of combined lists (players_list_foa.txt); a per-type list must be of "
        "this type (default: the first list's type)",
    )
    pool.add_argument(
        "--federations",
        type=int,
        default=10,
        metavar="N",
        help="groups for the N largest federations of each later list, the others together (default 10; 0: none)",
    )
    pool.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"lists": [...], "transitions": [{"from", "to", "entered", "left", "changed", '
        '"unchanged", "points", "groups", "cohort", "notes"}]}',
    )
    pool.set_defaults(handler=command_pool_health)

    protocol = argparse.ArgumentParser(add_help=False)
    protocol.add_argument(
        "--games",
        required=True,
        metavar="FILE",
        help="games (CSV or Parquet, also .gz): month (YYYY-MM or an integer period), white_id, black_id, "
        "white_score (1, 0.5, 0) or result (1-0, 0-1, 1/2-1/2), optional colour_known, event_id; "
        "Kaggle's MonthID, Player1, Player2, Player1Score too (colours unknown)",
    )
    protocol.add_argument(
        "--train-to",
        required=True,
        metavar="PERIOD",
        help="last period rated (YYYY-MM or integer, as the file writes it)",
    )
    protocol.add_argument(
        "--test-from", required=True, metavar="PERIOD", help="first period predicted (after --train-to)"
    )
    protocol.add_argument("--test-to", required=True, metavar="PERIOD", help="last period predicted")
    protocol.add_argument(
        "--rules",
        required=True,
        metavar="NAME|FILE.yaml",
        help=(
            "a rule set (fide-2024, fide-2009, fide-historical, sonas-2002, elo-32...: rated by the pipeline's "
            "engine), a system (dwz, ecf, elo, glicko, glicko2, stephenson, uscf, whr), a system preset "
            "(playerratings-glicko...) or a YAML file of either (`ratings rules` lists them)"
        ),
    )
    protocol.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a parameter, e.g. --set k=27 --set white_advantage=30 (repeatable)",
    )
    protocol.add_argument(
        "--init",
        type=finite_number,
        default=None,
        metavar="RATING",
        help="everybody's initial rating (default: the rules' init_rating, else 2200)",
    )
    protocol.add_argument(
        "--test", default=None, metavar="FILE", help="predict this file's games in the test periods instead of --games'"
    )
    protocol.add_argument("--json", action="store_true", help="print one JSON object")

    evaluate = commands.add_parser(
        "evaluate",
        parents=[protocol],
        help="train/test a rating system on a game file (Kaggle RMSE, log10 deviance, PlayerRatings bdev)",
        description=(
            "Rate every period up to --train-to from --init for every player, freeze the ratings, predict every test "
            "game and score the predictions: player_month_rmse (Kaggle 2010), deviance_log10 (Kaggle 2011, "
            "predictions clipped to [0.01, 0.99]) and bdev (PlayerRatings, 100 = coin flip). No White advantage "
            "applies to a game whose colours are unknown."
        ),
    )
    evaluate.set_defaults(handler=command_evaluate)

    tune_parser = commands.add_parser(
        "tune",
        parents=[protocol],
        help="grid-search a rating system's parameters on a validation window and print the leaderboard",
        description=(
            "Every combination of the --grid values is trained up to --train-to and scored on --test-from..--test-to."
        ),
    )
    tune_parser.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="values to try for a parameter, e.g. --grid c=10,15,20 (repeatable)",
    )
    tune_parser.add_argument(
        "--metric",
        default="deviance_log10",
        choices=["deviance_log10", "player_month_rmse", "bdev", "mean_abs_error"],
        help="what the leaderboard is sorted by, lowest first (default deviance_log10)",
    )
    tune_parser.add_argument(
        "--held-out",
        default=None,
        metavar="FROM..TO",
        help=(
            "the test window the tuned setting will be evaluated on: a warning (stderr and the JSON's warnings) when "
            "the validation window --test-from..--test-to overlaps it; without it, when the validation window holds "
            "the file's last period"
        ),
    )
    tune_parser.add_argument(
        "--top", type=whole_number(1), default=None, metavar="N", help="print only the N best settings"
    )
    tune_parser.set_defaults(handler=command_tune)

    rules = commands.add_parser(
        "rules", help="list the rule sets, rating systems and system presets, or show one with its values"
    )
    rules.add_argument("name", nargs="?")
    rules.add_argument(
        "--month",
        metavar="YYYY-MM",
        help="show the rule set in force for this rating period (a schedule such as fide-historical switches by month)",
    )
    rules.add_argument("--set", action="append", metavar="KEY=VALUE")
    rules.set_defaults(handler=command_rules)
    return parser


def main(
    argv: list[str] | None = None, more_commands: Callable[[argparse._SubParsersAction], None] | None = None
) -> int:
    return run_command(build_parser(more_commands).parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """The command `args` names (build_parser's), its errors said in one line."""
    try:
        return args.handler(args)
    except BrokenPipeError:  # the reader went away (`ratings ... | head`): nothing more to say to it
        sys.stderr.close()
        return 0
    except (InputFileError, RulesError, EngineInputError, UsageError, ValueError, OSError) as exc:
        print(f"ratings {args.command}: error: {escape_lines(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # a store or library failure: one line for a person, the traceback on request
        if os.environ.get(DEBUG_ENV):
            raise
        first_line = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"ratings {args.command}: error: {type(exc).__name__}: {escape_text(first_line)} "
            f"(set {DEBUG_ENV}=1 to see the traceback)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
