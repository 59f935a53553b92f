"""Writes the malformed-input corpus next to this script (run it again after changing a case; see README.md)."""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
MEGABYTE = 1_000_000


def trf_line(rank: int, name: str, fide_id: str, cells: list[str], rating: str = "2000") -> str:
    """A TRF16 001 record: rank 5-8, name 15-47, rating 49-52, id 58-68, round cells from column 92."""
    line = f"001 {rank:>4}      {name:<33} {rating:>4} GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  "
    return (line + "  ".join(cells)).rstrip()


TRF_HEADER = ["012 Malformed Open", "042 2024/01/06", "XXR 2",
              "132" + " " * 88 + "24/01/06  24/01/07"]
# A clean four-player, two-round event: 1-2 and 3-4, then 1-3 and 2-4 (four games).
TRF_GOOD = [
    trf_line(1, "One, A", "1001", ["   2 w 1", "   3 b ="]),
    trf_line(2, "Two, B", "1002", ["   1 b 0", "   4 w 1"]),
    trf_line(3, "Three, C", "1003", ["   4 w =", "   1 w ="]),
    trf_line(4, "Four, D", "1004", ["   3 b =", "   2 b 0"]),
]


def pgn_game(event: str, white: int, black: int, result: str, moves: str = "1. e4 e5 2. Nf3 Nc6") -> str:
    return (f'[Event "{event}"]\n[Date "2024.01.10"]\n[Round "1"]\n[White "P{white}, X"]\n[Black "P{black}, Y"]\n'
            f'[Result "{result}"]\n[WhiteFideId "{white}"]\n[BlackFideId "{black}"]\n\n{moves} {result}\n\n')


FIDE_D_HEADER = ("ID Number      Name                                                         Fed Sex Tit  WTit OTit"
                 "           jan13 Gms K  B-day Flag")


def fide_d(player_id: int, name: str, rating: str, fed: str = "GER", sex: str = "M", flag: str = "") -> str:
    """A layout D line (132 characters): id 0-15, name 15-76, fed 76-80, sex 80-84, rating 109-115, ..."""
    return (f"{player_id:<15}{name:<61}{fed:<4}{sex:<4}{'':<5}{'':<5}{'':<15}{rating:<6}{'0':<4}{'20':<3}{'1990':<6}{flag:<4}")


def fide_f(player_id: int, name: str, rating: int, title: str = "", flag: str = "") -> str:
    """A layout F line (79 characters, JAN04FRL.TXT)."""
    return f"{player_id:>8}  {name:<34}{title:<4}{'GER':<4}{rating:>6}{0:>5}  {'17.01.72':<8}   {flag:<6}"


def write(name: str, data: bytes | str) -> None:
    path = HERE / name
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.write_bytes(gzip.compress(payload, mtime=0) if name.endswith(".gz") else payload)


def main() -> None:
    rng = random.Random(2024)
    garbage = bytes(rng.randrange(256) for _ in range(4096)) + b"\x00" * 64
    lf = "\n".join

    # -- TRF -------------------------------------------------------------------------------------
    write("trf_binary.trf", garbage)
    write("trf_empty.trf", b"")
    write("trf_header_only.trf", lf(TRF_HEADER) + "\n")
    truncated = TRF_GOOD[:2] + [TRF_GOOD[2][:97], TRF_GOOD[3][:30]]   # cut inside round 1's cell / inside the name
    write("trf_truncated_lines.trf", lf(TRF_HEADER + truncated) + "\n")
    shifted = [TRF_GOOD[0], TRF_GOOD[1], "  " + TRF_GOOD[2], "  " + TRF_GOOD[3]]  # two lines two columns right
    write("trf_wrong_columns.trf", lf(TRF_HEADER + shifted) + "\n")
    bad_fields = [
        trf_line(1, "One, A", "10x1", ["   2 w 1", "   3 b ="]),            # id not a number
        trf_line(2, "Two, B", "1002", ["   1 b 0", "  4? w 1"], rating="2l00"),  # rating, opponent
        trf_line(3, "Three, C", "1003", ["   4 w Q", "   1 w ="]),          # result code Q
        trf_line(4, "Four, D", "1004", ["   3 b =", "   2 b 0"]),
    ]
    write("trf_bad_fields.trf", lf(TRF_HEADER + bad_fields) + "\n")
    disagree = [
        trf_line(1, "One, A", "1001", ["   2 w 1", "   3 b ="]),
        trf_line(2, "Two, B", "1002", ["   1 b 1", "   4 w 1"]),            # both won round 1
        trf_line(3, "Three, C", "1003", ["   4 w =", "   1 b ="]),          # both black in round 2
        trf_line(4, "Four, D", "1004", ["   3 b =", "   2 b 0"]),
    ]
    write("trf_disagreeing_sides.trf", lf(TRF_HEADER + disagree) + "\n")
    huge = TRF_GOOD[:3] + [TRF_GOOD[3] + "  " + "x" * MEGABYTE]               # a 1 MB 001 record
    write("trf_huge_line.trf.gz", lf(TRF_HEADER + huge) + "\n")
    write("trf_utf16.trf", ("\ufeff" + "\r\n".join(TRF_HEADER + TRF_GOOD) + "\r\n").encode("utf-16-le"))
    latin1 = TRF_GOOD[:2] + [trf_line(3, "Müller, Jürgen", "1003", ["   4 w =", "   1 w ="]), TRF_GOOD[3]]
    write("trf_latin1_cr.trf", ("\r".join(TRF_HEADER + latin1) + "\r").encode("latin-1"))
    write("trf_same_event_twice.trf", lf(TRF_HEADER + TRF_GOOD + TRF_GOOD) + "\n")  # every rank used twice
    write("trf_nrs_and_comments.trf", lf(
        ["### exported by a test", "012 NRS example", "042 2024/01/06", "XXR 2", "ZZZ unknown tag, ignored"] + TRF_GOOD
        + ["GER    1                                   1850      GER1"[:60], "GER   99      Nobody                            1700"]
    ) + "\n")

    # Dirty dumps: one bad spot must cost one record, never invent, double or drop others.
    write("trf_glued_code.trf", lf(TRF_HEADER + TRF_GOOD + ["001x" + TRF_GOOD[0][4:], "001\t" + TRF_GOOD[1][4:]]) + "\n")
    write("trf_float_rank.trf", lf(TRF_HEADER + TRF_GOOD[:3] + [TRF_GOOD[3][:4] + " 2e9" + TRF_GOOD[3][8:]]) + "\n")
    float_ids = [trf_line(1, "One, A", "4.600003e6", ["   2 w 1", "   3 b ="]), trf_line(2, "Two, B", "-1002", ["   1 b 0", "   4 w 1"])]
    write("trf_float_ids.trf", lf(TRF_HEADER + float_ids + TRF_GOOD[2:]) + "\n")
    write("trf_trailing_text.trf", lf(TRF_HEADER + [TRF_GOOD[0] + "   withdrew: ill"] + TRF_GOOD[1:]) + "\n")
    write("trf_bad_dates.trf", lf(TRF_HEADER[:3] + ["132" + " " * 88 + "24/01/06  24/02/30"] + TRF_GOOD) + "\n")
    write("trf_nul_byte.trf", lf(["012 Malformed\x00Open"] + TRF_HEADER[1:] + TRF_GOOD) + "\n")
    write("trf_line_bomb.trf.gz", b"x\n" * 10_000_000)  # 20 KB compressed, 10 million lines

    # -- PGN -------------------------------------------------------------------------------------
    good = pgn_game("Open", 1001, 1002, "1-0") + pgn_game("Open", 1003, 1004, "1/2-1/2")
    write("pgn_binary.pgn", garbage)
    write("pgn_truncated.pgn", (good + pgn_game("Open", 1005, 1006, "0-1"))[: len(good) + 60])  # cut in a tag line
    write("pgn_wrong_tags.pgn", good.replace('[Round "1"]', "[Round 1]", 1).replace('[WhiteFideId "1003"]', '[WhiteFideId "1O03"]')
          + '[Event "Open"]\n[White "A"]\n[Black "B"]\n[Result "2-0"]\n\n1. d4 2-0\n\n')
    write("pgn_no_tags.pgn", "This is not a PGN file,\njust some notes.\n")
    write("pgn_huge_line.pgn.gz", pgn_game("Open", 1001, 1002, "1-0", "1. e4 {" + "z" * MEGABYTE + "} e5")
          + pgn_game("O" * 100_000, 1003, 1004, "0-1"))
    write("pgn_utf16.pgn", ("\ufeff" + good.replace("\n", "\r\n")).encode("utf-16"))
    write("pgn_latin1.pgn", good.replace("P1001, X", "Müller, Jürgen").encode("latin-1"))
    write("pgn_same_game_twice.pgn", good + pgn_game("Open", 1001, 1002, "1-0"))
    write("pgn_escapes_and_spacing.pgn", '  [Event "Say \\"hi\\""]  \n[White "A\\\\B"]\n[Black "C"]\n[Result "1-0"]\n'
          '[WhiteFideId " 1001 "]\n[BlackFideId "1002"]\n\n  1. e4 1-0\n\n' + '[Event "x"] [Result "0-1"]\n\n0-1\n')
    write("pgn_forfeits.pgn", pgn_game("Open", 1001, 1002, "1-0", "") + pgn_game("Open", 1003, 1004, "0-0", "")
          + '[Event "Open"]\n[Result "1-0"]\n[WhiteFideId "1005"]\n[BlackFideId "1006"]\n[Termination "Unplayed"]\n\n1. d4 1-0\n\n')

    comments = ("1. e4 {a comment over lines\n[not a tag] but text\n[Event \"Fake\"]\n} e5 ; a { that opens nothing\n"
                "% [Event \"an escape line\"]\n2. Nf3")
    write("pgn_comment_brackets.pgn", pgn_game("Open", 1001, 1002, "1-0", comments) + pgn_game("Open", 1003, 1004, "0-1"))
    write("pgn_unclosed_comment.pgn", pgn_game("Open", 1001, 1002, "1-0", "1. e4 {never closed") + pgn_game("Open", 1003, 1004, "0-1"))
    write("pgn_bad_dates.pgn", "".join(pgn_game("Open", 1001 + 2 * i, 1002 + 2 * i, "1-0").replace("2024.01.10", day)
                                       for i, day in enumerate(["2024.02.30", "2024.13.01", "10.01.2024", "2024.??.??"])))
    write("pgn_float_ids.pgn", pgn_game("Open", 1001, 1002, "1-0").replace('"1001"', '"4.600003e6"') + pgn_game("Open", 1003, 1004, "0-1")
          + pgn_game("Open", 1005, 1006, "1-0").replace('"1006"', '"1.5e7"'))
    write("pgn_nul_byte.pgn", pgn_game("Open", 1001, 1002, "1-0") + pgn_game("Open", 1003, 1004, "0-1").replace("P1003, X", "P1003\x00X"))
    write("pgn_mixed_encoding.pgn", pgn_game("Open", 1001, 1002, "1-0").replace("P1001, X", "Müller, Jürgen").encode("utf-8")
          + pgn_game("Open", 1003, 1004, "0-1").replace("P1003, X", "Gómez, Ana").encode("latin-1"))
    (HERE / "pgn_trailing_garbage.pgn.gz").write_bytes(gzip.compress(good.encode(), mtime=0) + b"this is not gzip data")

    # -- CSV / Parquet ---------------------------------------------------------------------------
    header = "event_id,date,white_id,black_id,result\n"
    write("csv_long_quoted_field.csv", header + '"' + "e" * 200_000 + '",2024-01-05,1001,1002,1-0\n'
          "e,2024-01-05,1003,1004,0-1\ne,2024-01-06,1005,1006,1-0\n")
    write("csv_duplicate_columns.csv", "event_id,date,white_id,black_id,result,Result\ne,2024-01-05,1001,1002,1-0,0-1\n"
          "e,2024-01-05,1003,1004,0-1,1-0\n")
    write("csv_nul_byte.csv", header + "e,2024-01-05,1001,1002,1-0\ne,2024-01-05,1003,10\x0004,0-1\ne,2024-01-06,1005,1006,1-0\n")
    write("csv_bad_dates.csv", header + "e,2024.02.30,1001,1002,1-0\ne,2024.13.01,1003,1004,0-1\ne,10.01.2024,1005,1006,1-0\n"
          "e,2024-01-05,1007,1008,1-0\n")
    write("csv_float_ids.csv", header + "e,2024-01-05,4.600003e6,1002,1-0\ne,2024-01-05,1003,1.5e7,0-1\ne,2024-01-06,1005,1006,1-0\n")
    sink = io.BytesIO()
    pl.DataFrame({
        "white_id": [1001, 1003], "black_id": [1002, 1004], "result": ["1-0", "0-1"], "date": ["2024-01-05", "2024-01-06"],
        "moves": [["e4", "e5"], ["d4"]], "clock": [{"base": 90, "inc": 30}, {"base": 90, "inc": 30}],
        "pair": pl.Series([[1, 2], [3, 4]], dtype=pl.Array(pl.Int64, 2)), "length": pl.Series([3600, 4000]).cast(pl.Duration("ms")),
        "blob": pl.Series([b"\xff\xfe", b"ok"], dtype=pl.Binary),
    }).write_parquet(sink)
    write("parquet_unused_nested_columns.parquet", sink.getvalue())
    sink = io.BytesIO()
    pl.DataFrame({"white_id": [[1001], [1003]], "black_id": [1002, 1004], "result": ["1-0", "0-1"]}).write_parquet(sink)
    write("parquet_list_id_column.parquet", sink.getvalue())
    sink = io.BytesIO()
    from datetime import date, datetime
    pl.DataFrame({"white_id": [1001, 1003], "black_id": [1002, 1004], "result": ["1-0", "0-1"],
                  "date": [datetime(2024, 1, 5, 18, 30), datetime(2024, 1, 6)], "event_start": [date(2024, 1, 5)] * 2}).write_parquet(sink)
    write("parquet_datetime_dates.parquet", sink.getvalue())
    write("csv_binary.csv", garbage)
    write("csv_ragged.csv", header + "e,2024-01-05,1001,1002,1-0\ne,2024-01-05,1003,1004\ne,2024-01-05,1005,1006,0-1,extra\n")
    write("csv_wrong_columns.csv", "event,day,white,black,score\ne,2024-01-05,1001,1002,1\n")
    write("csv_unclosed_quote.csv", header + 'e,2024-01-05,1001,1002,1-0\n"e,2024-01-05,1003,1004,0-1\ne,2024-01-06,1005,1006,1-0\n')
    write("csv_huge_line.csv.gz", header + "e,2024-01-05,1001,1002,1-0\n" + "e" * MEGABYTE + ",2024-01-05,1003,1004,0-1\n")
    write("csv_bad_values.csv", header + "e,2024-13-45,1001,1002,1-0\ne,2024-01-05,abc,1002,0-1\ne,2024-01-05,1001,1001,1-0\n"
          "e,2024-01-05,1001,1002,3-0\n")
    write("csv_same_rows_twice.csv", header + "e,2024-01-05,1001,1002,1-0\ne,2024-01-05,1001,1002,1-0\n")
    write("parquet_corrupt.parquet", b"PAR1" + garbage[:500] + b"PAR1")
    sink = io.BytesIO()
    pl.DataFrame({"white_id": ["1001", "x"], "black_id": [1002, 1004], "result": ["1-0", None]}).write_parquet(sink)
    write("parquet_bad_values.parquet", sink.getvalue())

    # -- FIDE rating lists -----------------------------------------------------------------------
    rows_d = [fide_d(1001, "One, A", "2100"), fide_d(1002, "Two, B", "1850", sex="F", flag="w"),
              fide_d(1003, "Three, C", "2300"), fide_d(1004, "Four, D", "1990", flag="i")]
    write("fide_truncated_D.txt", lf([FIDE_D_HEADER] + rows_d[:2] + [rows_d[2][:60], rows_d[3][:111]]) + "\n")
    write("fide_wrong_columns_D.txt", lf([FIDE_D_HEADER] + rows_d[:2] + ["   " + rows_d[2], rows_d[3][:76] + "G3R" + rows_d[3][79:]]) + "\n")
    write("fide_binary.txt", garbage)
    write("fide_huge_line_D.txt.gz", lf([FIDE_D_HEADER] + rows_d + [fide_d(1005, "Five, E", "2000") + "x" * MEGABYTE]) + "\n")
    write("fide_duplicate_ids_D.txt", lf([FIDE_D_HEADER] + rows_d + [rows_d[1]]) + "\n")
    write("fide_implausible_D.txt", lf([FIDE_D_HEADER] + rows_d[:3] + [fide_d(1004, "Four, D", "9999"), fide_d(1005, "Five, E", "12")]) + "\n")
    rows_f = [fide_f(1701991, "Aaberg, Anton", 2383), fide_f(1401815, "Jørgensen, Jens", 2370, "m"),
              fide_f(13900129, "Agababean, Naira", 2216, "wg", "w")]
    write("fide_latin1_eof_F.txt", ("\n" + lf(rows_f) + "\n\x1a").encode("latin-1"))
    write("fide_garbage_lines_F.txt", lf(rows_f + ["\x07\x08 not a list line at all", "ID_NUMBER is not here either"]) + "\n")
    write("fide_utf16_D.txt", ("\ufeff" + "\r\n".join([FIDE_D_HEADER] + rows_d) + "\r\n").encode("utf-16-le"))

    # -- player registry -------------------------------------------------------------------------
    write("players_bad_ids.csv", 'player_id,name,federation\n1001,"One, A",GER\n,"No Id",GER\nx12,"Bad Id",GER\n1001,"Again, A",GER\n')


if __name__ == "__main__":
    main()
