"""Scenarios, and the chain step that rates one month of one scenario.

A scenario is a rule-set schedule plus one-time events (or a rating system).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import polars as pl
import yaml
from pydantic import AfterValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from pipeline.engine.period import PeriodResult, carry_forward, compress, predict_period, rate_period
from pipeline.ingest.federations import FEDERATION_CODE
from pipeline.months import add_months, month_index, parse_month
from pipeline.rules.model import (
    KPolicy,
    RulesError,
    RuleSet,
    _Frozen,
    _yaml_scalar,
    load_yaml,
    names_a_file,
    resolve_rules,
    schedule_months,
)
from pipeline.settings import Settings
from pipeline.systems import scenario_system, system_names
from pipeline.systems.config import SystemRules
from schemas.games import STANDARD_TIME_CONTROLS, TIME_CONTROLS

# One name everywhere: tables, Dagster groups (which allow no dash), reports, lists and the CLI.
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: The names no scenario may take. A scenario's name is a folder at the store's top (its tables), under lists/ and
#: reports/, a Dagster group and the first part of its assets' keys; these are the store's own top-level folders (the
#: landing zone raw/, the shared tables, the derived kept/ and registry/, the readable lists, the report pages and the
#: leaderboard's, the generator's truth/, the player cards), the keys of the assets every scenario shares and the
#: groups of their stages. Named `raw`, a scenario wrote its tables into the landing zone; named `reports`, among the
#: report pages, whose index then showed each of its tables as a scenario. tests/test_scenarios.py holds this set
#: against the definitions' keys and groups and the constants naming the other folders.
RESERVED_NAMES = frozenset(
    {
        *("raw", "raw_games", "games", "quarantine", "identity", "common_accuracy", "evaluation"),
        *("kept", "registry", "lists", "reports", "truth", "players"),
        *("landing_zone", "report_index", "accuracy_comparison", "pool_health_comparison"),
        *("ingest", "validate", "common_games"),
    }
)
#: The months of games a rule set's list reads without a store lookup (the rate stage's games dependency, the cache of
#: a run's late games): a list's period reaches back to the previous list (Scenario.period_months), and list_months
#: are months of the year, so a rule set lists at least once in twelve months. The first rapid and blitz list
#: (1 July 2012) rated January-June 2012: six months. Only a schedule switching list months makes a longer period.
MAX_PERIOD_MONTHS = 12
#: Where a period's walk back ends when no chain start is given: the first month a landing zone may hold.
_EARLIEST_MONTH = "1970-01"
#: A month the scenario's list type is read at: a schedule's rule sets rate one list (load_scenarios checks).
LIST_TYPE_MONTH = "2000-01"
#: The scenario the others are compared with (the accuracy comparison's baseline, a player card's first chain): FIDE's
#: own regulations, as the shipped scenarios file names them (baseline_name).
BASELINE_SCENARIO = "actual"
#: A rating system has no K: where its lists are read as FIDE's are (ever_2400 from elite_from, the points ledger's
#: newcomers from newcomer_until_games), FIDE's default K policy stands in (2400 and 30 games, as in every preset).
SYSTEM_K_POLICY = KPolicy()


class Compression(_Frozen):
    """R + round(factor x (threshold - R)) for rated players below threshold (docs/regulations.md)."""

    # A factor above 1 would move a player past the threshold: "nobody moves past 2000" needs 0 to 1.
    threshold: int = Field(2000, gt=0)
    factor: float = Field(0.4, ge=0, le=1)
    fresh_start: bool = True


def _checked_month(value: str) -> str:
    parse_month(value)
    return value


#: A 'YYYY-MM' rating period, checked when a scenario file is read.
Month = Annotated[str, AfterValidator(_checked_month)]


class DwzUpgrade(_Frozen):
    """The DSB's one-time DWZ upgrade of 2025 (pipeline.systems.dwz.upgrade_2025) on a `dwz` scenario's state."""


class Event(_Frozen):
    """A one-time change applied to the list of period `after`, after its regular calculation: `compress` (a rule
    set's list) or `dwz_upgrade` (a `dwz` system's state, and so its list: RatingSystem.one_time_events).
    """

    after: Month
    compress: Compression | None = None
    dwz_upgrade: DwzUpgrade | None = None

    @model_validator(mode="after")
    def _one_change(self) -> Event:
        if (self.compress is None) == (self.dwz_upgrade is None):
            raise ValueError(f"event after {self.after}: give one change, 'compress: {{}}' or 'dwz_upgrade: {{}}'")
        return self

    @property
    def kind(self) -> str:
        """The change's key: `compress`, or the key of a system's one-time event (RatingSystem.one_time_events)."""
        return "compress" if self.compress is not None else "dwz_upgrade"


def _event_systems(kind: str) -> str:
    """The systems whose one-time events include `kind`, as an error names them."""
    return ", ".join(name for name in system_names() if kind in scenario_system(name).one_time_events)


class Restriction(_Frozen):
    """Which games a national scenario rates (applied by pipeline.scenarios.restriction), one of:

    - `players: GER`: games between two players the registry in force in the month rated gives federation GER
      (a national list of the federation's members; a game against a foreign player is not rated);
    - `reported_by: GER`: the games GER's dumps reported (raw/GER/..., the games' `federation` or
      `also_reported_by`: a game another federation's dump also sent that month counts for both), whoever plays them:
      what a national federation rates (its events), foreign players included.
    """

    players: str | None = None
    reported_by: str | None = None

    @model_validator(mode="after")
    def _one_federation(self) -> Restriction:
        given = {key: value for key, value in (("players", self.players), ("reported_by", self.reported_by)) if value}
        if len(given) != 1:
            raise ValueError("give one of 'players: <FED>' (its players' games) or 'reported_by: <FED>' (its dumps)")
        for key, value in given.items():
            if not FEDERATION_CODE.match(value):
                raise ValueError(f"{key}: {value!r} is not a federation code (three capital letters, as GER or ENG)")
        return self

    @property
    def federation(self) -> str:
        return self.players or self.reported_by or ""

    def describe(self) -> str:
        """As a page or the leaderboard says it."""
        if self.players:
            return f"{self.players} players' games only"
        return f"games reported by {self.reported_by} only"


class Switch(_Frozen):
    """From period `from_` on, rate under `rules` (a preset, schedule or YAML path) with `set` overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    from_: Month = Field(alias="from")
    rules: str
    set: dict[str, Any] = Field(default_factory=dict)


class RecalculationWindow(_Frozen):
    """Recalculate the last `window` lists every run (the English federation: 6), freeze the older ones."""

    window: int = Field(ge=1, le=120)


class Scenario(_Frozen):
    """One what-if: its own chain of lists from the same validated games.

    Either `rules` (a FIDE-style rule set, preset, schedule or YAML path, with `set` overrides, a
    `schedule` of switches and one-time `events`) or `system` (a rating system of pipeline/systems,
    with `set` its parameters and `time_controls` the classes it rates, one period per month).
    """

    name: str
    description: str = ""
    rules: str | None = None
    system: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    schedule: tuple[Switch, ...] = ()
    events: tuple[Event, ...] = ()
    seed_list: str | None = None
    time_controls: tuple[str, ...] | None = None
    # The FIDE list the scenario rates (standard, rapid or blitz): its rule set's (list_type) unless given;
    # a system's standard unless it rates only rapid or only blitz games.
    rates: Literal["standard", "rapid", "blitz"] | None = None
    # The scenario (of the same file) whose standard list seeds this list's unrated players, where the rule set
    # seeds from the standard rating (rapid and blitz: regulations.seeded_from_standard), or where the system seeds
    # one of its lists from another (uscf: quick and blitz from its regular list, RatingSystem.seeded_from).
    standard_chain: str | None = None
    # Which stored lists a run may rate again (pipeline.scenarios.recalculation): `full` (every month of the run,
    # from its games), `forward` (FIDE: a stored list is never re-rated with other games; late reports go to the
    # next list) or `{window: N}` (the run's last N months rated again, older stored ones frozen).
    recalculation: Literal["full", "forward"] | RecalculationWindow = "full"
    # Sources whose stated ratings (TRF rating field, PGN WhiteElo/BlackElo) are used as they are: federations (the
    # raw/<FED>/ folder) or file globs relative to raw/. Elsewhere the list in force wins
    # (pipeline.scenarios.ratings_used).
    trust_stated_ratings: tuple[str, ...] = ()
    # Only one federation's games (pipeline.scenarios.restriction): `{players: GER}` or `{reported_by: GER}`.
    restrict: Restriction | None = None

    @model_validator(mode="after")
    def _rules_or_system(self) -> Scenario:
        changes = [(event.after, event.kind) for event in self.events]
        if twice := sorted({change for change in changes if changes.count(change) > 1}):
            raise ValueError(
                "events: " + ", ".join(f"two {kind} events after {month}" for month, kind in twice) + ": give one"
            )
        if (self.rules is None) == (self.system is None):
            raise ValueError(
                f"give either 'rules' (a rule set) or 'system' (a rating system: {', '.join(system_names())})"
            )
        if self.system is not None:
            # A system's state is not a FIDE list: switching rule sets or compressing it has no meaning.
            if self.schedule:
                raise ValueError(
                    f"schedule: only a rule-set scenario has schedule; system {self.system!r} rates every month alike"
                )
            if any(event.compress is not None for event in self.events):
                raise ValueError(f"events: only a rule-set scenario has compress events; {self.system!r} has none")
            declared = scenario_system(self.system).one_time_events
            if foreign := next((event.kind for event in self.events if event.kind not in declared), None):
                raise ValueError(
                    f"events: {foreign} is an event of system {_event_systems(foreign)}, not of {self.system!r}"
                )
            if self.time_controls is not None and scenario_system(self.system).selects_games is not None:
                # Its parameters pick the games from their clocks (uscf: rating_list); classes would contradict them.
                raise ValueError(
                    f"time_controls: system {self.system!r} chooses the games it rates from their clocks by its own "
                    f"rules (its parameters: `ratings rules {self.system}`); give no time_controls"
                )
        elif self.time_controls is not None:
            raise ValueError("time_controls: only a system scenario has it (a rule set weighs time controls itself)")
        elif foreign := next((event.kind for event in self.events if event.compress is None), None):
            raise ValueError(f"events: {foreign} is an event of system {_event_systems(foreign)}, not of a rule set")
        return self

    @field_validator("time_controls")
    @classmethod
    def _time_controls(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        unknown = sorted(set(value or ()) - set(TIME_CONTROLS))
        if unknown:
            raise ValueError(f"unknown time control(s) {', '.join(unknown)}; known: {', '.join(TIME_CONTROLS)}")
        return value

    @field_validator("system")
    @classmethod
    def _system(cls, value: str | None) -> str | None:
        if value is not None:
            scenario_system(value)  # ValueError naming the systems
        return value

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: object) -> object:
        if isinstance(value, str):
            value = canonical_name(value)
            if not _NAME.match(value):
                raise ValueError(f"scenario name {value!r} must be lower-case letters, digits and underscores")
            if value in RESERVED_NAMES:
                raise ValueError(
                    f"scenario name {value!r} is one of the store's own folders or stages, where a scenario's tables, "
                    f"lists and pages would mix with theirs ({', '.join(sorted(RESERVED_NAMES))}): choose another"
                )
        return value

    @property
    def is_system(self) -> bool:
        return self.system is not None

    def system_rules(self) -> SystemRules:
        """The system and its parameters (`set`); RulesError naming the key when a parameter is wrong."""
        if self.system is None:
            raise RulesError(f"scenario {self.name!r} rates with rule sets, not a rating system")
        system = scenario_system(self.system)
        try:
            params = system.params.model_validate(self.set)
        except ValidationError as exc:
            problems = "; ".join(
                f"set.{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
            )
            known = ", ".join(sorted(f.alias or n for n, f in system.params.model_fields.items()))
            raise RulesError(f"{problems} ({system.name} parameters: {known})") from None
        return SystemRules(self.name, system, params)

    def rates_game(self) -> pl.Expr:
        """Which games of a month's games (Games) a system scenario rates: those its system picks under its parameters
        where it has time-control rules of its own (uscf: its list by US Chess's rule 5C), else those of its
        time_controls classes.
        """
        rules = self.system_rules()
        if rules.system.selects_games is not None:
            return rules.system.selects_games(rules.params)
        return pl.col("time_control").is_in(list(self.rated_time_controls()))

    def rated_games_description(self) -> str:
        """What `rates_game` keeps, as the leaderboard says it."""
        if self.is_system and scenario_system(str(self.system)).selects_games is not None:
            return f"games by {self.system}'s own time-control rules"
        return ", ".join(self.rated_time_controls())

    def recalculation_policy(self) -> str | int:
        """`full`, `forward`, or the window's number of months."""
        policy = self.recalculation
        return policy.window if isinstance(policy, RecalculationWindow) else policy

    def list_type(self) -> str:
        """The FIDE list the scenario rates: `rates` where given, else its rule set's, else standard for a system
        unless it rates only rapid (or only blitz) games.
        """
        if self.rates is not None:
            return self.rates
        if self.system is None:
            return self.rules_for(LIST_TYPE_MONTH).list_type
        rules = self.system_rules()
        if rules.system.list_type is not None:
            return rules.system.list_type(rules.params)
        classes = set(self.rated_time_controls())
        return next(iter(classes)) if classes in ({"rapid"}, {"blitz"}) else "standard"

    def rated_time_controls(self) -> tuple[str, ...]:
        return self.time_controls if self.time_controls is not None else STANDARD_TIME_CONTROLS

    def rules_name(self, month: str) -> str:
        """What rates period `month`, as the lists' metadata and report pages name it."""
        if self.system is not None:
            return self.system_rules().system.name
        return self.rules_for(month).name

    def rules_for(self, month: str) -> RuleSet:
        """The rule set this scenario rates period `month` under, resolved once per scenario and month.

        Resolving reads and merges up to 11 YAML documents and validates the model (about 1 ms), and a
        chain asks several times a month. The shipped presets are package data, fixed for the process; a
        scenario naming a rule-set file by its path resolves it on every call (the file may be edited).
        """
        if self.rules is None:
            raise RulesError(f"scenario {self.name!r} is rated by system {self.system!r}, not a rule set")
        # Keyed by what the rule set depends on (a scenario, holding dicts, is not hashable).
        key = (self.model_dump_json(include={"rules", "set", "schedule"}), month)
        rules = _RESOLVED.get(key)
        if rules is None:
            rules = self._resolved_rules(month)
            if not any(names_a_file(name) for name in (self.rules, *(switch.rules for switch in self.schedule))):
                if len(_RESOLVED) >= _RESOLVED_LIMIT:
                    _RESOLVED.clear()
                _RESOLVED[key] = rules
        return rules

    def k_policy(self, month: str) -> KPolicy:
        """The K policy period `month` is rated under: its rule set's, or SYSTEM_K_POLICY for a rating system."""
        return self.rules_for(month).k if self.system is None else SYSTEM_K_POLICY

    def _resolved_rules(self, month: str) -> RuleSet:
        assert self.rules is not None
        base, overrides = self.rules, list(self.set.items())
        for switch in sorted(self.schedule, key=lambda s: s.from_):
            if month_index(switch.from_) <= month_index(month):
                # In order, so that a switch's mapping merges into the scenario's as --set merges it.
                base, overrides = switch.rules, [*self.set.items(), *switch.set.items()]
        return resolve_rules(base, month, tuple(f"{k}={_yaml_scalar(v)}" for k, v in overrides))

    def events_after(self, month: str) -> list[Event]:
        return [event for event in self.events if event.after == month]

    def publishes_list_after(self, month: str) -> bool:
        """Whether a list follows `month`: a rating system's every month, a rule set's as its calendar has it."""
        return self.system is not None or self.rules_for(month).publishes_list_after(month)

    def months_read(self, month: str, start: str | None = None) -> list[str]:
        """The months whose games rate_scenario_month reads for `month`: the period's (period_months, from `start`)
        where a list is published after it, else the month's own (its per-game table).
        """
        if self.system is None and self.rules_for(month).publishes_list_after(month):
            return self.period_months(month, start)
        return [month]

    def period_months(self, month: str, start: str | None = None) -> list[str]:
        """The months whose games the list of `month` rates: the earlier months after the previous list, then `month`.

        `start` is the chain's first month: a period never reaches before it (the seed list is the list before it).
        The walk has no other bound than the previous list: the first rapid and blitz list (1 July 2012, list_months
        [7]) rates January-June 2012, a rule set listing in January and July six months each.
        """
        months = [month]
        if self.system is not None:
            return months  # one period per month
        first = max(start or _EARLIEST_MONTH, _EARLIEST_MONTH)
        earlier = add_months(month, -1)
        while earlier >= first and not self.rules_for(earlier).publishes_list_after(earlier):
            months.insert(0, earlier)
            earlier = add_months(earlier, -1)
        return months


#: Scenario.rules_for's rule sets by (the scenario's rules, set and schedule as JSON, month).
_RESOLVED: dict[tuple[str, str], RuleSet] = {}
_RESOLVED_LIMIT = 4096  # scenarios x months of a long run; cleared when full


def canonical_name(name: str) -> str:
    """A scenario's one spelling: a dash, as in older files and the CLI ('sonas-2017'), is an underscore."""
    return name.strip().replace("-", "_")


def default_scenarios_path() -> str:
    """The scenarios file the settings name ($RATINGS_SCENARIOS), else the shipped pipeline/scenarios/scenarios.yaml."""
    return str(Settings.one_from_env("scenarios") or resources.files("pipeline.scenarios") / "scenarios.yaml")


def load_scenarios(path: str | None = None) -> dict[str, Scenario]:
    """Scenarios by name from a YAML file (default: $RATINGS_SCENARIOS, else pipeline/scenarios/scenarios.yaml)."""
    path = path or default_scenarios_path()
    try:
        document = load_yaml(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise RulesError(f"{path}: cannot read scenarios: {exc}") from None
    entries = document.get("scenarios") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise RulesError(f"{path}: expected a 'scenarios:' mapping of name -> scenario")
    scenarios: dict[str, Scenario] = {}
    for name, body in entries.items():
        if body is not None and not isinstance(body, dict):
            raise RulesError(f"{path}: scenario {name!r}: expected a mapping of scenario keys (rules: ..., ...)")
        try:
            scenario = Scenario.model_validate({"name": name, **_rules_from_folder(body or {}, Path(path).parent)})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
            raise RulesError(f"{path}: scenario {name!r}: {problems}") from None
        try:
            # Fail now, not mid-backfill, on an unknown rule set or a wrong system parameter, in any month.
            if scenario.is_system:
                scenario.system_rules()
            for month in _switch_months(scenario):
                scenario.rules_for(month)
            _check_list_type(scenario)
        except RulesError as exc:
            raise RulesError(f"{path}: scenario {name!r}: {exc}") from None
        scenarios[name] = scenario
    by_name = {scenario.name: scenario for scenario in scenarios.values()}
    for scenario in scenarios.values():
        problem = _standard_chain_problem(scenario, by_name)
        if problem:
            raise RulesError(f"{path}: scenario {scenario.name!r}: standard_chain: {problem}")
    names = [s.name for s in scenarios.values()]
    if len(set(names)) != len(names):
        raise RulesError(f"{path}: scenario names collide once dashes become underscores: {sorted(names)}")
    return {scenario.name: scenario for scenario in scenarios.values()}


def baseline_name(scenarios: dict[str, Scenario]) -> str | None:
    """The name of the scenario the others of `scenarios` are compared with: BASELINE_SCENARIO where they hold it, else
    the first's (a file of what-ifs without FIDE's own regulations); None for none.
    """
    return BASELINE_SCENARIO if BASELINE_SCENARIO in scenarios else next(iter(scenarios), None)


def compared_scenarios(scenarios: dict[str, Scenario], national: bool = False) -> dict[str, Scenario]:
    """The scenarios the comparison and the leaderboard set side by side: those rating the list their baseline rates
    (baseline_name). Scenarios of other lists predict other games: on the games every scenario rated, a rapid
    list and a standard list have none in common. A national scenario (`restrict`) rates one federation's games only:
    the comparison of each month's common games leaves it out; the leaderboard (`national`) scores it on its own.
    """
    baseline = baseline_name(scenarios)
    if baseline is None:
        return {}
    kind = scenarios[baseline].list_type()
    return {
        name: scenario
        for name, scenario in scenarios.items()
        if scenario.list_type() == kind and (national or scenario.restrict is None)
    }


def nothing_compared(scenarios: dict[str, Scenario]) -> str | None:
    """Why the accuracy comparison has no scenario to compare (compared_scenarios is empty), else None: a run does not
    fail for an analysis it cannot make.
    """
    baseline = baseline_name(scenarios)
    if compared_scenarios(scenarios) or baseline is None:
        return None
    return (
        f"every scenario rating the {scenarios[baseline].list_type()} list is national (restrict): the comparison on "
        "the games every scenario rated leaves a national scenario out; its own accuracy is on its reports page"
    )


def seeded_lists(scenarios: dict[str, Scenario], standard: str) -> dict[str, str]:
    """The rapid and blitz chains the standard list of scenario `standard` seeds: list type -> scenario name (the
    combined list's partners). FIDE's combined list holds FIDE-style lists: a system's seeded lists are not partners.
    """
    return {
        scenario.list_type(): scenario.name
        for scenario in scenarios.values()
        if scenario.standard_chain is not None
        and canonical_name(scenario.standard_chain) == standard
        and not scenario.is_system
    }


def standard_chain_of(scenario: Scenario, scenarios: dict[str, Scenario]) -> Scenario | None:
    """The scenario whose standard list seeds `scenario` (its standard_chain, of `scenarios`), or None."""
    if scenario.standard_chain is None:
        return None
    return scenarios[canonical_name(scenario.standard_chain)]


def _check_list_type(scenario: Scenario) -> None:
    """RulesError where a rule-set scenario's switches rate different lists or contradict its `rates`, or where a
    system's `rates` contradicts the list its parameters choose.
    """
    if scenario.is_system:
        rules = scenario.system_rules()
        if scenario.rates is not None and rules.system.list_type is not None:
            chosen = rules.system.list_type(rules.params)
            if chosen != scenario.rates:
                system = rules.system.name
                raise RulesError(f"rates: {scenario.rates}, but its {system} parameters rate the {chosen} list")
        return
    kinds = {scenario.rules_for(month).list_type for month in _switch_months(scenario)}
    if len(kinds) > 1:
        raise RulesError(f"its rule sets rate different lists ({', '.join(sorted(kinds))}): one scenario, one list")
    if scenario.rates is not None and kinds != {scenario.rates}:
        raise RulesError(f"rates: {scenario.rates}, but its rule sets rate the {kinds.pop()} list")


def _rules_from_folder(body: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A scenario's body with its `rules:` (and its switches') naming a relative file read from `folder`, the scenarios
    file's, as `extends` and a schedule entry's `rules:` are read from their own file's: the UI's code location and a
    `ratings run` started elsewhere read the same file.
    """

    def placed(name: Any) -> Any:
        relative = isinstance(name, str) and names_a_file(name) and not Path(name).is_absolute()
        return str(folder / name) if relative else name

    placed_body = {**body, "rules": placed(body["rules"])} if "rules" in body else dict(body)
    if isinstance(body.get("schedule"), list):
        placed_body["schedule"] = [
            {**switch, "rules": placed(switch["rules"])} if isinstance(switch, dict) and "rules" in switch else switch
            for switch in body["schedule"]
        ]
    return placed_body


def _switch_months(scenario: Scenario) -> list[str]:
    """The months a rule-set scenario's rule set may change at: its switches' and those of the schedules they name
    (and LIST_TYPE_MONTH). Resolving each checks every rule set the scenario rates with; a system has none.
    """
    if scenario.is_system:
        return []
    months = {LIST_TYPE_MONTH, *(switch.from_ for switch in scenario.schedule)}
    for name in {str(scenario.rules), *(switch.rules for switch in scenario.schedule)}:
        months.update(schedule_months(name))
    return sorted(months, key=month_index)


def _standard_chain_problem(scenario: Scenario, scenarios: dict[str, Scenario]) -> str | None:
    """Why the scenario's standard_chain cannot seed it (None when it can, or when it names none)."""
    if scenario.standard_chain is None:
        return None
    chain = scenarios.get(canonical_name(scenario.standard_chain))
    if chain is None:
        return f"no scenario {scenario.standard_chain!r} in the file (scenarios: {', '.join(scenarios)})"
    if scenario.is_system:
        # A system's list is seeded by the standard list of the same system, where the system says how (uscf: quick and
        # blitz from regular, pipeline.systems.uscf.initial_from_regular).
        system = scenario.system_rules().system
        if system.seeded_from is None:
            return f"no list of system {system.name} is seeded by another list"
        if not chain.is_system or chain.system_rules().system.name != system.name:
            return f"{chain.name} is not a {system.name} scenario: a {system.name} list is seeded by one of its own"
        if chain.list_type() != "standard":
            return f"{chain.name} does not rate the standard list"
    elif chain.list_type() != "standard" or chain.is_system:
        return f"{chain.name} does not rate the standard list with a rule set"
    if scenario.list_type() == "standard":
        return "a standard list is not seeded by another standard list"
    if chain.standard_chain is not None:
        return f"{chain.name} is itself seeded by {chain.standard_chain}"
    return None


def _period_games(
    scenario: Scenario, rules: RuleSet, games_of: Callable[[str], pl.DataFrame], month: str, start: str | None
) -> tuple[pl.DataFrame, bool]:
    """The games the calculation of `month` rates: a published list's are those of every month its period reads (from
    the chain's first month `start`), any other month's its own; and whether they are more than the month's own.
    """
    months = scenario.months_read(month, start) if rules.publishes_list_after(month) else [month]
    if len(months) == 1:
        return games_of(month), False
    return pl.concat([games_of(m) for m in months], how="diagonal_relaxed"), True


def _own_games(rated_games: pl.DataFrame, games_of: Callable[[str], pl.DataFrame], month: str) -> pl.DataFrame:
    """The rows of a period's per-game table that are `month`'s own games (the monthly tables hold those only)."""
    own = games_of(month).select(pl.col("game_id").cast(pl.UInt64))
    return rated_games.join(own, on="game_id", how="semi")


def predict_scenario_month(
    scenario: Scenario,
    frozen: pl.DataFrame,
    games_of: Callable[[str], pl.DataFrame],
    month: str,
    start: str | None = None,
) -> pl.DataFrame:
    """rate_scenario_month(scenario, frozen, games_of, month, start=start).rated_games, the same table, without the
    lists: what a prediction from a frozen list reads (pipeline.evaluation.scenarios).
    """
    rules = scenario.rules_for(month)
    games, several_months = _period_games(scenario, rules, games_of, month, start)
    rated_games = predict_period(frozen, games, rules, month)
    return _own_games(rated_games, games_of, month) if several_months else rated_games


def rate_scenario_month(
    scenario: Scenario,
    previous: pl.DataFrame,
    games_of: Callable[[str], pl.DataFrame],
    month: str,
    players: pl.DataFrame | None = None,
    standard: pl.DataFrame | None = None,
    start: str | None = None,
) -> PeriodResult:
    """Period `month` of a scenario: the regular calculation (or none, in a month without a list), then events.

    `standard`: the standard list in force in `month` (the list of the month before), for a rapid or blitz list
    that it seeds (Scenario.standard_chain). `start`: the chain's first month, where a period's months begin at the
    latest (Scenario.period_months).

    The per-game table always covers the month's own games with the ratings in force, so monthly
    crosstables and accuracy figures exist in every month; the list changes only when one is published.
    """
    rules = scenario.rules_for(month)
    games, several_months = _period_games(scenario, rules, games_of, month, start)
    result = rate_period(previous, games, rules, month, players=players, standard=standard)
    rated_games = _own_games(result.rated_games, games_of, month) if several_months else result.rated_games
    if rules.publishes_list_after(month):
        rating_list, period_games = result.rating_list, result.rated_games
    else:
        rating_list, period_games = carry_forward(previous, rules), result.rated_games.clear()  # rated on the next list
    after_games = rating_list
    for event in scenario.events_after(month):
        if event.compress is not None:
            spec = event.compress
            rating_list = compress(rating_list, spec.threshold, spec.factor, spec.fresh_start)
    return PeriodResult(rating_list, rated_games, after_games=after_games, period_games=period_games)
