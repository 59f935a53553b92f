"""Dirty dumps never stop a run, and never invent, double-count or silently drop a record.

Every file of tests/data/malformed is read through the landing-zone reader (schema-checked: one
record per record id) and through `ratings validate`; the dirty-dump cases below also have their
problems checked word for word. How each file is made: tests/data/malformed/make_corpus.py.
"""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.formats import read_dump, read_dumps
from pipeline.formats.common import DumpTooLarge
from pipeline.formats.decoding import decompress_dump
from pipeline.validate.file_report import report_file, report_files
from schemas.raw_games import RawGames

MALFORMED = Path(__file__).resolve().parent / "data" / "malformed"
CORPUS = sorted(path.name for path in MALFORMED.iterdir() if path.suffix not in (".py", ".md"))
BOMB = str(MALFORMED / "trf_line_bomb.trf.gz")

# file -> the problems `ratings validate` prints for it (all of them), in order.
PROBLEMS = {
    "trf_glued_code.trf": [  # '001x' and '001<tab>': one junk record per line, not a junk record and a player
        "line 9: not a TRF record (a record starts with a three-character tag and a blank, e.g. '001 ')",
        "line 10: not a TRF record (a record starts with a three-character tag and a blank, e.g. '001 ')",
    ],
    "trf_float_rank.trf": [
        "line 6: round 2: opponent rank 4 has no 001 record",
        "line 7: round 1: opponent rank 4 has no 001 record",
        "line 8: starting rank '2e9' (columns 5-8) is not a positive number",
    ],
    "trf_float_ids.trf": [
        "line 5: FIDE id (columns 58-68) '4.600003e6' is not a number (an id is written in digits only)",
        "line 5: FIDE id (columns 58-68) '4.600003e6' is not a number (an id is written in digits only); "
        "FIDE id (columns 58-68) '-1002' is not a number (an id is written in digits only)",
        "line 6: FIDE id (columns 58-68) '-1002' is not a number (an id is written in digits only)",
    ],
    "trf_trailing_text.trf": [  # no phantom round 3: no byes for the other players
        "line 5: round 3 onwards: 'withdrew: ill' (from column 112) is not a round cell"
        " (opponent rank, colour, result)",
    ],
    "trf_bad_dates.trf": [
        "line 5: round 2 date '24/02/30' (tag 132, line 4, column 102) is not a date",
        "line 6: round 2 date '24/02/30' (tag 132, line 4, column 102) is not a date",
    ],
    "trf_nul_byte.trf": ["line 1: line holds a NUL byte (binary data), not a TRF record"],
    "trf_line_bomb.trf.gz": [
        f"line 1: {BOMB}: has more than 8,000,000 lines, the cap per file (MAX_LINES_PER_FILE); not read: split it "
        "into parts within the cap in the same month folder",
    ],
    "pgn_comment_brackets.pgn": [],
    "pgn_unclosed_comment.pgn": ["line 1: comment '{' on line 10 is never closed (read as ending with its line)"],
    "pgn_bad_dates.pgn": [  # '2024.??.??' is unknown, as PGN allows: that game is rated
        "line 1: Date '2024.02.30' is not a date",
        "line 12: Date '2024.13.01' is not a date",
        "line 23: Date '10.01.2024' is not a date",
    ],
    "pgn_float_ids.pgn": [
        "line 1: WhiteFideId '4.600003e6' is not a number (an id is written in digits only)",
        "line 23: BlackFideId '1.5e7' is not a number (an id is written in digits only)",
    ],
    "pgn_nul_byte.pgn": ["line 12: line 15 holds a NUL byte (binary data)"],
    "pgn_mixed_encoding.pgn": [],
    "pgn_trailing_garbage.pgn.gz": ["line 23: 21 bytes after the end of the gzip stream are not gzip data"],
    "csv_long_quoted_field.csv": [],
    "csv_duplicate_columns.csv": [
        "line 1: column(s) given more than once in the header: result ('result', 'Result'); the file is not read",
    ],
    "csv_nul_byte.csv": ["line 3: row holds a NUL byte (binary data)"],
    "csv_bad_dates.csv": [
        "line 2: date '2024.02.30' is not a date",
        "line 3: date '2024.13.01' is not a date",
        "line 4: date '10.01.2024' is not a date",
    ],
    "csv_float_ids.csv": [
        "line 2: white_id '4.600003e6' is not a number (an id is written in digits only)",
        "line 3: black_id '1.5e7' is not a number (an id is written in digits only)",
    ],
    "parquet_unused_nested_columns.parquet": [],
    "parquet_list_id_column.parquet": [
        "line 1: column 'white_id' has type List(Int64), which holds no value the pipeline can read",
    ],
    "parquet_datetime_dates.parquet": [],
}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_dirty_dump_problems(name):
    report = report_file(str(MALFORMED / name))
    assert report.records == report.games + sum(report.quarantined.values())
    assert report.problems == PROBLEMS[name]


@pytest.mark.parametrize("name", [name for name in CORPUS if not name.startswith(("fide_", "players_"))])
def test_every_dump_is_one_record_per_record_id(name):
    """The landing-zone reader on every corpus dump: no exception, schema-valid (record ids unique)."""
    records = read_dump((MALFORMED / name).read_bytes(), f"GER/2024-01/{name}", "GER", "2024-01")
    RawGames.validate(records)
    assert records.height >= 1 and records["record_id"].is_unique().all()


def test_each_physical_trf_line_is_at_most_one_line_record():
    records = read_dump((MALFORMED / "trf_glued_code.trf").read_bytes(), "GER/2024-01/glued.trf", "GER", "2024-01")
    junk = records.filter(pl.col("parse_error").is_not_null())
    assert junk["source_line"].to_list() == [9, 10] and junk["raw_text"].str.starts_with("001").all()
    assert records.filter(pl.col("parse_error").is_null())["source_line"].is_in([9, 10]).sum() == 0


def test_trailing_text_makes_no_rounds():
    records = read_dump((MALFORMED / "trf_trailing_text.trf").read_bytes(), "GER/2024-01/t.trf", "GER", "2024-01")
    assert records["round"].drop_nulls().unique().sort().to_list() == [1, 2]
    assert records.filter(pl.col("unplayed").is_not_null()).is_empty()


def test_float_rank_does_not_size_arrays():
    tracemalloc.start()
    read_dump((MALFORMED / "trf_float_rank.trf").read_bytes(), "GER/2024-01/r.trf", "GER", "2024-01")
    # Polars allocates outside tracemalloc; NumPy's arrays are traced (a rank of 2e9 made a 15 GB table).
    assert tracemalloc.get_traced_memory()[1] < 50 << 20
    tracemalloc.stop()


def test_decompression_is_bounded_and_streamed():
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=1)
    tracemalloc.start()
    with pytest.raises(DumpTooLarge, match="more than 1 MiB, the cap per file"):
        decompress_dump(bomb, "gz", limit=1 << 20)
    assert tracemalloc.get_traced_memory()[1] < 24 << 20  # never the 64 MB the stream expands to
    tracemalloc.stop()
    content, trailing = decompress_dump(gzip.compress(b"a\n") + gzip.compress(b"b\n") + b"\0\0", "gz")
    assert (content, trailing) == (b"a\nb\n", None)  # several members and zero padding are fine


def test_byte_cap_names_the_file(monkeypatch):
    import pipeline.formats as formats

    real = formats.decompress_dump
    monkeypatch.setattr(formats, "decompress_dump", lambda data, compression: real(data, compression, limit=1 << 20))
    records = read_dump(gzip.compress(b"1. e4\n" * 300_000), "GER/2024-01/big.pgn.gz", "GER", "2024-01")
    assert records["parse_error"].to_list() == [
        "GER/2024-01/big.pgn.gz: decompresses to more than 1 MiB, the cap per file (MAX_DECOMPRESSED_BYTES); not read: "
        "split it into parts within the cap in the same month folder"
    ]


def test_mixed_encoding_keeps_every_name(capsys):
    records = read_dump((MALFORMED / "pgn_mixed_encoding.pgn").read_bytes(), "GER/2024-01/m.pgn", "GER", "2024-01")
    assert records["white_name"].to_list() == ["Müller, Jürgen", "Gómez, Ana"]
    assert (
        main(
            [
                "validate",
                "--json",
                str(MALFORMED / "pgn_mixed_encoding.pgn"),
                str(MALFORMED / "pgn_latin1.pgn"),
                str(MALFORMED / "pgn_utf16.pgn"),
                str(MALFORMED / "parquet_datetime_dates.parquet"),
            ]
        )
        == 0
    )
    files = json.loads(capsys.readouterr().out)["files"]
    assert [entry["encoding"] for entry in files] == ["utf-8+windows-1252", "windows-1252", "utf-16", None]


def test_typed_parquet_dates_and_binary_cells():
    records = read_dump(
        (MALFORMED / "parquet_datetime_dates.parquet").read_bytes(), "GER/2024-01/d.parquet", "GER", "2024-01"
    )
    assert records["date"].to_list() == [date(2024, 1, 5), date(2024, 1, 6)]
    assert records["event_start"].to_list() == [date(2024, 1, 5)] * 2
    sink = io.BytesIO()
    pl.DataFrame(
        {
            "white_id": [1001, 1003],
            "black_id": [1002, 1004],
            "result": pl.Series([b"1-0", b"\xff-0"], dtype=pl.Binary),
            "white_rating": [2100.0, 2150.5],
        }
    ).write_parquet(sink)
    records = read_dump(sink.getvalue(), "GER/2024-01/b.parquet", "GER", "2024-01")
    assert records["result"].to_list() == ["1-0", None]
    assert records["parse_error"].to_list() == [
        None,
        "white_rating '2150.5' is not a number; result is binary data, not UTF-8 text",
    ]


def test_long_quoted_field_keeps_the_rows_after_it():
    records = read_dump((MALFORMED / "csv_long_quoted_field.csv").read_bytes(), "GER/2024-01/l.csv", "GER", "2024-01")
    assert records["source_line"].to_list() == [2, 3, 4] and records["parse_error"].null_count() == 3


def test_impossible_trf_start_date_spoils_the_event():
    text = (MALFORMED / "trf_bad_dates.trf").read_text().replace("042 2024/01/06", "042 2024/13/01")
    records = read_dump(text.encode(), "GER/2024-01/s.trf", "GER", "2024-01")
    assert records["parse_error"].str.contains("event start '2024/13/01' \\(tag 042\\) is not a date").all()


@pytest.mark.parametrize(("tag", "written"), [("042", "06.01.24"), ("052", "07.01.24")])
def test_a_trf_start_or_end_with_a_two_digit_year_not_first_in_trf_form_is_not_guessed(tag, written):
    """'06.01.24' may be day.month.year as well as year.month.day (2006-01-24): TRF16's two-digit form is YY/MM/DD."""
    text = (MALFORMED / "trf_bad_dates.trf").read_text()
    text = text.replace("042 2024/01/06", "042 06.01.24") if tag == "042" else text.replace("\n", "\n052 07.01.24\n", 1)
    records = read_dump(text.encode(), "GER/2024-01/s.trf", "GER", "2024-01")
    name = "start" if tag == "042" else "end"
    assert records["parse_error"].str.contains(f"event {name} '{written}' \\(tag {tag}\\) is not a date").all()


# -- one file never stops the others -----------------------------------------------------------------
def test_an_unexpected_error_stays_in_its_file(monkeypatch):
    import pipeline.validate.file_report as file_report

    real = file_report._dump_report

    def failing(data, path, fmt):
        if path.endswith("pgn_latin1.pgn"):
            raise RuntimeError("boom\nsecond line")
        return real(data, path, fmt)

    monkeypatch.setattr(file_report, "_dump_report", failing)
    paths = [
        str(MALFORMED / name) for name in ("pgn_latin1.pgn", "parquet_unused_nested_columns.parquet", "trf_utf16.trf")
    ]
    first, parquet, trf = report_files(paths)
    assert (first.records, first.quarantined, first.readable) == (1, {"unparseable": 1}, False)
    assert first.problems == ["line 1: could not be read: RuntimeError: boom"]
    assert (parquet.games, trf.games) == (2, 4)


def test_a_failing_batch_falls_back_to_its_files(monkeypatch):
    import pipeline.formats as formats

    real = formats.parse_trf_batch

    def failing(texts, event_ids):
        if any("BOOM" in text for text in texts):
            raise ValueError("cannot parse")
        return real(texts, event_ids)

    monkeypatch.setattr(formats, "parse_trf_batch", failing)
    good = (MALFORMED / "trf_utf16.trf").read_bytes()
    bad = (MALFORMED / "trf_header_only.trf").read_text().replace("Malformed Open", "BOOM").encode()
    frames = read_dumps(
        [(good, "GER/2024-01/a.trf", "GER"), (bad, "GER/2024-01/b.trf", "GER"), (good, "GER/2024-01/c.trf", "GER")],
        "2024-01",
    )
    assert [frame.height for frame in frames] == [4, 1, 4]
    assert frames[1]["parse_error"].to_list() == ["could not be read: ValueError: cannot parse"]


def test_nothing_from_a_file_reaches_the_terminal_raw(tmp_path, capsys):
    path = tmp_path / "evil\x1b[2J.pgn"
    path.write_bytes(
        b'[Event "x"]\n[White "\x1b]0;owned\x07Evil"]\n[Black "B"]\n'
        b'[WhiteFideId "1\x1b[31m"]\n[Result "1-0"]\n\n1. e4 1-0\n'
    )
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "evil\\x1b[2J.pgn: line 1: WhiteFideId '1\\x1b[31m' is not a number (an id is written in digits only)" in err


@pytest.mark.parametrize("batch_bytes", [64 << 20, 1])  # one batch, or a batch per file
def test_csv_and_parquet_dumps_read_together_equal_each_read_alone(monkeypatch, batch_bytes):
    """A month's CSV and Parquet dumps are parsed in batches: every file's rows are what it gives alone."""
    import pipeline.formats as formats

    monkeypatch.setattr(formats, "TABLE_BATCH_BYTES", batch_bytes)
    names = [name for name in CORPUS if name.startswith(("csv_", "parquet_"))]
    sink = io.BytesIO()
    pl.DataFrame({"white_id": [7, -1], "black_id": ["8", "x"], "result": [b"1-0", b"\xff"]}).write_parquet(sink)
    dumps = [((MALFORMED / name).read_bytes(), f"GER/2024-01/{name}", "GER") for name in names]
    dumps += [
        (b"white_id,black_id,result,round\n1,2,1-0,1\n3,4\n5,6,0-1,r2\n", "GER/2024-01/ragged.csv", "GER"),
        (b"white_id,result\n1,1-0\n", "GER/2024-01/no-black.csv", "GER"),
        (sink.getvalue(), "GER/2024-01/binary.parquet", "GER"),
        (b"", "GER/2024-01/empty.csv", "GER"),
    ]
    together = read_dumps(dumps, "2024-01")
    for dump, frame in zip(dumps, together, strict=True):
        assert frame.equals(read_dump(*dump, "2024-01")), dump[1]
    ragged = together[-4]  # ragged.csv
    assert ragged["source_line"].to_list() == [2, 3, 4]
    assert ragged["parse_error"].to_list() == [None, "expected 4 fields, found 2", "round 'r2' is not a number"]


def test_a_month_of_every_format_read_together_equals_each_file_read_alone():
    """TRF and PGN dumps are parsed in one thread while the month's CSV and Parquet dumps are in another: each file's
    rows stay its own, in the month's order.
    """
    names = [name for name in CORPUS if name.startswith(("trf_", "pgn_", "csv_", "parquet_"))]
    assert {name.split("_")[0] for name in names} == {"trf", "pgn", "csv", "parquet"}
    dumps = [((MALFORMED / name).read_bytes(), f"GER/2024-01/{name}", "GER") for name in names]
    together = read_dumps(dumps, "2024-01")
    assert len(together) == len(dumps)
    for dump, frame in zip(dumps, together, strict=True):
        assert frame.equals(read_dump(*dump, "2024-01")), dump[1]


def test_a_failing_table_batch_falls_back_to_its_files(monkeypatch):
    import pipeline.formats as formats

    real = formats.table_records

    def failing(files, event_keys):
        if any("boom" in key for key in event_keys):
            raise ValueError("cannot parse")
        return real(files, event_keys)

    monkeypatch.setattr(formats, "table_records", failing)
    good = b"white_id,black_id,result\n1,2,1-0\n3,4,0-1\n"
    frames = read_dumps(
        [(good, "GER/2024-01/a.csv", "GER"), (good, "GER/2024-01/boom.csv", "GER"), (good, "GER/2024-01/c.csv", "GER")],
        "2024-01",
    )
    assert [frame.height for frame in frames] == [2, 1, 2]
    assert frames[1]["parse_error"].to_list() == ["could not be read: ValueError: cannot parse"]
