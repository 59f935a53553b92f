"""`ratings run` on a federation's own landing zone, and `ratings demo` never generating where it should not."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import polars as pl
import pytest

from assets.runtime.cli import main
from pipeline.operations.run_plan import may_generate
from pipeline.store.object_store import ObjectStore
from pipeline.text import markdown_text
from pipeline.validate.identity import LOCAL_ID_BASE
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
    assert f"games validated: {expected:,}" in out and "quarantined by reason: unplayed 32" in out
    # The FIDE list seeds the pool: Vasquez (3400042) is on the April 2004 list, so he is rated after July 2005.
    rating_list = ObjectStore(str(store)).read_parquet(f"actual/rating_list/{MONTH}.parquet")
    vasquez = rating_list.filter(pl.col("player_id") == 3400042)
    # His games count only against opponents the list in force rates: the TRF's stated ratings of the others do not
    # make them rated (issue 36: the list wins, a stated rating never rates an unrated opponent).
    seeded = ObjectStore(str(store)).read_parquet(f"actual/rated_games/{MONTH}.parquet")
    his = seeded.filter((pl.col("white_id") == 3400042) | (pl.col("black_id") == 3400042))
    opponents = pl.when(pl.col("white_id") == 3400042).then(pl.col("black_rating_used")).otherwise("white_rating_used")
    against_rated = his.filter(opponents.is_not_null()).height
    assert 0 < against_rated < his.height == 7  # two of his seven opponents are not on the April 2004 list
    assert vasquez["rating"].item() is not None and vasquez["games"].item() == against_rated
    stated = pl.read_csv(store / "lists" / "actual" / f"{MONTH}.stated-ratings.csv", infer_schema=False)
    assert stated.height > 0 and "rating(s) stated by the dumps differ from the list in force" in out
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


def test_a_run_names_the_registry_rows_and_files_it_does_not_read(tmp_path: Path, one_scenario: Path, capsys):
    """The audit's registry and seed list, and notes beside them: the run says what it leaves out, file and line, in its
    summary and in the validate step's metadata, and leaves the unreadable seed rows out of the seed list.
    """
    import dagster as dg

    from tests.landing import pgn_game, write_raw
    from tests.test_registry_months import AUDITED

    store = tmp_path / "store"
    games = [(4600003, 4600011, "1-0"), (4600020, 4600038, "1/2-1/2"), (4600011, 4600020, "0-1")]
    write_raw(
        store,
        {
            "GER/2024-01/open.pgn": "".join(pgn_game("Open", f"2024.01.1{i}", *game) for i, game in enumerate(games)),
            "players/2024-01/notes.txt": "these are my notes about the players\n",
            **{key.removeprefix("raw/"): text for key, text in AUDITED.items()},
        },
    )
    code, out, err = run(store, one_scenario, tmp_path / "home", capsys)
    assert code == 0, out
    assert "Stack Trace" not in out + err and "(a FIDE rating list" not in out
    named = [
        "not read: raw/players/2024-01/notes.txt: not a FIDE rating list",
        "WARNING: raw/players/2024-01/players.csv line 6: the row has 1 field(s) more than the header's 6",
        "WARNING: raw/players/2024-01/seed_list.csv line 3: rating 'abc' is not a number: player 4600011 is left out",
        "WARNING: raw/players/2024-01/seed_list.csv line 5: rating '1800.7' is not a whole number: player 4600038",
    ]
    summary = out[out.index("Run done") :]
    assert all(line in summary for line in named), summary
    # Left out of the seed list: rated from their games here as newcomers, not seeded (4600038 was seeded at 1801).
    rating_list = ObjectStore(str(store)).read_parquet("actual/rating_list/2024-01.parquet")
    assert rating_list.filter(pl.col("player_id") == 4600038)["rating"].to_list() == [None]
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("games"))
        assert event is not None and event.asset_materialization is not None
        metadata = event.asset_materialization.metadata["registry_problems"]
    assert markdown_text("seed_list.csv line 4: rating '2,100' is not a number") in str(metadata.value)


def test_run_refuses_a_store_without_a_landing_zone(tmp_path: Path, one_scenario: Path, capsys):
    code, _, err = run(tmp_path / "typo", one_scenario, tmp_path / "home", capsys)
    assert code == 2
    assert "has no landing zone (no raw/ folder)" in err and "raw/<FED>/<YYYY-MM>/<dump>" in err
    assert "\\x0a" not in err and "no raw/ folder).\nA landing zone is" in err  # its lines as lines
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

    from assets.runtime.runs import HOST_TAG, PID_TAG, heal_orphaned_runs

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
        mine = DagsterRun(
            job_name="__ephemeral_asset_job__",
            run_id="2" * 8 + "-0000-0000-0000-" + "0" * 12,
            status=dg.DagsterRunStatus.NOT_STARTED,
            tags={PID_TAG: str(os.getpid()), HOST_TAG: host},
        )  # this process's own, interrupted before Dagster started it
        for run in (orphan, running, mine):
            instance.add_run(run)
        assert heal_orphaned_runs(instance) == [orphan.run_id]
        assert instance.get_run_by_id(orphan.run_id).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.STARTED
        assert instance.get_run_by_id(mine.run_id).status == dg.DagsterRunStatus.NOT_STARTED
        # Ending on Ctrl-C, this process fails its own too, never another's that is alive.
        assert heal_orphaned_runs(instance, interrupted=True) == [mine.run_id]
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
    # The killed run; the rerun's two: the months, then the last month's readable lists with the comparison.
    assert statuses == ["FAILURE", "SUCCESS", "SUCCESS"]


def live_processes_of_session(session: int) -> list[str]:
    """The processes of `session` still running (zombies left for init to reap are not), as 'pid command' (/proc)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        state, _parent, _group, its_session = text[text.rindex(")") + 2 :].split()[:4]  # after "pid (name) "
        if int(its_session) == session and state != "Z":
            alive.append(f"{stat.parent.name} {command[:120]}")
    return alive


def store_outputs(root: Path) -> dict[str, bytes]:
    """What a run wrote into the store `root` (not the landing zone, nor the store's own Dagster instance)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(("raw/", ".dagster/"))
    }


@pytest.fixture(scope="module")
def uninterrupted(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict]:
    """`ratings run` over the tiny landing zone with one scenario (the command, without --store) and what it wrote
    when nothing interrupted it.
    """
    import sys

    root = tmp_path_factory.mktemp("uninterrupted")
    scenarios = root / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  actual:\n    description: FIDE 2014, monthly\n    rules: fide-2014\n")
    shutil.copytree(tiny_landing_zone, root / "store" / "raw")
    command = [sys.executable, "-m", "assets", "run", "--scenarios", str(scenarios)]
    subprocess.run([*command, "--store", str(root / "store")], check=True, capture_output=True, timeout=120)
    return command, store_outputs(root / "store")


#: A progress line (pipeline.operations.progress.ConsoleProgress, not on a terminal).
PROGRESS_LINE = re.compile(r"^\S.* \[[#.]+\] +\d+/\d+ +\d{4}-\d{2} +[\d.]+s$")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_ends_a_run_in_one_line_with_no_process_left_and_the_rerun_writes_an_uninterrupted_run_s_lists(
    tiny_landing_zone: Path,
    tmp_path: Path,
    uninterrupted: tuple[list[str], dict],
    workers: str,
    monkeypatch: pytest.MonkeyPatch,
):
    """Ctrl-C as a terminal sends it (SIGINT to the run's whole process group: Dagster's watchers of a run's logs
    and the worker processes too) once the run has started rating, in one process and with --workers 2: exit code
    130; on stderr nothing but the progress lines and the one line saying what was written and how to go on (no
    traceback of any process); no process of the run left and no Dagster run left unfinished; the same command run
    again completes and writes what an uninterrupted run writes.
    """
    import signal
    import threading
    import time

    import dagster as dg

    def watch(stream: TextIO, lines: list[str], rating: threading.Event) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))
            if line.startswith("rate actual"):
                rating.set()

    command, clean = uninterrupted
    # The run's instance is the store's own (read below), not a DAGSTER_HOME the environment names (`make test`'s).
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    store = tmp_path / "store"
    shutil.copytree(tiny_landing_zone, store / "raw")
    run = subprocess.Popen(
        [*command, "--store", str(store), "--workers", workers],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job: Ctrl-C reaches all of it
    )
    lines: list[str] = []
    rating = threading.Event()
    reader = threading.Thread(target=watch, args=(run.stderr, lines, rating))
    reader.start()
    assert rating.wait(120), "\n".join(lines)
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait(30) == 130, "\n".join(lines)
    reader.join(10)
    said = [line for line in lines if not PROGRESS_LINE.match(line)]
    assert said == [lines[-1]] and lines[-1].startswith("ratings run: interrupted (Ctrl-C). "), "\n".join(lines)
    assert "--from" in lines[-1] and "run the same command again" in lines[-1]
    deadline = time.monotonic() + 5
    while (left := live_processes_of_session(run.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []
    with dg.DagsterInstance.from_config(str(store / ".dagster")) as instance:
        runs = instance.get_runs()
    statuses = {dagster_run.status for dagster_run in runs}
    assert statuses and statuses <= {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.SUCCESS}  # none unfinished
    # The instance's run_retries (the shipped dagster.yaml) would not retry a run of the command: it ran in-process, so
    # the daemon has no code location to launch it from. The run says so rather than wait for a retry.
    failed = [dagster_run for dagster_run in runs if dagster_run.status == dg.DagsterRunStatus.FAILURE]
    assert failed and all(dagster_run.tags.get("dagster/will_retry") == "false" for dagster_run in failed)
    assert not any(dagster_run.is_complete_and_waiting_to_retry for dagster_run in failed)

    rerun = subprocess.run(
        [*command, "--store", str(store), "--workers", workers], capture_output=True, text=True, timeout=120
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert store_outputs(store) == clean


def test_a_full_disk_fails_the_run_in_one_line_and_the_rerun_after_freeing_space_equals_a_clean_run(
    tiny_landing_zone: Path, tmp_path: Path, small_disk: Path, one_scenario: Path, capsys
):
    """The store on a small tmpfs that fills mid-run: no partial file is left, and a rerun with room equals a clean
    run.
    """
    import subprocess

    full, clean = small_disk / "store", tmp_path / "clean"
    for root in (full, clean):
        shutil.copytree(tiny_landing_zone, root / "raw")
    assert (
        main(["run", "--store", str(clean), "--scenarios", str(one_scenario), "--dagster-home", str(tmp_path / "h1")])
        == 0
    )
    capsys.readouterr()

    code, out, _ = run(full, one_scenario, tmp_path / "h2", capsys)
    assert code == 1 and "No space left on device" in out and "Traceback" not in out
    assert not list(full.rglob("*.tmp-*"))  # the failed write left nothing behind
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    code, out, _ = run(full, one_scenario, tmp_path / "h2", capsys)
    assert code == 0, out

    def outputs(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith("raw/")
        }

    assert outputs(full) == outputs(clean)


# -- what a run decides and says without Dagster (pipeline/operations/run_plan.py) ---------------------------


def test_months_to_rate_default_to_the_landing_zone_and_are_checked() -> None:
    from pipeline.operations.run_plan import StoreError, months_to_rate

    held = ["2024-01", "2024-03"]
    assert months_to_rate(held, None, None, "store") == ["2024-01", "2024-02", "2024-03"]
    assert months_to_rate(held, "2024-02", None, "store") == ["2024-02", "2024-03"]
    assert months_to_rate([], "2023-11", "2023-12", "store") == ["2023-11", "2023-12"]  # both given: no dumps needed
    with pytest.raises(StoreError, match="^store/raw holds no dumps in month folders"):
        months_to_rate([], "2024-01", None, "store")
    with pytest.raises(StoreError, match="^--from 2024-03 is after --to 2024-02$"):
        months_to_rate(held, "2024-03", "2024-02", "store")
    with pytest.raises(ValueError, match="2024-13"):
        months_to_rate([], "2024-13", None, "store")  # the month's own error before the missing dumps


def test_a_reversed_range_names_the_bound_given_and_where_the_other_came_from() -> None:
    """--from after the last dumps said `--from 2023-09 is after --to 2023-06`, a --to the user never gave."""
    from pipeline.operations.run_plan import StoreError, months_to_rate

    held = ["2023-01", "2023-06"]
    given_from = r"^--from 2023-09 is after 2023-06, the last month holding dumps \(where a run without --to ends\)$"
    with pytest.raises(StoreError, match=given_from):
        months_to_rate(held, "2023-09", None, "store")
    with pytest.raises(StoreError, match="^--from 2023-09 is after 2023-08, the last month with a stored list"):
        months_to_rate(held, "2023-09", None, "store", stored_last="2023-08")
    given_to = r"^--to 2022-11 is before 2023-01, the first month holding dumps \(where a run without --from starts\)$"
    with pytest.raises(StoreError, match=given_to):
        months_to_rate(held, None, "2022-11", "store")


def test_a_month_is_rated_only_once_it_has_ended() -> None:
    """The month in progress was rated with the dumps it held so far, and under `forward` its list stayed frozen: a
    tournament reported in time later in the month went a list late. Today is fixed in 2026-11.
    """
    from pipeline.operations.run_plan import StoreError, months_to_rate

    held = ["2026-08", "2026-09", "2026-10", "2026-11"]
    ended = ["2026-08", "2026-09", "2026-10"]
    assert months_to_rate(held, None, None, "store", current="2026-11") == ended
    assert months_to_rate(held, "2026-09", None, "store", current="2026-11") == ended[1:]
    # A list of the month in progress stored by an earlier version is not continued into.
    assert months_to_rate(held, "2026-09", None, "store", stored_last="2026-11", current="2026-11") == ended[1:]
    not_ended = r"the list of {0} is made after the month ends \(the last month that may be rated is 2026-10\)$"
    with pytest.raises(StoreError, match="^--to 2026-11 is the current month: " + not_ended.format("2026-11")):
        months_to_rate(held, "2026-08", "2026-11", "store", current="2026-11")
    with pytest.raises(
        StoreError, match="^--to 2026-12 is after the current month 2026-11: " + not_ended.format("2026-12")
    ):
        months_to_rate(held, None, "2026-12", "store", current="2026-11")
    with pytest.raises(StoreError, match="^--from 2026-11 is the current month: "):
        months_to_rate(held, "2026-11", None, "store", current="2026-11")
    with pytest.raises(StoreError, match="^store/raw holds dumps only of 2026-11, the current month: the list of"):
        months_to_rate(["2026-11"], None, None, "store", current="2026-11")


def test_the_plan_names_the_dumps_of_the_month_in_progress_as_waiting(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from pipeline.months import add_months, month_of
    from pipeline.operations.run_plan import plan_run

    this_month = month_of(datetime.now(UTC).date())
    months = [add_months(this_month, k) for k in (-3, -2, -1, 0)]
    for month in months:
        (tmp_path / "raw" / "GER" / month).mkdir(parents=True)
        (tmp_path / "raw" / "GER" / month / "games.csv").write_text("white_id,black_id,result\n1001,1002,1-0\n")
    plan = plan_run(str(tmp_path), None, None, None)
    assert list(plan.months) == months[:3] and plan.partition_range == (months[0], months[2])
    assert (
        f"not rated yet: 1 file(s) of {this_month}, the current month (GER/{this_month}/games.csv), wait for the "
        "month's end: the first run after it rates them"
    ) in plan.notes


def test_a_default_from_moved_by_ratings_first_month_is_named_so(tmp_path: Path, monkeypatch) -> None:
    """`--to 2024-02` before a RATINGS_FIRST_MONTH of 2024-03 said 2024-03 was the first month holding dumps."""
    from pipeline.operations.run_plan import StoreError, plan_run

    for month in ("2024-01", "2024-02", "2024-03", "2024-04"):
        (tmp_path / "raw" / "GER" / month).mkdir(parents=True)
        (tmp_path / "raw" / "GER" / month / "games.csv").write_text("white_id,black_id,result\n1001,1002,1-0\n")
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2024-03")
    with pytest.raises(StoreError, match=r"^--to 2024-02 is before 2024-03, RATINGS_FIRST_MONTH \(where a run"):
        plan_run(str(tmp_path), None, "2024-02", None)
    monkeypatch.setenv("RATINGS_FIRST_MONTH", "2023-12")
    with pytest.raises(StoreError, match=r"^--to 2023-11 is before 2024-01, the first month holding dumps \("):
        plan_run(str(tmp_path), None, "2023-11", None)


def test_a_run_over_dumps_of_the_month_in_progress_rates_the_months_before_it(
    tmp_path: Path, one_scenario: Path, capsys
) -> None:
    """The months before the current one are rated and its dumps wait (a run failed in raw_games, then rated it)."""
    from datetime import UTC, datetime

    from pipeline.months import add_months, month_of

    this_month = month_of(datetime.now(UTC).date())
    months = [add_months(this_month, k) for k in (-3, -2, -1, 0)]
    store = tmp_path / "store"
    for month in months:
        (store / "raw" / "GER" / month).mkdir(parents=True)
        (store / "raw" / "GER" / month / "games.csv").write_text(
            f"event_id,date,round,white_id,black_id,result\ne,{month}-01,1,1001,1002,1-0\ne,{month}-01,2,1002,1001,1/2\n"
        )
    code, out, _ = run(store, one_scenario, tmp_path / "home", capsys)
    assert code == 0, out
    assert f"Run done: 3 months {months[0]}..{months[2]}" in out
    assert f"not rated yet: 1 file(s) of {this_month}, the current month (GER/{this_month}/games.csv)" in out
    stored = ObjectStore(str(store))
    assert stored.exists(f"games/{months[2]}.parquet") and not stored.exists(f"games/{this_month}.parquet")
    code, out, _ = run(store, one_scenario, tmp_path / "home", capsys, "--to", this_month)
    assert code != 0 and f"--to {this_month} is the current month: the list of {this_month} is made after" in out + _


def test_require_landing_zone_refuses_a_store_without_raw(tmp_path: Path) -> None:
    from pipeline.operations.run_plan import LANDING_ZONE_HELP, StoreError, require_landing_zone

    store = ObjectStore(str(tmp_path / "store"))
    with pytest.raises(StoreError) as refused:
        require_landing_zone(store)
    assert str(refused.value) == f"{tmp_path / 'store'} has no landing zone (no raw/ folder).\n{LANDING_ZONE_HELP}"
    store.write_text("x", "raw/GER/2024-01/a.trf")
    require_landing_zone(store)


def test_generate_demo_refuses_a_store_that_is_not_empty_and_leaves_a_landing_zone_alone(tmp_path: Path) -> None:
    import io

    from pipeline.operations.run_plan import StoreError, generate_demo

    busy = tmp_path / "busy"
    (busy / "reports").mkdir(parents=True)
    out = io.StringIO()
    with pytest.raises(StoreError, match="holds other files"):
        generate_demo(str(busy), explicit=False, out=out)
    landed = tmp_path / "landed"
    (landed / "raw" / "GER" / "2024-01").mkdir(parents=True)
    generate_demo(str(landed), explicit=True, out=out)  # raw/ exists: nothing to generate, even when asked
    assert out.getvalue() == "" and [p.name for p in landed.iterdir()] == ["raw"]


def test_a_check_passed_only_when_every_evaluation_of_it_passed() -> None:
    from pipeline.operations.run_plan import checks_passed

    evaluations = [("schema", True), ("reconciliation", True), ("schema", False), ("reconciliation", True)]
    assert checks_passed(evaluations) == {"schema": False, "reconciliation": True}
    assert checks_passed([]) == {}


def test_run_summary_reads_the_stored_tables_of_the_run(tmp_path: Path) -> None:
    from pipeline.operations.run_counts import GAME_OUTCOMES
    from pipeline.operations.run_plan import closing_lines, opening_line, rated_players, run_summary
    from pipeline.scenarios.model import Scenario
    from pipeline.store.monthly import table_key

    store = ObjectStore(str(tmp_path / "store"))
    scenarios = {
        name: Scenario(name=name, description=name, rules="fide-2014") for name in ("actual", "elo-k32", "missing")
    }
    games = pl.DataFrame({"game_id": [1, 2, 3], "white_id": [10, 11, 12], "black_id": [11, 10, 13]})
    store.write_parquet(games, table_key(["games"], "2024-01"))
    store.write_parquet(games.head(1), table_key(["games"], "2024-02"))
    quarantine = pl.DataFrame(
        {"reason": ["unplayed", "duplicate", "unplayed"], "source_file": ["a", "b", "b"], "detail": ["", "", ""]}
    )
    store.write_parquet(quarantine, table_key(["quarantine"], "2024-02"))
    listed = pl.DataFrame({"player_id": [1, 2, 10**15], "rating": [2000, None, 1500]})
    store.write_parquet(listed, table_key(["actual", "rating_list"], "2024-02"))
    listed = pl.DataFrame({"player_id": [1, 2], "rating": [None, 1400]})
    store.write_parquet(listed, table_key(["elo_k32", "rating_list"], "2024-02"))
    listed = pl.DataFrame({"player_id": [1, 2, 3], "rating": [1, 2, 3]})
    store.write_parquet(listed, table_key(["elo_k32", "rating_list"], "2024-01"))
    months = ["2024-01", "2024-02"]
    assert rated_players(store, scenarios, "2024-02") == {"actual": 2, "elo-k32": 1}
    assert opening_line(months, "here", scenarios, "home") == (
        "Rating 2 months 2024-01..2024-02 of here under 3 scenarios (actual, elo-k32, missing) (Dagster instance home) "
        "..."
    )
    assert opening_line(months, "here", scenarios, "home", ["2024-02"]).endswith(
        "(actual, elo-k32, missing), readable lists of 2024-02 (Dagster instance home) ..."
    )
    summary = run_summary(
        store,
        months,
        [],
        scenarios,
        run_succeeded=True,
        run_id="r1",
        reconciliation_passed=None,
        failed_steps={},
        run_seconds=12.345,
        dagster_home="home",
    )
    expected = {
        "success": True,
        "run_succeeded": True,
        "run_id": "r1",
        "months": 2,
        "first_month": "2024-01",
        "last_month": "2024-02",
        "scenarios": ["actual", "elo-k32", "missing"],
        "games": 4,
        "quarantined": 3,
        "quarantined_by_reason": {"unplayed": 2, "duplicate": 1},
        "quarantined_by_file": {"b": 2, "a": 1},
        "mostly_quarantined_months": [],
        "players": 4,
        "players_by_identity": {},
        "names_given_ids": [],
        "names_registered_elsewhere": [],
        "unplaced_files": [],
        "not_read_whole": [],
        "rated_players": {"actual": 2, "elo-k32": 1},
        "game_outcomes": {name: dict.fromkeys(GAME_OUTCOMES, 0) for name in scenarios},
        "left_out_of_txt": {"actual": 1},
        "reconciliation_passed": None,
        "failed_steps": {},
        "run_seconds": 12.3,
        "store": str(tmp_path / "store"),
        "dagster_home": "home",
        "scenarios_file": None,
    }
    assert summary == expected and list(summary) == list(expected)  # the order callers see, too
    assert "rated players on the 2024-02 list: actual 2, elo-k32 1" in closing_lines(summary, scenarios, "Run")
    assert "rated players left out of the 2024-02 FIDE TXT (no FIDE id" in closing_lines(summary, scenarios, "Run")
    # A run that rated no game is not a success, whatever Dagster says.
    store.fs.rm(store.path("games"), recursive=True)
    empty = run_summary(
        store,
        months,
        [],
        scenarios,
        run_succeeded=True,
        run_id="r2",
        reconciliation_passed=True,
        failed_steps={},
        run_seconds=1,
        dagster_home="home",
    )
    assert (empty["success"], empty["run_succeeded"], empty["games"]) == (False, True, 0)


# -- what a run says from its first second, and the README's commands as written ---------------------------------


def test_run_and_demo_say_where_they_go_before_the_pipeline_loads(tmp_path: Path, monkeypatch, capsys) -> None:
    from pipeline.cli.run_options import starting_line

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    store = tmp_path / "mystore"
    assert starting_line(["run", "--store", str(store), "--from", "2024-01"]) == (
        f"Run over {store} (Dagster instance {store / '.dagster'}, the store's own): loading the pipeline ..."
    )
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "env-home"))
    line = starting_line(["demo", "--store", str(store), "--dagster-home", str(tmp_path / "h")])
    assert (
        line
        == f"Demo over {store} (Dagster instance {tmp_path / 'h'}, given by --dagster-home): loading the pipeline ..."
    )
    assert f"Dagster instance {tmp_path / 'env-home'}, from $DAGSTER_HOME" in str(
        starting_line(["run", "--store", str(store)])
    )
    # Nothing for other commands, for help, for options the parser refuses (it says why, once), or a store URL
    # holding credentials (refused without echoing them).
    for argv in (["validate", "x.trf"], ["run", "--help"], ["run", "--workers", "many"], ["ui"], []):
        assert starting_line(argv) is None
    assert starting_line(["run", "--store", "s3://KEY:SECRET@chess/ger"]) is None
    assert capsys.readouterr() == ("", "")


def test_a_fresh_ratings_process_says_its_first_line_before_dagster_loads(tmp_path: Path) -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from assets.runtime.cli import main; from pipeline.cli.run_options import starting_line; "
        f"print(starting_line(['run', '--store', {str(tmp_path)!r}])); "
        "print(sorted(m for m in ('dagster', 'assets.definitions', 'pipeline.cli.commands') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    line, loaded = done.stdout.splitlines()
    assert line.startswith(f"Run over {tmp_path} (Dagster instance") and loaded == "[]"


def test_the_plan_says_it_lists_the_landing_zone_and_how_far_a_long_listing_got(tmp_path: Path) -> None:
    import io

    from pipeline.ingest.landing import inventory
    from pipeline.operations.run_plan import ListingProgress, plan_run

    for month in ("2024-01", "2024-02"):
        folder = tmp_path / "raw" / "GER" / month
        folder.mkdir(parents=True)
        (folder / "games.csv").write_text(
            "event_id,date,round,white_id,black_id,result\ne,2024-01-10,1,1001,1002,1-0\n"
        )
    out = io.StringIO()
    plan_run(str(tmp_path), None, None, None, out=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"Listing the landing zone {tmp_path / 'raw'} ..."
    assert len(lines) == 2 and lines[1].startswith("  2 files listed in ") and lines[1].endswith(" s (2 months)")
    # A listing that lasts: a line every `every` seconds with the files found so far.
    slow = io.StringIO()
    inventory(ObjectStore(str(tmp_path)), listed=ListingProgress(slow, every=0.0))
    assert "  ... 2 files listed so far (" in slow.getvalue()


REPO = Path(__file__).resolve().parents[1]


def readme_section(title: str) -> str:
    return (REPO / "README.md").read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def as_written(command: str) -> str:
    """A README command without its optional parts ([--from 2024-01] ...)."""
    return re.sub(r"\s*\[[^\]]*\]", "", command).strip()


def user_shell(home: Path) -> Callable[[str], subprocess.CompletedProcess]:
    """A bash in the clone, as a user's shell: HOME=home, no RATINGS_* and no DAGSTER_HOME set."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RATINGS_") and k != "DAGSTER_HOME"}
    environment["HOME"] = str(home)

    def shell(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", command], cwd=REPO, env=environment, capture_output=True, text=True, timeout=900
        )

    return shell


def test_the_readme_s_commands_for_your_own_files_run_as_written(tmp_path: Path) -> None:
    from pipeline.generator import generate

    home = tmp_path / "home"
    generate(str(home / "mystore"), seed=1, players=200, start="2024-01", end="2024-02")
    section = readme_section("Rating your own federation's files")
    validate = re.search(r"`(\.venv/bin/ratings validate [^`]+)`", section)
    run = [line.strip() for line in section.splitlines() if line.strip().startswith(".venv/bin/ratings run ")]
    published = re.search(r"`(~/mystore/lists/<scenario>/<YYYY-MM>\.csv)`", section)
    assert validate and run and published
    shell = user_shell(home)

    checked = shell(validate.group(1))
    assert checked.returncode == 0 and "ger-2024-01" in checked.stdout, checked.stdout + checked.stderr
    rated = shell(as_written(run[0]))
    assert rated.returncode == 0, rated.stdout + rated.stderr
    store = home / "mystore"
    assert rated.stdout.splitlines()[:2] == [
        f"Run over {store} (Dagster instance {store / '.dagster'}, the store's own): loading the pipeline ...",
        f"Listing the landing zone {store / 'raw'} ...",
    ]
    listed = published.group(1).replace("~", str(home)).replace("<scenario>", "actual").replace("<YYYY-MM>", "2024-02")
    assert Path(listed).is_file() and (store / ".dagster" / "dagster.yaml").is_file()
    assert not (REPO / "mystore").exists()  # nothing inside the clone


def test_the_readme_s_check_before_it_lands_runs_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    incoming = home / "incoming"
    incoming.mkdir(parents=True)
    shutil.copyfile(realdata("example1.trf"), incoming / "event.trf")
    shutil.copyfile(realdata("pgn", "202204southend.pgn"), incoming / "games.pgn")
    shutil.copyfile(realdata("fide-lists-2004", "JAN04FRL.TXT"), incoming / "JAN04FRL.TXT")
    command = re.search(
        r"```bash\n(\.venv/bin/ratings validate [^\n]+)\n```", readme_section("Checking a file before it lands")
    )
    assert command
    shell = user_shell(home)
    assert shell(as_written(command.group(1))).returncode == 0
    answer = shell(command.group(1).replace("[--json]", "--json"))
    assert answer.returncode == 0, answer.stderr
    files = json.loads(answer.stdout)["files"]
    assert [Path(entry["path"]).name for entry in files] == ["event.trf", "games.pgn", "JAN04FRL.TXT"]
    assert all(entry["records"] > 0 for entry in files)
