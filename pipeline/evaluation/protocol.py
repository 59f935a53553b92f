"""The train/test protocol for rating systems: rate up to a period, predict the test games, score, tune."""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import polars as pl

from pipeline.analytics.accuracy import compare_accuracy, predictive_accuracy
from pipeline.evaluation.games_file import parse_period
from pipeline.evaluation.raters import Rater, SystemRater, load_rater
from pipeline.rules.model import parse_override
from pipeline.systems.config import SystemRules

METRICS = ("deviance_log10", "player_month_rmse", "bdev", "mean_abs_error")
MAX_GRID = 500


# -- rating and predicting ---------------------------------------------------------------------


def prediction_metrics(predicted: pl.DataFrame) -> dict[str, Any]:
    """Kaggle 2010 player-month RMSE, Kaggle 2011 capped log10 deviance and PlayerRatings' bdev over the games.

    `predicted`: month, white_id, black_id, white_score, white_expected (and black_expected, else 1 - White's). The
    sums come from analytics.accuracy (per month, pooled over months), the same code the pipeline's accuracy uses.
    PlayerRatings' metrics() bdev is 100 x the mean capped natural-log deviance divided by that of a
    coin flip (ln 2 for every score in [0, 1]): 100 x deviance_log10 / log10(2).
    """
    by_month = predicted.group_by("month", maintain_order=True)
    return pooled_metrics(pl.concat([month_accuracy(part, str(month)) for (month,), part in by_month]))


def month_accuracy(predicted: pl.DataFrame, month: str) -> pl.DataFrame:
    """The Accuracy row of one month's predicted games (white_id, black_id, white_score, white_expected, and
    black_expected when the predictor gives it), summed in the frame's order: what prediction_metrics pools, for a
    caller that predicts a month at a time.
    """
    # A rule set's per-game table gives Black's side itself (table 8.1.2's rounded values, the 400-point rule for one
    # side), which need not be 1 - White's: only a predictor that gives White's alone is complemented.
    black = [] if "black_expected" in predicted.columns else [(1.0 - pl.col("white_expected")).alias("black_expected")]
    frame = predicted.with_row_index("game_id").with_columns(pl.col("game_id").cast(pl.UInt64), *black)
    return predictive_accuracy(frame, month, "evaluation")


def pooled_metrics(monthly: pl.DataFrame) -> dict[str, Any]:
    """prediction_metrics' metrics from months' Accuracy rows (month_accuracy), pooled from their sums."""
    pooled = compare_accuracy(monthly, baseline=None).row(0, named=True)
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


def evaluate_split(rater: Rater, train: pl.DataFrame, test: pl.DataFrame) -> dict[str, Any]:
    """Rate `train`, freeze, predict every game of `test`, score. Players unseen in training get the initial values."""
    started = time.perf_counter()
    state = rater.rate(train)
    expected = rater.predict(state, test)
    sides = expected.get_columns() if isinstance(expected, pl.DataFrame) else [expected.alias("white_expected")]
    metrics = prediction_metrics(test.with_columns(sides))
    return {
        "rules": rater.name,
        "kind": rater.kind,
        "system": rater.what,
        "params": rater.settings(),
        "train_games": train.height,
        "train_periods": train["period"].n_unique(),
        "test_games": test.height,
        "test_periods": test["period"].n_unique(),
        "test_games_colour_known": int(test["colour_known"].sum()),
        "players_rated": state.height,
        **metrics,
        "warnings": rater.warnings(),
        "seconds": round(time.perf_counter() - started, 3),
    }


def evaluate(
    games: pl.DataFrame,
    train_to: str,
    test_from: str,
    test_to: str,
    rules: Rater | SystemRules,
    test_games: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """`rules` rated on the games up to `train_to`, scored on those of `test_from`..`test_to` (load_rater)."""
    rater = SystemRater(rules) if isinstance(rules, SystemRules) else rules
    train, test = split(games, parse_period(train_to), parse_period(test_from), parse_period(test_to), test_games)
    return {**evaluate_split(rater, train, test), "train_to": train_to, "test_from": test_from, "test_to": test_to}


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
    held_out: str | None = None,
) -> dict[str, Any]:
    """Every combination of the grid's values on one train/validation split, best `metric` first.

    `held_out` ('FROM..TO'): the test window the chosen setting will be evaluated on; the outcome's `warnings` say
    when the validation window overlaps it (overlap_warnings).
    """
    if metric not in METRICS:
        raise ValueError(f"--metric must be one of {', '.join(METRICS)}")
    combinations = list(itertools.product(*grid.values())) if grid else [()]
    if len(combinations) > MAX_GRID:
        raise ValueError(f"the grid has {len(combinations)} combinations; at most {MAX_GRID}")
    train, test = split(games, parse_period(train_to), parse_period(test_from), parse_period(test_to), test_games)
    warnings = overlap_warnings(test_from, test_to, held_out, games if test_games is None else test_games)
    results = []
    for values in combinations:
        setting = dict(zip(grid, values, strict=True))
        outcome = evaluate_split(load_rater(rules_name, overrides, init, setting), train, test)
        warnings += [f"setting {setting or 'as given'}: {warning}" for warning in outcome["warnings"]]
        results.append(
            {
                "setting": setting,
                **{m: outcome[m] for m in METRICS},
                "params": outcome["params"],
                "warnings": outcome["warnings"],
                "seconds": outcome["seconds"],
            }
        )
    results.sort(key=lambda r: (missing(r[metric]), 0.0 if missing(r[metric]) else r[metric]))
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
        "held_out": held_out,
        "warnings": warnings,
        "results": results,
    }


def missing(value: float | None) -> bool:
    """Whether a metric is absent: None (no player-month to score) or NaN, which ranks and prints as no value."""
    return value is None or math.isnan(value)


def metric_text(value: float | None, digits: int) -> str:
    """A metric with `digits` decimals, or 'none' where it is missing (nothing was scored)."""
    return "none" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def parse_window(text: str) -> tuple[int, int]:
    """'FROM..TO' (periods as the games file writes them) -> (first, last)."""
    first, sep, last = text.partition("..")
    if not sep:
        raise ValueError(f"--held-out expects FROM..TO (e.g. 104..107 or 2024-01..2024-12), got {text!r}")
    window = parse_period(first), parse_period(last)
    if window[1] < window[0]:
        raise ValueError(f"--held-out {text!r}: TO is before FROM")
    return window


def overlap_warnings(test_from: str, test_to: str, held_out: str | None, games: pl.DataFrame) -> list[str]:
    """Why the tuned setting may have seen its own test games: the validation window overlaps the held-out test
    window; or, when no test window is named, the validation window holds the file's last period, where a test
    window usually is (a setting tuned on the test games scores better on them than on new games).
    """
    first, last = parse_period(test_from), parse_period(test_to)
    if held_out is not None:
        low, high = parse_window(held_out)
        if first <= high and low <= last:
            return [
                f"the validation window {test_from}..{test_to} overlaps the test window {held_out}: the setting is "
                "tuned on the games it will be tested on; validate on periods before the test window"
            ]
        return []
    latest = games["period"].max()
    if isinstance(latest, int) and first <= latest <= last:
        # Named as the file writes it (2024-04 or Kaggle's 104), not as the month index periods are compared by.
        written = games.filter(pl.col("period") == latest)["month"][0]
        return [
            f"the validation window {test_from}..{test_to} holds the file's last period ({written}): if the setting "
            "is to be tested on these periods, it is tuned on its own test games; validate on periods before the "
            "test window, and name that window with --held-out FROM..TO to have it checked"
        ]
    return []


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
            metric_text(row["deviance_log10"], 6),
            metric_text(row["bdev"], 3),
            metric_text(row["player_month_rmse"], 6),
            f"{row['seconds']:.2f}",
        ]
        lines.append("  ".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)


def evaluation_text(outcome: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in outcome["params"].items())
    return (
        f"{outcome['rules']} ({outcome['kind']} {outcome['system']}: {params})\n"
        f"  trained on {outcome['train_games']:,} games in {outcome['train_periods']} periods up to "
        f"{outcome['train_to']} ({outcome['players_rated']:,} players)\n"
        f"  tested on {outcome['test_games']:,} games in {outcome['test_periods']} periods "
        f"{outcome['test_from']}..{outcome['test_to']} ({outcome['test_games_colour_known']:,} with colours known)\n"
        f"  player-month RMSE (Kaggle 2010)   {metric_text(outcome['player_month_rmse'], 6)} over "
        f"{outcome['player_months']:,} player-months\n"
        f"  capped log10 deviance (Kaggle 2011) {metric_text(outcome['deviance_log10'], 6)}\n"
        f"  bdev (PlayerRatings, 100 = coin flip) {metric_text(outcome['bdev'], 3)}\n"
        f"  {outcome['seconds']:.2f} s"
    )
