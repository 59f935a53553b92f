"""What a run of `ratings run`/`ratings demo` does around Dagster and says.

Where it may generate, which months it rates, what the stored tables show, the closing summary.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, TextIO

import polars as pl

from pipeline.generator import DEFAULT_DEMO, generate, leftover_generations
from pipeline.ingest.landing import (
    DUMP,
    REGISTRY,
    LandingEntry,
    federation_folder_problems,
    inventory,
    month_bounds,
    months_held,
    unplaced,
)
from pipeline.ingest.registry import registry_plan, registry_problem_lines
from pipeline.invariants.catalog import RECONCILIATION
from pipeline.invariants.chain import continuity_problems
from pipeline.invariants.store_checks import files_not_read_whole, mostly_quarantined
from pipeline.months import add_months, month_index, month_range, parse_month
from pipeline.operations.first_month import folders_before, list_path, setting_after_stored_lists, stored_lists_span
from pipeline.operations.instance_dirs import command_lines
from pipeline.operations.run_counts import GAME_OUTCOMES, distinct_players, players_by_identity, scenario_game_outcomes
from pipeline.operations.waves import (
    PUBLISH_ALL,
    PUBLISH_CHOICES,
    PUBLISH_LAST,
    PUBLISH_NONE,
    consecutive_stretches,
)
from pipeline.publish.lists import TXT_LEFT_OUT_REASON, list_command, readable_list_months, stored_txt_left_out
from pipeline.rules.calendar import last_listed_in
from pipeline.rules.regulations import seeds_from_standard
from pipeline.scenarios.amendments import previous_key
from pipeline.scenarios.chain import JOINED_FROM_LATER_LIST, MissingMonth, chain_continues, seeds_below_floor
from pipeline.scenarios.model import Scenario, load_scenarios
from pipeline.scenarios.ratings_used import trusted_federations
from pipeline.scenarios.recalculation import FULL, frozen_months, list_month
from pipeline.settings import DEFAULT_STORE, Settings
from pipeline.store.monthly import read_stored_month, stored_rows, stored_table_months, table_key, with_schema
from pipeline.store.object_store import ObjectStore, fault_line, polars_s3_options, redact_url, store_root_from_env
from pipeline.text import CommandLines, Placeholder, escape_text, some_names
from pipeline.validate.identity import (
    name_id_lines,
    names_given_ids,
    names_registered_elsewhere,
    registered_elsewhere_lines,
)

SUMMARY_FILES = 10  # files and warnings named in the closing summary; the tables hold them all


LANDING_ZONE_HELP = """A landing zone is a folder raw/ in the store:
  raw/<FED>/<YYYY-MM>/<dump>     the month's dumps (TRF, PGN, CSV, Parquet; .gz/.zst too), e.g. raw/GER/2024-01/open.trf
  raw/players/<YYYY-MM>/...       optional: players.csv and seed_list.csv, or a FIDE rating list (.txt)
See the README, "Rating your own federation's files"."""


class StoreError(ValueError):
    """The store cannot be rated or generated into as asked; printed as one line, without a traceback."""


def may_generate(store: ObjectStore, root: str, explicit: bool) -> str | None:
    """None when the demo data may be generated into `store` (which has no raw/), else why not.

    Without --generate only into a local store that is the default one or an existing empty folder:
    a mistyped --store path (or bucket) must not fill with a synthetic federation.
    """
    if explicit:
        return None
    if not store.is_local:
        return (
            f"{redact_url(store.url())} has no raw/ landing zone; `ratings demo` generates synthetic data only "
            f"into a local store unless you add --generate"
        )
    # Empty but for what a generation killed outright left (generate removes it).
    if os.path.isdir(store.base) and set(os.listdir(store.base)) <= set(leftover_generations(store.base)):
        return None
    if os.path.abspath(root) == os.path.abspath(DEFAULT_STORE) and not os.path.exists(store.base):
        return None
    state = "holds other files" if os.path.exists(store.base) else "does not exist"
    return (
        f"{store.base} {state} and has no raw/ landing zone: not generating the demo data there "
        f"(add --generate to do it anyway, or use `ratings run` to rate your own dumps)"
    )


def generate_demo(root: str, explicit: bool, out: TextIO) -> None:
    """`ratings demo`'s data: DEFAULT_DEMO generated into `root` when it has no raw/ and may_generate allows it.

    StoreError when it may not; says on `out` what it generates and what it generated.
    """
    store = ObjectStore(root)
    if store.exists("raw"):
        return
    refusal = may_generate(store, root, explicit=explicit)
    if refusal:
        raise StoreError(refusal)
    where = redact_url(store.url())
    started = time.monotonic()
    print(f"No landing zone at {where}/raw: generating the default data set {DEFAULT_DEMO} ...", file=out, flush=True)
    summary = generate(root, **DEFAULT_DEMO)
    print(
        f"Generated {summary.games:,} games of {summary.players:,} players over {summary.months} months "
        f"({summary.files:,} files, federations {', '.join(map(str, summary.federations))}) "
        f"in {time.monotonic() - started:.0f}s",
        file=out,
        flush=True,
    )


def require_landing_zone(store: ObjectStore) -> None:
    """StoreError unless the store has a raw/ folder: `ratings run` never rates (or generates) elsewhere."""
    if store.is_local and os.path.islink(os.path.join(store.base, "raw")):
        # Never followed, as a link among the dumps is not (landing.inventory): the zone holds what the store holds.
        raise StoreError(
            f"{redact_url(store.url('raw'))} is a symbolic link, which is not read (only a real folder is): copy or "
            f"move the landing zone itself into the store\n{LANDING_ZONE_HELP}"
        )
    if not store.exists("raw"):
        raise StoreError(f"{redact_url(store.url())} has no landing zone (no raw/ folder).\n{LANDING_ZONE_HELP}")


# Held months further apart than this are named in the run's plan: a federation reports every month,
# so a year without dumps is more likely a misnamed folder than a quiet year.
GAP_MONTHS_NAMED = 12
# A default range (no --from/--to) with more months without dumps than this is refused: ten years of
# nothing is a stray folder (1975-01 beside 2024's dumps), and rating it writes hundreds of empty lists.
MAX_EMPTY_MONTHS = 120


def months_to_rate(
    held: Sequence[str],
    first_month: str | None,
    last_month: str | None,
    where: str,
    stored_last: str | None = None,
    current: str | None = None,
    first_source: str = "the first month holding dumps",
) -> list[str]:
    """The months of a run: --from..--to, --from defaulting to the first month holding dumps (`held`; `first_source`
    names where it comes from), --to to the last month holding dumps or, when later, the last month with a stored list
    (`stored_last`): a run from M re-rates the chain through its end. A default --to is never the `current` month
    (default: landing.month_bounds's, today's) or later: its dumps wait for its end (waiting_for_month_end).

    A month that is not YYYY-MM raises ValueError; no dumps to default from, --from after --to, a --from or --to in
    the `current` month or later, or a default range mostly without dumps (more than MAX_EMPTY_MONTHS), StoreError.
    """
    for month in (first_month, last_month):
        if month is not None:
            parse_month(month)
    current = current or month_bounds()[1]
    for option, month in (("--to", last_month), ("--from", first_month)):
        if month is not None and month >= current:
            raise StoreError(month_not_ended(option, month, current))
    done = [month for month in held if month < current]
    if not done and (first_month is None or last_month is None):
        if held:
            raise StoreError(f"{where}/raw holds dumps only of {current}, {month_not_ended('', current, current)}")
        raise StoreError(f"{where}/raw holds no dumps in month folders.\n{LANDING_ZONE_HELP}")
    first = first_month or done[0]
    # Without --from the run rates what the landing zone holds; from a month on, the chain to its end (a list stored
    # of the month in progress, by a version that rated it, is left as it is).
    ended = add_months(current, -1)
    last = last_month or (max(done[-1], min(stored_last or done[-1], ended)) if first_month else done[-1])
    if first > last:
        raise StoreError(_reversed_range(first_month, last_month, first, last, done, first_source))
    months = month_range(first, last)
    empty = len(months) - len(set(done) & set(months))
    if (first_month is None or last_month is None) and empty > MAX_EMPTY_MONTHS:
        gaps = "; ".join(held_gaps(done, first, last)[:3])
        raise StoreError(
            f"{first}..{last} is {len(months)} months, {empty} of them without dumps ({gaps}): a stray month "
            f"folder? Move it, or give both --from and --to to rate that range anyway"
        )
    return months


# B.02 2024 §7.1.3: the list of M is dated the 1st of M+1, its closing date 3 days before, and official FIDE events
# ending the day before it may still be rated: M's list is made once M has ended. One made while M runs would publish
# (and under `forward` freeze) it without the tournaments reported in time later in M.
def month_not_ended(option: str, month: str, current: str) -> str:
    """Why `month` (given as `option`, '' for the landing zone's) is not rated yet: today is in `current`."""
    state = "the current month" if month == current else f"after the current month {current}"
    named = f"{option} {month} is {state}" if option else state
    return f"{named}: the list of {month} is made after the month ends (the last month that may be rated is " + (
        f"{add_months(current, -1)})"
    )


def first_month_to_rate(store: ObjectStore, scenarios: Mapping[str, Scenario], month: str, start: str) -> str:
    """The first month of a `ratings run` that makes the lists of `month`: `month` itself where every scenario's stored
    chain holds the list before it, else the earliest month one is rebuilt from (chain_continues: the chain's first
    month since the chains' `start` without a stored list).
    """
    firsts = [month]
    for scenario in scenarios.values():
        try:
            chain_continues(store, scenario, month, start)
        except MissingMonth as missing:
            firsts.append(missing.rebuild_from)
    return min(firsts)


def waiting_for_month_end(entries: Sequence[LandingEntry], current: str) -> str | None:
    """The line naming the dumps of the `current` month (or later), which no run rates before the month ends: they
    wait, read by the first run after it. None when there are none.
    """
    files = sorted(e.key for e in entries if e.month is not None and e.month >= current and e.kind != REGISTRY)
    if not files:
        return None
    shown = some_names([key.removeprefix("raw/") for key in files])
    return (
        f"not rated yet: {len(files)} file(s) of {current}, the current month ({shown}), wait for the month's end: "
        f"the first run after it rates them"
    )


def _reversed_range(
    first_month: str | None,
    last_month: str | None,
    first: str,
    last: str,
    held: Sequence[str],
    first_source: str = "the first month holding dumps",
) -> str:
    """Why first..last is no range, naming the bounds the user gave and where a default one came from."""
    if first_month is not None and last_month is not None:
        return f"--from {first} is after --to {last}"
    if first_month is None:
        return f"--to {last} is before {first}, {first_source} (where a run without --from starts)"
    source = "the last month holding dumps" if held and last == held[-1] else "the last month with a stored list"
    return f"--from {first} is after {last}, {source} (where a run without --to ends)"


def held_gaps(held: Sequence[str], first: str, last: str) -> list[str]:
    """The stretches of more than GAP_MONTHS_NAMED months without dumps between held months of first..last."""
    within = sorted(month for month in set(held) if first <= month <= last)
    gaps = []
    for before, after in zip(within, within[1:], strict=False):
        empty = month_index(after) - month_index(before) - 1
        if empty > GAP_MONTHS_NAMED:
            gaps.append(f"no dumps for {empty} months between {before} and {after}")
    return gaps


def store_first_month(held: Sequence[str]) -> tuple[str, str] | None:
    """The store's first month and where it comes from: the setting RATINGS_FIRST_MONTH, else the landing zone's
    first month holding dumps; None for a landing zone without dumps and no setting.
    """
    return chains_first_month(held, None)


def chains_first_month(held: Sequence[str], stored_first: str | None) -> tuple[str, str] | None:
    """The month a run starts the chains from the seed list and where it comes from: the store's first month
    (store_first_month), but while RATINGS_FIRST_MONTH is unset not before `stored_first`, the first month of the
    stored lists. A stray or mistyped earlier month folder moves no start: chain_start refuses a run from it, and the
    Dagster definitions start there too (first_month.definitions_months). Every printed `ratings run` starts from it.
    """
    settings = Settings.from_env()
    if settings.first_month is None and not held:
        return None
    # Without dumps the setting is the start, and no landing month is looked at.
    return settings.chains_first_month(held[0] if held else "", stored_first)


def chain_start(
    held: Sequence[str], first_month: str, stored_first: str | None = None, entries: Sequence[LandingEntry] = ()
) -> str:
    """The month every scenario's chain starts from the seed list: the store's first month (store_first_month). Every
    other month continues the stored list of the month before, whatever range a run rates (the UI's partitions
    start at the same month).

    StoreError for a run from before it: the chains would start from the seed list there, and every stored list
    after it would be rated again from that start (a frozen `recalculation: forward` list too), and again from
    the store's own start by the next run. Starting earlier on purpose is setting RATINGS_FIRST_MONTH. So too for a
    run from a landing zone's first month before `stored_first`, the first month of the stored lists: a stray or
    mistyped month folder (`entries` names it) moved the store's first month; a later run is not refused, and its
    chains start where the stored lists do (chains_first_month). And for a run from a RATINGS_FIRST_MONTH after
    `stored_first`: its chains would restart there from the seed list, rating every stored list from it again (a run
    from a later month continues the stored list before it).
    """
    first = store_first_month(held)
    if first is None:  # no dumps and no setting: the run's own --from..--to (both given) is all there is
        first_partition, _ = Settings.from_env().months_for(list(held))
        return min(first_partition, first_month)
    start, source = first
    if source == "RATINGS_FIRST_MONTH" and stored_first is not None and stored_first < start == first_month:
        earlier = any(month < stored_first for month in held)
        raise StoreError(setting_after_stored_lists(start, stored_first, "Nothing written.", earlier))
    if first_month < start:
        raise StoreError(
            f"--from {first_month} is before the store's first month {start} ({source}): nothing written. "
            f"To start the chains earlier on purpose, set RATINGS_FIRST_MONTH={first_month} for this run and every "
            f"later one (the seed list then applies from {first_month} and every stored list is rated again)"
        )
    # A stray earlier folder moved `start` before the stored chains, whose every list the run would rate again.
    if source != "RATINGS_FIRST_MONTH" and stored_first is not None and first_month < stored_first:
        shown = some_names(folders_before(entries, stored_first))
        raise StoreError(
            f"the landing zone's first month holding dumps is now {start} ({shown}), before {stored_first}, where "
            f"the stored lists start: rating from {first_month} would start the chains there from the seed list and "
            f"rate every stored list again (a frozen forward list too). Nothing written. "
            + dumps_before_stored_lists(start, stored_first)
        )
    chains = chains_first_month(held, stored_first)
    return chains[0] if chains is not None else start


def dumps_before_stored_lists(start: str, stored_first: str) -> str:
    """What to do about dumps of months from `start` on before `stored_first`, where the stored lists start: the
    remedies of a run from such a month, refused (chain_start), and of a later one, which leaves them unrated
    (not_rated_before).
    """
    return (
        f"A stray or mistyped month folder? Move it, or set RATINGS_FIRST_MONTH={stored_first} to keep the chains' "
        f"start (its dumps are then not rated); to start the chains at {start} on purpose, set "
        f"RATINGS_FIRST_MONTH={start} for this run and every later one"
    )


def not_rated_before(
    entries: Sequence[LandingEntry], held: Sequence[str], stored_first: str | None, first_month: str
) -> str | None:
    """The note of a run from `first_month` on the dumps of `held` months before the chains' start, which no run
    rates: before a RATINGS_FIRST_MONTH, or before `stored_first`, the stored lists' first month (a folder filed
    since, which a run from its month is refused for: chain_start), then naming the folders and the remedies. None
    when there are none.
    """
    chains = chains_first_month(held, stored_first)
    earlier = [month for month in held if chains is not None and month < chains[0]]
    if chains is None or not earlier:
        return None
    start, source = chains
    if source == "RATINGS_FIRST_MONTH":
        return (
            f"not rated: the dumps of {_months_text(earlier)}, before RATINGS_FIRST_MONTH {start} (the store's first "
            "month)"
        )
    return (
        f"not rated: the dumps of {some_names(folders_before(entries, start))}, before {start}, where the stored lists "
        f"start: this run from {first_month} continues them, and no run rates those dumps. "
        + dumps_before_stored_lists(earlier[0], start)
    )


@dataclass(frozen=True)
class RunPlan:
    """What a `ratings run` rates: the store, its landing zone's one listing, the months, the scenarios, the month the
    chains start from the seed list, and what the plan warns of.
    """

    root: str
    store: ObjectStore
    entries: list[LandingEntry]
    months: list[str]
    scenarios: dict[str, Scenario]
    partition_range: tuple[str, str] = ("", "")
    notes: tuple[str, ...] = ()
    # The months whose readable lists the run publishes (published_months), and those it leaves stale.
    published: tuple[str, ...] = ()
    unpublished_stale: tuple[str, ...] = ()
    # The run's --scenarios and --dagster-home as given: the commands it prints carry them (command_lines).
    scenarios_file: str | None = None
    dagster_home: str | None = None

    @property
    def chain_start(self) -> str:
        """The month the chains start from the seed list (the first partition)."""
        return self.partition_range[0]

    @property
    def commands(self) -> CommandLines:
        """How the commands the run prints are written: with its store, scenarios file and instance."""
        return command_lines(redact_url(self.store.url()), self.scenarios_file, self.dagster_home)


# While the landing zone is listed, a line every this many seconds says how far the listing got.
LISTING_PROGRESS_SECONDS = 5.0


class ListingProgress:
    """Tells `out` how many files the listing of the landing zone has found, every LISTING_PROGRESS_SECONDS."""

    def __init__(self, out: TextIO, every: float = LISTING_PROGRESS_SECONDS):
        self.out, self.every = out, every
        self.started = self.last = time.monotonic()

    def __call__(self, listed: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            print(f"  ... {listed:,} files listed so far ({now - self.started:.0f} s)", file=self.out, flush=True)


def published_months(
    store: ObjectStore, scenarios: Mapping[str, Scenario], months: Sequence[str], publish: str
) -> tuple[list[str], list[str]]:
    """The months of a run over `months` whose readable lists it publishes, and the months of the range whose stored
    readable lists it leaves as they were, made from lists it replaces.

    `last` publishes the last month, and again every month of the range already published (a rerun would
    otherwise leave them showing the lists it replaced); `all` every month; `none` none.
    """
    if publish not in PUBLISH_CHOICES:
        raise StoreError(f"--publish {publish!r}: one of {', '.join(PUBLISH_CHOICES)}")
    if publish == PUBLISH_ALL:
        return list(months), []
    wanted = set(months)
    readable = {m for scenario in scenarios.values() for m in readable_list_months(store, scenario.name)} & wanted
    if publish == PUBLISH_NONE:
        return [], sorted(readable)
    return sorted(readable | {months[-1]}), []


def plan_run(
    root: str | None,
    first_month: str | None,
    last_month: str | None,
    scenarios_file: str | None,
    out: TextIO | None = None,
    publish: str = PUBLISH_LAST,
    dagster_home: str | None = None,
) -> RunPlan:
    """The plan of a run over the store at `root` (default: the settings' store), refused without a landing zone,
    or (StoreError, before anything is written) when a scenario's stored chain cannot be continued from the month
    before the run. `dagster_home` is only named in the commands it prints.

    One listing of the landing zone serves the months, the observations and the closing summary. With `out`, says
    that it lists the landing zone, how far a long listing got, and what it found.
    """
    root = root or store_root_from_env()
    store = ObjectStore(root)
    require_landing_zone(store)
    started = time.monotonic()
    if out is not None:
        print(f"Listing the landing zone {redact_url(store.url('raw'))} ...", file=out, flush=True)
    entries = inventory(store, listed=ListingProgress(out) if out is not None else None)
    scenarios = load_scenarios(scenarios_file)
    held = months_held(entries)
    if out is not None:
        print(
            f"  {len(entries):,} files listed in {time.monotonic() - started:.1f} s ({len(held)} months)",
            file=out,
            flush=True,
        )
    stored = stored_lists_span(store, scenarios)
    stored_last = stored[1] if stored else None
    # Dumps before a RATINGS_FIRST_MONTH later than them are outside the store's months: a default run starts at it.
    first, outside = store_first_month(held), []
    if first is not None and first_month is None:
        outside = [month for month in held if month < first[0]]
        if outside and len(outside) == len(held):
            raise StoreError(
                f"every month holding dumps ({_months_text(held)}) is before RATINGS_FIRST_MONTH {first[0]}"
            )
    rated_held = held[len(outside) :]
    first_source = "the first month holding dumps"
    if outside:  # the setting, not the landing zone, moved where a run without --from starts
        setting = first[0] if first is not None else ""
        first_source = (
            "RATINGS_FIRST_MONTH"
            if rated_held[0] == setting
            else f"the first month holding dumps from RATINGS_FIRST_MONTH {setting} on"
        )
    current = month_bounds()[1]
    where = redact_url(store.url())
    months = months_to_rate(rated_held, first_month, last_month, where, stored_last, current, first_source)
    start = chain_start(held, months[0], stored[0] if stored else None, entries)
    # The store's months, of which the run rates months: pages over every month read them all.
    # Not the month in progress, though it holds dumps or a list: its partition does not exist before it ends.
    partition_range = (
        start,
        min(max(months[-1], held[-1] if held else months[-1], stored_last or months[-1]), add_months(current, -1)),
    )
    commands = command_lines(where, scenarios_file, dagster_home)
    for scenario in scenarios.values():
        try:
            chain_continues(store, scenario, months[0], start)
        except MissingMonth as missing:
            raise StoreError(f"scenario {scenario.name}: {missing.explained(commands)}") from None
    notes = tuple(f"WARNING: {gap}" for gap in held_gaps(held, months[0], months[-1]))
    waiting = waiting_for_month_end(entries, current)
    notes += (waiting,) if waiting else ()
    before = not_rated_before(entries, held, stored[0] if stored else None, months[0])
    notes += (before,) if before else ()
    notes += tuple(federation_warnings(scenarios, entries, months))
    # Which of raw/players/ applies to which months: the seed list the chains start from, the registry in force.
    notes += tuple(registry_plan(store, months, start, entries))
    if months[0] == start:  # the run reads the seed list
        notes += tuple(seeds_below_floor(store, scenarios.values(), start))
    published, stale = published_months(store, scenarios, months, publish)
    return RunPlan(
        root,
        store,
        entries,
        months,
        scenarios,
        partition_range,
        notes,
        tuple(published),
        tuple(stale),
        scenarios_file,
        dagster_home,
    )


def federation_warnings(
    scenarios: Mapping[str, Scenario], entries: Sequence[LandingEntry], months: Sequence[str]
) -> list[str]:
    """The run's warnings of its federation folders: names that are no federation code or differ only in case
    (landing.federation_folder_problems), and each scenario whose `reported_by` or trusted federation has no folder
    holding dumps of `months` but one differing only in case (a misnamed folder), which the run would rate (or trust)
    nothing of without a word. A federation with no folder at all gets a note (no WARNING: the default scenarios
    name ENG and GER, which a federation rating its own files does not send); one that sent dumps of other months
    only, nothing (a month without its dumps is common).
    """
    lines = [f"WARNING: {line}" for line in federation_folder_problems(entries)]
    wanted = set(months)
    read = {entry.federation for entry in entries if entry.kind == DUMP}
    held = {entry.federation for entry in entries if entry.kind == DUMP and entry.month in wanted}
    for name, scenario in scenarios.items():
        reported_by = scenario.restrict.reported_by if scenario.restrict else None
        named = (
            [(reported_by, "rates only the games reported by", "restrict: reported_by", "it rates no game")]
            if reported_by
            else []
        )
        named += [
            (federation, "trusts the ratings stated by", "trust_stated_ratings", "it trusts none")
            for federation in trusted_federations(scenario.trust_stated_ratings)
        ]
        for federation, what, key, outcome in named:
            if federation in held:
                continue
            alike = [f"raw/{escape_text(f)}/" for f in sorted(held) if f.casefold() == federation.casefold()]
            if not alike and federation in read:
                continue
            code = escape_text(federation)
            said = f"scenario {name} {what} {code} ({key}), but no folder raw/{code}/"
            if alike:
                lines.append(
                    f"WARNING: {said} holds dumps of {_months_text(months)}: {outcome} ({', '.join(alike)} differs "
                    "only in case)"
                )
            else:
                lines.append(f"Note: {said} is in the landing zone: {outcome}")
    return lines


def stale_after(
    store: ObjectStore, scenarios: Mapping[str, Scenario], last_month: str
) -> dict[str, dict[str, list[str]]]:
    """Scenario -> its stored lists after `last_month` (`months`), rated from the list a run up to `last_month` has
    replaced, so stale until the chain is re-rated from the month after, and how the first of them no longer
    continues the new list (`problems`, the list_continuity findings; empty when it still does by rating).
    """
    stale = {}
    for name, scenario in scenarios.items():
        later = [month for month in stored_table_months(store, list_path(scenario)) if month > last_month]
        if later:
            stale[name] = {"months": later, "problems": stale_continuity(store, scenario, last_month)}
    return stale


def stale_continuity(store: ObjectStore, scenario: Scenario, last_month: str) -> list[str]:
    """How the stored list of the month after `last_month` fails to continue the list a run just wrote for
    `last_month` (the list_continuity check's findings; empty when it still continues it, or is not stored).
    """
    path = list_path(scenario)
    previous, following = (
        read_stored_month(store, path, last_month),
        read_stored_month(store, path, add_months(last_month, 1)),
    )
    if previous is None or following is None:
        return []
    seeded = not scenario.is_system and seeds_from_standard(scenario.rules_for(add_months(last_month, 1)))
    return continuity_problems(previous, following, seeded)


#: The metadata key of the warning a Dagster rate step puts on its first list (assets.runtime.upgrades).
MADE_OTHERWISE = "made_otherwise"


def made_otherwise_line(
    made: Mapping[str, str],
    commands: CommandLines,
    first: str,
    earliest_known: bool = True,
    scenarios: Mapping[str, Any] | None = None,
) -> str:
    """The warning of a run from `first` on a store whose earlier stored lists were made by another code version than
    the definitions give their scenario now (assets.runtime.runs.lists_made_otherwise): scenario -> the first such
    month. The version holds the scenario's definition (its rules, schedule, `set:`) and the code rating it. Unless
    `earliest_known`, only the month before `first` was asked (a Dagster rate step): earlier lists may be so too.
    What the `--from` brings in line depends on each scenario's policy (`scenarios`: its definitions; frozen_clause).
    """
    named = " and ".join(
        f"{name} from {month}{'' if earliest_known else ' (or earlier)'}" for name, month in sorted(made.items())
    )
    return (
        f"WARNING: the stored lists of {named} were made by another definition of the scenario (or another version "
        f"of the code) than this run's, and this run starts at {first}: bring them in line with "
        f"`{commands.ratings('run', '--from', min(made.values()))}`"
        + ("" if earliest_known else ", or from the first such month before it (a `ratings run` names it)")
        + frozen_clause(scenarios or {}, list(made))
    )


def games_made_otherwise_line(
    months: Sequence[str],
    commands: CommandLines,
    first: str,
    scenarios: Mapping[str, Any] | None = None,
    earliest_known: bool = True,
) -> str:
    """The warning of a run from `first` on a store whose games of earlier `months` (raw_games or games) were read or
    validated by another version of the code than this run's (assets.runtime.runs.tables_made_otherwise): the lists
    rated on them may differ from those a run from scratch makes, and this run continues them; what the `--from`
    brings in line depends on each of the `scenarios`' policy (frozen_clause). Unless `earliest_known`, only the month
    before `first` was asked (a Dagster rate step): earlier months' games may be so too.
    """
    return (
        f"WARNING: the stored games of {_months_text(months)}{'' if earliest_known else ' (or earlier)'} were read or "
        f"validated by another version of the code than this run's, and this run starts at {first}: the lists rated "
        f"on them may differ from a rating from scratch; bring them in line with "
        f"`{commands.ratings('run', '--from', months[0])}`"
        + ("" if earliest_known else ", or from the first such month before it (a `ratings run` names it)")
        + frozen_clause(scenarios or {}, list(scenarios or {}))
    )


def frozen_clause(scenarios: Mapping[str, Any], names: Sequence[str]) -> str:
    """What a `ratings run --from` leaves unlike a rating from scratch in the named scenarios that keep stored lists
    (recalculation: forward, or a window: pipeline.scenarios.recalculation): it rates a frozen list again on the games
    it rated only, and keeps as stored one whose games the files (read and validated now) give otherwise, by policy;
    nothing in the product rates such a scenario's stored lists anew. Empty when every named scenario is `full`.
    """
    frozen = {}
    for name in sorted(names):
        scenario = scenarios.get(name)
        policy = scenario.recalculation_policy() if isinstance(scenario, Scenario) else FULL
        if policy != FULL:
            frozen[name] = policy if isinstance(policy, str) else f"window {policy}"
    if not frozen:
        return ""
    named = ", ".join(f"{name} (recalculation: {label})" for name, label in frozen.items())
    return (
        f"; for {named} it does so only in part: a list stored before it (under a window, before its last months) "
        "is rated again on the games it rated alone, and kept as stored where the files give those games otherwise "
        "now (by policy: the difference goes into the next list not stored yet, a rating system's is only listed), "
        "so such lists stand unlike a rating from scratch; no command rates them anew"
    )


def stale_before_line(stale: Mapping[str, str], commands: CommandLines, first: str) -> str:
    """The warning of a run from `first` on a store whose earlier stored lists were made before the list of the month
    before them changed (assets.runtime.runs.lists_stale_before): scenario -> the first such month.
    """
    start = min(stale.values())
    named = ", ".join(f"{name} from {month}" for name, month in sorted(stale.items()))
    return (
        f"WARNING: stored lists before {first} were made from a list that has changed since ({named}), and this run "
        f"continues from them: bring them up to date with `{commands.ratings('run', '--from', start)}`"
    )


def changed_before_line(months: Sequence[str], commands: CommandLines, first: str, registry: Sequence[str] = ()) -> str:
    """The warning of a run from `first` on a store whose dumps of earlier `months`, or the registry folders read from
    earlier `registry` months, changed since those months' stored tables were made (assets.runtime.runs.
    landing_changed_before): the run leaves them as they were.
    """
    named = [f"the dumps of {_months_text(months)}"] if months else []
    named += [f"the registry read from {_months_text(registry)} (raw/players/)"] if registry else []
    one = len(months) + len(registry) == 1
    return (
        f"WARNING: {' and '.join(named)} changed since {'its' if one else 'their'} stored tables were made, and this "
        f"run starts at {first}: bring {'it' if one and not months else 'them'} in with "
        f"`{commands.ratings('run', '--from', min([*months, *registry]))}`"
    )


def waiting_lines(
    store: ObjectStore, scenarios: Mapping[str, Scenario], months: Sequence[str], changed: Sequence[str]
) -> list[str]:
    """What going on without the earlier `changed` months costs each scenario that keeps stored lists as they are
    (recalculation: forward or a window): the games their files add that would go into this run's first list rated
    anew wait for the list after it, where those of tournaments whose late window ends before it are past it.
    One listing per such scenario, and only when months changed.
    """
    lines = []
    for name, scenario in scenarios.items() if changed else ():
        policy = scenario.recalculation_policy()
        if policy == FULL:
            continue
        frozen = set(frozen_months(policy, set(stored_table_months(store, list_path(scenario))), months))
        target = next((month for month in months if month not in frozen), None)
        if target is None:  # every list of the run stays as stored: the games wait whatever it does
            continue
        listed, label = list_month(scenario, target), policy if isinstance(policy, str) else f"window {policy}"
        following = list_month(scenario, add_months(listed, 1))
        ended = last_listed_in(listed, following)
        past = (
            f"those of tournaments that ended in {_months_text(ended)} are past their reporting window (not rated)"
            if ended
            else "none is yet past its reporting window"
        )
        lines.append(
            f"WARNING: {name} (recalculation: {label}): going on without {_months_text(changed)} makes the games "
            f"{'its' if len(changed) == 1 else 'their'} files add, which would go into this run's list of {listed}, "
            f"wait for a later list ({following} at the earliest), where {past}"
        )
    return lines


def remove_interrupted_writes(store: ObjectStore, out: TextIO) -> None:
    """Remove the temporary files that killed writers left behind, and say so."""
    removed = store.remove_orphaned_temp_files()
    if removed:
        print(f"Removed {removed} temporary file(s) left by interrupted writes", file=out, flush=True)


def opening_line(
    months: Sequence[str],
    where: str,
    scenarios: Mapping[str, Scenario],
    home: str,
    published: Sequence[str] | None = None,
) -> str:
    """What a run says before it starts: the months, the scenarios, the instance, and which months it publishes readable
    lists of (`published`; None: not said).
    """
    lists = ""
    if published is not None:
        lists = f", readable lists of {_months_text(published)}" if published else ", no readable list"
    return (
        f"Rating {len(months)} month{'s' if len(months) != 1 else ''} {months[0]}..{months[-1]} of {where} "
        f"under {len(scenarios)} scenarios "
        f"({', '.join(scenarios)}){lists} (Dagster instance {home}) ..."
    )


def _months_text(months: Sequence[str]) -> str:
    """'2024-12', '2024-01..2024-12 (12 months)', or '2023-06, 2024-01..2024-12 (13 months)'."""
    stretches = [first if first == last else f"{first}..{last}" for first, last in consecutive_stretches(months)]
    shown = some_names(stretches, 4)
    return shown if len(months) == 1 else f"{shown} ({len(months)} months)"


def rated_players(store: ObjectStore, scenarios: Mapping[str, Scenario], month: str) -> dict[str, int]:
    """Rated players on each scenario's stored list of `month` (a scenario without that list is left out)."""
    rated: dict[str, int] = {}
    for name, scenario in scenarios.items():
        key = table_key([scenario.name, "rating_list"], month)
        if store.exists(key):
            rated[name] = store.read_parquet(key, columns=["rating"]).filter(pl.col("rating").is_not_null()).height
    return rated


def left_out_of_txt(store: ObjectStore, scenarios: Mapping[str, Scenario], month: str) -> dict[str, int]:
    """Rated players of each scenario's list of `month` the FIDE TXT leaves out (publish.lists.TXT_LEFT_OUT_REASON);
    only the scenarios that leave some out.
    """
    counts = {
        name: stored_txt_left_out(store, scenario.name, month)
        for name, scenario in scenarios.items()
        if store.exists(table_key([scenario.name, "rating_list"], month))
    }
    return {name: n for name, n in counts.items() if n}


def run_summary(
    store: ObjectStore,
    months: Sequence[str],
    entries: list[LandingEntry],
    scenarios: Mapping[str, Scenario],
    *,
    run_succeeded: bool,
    run_id: str,
    reconciliation_passed: bool | None,
    failed_steps: Mapping[str | None, str],
    run_seconds: float,
    dagster_home: str,
    scenarios_file: str | None = None,
) -> dict[str, Any]:
    """The summary of a finished run (closing_lines prints it): `success` is False when the run failed or rated
    no game at all. A store that fails while the summary reads it (full disk, outage) leaves its figures empty
    and `fault` naming why, so the summary is still printed. `scenarios_file` is the run's --scenarios (None: not
    given), which the commands the summary prints repeat.
    """
    try:
        outcome = run_outcome(store, months, entries)
        rated = rated_players(store, scenarios, months[-1])
        outcomes = scenario_game_outcomes(store, scenarios, months)
        left_out = left_out_of_txt(store, scenarios, months[-1])
        fault = None
    except Exception as error:
        fault = fault_line(store.url(), error, "reading")
        if fault is None:
            raise
        outcome, rated, outcomes, left_out = run_outcome(ObjectStore(store.root), [], entries), {}, {}, {}
    return {
        "success": run_succeeded and outcome["games"] > 0,
        "run_succeeded": run_succeeded,
        "run_id": run_id,
        "months": len(months),
        "first_month": months[0],
        "last_month": months[-1],
        "scenarios": list(scenarios),
        **outcome,
        "rated_players": rated,
        "game_outcomes": outcomes,
        "left_out_of_txt": left_out,
        # Only when the summary could not read the store: what failed, and where.
        **({"fault": fault, "unreadable": fault} if fault else {}),
        "reconciliation_passed": reconciliation_passed,
        "failed_steps": failed_steps,
        "run_seconds": round(run_seconds, 1),
        "store": redact_url(store.url()),
        "dagster_home": dagster_home,
        "scenarios_file": os.path.abspath(scenarios_file) if scenarios_file else None,
    }


def checks_passed(evaluations: Iterable[tuple[str, bool]]) -> dict[str, bool]:
    """Each check's name -> whether every evaluation of it passed (one per month of a run, and the range's)."""
    passed: dict[str, bool] = {}
    for name, ok in evaluations:
        passed[name] = passed.get(name, True) and ok
    return passed


def runs_summary(
    plan: RunPlan,
    outcomes: Sequence[Mapping[str, Any]],
    runs_planned: int,
    run_seconds: float,
    dagster_home: str,
    fault: str | None = None,
    unchanged: Set[str] = frozenset(),
) -> dict[str, Any]:
    """run_summary of the Dagster runs of a `ratings run`, the shared tables' runs first, each outcome its `run_id`,
    `success`, `checks` (name -> passed) and `failed_steps` (step -> cause); a run that never started failed.
    Reconciliation passed when it passed in every run that checked it (the shared tables' runs). `fault` names
    a store fault that stopped the runs outside any step; else the first step that failed on one names it.
    """
    reconciled = [outcome["checks"][RECONCILIATION] for outcome in outcomes if RECONCILIATION in outcome["checks"]]
    summary = run_summary(
        plan.store,
        plan.months,
        plan.entries,
        plan.scenarios,
        run_succeeded=fault is None and len(outcomes) == runs_planned and all(o["success"] for o in outcomes),
        run_id=outcomes[0]["run_id"] if outcomes else "(none started)",
        reconciliation_passed=all(reconciled) if reconciled else None,
        failed_steps={step: cause for o in outcomes for step, cause in o["failed_steps"].items()},
        run_seconds=run_seconds,
        dagster_home=dagster_home,
        scenarios_file=plan.scenarios_file,
    )
    summary["run_ids"] = [outcome["run_id"] for outcome in outcomes]
    summary["reported_late"] = sum(outcome.get("reported_late", 0) for outcome in outcomes)
    summary["stated_ratings_differing"] = {
        scenario: count
        for outcome in outcomes
        for scenario, count in outcome.get("stated_ratings_differing", {}).items()
        if count
    }
    summary["late_reports"] = [line for outcome in outcomes for line in outcome.get("late_reports", [])]
    joined: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for scenario, months in outcome.get(JOINED_FROM_LATER_LIST, {}).items():
            joined.setdefault(scenario, {}).update(months)
    summary[JOINED_FROM_LATER_LIST] = joined
    summary["amended_lists"] = sorted(
        (row for outcome in outcomes for row in outcome.get("amended", [])),
        key=lambda row: (row["scenario"], row["month"]),
    )
    for row in summary["amended_lists"][:SUMMARY_FILES]:
        if row.get("players_otherwise_changed") and not summary.get("fault"):
            row["columns_changed"] = columns_changed(plan.store, row["scenario"], row["month"])
    summary["federation_warnings"] = federation_warnings(plan.scenarios, plan.entries, plan.months)
    summary["published"] = list(plan.published)
    summary["stale_readable_lists"] = list(plan.unpublished_stale)
    summary["registries"] = registry_plan(plan.store, plan.months, plan.chain_start, plan.entries)
    try:
        summary["registries"] += registry_problem_lines(plan.store, plan.months)
    except Exception as error:  # the store failing as it is read: the summary says so, and the rest of it stands
        summary["registries"].append(f"WARNING: raw/players/ could not be read for its problems: {error}")
    summary["fault"] = fault or next((f for o in outcomes for f in o.get("faults", [])), None) or summary.get("fault")
    # `unchanged`: scenarios whose list of the last month is, as far as the instance knows, the one the lists after it
    # were made from (assets.runtime.runs.lists_unchanged_since_next): those lists are not stale.
    changed = {name: scenario for name, scenario in plan.scenarios.items() if name not in unchanged}
    summary["stale_after"] = {} if summary["fault"] else stale_after(plan.store, changed, plan.months[-1])
    return summary


def columns_changed(store: ObjectStore, scenario: str, month: str) -> list[str]:
    """The columns other than the rating in which the players on both the stored list of `month` and the list it
    replaced (lists/<scenario>/<month>.previous.parquet) differ: what an amendment's `players_otherwise_changed`
    players changed, which its changes file (ratings only) does not say. Empty when either cannot be read.
    """
    try:
        old = store.read_parquet(previous_key(scenario, month))
        new = store.read_parquet(table_key([scenario, "rating_list"], month))
    except Exception:  # a count the summary can do without: never the reason it is not printed
        return []
    shared = [column for column in old.columns if column in new.columns and column not in ("player_id", "rating")]
    if not shared or "rating" not in old.columns or "rating" not in new.columns:
        return []
    # The players whose rating stayed: the columns the others changed follow from the rating (change, games...).
    both = old.select("player_id", "rating", *shared).join(
        new.select("player_id", "rating", *shared), on="player_id", suffix="_new"
    )
    kept = both.filter(pl.col("rating").eq_missing(pl.col("rating_new")))
    differs = kept.select(pl.col(c).ne_missing(pl.col(f"{c}_new")).any() for c in shared).row(0)
    return [column for column, differ in zip(shared, differs, strict=True) if differ]


def _stored(store: ObjectStore, table: str, months: Sequence[str], schema: pl.Schema) -> pl.DataFrame:
    """The `schema` columns of a table's stored months as one frame (empty, with those columns, when none is stored)."""
    frames = [
        frame for month in months if (frame := read_stored_month(store, [table], month, list(schema))) is not None
    ]
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


# The identity columns the summary reads (registered_as is null in a month stored before the table had it).
IDENTITY_COLUMNS = pl.Schema(
    {"month": pl.Utf8, "status": pl.Utf8, "player_id": pl.Int64, "name": pl.Utf8, "registered_as": pl.Int64}
)


def _identity_scan(store: ObjectStore, months: Sequence[str]) -> pl.LazyFrame:
    """The IDENTITY_COLUMNS of the stored identity tables of `months` as one scan: the files are read side by side,
    not one after the other (two hundred months: a look and a read each, on S3 a request each).
    """
    keys = [table_key(["identity"], month) for month in months]
    if not keys:
        return pl.LazyFrame(schema=IDENTITY_COLUMNS)
    options: dict[str, Any] = {"schema": IDENTITY_COLUMNS, "missing_columns": "insert", "extra_columns": "ignore"}
    if store.is_local:
        return pl.scan_parquet([store.path(key) for key in keys], hive_partitioning=False, **options)
    if store.is_s3:
        return pl.scan_parquet([store.url(key) for key in keys], storage_options=polars_s3_options(), **options)
    # Another filesystem: the files as read_parquets reads them.
    return pl.concat(with_schema(frame, IDENTITY_COLUMNS).lazy() for frame in store.read_parquets(keys))


def _summary_identities(store: ObjectStore, months: Sequence[str]) -> pl.DataFrame:
    """The identity rows the summary reads: every row of `months`, and of the stored months up to their last those
    names_given_ids and names_registered_elsewhere read (filtered as the files are read: most rows are neither).
    """
    stored = [month for month in stored_table_months(store, ["identity"]) if month <= months[-1]] if months else []
    scan = _identity_scan(store, stored)
    told = (pl.col("status") == "new") & pl.col("registered_as").is_not_null()
    wanted = pl.col("month").is_in(list(months)) | pl.col("status").is_in(["new_name", "matched_by_name"]) | told
    rows = scan.filter(wanted).collect()
    told_ids = rows.filter(told)["player_id"].unique()
    if told_ids.is_empty():  # most runs: no earlier month to look for
        return rows
    # The months that rated these ids before they were told apart (names_registered_elsewhere's `since`).
    before = scan.filter(~wanted & (pl.col("status") == "new") & pl.col("player_id").is_in(told_ids.implode()))
    return pl.concat([rows, before.collect()])


def run_outcome(store: ObjectStore, months: Sequence[str], entries: list[LandingEntry]) -> dict[str, Any]:
    """What the stored tables of `months` say: games, quarantine by reason and file, mostly-quarantined months,
    identities.
    """
    games = sum(stored_rows(store, "games", month) or 0 for month in months)
    quarantine_frame = _stored(store, "quarantine", months, pl.Schema({"reason": pl.Utf8, "source_file": pl.Utf8}))
    # Every stored month up to the last: a name rated under a local id before the run may be given an id in it.
    every_identity = _summary_identities(store, months)
    identity_frame = every_identity.filter(pl.col("month").is_in(list(months)))

    def counted(frame: pl.DataFrame, column: str) -> dict[str, int]:
        return dict(frame.group_by(column).len().sort("len", column, descending=[True, False]).iter_rows())

    return {
        "games": games,
        "quarantined": quarantine_frame.height,
        "quarantined_by_reason": counted(quarantine_frame, "reason"),
        "quarantined_by_file": counted(quarantine_frame, "source_file"),
        "mostly_quarantined_months": mostly_quarantined(store, months),
        "players": distinct_players(store, months),
        "players_by_identity": players_by_identity(identity_frame),
        "names_given_ids": name_id_lines(names_given_ids(every_identity)),
        "names_registered_elsewhere": registered_elsewhere_lines(names_registered_elsewhere(every_identity)),
        "unplaced_files": [f"{entry.key}: {entry.problem}" for entry in unplaced(entries)],
        "not_read_whole": files_not_read_whole(store, months),
    }


def readable_lists_lines(
    where: str,
    published: Sequence[str],
    stale: Sequence[str],
    finished: bool = True,
    commands: CommandLines | None = None,
) -> list[str]:
    """Where a run's readable lists are, which months have them, and how to make any other month's (`commands`: how
    the run's commands are written, default over `where` alone). A run that did not finish (`finished` False) may
    have stopped before it published them: it says so, rather than where they are.
    """
    if published and not finished:
        lines = [
            f"  readable lists of {_months_text(published)}: made only if the run got that far (it stopped before "
            f"it finished): see {where}/lists/<scenario>/"
        ]
    elif published:
        lines = [f"  readable lists of {_months_text(published)}: {where}/lists/<scenario>/<YYYY-MM>.csv|.txt|.html"]
    else:
        lines = ["  no readable list made (--publish none)"]
    if stale:
        lines.append(
            f"  WARNING: the readable lists of {_months_text(stale)} under {where}/lists/ show the lists this run "
            "replaced: make them again with `ratings list` or a run with --publish last or all"
        )
    template = [Placeholder("<scenario>"), Placeholder("<YYYY-MM>"), Placeholder("csv|txt|html|combined")]
    lines.append(f"  any month's list on demand: {list_command(commands or CommandLines(where), *template)}")
    return lines


def closing_lines(summary: dict[str, Any], scenarios: dict[str, Any], title: str) -> str:
    """The summary a person reads at the end of a run: what was rated, what was not and why, where it is."""
    where, first, last = summary["store"], summary["first_month"], summary["last_month"]
    commands = command_lines(where, summary.get("scenarios_file"), summary["dagster_home"])
    if not summary["run_succeeded"]:
        status = "FAILED (see the run in the Dagster UI)"
    elif summary["games"] == 0:
        status = "FAILED: no game was rated"
    else:
        status = "done"
    reconciliation = {True: "passed", False: "FAILED", None: "not run"}[summary["reconciliation_passed"]]
    lines = [
        f"{title} {status}: {summary['months']} months {first}..{last}, scenarios {', '.join(scenarios)}",
        f"  games validated: {summary['games']:,}   quarantined records: {summary['quarantined']:,}   "
        f"reconciliation: {reconciliation}",
        *(
            [
                f"  reported late (rated on a later list than their tournament's first, within the reporting window): "
                f"{summary['reported_late']:,} games; on time: {summary['games'] - summary['reported_late']:,}"
            ]
            if summary.get("reported_late")
            else []
        ),
    ]
    for step, message in summary["failed_steps"].items():
        lines.append(f"  step {step} failed: {escape_text(message)}")
    if summary["quarantined_by_reason"]:
        lines.append(
            "  quarantined by reason: " + ", ".join(f"{r} {n:,}" for r, n in summary["quarantined_by_reason"].items())
        )
        files = list(summary["quarantined_by_file"].items())
        lines.append(
            "  quarantined by file: "
            + ", ".join(f"{escape_text(f)} {n:,}" for f, n in files[:SUMMARY_FILES])
            + (f" and {len(files) - SUMMARY_FILES} more files" if len(files) > SUMMARY_FILES else "")
        )
    lines += [f"  {escape_text(line)}" for line in summary.get("registries", [])]
    for name, months in summary.get(JOINED_FROM_LATER_LIST, {}).items():
        lines.append(
            f"  {name}: {sum(months.values()):,} player(s) the chain did not rate (on no list yet, unrated or "
            "delisted) joined at the rating of a list filed after its start, any pool toward a first rating dropped: "
            + ", ".join(f"{month} {count:,}" for month, count in sorted(months.items()))
        )
    for name, counts in summary.get("game_outcomes", {}).items():
        if any(counts.values()):
            lines.append(
                f"  {name}: the lists rest on {sum(counts.values()):,} games: "
                + ", ".join(f"{counts[key]:,} {text}" for key, text in GAME_OUTCOMES.items() if counts[key])
            )
    for name, count in summary.get("stated_ratings_differing", {}).items():
        lines.append(
            f"  {name}: {count:,} rating(s) stated by the dumps differ from the list in force at their event's start: "
            "the list's were used, or the dump's where the scenario trusts its source "
            f"(lists/{name}/<YYYY-MM>.stated-ratings.csv lists them)"
        )
    lines += [f"  {escape_text(line)}" for line in summary.get("late_reports", [])]
    for row in summary.get("amended_lists", [])[:SUMMARY_FILES]:
        lines.append(
            f"  {row['scenario']}: the list of {row['month']} changed from the stored one: "
            f"{row['players_updated']:,} rating(s) changed, {row['players_created']:,} player(s) added, "
            f"{row['players_deleted']:,} removed, {row.get('players_otherwise_changed', 0):,} otherwise changed"
            + (f" (in {', '.join(row['columns_changed'])})" if row.get("columns_changed") else "")
            + f" ({row['changes_file']})"
        )
    if len(summary.get("amended_lists", [])) > SUMMARY_FILES:
        lines.append(
            f"  ... and {len(summary['amended_lists']) - SUMMARY_FILES} more amended lists (lists/*/*.changes.csv)"
        )
    identities = summary["players_by_identity"]
    if summary.get("players"):
        lines.append(f"  players in the validated games: {summary['players']:,}")
    if identities:
        lines.append(
            "  players not identified by a registered id, distinct (see identity/<YYYY-MM>.parquet): "
            + ", ".join(f"{status} {n:,}" for status, n in identities.items())
        )
    named = summary.get("names_given_ids", [])
    lines += [f"  WARNING: {escape_text(line)}" for line in named[:SUMMARY_FILES]]
    if len(named) > SUMMARY_FILES:
        lines.append(f"  WARNING: ... and {len(named) - SUMMARY_FILES} more local ids whose name was given an id later")
    elsewhere = summary.get("names_registered_elsewhere", [])
    lines += [f"  WARNING: {escape_text(line)}" for line in elsewhere[:SUMMARY_FILES]]
    if len(elsewhere) > SUMMARY_FILES:
        lines.append(
            f"  WARNING: ... and {len(elsewhere) - SUMMARY_FILES} more unregistered ids whose name is registered as "
            "another id"
        )
    for problem in summary["unplaced_files"][:SUMMARY_FILES]:
        lines.append(f"  WARNING: not read: {escape_text(problem)}")
    if len(summary["unplaced_files"]) > SUMMARY_FILES:
        lines.append(f"  WARNING: ... and {len(summary['unplaced_files']) - SUMMARY_FILES} more files not read")
    # The plan's notes of scenarios without their federation's folder are not said again at the end.
    lines += [f"  {line}" for line in summary.get("federation_warnings", []) if line.startswith("WARNING: ")]
    capped = summary.get("not_read_whole", [])
    for problem in capped[:SUMMARY_FILES]:
        lines.append(f"  WARNING: not read whole: {escape_text(problem)}")
    if len(capped) > SUMMARY_FILES:
        lines.append(f"  WARNING: ... and {len(capped) - SUMMARY_FILES} more files not read whole")
    for warning in summary["mostly_quarantined_months"][:SUMMARY_FILES]:
        lines.append(f"  WARNING: {warning}")
    if summary["mostly_quarantined_months"]:
        lines.append("  (a registry or a month folder may be missing; the reasons are in quarantine/<YYYY-MM>.parquet)")
    if summary.get("unreadable"):
        unreadable = escape_text(summary["unreadable"])
        lines.append(f"  the figures above are missing: the store could not be read ({unreadable})")
    elif summary["games"] == 0:
        lines.append("  no game was rated: every record was quarantined, or the months hold no dumps")
    stale = summary.get("stale_after", {})
    if stale:
        later = sorted({month for lists in stale.values() for month in lists["months"]})
        following = add_months(last, 1)
        broken = [name for name, lists in stale.items() if lists["problems"]]
        state = (
            f"are stale (the {following} list no longer continues the new {last} list in {', '.join(broken)})"
            if broken
            else f"may be stale (the {following} list still continues the new {last} list by rating)"
        )
        lines.append(
            f"  WARNING: the stored lists after {last} ({later[0]}..{later[-1]}, scenarios {', '.join(stale)}) were "
            f"rated from the lists this run replaced and {state}; bring them up to date with "
            f"`{commands.ratings('run', '--from', following)}`"
        )
    dumps, registry = summary.get("dumps_changed_before", []), summary.get("registry_changed_before", [])
    if dumps or registry:
        lines.append(f"  {changed_before_line(dumps, commands, first, registry)}")
    lines += [f"  {line}" for line in summary.get("waiting_before", [])]
    if summary.get("lists_made_otherwise"):
        made = summary["lists_made_otherwise"]
        lines.append(f"  {made_otherwise_line(made, commands, first, scenarios=scenarios)}")
    if summary.get("games_made_otherwise"):
        games = summary["games_made_otherwise"]
        lines.append(f"  {games_made_otherwise_line(games, commands, first, scenarios)}")
    if summary.get("lists_stale_before"):
        lines.append(f"  {stale_before_line(summary['lists_stale_before'], commands, first)}")
    if summary.get("bookkeeping"):
        lines.append(f"  WARNING: {escape_text(summary['bookkeeping'])}")
    if summary["rated_players"]:
        lines.append(
            f"  rated players on the {last} list: "
            + ", ".join(f"{n} {c:,}" for n, c in summary["rated_players"].items())
        )
    if summary.get("left_out_of_txt"):
        lines.append(
            f"  rated players left out of the {last} FIDE TXT ({TXT_LEFT_OUT_REASON}; in the CSV and HTML): "
            + ", ".join(f"{n} {c:,}" for n, c in summary["left_out_of_txt"].items())
        )
    lines += [
        (
            f"  run {summary['run_id']} took {summary['run_seconds']:.0f}s"
            if len(summary.get("run_ids", [])) <= 1
            else f"  {len(summary['run_ids'])} runs of all_months took {summary['run_seconds']:.0f}s (the UI shows "
            "each run's stage as its ratings/stage tag)"
        ),
        *readable_lists_lines(
            where,
            summary.get("published", []),
            summary.get("stale_readable_lists", []),
            finished=summary.get("run_succeeded", True),
            commands=commands,
        ),
        f"  tables: {where}/<scenario>/<table>/<YYYY-MM>.parquet",
        f"  reports: {where}/reports/index.html",
        f"  UI: {commands.ratings('ui')} (then http://127.0.0.1:3000)",
    ]
    if summary.get("fault"):
        # Last, where a person looks first: what stopped the run and where (the figures above may be empty).
        lines.append(f"{title} stopped by a store fault: {escape_text(summary['fault'])}")
    return "\n".join(lines)
