"""A newcomer's first rating on the player card (§8.2, §7.1.4).

The pool the engine rated, read back from the store, and the figures of the one rule function
(regulations.initial_rating_terms).

The list before the period holds the player's pool (`pending`: games, half points and the sum of the opponents'
ratings of each month); the period's rated_games hold its games with each opponent's rating used and the game's
weight. The engine's pool for the list is the entries still in the pool window plus the period's games against a
rated opponent in a time control the list rates, less a first event disregarded (§8.2.1): that is what is added up
here, and the rating it gives is compared with the list's. A player still unrated after the period gets one line:
how many of the games a first rating needs are pooled, since when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import (
    FirstRatingRule,
    InitialRatingTerms,
    below_floor,
    counting_game,
    disregarded_first_event,
    enough_games_for_first_rating,
    first_rating_rule,
    in_pool_window,
    initial_rating_terms,
    played_before,
)
from pipeline.store.monthly import store_failed, unreadable_table
from pipeline.store.object_store import ObjectStore
from pipeline.text import escape_text
from schemas.rating_list import POOL_ENTRY

#: A pool's entries as the card adds them up: one row a month (the list's `pending` entries, and the period's).
POOL_SCHEMA = pl.Schema({"month": pl.Utf8, "games": pl.Int64, "points_x2": pl.Int64, "opponent_rating_sum": pl.Int64})
#: What the card reads of the player's row of a list: the pool, and whether they had played before.
POOL_ROW = ("pending", "pending_games", "pending_since", "last_played")
GAMES_TABLE = "games"  # the validated games (schemas.games): each game's event_start, which §8.2.1 orders events by


@dataclass(frozen=True)
class FirstRating:
    """The pool behind a first rating the list published (`published`), or the pool an unrated player holds on it."""

    published: bool
    entries: pl.DataFrame  # POOL_SCHEMA: the entries counted, in month order
    expired: pl.DataFrame  # POOL_SCHEMA: earlier entries out of the pool window, not counted
    disregarded: pl.DataFrame  # event_id, games, points_x2: a first event §8.2.1 disregards (no row: none)
    rule: FirstRatingRule | None  # the list's rule in figures; None: a scenario the scenarios file does not hold
    terms: InitialRatingTerms | None  # the rule function's figures for the pool's totals; None without rules or games
    listed_rating: int | None
    listed_games: int  # newly rated: the list's rated games (the pool); unrated: the games its pool holds
    since: str | None = None  # unrated: the pool's first month as the list states it
    # Unrated: whether the pool holds the games a first rating needs (enough_games_for_first_rating), and whether the
    # rating it gives is under the floor (below_floor); None without the rule set (or, for the floor, a rating).
    enough_games: bool | None = None
    below_floor: bool | None = None

    def totals(self) -> tuple[int, int, int]:
        """(games, half points, sum of the opponents' ratings) of the entries counted."""
        sums = self.entries.select(pl.col("games", "points_x2", "opponent_rating_sum").sum())
        return sums["games"].item() or 0, sums["points_x2"].item() or 0, sums["opponent_rating_sum"].item() or 0


def pool_row(store: ObjectStore, list_key: str, player_id: int) -> dict | None:
    """The player's POOL_ROW of the stored list `list_key` ({} where the player is not on it); None where the list
    is not stored or keeps no pools (a rating system's).
    """
    if not store.exists(list_key):
        return None
    scan = store.scan_parquet(list_key)
    if not set(POOL_ROW) <= set(scan.collect_schema().names()):
        return None
    rows = scan.filter(pl.col("player_id") == player_id).select(POOL_ROW).collect()
    return rows.row(0, named=True) if rows.height else {}


def _entries(pending: list | None) -> pl.DataFrame:
    return pl.DataFrame(pending or [], schema=POOL_ENTRY.to_schema()).cast(POOL_SCHEMA).select(list(POOL_SCHEMA))


def first_rating(
    store: ObjectStore,
    rules: RuleSet | None,
    month: str,
    period: Sequence[str],
    player_id: int,
    player_games: pl.DataFrame,
    list_row: dict,
    own: dict | None,
    before: dict | None,
) -> FirstRating | None:
    """The first rating the list of `month` gave the player, or the pool they hold on it; None for a rated player,
    one without a pool, or a list that keeps no pools (`own`: pool_row of the list of `month`, `before`: of the list
    before the period, None where it is not stored).

    `player_games`: the period's rated_games rows of the player; `rules`: the list's rule set (None: not known; the
    pool is then shown as stored, without the formula).
    """
    if own is None:
        return None
    no_events = pl.DataFrame(schema={"event_id": pl.Utf8, "games": pl.Int64, "points_x2": pl.Int64})
    if not list_row.get("newly_rated"):
        if list_row.get("rating") is not None or not own.get("pending_games"):
            return None
        entries = _entries(own.get("pending"))
        terms = _terms(rules, entries)
        pooled = int(own["pending_games"])
        enough = under_floor = None
        if rules is not None:
            enough = bool(pl.select(enough_games_for_first_rating(pl.lit(pooled), rules)).item())
            if terms is not None:
                under_floor = bool(pl.select(below_floor(pl.lit(int(terms.rating[0])), rules)).item())
        return FirstRating(
            published=False,
            entries=entries,
            expired=entries.clear(),
            disregarded=no_events,
            rule=first_rating_rule(rules) if rules is not None else None,
            terms=terms,
            listed_rating=None,
            listed_games=pooled,
            since=own.get("pending_since"),
            enough_games=enough,
            below_floor=under_floor,
        )
    held = before or {}
    earlier = _entries(held.get("pending")).filter(pl.col("games") > 0)
    expired = earlier.clear()
    if rules is not None:
        window = in_pool_window(rules, month)
        earlier, expired = earlier.filter(window), earlier.filter(~window)
    sides = _counting_sides(player_games, player_id)
    # The engine's "debuted" (played_before): a player who played a rated period or holds a pool is past their first
    # event.
    held_row = pl.DataFrame(
        {"last_played": [held.get("last_played")], "pending_games": [held.get("pending_games")]},
        schema={"last_played": pl.Utf8, "pending_games": pl.Int64},
    )
    debuted = bool(held_row.select(played_before()).item())
    disregarded = no_events
    if rules is not None and not debuted and sides.height:
        sides = _with_event_start(store, period, sides)
        gone = sides.select(disregarded_first_event(rules)).to_series()
        disregarded = (
            sides.filter(gone)
            .group_by("event_id", maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("games"), pl.col("points_x2").sum())
        )
        sides = sides.filter(~gone)
    this = sides.select(
        pl.lit(month).alias("month"),
        pl.len().cast(pl.Int64).alias("games"),
        pl.col("points_x2").sum(),
        pl.col("opponent_rating").sum().alias("opponent_rating_sum"),
    ).filter(pl.col("games") > 0)
    entries = pl.concat([earlier, this.cast(POOL_SCHEMA)])
    return FirstRating(
        published=True,
        entries=entries,
        expired=expired,
        disregarded=disregarded,
        rule=first_rating_rule(rules) if rules is not None else None,
        terms=_terms(rules, entries),
        listed_rating=list_row.get("rating"),
        listed_games=int(list_row.get("games") or 0),
    )


def _counting_sides(player_games: pl.DataFrame, player_id: int) -> pl.DataFrame:
    """The player's games that reach §8.2 (the engine's counting sides, regulations.counting_game): game_id, event_id,
    month, points_x2, opponent_rating, player_id.
    """
    white = pl.col("white_id") == player_id
    return (
        player_games.filter(white | (pl.col("black_id") == player_id))
        .select(
            "game_id",
            "event_id",
            "month",
            (pl.when(white).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")) * 2)
            .round()
            .cast(pl.Int64)
            .alias("points_x2"),
            pl.when(white)
            .then(pl.col("black_rating_used"))
            .otherwise(pl.col("white_rating_used"))
            .cast(pl.Int64)
            .alias("opponent_rating"),
            "weight",
        )
        .filter(counting_game(pl.col("weight"), pl.col("opponent_rating")))
        .drop("weight")
        .with_columns(pl.lit(player_id, dtype=pl.Int64).alias("player_id"))
    )


def _with_event_start(store: ObjectStore, period: Sequence[str], sides: pl.DataFrame) -> pl.DataFrame:
    """`sides` with each game's event_start from the period's stored games tables; a game none of them holds starts
    on its month's first day (what the engine gives a game without a start, normalize_games).
    """
    wanted = sides["game_id"].implode()
    found = [pl.DataFrame(schema={"game_id": pl.UInt64, "event_start": pl.Date})]
    for month in period:
        key = ObjectStore.table_key(GAMES_TABLE, month)
        if not store.exists(key):
            continue
        try:
            found.append(
                store.scan_parquet(key)
                .filter(pl.col("game_id").is_in(wanted))
                .select(pl.col("game_id").cast(pl.UInt64), pl.col("event_start").cast(pl.Date))
                .collect()
            )
        except (pl.exceptions.PolarsError, OSError) as error:
            if store_failed(error):
                raise
            raise unreadable_table(store, key, error) from None
    starts = pl.concat(found).unique("game_id")
    fallback = (pl.col("month") + "-01").str.to_date("%Y-%m-%d")
    return sides.join(starts, on="game_id", how="left").with_columns(pl.col("event_start").fill_null(fallback))


def _terms(rules: RuleSet | None, entries: pl.DataFrame) -> InitialRatingTerms | None:
    if rules is None or entries.is_empty():
        return None
    sums = entries.select(pl.col("games", "points_x2", "opponent_rating_sum").sum())
    return initial_rating_terms(rules, *(sums[c].to_numpy().astype(np.int64) for c in sums.columns))


# -- the card's lines --------------------------------------------------------------------------------------------------


def _points(points_x2: int) -> str:
    return f"{points_x2 / 2:g}"


def _entry_text(row: dict) -> str:
    return (
        f"{row['month']}: {row['games']} games, {_points(row['points_x2'])} points, opponents' ratings "
        f"{row['opponent_rating_sum']:,}"
    )


def first_rating_lines(figures: FirstRating, scenario: str, events: int | None = 0) -> list[str]:
    """The card's lines on a first rating (published) or an unrated player's pool; text from dumps (event ids) is
    escaped for a terminal, the page escapes the lines as a whole. `events`: the month's one-time events' share of
    the list's rating (a compression's uplift, which a first rating of its month receives too); None: the month had
    one whose share is not kept, so the rating is not compared.
    """
    if not figures.published:
        return [_pending_line(figures)]
    rule, terms = figures.rule, figures.terms
    window = f" of the last {rule.pool_months} months" if rule is not None else ""
    lines = [f"First rating (§8.2) from the games against rated opponents{window}, pooled (§7.1.4):"]
    if figures.entries.height > 1:
        lines += [f"  {_entry_text(row)}" for row in figures.entries.iter_rows(named=True)]
    for row in figures.disregarded.iter_rows(named=True):
        least = f"under {rule.first_event_min_points:g} points " if rule and rule.first_event_min_points else ""
        lines.append(
            f"  not counted: the first event '{escape_text(row['event_id'])}', {row['games']} games, "
            f"{_points(row['points_x2'])} points (§8.2.1: a first event {least}is disregarded)"
        )
    if figures.expired.height:
        gone = ", ".join(f"{row['month']} ({row['games']} games)" for row in figures.expired.iter_rows(named=True))
        lines.append(f"  left the pool, older than its window: {gone}")
    n, points_x2, opponents = figures.totals()
    months = f" ({figures.entries['month'][0]})" if figures.entries.height == 1 else ""
    lines.append(f"  pooled: {n} games, {_points(points_x2)} points, opponents' ratings {opponents:,}{months}")
    if rule is None or terms is None:
        lines.append(
            f"The rule set of {scenario} is not in the scenarios file (--scenarios): the pool's window, a first event "
            f"disregarded (§8.2.1) and the formula are not applied here; the list's rating {figures.listed_rating} "
            f"({figures.listed_games} games)."
        )
        return lines
    return lines + _formula_lines(figures, rule, terms, events)


def _formula_lines(
    figures: FirstRating, rule: FirstRatingRule, terms: InitialRatingTerms, events: int | None
) -> list[str]:
    """Ra, p, dp (or the plus-score), Ru and the cap, from the rule function's terms; then the list's rating."""
    n, points_x2, opponents = int(terms.n[0]), int(terms.points_x2[0]), int(terms.opponent_sum[0])
    percent, dp, bonus = int(terms.percent[0]), int(terms.dp[0]), float(terms.bonus[0])
    uncapped, rating = int(terms.uncapped[0]), int(terms.rating[0])
    lines = []
    if rule.hypothetical_games:
        lines.append(
            f"  with {rule.hypothetical_games} hypothetical opponents rated {rule.hypothetical_rating}, each game "
            f"drawn (§8.2.2): {n} games, {_points(points_x2)} points, opponents' ratings {opponents:,}"
        )
    ra = opponents / n
    p_text = f"p = {_points(points_x2)} / {n} = {percent / 100:.2f} (to the hundredth, half up)"
    if rule.per_half_point is None or points_x2 < n:
        added, how = "dp", f"{p_text}; dp = {dp:+d} (table 8.1.1)"
    elif points_x2 == n:
        added, how = "0", f"{p_text}: 50 %, nothing added"
    else:
        over = f"{points_x2 - n} half points over 50 % x {rule.per_half_point:g} = {bonus:+g}"
        added, how = f"{bonus:g}", f"{p_text}: {over}"
    lines.append(f"  Ra = {opponents:,} / {n} = {ra:.2f}; {how}")
    capped = f", at most {rule.max_rating}: {rating}" if rating != uncapped else ""
    lines.append(f"  Ru = Ra + {added} = {ra + bonus:.2f}, rounded {uncapped}{capped}")
    games = figures.totals()[0]
    if events is None:
        return [
            *lines,
            f"First rating {rating} from {games} games; the list's rating {figures.listed_rating} "
            f"({figures.listed_games} games) also holds the month's one-time event (a compression), whose share is "
            "not kept (kept/rate/): rating the month again keeps it, and this card then compares the two.",
        ]
    with_events = f", with the month's one-time event (a compression) {events:+d}, {rating + events}" if events else ""
    same = rating + events == figures.listed_rating and games == figures.listed_games
    lines.append(
        f"First rating {rating} from {games} games{with_events}: {'equal to' if same else 'NOT equal to'} the list's "
        f"rating {figures.listed_rating} ({figures.listed_games} games)."
    )
    return lines


def _pending_line(figures: FirstRating) -> str:
    """One line on an unrated player's pool: the games of the minimum a first rating needs, since when."""
    n, since = figures.listed_games, figures.since or "-"
    rule, terms = figures.rule, figures.terms
    if rule is None:
        return (
            f"Unrated: {n} games against rated opponents pooled since {since} (§7.1.4; the rule set is not known here)."
        )
    if not figures.enough_games:
        return (
            f"Unrated: {n} of the {rule.min_games} games against rated opponents a first rating needs are pooled since "
            f"{since} (§7.1.4)."
        )
    pooled = (
        f"Unrated: {n} games against rated opponents pooled since {since}, at least the {rule.min_games} a first "
        "rating needs"
    )
    if terms is None:
        return f"{pooled}; no first rating was published (§7.1.4)."
    rating = int(terms.rating[0])
    if figures.below_floor:
        return f"{pooled}; the rating they give, {rating}, is below the floor {rule.floor} (§7.1.4)."
    return f"{pooled}; the rating they give, {rating}, was NOT published on the list (§7.1.4)."
