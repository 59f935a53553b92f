"""The chain step of a `system: whr` scenario: the month's games added to the warm-started whole history -> the list
of the month as it stands after it, every player-month as it stands now, the warm start and the per-game table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import polars as pl

from pipeline.months import month_index
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.system_step import _rated_games, _rating_list
from pipeline.systems import WHOLE_HISTORY
from pipeline.whole_history.system import WhrScenarioParams
from pipeline.whole_history.whr import WholeHistory, predict
from schemas.rated_games import RatedGames
from schemas.rating_list import SystemRatingList
from schemas.system_state import SystemState
from schemas.util import conform, polars_schema
from schemas.whole_history import WhrHistory, WhrState

HISTORY, WHR_STATE = "history", "whr_state"


class WhrMonth(NamedTuple):
    """A month's tables, in chain_tables' order."""

    rating_list: pl.DataFrame  # SystemRatingList: the list of the month as it stood after it
    state: pl.DataFrame  # SystemState: the same, unrounded, with seed players not seen yet (what predicts)
    whr_state: pl.DataFrame  # WhrState: the warm start
    history: pl.DataFrame  # WhrHistory: every player-month as it stands after the month
    rated_games: pl.DataFrame  # RatedGames


def is_whole_history(scenario: Scenario) -> bool:
    return scenario.system is not None and scenario.system.lower() in WHOLE_HISTORY


def params_of(scenario: Scenario) -> WhrScenarioParams:
    params = scenario.system_rules().params
    assert isinstance(params, WhrScenarioParams)
    return params


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


def restored(
    scenario: Scenario, seed_list: pl.DataFrame | None, state: pl.DataFrame, past: Iterable[tuple[str, pl.DataFrame]]
) -> WholeHistory:
    """The history as month `state` (WhrState) left it: its structure rebuilt from the games each past month added
    (`past`: month -> the rated games, in order; no sweep), then its estimates taken as stored. ValueError when the
    games do not make the stored player-months (a month's games changed since the state was stored).
    """
    history = new_history(scenario, seed_list)
    for month, games in past:
        history.add_month(month_index(month), games, sweeps=0)
    nodes = state_frame(history).select("player_id", "month")
    if not nodes.equals(state.select("player_id", "month")):
        raise ValueError(
            f"the stored games make {nodes.height} player-months, not the {state.height} of the stored state"
        )
    history.r[: history.n_nodes] = state["r"].to_numpy()
    history.var[: history.n_nodes] = state["variance"].to_numpy()
    return history


def _months(indices: np.ndarray) -> pl.Series:
    index = pl.Series(indices.astype(np.int64))
    return ((index // 12).cast(pl.Utf8).str.zfill(4) + "-" + (index % 12 + 1).cast(pl.Utf8).str.zfill(2)).alias("month")


def state_frame(history: WholeHistory) -> pl.DataFrame:
    """The warm start (WhrState): the history's player-months in its own order and units."""
    n = history.n_nodes
    ids = history.players.sort("player")["player_id"].to_numpy()
    return pl.DataFrame(
        {
            "player_id": ids[history.node_player[:n]],
            "month": _months(history.node_month[:n]),
            "r": history.r[:n].copy(),
            "variance": history.var[:n].copy(),
        },
        schema=polars_schema(WhrState),
    )


def history_frame(history: WholeHistory) -> pl.DataFrame:
    """Every player-month as it stands (WhrHistory)."""
    frame = history.history()
    return conform(
        frame.with_columns(
            month=_months(frame["month"].to_numpy()),
            deviation=pl.col("deviation").fill_nan(None),
            games=pl.col("games").cast(pl.Int32),
        ),
        WhrHistory,
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


def rate_whr_month(
    scenario: Scenario,
    history: WholeHistory,
    previous_list: pl.DataFrame,
    previous_state: pl.DataFrame,
    games: pl.DataFrame,
    month: str,
    players: pl.DataFrame | None = None,
) -> WhrMonth:
    """Month `month`: its games predicted from the state before it (`previous_state`: the list before the month,
    unrounded, seed players at their seed rating), then added to `history` (updated in place: Coulom's incremental
    Newton sweeps over the month's players, and the scenario's full sweeps where due), then read back.
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
        state_frame(history),
        history_frame(history),
        conform(rated_games, RatedGames),
    )
