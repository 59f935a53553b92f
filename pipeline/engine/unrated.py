"""The unrated players' period (§8.2, §7.1.4): their results pooled, and a first rating once a pool is large enough.

The results are pooled over the pool window. NumPy on the players' positions; the rules (the pool window, the minimum
games, the zero first event, the first rating and the floor) are those of pipeline/rules/regulations.py.

The players are those unrated on the list in force who played this period or hold a pool (whose
entries may expire), numbered 0..U-1 in list order (`owner` of a side or a pool entry).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.engine.arrays import VIEW, Listed, PoolEntries, Strings, inline_view, number_arrow, ranges
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import (
    _below_floor_numpy,
    _disregarded_first_event_numpy,
    _enough_games_for_first_rating_numpy,
    _in_pool_window_numpy,
    _initial_rating_numpy,
    _played_before_numpy,
)


@dataclass
class UnratedSides:
    """The period's counting sides of unrated players (against a rated opponent, in a rated time control)."""

    owner: np.ndarray  # the player, 0..U-1
    points_x2: np.ndarray  # half points, int64
    opponent_rating: np.ndarray  # int64
    game: np.ndarray  # the side's row in `games`
    games: pl.DataFrame  # the month's games (event_id and event_start are read for players without an earlier game)


@dataclass
class UnratedPeriod:
    """What the period gives the unrated players, one value each (0..U-1)."""

    played: np.ndarray  # a counting game this period (the month becomes their last_played)
    published: np.ndarray  # a first rating this period
    rating: np.ndarray  # the first rating where published
    games: np.ndarray  # int32
    games_total: np.ndarray  # int32, where published (else the list's)
    pending_games: np.ndarray  # int32
    pool_sizes: np.ndarray  # entries of each player's pool on the new list (0 once published)
    pool_entries: PoolEntries  # the new pools' entries, player after player
    pending_since: Strings  # one per player (missing without a pool)


def _results(sides: UnratedSides, debuted: np.ndarray, rules: RuleSet) -> tuple[np.ndarray, ...]:
    """(played, games, half points, sum of opponents' ratings) of each player this period, after §8.2.1."""
    players = len(debuted)
    owner = sides.owner
    games = np.bincount(owner, minlength=players)
    played = games > 0
    points_x2 = np.bincount(owner, weights=sides.points_x2, minlength=players).astype(np.int64)
    opponent_sum = np.bincount(owner, weights=sides.opponent_rating, minlength=players).astype(np.int64)
    # §8.2.1 (regulations.disregarded_first_event), for the players without an earlier game: their sides only.
    fresh = np.flatnonzero(~debuted[owner])
    if not len(fresh):
        return played, games, points_x2, opponent_sum
    fresh_games = sides.games.select("event_id", "event_start").gather(sides.game[fresh])
    who = owner[fresh]
    gone = _disregarded_first_event_numpy(
        rules, who, fresh_games["event_id"], fresh_games["event_start"], sides.points_x2[fresh]
    )
    if not gone.any():
        return played, games, points_x2, opponent_sum
    # The disregarded games leave the period whole: their games, their points and their opponents' ratings.
    disregarded, their_owners = fresh[gone], who[gone]

    def per_player(values: np.ndarray) -> np.ndarray:
        return np.bincount(their_owners, weights=values, minlength=players).astype(np.int64)

    games = games - np.bincount(their_owners, minlength=players)
    points_x2 = points_x2 - per_player(sides.points_x2[disregarded])
    opponent_sum = opponent_sum - per_player(sides.opponent_rating[disregarded])
    return played, games, points_x2, opponent_sum


def unrated_period(
    listed: Listed, positions: np.ndarray, sides: UnratedSides, rules: RuleSet, month: str
) -> UnratedPeriod:
    """The period of the unrated players at list rows `positions` (increasing), from their counting `sides`."""
    players = len(positions)
    debuted = _played_before_numpy(listed.last_played.valid[positions], listed.pending_games[positions])
    played, games, points_x2, opponent_sum = _results(sides, debuted, rules)

    # Pools: the entries of the pool window (§7.1.4), then this period's (entries without games go too).
    entry, entry_owner = ranges(listed.pool_start[positions], listed.pool_end[positions])
    stored = listed.entries
    entry_months = Strings(stored.month.views[entry], stored.month.valid[entry], stored.month.buffers)
    recent = _in_pool_window_numpy(rules, month, entry_months)
    kept = recent & stored.games_valid[entry] & (stored.games[entry] > 0)
    entry, entry_owner = entry[kept], entry_owner[kept]
    this_kept = (games > 0) & _in_pool_window_numpy(rules, month, Strings(inline_view(month), np.ones(1, bool), []))[0]

    def total(values: np.ndarray, this: np.ndarray) -> np.ndarray:
        earlier = np.bincount(entry_owner, weights=values[entry], minlength=players).astype(np.int64)
        return earlier + this * this_kept

    n_pool = total(stored.games, games)
    first_rating = _initial_rating_numpy(
        rules, n_pool, total(stored.points_x2, points_x2), total(stored.opponent_rating_sum, opponent_sum)
    )
    published = _enough_games_for_first_rating_numpy(n_pool, rules) & ~_below_floor_numpy(first_rating, rules)

    # The new pools, of the players still unrated: their kept entries in stored order, then this period's.
    keep = ~published
    held = keep[entry_owner]
    entry, entry_owner = entry[held], entry_owner[held]
    this_kept &= keep
    earlier_count = np.bincount(entry_owner, minlength=players)
    sizes = earlier_count + this_kept
    starts = np.cumsum(sizes) - sizes
    within = np.arange(len(entry)) - (np.cumsum(earlier_count) - earlier_count)[entry_owner]
    at = starts[entry_owner] + within
    this_at = starts[this_kept] + earlier_count[this_kept]
    total_entries = int(sizes.sum())

    def laid_out(values: np.ndarray, valid: np.ndarray, this: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros(total_entries, dtype=values.dtype)
        out_valid = np.ones(total_entries, dtype=bool)
        out[at], out_valid[at] = values[entry], valid[entry]
        out[this_at] = this[this_kept]
        return out, out_valid

    views = np.zeros(total_entries, dtype=VIEW)
    views[at] = stored.month.views[entry]
    views[this_at] = inline_view(month)
    months = Strings(views, np.ones(total_entries, dtype=bool), stored.month.buffers)
    new_games = laid_out(stored.games, stored.games_valid, games.astype(np.int32))
    new_points = laid_out(stored.points_x2, stored.points_x2_valid, points_x2.astype(np.int32))
    new_sums = laid_out(stored.opponent_rating_sum, stored.opponent_rating_sum_valid, opponent_sum)
    entries = PoolEntries(months, *new_games, *new_points, *new_sums)

    return UnratedPeriod(
        played=played,
        published=published,
        rating=first_rating * published,
        games=(games + published * (n_pool - games)).astype(np.int32),
        games_total=n_pool.astype(np.int32),
        pending_games=(n_pool * keep).astype(np.int32),
        pool_sizes=sizes,
        pool_entries=entries,
        pending_since=_pool_since(months, sizes, starts),
    )


def _pool_since(months: Strings, sizes: np.ndarray, starts: np.ndarray) -> Strings:
    """The first month of each pool: its first entry when each pool is in calendar order (as the engine writes
    them), else its earliest month.
    """
    players = len(sizes)
    holders = np.flatnonzero(sizes > 0)
    since = Strings(np.zeros(players, dtype=VIEW), np.zeros(players, dtype=bool), months.buffers)
    if not len(holders):
        return since
    owner = np.repeat(np.arange(players), sizes)
    same_player = owner[1:] == owner[:-1]
    if bool((same_player & months.below_previous()).any()):
        month = months.series("month")
        earliest = pl.DataFrame({"owner": owner, "month": month}).group_by("owner").agg(pl.col("month").min())
        ordered = earliest.sort("owner")
        return _scattered_strings(players, ordered["owner"].to_numpy(), ordered["month"])
    since.views[holders] = months.views[starts[holders]]
    since.valid[holders] = True
    return since


def _scattered_strings(length: int, positions: np.ndarray, values: pl.Series) -> Strings:
    source = Strings.of(values)
    out = Strings(np.zeros(length, dtype=VIEW), np.zeros(length, dtype=bool), source.buffers)
    out.views[positions] = source.views
    out.valid[positions] = source.valid
    return out


def pending_column(size: int, positions: np.ndarray, sizes: np.ndarray, entries: PoolEntries) -> pl.Series:
    """The list's `pending` column: the pools of the players at `positions` (`sizes` entries each), empty elsewhere."""
    # offsets[i] = entries of the pools at rows before i: the running total of `sizes`, repeated over the rows
    # from one pool holder to the next (a cumulative sum over every row costs ten times as much).
    totals = np.concatenate([[0], np.cumsum(sizes)])
    offsets = np.repeat(totals, np.diff(np.concatenate([[-1], positions, [size]])))
    struct = pa.StructArray.from_arrays(
        [
            entries.month.arrow(),
            number_arrow(entries.games, entries.games_valid),
            number_arrow(entries.points_x2, entries.points_x2_valid),
            number_arrow(entries.opponent_rating_sum, entries.opponent_rating_sum_valid),
        ],
        names=["month", "games", "points_x2", "opponent_rating_sum"],
    )
    return pl.Series("pending", pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), struct))
