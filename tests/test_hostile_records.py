"""Records no run may trust silently (issue 32): impossible ids, Parquet row bombs, names spelled alike."""

from __future__ import annotations

import io
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipeline.formats.tabular as tabular
from pipeline.formats import read_dump
from pipeline.formats.tabular import _parquet_rows_to_read, parquet_cells
from pipeline.hashing import stable_hash
from pipeline.ingest.dumps import read_month
from pipeline.store.object_store import ObjectStore
from pipeline.validate.file_report import report_file
from pipeline.validate.identity import LOCAL_ID_BASE, MAX_FIDE_ID, local_id, name_key
from pipeline.validate.split import MonthValidator, split_month
from schemas import Games, Players, Quarantine
from schemas.identity import Identity
from schemas.util import empty_frame

MONTH = "2024-01"
NO_REGISTRY = empty_frame(Players)


def _parquet(frame: pl.DataFrame | pa.Table, **options) -> bytes:
    sink = io.BytesIO()
    if isinstance(frame, pl.DataFrame):
        frame.write_parquet(sink, **options)
    else:
        pq.write_table(frame, sink, **options)
    return sink.getvalue()


def _registered(player_id: int, name: str) -> pl.DataFrame:
    """A registry of one player of the GER federation, registered in MONTH."""
    row = {"player_id": player_id, "name": name, "federation": "GER", "registered": MONTH}
    return pl.DataFrame([row]).select(
        pl.col(column).cast(dtype) if column in row else pl.lit(None, dtype).alias(column)
        for column, dtype in NO_REGISTRY.schema.items()
    )


def _split(data: bytes, name: str, players: pl.DataFrame = NO_REGISTRY):
    raw = read_dump(data, f"GER/{MONTH}/{name}", "GER", MONTH)
    split = split_month(raw, players, MONTH)
    # The tables as the assets write them: a bad record must never fail these.
    Games.validate(split.games)
    Quarantine.validate(split.quarantine)
    Identity.validate(split.identities)
    return raw, split


def _reasons(quarantine: pl.DataFrame) -> dict[int, tuple[str, str]]:
    return {
        line: (reason, detail) for line, reason, detail in quarantine.select("source_line", "reason", "detail").rows()
    }


# -- 1. every id is checked where it is read --------------------------------------------------------
BAD_IDS_CSV = (
    "event_id,date,round,white_id,black_id,result\n"
    "e,2024-01-05,1,1001,1002,1-0\n"  # line 2: a game
    "e,2024-01-05,2,0,1002,1-0\n"  # 3: id 0
    "e,2024-01-05,3,1001,-7,0-1\n"  # 4: negative
    f"e,2024-01-05,4,{MAX_FIDE_ID + 1},1002,1-0\n"  # 5: beyond FIDE's range
    f"e,2024-01-05,5,1001,{LOCAL_ID_BASE + 3},1-0\n"  # 6: a local id
    f"e,2024-01-05,6,{MAX_FIDE_ID},1002,1-0\n"  # 7: the largest id a FIDE file can carry: a game
    "e,2024-01-05,7,0,0,1/2-1/2\n"  # 8: both sides
)


def test_impossible_ids_in_a_csv_are_quarantined_as_invalid_id_naming_the_problem():
    _, split = _split(BAD_IDS_CSV.encode(), "ids.csv")
    assert sorted(split.games["source_line"].to_list()) == [2, 7]
    found = _reasons(split.quarantine)
    assert {line: reason for line, (reason, _) in found.items()} == dict.fromkeys([3, 4, 5, 6, 8], "invalid_id")
    assert found[3][1] == "white id 0 is no player id (leave it empty when the player has none)"
    assert found[4][1] == "black id -7 is negative: a player id is a positive number"
    assert found[5][1] == f"white id {MAX_FIDE_ID + 1} is beyond FIDE's id range (at most 11 digits)"
    assert found[6][1].startswith(f"black id {LOCAL_ID_BASE + 3} is in the local-id range")
    assert found[8][1] == (
        "white id 0 is no player id (leave it empty when the player has none); "
        "black id 0 is no player id (leave it empty when the player has none)"
    )
    assert set(split.quarantine["source_file"]) == {f"GER/{MONTH}/ids.csv"}
    # An impossible id is nobody: the identity report does not list it as a new player.
    assert not split.identities["given_id"].is_in([0, -7, MAX_FIDE_ID + 1, LOCAL_ID_BASE + 3]).any()


def test_impossible_ids_in_a_parquet_file_as_numbers_and_as_text():
    frame = pl.DataFrame(
        {
            "white_id": [1001, 0, -5, 1001, 1001],
            "black_id": ["1002", "1002", "1002", "00", "99999999999999999999"],
            "result": ["1-0"] * 5,
            "round": [1, 2, 3, 4, 5],
        }
    )
    _, split = _split(_parquet(frame), "ids.parquet")
    found = _reasons(split.quarantine)
    assert split.games["source_line"].to_list() == [1]
    assert {line: reason for line, (reason, _) in found.items()} == {
        2: "invalid_id",
        3: "invalid_id",
        4: "invalid_id",
        5: "unparseable",
    }
    assert found[3][1] == "white id -5 is negative: a player id is a positive number"
    assert found[5][1] == "black_id '99999999999999999999' is too long a number for a player id"


def test_a_float_id_beyond_int64_is_a_bad_cell_not_a_missing_one():
    frame = pl.DataFrame({"white_id": [1001.0, 1e20], "black_id": [1002.0, 1002.0], "result": ["1-0", "0-1"]})
    raw, _ = _split(_parquet(frame), "floats.parquet")
    assert raw["white_id"].to_list() == [1001, None]
    assert raw["parse_error"][1] == "white_id '1e+20' is not a number (an id is written in digits only)"


def test_pgn_and_trf_ids_go_through_the_same_check():
    pgn = (
        '[Event "E"]\n[Date "2024.01.05"]\n[Round "1"]\n[White "A, B"]\n[Black "C, D"]\n'
        '[WhiteFideId "00"]\n[BlackFideId "1002"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
        '[Event "E"]\n[Date "2024.01.05"]\n[Round "2"]\n[White "A, B"]\n[Black "C, D"]\n'
        f'[WhiteFideId "1001"]\n[BlackFideId "{LOCAL_ID_BASE + 9}"]\n[Result "0-1"]\n\n1. e4 0-1\n\n'
    )
    _, split = _split(pgn.encode(), "ids.pgn")
    assert split.games.is_empty()
    assert split.quarantine["reason"].to_list() == ["invalid_id", "invalid_id"]
    assert split.quarantine["detail"][0].startswith("white id 0 is no player id")
    assert split.quarantine["detail"][1].startswith(f"black id {LOCAL_ID_BASE + 9} is in the local-id range")


def test_a_name_written_beside_an_impossible_id_does_not_lend_it_to_the_name_only_records():
    """'Alpha, Anna' is written once with id 0 and once without an id: the second is not rated as player 0."""
    csv = (
        "white_id,black_id,white_name,black_name,result,round\n"
        '0,1002,"Alpha, Anna","Beta, Bernd",1-0,1\n'
        ',1002,"Alpha, Anna","Beta, Bernd",0-1,2\n'
    )
    _, split = _split(csv.encode(), "names.csv")
    assert split.games["white_id"].to_list() == [local_id(pl.Series(["Alpha, Anna"]))[0]]
    registry = _registered(LOCAL_ID_BASE + 5, "Alpha, Anna")  # a registry row no FIDE id can be: never given by name
    _, split = _split(csv.encode(), "names.csv", registry)
    assert split.games["white_id"].to_list() == [local_id(pl.Series(["Alpha, Anna"]))[0]]


def test_ratings_validate_and_the_monthly_validation_agree_record_for_record(tmp_path: Path):
    """One dump with impossible ids beside a good one: the month is validated (no Pandera failure), and
    `ratings validate` counts the file as the pipeline does.
    """
    folder = tmp_path / "raw" / "GER" / MONTH
    folder.mkdir(parents=True)
    (folder / "ids.csv").write_text(BAD_IDS_CSV)
    frame = pl.DataFrame({"white_id": [1001, 0], "black_id": [1002, 1002], "result": ["1-0", "0-1"]})
    (folder / "ids.parquet").write_bytes(_parquet(frame))
    store = ObjectStore(str(tmp_path))
    split = MonthValidator(store, [MONTH])(MONTH, read_month(store, MONTH))
    Games.validate(split.games)
    Quarantine.validate(split.quarantine)
    for name in ("ids.csv", "ids.parquet"):
        report = report_file(str(folder / name))
        source = f"GER/{MONTH}/{name}"
        quarantined = split.quarantine.filter(pl.col("source_file") == source)
        assert report.games == split.games.filter(pl.col("source_file") == source).height
        assert report.quarantined == dict(quarantined["reason"].value_counts(sort=True).iter_rows())
        assert report.quarantined["invalid_id"] == (5 if name == "ids.csv" else 1)


# -- 2. every format is bounded -----------------------------------------------------------------------
def _row_bomb(rows: int, row_group_size: int | None = None) -> bytes:
    """Constant columns: dictionary and run-length encoding keep `rows` rows in a few kilobytes."""
    table = pa.table(
        {
            "white_id": pa.array(np.full(rows, 1001, dtype=np.int64)),
            "black_id": pa.array(np.full(rows, 1002, dtype=np.int64)),
            "result": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["1-0"])),
        }
    )
    return _parquet(table, compression="zstd", row_group_size=row_group_size or rows)


def test_a_parquet_row_bomb_is_read_up_to_the_row_cap_and_the_rest_is_one_record(monkeypatch):
    monkeypatch.setattr(tabular, "MAX_ROWS_PER_FILE", 1_000)
    data = _row_bomb(2_000_000)
    assert len(data) < 100_000
    raw = read_dump(data, f"GER/{MONTH}/bomb.parquet", "GER", MONTH)
    assert raw.height == 1_001
    excess = raw.filter(pl.col("parse_error").is_not_null())
    assert excess["source_line"].to_list() == [1_001]
    assert excess["parse_error"][0] == (
        "rows 1,001-2,000,000 not read: the file has 2,000,000 rows, more than 1,000, "
        "the cap per file (MAX_ROWS_PER_FILE): split it into parts within the cap in the same month folder"
    )
    split = split_month(raw, NO_REGISTRY, MONTH, check_month=False)
    unparseable = split.quarantine.filter(pl.col("reason") == "unparseable")
    assert unparseable["detail"].to_list() == excess["parse_error"].to_list()


def test_the_row_cap_cuts_between_row_groups_and_inside_the_one_that_crosses_it(monkeypatch):
    monkeypatch.setattr(tabular, "MAX_ROWS_PER_FILE", 25)
    raw = read_dump(_row_bomb(50, row_group_size=10), f"GER/{MONTH}/groups.parquet", "GER", MONTH)
    assert raw["source_line"].to_list() == list(range(1, 27))
    assert raw["parse_error"].null_count() == 25
    # A file at the cap is read whole: no record for rows that are not there.
    monkeypatch.setattr(tabular, "MAX_ROWS_PER_FILE", 50)
    raw = read_dump(_row_bomb(50, row_group_size=10), f"GER/{MONTH}/groups.parquet", "GER", MONTH)
    assert raw.height == 50 and raw["parse_error"].null_count() == 50


def test_a_long_value_repeated_by_its_dictionary_is_capped_by_its_decoded_size(monkeypatch):
    """One 10 KB name in the dictionary, 2,000 rows: 20 MB of text from a file of a few kilobytes."""
    monkeypatch.setattr(tabular, "MAX_DECOMPRESSED_BYTES", 100_000)
    rows = 2_000
    table = pa.table(
        {
            "white_id": pa.array(np.full(rows, 1001, dtype=np.int64)),
            "black_id": pa.array(np.full(rows, 1002, dtype=np.int64)),
            "result": pa.array(["1-0"] * rows),
            "white_name": pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["x" * 10_000])
            ),
        }
    )
    data = _parquet(table, compression="zstd")
    assert len(data) < 20_000
    cells = parquet_cells(data)
    # Each row is about 10,016 bytes of text: 9 rows fit in 100,000.
    assert cells.cells.height == 9
    assert cells.ragged["parse_error"].to_list() == [
        "rows 10-2,000 not read: the rows decode to more than 100,000 bytes, the cap per file "
        "(MAX_DECOMPRESSED_BYTES): split it into parts within the cap in the same month folder"
    ]


def test_the_decoded_size_is_estimated_from_the_metadata_before_any_value_is_decoded():
    """200 constant Int64 columns of 100,000 rows: 160 MB decoded from a file of a few hundred kilobytes."""
    rows = 100_000
    table = pa.table({f"c{i}": pa.array(np.full(rows, i, dtype=np.int64)) for i in range(200)})
    data = _parquet(table, compression="zstd", row_group_size=10_000)
    assert _parquet_rows_to_read(data, 10**9, 1 << 40) == (rows, rows, None)
    total, to_read, cap = _parquet_rows_to_read(data, 10**9, 16_000_000)
    assert (total, to_read) == (rows, 10_000)  # 200 columns x 8 bytes x 10,000 rows = 16 MB
    assert cap is not None and "MAX_DECOMPRESSED_BYTES" in cap(to_read + 1, total)
    total, to_read, cap = _parquet_rows_to_read(data, 15_000, 1 << 40)
    assert (total, to_read) == (rows, 15_000)
    assert cap is not None and "MAX_ROWS_PER_FILE" in cap(to_read + 1, total)


def test_ratings_validate_on_a_row_bomb_reports_the_capped_rows(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tabular, "MAX_ROWS_PER_FILE", 500)
    path = tmp_path / "bomb.parquet"
    path.write_bytes(_row_bomb(1_000_000))
    report = report_file(str(path))
    assert (report.format, report.records, report.games) == ("parquet", 501, 1)
    assert report.quarantined == {"duplicate": 499, "unparseable": 1}
    assert report.problems == [
        "line 501: rows 501-1,000,000 not read: the file has 1,000,000 rows, more than 500, "
        "the cap per file (MAX_ROWS_PER_FILE): split it into parts within the cap in the same month folder"
    ]


# -- 3. names compared after Unicode normalisation ---------------------------------------------------
NFC = unicodedata.normalize("NFC", "Müller, Jürgen")
SPELLINGS = [
    NFC,
    unicodedata.normalize("NFD", NFC),
    "Mü\u200bller, Jürgen",  # zero-width space
    "Müller,\u00ad Jürgen",  # soft hyphen
    "\u202aMüller, Jürgen\u202c",  # bidi embedding
    "\ufeffMüller, J\u2060ürgen",  # BOM, word joiner
    "Mül\u200c\u200dler, Jürgen",  # zero-width non-joiner and joiner
]


def _key(name: str) -> str:
    return pl.select(name_key(pl.lit(name))).item()


def test_name_key_merges_unicode_forms_and_invisible_characters():
    assert {_key(name) for name in SPELLINGS} == {NFC}
    assert local_id(pl.Series(SPELLINGS)).n_unique() == 1


def test_the_local_id_of_a_name_already_in_nfc_without_invisible_characters_is_unchanged():
    """The key was trimmed, single-spaced, one space after the comma: a clean NFC name keys as before."""
    names = pl.Series([NFC, " Alpha ,Anna ", "Ünal,  Ömer", "O'Neil, Seán"])
    before = names.str.strip_chars().str.replace_all(r"\s+", " ").str.replace_all(r"\s*,\s*", ", ")
    expected = (stable_hash(before) % LOCAL_ID_BASE).cast(pl.Int64) + LOCAL_ID_BASE
    assert local_id(names).to_list() == expected.to_list()


def test_spellings_of_one_name_only_player_are_one_player_and_the_identity_report_shows_each():
    lines = "".join(f'{rnd},"{name}",,"Beta, Bernd",,1-0\n' for rnd, name in enumerate(SPELLINGS, start=1))
    csv = "round,white_name,white_id,black_name,black_id,result\n" + lines
    _, split = _split(csv.encode("utf-8"), "spellings.csv")
    assert split.games.height == len(SPELLINGS)
    assert split.games["white_id"].unique().to_list() == local_id(pl.Series([NFC])).to_list()
    merged = split.identities.filter(pl.col("player_id") == local_id(pl.Series([NFC]))[0])
    assert sorted(merged["name"].to_list()) == sorted(SPELLINGS)  # each as written
    assert merged["spellings"].to_list() == [len(SPELLINGS)] * len(SPELLINGS)
    beta = split.identities.filter(pl.col("name") == "Beta, Bernd")
    assert beta["spellings"].to_list() == [1]


def test_a_registry_name_matches_the_dumps_other_unicode_form():
    registry = _registered(4600003, unicodedata.normalize("NFD", NFC))
    csv = f'round,white_name,white_id,black_id,result\n1,"{NFC}\u200b",,1002,1-0\n'
    _, split = _split(csv.encode("utf-8"), "registry.csv", registry)
    assert split.games["white_id"].to_list() == [4600003]
    assert split.identities.filter(pl.col("given_id").is_null())["status"].to_list() == ["matched_by_name"]


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_name_key_keeps_what_tells_names_apart(form: str):
    """Normalisation merges spellings of one name, never two names: accents and letters stay."""
    names = [unicodedata.normalize(form, name) for name in ("Muller, Jurgen", "Müller, Jürgen", "Mueller, Juergen")]
    assert len({_key(name) for name in names}) == 3


def test_a_bye_written_against_id_0_stays_unplayed():
    """Exports write the missing opponent of a bye or forfeit as id 0: the round is unplayed, not a bad id."""
    csv = "white_id,black_id,result,round\n1001,0,+-,1\n1001,0,1-0,2\n"
    _, split = _split(csv.encode(), "bye.csv")
    assert split.quarantine["reason"].to_list() == ["unplayed", "invalid_id"]
