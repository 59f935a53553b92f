"""One writer per store (the lock `ratings run` holds, the per-store run limit) and faults that name their cause."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pipeline.cli.run_options import exposed_ui_warning
from pipeline.store.lock import (
    EXIT_LOCKED,
    LOCK_KEY,
    STORE_TAG,
    StoreLock,
    StoreLocked,
    held_lock_files,
    store_lock,
    store_tag,
)
from pipeline.store.object_store import ObjectStore, StoreFault, fault_line

ROOT = Path(__file__).resolve().parents[1]
HOLD = (
    "import sys, time\n"
    "from pipeline.store.object_store import ObjectStore\n"
    "from pipeline.store.lock import store_lock\n"
    "with store_lock(ObjectStore(sys.argv[1])):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(float(sys.argv[2]))\n"
)


def hold_in_another_process(root: str, seconds: float = 120) -> subprocess.Popen:
    """A real second process holding the store's lock until it ends (or is killed)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, root, str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_process_is_refused_with_who_holds_the_lock_then_takes_over_once_it_is_killed(
    tmp_path: Path, capsys
) -> None:
    store = ObjectStore(str(tmp_path))
    holder = hold_in_another_process(str(tmp_path))
    try:
        with pytest.raises(StoreLocked) as refused, store_lock(store):
            pass
        message = str(refused.value)
        assert f"pid {holder.pid} on " in message and str(tmp_path) in message and "-c" in message
        assert "since 20" in message and "--wait" in message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / LOCK_KEY).exists()  # SIGKILL released nothing but the kernel's flock
    with store_lock(store, out=sys.stdout) as lock:
        assert lock.me.pid == os.getpid()
    assert f"took over the lock of a run that ended without releasing it (pid {holder.pid}" in capsys.readouterr().out
    assert not (tmp_path / LOCK_KEY).exists()


def test_the_lock_is_released_on_an_exception_and_on_ctrl_c(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    for interruption in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(interruption)), store_lock(store):
            assert (tmp_path / LOCK_KEY).exists()
            raise interruption
        assert not (tmp_path / LOCK_KEY).exists()
        with store_lock(store):  # free again, at once
            pass


def test_a_held_local_lock_is_listed_for_the_runs_worker_processes_to_hold_too(tmp_path: Path) -> None:
    # They are handed its open file (pipeline.operations.waves; tests/test_waves.py kills a run with workers).
    with store_lock(ObjectStore(str(tmp_path))):
        held = held_lock_files()
        assert len(held) == 1 and os.fstat(held[0]).st_ino == (tmp_path / LOCK_KEY).stat().st_ino
    assert held_lock_files() == []


def test_wait_waits_for_the_holder_to_finish(tmp_path: Path, capsys) -> None:
    holder = hold_in_another_process(str(tmp_path), seconds=3)
    started = time.monotonic()
    with store_lock(ObjectStore(str(tmp_path)), wait=True, out=sys.stdout):
        waited = time.monotonic() - started
    holder.wait()
    assert waited > 1.0
    assert f"Waiting for the lock of {tmp_path}, held by pid {holder.pid}" in capsys.readouterr().out


def test_s3_lock_is_exclusive_stale_when_its_process_died_and_released_only_by_its_owner(s3_root: str) -> None:
    store = ObjectStore(s3_root)
    first = StoreLock(store)
    assert first.try_acquire()[0]
    try:
        second = StoreLock(store)
        acquired, holder, _ = second.try_acquire()
        assert not acquired and holder is not None and holder.token == first.me.token
        with pytest.raises(StoreLocked, match=f"pid {os.getpid()} on "):
            with store_lock(store):
                pass
    finally:
        first.release()
    assert not store.fs.exists(f"{store.base}/{LOCK_KEY}")

    # A lock left by a process of this host that has ended is taken over (one conditional PUT on its ETag).
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = StoreLock(store)
    orphan.me = orphan.me.__class__(orphan.me.host, dead.pid, orphan.me.since, "ratings run", uuid.uuid4().hex)
    assert orphan.try_acquire()[0]
    orphan._beating.set()  # its heartbeat stops, as the process's would
    orphan._etag = None  # and it never releases
    taker = StoreLock(store)
    acquired, previous, note = taker.try_acquire()
    assert acquired and previous.pid == dead.pid and "ended without releasing it" in note
    orphan._etag = "stale"
    orphan.release()  # the old owner's release leaves the new owner's lock alone
    assert StoreLock(store).try_acquire()[0] is False
    taker.release()


@pytest.mark.integration
def test_two_ratings_runs_on_one_store_the_second_refused_in_one_line(tiny_landing_zone: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(tiny_landing_zone, store / "raw")
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  actual:\n    description: FIDE 2014\n    rules: fide-2014\n")
    command = [sys.executable, "-m", "assets", "run", "--store", str(store), "--scenarios", str(scenarios)]
    first = subprocess.Popen(
        [*command, "--dagster-home", str(tmp_path / "h1")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (store / LOCK_KEY).exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    second = subprocess.run(
        [*command, "--dagster-home", str(tmp_path / "h2")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, out + err
    assert second.returncode == EXIT_LOCKED, second.stdout + second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {first.pid} on " in lines[0] and "run --store" in lines[0], lines
    assert "Rating" not in second.stdout  # refused before planning anything
    assert not (store / LOCK_KEY).exists()


@pytest.mark.integration
def test_a_ratings_run_is_refused_while_a_run_dagster_launched_writes_the_store(tmp_path: Path, capsys) -> None:
    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRun

    from assets.runtime.runs import run_store, wait_for_dagster_runs

    store = ObjectStore(str(tmp_path / "store"))
    store.write_text("x", "raw/GER/2024-01/a.csv")
    home = tmp_path / "home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        # A sensor's run on the store, started by the daemon: no store lock, no pid tag.
        started = DagsterRun(job_name="all_months", tags=store_tag(store), status=dg.DagsterRunStatus.STARTED)
        instance.add_run(started)
        instance.add_run(
            DagsterRun(job_name="all_months", tags=store_tag(store), status=dg.DagsterRunStatus.NOT_STARTED)
        )
        with pytest.raises(StoreLocked) as refused:
            run_store(store.url(), dagster_home=str(home))
        assert str(refused.value) == (
            f"{store.url()} is in use by another run (Dagster run {started.run_id} of all_months, started); "
            f"not started: run again when it has finished, or add --wait"
        )
        assert not (tmp_path / "store" / LOCK_KEY).exists() and "Rating" not in capsys.readouterr().out
        instance.report_run_failed(started)
        wait_for_dagster_runs(store, str(home), wait=False, out=sys.stdout)  # one not started yet waits behind us


@pytest.mark.integration
def test_a_run_launched_from_the_ui_without_the_store_tag_counts_as_writing_the_store(tmp_path: Path) -> None:
    """The UI's runs carry no `ratings/store` tag; the store's instance is its own, so any of its runs writing is
    writing this store, unless it names another store.
    """
    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRun

    from assets.runtime.runs import wait_for_dagster_runs

    store = ObjectStore(str(tmp_path / "store"))
    home = tmp_path / "home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        other = store_tag(ObjectStore(str(tmp_path / "other")))
        instance.add_run(DagsterRun(job_name="__ASSET_JOB", tags=other, status=dg.DagsterRunStatus.STARTED))
        wait_for_dagster_runs(store, str(home), wait=False, out=sys.stdout)  # another store's run
        backfill = DagsterRun(
            job_name="__ASSET_JOB", tags={"dagster/backfill": "ui"}, status=dg.DagsterRunStatus.STARTED
        )
        instance.add_run(backfill)
        with pytest.raises(StoreLocked) as refused:
            wait_for_dagster_runs(store, str(home), wait=False, out=sys.stdout)
        assert f"Dagster run {backfill.run_id} of __ASSET_JOB, started" in str(refused.value)


@pytest.mark.integration
def test_runs_of_a_store_carry_its_tag_and_the_shipped_instance_allows_one_per_store(tmp_path: Path) -> None:
    import dagster as dg
    from dagster._utils.tags import TagConcurrencyLimitsCounter

    from assets.definitions import ALL_MONTHS_JOB, build_defs
    from assets.runtime.runs import INSTANCE_YAML

    tag = store_tag(ObjectStore(str(tmp_path / "a")))
    assert build_defs("2024-01", "2024-02", root=str(tmp_path / "a")).resolve_job_def(ALL_MONTHS_JOB).tags == tag
    shutil.copy(INSTANCE_YAML, tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits

    def run(store: str, status: dg.DagsterRunStatus) -> dg.DagsterRun:
        return dg.DagsterRun(job_name=ALL_MONTHS_JOB, run_id=str(uuid.uuid4()), status=status, tags={STORE_TAG: store})

    busy = run("s3://chess/a", dg.DagsterRunStatus.STARTED)
    counter = TagConcurrencyLimitsCounter(limits, [busy])
    assert counter.is_blocked(run("s3://chess/a", dg.DagsterRunStatus.NOT_STARTED))
    assert not counter.is_blocked(run("s3://chess/b", dg.DagsterRunStatus.NOT_STARTED))


# -- faults --------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_full_disk_names_the_file_and_the_cause_and_the_summary_still_prints(
    tiny_landing_zone: Path, tmp_path: Path, small_disk: Path, capsys
) -> None:
    from assets.runtime.cli import main

    shutil.copytree(tiny_landing_zone, small_disk / "raw")
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  actual:\n    description: FIDE 2014\n    rules: fide-2014\n")
    code = main(
        ["run", "--store", str(small_disk), "--scenarios", str(scenarios), "--dagster-home", str(tmp_path / "h")]
    )
    out = capsys.readouterr().out
    assert code == 1
    last = out.strip().splitlines()[-1]
    assert last.startswith("Run stopped by a store fault: No space left on device (ENOSPC) writing "), last
    assert str(small_disk) in last and "Traceback" not in out
    assert "Run FAILED" in out and "games validated:" in out  # the closing summary
    assert not (small_disk / LOCK_KEY).exists()  # released although the disk is full


@pytest.mark.integration
def test_an_unreachable_store_names_the_url_and_never_the_credentials(s3_root: str, monkeypatch) -> None:
    from tests.servers import FAKE_KEY_ID, FAKE_SECRET, free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    with pytest.raises(StoreFault) as fault:
        ObjectStore(s3_root).write_bytes(b"x", "reports", "x.txt")
    line = str(fault.value)
    assert line.startswith("object store unreachable: connection failed writing s3://chess/")
    assert line.endswith("/reports/x.txt") and FAKE_KEY_ID not in line and FAKE_SECRET not in line


def test_faults_are_recognised_by_errno_and_by_the_os_error_of_rust_code(tmp_path: Path) -> None:
    import errno

    assert fault_line("/s/x", OSError(errno.EIO, "Input/output error")) == "Input/output error (EIO) at /s/x"
    named = PermissionError(errno.EACCES, "Permission denied", "/s/y")
    assert fault_line("/s", named, "reading") == "Permission denied (EACCES) reading /s/y"
    rust = RuntimeError("parquet: underlying IO error: No space left on device (os error 28)")
    assert fault_line("s3://b/p", rust).startswith("No space left on device (ENOSPC) at s3://b/p")
    assert fault_line("/s", ValueError("a bad month")) is None  # not a store fault: left to the step's message


def test_the_ui_warns_when_it_listens_beyond_this_machine() -> None:
    assert exposed_ui_warning("127.0.0.1") is None and exposed_ui_warning("localhost") is None
    for host in ("0.0.0.0", "::", "192.168.1.5"):
        warning = exposed_ui_warning(host)
        assert warning and host in warning and "no login" in warning and "delete" in warning
