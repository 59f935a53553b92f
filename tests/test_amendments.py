"""A list rated again that differs from the stored one says what changed (issue 36, part 4).

The changes file names exactly the players whose rating changed, appeared or disappeared, and the replaced list is kept
beside it.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from pipeline.scenarios.amendments import (
    CHANGES_SCHEMA,
    _same_list,
    change_counts,
    list_changes,
    record_amendment,
)
from pipeline.store.object_store import ObjectStore
from tests.landing import pgn_game, write_raw


def _list(rows: list[tuple[int, int | None, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema={"player_id": pl.Int64, "rating": pl.Int32, "games": pl.Int32}, orient="row"
    ).with_columns(k=pl.lit(20, dtype=pl.Int16))


def test_changes_name_each_created_updated_and_deleted_player_once():
    old = _list([(1, 2000, 3), (2, 1900, 0), (3, None, 2), (4, 1500, 1)])
    new = _list([(1, 2004, 4), (2, 1900, 0), (3, 1650, 5), (5, 1400, 5)])
    changes = list_changes(old, new)
    assert changes.rows() == [
        (1, None, 2000, 2004, 3, 4, "updated"),
        (3, None, None, 1650, 2, 5, "updated"),  # a first rating is a change of rating
        (4, None, 1500, None, 1, None, "deleted"),
        (5, None, None, 1400, None, 5, "created"),
    ]
    # The changes file's contract (scripts outside the project read it): its columns, in this order.
    assert (
        changes.columns
        == list(CHANGES_SCHEMA)
        == [*("player_id", "name", "old_rating", "new_rating", "old_games", "new_games", "change")]
    )


def test_a_row_changed_outside_the_rating_is_counted_not_listed():
    old = _list([(1, 2000, 3), (2, 1900, 0)])
    new = _list([(1, 2000, 4), (2, 1900, 0)])  # one more game at exactly the expected score
    changes = list_changes(old, new)
    assert changes.is_empty()
    assert change_counts(old, new, changes) == {
        "players_created": 0,
        "players_updated": 0,
        "players_deleted": 0,
        "players_otherwise_changed": 1,
    }


def test_record_amendment_keeps_the_replaced_bytes_and_writes_nothing_for_an_equal_list(tmp_path: Path):
    store = ObjectStore(str(tmp_path))
    old, new = _list([(1, 2000, 3), (2, 1900, 1)]), _list([(1, 1990, 3), (2, 1910, 1)])
    store.write_parquet(old, "s/rating_list/2024-01.parquet")
    stored_bytes = store.read_bytes("s/rating_list/2024-01.parquet")
    names = lambda ids: pl.DataFrame({"player_id": [1, 2], "name": ["=cmd()", "Bee, Ann"]})  # noqa: E731
    assert record_amendment(store, "s", ["s", "rating_list"], "2024-01", old, names) is None
    assert not store.exists("lists/s/2024-01.changes.csv")
    amended = record_amendment(store, "s", ["s", "rating_list"], "2024-01", new, names)
    assert amended is not None and amended["players_updated"] == 2
    assert store.read_bytes("lists/s/2024-01.previous.parquet") == stored_bytes
    changes = pl.read_csv(io.BytesIO(store.read_bytes("lists/s/2024-01.changes.csv")))
    assert changes["name"].to_list() == ["'=cmd()", "Bee, Ann"], "a formula is neutralised as in the CSV list"
    assert changes.select("old_rating", "new_rating").rows() == [(2000, 1990), (1900, 1910)]


def test_a_months_records_are_written_only_where_its_list_is_stored_and_say_what_they_wrote(tmp_path: Path):
    from pipeline.scenarios.chain import ChainNotes
    from pipeline.scenarios.model import Scenario
    from pipeline.scenarios.month_records import month_records
    from pipeline.scenarios.ratings_used import DIFFERENCE_SCHEMA, STATED_DIFFERING

    store = ObjectStore(str(tmp_path))
    store.write_parquet(_list([(1, 2000, 3), (2, 1900, 1)]), "s/rating_list/2024-01.parquet")
    new = _list([(1, 1990, 3), (2, 1900, 1)])
    stated = pl.DataFrame(
        [(1, "GER/2024-01/a.pgn", "Open", 7, 2100, 2000, 2000)], schema=DIFFERENCE_SCHEMA, orient="row"
    )
    notes = ChainNotes()
    notes.stated["2024-01"], notes.unconverged["2024-01"] = stated, "not converged"
    record = month_records(store, Scenario(name="s", rules="fide-2024"), ["2024-01"], None, notes, ["s", "rating_list"])
    unstored = record("2024-01", new, False)
    assert unstored.metadata == {"whr_fit": "not converged"} and unstored.warnings == ["not converged"]
    assert not store.exists("lists/s/2024-01.changes.csv") and not store.exists("lists/s/2024-01.stated-ratings.csv")
    notes.stated["2024-01"] = stated
    stored = record("2024-01", new, True)
    assert stored.metadata[STATED_DIFFERING] == 1 and stored.metadata["players_updated"] == 1
    assert store.exists("lists/s/2024-01.changes.csv") and store.exists("lists/s/2024-01.stated-ratings.csv")
    assert len(stored.warnings) == 1 and "the list of 2024-01 was rated again" in stored.warnings[0]


POOL = pl.Struct({"month": pl.Utf8, "games": pl.Int32, "points_x2": pl.Int32, "opponent_rating_sum": pl.Int64})
ENTRY = {"month": "2024-01", "games": 3, "points_x2": 2, "opponent_rating_sum": 5400}


def _pools(pools: list[list[dict] | None]) -> pl.DataFrame:
    return _list([(n, None, 0) for n in range(len(pools))]).with_columns(pending=pl.Series(pools, dtype=pl.List(POOL)))


@pytest.mark.parametrize(
    ("stored", "rated", "same"),
    [
        ([[ENTRY], []], [[ENTRY], []], True),
        ([[ENTRY], []], [[], [ENTRY]], False),  # the same entries, another player's
        ([[ENTRY], []], [[ENTRY], None], False),  # an empty pool is not a missing one
        ([[ENTRY]], [[{**ENTRY, "games": 4}]], False),
        ([[ENTRY]], [[{**ENTRY, "opponent_rating_sum": None}]], False),
        ([[ENTRY, {**ENTRY, "month": "2024-02"}]], [[{**ENTRY, "month": "2024-02"}, ENTRY]], False),  # order counts
    ],
)
def test_a_list_is_the_stored_one_only_with_the_same_pools_entry_by_entry(stored, rated, same):
    assert _same_list(_pools(stored), _pools(rated)) is same


# -- end to end: a corrected file re-rated under the default policy ------------------------------------------------

SCENARIOS = "scenarios:\n  actual:\n    rules: fide-historical\n"
SEED = "player_id,rating,birth_year\n1,2000,1980\n2,1900,1981\n3,1800,1982\n4,1700,1983\n5,1600,1984\n"


def test_a_corrected_file_rerated_writes_the_changes_of_exactly_the_players_it_moved(tmp_path: Path):
    from assets.runtime.cli import main

    store = tmp_path / "store"
    files = {
        "players/2023-12/seed_list.csv": SEED,
        "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 1, 2, "1-0")
        + pgn_game("Open", "2024.01.11", 3, 4, "1-0"),
        "GER/2024-02/cup.pgn": pgn_game("Cup", "2024.02.10", 1, 5, "1/2-1/2"),
    }
    write_raw(store, files)
    (tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    command = ["run", "--store", str(store), "--scenarios", str(tmp_path / "scenarios.yaml")]
    command += ["--dagster-home", str(tmp_path / "home")]
    assert main(command) == 0
    list_file = store / "actual" / "rating_list" / "2024-01.parquet"
    before, before_bytes = pl.read_parquet(list_file), list_file.read_bytes()
    assert not (store / "lists" / "actual" / "2024-01.changes.csv").exists(), "a first run amends nothing"

    # The federation corrects the result of the game between 3 and 4: only they move.
    (store / "raw" / "GER/2024-01/open.pgn").write_text(
        pgn_game("Open", "2024.01.10", 1, 2, "1-0") + pgn_game("Open", "2024.01.11", 3, 4, "0-1")
    )
    out = io.StringIO()
    from assets.runtime.runs import run_store

    summary = run_store(
        str(store), "2024-01", "2024-02", str(tmp_path / "scenarios.yaml"), str(tmp_path / "home"), out=out
    )
    assert summary["success"]
    after = pl.read_parquet(list_file)
    moved = before.join(after, on="player_id", suffix="_new").filter(pl.col("rating") != pl.col("rating_new"))
    changes = pl.read_csv(store / "lists" / "actual" / "2024-01.changes.csv")
    assert sorted(changes["player_id"].to_list()) == sorted(moved["player_id"].to_list()) == [3, 4]
    assert set(changes["change"]) == {"updated"}
    assert (store / "lists" / "actual" / "2024-01.previous.parquet").read_bytes() == before_bytes
    amended = {(row["month"], row["players_updated"]) for row in summary["amended_lists"]}
    assert ("2024-01", 2) in amended
    assert "the list of 2024-01 changed from the stored one: 2 rating(s) changed" in out.getvalue()

    # The player card names the amended month.
    from pipeline.reports.player_card import player_report, render_text

    card = render_text(player_report(ObjectStore(str(store)), 3, "actual", "2024-01"))
    old, new = (
        before.filter(pl.col("player_id") == 3)["rating"].item(),
        after.filter(pl.col("player_id") == 3)["rating"].item(),
    )
    assert f"2024-01: updated, rating {old} -> {new}" in card
    assert "Amended lists" not in render_text(player_report(ObjectStore(str(store)), 1, "actual", "2024-01"))

    # The same run again changes nothing: no amendment, the changes file of the correction stays.
    summary = run_store(
        str(store), "2024-01", "2024-02", str(tmp_path / "scenarios.yaml"), str(tmp_path / "home"), out=io.StringIO()
    )
    assert summary["amended_lists"] == []
    assert pl.read_csv(store / "lists" / "actual" / "2024-01.changes.csv").equals(changes)


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
