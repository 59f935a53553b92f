"""The train/test protocol for rating systems: read a game file, rate up to a period, predict the test games, score,
tune.
"""

from __future__ import annotations

import copy
import gzip
import io
import itertools
import math
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from pydantic import ValidationError

from pipeline.analytics.accuracy import compare_accuracy, predictive_accuracy
from pipeline.cli.commands import RESULT_SCORES
from pipeline.formats.table_files import InputFileError
from pipeline.months import MONTH_PATTERN, month_index
from pipeline.rules.model import parse_override
from pipeline.systems import RatingSystem, SystemParams, empty_state, get_system, predict, rate_period, system_names

PRESET_PACKAGE = "pipeline.systems.presets"
DEFAULT_INIT = 2200.0
#: The Kaggle 2011 files' own column names; their Player1 is not necessarily White.
KAGGLE_ALIASES = {"MonthID": "month", "Player1": "white_id", "Player2": "black_id", "Player1Score": "white_score"}
METRICS = ("deviance_log10", "player_month_rmse", "bdev", "mean_abs_error")
MAX_GRID = 500
TRUE_TEXT = ("true", "1", "yes", "y", "t")
FALSE_TEXT = ("false", "0", "no", "n", "f")


# -- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemRules:
    """A system with its parameters, under the name the user gave (preset, file or system)."""

    name: str
    system: RatingSystem
    params: SystemParams

    def settings(self) -> dict[str, Any]:
        return self.params.model_dump(by_alias=True)


def preset_names() -> list[str]:
    return sorted(
        p.name[: -len(".yaml")] for p in resources.files(PRESET_PACKAGE).iterdir() if p.name.endswith(".yaml")
    )


def rules_document(name_or_path: str) -> dict[str, Any]:
    """{'system': ..., parameters...} from a YAML file, a preset, or a bare system name (its defaults)."""
    path = Path(name_or_path)
    if name_or_path.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise ValueError(f"rules file not found: {name_or_path}")
        text, origin = path.read_text(encoding="utf-8"), str(path)
    elif (resources.files(PRESET_PACKAGE) / f"{name_or_path}.yaml").is_file():
        text, origin = (
            (resources.files(PRESET_PACKAGE) / f"{name_or_path}.yaml").read_text(encoding="utf-8"),
            f"preset {name_or_path}",
        )
    else:
        get_system(name_or_path)  # raises, naming the systems, when it is none
        return {"system": name_or_path, "name": name_or_path}
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{origin}: not valid YAML: {exc}") from None
    if not isinstance(document, dict) or "system" not in document:
        raise ValueError(
            f"{origin}: expected a mapping with 'system: NAME' ({', '.join(system_names())}) and its parameters"
        )
    document.setdefault("name", path.stem if origin == str(path) else name_or_path)
    return document


def load_system_rules(
    name_or_path: str,
    overrides: list[str] | tuple[str, ...] = (),
    init: float | None = None,
    values: dict[str, Any] | None = None,
) -> SystemRules:
    """The system and parameters of `--rules`, then `--init`, then `--set key=value` overrides, then `values` (a grid
    point).

    Everybody starts at `init` when given; otherwise at the document's `init_rating`, or at 2200
    (the protocol's default, PlayerRatings' too) when the document does not set one.
    """
    document = copy.deepcopy(rules_document(name_or_path))
    system = get_system(str(document.pop("system")))
    name = str(document.pop("name"))
    for key in ("description", "source"):
        document.pop(key, None)
    if init is not None:
        document["init_rating"] = init
    document.setdefault("init_rating", DEFAULT_INIT)
    for assignment in overrides:
        path, value = parse_override(assignment)
        if len(path) != 1:
            raise ValueError(f"--set {assignment!r}: system parameters are flat names, e.g. c=15")
        document[path[0]] = value
    document.update(values or {})
    try:
        params = system.params.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors())
        known = ", ".join(sorted(f.alias or n for n, f in system.params.model_fields.items()))
        raise ValueError(f"{name}: invalid {system.name} parameters: {problems} (parameters: {known})") from None
    return SystemRules(name, system, params)


# -- games -------------------------------------------------------------------------------------


def parse_period(text: str) -> int:
    """A period as the games file writes it: YYYY-MM (-> month index) or an integer (Kaggle's MonthID)."""
    text = str(text).strip()
    if MONTH_PATTERN.match(text):
        return month_index(text)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"period {text!r} is neither YYYY-MM nor an integer") from None


def _read_any(path: Path) -> pl.DataFrame:
    name = path.name.lower()
    compressed = name.endswith(".gz")
    base = name[:-3] if compressed else name
    try:
        data: Any = path
        if compressed:
            with gzip.open(path) as stream:
                data = io.BytesIO(stream.read())
        if base.endswith(".parquet"):
            return pl.read_parquet(data)
        if base.endswith((".csv", ".txt")):
            return pl.read_csv(data, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, EOFError) as exc:
        raise InputFileError(f"{path}: cannot read games: {exc}") from None
    raise InputFileError(f"{path}: games must be .csv or .parquet (optionally .gz)")


def _bad_line(path: Path, mask: pl.Series, frame: pl.DataFrame, column: str, problem: str) -> InputFileError:
    index = int(mask.arg_true()[0])
    return InputFileError(f"{path}: line {index + 2}: {column} {frame[column][index]!r} {problem}")


def read_games(path: str | Path) -> pl.DataFrame:
    """GAMES as the protocol reads them: period (Int64), month (the label as written), white_id, black_id,
    white_score, colour_known, and event_id when given.

    Columns: `month` (YYYY-MM or an integer period), `white_id`, `black_id`, and `white_score`
    (1, 0.5, 0) or `result` (1-0, 0-1, 1/2-1/2); optional `colour_known` (default true) and
    `event_id`. The Kaggle 2011 names `MonthID`, `Player1`, `Player2`, `Player1Score` are accepted;
    such a file's colours are unknown unless it has a `colour_known` column.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: games file not found")
    frame = _read_any(path)
    kaggle = any(alias in frame.columns for alias in KAGGLE_ALIASES)
    frame = frame.rename({a: c for a, c in KAGGLE_ALIASES.items() if a in frame.columns and c not in frame.columns})
    score_column = "white_score" if "white_score" in frame.columns else "result"
    missing = [c for c in ("month", "white_id", "black_id", score_column) if c not in frame.columns]
    if missing:
        raise InputFileError(
            f"{path}: games lack column(s) {', '.join(missing)} (need month, white_id, black_id and white_score or "
            f"result; has: {', '.join(frame.columns)})"
        )
    text = {c: frame[c].cast(pl.Utf8).str.strip_chars() for c in ("month", "white_id", "black_id", score_column)}
    months = text["month"]
    is_month = months.str.contains(MONTH_PATTERN.pattern)
    as_int = months.cast(pl.Int64, strict=False)
    bad = months.is_null() | (~is_month.fill_null(False) & as_int.is_null())
    if bad.any():
        raise _bad_line(path, bad, frame, "month", "is neither YYYY-MM nor an integer period")
    year_month = (
        months.str.extract(r"^(\d{4})-(\d{2})$", 1).cast(pl.Int64, strict=False) * 12
        + months.str.extract(r"^(\d{4})-(\d{2})$", 2).cast(pl.Int64, strict=False)
        - 1
    )
    period = pl.select(pl.when(is_month).then(year_month).otherwise(as_int)).to_series()
    ids = {}
    for column in ("white_id", "black_id"):
        ids[column] = text[column].cast(pl.Int64, strict=False)
        if ids[column].is_null().any():
            raise _bad_line(path, ids[column].is_null(), frame, column, "is not a whole-number player id")
    if score_column == "white_score":
        score = text["white_score"].cast(pl.Float64, strict=False)
        bad = score.is_null() | ~score.is_in([0.0, 0.5, 1.0])
        if bad.any():
            raise _bad_line(path, bad, frame, "white_score", "is not 1, 0.5 or 0")
    else:
        bad = text["result"].is_null() | ~text["result"].is_in(list(RESULT_SCORES))
        if bad.any():
            raise _bad_line(path, bad, frame, "result", "is not 1-0, 0-1 or 1/2-1/2")
        score = text["result"].replace_strict(RESULT_SCORES, return_dtype=pl.Float64)
    if "colour_known" in frame.columns:
        flag = frame["colour_known"].cast(pl.Utf8).str.strip_chars().str.to_lowercase()
        bad = flag.is_not_null() & ~flag.is_in([*TRUE_TEXT, *FALSE_TEXT, ""])
        if bad.any():
            raise _bad_line(path, bad, frame, "colour_known", "is not true or false")
        colour_known = ~flag.is_in(list(FALSE_TEXT))
    else:
        colour_known = pl.Series([not kaggle] * frame.height, dtype=pl.Boolean)
    games = pl.DataFrame(
        {
            "period": period,
            "month": months,
            "white_id": ids["white_id"],
            "black_id": ids["black_id"],
            "white_score": score,
            "colour_known": colour_known,
        }
    )
    if "event_id" in frame.columns:
        games = games.with_columns(event_id=frame["event_id"].cast(pl.Utf8))
    self_play = games["white_id"] == games["black_id"]
    if self_play.any():
        raise _bad_line(path, self_play, frame, "white_id", "plays himself (white_id equals black_id)")
    return games


# -- rating and predicting ---------------------------------------------------------------------


def rate_history(rules: SystemRules, games: pl.DataFrame) -> pl.DataFrame:
    """The state after rating `games` period by period (ascending), everybody starting from the initial values."""
    state = empty_state(rules.system)
    for (period,), part in games.sort("period", maintain_order=True).group_by("period", maintain_order=True):
        state = rate_period(rules.system, state, part, rules.params, int(period)).state
    return state


def prediction_metrics(predicted: pl.DataFrame) -> dict[str, Any]:
    """Kaggle 2010 player-month RMSE, Kaggle 2011 capped log10 deviance and PlayerRatings' bdev over the games.

    `predicted`: month, white_id, black_id, white_score, white_expected. The sums come from
    analytics.accuracy (per month, pooled over months), the same code the pipeline's accuracy uses.
    PlayerRatings' metrics() bdev is 100 x the mean capped natural-log deviance divided by that of a
    coin flip (ln 2 for every score in [0, 1]): 100 x deviance_log10 / log10(2).
    """
    frame = predicted.with_row_index("game_id").with_columns(
        pl.col("game_id").cast(pl.UInt64), black_expected=1.0 - pl.col("white_expected")
    )
    rows = [
        predictive_accuracy(part, str(month), "evaluation")
        for (month,), part in frame.group_by("month", maintain_order=True)
    ]
    pooled = compare_accuracy(pl.concat(rows), baseline=None).row(0, named=True)
    deviance = pooled["deviance"]
    return {
        "player_months": pooled["player_months"],
        "player_month_rmse": pooled["rmse"],
        "mean_abs_error": pooled["mean_abs_error"],
        "deviance_log10": deviance,
        "bdev": None if deviance is None else 100.0 * deviance / math.log10(2.0),
    }


def split(
    games: pl.DataFrame, train_to: int, test_from: int, test_to: int, test_games: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    if test_from <= train_to:
        raise ValueError(
            "--test-from must come after --train-to (the test games must not be rated before they are predicted)"
        )
    if test_to < test_from:
        raise ValueError("--test-to is before --test-from")
    train = games.filter(pl.col("period") <= train_to)
    source = games if test_games is None else test_games
    test = source.filter(pl.col("period").is_between(test_from, test_to))
    if train.height == 0:
        raise ValueError(
            f"no games up to --train-to (the file's periods run from {games['period'].min()!s} to "
            f"{games['period'].max()!s})"
        )
    if test.height == 0:
        raise ValueError(
            f"no test games between --test-from and --test-to (periods {source['period'].min()!s} to "
            f"{source['period'].max()!s})"
        )
    return train, test


def evaluate_split(rules: SystemRules, train: pl.DataFrame, test: pl.DataFrame) -> dict[str, Any]:
    """Rate `train`, freeze, predict every game of `test`, score. Players unseen in training get the initial values."""
    started = time.perf_counter()
    state = rate_history(rules, train)
    expected = predict(rules.system, state, test, rules.params)
    metrics = prediction_metrics(test.with_columns(white_expected=expected))
    return {
        "rules": rules.name,
        "system": rules.system.name,
        "params": rules.settings(),
        "train_games": train.height,
        "train_periods": train["period"].n_unique(),
        "test_games": test.height,
        "test_periods": test["period"].n_unique(),
        "test_games_colour_known": int(test["colour_known"].sum()),
        "players_rated": state.height,
        **metrics,
        "seconds": round(time.perf_counter() - started, 3),
    }


def evaluate(
    games: pl.DataFrame,
    train_to: str,
    test_from: str,
    test_to: str,
    rules: SystemRules,
    test_games: pl.DataFrame | None = None,
) -> dict[str, Any]:
    train, test = split(games, parse_period(train_to), parse_period(test_from), parse_period(test_to), test_games)
    return {**evaluate_split(rules, train, test), "train_to": train_to, "test_from": test_from, "test_to": test_to}


# -- tuning ------------------------------------------------------------------------------------


def parse_grid(assignments: list[str] | tuple[str, ...]) -> dict[str, list[Any]]:
    """['c=10,15,20', 'init_rd=250,300'] -> {'c': [10, 15, 20], 'init_rd': [250, 300]} (values read as YAML)."""
    grid: dict[str, list[Any]] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise ValueError(f"--grid expects key=v1,v2,..., got {assignment!r}")
        values = [parse_override(f"{key.strip()}={item.strip()}")[1] for item in raw.split(",")]
        grid[key.strip()] = values
    return grid


def tune(
    games: pl.DataFrame,
    train_to: str,
    test_from: str,
    test_to: str,
    rules_name: str,
    grid: dict[str, list[Any]],
    overrides: tuple[str, ...] = (),
    init: float | None = None,
    metric: str = "deviance_log10",
    test_games: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Every combination of the grid's values on one train/validation split, best `metric` first."""
    if metric not in METRICS:
        raise ValueError(f"--metric must be one of {', '.join(METRICS)}")
    combinations = list(itertools.product(*grid.values())) if grid else [()]
    if len(combinations) > MAX_GRID:
        raise ValueError(f"the grid has {len(combinations)} combinations; at most {MAX_GRID}")
    train, test = split(games, parse_period(train_to), parse_period(test_from), parse_period(test_to), test_games)
    results = []
    for values in combinations:
        setting = dict(zip(grid, values, strict=True))
        rules = load_system_rules(rules_name, overrides, init, setting)
        outcome = evaluate_split(rules, train, test)
        results.append(
            {
                "setting": setting,
                **{m: outcome[m] for m in METRICS},
                "params": outcome["params"],
                "seconds": outcome["seconds"],
            }
        )
    results.sort(key=lambda r: (r[metric] is None, r[metric]))
    for rank, row in enumerate(results, 1):
        row["rank"] = rank
    return {
        "rules": rules_name,
        "metric": metric,
        "train_to": train_to,
        "test_from": test_from,
        "test_to": test_to,
        "train_games": train.height,
        "test_games": test.height,
        "results": results,
    }


def leaderboard_text(outcome: dict[str, Any]) -> str:
    """The tuning leaderboard as a plain table."""
    keys = list(outcome["results"][0]["setting"]) if outcome["results"] else []
    header = ["rank", *keys, "deviance_log10", "bdev", "player_month_rmse", "seconds"]
    title = (
        f"{outcome['rules']}: train to {outcome['train_to']} ({outcome['train_games']:,} games), "
        f"validate {outcome['test_from']}..{outcome['test_to']} ({outcome['test_games']:,} games), best "
        f"{outcome['metric']} first"
    )
    lines = [
        title,
        "  ".join(f"{h:>14}" for h in header),
    ]
    for row in outcome["results"]:
        cells = [
            str(row["rank"]),
            *(str(row["setting"][k]) for k in keys),
            f"{row['deviance_log10']:.6f}",
            f"{row['bdev']:.3f}",
            f"{row['player_month_rmse']:.6f}",
            f"{row['seconds']:.2f}",
        ]
        lines.append("  ".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)


def evaluation_text(outcome: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in outcome["params"].items())
    return (
        f"{outcome['rules']} ({outcome['system']}: {params})\n"
        f"  trained on {outcome['train_games']:,} games in {outcome['train_periods']} periods up to "
        f"{outcome['train_to']} ({outcome['players_rated']:,} players)\n"
        f"  tested on {outcome['test_games']:,} games in {outcome['test_periods']} periods "
        f"{outcome['test_from']}..{outcome['test_to']} ({outcome['test_games_colour_known']:,} with colours known)\n"
        f"  player-month RMSE (Kaggle 2010)   {outcome['player_month_rmse']:.6f} over "
        f"{outcome['player_months']:,} player-months\n"
        f"  capped log10 deviance (Kaggle 2011) {outcome['deviance_log10']:.6f}\n"
        f"  bdev (PlayerRatings, 100 = coin flip) {outcome['bdev']:.3f}\n"
        f"  {outcome['seconds']:.2f} s"
    )
