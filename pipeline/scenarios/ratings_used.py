"""The rating each side of a game is rated with: the list in force at its event's start.

A rating the dump states is checked against that list and never trusted silently.

B.02 2024 §9.1 lets a tournament be reported up to the third list after it ended (and one ending in the last days of a
month for the next list): such an event is rated in a later period than it started in, with the ratings of the list
in force at its start (FIDE's published calculations show it: an event of 31 October - 2 November 2025 rated in
December used the October list). The list in force on a day is the chain's list of the month before the day's month
(a month without a published list carries the last one).

A dump may state its players' ratings (TRF's rating field, PGN's WhiteElo and BlackElo, a CSV's white_rating). Where
they come from is unknown: a real PGN's Elo tags gave 63 players first ratings from opponents the pool does not rate,
and an Olympiad player was rated from 2231 while the list said 2376. So the list wins: a player rated on the list in
force is rated with the list's rating, and a stated rating never makes an opponent the list does not rate count as
rated. A scenario may trust a source (Scenario.trust_stated_ratings: a federation's folder or a file pattern); its
stated ratings are then used as they are. Every stated rating that differs from the list is listed (player, file,
stated, listed, used) and counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

import numpy as np
import polars as pl

from pipeline.months import add_months, first_day
from pipeline.scenarios.amendments import LISTS_PREFIX
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.restriction import sent_by
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import published_text_columns
from schemas.stated_ratings import StatedRatingDifference, StatedRatings
from schemas.util import conform, polars_schema

#: A stated rating that differs from the list, one row per side (schemas.stated_ratings).
DIFFERENCE_SCHEMA = polars_schema(StatedRatingDifference)
_SIDES = ("white", "black")


def trusted_sources(patterns: Sequence[str], columns: Collection[str]) -> pl.Expr:
    """Whether a game's source is trusted: a federation of `patterns` reported it (sent_by: its kept copy's folder or
    another copy's of the month; `columns`: the games table's), or its file (relative to raw/) matches one as a glob
    (`GER/2024-*/*.trf`).
    """
    if not patterns:
        return pl.lit(False)
    federations = trusted_federations(patterns)
    globs = [p for p in patterns if p not in federations]
    trusted = sent_by(federations, columns) if federations else pl.lit(False)
    for glob in globs:
        trusted = trusted | pl.col("source_file").str.contains(_glob_regex(glob))
    return trusted


def trusted_federations(patterns: Sequence[str]) -> list[str]:
    """The trusted sources that name a federation's folder (raw/<FED>/), not a file glob."""
    return [p for p in patterns if "/" not in p and not any(c in p for c in "*?[")]


def _glob_regex(glob: str) -> str:
    """A file glob as an anchored regular expression Polars reads: `*` any text, `?` one character, the rest as is
    (Python's fnmatch.translate writes atomic groups, which Polars' regex engine does not know).
    """
    parts = {"*": ".*", "?": "."}
    return "^" + "".join(parts.get(character, re.escape(character)) for character in glob) + "$"


class ListsInForce:
    """The chain's lists of the last months, for the ratings of the list in force at an event's start.

    The lists this run made are kept here (the writer may not have stored them yet); earlier ones are read from the
    store.
    """

    #: Lists kept: the late window (third list after the end) and a long tournament's start before it.
    KEPT = 6

    def __init__(self, scenario: Scenario, lists: dict[str, pl.DataFrame], stored_list: Callable[[str], pl.DataFrame]):
        """`lists`: the lists known at the start (month -> list); `stored_list(month)`: the chain's list of an earlier
        month, from the store (the seed list before the chain's start).
        """
        self.stored_list = stored_list
        # Month -> the list's player_id, rating and K, made id-ordered arrays (_arrays) when a game first needs them.
        self.lists: dict[str, pl.DataFrame | tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for month, frame in lists.items():
            self.keep(month, frame)
        self.trusted_patterns = scenario.trust_stated_ratings

    def keep(self, month: str, rating_list: pl.DataFrame) -> None:
        """The chain's list of `month` (the list in force through the month after it)."""
        self.lists[month] = rating_list.select("player_id", "rating", *(["k"] if "k" in rating_list.columns else []))
        self._prune()

    def _prune(self) -> None:
        for old in sorted(self.lists)[: -self.KEPT]:
            del self.lists[old]

    def ratings_used(self, games: pl.DataFrame, period_start: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        """`games` with each side's rating used as the list in force at its event's start gives it, and the stated
        ratings that differ from that list (DIFFERENCE_SCHEMA).

        An event started before `period_start` (the period's first month) is rated with the list in force at its
        start, its rating and its K (`{side}_k_used`, the list's `k` column: the K it published for the period after
        it); one started in the period with the period's list in force, as always (its rating and K used are left
        empty: the engine reads that list). A stated rating is replaced by the list's, or by none where the list does
        not rate the player, unless its source is trusted.
        """
        empty = pl.DataFrame(schema=DIFFERENCE_SCHEMA)
        if games.is_empty() or "event_start" not in games.columns:
            return games, empty
        before = games["event_start"] < first_day(period_start)
        stated = games["white_rating_used"].is_not_null() | games["black_rating_used"].is_not_null()
        needed = before | stated
        if not needed.any():
            return games, empty
        rows = needed.arg_true()
        subset = games.filter(needed).with_columns(
            _late=before.filter(needed),
            _start=pl.when(pl.col("event_start") < first_day(period_start))
            .then(pl.col("event_start").dt.strftime("%Y-%m"))
            .otherwise(pl.lit(period_start)),
            _trusted=trusted_sources(self.trusted_patterns, games.columns),
        )
        filled, differences = [], []
        for side in _SIDES:
            listed_rating, listed_k = self._listed(subset, side)
            joined = subset.with_columns(_listed=listed_rating)
            if bool(subset["_late"].any()):
                k_used = pl.when(pl.col("_late")).then(listed_k).otherwise(pl.lit(None, dtype=pl.Int16))
                column = games[f"{side}_k_used"] if f"{side}_k_used" in games.columns else None
                if column is None:
                    column = pl.repeat(None, games.height, dtype=pl.Int16, eager=True).alias(f"{side}_k_used")
                filled.append(column.cast(pl.Int16).scatter(rows, subset.select(k_used.cast(pl.Int16)).to_series()))
            given = pl.col(f"{side}_rating_used")
            used = (
                pl.when(pl.col("_trusted") & given.is_not_null())
                .then(given)
                .when(pl.col("_late"))
                .then(pl.col("_listed"))
                .otherwise(pl.lit(None, dtype=pl.Int32))
            )
            joined = joined.with_columns(_used=used.cast(pl.Int32))
            # A copy: scatter writes in place, and the month's games are the shared table's.
            filled.append(games[f"{side}_rating_used"].clone().scatter(rows, joined["_used"]))
            differs = given.is_not_null() & given.ne_missing(pl.col("_listed"))
            differences.append(
                joined.filter(differs).select(
                    pl.col(f"{side}_id").cast(pl.Int64).alias("player_id"),
                    pl.col("source_file")
                    if "source_file" in joined.columns
                    else pl.lit(None, dtype=pl.Utf8).alias("source_file"),
                    pl.col("event_id"),
                    pl.col("game_id").cast(pl.UInt64),
                    given.cast(pl.Int32).alias("stated"),
                    pl.col("_listed").cast(pl.Int32).alias("listed"),
                    # What the game is rated with: the list in force where the used column is left empty.
                    pl.coalesce("_used", "_listed").cast(pl.Int32).alias("used"),
                )
            )
        return games.with_columns(filled), pl.concat(differences).sort("game_id", "player_id")

    def _listed(self, subset: pl.DataFrame, side: str) -> tuple[pl.Series, pl.Series]:
        """The rating and K of each row's `side` player on the list in force at the row's `_start` (null: not rated
        there; not listed, or no K given), found by binary search in the lists' id-ordered arrays (no join of a list
        of up to a million players).
        """
        ids = subset[f"{side}_id"].cast(pl.Int64).to_numpy()
        found = np.full(len(ids), -1, dtype=np.int32)
        found_k = np.full(len(ids), -1, dtype=np.int16)
        starts = subset["_start"]
        for start in starts.unique().to_list():
            rows = (starts == start).arg_true().to_numpy()
            list_ids, ratings, ks = self._arrays(add_months(start, -1))
            if not len(list_ids):
                continue
            places = np.minimum(np.searchsorted(list_ids, ids[rows]), len(list_ids) - 1)
            hit = list_ids[places] == ids[rows]
            found[rows[hit]] = ratings[places[hit]]
            found_k[rows[hit]] = ks[places[hit]]
        values = pl.Series("_listed", found, dtype=pl.Int32)
        k_values = pl.Series("_listed_k", found_k, dtype=pl.Int16)
        # A K is the rated player's: an unrated player's K on the list is not the one a rated side is rated with.
        return values.set(values < 0, None), k_values.set((k_values < 0) | (values < 0), None)

    def _arrays(self, month: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The list of `month` as id-ordered arrays of ids, ratings (-1: unrated) and K (-1: none), made once per
        list.
        """
        held = self.lists.get(month)
        if held is None:
            held = self.stored_list(month)
        if isinstance(held, pl.DataFrame):
            ids = held["player_id"].cast(pl.Int64).to_numpy()
            ratings = held["rating"].fill_null(-1).cast(pl.Int32).to_numpy()
            ks = (
                held["k"].fill_null(-1).cast(pl.Int16).to_numpy()
                if "k" in held.columns
                else np.full(len(ids), -1, dtype=np.int16)
            )
            if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
                order = np.argsort(ids, kind="stable")
                ids, ratings, ks = ids[order], ratings[order], ks[order]
            held = self.lists[month] = (ids, ratings, ks)
            self._prune()
        return held


#: The metadata key of a month's count of stated ratings that differ from the list (the run summary adds them up).
STATED_DIFFERING = "stated_ratings_differing"


def stated_differences_key(scenario: str, month: str) -> str:
    """lists/<scenario>/<YYYY-MM>.stated-ratings.csv: the month's stated ratings that differ from the list."""
    return f"{LISTS_PREFIX}/{scenario}/{month}.stated-ratings.csv"


def record_stated_differences(
    store: ObjectStore, scenario: str, month: str, differences: pl.DataFrame
) -> dict[str, object]:
    """The month's differing stated ratings written to stated_differences_key, one row per player, file, event and
    statement (schemas.stated_ratings.StatedRatings; a stale file of an earlier run removed when there are none); the
    metadata that counts them.
    """
    key = stated_differences_key(scenario, month)
    if differences.is_empty():
        if store.exists(key):
            store.remove(key)
        return {}
    # One row per player and event statement: how many of the event's games it was stated in.
    statement = [column for column in polars_schema(StatedRatings) if column != "games"]
    per_event = conform(
        differences.group_by(statement)
        .agg(games=pl.len().cast(pl.Int32))
        .sort("player_id", "source_file", "event_id", "stated"),
        StatedRatings,
    )
    # File names and event names come from dumps: printable, a cell a spreadsheet would evaluate neutralised.
    published = published_text_columns(per_event, spreadsheet=True)
    store.write_with(lambda handle: published.write_csv(handle), key)
    return {
        STATED_DIFFERING: per_event.height,
        "stated_ratings_players": differences["player_id"].n_unique(),
        "stated_ratings_file": redact_url(store.url(key)),
    }
