"""Rating engine for one period: the previous list plus the month's games give the new list (pure Polars).

Every rule is a function of pipeline/regulations.py, under its clause; the engine only composes them
over a period: per game dR = score - PD, summed over the period, times K (reduced so that K x n <=
the cap), rounded once, 0.5 away from zero; pools and first ratings for unrated players.
"""

from __future__ import annotations

from dataclasses import dataclass
import polars as pl

from pipeline.months import add_months, first_day, parse_month
from pipeline.regulations import (
    below_floor,
    development_coefficient,
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
        pl.col("ever_2400").cast(pl.Boolean, strict=False).fill_null(False) | (pl.col("rating") >= 2400).fill_null(False),
        # An empty games_total is unknown: established (null) for a rated player, 0 for an unrated one.
        pl.when(pl.col("rating").is_null()).then(pl.col("games_total").fill_null(0)).otherwise(pl.col("games_total")).alias("games_total"),
        pl.col("games").cast(pl.Int32, strict=False).fill_null(0),
        pl.col("pending_games").cast(pl.Int32, strict=False).fill_null(0),
        *(pl.col(flag).cast(pl.Boolean, strict=False).fill_null(False) for flag in ("inactive", "delisted", "newly_rated")),
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


# -- the period ---------------------------------------------------------------------------------

def _sides(games: pl.DataFrame, previous: pl.DataFrame, rules: RuleSet) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(one row per player per game with ratings used and whether it counts, games with both ratings used)."""
    # Both players' list ratings in one lookup: white ids then black ids, split in halves afterwards.
    games_count = games.height
    list_rating = (
        pl.concat([games["white_id"], games["black_id"]]).alias("player_id").to_frame()
        .join(previous.select("player_id", "rating"), on="player_id", how="left", maintain_order="left")["rating"]
    )
    annotated = (
        games.with_columns(
            white_list_rating=list_rating.slice(0, games_count), black_list_rating=list_rating.slice(games_count, games_count)
        )
        .with_columns(
            weight=game_weight(rules),
            white_used=pl.coalesce("white_rating_used", "white_list_rating"),
            black_used=pl.coalesce("black_rating_used", "black_list_rating"),
        )
    )
    common = ["game_id", "event_id", "event_start", "weight"]
    white = annotated.select(
        *common,
        pl.col("white_id").alias("player_id"),
        pl.lit(True).alias("is_white"),
        pl.col("white_score").alias("score"),
        pl.col("white_used").alias("own_rating"),
        pl.col("black_used").alias("opponent_rating"),
        pl.col("white_list_rating").is_not_null().alias("player_rated"),
    )
    black = annotated.select(
        *common,
        pl.col("black_id").alias("player_id"),
        pl.lit(False).alias("is_white"),
        (1.0 - pl.col("white_score")).alias("score"),
        pl.col("black_used").alias("own_rating"),
        pl.col("white_used").alias("opponent_rating"),
        pl.col("black_list_rating").is_not_null().alias("player_rated"),
    )
    # side_row: white sides are rows 0..G-1, black sides G..2G-1, in game order (see _rated_games_table).
    sides = pl.concat([white, black]).with_row_index("side_row")
    # A game counts for a player only against a rated opponent (§8.3.1) and in a rated time control.
    return sides.with_columns(counts=(pl.col("weight") > 0) & pl.col("opponent_rating").is_not_null()), annotated


def _rated_player_games(sides: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """Rated players' counting games with D, the expected score and the weighted change in hundredths."""
    # own_rating is already the source's rating used, else the previous list's (see _sides).
    rows = sides.filter(pl.col("player_rated") & pl.col("counts")).with_columns(d=rating_difference(rules))
    rows = once_per_event_cap(rows, rules)
    return rows.with_columns(expected_h=expected_score(rules)).with_columns(
        delta_h=(pl.col("score") * 100.0 - pl.col("expected_h")) * pl.col("weight")
    )


def _with_rating_changes(state: pl.DataFrame, rated_rows: pl.DataFrame, rules: RuleSet, year: int) -> pl.DataFrame:
    """Rated players with n (counted games, null when none), k_used and change for the period (§8.3.3-8.3.4)."""
    per_player = rated_rows.group_by("player_id").agg(n=pl.len().cast(pl.Int32), delta_h=pl.col("delta_h").sum())
    state = state.join(per_player, on="player_id", how="left", maintain_order="left")
    k_used = k_times_games_cap(k_from_previous_list(rules.k, year), pl.col("n"), rules)
    state = state.with_columns(k_used=pl.when(pl.col("n").is_not_null()).then(k_used).cast(pl.Int16))
    if rules.rounding == "per-period":
        return state.with_columns(change=round_half_away(pl.col("k_used").cast(pl.Float64) * pl.col("delta_h") / 100.0))
    per_event = (
        rated_rows.group_by("player_id", "event_id").agg(delta_h=pl.col("delta_h").sum())
        .join(state.filter(pl.col("n").is_not_null()).select("player_id", "k_used"), on="player_id")
        .with_columns(change=round_half_away(pl.col("k_used").cast(pl.Float64) * pl.col("delta_h") / 100.0))
        .group_by("player_id").agg(pl.col("change").sum().cast(pl.Int32))
    )
    return state.join(per_event, on="player_id", how="left", maintain_order="left")


def _newcomer_results(sides: pl.DataFrame, previous: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """This period's pooled results of unrated players against rated opponents."""
    rows = sides.filter(~pl.col("player_rated") & pl.col("counts"))
    per_event = rows.group_by("player_id", "event_id").agg(
        event_start=pl.col("event_start").min(),
        games=pl.len().cast(pl.Int32),
        points_x2=(pl.col("score") * 2).sum().cast(pl.Int32),
        opponent_rating_sum=pl.col("opponent_rating").cast(pl.Int64).sum(),
    )
    if rules.initial.disregard_zero_first_event:
        # §8.2.1: a zero score in the player's very first event is disregarded.
        history = previous.select("player_id", debuted=pl.col("last_played").is_not_null() | (pl.col("pending_games") > 0))
        per_event = (
            per_event.join(history, on="player_id", how="left")
            .sort(["player_id", "event_start", "event_id"])
            .with_columns(first_event=pl.col("player_id").is_first_distinct())
            .filter(~(pl.col("first_event") & ~pl.col("debuted").fill_null(False) & (pl.col("points_x2") == 0)))
        )
    played = rows.select("player_id").unique()
    totals = per_event.group_by("player_id").agg(
        pool_games=pl.col("games").sum(), pool_points_x2=pl.col("points_x2").sum(), pool_opp_sum=pl.col("opponent_rating_sum").sum()
    )
    return played.join(totals, on="player_id", how="left").with_columns(
        pl.col("pool_games").fill_null(0), pl.col("pool_points_x2").fill_null(0), pl.col("pool_opp_sum").fill_null(0)
    )


def _updated_pools(unrated: pl.DataFrame, month: str, window_start: str) -> pl.DataFrame:
    """Unrated players' pools: entries of the last `pool_months` periods plus this period's, and their totals.

    The pools are exploded into one row per (player, month) entry rather than edited as lists in place:
    Polars' list.eval over struct fields costs about ten times as much on a FIDE-sized pool.
    """
    earlier = unrated.select("player_id", "pending").explode("pending").unnest("pending")
    this_period = unrated.select(
        "player_id",
        pl.lit(month).alias("month"),
        pl.col("pool_games").cast(pl.Int32).alias("games"),
        pl.col("pool_points_x2").cast(pl.Int32).alias("points_x2"),
        pl.col("pool_opp_sum").cast(pl.Int64).alias("opponent_rating_sum"),
    )
    # YYYY-MM strings sort like the months; entries without games go with the expired ones. Earlier
    # entries come first, in calendar order, and group_by keeps each group's row order: no sort needed.
    entries = pl.concat([earlier, this_period]).filter((pl.col("month") >= window_start) & (pl.col("games") > 0))
    pools = entries.group_by("player_id").agg(
        pool=pl.struct("month", "games", "points_x2", "opponent_rating_sum"),
        n_pool=pl.col("games").cast(pl.Int64).sum(),
        p2_pool=pl.col("points_x2").cast(pl.Int64).sum(),
        os_pool=pl.col("opponent_rating_sum").sum(),
        pool_since=pl.col("month").min(),
    )
    return unrated.join(pools, on="player_id", how="left", maintain_order="left").with_columns(
        pl.col("pool").fill_null(pl.lit([], dtype=pl.List(POOL_ENTRY))),
        *(pl.col(name).fill_null(0) for name in ("n_pool", "p2_pool", "os_pool")),
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
    separately; everybody else only has the period's columns reset. The parts are merged back in
    player_id order.
    """
    prev = previous if previous is not None and _is_full_list(previous) else normalize_list(previous)
    prev = k_ten_for_good(prev, rules.k)
    game_rows = normalize_games(games, month)

    in_games = pl.concat([game_rows["white_id"], game_rows["black_id"]]).alias("player_id")  # with repeats
    touched_now = pl.col("player_id").is_in(in_games.implode()) | (pl.col("pending").list.len() > 0) | (pl.col("pending_games") > 0)
    prev = prev.with_columns(_touched=touched_now)
    untouched = _next_untouched(prev.filter(~pl.col("_touched")).drop("_touched"))
    touched = prev.filter(pl.col("_touched")).drop("_touched")
    new_ids = in_games.to_frame().join(touched.select("player_id"), on="player_id", how="anti").unique()
    newcomers = _newcomers(new_ids, players)
    touched = pl.concat([touched, newcomers])

    sides, annotated = _sides(game_rows, touched, rules)
    rated_rows = _rated_player_games(sides, rules)
    rated_before = pl.col("rating").is_not_null()
    rated = _next_rated(touched.filter(rated_before), rated_rows, rules, month)
    unrated_touched = touched.filter(~rated_before)
    unrated = _next_unrated(unrated_touched, _newcomer_results(sides, unrated_touched, rules), rules, month)

    last_active = add_months(month, -rules.inactive_after_months)  # 'YYYY-MM' strings sort like the months
    new_list = pl.concat([untouched, rated, unrated]).sort("player_id").with_columns(
        pl.when(pl.col("last_played").is_null()).then(pl.col("inactive"))
        .otherwise(pl.col("last_played") <= last_active).alias("inactive"),
        (pl.col("ever_2400") | (pl.col("rating") >= 2400).fill_null(False)).alias("ever_2400"),
    )
    # The list's K column is the K of the next period (FIDE semantics), before the K x n cap.
    new_list = new_list.with_columns(k=development_coefficient(rules.k, parse_month(add_months(month, 1))[0]))
    return PeriodResult(rating_list=conform(new_list, RatingList), rated_games=_rated_games_table(annotated, rated_rows, month))


def _newcomers(ids: pl.DataFrame, players: pl.DataFrame | None) -> pl.DataFrame:
    """List rows for players seen for the first time (column player_id): everyone in a game joins the list, unrated."""
    if players is not None and "birth_year" in players.columns and ids.height:
        births = players.select(pl.col("player_id").cast(pl.Int64), pl.col("birth_year").cast(pl.Int32, strict=False))
        births = births.join(ids, on="player_id", how="semi").unique("player_id", keep="first")
        ids = ids.join(births, on="player_id", how="left")
    return normalize_list(ids)


def _next_untouched(untouched: pl.DataFrame) -> pl.DataFrame:
    """Players without games and without a pool: ratings unchanged, the period's own columns reset."""
    return untouched.with_columns(
        pl.when(pl.col("rating").is_not_null()).then(pl.lit(0, dtype=pl.Int32)).alias("change"),
        pl.lit(None, dtype=pl.Int16).alias("k_used"),
        pl.lit(0, dtype=pl.Int32).alias("games"),
        pl.lit(False).alias("delisted"),
        pl.lit(False).alias("newly_rated"),
        pl.lit(None, dtype=pl.Utf8).alias("pending_since"),
    )


def _next_rated(rated: pl.DataFrame, rated_rows: pl.DataFrame, rules: RuleSet, month: str) -> pl.DataFrame:
    """Players rated before the period: the change of §8.3, and the floor's delisting."""
    state = _with_rating_changes(rated.drop("change", "k_used", "games"), rated_rows, rules, parse_month(month)[0])
    played = pl.col("n").is_not_null()
    updated = pl.col("rating") + pl.col("change")
    delisted = played & below_floor(updated, rules)
    return state.with_columns(delisted=delisted).select(
        "player_id",
        pl.when(pl.col("delisted")).then(pl.lit(None, dtype=pl.Int32)).when(played).then(updated)
        .otherwise(pl.col("rating")).alias("rating"),
        pl.when(played).then(pl.col("change")).otherwise(pl.lit(0, dtype=pl.Int32)).alias("change"),
        "k",
        "k_used",
        pl.col("n").fill_null(0).alias("games"),
        (pl.col("games_total") + pl.col("n").fill_null(0)).alias("games_total"),
        "inactive",
        "delisted",
        pl.lit(False).alias("newly_rated"),
        "birth_year",
        "ever_2400",
        pl.when(played).then(pl.lit(month)).otherwise(pl.col("last_played")).alias("last_played"),
        pl.lit(0, dtype=pl.Int32).alias("pending_games"),
        pl.lit(None, dtype=pl.Utf8).alias("pending_since"),
        pl.lit([], dtype=pl.List(POOL_ENTRY)).alias("pending"),
    ).pipe(conform, RatingList)


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
        rated_rows["side_row"], rated_rows["expected_h"] / 100.0)
    table = (
        annotated.with_columns(white_expected=expected.slice(0, games), black_expected=expected.slice(games, games))
        .select(
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
    )
    return conform(table, RatedGames).sort("game_id")



def compress(rating_list: pl.DataFrame, threshold: int = 2000, factor: float = 0.4, fresh_start: bool = True) -> pl.DataFrame:
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
