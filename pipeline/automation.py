"""What unattended runs rate: the sensor's cursor of landing-zone fingerprints, changed and unrated months, the start
month.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from pipeline.storage import ObjectStore

# Version 2: fingerprints from pipeline.landing.LandingVersions.rerate_fingerprints (one inventory for
# the UI's data versions and the sensor). Version 1 digested another listing (20 hex digits), so its
# months can never equal today's: decode_cursor reads it as no cursor, and the first tick after the
# upgrade rates only months without a list, as every first tick does, instead of re-rating the chain.
CURSOR_VERSION = 2


def changed_months(previous: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Months whose fingerprint appeared, changed or disappeared, sorted."""
    return sorted(m for m in set(previous) | set(current) if previous.get(m) != current.get(m))


def unrated_months(store: ObjectStore, list_paths: Iterable[str], months: Sequence[str]) -> list[str]:
    """Months lacking the list of at least one chain; `list_paths` are the lists' table paths ('actual/rating_list')."""
    missing: set[str] = set()
    for path in list_paths:  # one listing per chain
        stored = {key.rsplit("/", 1)[-1].removesuffix(".parquet") for key in store.list_files(path)}
        missing.update(m for m in months if m not in stored)
    return sorted(missing)


def rerate_start(changed: list[str], unrated: list[str], first_tick: bool) -> str | None:
    """The first month to re-rate: the earliest change, or earlier when the chain has a gap before it.

    On the first tick (no cursor) only months without a list are rated: existing outputs are trusted.
    """
    if first_tick:
        return unrated[0] if unrated else None
    if not changed:
        return None
    start = changed[0]
    gaps = [m for m in unrated if m < start]
    return gaps[0] if gaps else start


def encode_cursor(fingerprints: Mapping[str, str]) -> str:
    return json.dumps({"version": CURSOR_VERSION, "months": dict(sorted(fingerprints.items()))}, separators=(",", ":"))


def decode_cursor(cursor: str | None) -> dict[str, str] | None:
    """The fingerprints of the last evaluation; None on the first one, or when the cursor is of another version."""
    if not cursor:
        return None
    try:
        document = json.loads(cursor)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict) or document.get("version") != CURSOR_VERSION:
        return None
    months = document.get("months")
    return {str(k): str(v) for k, v in months.items()} if isinstance(months, dict) else None
