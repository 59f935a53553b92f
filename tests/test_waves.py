"""`ratings run` as waves of runs: which runs, in which order, side by side in worker processes (no Dagster)."""

import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

from pipeline.ingest.landing import LandingEntry, dump_bytes
from pipeline.malloc import POLARS_ALLOCATOR_VARIABLE, POLARS_OWN_SETTING, POLARS_RETURNS_FREED_MEMORY
from pipeline.operations import progress
from pipeline.operations.waves import DEFAULT_WORKERS, Stage, month_ranges, run_waves, stages
from pipeline.store.lock import StoreLock
from pipeline.store.object_store import ObjectStore, process_alive

ROOT = Path(__file__).resolve().parents[1]


def test_one_worker_is_one_run_and_more_are_shared_scenarios_comparison() -> None:
    assert stages(["actual", "glicko2"], workers=1) == [[Stage("all", ())]]
    assert stages(["actual", "glicko2"], workers=2) == [
        [Stage("shared", ("ingest", "validate"))],
        [Stage("actual", ("actual",)), Stage("glicko2", ("glicko2",))],
        [Stage("common_games", ("common_games",))],
        [Stage("comparison", ("reports", "evaluation"))],
    ]
    assert DEFAULT_WORKERS == 1  # one run unless asked: side by side measured little faster on 2 cores


def test_more_workers_split_the_shared_tables_into_runs_of_consecutive_months_balanced_by_bytes() -> None:
    months = ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert stages(["actual"], workers=2, months=months, weights=[10, 10, 10, 10])[0] == [
        Stage("shared", ("ingest", "validate"), ("2024-01", "2024-02")),
        Stage("shared", ("ingest", "validate"), ("2024-03", "2024-04")),
    ]
    # Later months hold more games: the cut moves back so that each run reads about as many bytes.
    assert month_ranges(months, [1, 1, 1, 9], 2) == [("2024-01", "2024-03"), ("2024-04", "2024-04")]
    assert month_ranges(months, [9, 1, 1, 1], 2) == [("2024-01", "2024-01"), ("2024-02", "2024-04")]
    assert month_ranges(months, [0, 0, 0, 0], 3) == [
        ("2024-01", "2024-01"),
        ("2024-02", "2024-03"),
        ("2024-04", "2024-04"),
    ]
    assert month_ranges(months[:1], [5], 2) == [("2024-01", "2024-01")]
    assert month_ranges(months[:2], [5, 5], 4) == [("2024-01", "2024-01"), ("2024-02", "2024-02")]
    assert month_ranges([], [], 2) == []
    # One month, or no months given: one shared run over the whole `ratings run`.
    assert stages(["actual"], workers=2, months=months[:1])[0] == [Stage("shared", ("ingest", "validate"))]
    assert stages(["actual"], workers=2)[0] == [Stage("shared", ("ingest", "validate"))]


def test_dump_bytes_add_up_each_months_entries_from_their_stamps() -> None:
    entries = [
        LandingEntry("raw/ENG/2024-01/a.pgn", "dump", "ENG", "2024-01", stamp="100 1700000000"),
        LandingEntry("raw/GER/2024-01/b.trf", "dump", "GER", "2024-01", stamp="50 1700000000"),
        LandingEntry("raw/GER/2024-03/c.trf", "dump", "GER", "2024-03", stamp="7 etag"),
        LandingEntry("raw/readme.txt", "unplaced", problem="not in a month folder", stamp="9 1"),
        LandingEntry("raw/GER/2024-02/d.trf", "dump", "GER", "2024-02"),  # no stamp: counted as nothing
    ]
    assert dump_bytes(entries, ["2024-01", "2024-02", "2024-03"]) == [150, 0, 7]


def outcome_in_process(stage: Stage, fail: str, reporter: object) -> dict:
    """A stand-in for one Dagster run: where it ran, and whether it succeeded."""
    if reporter is not None:
        reporter("rate", "2024-01", 1, 1)  # forwarded to the parent's progress
    allocator = os.environ.get(POLARS_ALLOCATOR_VARIABLE, "")
    return {"stage": stage.name, "pid": os.getpid(), "success": stage.name != fail, "allocator": allocator}


def test_a_waves_runs_go_to_worker_processes_and_a_failed_wave_stops_the_rest() -> None:
    waves = stages(["a", "b", "c"], workers=2)
    done = run_waves(waves, outcome_in_process, ("none",), workers=2)
    assert [o["stage"] for o in done] == ["shared", "a", "b", "c", "common_games", "comparison"]
    pids = {o["stage"]: o["pid"] for o in done}
    # Every stage in a fresh worker process, a wave of one too (the closing run's memory is given back as it goes).
    assert os.getpid() not in set(pids.values())
    assert len(set(pids.values())) == 6

    # Every worker gives Polars' freed memory back after 2 s, not Polars' 0.5 s (pipeline/malloc.py): the allocator
    # reads the setting's options in order and the last of each kind wins (Polars puts its own first).
    def decay(setting: str) -> str:
        return [option for option in setting.split(",") if option.startswith("dirty_decay_ms:")][-1]

    assert {decay(o["allocator"]) for o in done} == {decay(POLARS_RETURNS_FREED_MEMORY)} != {decay(POLARS_OWN_SETTING)}
    stopped = run_waves(waves, outcome_in_process, ("b",), workers=2)
    assert [o["stage"] for o in stopped] == ["shared", "a", "b", "c"]  # no comparison after a failed scenario


def stage_that_takes_long(stage: Stage, folder: str, reporter: object) -> dict:
    """A stand-in for a long Dagster run: says it started (a file named after its stage), then takes 20 s."""
    Path(folder, stage.name).touch()
    time.sleep(20)
    return {"stage": stage.name, "success": True}


def test_ctrl_c_during_a_wave_ends_its_running_workers_and_starts_none_of_its_other_stages(tmp_path: Path) -> None:
    """Ctrl-C (a KeyboardInterrupt in this process, which the workers do not see) while two of a wave's five
    stages run: run_waves raises it once the workers have ended, sent SIGINT after a grace of STOP_GRACE_SECONDS[0],
    long before their stages would have finished, and no worker process is left. The pool's workers would take the
    other stages otherwise (a 10-scenario wave: 50 s after Ctrl-C); at most the one the pool had queued starts.
    """
    import multiprocessing
    import threading

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    def once_two_have_started() -> None:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    watcher = threading.Thread(target=once_two_have_started)
    try:
        watcher.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_waves([[Stage(name, (name,)) for name in "abcde"]], stage_that_takes_long, (str(tmp_path),), 2)
        assert time.monotonic() - started < 15
    finally:
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
    assert multiprocessing.active_children() == []
    assert {path.name for path in tmp_path.iterdir()} in ({"a", "b"}, {"a", "b", "c"})


MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]


def test_a_run_publishing_some_months_leaves_the_lists_out_of_the_chains_and_publishes_with_the_comparison() -> None:
    kept, left_out, added = "kept", "left_out", "added"
    comparison = ("reports", "evaluation")
    # Every month published (--publish all, or a one-month run): the runs as before.
    assert stages(["a"], 1, MONTHS, published=MONTHS) == stages(["a"], 1, MONTHS) == [[Stage("all", ())]]
    assert stages(["a"], 1, MONTHS[3:], published=MONTHS[3:]) == [[Stage("all", ())]]
    # The last month: everything else first, then the lists with the comparison, so the index links them.
    assert stages(["a"], 1, MONTHS, published=MONTHS[3:]) == [
        [Stage("all", (), lists=left_out, left_out=comparison)],
        [Stage("comparison", comparison, ("2024-04", "2024-04"), added)],
    ]
    # None: one run without them.
    assert stages(["a"], 1, MONTHS, published=[]) == [[Stage("all", (), lists=left_out)]]
    # Months published before, not next to the last: a run of their own for each stretch.
    assert stages(["a", "b"], 2, MONTHS, published=["2024-01", "2024-03", "2024-04"])[1:] == [
        [Stage("a", ("a",), lists=left_out), Stage("b", ("b",), lists=left_out)],
        [Stage("common_games", ("common_games",))],
        [Stage("publish", (), ("2024-01", "2024-01"), "only")],
        [Stage("comparison", comparison, ("2024-03", "2024-04"), added)],
    ]
    assert stages(["a"], 2, MONTHS, published=MONTHS)[1] == [Stage("a", ("a",), lists=kept)]


def test_consecutive_stretches() -> None:
    from pipeline.operations.waves import consecutive_stretches

    assert consecutive_stretches([]) == []
    assert consecutive_stretches(["2023-12", "2024-01", "2024-03"]) == [("2023-12", "2024-01"), ("2024-03", "2024-03")]


def test_a_chain_seeded_by_another_chains_list_runs_in_a_wave_after_it() -> None:
    waves = stages(
        ["actual", "actual_rapid", "glicko2", "actual_blitz"], workers=2, seeded=["actual_rapid", "actual_blitz"]
    )
    chains = [[stage.name for stage in wave] for wave in waves[1:-2]]
    assert chains == [["actual", "glicko2"], ["actual_rapid", "actual_blitz"]]
    assert [stage.name for stage in waves[-2]] == ["common_games"]
    # One worker: one run, where Dagster orders the steps by their lineage.
    assert stages(["actual", "actual_rapid"], workers=1, seeded=["actual_rapid"]) == [[Stage("all", ())]]


def test_the_common_games_stage_selects_the_group_of_the_cross_scenario_monthly_tables() -> None:
    from assets.report import COMMON_GROUP
    from pipeline.operations.waves import COMMON_GROUPS

    assert COMMON_GROUPS == (COMMON_GROUP,)


def test_worker_processes_progress_reaches_the_parents_reporter() -> None:
    reports: list[tuple] = []
    previous = progress.install(lambda *report: reports.append(report))
    try:
        done = run_waves(stages(["a", "b"], workers=2), outcome_in_process, ("none",), workers=2)
    finally:
        progress.install(previous)
    # Every run of every wave reported once, from its worker process.
    assert len(reports) == len(done) and set(reports) == {("rate", "2024-01", 1, 1)}


# A `ratings run --workers 2` in miniature: the store's lock, then a wave of two stages whose workers go on after
# their parent is gone (as a Dagster run would, writing) for the seconds its second argument says ('for good': a
# minute).
KILLED_RUN = """
import ctypes, os, sys, time
from pipeline.operations.waves import Stage, run_waves
from pipeline.store.lock import store_lock
from pipeline.store.object_store import ObjectStore


def stage_going_on(stage, root, orphaned_for, reporter):
    if orphaned_for != "for good" and sys.platform.startswith("linux"):
        # PR_SET_PDEATHSIG 0: as where there is none (macOS), so only the lock's file ties this worker to the run.
        ctypes.CDLL(None).prctl(1, *[ctypes.c_ulong(0)] * 4)
    open(os.path.join(root, f"worker-{os.getpid()}"), "w").close()
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.02)
    time.sleep(60 if orphaned_for == "for good" else float(orphaned_for))
    return {"success": True}


if __name__ == "__main__":
    with store_lock(ObjectStore(sys.argv[1])):
        run_waves([[Stage("a", ()), Stage("b", ())]], stage_going_on, tuple(sys.argv[1:]), workers=2)
"""


def running(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    if not os.path.isdir("/proc/self"):  # macOS: no /proc, and launchd reaps orphans at once
        return process_alive(pid)
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def kill_the_run_and_watch(tmp_path: Path, orphaned_for: str) -> tuple[list[float], float]:
    """SIGKILL KILLED_RUN's parent once its two workers run: (the seconds until each worker was gone, until the
    store's lock could be taken). Fails if the lock is taken while a worker still runs.
    """
    script, store = tmp_path / "killed_run.py", tmp_path / "store"
    script.write_text(KILLED_RUN)
    store.mkdir()
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    errors = (tmp_path / "stderr").open("w")  # the killed parent's resource tracker warns of its queues' semaphores
    parent = subprocess.Popen(
        [sys.executable, str(script), str(store), orphaned_for], env={**os.environ, "PYTHONPATH": path}, stderr=errors
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2:
            started = time.monotonic() < deadline and parent.poll() is None
            assert started, f"the workers did not start: {(tmp_path / 'stderr').read_text()}"
            workers = [int(name.name.split("-")[1]) for name in store.glob("worker-*")]
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        parent.wait()
        gone: dict[int, float] = {}
        taken = None
        while taken is None and time.monotonic() - killed < 10:
            lock = StoreLock(ObjectStore(str(store)))
            if lock.try_acquire()[0]:
                lock.release()
                taken = time.monotonic() - killed
            gone |= {pid: time.monotonic() - killed for pid in workers if pid not in gone and not running(pid)}
            lived = [pid for pid in workers if pid not in gone]
            assert taken is None or not lived, f"the lock was taken {taken:.2f} s after the kill while {lived} ran"
            time.sleep(0.02)
        assert taken is not None, f"the lock was not free 10 s after the kill (workers gone: {gone})"
        return [gone[pid] for pid in workers], taken
    finally:
        parent.kill()
        parent.wait()
        for pid in workers:
            if running(pid):  # an orphan the fix failed to end
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        errors.close()


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_worker_processes_of_a_killed_run_die_with_it(tmp_path: Path) -> None:
    gone, taken = kill_the_run_and_watch(tmp_path, "for good")
    # Before: they lived on until their stage ended (a whole Dagster run, 16 s in the audit), writing to the store.
    assert max(gone) < 1.0 and taken < 2.0


@pytest.mark.integration
def test_the_worker_processes_of_a_killed_run_hold_its_lock_until_they_end(tmp_path: Path) -> None:
    gone, taken = kill_the_run_and_watch(tmp_path, "1.5")
    # Before: the lock was free as soon as the parent was gone (0.1 s), the orphans writing on.
    assert min(gone) > 1.0 and taken > 1.0  # and, checked as it went, not before they had all ended
