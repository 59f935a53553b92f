"""What a month's list changed when it was rated again: the changes file, and the version it replaced kept beside it.

FIDE does not rewrite a published list (a late or corrected report changes the next list); the English federation
recalculates its last six lists every month, the Irish rating application records, for every republished list, how
many players were created, kept, updated and deleted. Whatever a scenario's recalculation policy, a list that is
materialized again and differs from the stored one says so: lists/<scenario>/<YYYY-MM>.changes.csv names every
player whose rating changed (and every player who appeared or disappeared), and
lists/<scenario>/<YYYY-MM>.previous.parquet holds the stored list as it was, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from pipeline.ingest.registry import registry_history, registry_in_force
from pipeline.months import parse_month
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import published_text_columns
from schemas.list_changes import LIST_CHANGE_KINDS, ListChanges
from schemas.util import polars_schema

#: Where the readable lists and the changes files are: lists/<scenario>/.
LISTS_PREFIX = "lists"
#: The changes file's columns and types, in order (schemas.list_changes: a contract, scripts outside the project read
#: them).
CHANGES_SCHEMA = polars_schema(ListChanges)
#: What happened to a player between the two versions (`change`).
CREATED, UPDATED, DELETED = LIST_CHANGE_KINDS
#: The metadata keys of an amended month (the materialization's and the run summary's), in order.
COUNT_KEYS = ("players_created", "players_updated", "players_deleted", "players_otherwise_changed")


def changes_key(scenario: str, month: str) -> str:
    """lists/<scenario>/<YYYY-MM>.changes.csv."""
    parse_month(month)
    return f"{LISTS_PREFIX}/{scenario}/{month}.changes.csv"


def previous_key(scenario: str, month: str) -> str:
    """lists/<scenario>/<YYYY-MM>.previous.parquet: the stored list the last amendment replaced."""
    parse_month(month)
    return f"{LISTS_PREFIX}/{scenario}/{month}.previous.parquet"


def list_changes(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """CHANGES_SCHEMA rows (name null) of the players whose rating differs between two versions of a list (a
    rating gained or lost counts), or who are on one version only; in player_id order.
    """
    before = old.select("player_id", old_rating="rating", old_games="games", _old=pl.lit(True))
    after = new.select("player_id", new_rating="rating", new_games="games", _new=pl.lit(True))
    joined = before.join(after, on="player_id", how="full", coalesce=True)
    change = (
        pl.when(pl.col("_old").is_null())
        .then(pl.lit(CREATED))
        .when(pl.col("_new").is_null())
        .then(pl.lit(DELETED))
        .when(pl.col("old_rating").ne_missing(pl.col("new_rating")))
        .then(pl.lit(UPDATED))
    )
    return (
        joined.with_columns(change=change, name=pl.lit(None, dtype=pl.Utf8))
        .filter(pl.col("change").is_not_null())
        .select(list(CHANGES_SCHEMA))
        .cast(CHANGES_SCHEMA)
        .sort("player_id")
    )


def change_counts(old: pl.DataFrame, new: pl.DataFrame, changes: pl.DataFrame) -> dict[str, int]:
    """COUNT_KEYS of an amendment: players created, updated (rating), deleted, and those whose row changed in another
    column only (games, K, flags) with the same rating.
    """
    counted = {kind: int((changes["change"] == kind).sum()) for kind in (CREATED, UPDATED, DELETED)}
    shared = [column for column in old.columns if column in new.columns]
    both = old.select(shared).join(new.select(shared), on="player_id", how="inner", suffix="_new")
    differs = pl.any_horizontal(
        pl.col(column).ne_missing(pl.col(f"{column}_new")) for column in shared if column != "player_id"
    )
    otherwise = int(both.select(differs.sum()).item()) - counted[UPDATED]
    return {
        "players_created": counted[CREATED],
        "players_updated": counted[UPDATED],
        "players_deleted": counted[DELETED],
        "players_otherwise_changed": otherwise,
    }


def record_amendment(
    store: ObjectStore,
    scenario: str,
    list_path: Sequence[str],
    month: str,
    new: pl.DataFrame,
    names: Callable[[pl.Series], pl.DataFrame],
) -> dict[str, Any] | None:
    """When `new` replaces a stored list of `month` that differs from it: the stored file kept as previous_key, the
    changes file written (names(player_ids) gives player_id and name), and the counts (COUNT_KEYS) with both
    places returned; None when no list is stored or it equals `new` (a rerun that changes nothing writes nothing).
    Call it before `new` is written.
    """
    key = table_key(list_path, month)
    if not store.exists(key):
        return None
    old = store.read_parquet(key)
    if _same_list(old, new):
        return None
    changes = list_changes(old, new)
    named = changes.drop("name").join(names(changes["player_id"]), on="player_id", how="left")
    changes = named.select(list(CHANGES_SCHEMA))
    counts = change_counts(old, new, changes)
    store.write_bytes(store.read_bytes(key), previous_key(scenario, month))
    # Names come from dumps: printable, and a cell a spreadsheet would evaluate neutralised, as in the CSV list.
    published = published_text_columns(changes, spreadsheet=True)
    store.write_with(lambda handle: published.write_csv(handle), changes_key(scenario, month))
    return {
        **counts,
        "changes_file": redact_url(store.url(changes_key(scenario, month))),
        "previous_list": redact_url(store.url(previous_key(scenario, month))),
    }


def _same_list(old: pl.DataFrame, new: pl.DataFrame) -> bool:
    """Whether `new` says what the stored `old` says: the same rows, where a column `old` was stored without (the
    model gained it since, as `correction`) is empty in `new`.
    """
    added = [column for column in new.columns if column not in old.columns]
    if any(new[column].null_count() < new.height for column in added):
        return False
    kept = [column for column in new.columns if column not in added]
    return kept == old.columns and all(_same_column(old[name], new[name]) for name in kept)


def _same_column(old: pl.Series, new: pl.Series) -> bool:
    """Series.equals, nulls equal; a list column compared as its lengths and its flattened values: Polars compares a
    list of structs row by row (half a CPU-second for a fide-scale list's pools, more than all its other columns).
    """
    if old.dtype != new.dtype:
        return False
    if isinstance(old.dtype, pl.List):
        return old.list.len().equals(new.list.len()) and _same_column(old.explode(), new.explode())
    if isinstance(old.dtype, pl.Struct):
        fields = (_same_column(old.struct.field(name), new.struct.field(name)) for name in old.struct.fields)
        return old.is_null().equals(new.is_null()) and all(fields)
    return old.equals(new)


def list_file_months(store: ObjectStore, scenario: str, suffixes: Sequence[str]) -> list[str]:
    """The months of the scenario with a file lists/<scenario>/<YYYY-MM><suffix> for one of `suffixes`, in order."""
    prefix = f"{LISTS_PREFIX}/{scenario}/"
    months = set()
    for key in store.list_files(LISTS_PREFIX, scenario):
        for suffix in suffixes:
            if key.startswith(prefix) and key.endswith(suffix):
                stem = key[len(prefix) : -len(suffix)]
                try:
                    parse_month(stem)
                except ValueError:
                    continue
                months.add(stem)
    return sorted(months)


def amended_months(store: ObjectStore, scenario: str) -> list[str]:
    """The months of the scenario with a changes file (lists/<scenario>/<YYYY-MM>.changes.csv), in order."""
    return list_file_months(store, scenario, [".changes.csv"])


def player_amendments(store: ObjectStore, scenario: str, player_id: int) -> pl.DataFrame:
    """CHANGES_SCHEMA rows (plus `month`) of one player in every changes file of the scenario, in month order."""
    frames = []
    for month in amended_months(store, scenario):
        with store.open(changes_key(scenario, month)) as handle:
            rows = pl.read_csv(handle.read(), schema=CHANGES_SCHEMA)
        found = rows.filter(pl.col("player_id") == player_id)
        if found.height:
            frames.append(found.with_columns(month=pl.lit(month)))
    if not frames:
        return pl.DataFrame(schema={**CHANGES_SCHEMA, "month": pl.Utf8})
    return pl.concat(frames)


def lazy_names(store: ObjectStore, last_month: str) -> Callable[[str], Callable[[pl.Series], pl.DataFrame]]:
    """Month -> (player ids -> player_id and name in the registry in force in the month; null where it names none).
    The registry is read only when a list is amended (record_amendment asks), once for the run.
    """
    made: list[pl.DataFrame] = []

    def of_month(month: str) -> Callable[[pl.Series], pl.DataFrame]:
        def names(player_ids: pl.Series) -> pl.DataFrame:
            if not made:
                made.append(registry_history(store, last_month))
            rows = made[0].filter(pl.col("player_id").is_in(player_ids.implode()))
            named = registry_in_force(rows, month).select("player_id", "name")
            return named.with_columns(pl.when(pl.col("name") != "").then(pl.col("name")).alias("name"))

        return names

    return of_month


def amendment_line(scenario: str, month: str, amended: dict[str, Any]) -> str:
    """The run's words for an amended list: what changed and where it is written."""
    return (
        f"{scenario}: the list of {month} was rated again and differs from the stored one: "
        f"{amended['players_updated']} rating(s) changed, {amended['players_created']} player(s) added, "
        f"{amended['players_deleted']} removed, {amended['players_otherwise_changed']} otherwise changed; "
        f"changes in {amended['changes_file']}, the replaced list in {amended['previous_list']}"
    )
