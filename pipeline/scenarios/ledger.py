"""The pool's points ledger of one list: where the change of the pool's total rating points came from.

Channel by channel, and the points each group of players won from each other group in the period's games.

Sonas's 2023 account of FIDE's deflation is an account of rating points (../shared/reference/systems-and-calendar.md,
1.10): newcomers entering too low pull points from established players. The ledger makes that account for a
scenario's every list. The pool is the list's active part: the players with a rating, not flagged inactive. Each
player's part in the pool's change is read from three lists: the list in force before the period, the list after the
period's games (before the month's one-time events) and the list as published (after the events and the corrections
of earlier lists' games, pipeline.scenarios.recalculation):

- a player in the pool before and after: the rounded change of the period's games, the correction, the event's
  uplift (the compression of March 2024);
- entering: a newcomer's first rating; an inactive player who played again brings the rating of the list before;
  a player rated without a first rating (seeded from the standard list: rapid and blitz) brings the seed;
- leaving: flagged inactive (the rating of the list before goes), below the floor after the games or after a
  correction (delisted as the published list flags it: the rating after both goes), absent from the list (never,
  lists only grow: counted to prove it).

`unexplained` is what these leave of the pool's change: 0 when every point is accounted for, which the blocking
`ledger_balance` check asserts.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.engine.arrays import bools, numbers
from pipeline.engine.period import positions
from pipeline.rules.model import KPolicy
from pipeline.rules.regulations import _still_a_newcomer_numpy, still_a_newcomer
from schemas.conformance import ascends_strictly
from schemas.points_ledger import PointsFlow, PointsLedger
from schemas.util import conform

#: A junior is under 20 in the list's year (the flow's groups; FIDE's junior K stops at 18, its junior lists at 20).
JUNIOR_BELOW_AGE = 20
BAND_WIDTH = 200
#: The channels of the pool's change and the sign each adds with: pool_after - pool_before = sum(sign x channel).
CHANNELS = {
    "games_change": 1,
    "corrections": 1,
    "one_time_events": 1,
    "newcomers": 1,
    "seeded": 1,
    "returning": 1,
    "became_inactive": -1,
    "delisted": -1,
    "left_the_list": -1,
}


def _column(frame: pl.DataFrame, name: str, fill: float = 0) -> tuple[np.ndarray, np.ndarray]:
    """A column as (values with nulls as `fill`, known), NumPy."""
    # Through the Arrow buffers: a column without nulls is read without a copy, and a validity bitmap unpacked once.
    values, valid = bools(frame[name]) if frame[name].dtype == pl.Boolean else numbers(frame[name])
    if valid is None:
        return values, np.ones(len(values), bool)
    if fill == 0 and values.dtype.kind in "bi":
        # A whole number or a flag times its validity: the same array, at a tenth of np.where's cost (2 ms a
        # 700,000-player column). Not for floats: whatever lies under a missing one (a NaN) would stay.
        return values * valid if values.dtype.kind == "i" else values & valid, valid
    return np.where(valid, values, np.array(fill, values.dtype)), valid


def _rows_on(ids: pl.Series, wanted: pl.Series) -> np.ndarray:
    """The row of each of `wanted` among `ids` (in order: strictly ascending), -1 where absent."""
    if not len(ids):
        return np.full(len(wanted), -1)
    if ascends_strictly(ids) and ascends_strictly(wanted):
        # Both in id order: Polars merges them (7 ms for two 700,000-player lists; searchsorted's 720,000 binary
        # searches were 20).
        listed = ids.set_sorted().to_frame("player_id").with_row_index("row")
        wanted_rows = wanted.set_sorted().to_frame("player_id")
        return (
            wanted_rows.join(listed, on="player_id", how="left", maintain_order="left")["row"]
            .cast(pl.Int64)
            .fill_null(-1)
            .to_numpy()
        )
    listed_ids, wanted_ids = ids.to_numpy(), wanted.to_numpy()
    found = np.minimum(np.searchsorted(listed_ids, wanted_ids), len(listed_ids) - 1)
    on = listed_ids[found] == wanted_ids
    return found if on.all() else np.where(on, found, -1)


class _Period:
    """The three lists aligned on the published list's rows, and the period's counting sides."""

    def __init__(
        self, previous: pl.DataFrame, after_games: pl.DataFrame, current: pl.DataFrame, period_games: pl.DataFrame
    ):
        ids = current["player_id"].to_numpy()
        # Each row of the list before on the published list (lists only grow; -1 where a player is absent).
        self.at = _rows_on(current["player_id"], previous["player_id"])
        self.held = self.at >= 0
        self.every_held = bool(self.held.all())  # lists only grow: every player of the list before is on it
        if not after_games["player_id"].equals(current["player_id"]):
            # Events add nobody: a list that lost or gained players after its games is shown by the checks (the
            # ledger's unexplained points, list_continuity), not refused here.
            rows = _rows_on(after_games["player_id"], current["player_id"])
            after_games = after_games[np.where(rows >= 0, rows, 0)].with_columns(
                *(pl.when(pl.Series(rows >= 0)).then(pl.col(c)) for c in ("rating", "change")),
                *(pl.col(c) & pl.Series(rows >= 0) for c in ("newly_rated", "delisted")),
            )
        self.previous, self.current, self.after_games = previous, current, after_games
        self._before: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._columns: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        # Each side of each game: its player's row, its opponent's, K x W x (S - E) where it counts (one lookup of
        # both colours: the engine's positions builds its hash table of the list once a call).
        count = period_games.height
        rows = positions(
            ids, np.concatenate([period_games["white_id"].to_numpy(), period_games["black_id"].to_numpy()])
        )
        expected, known = (
            np.concatenate(pair)
            for pair in zip(
                _column(period_games, "white_expected"), _column(period_games, "black_expected"), strict=True
            )
        )
        weight = period_games["weight"].to_numpy()
        # A side's player missing from the list (a list that lost a player: the checks show it) has no K to count.
        # The counting sides as positions, white's then black's: gathers through them, not a boolean mask each (a
        # dense mask's compress was 2-3 ms a column at 400,000 sides).
        counting = np.flatnonzero(known & (np.tile(weight, 2) > 0) & (rows >= 0))
        whites = int(np.searchsorted(counting, count))
        game = counting.copy()
        game[whites:] -= count
        white_games, black_games = game[:whites], game[whites:]
        self.player = rows[counting]
        self.opponent = np.concatenate([rows[count + white_games], rows[black_games]])
        # The K each side was rated with (an event started before the period: its start's list's); a per-game table
        # stored before it had the columns gives none: the player's K of the period on the list.
        side_k: np.ndarray | None = None
        if "white_k_used" in period_games.columns:
            given, given_known = (
                np.concatenate(pair)[counting]
                for pair in zip(
                    _column(period_games, "white_k_used"), _column(period_games, "black_k_used"), strict=True
                )
            )
            side_k = given.astype(np.float64)
            if not given_known.all():
                missing = ~given_known
                side_k[missing] = _column(current, "k_used")[0][self.player[missing]]
        if side_k is None:
            side_k = _column(current, "k_used")[0].astype(np.float64)[self.player]
        score = period_games["white_score"].to_numpy()
        side_score = np.concatenate([score[white_games], 1.0 - score[black_games]])
        self.points = side_k * weight[game] * (side_score - expected[counting])

    def column(self, frame: pl.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
        """_column of one of the period's lists, read once (the ledger and the flows read the same columns, and the list
        after the games is often the published list itself).
        """
        key = (id(frame), name)
        if key not in self._columns:
            self._columns[key] = _column(frame, name)
        return self._columns[key]

    def before(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A column of the list before, on the published list's rows (values, known; unknown where not listed)."""
        if name not in self._before:
            values, known = self.column(self.previous, name)
            out, out_known = np.zeros(self.current.height, values.dtype), np.zeros(self.current.height, bool)
            if self.every_held:
                out[self.at], out_known[self.at] = values, known
            else:
                rows = self.at[self.held]
                out[rows], out_known[rows] = values[self.held], known[self.held]
            self._before[name] = out, out_known
        return self._before[name]


def points_ledger(
    previous: pl.DataFrame,
    after_games: pl.DataFrame,
    current: pl.DataFrame,
    period_games: pl.DataFrame,
    month: str,
    policy: KPolicy,
    one_time_event: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The PointsLedger row and the PointsFlow rows of the list of `month` (module docstring): `previous` is the list
    in force before the period, `after_games` the list after its games (before the month's one-time events),
    `current` the list published, `period_games` the per-game table of every game the list rates (a period of
    several months: all of them). The lists are in player_id order, `after_games` and `current` of the same players.
    `policy`: the K policy the period is rated under (Scenario.k_policy), whose newcomers the flows group.
    `one_time_event`: the month has one (Scenario.events_after); in any other month the published list differs from
    the list after the games by the corrections alone, and any other difference is unexplained.

    NumPy on the published list's rows, the others aligned by position (a join of three 700,000-player lists cost
    half a CPU-second a month).
    """
    period = _Period(previous, after_games, current, period_games)
    return _ledger(period, month, one_time_event), _flows(period, month, policy)


def _ledger(period: _Period, month: str, one_time_event: bool) -> pl.DataFrame:
    previous, current, after_games = period.previous, period.current, period.after_games
    r1, rated1 = period.column(current, "rating")
    inactive1 = period.column(current, "inactive")[0]
    correction = period.column(current, "correction")[0] if "correction" in current.columns else np.zeros(len(r1), int)
    r_games, rated_games = period.column(after_games, "rating")
    g = period.column(after_games, "change")[0]
    newly_rated = period.column(after_games, "newly_rated")[0]
    # The published list's flag, not the list's after the games: a correction delists a player whose corrected rating
    # is below the floor though the games did not (corrections.with_corrections), and relists one they delisted.
    delisted_now = period.column(current, "delisted")[0]
    r0, rated0 = period.before("rating")
    inactive0 = period.before("inactive")[0]

    in0, in1 = rated0 & ~inactive0, rated1 & ~inactive1
    stay, enter, leave = in0 & in1, ~in0 & in1, in0 & ~in1
    newcomer = enter & newly_rated
    returning = enter & ~newly_rated & rated0
    seeded = enter & ~newly_rated & ~rated0
    delisted = leave & delisted_now
    inactive = leave & ~delisted_now & rated1
    # The event's uplift, where there is one (ratings are far from int32's limits).
    events = (np.where(rated1 & rated_games, r1 - correction - r_games, 0),) if one_time_event else ()
    on_list = stay | enter
    # Lists only grow: a pool player of the list before absent from this one would leave with their rating.
    r_prev, rated_prev = period.column(previous, "rating")
    pool_prev = rated_prev & ~period.column(previous, "inactive")[0]
    absent = period.at < 0

    def total(rows: np.ndarray, *columns: np.ndarray) -> int:
        """The sum of `columns` over `rows` (a mask)."""
        # Whole numbers, added up in int64: the same total in any order and however a sum of columns is split, so
        # over the rows' positions, column by column (a masked sum, np.sum's where=, or a dense mask's compress over
        # a 700,000-player list cost 4-6 ms a channel, the positions about 1; no column of every player made first).
        where = np.flatnonzero(rows)
        return sum(int(column[where].sum(dtype=np.int64)) for column in columns)

    channels = {
        "players_before": int(np.count_nonzero(pool_prev)),
        "players_after": int(np.count_nonzero(in1)),
        "pool_before": total(pool_prev, r_prev),
        "pool_after": total(in1, r1),
        "games_change": total(stay | returning | seeded | delisted, g),
        # A correction that takes a player below the floor is counted, and leaves with them (delisted).
        "corrections": total(on_list | delisted, correction),
        "one_time_events": total(on_list, *events),
        "newcomers": total(newcomer, r_games),
        # The seed: the rating less what the games, the correction and the event added.
        "seeded": total(seeded, r1) - total(seeded, g, correction, *events),
        "returning": total(returning, r0),
        "became_inactive": total(inactive, r0),
        "delisted": total(delisted, r0, g, correction),
        "left_the_list": total(absent & pool_prev, r_prev),
    }
    pool_change = channels["pool_after"] - channels["pool_before"]
    accounted = sum(sign * channels[name] for name, sign in CHANNELS.items())
    not_zero_sum = float(period.points.sum())
    row = {
        "month": month,
        **channels,
        "pool_change": pool_change,
        "games_points_moved": float(np.clip(period.points, 0.0, None).sum()),
        "games_not_zero_sum": not_zero_sum,
        "games_rounding": channels["games_change"] - not_zero_sum,
        "unexplained": pool_change - accounted,
    }
    return conform(pl.DataFrame([row]), PointsLedger)


KINDS = ("unrated", "newcomer", "junior", "adult")
#: The flows' two groupings of the sides: each adds up to the games' points.
GROUPINGS = ("kind", "band")


def player_kind(policy: KPolicy, year: int) -> pl.Expr:
    """The group (KINDS) of a list's player from its rating, games_total and birth_year: unrated; a newcomer while the
    K policy counts them a new player (regulations.still_a_newcomer, §8.3.3); a junior, under JUNIOR_BELOW_AGE in
    `year`; else an adult.
    """
    return (
        pl.when(pl.col("rating").is_null())
        .then(pl.lit(KINDS[0]))
        .when(still_a_newcomer(policy))
        .then(pl.lit(KINDS[1]))
        .when(pl.col("birth_year").is_not_null() & (year - pl.col("birth_year") < JUNIOR_BELOW_AGE))
        .then(pl.lit(KINDS[2]))
        .otherwise(pl.lit(KINDS[3]))
    )


def _player_kind_numpy(
    policy: KPolicy,
    year: int,
    rated: np.ndarray,
    games_total: np.ndarray,
    games_total_known: np.ndarray,
    birth_year: np.ndarray,
    birth_year_known: np.ndarray,
) -> np.ndarray:
    """player_kind on NumPy arrays, as an index of KINDS (int8; a missing value is a False mask beside its array)."""
    junior = (birth_year_known & (year - birth_year < JUNIOR_BELOW_AGE)).view(np.int8)
    newcomer = _still_a_newcomer_numpy(policy, games_total, games_total_known).view(np.int8)
    # In int8 arithmetic on the flags (0 or 1): 3 for an adult, 2 for a junior, then 1 for a newcomer, 0 unrated. Nested
    # np.where cost 12 ms for a 700,000-player list, this 1.
    kind = np.int8(3) - junior
    kind -= newcomer * (kind - np.int8(1))
    kind *= rated.view(np.int8)
    return kind


def _groups(period: _Period, year: int, policy: KPolicy) -> tuple[np.ndarray, np.ndarray]:
    """The kind (an index of KINDS: player_kind) and the 200-point band's lowest rating (-1: unrated) of each player
    of the published list as they stood on the list before the period, and after them one more row, unrated: that of
    a row -1 (a player missing from the list).
    """
    # Each player of the list before once, then placed on the published list's rows: the sides then gather two codes
    # each, not the three columns of each side's player (the list's players are fewer than the period's sides).
    rating, rated = period.column(period.previous, "rating")
    games, games_known = period.column(period.previous, "games_total")
    birth, birth_known = period.column(period.previous, "birth_year")
    kind = _player_kind_numpy(policy, year, rated, games, games_known, birth, birth_known)
    # The band's lowest rating where rated, else -1 (arithmetic on the flag: np.where is 2 ms a 700,000-player list).
    band = ((rating // BAND_WIDTH) * BAND_WIDTH + 1) * rated - 1
    # The codes as the flows group them: kinds int64, bands the list's rating type.
    kinds, bands = np.zeros(period.current.height + 1, np.int64), np.full(period.current.height + 1, -1, band.dtype)
    at = period.at if period.every_held else period.at[period.held]
    kinds[at], bands[at] = (kind, band) if period.every_held else (kind[period.held], band[period.held])
    return kinds, bands


def _labels(codes: pl.Expr, grouping: str) -> pl.Expr:
    if grouping == "kind":
        return codes.replace_strict(list(range(len(KINDS))), list(KINDS), return_dtype=pl.Utf8)
    return (
        pl.when(codes < 0)
        .then(pl.lit("unrated"))
        .otherwise(codes.cast(pl.Utf8) + pl.lit("-") + (codes + BAND_WIDTH - 1).cast(pl.Utf8))
    )


def _flows(period: _Period, month: str, policy: KPolicy) -> pl.DataFrame:
    """Each counting side's K x W x (S - E) from its player's group to the opponent's, by kind (player_kind, under the
    period's K `policy`) and by 200-point band, both as on the list before the period.
    """
    kinds, bands = _groups(period, int(month[:4]), policy)
    own, opponent = (kinds[period.player], bands[period.player]), (kinds[period.opponent], bands[period.opponent])
    parts = [
        pl.DataFrame({"group": own[index], "opponent_group": opponent[index], "points": period.points})
        .group_by("group", "opponent_group")
        .agg(sides=pl.len().cast(pl.Int64), points=pl.col("points").sum())
        .with_columns(
            _labels(pl.col("group"), grouping).alias("group"),
            _labels(pl.col("opponent_group"), grouping).alias("opponent_group"),
            grouping=pl.lit(grouping),
        )
        for index, grouping in enumerate(GROUPINGS)
    ]
    flows = pl.concat(parts).with_columns(month=pl.lit(month)).sort("grouping", "group", "opponent_group")
    return conform(flows.select("month", "grouping", "group", "opponent_group", "sides", "points"), PointsFlow)
