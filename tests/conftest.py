"""Shared fixtures: a throw-away object store per test and one tiny generated landing zone per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TINY_START, TINY_END = "2024-01", "2024-04"


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty object-store root, also exported as RATINGS_STORE so env defaults point at it."""
    root = tmp_path / "store"
    root.mkdir()
    monkeypatch.setenv("RATINGS_STORE", str(root))
    return str(root)


@pytest.fixture(scope="session")
def tiny_landing_zone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """raw/ of a 400-player federation over 2024-01..2024-04, generated once (seeded, deterministic)."""
    from pipeline.generator import generate  # imported here: only the end-to-end tests need it

    root = tmp_path_factory.mktemp("tiny")
    generate(str(root), seed=1, players=400, start=TINY_START, end=TINY_END)
    return root / "raw"


@pytest.fixture
def tiny_store(tiny_landing_zone: Path, store_root: str) -> str:
    """A fresh store holding a copy of the tiny landing zone, so each test materializes from scratch."""
    shutil.copytree(tiny_landing_zone, Path(store_root) / "raw")
    return store_root


# Servers for the operations tests (SeaweedFS S3 with a moto fallback, PostgreSQL): each starts only
# when a test asks for it, once per test worker, on free loopback ports.
from tests.servers import postgres_server, restartable_s3, s3_root, s3_server  # noqa: E402,F401
