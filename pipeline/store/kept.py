"""What a run keeps for the next: derived rows with a description of what they were made from, used only when whole."""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.code_versions import code_version
from pipeline.store.object_store import ObjectStore


def read_description(store: ObjectStore, key: str, code: str | None = None) -> dict[str, Any] | None:
    """The JSON object at `key`; None when there is none, it cannot be read, or `code` is given and is not its "code".

    What is kept is derived (deleting it is safe): a description that cannot be read means "make it again", never a
    failed run.
    """
    try:
        if not store.exists(key):
            return None
        described = json.loads(store.read_bytes(key))
    except Exception:  # damaged or gone between the two calls; the store's and json's errors differ
        return None
    if not isinstance(described, dict) or (code is not None and described.get("code") != code):
        return None
    return described


@dataclass(frozen=True)
class KeptRows:
    """Rows a run keeps in `folder`: a Parquet file of their own named `<prefix>...`, and the description `folder/
    <description>` naming it ("rows") with what the rows were made from and the code that made them ("code").
    """

    folder: str
    description: str
    prefix: str
    #: "lz4" for rows read back on every run's path (about a quarter of zstd's CPU to read), else the store's zstd.
    compression: str = "zstd"

    @property
    def description_key(self) -> str:
        return f"{self.folder}/{self.description}"

    def described(self, store: ObjectStore, code: str | None = None) -> dict[str, Any] | None:
        """The description (read_description)."""
        return read_description(store, self.description_key, code)

    def read(
        self, store: ObjectStore, code: str | None, columns: list[str] | None = None
    ) -> tuple[pl.DataFrame, dict[str, Any]] | None:
        """The kept rows (only `columns` when given) and their description; None when none are kept by `code` (None:
        by any code, the caller checks what they were made from), or they cannot be read (they are made again).
        """
        described = self.described(store, code)
        if described is None:
            return None
        try:
            return store.read_parquet(f"{self.folder}/{described['rows']}", columns=columns), described
        except Exception:  # the rows gone or damaged; pyarrow's, Polars' and the store's errors differ
            return None

    def keep(self, store: ObjectStore, described: dict[str, Any], name: str, rows: pl.DataFrame) -> None:
        """Keep `rows` as `name` (`prefix` first), described by `described` ("code" and what they were made from): the
        rows to their file first, then the description naming them (each write atomic), then older rows go. A run
        killed half way leaves the previous description and its rows, or the new ones.
        """
        assert name.startswith(self.prefix), name
        key = f"{self.folder}/{name}"
        if self.compression == "lz4":
            store.write_with(lambda handle: rows.write_parquet(handle, compression="lz4"), key)
        else:
            store.write_parquet(rows, key)
        store.write_bytes(json.dumps({**described, "rows": name}).encode(), self.description_key)
        for stored in store.list_stamps(self.folder):
            base = posixpath.basename(stored)
            if base.startswith(self.prefix) and base != name:
                store.remove(stored)


#: What the chain keeps of a month with a one-time event (derived: deleting it is safe): the ratings of the month's
#: list after its games and before its events. No stored table holds that list (the stored one is after the events),
#: and rating the month again outside the chain misses what the chain adds (the lists in force at an event's start,
#: the registry, a later list's newcomers), so the compression page (pipeline.reports.writer) reads it from here.
KEPT_BEFORE_EVENTS = "kept/rate"
BEFORE_EVENTS_COLUMNS = ["player_id", "rating"]


def _before_events(scenario: str, month: str) -> KeptRows:
    return KeptRows(f"{KEPT_BEFORE_EVENTS}/{scenario}", f"before-events-{month}.json", f"before-events-{month}-")


def ratings_digest(rating_list: pl.DataFrame) -> str:
    """SHA-256 of a list's player ids and ratings (unrated as -1), in its order: which list a record goes with."""
    digest = hashlib.sha256()
    for column in BEFORE_EVENTS_COLUMNS:
        values = rating_list[column].cast(pl.Int64).fill_null(-1).to_numpy()
        digest.update(values.astype("<i8", copy=False).tobytes())
    return digest.hexdigest()


def keep_list_before_events(
    store: ObjectStore, scenario: str, month: str, after_games: pl.DataFrame, rating_list: pl.DataFrame
) -> None:
    """Keep the rated players' ratings of `after_games` (the list of `month` before its one-time events), described
    by the digest of `rating_list` (the list after them, which the chain stores next) and the code that rated them.
    """
    listed = ratings_digest(rating_list)
    kept = _before_events(scenario, month)
    rows = after_games.filter(pl.col("rating").is_not_null()).select(BEFORE_EVENTS_COLUMNS)
    described = {"code": code_version("rate"), "month": month, "list": listed}
    kept.keep(store, described, f"{kept.prefix}{listed[:16]}.parquet", rows)


def list_before_events(store: ObjectStore, scenario: str, month: str, stored: pl.DataFrame) -> pl.DataFrame | None:
    """The ratings (BEFORE_EVENTS_COLUMNS, rated players) of the list of `month` before its one-time events, kept by
    the chain when it rated `stored` (the stored list of the month); None when none is kept for that list: the
    month was rated by code that kept none, the record was deleted, or the run that kept it stopped before storing
    its list.

    Whatever code kept it: a record goes with the list rated beside it, so a change of code that has not rated the
    month again leaves both as they were.
    """
    kept = _before_events(scenario, month).read(store, None)
    if kept is None or kept[1].get("month") != month or kept[1].get("list") != ratings_digest(stored):
        return None
    return kept[0]
