"""Registry files read as written: other names of the columns, the columns not read, the files of one month folder."""

from __future__ import annotations

from pathlib import Path

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
