"""Registry files read as written: other names of the columns, the columns not read, the files of one month folder."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from pipeline.formats.fide_list import write_fide_combined_list
from pipeline.ingest.registry import read_players, registry_file_problems
from pipeline.store.object_store import ObjectStore

KEY = "raw/players/2023-01/players.csv"


def _store(tmp_path: Path, files: dict[str, str]) -> ObjectStore:
    store = ObjectStore(str(tmp_path))
    for key, text in files.items():
        store.write_text(text, key)
    return store


def _problems(store: ObjectStore) -> list[tuple[str, int | None, str]]:
    return registry_file_problems(store, "2023-12").select("key", "source_line", "detail").rows()


def test_a_registry_header_under_other_names_is_read_and_what_is_not_read_is_named(tmp_path: Path) -> None:
    fields = '"One, Olga",GER,F,1990,WGM'
    headers = {
        "german": "player_id,name,country,gender,yob,titel",
        "fide": "FIDE ID,Name,Country,Gender,B-day,Tit,Rating",
        "blanks": " Player ID , Player Name ,Federation,Sex,Birth Year,Title",
    }
    read = {}
    for case, header in headers.items():
        extra = ",2400" if "Rating" in header else ""
        store = _store(tmp_path / case, {KEY: f"{header}\n1000001,{fields}{extra}\n"})
        read[case] = (read_players(store, "2023-01"), _problems(store))
    for case, (players, _) in read.items():
        row = players.select("player_id", "name", "federation", "sex", "birth_year", "title").row(0)
        assert row == (1000001, "One, Olga", "GER", "F", 1990, "WGM"), case
    assert read["german"][1] == [] and read["blanks"][1] == []
    # A column the registry does not read is named once for the file, on the header's line.
    [(key, line, detail)] = read["fide"][1]
    assert (key, line) == (KEY, 1) and detail.startswith("column 'rating' is not read (a registry reads player_id")


def test_two_columns_for_one_read_the_column_s_own_name_then_the_preferred_alias(tmp_path: Path) -> None:
    store = _store(tmp_path, {KEY: 'id,fide_id,name,country,federation\n77,1000001,"One, Olga",AUT,GER\n'})
    players = read_players(store, "2023-01")
    assert players.select("player_id", "federation").rows() == [(1000001, "GER")]
    assert [detail for _, _, detail in _problems(store)] == [
        "column 'id' is not read: another column of the header gives player_id",
        "column 'country' is not read: another column of the header gives federation",
    ]


def test_a_registry_without_an_id_column_is_one_problem_for_the_file(tmp_path: Path) -> None:
    store = _store(tmp_path, {KEY: 'name,federation\n"One, Olga",GER\n"Two, Tom",GER\n'})
    assert read_players(store, "2023-01").is_empty()
    [(key, line, detail)] = _problems(store)
    assert key == KEY and line is None
    assert detail == "not read: no player_id column (the header names 'name', 'federation'): the file registers nobody"


def _fide_list(rows: list[dict[str, object]]) -> bytes:
    """A FIDE combined list (layout A) of `rows` (id, name, federation, sex, title, birth year), unrated."""
    schema = {
        "player_id": pl.Int64,
        "name": pl.Utf8,
        "federation": pl.Utf8,
        "sex": pl.Utf8,
        "title": pl.Utf8,
        "birth_year": pl.Int32,
        "rating": pl.Int32,
        "games": pl.Int32,
        "k": pl.Int16,
        "inactive": pl.Boolean,
    }
    buffer = io.BytesIO()
    write_fide_combined_list(pl.DataFrame([{c: row.get(c) for c in schema} for row in rows], schema=schema), buffer)
    return buffer.getvalue()


def test_the_files_of_one_folder_fill_each_other_and_what_they_state_otherwise_is_named(tmp_path: Path) -> None:
    # players.csv has no sex column and no birth year for 1; the FIDE list says F, 1990, and another federation.
    store = _store(tmp_path, {KEY: 'player_id,name,federation,birth_year\n1,"One, Olga",GER,\n2,"Two, Tom",GER,1980\n'})
    fide_key = "raw/players/2023-01/players_list_foa.txt"
    store.write_bytes(
        _fide_list(
            [
                {"player_id": 1, "name": "One, Olga", "federation": "FRA", "sex": "F", "birth_year": 1990},
                {"player_id": 3, "name": "Three, Tia", "federation": "AUT", "sex": "F", "birth_year": 2000},
            ]
        ),
        fide_key,
    )
    players = read_players(store, "2023-01").select("player_id", "federation", "sex", "birth_year")
    # players.csv is read first: its federation stays; what it does not state is the FIDE list's.
    assert players.rows() == [(1, "GER", "F", 1990), (2, "GER", None, 1980), (3, "AUT", "F", 2000)]
    [(key, line, detail)] = _problems(store)
    assert key == fide_key and line is None
    assert detail.startswith("player 1: this file's federation 'FRA' (read: 'GER') is not read: an earlier file")
