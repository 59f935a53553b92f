"""Code versions: a hash of the pure modules each asset runs, so a change of logic marks its outputs stale."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import pipeline

_PIPELINE = Path(pipeline.__file__).resolve().parent
_SCHEMAS = _PIPELINE.parent / "schemas"

# Which sources decide each stage's output (the schemas decide the columns of every table).
STAGE_SOURCES = {
    "ingest": ["formats/*.py", "ingest/read.py", "hashing.py", "ingest/landing.py"],
    "validate": ["validate/split.py", "hashing.py", "validate/month_figures.py"],
    "rate": [
        "engine/*.py",
        "rules/regulations.py",
        "rules/model.py",
        "rules/tables.py",
        "scenarios/model.py",
        "scenarios/chain.py",
        "scenarios/system_step.py",
        "systems/*.py",
        "rules/presets/*.yaml",
    ],
    "analyse": ["analytics/*.py", "reports/*.py"],
    "publish": ["publish/lists.py", "formats/fide_list.py", "ingest/read.py"],
}


@cache
def code_version(stage: str, extra: str = "") -> str:
    """First 12 hex digits of a hash over the stage's source files (and `extra`, e.g. a scenario's definition)."""
    digest = hashlib.sha256(extra.encode())
    files = sorted(p for pattern in STAGE_SOURCES[stage] for p in _PIPELINE.glob(pattern))
    files += sorted(_SCHEMAS.glob("*.py"))
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
