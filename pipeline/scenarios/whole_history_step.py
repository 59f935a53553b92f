"""The chain step of a `system: whr` scenario.

The month's games added to the warm-started whole history -> the list of the month as it stands after it, the
player-months the month changed, and the per-game table.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from pipeline.months import month_index, month_label
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.system_step import _rated_games, _rating_list
from pipeline.systems import WHOLE_HISTORY
from pipeline.whole_history.system import WhrScenarioParams
from pipeline.whole_history.whr import WholeHistory, predict
from schemas.rated_games import RatedGames
from schemas.rating_list import SystemRatingList
from schemas.system_state import SystemState
from schemas.util import conform, polars_schema
from schemas.whole_history import WhrState

WHR_STATE = "whr_state"


class WhrMonth(NamedTuple):
    """A month's tables, in chain_tables' order."""

    rating_list: pl.DataFrame  # SystemRatingList: the list of the month as it stood after it
    state: pl.DataFrame  # SystemState: the same, unrounded, with seed players not seen yet (what predicts)
    whr_state: pl.DataFrame  # WhrState: the player-months the month changed (every one in a checkpoint month)
    rated_games: pl.DataFrame  # RatedGames


def is_whole_history(scenario: Scenario) -> bool:
    return scenario.system is not None and scenario.system.lower() in WHOLE_HISTORY


def params_of(scenario: Scenario) -> WhrScenarioParams:
    params = scenario.system_rules().params
    assert isinstance(params, WhrScenarioParams)
    return params


def is_checkpoint(scenario: Scenario, month: str, chain_start: str) -> bool:
    """Whether the chain's `month` stores every player-month: its first month, and the months of
    WhrScenarioParams.checkpoint_after.
    """
    return month <= chain_start or params_of(scenario).checkpoint_after(month_index(month))


def new_history(scenario: Scenario, seed_list: pl.DataFrame | None) -> WholeHistory:
    """An empty history whose seed-list players' prior is centred on their seed rating (as the period systems start
    them at it); everybody else's on init_rating.
    """
    history = WholeHistory(params_of(scenario))
    if seed_list is not None and "rating" in seed_list.columns:
        history.seeds = seed_list.filter(pl.col("rating").is_not_null()).select(
            pl.col("player_id").cast(pl.Int64), pl.col("rating").cast(pl.Float64)
        )
    return history


def rated_of(scenario: Scenario, games: pl.DataFrame) -> pl.DataFrame:
    """The games the history takes, in the one order a rebuild reproduces (game_id): float sums in another order
    differ in the last bits.
    """
    return games.filter(pl.col("time_control").is_in(list(scenario.rated_time_controls()))).sort("game_id")


def month_labels(indices: np.ndarray) -> pl.Series:
    """Month indices (pipeline.months.month_index) as YYYY-MM: each month's text made once, then picked per row
    (millions of rows in a checkpoint, a few hundred months).
    """
    if indices.size == 0:
        return pl.Series("month", [], dtype=pl.Utf8)
    low = int(indices.min())
    span = pl.Series(np.arange(low, int(indices.max()) + 1, dtype=np.int64))
    labels = span.to_frame("index").select(month_label(pl.col("index"))).to_series()
    return labels.gather(pl.Series(indices - low, dtype=pl.Int64)).alias("month")


def state_frame(history: WholeHistory, nodes: np.ndarray | None = None) -> pl.DataFrame:
    """The player-months `nodes` (None: every one; ascending) as WhrState rows, by player_id and month: ordered in
    NumPy, as a player's nodes come in month order (a Polars sort of a checkpoint's millions of rows takes several
    times the table's memory).
    """
    picked = np.arange(history.n_nodes) if nodes is None else nodes
    ids = history.players["player_id"].to_numpy()
    player_ids = ids[history.node_player[picked]]
    picked = picked[np.argsort(player_ids, kind="stable")]
    del player_ids
    return pl.DataFrame(
        {
            "player_id": ids[history.node_player[picked]],
            "month": month_labels(history.node_month[picked]),
            "r": history.r[picked],
            "variance": history.var[picked],
            "games": history.node_games[picked],
        },
        schema=polars_schema(WhrState),
    )


def _month_results(to_rate: pl.DataFrame) -> pl.DataFrame:
    """Each player's wins, draws and losses of the month."""
    sides = pl.concat(
        [
            to_rate.select(pl.col("white_id").alias("player_id"), score=pl.col("white_score")),
            to_rate.select(pl.col("black_id").alias("player_id"), score=1.0 - pl.col("white_score")),
        ]
    )
    return sides.group_by("player_id").agg(
        month_wins=(pl.col("score") == 1.0).sum().cast(pl.Int64),
        month_draws=(pl.col("score") == 0.5).sum().cast(pl.Int64),
        month_losses=(pl.col("score") == 0.0).sum().cast(pl.Int64),
    )


def fit_warning(scenario: Scenario, history: WholeHistory, month: str) -> str | None:
    """What the month's fit to tolerance (full_sweeps 0) must say when it stopped at max_sweeps unconverged: the list
    is then not the converged one it is read as. A fixed number of full sweeps stops there by design: no warning.
    """
    fit = history.fitted
    if fit is None or params_of(scenario).full_sweep_after(month_index(month)) != 0:
        return None
    warning = fit.warning()
    return None if warning is None else f"{scenario.name} {month}: {warning}"


def rate_whr_month(
    scenario: Scenario,
    history: WholeHistory,
    previous_list: pl.DataFrame,
    previous_state: pl.DataFrame,
    games: pl.DataFrame,
    month: str,
    players: pl.DataFrame | None = None,
    checkpoint: bool = False,
) -> WhrMonth:
    """Month `month`: its games predicted from the state before it (`previous_state`: the list before the month,
    unrounded, seed players at their seed rating), then added to `history` (updated in place: Coulom's incremental
    Newton sweeps over the month's players, and the scenario's full sweeps where due), then read back: the list,
    and the player-months the month changed (every one after a full sweep or when `checkpoint`).
    """
    rules = scenario.system_rules()
    params = params_of(scenario)
    to_rate = rated_of(scenario, games)
    expected = predict(previous_state, to_rate, params)
    predicted = pl.DataFrame({"white_expected": expected, "black_expected": 1.0 - expected})
    index = month_index(month)
    history.add_month(index, to_rate)
    full = params.full_sweep_after(index)
    if full is not None:
        history.fit(max_sweeps=full or None)
    now = history.list_at(index)
    results = previous_state.select("player_id", "wins", "draws", "losses").join(
        _month_results(to_rate), on="player_id", how="full", coalesce=True
    )
    seen = now.join(results, on="player_id", how="left").select(
        "player_id",
        "rating",
        pl.col("deviation").fill_nan(None),
        volatility=pl.lit(None, dtype=pl.Float64),
        games=pl.col("games").cast(pl.Int64),
        **{
            name: pl.col(name).fill_null(0) + pl.col(f"month_{name}").fill_null(0)
            for name in ("wins", "draws", "losses")
        },
        last_period=pl.col("last_month").cast(pl.Int64),
    )
    unseen = previous_state.join(seen.select("player_id"), on="player_id", how="anti")
    state = conform(
        pl.concat([seen, unseen.select(seen.columns)], how="vertical_relaxed").sort("player_id"), SystemState
    )
    rating_list = _rating_list(previous_list, state, state, to_rate, month, players)
    rated_games = _rated_games(games, to_rate, predicted, previous_state, rules, month)
    return WhrMonth(
        conform(rating_list, SystemRatingList),
        state,
        state_frame(history, None if checkpoint else history.changed),
        conform(rated_games, RatedGames),
    )
