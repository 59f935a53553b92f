"""A whole-history chain's stored months read back.

Every player-month as it stands after a month, the list of a month as it stands, and the history a run continuing the
chain starts from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import polars as pl

from pipeline.months import add_months, month_index, month_index_of
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.whole_history_step import (
    WHR_STATE,
    is_checkpoint,
    month_labels,
    new_history,
    params_of,
)
from pipeline.store.monthly import stored_table_months, table_key
from pipeline.store.object_store import ObjectStore
from pipeline.whole_history.whr import ELO_PER_NAT, WholeHistory, last_rows, list_of_last
from schemas.util import conform
from schemas.whole_history import WhrHistory

#: What a run continuing the chain reads of a month's per-game table: the games it added, in order.
ADDED_COLUMNS = ["game_id", "white_id", "black_id", "white_score", "weight"]


def state_months(scenario: Scenario, month: str, chain_start: str) -> list[str]:
    """The months whose stored WhrState make the history after `month`: the last checkpoint up to it, then every
    month after that one, in order.
    """
    months = [month]
    while not is_checkpoint(scenario, months[-1], chain_start):
        months.append(add_months(months[-1], -1))
    return months[::-1]


def stored_state(store: ObjectStore, scenario: Scenario, month: str, chain_start: str | None = None) -> pl.DataFrame:
    """Every player-month (WhrState rows, by player_id and month) as it stands after `month`: the last checkpoint up
    to it with each later month's changed player-months laid over it, in order. `chain_start`: the chain's first
    month (default: the first month stored). FileNotFoundError naming a missing month.
    """
    state = read_state(store, scenario, month, chain_start)
    return state.with_columns(month=month_labels(state["month"].to_numpy()))


def read_state(store: ObjectStore, scenario: Scenario, month: str, chain_start: str | None = None) -> pl.DataFrame:
    """stored_state with each month as its index (pipeline.months.month_index, Int32), made in NumPy with little more
    memory than it takes: the checkpoint's estimates updated in place by each later month's (each row found by a
    sorted key), the player-months new since the checkpoint merged in at the end. Joining a checkpoint's millions of
    rows in Polars took several times the table (1.7 GB at FIDE scale).
    """
    frames = state_frames(store, scenario, month, chain_start or stored_months(store, scenario)[0])
    base = next(frames)
    schema = base.schema
    columns = {name: base[name].to_numpy().copy() for name in schema}
    del base
    span = month_index(month) + 1  # key = the player's rank * span + the month: the order of player_id, month
    ids = np.unique(columns["player_id"])
    keys = np.searchsorted(ids, columns["player_id"]) * span + columns["month"]
    if keys.size > 1 and not (keys[1:] > keys[:-1]).all():
        order = np.argsort(keys, kind="stable")
        keys, columns = keys[order], {name: column[order] for name, column in columns.items()}
    added = []
    for frame in frames:
        player_ids, months = frame["player_id"].to_numpy(), frame["month"].to_numpy()
        if keys.size:
            at = np.minimum(np.searchsorted(ids, player_ids), ids.shape[0] - 1)
            key = at * span + months
            position = np.minimum(np.searchsorted(keys, key), keys.shape[0] - 1)
            known = (ids[at] == player_ids) & (keys[position] == key)
        else:
            position, known = np.zeros(frame.height, dtype=np.int64), np.zeros(frame.height, dtype=np.bool_)
        for name in ("r", "variance", "games"):
            columns[name][position[known]] = frame[name].to_numpy()[known]
        added.append(frame.filter(pl.Series(~known)))
    later = pl.concat(added).unique(["player_id", "month"], keep="last") if added else None
    if later is not None and later.height:
        # Merged by a key of every player id, old and new.
        every = np.union1d(ids, later["player_id"].to_numpy())
        merged = {name: np.concatenate([column, later[name].to_numpy()]) for name, column in columns.items()}
        order = np.argsort(np.searchsorted(every, merged["player_id"]) * span + merged["month"], kind="stable")
        columns = {name: column[order] for name, column in merged.items()}
    return pl.DataFrame(columns, schema=schema)


def _state_month(store: ObjectStore, scenario: Scenario, month: str) -> pl.DataFrame:
    """A stored month of WhrState with the month as its index; FileNotFoundError when it is missing."""
    key = table_key([scenario.name, WHR_STATE], month)
    if not store.exists(key):
        raise FileNotFoundError(f"{scenario.name}/{WHR_STATE} of {month} is missing ({key})")
    return store.read_parquet(key).with_columns(month_index_of(pl.col("month")).cast(pl.Int32))


def stored_months(store: ObjectStore, scenario: Scenario) -> list[str]:
    """The months the scenario's WhrState holds (one listing); FileNotFoundError when none."""
    months = stored_table_months(store, [scenario.name, WHR_STATE])
    if not months:
        raise FileNotFoundError(f"{scenario.name}/{WHR_STATE} has no stored month")
    return months


def _in_elo(state: pl.DataFrame, scenario: Scenario) -> pl.DataFrame:
    """read_state rows in Elo, computed as WholeHistory.history computes them: player_id, month, rating, deviation
    (NaN: not swept yet), games.
    """
    params = params_of(scenario)
    return state.select(
        "player_id",
        "month",
        rating=params.init_rating + ELO_PER_NAT * pl.col("r"),
        deviation=ELO_PER_NAT * pl.col("variance").sqrt(),
        games="games",
    )


def history_as_it_stands(
    store: ObjectStore, scenario: Scenario, as_of: str | None = None, month: str | None = None
) -> pl.DataFrame:
    """Every player-month of the whole-history `scenario` as it stands after `as_of` (default: its last stored month),
    in Elo (WhrHistory, by player_id and month); only `month`'s rows when given: "month K as it stands now".
    """
    state = read_state(store, scenario, as_of or stored_months(store, scenario)[-1])
    if month is not None:
        state = state.filter(pl.col("month") == month_index(month))
    history = _in_elo(state, scenario)
    labels = month_labels(history["month"].to_numpy())
    return conform(history.with_columns(pl.col("deviation").fill_nan(None), month=labels), WhrHistory)


def list_as_it_stands(store: ObjectStore, scenario: Scenario, month: str, as_of: str | None = None) -> pl.DataFrame:
    """The list of `month` as it stands after `as_of` (default: the last stored month): every player who played up to
    `month`, at their last month up to it as the history now estimates it (WholeHistory.list_at, read from the store):
    player_id, rating, deviation (widened by the months since), last_month (YYYY-MM), games up to `month`.
    """
    state = read_state(store, scenario, as_of or stored_months(store, scenario)[-1])
    nodes = _in_elo(state.filter(pl.col("month") <= month_index(month)), scenario)
    nodes = nodes.with_columns(pl.col("month").cast(pl.Int64), pl.col("games").cast(pl.Int64))
    listed = list_of_last(last_rows(nodes), month_index(month), params_of(scenario).w2)
    labels = month_labels(listed["last_month"].to_numpy())
    return listed.with_columns(pl.col("deviation").fill_nan(None), last_month=labels)


def added_games(store: ObjectStore, scenario: Scenario, month: str) -> pl.DataFrame:
    """The games a whole-history chain added in `month`, in the order it added them: its per-game table's rated games
    (by game_id), with their colours from the validated games; only the columns the history takes are read.
    """
    key = table_key([scenario.name, "rated_games"], month)
    if not store.exists(key):
        raise ValueError(f"{scenario.name}/rated_games of {month} is missing")
    rated = store.read_parquet(key, columns=ADDED_COLUMNS).filter(pl.col("weight") > 0).drop("weight")
    games_key = table_key(["games"], month)
    colours = store.read_parquet(games_key, columns=["game_id", "colour_known"]) if store.exists(games_key) else None
    if colours is None:
        return rated.drop("game_id").with_columns(colour_known=pl.lit(True))
    colours = colours.with_columns(pl.col("game_id").cast(pl.UInt64))
    joined = rated.join(colours, on="game_id", how="left", maintain_order="left")
    return joined.select("white_id", "black_id", "white_score", pl.col("colour_known").fill_null(True))


def restored(
    scenario: Scenario,
    seed_list: pl.DataFrame | None,
    states: Iterable[pl.DataFrame],
    past: Iterable[tuple[str, pl.DataFrame]],
) -> WholeHistory:
    """The history as a month left it: its structure rebuilt from the games each past month added (`past`: month ->
    the rated games, in order; no sweep), then the estimates of `states` laid over it in order (state_frames of that
    month: its last checkpoint, then each later month, read one at a time, so the history's own arrays are all the
    restart holds besides one stored month). ValueError when the games do not make the stored player-months (a
    month's games changed since it was stored).
    """
    history = new_history(scenario, seed_list)
    for month, games in past:
        history.add_month(month_index(month), games, sweeps=0)
    n = history.n_nodes
    low = history.months[0] if history.months else 0
    span = history.months[-1] - low + 1 if history.months else 1
    # A player-month's node, found by a key in the stored tables' order (player_id, then month), so that the
    # searches of a stored month, itself in that order, walk the keys forwards.
    ids = history.players["player_id"].to_numpy()
    by_id = np.argsort(ids, kind="stable")
    sorted_ids = ids[by_id]
    rank = np.empty(ids.shape[0], dtype=np.int64)
    rank[by_id] = np.arange(ids.shape[0])
    keys = rank[history.node_player[:n]] * span + (history.node_month[:n] - low)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    covered = np.zeros(n, dtype=np.bool_)
    for frame in states:
        player_ids, months = frame["player_id"].to_numpy(), frame["month"].to_numpy().astype(np.int64)
        at = np.minimum(np.searchsorted(sorted_ids, player_ids), max(ids.shape[0] - 1, 0))
        key = at * span + (months - low)
        position = np.minimum(np.searchsorted(keys, key), max(n - 1, 0))
        in_span = (months >= low) & (months < low + span)  # a month outside would read as another player's
        found = (sorted_ids[at] == player_ids) & in_span & (keys[position] == key) if n else key < 0
        if not found.all():
            raise ValueError(f"{int((~found).sum())} stored player-months are not made by the stored games")
        node = order[position]
        if not np.array_equal(history.node_games[node], frame["games"].to_numpy()):
            raise ValueError("the stored games give some player-months other game counts than were stored")
        history.r[node] = frame["r"].to_numpy()
        history.var[node] = frame["variance"].to_numpy()
        covered[node] = True
    if not covered.all():
        raise ValueError(f"{int((~covered).sum())} player-months the stored games make are not stored")
    return history


def state_frames(store: ObjectStore, scenario: Scenario, month: str, chain_start: str) -> Iterator[pl.DataFrame]:
    """The stored WhrState months that make the history after `month` (state_months), month as its index, each read
    when asked for.
    """
    return (_state_month(store, scenario, held) for held in state_months(scenario, month, chain_start))
