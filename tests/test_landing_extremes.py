"""Landing zones at their extremes.

A header of absurdly many columns, a line quoted whole, a file beyond a cap, files with no record, the registry folder
in another case, compressed data under a plain name. Every file ends as records (games or one quarantined record that
says why), and one such file never stops the others.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipeline.formats.decoding as decoding
from pipeline.formats import read_dump, read_dumps
from pipeline.formats.common import UnreadableDump
from pipeline.formats.table_files import InputFileError, read_table
from pipeline.formats.tabular import MAX_COLUMNS
from pipeline.ingest import dumps
from pipeline.ingest.dumps import read_month
from pipeline.ingest.landing import MISPLACED, REGISTRY, classify, inventory
from pipeline.ingest.registry import registry_table
from pipeline.invariants.store_checks import files_not_read_whole
from pipeline.operations.run_plan import closing_lines
from pipeline.store.object_store import ObjectStore
from pipeline.text import DETAIL_CHARS
from pipeline.validate.file_report import report_file
from pipeline.validate.split import split_games
from schemas import Players, empty_frame
from tests.landing import pgn_game

MONTH = "2024-01"
GOOD_CSV = "white_id,black_id,result,date\n1001,1002,1-0,2024-01-05\n1003,1004,0-1,2024-01-05\n"
GOOD_PGN = pgn_game("Open", "2024.01.05", 1001, 1002, "1-0") + pgn_game("Open", "2024.01.05", 1003, 1004, "0-1")


def _read(files: dict[str, bytes]) -> dict[str, pl.DataFrame]:
    """Each file's records, the files read together as a month's are."""
    frames = read_dumps([(data, f"GER/{MONTH}/{name}", "GER") for name, data in files.items()], MONTH)
    return dict(zip(files, frames, strict=True))


# -- 1. a header of more columns than any table has ---------------------------------------------------------------
def _wide_header(columns: int) -> bytes:
    return ("white_id,black_id,result" + ",x" * (columns - 3) + "\n1001,1002,1-0" + "," * (columns - 3) + "\n").encode()


def _too_wide(columns: int, where: str = "the header") -> str:
    return (
        f"{where} has {columns:,} columns, more than {MAX_COLUMNS:,}, the most a table file may have (MAX_COLUMNS): "
        "the file is not read"
    )


def test_a_csv_header_of_too_many_columns_is_one_record_and_the_other_files_are_read():
    frames = _read({"wide.csv": _wide_header(MAX_COLUMNS + 1), "good.csv": GOOD_CSV.encode()})
    wide = frames["wide.csv"]
    assert wide.select("source_line", "parse_error").rows() == [(1, _too_wide(MAX_COLUMNS + 1))]
    assert frames["good.csv"]["parse_error"].null_count() == 2
    # At the bound the file is read.
    assert read_dump(_wide_header(MAX_COLUMNS), f"GER/{MONTH}/w.csv", "GER", MONTH)["parse_error"].to_list() == [None]


def test_the_header_is_the_first_line_with_text_and_a_semicolon_header_counts_too():
    blank_lines_first = b"\n ,,\n" + _wide_header(MAX_COLUMNS + 5)
    record = read_dump(blank_lines_first, f"GER/{MONTH}/w.csv", "GER", MONTH)
    assert record["parse_error"].to_list()[0].startswith(f"the header (line 3) has {MAX_COLUMNS + 5:,} columns")
    semicolons = ("white_id;black_id;result" + ";x" * MAX_COLUMNS + "\n").encode()
    record = read_dump(semicolons, f"GER/{MONTH}/s.csv", "GER", MONTH)
    assert record["parse_error"].to_list()[0].startswith(f"the header has {MAX_COLUMNS + 3:,} columns")


def test_a_parquet_file_of_too_many_columns_is_one_record():
    table = pa.table({"white_id": [1001], "black_id": [1002], "result": ["1-0"]})
    table = table.append_column("x", pa.array([None], pa.int8()))
    for i in range(MAX_COLUMNS - 3):
        table = table.append_column(f"x{i}", pa.array([None], pa.int8()))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    record = read_dump(sink.getvalue(), f"GER/{MONTH}/wide.parquet", "GER", MONTH)
    assert record["parse_error"].to_list() == [_too_wide(MAX_COLUMNS + 1, "the file")]


def test_registry_and_user_csv_files_refuse_too_many_columns(tmp_path: Path):
    wide = _wide_header(MAX_COLUMNS + 1).replace(b"white_id,black_id,result", b"player_id,name,federation")
    with pytest.raises(UnreadableDump, match=f"the header has {MAX_COLUMNS + 1:,} columns"):
        registry_table(wide)
    path = tmp_path / "games.csv"
    path.write_bytes(_wide_header(MAX_COLUMNS + 1))
    with pytest.raises(InputFileError, match=f"^{path}: cannot read games: the header has {MAX_COLUMNS + 1:,} col"):
        read_table(path, "games")
    report = report_file(str(path))  # `ratings validate`
    assert report.problems == [f"line 1: {_too_wide(MAX_COLUMNS + 1)}"]


# -- 2. what a detail quotes from a dump is capped -------------------------------------------------------------------
def test_a_detail_quoting_a_long_line_is_capped_and_keeps_its_advice(tmp_path: Path):
    name = "x" * 200_000  # one column: a header without the required ones, whose names the detail lists
    record = read_dump(name.encode() + b"\n1\n", f"GER/{MONTH}/long.csv", "GER", MONTH)
    detail = record["parse_error"][0]
    assert len(detail) <= DETAIL_CHARS
    assert detail.startswith("the header has no column(s) white_id, black_id, result")
    assert " characters left out) ... " in detail
    assert detail.endswith(
        "a games file needs white_id, black_id and result: README, 'Rating your own federation's files')"
    )
    _, quarantine = split_games(record, empty_frame(Players), MONTH)
    assert quarantine["detail"].to_list() == [detail]
    path = tmp_path / "long.csv"
    path.write_bytes(name.encode() + b"\n1\n")
    assert all(len(problem) <= DETAIL_CHARS + 20 for problem in report_file(str(path)).problems)


def test_a_long_value_quoted_by_validation_is_capped():
    game = GOOD_CSV.splitlines()[0] + f"\n1001,1002,{'R' * 50_000},2024-01-05\n"
    raw = read_dump(game.encode(), f"GER/{MONTH}/r.csv", "GER", MONTH)
    _, quarantine = split_games(raw, empty_frame(Players), MONTH)
    assert quarantine["reason"].to_list() == ["result_out_of_domain"]
    detail = quarantine["detail"][0]
    assert (
        len(detail) <= DETAIL_CHARS
        and detail.startswith("result 'RRR")
        and detail.endswith("' is not 1-0, 0-1 or 1/2-1/2")
    )


# -- 3. a file beyond a cap: one record that says what to do, and a WARNING line in the run's summary -----------------
def test_a_plain_dump_beyond_the_text_cap_is_refused_from_its_size_unread(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(decoding, "MAX_DECOMPRESSED_BYTES", 1_000)
    folder = tmp_path / "raw" / "GER" / MONTH
    folder.mkdir(parents=True)
    big = GOOD_PGN * 10
    (folder / "big.pgn").write_text(big)
    small = pgn_game("Open", "2024.01.05", 1001, 1002, "1-0")
    assert len(small) < 1_000 < len(big)
    (folder / "small.pgn").write_text(small)
    read: list[str] = []
    real = dumps.read_listed
    monkeypatch.setattr(dumps, "read_listed", lambda store, key, size=None: read.append(key) or real(store, key, size))
    raw = read_month(ObjectStore(str(tmp_path)), MONTH)
    assert read == [f"raw/GER/{MONTH}/small.pgn"]  # the big one is never read
    refused = raw.filter(pl.col("source_file") == f"GER/{MONTH}/big.pgn")
    assert refused.select("format", "parse_error").rows() == [
        (
            "pgn",
            f"GER/{MONTH}/big.pgn: is {len(big):,} bytes, more than 1,000 bytes, the cap per file "
            "(MAX_DECOMPRESSED_BYTES); not read: split it into parts within the cap in the same month folder",
        )
    ]
    assert raw.filter(pl.col("source_file") == f"GER/{MONTH}/small.pgn")["parse_error"].null_count() == 1
    # The same rule for a file given as bytes (read_file, `ratings validate`), plain or compressed.
    plain = read_dump(big.encode(), f"GER/{MONTH}/b.pgn", "GER", MONTH)["parse_error"].to_list()
    assert plain == [refused["parse_error"][0].replace("big.pgn", "b.pgn")]
    report = report_file(str(folder / "big.pgn"))  # `ratings validate`: told from its size too
    path = str(folder / "big.pgn")
    assert (report.format, report.problems) == ("pgn", [f"line 1: {path}{plain[0].removeprefix(f'GER/{MONTH}/b.pgn')}"])


def test_the_run_summary_warns_of_each_file_not_read_whole(tmp_path: Path):
    store = ObjectStore(str(tmp_path))
    capped = "GER/2024-01/big.pgn: has more than 8,000,000 lines, the cap per file (MAX_LINES_PER_FILE); not read: x"
    quarantine = pl.DataFrame(
        {
            "source_file": ["GER/2024-01/big.pgn", "GER/2024-01/open.trf", "NOR/2024-01/rows.parquet"],
            "reason": ["unparseable", "unplayed", "unparseable"],
            "detail": [capped, "forfeit", "rows 9-20 not read: ..., the cap per file (MAX_ROWS_PER_FILE): x"],
        }
    )
    store.write_parquet(quarantine, "quarantine", "2024-01.parquet")
    found = files_not_read_whole(store, ["2024-01", "2024-02"])
    assert found == [
        "GER/2024-01/big.pgn: has more than 8,000,000 lines, the cap per file (MAX_LINES_PER_FILE); not read: x",
        "NOR/2024-01/rows.parquet: rows 9-20 not read: ..., the cap per file (MAX_ROWS_PER_FILE): x",
    ]
    summary = {
        "run_succeeded": True,
        "games": 1,
        "quarantined": 3,
        "reconciliation_passed": True,
        "months": 1,
        "first_month": "2024-01",
        "last_month": "2024-01",
        "store": str(tmp_path),
        "failed_steps": {},
        "quarantined_by_reason": {},
        "players_by_identity": {},
        "unplaced_files": [],
        "mostly_quarantined_months": [],
        "rated_players": {},
        "dagster_home": str(tmp_path / ".dagster"),
        "run_id": "r1",
        "run_seconds": 1.0,
        "not_read_whole": found,
    }
    lines = closing_lines(summary, {"actual": None}, "Run").splitlines()
    assert [line for line in lines if "not read whole" in line] == [f"  WARNING: not read whole: {f}" for f in found]


# -- 4. a file with no record is one record, named ------------------------------------------------------------------
NO_RECORD = {
    "empty.pgn": (b"", "empty file"),
    "blank.pgn": (b" \n\n\t\r\n", "empty file: only blank lines"),
    "bom.pgn": (b"\xef\xbb\xbf", "empty file: only a byte-order mark"),
    "bom_blank.pgn": (b"\xef\xbb\xbf\n\n", "empty file: only a byte-order mark and blank lines"),
    "utf16.pgn": (b"\xff\xfe", "empty file: only a byte-order mark"),
    "escape.pgn": (b"% a PGN escape line\n", "empty file: no game, only comments, escape lines (%) or blank lines"),
    "bom.trf": (b"\xef\xbb\xbf", "empty file: only a byte-order mark"),
    "bom.csv": (b"\xef\xbb\xbf", "empty file: only a byte-order mark"),
    "header.csv": (b"white_id,black_id,result\n", "empty file: a header and no rows"),
    "header_bom.csv": (b"\xef\xbb\xbfwhite_id,black_id,result\r\n", "empty file: a header and no rows"),
}


def test_every_file_without_a_record_is_one_record_saying_so():
    frames = _read({**{name: data for name, (data, _) in NO_RECORD.items()}, "good.pgn": GOOD_PGN.encode()})
    for name, (_, problem) in NO_RECORD.items():
        assert frames[name].select("source_line", "parse_error").rows() == [(1, problem)], name
    assert frames["good.pgn"]["parse_error"].null_count() == 2
    # A compressed file says the same, streamed (.pgn.zst) or not.
    for name in ("bom.pgn", "escape.pgn", "header.csv"):
        data, problem = NO_RECORD[name]
        for packed, suffix in ((gzip.compress(data), ".gz"), (_zst(data), ".zst")):
            record = read_dump(packed, f"GER/{MONTH}/{name}{suffix}", "GER", MONTH)
            assert record["parse_error"].to_list() == [problem], name + suffix


def _zst(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


# -- 5. the registry folder in another case -----------------------------------------------------------------------
def test_a_registry_folder_in_another_case_is_misplaced_and_points_at_raw_players(tmp_path: Path):
    entry = classify(f"raw/Players/{MONTH}/players.csv")
    assert (entry.kind, entry.month) == (MISPLACED, MONTH)
    assert entry.problem == (
        "folder raw/Players/ is not the player registry's folder, raw/players/ (lower case): not read; move the file "
        f"to raw/players/{MONTH}/players.csv"
    )
    assert classify(f"raw/players/{MONTH}/players.csv").kind == REGISTRY
    folder = tmp_path / "raw" / "PLAYERS" / MONTH
    folder.mkdir(parents=True)
    (folder / "players.csv").write_text("player_id,name\n1001,A\n")
    store = ObjectStore(str(tmp_path))
    raw = read_month(store, MONTH, inventory(store))
    _, quarantine = split_games(raw, empty_frame(Players), MONTH)
    assert quarantine.select("source_file", "reason").rows() == [(f"PLAYERS/{MONTH}/players.csv", MISPLACED)]
    assert "raw/players/" in quarantine["detail"][0]


# -- 6. compressed data under a plain name ---------------------------------------------------------------------------
def test_compressed_data_named_as_text_says_what_it_is_and_the_name_that_is_read():
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("games.pgn", GOOD_PGN)
    frames = _read({"gzipped.pgn": gzip.compress(GOOD_PGN.encode()), "zipped.pgn": archive.getvalue()})
    gzipped, zipped_problem = frames["gzipped.pgn"]["parse_error"][0], frames["zipped.pgn"]["parse_error"][0]
    assert gzipped.startswith("binary content, not a text dump: it is gzip-compressed data;") and ".gz" in gzipped
    assert zipped_problem == (
        "binary content, not a text dump: it is a zip archive, which is not read: extract its files into the month "
        "folder"
    )
    # Named .gz, the same bytes are read.
    assert (
        read_dump(gzip.compress(GOOD_PGN.encode()), f"GER/{MONTH}/g.pgn.gz", "GER", MONTH)["parse_error"].null_count()
        == 2
    )
