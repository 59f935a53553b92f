"""Dump readers: TRF, PGN, CSV and Parquet fixtures (and the real files when shared/realdata is present)."""

from __future__ import annotations

import gzip
import io
from datetime import date
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from pipeline.formats import detect_format
from pipeline.ingest import read_file
from schemas.raw_games import RawGames

DATA = Path(__file__).resolve().parent / "data"
REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


def read(name: str, data: bytes | None = None, federation: str = "GER", month: str = "2024-01") -> pl.DataFrame:
    """Read a fixture (or given bytes) as if it sat at raw/<federation>/<month>/<name>, schema-checked."""
    records = read_file(data if data is not None else DATA / name, f"{federation}/{month}/{name}", federation, month)
    RawGames.validate(records)
    assert records["record_id"].is_unique().all()
    return records


def by_round(records: pl.DataFrame, round_number: int) -> pl.DataFrame:
    return records.filter(pl.col("round") == round_number).sort("source_line")


def trf_line(rank: str, name: str, fide_id: str, cells: list[str], rating: str = "2000") -> str:
    """A 001 record with the fixed TRF16 columns (rank 5-8, name 15-47, rating 49-52, id 58-68, rounds from 92)."""
    line = f"001 {rank:>4}      {name:<33} {rating:>4} GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  "
    assert len(line) == 91
    return (line + "  ".join(cells)).rstrip()


def realdata(*parts: str) -> Path:
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (shared/realdata not mounted)")
    return path


# -- TRF -------------------------------------------------------------------------------------------
class TestTrf:
    def test_one_record_per_pairing_or_bye(self):
        records = read("tiny.trf")
        assert records.height == 10
        played = records.filter(pl.col("parse_error").is_null() & pl.col("unplayed").is_null())
        assert played.height == 5  # four valid games + one against an unregistered id (still a game here)
        assert records.filter(pl.col("unplayed") == "forfeit").height == 1
        assert sorted(records.filter(pl.col("unplayed") == "bye")["result"].to_list()) == ["H", "U"]
        assert records.filter(pl.col("parse_error").is_not_null()).height == 2

    def test_fields_latin1_crlf_and_header_dates(self):
        records = read("tiny.trf")
        game = by_round(records, 3).row(0, named=True)  # 1 (w) vs 3 (b), a draw
        assert (game["white_id"], game["black_id"], game["result"]) == (1001, 1003, "1/2-1/2")
        assert game["black_name"] == "Müller,Jürgen"  # Latin-1 bytes, CRLF line ends
        assert (game["white_rating"], game["black_rating"]) == (2200, 2000)
        assert game["event_start"] == date(2024, 1, 6)
        assert game["date"] == date(2024, 1, 8)  # tag 132, YY/MM/DD at column 92 + 10 x (round - 1)
        assert game["event_id"] == "GER/2024-01/tiny"
        assert game["source_line"] == 11 and game["format"] == "trf" and game["time_control"] == "classical"
        assert game["raw_text"].startswith("round 3: 1 [   3 w =] / 3 [   1 b =] | 001    1")

    def test_colours_decide_white_and_forfeits_keep_their_side(self):
        records = read("tiny.trf")
        forfeit = records.filter(pl.col("unplayed") == "forfeit").row(0, named=True)
        # Rank 1 has '2 b +': black won by forfeit; reported once, from rank 1's line.
        assert (forfeit["white_id"], forfeit["black_id"], forfeit["result"], forfeit["source_line"]) == (1002, 1001, "-+", 11)

    def test_disagreeing_and_truncated_pairings_are_parse_errors(self):
        errors = read("tiny.trf").filter(pl.col("parse_error").is_not_null()).sort("source_line")
        assert errors["parse_error"].to_list() == [
            "round 3: results disagree (2 has '1', 4 has '1')",
            "round 3: result codes ' ' / '1' are not valid for a pairing",  # rank 5's line is cut mid-cell
        ]

    @pytest.mark.parametrize("newline", ["\n", "\r"])
    def test_line_endings(self, newline):
        text = (DATA / "tiny.trf").read_bytes().replace(b"\r\n", newline.encode())
        records = read("tiny.trf", text)
        assert records.height == 10 and records.filter(pl.col("black_name") == "Müller,Jürgen").height == 1

    def test_txt_extension_is_sniffed(self):
        assert read("tiny.txt", (DATA / "tiny.trf").read_bytes()).height == 10
        notes = read("readme.txt", b"Results will follow next week.\n")
        assert notes.height == 1 and "TRF" in notes["parse_error"][0]

    def test_inconsistent_pointers_lose_nothing(self):
        # 1 says it played 3; 3 says it played 2; 2 says it played 3: the 2-3 pairing is good,
        # rank 1's claim is reported on its own, and rank 4 was never paired (no records).
        cells = {1: "   3 w 1", 2: "   3 b =", 3: "   2 w =", 4: ""}
        lines = ["012 Pointers", "042 2024.01.03"]
        lines += [trf_line(str(rank), f"Player,{rank}", str(1000 + rank), [cell]) for rank, cell in cells.items()]
        records = read("pointers.trf", "\n".join(lines).encode())
        assert records.height == 2
        good = records.filter(pl.col("parse_error").is_null()).row(0, named=True)
        assert (good["white_id"], good["black_id"], good["result"]) == (1003, 1002, "1/2-1/2")
        assert records.filter(pl.col("parse_error").is_not_null())["parse_error"][0] == (
            "round 1: rank 1 names opponent 3, whose cell names 2"
        )

    def test_bad_rank_and_bad_id_are_reported(self):
        lines = [
            "012 Bad fields",
            trf_line("1", "Good,One", "1001", ["   2 w 1"]),
            trf_line("2", "Bad,Id", "10x2", ["   1 b 0"]),
            trf_line("xx", "Bad,Rank", "1003", ["0000 - U"]),
        ]
        records = read("bad.trf", "\n".join(lines).encode()).sort("source_line")
        assert records["parse_error"].to_list() == [
            "FIDE id (columns 58-68) '10x2' is not a number",
            "starting rank 'xx' (columns 5-8) is not a positive number",
        ]

    def test_unreadable_start_date_falls_back_to_round_one(self):
        lines = [
            "XXR 2",
            "042 sometime in spring",
            "132" + " " * 88 + "24/03/09  24/03/10",
            trf_line("1", "One,A", "1001", ["   2 w 1", "   2 - +"]),
            trf_line("2", "Two,B", "1002", ["   1 b 0", "   1 w -"]),  # forfeit: one colour missing is fine
        ]
        records = read("spring.trf", "\n".join(lines).encode()).sort("round")
        assert records["event_start"].to_list() == [date(2024, 3, 9)] * 2
        assert records["date"].to_list() == [date(2024, 3, 9), date(2024, 3, 10)]
        assert records["parse_error"].to_list() == [None, None]
        assert records["unplayed"].to_list() == [None, "forfeit"]
        assert records["result"].to_list() == ["1-0", "-+"]  # rank 2 had White in the forfeit

    def test_same_colour_twice_is_a_disagreement(self):
        lines = [trf_line("1", "One,A", "1001", ["   2 w 1"]), trf_line("2", "Two,B", "1002", ["   1 w 0"])]
        assert read("colours.trf", "\n".join(lines).encode())["parse_error"].to_list() == [
            "round 1: colours disagree (1 has 'w', 2 has 'w')"
        ]

    def test_open_file_objects(self):
        with open(DATA / "tiny.trf", "rb") as handle:
            assert read_file(handle, "GER/2024-01/tiny.trf", "GER", "2024-01").height == 10

    def test_no_players_and_empty_files(self):
        assert read("header-only.trf", b"012 Nothing here\n042 2024/01/01\n")["parse_error"].to_list() == [
            "TRF file has no 001 player records"
        ]
        assert read("empty.trf", b"")["parse_error"].to_list() == ["empty file"]


# -- PGN -------------------------------------------------------------------------------------------
class TestPgn:
    def test_one_record_per_game(self):
        records = read("games.pgn", federation="ENG")
        assert records.height == (DATA / "games.pgn").read_bytes().count(b"[Event ") == 13
        assert records["source_line"].to_list()[:3] == [1, 19, 32]
        assert records["round"].to_list()[:4] == [1, 1, 1, 2]  # '1.1' is round 1, board 1

    def test_headers(self):
        first = read("games.pgn", federation="ENG").row(0, named=True)
        assert first["event_id"] == "ENG/2024-01/games#January Rapidplay"
        assert (first["event_start"], first["date"]) == (date(2024, 1, 10), date(2024, 1, 12))
        assert (first["white_id"], first["black_id"], first["result"]) == (1001, 1002, "1-0")
        assert (first["white_rating"], first["black_rating"]) == (2200, 2100)
        assert (first["tc_base_seconds"], first["tc_increment_seconds"], first["time_control"]) == (5400, 30, "classical")
        assert first["raw_text"].splitlines()[0] == '[Event "January Rapidplay"]' and "1. e4" not in first["raw_text"]
        assert first["unplayed"] is None  # comments with [%clk] at a line start and variations are not tags

    def test_unplayed_games(self):
        records = read("games.pgn", federation="ENG")
        unplayed = dict(zip(records["source_line"].to_list(), records["unplayed"].to_list()))
        assert unplayed[42] == "forfeit"          # decisive result, no move
        assert unplayed[54] == "forfeit"          # Termination "forfeit" even with a move
        assert unplayed[116] == "under-one-move"  # draw without a move
        assert sum(value is not None for value in unplayed.values()) == 3

    def test_event_start_falls_back_to_first_game_date(self):
        winter = read("games.pgn", federation="ENG").filter(pl.col("event_id").str.ends_with("#Winter Cup"))
        assert winter["event_start"].unique().to_list() == [date(2024, 1, 20)]

    def test_bad_headers_are_parse_errors(self):
        errors = read("games.pgn", federation="ENG").filter(pl.col("parse_error").is_not_null())
        assert errors["parse_error"].to_list() == [
            "WhiteElo '21OO' is not a number",
            'malformed tag line 142: [White "Trunc',
        ]

    def test_blitz_and_free_text_time_controls(self):
        text = (
            '[Event "A"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n[TimeControl "180+2"]\n\n'
            '[Event "B"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n[TimeControl "15 min. + 10 s. per move"]\n\n'
            '[Event "C"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n[TimeControl "40/6000+30:900+30"]\n'
        )
        records = read("tc.pgn", text.encode())
        assert records["time_control"].to_list() == ["blitz", "rapid", "classical"]
        assert records["tc_base_seconds"].to_list() == [180, 900, 6000]
        assert records["unplayed"].to_list() == [None, None, None]  # no movetext at all: moves unknown, not unplayed

    def test_touching_tag_sections_still_split_on_event(self):
        text = '[Event "A"]\n[Result "1-0"]\n[Event "A"]\n[Result "0-1"]\n'
        assert read("touching.pgn", text.encode())["result"].to_list() == ["1-0", "0-1"]

    def test_text_outside_games_is_reported(self):
        records = read("preamble.pgn", b'Exported by a tool\n\n[Event "A"]\n[Result "1-0"]\n\n1. e4 1-0\n')
        assert records.height == 2
        assert records["parse_error"].to_list() == ["1 line(s) of text outside any PGN tag section", None]

    def test_compressed(self):
        plain = read("games.pgn")
        gz = read("games.pgn.gz", gzip.compress((DATA / "games.pgn").read_bytes()))
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as stream:
            stream.write((DATA / "games.pgn").read_bytes())
        zst = read("games.pgn.zst", sink.getvalue().to_pybytes())
        columns = ["result", "white_id", "black_id", "unplayed", "parse_error", "event_id"]
        assert gz.select(columns).equals(plain.select(columns)) and zst.select(columns).equals(plain.select(columns))
        assert gz["source_file"][0].endswith("games.pgn.gz") and gz["format"][0] == "pgn"

    def test_corrupt_gzip(self):
        records = read("games.pgn.gz", b"\x1f\x8bnot really gzip")
        assert records.height == 1 and records["parse_error"][0].startswith("corrupt gzip stream")


# -- CSV / Parquet ---------------------------------------------------------------------------------
class TestTabular:
    def test_rows_and_bad_cells(self):
        records = read("games.csv")
        assert records.height == 11  # twelve data lines, one blank
        errors = records.filter(pl.col("parse_error").is_not_null()).select("source_line", "parse_error")
        assert errors.rows() == [(8, "expected 12 fields, found 7"), (9, "white_id '12a' is not a number")]
        assert records.filter(pl.col("unplayed") == "forfeit")["result"].to_list() == ["+-"]

    def test_defaults_quotes_and_time_controls(self):
        records = read("games.csv")
        no_event = records.filter(pl.col("source_line") == 12).row(0, named=True)
        assert no_event["event_id"] == "GER/2024-01/games" and no_event["time_control"] == "rapid"
        quoted = records.filter(pl.col("source_line") == 13).row(0, named=True)
        assert quoted["event_id"] == 'club, "A" team'
        assert (quoted["tc_base_seconds"], quoted["tc_increment_seconds"], quoted["time_control"]) == (600, 5, "rapid")
        assert records.filter(pl.col("source_line") == 2).row(0, named=True)["white_rating"] == 2000

    def test_missing_required_column(self):
        records = read("short.csv", b"white_id,black_id\n1001,1002\n1003,1004\n")
        assert records["parse_error"].to_list() == ["missing required column(s): result"] * 2

    def test_parquet(self):
        frame = pl.DataFrame(
            {
                "white_id": [1001, 1003],
                "black_id": ["1002", "x"],
                "result": ["1-0", "0-1"],
                "date": [date(2024, 1, 3), date(2024, 1, 4)],
                "white_rating": [2200.0, None],
            }
        )
        sink = io.BytesIO()
        frame.write_parquet(sink)
        records = read("games.parquet", sink.getvalue())
        assert records["format"].to_list() == ["parquet", "parquet"]
        assert records["source_line"].to_list() == [1, 2]
        assert records["white_rating"].to_list() == [2200, None]
        assert records["date"].to_list() == [date(2024, 1, 3), date(2024, 1, 4)]
        assert records["parse_error"].to_list() == [None, "black_id 'x' is not a number"]

    def test_corrupt_parquet(self):
        records = read("games.parquet", b"PAR1 this is not parquet")
        assert records.height == 1 and records["parse_error"][0].startswith("not a readable Parquet file")


# -- unreadable files ------------------------------------------------------------------------------
def test_binary_and_unknown_files_become_one_record():
    garbage = read("garbage.trf")
    assert garbage["parse_error"].to_list() == ["binary content, not a text dump"]
    assert garbage["format"].to_list() == ["trf"]
    unknown = read("notes.docx")
    assert unknown["parse_error"].to_list() == ["unknown file type 'notes.docx'"] and unknown["format"][0] == "unknown"


def test_format_detection():
    assert [detect_format(name) for name in ["a.TRF", "a.txt.gz", "a.pgn.zst", "a.csv", "a.parquet", "a.xlsx"]] == [
        "trf", "trf", "pgn", "csv", "parquet", "unknown",
    ]


def test_record_ids_are_stable():
    first, second = read("games.pgn"), read("games.pgn")
    assert first["record_id"].equals(second["record_id"])
    assert not first["record_id"].is_in(read("games.pgn", federation="ENG")["record_id"].implode()).any()


# -- real files ------------------------------------------------------------------------------------
def test_realdata_example1_trf():
    path = realdata("example1.trf")
    records = read("example1.trf", path.read_bytes(), month="2005-07")
    played = records.filter(pl.col("parse_error").is_null() & pl.col("unplayed").is_null())
    forfeits = records.filter(pl.col("unplayed") == "forfeit")
    byes = records.filter(pl.col("unplayed") == "bye")
    assert played.height == 970
    assert played["result"].value_counts().sort("result").rows() == [("0-1", 329), ("1-0", 393), ("1/2-1/2", 248)]
    assert forfeits.height == 10  # plus rank 282's '0000 - +' against the dummy, a bye (no opponent)
    assert byes.height == 22      # 20 blank rounds of withdrawn players + two 0000 cells (282 and the dummy)
    assert records.filter(pl.col("parse_error").is_not_null()).height == 0
    assert records.height == played.height + forfeits.height + byes.height
    # Every one of the 284 x 7 round cells is accounted for: pairings fill two cells, the rest one;
    # only the never-paired dummy 'spielfrei' (rank 284) has six empty cells with no record.
    assert 2 * (played.height + forfeits.height) + byes.height + 6 == 284 * 7
    assert records["event_start"].unique().to_list() == [date(2005, 7, 28)]


@pytest.mark.parametrize(
    "name, games, unplayed, time_control",
    [("FWWRC.pgn", 605, 0, "rapid"), ("202204southend.pgn", 232, 0, None), ("open-round1-matches-88.pgn", 56, 3, None)],
)
def test_realdata_pgn(name, games, unplayed, time_control):
    path = realdata("pgn", name)
    data = path.read_bytes()
    records = read(name, data, month="2024-12")
    assert records.height == data.count(b"[Event ") == games
    assert records["parse_error"].null_count() == games
    assert records.filter(pl.col("unplayed").is_not_null()).height == unplayed
    assert records["time_control"].unique().to_list() == [time_control]
    if name.startswith("open-round1"):
        assert records.filter(pl.col("unplayed") == "forfeit")["result"].sort().to_list() == ["0-0", "1-0", "1-0"]
        assert records["white_rating"].null_count() + records["black_rating"].null_count() == 25  # Elo "0" = unrated
