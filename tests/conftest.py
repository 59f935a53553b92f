"""Shared fixtures (a throw-away store, one tiny generated landing zone) and the test tiers: fast, integration, slow."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TINY_START, TINY_END = "2024-01", "2024-04"
_GUARD = pytest.StashKey[tuple[pytest.MonkeyPatch, list[str]]]()


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
# that runs Dagster, servers, a browser or the installed command, uses a fixture that does, or is named
# below (a test that starts a process, a browser or a Dagster instance in an otherwise pure module).
# The guard after pytest_collection_modifyitems fails a fast-tier test that starts any of them.
INTEGRATION_MODULES = {
    "test_cli",
    "test_dagster",
    "test_instance",  # Dagster's SQLite instance, materializations, a forked process
    "test_month_reads",
    "test_operations",
    "test_player",
    "test_published_list",
    "test_readable_lists",
    "test_reporting_calendar",
    "test_run",
    "test_run_summary",
    "test_scale_out",
    "test_security",
    "test_storage_s3",
    "test_three_lists",
    "test_ui",
    "test_ui_checks",
}
INTEGRATION_FIXTURES = {
    "tiny_store",
    "late_store",
    "s3_server",
    "s3_root",
    "restartable_s3",
    "postgres_server",
    "webserver",
    "rated_tiny",
    "tiny_runs",
    "system_runs",
    "national_runs",
    "whr_runs",
    "uscf_runs",
    "redis_server",
    "small_disk",
}
INTEGRATION_TESTS = {
    "test_a_ui_backfill_of_every_asset_rates_each_chain_in_one_run_and_leaves_no_list_stale",  # a code server
    "test_an_undated_game_sent_again_in_a_later_month_is_a_duplicate_there",
    "test_a_corrected_file_rerated_writes_the_changes_of_exactly_the_players_it_moved",
    "test_late_files_under_each_policy",
    "test_a_corrected_file_goes_into_the_next_list_under_forward",
    "test_games_filed_late_are_said_to_wait_for_the_first_list_not_stored_whatever_the_runs_range",
    "test_a_run_that_finds_a_correction_carries_it_on_its_first_new_list",
    "test_a_withdrawn_correction_is_taken_back_under_forward_and_window",
    "test_later_lists_are_named_stale_while_made_from_a_list_that_changed_since",
    "test_a_late_tournament_waiting_for_the_next_list_ends_when_its_trf_says",
    "test_a_list_carrying_a_correction_whose_own_games_are_corrected_corrects_those_games_alone",
    "test_a_stored_list_whose_list_before_is_rated_otherwise_is_rated_again_not_kept",
    "test_stated_ratings_in_a_run_are_listed_and_counted",
    "test_the_validate_steps_metadata_shows_registry_cells_and_file_names_as_written",  # dg.materialize
    "test_a_chain_lists_only_the_stated_ratings_of_the_games_it_rates",
    "test_a_trf_reported_a_month_late_is_rated_with_the_list_of_its_start_and_too_late_in_june",
    "test_crosstable_and_index_render_in_headless_chromium",
    "test_two_scenarios_diverge_exactly_from_the_switch_month",
    "test_rate_period_compress_flag_is_the_same_compression",
    "test_importing_the_pipeline_first_keeps_polars_freed_memory_for_reuse",  # two processes, pausing for the allocator
    "test_importing_the_pipeline_caps_the_malloc_arenas",  # a fresh interpreter
    "test_an_arena_limit_in_the_environment_is_left_to_glibc",  # a fresh interpreter
    "test_generator_does_not_import_dagster",  # a fresh interpreter
    "test_cpu_seconds_count_the_ended_worker_processes_too",  # a worker process
    "test_a_waves_runs_go_to_worker_processes_and_a_failed_wave_stops_the_rest",  # worker processes
    "test_worker_processes_progress_reaches_the_parents_reporter",  # worker processes
    "test_ctrl_c_during_a_wave_ends_its_running_workers_and_starts_none_of_its_other_stages",  # worker processes
    "test_a_second_process_is_refused_with_who_holds_the_lock_then_takes_over_once_it_is_killed",  # a holder process
    "test_wait_waits_for_the_holder_to_finish",  # a holder process
    # headless chromium
    "test_crosstable_actual_and_expected_are_visible_without_hover_and_in_print",
    "test_the_index_links_no_empty_page",
    "test_score_curve_page_states_windows_months_and_games_per_bin",
    "test_accuracy_page_compares_on_common_games_in_plain_words",
    # test_chain_start's rated_store fixture: `ratings run` on five months, with Dagster's instance
    "test_one_month_rerun_writes_what_the_full_run_wrote",
    "test_a_missing_truncated_or_foreign_list_before_the_run_stops_it_before_anything_is_written",
    "test_a_correction_rerated_from_its_month_gives_what_a_full_run_on_the_corrected_dumps_gives",
    "test_a_changed_definition_registry_or_late_file_before_the_run_is_named_with_where_to_start",
    "test_lists_made_otherwise_are_named_from_their_footers_where_the_instance_has_no_record",
    "test_an_instance_s_stale_record_of_a_table_rated_again_elsewhere_does_not_name_it",
    "test_games_stored_by_another_version_of_the_readers_or_validation_are_named_with_where_to_start",
    "test_a_dagster_rate_step_on_a_fresh_instance_judges_the_month_before_by_its_footers",
    "test_a_dagster_rate_step_names_games_an_older_validation_made_though_its_list_s_version_is_today_s",
    "test_a_dagster_rate_step_trusts_the_footer_over_an_instance_s_stale_record",
    "test_dagster_months_after_a_ratings_run_or_a_dagster_month_of_the_same_code_say_nothing",
    "test_the_commands_a_run_with_its_own_scenarios_file_prints_run_as_printed",
    "test_a_restricted_windowed_system_is_rated_again_from_a_later_month",  # `ratings run`, Dagster's instance
    "test_national_scenarios_alone_skip_the_accuracy_comparison_saying_why_not_failing_the_run",  # an asset's context
    # tests/test_environment.py: a locale, a terminal's encoding or a thread count in a process of its own
    "test_a_non_utf8_locale_reads_non_ascii_file_names_as_a_utf8_one_does",
    "test_output_a_terminal_cannot_encode_is_escaped_not_an_error",
    "test_truth_error_and_accuracy_are_the_same_bytes_whatever_the_thread_count",
    # `ratings run` interrupted in a process of its own (its worker processes too), then run again
    "test_ctrl_c_ends_a_run_in_one_line_with_no_process_left_and_the_rerun_writes_an_uninterrupted_run_s_lists",
    # validate, rate-period and generate interrupted in processes of their own, generate run again
    "test_ctrl_c_and_sigterm_end_every_command_in_one_line_leaving_no_partial_file",
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


# The fast tier is enforced, not just declared: while a test that is neither `integration` nor `slow` runs
# (its fixtures of every scope included), starting a process, a Dagster instance or a listening socket fails it.
class FastTierViolation(pytest.fail.Exception):
    """Raised where a fast-tier test starts what only an integration test may (a BaseException, not caught by
    the code under test's `except Exception`).
    """


def _in_fast_tier(item: pytest.Item) -> bool:
    return item.get_closest_marker("integration") is None and item.get_closest_marker("slow") is None


def _refuse(item: pytest.Item, what: str, started: list[str]) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        detail = f"{what}{': ' + _describe(args) if args else ''}"
        started.append(detail)
        raise FastTierViolation(
            f"{item.nodeid} started {detail} in the fast tier (make test-fast): mark it integration "
            f"(tests/conftest.py: INTEGRATION_MODULES, INTEGRATION_FIXTURES or INTEGRATION_TESTS)",
            pytrace=True,
        )

    return refuse


def _describe(args: tuple[Any, ...]) -> str:
    """The command of a Popen._execute_child call (its first argument after self), else nothing more."""
    command = args[1] if len(args) > 1 else None
    if isinstance(command, (list, tuple)):
        return " ".join(str(part) for part in command)[:200]
    return str(command)[:200] if isinstance(command, (str, bytes)) else type(args[0]).__name__


def _guard(item: pytest.Item, monkeypatch: pytest.MonkeyPatch, started: list[str]) -> None:
    import multiprocessing.process
    import os
    import socket

    from dagster._core.instance import DagsterInstance

    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse(item, "a subprocess (subprocess.Popen)", started))
    monkeypatch.setattr(
        multiprocessing.process.BaseProcess, "start", _refuse(item, "a process (multiprocessing)", started)
    )
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(item, f"a process (os.{name})", started))
    monkeypatch.setattr(socket.socket, "listen", _refuse(item, "a server (socket.listen)", started))
    # DagsterInstance.ephemeral/get/local_temp/from_config, instance_for_test and dg.materialize all construct one.
    monkeypatch.setattr(DagsterInstance, "__init__", _refuse(item, "a Dagster instance (DagsterInstance)", started))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """The guard goes on before the test's fixtures are set up: module- and session-scoped ones included,
    which an autouse fixture would only see after they had started.
    """
    if _in_fast_tier(item):
        monkeypatch, started = pytest.MonkeyPatch(), []
        item.stash[_GUARD] = (monkeypatch, started)  # first: undone at teardown even if _guard fails half-way
        _guard(item, monkeypatch, started)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    outcome = yield
    guard = item.stash.get(_GUARD, None)
    if guard is not None and guard[1] and outcome.excinfo is None:
        # Started off the test's thread (where the raise did not reach the test), or swallowed on the way up.
        outcome.force_exception(
            FastTierViolation(
                f"{item.nodeid} started {guard[1][0]} in the fast tier (make test-fast): mark it integration",
                pytrace=False,
            )
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    guard = item.stash.get(_GUARD, None)
    if guard is not None:
        guard[0].undo()  # teardown (a server fixture stopping its process) runs unguarded
        del item.stash[_GUARD]
    yield


# Servers for the operations tests (SeaweedFS S3 with a moto fallback, PostgreSQL, Redis): each starts only
# when a test asks for it, once per test worker, on free loopback ports.
from tests.servers import postgres_server, redis_server, restartable_s3, s3_root, s3_server  # noqa: E402,F401
