"""`ratings run` on a federation's own landing zone, and `ratings demo` never generating where it should not."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from assets.cli import main
from pipeline.run_report import may_generate
from pipeline.storage import ObjectStore
from pipeline.validate import LOCAL_ID_BASE
from tests.test_cli import ratings

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
MONTH = "2005-07"  # example1.trf: 28-31 July 2005


@pytest.fixture
def one_scenario(tmp_path: Path) -> Path:
    """FIDE's 2014 rules with monthly lists, alone (in 2005 FIDE's lists were quarterly: July's games would wait)."""
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  actual:\n    description: FIDE 2014, monthly\n    rules: fide-2014\n")
    return path


def realdata(*parts: str) -> Path:
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (shared/realdata not mounted)")
    return path


def run(store: Path, scenarios: Path, home: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["run", "--store", str(store), "--scenarios", str(scenarios), "--dagster-home", str(home), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def validate_count(path: Path, capsys) -> int:
    assert main(["validate", str(path), "--json"]) == 0
    import json

    return json.loads(capsys.readouterr().out)["files"][0]["games"]


def test_example1_with_a_fide_list_is_rated_and_named(tmp_path: Path, one_scenario: Path, capsys):
    trf, fide_list = realdata("example1.trf"), realdata("fide-lists-2004", "APR04FRL.TXT")
    store = tmp_path / "store"
    (store / "raw" / "GER" / MONTH).mkdir(parents=True)
    (store / "raw" / "players" / MONTH).mkdir(parents=True)
    shutil.copyfile(trf, store / "raw" / "GER" / MONTH / trf.name)
    shutil.copyfile(fide_list, store / "raw" / "players" / MONTH / fide_list.name)
    expected = validate_count(trf, capsys)

    code, out, _ = run(store, one_scenario, tmp_path / "home", capsys)
    assert code == 0, out
    games = ObjectStore(str(store)).read_parquet(f"games/{MONTH}.parquet")
    assert games.height == expected == 970
    assert f"games rated: {expected:,}" in out and "quarantined by reason: unplayed 32" in out
    # The FIDE list seeds the pool: Vasquez (3400042) is on the April 2004 list, so he is rated after July 2005.
    rating_list = ObjectStore(str(store)).read_parquet(f"actual/rating_list/{MONTH}.parquet")
    vasquez = rating_list.filter(pl.col("player_id") == 3400042)
    assert vasquez["rating"].item() is not None and vasquez["games"].item() == 7
    # Players without an id are rated under a local id, and the identity report says who they are.
    identity = ObjectStore(str(store)).read_parquet(f"identity/{MONTH}.parquet")
    local = identity.filter(pl.col("status") == "new_name")
    assert local.height > 100 and (local["player_id"] >= LOCAL_ID_BASE).all()
    assert "new_name" in out and "identity/<YYYY-MM>.parquet" in out


def test_example1_without_any_registry_rates_every_game_between_fide_ids(tmp_path: Path, one_scenario: Path, capsys):
    trf = realdata("example1.trf")
    store = tmp_path / "store"
    (store / "raw" / "GER" / MONTH).mkdir(parents=True)
    shutil.copyfile(trf, store / "raw" / "GER" / MONTH / trf.name)

    code, out, _ = run(store, one_scenario, tmp_path / "home", capsys)
    assert code == 0, out
    games = ObjectStore(str(store)).read_parquet(f"games/{MONTH}.parquet")
    # 287 games between two FIDE ids (see test_ingest_validate), all rated; the others by local ids.
    both_fide = games.filter((pl.col("white_id") < LOCAL_ID_BASE) & (pl.col("black_id") < LOCAL_ID_BASE))
    assert both_fide.height == 287 and games.height == 970
    assert "unknown_player" not in out


def test_a_run_that_rates_nothing_fails_and_says_why(tmp_path: Path, one_scenario: Path, capsys):
    store = tmp_path / "store"
    folder = store / "raw" / "GER" / "2024-01"
    folder.mkdir(parents=True)
    # Two games, both unplayed (a forfeit and a bye): every record is quarantined.
    (folder / "games.csv").write_text(
        "event_id,date,round,white_id,black_id,result\ne,2024-01-10,1,1001,1002,+-\ne,2024-01-10,2,1001,,\n"
    )
    code, out, _ = run(store, one_scenario, tmp_path / "home", capsys)
    assert code == 1
    assert "Run FAILED: no game was rated" in out
    assert "WARNING: 2024-01: 2 of 2 records (100%) quarantined" in out
    assert "quarantined by file: GER/2024-01/games.csv 2" in out


def test_run_refuses_a_store_without_a_landing_zone(tmp_path: Path, one_scenario: Path, capsys):
    code, _, err = run(tmp_path / "typo", one_scenario, tmp_path / "home", capsys)
    assert code == 2
    assert "has no landing zone (no raw/ folder)" in err and "raw/<FED>/<YYYY-MM>/<dump>" in err
    assert not (tmp_path / "typo").exists()  # nothing was written


def test_run_months_are_checked(tmp_path: Path, one_scenario: Path, capsys):
    store = tmp_path / "store"
    (store / "raw" / "GER" / "2024-01").mkdir(parents=True)
    code, _, err = run(store, one_scenario, tmp_path / "home", capsys, "--from", "2024-03", "--to", "2024-01")
    assert code == 2 and "--from 2024-03 is after --to 2024-01" in err
    code, _, err = run(store, one_scenario, tmp_path / "home", capsys, "--from", "2024-13")
    assert code == 2 and "2024-13" in err


def test_demo_generates_only_into_an_empty_local_store(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert may_generate(ObjectStore(str(empty)), str(empty), explicit=False) is None
    typo = tmp_path / "dtaa"
    assert "does not exist" in may_generate(ObjectStore(str(typo)), str(typo), explicit=False)
    busy = tmp_path / "busy"
    (busy / "reports").mkdir(parents=True)
    assert "holds other files" in may_generate(ObjectStore(str(busy)), str(busy), explicit=False)
    assert may_generate(ObjectStore(str(busy)), str(busy), explicit=True) is None
    assert "unless you add --generate" in may_generate(
        ObjectStore("s3://bucket/prefix"), "s3://bucket/prefix", explicit=False
    )


def test_demo_with_a_mistyped_store_writes_nothing(tmp_path: Path):
    result = ratings("demo", "--store", str(tmp_path / "dtaa"), "--dagster-home", str(tmp_path / "home"))
    assert result.returncode == 2
    assert "not generating the demo data there" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "dtaa").exists()


def dead_pid() -> int:
    """The pid of a process that has ended."""
    import subprocess

    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_temporary_files_of_killed_writes_are_removed_and_raw_is_never_touched(tmp_path: Path):
    store = ObjectStore(str(tmp_path))
    store.write_bytes(b"list", "actual/rating_list/2024-01.parquet")
    debris = tmp_path / "actual" / "rating_list" / f"2024-02.parquet.tmp-{dead_pid()}-{'a' * 32}"
    live = tmp_path / "actual" / "rating_list" / f"2024-03.parquet.tmp-{__import__('os').getpid()}-{'b' * 32}"
    landed = tmp_path / "raw" / "GER" / "2024-01" / f"x.csv.tmp-{dead_pid()}-{'c' * 32}"
    for path in (debris, live, landed):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    assert store.remove_orphaned_temp_files() == 1
    assert not debris.exists() and live.exists() and landed.exists()
    assert (tmp_path / "actual" / "rating_list" / "2024-01.parquet").read_bytes() == b"list"


def test_a_run_whose_process_was_killed_is_marked_failed(tmp_path: Path):
    import socket

    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRun

    from assets.runs import HOST_TAG, PID_TAG, heal_orphaned_runs

    with dg.DagsterInstance.ephemeral() as instance:
        host = socket.gethostname()
        orphan = DagsterRun(
            job_name="__ephemeral_asset_job__",
            run_id="0" * 8 + "-0000-0000-0000-" + "0" * 12,
            status=dg.DagsterRunStatus.STARTED,
            tags={PID_TAG: str(dead_pid()), HOST_TAG: host},
        )
        running = DagsterRun(
            job_name="__ephemeral_asset_job__",
            run_id="1" * 8 + "-0000-0000-0000-" + "0" * 12,
            status=dg.DagsterRunStatus.STARTED,
            tags={PID_TAG: "1", HOST_TAG: host},
        )  # pid 1 lives
        instance.add_run(orphan)
        instance.add_run(running)
        assert heal_orphaned_runs(instance) == [orphan.run_id]
        assert instance.get_run_by_id(orphan.run_id).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.STARTED


def test_a_killed_run_heals_and_its_rerun_writes_what_an_uninterrupted_run_writes(
    tiny_landing_zone: Path, tmp_path: Path, one_scenario: Path
):
    """SIGKILL `ratings run` once February's list is written; the rerun marks the orphan failed and equals a clean
    run.
    """
    import os
    import signal
    import subprocess
    import sys
    import time

    import dagster as dg

    def store_with_dumps(name: str) -> Path:
        root = tmp_path / name
        shutil.copytree(tiny_landing_zone, root / "raw")
        return root

    def outputs(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith("raw/")
        }

    command = [sys.executable, "-m", "assets", "run", "--scenarios", str(one_scenario)]
    clean, killed = store_with_dumps("clean"), store_with_dumps("killed")
    subprocess.run(
        [*command, "--store", str(clean), "--dagster-home", str(tmp_path / "clean-home")],
        check=True,
        capture_output=True,
        timeout=300,
    )

    home = tmp_path / "killed-home"
    victim = subprocess.Popen(
        [*command, "--store", str(killed), "--dagster-home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while not (killed / "actual" / "rating_list" / "2024-02.parquet").exists():
        assert victim.poll() is None and time.monotonic() < deadline, (
            victim.stderr.read() if victim.poll() is not None else "too slow"
        )
        time.sleep(0.05)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert not (killed / "reports" / "index.html").exists()  # it was killed mid-run

    rerun = subprocess.run(
        [*command, "--store", str(killed), "--dagster-home", str(home)], capture_output=True, text=True, timeout=300
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "failed: its process was killed before it finished" in rerun.stdout
    assert outputs(killed) == outputs(clean)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        statuses = sorted(run.status.value for run in instance.get_runs())
    assert statuses == ["FAILURE", "SUCCESS"]


def test_a_full_disk_fails_the_run_in_one_line_and_the_rerun_after_freeing_space_equals_a_clean_run(
    tiny_landing_zone: Path, tmp_path: Path, one_scenario: Path, capsys
):
    """The store on a small tmpfs that fills mid-run: no partial file is left, and a rerun with room equals a clean
    run.
    """
    import subprocess

    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        full, clean = mount_point / "store", tmp_path / "clean"
        for root in (full, clean):
            shutil.copytree(tiny_landing_zone, root / "raw")
        assert (
            main(
                ["run", "--store", str(clean), "--scenarios", str(one_scenario), "--dagster-home", str(tmp_path / "h1")]
            )
            == 0
        )
        capsys.readouterr()

        code, out, _ = run(full, one_scenario, tmp_path / "h2", capsys)
        assert code == 1 and "No space left on device" in out and "Traceback" not in out
        assert not list(full.rglob("*.tmp-*"))  # the failed write left nothing behind
        subprocess.run(["mount", "-o", "remount,size=8m", str(mount_point)], check=True)
        code, out, _ = run(full, one_scenario, tmp_path / "h2", capsys)
        assert code == 0, out

        def outputs(root: Path) -> dict[str, bytes]:
            return {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*"))
                if p.is_file() and not p.relative_to(root).as_posix().startswith("raw/")
            }

        assert outputs(full) == outputs(clean)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
