"""What `ratings evaluate` and `tune` rate with, behind one train-then-predict interface.

Either a rating system (pipeline/systems) or a FIDE-style rule set through the pipeline's engine.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import yaml

from pipeline.engine.period import normalize_list, rate_period
from pipeline.formats.fields import kaggle_month_index
from pipeline.months import month_from_index, month_range
from pipeline.rules.model import RulesError, load_yaml, parse_override, preset_names, unstated_time_control
from pipeline.scenarios.model import Scenario, rate_scenario_month
from pipeline.systems import empty_state, predict, rate_system_period, system_names, with_players
from pipeline.systems.config import (
    DEFAULT_INIT,
    SystemRules,
    load_system_rules,
    system_params,
    system_preset_names,
)
from pipeline.whole_history import whr
from schemas.games import Games
from schemas.rating_list import RatingList
from schemas.util import conform, empty_frame


class Rater(Protocol):
    """Rates training games period by period from nothing, then predicts White's score in test games, frozen (or both
    sides' when they need not sum to 1: white_expected and black_expected, as a rule set's per-game table gives them).
    """

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...  # "system" or "rule set"

    @property
    def what(self) -> str: ...  # the system's name, or the rule sets in force

    def settings(self) -> dict[str, Any]: ...

    def rate(self, train: pl.DataFrame) -> pl.DataFrame: ...

    def predict(self, frozen: pl.DataFrame, test: pl.DataFrame) -> pl.Series | pl.DataFrame: ...

    def warnings(self) -> list[str]: ...  # what the last rate() must say besides its state (a fit not converged)


# -- systems -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemRater:
    """A rating system with its parameters: everybody starts from the system's initial values."""

    rules: SystemRules
    kind: str = "system"

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def what(self) -> str:
        return self.rules.system.name

    def settings(self) -> dict[str, Any]:
        return self.rules.settings()

    def rate(self, train: pl.DataFrame) -> pl.DataFrame:
        """The state after rating `train` period by period (ascending)."""
        system, params = self.rules.system, self.rules.params
        state = empty_state(system)
        for (period,), part in train.sort("period", maintain_order=True).group_by("period", maintain_order=True):
            state = rate_system_period(system, self._joined(state, part), part, params, int(period)).state
        return state

    def _joined(self, state: pl.DataFrame, games: pl.DataFrame) -> pl.DataFrame:
        """`state` with the players of `games` it lacks. A system whose new players have no rating until rated
        opponents give them one (`unrated`: DWZ) would rate nobody in a pool that starts empty; the protocol starts
        everybody from the initial rating, so such a player joins as a rating from elsewhere does (`seeded`: DWZ's
        index 6), as RuleSetRater joins a rule set's players.
        """
        system, params = self.rules.system, self.rules.params
        if system.unrated is None:
            return state
        ids = pl.concat([games["white_id"], games["black_id"]]).cast(pl.Int64).unique()
        new = ids.to_frame("player_id").join(state.select("player_id"), on="player_id", how="anti")["player_id"]
        if new.is_empty():
            return state
        joined = with_players(system, state, new, params)
        arriving = pl.col("player_id").is_in(new.implode())
        return joined.with_columns(
            pl.when(arriving).then(pl.lit(value)).otherwise(pl.col(column)).cast(joined.schema[column]).alias(column)
            for column, value in system.seeded(params).items()
        )

    def predict(self, frozen: pl.DataFrame, test: pl.DataFrame) -> pl.Series:
        return predict(self.rules.system, frozen, test, self.rules.params)

    def warnings(self) -> list[str]:
        return []


# -- whole-history systems ---------------------------------------------------------------------

#: Whole-history systems by name (pipeline/whole_history): not period systems, so not in pipeline.systems.REGISTRY.
WHOLE_HISTORY = {"whr": whr.WhrParams}


@dataclass(frozen=True)
class WholeHistoryRater:
    """Whole-History Rating: the training months' whole history estimated at once (a full fit, or month by month
    with a few sweeps each when `incremental`); the test games are predicted from every player's estimate at
    their last training month (`WholeHistory.list_at` the last training period), frozen.
    """

    name: str
    params: whr.WhrParams
    kind: str = "system"
    what: str = "whr"
    #: The last rate()'s fit (none with `incremental`), read by warnings().
    fits: list[whr.Fit] = field(default_factory=list, compare=False, repr=False)

    def settings(self) -> dict[str, Any]:
        return self.params.model_dump()

    def rate(self, train: pl.DataFrame) -> pl.DataFrame:
        history = whr.rate_history(train, self.params)
        self.fits[:] = [history.fitted] if history.fitted is not None else []
        return history.list_at(int(train["period"].max()))  # type: ignore[arg-type]

    def warnings(self) -> list[str]:
        return [warning for fit in self.fits if (warning := fit.warning()) is not None]

    def predict(self, frozen: pl.DataFrame, test: pl.DataFrame) -> pl.Series:
        return whr.predict(frozen, test, self.params)


def _whole_history_document(name_or_path: str) -> dict[str, Any] | None:
    """{'system': 'whr', ...} when `--rules` is a whole-history system's name or a YAML file naming one; else None."""
    if name_or_path.lower() in WHOLE_HISTORY:
        return {"system": name_or_path.lower(), "name": name_or_path.lower()}
    path = Path(name_or_path)
    if path.is_file() and name_or_path.endswith((".yaml", ".yml")):
        try:
            document = load_yaml(path.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            return None
        if isinstance(document, dict) and str(document.get("system", "")).lower() in WHOLE_HISTORY:
            return {**document, "system": str(document["system"]).lower(), "name": document.get("name", path.stem)}
    return None


def load_whole_history(
    document: dict[str, Any],
    overrides: list[str] | tuple[str, ...] = (),
    init: float | None = None,
    values: dict[str, Any] | None = None,
) -> WholeHistoryRater:
    """The whole-history rater of `document`, then `--init`, `--set key=value`, then `values`, as systems take them."""
    params = system_params(document, WHOLE_HISTORY[document["system"]], overrides, init, values, DEFAULT_INIT)
    return WholeHistoryRater(str(document["name"]), params)


# -- rule sets ---------------------------------------------------------------------------------


def period_month(period: int) -> str:
    """The YYYY-MM month of a games file's period: a Kaggle 2011 MonthID (1 = 1999-01, up to KAGGLE_LAST_MONTH_ID) as
    the pipeline's CSV reader takes it (pipeline.formats.fields.parse_month_cell), else a month index (a file that
    writes YYYY-MM: pipeline.evaluation.games_file.parse_period).
    """
    kaggle = pl.select(kaggle_month_index(pl.lit(period, dtype=pl.Int64))).item()
    return month_from_index(period if kaggle is None else kaggle)


@dataclass(frozen=True)
class RuleSetRater:
    """A FIDE-style rule set (preset, schedule or YAML file) rating month after month with the pipeline's engine.

    The month a period stands for names the rule set in force (a schedule) and whether a list is published after
    it (quarterly and bimonthly lists before July 2012): exactly as a scenario's chain rates it
    (scenarios.model.rate_scenario_month, engine.period.rate_period). Every month from the first training period to
    the last is a period, with or without games.

    The protocol starts every player from `init` as the systems do: a player joins the list in force before the
    first period they play in, rated at `init` with no games (so the rule set's newcomer K applies until its game
    count is reached). FIDE's own first ratings need rated opponents, which a pool that starts empty has none of;
    a player the rules later drop below the floor is unrated again and follows the rule set's first-rating rules.
    A test game is predicted as the rule set's per-game table gives it from the frozen list (its expectancy and
    400-point rule), a player not rated on that list at `init`, as a system predicts one it has not seen.
    """

    name: str
    scenario: Scenario
    init: float
    overrides: dict[str, Any] = field(default_factory=dict)
    kind: str = "rule set"

    @property
    def what(self) -> str:
        return self.scenario.rules or ""

    def settings(self) -> dict[str, Any]:
        return {"init_rating": self.init, **self.overrides}

    @property
    def time_control(self) -> str:
        """The class of the protocol's games, which state no clock: the list's, as `rate-period` reads such games."""
        return unstated_time_control(self.scenario.list_type())

    def _joined(self, listed: pl.DataFrame, games: pl.DataFrame) -> pl.DataFrame:
        """`listed` with every player of `games` it lacks, rated at the initial rating with no games."""
        ids = pl.concat([games["white_id"], games["black_id"]]).unique().to_frame("player_id")
        new = ids.join(listed.select("player_id"), on="player_id", how="anti")
        if new.is_empty():
            return listed
        rows = normalize_list(
            new.with_columns(rating=pl.lit(round(self.init), dtype=pl.Int32), games_total=pl.lit(0, dtype=pl.Int32))
        )
        return conform(pl.concat([listed, rows], how="vertical_relaxed").sort("player_id"), RatingList)

    def rate(self, train: pl.DataFrame) -> pl.DataFrame:
        """The list after rating `train`, month by month from its first period to its last."""
        games = engine_games(train, self.time_control)
        by_month = {str(month): part for (month,), part in games.group_by("_month")}
        months = month_range(min(by_month), max(by_month))
        empty = empty_frame(Games)

        def games_of(month: str) -> pl.DataFrame:
            return by_month.get(month, empty)

        listed = normalize_list(None)
        for month in months:
            read = [games_of(m) for m in self.scenario.months_read(month, months[0])]
            listed = self._joined(listed, pl.concat([g.select("white_id", "black_id") for g in read]))
            listed = rate_scenario_month(self.scenario, listed, games_of, month, start=months[0]).rating_list
        return listed

    def predict(self, frozen: pl.DataFrame, test: pl.DataFrame) -> pl.DataFrame:
        """Both sides' expected scores in every test game (white_expected, black_expected, in test order) from the
        frozen list, as the per-game table gives them: table 8.1.2's rounding and a one-sided 400-point rule can make
        them sum to other than 1.
        """
        games = engine_games(test, self.time_control)
        unrated = frozen.filter(pl.col("rating").is_null()).select("player_id")
        frozen = self._joined(frozen.join(unrated, on="player_id", how="anti"), games)
        parts = []
        for (month,), part in games.group_by("_month", maintain_order=True):
            rules = self.scenario.rules_for(str(month))
            table = rate_period(frozen, part.drop("_month"), rules, str(month)).rated_games
            parts.append(table.select("game_id", "white_expected", "black_expected"))
        expected = games.select("game_id").join(pl.concat(parts), on="game_id", how="left", maintain_order="left")
        return expected.drop("game_id")

    def warnings(self) -> list[str]:
        return []


def engine_games(games: pl.DataFrame, time_control: str) -> pl.DataFrame:
    """The protocol's games as the engine reads them: a game id (the row), the month of the period (`_month`), the
    players, the score, the event when given (one event a month otherwise) and `time_control`, the class of them all.
    """
    months = {p: period_month(p) for p in games["period"].unique().to_list()}
    event = pl.col("event_id").cast(pl.Utf8) if "event_id" in games.columns else pl.lit("event")
    return games.select(
        pl.int_range(pl.len(), dtype=pl.UInt64).alias("game_id"),
        pl.col("period").replace_strict(months, return_dtype=pl.Utf8).alias("_month"),
        event.alias("event_id"),
        "white_id",
        "black_id",
        "white_score",
        pl.lit(time_control).alias("time_control"),
    )


# -- choosing one by name ----------------------------------------------------------------------


def _rule_set_document(name_or_path: str) -> bool:
    """Whether `--rules` names a rule set: a shipped rule-set preset or schedule, or a YAML file without `system:`
    (a system's file names its system).
    """
    if name_or_path in preset_names():
        return True
    path = Path(name_or_path)
    if path.is_file() and name_or_path.endswith((".yaml", ".yml")):
        try:
            document = load_yaml(path.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            return False
        return isinstance(document, dict) and "system" not in document
    return False


def known_names() -> str:
    """The names `--rules` accepts, for an error message."""
    return (
        f"rule sets: {', '.join(preset_names())}; systems: {', '.join([*system_names(), *WHOLE_HISTORY])}; "
        f"system presets: {', '.join(system_preset_names())}; or a YAML file of either"
    )


#: A month a rule set's overrides are checked at before rating (a schedule's first entry).
CHECK_MONTH = "2000-01"
#: Keys a rule set's evaluation takes besides the rule set's own (dotted) keys.
INIT_KEY = "init_rating"


def load_rater(
    name_or_path: str,
    overrides: list[str] | tuple[str, ...] = (),
    init: float | None = None,
    values: dict[str, Any] | None = None,
) -> Rater:
    """The rule set or system `--rules` names, with `--init`, `--set key=value` overrides, then `values` (a grid
    point). A rule set takes dotted keys (`k.standard=24`) and `init_rating`; ValueError naming every rule set,
    system and system preset when the name is none of them.
    """
    if _rule_set_document(name_or_path):
        settings: dict[str, Any] = {}
        for assignment in overrides:
            path, value = parse_override(assignment)
            settings[".".join(path)] = value
        settings.update(copy.deepcopy(values or {}))
        start = float(settings.pop(INIT_KEY, init if init is not None else DEFAULT_INIT))
        label = Path(name_or_path).stem if name_or_path not in preset_names() else name_or_path
        if not math.isfinite(start):  # as a system's init_rating is refused (pipeline.systems.SystemParams)
            raise ValueError(f"{label}: {INIT_KEY}: expected a finite number, got {start}")
        scenario = Scenario(name="evaluated", rules=name_or_path, set=settings)
        try:
            scenario.rules_for(CHECK_MONTH)  # an unknown key or a wrong value fails here, not in the first period
        except RulesError as exc:
            raise ValueError(f"{label}: {exc}") from None
        return RuleSetRater(label, scenario, start, settings)
    whole = _whole_history_document(name_or_path)
    if whole is not None:
        return load_whole_history(whole, overrides, init, values)
    try:
        return SystemRater(load_system_rules(name_or_path, overrides, init, values, DEFAULT_INIT))
    except ValueError as exc:
        if "unknown rating system" in str(exc):
            raise ValueError(f"unknown rating system or rule set {name_or_path!r}; {known_names()}") from None
        raise
