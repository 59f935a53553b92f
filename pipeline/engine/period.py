"""Rating engine for one period: the previous list plus the month's games give the new list.

NumPy on the players' positions, vectorised.

Every rule is a function of pipeline/rules/regulations.py, under its clause; the engine only composes them
over a period: per game dR = score - PD, summed over the period, times K (reduced so that K x n <=
the cap), rounded once, 0.5 away from zero; pools and first ratings for unrated players
(pipeline/engine/unrated.py). The list's columns are read into NumPy arrays once and the next list
is built from arrays (pipeline/engine/arrays.py); the rules run on arrays through their NumPy twins
in pipeline/rules/regulations.py, and through Polars where a rule needs players and events told apart
(the 2022 once-per-event 400-point rule, rounding per event) or floating-point formulas other than
table 8.1.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipeline.engine.arrays import (
    Listed,
    Strings,
    bool_series,
    inline_view,
    number_series,
    numbers,
)
from pipeline.engine.unrated import UnratedPeriod, UnratedSides, pending_column, unrated_period
from pipeline.months import first_day, parse_month
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import (
    _HUNDREDTH,
    _below_floor_numpy,
    _counting_game_numpy,
    _development_coefficient_numpy,
    _expected_score_numpy,
    _game_weight_numpy,
    _gap_not_rated_numpy,
    _inactive_numpy,
    _k_at_event_start_numpy,
    _k_from_previous_list_numpy,
    _k_times_games_cap_numpy,
    _rating_changes_numpy,
    _rating_difference_numpy,
    _reached_elite_numpy,
    events_matter,
    mark_elite_reached,
    once_per_event_cap,
    rating_difference,
    reached_elite,
    round_half_away,
    rounds_per_event,
    seeded_from_standard,
    year_of_list_k,
)
from schemas.rated_games import RatedGames
from schemas.rating_list import POOL_ENTRY, RatingList
from schemas.util import conform, polars_schema

LIST_SCHEMA = polars_schema(RatingList)
RATED_GAMES_SCHEMA = polars_schema(RatedGames)


class EngineInputError(ValueError):
    """The previous list or the games cannot be rated as given; the message says what is wrong."""


@dataclass(frozen=True)
class PeriodResult:
    """The new list and the per-game calculation it rests on; from a scenario's month (rate_scenario_month), also the
    list after the period's games before the month's one-time events, and the per-game table of every game the list
    rates (a period of several months: all of them; none in a month without a list).
    """

    rating_list: pl.DataFrame
    rated_games: pl.DataFrame
    after_games: pl.DataFrame | None = None
    period_games: pl.DataFrame | None = None


# -- inputs ------------------------------------------------------------------------------------


def normalize_list(frame: pl.DataFrame | None, month: str | None = None) -> pl.DataFrame:
    """A full RatingList frame from a partial one (a seed list, or rate-period's PREV file).

    Only player_id is required; a missing rating means unrated, a missing ever_2400 is False (what
    the list states: the rule set that rates the list adds the players whose rating has reached its
    elite_from, regulations.mark_elite_reached), a missing k is derived from the rule set when the period
    is rated, a missing games_total is unknown for a rated player (established: K is not the
    newcomer's) and 0 for an unrated one.
    """
    del month  # the list carries no month of its own; kept for call-site symmetry
    if frame is None:
        return pl.DataFrame(schema=LIST_SCHEMA)
    if "player_id" not in frame.columns:
        raise EngineInputError("the rating list has no player_id column")
    present = set(frame.columns)
    defaults: dict[str, pl.Expr] = {
        "change": pl.lit(None),
        "correction": pl.lit(None),
        "k": pl.lit(None),
        "k_used": pl.lit(None),
        "games": pl.lit(0),
        "games_total": pl.when(pl.col("rating").is_null()).then(pl.lit(0)).otherwise(pl.lit(None)),
        "inactive": pl.lit(False),
        "delisted": pl.lit(False),
        "newly_rated": pl.lit(False),
        "birth_year": pl.lit(None),
        "ever_2400": pl.lit(False),
        "last_played": pl.lit(None),
        "pending_games": pl.lit(0),
        "pending_since": pl.lit(None),
        "pending": pl.lit([], dtype=pl.List(POOL_ENTRY)),
    }
    out = frame.with_columns(pl.col("player_id").cast(pl.Int64, strict=False))
    rating = pl.col("rating").cast(pl.Int32, strict=False) if "rating" in present else pl.lit(None, dtype=pl.Int32)
    out = out.with_columns(rating.alias("rating"))
    out = out.with_columns([expr.alias(name) for name, expr in defaults.items() if name not in present])
    out = out.with_columns(
        pl.col("ever_2400").cast(pl.Boolean, strict=False).fill_null(False),
        # An empty games_total is unknown: established (null) for a rated player, 0 for an unrated one.
        pl.when(pl.col("rating").is_null())
        .then(pl.col("games_total").fill_null(0))
        .otherwise(pl.col("games_total"))
        .alias("games_total"),
        pl.col("games").cast(pl.Int32, strict=False).fill_null(0),
        pl.col("pending_games").cast(pl.Int32, strict=False).fill_null(0),
        *(
            pl.col(flag).cast(pl.Boolean, strict=False).fill_null(False)
            for flag in ("inactive", "delisted", "newly_rated")
        ),
    )
    if out["player_id"].null_count():
        raise EngineInputError(f"the rating list has {out['player_id'].null_count()} rows without a valid player_id")
    duplicated = out.filter(pl.col("player_id").is_duplicated())["player_id"].unique().sort()
    if len(duplicated):
        raise EngineInputError(f"the rating list has duplicate player_id values: {duplicated.head(5).to_list()}")
    return conform(out, RatingList).sort("player_id")


def normalize_games(games: pl.DataFrame, month: str) -> pl.DataFrame:
    """The columns the engine reads, with defaults for the optional ones."""
    required = {"white_id", "black_id", "white_score"}
    missing = required - set(games.columns)
    if missing:
        raise EngineInputError(f"games lack required columns: {sorted(missing)}")
    start = first_day(month)
    optional: dict[str, pl.Expr] = {
        "game_id": pl.int_range(pl.len(), dtype=pl.UInt64),
        "event_id": pl.lit("event"),
        "event_start": pl.lit(start, dtype=pl.Date),
        "time_control": pl.lit("classical"),
        "white_rating_used": pl.lit(None, dtype=pl.Int32),
        "black_rating_used": pl.lit(None, dtype=pl.Int32),
        "white_k_used": pl.lit(None, dtype=pl.Int16),
        "black_k_used": pl.lit(None, dtype=pl.Int16),
        "tc_base_seconds": pl.lit(None, dtype=pl.Int32),
        "tc_increment_seconds": pl.lit(None, dtype=pl.Int32),
    }
    out = games.with_columns([expr.alias(name) for name, expr in optional.items() if name not in games.columns])
    out = out.select(
        pl.col("game_id").cast(pl.UInt64),
        pl.col("event_id").cast(pl.Utf8).fill_null("event"),
        pl.col("event_start").cast(pl.Date).fill_null(start),
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        pl.col("white_score").cast(pl.Float64),
        pl.col("time_control").cast(pl.Utf8).fill_null("classical"),
        pl.col("white_rating_used").cast(pl.Int32),
        pl.col("black_rating_used").cast(pl.Int32),
        pl.col("white_k_used").cast(pl.Int16),
        pl.col("black_k_used").cast(pl.Int16),
        pl.col("tc_base_seconds").cast(pl.Int32),
        pl.col("tc_increment_seconds").cast(pl.Int32),
    )
    bad_scores = out.filter(~pl.col("white_score").is_in([0.0, 0.5, 1.0]) | pl.col("white_score").is_null()).height
    if bad_scores:
        raise EngineInputError(f"{bad_scores} games have a white_score other than 1, 0.5 or 0")
    if out["white_id"].null_count() or out["black_id"].null_count():
        raise EngineInputError("some games have no white_id or black_id")
    return out


# -- where the players are: positions on the list ---------------------------------------------------
# The list is kept in player_id order, so a player's row is a position; a month's work is gathers and
# scatters on the positions of the players in its games (and of the unrated players holding a pool),
# not joins of the games to the whole list and a sort of the whole list afterwards.

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)


def positions(ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row of each query id on the list (`ids` strictly increasing), -1 for ids not on it."""
    n = len(ids)
    if n == 0 or len(queries) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    low, span = int(ids[0]), int(ids[-1]) - int(ids[0]) + 1
    if span > 8 * n + 1024:
        return _hashed_positions(ids, queries)
    # Ids close together (a federation's block, a synthetic list): a direct table, one gather per query; no table
    # when the ids are consecutive (strictly increasing over a span of n: the row is the id's offset).
    offset = queries - low
    inside = (offset >= 0) & (offset < span)
    every = bool(inside.all())
    if span == n:
        return offset if every else np.where(inside, offset, -1)
    table = np.full(span, -1, dtype=np.int32 if n < 2**31 else np.int64)
    table[ids - low] = np.arange(n, dtype=table.dtype)
    found = table[offset if every else np.where(inside, offset, 0)].astype(np.int64)
    return found if every else np.where(inside, found, -1)


def _hash_slots(keys: np.ndarray, bits: int) -> np.ndarray:
    # Fibonacci hashing: FIDE ids come in federation blocks with regular gaps, which would pile up
    # in the low bits; the multiply spreads them (uint64 arithmetic wraps, as intended).
    return ((keys.astype(np.uint64) * _FIBONACCI) >> np.uint64(64 - bits)).astype(np.int64)


def _hashed_positions(ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """`positions` for ids spread far apart: an open-addressing hash table, filled and probed a round at a time.

    np.searchsorted costs a cache miss per halving (75 ms for a month's 400,000 sides on a
    500,000-player list); the table, at most half full, needs about 1.5 probes per id. The first probe of every
    query is made without gathering through the waiting queries' indices: most queries end there, and the
    indirection doubled the lookup (26 -> 12 ms for a fide-scale month's 409,000 sides).
    """
    table, bits = _hash_table(ids)
    mask = (1 << bits) - 1
    out = np.full(len(queries), -1, dtype=np.int64)
    probe = _hash_slots(queries, bits)
    held = table[probe]
    occupied = held >= 0
    hit = occupied & (ids[np.where(occupied, held, 0)] == queries)
    out[hit] = held[hit]
    waiting = np.flatnonzero(occupied & ~hit)
    probe[waiting] = (probe[waiting] + 1) & mask
    while waiting.size:
        held = table[probe[waiting]]
        occupied = held >= 0
        hit = occupied & (ids[np.where(occupied, held, 0)] == queries[waiting])
        out[waiting[hit]] = held[hit]
        waiting = waiting[occupied & ~hit]
        probe[waiting] = (probe[waiting] + 1) & mask
    return out


# The tables of the last two lists looked up, with a copy of their ids: a chain's month looks up the list before it
# (the engine, the ratings used), then the ledger the list after it, which the next month looks up again. Building a
# table for 900,000 fide ids costs about 20 ms, comparing the ids 1 ms; both held tables and ids about 30 MB.
_HELD_TABLES: list[tuple[np.ndarray, np.ndarray, int]] = []


def _hash_table(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """The open-addressing table of `ids` (each slot: a row of `ids`, -1 free) and its bits."""
    for held_ids, table, bits in _HELD_TABLES:
        if len(held_ids) == len(ids) and np.array_equal(held_ids, ids):
            return table, bits
    n = len(ids)
    bits = max((2 * n - 1).bit_length(), 1)
    mask = (1 << bits) - 1
    # Rows fit 32 bits: half the memory a held table keeps (8 MB for 900,000 ids).
    table = np.full(1 << bits, -1, dtype=np.int32 if n < 2**31 else np.int64)
    slot = _hash_slots(ids, bits)
    # The first round on every id, without gathering through their indices (the table is empty: every slot free).
    rows = np.arange(n)
    table[slot] = rows  # of several ids wanting one slot, one wins
    waiting = np.flatnonzero(table[slot] != rows)
    slot[waiting] = (slot[waiting] + 1) & mask
    while waiting.size:
        wanted = slot[waiting]
        free = table[wanted] < 0
        candidates = waiting[free]
        table[wanted[free]] = candidates  # of several ids wanting one free slot, one wins
        won = table[slot[candidates]] == candidates
        waiting = np.concatenate([waiting[~free], candidates[~won]])
        slot[waiting] = (slot[waiting] + 1) & mask
    _HELD_TABLES[:] = [(ids.copy(), table, bits), *_HELD_TABLES[:1]]
    return table, bits


def _in_id_order(rating_list: pl.DataFrame) -> pl.DataFrame:
    ids = rating_list["player_id"].to_numpy()
    return rating_list if bool(np.all(ids[1:] > ids[:-1])) else rating_list.sort("player_id")


def _with_newcomers(listed: Listed, side_ids: np.ndarray, players: pl.DataFrame | None) -> tuple[Listed, np.ndarray]:
    """(the list with this period's new players inserted in player_id order, the list row of each side)."""
    ids = listed.ids
    side_pos = positions(ids, side_ids)
    unknown = side_pos < 0
    if not unknown.any():
        return listed, side_pos
    new_ids = np.unique(side_ids[unknown])
    newcomers = Listed.read(_newcomers(pl.DataFrame({"player_id": new_ids}), players))
    # A merge of two sorted id arrays: each old row moves down by the newcomers before it.
    old_to = np.arange(len(ids)) + np.searchsorted(new_ids, ids)
    new_to = np.searchsorted(ids, new_ids) + np.arange(len(new_ids))
    order = np.empty(len(ids) + len(new_ids), dtype=np.int64)
    order[old_to] = np.arange(len(ids))
    order[new_to] = len(ids) + np.arange(len(new_ids))
    moved = np.empty_like(side_pos)
    moved[~unknown] = old_to[side_pos[~unknown]]
    moved[unknown] = new_to[np.searchsorted(new_ids, side_ids[unknown])]
    return listed.merged(newcomers, order), moved


# -- the period ---------------------------------------------------------------------------------


@dataclass
class _Sides:
    """The month's games seen from each side: white sides are rows 0..G-1, black sides G..2G-1, in game order."""

    games: pl.DataFrame
    position: np.ndarray  # the player's list row
    player_rated: np.ndarray  # the player is rated on the list in force
    own: np.ndarray  # rating used (the source's, else the list's), int32
    opponent: np.ndarray
    opponent_known: np.ndarray
    white_used: tuple[np.ndarray, np.ndarray]  # (values, known) per game, for the per-game table
    black_used: tuple[np.ndarray, np.ndarray]
    score: np.ndarray
    weight: np.ndarray  # per game
    counts: np.ndarray  # against a rated opponent (§8.3.1), in a rated time control
    unit_weight: bool  # every game weighs 1
    # K of the list in force at the event's start where the games give one (an event started before the period),
    # per side (values, known); None when no game gives one.
    k_at_start: tuple[np.ndarray, np.ndarray] | None

    @classmethod
    def of(cls, games: pl.DataFrame, listed: Listed, side_pos: np.ndarray, rules: RuleSet) -> _Sides:
        count = games.height
        # np.take: the month's gathers from the list cost a fifth to a third less than indexing.
        list_rating, list_rated = np.take(listed.rating, side_pos), np.take(listed.rated, side_pos)

        def used(column: str, sides: slice) -> tuple[np.ndarray, np.ndarray]:
            source, source_known = numbers(games[column])
            if source_known is None:
                return source.copy(), np.ones(count, dtype=bool)
            if not source_known.any():
                return list_rating[sides], list_rated[sides]
            known = source_known | list_rated[sides]
            return list_rating[sides] + source_known * (source - list_rating[sides]), known

        white_used, black_used = (
            used("white_rating_used", slice(0, count)),
            used("black_rating_used", slice(count, None)),
        )
        weight = _game_weight_numpy(rules, games)
        gap = _gap_not_rated_numpy(rules, *white_used, *black_used)
        if gap.any():
            weight = np.where(gap, 0.0, weight)
        white_score = games["white_score"].to_numpy()
        k_columns = (games["white_k_used"], games["black_k_used"])
        k_at_start = None
        if any(column.null_count() < count for column in k_columns):
            k_at_start = (
                np.concatenate([column.fill_null(0).to_numpy() for column in k_columns]).astype(np.int16),
                np.concatenate([column.is_not_null().to_numpy() for column in k_columns]),
            )
        opponent_known = np.concatenate([black_used[1], white_used[1]])
        # Without a rating given by the games, each side's is the list's, already in side order.
        given = any(games[column].null_count() < count for column in ("white_rating_used", "black_rating_used"))
        own = np.concatenate([white_used[0], black_used[0]]) if given else list_rating
        return cls(
            games=games,
            position=side_pos,
            player_rated=list_rated,
            own=own,
            opponent=np.concatenate([black_used[0], white_used[0]]),
            opponent_known=opponent_known,
            white_used=white_used,
            black_used=black_used,
            score=np.concatenate([white_score, 1.0 - white_score]),
            weight=weight,
            counts=_counting_game_numpy(np.tile(weight, 2), opponent_known),
            unit_weight=bool((weight == 1.0).all()),
            k_at_start=k_at_start,
        )

    def game_of(self, side: np.ndarray) -> np.ndarray:
        return side - self.games.height * (side >= self.games.height)


@dataclass
class _RatedPeriod:
    """Rated players' counting sides (in summation order) and the players who played (§8.3)."""

    side: np.ndarray
    counting: np.ndarray  # the sides of `side` as a mask over every side
    expected_h: np.ndarray  # hundredths
    played: np.ndarray  # list rows, increasing
    games: np.ndarray  # n, int32
    k_used: np.ndarray
    side_k: np.ndarray  # the K each counting side is rated with (k_used, or its event's where it started earlier)
    change: np.ndarray
    rating: np.ndarray  # after the change
    delisted: np.ndarray
    games_total: np.ndarray


def _rated_period(sides: _Sides, listed: Listed, rules: RuleSet, year: int) -> _RatedPeriod:
    counting = sides.player_rated & sides.counts
    side = np.flatnonzero(counting)
    events: pl.Series | None = None  # each counting side's event_id, where events matter
    if events_matter(rules):
        # The once-per-event 400-point rule and rounding per event need each side's player and event.
        game = sides.game_of(side)
        rows = pl.DataFrame(
            {
                "side_row": side,
                "player_id": listed.ids[sides.position[side]],
                "event_id": sides.games["event_id"].gather(game),
                "game_id": sides.games["game_id"].gather(game),
                "own_rating": pl.Series(sides.own[side], dtype=pl.Int32),
                "opponent_rating": pl.Series(sides.opponent[side], dtype=pl.Int32),
            }
        )
        rows = once_per_event_cap(rows.with_columns(d=rating_difference(rules)), rules)
        side, d = rows["side_row"].to_numpy(), rows["d"].to_numpy()
        events = rows["event_id"]
    else:
        d = _rating_difference_numpy(rules, np.take(sides.own, side), np.take(sides.opponent, side))
    expected_h = _expected_score_numpy(rules, d, side < sides.games.height)
    delta_h = np.take(sides.score, side) * 100.0 - expected_h
    if not sides.unit_weight:  # x times 1.0 is x, to the bit
        delta_h *= sides.weight[sides.game_of(side)]
    position = np.take(sides.position, side)
    games_n = np.bincount(position, minlength=listed.size)
    delta = np.bincount(position, weights=delta_h, minlength=listed.size)
    played = np.flatnonzero(games_n > 0)
    n = np.take(games_n, played).astype(np.int32)
    # np.take, as in _Sides.of.
    rating = np.take(listed.rating, played)
    games_total = np.take(listed.games_total, played)
    k_start = _k_from_previous_list_numpy(
        rules.k,
        year,
        np.take(listed.k, played),
        np.take(listed.k_known, played),
        rating=rating,
        rated=np.take(listed.rated, played),
        games_total=games_total,
        games_total_known=np.take(listed.games_total_known, played),
        birth_year=np.take(listed.birth_year, played),
        birth_year_known=np.take(listed.birth_year_known, played),
        ever_2400=np.take(listed.ever_2400, played),
    )
    k_used = _k_times_games_cap_numpy(k_start, n, rules)
    # Each counting side's K: its player's for the period (a gather by list row, cheaper than a search), or that of
    # the list in force at its event's start where the event started before the period.
    k_at_row = np.zeros(listed.size, dtype=np.int16)
    k_at_row[played] = k_used
    side_k = np.take(k_at_row, position)
    player = None  # each counting side's player as an index into `played`, where needed
    if sides.k_at_start is not None:
        player = np.searchsorted(played, position)
        given, known = sides.k_at_start[0][side], sides.k_at_start[1][side]
        side_k = _k_times_games_cap_numpy(
            _k_at_event_start_numpy(rules.k, k_start[player], given, known), n[player], rules
        )
    per_event = rounds_per_event(rules)
    if per_event and player is None:
        player = np.searchsorted(played, position)
    _, change = _rating_changes_numpy(per_event, k_used, np.take(delta, played), delta_h, player, side_k, events)
    updated = rating + change
    delisted = _below_floor_numpy(updated, rules)
    return _RatedPeriod(
        side=side,
        counting=counting,
        expected_h=expected_h,
        played=played,
        games=n,
        k_used=k_used,
        side_k=side_k,
        change=change,
        rating=updated,
        delisted=delisted,
        games_total=games_total + n,
    )


def rate_period(
    previous: pl.DataFrame | None,
    games: pl.DataFrame,
    rules: RuleSet,
    month: str,
    players: pl.DataFrame | None = None,
    standard: pl.DataFrame | None = None,
) -> PeriodResult:
    """Rate one period: `previous` is the list in force before `month`, `games` the month's rated games.

    `players` (optional, columns player_id and birth_year) supplies birth years for players new to the list.
    `standard` (optional, columns player_id, rating and birth_year) is the standard list in force, which seeds the
    players unrated on a rapid or blitz list where the rule set says so (regulations.seeded_from_standard).
    Most of a list does not play in a given month: only the players in its games and the unrated
    players holding a pool (which may expire) go through the rules, rated (§8.3) and unrated (§8.2)
    separately; everybody else only has the period's columns reset. The list stays in player_id
    order, so the players of the month are found by position, their results are summed per position
    and written back at it; newcomers are merged in at their places. The columns are NumPy arrays
    meanwhile (pipeline/engine/arrays.py).
    """
    game_rows, listed, side_pos, sides, rated = _rated_sides(previous, games, rules, month, players, standard)
    size = listed.size

    # Unrated players (§8.2): those in the games and those holding a pool, whose entries may expire.
    in_games = np.zeros(size, dtype=bool)
    in_games[side_pos] = True
    holds_pool = (listed.pool_end > listed.pool_start) | (listed.pending_games > 0)
    unrated_pos = np.flatnonzero(~listed.rated & (in_games | holds_pool))
    unrated_side = np.flatnonzero(~sides.player_rated & sides.counts)
    number = np.zeros(size, dtype=np.int64)  # each unrated player's number among them, by list row
    number[unrated_pos] = np.arange(len(unrated_pos))
    unrated = unrated_period(
        listed,
        unrated_pos,
        UnratedSides(
            owner=number[side_pos[unrated_side]],
            points_x2=(sides.score[unrated_side] * 2).astype(np.int64),
            opponent_rating=sides.opponent[unrated_side].astype(np.int64),
            game=sides.game_of(unrated_side),
            games=game_rows,
        ),
        rules,
        month,
    )
    new_list = _next_list(listed, rated, unrated_pos, unrated, rules, month)
    return PeriodResult(rating_list=new_list, rated_games=_rated_games_table(sides, rated, month))


def predict_period(
    previous: pl.DataFrame | None, games: pl.DataFrame, rules: RuleSet, month: str, players: pl.DataFrame | None = None
) -> pl.DataFrame:
    """rate_period's rated_games alone, the same table: each game's ratings in force and expectations, without the
    new list (a prediction from a frozen list reads only these; the unrated players' period and the new list are
    about a quarter of a period).
    """
    *_, sides, rated = _rated_sides(previous, games, rules, month, players, None)
    return _rated_games_table(sides, rated, month)


def _rated_sides(
    previous: pl.DataFrame | None,
    games: pl.DataFrame,
    rules: RuleSet,
    month: str,
    players: pl.DataFrame | None,
    standard: pl.DataFrame | None,
) -> tuple[pl.DataFrame, Listed, np.ndarray, _Sides, _RatedPeriod]:
    """What rate_period and predict_period share: the month's game rows, the list with the period's newcomers, each
    game side's row in it, the sides, and the rated players' period (§8.3).
    """
    year = parse_month(month)[0]
    prev = previous if previous is not None and _is_full_list(previous) else normalize_list(previous)
    game_rows = normalize_games(games, month)
    if standard is not None:
        # The players of the games the list rates (a blitz game seeds nobody on the rapid list).
        rated_here = game_rows.filter(pl.Series(_game_weight_numpy(rules, game_rows) > 0))
        players_of_month = pl.concat([rated_here["white_id"], rated_here["black_id"]])
        prev = with_seeds(prev, seeded_from_standard(rules, prev, standard, players_of_month))
    prev = _in_id_order(mark_elite_reached(prev, rules.k))
    side_ids = np.concatenate([game_rows["white_id"].to_numpy(), game_rows["black_id"].to_numpy()])
    listed, side_pos = _with_newcomers(Listed.read(prev), side_ids, players)
    sides = _Sides.of(game_rows, listed, side_pos, rules)
    return game_rows, listed, side_pos, sides, _rated_period(sides, listed, rules, year)


def with_seeds(rating_list: pl.DataFrame, seeds: pl.DataFrame) -> pl.DataFrame:
    """The full list with the seeded players (seeded_from_standard's rows) rated at their seed: a player already
    on the list keeps its row but for its rating, its game count (0) and its pool of unrated games (dropped).
    """
    if not seeds.height:
        return rating_list
    on_list = rating_list.join(seeds.select("player_id"), on="player_id", how="semi")
    updated = on_list.join(
        seeds.select("player_id", pl.col("rating").alias("_seed"), pl.col("birth_year").alias("_seed_birth")),
        on="player_id",
    ).with_columns(
        pl.col("_seed").alias("rating"),
        pl.lit(0, dtype=pl.Int32).alias("games_total"),
        pl.lit(0, dtype=pl.Int32).alias("pending_games"),
        pl.lit(None, dtype=pl.Utf8).alias("pending_since"),
        pl.lit([], dtype=pl.List(POOL_ENTRY)).alias("pending"),
        pl.coalesce("birth_year", "_seed_birth").alias("birth_year"),
    )
    new_rows = normalize_list(seeds.join(on_list.select("player_id"), on="player_id", how="anti"))
    rest = rating_list.join(seeds.select("player_id"), on="player_id", how="anti")
    merged = pl.concat([rest, conform(updated.drop("_seed", "_seed_birth"), RatingList), new_rows], how="vertical")
    return conform(merged.sort("player_id"), RatingList)


def _next_list(
    listed: Listed, rated: _RatedPeriod, unrated_pos: np.ndarray, unrated: UnratedPeriod, rules: RuleSet, month: str
) -> pl.DataFrame:
    """The new list: the period's columns reset for everybody, then the results written at their rows."""
    size, played = listed.size, rated.played
    rating, has_rating = listed.rating.copy(), listed.rated.copy()
    rating[played], has_rating[played] = rated.rating * ~rated.delisted, ~rated.delisted
    rating[unrated_pos], has_rating[unrated_pos] = unrated.rating, unrated.published
    change, change_known = np.zeros(size, dtype=np.int32), listed.rated.copy()
    change[played] = rated.change
    k_used, k_used_known = np.zeros(size, dtype=np.int16), np.zeros(size, dtype=bool)
    k_used[played], k_used_known[played] = rated.k_used, True
    games = np.zeros(size, dtype=np.int32)
    games[played], games[unrated_pos] = rated.games, unrated.games
    games_total, games_total_known = listed.games_total.copy(), listed.games_total_known.copy()
    games_total[played] = rated.games_total
    before = listed.games_total[unrated_pos]
    games_total[unrated_pos] = before + unrated.published * (unrated.games_total - before)
    games_total_known[unrated_pos] |= unrated.published
    delisted = np.zeros(size, dtype=bool)
    delisted[played] = rated.delisted
    newly_rated = np.zeros(size, dtype=bool)
    newly_rated[unrated_pos] = unrated.published
    ever_2400 = _reached_elite_numpy(rules.k, listed.ever_2400, rating, has_rating)

    stored = listed.last_played
    last_played = Strings(stored.views.copy(), stored.valid.copy(), stored.buffers)
    now = np.concatenate([played, unrated_pos[unrated.played]])
    last_played.views[now], last_played.valid[now] = inline_view(month), True
    last_played_series = last_played.series("last_played")
    # §7.2.2 (regulations.inactive); a player who never played keeps the flag the list gave (a seed list's).
    inactive = _inactive_numpy(rules, month, last_played) | (~last_played.valid & listed.inactive)

    pending_games = listed.pending_games * ~listed.rated
    pending_games[unrated_pos] = unrated.pending_games
    pending_since = Strings.missing(size)
    pending_since.buffers = unrated.pending_since.buffers
    pending_since.views[unrated_pos] = unrated.pending_since.views
    pending_since.valid[unrated_pos] = unrated.pending_since.valid

    # The list's K column is the K of the next period (FIDE semantics), before the K x n cap.
    k = _development_coefficient_numpy(
        rules.k,
        year_of_list_k(month),
        rating=rating,
        rated=has_rating,
        games_total=games_total,
        games_total_known=games_total_known,
        birth_year=listed.birth_year,
        birth_year_known=listed.birth_year_known,
        ever_2400=ever_2400,
    )
    new_list = pl.DataFrame(
        [
            listed.id_series.alias("player_id"),
            number_series("rating", rating, has_rating),
            number_series("change", change, change_known),
            # Corrections of earlier lists' games are added after the period, outside the engine
            # (pipeline.scenarios.corrections).
            number_series("correction", np.zeros(size, dtype=np.int32), np.zeros(size, dtype=bool)),
            number_series("k", k),
            number_series("k_used", k_used, k_used_known),
            number_series("games", games),
            number_series("games_total", games_total, games_total_known),
            bool_series("inactive", inactive),
            bool_series("delisted", delisted),
            bool_series("newly_rated", newly_rated),
            listed.birth_series.alias("birth_year"),
            bool_series("ever_2400", ever_2400),
            last_played_series,
            number_series("pending_games", pending_games),
            pending_since.series("pending_since"),
            pending_column(size, unrated_pos, unrated.pool_sizes, unrated.pool_entries),
        ]
    )
    return _conformed(new_list, LIST_SCHEMA, RatingList)


def _newcomers(ids: pl.DataFrame, players: pl.DataFrame | None) -> pl.DataFrame:
    """List rows for players seen for the first time (column player_id): everyone in a game joins the list, unrated."""
    if players is not None and "birth_year" in players.columns and ids.height:
        births = players.select(pl.col("player_id").cast(pl.Int64), pl.col("birth_year").cast(pl.Int32, strict=False))
        births = births.join(ids, on="player_id", how="semi").unique("player_id", keep="first")
        ids = ids.join(births, on="player_id", how="left")
    return normalize_list(ids)


# Columns the schema declares without missing values: a full list with one missing there goes through normalize_list.
_NEVER_MISSING = ("player_id", "games", "inactive", "delisted", "newly_rated", "ever_2400", "pending_games", "pending")


def _is_full_list(frame: pl.DataFrame) -> bool:
    return dict(frame.schema) == dict(LIST_SCHEMA) and not any(frame[name].null_count() for name in _NEVER_MISSING)


def _conformed(frame: pl.DataFrame, schema: pl.Schema, model: type[RatingList] | type[RatedGames]) -> pl.DataFrame:
    # The engine builds its frames with the schema's columns and dtypes: conform's select of casts (1-2 ms a month, most
    # of it making the expressions) is then the same frame.
    if list(frame.schema.items()) == list(schema.items()):
        return frame
    return conform(frame, model)


def _rated_games_table(sides: _Sides, rated: _RatedPeriod, month: str) -> pl.DataFrame:
    # Each counted side's expectation goes back to its side row: white sides first, then black, in game order.
    games = sides.games
    count = games.height
    expected = np.zeros(2 * count, dtype=np.float64)
    expected_known = rated.counting
    expected[rated.side] = rated.expected_h * _HUNDREDTH
    k = np.zeros(2 * count, dtype=np.int16)
    k[rated.side] = rated.side_k
    table = pl.DataFrame(
        [
            games["game_id"],
            Strings(np.tile(inline_view(month), count), np.ones(count, dtype=bool), []).series("month"),
            games["event_id"],
            games["white_id"],
            games["black_id"],
            games["white_score"],
            games["time_control"],
            number_series("white_rating_used", *sides.white_used),
            number_series("black_rating_used", *sides.black_used),
            number_series("white_expected", expected[:count], expected_known[:count]),
            number_series("black_expected", expected[count:], expected_known[count:]),
            number_series("white_k_used", k[:count], expected_known[:count]),
            number_series("black_k_used", k[count:], expected_known[count:]),
            number_series("weight", sides.weight),
        ]
    )
    table = _conformed(table, RATED_GAMES_SCHEMA, RatedGames)
    game_ids = table["game_id"].to_numpy()
    # Games usually arrive in game_id order: the sort is then skipped (only when strictly increasing, so nothing can
    # move).
    return table if bool(np.all(game_ids[1:] > game_ids[:-1])) else table.sort("game_id")


def compress(
    rating_list: pl.DataFrame, threshold: int = 2000, factor: float = 0.4, fresh_start: bool = True
) -> pl.DataFrame:
    """The one-time compression of March 2024 (docs/regulations.md): R + round(0.4 x (2000 - R)) below 2000.

    Applied after a period's regular calculation to every rated player, active or not, newcomers
    included. 0.4 x (2000 - R) is rounded to the nearest integer, halves away from zero [U: the
    reference marks FIDE's rounding as unverified]. Nobody passes 2000 and the order is kept.
    With `fresh_start` (the 2024 reform), unrated players' pooled results from before it are discarded.
    """
    below = pl.col("rating").is_not_null() & (pl.col("rating") < threshold)
    uplift = round_half_away((threshold - pl.col("rating")).cast(pl.Float64) * factor)
    compressed = rating_list.with_columns(
        change=pl.when(below).then(pl.col("change").fill_null(0) + uplift).otherwise(pl.col("change")).cast(pl.Int32),
        rating=pl.when(below).then(pl.col("rating") + uplift).otherwise(pl.col("rating")).cast(pl.Int32),
    )
    if not fresh_start:
        return compressed
    unrated = pl.col("rating").is_null()
    return compressed.with_columns(
        pending=pl.when(unrated).then(pl.lit([], dtype=pl.List(POOL_ENTRY))).otherwise(pl.col("pending")),
        pending_games=pl.when(unrated).then(pl.lit(0, dtype=pl.Int32)).otherwise(pl.col("pending_games")),
        pending_since=pl.when(unrated).then(pl.lit(None, dtype=pl.Utf8)).otherwise(pl.col("pending_since")),
    )


def carry_forward(rating_list: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """The list of a month in which no list was published (before July 2012): ratings unchanged.

    `ever_2400` is the rule set's (regulations.reached_elite): a seed list states only what its file says.
    """
    return rating_list.with_columns(
        ever_2400=reached_elite(rules.k),
        change=pl.when(pl.col("rating").is_not_null()).then(pl.lit(0, dtype=pl.Int32)),
        correction=pl.lit(None, dtype=pl.Int32),
        k_used=pl.lit(None, dtype=pl.Int16),
        games=pl.lit(0, dtype=pl.Int32),
        delisted=pl.lit(False),
        newly_rated=pl.lit(False),
    )
