"""Byes, forfeits and duplicates as pairing programs write them.

A bye opponent, one FIDE id on two TRF lines, a PGN tag given twice.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.formats import read_dump
from pipeline.formats.byes import BYE_FIRST_BYTES, BYE_LAST_BYTES, BYE_NAME_MAX_BYTES, bye_names
from pipeline.ingest.dumps import read_month
from pipeline.store.object_store import ObjectStore
from pipeline.validate.file_report import report_file
from pipeline.validate.identity import LOCAL_ID_BASE, players_named_in_dumps
from pipeline.validate.split import MonthValidator, reconcile_files
from schemas.quarantine import QUARANTINE_REASONS

MONTH = "2024-03"
BYES = [
    "BYE",
    "Bye",
    "bye",
    "(bye)",
    "-bye-",
    "BYE (1 point)",
    "Bye (½ point)",
    "Half-point bye",
    "Full-point bye",
    "Zero-point bye",
    "full point bye",
    "PAB",
    "Pairing-allocated bye",
    "N.N.",
    "NN",
    "Forfeit",
    "not paired",
    "No opponent",
    "--",
    "spielfrei",
    "Freilos",
    "não emparceirado",
    "Brett nicht besetzt",
]
# Real names that share letters with the spellings, and PGN's other ways of writing nobody ('?', '-', ''), which
# are no byes: a name-only player stays a player; '?' stays an unknown player.
NOT_BYES = [
    "Byers, Tom",
    "Nn, Anh",
    "Bye, Anna",
    "Byers",
    "Bye Anna",
    "Nnamdi, Obi",
    "Pab, Jan",
    "Forfeiter",
    "Notpaired, Ann",
    "Spielfreiheit",
    "?",
    "-",
    "",
]


def pgn_game(white: str, black: str, result: str, round_: int, moves: str = "1. e4 e5 2. Nf3", **tags: str) -> str:
    """One PGN game of the March open (extra tags as given, in order, after the Seven Tag Roster)."""
    header = [
        '[Event "March Open"]',
        '[Site "Town"]',
        '[Date "2024.03.09"]',
        f'[Round "{round_}"]',
        f'[White "{white}"]',
        f'[Black "{black}"]',
        f'[Result "{result}"]',
        *(f'[{name.rstrip("_")} "{value}"]' for name, value in tags.items()),
    ]
    return "\n".join(header) + f"\n\n{moves} {result}\n\n"


def trf_line(rank: int, name: str, fide_id: str, cells: list[str], rating: str = "2000") -> str:
    """A 001 record with the fixed TRF16 columns (rank 5-8, name 15-47, rating 49-52, id 58-68, rounds from 92)."""
    line = f"001 {rank:>4}      {name:<33} {rating:>4} GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  "
    assert len(line) == 91
    return (line + "  ".join(cells)).rstrip()


# A Swiss-Manager-style export: round 1 gives Smith the pairing-allocated bye, round 2 a half-point bye; the
# other games are played between real players, one of them 'Byers, Tom' (a name, never a bye).
BYES_PGN = (
    pgn_game("Byers, Tom", "Nn, Anh", "1-0", 1)
    + pgn_game("Smith, John", "BYE", "1-0", 1, moves="")
    + pgn_game("Nn, Anh", "Smith, John", "1/2-1/2", 2)
    + pgn_game("Byers, Tom", "Half-point bye", "1/2-1/2", 2, moves="")
    + pgn_game("(bye)", "Nn, Anh", "0-1", 3, moves="")
    + pgn_game("Smith, John", "Byers, Tom", "0-1", 3)
    # Black is no name at all: PGN-Standard's proposal for a bye says so in Termination.
    + pgn_game("Doe, Jane", "?", "1-0", 4, moves="", Termination="bye")
)
# The same tag twice: a harmless repeat (same value, once with blanks around it), then a game whose Result and
# White are each given with two values, and a game whose WhiteFideId is.
CONFLICTS_PGN = (
    pgn_game("Byers, Tom", "Nn, Anh", "1-0", 5, Result="1-0", White=" Byers, Tom ")
    + pgn_game("Smith, John", "Nn, Anh", "1-0", 6, Result_="0-1", White="Smyth, Jon")
    + pgn_game("Gamma, Gus", "Delta, Dan", "1/2-1/2", 7, WhiteFideId="4100018", WhiteFideId_="4100026")
)
# Ranks 1 and 4 are the same player (FIDE id 4100018) entered twice: both lines' pairings are quarantined; the game
# between ranks 2 and 3 and rank 5's bye are not touched.
DUP_TRF = "\n".join(
    [
        "012 Spring Open",
        "042 2024/03/02",
        "132" + " " * 88 + "24/03/02  24/03/03",
        trf_line(1, "Alpha, Ann", "4100018", ["   3 w 1", "   2 b 1"]),
        trf_line(2, "Beta, Bob", "4100026", ["   4 w 1", "   1 w 0"]),
        trf_line(3, "Gamma, Gus", "4100034", ["   1 b 0", "   5 w 1"]),
        trf_line(4, "Alpha, Ann", "4100018", ["   2 b 0", "0000 - U"]),
        trf_line(5, "Delta, Dan", "4100042", ["0000 - H", "   3 b 0"]),
    ]
)
# A CSV export of the same kind: players by name (no ids), a bye written as the opponent, and rows with ids.
BYES_CSV = "\n".join(
    [
        "event_id,date,round,white_id,black_id,white_name,black_name,result",
        'spring,2024-03-02,1,,,"Byers, Tom","Nn, Anh",1-0',
        'spring,2024-03-02,1,,,"Smith, John",BYE,1-0',
        'spring,2024-03-02,2,,,Not paired,"Smith, John",0-1',
        'spring,2024-03-02,2,,,"Nn, Anh","Byers, Tom",1/2-1/2',
        # An id identifies a player whatever the name: FIDE has ids registered as 'Bye' (lila#16714).
        'spring,2024-03-02,3,4100018,4100026,"Alpha, Ann",Bye,1-0',
    ]
)


@pytest.mark.parametrize("name", BYES)
def test_bye_spellings_are_byes(name):
    assert bye_names(pl.Series([name, name.upper(), name.lower()])).all()


@pytest.mark.parametrize("name", BYES)
def test_bye_spellings_pass_the_byte_test_readers_run_first(name):
    """The PGN reader runs the pattern only on names whose first and last bytes may be a bye's."""
    for written in (name, name.upper(), name.lower()):
        data = written.encode()
        assert BYE_FIRST_BYTES[data[0]] and BYE_LAST_BYTES[data[-1]] and len(data) <= BYE_NAME_MAX_BYTES
        assert b"," not in data


@pytest.mark.parametrize("name", NOT_BYES)
def test_real_names_and_unknowns_are_no_byes(name):
    assert not bye_names(pl.Series([name], dtype=pl.Utf8)).any()


def test_bye_names_null_and_long_names():
    names = pl.Series([None, "BYE", "Byers-Longname-Bye-Bye, Thomas Alexander", "bye " * 20], dtype=pl.Utf8)
    assert bye_names(names).tolist() == [False, True, False, False]


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    """A landing zone for March 2024: the exports above, and a Parquet export like the CSV."""
    files = {
        "raw/ENG/2024-03/byes.pgn": BYES_PGN,
        "raw/ENG/2024-03/conflicts.pgn": CONFLICTS_PGN,
        "raw/GER/2024-03/spring.trf": DUP_TRF,
        "raw/NOR/2024-03/byes.csv": BYES_CSV,
    }
    for key, text in files.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text(text, encoding="utf-8")
    buffer = io.BytesIO()
    # A week later, so that its games are not copies of the CSV's.
    copy = pl.read_csv(io.StringIO(BYES_CSV), infer_schema=False).with_columns(pl.lit("2024-03-16").alias("date"))
    copy.write_parquet(buffer)
    (tmp_path / "raw/NOR/2024-03/byes-copy.parquet").write_bytes(buffer.getvalue())
    return ObjectStore(str(tmp_path))


@pytest.fixture
def month(store):
    """(raw, games, quarantine, identities) of the month, read and validated as the ingest and validate assets do."""
    raw = read_month(store, MONTH)
    split = MonthValidator(store, [MONTH])(MONTH, raw)
    return raw, split.games, split.quarantine, split.identities


def records_of(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.filter(pl.col("source_file").str.ends_with(name)).sort("source_line")


def test_every_record_is_one_game_or_one_quarantined_record(month):
    raw, games, quarantine, _ = month
    checked = reconcile_files(raw, games, quarantine)
    assert checked["ok"].all() and checked["records"].sum() == raw.height == games.height + quarantine.height
    assert set(quarantine["reason"]) <= set(QUARANTINE_REASONS)


def test_pgn_bye_opponents_are_unplayed_byes(month):
    raw, games, quarantine, identities = month
    read = records_of(raw, "byes.pgn")
    assert read["unplayed"].to_list() == [None, "bye", None, "bye", "bye", None, "bye"]
    byes = records_of(quarantine, "byes.pgn")
    assert byes["reason"].to_list() == ["unplayed"] * 4
    # Played without a move and won: read as a forfeit, but there was nobody to forfeit.
    assert byes["detail"].to_list() == [
        "bye (result 1-0)",
        "bye (result 1/2-1/2)",
        "bye (result 0-1)",
        "bye (result 1-0)",
    ]
    rated = records_of(games, "byes.pgn")
    assert rated.height == 3
    assert (rated["white_id"] >= LOCAL_ID_BASE).all() and (rated["black_id"] >= LOCAL_ID_BASE).all()
    # Nobody named as a bye is identified by name, given a local id or put on the list; the real names are.
    by_name = identities.filter(pl.col("given_id").is_null())
    assert set(by_name["name"]) == {"Byers, Tom", "Nn, Anh", "Smith, John"}
    local = players_named_in_dumps(identities).filter(pl.col("player_id") >= LOCAL_ID_BASE)
    assert sorted(local["name"]) == ["Byers, Tom", "Nn, Anh", "Smith, John"]


def test_csv_and_parquet_bye_opponents_are_unplayed_byes(month):
    raw, games, quarantine, identities = month
    for name in ("byes.csv", "byes-copy.parquet"):
        read = records_of(raw, name)
        assert read["unplayed"].to_list() == [None, "bye", "bye", None, None], name
        unplayed = records_of(quarantine, name)
        assert unplayed["reason"].to_list() == ["unplayed", "unplayed"], name
        assert all(detail.startswith("bye (result ") for detail in unplayed["detail"])
        # The row with ids is a game, whatever its Black is called.
        rated = records_of(games, name)
        assert rated.height == 3 and rated.filter(pl.col("black_id") == 4100026).height == 1, name
    assert not bye_names(identities.filter(pl.col("given_id").is_null())["name"]).any()


def test_one_fide_id_on_two_trf_lines_quarantines_both_lines_games(month):
    raw, games, quarantine, _ = month
    duplicated = records_of(quarantine, "spring.trf").filter(pl.col("reason") == "duplicate_player")
    # Rank 1's two games (lines 4) and rank 4's (line 7: round 1 against 2); each pairing once.
    rounds = duplicated["raw_text"].str.extract(r"^round (\d+):").cast(pl.Int64)
    assert sorted(zip(duplicated["source_line"], rounds, strict=True)) == [(4, 1), (4, 2), (5, 1)]
    assert set(duplicated["detail"]) == {"FIDE id 4100018 is on 001 lines 4 (rank 1) and 7 (rank 4)"}
    # The game between ranks 3 and 5 is rated; rank 4's round-2 bye and rank 5's stay byes.
    rated = records_of(games, "spring.trf")
    assert rated.select("white_id", "black_id", "white_score").rows() == [(4100034, 4100042, 1.0)]
    byes = records_of(quarantine, "spring.trf").filter(pl.col("reason") == "unplayed")
    assert byes.height == 2


def test_trf_dummy_bye_player_pairs_no_game():
    """Some programs pair the odd player against a dummy line ('spielfrei', no id): a bye, not a game."""
    text = "\n".join(
        [
            "012 Club Open",
            "042 2024/03/02",
            trf_line(1, "Alpha, Ann", "4100018", ["   2 w 1"]),
            trf_line(2, "Beta, Bob", "4100026", ["   1 b 0"]),
            trf_line(3, "Gamma, Gus", "4100034", ["   4 w 1"]),
            trf_line(4, "spielfrei", "", ["   3 b 0"], rating=""),
        ]
    )
    records = read_dump(text.encode(), f"GER/{MONTH}/club.trf", "GER", MONTH)
    assert records["parse_error"].null_count() == records.height
    assert records.select("white_id", "black_id", "black_name", "unplayed").sort("white_id").rows() == [
        (4100018, 4100026, "Beta, Bob", None),
        (4100034, None, "spielfrei", "bye"),
    ]


def test_trf_without_duplicate_ids_is_untouched():
    fine = DUP_TRF.replace(trf_line(4, "Alpha, Ann", "4100018", []), trf_line(4, "Epsilon, Eve", "4100050", []))
    assert fine != DUP_TRF
    records = read_dump(fine.encode(), f"GER/{MONTH}/fine.trf", "GER", MONTH)
    assert records["parse_error"].null_count() == records.height


def test_conflicting_pgn_tags_are_quarantined_and_equal_repeats_are_not(month):
    raw, games, quarantine, _ = month
    read = records_of(raw, "conflicts.pgn")
    assert read.height == 3
    rated = records_of(games, "conflicts.pgn")
    assert rated["source_line"].to_list() == [1]  # Result and White repeated with the same values
    conflicts = records_of(quarantine, "conflicts.pgn")
    assert conflicts["reason"].to_list() == ["conflicting_tags", "conflicting_tags"]
    assert conflicts["detail"].to_list() == [
        "White is 'Smith, John' (line 17) and 'Smyth, Jon' (line 21); Result is '1-0' (line 19) and '0-1' (line 20)",
        "WhiteFideId is '4100018' (line 32) and '4100026' (line 33)",
    ]


def test_ratings_validate_reports_them(tmp_path, capsys):
    paths = {}
    for name, text in [("byes.pgn", BYES_PGN), ("conflicts.pgn", CONFLICTS_PGN), ("spring.trf", DUP_TRF)]:
        paths[name] = tmp_path / name
        paths[name].write_text(text, encoding="utf-8")
    byes = report_file(str(paths["byes.pgn"]))
    assert (byes.records, byes.games, byes.quarantined) == (7, 3, {"unplayed": 4})
    conflicts = report_file(str(paths["conflicts.pgn"]))
    assert (conflicts.games, conflicts.quarantined) == (1, {"conflicting_tags": 2})
    assert conflicts.problems == [
        "line 13: conflicting_tags: White is 'Smith, John' (line 17) and 'Smyth, Jon' (line 21); Result is '1-0'"
        " (line 19) and '0-1' (line 20)",
        "line 25: conflicting_tags: WhiteFideId is '4100018' (line 32) and '4100026' (line 33)",
    ]
    spring = report_file(str(paths["spring.trf"]))
    assert (spring.records, spring.games, spring.players) == (6, 1, 5)
    assert spring.quarantined == {"duplicate_player": 3, "unplayed": 2}
    assert spring.problems[0] == "line 4: duplicate_player: FIDE id 4100018 is on 001 lines 4 (rank 1) and 7 (rank 4)"
    assert main(["validate", "--json", *(str(path) for path in paths.values())]) == 0
    out, err = capsys.readouterr()
    by_path = {Path(entry["path"]).name: entry for entry in json.loads(out)["files"]}
    assert by_path["byes.pgn"]["quarantined"] == {"unplayed": 4}
    assert by_path["spring.trf"]["quarantined"] == {"duplicate_player": 3, "unplayed": 2}
    assert by_path["conflicts.pgn"]["quarantined"] == {"conflicting_tags": 2}
    # The problems name the file, the line and the reason.
    assert f"{paths['spring.trf']}: line 5: duplicate_player: FIDE id 4100018 is on 001 lines 4 (rank 1)" in err
    assert f"{paths['conflicts.pgn']}: line 25: conflicting_tags: WhiteFideId is '4100018'" in err
