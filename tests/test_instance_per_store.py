"""One Dagster instance per store (issue 40).

Where a store's instance lives, which instance a command uses (`--dagster-home`, else $DAGSTER_HOME, else the store's
own), `ratings ui --store` opening that store's instance, and two stores rated one after the other keeping their runs
apart, `make ui` showing only the demo's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli.run_options import ui_command
from pipeline.ingest.landing import inventory, months_held, unplaced
from pipeline.operations.instance_dirs import (
    FROM_ENVIRONMENT,
    FROM_OPTION,
    FROM_STORE,
    INSTANCE_FOLDER,
    instance_dir,
    store_instance_dir,
)
from pipeline.store.lock import STORE_TAG
from pipeline.store.object_store import ObjectStore, safe_part

REPO = Path(__file__).resolve().parents[1]
ONE_SCENARIO = "scenarios:\n  actual:\n    description: FIDE 2014, monthly\n    rules: fide-2014\n"


# -- where a store's instance lives ------------------------------------------------------------------------------


def test_a_local_store_keeps_its_instance_in_a_dot_folder_that_no_table_or_inventory_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "mystore"
    assert store_instance_dir(str(store)) == str(store / INSTANCE_FOLDER) == str(store / ".dagster")
    monkeypatch.chdir(tmp_path)
    assert store_instance_dir("./mystore") == str(store / ".dagster")  # absolute, whatever the working directory
    with pytest.raises(ValueError, match="unsafe path component"):
        safe_part(INSTANCE_FOLDER)  # no table, report or landing-zone key can be the instance's folder

    # An instance with its files (SQLite databases, compute logs) beside the landing zone is not landing-zone data.
    dump = store / "raw" / "GER" / "2024-01" / "open.csv"
    dump.parent.mkdir(parents=True)
    dump.write_text("event_id,white_id,black_id,result\n")
    for name in ("history/runs.db", "history/runs/index.db", "storage/run/compute_logs/step.err", "dagster.yaml"):
        (store / ".dagster" / name).parent.mkdir(parents=True, exist_ok=True)
        (store / ".dagster" / name).write_text("x")
    entries = inventory(ObjectStore(str(store)))
    assert [entry.key for entry in entries] == ["raw/GER/2024-01/open.csv"]
    assert months_held(entries) == ["2024-01"] and unplaced(entries) == []


def test_an_object_store_s_instance_is_a_local_folder_keyed_by_its_url_and_endpoint_never_its_credentials(
    tmp_path: Path,
) -> None:
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    ger = store_instance_dir("s3://chess/ger", environ)
    assert Path(ger).parent == tmp_path / "chess-ratings" / "instances" and Path(ger).name.startswith("s3-chess-ger-")
    assert store_instance_dir("s3://chess/ger", dict(environ)) == ger  # the same store finds the same instance
    assert store_instance_dir("s3://chess/aut", environ) != ger
    elsewhere = {**environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:8333"}
    assert store_instance_dir("s3://chess/ger", elsewhere) != ger  # same bucket name on another server
    # Credentials in the URL or the endpoint change nothing and appear nowhere.
    assert store_instance_dir("s3://KEY:SECRET@chess/ger", environ) == ger
    with_user = {**environ, "AWS_ENDPOINT_URL": "http://user:pw-SECRET@127.0.0.1:8333"}
    assert store_instance_dir("s3://chess/ger", with_user) == store_instance_dir("s3://chess/ger", elsewhere)
    assert "SECRET" not in store_instance_dir("s3://KEY:SECRET@chess/ger", with_user)
    home = os.path.expanduser("~")
    assert store_instance_dir("s3://chess/ger", {}).startswith(os.path.join(home, ".local", "state", "chess-ratings"))


def test_the_instance_is_the_option_then_dagster_home_then_the_store_s_own(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    environ = {"DAGSTER_HOME": str(tmp_path / "env-home")}
    assert instance_dir(str(tmp_path / "given"), store, environ) == (str(tmp_path / "given"), FROM_OPTION)
    assert instance_dir(None, store, environ) == (str(tmp_path / "env-home"), FROM_ENVIRONMENT)
    assert instance_dir(None, store, {}) == (str(tmp_path / "store" / ".dagster"), FROM_STORE)
    assert instance_dir(None, store, {"DAGSTER_HOME": ""}) == (str(tmp_path / "store" / ".dagster"), FROM_STORE)


# -- `ratings ui --store` ----------------------------------------------------------------------------------------


def test_ratings_ui_store_resolves_that_store_and_its_instance_for_dg_dev(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assets.runtime.cli import ui_target

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mystore").mkdir()
    store, home, source = ui_target("./mystore", None)
    assert (store, home, source) == (str(tmp_path / "mystore"), str(tmp_path / "mystore" / ".dagster"), FROM_STORE)
    assert not Path(home).exists()  # resolving makes nothing

    command, environment = ui_command(store, home, "127.0.0.1", 3001)
    assert Path(command[0]).name == "dg" and command[1] == "dev"  # not `dagster dev`, which Dagster supersedes
    assert command[command.index("--host") + 1] == "127.0.0.1" and command[command.index("--port") + 1] == "3001"
    assert command[command.index("--target-path") + 1] == str(REPO)  # the project, as `dg check defs` loads it
    # The definitions read the store from RATINGS_STORE, absolute: `dg dev` runs from the project's folder.
    assert (environment["RATINGS_STORE"], environment["DAGSTER_HOME"]) == (store, home)
    assert environment["DAGSTER_DISABLE_TELEMETRY"] == "1"

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "make-home"))
    assert ui_target("./mystore", None)[1:] == (str(tmp_path / "make-home"), FROM_ENVIRONMENT)
    assert ui_target("./mystore", "explicit")[1:] == (str(tmp_path / "explicit"), FROM_OPTION)
    with pytest.raises(ValueError, match="does not exist"):
        ui_target("./mistyped", None)
    assert not (tmp_path / "mistyped").exists()


# -- two stores, one after the other (the Done-when of part 3) --------------------------------------------------


class _Exec(BaseException):
    """Raised instead of os.execve: `ratings ui` stops where it would become `dg dev` (not an Exception, which the
    command would report as an error).
    """

    def __init__(self, command: list[str], environment: dict[str, str]):
        super().__init__(command)
        self.command, self.environment = command, environment


def _rate(*argv: str) -> tuple[int, str]:
    from assets.runtime.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def _store_tags(home: Path) -> list[str]:
    """The ratings/store tag of every run the instance at `home` holds ("" for a run without one)."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [record.dagster_run.tags.get(STORE_TAG, "") for record in instance.get_run_records()]


def _ui(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[_Exec, str]:
    """`ratings ui ...` up to the `dg dev` it would become: that command and environment, and what it said."""
    from assets.runtime.cli import main

    def execve(path: str, command: list[str], environment: dict[str, str]) -> None:
        raise _Exec(command, environment)

    monkeypatch.setattr(os, "execve", execve)
    capsys.readouterr()
    with pytest.raises(_Exec) as launched:
        main(["ui", *argv])
    return launched.value, capsys.readouterr().err


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo's store rated as `make run` rates it (DAGSTER_HOME exported by the Makefile: <project>/.dagster_home),
    then another store B with `ratings run --store B`, no --dagster-home and no DAGSTER_HOME: two tiny generated
    landing zones, one scenario.
    """
    from pipeline.generator import generate

    root = tmp_path_factory.mktemp("two-stores")
    project, other = root / "project", root / "b"
    demo = project / "data"
    generate(str(demo), seed=1, players=200, start="2024-01", end="2024-02")
    generate(str(other), seed=2, players=200, start="2024-01", end="2024-02")
    scenarios = root / "scenarios.yaml"
    scenarios.write_text(ONE_SCENARIO)
    make_home = project / ".dagster_home"
    with pytest.MonkeyPatch.context() as patch:
        for name in ("DAGSTER_HOME", "RATINGS_STORE", "RATINGS_SCENARIOS", "RATINGS_FIRST_MONTH", "RATINGS_LAST_MONTH"):
            patch.delenv(name, raising=False)
        patch.chdir(project)
        patch.setenv("DAGSTER_HOME", str(make_home))  # `make run`
        demo_code, demo_out = _rate("run", "--store", "./data", "--scenarios", str(scenarios))
        patch.delenv("DAGSTER_HOME")  # a shell without it: `ratings run --store B`
        other_code, other_out = _rate("run", "--store", str(other), "--scenarios", str(scenarios))
        yield {
            "project": project,
            "demo": demo,
            "other": other,
            "make_home": make_home,
            "scenarios": scenarios,
            "outputs": (demo_code, demo_out, other_code, other_out),
        }


@pytest.mark.integration
def test_ratings_ui_makes_every_storage_of_a_fresh_instance_before_dg_dev_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dagster as dg

    from assets.runtime.instance import open_storages

    store, home = tmp_path / "store", tmp_path / "fresh-home"
    store.mkdir()
    _ui(monkeypatch, capsys, "--store", str(store), "--dagster-home", str(home))
    assert {path.relative_to(home).as_posix() for path in home.rglob("*.db")} == {
        "history/runs.db",
        "history/runs/index.db",
        "schedules/schedules.db",
    }
    with dg.DagsterInstance.from_config(str(home)) as instance:
        revisions = open_storages(instance)
    assert set(revisions) == {"runs", "events", "schedules"}
    assert all(found == head and head for found, head in revisions.values()), revisions


@pytest.mark.integration
def test_two_stores_rated_one_after_the_other_keep_their_runs_apart_and_make_ui_shows_the_demo_s_only(
    two_stores: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    demo, other, make_home = two_stores["demo"], two_stores["other"], two_stores["make_home"]
    demo_code, demo_out, other_code, other_out = two_stores["outputs"]
    assert demo_code == 0 and other_code == 0, demo_out + other_out
    # Each run says at once which instance it uses, and why.
    assert demo_out.splitlines()[0].startswith(f"Run over {demo} (Dagster instance {make_home}, from $DAGSTER_HOME)")
    assert other_out.splitlines()[0].startswith(f"Run over {other} (Dagster instance {other / '.dagster'}, the store")
    assert "NOTE" not in demo_out + other_out  # no instance holds another store's runs

    # The demo's instance holds the demo's runs only; B's instance, in B, holds B's only; every run names its store.
    demo_tags, other_tags = _store_tags(make_home), _store_tags(other / ".dagster")
    assert demo_tags and set(demo_tags) == {str(demo)}
    assert other_tags and set(other_tags) == {str(other)}
    assert not (demo / ".dagster").exists()  # $DAGSTER_HOME was set: it wins over the store's own
    assert sorted(p.name for p in two_stores["project"].iterdir()) == [".dagster_home", "data"]
    # B's instance is outside its landing zone: B's inventory is what the generator wrote under raw/.
    assert all(entry.key.startswith("raw/") for entry in inventory(ObjectStore(str(other))))

    # `make ui`: `ratings ui` with the Makefile's DAGSTER_HOME and the default store ./data, from the project.
    monkeypatch.chdir(two_stores["project"])
    monkeypatch.delenv("RATINGS_STORE", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(make_home))
    launched, said = _ui(monkeypatch, capsys, "--port", "3000")
    assert (launched.environment["RATINGS_STORE"], launched.environment["DAGSTER_HOME"]) == (str(demo), str(make_home))
    assert "NOTE" not in said and f"Dagster UI for {demo} (instance {make_home}" in said
    # `ratings ui --store B` in a shell without DAGSTER_HOME: B's own instance.
    monkeypatch.delenv("DAGSTER_HOME")
    launched, said = _ui(monkeypatch, capsys, "--store", str(other))
    assert launched.environment["DAGSTER_HOME"] == str(other / ".dagster") and "NOTE" not in said

    # Sharing an instance is a choice, and never silent: B rated into the demo's instance says so, and so does the UI.
    code, out = _rate(
        "run", "--store", str(other), "--scenarios", str(two_stores["scenarios"]), "--dagster-home", str(make_home)
    )
    assert code == 0, out
    assert f"NOTE: the Dagster instance {make_home} (given by --dagster-home) also holds the runs of {demo}" in out
    assert f"NOTE: the store's own Dagster instance {other / '.dagster'} holds its runs" in out  # B's earlier run
    assert set(_store_tags(make_home)) == {str(demo), str(other)}
    monkeypatch.setenv("DAGSTER_HOME", str(make_home))
    launched, said = _ui(monkeypatch, capsys)
    assert f"also holds the runs of {other}" in said and "unset DAGSTER_HOME" in said


@pytest.mark.integration
def test_ratings_ui_serves_the_store_s_own_runs_with_dg_dev_on_loopback(two_stores: dict[str, Any]) -> None:
    """A real `ratings ui --store B` (no DAGSTER_HOME): the UI answers on 127.0.0.1, its runs are B's, and it runs
    `dg dev`, so no supersession warning.
    """
    from tests.servers import free_port

    other, port = two_stores["other"], free_port()
    log = two_stores["project"].parent / "ui.log"
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RATINGS_") and name not in ("DAGSTER_HOME", "VIRTUAL_ENV")
    }
    with log.open("w") as err:
        server = subprocess.Popen(
            [sys.executable, "-m", "assets", "ui", "--store", str(other), "--port", str(port)],
            env=environment,
            cwd=str(two_stores["project"]),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        query = "{ runsOrError { ... on Runs { results { runId tags { key value } } } } }"
        runs = _graphql(port, query, server)["runsOrError"]["results"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    said = log.read_text()
    stores = {tag["value"] for run in runs for tag in run["tags"] if tag["key"] == STORE_TAG}
    assert runs and stores == {str(other)}, said
    assert len(runs) == len(_store_tags(other / ".dagster"))
    assert "SupersessionWarning" not in said and "dagster dev" not in said
    assert f"Dagster UI for {other} (instance {other / '.dagster'}, the store's own) on http://127.0.0.1:{port}" in said


def _graphql(port: int, query: str, server: subprocess.Popen, timeout: float = 120) -> dict[str, Any]:
    """The answer of the UI's GraphQL endpoint on 127.0.0.1:port, once the server answers (within `timeout`)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())["data"]
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the UI did not answer on port {port} (exit code {server.poll()})") from None
            time.sleep(0.5)
