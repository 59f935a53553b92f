"""Rating engine for one period: the previous list plus the month's games give the new list (Polars and NumPy,
vectorised).

Every rule is a function of pipeline/regulations.py, under its clause; the engine only composes them
over a period: per game dR = score - PD, summed over the period, times K (reduced so that K x n <=
the cap), rounded once, 0.5 away from zero; pools and first ratings for unrated players.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.months import add_months, first_day, parse_month
from pipeline.regulations import (
    below_floor,
    development_coefficient,
    events_matter,
    expected_score,
    game_weight,
    initial_rating,
    k_from_previous_list,
    k_ten_for_good,
    k_times_games_cap,
    once_per_event_cap,
    rating_difference,
    round_half_away,
)
from pipeline.rules import RuleSet
from schemas.rated_games import RatedGames
from schemas.rating_list import POOL_ENTRY, RatingList
from schemas.util import conform, polars_schema

LIST_SCHEMA = polars_schema(RatingList)
RATED_GAMES_SCHEMA = polars_schema(RatedGames)


class EngineInputError(ValueError):
    """The previous list or the games cannot be rated as given; the message says what is wrong."""


@dataclass(frozen=True)
class PeriodResult:
    """The new list and the per-game calculation it rests on."""

    rating_list: pl.DataFrame
    rated_games: pl.DataFrame


# -- inputs ------------------------------------------------------------------------------------


def normalize_list(frame: pl.DataFrame | None, month: str | None = None) -> pl.DataFrame:
    """A full RatingList frame from a partial one (a seed list, or rate-period's PREV file).

    Only player_id is required; a missing rating means unrated, a missing ever_2400 is derived
    from the rating, a missing k is derived from the rule set when the period is rated, a missing
    games_total is unknown for a rated player (established: K is not the newcomer's) and 0 for an
    unrated one.
    """
    del month  # the list carries no month of its own; kept for call-site symmetry
    if frame is None:
        return pl.DataFrame(schema=LIST_SCHEMA)
    if "player_id" not in frame.columns:
        raise EngineInputError("the rating list has no player_id column")
    present = set(frame.columns)
    defaults: dict[str, pl.Expr] = {
        "change": pl.lit(None),
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
        pl.col("ever_2400").cast(pl.Boolean, strict=False).fill_null(False)
        | (pl.col("rating") >= 2400).fill_null(False),
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
        pl.col("tc_base_seconds").cast(pl.Int32),
        pl.col("tc_increment_seconds").cast(pl.Int32),
    )
    bad_scores = out.filter(~pl.col("white_score").is_in([0.0, 0.5, 1.0]) | pl.col("white_score").is_null()).height
    if bad_scores:
        raise EngineInputError(f"{bad_scores} games have a white_score other than 1, 0.5 or 0")
    if out.filter(pl.col("white_id").is_null() | pl.col("black_id").is_null()).height:
        raise EngineInputError("some games have no white_id or black_id")
    return out


# -- where the players are: positions on the list ---------------------------------------------------
# The list is kept in player_id order, so a player's row is a position; a month's work is gathers and
# scatters on the positions of the players in its games (and of the unrated players holding a pool),
# not joins of the games to the whole list and a sort of the whole list afterwards.

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)


def _positions(ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row of each query id on the list (`ids` strictly increasing), -1 for ids not on it."""
    n = len(ids)
    if n == 0 or len(queries) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    low, span = int(ids[0]), int(ids[-1]) - int(ids[0]) + 1
    if span <= 8 * n + 1024:
        # Ids close together (a federation's block, a synthetic list): a direct table, one gather per query.
        table = np.full(span, -1, dtype=np.int64)
        table[ids - low] = np.arange(n)
        offset = queries - low
        inside = (offset >= 0) & (offset < span)
        found = table[np.where(inside, offset, 0)]
        return np.where(inside, found, -1)
    return _hashed_positions(ids, queries)


def _hash_slots(keys: np.ndarray, bits: int) -> np.ndarray:
    # Fibonacci hashing: FIDE ids come in federation blocks with regular gaps, which would pile up
    # in the low bits; the multiply spreads them (uint64 arithmetic wraps, as intended).
    return ((keys.astype(np.uint64) * _FIBONACCI) >> np.uint64(64 - bits)).astype(np.int64)


def _hashed_positions(ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """_positions for ids spread far apart: an open-addressing hash table, filled and probed a round at a time.

    np.searchsorted costs a cache miss per halving (75 ms for a month's 400,000 sides on a
    500,000-player list); the table, at most half full, needs about 1.5 probes per id.
    """
    n = len(ids)
    bits = max((2 * n - 1).bit_length(), 1)
    mask = (1 << bits) - 1
    table = np.full(1 << bits, -1, dtype=np.int64)
    slot = _hash_slots(ids, bits)
    waiting = np.arange(n)
    while waiting.size:
        wanted = slot[waiting]
        free = table[wanted] < 0
        candidates = waiting[free]
        table[wanted[free]] = candidates  # of several ids wanting one free slot, one wins
        won = table[slot[candidates]] == candidates
        waiting = np.concatenate([waiting[~free], candidates[~won]])
        slot[waiting] = (slot[waiting] + 1) & mask
    out = np.full(len(queries), -1, dtype=np.int64)
    probe = _hash_slots(queries, bits)
    waiting = np.arange(len(queries))
    while waiting.size:
        held = table[probe[waiting]]
        occupied = held >= 0
        hit = occupied & (ids[np.where(occupied, held, 0)] == queries[waiting])
        out[waiting[hit]] = held[hit]
        waiting = waiting[occupied & ~hit]
        probe[waiting] = (probe[waiting] + 1) & mask
    return out


def _in_id_order(rating_list: pl.DataFrame) -> pl.DataFrame:
    ids = rating_list["player_id"].to_numpy()
    return rating_list if bool(np.all(ids[1:] > ids[:-1])) else rating_list.sort("player_id")


def _with_newcomers(
    listed: pl.DataFrame, side_ids: np.ndarray, players: pl.DataFrame | None
) -> tuple[pl.DataFrame, np.ndarray]:
    """(the list with this period's new players inserted in player_id order, the list row of each side)."""
    ids = listed["player_id"].to_numpy()
    side_pos = _positions(ids, side_ids)
    unknown = side_pos < 0
    if not unknown.any():
        return listed, side_pos
    new_ids = np.unique(side_ids[unknown])
    newcomers = _newcomers(pl.DataFrame({"player_id": new_ids}), players)
    # A merge of two sorted id arrays: each old row moves down by the newcomers before it.
    old_to = np.arange(len(ids)) + np.searchsorted(new_ids, ids)
    new_to = np.searchsorted(ids, new_ids) + np.arange(len(new_ids))
    order = np.empty(len(ids) + len(new_ids), dtype=np.int64)
    order[old_to] = np.arange(len(ids))
    order[new_to] = len(ids) + np.arange(len(new_ids))
    merged = pl.concat([listed, newcomers]).select(pl.all().gather(order))
    moved = np.empty_like(side_pos)
    moved[~unknown] = old_to[side_pos[~unknown]]
    moved[unknown] = new_to[np.searchsorted(new_ids, side_ids[unknown])]
    return merged, moved


def _scattered(base: pl.Series, positions: np.ndarray, values: pl.Series) -> pl.Series:
    """`base` with `values` written at `positions`."""
    if not len(positions):
        return base
    if base.dtype.is_nested():
        # Series.scatter takes no nested values: the same as a gather from base followed by values
        # (in one chunk: a gather of nested values across chunks costs about 1 µs a row).
        source = np.arange(len(base))
        source[positions] = len(base) + np.arange(len(positions))
        return pl.concat([base, values.cast(base.dtype)], rechunk=True).gather(source)
    out = base.clone()
    out.scatter(positions, values.cast(base.dtype))
    return out


# -- the period ---------------------------------------------------------------------------------


def _annotated_games(games: pl.DataFrame, list_rating: pl.Series, rules: RuleSet) -> pl.DataFrame:
    """The games with both players' list ratings (`list_rating`: white sides, then black), the ratings used and the
    weight.
    """
    count = games.height
    return games.with_columns(
        white_list_rating=list_rating.slice(0, count), black_list_rating=list_rating.slice(count, count)
    ).with_columns(
        weight=game_weight(rules),
        white_used=pl.coalesce("white_rating_used", "white_list_rating"),
        black_used=pl.coalesce("black_rating_used", "black_list_rating"),
    )


def _rated_player_games(rows: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """Rated players' counting games (own_rating, opponent_rating, score, weight) with D, the expected score and the
    weighted change in hundredths.
    """
    rows = once_per_event_cap(rows.with_columns(d=rating_difference(rules)), rules)
    return rows.with_columns(expected_h=expected_score(rules)).with_columns(
        delta_h=(pl.col("score") * 100.0 - pl.col("expected_h")) * pl.col("weight")
    )


def _rating_changes(played: pl.DataFrame, rated_rows: pl.DataFrame, rules: RuleSet, year: int) -> pl.DataFrame:
    """Rated players who played (with n and delta_h): k_used and change for the period (§8.3.3-8.3.4)."""
    played = played.with_columns(
        k_used=k_times_games_cap(k_from_previous_list(rules.k, year), pl.col("n"), rules).cast(pl.Int16)
    )
    if rules.rounding == "per-period":
        return played.with_columns(
            change=round_half_away(pl.col("k_used").cast(pl.Float64) * pl.col("delta_h") / 100.0)
        )
    per_event = (
        rated_rows.group_by("pos", "event_id")
        .agg(delta_h=pl.col("delta_h").sum())
        .join(played.select("pos", "k_used"), on="pos")
        .with_columns(change=round_half_away(pl.col("k_used").cast(pl.Float64) * pl.col("delta_h") / 100.0))
        .group_by("pos")
        .agg(pl.col("change").sum().cast(pl.Int32))
    )
    return played.join(per_event, on="pos", how="left", maintain_order="left")


def _newcomer_results(rows: pl.DataFrame, previous: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """The period's pooled results of unrated players (`rows`: their sides against rated opponents)."""
    per_event = rows.group_by("player_id", "event_id").agg(
        event_start=pl.col("event_start").min(),
        games=pl.len().cast(pl.Int32),
        points_x2=(pl.col("score") * 2).sum().cast(pl.Int32),
        opponent_rating_sum=pl.col("opponent_rating").cast(pl.Int64).sum(),
    )
    if rules.initial.disregard_zero_first_event:
        # §8.2.1: a zero score in the player's very first event is disregarded.
        history = previous.select(
            "player_id", debuted=pl.col("last_played").is_not_null() | (pl.col("pending_games") > 0)
        )
        per_event = (
            per_event.join(history, on="player_id", how="left")
            .sort(["player_id", "event_start", "event_id"])
            .with_columns(first_event=pl.col("player_id").is_first_distinct())
            .filter(~(pl.col("first_event") & ~pl.col("debuted").fill_null(False) & (pl.col("points_x2") == 0)))
        )
    played = rows.select("player_id").unique()
    totals = per_event.group_by("player_id").agg(
        pool_games=pl.col("games").sum(),
        pool_points_x2=pl.col("points_x2").sum(),
        pool_opp_sum=pl.col("opponent_rating_sum").sum(),
    )
    return played.join(totals, on="player_id", how="left").with_columns(
        pl.col("pool_games").fill_null(0), pl.col("pool_points_x2").fill_null(0), pl.col("pool_opp_sum").fill_null(0)
    )


def _updated_pools(unrated: pl.DataFrame, month: str, window_start: str) -> pl.DataFrame:
    """Unrated players' pools: entries of the last `pool_months` periods plus this period's, and their totals.

    The pools are edited as one flat run of entries with each player's offsets (their Arrow layout):
    a group_by of the entries back into lists, or Polars' list.eval over struct fields, cost several
    times as much on a FIDE-sized pool.
    """
    count = unrated.height
    stored = unrated["pending"].rechunk().to_arrow()
    offsets = np.asarray(stored.offsets, dtype=np.int64)
    earlier = pl.Series(stored.values.slice(offsets[0], offsets[-1] - offsets[0])).struct.unnest()
    this_period = unrated.select(
        pl.lit(month).alias("month"),
        pl.col("pool_games").cast(pl.Int32).alias("games"),
        pl.col("pool_points_x2").cast(pl.Int32).alias("points_x2"),
        pl.col("pool_opp_sum").cast(pl.Int64).alias("opponent_rating_sum"),
    )
    entries = pl.concat([earlier.cast(pl.Schema(POOL_ENTRY.to_schema())), this_period])
    owner = np.concatenate([np.repeat(np.arange(count), np.diff(offsets)), np.arange(count)])
    # YYYY-MM strings sort like the months; entries without games go with the expired ones. A stable
    # sort by player keeps each player's earlier entries (in calendar order) before this period's.
    kept = (
        entries.select((pl.col("month") >= window_start) & (pl.col("games") > 0))
        .to_series()
        .fill_null(False)
        .to_numpy()
    )
    order = np.flatnonzero(kept)
    order = order[np.argsort(owner[order], kind="stable")]
    entries, owner = entries.select(pl.all().gather(order)), owner[order]
    sizes = np.bincount(owner, minlength=count)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    pool = pl.Series(pa.LargeListArray.from_arrays(pa.array(starts, pa.int64()), entries.to_struct().to_arrow()))

    def total(name: str) -> pl.Series:
        return pl.Series(np.bincount(owner, weights=entries[name].to_numpy(), minlength=count).astype(np.int64))

    # The first entry is the earliest when each pool is in calendar order (as the engine writes them);
    # otherwise the earliest month is looked up.
    months = entries["month"]
    same_player = pl.Series(np.concatenate([[False], owner[1:] == owner[:-1]]))
    if (same_player & (months < months.shift(1))).any():
        since = pl.DataFrame({"owner": owner, "month": months}).group_by("owner").agg(pl.col("month").min())
        pool_since = pl.repeat(None, count, dtype=pl.Utf8, eager=True).scatter(
            since["owner"].to_numpy(), since["month"]
        )
    else:
        pool_since = _scattered(
            pl.repeat(None, count, dtype=pl.Utf8, eager=True),
            np.flatnonzero(sizes),
            months.gather(starts[:-1][sizes > 0]),
        )
    return unrated.with_columns(
        pool=pool.cast(pl.List(POOL_ENTRY)),
        n_pool=total("games"),
        p2_pool=total("points_x2"),
        os_pool=total("opponent_rating_sum"),
        pool_since=pool_since,
    )


def rate_period(
    previous: pl.DataFrame | None,
    games: pl.DataFrame,
    rules: RuleSet,
    month: str,
    players: pl.DataFrame | None = None,
) -> PeriodResult:
    """Rate one period: `previous` is the list in force before `month`, `games` the month's rated games.

    `players` (optional, columns player_id and birth_year) supplies birth years for players new to the list.
    Most of a list does not play in a given month: only the players in its games and the unrated
    players holding a pool (which may expire) go through the rules, rated (§8.3) and unrated (§8.2)
    separately; everybody else only has the period's columns reset. The list stays in player_id
    order, so the players of the month are found by position, their results are summed per position
    and written back at it; newcomers are merged in at their places.
    """
    prev = previous if previous is not None and _is_full_list(previous) else normalize_list(previous)
    prev = _in_id_order(k_ten_for_good(prev, rules.k))
    game_rows = normalize_games(games, month)
    count = game_rows.height
    side_ids = np.concatenate([game_rows["white_id"].to_numpy(), game_rows["black_id"].to_numpy()])
    listed, side_pos = _with_newcomers(prev, side_ids, players)
    size = listed.height

    # Sides: white sides are rows 0..G-1, black sides G..2G-1, in game order (see _rated_games_table).
    list_rating = listed["rating"].gather(side_pos)
    annotated = _annotated_games(game_rows, list_rating, rules)
    own_used = pl.concat([annotated["white_used"], annotated["black_used"]])
    opponent_used = pl.concat([annotated["black_used"], annotated["white_used"]])
    weight = np.tile(annotated["weight"].to_numpy(), 2)
    white_score = game_rows["white_score"].to_numpy()
    score = np.concatenate([white_score, 1.0 - white_score])
    # A game counts for a player only against a rated opponent (§8.3.1) and in a rated time control.
    counts = (weight > 0) & opponent_used.is_not_null().to_numpy()
    player_rated = list_rating.is_not_null().to_numpy()
    per_event = events_matter(rules)

    def side_rows(side_row: np.ndarray, with_games: bool, **extra: pl.Series | np.ndarray) -> pl.DataFrame:
        game = side_row % count if count else side_row
        columns = {
            "side_row": side_row,
            "pos": side_pos[side_row],
            "score": score[side_row],
            "opponent_rating": opponent_used.gather(side_row),
            **extra,
        }
        if with_games:
            columns |= {
                "player_id": side_ids[side_row],
                "event_id": game_rows["event_id"].gather(game),
                "game_id": game_rows["game_id"].gather(game),
            }
        return pl.DataFrame(columns)

    # Rated players (§8.3): own_rating is the source's rating used, else the previous list's.
    rated_side = np.flatnonzero(player_rated & counts)
    rated_rows = _rated_player_games(
        side_rows(
            rated_side,
            per_event,
            own_rating=own_used.gather(rated_side),
            is_white=rated_side < count,
            weight=weight[rated_side],
        ),
        rules,
    )
    rated_pos = rated_rows["pos"].to_numpy()
    games_n = np.bincount(rated_pos, minlength=size)
    delta_h = np.bincount(rated_pos, weights=rated_rows["delta_h"].to_numpy(), minlength=size)
    played_pos = np.flatnonzero(games_n)
    played = listed.select(
        pl.col("k", "rating", "games_total", "birth_year", "ever_2400").gather(played_pos)
    ).with_columns(
        pos=pl.Series(played_pos),
        n=pl.Series(games_n[played_pos], dtype=pl.Int32),
        delta_h=pl.Series(delta_h[played_pos]),
    )
    played = _rating_changes(played, rated_rows, rules, parse_month(month)[0])
    updated = pl.col("rating") + pl.col("change")
    played = played.with_columns(delisted=below_floor(updated, rules)).with_columns(
        rating=pl.when(pl.col("delisted")).then(pl.lit(None, dtype=pl.Int32)).otherwise(updated),
        games_total=pl.col("games_total") + pl.col("n"),
    )

    # Unrated players (§8.2): those in the games and those holding a pool, whose entries may expire.
    in_games = np.zeros(size, dtype=bool)
    in_games[side_pos] = True
    rated_before = listed["rating"].is_not_null()
    holds_pool = (listed["pending"].list.len() > 0) | (listed["pending_games"] > 0)
    unrated_pos = np.flatnonzero(~rated_before.to_numpy() & (in_games | holds_pool.to_numpy()))
    unrated_touched = listed.select(pl.all().gather(unrated_pos))
    unrated_side = np.flatnonzero(~player_rated & counts)
    event_start = game_rows["event_start"].gather(unrated_side % count if count else unrated_side)
    pooled = _newcomer_results(side_rows(unrated_side, True, event_start=event_start), unrated_touched, rules)
    unrated = _next_unrated(unrated_touched, pooled, rules, month)

    # The new list: the period's columns reset for everybody, then the results written at their rows.
    played = played.select("rating", "change", "k_used", pl.col("n").alias("games"), "games_total", "delisted")
    unrated = unrated.select(
        "rating", "games", "games_total", "newly_rated", "last_played", "pending_games", "pending_since", "pending"
    )

    def column(name: str, base: pl.Series) -> pl.Series:
        out = base.alias(name)
        if name in played.columns:
            out = _scattered(out, played_pos, played[name])
        return _scattered(out, unrated_pos, unrated[name]) if name in unrated.columns else out

    zeros = pl.Series(np.zeros(size, dtype=np.int32))
    nobody = pl.Series(np.zeros(size, dtype=bool))
    played_now = np.zeros(size, dtype=bool)
    played_now[played_pos] = True
    month_played = pl.select(
        pl.when(pl.Series(played_now)).then(pl.lit(month)).otherwise(listed["last_played"])
    ).to_series()
    new_list = pl.DataFrame(
        [
            listed["player_id"],
            column("rating", listed["rating"]),
            column("change", pl.select(pl.when(rated_before).then(pl.lit(0, dtype=pl.Int32))).to_series()),
            listed["k"],
            column("k_used", pl.repeat(None, size, dtype=pl.Int16, eager=True)),
            column("games", zeros),
            column("games_total", listed["games_total"]),
            listed["inactive"],
            column("delisted", nobody),
            column("newly_rated", nobody),
            listed["birth_year"],
            listed["ever_2400"],
            column("last_played", month_played),
            column(
                "pending_games",
                pl.select(
                    pl.when(rated_before).then(pl.lit(0, dtype=pl.Int32)).otherwise(listed["pending_games"])
                ).to_series(),
            ),
            column("pending_since", pl.repeat(None, size, dtype=pl.Utf8, eager=True)),
            column("pending", pl.repeat([], size, dtype=pl.List(POOL_ENTRY), eager=True)),
        ]
    )

    last_active = add_months(month, -rules.inactive_after_months)  # 'YYYY-MM' strings sort like the months
    new_list = new_list.with_columns(
        pl.when(pl.col("last_played").is_null())
        .then(pl.col("inactive"))
        .otherwise(pl.col("last_played") <= last_active)
        .alias("inactive"),
        (pl.col("ever_2400") | (pl.col("rating") >= 2400).fill_null(False)).alias("ever_2400"),
    )
    # The list's K column is the K of the next period (FIDE semantics), before the K x n cap.
    new_list = new_list.with_columns(k=development_coefficient(rules.k, parse_month(add_months(month, 1))[0]))
    return PeriodResult(
        rating_list=conform(new_list, RatingList), rated_games=_rated_games_table(annotated, rated_rows, month)
    )


def _newcomers(ids: pl.DataFrame, players: pl.DataFrame | None) -> pl.DataFrame:
    """List rows for players seen for the first time (column player_id): everyone in a game joins the list, unrated."""
    if players is not None and "birth_year" in players.columns and ids.height:
        births = players.select(pl.col("player_id").cast(pl.Int64), pl.col("birth_year").cast(pl.Int32, strict=False))
        births = births.join(ids, on="player_id", how="semi").unique("player_id", keep="first")
        ids = ids.join(births, on="player_id", how="left")
    return normalize_list(ids)


def _next_unrated(unrated: pl.DataFrame, pooled: pl.DataFrame, rules: RuleSet, month: str) -> pl.DataFrame:
    """Players unrated before the period: their pools, and a first rating once a pool is large enough (§8.2)."""
    state = unrated.join(pooled, on="player_id", how="left", maintain_order="left").with_columns(
        played=pl.col("pool_games").is_not_null(), pool_games=pl.col("pool_games").fill_null(0)
    )
    state = _updated_pools(state, month, add_months(month, 1 - rules.initial.pool_months))
    state = state.with_columns(first_rating=initial_rating(rules))
    published = pl.col("n_pool") >= rules.initial.min_games
    published = published & ~below_floor(pl.col("first_rating"), rules)
    state = state.with_columns(published=published)
    keep_pool = ~pl.col("published")
    return state.select(
        "player_id",
        pl.when(pl.col("published")).then(pl.col("first_rating")).alias("rating"),
        pl.lit(None, dtype=pl.Int32).alias("change"),
        "k",
        pl.lit(None, dtype=pl.Int16).alias("k_used"),
        pl.when(pl.col("published")).then(pl.col("n_pool")).otherwise(pl.col("pool_games")).alias("games"),
        pl.when(pl.col("published")).then(pl.col("n_pool")).otherwise(pl.col("games_total")).alias("games_total"),
        "inactive",
        pl.lit(False).alias("delisted"),
        pl.col("published").alias("newly_rated"),
        "birth_year",
        "ever_2400",
        pl.when(pl.col("played")).then(pl.lit(month)).otherwise(pl.col("last_played")).alias("last_played"),
        pl.when(keep_pool).then(pl.col("n_pool")).otherwise(0).alias("pending_games"),
        pl.when(keep_pool).then(pl.col("pool_since")).alias("pending_since"),
        pl.when(keep_pool).then(pl.col("pool")).otherwise(pl.lit([], dtype=pl.List(POOL_ENTRY))).alias("pending"),
    ).pipe(conform, RatingList)


def _is_full_list(frame: pl.DataFrame) -> bool:
    return dict(frame.schema) == dict(LIST_SCHEMA)


def _rated_games_table(annotated: pl.DataFrame, rated_rows: pl.DataFrame, month: str) -> pl.DataFrame:
    # Each counted side's expectation goes back to its side row: white sides first, then black, in game order.
    games = annotated.height
    expected = pl.repeat(None, 2 * games, dtype=pl.Float64, eager=True).scatter(
        rated_rows["side_row"], rated_rows["expected_h"] / 100.0
    )
    table = annotated.with_columns(
        white_expected=expected.slice(0, games), black_expected=expected.slice(games, games)
    ).select(
        "game_id",
        pl.lit(month).alias("month"),
        "event_id",
        "white_id",
        "black_id",
        "white_score",
        "time_control",
        pl.col("white_used").alias("white_rating_used"),
        pl.col("black_used").alias("black_rating_used"),
        "white_expected",
        "black_expected",
        "weight",
    )
    table = conform(table, RatedGames)
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


def carry_forward(rating_list: pl.DataFrame) -> pl.DataFrame:
    """The list of a month in which no list was published (before July 2012): ratings unchanged."""
    return rating_list.with_columns(
        change=pl.when(pl.col("rating").is_not_null()).then(pl.lit(0, dtype=pl.Int32)),
        k_used=pl.lit(None, dtype=pl.Int16),
        games=pl.lit(0, dtype=pl.Int32),
        delisted=pl.lit(False),
        newly_rated=pl.lit(False),
    )
