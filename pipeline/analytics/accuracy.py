"""Predictive accuracy of a scenario's ratings per month and the comparison of scenarios against a baseline.

The measures: Sonas's total absolute error, Kaggle 2010 RMSE, Kaggle 2011 capped log10 binomial deviance.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from typing import NamedTuple

import numpy as np
import polars as pl

from pipeline.analytics.common import in_order_sum
from schemas.accuracy import Accuracy
from schemas.accuracy_comparison import AccuracyComparison
from schemas.util import conform, empty_frame

# Kaggle 2011 capped predictions to [0.01, 0.99] so that one confident miss cannot dominate the mean.
PREDICTION_FLOOR, PREDICTION_CEILING = 0.01, 0.99

METRICS = ("mean_abs_error", "rmse", "deviance")


def _predicted(expected: str) -> pl.Expr:
    return pl.col(expected).is_not_null()


def _capped_deviance(score: pl.Expr, expected: pl.Expr) -> pl.Expr:
    """-[y log10(p) + (1 - y) log10(1 - p)] with p clipped to [0.01, 0.99]; a draw is y = 0.5."""
    p = expected.clip(PREDICTION_FLOOR, PREDICTION_CEILING)
    return -(score * p.log(10) + (1.0 - score) * (1.0 - p).log(10))


def predicted_sides(rated_games: pl.DataFrame) -> pl.DataFrame:
    """One row per (game, player) with a prediction: player_id, game_id, score, expected.

    A side has a prediction exactly when the rule set gave it an expected score: the player was
    rated on the list in force, the opponent had a rating used, and the time control is rated.
    """
    white = rated_games.filter(_predicted("white_expected")).select(
        "game_id", player_id="white_id", score=pl.col("white_score"), expected=pl.col("white_expected")
    )
    black = rated_games.filter(_predicted("black_expected")).select(
        "game_id", player_id="black_id", score=1.0 - pl.col("white_score"), expected=pl.col("black_expected")
    )
    return pl.concat([white, black])


class CommonSides(NamedTuple):
    """The sides every compared scenario predicted (common_sides): the ids of the games whose White side, and of
    those whose Black side, each in increasing order.
    """

    white: pl.Series
    black: pl.Series


def predictive_accuracy(
    rated_games: pl.DataFrame,
    month: str,
    scenario: str,
    sides: CommonSides | None = None,
) -> pl.DataFrame:
    """One Accuracy row: how well the ratings used predicted the month's results under `scenario`.

    Per player-month (players with at least one predicted game): error = sum of scores - sum of
    expected scores. total_abs_error = sum of |error| (Sonas), mean_abs_error = that / players,
    rmse = sqrt(mean of error^2) (Kaggle 2010). Per game with at least one predicted side: the capped
    log10 binomial deviance of the predicted side(s), averaged over the two sides when both are
    predicted (identical for symmetric expectancies), and `deviance` its mean over games (Kaggle
    2011). Games are unweighted: a rapid game the rule set rates is one prediction like any other.
    `sides` restricts the month to those sides of its games (see `common_sides`): a side not among them counts as
    not predicted.
    """
    games = rated_games
    if sides is not None:
        games = rated_games.with_columns(
            white_expected=pl.when(pl.col("game_id").is_in(sides.white.implode())).then(pl.col("white_expected")),
            black_expected=pl.when(pl.col("game_id").is_in(sides.black.implode())).then(pl.col("black_expected")),
        )
    per_player = (
        predicted_sides(games)
        .group_by("player_id")
        .agg(error=in_order_sum(pl.col("score")) - in_order_sum(pl.col("expected")))
        .sort("player_id")  # a fixed summation order, so that a rerun writes identical bytes
        .select(
            # Added in that order whatever the chunks (a sort leaves one per thread): POLARS_MAX_THREADS changed them.
            players=pl.len().cast(pl.Int64),
            total_abs_error=in_order_sum(pl.col("error").abs()),
            sum_squared_error=in_order_sum(pl.col("error").pow(2)),
        )
    )
    white_deviance = pl.when(_predicted("white_expected")).then(
        _capped_deviance(pl.col("white_score"), pl.col("white_expected"))
    )
    black_deviance = pl.when(_predicted("black_expected")).then(
        _capped_deviance(1.0 - pl.col("white_score"), pl.col("black_expected"))
    )
    per_game = (
        games.filter(_predicted("white_expected") | _predicted("black_expected"))
        .select(
            sides=_predicted("white_expected").cast(pl.Int64) + _predicted("black_expected").cast(pl.Int64),
            deviance=pl.mean_horizontal(white_deviance, black_deviance),
        )
        .select(
            games=pl.len().cast(pl.Int64),
            sides=pl.col("sides").sum().cast(pl.Int64),
            deviance_sum=in_order_sum(pl.col("deviance")),
        )
    )
    row = pl.concat([per_player, per_game], how="horizontal").with_columns(
        month=pl.lit(month), scenario=pl.lit(scenario)
    )
    return conform(_with_metrics(row, "players", "games"), Accuracy)


def _with_metrics(frame: pl.DataFrame, players: str, games: str) -> pl.DataFrame:
    """Means from the additive sums; null (not NaN or an error) when nothing was predicted."""
    per_player = pl.when(pl.col(players) > 0)
    return frame.with_columns(
        mean_abs_error=per_player.then(pl.col("total_abs_error") / pl.col(players)),
        rmse=per_player.then((pl.col("sum_squared_error") / pl.col(players)).sqrt()),
        deviance=pl.when(pl.col(games) > 0).then(pl.col("deviance_sum") / pl.col(games)),
    )


def common_sides(rated_games_by_scenario: Mapping[str, pl.DataFrame]) -> CommonSides:
    """The sides (game and colour) predicted under every scenario.

    Scenarios rate different players (floors, initial ratings) and time controls, so their predicted
    sides differ; comparing them on the common sides scores every scenario on the same player-games. A
    game predicted for both sides under one scenario and for White alone under another counts its White
    side alone under both: a game every scenario predicted for one side or other is not enough (each
    would be scored on its own sides of it).
    """
    white = _common_ids([frame.filter(_predicted("white_expected")) for frame in rated_games_by_scenario.values()])
    black = _common_ids([frame.filter(_predicted("black_expected")) for frame in rated_games_by_scenario.values()])
    return CommonSides(white, black)


def accuracy_on_common_sides(rated_games_by_scenario: Mapping[str, pl.DataFrame], month: str) -> pl.DataFrame:
    """One Accuracy row per scenario, in their order, on the sides every one of them predicted: the rows of
    predictive_accuracy(frame, month, name, sides=common_sides(rated_games_by_scenario)), to the last bit.

    The common sides are one set of player-games: where the tables are each in game_id order and agree on those
    games' players and results (as the per-game tables rated from one games table do), the sides are grouped by
    player once for every scenario, each scenario's expected scores summed beside the scores; otherwise each
    scenario is scored on its own table.
    """
    names, frames = list(rated_games_by_scenario), list(rated_games_by_scenario.values())
    if not frames:
        return empty_frame(Accuracy)
    rows = _shared_rows(frames)
    if rows is None:
        common = common_sides(rated_games_by_scenario)
        return pl.concat(
            [predictive_accuracy(frame, month, name, sides=common) for name, frame in rated_games_by_scenario.items()]
        )
    first, (white, black, games) = frames[0], rows[0]
    score = _values(first, "white_score")
    expected = [{colour: _values(frame, f"{colour}_expected") for colour in ("white", "black")} for frame in frames]
    # The rows predicted_sides makes of the common sides, in its order (White's sides, then Black's, each in game
    # order), with every scenario's expected score beside them: the same sums, added in the same order.
    sides = pl.DataFrame(
        {
            "player_id": np.concatenate([_values(first, "white_id")[white], _values(first, "black_id")[black]]),
            "score": np.concatenate([score[white], 1.0 - score[black]]),
            **{
                f"expected_{n}": np.concatenate([values["white"][w], values["black"][b]])
                for n, (values, (w, b, _)) in enumerate(zip(expected, rows, strict=True))
            },
        }
    )
    errors = [pl.col("score") - pl.col(f"expected_{n}") for n in range(len(frames))]
    per_player = (
        sides.group_by("player_id")
        .agg(in_order_sum(pl.col(column)).alias(column) for column in sides.columns[1:])
        .sort("player_id")
        .select(
            pl.len().cast(pl.Int64).alias("players"),
            *(in_order_sum(error.abs()).alias(f"total_abs_error_{n}") for n, error in enumerate(errors)),
            *(in_order_sum(error.pow(2)).alias(f"sum_squared_error_{n}") for n, error in enumerate(errors)),
        )
        .row(0, named=True)
    )
    # The games with a common side, in game order, each scenario's deviance on them as predictive_accuracy computes
    # it: a side not common has none.
    on_white, on_black = np.zeros(first.height, dtype=bool), np.zeros(first.height, dtype=bool)
    on_white[white], on_black[black] = True, True
    per_game = pl.DataFrame(
        {
            "white_side": on_white[games],
            "black_side": on_black[games],
            "white_score": score[games],
            **{
                f"{colour}_{n}": values[colour][g]
                for n, (values, (_, _, g)) in enumerate(zip(expected, rows, strict=True))
                for colour in ("white", "black")
            },
        }
    )
    deviance_sums = per_game.select(
        in_order_sum(
            pl.mean_horizontal(
                pl.when(pl.col("white_side")).then(_capped_deviance(pl.col("white_score"), pl.col(f"white_{n}"))),
                pl.when(pl.col("black_side")).then(_capped_deviance(1.0 - pl.col("white_score"), pl.col(f"black_{n}"))),
            )
        ).alias(str(n))
        for n in range(len(frames))
    ).row(0)
    every = len(names)
    row = pl.DataFrame(
        {
            "month": [month] * every,
            "scenario": names,
            "players": [per_player["players"]] * every,
            "games": [len(games)] * every,
            "sides": [len(white) + len(black)] * every,
            "total_abs_error": [per_player[f"total_abs_error_{n}"] for n in range(every)],
            "sum_squared_error": [per_player[f"sum_squared_error_{n}"] for n in range(every)],
            "deviance_sum": list(deviance_sums),
        },
        schema_overrides={"total_abs_error": pl.Float64, "sum_squared_error": pl.Float64, "deviance_sum": pl.Float64},
    )
    return conform(_with_metrics(row, "players", "games"), Accuracy)


def _values(frame: pl.DataFrame, column: str) -> np.ndarray:
    """`column` as an array, a null as 0 (read only at rows holding a value)."""
    return frame[column].fill_null(0).to_numpy()


class _Rows(NamedTuple):
    """A table's rows of the common sides: those of the White sides, of the Black sides, and of the games with
    either, each in increasing order.
    """

    white: np.ndarray
    black: np.ndarray
    games: np.ndarray


# What the common sides take from one table for every scenario: White's player on the White sides, Black's on the
# Black sides, the result on the games with either.
_GAME_FACTS = ("white_id", "black_id", "white_score")


def _shared_rows(frames: list[pl.DataFrame]) -> list[_Rows] | None:
    """Each table's rows of the sides every table predicted, where the tables are each in game_id order (one row a
    game) and agree on those games' players and results; else None.
    """
    if any(frame[column].has_nulls() for frame in frames for column in _GAME_FACTS):
        return None
    ids = [frame["game_id"].to_numpy() for frame in frames]
    if not all(bool(np.all(i[1:] > i[:-1])) for i in ids):
        return None
    white = [frame["white_expected"].is_not_null().to_numpy() for frame in frames]
    black = [frame["black_expected"].is_not_null().to_numpy() for frame in frames]
    if all(np.array_equal(i, ids[0]) for i in ids[1:]):
        # The same games in every table (the usual month): the common sides are where every table predicted.
        rows = [_rows(np.logical_and.reduce(white), np.logical_and.reduce(black))] * len(frames)
    else:
        common_white = reduce(np.intersect1d, [i[mask] for i, mask in zip(ids, white, strict=True)])
        common_black = reduce(np.intersect1d, [i[mask] for i, mask in zip(ids, black, strict=True)])
        rows = [_rows(np.isin(i, common_white), np.isin(i, common_black)) for i in ids]
    for side, column in enumerate(_GAME_FACTS):  # at[side]: its White sides, Black sides, games
        held = [frame[column].to_numpy()[at[side]] for frame, at in zip(frames, rows, strict=True)]
        if not all(np.array_equal(values, held[0]) for values in held[1:]):
            return None
    return rows


def _rows(white: np.ndarray, black: np.ndarray) -> _Rows:
    """The rows of a table's common White and Black sides, given as masks of its rows."""
    return _Rows(np.flatnonzero(white), np.flatnonzero(black), np.flatnonzero(white | black))


def _common_ids(frames: list[pl.DataFrame]) -> pl.Series:
    """The game ids every frame holds, each once, in increasing order."""
    common: np.ndarray | None = None
    for frame in frames:
        ids = frame["game_id"].to_numpy()
        # A per-game table is in game_id order with one row a game: then no sort (a month's searches stay in cache).
        ids = ids if bool(np.all(ids[1:] > ids[:-1])) else np.unique(ids)
        if common is None:
            common = ids
        elif len(ids):
            at = np.minimum(np.searchsorted(ids, common), len(ids) - 1)
            common = common[ids[at] == common]
        else:
            common = ids
    return pl.Series("game_id", common if common is not None else [], dtype=pl.UInt64)


def compare_accuracy(accuracy: pl.DataFrame, baseline: str | None) -> pl.DataFrame:
    """One AccuracyComparison row per scenario: pooled metrics over its months and, for each metric,
    the share of months in which it beats `baseline` (strictly lower error, same month).

    Pooled metrics come from the sums (all player-months and games of the scenario together), not
    from averaging monthly means. Shares are null for the baseline itself and when `baseline` is None.
    """
    if baseline is not None and accuracy.filter(pl.col("scenario") == baseline).height == 0:
        present = sorted(accuracy["scenario"].unique().to_list())
        raise ValueError(f"baseline scenario {baseline!r} has no accuracy rows (scenarios: {present})")
    pooled = accuracy.group_by("scenario").agg(
        months=pl.len().cast(pl.Int64),
        player_months=pl.col("players").sum().cast(pl.Int64),
        games=pl.col("games").sum().cast(pl.Int64),
        total_abs_error=in_order_sum(pl.col("total_abs_error")),
        sum_squared_error=in_order_sum(pl.col("sum_squared_error")),
        deviance_sum=in_order_sum(pl.col("deviance_sum")),
    )
    pooled = _with_metrics(pooled, "player_months", "games").with_columns(baseline=pl.lit(baseline, dtype=pl.Utf8))
    if baseline is None:
        shares = pooled.select("scenario").with_columns(
            months_compared=pl.lit(None, dtype=pl.Int64),
            **{f"share_better_{metric}": pl.lit(None, dtype=pl.Float64) for metric in METRICS},
        )
    else:
        # A month where either side predicted no game is no evidence either way, and is not counted
        # as compared: months_compared is exactly the months the shares come from.
        predicted = accuracy.filter(pl.col("games") > 0)
        reference = predicted.filter(pl.col("scenario") == baseline).select(
            "month", *[pl.col(metric).alias(f"baseline_{metric}") for metric in METRICS]
        )
        paired = predicted.filter(pl.col("scenario") != baseline).join(reference, on="month", how="inner")
        shares = paired.group_by("scenario").agg(
            months_compared=pl.len().cast(pl.Int64),
            **{
                f"share_better_{metric}": (pl.col(metric) < pl.col(f"baseline_{metric}")).cast(pl.Float64).mean()
                for metric in METRICS
            },
        )
    table = pooled.join(shares, on="scenario", how="left")
    if baseline is not None:
        # A scenario with no month in common with the baseline was compared in 0 months.
        table = table.with_columns(
            months_compared=pl.when(pl.col("scenario") != baseline).then(pl.col("months_compared").fill_null(0))
        )
    # Baseline first, then the others by name.
    order = pl.when(pl.col("scenario") == pl.col("baseline")).then(0).otherwise(1)
    return conform(table.sort(order, "scenario"), AccuracyComparison)
