"""Fingerprints of the landing zone: one content version per month from its dumps' keys, sizes and etags/mtimes."""

from __future__ import annotations

import hashlib
import posixpath
import re

from pipeline.storage import ObjectStore

REGISTRY_FOLDER = "players"
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def _stamp(info: dict) -> str:
    """What changes when a file's content does: S3's ETag, else the modification time."""
    for field in ("ETag", "etag", "mtime", "LastModified", "last_modified", "created"):
        if info.get(field) is not None:
            return str(info[field])
    return ""


def month_fingerprints(store: ObjectStore) -> dict[str, str]:
    """Month -> a version of all dumps under raw/<federation>/<month>/ (the registry excluded).

    A new, replaced or removed dump changes the month's version, so Dagster can tell which months'
    downstream tables are stale after a late correction.
    """
    top = store.path("raw")
    if not store.fs.exists(top):
        return {}
    lines_by_month: dict[str, list[str]] = {}
    for path, info in store.fs.find(top, detail=True).items():
        key = store.relative(path)
        parts = key.split("/")
        if len(parts) < 4 or parts[1] == REGISTRY_FOLDER or not _MONTH.match(parts[2]):
            continue
        lines_by_month.setdefault(parts[2], []).append(f"{key}\t{info.get('size')}\t{_stamp(info)}")
    return {
        month: hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16]
        for month, lines in sorted(lines_by_month.items())
    }


def month_of_key(key: str) -> str | None:
    """'raw/GER/2024-01/x.trf' -> '2024-01' for a dump key; None for other keys."""
    parts = posixpath.normpath(key).split("/")
    if len(parts) >= 4 and parts[0] == "raw" and parts[1] != REGISTRY_FOLDER and _MONTH.match(parts[2]):
        return parts[2]
    return None
