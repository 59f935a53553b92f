"""Shared fixtures (a throw-away store, one tiny generated landing zone) and the test tiers: fast, integration, slow."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 600 KB tmpfs (a disk that fills mid-run), unmounted after the test; skipped where it cannot be mounted."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


# The fast tier (`make test-fast`) is the pure code: a test is `integration` when it lives in a module
# that runs Dagster, servers, a browser or the installed command, or uses a fixture that does.
INTEGRATION_MODULES = {
    "test_cli",
    "test_dagster",
    "test_operations",
    "test_player",
    "test_published_list",
    "test_run",
    "test_scale_out",
    "test_security",
    "test_storage_s3",
    "test_ui",
}
INTEGRATION_FIXTURES = {
    "tiny_store",
    "s3_server",
    "s3_root",
    "restartable_s3",
    "postgres_server",
    "webserver",
    "rated_tiny",
    "tiny_runs",
    "system_runs",
    "redis_server",
    "small_disk",
}
INTEGRATION_TESTS = {
    "test_an_undated_game_sent_again_in_a_later_month_is_a_duplicate_there",
    "test_crosstable_and_index_render_in_headless_chromium",
    "test_two_scenarios_diverge_exactly_from_the_switch_month",
    "test_rate_period_compress_flag_is_the_same_compression",
    "test_importing_the_pipeline_first_keeps_polars_freed_memory_for_reuse",  # two processes, pausing for the allocator
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if (
            module in INTEGRATION_MODULES
            or INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))
            or item.originalname in INTEGRATION_TESTS
        ):
            item.add_marker(pytest.mark.integration)


# Servers for the operations tests (SeaweedFS S3 with a moto fallback, PostgreSQL, Redis): each starts only
# when a test asks for it, once per test worker, on free loopback ports.
from tests.servers import postgres_server, redis_server, restartable_s3, s3_root, s3_server  # noqa: E402,F401
