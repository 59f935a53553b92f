"""`ratings validate`: the JSON contract, exit codes, real files, and the malformed-input corpus.

The corpus: tests/data/malformed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.commands import main
from pipeline.validate.file_report import report_file
from schemas.quarantine import QUARANTINE_REASONS

DATA = Path(__file__).resolve().parent / "data"
MALFORMED = DATA / "malformed"
REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
JSON_KEYS = ["path", "format", "records", "games", "players", "quarantined", "encoding", "readable", "opened"]

# file -> (format, records, games or players, quarantined by reason, something readable).
# How each case is made and why it ends this way: tests/data/malformed/README.md.
EXPECTED = {
    "csv_bad_values.csv": ("csv", 4, 0, {"unparseable": 2, "self_play": 1, "result_out_of_domain": 1}, True),
    "csv_binary.csv": ("csv", 1, 0, {"unparseable": 1}, False),
    "csv_huge_line.csv.gz": ("csv", 2, 2, {}, True),
    "csv_ragged.csv": ("csv", 3, 1, {"unparseable": 2}, True),
    "csv_same_rows_twice.csv": ("csv", 2, 1, {"duplicate": 1}, True),
    "csv_unclosed_quote.csv": ("csv", 2, 1, {"unparseable": 1}, True),
    "csv_wrong_columns.csv": ("csv", 1, 0, {"unparseable": 1}, False),
    "fide_binary.txt": ("trf", 1, 0, {"unparseable": 1}, False),
    "fide_duplicate_ids_D.txt": ("fide-list-D", 5, 4, {"duplicate": 1}, True),
    "fide_garbage_lines_F.txt": ("fide-list-F", 5, 3, {"unparseable": 2}, True),
    "fide_huge_line_D.txt.gz": ("fide-list-D", 5, 4, {"unparseable": 1}, True),
    "fide_implausible_D.txt": ("fide-list-D", 5, 3, {"rating_implausible": 2}, True),
    "fide_latin1_eof_F.txt": ("fide-list-F", 3, 3, {}, True),
    "fide_truncated_D.txt": ("fide-list-D", 4, 2, {"unparseable": 1, "rating_implausible": 1}, True),
    "fide_utf16_D.txt": ("fide-list-D", 4, 4, {}, True),
    "fide_wrong_columns_D.txt": ("fide-list-D", 4, 2, {"unparseable": 2}, True),
    "parquet_bad_values.parquet": ("parquet", 2, 1, {"unparseable": 1}, True),
    "parquet_corrupt.parquet": ("parquet", 1, 0, {"unparseable": 1}, False),
    "pgn_binary.pgn": ("pgn", 1, 0, {"unparseable": 1}, False),
    "pgn_escapes_and_spacing.pgn": ("pgn", 2, 1, {"unparseable": 1}, True),
    "pgn_forfeits.pgn": ("pgn", 3, 0, {"unplayed": 3}, True),
    "pgn_huge_line.pgn.gz": ("pgn", 2, 2, {}, True),
    "pgn_latin1.pgn": ("pgn", 2, 2, {}, True),
    "pgn_no_tags.pgn": ("pgn", 1, 0, {"unparseable": 1}, False),
    "pgn_same_game_twice.pgn": ("pgn", 3, 2, {"duplicate": 1}, True),
    "pgn_truncated.pgn": ("pgn", 3, 2, {"unparseable": 1}, True),
    "pgn_utf16.pgn": ("pgn", 2, 2, {}, True),
    "pgn_wrong_tags.pgn": ("pgn", 3, 0, {"unparseable": 2, "result_out_of_domain": 1}, True),
    "players_bad_ids.csv": ("players-csv", 4, 1, {"unparseable": 2, "duplicate": 1}, True),
    "trf_bad_fields.trf": ("trf", 5, 0, {"unparseable": 5}, False),
    "trf_binary.trf": ("trf", 1, 0, {"unparseable": 1}, False),
    "trf_disagreeing_sides.trf": ("trf", 4, 2, {"unparseable": 2}, True),
    "trf_empty.trf": ("trf", 1, 0, {"unparseable": 1}, False),
    "trf_header_only.trf": ("trf", 1, 0, {"unparseable": 1}, False),
    "trf_huge_line.trf.gz": ("trf", 5, 2, {"unparseable": 3}, True),
    "trf_latin1_cr.trf": ("trf", 4, 4, {}, True),
    "trf_nrs_and_comments.trf": ("trf", 5, 4, {"unparseable": 1}, True),
    "trf_same_event_twice.trf": ("trf", 8, 0, {"unparseable": 8}, False),
    "trf_truncated_lines.trf": ("trf", 5, 1, {"unparseable": 3, "unplayed": 1}, True),
    "trf_utf16.trf": ("trf", 4, 4, {}, True),
    "trf_wrong_columns.trf": ("trf", 5, 1, {"unparseable": 4}, True),
    # Dirty dumps (tests/test_dirty_dumps.py checks their problems word for word).
    "csv_bad_dates.csv": ("csv", 4, 1, {"unparseable": 3}, True),
    "csv_duplicate_columns.csv": ("csv", 1, 0, {"unparseable": 1}, False),
    "csv_float_ids.csv": ("csv", 3, 1, {"unparseable": 2}, True),
    "csv_long_quoted_field.csv": ("csv", 3, 3, {}, True),
    "csv_nul_byte.csv": ("csv", 3, 2, {"unparseable": 1}, True),
    "parquet_datetime_dates.parquet": ("parquet", 2, 2, {}, True),
    "parquet_list_id_column.parquet": ("parquet", 1, 0, {"unparseable": 1}, False),
    "parquet_unused_nested_columns.parquet": ("parquet", 2, 2, {}, True),
    "pgn_bad_dates.pgn": ("pgn", 4, 1, {"unparseable": 3}, True),
    "pgn_comment_brackets.pgn": ("pgn", 2, 2, {}, True),
    "pgn_float_ids.pgn": ("pgn", 3, 1, {"unparseable": 2}, True),
    "pgn_mixed_encoding.pgn": ("pgn", 2, 2, {}, True),
    "pgn_nul_byte.pgn": ("pgn", 2, 1, {"unparseable": 1}, True),
    "pgn_trailing_garbage.pgn.gz": ("pgn", 3, 2, {"unparseable": 1}, True),
    "pgn_unclosed_comment.pgn": ("pgn", 2, 1, {"unparseable": 1}, True),
    "trf_bad_dates.trf": ("trf", 4, 2, {"unparseable": 2}, True),
    "trf_float_ids.trf": ("trf", 4, 1, {"unparseable": 3}, True),
    "trf_float_rank.trf": ("trf", 5, 2, {"unparseable": 3}, True),
    "trf_glued_code.trf": ("trf", 6, 4, {"unparseable": 2}, True),
    "trf_line_bomb.trf.gz": ("trf", 1, 0, {"unparseable": 1}, False),
    "trf_nul_byte.trf": ("trf", 5, 4, {"unparseable": 1}, True),
    "trf_trailing_text.trf": ("trf", 5, 4, {"unparseable": 1}, True),
}
CORPUS = sorted(path.name for path in MALFORMED.iterdir() if path.suffix not in (".py", ".md"))


def validate_json(capsys: pytest.CaptureFixture, *paths: str) -> tuple[int, dict, str]:
    code = main(["validate", "--json", *paths])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_every_corpus_file_has_an_expectation():
    assert CORPUS == sorted(EXPECTED)


@pytest.mark.parametrize("name", CORPUS)
def test_malformed_input_ends_in_an_error_or_quarantine(name):
    """Never a crash, never a silent drop: every record read is a game, a player or a quarantined record."""
    report = report_file(str(MALFORMED / name))
    fmt, records, kept, quarantined, readable = EXPECTED[name]
    listed = fmt.startswith("fide-list") or fmt.endswith("-csv")
    assert (report.format, report.records, report.players if listed else report.games) == (fmt, records, kept)
    assert report.quarantined == quarantined and report.readable is readable
    assert set(report.quarantined) <= set(QUARANTINE_REASONS)
    assert report.records == kept + sum(report.quarantined.values())
    if "unparseable" in report.quarantined:
        # A clear message: the line, and what is wrong with it.
        assert report.problems and all(problem.startswith("line ") for problem in report.problems)


def test_duplicated_tournament_across_two_dumps(tmp_path):
    """The same TRF submitted twice in one month: the second copy's games are duplicates."""
    import polars as pl

    from pipeline.formats import read_dumps
    from pipeline.validate.split import split_games
    from schemas import Players
    from schemas.util import empty_frame

    data = (DATA / "tiny.trf").read_bytes()
    raw = pl.concat(
        read_dumps([(data, "GER/2024-01/open.trf", "GER"), (data, "GER/2024-01/open (2).trf", "GER")], "2024-01")
    )
    games, quarantine = split_games(raw, empty_frame(Players), "2024-01")
    duplicates = quarantine.filter(pl.col("reason") == "duplicate")
    assert games["source_file"].unique().to_list() == ["GER/2024-01/open.trf"]
    assert duplicates.height == games.height == 5 and duplicates["source_file"].unique().to_list() == [
        "GER/2024-01/open (2).trf"
    ]


# -- the command line contract ---------------------------------------------------------------------
def test_json_is_one_object_with_the_contract_keys(capsys):
    code, result, err = validate_json(
        capsys, str(DATA / "games.pgn"), str(DATA / "tiny.trf"), str(DATA / "players_2023-12.csv")
    )
    assert code == 0 and list(result) == ["files"]
    assert [list(entry) for entry in result["files"]] == [JSON_KEYS] * 3
    pgn, trf, registry = result["files"]
    assert pgn == {
        "path": str(DATA / "games.pgn"),
        "format": "pgn",
        "records": 13,
        "games": 6,
        "players": 0,
        "quarantined": {"unplayed": 3, "unparseable": 2, "result_out_of_domain": 1, "rating_implausible": 1},
        "encoding": "utf-8",
        "readable": True,
        "opened": True,
    }
    assert (trf["format"], trf["records"], trf["games"], trf["players"], trf["encoding"]) == (
        "trf",
        10,
        5,
        6,
        "windows-1252",
    )
    assert registry["encoding"] == "utf-8"
    assert (registry["format"], registry["records"], registry["players"], registry["quarantined"]) == (
        "players-csv",
        8,
        8,
        {},
    )
    # Problems go to stderr, naming file, line and problem.
    assert f"{DATA / 'games.pgn'}: line 91: WhiteElo '21OO' is not a number" in err.splitlines()


def test_exit_code_is_non_zero_only_when_nothing_could_be_read(capsys):
    code, result, err = validate_json(capsys, str(MALFORMED / "trf_binary.trf"), str(DATA / "no-such-file.pgn"))
    assert code == 1 and "no file could be read" in err
    # A script tells a file that could not be read from one without records.
    assert [(entry["readable"], entry["opened"]) for entry in result["files"]] == [(False, True), (False, False)]
    assert result["files"][1] == {
        "path": str(DATA / "no-such-file.pgn"),
        "format": "pgn",
        "records": 0,
        "games": 0,
        "players": 0,
        "quarantined": {},
        "encoding": None,
        "readable": False,
        "opened": False,
    }
    assert "no-such-file.pgn: cannot be read" in err
    # In text, a file that could not be opened is not given counts as if it held no record.
    assert main(["validate", str(DATA / "no-such-file.pgn")]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{DATA / 'no-such-file.pgn'}: not read"]
    assert "no-such-file.pgn: cannot be read: No such file or directory" in err
    code, _, _ = validate_json(capsys, str(MALFORMED / "trf_binary.trf"), str(MALFORMED / "pgn_latin1.pgn"))
    assert code == 0


def test_human_output(capsys):
    assert main(["validate", str(MALFORMED / "fide_implausible_D.txt"), str(DATA / "tiny.trf")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"{MALFORMED / 'fide_implausible_D.txt'}: fide-list-D: 5 records, 3 players,"
        " 2 quarantined (rating_implausible 2)",
        # Not UTF-8: the encoding read is shown (tiny.trf is Latin-1).
        f"{DATA / 'tiny.trf'}: trf: 10 records, 5 rated games,"
        " 5 quarantined (unplayed 3, unparseable 2) [windows-1252]",
    ]
    assert f"{MALFORMED / 'fide_implausible_D.txt'}: line 5: standard rating 9999 is outside 1000-3000" in err


# -- real files ------------------------------------------------------------------------------------
def realdata(*parts: str) -> str:
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (shared/realdata not mounted)")
    return str(path)


def test_realdata_files(capsys):
    paths = [
        realdata("example1.trf"),
        realdata("fide-lists-2004", "JAN04FRL.TXT"),
        realdata("fide-lists-2013-rapid", "rapid_jan13frl.txt"),
        realdata("fide-lists-2013-rapid", "rapid_feb13frl.txt"),
    ]
    code, result, _ = validate_json(capsys, *paths)
    trf, jan04, jan13, feb13 = result["files"]
    # example1: 284 player records; 970 games played (1002 records with the 32 unplayed); without a
    # registry, the 683 games of players who have no FIDE id are unknown_player.
    assert (trf["records"], trf["players"], trf["games"], trf["quarantined"]) == (1002, 284, 970, {"unplayed": 32})
    assert (jan04["format"], jan04["records"], jan04["players"], jan04["quarantined"]) == (
        "fide-list-F",
        50_458,
        50_458,
        {},
    )
    assert (jan13["format"], jan13["players"], feb13["players"]) == ("fide-list-D", 11_098, 12_468)


@pytest.mark.parametrize("name", ["FWWRC.pgn", "202204southend.pgn", "open-round1-matches-88.pgn"])
def test_realdata_pgn_every_game_rated_or_quarantined(name):
    path = realdata("pgn", name)
    report = report_file(path)
    events = Path(path).read_bytes().count(b"[Event ")
    assert report.records == events == report.games + sum(report.quarantined.values())
    expected = {
        "FWWRC.pgn": (605, {}),
        "202204southend.pgn": (232, {}),
        "open-round1-matches-88.pgn": (53, {"unplayed": 3}),
    }[name]
    assert (report.games, report.quarantined) == expected


def test_a_seed_list_report_names_every_row_a_run_leaves_out(tmp_path: Path):
    """`ratings validate` and a run read a seed list alike (registry.seed_problems): a rating that is no whole
    number, a games_total that cannot be read and a repeated id are named, not only ratings that are no number.
    """
    seed = tmp_path / "seed_list.csv"
    seed.write_text(
        "player_id,rating,games_total\n1,2405,310\n2,abc,12\n3,1800.7,50\n4,2000,x\n1,2300,10\n5,1900.0,40\n"
    )
    report = report_file(str(seed))
    assert (report.format, report.records, report.players) == ("seed-csv", 6, 2)
    assert report.problems == [
        "line 3: rating 'abc' is not a number",
        "line 4: rating '1800.7' is not a whole number",
        "line 5: games_total 'x' is not a number",
        "line 6: player_id 1 is already registered on line 2",
    ]
