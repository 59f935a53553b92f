"""Readable lists for the months people read.

`ratings run` publishes the last month (all or none on request), and `ratings list` makes any stored month's list, byte
for byte what publishing writes.
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipeline.cli import commands
from pipeline.formats.fide_list import parse_fide_list
from pipeline.months import month_range
from pipeline.operations.run_plan import published_months
from pipeline.publish.lists import PUBLISHED_FORMATS, STORED_FORMATS, published_list_key, readable_list_months
from pipeline.scenarios.model import default_scenarios_path, load_scenarios
from pipeline.store.object_store import ObjectStore
from tests.conftest import TINY_END, TINY_START

MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]
SCENARIO_NAMES = ["actual", "elo_480"]


@pytest.fixture(scope="module")
def scenarios_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two of the shipped scenarios: a rule set with a compression month and a plain Elo."""
    shipped = yaml.safe_load(Path(default_scenarios_path()).read_text())["scenarios"]
    path = tmp_path_factory.mktemp("scenarios") / "scenarios.yaml"
    path.write_text(yaml.safe_dump({"scenarios": {name: shipped[name] for name in SCENARIO_NAMES}}))
    return path


def rate(raw: Path, root: Path, scenarios: Path, publish: str, **options: object) -> tuple[dict, str]:
    from assets.runtime.runs import run_store

    shutil.copytree(raw, root / "raw")
    out = io.StringIO()
    summary = run_store(
        str(root), scenarios_file=str(scenarios), dagster_home=str(root / ".home"), out=out, publish=publish, **options
    )
    assert summary["success"], out.getvalue()
    return summary, out.getvalue()


@pytest.fixture(scope="module")
def published_all(tiny_landing_zone: Path, scenarios_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("all")
    rate(tiny_landing_zone, root, scenarios_file, "all")
    return root


@pytest.fixture(scope="module")
def published_last(tiny_landing_zone: Path, scenarios_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    root = tmp_path_factory.mktemp("last")
    summary, said = rate(tiny_landing_zone, root, scenarios_file, "last")
    return root, summary, said


def list_bytes(root: Path, scenario: str, month: str, file_format: str, out: Path) -> bytes:
    code = commands.main(
        ["list", "--store", str(root), "--scenario", scenario, "--month", month, "--format", file_format]
        + ["--out", str(out)]
    )
    assert code == 0
    return out.read_bytes()


def test_a_run_publishes_the_last_month_and_says_how_to_make_the_others(published_last: tuple) -> None:
    root, summary, said = published_last
    store = ObjectStore(str(root))
    for name in SCENARIO_NAMES:
        assert readable_list_months(store, name) == [TINY_END]
        assert sorted(store.list_files("lists", name)) == [
            published_list_key(name, TINY_END, e) for e in ("csv", "html", "txt")
        ]
    assert summary["published"] == [TINY_END]
    assert f"readable lists of {TINY_END} (Dagster instance" in said
    assert f"readable lists of {TINY_END}: {root}/lists/<scenario>/<YYYY-MM>.csv|.txt|.html" in said
    assert f"ratings list --store {root} --scenario <scenario> --month <YYYY-MM>" in said
    # Every month's Parquet list is stored all the same.
    assert all(store.exists(f"actual/rating_list/{month}.parquet") for month in MONTHS)
    # The UI: the published lists are materialized for the last month only, the other tables for every month.
    instance = dg.DagsterInstance.from_config(str(root / ".home"))
    for key, months in ((["actual", "published_list"], [TINY_END]), (["actual", "rating_list"], MONTHS)):
        records = instance.fetch_materializations(dg.AssetKey(key), limit=100).records
        assert sorted(r.partition_key for r in records) == months, key
    # Two runs: everything but the lists and the comparison, then the lists with the comparison.
    assert [run.tags["ratings/stage"] for run in reversed(instance.get_runs())] == ["all", "comparison"]
    # The report index links the lists there are and says how to make the others.
    index = store.read_bytes("reports/index.html").decode()
    assert f'href="../lists/actual/{TINY_END}.html"' in index and f'href="../lists/elo_480/{TINY_END}.csv"' in index
    assert f'href="../lists/actual/{TINY_START}.html"' not in index
    assert "ratings list --store" in index


def test_ratings_list_makes_any_month_byte_for_byte_what_publish_all_writes(
    published_all: Path, published_last: tuple, tmp_path: Path
) -> None:
    last_root = published_last[0]
    all_store = ObjectStore(str(published_all))
    for name in SCENARIO_NAMES:
        assert readable_list_months(all_store, name) == MONTHS
        for month in MONTHS:
            for file_format in STORED_FORMATS:
                stored = all_store.read_bytes(published_list_key(name, month, file_format))
                # On the store that published them, and on the one that published only the last month.
                assert list_bytes(published_all, name, month, file_format, tmp_path / "a") == stored, (name, month)
                assert list_bytes(last_root, name, month, file_format, tmp_path / "b") == stored, (name, month)


def test_the_combined_layout_reads_back_as_fides_combined_list(published_last: tuple, tmp_path: Path) -> None:
    root = published_last[0]
    combined = list_bytes(root, "actual", "2024-02", "combined", tmp_path / "combined.txt")
    csv_text = list_bytes(root, "actual", "2024-02", "csv", tmp_path / "list.csv").decode()
    parsed = parse_fide_list(combined, "players_list_foa.txt")
    assert parsed.layout == "A" and parsed.rejected.height == 0
    import polars as pl

    listed = pl.read_csv(io.StringIO(csv_text)).filter(pl.col("id") < 10**15)
    assert parsed.players.height == listed.height  # every player with a FIDE id, rated or not
    ratings = dict(zip(parsed.players["player_id"], parsed.players["standard_rating"], strict=True))
    assert ratings == dict(zip(listed["id"], listed["rating"], strict=True))


def test_ratings_list_says_what_is_missing(published_last: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    root = published_last[0]
    assert commands.main(["list", "--store", str(root), "--scenario", "nope"]) == 1
    assert "has no rating list" in capsys.readouterr().err
    assert commands.main(["list", "--store", str(root), "--month", "2023-05"]) == 1
    err = capsys.readouterr().err
    assert "actual has no stored list of 2023-05" in err and f"{TINY_START}..{TINY_END}" in err
    # `ratings run` refuses a month before the store's first: the message says so rather than advise running it.
    assert f"it is before the store's first month {TINY_START}" in err and "ratings run" not in err
    # An early month folder holding no dump is no month of the store's for `ratings run`, nor for the hint.
    empty = next(folder for folder in sorted((root / "raw").iterdir()) if folder.name != "players") / "2023-02"
    empty.mkdir()
    try:
        assert commands.main(["list", "--store", str(root), "--month", "2023-05"]) == 1
        assert f"it is before the store's first month {TINY_START}" in capsys.readouterr().err
    finally:
        empty.rmdir()
    assert commands.main(["list", "--store", str(root), "--month", "2024-06"]) == 1
    assert "rate it first (`ratings run --store" in capsys.readouterr().err
    # Defaults: actual, its latest month, CSV to standard output.
    assert commands.main(["list", "--store", str(root)]) == 0
    assert capsys.readouterr().out.encode() == (root / "lists" / "actual" / f"{TINY_END}.csv").read_bytes()


def _planned(command: str) -> list[str]:
    """The months a printed `ratings run` plans (StoreError where that run would be refused before it starts)."""
    from assets.runtime.cli import add_dagster_commands
    from pipeline.operations.run_plan import plan_run

    args = commands.build_parser(add_dagster_commands).parse_args(shlex.split(command)[1:])
    assert args.command == "run", command
    return plan_run(args.store, args.first, args.last, args.scenarios, dagster_home=args.dagster_home).months


def test_ratings_list_names_a_run_that_makes_the_month(
    published_last: tuple,
    scenarios_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A month after the last stored list was said to be made by `ratings run --from M --to M`, which is refused for
    the list of the month before it: the command starts at the first month a chain of the scenarios file has no list
    of, carries that file, and plans as printed. A month that has not ended is no run's.
    """
    from pipeline.ingest.landing import month_bounds

    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the store's own instance: the hint names no --dagster-home
    root = published_last[0]

    def hinted(store: Path, month: str, *options: str) -> str:
        assert commands.main(["list", "--store", str(store), "--month", month, *options]) == 1
        [command] = re.findall(r"`(ratings run [^`]*)`", capsys.readouterr().err)
        return command

    later = hinted(root, "2024-09", "--scenarios", str(scenarios_file))
    assert later == f"ratings run --store {root} --from 2024-05 --to 2024-09 --scenarios {scenarios_file}"
    assert _planned(later) == month_range("2024-05", "2024-09")
    # The shipped scenarios file's other chains have no list at all: from the store's first month.
    assert _planned(hinted(root, "2024-09")) == month_range(TINY_START, "2024-09")
    # A chain with lists missing before the month asked is rebuilt from the first of them.
    store = tmp_path / "store"
    shutil.copytree(root, store, ignore=shutil.ignore_patterns(".home"))
    for month in ("2024-02", "2024-03"):
        (store / "elo_480" / "rating_list" / f"{month}.parquet").unlink()
    gap = hinted(store, "2024-03", "--scenario", "elo_480", "--scenarios", str(scenarios_file))
    assert "--from 2024-02 --to 2024-03 " in gap and _planned(gap) == ["2024-02", "2024-03"]
    current = month_bounds()[1]
    assert commands.main(["list", "--store", str(root), "--month", current]) == 1
    err = capsys.readouterr().err
    assert f"--month {current} is the current month: the list of {current} is made after the month ends" in err
    assert "ratings run" not in err


def test_publish_none_makes_no_list(tiny_landing_zone: Path, scenarios_file: Path, tmp_path: Path) -> None:
    summary, said = rate(tiny_landing_zone, tmp_path, scenarios_file, "none", workers=2)
    assert summary["published"] == [] and not (tmp_path / "lists").exists()
    assert "no readable list made (--publish none)" in said


def test_which_months_a_run_publishes(tmp_path: Path) -> None:
    """The last month, and again the months of the range published before; all; none (then the stale ones named)."""
    store = ObjectStore(str(tmp_path))
    scenarios = load_scenarios()
    for month in ("2024-01", "2024-03", "2023-06"):
        store.write_text("x", published_list_key("actual", month, "csv"))
    store.write_text("x", "lists/actual/notes.txt")  # not a month's list
    assert published_months(store, scenarios, MONTHS, "last") == (["2024-01", "2024-03", "2024-04"], [])
    assert published_months(store, scenarios, MONTHS, "all") == (MONTHS, [])
    assert published_months(store, scenarios, MONTHS, "none") == ([], ["2024-01", "2024-03"])
    # The command line spells both choices without loading the publishing code: the same values.
    assert commands.LIST_FORMATS == PUBLISHED_FORMATS


def test_the_summary_says_which_months_have_readable_lists_and_which_are_stale() -> None:
    from pipeline.operations.run_plan import readable_lists_lines

    lines = readable_lists_lines("/s", ["2024-01", "2024-02", "2024-04"], [])
    assert (
        lines[0]
        == "  readable lists of 2024-01..2024-02, 2024-04 (3 months): /s/lists/<scenario>/<YYYY-MM>.csv|.txt|.html"
    )
    assert lines[-1].endswith(
        "ratings list --store /s --scenario <scenario> --month <YYYY-MM> --format csv|txt|html|combined"
    )
    lines = readable_lists_lines("/s", [], ["2024-03"])
    assert lines[0] == "  no readable list made (--publish none)"
    assert lines[1].startswith(
        "  WARNING: the readable lists of 2024-03 under /s/lists/ show the lists this run replaced"
    )


def test_a_reader_that_stops_early_ends_the_list_quietly(published_last: tuple) -> None:
    """`ratings list ... | head -1`: the writer's broken pipe is no error (exit 0, nothing on standard error)."""
    import subprocess
    import sys

    ratings = Path(sys.executable).with_name("ratings")
    command = f"set -o pipefail; '{ratings}' list --store '{published_last[0]}' --format txt | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("ID Number")
