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
from pipeline.ingest.dumps import read_file
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
        assert (forfeit["white_id"], forfeit["black_id"], forfeit["result"], forfeit["source_line"]) == (
            1002,
            1001,
            "-+",
            11,
        )

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
            "FIDE id (columns 58-68) '10x2' is not a number (an id is written in digits only)",
            "starting rank 'xx' (columns 5-8) is not a positive number",
        ]

    def test_a_number_shifted_across_a_blank_column_is_reported_not_misread(self):
        """TRF16 puts a blank between the fields: an id ending in column 69, against the birth date, would be sliced
        into another id ('46000111990/01/01' read as 460001).
        """
        good = trf_line("1", "One,A", "4600003", ["   2 w 1"])
        other = trf_line("2", "Two,B", "4600011", ["   1 b 0"])

        def problems(line: str) -> list[str | None]:
            assert len(line) == len(good) and line[91:] == good[91:]  # the round cells stay at column 92
            return read("shift.trf", f"{line}\n{other}\n".encode())["parse_error"].to_list()

        assert problems(good) == [None]
        id_into_birth = good[:57] + "4600011".rjust(12) + good[69:]  # the id in columns 63-69
        assert id_into_birth[50:80] == "00 GER      46000111990/01/01 "
        assert problems(id_into_birth) == ["FIDE id (columns 58-68) or birth date (70-79) runs into column 69 ('1')"]
        id_into_federation = good[:56] + "46000031".ljust(12) + good[68:]  # the id in columns 57-64
        assert problems(id_into_federation) == [
            "federation (columns 54-56) or FIDE id (58-68) runs into column 57 ('4')"
        ]
        rating_left = good[:47] + "2000 " + good[52:]  # the rating in columns 48-51: read as 000, none
        assert problems(rating_left) == ["name (columns 15-47) or rating (49-52) runs into column 48 ('2')"]
        rating_right = good[:48] + " 2000" + good[53:]
        assert problems(rating_right) == ["rating (columns 49-52) or federation (54-56) runs into column 53 ('0')"]
        rank_10_right = good[:4] + "   10" + good[9:]  # rank 10 in columns 6-9: read as rank 1
        assert problems(rank_10_right) == ["starting rank (columns 5-8) or sex (10) runs into column 9 ('0')"]

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

    def test_end_date_tag_052(self):
        """Tag 052 is the tournament's end, which the reporting calendar files it by; the games keep their dates."""

        def end(tags: list[str]) -> pl.DataFrame:
            lines = [*tags, trf_line("1", "One,A", "1001", ["   2 w 1"]), trf_line("2", "Two,B", "1002", ["   1 b 0"])]
            return read("end.trf", "\n".join(lines).encode()).select("event_start", "event_end", "date", "parse_error")

        start = date(2024, 1, 29)
        assert end(["042 2024/01/29", "052 2024/02/02"]).row(0) == (start, date(2024, 2, 2), None, None)
        assert end(["052 31. 07. 2005"]).row(0) == (None, date(2005, 7, 31), None, None)  # example1.trf's spelling
        assert end(["042 2024/01/29", "052 2024/01/29"]).row(0) == (start, start, None, None)  # a one-day event
        assert end(["042 2024/01/29"]).row(0) == (start, None, None, None)
        # Text without a date is no 052, as 042's (old files write free text): the end is then the last game's day.
        assert end(["042 2024/01/29", "052 end of January"]).row(0) == (start, None, None, None)
        assert end(["042 2024/01/29", "052 2024/02/30"])["parse_error"].to_list() == [
            "event end '2024/02/30' (tag 052) is not a date"
        ]
        assert end(["042 2024/01/29", "052 2024/01/20"])["parse_error"].to_list() == [
            "event end 2024-01-20 (tag 052) is before its start 2024-01-29 (tag 042)"
        ]
        assert end(["042 2024/02/30", "052 2024/01/20"])["parse_error"].to_list() == [
            "event start '2024/02/30' (tag 042) is not a date"
        ]

    def test_a_range_in_042_is_its_first_day_and_in_052_its_last(self):
        """The review's m_range.trf: '042 10.-11.01.2024' was read as 11 January, so round 1 (10 January) was refused
        as played before its event (example1.trf's rounds under such a 042: 865 of 1002 records lost).
        """

        def dates(tags: list[str]) -> pl.DataFrame:
            lines = [
                *tags,
                "132" + " " * 88 + "24/01/10  24/01/11",
                trf_line("1", "One,A", "4600003", ["   2 w 1", "   2 b ="]),
                trf_line("2", "Two,B", "4600011", ["   1 b 0", "   1 w ="]),
            ]
            records = read("range.trf", "\n".join(lines).encode()).sort("round")
            return records.select("event_start", "event_end", "parse_error")

        first, last = date(2024, 1, 10), date(2024, 1, 11)
        for tags in (
            ["042 10.-11.01.2024", "052 11.01.2024"],
            ["042 10.01.-11.01.2024", "052 10.01.-11.01.2024"],
            ["042 10. 01. - 11. 01. 2024", "052 10-11.01.2024"],
            ["042 2024/01/10 - 2024/01/11", "052 10.01.2024 - 11.01.2024"],
        ):
            assert dates(tags).rows() == [(first, last, None)] * 2, tags
        assert dates(["042 28.12.-10.01.2024"])["event_start"].to_list() == [date(2023, 12, 28)] * 2
        assert dates(["042 Open 2 - 10.01.2024"])["event_start"].to_list() == [first] * 2  # no range
        # The review's m_range.trf, through validation: both rounds rated.
        from pipeline.validate.split import split_games
        from schemas import Players, empty_frame

        lines = [
            "012 Mini Open",
            "042 10.-11.01.2024",
            "052 11.01.2024",
            "132" + " " * 88 + "24/01/10  24/01/11",
            trf_line("1", "One,A", "4600003", ["   2 w 1", "   2 b ="]),
            trf_line("2", "Two,B", "4600011", ["   1 b 0", "   1 w ="]),
        ]
        games, quarantine = split_games(read("m_range.trf", "\n".join(lines).encode()), empty_frame(Players), "2024-01")
        assert (games.height, quarantine.height) == (2, 0)

    def test_a_two_digit_year_in_042_or_052_says_why_it_is_refused(self):
        def errors(start: str) -> list[str]:
            lines = [
                f"042 {start}",
                trf_line("1", "One,A", "1001", ["   2 w 1"]),
                trf_line("2", "Two,B", "1002", ["   1 b 0"]),
            ]
            return read("dmy.trf", "\n".join(lines).encode())["parse_error"].to_list()

        why = "a two-digit year is read only as YY/MM/DD, TRF16's form: '{}' may be day.month.year"
        for written in ("10.01.24", "10. 01. 24"):  # spaced as example1.trf spaces its dates
            assert errors(written) == [f"event start '{written}' (tag 042) is not a date ({why.format(written)})"]
        assert errors("24/01/10") == [None]

    def test_round_dates_tag_132_are_read_in_trf_forms_only(self):
        """Tag 132 is YY/MM/DD (TRF16) or YYYY/MM/DD: '10.01.24' (day.month.year) was read as 2010-01-24 and rated."""

        def rounds(dates: str) -> pl.DataFrame:
            lines = [
                "042 2024/01/10",
                "052 2024/01/12",
                "132" + " " * 88 + dates,
                trf_line("1", "One,A", "1001", ["   2 w 1", "   2 b =", "   2 w 0"]),
                trf_line("2", "Two,B", "1002", ["   1 b 0", "   1 w =", "   1 b 1"]),
            ]
            return read("dates.trf", "\n".join(lines).encode()).sort("round").select("date", "parse_error")

        days = [date(2024, 1, 10), date(2024, 1, 11), date(2024, 1, 12)]
        assert rounds("24/01/10  24/01/11  24/01/12").to_dict(as_series=False) == {
            "date": days,
            "parse_error": [None] * 3,
        }
        assert rounds("2024/01/10  2024/01/11  2024/01/12")["date"].to_list() == days  # TRF-2026's wider dates
        assert rounds("2024-01-10 2024.01.11 2024/01/12")["date"].to_list() == days  # a four-digit year first
        day_month_year = rounds("10.01.24  11.01.24  12.01.24")
        assert day_month_year["date"].to_list() == [None] * 3
        assert day_month_year["parse_error"].to_list() == [
            f"round {r} date '{d}.01.24' (tag 132, line 3, column {82 + 10 * r}) is neither YY/MM/DD (TRF16) nor "
            "YYYY/MM/DD: not read, as 10.01.24 may be day.month.year"
            for r, d in ((1, 10), (2, 11), (3, 12))
        ]
        # One cell in another form: that round's games only, the others dated.
        assert rounds("24/01/10  11-01-24  24/01/12")["parse_error"].to_list() == [
            None,
            "round 2 date '11-01-24' (tag 132, line 3, column 102) is neither YY/MM/DD (TRF16) nor YYYY/MM/DD: not "
            "read, as 10.01.24 may be day.month.year",
            None,
        ]

        # The review's m_shift.trf: a blank cell and one in another form; each date stays in its own round's columns.
        assert rounds("24/01/10            24.01.12").to_dict(as_series=False) == {
            "date": [days[0], None, None],
            "parse_error": [
                None,
                None,
                "round 3 date '24.01.12' (tag 132, line 3, column 112) is neither YY/MM/DD (TRF16) nor YYYY/MM/DD: "
                "not read, as 10.01.24 may be day.month.year",
            ],
        }
        # A date that does not exist is named where it is, as one in another form is.
        assert rounds("24/01/10  24/02/30  24/01/12")["parse_error"].to_list() == [
            None,
            "round 2 date '24/02/30' (tag 132, line 3, column 102) is not a date",
            None,
        ]

    def test_a_tournament_ending_after_its_folders_month_by_tag_052_is_not_rated_in_it(self):
        from pipeline.validate.split import split_games
        from schemas import Players, empty_frame

        lines = [
            "042 2024/01/29",
            "052 2024/02/02",  # after 29 January, the closing date of the list of 1 February: rated on 1 March
            trf_line("1", "One,A", "4600003", ["   2 w 1"]),
            trf_line("2", "Two,B", "4600011", ["   1 b 0"]),
        ]
        games, quarantine = split_games(read("open.trf", "\n".join(lines).encode()), empty_frame(Players), "2024-01")
        assert games.height == 0 and quarantine["reason"].to_list() == ["after_closing_date"]
        # The folder's list's closing date, not that of the list after the stated end.
        assert "list of 1 February 2024 (2024-01-29;" in quarantine["detail"].item()
        assert "filed under 2024-02 or later" in quarantine["detail"].item()

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
        assert (first["tc_base_seconds"], first["tc_increment_seconds"], first["time_control"]) == (
            5400,
            30,
            "classical",
        )
        assert first["raw_text"].splitlines()[0] == '[Event "January Rapidplay"]' and "1. e4" not in first["raw_text"]
        assert first["unplayed"] is None  # comments with [%clk] at a line start and variations are not tags

    def test_a_partial_date_keeps_the_first_day_of_its_known_period(self):
        """A '??' day is unknown, not wrong (the game stays undated), but its known part still dates it: date_from."""
        from tests.landing import pgn_game

        games = [
            pgn_game("Open", "2024.01.05", 4600003, 4600011, "1-0"),
            pgn_game("Open", "2024.02.??", 4600003, 4600020, "0-1"),
            pgn_game("Cup", "2025.??.??", 4600011, 4600020, "1-0"),
            pgn_game("Cup", "2024.??.17", 4600011, 4600038, "1-0"),  # a month unknown: the year's first day
            pgn_game("Cup", "????.??.??", 4600011, 4600038, "1-0"),
            pgn_game("Cup", "2024.13.??", 4600011, 4600038, "1-0"),  # no month 13: no period (as before)
            # An undated game is played on or after its event's start, known in part or whole.
            pgn_game("Club", "????.??.??", 4600020, 4600038, "1-0", start="2024.03.??"),
            pgn_game("Club", "2024.??.??", 4600020, 4600038, "1-0", start="2024.03.??"),
            pgn_game("Club", "2024.03.09", 4600020, 4600038, "1-0", start="2024.03.??"),
        ]
        records = read("partial.pgn", "".join(games).encode())
        assert records["parse_error"].to_list() == [None] * 9
        assert records["date"].to_list() == [date(2024, 1, 5), *[None] * 7, date(2024, 3, 9)]
        assert records["date_from"].to_list() == [
            None,
            date(2024, 2, 1),
            date(2025, 1, 1),
            date(2024, 1, 1),
            None,
            None,
            date(2024, 3, 1),
            date(2024, 3, 1),
            None,  # a whole date needs no bound
        ]
        assert records["event_start"].to_list()[:2] == [date(2024, 1, 5)] * 2  # the event's earliest whole date
        # Before every day an EventDate known in part allows, as before a whole EventDate: refused, naming both.
        early = [
            pgn_game("Club", "2024.02.29", 4600020, 4600038, "1-0", start="2024.03.??"),
            pgn_game("Club", "2023.??.??", 4600020, 4600038, "1-0", start="2024.03.??"),
        ]
        assert read("early.pgn", "".join(early).encode())["parse_error"].to_list() == [
            "game dated 2024-02-29 (Date) is before its event's start, 2024-03-01 at the earliest (EventDate, known in "
            "part): one of the two dates is wrong",
            "game dated in part, by 2023-12-31 at the latest (Date) is before its event's start, 2024-03-01 at the "
            "earliest (EventDate, known in part): one of the two dates is wrong",
        ]

    def test_a_game_dated_in_part_after_its_folders_month_is_future(self):
        from pipeline.validate.split import split_games
        from schemas import Players, empty_frame
        from tests.landing import pgn_game

        text = (
            pgn_game("Open", "2024.01.05", 4600003, 4600011, "1-0")
            + pgn_game("Open", "2024.02.??", 4600003, 4600020, "0-1")
            + pgn_game("Cup", "2025.??.??", 4600011, 4600020, "1-0")
            + pgn_game("Open", "2024.01.??", 4600011, 4600038, "1-0")
        )
        games, quarantine = split_games(read("g.pgn", text.encode()), empty_frame(Players), "2024-01")
        assert games["source_line"].to_list() == [1, 40]
        assert quarantine.select("source_line", "reason").rows() == [(14, "future"), (27, "future")]

    def test_unplayed_games(self):
        records = read("games.pgn", federation="ENG")
        unplayed = dict(zip(records["source_line"].to_list(), records["unplayed"].to_list(), strict=True))
        assert unplayed[42] == "forfeit"  # decisive result, no move
        assert unplayed[54] == "forfeit"  # Termination "forfeit" even with a move
        assert unplayed[116] == "under-one-move"  # draw without a move
        assert sum(value is not None for value in unplayed.values()) == 3

    def test_a_game_lost_on_time_is_played(self):
        """PGN's 'time forfeit' (Lichess: 'Time forfeit') is a flag fall after moves: rated; an export's own 'forfeit'
        or 'unplayed' is a game not played.
        """

        def game(termination: str, moves: str = "1. e4 e5 2. Nf3 1-0") -> str:
            return (
                f'[Event "Open"]\n[White "A, B"]\n[Black "C, D"]\n[Result "1-0"]\n[WhiteFideId "4600003"]\n'
                f'[BlackFideId "4600011"]\n[Termination "{termination}"]\n\n{moves}\n\n'
            )

        terminations = ["Time forfeit", "time forfeit", "normal", "Forfeit", "lost by forfeit", "forfeited", "unplayed"]
        terminations += ["forfeit on time", "Forfeited by time", "lost on time"]  # the review's p_cp.pgn's first
        text = "".join(game(termination) for termination in terminations) + game("Time forfeit", "1-0")
        unplayed = read("g.pgn", text.encode())["unplayed"].to_list()
        assert unplayed == [None, None, None, *["forfeit"] * 4, None, None, None, "forfeit"]  # last: no move

    def test_a_result_tag_the_movetext_contradicts_is_unparseable(self):
        """PGN standard 8.2.6: the movetext's termination marker is the Result tag's value; which of two holds is
        unknown, so the game is not rated by either.
        """
        from pipeline.validate.split import split_games
        from schemas import Players, empty_frame

        def game(result: str, movetext: str, white: int = 4600003) -> str:
            return (
                f'[Event "Open"]\n[Date "2024.01.05"]\n[White "A, B"]\n[Black "C, D"]\n[Result "{result}"]\n'
                f'[WhiteFideId "{white}"]\n[BlackFideId "4600011"]\n\n{movetext}\n\n'
            )

        text = (
            game("1-0", "1. e4 e5 2. Nf3 0-1")
            + game("1-0", "1. e4 e5 *")
            + game("1/2-1/2", "1. e4 e5 {agreed}1/2-1/2 ")  # agrees: a comment before, blanks after
            + game("½-½", "1. e4 e5\n1/2-1/2", white=4600020)  # agrees, as ½-½ is read
            + game("0-1", "1. e4 e5 2. Nf3")  # no marker: nothing to compare
            + game("*", "1. e4 e5 1-0")
            + game("0-1", "1. e4 e5\n1/2-1/2")  # the marker alone on its line
            # The review's m_semi.pgn: a rest-of-line comment's words are no marker.
            + game("1-0", "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# ; not 0-1", white=4600038)
            # The review's m_star.pgn: a movetext of the marker alone is a game without a move, by those rules.
            + game("1-0", "*", white=4600046)
            + game("1:0", "1. e4 e5 1-0")  # the same result spelt otherwise: no disagreement, read as 1-0
            + game("1/2", "1. e4 e5 1/2-1/2", white=4600054)
            + game("1:0", "1. e4 e5 0-1")
        )
        records = read("g.pgn", text.encode())
        assert records["parse_error"].to_list() == [
            "Result is '1-0' but the movetext ends with '0-1' (line 9); PGN standard 8.2.6: they must be the same",
            "Result is '1-0' but the movetext ends with '*' (line 19); PGN standard 8.2.6: they must be the same",
            None,
            None,
            None,
            "Result is '*' but the movetext ends with '1-0' (line 60); PGN standard 8.2.6: they must be the same",
            "Result is '0-1' but the movetext ends with '1/2-1/2' (line 71); PGN standard 8.2.6: they must be the same",
            None,
            None,
            None,
            None,
            "Result is '1:0' but the movetext ends with '0-1' (line 121); PGN standard 8.2.6: they must be the same",
        ]
        games, quarantine = split_games(records, empty_frame(Players), "2024-01")
        assert games["source_line"].to_list() == [21, 31, 42, 73, 93, 103]
        assert games.filter(pl.col("source_line") >= 93)["white_score"].to_list() == [1.0, 0.5]
        assert quarantine.select("source_line", "reason").rows() == [
            (1, "unparseable"),
            (11, "unparseable"),
            (52, "unparseable"),
            (62, "unparseable"),
            (83, "unplayed"),
            (113, "unparseable"),
        ]

    def test_tag_names_are_read_whatever_their_case(self):
        text = (
            '[event "Open"]\n[white "A, B"]\n[BLACK "C, D"]\n[result "0-1"]\n[WhiteFIDEId "4600003"]\n'
            '[blackfideid "4600011"]\n[whiteelo "2100"]\n[timecontrol "5400+30"]\n\n1. e4 e5 0-1\n'
        )
        record = read("g.pgn", text.encode()).row(0, named=True)
        assert (record["event_id"], record["white_name"], record["black_name"], record["result"]) == (
            "GER/2024-01/g#Open",
            "A, B",
            "C, D",
            "0-1",
        )
        assert (record["white_id"], record["black_id"], record["white_rating"], record["tc_base_seconds"]) == (
            4600003,
            4600011,
            2100,
            5400,
        )
        assert record["parse_error"] is None

    def test_a_line_break_inside_a_tag_value_spoils_its_whole_game(self):
        """'[Event "A' / 'B"]': one record for the game, unparseable, not a malformed piece and a game rated without
        its Event.
        """
        text = (
            '[Event "Spring\nOpen"]\n[White "A, B"]\n[Black "C, D"]\n[Result "1-0"]\n[WhiteFideId "4600003"]\n'
            '[BlackFideId "4600011"]\n\n1. e4 1-0\n\n'
            '[Event "Open"]\n[White "A, B"]\n[Black "C, D"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
            '[Event "Cup"] [White "A, B"] [Black "C, D"] [Result "1-0"] 1. e4 1-0 [Event "Cup"] [White "E, F"] 1-0\n'
        )
        records = read("g.pgn", text.encode())
        assert records["source_line"].to_list() == [1, 11, 18]
        assert records["parse_error"].to_list() == [
            'malformed tag line 1: [Event "Spring (its value runs on to line 2: a line break inside a tag value)',
            None,
            'malformed tag line 18: [Event "Cup"] [White "A, B"] [Black "C, D"] [Result "1-0"] 1. e4 1-0 [Event "Cup"] '
            '[White "E, F"] 1-0 (2 games on one line, read as one record: a PGN tag stands on a line of its own)',
        ]
        assert records["raw_text"][0].splitlines()[-1] == '[BlackFideId "4600011"]'
        lower = '[event "Cup"] [white "A, B"] 1. e4 1-0 [EVENT "Cup"] [white "E, F"] 1-0 [Event "Cup"] 1-0\n'
        assert "(3 games on one line" in read("g.pgn", lower.encode())["parse_error"].item()

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

    def test_a_time_control_written_in_minutes_is_refused_not_read_as_seconds(self):
        """'90+30' in seconds is a 90-second game (rapid by FIDE's count), though the file means 90 minutes."""
        controls = ["90+30", "90+30", "10+5", "40/90+30:30+30", "5400+30", "180+2", "60+1", "90'+30''"]
        text = "".join(
            f'[Event "A"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n[TimeControl "{control}"]\n\n'
            for control in controls
        )
        errors = read("tc.pgn", text.encode())["parse_error"].to_list()
        assert errors[:4] == [
            "TimeControl '90+30' reads as 90 s + 30 s a move (PGN counts seconds), a clock nobody plays: if minutes "
            "were meant, write 5400+30",
            errors[0],
            "TimeControl '10+5' reads as 10 s + 5 s a move (PGN counts seconds), a clock nobody plays: if minutes "
            "were meant, write 600+5",
            errors[0].replace("'90+30'", "'40/90+30:30+30'"),
        ]
        assert errors[4:] == [None] * 4  # seconds as PGN writes them, bullet (not rated, said so later), minutes

    def test_common_clock_forms_are_read(self):
        """Spaces around '+', US Chess minutes ('G/5'), hours and minutes, a class word before the clock or alone."""
        controls = {
            "5400 + 30": ("classical", 5400, 30),
            "G/5": ("blitz", 300, 0),
            "G60+30": ("classical", 3600, 30),
            "G/90+30": ("classical", 5400, 30),
            "SD/90+30": ("classical", 5400, 30),
            "90m+30s": ("classical", 5400, 30),
            "1h30+30s": ("classical", 5400, 30),
            "Blitz 180+2": ("blitz", 180, 2),
            "Rapid": ("rapid", None, None),
            "G/90;d5": ("classical", 5400, 5),  # a delay counts as an increment
            "40/5400, 1800+30": ("classical", 5400, 0),  # of several periods the first
            "?": (None, None, None),  # PGN standard 9.6.1: unknown, so not stated
            "-": (None, None, None),
        }
        text = "".join(
            f'[Event "A"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n[TimeControl "{control}"]\n\n'
            for control in controls
        )
        records = read("tc.pgn", text.encode())
        assert records["parse_error"].to_list() == [None] * len(controls)
        assert records.select("time_control", "tc_base_seconds", "tc_increment_seconds").rows() == list(
            controls.values()
        )

    def test_a_time_control_that_cannot_be_read_is_unparseable_not_classical(self):
        """'G/5' read as nothing was rated on the standard list; a stated clock that cannot be read is quarantined."""
        from pipeline.validate.split import split_games
        from schemas import Players, empty_frame

        controls = ["*60", "Fischer 90", "40 moves in a while", "5400+30"]
        text = "".join(
            f'[Event "A"]\n[Date "2024.01.0{day}"]\n[White "x"]\n[Black "y"]\n[Result "1-0"]\n'
            f'[TimeControl "{control}"]\n\n1. e4 1-0\n\n'
            for day, control in enumerate(controls, 1)
        )
        records = read("tc.pgn", text.encode())
        assert records["parse_error"].to_list()[:3] == [
            f"TimeControl '{control}' is neither a clock this reader knows nor a class (classical, rapid, blitz): "
            "write the base and the increment with their units, as in 90 min + 30 s"
            for control in controls[:3]
        ]
        games, quarantine = split_games(records, empty_frame(Players), "2024-01")
        assert quarantine["reason"].to_list() == ["unparseable"] * 3
        assert games["time_control"].to_list() == ["classical"]

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
        assert errors.rows() == [
            (8, "expected 12 fields, found 7"),
            (9, "white_id '12a' is not a number (an id is written in digits only)"),
        ]
        assert records.filter(pl.col("unplayed") == "forfeit")["result"].to_list() == ["+-"]

    def test_defaults_quotes_and_time_controls(self):
        records = read("games.csv")
        no_event = records.filter(pl.col("source_line") == 12).row(0, named=True)
        assert no_event["event_id"] == "GER/2024-01/games" and no_event["time_control"] == "rapid"
        quoted = records.filter(pl.col("source_line") == 13).row(0, named=True)
        assert quoted["event_id"] == 'club, "A" team'
        assert (quoted["tc_base_seconds"], quoted["tc_increment_seconds"], quoted["time_control"]) == (600, 5, "rapid")
        assert records.filter(pl.col("source_line") == 2).row(0, named=True)["white_rating"] == 2000

    def test_quoted_names_blank_and_ragged_rows(self):
        csv = (
            b'white_id,black_id,result,"white_name"\r\n'
            b'1001,1002,1-0,"Kovacs, Anna"\r\n'
            b'"",  ,"",\r\n'  # blank cells only: not a record
            b'1003,1004,0-1,"Lee, Min",extra\r\n'
            b'1005,1006,"1/2-1/2",""\r\n'
        )
        records = read("names.csv", csv)
        assert records.select("source_line", "white_name", "result", "parse_error").rows() == [
            (2, "Kovacs, Anna", "1-0", None),
            (4, None, None, "expected 4 fields, found 5"),
            (5, None, "1/2-1/2", None),
        ]
        assert records["raw_text"][0] == '1001,1002,1-0,"Kovacs, Anna"'

    def test_simple_quoted_files_split_as_the_csv_module_splits_them(self):
        """Files whose quotes only wrap whole fields are split by Polars: the same cells, rows and errors."""
        import random

        from pipeline.formats import tabular

        values = ["a", "Smith, John", " x ", "", " ", "\t", "½-½", "\u00a0", "\u2028", "é", ",", '"', 'a"b', '"q" ']
        columns = ["white_id", "black_id", "result", "event_id", "date", "round", "white_name"]
        rng = random.Random(17)
        by_polars = 0
        for _ in range(1500):
            header = rng.sample(columns, rng.randint(1, 5))
            lines = [",".join(f'"{name}"' if rng.random() < 0.3 else name for name in header)]
            for _ in range(rng.randint(0, 8)):
                fields = rng.choices(values, k=len(header) if rng.random() < 0.7 else rng.randint(1, 7))
                lines.append(",".join(f'"{v}"' if rng.random() < 0.4 and '"' not in v else v for v in fields))
            ending = rng.choice(["\n", "\r\n", "\r"])
            text = ending.join(lines) + ending
            if '"' not in text:
                continue
            expected = tabular._split_by_csv_module(text)
            simple = tabular._split_simple_quoted(tabular._numbered_lines(text))
            split = tabular._split_quoted(text)
            by_polars += simple is not None
            assert split[0] == expected[0], text
            assert split[1].equals(expected[1]) and split[2].equals(expected[2]), text
        assert by_polars > 200  # the rest hold a quote inside a field: the csv module splits them

    def test_missing_required_column_is_one_problem_of_the_file(self):
        records = read("short.csv", b"white_id,black_id\n1001,1002\n1003,1004\n")
        assert records.height == 1 and records["source_line"].to_list() == [1]
        assert records["parse_error"].to_list() == [
            "the header has no column(s) result (or white_score), so none of its rows is read (columns: white_id, "
            "black_id; a games file needs white_id, black_id and result: README, 'Rating your own federation's files')"
        ]

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
        assert records["parse_error"].to_list() == [
            None,
            "black_id 'x' is not a number (an id is written in digits only)",
        ]

    def test_corrupt_parquet(self):
        records = read("games.parquet", b"PAR1 this is not parquet")
        assert records.height == 1 and records["parse_error"][0].startswith("not a readable Parquet file")


# -- unreadable files ------------------------------------------------------------------------------
# One spelling of the results for every reader (pipeline.formats.fields.RESULT_SPELLINGS): a PGN's Result tag spelt
# '1:0' or '1/2' is read as a games CSV reads it, and both are results validation keeps.
@pytest.mark.parametrize("written", ["1-0", "0-1", "1/2-1/2", "1:0", "0:1", "½-½", "½", "1/2", "0.5-0.5", "="])
def test_a_result_reads_the_same_in_a_pgn_and_a_csv(written: str) -> None:
    from schemas.games import RESULTS

    pgn = (
        f'[Event "Open"]\n[Date "2024.01.05"]\n[White "A, B"]\n[Black "C, D"]\n[Result "{written}"]\n'
        f'[WhiteFideId "4600003"]\n[BlackFideId "4600011"]\n\n1. e4 e5\n\n'
    )
    csv = f"white_id,black_id,result,date\n4600003,4600011,{written},2024-01-05\n"
    from_pgn, from_csv = read("g.pgn", pgn.encode()), read("g.csv", csv.encode())
    assert from_pgn["parse_error"].to_list() == from_csv["parse_error"].to_list() == [None]
    assert from_pgn["result"].to_list() == from_csv["result"].to_list()
    assert from_pgn["result"][0] in RESULTS


def test_binary_and_unknown_files_become_one_record():
    garbage = read("garbage.trf")
    assert garbage["parse_error"].to_list() == ["binary content, not a text dump"]
    assert garbage["format"].to_list() == ["trf"]
    unknown = read("notes.docx")
    assert unknown["parse_error"].to_list() == ["unknown file type 'notes.docx'"] and unknown["format"][0] == "unknown"


def test_format_detection():
    assert [detect_format(name) for name in ["a.TRF", "a.txt.gz", "a.pgn.zst", "a.csv", "a.parquet", "a.xlsx"]] == [
        "trf",
        "trf",
        "pgn",
        "csv",
        "parquet",
        "unknown",
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
    assert byes.height == 22  # 20 blank rounds of withdrawn players + two 0000 cells (282 and the dummy)
    assert records.filter(pl.col("parse_error").is_not_null()).height == 0
    assert records.height == played.height + forfeits.height + byes.height
    # Every one of the 284 x 7 round cells is accounted for: pairings fill two cells, the rest one;
    # only the never-paired dummy 'spielfrei' (rank 284) has six empty cells with no record.
    assert 2 * (played.height + forfeits.height) + byes.height + 6 == 284 * 7
    assert records["event_start"].unique().to_list() == [date(2005, 7, 28)]
    assert records["event_end"].unique().to_list() == [date(2005, 7, 31)]


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


def test_pgn_values_beyond_int32_spoil_only_their_game():
    """An Elo of 2^31 or more is its game's error (as a non-numeric Elo is), never the whole file's; ids are Int64."""
    game = (
        '[Event "Open"]\n[Date "2024.01.06"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n[WhiteFideId "{}"]\n'
        '[BlackFideId "4600011"]\n[WhiteElo "{}"]\n[BlackElo "2000"]\n\n1. e4 e5 1-0\n\n'
    )
    rows = [("4600003", "2100"), ("3000000000", "2100"), ("4600004", "2147483648"), ("4600005", "3000000000.0")]
    rows += [("4600006", "2147483647"), ("4600007", "abc")]
    records = read("big.pgn", "".join(game.format(*row) for row in rows).encode()).sort("source_line")
    assert records.height == len(rows)
    assert records["parse_error"].to_list() == [
        None,
        None,
        "WhiteElo '2147483648' is out of range (at most 2147483647)",
        "WhiteElo '3000000000.0' is out of range (at most 2147483647)",
        None,
        "WhiteElo 'abc' is not a number",
    ]
    assert records["white_id"].to_list() == [4600003, 3000000000, 4600004, 4600005, 4600006, 4600007]
    assert records["white_rating"].to_list() == [2100, 2100, None, None, 2147483647, None]


# -- PGN byte scanner ------------------------------------------------------------------------------
class TestPgnScanner:
    COLUMNS = [
        "source_line",
        "raw_text",
        "parse_error",
        "event_id",
        "event_start",
        "date",
        "round",
        "white_id",
        "black_id",
        "white_name",
        "black_name",
        "result",
        "unplayed",
        "time_control",
        "white_rating",
        "black_rating",
    ]

    def test_chunks_cut_at_game_starts_change_nothing(self, monkeypatch):
        import pipeline.formats.pgn as pgn

        data = (DATA / "games.pgn").read_bytes() * 3
        whole = read("games.pgn", data)
        monkeypatch.setattr(pgn, "CHUNK_BYTES", 300)  # many chunks, each cut before a game
        assert len(pgn._chunk_bounds(data)) > 5
        chunked = read("games.pgn", data)
        assert chunked.select(self.COLUMNS).equals(whole.select(self.COLUMNS))
        assert chunked["record_id"].equals(whole["record_id"])

    def test_record_ids_are_stable_hashes_of_file_line_and_game(self):
        from pipeline.hashing import stable_hash

        records = read("games.pgn")
        keys = records.select(
            pl.format("{}:{}:{}", "source_file", "source_line", pl.int_range(1, pl.len() + 1))
        ).to_series()
        assert records["record_id"].equals(stable_hash(keys).alias("record_id"))

    def test_odd_tag_lines_take_the_slow_path(self):
        text = (
            '  [Event "Say \\"hi\\""]  \n[White "A\\\\B"]\n[Black "C"]\n[Result "1-0"]\n[WhiteFideId " 1001 "]\n'
            '[BlackFideId "1002"]\n[WhiteElo "?"]\n[Date "2024.1.5"]\n\n  1. e4 1-0\n\n'
            '[Event "x"] [Result "0-1"]\n\n0-1\n\n'
            '[Event "Quote "inside" value"]\n[Result "1/2-1/2"]\n\n1. d4 1/2-1/2\n'
        )
        records = read("odd.pgn", text.encode())
        first = records.row(0, named=True)
        assert (first["event_id"], first["white_name"], first["white_id"], first["white_rating"]) == (
            'GER/2024-01/odd#Say "hi"',
            "A\\B",
            1001,
            None,
        )
        assert first["date"] == date(2024, 1, 5) and first["unplayed"] is None
        assert records["parse_error"][1] == 'malformed tag line 12: [Event "x"] [Result "0-1"]'
        assert records["event_id"][2] == 'GER/2024-01/odd#Quote "inside" value'

    def test_spellings_of_none_are_null_without_an_error(self):
        """'', '0', '?', '-' (blank-padded too) mean no id / unrated; other text is read or is its game's error."""
        game = '[Event "E"]\n[Result "1-0"]\n[WhiteFideId "{0}"]\n[WhiteElo "{0}"]\n\n1. e4 1-0\n\n'
        spellings = ["", "0", "?", "-", " 0 ", " ", "00", "abc", "2100"]
        records = read("none.pgn", "".join(game.format(s) for s in spellings).encode()).sort("source_line")
        assert records["white_id"].to_list() == [None] * 6 + [0, None, 2100]
        assert records["white_rating"].to_list() == [None] * 6 + [0, None, 2100]
        assert records["parse_error"].to_list() == [None] * 7 + [
            "WhiteFideId 'abc' is not a number (an id is written in digits only); WhiteElo 'abc' is not a number",
            None,
        ]

    def test_numbers_dates_and_rounds_from_bytes(self):
        text = "".join(
            f'[Event "E"]\n[Round "{rnd}"]\n[Date "{day}"]\n[WhiteFideId "{wid}"]\n'
            '[BlackFideId "7"]\n[Result "1-0"]\n\n'
            for rnd, day, wid in [
                ("3.12", "2024.02.29", "123456789"),
                ("?", "2023.02.29", "0"),
                (" 7", "????.??.??", "-"),
                ("12", "2024-03-01", "1850.0"),
                ("", "2024/03/02", "abc"),
            ]
        )
        records = read("numbers.pgn", text.encode())
        assert records["round"].to_list() == [3, None, 7, 12, None]
        assert records["date"].to_list() == [date(2024, 2, 29), None, None, date(2024, 3, 1), date(2024, 3, 2)]
        # Ids are digits only ('1850.0' is no id); a date that does not exist is an error, '????.??.??' is unknown.
        assert records["white_id"].to_list() == [123456789, None, None, None, None]
        assert records["parse_error"].to_list() == [
            None,
            "Date '2023.02.29' is not a date",
            None,
            "WhiteFideId '1850.0' is not a number (an id is written in digits only)",
            "WhiteFideId 'abc' is not a number (an id is written in digits only)",
        ]

    def test_no_tags_at_all_is_one_preamble_record(self):
        records = read("notes.pgn", b"This is not a PGN file,\njust some notes.\n")
        assert records["parse_error"].to_list() == ["2 line(s) of text outside any PGN tag section"]


# -- PGN batches -----------------------------------------------------------------------------------
class TestPgnBatch:
    GAME = (
        '[Event "Club"]\n[Date "2024.01.{day:02d}"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n'
        '[WhiteFideId "1001"]\n[BlackFideId "1002"]\n'
    )

    def files(self) -> dict[str, bytes]:
        game = self.GAME.format
        return {
            "games.pgn": (DATA / "games.pgn").read_bytes(),  # holds a malformed tag line (line 142)
            "latin1.pgn": (DATA / "malformed" / "pgn_latin1.pgn").read_bytes(),
            "preamble.pgn": f"Exported by a tool\n\n{game(day=3)}\n1. e4 1-0\n".encode(),
            # Ends inside a tag section without a newline: the next file's first tags must not join its last game.
            "no_newline.pgn": f"{game(day=4)}\n1. d4 1-0\n\n{game(day=5)}".rstrip("\n").encode(),
            "no_event_first.pgn": b'[White "C"]\n[Result "0-1"]\n\n0-1\n',
            "notes.pgn": (DATA / "malformed" / "pgn_no_tags.pgn").read_bytes(),
            "bad_tag.pgn": f'[Event "x"] [Result "0-1"]\n\n0-1\n\n{game(day=6)}\n[Round 1]\n'.encode(),
            "crlf.pgn": f"{game(day=7)}\n1. c4 1-0\n".replace("\n", "\r\n").encode(),
            # Same event key as club.pgn: event ids agree, but each file's event starts on its own first date.
            "club.pgn.gz": gzip.compress(f"{game(day=9)}\n1. e4 1-0\n".encode()),
            "club.pgn": f"{game(day=8)}\n1. e4 1-0\n".encode(),
            "empty.pgn": b"",
            "bom_only.pgn": b"\xef\xbb\xbf",
            "utf16.pgn": (DATA / "malformed" / "pgn_utf16.pgn").read_bytes(),
        }

    @pytest.mark.parametrize("chunk_bytes", [None, 200])
    def test_a_batch_equals_files_read_one_by_one(self, monkeypatch, chunk_bytes):
        import pipeline.formats.pgn as pgn
        from pipeline.formats import read_dumps

        files = self.files()
        alone = {name: read(name, data) for name, data in files.items()}
        if chunk_bytes is not None:  # joint pieces of small files mixed with large files cut into pieces
            monkeypatch.setattr(pgn, "CHUNK_BYTES", chunk_bytes)
        for names in (list(files), list(reversed(files))):
            batch = read_dumps([(files[name], f"GER/2024-01/{name}", "GER") for name in names], "2024-01")
            for name, frame in zip(names, batch, strict=True):
                assert frame.equals(alone[name]), name

    def test_per_file_numbers_preambles_and_event_starts(self):
        from pipeline.formats import read_dumps
        from pipeline.hashing import stable_hash

        files = self.files()
        names = ["preamble.pgn", "no_newline.pgn", "no_event_first.pgn", "club.pgn.gz", "club.pgn", "bom_only.pgn"]
        frames = dict(
            zip(
                names,
                read_dumps([(files[name], f"GER/2024-01/{name}", "GER") for name in names], "2024-01"),
                strict=True,
            )
        )

        def ids(name: str, lines_and_positions: list[tuple[int, str]]) -> pl.Series:
            """Record ids of the given (source_line, position) records of a file: positions restart in every file."""
            keys = pl.Series([f"GER/2024-01/{name}:{line}:{position}" for line, position in lines_and_positions])
            return stable_hash(keys).alias("record_id")

        preamble = frames["preamble.pgn"]
        assert preamble["parse_error"].to_list() == ["1 line(s) of text outside any PGN tag section", None]
        assert preamble["record_id"].equals(ids("preamble.pgn", [(1, "preamble"), (3, "1")]))
        assert frames["no_newline.pgn"]["record_id"].equals(ids("no_newline.pgn", [(1, "1"), (11, "2")]))
        first = frames["no_event_first.pgn"]
        assert first.select("source_line", "event_id", "result").rows() == [(1, "GER/2024-01/no_event_first", "0-1")]
        assert first["record_id"].equals(ids("no_event_first.pgn", [(1, "1")]))
        assert frames["club.pgn.gz"]["event_start"].to_list() == [date(2024, 1, 9)]
        assert frames["club.pgn"]["event_start"].to_list() == [date(2024, 1, 8)]
        # A file with no game is one record all the same, which names it.
        assert frames["bom_only.pgn"]["parse_error"].to_list() == ["empty file: only a byte-order mark"]


# -- TRF batches and TRF-2026 ----------------------------------------------------------------------
class TestTrfBatch:
    def test_a_batch_equals_files_read_one_by_one(self):
        from pipeline.formats import read_dumps

        names = ["tiny.trf", "other.trf", "bad.trf"]
        other = (DATA / "tiny.trf").read_bytes().replace(b"Tiny Test Open", b"Other")
        contents = [(DATA / "tiny.trf").read_bytes(), other, b"012 nothing\n"]
        batch = read_dumps(
            [(data, f"GER/2024-01/{name}", "GER") for data, name in zip(contents, names, strict=True)], "2024-01"
        )
        for data, name, frame in zip(contents, names, batch, strict=True):
            assert frame.equals(read(name, data))

    def test_trf_2026_tags_comments_and_nrs_records(self):
        lines = [
            "### written by a TRF-2026 exporter",
            "012 New Format Open",
            "042 2025/09/06",
            "132" + " " * 88 + "2025/09/06  2025/09/07",
            "142 2",
            "222 5400+30",
            "ZZZ some future tag",
            trf_line("1", "One,A", "1001", ["   2 w 1", "   2 b ="]),
            trf_line("2", "Two,B", "1002", ["   1 b 0", "   1 w ="]),
            "GER    1                                   1850      GER4711",
            "GER    9                                   1700",
        ]
        records = read("new.trf", "\n".join(lines).encode(), month="2025-09").sort("source_line", "round")
        games = records.filter(pl.col("parse_error").is_null())
        assert games["date"].to_list() == [date(2025, 9, 6), date(2025, 9, 7)]
        assert games["result"].to_list() == ["1-0", "1/2-1/2"] and games["white_id"].to_list() == [1001, 1002]
        assert (games["tc_base_seconds"][0], games["tc_increment_seconds"][0], games["time_control"][0]) == (
            5400,
            30,
            "classical",
        )
        assert records.filter(pl.col("parse_error").is_not_null())["parse_error"].to_list() == [
            "NRS record GER: starting rank '9' (columns 5-8) has no 001 record"
        ]

    def test_lines_that_are_no_record_and_overlong_records_are_reported(self):
        lines = [
            trf_line("1", "One,A", "1001", ["   2 w 1"]),
            "  " + trf_line("2", "Two,B", "1002", ["   1 b 0"]),  # shifted: not a record
            trf_line("3", "Three,C", "1003", ["   0 - U"]) + " " + "x" * 5000,
        ]
        records = read("junk.trf", "\n".join(lines).encode()).sort("source_line")
        assert records["parse_error"].to_list() == [
            "round 1: opponent rank 2 has no 001 record",
            "not a TRF record (a record starts with a three-character tag and a blank, e.g. '001 ')",
            "001 record is 5100 characters long; 200 rounds end at column 2091",
        ]

    def test_lower_case_titles_blank_federations_and_dummy_players(self):
        # example1.trf's style: old title codes, no federation, YYYY.MM.DD births, a never-paired dummy.
        one = trf_line("1", "Vasquez,Rodrigo", "3400042", ["   2 w 1"], rating="2558").replace(" GER ", "     ")
        one = one[:10] + "  g" + one[13:]
        two = trf_line("2", "Player,Two", "", ["   1 b 0"], rating="").replace("1990/01/01", "1990.01.01")
        dummy = trf_line("3", "spielfrei", "", ["0000 - -"], rating="").replace(" GER ", "     ")
        records = read("old.trf", "\n".join([one, two, dummy]).encode())
        assert records.select("white_id", "black_id", "white_rating", "result", "unplayed", "parse_error").rows() == [
            (3400042, None, 2558, "1-0", None, None),
            (None, None, None, "-", "bye", None),  # the dummy's '0000 - -' cell: a bye, as in example1.trf
        ]


# -- FIDE rating lists -----------------------------------------------------------------------------
def fixed_width(layout: str, **values: str) -> str:
    """A list line of the given layout with the named fields placed at their slices."""
    from pipeline.formats.fide_list import LAYOUTS, WIDTHS

    line = [" "] * WIDTHS[layout]
    for field, value in values.items():
        start, end = LAYOUTS[layout][field]
        line[start:end] = list(value.ljust(end - start)[: end - start])
    return "".join(line)


class TestFideLists:
    # FIDE's header lines verbatim: fixed-width, each heading at its field's column, so each stays one string on one
    # line (hence the noqa: E501).
    HEADERS = {
        "A": "ID Number      Name                                                         Fed Sex Tit  WTit OTit           FOA SRtng SGm SK RRtng RGm Rk BRtng BGm BK B-day Flag",  # noqa: E501
        "B": "ID Number      Name                                                         Fed Sex Tit  WTit OTit           FOA AUG25 Gms K  B-day Flag",  # noqa: E501
        "C": "ID Number      Name                                                         Fed Sex Tit  WTit OTit           SRtng SGm SK RRtng RGm Rk BRtng BGm BK B-day Flag",  # noqa: E501
        "E": "ID number Name                              TitlFed  Mar11 GamesBorn  Flag",
    }

    def parse(self, name: str, text: str):
        from pipeline.formats.fide_list import parse_fide_list
        from schemas.fide_list import FideList

        parsed = parse_fide_list(text.encode("latin-1"), name)
        FideList.validate(parsed.players)
        assert parsed.records == parsed.players.height + parsed.rejected.height
        return parsed

    def test_layout_a_combined_list(self):
        rows = [
            fixed_width(
                "A",
                player_id="1503014",
                name="Carlsen, Magnus",
                federation="NOR",
                sex="M",
                title="GM",
                standard_rating="2837",
                standard_games="9",
                standard_k="10",
                rapid_rating="2827",
                rapid_k="20",
                blitz_rating="2881",
                blitz_k="20",
                birth="1990",
            ),
            fixed_width(
                "A", player_id="999999999", name="Newcomer, Nina", federation="ISL", sex="F", birth="0", flag="wi"
            ),
        ]
        parsed = self.parse("players_list_foa.txt", "\n".join([self.HEADERS["A"], *rows]) + "\n")
        assert (parsed.layout, parsed.rating_type, parsed.period) == ("A", "standard", None)
        carlsen, nina = parsed.players.rows(named=True)
        assert (carlsen["standard_rating"], carlsen["standard_games"], carlsen["rapid_rating"], carlsen["blitz_k"]) == (
            2837,
            9,
            2827,
            20,
        )
        assert (carlsen["title"], carlsen["birth_year"], carlsen["sex"]) == ("GM", 1990, "M")
        assert (nina["standard_rating"], nina["birth_year"], nina["inactive"], nina["flag"]) == (None, None, True, "wi")

    def test_layout_a_overflowing_other_titles_shift_the_rest(self):
        row = fixed_width(
            "A", player_id="1000", name="Arbiter, Ann", federation="GER", sex="F", standard_rating="1900", birth="1970"
        )
        overflow = row[:94] + "IA,FA,IO,FT,DIX" + "X" + row[109:]  # 163 characters: OTit ran one column over
        parsed = self.parse("players_list_foa.txt", "\n".join([self.HEADERS["A"], overflow]) + "\n")
        assert parsed.players["standard_rating"].to_list() == [1900] and parsed.players["birth_year"].to_list() == [
            1970
        ]

    def test_layout_b_c_and_e(self):
        b = self.parse(
            "blitz_rating_list.txt",
            "\n".join(
                [
                    self.HEADERS["B"],
                    fixed_width(
                        "B",
                        player_id="4100018",
                        name="Some, One",
                        federation="IND",
                        sex="M",
                        rating="2100",
                        games="3",
                        k="20",
                        birth="2001",
                    ),
                ]
            ),
        )
        assert (b.layout, b.rating_type, b.period) == ("B", "blitz", "2025-08")
        assert b.players.select("blitz_rating", "blitz_games", "blitz_k", "standard_rating").row(0) == (
            2100,
            3,
            20,
            None,
        )
        c = self.parse(
            "players_list.txt",
            "\n".join(
                [
                    self.HEADERS["C"],
                    fixed_width(
                        "C",
                        player_id="100",
                        name="Old, Combined",
                        federation="FRA",
                        sex="M",
                        standard_rating="2205",
                        rapid_rating="2150",
                        birth="1980",
                    ),
                ]
            ),
        )
        assert (c.layout, c.players["standard_rating"][0], c.players["rapid_rating"][0]) == ("C", 2205, 2150)
        e = self.parse(
            "MAR11FRL.TXT",
            "\n".join(
                [
                    self.HEADERS["E"],
                    fixed_width(
                        "E",
                        player_id="4100018",
                        name="Bimonthly, Ben",
                        title="m",
                        federation="ENG",
                        rating="2410",
                        games="12",
                        birth="1975",
                        flag="i",
                    ),
                ]
            ),
        )
        assert (e.layout, e.period) == ("E", "2011-03")
        assert e.players.select("standard_rating", "title", "birth_year", "inactive").row(0) == (2410, "m", 1975, True)

    def test_detection_without_header_and_rejected_lines(self):
        rows = [
            fixed_width(
                "D",
                player_id="1",
                name="A, A",
                federation="GER",
                sex="M",
                rating="2000",
                games="0",
                k="20",
                birth="1990",
            ),
            fixed_width(
                "D",
                player_id="2",
                name="B, B",
                federation="GER",
                sex="F",
                rating="2100",
                games="1",
                k="20",
                birth="0000",
            ),
            fixed_width("D", player_id="x3", name="C, C", federation="GER", sex="M", rating="2000"),
            fixed_width("D", player_id="4", name="D, D", federation="GER", sex="M", rating="12"),
            fixed_width("D", player_id="1", name="A, A", federation="GER", sex="M", rating="2000"),
        ]
        parsed = self.parse("rapid_feb13frl.txt", "\n".join(rows) + "\n\x1a")
        assert (parsed.layout, parsed.rating_type, parsed.period, parsed.players.height) == ("D", "rapid", "2013-02", 2)
        assert parsed.rejected.select("source_line", "reason").rows() == [
            (3, "unparseable"),
            (4, "rating_implausible"),
            (5, "duplicate"),
        ]
        assert parsed.rejected["detail"].to_list() == [
            "FIDE id 'x3' (columns 1-15) is not a number",
            "rapid rating 12 is outside 1000-3000",
            "FIDE id 1 is already listed on line 1",
        ]

    def test_not_a_list(self):
        from pipeline.formats.common import UnreadableDump
        from pipeline.formats.fide_list import parse_fide_list

        with pytest.raises(UnreadableDump, match="not a FIDE rating list"):
            parse_fide_list(b"Dear arbiter,\nplease find attached...\n", "letter.txt")


def test_realdata_fide_list_2004():
    from pipeline.formats.fide_list import parse_fide_list

    jan = parse_fide_list(realdata("fide-lists-2004", "JAN04FRL.TXT").read_bytes(), "JAN04FRL.TXT")
    assert (jan.layout, jan.period, jan.records, jan.players.height, jan.rejected.height) == (
        "F",
        "2004-01",
        50_458,
        50_458,
        0,
    )
    players = jan.players
    assert (players["standard_rating"].min(), players["standard_rating"].max()) == (1801, 2831)
    assert (players["standard_games"] > 0).sum() == 4_376
    assert dict(players["flag"].drop_nulls().value_counts().rows()) == {"i": 11_237, "w": 2_301, "wi": 1_183}
    assert dict(players["title"].drop_nulls().value_counts().rows()) == {
        "g": 876,
        "m": 2_411,
        "f": 3_774,
        "wg": 223,
        "wm": 441,
        "wf": 503,
        "c": 30,
        "wc": 7,
        "h": 2,
        "wh": 1,
    }
    assert players.filter(pl.col("player_id") == 1701991).select("name", "federation", "birth_date").row(0) == (
        "Aaberg, Anton",
        "SWE",
        date(1972, 1, 17),
    )
    assert "Argui\u00f1ariz, Enrique" in players["name"].to_list()  # Latin-1 bytes
    april = parse_fide_list(realdata("fide-lists-2004", "APR04FRL.TXT").read_bytes(), "APR04FRL.TXT")
    assert (april.layout, april.period, april.players.height, april.rejected.height) == ("F", "2004-04", 51_907, 0)
    assert april.players["standard_games"].max() == 0  # not filled in that quarter


@pytest.mark.parametrize(
    "name, players, period", [("rapid_jan13frl.txt", 11_098, "2013-01"), ("rapid_feb13frl.txt", 12_468, "2013-02")]
)
def test_realdata_rapid_lists_parse_completely(name, players, period):
    from pipeline.formats.fide_list import parse_fide_list

    parsed = parse_fide_list(realdata("fide-lists-2013-rapid", name).read_bytes(), name)
    assert (parsed.layout, parsed.rating_type, parsed.period) == ("D", "rapid", period)
    assert parsed.records == parsed.players.height == players and parsed.rejected.height == 0
    assert (
        parsed.players["rapid_rating"].null_count() == 0 and parsed.players["standard_rating"].null_count() == players
    )
    assert parsed.players["rapid_rating"].min() >= 1000 and set(parsed.players["sex"].unique()) == {"M", "F"}


# -- byte-level helpers ----------------------------------------------------------------------------
_UTF8_CASES = [
    (b"", True),
    ("Müller, Zoë 😀".encode(), True),
    (b"\xed\xa0\x80", False),  # a surrogate
    (b"\xc0\x80", False),  # an overlong NUL
    (b"\xe0\x80\x80", False),  # overlong
    (b"\xf4\x90\x80\x80", False),  # beyond U+10FFFF
    (b"\xf8\x88\x80\x80\x80", False),  # five bytes
    (b"caf\xe9", False),  # Latin-1
    (b"\xc3", False),  # cut short
    (b"\x80", False),  # a lone continuation byte
]


@pytest.mark.parametrize(("data", "valid"), _UTF8_CASES)
def test_is_utf8_judges_as_pythons_decoder(data, valid):
    from pipeline.formats.decoding import Utf8Stream, is_utf8

    assert is_utf8(data) is valid
    for cut in range(len(data) + 1):  # the stream judges the same wherever a block ends
        stream = Utf8Stream()
        assert (stream.feed(data[:cut]) and stream.feed(data[cut:]) and stream.finished()) is valid


def test_is_utf8_agrees_with_pythons_decoder_on_random_bytes():
    import random

    from pipeline.formats.decoding import is_utf8

    rng = random.Random(11)
    pieces = [case for case, _ in _UTF8_CASES] + [b"a", b"\n", "é".encode(), "€".encode()]
    for _ in range(20_000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        try:
            data.decode("utf-8")
            decodes = True
        except UnicodeDecodeError:
            decodes = False
        assert is_utf8(data) is decodes, data


def test_a_file_of_utf8_and_legacy_games_keeps_both_kinds_of_names():
    from pipeline.formats.decoding import decode_text_detected, utf8_lf_bytes_detected

    # As many accented names in the Latin-1 half as in the UTF-8 half: each line is read in its own encoding.
    game = '[Event "Fürth Open"]\n[Site "Fürth"]\n[Date "2024.01.10"]\n[Round "{}"]\n[White "Müller, Jörg"]\n'
    game += '[Black "Weiß, Groß"]\n[Result "1-0"]\n\n1. e4 e5 1-0\n\n'
    data = game.format(1).encode("utf-8") + game.format(2).encode("latin-1") + game.format(3).encode("cp1252")
    records = read("mixed.pgn", data).sort("round")
    assert records["white_name"].to_list() == ["Müller, Jörg"] * 3
    assert records["black_name"].to_list() == ["Weiß, Groß"] * 3
    assert records["event_id"].n_unique() == 1
    text = "".join(game.format(number) for number in (1, 2, 3))
    assert decode_text_detected(b"\xef\xbb\xbf" + data) == (text, "utf-8+windows-1252")
    assert utf8_lf_bytes_detected(data.replace(b"\n", b"\r\n")) == (text.encode(), "utf-8+windows-1252")
    # A legacy file stays one: wholly Windows-1252, or Latin-1 when a byte is undefined in Windows-1252.
    assert decode_text_detected(text.encode("cp1252") + "€".encode("cp1252")) == (text + "€", "windows-1252")
    assert decode_text_detected(text.encode("latin-1") + b"\x81") == (text + "\x81", "latin-1")
    trf = f"012 Fürth Open\n001    1      {'Müller, Jörg':<33} 2000\n"
    assert decode_text_detected(trf.encode() + trf.encode("cp1252")) == (trf * 2, "utf-8+windows-1252")


def test_a_legacy_file_with_one_line_valid_utf8_by_accident_stays_legacy():
    from pipeline.formats.decoding import decode_text_detected

    # The review's m_cp.trf and p_cp.pgn: `JOSÉ\xa0LUIS` is C9 A0, valid UTF-8 (U+0260) by accident.
    trf = "012 Mini Open\n042 2024/01/10\n052 2024/01/11\n"
    trf += "132" + " " * 88 + "24/01/10  24/01/11\n"
    trf += trf_line("1", "JOSÉ\xa0LUIS,A", "4600003", ["   2 w 1", "   2 b ="]) + "\n"
    trf += trf_line("2", "Müller,B", "4600011", ["   1 b 0", "   1 w ="]) + "\n"
    assert decode_text_detected(trf.encode("cp1252")) == (trf, "windows-1252")
    records = read("m_cp.trf", trf.encode("cp1252"))
    assert records["parse_error"].null_count() == records.height == 2
    assert set(records["white_name"]) | set(records["black_name"]) == {"JOSÉ\xa0LUIS,A", "Müller,B"}
    pgn = ""
    for number, (white, termination) in enumerate((("Gómez, José", "normal"), ("JOSÉ\xa0PEREZ, Luis", "normal"))):
        pgn += f'[Event "Open"]\n[Date "2024.01.10"]\n[Round "{number + 1}"]\n[White "{white}"]\n'
        pgn += f'[Black "Weiß, Max"]\n[Result "1-0"]\n[Termination "{termination}"]\n\n1. e4 e5 2. Nf3 1-0\n\n'
    assert decode_text_detected(pgn.encode("cp1252")) == (pgn, "windows-1252")
    assert read("p_cp.pgn", pgn.encode("cp1252"))["white_name"].to_list() == ["Gómez, José", "JOSÉ\xa0PEREZ, Luis"]
    # A UTF-8 file with a legacy part is still read line by line: one UTF-8 line of letters is evidence, and so is an
    # alphabet (Cyrillic) that is no accident of Windows-1252.
    mixed = "012 Fürth\n".encode() + "001 Müller\n".encode("cp1252")
    assert decode_text_detected(mixed) == ("012 Fürth\n001 Müller\n", "utf-8+windows-1252")
    mixed = "012 Иванов, Сергей\n".encode() + "001 Müller\n".encode("cp1252")
    assert decode_text_detected(mixed) == ("012 Иванов, Сергей\n001 Müller\n", "utf-8+windows-1252")
    assert decode_text_detected("012 Ив\n".encode() + b"001 M\xfcller\n")[1] == "windows-1252"


def test_mixed_files_read_each_line_as_a_per_line_decoder_does():
    import random
    import re

    from pipeline.formats.decoding import decode_text_detected

    def by_line(data: bytes) -> str:
        pieces = re.split(rb"(?<=[\r\n])", data)
        legacy = b"".join(piece for piece in pieces if not _decodes(piece))
        codec = "cp1252" if _decodes(legacy, "cp1252") else "latin-1"
        utf8 = "".join(piece.decode() for piece in pieces if not piece.isascii() and _decodes(piece))
        wide = [char for char in utf8 if not char.isascii()]
        letters = sum("\u00c0" <= char <= "\u017f" and char not in "×÷" for char in wide)
        if not wide or (2 * letters < len(wide) and len(set(wide)) < 8):  # no UTF-8 text: a legacy file
            return data.decode(codec if _decodes(data, codec) else "latin-1")
        return "".join(piece.decode("utf-8" if _decodes(piece) else codec) for piece in pieces)

    rng = random.Random(5)
    pieces = [case for case, _ in _UTF8_CASES] + [b"a", b"\n", b"\r", "é".encode(), "€".encode(), b"\xe9", b"\x81"]
    pieces += [b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf"]  # the edges of the ranges
    pieces += ["ü".encode(), "É\xa0".encode("cp1252"), "×".encode(), "Ā".encode(), "ſ".encode(), "ƀ".encode()]
    pieces += [chr(code).encode() for code in range(0x410, 0x420)]  # an alphabet's worth of other letters
    for _ in range(20_000):
        data = b"a" + b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 10)))
        if not _decodes(data):
            assert decode_text_detected(data)[0] == by_line(data), data


def _decodes(data: bytes, codec: str = "utf-8") -> bool:
    try:
        data.decode(codec)
    except UnicodeDecodeError:
        return False
    return True


def test_parse_digits_agrees_with_python_on_every_two_bytes_and_random_fields():
    import random
    import re

    import numpy as np

    from pipeline.formats.scan import leading_digits, parse_digits

    rng = random.Random(5)
    near_digits = [0x00, 0x20, 0x2E, 0x2F, 0x30, 0x31, 0x39, 0x3A, 0x7F, 0x80, 0x89, 0x8A, 0xB0, 0xC9, 0xFF]
    fields = [bytes([a, b]) for a in range(256) for b in range(256)]
    fields += [bytes(rng.choice(near_digits) for _ in range(rng.randint(0, 9))) for _ in range(50_000)]
    fields += [bytes(rng.choice(b"0123456789") for _ in range(rng.randint(0, 17))) for _ in range(20_000)]
    lengths = np.array([len(field) for field in fields], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    arr = np.frombuffer(b"|".join(fields) + bytes(64), dtype=np.uint8)
    value, ok = parse_digits(arr, starts, lengths)
    expected = [1 <= len(field) <= 15 and all(0x30 <= byte <= 0x39 for byte in field) for field in fields]
    assert ok.tolist() == expected
    assert value.tolist() == [int(field) if good else 0 for field, good in zip(fields, expected, strict=True)]
    for max_digits in (3, 6, 8):  # the digits a field starts with ('3.12' -> 3), at most max_digits
        value, ok = leading_digits(arr, starts, lengths, max_digits)
        leading = [re.match(rb"[0-9]*", field[:max_digits]).group() for field in fields]  # type: ignore[union-attr]
        assert ok.tolist() == [bool(digits) for digits in leading]
        assert value.tolist() == [int(digits or b"0") for digits in leading]


def test_parse_ymd_agrees_with_the_calendar():
    import random
    from datetime import date, timedelta

    import numpy as np

    from pipeline.formats.scan import parse_ymd

    rng = random.Random(9)
    texts = [
        f"{y:04d}.{m:02d}.{d:02d}"
        for y in (1000, 1900, 1970, 2000, 2023, 2024, 9999)
        for m in range(14)
        for d in range(33)
    ]
    texts += [
        f"{rng.randint(0, 9999):04d}{rng.choice('.-/:')}{rng.randint(0, 13):02d}"
        f"{rng.choice('.-/')}{rng.randint(0, 32):02d}"
        for _ in range(20_000)
    ]
    texts += ["2024.1.5", "????.??.??", "2024.03.1x", "2024.03.011", ""]
    fields = [text.encode() for text in texts]
    lengths = np.array([len(field) for field in fields], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    days, ok = parse_ymd(np.frombuffer(b"|".join(fields) + bytes(64), dtype=np.uint8), starts, lengths)

    def calendar_day(text: str) -> int | None:
        if len(text) != 10 or text[4] != text[7] or text[4] not in ".-/" or int(text[:4]) < 1000:
            return None
        try:
            return (date(int(text[:4]), int(text[5:7]), int(text[8:])) - date(1970, 1, 1)) // timedelta(days=1)
        except ValueError:
            return None

    expected = [calendar_day(text) if text.replace(text[4:5] or ".", "").isdigit() else None for text in texts]
    assert [int(day) if good else None for day, good in zip(days, ok, strict=True)] == expected


def test_scan_helpers():
    import numpy as np

    from pipeline.formats.scan import byte_lines, parse_digits, parse_ymd, string_views

    lines = byte_lines("2024.02.29 12345 abc é and a longer string\nsecond".encode())
    assert lines.count == 2 and lines.text(1) == "second"
    starts = np.array([0, 11, 17, 21, 0, 11, 11])
    lengths = np.array([10, 5, 3, 2, 0, 1, 0])
    assert string_views(lines, starts, lengths).to_list() == ["2024.02.29", "12345", "abc", "é", "", "1", ""]
    assert string_views(lines, np.array([24]), np.array([20])).to_list() == ["and a longer string\n"[:20]]
    values, ok = parse_digits(lines.arr, starts, lengths)
    assert values[ok].tolist() == [12345, 1] and ok.tolist() == [False, True, False, False, False, True, False]
    days, ok = parse_ymd(lines.arr, np.array([0, 11]), np.array([10, 10]))
    assert ok.tolist() == [True, False] and days[0] == (date(2024, 2, 29) - date(1970, 1, 1)).days
