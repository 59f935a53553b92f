"""Corrections carried forward (recalculation `forward`) from a stored list to the next list.

What a stored list would have been with the games the files give now, and the points that difference adds to the next
list (pipeline.scenarios.recalculation).

A stored list M keeps its tables; the list M would have had with the corrected games is rated in memory only. The
correction of a player rated on both versions is their rating on the corrected M minus their rating on the stored M:
the change M published was wrong by this much, with M's own K and ratings used. It is added to the next list not
stored yet, as its `correction` column (rating = previous rating + change + correction, the change staying the one
its own games give), and each list that carries corrections records them in
lists/<scenario>/<YYYY-MM>.corrections.csv, so that a later run does not carry them twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.months import parse_month
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import (
    below_floor,
    development_coefficient,
    mark_elite_reached,
    reached_elite,
    year_of_list_k,
)
from pipeline.scenarios.amendments import LISTS_PREFIX, list_file_months
from pipeline.store.object_store import ObjectStore, redact_url
from schemas.rating_list import POOL_ENTRY, RatingList
from schemas.util import conform

CORRECTION = "correction"
#: Points per player and corrected list: the correction's part of a list (and of a corrections file's rows).
POINTS_SCHEMA = pl.Schema({"month": pl.Utf8, "player_id": pl.Int64, CORRECTION: pl.Int32})
#: The columns of lists/<scenario>/<YYYY-MM>.corrections.csv (a contract: scripts read them): the list whose games
#: were corrected, the player, the points this list carries for it.
RECORD_COLUMNS = tuple(POINTS_SCHEMA)
#: The metadata key of the corrections file a list writes.
CORRECTIONS_FILE = "corrections_file"


@dataclass(frozen=True)
class ListCorrection:
    """How the corrected version of a list differs from the stored one."""

    points: pl.DataFrame  # player_id, correction (corrected - stored; never 0), in player_id order
    # Players the correction changes otherwise: rated on one version only, or unrated on both with another pool of
    # unrated games (not carried: a scenario under `full` re-rates them); in id order.
    not_carried: pl.Series


def list_correction(stored: pl.DataFrame, corrected: pl.DataFrame) -> ListCorrection:
    """The correction of a list: `corrected` (the list rated again with the games the files give now) against
    `stored` (the list as stored), player by player.
    """
    columns = ["player_id", "rating", "pending_games", "pending"]
    no_pool = pl.lit([], dtype=pl.List(POOL_ENTRY))
    joined = (
        stored.select(columns)
        .join(corrected.select(columns), on="player_id", how="full", coalesce=True, suffix="_corrected")
        .with_columns(
            # A player on one version only: unrated, without a pool, on the other.
            pl.col("pending_games", "pending_games_corrected").fill_null(0),
            pl.col("pending", "pending_corrected").fill_null(no_pool),
        )
    )
    rated, rated_corrected = pl.col("rating").is_not_null(), pl.col("rating_corrected").is_not_null()
    both = rated & rated_corrected
    points = (
        joined.filter(both & (pl.col("rating") != pl.col("rating_corrected")))
        .select("player_id", (pl.col("rating_corrected") - pl.col("rating")).cast(pl.Int32).alias(CORRECTION))
        .sort("player_id")
    )
    pool_differs = (pl.col("pending_games") != pl.col("pending_games_corrected")) | (
        pl.col("pending").ne_missing(pl.col("pending_corrected"))
    )
    otherwise = (rated != rated_corrected) | (~rated & ~rated_corrected & pool_differs)
    return ListCorrection(points, joined.filter(otherwise)["player_id"].sort())


def with_corrections(
    rating_list: pl.DataFrame, previous: pl.DataFrame, points: pl.DataFrame, rules: RuleSet, month: str
) -> tuple[pl.DataFrame, pl.Series]:
    """The list of `month` (as its games rated it, from `previous`) with `points` (player_id, correction) added, and
    the ids of the players `points` names that it cannot correct (not rated on `previous`, or neither rated on it nor
    delisted by its games).

    A corrected rating goes through the rule set's floor as a rating its games gave would (regulations.below_floor:
    below it, the player is delisted; a player the games delisted is listed again when the correction lifts him
    above it), and the corrected players' K for the next period and elite flag are those of their corrected rating.
    Everybody else's row is the list's.
    """
    if points.is_empty():
        return rating_list, pl.Series("player_id", [], dtype=pl.Int64)
    before = mark_elite_reached(previous.select("player_id", "rating", "k", "ever_2400"), rules.k).select(
        "player_id", _before="rating", _elite_before="ever_2400"
    )
    # A rating to correct: on the list before and on this one (or delisted by this month's games).
    rows = rating_list.join(points.select("player_id", _points=CORRECTION), on="player_id", how="inner")
    correctable = rows.join(before, on="player_id", how="inner").filter(
        pl.col("_before").is_not_null() & (pl.col("rating").is_not_null() | pl.col("delisted"))
    )
    not_applied = points.join(correctable.select("player_id"), on="player_id", how="anti")["player_id"].sort()
    # The rating the month's games gave, before the floor: the list's, or previous + change where they delisted.
    games_rating = pl.coalesce(pl.col("rating"), pl.col("_before") + pl.col("change"))
    corrected = correctable.with_columns(_corrected=games_rating + pl.col("_points"))
    below = below_floor(pl.col("_corrected"), rules)
    corrected = corrected.with_columns(
        rating=pl.when(below).then(pl.lit(None)).otherwise(pl.col("_corrected")).cast(pl.Int32),
        delisted=below,
        ever_2400=pl.col("_elite_before").fill_null(False),
        correction=pl.col("_points"),
    ).with_columns(ever_2400=reached_elite(rules.k))
    corrected = corrected.with_columns(k=development_coefficient(rules.k, year_of_list_k(month)))
    updated = conform(corrected, RatingList).select("player_id", "rating", CORRECTION, "k", "delisted", "ever_2400")
    carried = rating_list.update(updated, on="player_id", how="left", include_nulls=True)
    return conform(carried, RatingList), not_applied


def stored_points(rating_list: pl.DataFrame) -> pl.DataFrame:
    """player_id and correction of the players a stored list corrects (none for a list stored without the column)."""
    if CORRECTION not in rating_list.columns:
        return pl.DataFrame(schema={"player_id": pl.Int64, CORRECTION: pl.Int32})
    return rating_list.filter(pl.col(CORRECTION).is_not_null()).select("player_id", CORRECTION)


def corrections_key(scenario: str, month: str) -> str:
    """lists/<scenario>/<YYYY-MM>.corrections.csv: the corrections the list of the month carries."""
    parse_month(month)
    return f"{LISTS_PREFIX}/{scenario}/{month}.corrections.csv"


def record_corrections(store: ObjectStore, scenario: str, month: str, carried: pl.DataFrame) -> dict[str, object]:
    """The corrections the list of `month` carries (POINTS_SCHEMA rows) written to corrections_key (a stale file of an
    earlier run removed when there are none); the metadata naming it.
    """
    key = corrections_key(scenario, month)
    if carried.is_empty():
        if store.exists(key):
            store.remove(key)
        return {}
    rows = carried.select(RECORD_COLUMNS).sort("month", "player_id")
    store.write_with(lambda handle: rows.write_csv(handle), key)
    return {CORRECTIONS_FILE: redact_url(store.url(key))}


def recorded_corrections(store: ObjectStore, scenario: str, skipped: set[str]) -> pl.DataFrame:
    """Every corrections file of the scenario but those of the `skipped` lists (a run rates them again): POINTS_SCHEMA
    rows plus `list`, the list that carried them, in list order.
    """
    frames = []
    for carrier in list_file_months(store, scenario, [".corrections.csv"]):
        if carrier in skipped:
            continue
        with store.open(corrections_key(scenario, carrier)) as handle:
            rows = pl.read_csv(handle.read(), schema=POINTS_SCHEMA)
        frames.append(rows.with_columns(list=pl.lit(carrier)))
    if not frames:
        return pl.DataFrame(schema={**POINTS_SCHEMA, "list": pl.Utf8})
    return pl.concat(frames)
