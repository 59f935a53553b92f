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
    return np.where(valid, values, np.array(fill, values.dtype)), valid


def _rows_on(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each of `wanted` (in order) among `ids` (in order), -1 where absent."""
    if not len(ids):
        return np.full(len(wanted), -1)
    found = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    return np.where(ids[found] == wanted, found, -1)


class _Period:
    """The three lists aligned on the published list's rows, and the period's counting sides."""

    def __init__(
        self, previous: pl.DataFrame, after_games: pl.DataFrame, current: pl.DataFrame, period_games: pl.DataFrame
    ):
        ids, before_ids = current["player_id"].to_numpy(), previous["player_id"].to_numpy()
        # Each row of the list before on the published list (lists only grow; -1 where a player is absent): both in id
        # order, so searchsorted's probes stay in cache.
        self.at = _rows_on(ids, before_ids)
        self._held = self.at >= 0
        self._every_held = bool(self._held.all())  # lists only grow: every player of the list before is on it
        if not after_games["player_id"].equals(current["player_id"]):
            # Events add nobody: a list that lost or gained players after its games is shown by the checks (the
            # ledger's unexplained points, list_continuity), not refused here.
            rows = _rows_on(after_games["player_id"].to_numpy(), ids)
            after_games = after_games[np.where(rows >= 0, rows, 0)].with_columns(
                *(pl.when(pl.Series(rows >= 0)).then(pl.col(c)) for c in ("rating", "change")),
                *(pl.col(c) & pl.Series(rows >= 0) for c in ("newly_rated", "delisted")),
            )
        self.previous, self.current, self.after_games = previous, current, after_games
        self._before: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # Each side of each game: its player's row, its opponent's, K x W x (S - E) where it counts (one lookup of
        # both colours: the engine's positions builds its hash table of the list once a call).
        count = period_games.height
        both = np.concatenate([period_games["white_id"].to_numpy(), period_games["black_id"].to_numpy()])
        rows = positions(ids, both)
        white, black = rows[:count], rows[count:]
        expected, known = (
            np.concatenate(pair)
            for pair in zip(
                _column(period_games, "white_expected"), _column(period_games, "black_expected"), strict=True
            )
        )
        score = period_games["white_score"].to_numpy()
        weight = np.tile(period_games["weight"].to_numpy(), 2)
        # A side's player missing from the list (a list that lost a player: the checks show it) has no K to count.
        counting = known & (weight > 0) & (np.concatenate([white, black]) >= 0)
        self.player = np.concatenate([white, black])[counting]
        self.opponent = np.concatenate([black, white])[counting]
        # The K each side was rated with (an event started before the period: its start's list's); a per-game table
        # stored before it had the columns gives none: the player's K of the period on the list.
        side_k = _column(current, "k_used")[0].astype(np.float64)[self.player]
        if "white_k_used" in period_games.columns:
            given, given_known = (
                np.concatenate(pair)[counting]
                for pair in zip(
                    _column(period_games, "white_k_used"), _column(period_games, "black_k_used"), strict=True
                )
            )
            side_k = np.where(given_known, given.astype(np.float64), side_k)
        self.points = side_k * weight[counting] * (np.concatenate([score, 1.0 - score]) - expected)[counting]

    def before(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A column of the list before, on the published list's rows (values, known; unknown where not listed)."""
        if name not in self._before:
            values, known = _column(self.previous, name)
            out, out_known = np.zeros(self.current.height, values.dtype), np.zeros(self.current.height, bool)
            if self._every_held:
                out[self.at], out_known[self.at] = values, known
            else:
                rows = self.at[self._held]
                out[rows], out_known[rows] = values[self._held], known[self._held]
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
    r1, rated1 = _column(current, "rating")
    inactive1 = current["inactive"].to_numpy()
    correction = _column(current, "correction")[0] if "correction" in current.columns else np.zeros(len(r1), int)
    r_games, rated_games = _column(after_games, "rating")
    g = _column(after_games, "change")[0].astype(np.int64)
    newly_rated = after_games["newly_rated"].to_numpy()
    # The published list's flag, not the list's after the games: a correction delists a player whose corrected rating
    # is below the floor though the games did not (corrections.with_corrections), and relists one they delisted.
    delisted_now = current["delisted"].to_numpy()
    r0, rated0 = period.before("rating")
    inactive0 = period.before("inactive")[0].astype(bool)
    r0, r1, r_games, correction = (a.astype(np.int64) for a in (r0, r1, r_games, correction))

    in0, in1 = rated0 & ~inactive0, rated1 & ~inactive1
    stay, enter, leave = in0 & in1, ~in0 & in1, in0 & ~in1
    newcomer = enter & newly_rated
    returning = enter & ~newly_rated & rated0
    seeded = enter & ~newly_rated & ~rated0
    delisted = leave & delisted_now
    inactive = leave & ~delisted_now & rated1
    uplift = np.where(rated1 & rated_games, r1 - correction - r_games, 0) if one_time_event else np.zeros(len(r1), int)
    on_list = stay | enter
    # Lists only grow: a pool player of the list before absent from this one would leave with their rating.
    r_prev, rated_prev = _column(previous, "rating")
    pool_prev = rated_prev & ~previous["inactive"].to_numpy()
    absent = period.at < 0

    def total(values: np.ndarray, rows: np.ndarray) -> int:
        # Summed in place over the rows (whole numbers: the same total), not over a copy of them.
        return int(np.sum(values, where=rows, dtype=np.int64))

    channels = {
        "players_before": int(np.count_nonzero(pool_prev)),
        "players_after": int(np.count_nonzero(in1)),
        "pool_before": total(r_prev, pool_prev),
        "pool_after": total(r1, in1),
        "games_change": total(g, stay | returning | seeded | delisted),
        # A correction that takes a player below the floor is counted, and leaves with them (delisted).
        "corrections": total(correction, on_list | delisted),
        "one_time_events": total(uplift, on_list),
        "newcomers": total(r_games, newcomer),
        "seeded": total(r1 - g - correction - uplift, seeded),
        "returning": total(r0, returning),
        "became_inactive": total(r0, inactive),
        "delisted": total(r0 + g + correction, delisted),
        "left_the_list": total(r_prev, absent & pool_prev),
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
    """player_kind on NumPy arrays, as an index of KINDS (a missing value is a False mask beside its array)."""
    junior = np.where(birth_year_known & (year - birth_year < JUNIOR_BELOW_AGE), 2, 3)
    newcomer = _still_a_newcomer_numpy(policy, games_total, games_total_known)
    return np.where(~rated, 0, np.where(newcomer, 1, junior))


def _groups(period: _Period, rows: np.ndarray, year: int, policy: KPolicy) -> tuple[np.ndarray, np.ndarray]:
    """The kind (an index of KINDS: player_kind) and the 200-point band's lowest rating (-1: unrated) of the players at
    `rows` of the published list, as they stood on the list before the period.
    """
    listed, rows = rows >= 0, np.maximum(rows, 0)  # an opponent missing from the list counts as unrated
    rating, rated = (values[rows] for values in period.before("rating"))
    games, games_known = (values[rows] for values in period.before("games_total"))
    birth, birth_known = (values[rows] for values in period.before("birth_year"))
    rated &= listed
    kind = _player_kind_numpy(policy, year, rated, games, games_known, birth, birth_known)
    band = np.where(rated, (rating // BAND_WIDTH) * BAND_WIDTH, -1)
    return kind, band


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
    year = int(month[:4])
    own, opponent = _groups(period, period.player, year, policy), _groups(period, period.opponent, year, policy)
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
