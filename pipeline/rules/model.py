"""Rule sets as data: the model, the YAML presets in pipeline/rules/presets/, overrides, and dated schedules."""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Hashable
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from pipeline.months import month_index, parse_month
from schemas.games import TIME_CONTROLS

PRESET_PACKAGE = "pipeline.rules.presets"


class RulesError(ValueError):
    """A rule set could not be found, parsed or validated; the message says which and why."""


#: A number knob's annotations: a YAML `true` given to one is a mistake, not 1 (pydantic would read it as 1).
_NUMBERS = (int, float, int | None, float | None)


class _Frozen(BaseModel):
    # NaN or infinity in a knob makes every expectation or change NaN, which no list can hold: refused with its key.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name and cls.model_fields[info.field_name].annotation in _NUMBERS:
            raise ValueError("expects a number")
        return value


class KPolicy(_Frozen):
    """Development coefficient K by player state (FIDE §8.3.3; regulations.development_coefficient), or a constant."""

    # A K of 0 may be asked for (a tuning grid's no-change baseline): only a negative K is refused.
    kind: Literal["fide", "constant"] = Field(
        "fide", description="fide: K by the player's state (the tiers below); constant: one K for all"
    )
    value: int | None = Field(None, ge=0, description="K for every player when kind is constant")
    newcomer: int = Field(
        40, ge=0, description="K of a player new to the list (§8.3.3: 40 since 2014, 30 from July 2011, 25 before)"
    )
    newcomer_until_games: int = Field(30, ge=0, description="games after which a player is no longer a newcomer")
    junior: int | None = Field(
        40, ge=0, description="K of a junior below junior_below (null: no junior tier, before 2014)"
    )
    junior_until_age: int = Field(18, ge=0, description="age up to which a player is a junior")
    junior_end_of_year: bool = Field(
        True, description="junior until the end of the year of that birthday (2022+), else until the birthday"
    )
    junior_below: int = Field(2300, ge=0, description="juniors rated at or above this have the standard K")
    standard: int = Field(20, ge=0, description="K of an established player under elite_from")
    elite: int = Field(10, ge=0, description="K once a published rating has reached elite_from, for good")
    elite_from: int = Field(2400, ge=0, description="rating that, once published, gives the elite K for good")

    @model_validator(mode="before")
    @classmethod
    def _constant_shorthand(cls, data: Any) -> Any:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            # pydantic's int takes 24.0 and refuses 24.9, as it does for `k.value`; int() would truncate it.
            return {"kind": "constant", "value": data}
        return data

    @model_validator(mode="after")
    def _constant_needs_value(self) -> KPolicy:
        if self.kind == "constant" and self.value is None:
            raise ValueError("k.kind 'constant' needs k.value")
        if self.kind == "constant" and (tiers := [t for t in K_TIERS if t in self.model_fields_set]):
            raise ValueError(constant_k_tiers_message([f"k.{tier}" for tier in tiers], self.value))
        if self.kind == "fide" and self.value is not None:
            raise ValueError(
                f"k.value ({self.value}) does not apply: K is by player (k.kind fide) in this rule set; set the tiers "
                "(k.newcomer, k.standard, k.elite, ...) or k.kind=constant with k.value=N for one K for all"
            )
        return self


#: The keys of a tiered K (kind: fide); a constant K reads none of them.
K_TIERS = tuple(name for name in KPolicy.model_fields if name not in ("kind", "value"))


def constant_k_tiers_message(settings: list[str], value: int | None) -> str:
    """Why a K tier (`k.standard`, `k.standard=24`) cannot be set on a constant K, and what to set instead."""
    return (
        f"{', '.join(settings)} {'does' if len(settings) == 1 else 'do'} not apply: K is constant ({value}) in "
        "this rule set; "
        "set k.value=N for another constant K, or k.kind=fide with the tiers "
        "(k.newcomer, k.standard, k.elite, k.elite_from, ...) for a K by player"
    )


class InitialRating(_Frozen):
    """How an unrated player's first rating is computed (FIDE §8.2 and §7.1.4; regulations.initial_rating)."""

    min_games: int = Field(
        5, ge=1, description="games against rated opponents a first rating needs (§7.1.4: 5 since 2014, 9 before)"
    )
    pool_months: int = Field(26, ge=1, description="months over which a newcomer's results are pooled (§7.1.4)")
    formula: Literal["plus-score", "hypothetical-draws"] = Field(
        "plus-score",
        description="plus-score: Ra + 20 per half point over 50 %, dp below (2014-2022); hypothetical-draws: "
        "Ra + dp with two draws against 1800 (2024, §8.2.2-8.2.3)",
    )
    plus_score_per_half_point: float = Field(
        20.0, ge=0, description="points per half point over 50 % (plus-score; 12.5 before 2014)"
    )
    hypothetical_games: int = Field(2, ge=0, description="hypothetical drawn games added (hypothetical-draws)")
    hypothetical_rating: int = Field(1800, description="rating of the hypothetical opponents (hypothetical-draws)")
    max_rating: int | None = Field(None, gt=0, description="highest first rating (2200 in 2024; null: none)")
    disregard_zero_first_event: bool = Field(
        True, description="a first event scoring under first_event_min_points is disregarded (§8.2.1)"
    )
    first_event_min_points: float = Field(
        0.5,
        ge=0.5,
        description="points a first event needs to count (0.5: a zero is disregarded, §8.2.1; rapid and blitz "
        "2012 - February 2024: 1 point)",
    )


class GapNotRated(_Frozen):
    """Games not rated at all for a rating gap (B.02 Rapid and Blitz 2024 §7.3.1, from 1 December 2024)."""

    difference: int = Field(600, ge=0, description="rating difference from which the game is not rated (inclusive)")
    above: int = Field(2600, description="when at least one player is rated above this (strictly)")


#: The time-control class of each list's games (the standard list: classical, and the modern controls by weight).
LIST_CLASSES = {"standard": "classical", "rapid": "rapid", "blitz": "blitz"}


def unstated_time_control(list_type: str) -> str:
    """The class of a game whose file states no time control: the class of the list rated (a rapid period's games file
    need not say that its games are rapid). A choice: no regulation speaks of games without a stated clock.
    """
    return LIST_CLASSES[list_type]


class RuleSet(_Frozen):
    """Every knob of a rating system; presets differ only in these values (docs/regulations.md).

    Each knob is read by one function of pipeline/rules/regulations.py, named in its description.
    """

    name: str = Field(description="preset or file name")
    description: str = Field("", description="one line saying what the rule set is")
    source: str = Field("", description="where its values come from")
    expectancy: Literal["fide-table", "logistic", "sonas-linear", "elo-davidson"] = Field(
        "fide-table",
        description=(
            "expected score model (regulations.expected_score): table 8.1.2, logistic, Sonas 2002 linear, Elo-Davidson"
        ),
    )
    scale: float = Field(400.0, gt=0, description="logistic and Elo-Davidson scale (400; 480 per Sonas 2011)")
    kappa: float = Field(2.0, ge=0, description="Elo-Davidson draw parameter (2 = logistic)")
    sonas_intercept: float = Field(0.541767, description="Sonas 2002: White's expected score at equal ratings")
    sonas_slope: float = Field(0.001164, description="Sonas 2002: expected score per rating point of difference")
    sonas_clamp: tuple[int, int] = Field(
        (-460, 390), description="Sonas 2002: range the White-minus-Black difference is clamped to"
    )
    k: KPolicy = Field(
        KPolicy(), description="development coefficient K (regulations.development_coefficient, k_from_previous_list)"
    )
    k_games_cap: int | None = Field(
        None, ge=1, description="K x n cap, 700 from 2017 (regulations.k_times_games_cap); null: none"
    )
    cap_difference: int | None = Field(
        400, ge=0, description="the 400-point rule's difference (350 before July 2009; regulations.rating_difference)"
    )
    cap_mode: Literal["off", "every-game", "once-per-event", "exempt-top"] = Field(
        "every-game",
        description="when the 400-point rule applies: every game, once per event (2022), every game but not for "
        "players rated cap_exempt_from+ (October 2025), or off",
    )
    cap_exempt_from: int | None = Field(
        None, ge=0, description="rating from which the 400-point rule does not apply (2650; exempt-top)"
    )
    floor: int | None = Field(
        None, ge=0, description="lowest published rating; below it a player becomes unrated (regulations.below_floor)"
    )
    initial: InitialRating = Field(
        InitialRating(), description="first ratings of unrated players (regulations.initial_rating)"
    )
    weights: dict[str, float] = Field(
        default_factory=lambda: {"classical": 1.0, "modern": 1.0, "rapid": 0.0, "blitz": 0.0},
        description="weight of a game's change by time-control class; 0: not rated (regulations.game_weight)",
    )
    weights_by_minutes: tuple[tuple[float, float], ...] | None = Field(
        None, description="Sonas 2002: [minutes to move 40, weight] points, interpolated, when the clock is known"
    )
    rounding: Literal["per-period", "per-event"] = Field(
        "per-period",
        description="when the change is rounded: once per period (§8.3.4) or per event (regulations.round_half_away)",
    )
    inactive_after_months: int = Field(
        12, ge=1, description="months without a rated game after which a player is flagged inactive (§7.2.2)"
    )
    list_months: tuple[int, ...] | None = Field(
        None,
        description="months FIDE published a list (quarterly before July 2009, bimonthly to June 2012); null: monthly",
    )
    list_type: Literal["standard", "rapid", "blitz"] = Field(
        "standard", description="the FIDE list the rule set rates (its games are those its weights rate)"
    )
    seed_from_standard: bool = Field(
        False,
        description="a player unrated on this list who holds a standard rating starts from it "
        "(regulations.seeded_from_standard; rapid and blitz since 2012)",
    )
    gap_not_rated: GapNotRated | None = Field(
        None, description="games not rated for a rating gap (regulations.gap_not_rated; rapid and blitz, Dec 2024)"
    )
    events_from: date | None = Field(
        None,
        description="events starting before this day are not rated on the list (regulations.rated_event; rapid and "
        "blitz: 1 January 2012); null: every event",
    )

    @field_validator("weights", mode="before")
    @classmethod
    def _known_weights(cls, value: Any) -> Any:
        if isinstance(value, dict):
            if unknown := sorted(str(key) for key in value if key not in TIME_CONTROLS):
                raise ValueError(
                    f"unknown time-control class(es) {', '.join(unknown)}; classes: {', '.join(TIME_CONTROLS)}"
                )
            for key, weight in value.items():
                _check_weight(f"weights.{key}", weight)
        return value

    @field_validator("weights_by_minutes", mode="before")
    @classmethod
    def _weights_by_minutes(cls, value: Any) -> Any:
        for point in value if isinstance(value, (list, tuple)) else ():
            if isinstance(point, (list, tuple)) and len(point) == 2:
                minutes, weight = point
                if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0:
                    raise ValueError(f"[{minutes}, {weight}]: minutes must be a number of at least 0")
                _check_weight(f"[{minutes}, {weight}]", weight)
        return value

    @field_validator("cap_mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false

    @model_validator(mode="after")
    def _consistent(self) -> RuleSet:
        if self.cap_mode == "exempt-top" and self.cap_exempt_from is None:
            raise ValueError("cap_mode 'exempt-top' needs cap_exempt_from (e.g. 2650)")
        if self.cap_mode != "off" and self.cap_difference is None:
            raise ValueError(f"cap_mode {self.cap_mode!r} needs cap_difference (e.g. 400)")
        if self.list_months is not None and (not self.list_months or not all(1 <= m <= 12 for m in self.list_months)):
            raise ValueError("list_months must be months 1-12 (the months FIDE published a list), or null for monthly")
        if self.weights_by_minutes is not None and sorted(self.weights_by_minutes) != list(self.weights_by_minutes):
            raise ValueError("weights_by_minutes must be [minutes, weight] pairs in increasing minutes")
        if self.sonas_clamp[0] >= self.sonas_clamp[1]:
            raise ValueError(f"sonas_clamp must be [low, high] with low < high, got {list(self.sonas_clamp)}")
        return self

    def publishes_list_after(self, month: str) -> bool:
        """Whether period `month` ends with a new list (FIDE's list of the 1st of the next month).

        FIDE published quarterly until June 2009, every two months from July 2009 to June 2012 (FIDE news 4059),
        monthly since: ratings changed only on the lists it published.
        """
        if self.list_months is None:
            return True
        return parse_month(month)[1] % 12 + 1 in self.list_months


def _check_weight(where: str, weight: Any) -> None:
    """A game's weight scales its change: from 0 (not rated) to 1 (rated in full), as regulations.game_weight reads."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
        raise ValueError(f"{where}: a weight is a number from 0 (not rated) to 1 (rated in full), got {weight!r}")


# -- loading -----------------------------------------------------------------------------------

#: A shipped preset's name, as the files of pipeline/rules/presets/ spell them: no path can be built from it.
_PRESET_NAME = re.compile(r"^[a-z0-9-]+$")
#: The keys a schedule document holds beside `schedule`: its metadata. Any other key would apply to no entry.
_SCHEDULE_KEYS = ("name", "description", "source", "schedule")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, but a key given twice in one mapping is an error (PyYAML keeps the last one silently)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark
            )
        seen.add(key) if isinstance(key, Hashable) else None
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_yaml(text: str) -> Any:
    """YAML as yaml.safe_load reads it, but refusing a key given twice in one mapping (yaml.YAMLError naming it)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def preset_names() -> list[str]:
    """Names of the shipped presets and schedules."""
    return sorted(
        p.name[: -len(".yaml")] for p in resources.files(PRESET_PACKAGE).iterdir() if p.name.endswith(".yaml")
    )


def names_a_file(name: str) -> bool:
    """Whether a rule-set name is a file (it ends in .yaml or .yml, or holds a path separator) rather than a preset.

    A file in the current directory named like a preset (`fide-2022`) never stands in for the shipped one.
    """
    return name.lower().endswith((".yaml", ".yml")) or "/" in name or os.sep in name


def unknown_rule_set_message(name: str) -> str:
    """What `--rules`, `extends` or a schedule entry accepts, for a name that is none of them."""
    from pipeline.systems import system_names  # pipeline.systems reads this module's parse_override

    here = (
        f" (a file {name!r} is in the current folder: a name without .yaml and without a folder names a preset; "
        f"write ./{name})"
        if Path(name).is_file()
        else ""
    )
    return (
        f"unknown rule set {name!r}{here}; presets: {', '.join(preset_names())}; or a path to a .yaml file "
        f"(`--rules` of rate-period also takes a rating system: {', '.join(system_names())})"
    )


def _read_document(name_or_path: str, folder: Path | None = None) -> tuple[dict[str, Any], str, Path | None]:
    """The document, where it comes from (a file's path, `preset NAME`) and the folder its own names are relative
    to (a file's; None for a preset). `folder`: where a relative file name is, the current directory if None.
    """
    if names_a_file(name_or_path):
        path = Path(name_or_path) if folder is None else folder / name_or_path
        if not path.is_file():
            raise RulesError(f"rule-set file not found: {path}")
        text, origin, own_folder = path.read_text(encoding="utf-8"), str(path), path.parent
    else:
        preset = _preset_text(name_or_path) if _PRESET_NAME.match(name_or_path) else None
        if preset is None:
            raise RulesError(unknown_rule_set_message(name_or_path))
        text, origin, own_folder = preset, f"preset {name_or_path}", None
    try:
        document = copy.deepcopy(_parsed_yaml(text))  # callers edit their copy
    except yaml.YAMLError as exc:
        raise RulesError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise RulesError(f"{origin}: expected a mapping of rule-set keys")
    return document, origin, own_folder


@functools.lru_cache(maxsize=64)
def _preset_text(name: str) -> str | None:
    """A shipped preset's text, read once: package data, fixed for the process (a load_scenarios resolves each
    preset of its schedules at every month they switch at).
    """
    resource = resources.files(PRESET_PACKAGE) / f"{name}.yaml"
    return resource.read_text(encoding="utf-8") if resource.is_file() else None


@functools.lru_cache(maxsize=256)
def _parsed_yaml(text: str) -> Any:
    """YAML parsed once per distinct text: keyed by content, so an edited file is parsed again."""
    return load_yaml(text) or {}


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _resolved_document(
    name_or_path: str, seen: tuple[str, ...] = (), folder: Path | None = None
) -> tuple[dict[str, Any], str, Path | None]:
    document, origin, own_folder = _read_document(name_or_path, folder)
    key = origin if own_folder is None else str(Path(origin).resolve())  # one file, however its path is spelt
    if key in seen:
        raise RulesError(f"rule sets extend each other in a cycle: {' -> '.join((*seen, key))}")
    parent = document.pop("extends", None)
    if parent is None:
        return document, origin, own_folder
    if not isinstance(parent, str) or (own_folder is None and names_a_file(parent)):
        expected = "a preset name" if own_folder is None else "a preset name or a .yaml path"
        raise RulesError(f"{origin}: extends: {parent!r}: expected {expected}")
    try:
        base, _, _ = _resolved_document(parent, (*seen, key), own_folder)
    except RulesError as exc:
        raise RulesError(f"{origin}: extends: {exc}") from None
    if "schedule" in base:
        # Which entries its keys would change, and how they meet each entry's own `set:`, is not one reading.
        raise RulesError(
            f"{origin}: extends: {parent} is a schedule of rule sets by month, and a rule set extends one rule set "
            f"(e.g. {_first_entry(base)}): to change a schedule's values, give them in a scenario's `set:` "
            f"(`rules: {parent}`) or in a schedule of your own, in its entries' `set:`"
        )
    base.pop("name", None)
    own_k = document.get("k")
    if isinstance(own_k, dict) and "k" in base:
        # A file switching K's kind drops its parent's keys of the other kind; those it names itself are refused.
        base["k"] = _k_of_kind(_k_mapping(base["k"]), own_k.get("kind"))
    return _merge(base, document), origin, own_folder


def _first_entry(document: dict[str, Any]) -> str:
    entries = document.get("schedule")
    first = entries[0] if isinstance(entries, list) and entries else None
    return str(first.get("rules")) if isinstance(first, dict) else "fide-2024"


def _k_mapping(k: Any) -> Any:
    """A constant K's shorthand (`k: 32`) as the mapping it stands for, so that keys can be set on it."""
    return {"kind": "constant", "value": k} if isinstance(k, int) and not isinstance(k, bool) else k


def _k_of_kind(k: Any, kind: Any) -> Any:
    """K's mapping without the keys the other kind reads: a constant K reads no tier, a K by player no value."""
    if not isinstance(k, dict) or kind not in ("constant", "fide"):
        return k
    return {key: value for key, value in k.items() if (key in K_TIERS) == (kind == "fide") and key != "kind"}


def parse_override(assignment: str) -> tuple[list[str], Any]:
    """'k.standard=24' -> (['k', 'standard'], 24); the value is read as YAML (numbers, null, true...)."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise RulesError(f"--set expects key=value, got {assignment!r}")
    try:
        value = load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise RulesError(f"--set {assignment!r}: value is not valid YAML: {exc}") from exc
    return [part.strip() for part in key.split(".")], value


def apply_overrides(document: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Apply dotted key=value assignments (a constant K's shorthand `k: 32` becomes its mapping).

    A mapping given to a mapping is merged into it, as `extends` merges: `initial={min_games: 5}` keeps the
    other keys of `initial`. A K tier (`k.standard=24`) on a K that ends constant is refused, as a constant K
    would never read it; the keys of the other kind a K had before its kind was set are dropped for the same reason.
    """
    result = copy.deepcopy(document)
    k_set: list[tuple[str, str]] = []  # (key of k, as the assignment names it)
    for assignment in overrides:
        path, value = parse_override(assignment)
        node = result
        for part in path[:-1]:
            child = _k_mapping(node.get(part)) if part == "k" and node is result else node.get(part)
            if not isinstance(child, dict):
                child = {}
            node[part] = child
            node = child
        current = _k_mapping(node.get(path[-1])) if path == ["k"] else node.get(path[-1])
        node[path[-1]] = _merge(current, value) if isinstance(value, dict) and isinstance(current, dict) else value
        if path[0] == "k" and len(path) == 2:
            # A kind set later makes K anew: the tiers set before it (a schedule entry's) are not the user's to answer.
            k_set = [*([] if path[1] == "kind" else k_set), (path[1], assignment.strip())]
        elif path == ["k"]:
            given = (
                [(key, f"k.{key}={_yaml_scalar(item)}") for key, item in value.items()]
                if isinstance(value, dict)
                else []
            )
            # A mapping merged into K adds to what was set on it before, unless it sets the kind; any other value
            # replaces K whole.
            merged = isinstance(value, dict) and isinstance(current, dict) and "kind" not in value
            k_set = [*k_set, *given] if merged else given
    k = result.get("k")
    if isinstance(k, dict):
        if k.get("kind") == "constant" and (tiers := [shown for key, shown in k_set if key in K_TIERS]):
            raise RulesError(constant_k_tiers_message(tiers, k.get("value")))
        if any(key == "kind" for key, _ in k_set):
            kept = _k_of_kind(k, k.get("kind"))
            result["k"] = {**kept, **{key: k[key] for key, _ in k_set if key in k}}
    return result


def load_rules(name_or_path: str, overrides: list[str] | tuple[str, ...] = ()) -> RuleSet:
    """A preset name (e.g. 'fide-2024') or a YAML file path, with optional key=value overrides."""
    document, origin, _ = _resolved_document(name_or_path)
    if "schedule" in document:
        raise RulesError(
            f"{origin} is a schedule of rule sets by month, not one rule set: `ratings rules {name_or_path}` lists "
            f"them; give a month (`ratings rules {name_or_path} --month YYYY-MM`, `ratings rate-period --month`) "
            "or name one of them"
        )
    try:
        document = apply_overrides(document, tuple(overrides))
    except RulesError as exc:
        raise RulesError(f"{origin}: {exc}") from None
    try:
        return RuleSet.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise RulesError(f"{origin}: invalid rule set: {problems}") from None


def _problem(error: Any) -> str:
    """'k_games_cap: Input should be greater than or equal to 1 (given: 0)' from one of pydantic's errors."""
    where = ".".join(str(part) for part in error["loc"]) or "(top)"
    message = str(error["msg"]).removeprefix("Value error, ")
    given = error.get("input")
    shown = f" (given: {yaml.safe_dump(given, default_flow_style=True).strip().removesuffix('...').strip()})"
    return f"{where}: {message}{shown if given is None or isinstance(given, (bool, int, float, str)) else ''}"


class ScheduleEntry(_Frozen):
    """One entry of a schedule: from rating period `from` on, the rule set `rules` with `set` overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, allow_inf_nan=False)
    from_: str = Field(alias="from")
    rules: str
    set: dict[str, Any] = Field(default_factory=dict)

    @field_validator("from_", mode="before")
    @classmethod
    def _month(cls, value: Any) -> str:
        parse_month(str(value))
        return str(value)


def schedule_of(name_or_path: str) -> list[tuple[str, str, tuple[str, ...]]] | None:
    """[(from_month, rule_set_name, overrides), ...] sorted, when name_or_path is a schedule; else None.

    An entry may carry `set: {key: value}` overrides (dotted keys), e.g. K 30 for newcomers from July 2011. A
    schedule holds no other key than its metadata beside `schedule`, at least one entry and one entry a month; a
    preset's entries name presets, a file's name files relative to its folder.
    """
    document, origin, folder = _resolved_document(name_or_path)
    entries = document.get("schedule")
    if entries is None:
        return None
    others = sorted(str(key) for key in document if key not in _SCHEDULE_KEYS)
    if others:
        raise RulesError(
            f"{origin}: {', '.join(others)}: a schedule holds only {', '.join(_SCHEDULE_KEYS)}; a value for every "
            "entry goes in each entry's `set:` (or a scenario's `set:`)"
        )
    if not isinstance(entries, list) or not entries:
        raise RulesError(f"{origin}: schedule: expected a list of entries {{from: YYYY-MM, rules: NAME, set: {{...}}}}")
    triples = []
    for number, entry in enumerate(entries, start=1):
        try:
            parsed = ScheduleEntry.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(_problem(err) for err in exc.errors())
            raise RulesError(f"{origin}: schedule entry {number}: {problems}") from None
        rules = parsed.rules
        if names_a_file(rules) and folder is None:
            raise RulesError(f"{origin}: schedule entry {number}: rules: {rules!r}: expected a preset name")
        if names_a_file(rules) and not Path(rules).is_absolute():
            rules = str(folder / rules) if folder is not None else rules
        triples.append((parsed.from_, rules, tuple(f"{k}={_yaml_scalar(v)}" for k, v in parsed.set.items())))
    months = [month for month, _, _ in triples]
    if twice := sorted({month for month in months if months.count(month) > 1}):
        raise RulesError(f"{origin}: schedule: two entries from {', '.join(twice)}: one rule set a month")
    return sorted(triples, key=lambda triple: month_index(triple[0]))


def _yaml_scalar(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def resolve_rules(name_or_path: str, month: str, overrides: list[str] | tuple[str, ...] = ()) -> RuleSet:
    """The rule set in force for rating period `month`: a plain rule set, or the schedule's entry for it.

    Months before a schedule's first entry use the first entry. Schedules may name other schedules, not in a cycle.
    """
    return _resolved_rules(name_or_path, month, tuple(overrides), ())


def _schedule_key(name_or_path: str, seen: tuple[str, ...]) -> str:
    """A schedule's name for finding cycles (a file's resolved path: one file, however its path is spelt), refused
    when `seen` already holds it.
    """
    key = str(Path(name_or_path).resolve()) if names_a_file(name_or_path) else name_or_path
    if key in seen:
        raise RulesError(f"schedules name each other in a cycle: {' -> '.join((*seen, key))}")
    return key


def _resolved_rules(name_or_path: str, month: str, overrides: tuple[str, ...], seen: tuple[str, ...]) -> RuleSet:
    key = _schedule_key(name_or_path, seen)
    schedule = schedule_of(name_or_path)
    if schedule is None:
        return load_rules(name_or_path, overrides)
    chosen, entry_overrides = schedule[0][1], schedule[0][2]
    for start, rules_name, sets in schedule:
        if month_index(start) <= month_index(month):
            chosen, entry_overrides = rules_name, sets
    return _resolved_rules(chosen, month, (*entry_overrides, *overrides), (*seen, key))


def schedule_months(name_or_path: str, seen: tuple[str, ...] = ()) -> list[str]:
    """Every month a rule set's schedule, or a schedule it names, switches at (sorted; none for a plain rule set):
    the months to resolve to check that each of its rule sets loads.
    """
    key = _schedule_key(name_or_path, seen)
    schedule = schedule_of(name_or_path) or []
    months = {month for month, _, _ in schedule}
    for _, rules_name, _ in schedule:
        months.update(schedule_months(rules_name, (*seen, key)))
    return sorted(months, key=month_index)
