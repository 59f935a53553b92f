"""The object-store resource: where the landing zone and every table live (the IO manager holds one too)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from pipeline.storage import ObjectStore, store_root_from_env

ROOT_DESCRIPTION = (
    "Object-store root: a local directory or any fsspec URL such as s3://bucket/prefix. "
    "Empty means $RATINGS_STORE, else ./data. Credentials come from the usual AWS variables, never from here."
)


def open_store(root: str | None) -> ObjectStore:
    """The ObjectStore for a configured root, falling back to $RATINGS_STORE / ./data at run time."""
    return ObjectStore(root or store_root_from_env())


class ObjectStoreResource(dg.ConfigurableResource):
    """Where the landing zone (raw/) and every table live; assets that read raw files or earlier months use it."""

    root: str | None = Field(default=None, description=ROOT_DESCRIPTION)

    def store(self) -> ObjectStore:
        return open_store(self.root)
