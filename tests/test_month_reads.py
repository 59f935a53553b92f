"""A store rated by `ratings run`: what a month after the history reads of it, and the folders beside its scenarios."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from assets.runtime.runs import run_store
from pipeline.analytics.distribution import DISTRIBUTION_COLUMNS, january_lists
from pipeline.evaluation.scenarios import DEFAULT_TEST_MONTHS
from pipeline.months import add_months, month_range
from pipeline.scenarios.model import RESERVED_NAMES, default_scenarios_path
from pipeline.store.object_store import ObjectStore
from pipeline.validate.duplicates import UNDATED_WINDOW_MONTHS

FIRST, MONTH = "2022-10", "2024-12"
#: The tables of a whole list or of every game, a month each: what grows with the pool and its games.
WHOLE_TABLES = ("rating_list", "rated_games", "performance", "games", "raw_games", "quarantine")
#: Reads of a table's data; the rest (footers: rows, schema, code version) read a few kilobytes of metadata.
DATA_READS = ("read_parquet", "read_parquets", "scan_parquet", "read_bytes", "open")
METADATA_READS = ("parquet_rows", "parquet_schema", "parquet_footer")
_MONTH_TABLE = re.compile(r"^(?:(?P<scenario>[^/]+)/)?(?P<table>[^/]+)/(?P<month>\d{4}-\d{2})\.parquet$")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 400-player federation rated under `actual` from 2022-10 to 2024-11: more months than any window a month
    reads (the leaderboard's test months, the undated games' look-back).
    """
    from pipeline.generator import generate

    root = tmp_path_factory.mktemp("history") / "store"
    generate(str(root), seed=1, players=400, start=FIRST, end=MONTH)
    shipped = yaml.safe_load(Path(default_scenarios_path()).read_text())["scenarios"]
    (root / "scenarios.yaml").write_text(yaml.safe_dump({"scenarios": {"actual": shipped["actual"]}}))
    summary = run_store(
        str(root),
        None,
        add_months(MONTH, -1),
        str(root / "scenarios.yaml"),
        dagster_home=str(root / "home"),
        out=io.StringIO(),
    )
    assert summary["success"] and summary["months"] == 26
    return root


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every read the store is asked for, as (method, key, columns): the outermost call only, so that a footer read
    through `open` counts as the footer read it is.
    """
    reads: list[tuple[str, str, tuple[str, ...]]] = []
    depth = [0]

    def wrapped(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def read(self: ObjectStore, *parts: Any, **options: Any) -> Any:
            depth[0] += 1
            try:
                return method(self, *parts, **options)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    keys = list(parts[0]) if name == "read_parquets" else ["/".join(parts)]
                    reads.extend((name, key, tuple(options.get("columns") or ())) for key in keys)

        return read

    for name in (*DATA_READS, *METADATA_READS):
        monkeypatch.setattr(ObjectStore, name, wrapped(name, getattr(ObjectStore, name)))
    return reads


def test_a_month_after_the_history_reads_the_whole_tables_of_its_windows_and_the_january_lists_ratings(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 34: the monthly run reads what it needs, not the history. Of the tables that hold a whole list or every
    game, `ratings run --from M --to M` reads the months of its windows (the list before, the reporting window, the
    leaderboard's test months, the undated games' look-back: M-12 on) and, before them, only the January lists'
    `rating` and `inactive` (the distribution chart's panels) and footers. The history's monthly summaries (a row or
    a band table a month) are read whole, as the report pages chart them.
    """
    store = tmp_path / "store"
    shutil.copytree(history, store)
    reads = _recording(monkeypatch)
    summary = run_store(
        str(store), MONTH, MONTH, str(store / "scenarios.yaml"), dagster_home=str(store / "home"), out=io.StringIO()
    )
    assert summary["success"]

    window_start = add_months(MONTH, -max(DEFAULT_TEST_MONTHS, UNDATED_WINDOW_MONTHS))
    assert FIRST < add_months(window_start, -1)  # a history longer than the windows, so that the test can fail
    whole = []
    for method, key, columns in reads:
        named = _MONTH_TABLE.match(key)
        if named and named["table"] in WHOLE_TABLES:
            whole.append((method, named["table"], named["month"], columns))
    # The recording sees the month's own work: the list before read whole, as the rating step reads it.
    assert ("read_parquet", "rating_list", add_months(MONTH, -1), ()) in whole
    # The months whose lists are FIDE's lists of 1 January, as the distribution chart picks them, before the windows.
    januaries = set(january_lists(month_range(FIRST, add_months(window_start, -1))).values())
    older = [read for read in whole if read[2] < window_start and read[0] in DATA_READS]
    beyond = [
        read
        for read in older
        if not (
            read[1] == "rating_list" and read[2] in januaries and set(read[3] or ["*"]) <= set(DISTRIBUTION_COLUMNS)
        )
    ]
    assert not beyond, f"read before {window_start}, beyond the January lists' ratings: {beyond}"
    # The January lists before the windows are read, each for the chart's panel: the recording sees them too.
    assert januaries and {read[2] for read in older if read[1] == "rating_list"} == januaries


def test_every_folder_a_run_makes_beside_its_scenarios_is_a_name_no_scenario_may_take(history: Path):
    """A scenario's tables go to <scenario>/ at the store's top: every other folder there is the store's own, whose
    name the scenarios file refuses (RESERVED_NAMES), or a scenario named like it would write among its files.
    """
    scenarios = set(yaml.safe_load((history / "scenarios.yaml").read_text())["scenarios"])
    folders = {path.name for path in history.iterdir() if path.is_dir() and not path.name.startswith(".")}
    assert {"raw", "games", "lists", "reports", "kept"} <= folders  # a run's whole store, the landing zone's included
    assert folders - scenarios - {"home"} <= RESERVED_NAMES  # home: the Dagster instance this test gave the run
