"""Code versions: a hash of the pure modules each asset runs, so a change of logic marks its outputs stale."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import pipeline

_PIPELINE = Path(pipeline.__file__).resolve().parent
_ROOT = _PIPELINE.parent

#: The top-level leaves of pipeline/ every stage runs (months, the record hashes, text escaping, the settings).
LEAF_MODULES = ("months.py", "hashing.py", "text.py", "settings.py")
#: The folders of pipeline/ whose code decides each stage's output, beside LEAF_MODULES and schemas/ (the columns of
#: every table). Whole folders, so a module added to one is hashed without a list to keep; tests/test_layout.py
#: checks that they hold the import closure of each stage's asset modules. The registry and the seed list (ingest/,
#: read with formats/) feed every rating chain; the report index links the published lists (publish/). A file
#: entry is that module alone: the time-control classes and the reporting calendar by era (rules/time_controls.py,
#: rules/calendar.py) decide the games read and validated, and the rule sets' presets beside them do not.
TIME_CONTROL_RULES = ("rules/__init__.py", "rules/time_controls.py", "rules/calendar.py")
#: What a list rests on: the engine and its rules, the scenarios' chains and systems, the registry and its files.
RATED_LISTS = ("engine", "rules", "scenarios", "systems", "whole_history", "ingest", "formats", "store")
STAGE_SOURCES: dict[str, tuple[str, ...]] = {
    "ingest": ("ingest", "formats", "store", "validate", *TIME_CONTROL_RULES),
    "validate": ("validate", "ingest", "formats", "store", *TIME_CONTROL_RULES),
    "rate": RATED_LISTS,
    "analyse": ("analytics", "reports", "publish", "evaluation", *RATED_LISTS, "validate"),
    "publish": ("publish", *RATED_LISTS, "validate"),
}


def _is_source(path: Path) -> bool:
    """A module, or a preset a rule set or system is read from; not the scenarios file (each scenario's definition
    goes into its own assets' versions, so adding a scenario leaves the others' alone), nor compiled caches.
    """
    if "__pycache__" in path.parts:
        return False
    return path.suffix == ".py" or (path.suffix == ".yaml" and path.parent.name == "presets")


@cache
def stage_files(stage: str) -> tuple[Path, ...]:
    """The files hashed into a stage's code version: its folders' sources, the leaves and schemas/, sorted."""
    if stage not in STAGE_SOURCES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGE_SOURCES)}")
    entries = [_PIPELINE / entry for entry in STAGE_SOURCES[stage]]
    found = (path for entry in entries for path in ([entry] if entry.is_file() else entry.rglob("*")))
    files = {path for path in found if _is_source(path)}
    files |= {_PIPELINE / name for name in LEAF_MODULES}
    files |= {path for path in (_ROOT / "schemas").rglob("*.py") if _is_source(path)}
    return tuple(sorted(files, key=lambda path: path.relative_to(_ROOT).as_posix()))


@cache
def _sources_digest(stage: str) -> bytes:
    """One hash over the stage's files: each one's path from the project root (a move is a change) and its bytes."""
    digest = hashlib.sha256()
    for path in stage_files(stage):
        digest.update(path.relative_to(_ROOT).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


@cache
def code_version(stage: str, extra: str = "") -> str:
    """First 12 hex digits of a hash over the stage's source files (and `extra`, e.g. a scenario's definition)."""
    return hashlib.sha256(_sources_digest(stage) + extra.encode()).hexdigest()[:12]
