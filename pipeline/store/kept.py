"""What a run keeps for the next: derived rows with a description of what they were made from, used only when whole."""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

import polars as pl

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
        self, store: ObjectStore, code: str, columns: list[str] | None = None
    ) -> tuple[pl.DataFrame, dict[str, Any]] | None:
        """The kept rows (only `columns` when given) and their description; None when none are kept by `code`, or
        they cannot be read (they are made again).
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
