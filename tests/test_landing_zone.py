"""The landing zone's inventory: nothing under raw/ is ignored without a record, and nothing outside the store is read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.ingest import read_month
from pipeline.landing import DUMP, MISPLACED, NOT_A_FILE, classify, inventory, lenient_month, months_held, unplaced
from pipeline.storage import ObjectStore
from pipeline.validate import split_games
from schemas import Players, empty_frame

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name, month", [
    ("2024-1", "2024-01"), ("2024_02", "2024-02"), ("2024.3", "2024-03"), ("202404", "2024-04"), ("Jan2024", "2024-01"),
    ("2024-February", "2024-02"), ("march_2024", "2024-03"), ("2024-13", None), ("notes", None), ("Foo2024", None),
])
def test_unusual_month_folder_names_are_understood(name, month):
    assert lenient_month(name) == month


def test_every_entry_is_placed_or_says_where_it_belongs():
    assert classify("raw/GER/2024-01/open.trf").kind == DUMP
    assert classify("raw/GER/2024-01/sub/open.trf").month == "2024-01"  # below a month folder: that month's
    odd = classify("raw/GER/2024-1/open.trf")
    assert (odd.kind, odd.month) == (MISPLACED, "2024-01") and "move the file to raw/GER/2024-01/" in odd.problem
    loose = classify("raw/GER/open.trf")
    assert (loose.kind, loose.month) == (MISPLACED, None) and "move it to raw/GER/<YYYY-MM>/" in loose.problem
    top = classify("raw/open.trf")
    assert top.month is None and "move it to raw/<FED>/<YYYY-MM>/" in top.problem
    for federation in ("bad fed", "-rf", ".hidden"):
        entry = classify(f"raw/{federation}/2024-01/x.trf")
        assert (entry.kind, entry.month) == (MISPLACED, "2024-01") and "is not a federation code" in entry.problem
    assert classify("raw/players/2024-01/players.csv").kind == "registry"
    assert "move it to raw/players/<YYYY-MM>/" in classify("raw/players/players.csv").problem


def test_misplaced_links_and_special_files_are_quarantined_and_never_followed(tmp_path: Path):
    store_root = tmp_path / "store"
    month = store_root / "raw" / "GER" / "2024-01"
    month.mkdir(parents=True)
    shutil.copyfile(DATA / "tiny.trf", month / "tiny.trf")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(DATA / "games.csv", outside / "secret.csv")
    (month / "link.csv").symlink_to(outside / "secret.csv")           # a file outside the store
    (month / "linked-folder").symlink_to(outside)                    # a folder outside the store
    (month / "dangling.pgn").symlink_to(tmp_path / "nothing-here")    # a dangling link
    (month / "zeros.csv").symlink_to("/dev/zero")                     # endless bytes
    os.mkfifo(month / "pipe.trf")                                     # would block a reader for ever
    odd_month = store_root / "raw" / "GER" / "2024_01"
    odd_month.mkdir()
    shutil.copyfile(DATA / "games.csv", odd_month / "late.csv")
    odd_fed = store_root / "raw" / "bad fed" / "2024-01"
    odd_fed.mkdir(parents=True)
    shutil.copyfile(DATA / "games.csv", odd_fed / "x.csv")
    shutil.copyfile(DATA / "games.csv", store_root / "raw" / "GER" / "loose.csv")
    store = ObjectStore(str(store_root))

    entries = inventory(store)
    assert months_held(entries) == ["2024-01"]
    assert [entry.key for entry in unplaced(entries)] == ["raw/GER/loose.csv"]
    raw = read_month(store, "2024-01", entries)
    games, quarantine = split_games(raw, empty_frame(Players), "2024-01")
    assert raw.height == games.height + quarantine.height
    by_file = {row["source_file"]: (row["reason"], row["detail"]) for row in quarantine.iter_rows(named=True)
               if row["reason"] in (MISPLACED, NOT_A_FILE)}
    assert by_file == {
        "GER/2024-01/dangling.pgn": (NOT_A_FILE, "a symbolic link is not read (only regular files are): copy the file itself into the landing zone"),
        "GER/2024-01/link.csv": (NOT_A_FILE, "a symbolic link is not read (only regular files are): copy the file itself into the landing zone"),
        "GER/2024-01/linked-folder": (NOT_A_FILE, "a symbolic link is not read (only regular files are): copy the file itself into the landing zone"),
        "GER/2024-01/pipe.trf": (NOT_A_FILE, "a special file (FIFO, device or socket) is not read (only regular files are): copy the file itself into the landing zone"),
        "GER/2024-01/zeros.csv": (NOT_A_FILE, "a symbolic link is not read (only regular files are): copy the file itself into the landing zone"),
        "GER/2024_01/late.csv": (MISPLACED, "folder '2024_01' is not written YYYY-MM: move the file to raw/GER/2024-01/"),
        "bad fed/2024-01/x.csv": (MISPLACED, "federation folder 'bad fed' is not a federation code (a letter or digit first, then letters, digits, . _ = + -): move the file to raw/<FED>/2024-01/"),
    }
    # Nothing from outside the store was read: the only rated games are tiny.trf's.
    assert set(games["source_file"]) == {"GER/2024-01/tiny.trf"}
    assert not raw.filter(pl.col("raw_text").str.contains("league-2024")).height
