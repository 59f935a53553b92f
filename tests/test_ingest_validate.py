"""Landing zone -> RawGames / Players, and RawGames -> Games + Quarantine with exact counts per reason."""

from __future__ import annotations

import gzip
import shutil
from datetime import date
from pathlib import Path

import pandera.errors
import polars as pl
import pytest

from pipeline.ingest.dumps import read_file, read_month
from pipeline.ingest.registry import read_players, read_seed_list
from pipeline.store.object_store import ObjectStore
from pipeline.validate.identity import LOCAL_ID_BASE, NAME_KEY, local_id, with_name_keys
from pipeline.validate.split import split_games, split_month
from schemas import QUARANTINE_REASONS, Games, Players, Quarantine, RawGames
from schemas.identity import Identity

DATA = Path(__file__).resolve().parent / "data"
REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
MONTH = "2024-01"

# Expected outcome of the fixture month, file by file (see tests/data and test_formats.py):
#  GER/tiny.trf              10 records: 5 games (one against 9999, an unregistered foreign player: rated
#                            under the id the dump gives), 3 unplayed, 2 unparseable
#  GER/tiny-resubmitted.trf.gz  the same file again (sorts before tiny.trf by name, after it by stem):
#                            its 5 games become duplicates, the rest as above
#  GER/games.csv             11 rows: 4 games (7777 unregistered, rated as written), self_play, result,
#                            3 unparseable (one dated before its league's stated start), rating_implausible,
#                            unplayed
#  ENG/games.pgn             13 games: 4 games, unknown_player (ambiguous name), 3 unplayed, result,
#                            future (dated in February), 2 unparseable, rating_implausible
#  ENG/garbage.trf, ENG/notes.docx: one unparseable record each
EXPECTED_REASONS = {
    "unparseable": 2 + 2 + 3 + 2 + 1 + 1,
    "unplayed": 3 + 3 + 1 + 3,
    "unknown_player": 1,
    "self_play": 1,
    "result_out_of_domain": 1 + 1,
    "future": 1,
    "duplicate": 5,
    "rating_implausible": 1 + 1,
}
EXPECTED_GAMES = 5 + 4 + 4
EXPECTED_RAW = 10 + 10 + 11 + 13 + 1 + 1


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ObjectStore:
    """A landing zone built from the fixtures, including a resubmitted (gzipped) copy of the TRF."""
    root = tmp_path_factory.mktemp("store")
    placements = {
        "raw/GER/2024-01/tiny.trf": "tiny.trf",
        "raw/GER/2024-01/games.csv": "games.csv",
        "raw/GER/2023-12/games.csv": "games.csv",  # another month: must not be read
        "raw/ENG/2024-01/games.pgn": "games.pgn",
        "raw/ENG/2024-01/garbage.trf": "garbage.trf",
        "raw/ENG/2024-01/notes.docx": "notes.docx",
        "raw/players/2023-12/players.csv": "players_2023-12.csv",
        "raw/players/2023-12/seed_list.csv": "seed_list.csv",
        "raw/players/2024-01/players.csv": "players_2024-01.csv",
        "raw/players/2024-02/players.csv": "players_2024-02.csv",
    }
    for key, fixture in placements.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / fixture, root / key)
    (root / "raw/GER/2024-01/tiny-resubmitted.trf.gz").write_bytes(gzip.compress((DATA / "tiny.trf").read_bytes()))
    return ObjectStore(str(root))


@pytest.fixture(scope="module")
def month_split(store):
    raw = read_month(store, MONTH)
    players = read_players(store, MONTH)
    games, quarantine = split_games(raw, players, MONTH)
    return raw, games, quarantine


# -- ingest ----------------------------------------------------------------------------------------
def test_read_month_reads_every_federation_of_the_month(month_split):
    raw, _, _ = month_split
    RawGames.validate(raw)
    assert raw.columns == list(RawGames.to_schema().columns)
    assert raw.height == EXPECTED_RAW
    assert raw["record_id"].is_unique().all()
    assert sorted(raw["federation"].unique().to_list()) == ["ENG", "GER"]
    assert raw["month"].unique().to_list() == [MONTH]
    assert raw.group_by("source_file").len().sort("source_file").rows() == [
        ("ENG/2024-01/games.pgn", 13),
        ("ENG/2024-01/garbage.trf", 1),
        ("ENG/2024-01/notes.docx", 1),
        ("GER/2024-01/games.csv", 11),
        ("GER/2024-01/tiny-resubmitted.trf.gz", 10),
        ("GER/2024-01/tiny.trf", 10),
    ]


def test_read_month_without_dumps(store):
    empty = read_month(store, "2030-01")
    assert empty.height == 0 and empty.columns == list(RawGames.to_schema().columns)


def test_read_players_registered_from_the_first_folder_named_by_the_newest(store):
    players = read_players(store, MONTH)
    Players.validate(players)
    assert players.height == 9  # 8 in 2023-12, one new in 2024-01; 2024-02 is in the future
    alpha = players.filter(pl.col("player_id") == 1001).row(0, named=True)
    # 2024-01's players.csv renames her: the newest folder names her from 2024-01, registered since 2023-12.
    assert (alpha["name"], alpha["registered"], alpha["title"]) == ("Alpha-Renamed, Anna", "2023-12", "GM")
    december = read_players(store, "2023-12").filter(pl.col("player_id") == 1001)
    assert december["name"].to_list() == ["Alpha, Anna"]
    assert players["player_id"].to_list()[:2] == [1001, 1002]  # in the order of first registration
    assert players.filter(pl.col("player_id") == 1005)["registered"].to_list() == ["2024-01"]
    assert players.filter(pl.col("player_id") == 1004)["sex"].to_list() == ["F"]  # 'w' in the file
    assert players.filter(pl.col("player_id") == 2002)["birth_year"].to_list() == [None]
    assert read_players(store, "2023-11").height == 0
    assert 7777 in read_players(store, "2024-02")["player_id"].to_list()


def test_read_seed_list(store, tmp_path):
    seed = read_seed_list(store)
    assert seed.columns == ["player_id", "rating", "games_total", "birth_year", "ever_2400", "k"]
    # The file has no k column: no published K, the rule set decides.
    assert seed.rows() == [
        (1001, 2410, 120, 1990, True, None),
        (1002, 2100, 80, 1991, None, None),
        (1003, None, 0, 1992, False, None),
    ]
    assert read_seed_list(ObjectStore(str(tmp_path))) is None


def test_seed_list_k_is_read_as_published():
    from pipeline.ingest.registry import registry_table, seed_rows

    seed = seed_rows(registry_table(b"player_id,rating,games_total,k\n1,2390,,10\n2,1500,3,\n"))
    assert seed.select("player_id", "games_total", "k").rows() == [(1, None, 10), (2, 3, None)]


def test_read_month_accepts_names_the_store_would_not_write(tmp_path):
    folder = tmp_path / "raw" / "NED" / MONTH
    folder.mkdir(parents=True)
    shutil.copyfile(DATA / "games.pgn", folder / "Open A (final).pgn")
    raw = read_month(ObjectStore(str(tmp_path)), MONTH)
    assert raw.height == 13 and raw["source_file"][0] == f"NED/{MONTH}/Open A (final).pgn"


# -- validation ------------------------------------------------------------------------------------
def test_split_counts_per_reason(month_split):
    raw, games, quarantine = month_split
    Games.validate(games)
    Quarantine.validate(quarantine)
    assert games.columns == list(Games.to_schema().columns)
    assert quarantine.columns == list(Quarantine.to_schema().columns)
    counts = dict(quarantine.group_by("reason").len().rows())
    assert counts == EXPECTED_REASONS
    assert set(counts) <= set(QUARANTINE_REASONS)
    assert games.height == EXPECTED_GAMES


def test_reconciliation_every_raw_record_lands_once(month_split):
    raw, games, quarantine = month_split
    assert raw.height == games.height + quarantine.height
    landed = pl.concat([games["game_id"], quarantine["record_id"]])
    assert landed.is_unique().all() and landed.sort().equals(raw["record_id"].sort())


def test_game_columns(month_split):
    _, games, _ = month_split
    by_source = {(row["source_file"], row["source_line"], row["round"]): row for row in games.iter_rows(named=True)}
    name_matched = by_source[("ENG/2024-01/games.pgn", 19, 1)]
    assert (name_matched["white_id"], name_matched["black_id"], name_matched["white_score"]) == (2001, 2002, 0.5)
    assert (name_matched["white_rating_used"], name_matched["black_rating_used"]) == (1950, 1875)
    assert name_matched["time_control"] == "classical"  # no TimeControl tag: the default
    no_event = by_source[("GER/2024-01/games.csv", 12, None)]
    assert no_event["event_start"] == date(2024, 1, 17)  # no event start: the game date
    assert no_event["event_id"] == "GER/2024-01/games" and no_event["time_control"] == "rapid"
    trf = by_source[("GER/2024-01/tiny.trf", 11, 1)]
    assert (trf["white_id"], trf["black_id"], trf["white_score"], trf["date"]) == (1001, 1004, 1.0, date(2024, 1, 6))
    assert trf["game_id"] != by_source.get(("GER/2024-01/tiny-resubmitted.trf.gz", 11, 1), {}).get("game_id")
    blitz = by_source[("ENG/2024-01/games.pgn", 127, 1)]
    assert (blitz["time_control"], blitz["tc_base_seconds"], blitz["tc_increment_seconds"]) == ("blitz", 180, 2)


def test_quarantine_details(month_split):
    _, _, quarantine = month_split
    detail = {
        (row["source_file"].rsplit("/", 1)[1], row["source_line"]): (row["reason"], row["detail"])
        for row in quarantine.iter_rows(named=True)
        if row["reason"] != "unplayed"
    }
    assert detail[("games.csv", 3)] == ("self_play", "white and black are both player 1005")
    assert detail[("games.csv", 5)] == ("result_out_of_domain", "result '2-0' is not 1-0, 0-1 or 1/2-1/2")
    # Dated 30 December in a league its row says started on 5 January: one of the two dates is wrong.
    assert detail[("games.csv", 7)] == (
        "unparseable",
        "game dated 2023-12-30 (date) is before its event's start 2024-01-05 (event_start): one of the two dates is "
        "wrong",
    )
    assert detail[("games.pgn", 79)] == (
        "future",
        "game dated 2024-02-03, after 2024-01: the month its dump was reported for",
    )
    assert detail[("games.csv", 10)] == ("rating_implausible", "white rating 3500 is outside 1000-3000")
    assert detail[("games.pgn", 32)] == ("unknown_player", "white has no id and name 'Smith, John' matches 2 players")
    assert detail[("garbage.trf", 1)] == ("unparseable", "binary content, not a text dump")
    duplicates = quarantine.filter(pl.col("reason") == "duplicate")
    assert duplicates["source_file"].unique().to_list() == ["GER/2024-01/tiny-resubmitted.trf.gz"]
    assert duplicates["detail"].str.starts_with("same game as GER/2024-01/tiny.trf:").all()
    unplayed = quarantine.filter(pl.col("reason") == "unplayed")["detail"].to_list()
    assert "forfeit (result -+)" in unplayed and "bye (result H)" in unplayed
    assert (quarantine["raw_text"] != "").all()


def test_checks_apply_in_order():
    """A record failing several checks gets the first reason only."""
    raw = read_file((DATA / "games.csv").read_bytes(), "GER/2024-01/games.csv", "GER", MONTH)
    games, quarantine = split_games(raw, read_players(ObjectStore("/nonexistent-store"), MONTH), MONTH)
    reasons = dict(quarantine.select("source_line", "reason").rows())
    assert reasons[3] == "self_play" and reasons[5] == "result_out_of_domain" and reasons[7] == "unparseable"
    # '+-' is a forfeit before it is an unknown result; '12a' is unreadable before anything else.
    assert reasons[11] == "unplayed" and reasons[9] == "unparseable"
    assert dict(quarantine.group_by("reason").len().rows()) == {
        "unparseable": 3,
        "unplayed": 1,
        "self_play": 1,
        "result_out_of_domain": 1,
        "rating_implausible": 1,
    }


def test_players_without_id_are_matched_by_name_whatever_the_spacing():
    """Registered names and game names are compared after normalising blanks, also around the comma."""
    csv = (
        b"event_id,date,round,white_id,black_id,white_name,black_name,result\n"
        b'e,2024-01-10,1,,1002,"  Kovacs ,Anna ",,1-0\n'  # one registered Kovacs, Anna: matched
        b'e,2024-01-10,2,,1002,"Smith,  John",,0-1\n'  # two registered Smith, John: ambiguous
        b'e,2024-01-10,3,,1002,", Nobody",,1-0\n'  # starts with a comma: matches nobody
        b'e,2024-01-10,4,1001,,,"Lee,Min",1/2-1/2\n'  # black matched by name
    )
    raw = read_file(csv, "GER/2024-01/names.csv", "GER", MONTH)
    players = pl.DataFrame(
        {
            "player_id": [1001, 1002, 1003, 1004, 1005],
            "name": ["Kovacs,   Anna", "Lee, Min", "Smith, John", "Smith ,John", "Kovacsova, Anna"],
            "registered": [MONTH] * 5,
        }
    )
    games, quarantine = split_games(raw, players, MONTH)
    assert sorted(games.filter(pl.col("round") != 3).select("round", "white_id", "black_id").rows()) == [
        (1, 1001, 1002),
        (4, 1001, 1002),
    ]
    details = dict(quarantine.select("source_line", "detail").rows())
    assert details == {3: "white has no id and name 'Smith,  John' matches 2 players"}
    # ', Nobody' matches nobody: a new player, rated under a local id made from the name.
    (nobody,) = games.filter(pl.col("round") == 3)["white_id"].to_list()
    assert nobody >= LOCAL_ID_BASE and nobody == local_id(pl.Series([",   Nobody"]))[0]
    # A run's registry carries its names' keys, made once (MonthValidator): the same split.
    keyed = with_name_keys(players)
    assert keyed[NAME_KEY].to_list() == ["Kovacs, Anna", "Lee, Min", "Smith, John", "Smith, John", "Kovacsova, Anna"]
    keyed_games, keyed_quarantine = split_games(raw, keyed, MONTH)
    assert keyed_games.equals(games) and keyed_quarantine.equals(quarantine)


def test_empty_month():
    empty_raw = read_file(b"", "GER/2024-01/empty.csv", "GER", MONTH).clear()
    games, quarantine = split_games(empty_raw, read_players(ObjectStore("/nonexistent-store"), MONTH), MONTH)
    assert games.height == 0 and quarantine.height == 0
    Games.validate(games)
    Quarantine.validate(quarantine)


def test_a_game_dated_outside_its_events_stated_dates_is_unparseable_naming_both():
    """A game's day before its event's stated start (TRF 042, PGN EventDate, a table's event_start) or after its
    stated end (TRF 052) was rated on that day; a date known in part is refused only when its whole period is outside.
    """
    trf = [
        "042 2024/01/10",
        "052 2024/01/12",
        "132" + " " * 88 + "23/01/10  24/01/11  24/01/14",  # round 1's year mistyped, round 3 after the end
        *[
            f"001 {rank:>4}      {name:<33} 2000 GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  " + "  ".join(cells)
            for rank, name, fide_id, cells in (
                ("1", "One,A", "1001", ["   2 w 1", "   2 b =", "   2 w 0"]),
                ("2", "Two,B", "1002", ["   1 b 0", "   1 w =", "   1 b 1"]),
            )
        ],
    ]
    table = "event_id,event_start,date,white_id,black_id,result\ne,2024-01-10,2023-01-10,1003,1004,1-0\n"

    def pgn(day: str, event_day: str | None, black: int) -> str:
        event_date = f'[EventDate "{event_day}"]\n' if event_day else ""
        return (
            f'[Event "open"]\n[Date "{day}"]\n{event_date}[WhiteFideId "1005"]\n[BlackFideId "{black}"]\n'
            '[Result "1-0"]\n\n1. e4 e5 1-0\n\n'
        )

    games = [
        pgn("2023.01.10", "2024.01.10", 1006),
        pgn("2023.??.??", "2024.01.10", 1007),  # the whole year before the event: refused
        pgn("2024.??.??", "2024.01.10", 1008),  # may be of the event: rated
        pgn("2024.01.05", None, 1009),  # without EventDate the event starts on its earliest whole date ...
        pgn("2023.12.??", None, 1010),  # ... which a game of the month before may precede: rated
    ]
    raw = pl.concat(
        [
            read_file("\n".join(trf).encode(), "GER/2024-01/open.trf", "GER", MONTH),
            read_file(table.encode(), "GER/2024-01/games.csv", "GER", MONTH),
            read_file(games[0].encode(), "GER/2024-01/a.pgn", "GER", MONTH),
            read_file("".join(games[1:3]).encode(), "GER/2024-01/b.pgn", "GER", MONTH),
            read_file("".join(games[3:]).encode(), "GER/2024-01/c.pgn", "GER", MONTH),
        ]
    )
    games_kept, quarantine = split_games(raw, read_players(ObjectStore("/nonexistent-store"), MONTH), MONTH)
    wrong = ": one of the two dates is wrong"
    assert sorted(quarantine.select("source_file", "reason", "detail").rows()) == [
        (
            "GER/2024-01/a.pgn",
            "unparseable",
            f"game dated 2023-01-10 (Date) is before its event's start 2024-01-10 (EventDate){wrong}",
        ),
        (
            "GER/2024-01/b.pgn",
            "unparseable",
            "game dated in part, between 2023-01-01 and 2023-12-31 (Date) is before its event's start 2024-01-10 "
            f"(EventDate){wrong}",
        ),
        (
            "GER/2024-01/games.csv",
            "unparseable",
            f"game dated 2023-01-10 (date) is before its event's start 2024-01-10 (event_start){wrong}",
        ),
        (
            "GER/2024-01/open.trf",
            "unparseable",
            f"game dated 2023-01-10 (tag 132) is before its event's start 2024-01-10 (tag 042){wrong}",
        ),
        (
            "GER/2024-01/open.trf",
            "unparseable",
            f"game dated 2024-01-14 (tag 132) is after its event's end 2024-01-12 (tag 052){wrong}",
        ),
    ]
    assert games_kept.sort("source_file", "date").select("source_file", "date").rows() == [
        ("GER/2024-01/b.pgn", None),
        ("GER/2024-01/c.pgn", None),
        ("GER/2024-01/c.pgn", date(2024, 1, 5)),
        ("GER/2024-01/open.trf", date(2024, 1, 11)),
    ]


# -- real files ------------------------------------------------------------------------------------
def test_realdata_reconciles(tmp_path):
    """All real dumps in one month: registry = every FIDE id seen, so only genuine problems remain."""
    if not REALDATA.exists():
        pytest.skip(f"{REALDATA} is absent (shared/realdata not mounted)")
    folder = tmp_path / "raw" / "XXX" / "2005-07"
    folder.mkdir(parents=True)
    shutil.copyfile(REALDATA / "example1.trf", folder / "example1.trf")
    for pgn in sorted((REALDATA / "pgn").glob("*.pgn")):
        shutil.copyfile(pgn, folder / pgn.name)
    raw = read_month(ObjectStore(str(tmp_path)), "2005-07")
    ids = pl.concat([raw["white_id"], raw["black_id"]]).drop_nulls().unique()
    players = pl.DataFrame({"player_id": ids}).with_columns(
        pl.lit("?").alias("name"),
        pl.lit("XXX").alias("federation"),
        pl.lit(None, pl.Utf8).alias("sex"),
        pl.lit(None, pl.Int32).alias("birth_year"),
        pl.lit(None, pl.Utf8).alias("title"),
        pl.lit("2005-01").alias("registered"),
    )
    split = split_month(raw, players, "2005-07")
    games, quarantine = split.games, split.quarantine
    Games.validate(games)
    Quarantine.validate(quarantine)
    assert raw.height == games.height + quarantine.height == 1002 + 605 + 232 + 56
    counts = dict(quarantine.group_by("reason").len().rows())
    # example1: 970 games played (32 unplayed): 287 between two FIDE ids, the other 683 involve a player
    # without an id, rated under a local id made from the name (as `ratings validate` counts them).
    assert games.height == 970 and games["source_file"].unique().to_list() == ["XXX/2005-07/example1.trf"]
    assert games.filter((pl.col("white_id") < LOCAL_ID_BASE) & (pl.col("black_id") < LOCAL_ID_BASE)).height == 287
    assert counts["unplayed"] == 32 + 3 and "unknown_player" not in counts
    # The 2022, 2024 and 2026 PGN games are dated after July 2005 (the Olympiad's unplayed games were caught first).
    assert counts["future"] == 605 + 232 + 53
    # The identity report names every player known by name only.
    identities = split.identities
    Identity.validate(identities)
    by_name = identities.filter((pl.col("status") == "new_name") & pl.col("first_seen").str.contains("example1"))
    assert by_name["player_id"].min() >= LOCAL_ID_BASE and by_name["given_id"].null_count() == by_name.height


# -- generated landing zone ------------------------------------------------------------------------
def test_generated_months_reconcile(tiny_landing_zone):
    """The synthetic generator's dumps read cleanly; its dirty records land in the expected reasons."""
    from pipeline.generator.dumps import DUPLICATE_SUFFIX

    store = ObjectStore(str(tiny_landing_zone.parent))
    for month in ["2024-01", "2024-02", "2024-03", "2024-04"]:
        raw = read_month(store, month)
        games, quarantine = split_games(raw, read_players(store, month), month)
        Games.validate(games)
        Quarantine.validate(quarantine)
        assert raw.height == games.height + quarantine.height > 0
        assert raw["parse_error"].null_count() == raw.height  # the generator writes well-formed files
        duplicates = quarantine.filter(pl.col("reason") == "duplicate")["source_file"]
        assert duplicates.str.contains(DUPLICATE_SUFFIX, literal=True).all()


# -- duplicates across months, reconciliation per file, schema failures ----------------------------
def test_a_tournament_reported_again_in_a_later_month_is_a_duplicate(tmp_path):
    from pipeline.validate.duplicates import game_keys

    for key in ["raw/GER/2024-01/tiny.trf", "raw/GER/2024-02/tiny-sent-again.trf"]:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / "tiny.trf", tmp_path / key)
    for month in ["2023-12", "2024-01"]:
        (tmp_path / f"raw/players/{month}").mkdir(parents=True)
        shutil.copyfile(DATA / f"players_{month}.csv", tmp_path / f"raw/players/{month}/players.csv")
    store = ObjectStore(str(tmp_path))
    january, _ = split_games(read_month(store, "2024-01"), read_players(store, "2024-01"), "2024-01")
    assert january.height == 5
    raw = read_month(store, "2024-02")
    games, quarantine = split_games(raw, read_players(store, "2024-02"), "2024-02", seen_keys=game_keys(january))
    assert games.height == 0 and raw.height == quarantine.height
    duplicates = quarantine.filter(pl.col("reason") == "duplicate").sort("source_line")
    assert duplicates.height == 5
    assert duplicates["detail"][0] == "same game as 2024-01 GER/2024-01/tiny.trf:11"
    # Without the earlier months' keys the same tournament is a report a month late: within FIDE's window, rated.
    late, alone = split_games(raw, read_players(store, "2024-02"), "2024-02")
    assert alone.filter(pl.col("reason") == "duplicate").height == 0 and late.height == 5


def test_reconcile_per_file(month_split):
    from pipeline.validate.split import reconcile_files

    raw, games, quarantine = month_split
    per_file = reconcile_files(raw, games, quarantine)
    assert per_file.columns == ["source_file", "records", "games", "quarantined", "ok"]
    assert per_file["ok"].all() and per_file["records"].sum() == EXPECTED_RAW
    assert per_file.filter(pl.col("source_file") == "GER/2024-01/tiny.trf").select(
        "records", "games", "quarantined"
    ).row(0) == (10, 5, 5)
    lost = reconcile_files(raw, games.filter(pl.col("source_file") != "ENG/2024-01/games.pgn"), quarantine)
    assert lost.filter(~pl.col("ok"))["source_file"].to_list() == ["ENG/2024-01/games.pgn"]
    # Same counts but a record counted twice and another missing: still not ok.
    swapped = pl.concat([quarantine.slice(0, 1), quarantine.slice(2)]).vstack(quarantine.slice(0, 1))
    checked = reconcile_files(raw, games, swapped)
    assert not checked.filter(pl.col("source_file") == quarantine["source_file"][1])["ok"].item()


def test_the_games_model_names_the_failing_rows_and_checks(month_split):
    _, games, _ = month_split
    Games.validate(games, lazy=True)
    broken = games.with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(pl.col("white_id")).otherwise(pl.col("black_id")).alias("black_id"),
        pl.when(pl.int_range(pl.len()) == 5).then(pl.lit(0.25)).otherwise(pl.col("white_score")).alias("white_score"),
    )
    with pytest.raises(pandera.errors.SchemaErrors) as raised:
        Games.validate(broken, lazy=True)
    failures = raised.value.failure_cases
    assert sorted(failures["index"].drop_nulls().unique().to_list()) == [2, 5]
    assert {"no_self_play", "isin([0.0, 0.5, 1.0])"} <= set(failures["check"].to_list())


def test_without_registry_ids_are_known_and_the_month_is_the_files_own():
    raw = read_file((DATA / "games.csv").read_bytes(), "GER/2024-01/games.csv", "GER", MONTH)
    games, quarantine = split_games(
        raw, read_players(ObjectStore("/nonexistent-store"), MONTH), MONTH, check_month=False
    )
    counts = dict(quarantine.group_by("reason").len().rows())
    # 7777 is no longer unknown.
    assert counts == {
        "unparseable": 3,
        "unplayed": 1,
        "self_play": 1,
        "result_out_of_domain": 1,
        "rating_implausible": 1,
    }
    assert games.height == 4


# -- FIDE rating lists as registry and seed list ---------------------------------------------------
LIST_F = (
    "\n".join(
        [
            "",
            "    1001  Alpha, Anna                       g   GER  2410    3  01.01.90    w  ",
            "    3001  Gamma, Gert                           AUT  2205    0  15.06.75    i  ",
            "    3002  Delta, Dana                       wf  SUI  2100    0  30.12.03    wi ",
        ]
    )
    + "\n\x1a"
)


def test_fide_list_files_register_players_and_seed_the_first_list(tmp_path):
    folder = tmp_path / "raw/players/2023-12"
    folder.mkdir(parents=True)
    (folder / "JAN04FRL.TXT.gz").write_bytes(gzip.compress(LIST_F.encode("latin-1")))
    (tmp_path / "raw/players/2024-01").mkdir(parents=True)
    shutil.copyfile(DATA / "players_2024-01.csv", tmp_path / "raw/players/2024-01/players.csv")
    store = ObjectStore(str(tmp_path))
    players = read_players(store, MONTH)
    Players.validate(players)
    rows = {row["player_id"]: row for row in players.iter_rows(named=True)}
    assert (rows[1001]["title"], rows[1001]["sex"], rows[1001]["birth_year"], rows[1001]["registered"]) == (
        "GM",
        "F",
        1990,
        "2023-12",
    )
    assert (rows[3001]["sex"], rows[3002]["title"], rows[3002]["birth_year"]) == ("M", "WFM", 2003)
    assert 1005 in rows  # from the 2024-01 players.csv
    seed = read_seed_list(store)
    assert seed.select("player_id", "rating", "games_total", "ever_2400", "k", "inactive").rows() == [
        (1001, 2410, None, None, None, False),
        (3001, 2205, None, None, None, True),
        (3002, 2100, None, None, None, True),
    ]
    from pipeline.engine.period import normalize_list

    assert normalize_list(seed).height == 3


def test_realdata_fide_list_as_seed_list(tmp_path):
    source = REALDATA / "fide-lists-2013-rapid" / "rapid_jan13frl.txt"
    if not source.exists():
        pytest.skip(f"{source} is absent (shared/realdata not mounted)")
    (tmp_path / "raw/players/2013-01").mkdir(parents=True)
    shutil.copyfile(source, tmp_path / "raw/players/2013-01" / source.name)
    store = ObjectStore(str(tmp_path))
    seed = read_seed_list(store, list_type="rapid")
    assert seed.height == 11_098 and seed["rating"].null_count() == 0 and seed["k"].unique().to_list() == [20]
    assert read_seed_list(store) is None, "a rapid list seeds the rapid chain, not the standard one"
    assert read_players(store, "2013-01").height == 11_098, "its players are registered all the same"


def test_registry_problems_name_the_rows_that_register_nobody():
    from pipeline.ingest.registry import registry_problems, registry_table

    table = registry_table(b'player_id,name\n1001,"A, A"\n,"No Id"\nx12,"Bad"\n1001,"Again"\n')
    assert registry_problems(table).select("source_line", "reason", "detail").rows() == [
        (3, "unparseable", "player_id (missing) is not a positive number"),
        (4, "unparseable", "player_id x12 is not a positive number"),
        (5, "duplicate", "player_id 1001 is already registered on line 2"),
    ]


# -- identities ------------------------------------------------------------------------------------
def test_identity_report_says_how_each_player_was_identified():
    """Ids identify players, registered or not; a name alone is matched against the registry and the dumps."""
    csv = (
        b"event_id,date,round,white_id,black_id,white_name,black_name,result\n"
        b'e,2024-01-10,1,1001,5005,"Alpha, Anna","Visitor, Vera",1-0\n'  # 5005: not registered, a new player
        b'e,2024-01-10,2,1002,1010,"Beta, Bernd","Alpha, Anna",0-1\n'  # 1010 unregistered, but Alpha is 1001
        b'e,2024-01-10,3,,1001,"Visitor,Vera",,1/2-1/2\n'  # matched by the dumps' own pair
        b'e,2024-01-10,4,,1002,"Beta, Bernd",,1-0\n'  # matched by the registry
        b'e,2024-01-10,5,,1002,"Local, Luis",,0-1\n'  # nobody: a local id
        b'e,2024-01-10,6,,1002,"Twin, Tom",,0-1\n'  # two registered Twins: ambiguous
        b"e,2024-01-10,7,,1002,?,,0-1\n"  # no name at all
    )
    raw = read_file(csv, "GER/2024-01/ids.csv", "GER", MONTH)
    players = pl.DataFrame(
        {
            "player_id": [1001, 1002, 1003, 1004],
            "name": ["Alpha, Anna", "Beta, Bernd", "Twin, Tom", "Twin,Tom"],
            "registered": [MONTH] * 4,
        }
    )
    split = split_month(raw, players, MONTH)
    rated = {row[0]: row[1:] for row in split.games.select("round", "white_id", "black_id").iter_rows()}
    assert rated[1] == (1001, 5005) and rated[3] == (5005, 1001)
    assert rated[5][0] >= LOCAL_ID_BASE and rated[5][0] == local_id(pl.Series(["Local, Luis"]))[0]
    problems = dict(split.quarantine.select("source_line", "detail").rows())
    assert problems[3] == "black id 1010 is not registered, and 'Alpha, Anna' is registered as 1001 (a mistyped id?)"
    assert problems[7] == "white has no id and name 'Twin, Tom' matches 2 players"
    assert problems[8] == "white has neither id nor name (name as written: '?')"
    Identity.validate(split.identities)
    statuses = {(row["status"], row["name"]): row for row in split.identities.iter_rows(named=True)}
    assert set(split.identities["status"]) == {
        "new",
        "id_mismatch",
        "matched_by_name",
        "new_name",
        "ambiguous",
        "unmatched",
    }
    assert statuses[("new", "Visitor, Vera")]["given_id"] == 5005
    assert statuses[("matched_by_name", "Visitor,Vera")]["player_id"] == 5005
    assert statuses[("matched_by_name", "Beta, Bernd")]["player_id"] == 1002
    assert statuses[("ambiguous", "Twin, Tom")]["candidates"] == 2
    assert statuses[("id_mismatch", "Alpha, Anna")]["first_seen"] == "GER/2024-01/ids.csv:3"
    # Registered ids are not listed: Alpha (1001) and Beta (1002) appear only through their odd records.
    assert ("new", "Alpha, Anna") not in statuses


# -- a run's months in order, and what each month reports (pipeline/validate/split.py, month_figures.py)

UNDATED_PGN = (
    '[Event "Club league"]\n[Round "3"]\n[White "Alpha, Anna"]\n[Black "Beta, Bernd"]\n[Result "1-0"]\n'
    '[WhiteFideId "1001"]\n[BlackFideId "1002"]\n\n1. e4 e5 1-0\n\n'
)


def test_month_validator_remembers_undated_games_for_a_year_from_the_store_and_the_run(tmp_path):
    from pipeline.store.monthly import table_key
    from pipeline.validate.duplicates import UNDATED_WINDOW_MONTHS
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    months = ["2023-01", "2024-01", "2024-02", "2025-01"]
    for month in months:
        store.write_text(UNDATED_PGN, f"raw/GER/{month}/league-{month}.pgn")
    # January 2023 was validated by an earlier run: its undated game is read from the store.
    first, _, _ = split_month(read_month(store, "2023-01"), read_players(store, "2023-01"), "2023-01")
    store.write_parquet(first, table_key(["games"], "2023-01"))
    assert UNDATED_WINDOW_MONTHS == 12

    validate = MonthValidator(store, months[1:])
    reasons = {}
    for month in months[1:]:
        games, quarantine, identities = validate(month, read_month(store, month))
        reasons[month] = (games.height, quarantine["detail"].to_list())
        assert identities["status"].to_list() == ["new", "new"]  # no registry: the ids are rated as written
    assert reasons == {
        "2024-01": (0, ["same game as 2023-01 GER/2023-01/league-2023-01.pgn:1"]),
        # More than a year after January 2023 (January 2024's copy was a duplicate, not a game): a game again.
        "2024-02": (1, []),
        "2025-01": (0, ["same game as 2024-02 GER/2024-02/league-2024-02.pgn:1"]),
    }


def test_month_validator_takes_a_dated_tournament_sent_again_in_a_later_month_for_a_duplicate(tmp_path):
    """tiny.trf's games are dated (January 2024): the same file sent again for February's list is a late report by
    the calendar, and was rated twice until the validator remembered the dated games of earlier months too, within
    their reporting window; from the run and from the store alike.
    """
    from pipeline.store.monthly import table_key
    from pipeline.validate.split import MonthValidator

    for key in ["raw/GER/2024-01/tiny.trf", "raw/GER/2024-02/tiny-sent-again.trf", "raw/GER/2024-06/tiny-2.trf"]:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / "tiny.trf", tmp_path / key)
    store = ObjectStore(str(tmp_path))
    months = ["2024-01", "2024-02", "2024-06"]
    validate = MonthValidator(store, months)
    splits = {month: validate(month, read_month(store, month)) for month in months}
    assert splits["2024-01"].games.height == 5
    february = splits["2024-02"]
    copies = february.quarantine.filter(pl.col("reason") == "duplicate")
    assert february.games.height == 0 and copies.height == 5
    assert copies["detail"].str.starts_with("same game as 2024-01 GER/2024-01/tiny.trf:").all()
    # Past the third list after the tournament, a copy is refused by the calendar, whatever was rated before.
    june = splits["2024-06"]
    assert june.games.height == 0 and june.quarantine.filter(pl.col("reason") == "too_late").height == 5
    # A run of February alone finds January's games in the store.
    store.write_parquet(splits["2024-01"].games, table_key(["games"], "2024-01"))
    alone = MonthValidator(store, ["2024-02"])("2024-02", read_month(store, "2024-02"))
    assert alone.games.height == 0 and alone.quarantine.filter(pl.col("reason") == "duplicate").height == 5


def test_a_tournament_of_two_months_sent_whole_again_in_its_second_is_rated_once(tmp_path):
    """A club championship played 10 January - 7 February, its PGN sent after January and again, whole, after
    February: the tournament ends in February, so its copy is on time there, yet January's two games were rated in
    January and are duplicates in February (they were rated twice: only a late report's games were looked up).
    """
    from pipeline.validate.split import MonthValidator
    from tests.landing import pgn_game

    store = ObjectStore(str(tmp_path))
    january = pgn_game("Club Championship", "2024.01.10", 3001, 3002, "1-0") + pgn_game(
        "Club Championship", "2024.01.24", 3003, 3004, "1-0"
    )
    store.write_text(january, "raw/CLB/2024-01/club.pgn")
    february = january + pgn_game("Club Championship", "2024.02.07", 3001, 3003, "1-0")
    store.write_text(february, "raw/CLB/2024-02/club.pgn")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    assert validate("2024-01", read_month(store, "2024-01")).games.height == 2
    split = validate("2024-02", read_month(store, "2024-02"))
    assert split.games.select("white_id", "black_id").rows() == [(3001, 3003)]
    assert split.quarantine.select("reason", "detail").rows() == [
        ("duplicate", "same game as 2024-01 CLB/2024-01/club.pgn:1"),
        ("duplicate", "same game as 2024-01 CLB/2024-01/club.pgn:14"),
    ]


def _undated_trf(cells: dict[int, list[str]]) -> str:
    """A TRF16 of 10-14 January 2024 without round dates (no tag 132): players 4001-4004, TRF16's columns."""
    players = [
        (
            f"001 {rank:>4}      {f'Player,{rank}':<33} 2000 GER {4000 + rank:>11} 1990/01/01  0.0 {rank:>4}  "
            + "  ".join(rounds)
        ).rstrip()
        for rank, rounds in cells.items()
    ]
    return "\n".join(["012 Winter Open", "042 2024/01/10", "052 2024/01/14", *players]) + "\n"


# Round 1: 4001-4002 1-0, 4003-4004 0-1; round 2: 4003-4001 1/2, 4002-4004 1/2.
WINTER = {
    1: ["   2 w 1", "   3 b ="],
    2: ["   1 b 0", "   4 w ="],
    3: ["   4 w 0", "   1 w ="],
    4: ["   3 b 1", "   2 b ="],
}


def test_an_undated_file_filed_again_unchanged_in_a_later_month_is_rated_once(tmp_path):
    """A TRF without round dates and a CSV without event_id or date are keyed across months by their event id,
    which is their file's key: it held the month folder ('GER/2024-01/winter'), so the same file in February's
    folder was another event and its games were rated twice (8 games for 4). Now keyed by its name in the folder.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    csv = "white_id,black_id,result,month,round\n8001,8002,1-0,2024-01,1\n8003,8004,1/2-1/2,2024-01,1\n"
    for month in ["2024-01", "2024-02"]:
        store.write_text(_undated_trf(WINTER), f"raw/GER/{month}/winter.trf")
        store.write_text(csv, f"raw/GER/{month}/club.csv")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    january = validate("2024-01", read_month(store, "2024-01"))
    assert january.games.height == 6 and january.games["date"].null_count() == 6
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games.is_empty() and set(february.quarantine["reason"]) == {"duplicate"}
    seen = february.quarantine.select(pl.col("detail").str.extract(r"^same game as (\S+ [^:]+)")).to_series()
    assert sorted(seen.to_list()) == ["2024-01 GER/2024-01/club.csv"] * 2 + ["2024-01 GER/2024-01/winter.trf"] * 4


def test_another_tournament_of_the_same_file_name_in_a_later_month_is_rated(tmp_path):
    """Undated games are keyed by file name, players, round and result: another tournament filed under the same
    name with other pairings is no copy, and of a file whose games differ in part only the same games are copies;
    the game it gives another result is no other game (its round is known): it conflicts with January's.
    """
    from pipeline.validate.split import MonthValidator

    # Round 1: 4001-4003 1-0, 4002-4004 0-1; round 2: 4004-4001 1/2, 4003-4002 1-0.
    other = {
        1: ["   3 w 1", "   4 b ="],
        2: ["   4 w 0", "   3 b 0"],
        3: ["   1 b 0", "   2 w 1"],
        4: ["   2 b 1", "   1 w ="],
    }
    # The same pairings as January's, but 4003-4004 of round 1 won by White.
    changed = {**WINTER, 3: ["   4 w 1", "   1 w ="], 4: ["   3 b 0", "   2 b ="]}
    store = ObjectStore(str(tmp_path))
    store.write_text(_undated_trf(WINTER), "raw/GER/2024-01/winter.trf")
    store.write_text(_undated_trf(other), "raw/GER/2024-02/winter.trf")
    store.write_text(_undated_trf(changed), "raw/GER/2024-03/winter.trf")
    validate = MonthValidator(store, ["2024-01", "2024-02", "2024-03"])
    assert validate("2024-01", read_month(store, "2024-01")).games.height == 4
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games.height == 4 and february.quarantine.is_empty()
    march = validate("2024-03", read_month(store, "2024-03"))
    assert march.games.is_empty()
    assert sorted(march.quarantine["reason"].to_list()) == ["conflicting_result"] + ["duplicate"] * 3


def test_the_rows_of_a_table_file_naming_no_tournament_meet_the_calendar_each_by_its_own_day(tmp_path):
    """A CSV without event_id is a list of games, not a tournament: a row dated 2022 is too late for January 2024's
    folder even beside a row of January 2024 (the file as one tournament ended in 2024 and let it through); with an
    event_id the file's rows are one tournament, ending on its last day.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    games = "white_id,black_id,result,date\n1,2,1-0,2024-01-05\n3,4,1-0,2022-06-10\n"
    store.write_text(games, "raw/GER/2024-01/games.csv")
    league = "white_id,black_id,result,date,event_id\n5,6,1-0,2024-01-05,league\n7,8,1-0,2022-06-10,league\n"
    store.write_text(league, "raw/GER/2024-01/league.csv")
    split = MonthValidator(store, ["2024-01"])("2024-01", read_month(store, "2024-01"))
    reasons = dict(zip(split.quarantine["source_file"], split.quarantine["reason"], strict=True))
    assert reasons == {"GER/2024-01/games.csv": "too_late"}
    assert sorted(split.games["source_file"].to_list()) == ["GER/2024-01/games.csv", *["GER/2024-01/league.csv"] * 2]


def test_month_validator_names_players_registered_by_the_month_only(tmp_path):
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    csv = 'event_id,white_id,black_id,white_name,black_name,result,date\nleague,,,"Alpha, Anna","Beta, Bernd",1-0,{}\n'
    store.write_text(csv.format("2024-01-10"), "raw/GER/2024-01/league.csv")
    store.write_text(csv.format("2024-02-10"), "raw/GER/2024-02/league.csv")
    registry = 'player_id,name\n1001,"Alpha, Anna"\n1002,"Beta, Bernd"\n'
    store.write_text(registry, "raw/players/2024-02/players.csv")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    january = validate("2024-01", read_month(store, "2024-01"))
    february = validate("2024-02", read_month(store, "2024-02"))
    # January: nobody registered yet, so the names become local ids; February: the registry's ids.
    assert (january.games["white_id"] >= LOCAL_ID_BASE).all()
    assert february.games.select("white_id", "black_id").row(0) == (1001, 1002)


def test_raw_figures_count_records_unreadable_ones_federations_and_files(month_split):
    from pipeline.validate.month_figures import raw_figures

    raw, _, _ = month_split
    figures = raw_figures(raw)
    assert (figures["records"], figures["federations"], figures["files"]) == (EXPECTED_RAW, 2, 6)
    assert figures["unreadable_records"] == raw.filter(pl.col("parse_error").is_not_null()).height > 0
    assert raw_figures(raw.head(0)) == {
        "records": 0,
        "unreadable_records": 0,
        "federations": 0,
        "files": 0,
    }


def test_quarantine_figures_count_by_reason_and_file_and_warn_when_most_is_quarantined(month_split):
    from pipeline.validate.month_figures import MAX_FILES_LISTED, quarantine_figures

    raw, games, quarantine = month_split
    figures = quarantine_figures(raw.height, quarantine)
    assert figures.quarantined == raw.height - games.height == sum(EXPECTED_REASONS.values())
    assert figures.by_reason == EXPECTED_REASONS and list(figures.by_reason)[:3] == [
        "unparseable",  # 11
        "unplayed",
        "duplicate",
    ]
    assert figures.share == pytest.approx(33 / 46)
    assert figures.warning == "33 of 46 records (72%) quarantined; most: unparseable 11, unplayed 10, duplicate 5"
    assert sum(figures.by_file.values()) == 33 and list(figures.by_file.values()) == sorted(
        figures.by_file.values(), reverse=True
    )
    # At most half quarantined: no warning; no raw record: a share of 0.
    assert quarantine_figures(66, quarantine).warning == ""
    assert quarantine_figures(0, quarantine.head(0)) == (0, 0.0, {}, {}, "")
    many = (
        quarantine.head(1)
        .select(pl.all().repeat_by(30).explode())
        .with_columns(source_file=pl.format("GER/2024-01/f{}.trf", pl.int_range(30).cast(pl.Utf8).str.zfill(2)))
    )
    listed = quarantine_figures(30, many).by_file
    assert len(listed) == MAX_FILES_LISTED and list(listed)[0] == "GER/2024-01/f00.trf"


def test_identity_statuses_count_players_per_status_by_name():
    from pipeline.validate.month_figures import identity_statuses

    identities = pl.DataFrame({"status": ["new", "matched_by_name", "new", "ambiguous"], "name": list("abcd")})
    assert list(identity_statuses(identities).items()) == [("ambiguous", 1), ("matched_by_name", 1), ("new", 2)]
    assert identity_statuses(identities.head(0)) == {}


def test_column_lineage_names_only_columns_the_schemas_have():
    import schemas
    from schemas.lineage import COLUMN_LINEAGE

    models = {
        "raw_games": schemas.RawGames,
        "games": schemas.Games,
        "quarantine": schemas.Quarantine,
        "rating_list": schemas.RatingList,
        "rated_games": schemas.RatedGames,
        "crosstable": schemas.Crosstable,
    }
    columns = {table: set(model.to_schema().columns) for table, model in models.items()}
    for table, lineage in COLUMN_LINEAGE.items():
        assert set(lineage) <= columns[table], table
        for sources in lineage.values():
            assert all(column in columns[upstream] for upstream, column in sources), (table, sources)
    assert set(COLUMN_LINEAGE["games"]) == columns["games"]  # every validated column says where it comes from


def test_validation_figures_say_per_table_what_the_ui_shows_of_a_month():
    from pipeline.validate.month_figures import Counts, validation_figures

    quarantine = pl.DataFrame({"reason": ["unplayed", "unplayed", "duplicate"], "source_file": ["a", "b", "b"]})
    identities = pl.DataFrame({"status": ["new", "matched_by_name", "new"]})
    figures = validation_figures(4, pl.DataFrame({"game_id": [1]}), quarantine, identities)
    assert figures["games"] == {"games": 1, "raw_records": 4}
    assert figures["quarantine"]["quarantined"] == 3 and figures["quarantine"]["quarantined_share"] == 0.75
    assert str(figures["quarantine"]["warning"]).startswith("3 of 4 records (75%) quarantined")
    assert figures["quarantine"]["by_reason"] == Counts("reason", "records", {"unplayed": 2, "duplicate": 1})
    assert figures["quarantine"]["reason/duplicate"] == 1
    assert figures["identity"] == {"players": 3, "status/matched_by_name": 1, "status/new": 2}
    assert "warning" not in validation_figures(8, pl.DataFrame(), quarantine, identities)["quarantine"]


def test_raw_figures_count_no_refused_folder_as_a_federation(tmp_path: Path) -> None:
    from pipeline.validate.month_figures import raw_figures
    from tests.landing import pgn_game, write_raw

    write_raw(
        tmp_path,
        {
            "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 4600003, 4600011, "1-0"),
            "bad folder!/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 4600003, 4600011, "1-0"),
        },
    )
    raw = read_month(ObjectStore(str(tmp_path)), "2024-01")
    # The misplaced file is one record of the month (quarantined), its folder no federation read.
    assert set(raw["federation"]) == {"GER", "bad folder!"}
    assert (raw_figures(raw)["federations"], raw_figures(raw)["files"]) == (1, 2)


def test_the_validate_steps_metadata_shows_registry_cells_and_file_names_as_written(tmp_path: Path) -> None:
    """The registry's problems are Markdown in the UI: a cell's image or link is shown as text, never fetched; a
    file name's bidi override is shown escaped in the quarantine's by_file table.
    """
    import dagster as dg

    from assets.definitions import build_resources
    from assets.ingest import build_ingest_assets, build_landing_asset
    from assets.partitions import monthly_partitions
    from assets.validate import build_validation_assets
    from pipeline.text import markdown_text
    from tests.landing import pgn_game, write_raw

    image = "![](http://127.0.0.1:8999/fed.png)"
    write_raw(
        tmp_path,
        {
            "GER/2024-01/open\u202e.pgn": pgn_game("Open", "2024.01.10", 4600003, 4600003, "1-0"),
            "players/2024-01/seed_list.csv": f"player_id,rating\n4600003,{image}\n",
        },
    )
    partitions = monthly_partitions("2024-01", "2024-01")
    result = dg.materialize(
        [build_landing_asset(partitions), *build_ingest_assets(partitions), *build_validation_assets(partitions)],
        resources=build_resources(str(tmp_path)),
        partition_key="2024-01",
    )
    metadata = {
        event.asset_key.to_user_string(): event.step_materialization_data.materialization.metadata
        for event in result.get_asset_materialization_events()
    }
    problems = metadata["games"]["registry_problems"].value
    assert problems == (
        "- WARNING: raw/players/2024-01/seed\\_list.csv line 2: rating '\\!\\[\\]\\(http\\://127.0.0.1:8999/fed.png\\)'"
        " is not a number: player 4600003 is left out of the seed list"
    )
    assert image not in problems and markdown_text(image) in problems
    [row] = metadata["quarantine"]["by_file"].value.records
    assert row.data == {"file": "GER/2024-01/open\\u202e.pgn", "records": 1}


def test_a_failed_validations_sample_is_a_code_block_its_values_cannot_close() -> None:
    import dagster as dg

    from assets.metadata import validate
    from schemas import empty_frame

    row = {"record_id": 1, "month": "2024-01", "federation": "GER", "source_file": "GER/2024-01/a.pgn"}
    row |= {"source_line": 1, "reason": "```![](x.png)", "detail": "", "raw_text": ""}
    frame = pl.concat([empty_frame(Quarantine), pl.DataFrame([row], schema=empty_frame(Quarantine).schema)])
    with pytest.raises(dg.Failure) as failure:
        validate(Quarantine, frame, "quarantine 2024-01")
    sample = failure.value.metadata["failure_cases_sample"].value
    # Fenced by more backticks than any run inside, so the value's ``` is text in the block, its image never fetched.
    assert sample.startswith("````\n") and sample.endswith("\n````") and sample.count("````") == 2
    assert "```![](x.png)" in sample


# -- the same game twice within a month and across months (pipeline/validate/duplicates.py) ------------------------


def _split_files(files: dict[str, str], month: str = MONTH) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(games, quarantine) of the files (key under raw/ -> text) as one month's dumps, without a registry."""
    from pipeline.formats import read_dumps

    dumps = [(text.encode(), key, key.split("/")[0]) for key, text in files.items()]
    return split_games(
        pl.concat(read_dumps(dumps, month)), read_players(ObjectStore("/nonexistent-store"), month), month
    )


def _trf_row(rank: int, player: int, *rounds: str) -> str:
    """A TRF16 player line: rank, FIDE id `player`, and its round cells ('   2 w 1')."""
    return f"001 {rank:>4}      {f'Player,{rank}':<33} 2000 GER {player:>11} 1990/01/01  0.0 {rank:>4}  " + "  ".join(
        rounds
    )


def _with_round(pgn: str, round_tag: str | None, clock: str = "5400+30") -> str:
    """tests.landing.pgn_game's text with another Round tag (None: none) and clock."""
    text = pgn.replace('[Round "1"]\n', f'[Round "{round_tag}"]\n' if round_tag else "")
    return text.replace('[TimeControl "5400+30"]', f'[TimeControl "{clock}"]')


def test_a_resubmission_of_a_game_refused_for_its_stated_rating_is_the_game_rated():
    """open.pgn states WhiteElo 21000 (rating_implausible) and open-resubmitted.pgn puts it right: the resubmission
    was quarantined as a duplicate of the refused copy and the game was not rated at all. A copy points only to a
    record that is rated; a refused copy after the rated one is still its duplicate.
    """
    from tests.landing import pgn_game

    def game(elo: int) -> str:
        return pgn_game("Open", "2024.01.13", 1001, 1002, "1-0", start="2024.01.13", elos=(elo, None))

    games, quarantine = _split_files(
        {"GER/2024-01/open.pgn": game(21000), "GER/2024-01/open-resubmitted.pgn": game(2100)}
    )
    assert games.select("source_file", "white_rating_used").rows() == [("GER/2024-01/open-resubmitted.pgn", 2100)]
    assert quarantine.select("source_file", "reason").rows() == [("GER/2024-01/open.pgn", "rating_implausible")]
    games, quarantine = _split_files({"GER/2024-01/a.pgn": game(2100), "GER/2024-01/b.pgn": game(21000)})
    assert games["source_file"].to_list() == ["GER/2024-01/a.pgn"]
    assert quarantine.select("source_file", "reason", "detail").rows() == [
        ("GER/2024-01/b.pgn", "duplicate", "same game as GER/2024-01/a.pgn:1")
    ]


def test_an_undated_table_event_id_with_a_hash_is_compared_whole_across_months(tmp_path):
    """'Spring Rapid #1' in January and 'Autumn Blitz #1' in February were compared by '1' (the text after the '#',
    which is a PGN id's event name after its dump key only): February's game was quarantined as January's.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    header = "event_id,round,white_id,black_id,result\n"
    store.write_text(header + "Spring Rapid #1,1,1001,1002,1-0\n", "raw/GER/2024-01/jan.csv")
    store.write_text(header + "Autumn Blitz #1,1,1001,1002,1-0\n", "raw/GER/2024-02/feb.csv")
    store.write_text(header + "Spring Rapid #1,1,1001,1002,1-0\n", "raw/GER/2024-03/mar.csv")
    months = ["2024-01", "2024-02", "2024-03"]
    validate = MonthValidator(store, months)
    splits = {month: validate(month, read_month(store, month)) for month in months}
    assert [splits[month].games.height for month in months] == [1, 1, 0]
    assert splits["2024-03"].quarantine["detail"].to_list() == ["same game as 2024-01 GER/2024-01/jan.csv:2"]


def test_the_games_of_one_pgn_that_differ_are_separate_games_and_identical_ones_copies():
    """A knockout match's games 1.1 and 1.3 (both round 1, same colours, both drawn) and a four-game match without a
    Round tag (colours alternating, all drawn) shared their duplicate key: games 1.3, 3 and 4 were quarantined. The
    records differ (Round, Date), so they are separate games; a game written twice is a copy, and a TRF's round 1 is
    still the same game as a PGN's '1.1'.
    """
    from tests.landing import pgn_game

    ko = "".join(
        _with_round(pgn_game("KO Cup", f"2024.01.1{i}", *pair, "1/2-1/2", start="2024.01.10"), f"1.{i}")
        for i, pair in enumerate([(1001, 1002), (1002, 1001), (1001, 1002), (1002, 1001)], start=1)
    )
    match = "".join(
        _with_round(pgn_game("Training match", f"2024.01.1{5 + i}", *pair, "1/2-1/2"), None)
        for i, pair in enumerate([(1003, 1004), (1004, 1003)] * 2)
    )
    twice = pgn_game("Club", "2024.01.20", 1005, 1006, "1-0") * 2
    # The same game again with a Round tag, the copy adding tags an export adds (ECO, PlyCount): still a copy.
    game = _with_round(pgn_game("Open", "2024.01.21", 1007, 1008, "1-0"), "3")
    annotated = game + game.replace('[Round "3"]', '[Round "3"]\n[ECO "C20"]\n[PlyCount "7"]', 1)
    games, quarantine = _split_files(
        {
            "GER/2024-01/ko.pgn": ko,
            "GER/2024-01/match.pgn": match,
            "GER/2024-01/club.pgn": twice,
            "GER/2024-01/open.pgn": annotated,
        }
    )
    assert games.group_by("source_file").len().sort("source_file").rows() == [
        ("GER/2024-01/club.pgn", 1),
        ("GER/2024-01/ko.pgn", 4),
        ("GER/2024-01/match.pgn", 4),
        ("GER/2024-01/open.pgn", 1),
    ]
    assert quarantine.select("source_file", "reason").rows() == [
        ("GER/2024-01/club.pgn", "duplicate"),
        ("GER/2024-01/open.pgn", "duplicate"),
    ]
    assert quarantine["detail"][0] == "same game as GER/2024-01/club.pgn:1"
    assert quarantine["detail"][1].startswith("same game as GER/2024-01/open.pgn:1")
    trf = (
        "012 Cup\n042 2024/01/10\n132"
        + " " * 88
        + "24/01/10\n"
        + _trf_row(1, 1001, "   2 w =")
        + "\n"
        + _trf_row(2, 1002, "   1 b =")
        + "\n"
    )
    games, quarantine = _split_files(
        {"GER/2024-01/cup.trf": trf, "GER/2024-01/cup.pgn": ko.split("\n\n[Event")[0] + "\n\n"}
    )
    assert games["source_file"].to_list() == ["GER/2024-01/cup.pgn"]
    assert quarantine.select("source_file", "reason").rows() == [("GER/2024-01/cup.trf", "duplicate")]


def test_a_pgn_game_whose_tags_repeat_an_earlier_one_without_a_round_says_why_it_is_a_copy():
    """A four-game match on one day without a Round tag, games 1 and 3 with the same tags: game 3 was quarantined as
    a duplicate with no word of why, and the month's per-file warning left the PGN out. Its detail and the warning
    now say it cannot be told from a copy and which tag to add, as a table file's; colours alternating do not make
    a PGN's identical records separate games (the both-colours rule is a table file's).
    """
    from pipeline.validate.month_figures import file_warnings
    from tests.landing import pgn_game

    def match(day: str) -> str:
        games = [(1001, 1002, "1-0"), (1002, 1001, "1/2-1/2"), (1001, 1002, "1-0"), (1002, 1001, "0-1")]
        return "".join(_with_round(pgn_game("Club match", day, *game), None) for game in games)

    games, quarantine = _split_files({"GER/2024-01/match.pgn": match("2024.01.10")})
    assert games.height == 3
    assert quarantine.select("source_line", "reason", "detail").rows() == [
        (
            25,
            "duplicate",
            "same game as GER/2024-01/match.pgn:1: the file repeats this game's tags on the same day and gives no "
            "round, so a second game of the same players cannot be told from a copy; add a Round tag to have such "
            "games rated",
        )
    ]
    assert file_warnings(quarantine) == [
        "GER/2024-01/match.pgn: 1 game(s) repeat an earlier game's tags in the file and are quarantined as "
        "duplicate: without a round a second game of the same players cannot be told from a copy; add a Round tag "
        "to have them rated"
    ]
    _, quarantine = _split_files({"GER/2024-01/match.pgn": match("????.??.??")})
    assert quarantine["detail"].str.ends_with("add a Round or Date tag to have such games rated").to_list() == [True]
    assert file_warnings(quarantine)[0].endswith(
        "without a round or date a second game of the same players cannot be told from a copy; add a Round or Date "
        "tag to have them rated"
    )


def test_the_result_is_part_of_what_identifies_a_game_and_the_list_is_not():
    """Two export files of one day's games of the same two players without rounds (a: 1-0 then 0-1; b: the same 0-1
    then a draw) were matched by position when the result was out of the key: a's 0-1 taken for b's first game, and
    b's draw quarantined as a correction of it. A copy that adds a time_control column was a second game on the
    rapid list. The result is part of the key again (README's choice) and the list is not.
    """
    from tests.landing import pgn_game

    def casual(site: str, result: str) -> str:
        game = _with_round(pgn_game("Casual blitz", "2024.01.10", 1001, 1002, result), None, clock="180+2")
        return game.replace('[Site "Berlin"]', f'[Site "{site}"]')

    games, quarantine = _split_files(
        {
            "GER/2024-01/a-export.pgn": casual("aaa", "1-0") + casual("bbb", "0-1"),
            "GER/2024-01/b-export.pgn": casual("bbb", "0-1") + casual("ccc", "1/2-1/2"),
        }
    )
    assert games.select("source_file", "white_score").rows() == [
        ("GER/2024-01/a-export.pgn", 1.0),
        ("GER/2024-01/a-export.pgn", 0.0),
        ("GER/2024-01/b-export.pgn", 0.5),
    ]
    assert quarantine.select("source_file", "source_line", "reason", "detail").rows() == [
        ("GER/2024-01/b-export.pgn", 1, "duplicate", "same game as GER/2024-01/a-export.pgn:13")
    ]
    header = "event_id,date,round,white_id,black_id,result"
    games, quarantine = _split_files(
        {
            "GER/2024-01/open.csv": f"{header}\nRapid Open,2024-01-05,1,1001,1002,1-0\n",
            "GER/2024-01/open-copy.csv": f"{header},time_control\nRapid Open,2024-01-05,1,1001,1002,1-0,rapid\n",
        }
    )
    assert games["source_file"].to_list() == ["GER/2024-01/open.csv"]
    assert quarantine.select("source_file", "reason", "detail").rows() == [
        ("GER/2024-01/open-copy.csv", "duplicate", "same game as GER/2024-01/open.csv:2")
    ]
    rows = "white_id,black_id,result\n1001,1002,1-0\n1001,1002,0-1\n1001,1002,1-0\n"
    games, quarantine = _split_files({"GER/2024-01/club.csv": rows})
    assert games["white_score"].to_list() == [1.0, 0.0] and quarantine["reason"].to_list() == ["duplicate"]


# -- one round of one pairing given two results (conflicting_result) ---------------------------------------------------


def _dated_trf(cells: dict[int, list[str]], event: str = "Spring Open") -> str:
    """A TRF16 of players 5001-5004 starting 6 January 2024, one round a day (tag 132), cells by rank."""
    dates = "".join(f"  24/01/{day:02d}" for day in range(6, 6 + len(next(iter(cells.values())))))
    rows = [_trf_row(rank, 5000 + rank, *rounds) for rank, rounds in cells.items()]
    return "\n".join([f"012 {event}", "042 2024/01/06", "132" + " " * 85 + dates, *rows]) + "\n"


def _rank_line(trf: str, rank: int) -> int:
    """The 1-based line of a TRF's player line of `rank`."""
    return next(n for n, text in enumerate(trf.splitlines(), start=1) if text.startswith(f"001 {rank:>4} "))


# Round 1: 5001-5002 1-0, 5003-5004 1/2; round 2: 5003-5001 0-1, 5002-5004 1-0.
SPRING = {
    1: ["   2 w 1", "   3 b 1"],
    2: ["   1 b 0", "   4 w 1"],
    3: ["   4 w =", "   1 w 0"],
    4: ["   3 b =", "   2 b 0"],
}
# The same file with round 1's 5003-5004 won by White, as a tournament director puts a result right.
SPRING_CORRECTED = {**SPRING, 3: ["   4 w 1", "   1 w 0"], 4: ["   3 b 0", "   2 b 0"]}


def test_a_trf_sent_again_in_its_month_with_one_result_changed_rates_neither_record_of_that_game():
    """open.trf and open-corrected.trf of one tournament differ in one result: the other games' copies were
    duplicates, but the changed game was rated twice (5003 and 5004 each played round 1 twice, with opposite
    results). One pairing of one round is one game: both its records are conflicting_result, each naming the other;
    a third copy of either result conflicts too, and a copy with the colours reversed is the same game.
    """
    from pipeline.validate.month_figures import file_warnings

    games, quarantine = _split_files(
        {"GER/2024-01/open.trf": _dated_trf(SPRING), "GER/2024-01/open-corrected.trf": _dated_trf(SPRING_CORRECTED)}
    )
    assert games.height == 3 and set(games["source_file"]) == {"GER/2024-01/open.trf"}
    line = _rank_line(_dated_trf(SPRING), 3)  # 5003-5004 of round 1, from the lower rank's line
    conflicts = quarantine.filter(pl.col("reason") == "conflicting_result").sort("source_file")
    assert conflicts.select("source_file", "source_line").rows() == [
        ("GER/2024-01/open-corrected.trf", line),
        ("GER/2024-01/open.trf", line),
    ]
    assert (
        quarantine.filter(pl.col("reason") == "duplicate")["source_file"].to_list()
        == ["GER/2024-01/open-corrected.trf"] * 3
    )
    assert conflicts["detail"].to_list() == [
        f"round 1 of these players is also reported at GER/2024-01/open.trf:{line} as 1/2-1/2: the files give this "
        "game different results (or colours) and which is the correction is not known, so none is rated; keep one "
        "file (replace the tournament's file in its month folder, remove the other) and run again",
        f"round 1 of these players is also reported at GER/2024-01/open-corrected.trf:{line} as 1-0: the files give "
        "this game different results (or colours) and which is the correction is not known, so none is rated; keep "
        "one file (replace the tournament's file in its month folder, remove the other) and run again",
    ]
    # The month's per-file warnings name both files, as the fix is a file's.
    assert file_warnings(quarantine) == [
        f"GER/2024-01/{name}: 1 game(s) are given another result (or colours) by another file of the month and are "
        "quarantined as conflicting_result, as are that file's: keep one file (replace the tournament's file in its "
        "month folder, remove the other) and run again"
        for name in ["open-corrected.trf", "open.trf"]
    ]
    # A copy of the original as well: the game's three records conflict, the copy named as such.
    games, quarantine = _split_files(
        {
            "GER/2024-01/open.trf": _dated_trf(SPRING),
            "GER/2024-01/open-again.trf": _dated_trf(SPRING),
            "GER/2024-01/open-corrected.trf": _dated_trf(SPRING_CORRECTED),
        }
    )
    conflicts = quarantine.filter(pl.col("reason") == "conflicting_result").sort("source_file")
    assert conflicts["source_file"].to_list() == [
        "GER/2024-01/open-again.trf",
        "GER/2024-01/open-corrected.trf",
        "GER/2024-01/open.trf",
    ]
    assert f"open.trf:{line} as 1/2-1/2 (a copy of this record)" in conflicts["detail"][0]
    assert games.height == 3 and quarantine.filter(pl.col("reason") == "duplicate").height == 6
    # Round 1's 5001-5002 sent again with the colours reversed (and so White's result): one pairing, two accounts.
    swapped = {**SPRING, 1: ["   2 b 1", "   3 b 1"], 2: ["   1 w 0", "   4 w 1"]}
    games, quarantine = _split_files(
        {"GER/2024-01/open.trf": _dated_trf(SPRING), "GER/2024-01/open-corrected.trf": _dated_trf(swapped)}
    )
    conflicts = quarantine.filter(pl.col("reason") == "conflicting_result").sort("source_file")
    assert conflicts["source_line"].to_list() == [_rank_line(_dated_trf(SPRING), 1)] * 2
    assert conflicts["raw_text"].str.starts_with("round 1: 1 [   2 ").all()
    assert " as 1-0 with colours reversed: " in conflicts["detail"][0]
    assert games.height == 3 and quarantine.height == 5


def test_a_trf_sent_again_in_a_later_month_with_one_result_changed_conflicts_with_the_rated_game(tmp_path):
    """January's open.trf rated 5003-5004 drawn; February's folder receives the tournament again (a late report)
    with that game won by White: the copies were duplicates and the changed game was rated on February's list too.
    It is conflicting_result, naming January's game and where the file is put right; January's game stays rated.
    """
    from pipeline.validate.month_figures import file_warnings
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    store.write_text(_dated_trf(SPRING), "raw/GER/2024-01/open.trf")
    store.write_text(_dated_trf(SPRING_CORRECTED), "raw/GER/2024-02/open-corrected.trf")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    january = validate("2024-01", read_month(store, "2024-01"))
    assert january.games.height == 4
    rated = january.games.filter((pl.col("white_id") == 5003) & (pl.col("black_id") == 5004)).row(0, named=True)
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games.is_empty()
    assert sorted(february.quarantine["reason"].to_list()) == ["conflicting_result"] + ["duplicate"] * 3
    conflict = february.quarantine.filter(pl.col("reason") == "conflicting_result").row(0, named=True)
    assert conflict["source_line"] == rated["source_line"] == _rank_line(_dated_trf(SPRING), 3)
    assert conflict["detail"] == (
        f"round 1 of these players was rated in 2024-01 from GER/2024-01/open.trf:{rated['source_line']} as "
        "1/2-1/2: the stored lists rated that result; to correct it, replace the tournament's file in its own month "
        "folder (GER/2024-01/) and run again (`recalculation: forward` then carries the correction into the next "
        "list) rather than send a second file"
    )
    assert file_warnings(february.quarantine) == [
        "GER/2024-02/open-corrected.trf: 1 game(s) are given another result (or colours) than an earlier month rated "
        "them with and are quarantined as conflicting_result: a result is corrected by replacing the tournament's file "
        "in its own month folder, not by sending a second file"
    ]


def test_games_a_round_does_not_tell_apart_are_still_rated_each():
    """What the round cannot identify stays rated: a match's games without a Round tag on one day (same players,
    different results), in one file or exported to two, and a rapid and a blitz event starting the same day that
    pair the same players in round 3.
    """
    from tests.landing import pgn_game

    match = [_with_round(pgn_game("Club match", "2024.01.10", 1001, 1002, result), None) for result in ["1-0", "0-1"]]
    games, quarantine = _split_files({"GER/2024-01/match.pgn": "".join(match)})
    assert games["white_score"].to_list() == [1.0, 0.0] and quarantine.is_empty()
    games, quarantine = _split_files({"GER/2024-01/game-1.pgn": match[0], "GER/2024-01/game-2.pgn": match[1]})
    assert games["white_score"].to_list() == [1.0, 0.0] and quarantine.is_empty()

    def side_event(name: str, clock: str, result: str) -> str:
        game = pgn_game(name, "2024.01.13", 1001, 1002, result, start="2024.01.13")
        return _with_round(game, "3", clock=clock)

    games, quarantine = _split_files(
        {
            "GER/2024-01/rapid.pgn": side_event("Saturday Rapid", "900+10", "1-0"),
            "GER/2024-01/blitz.pgn": side_event("Saturday Blitz", "180+2", "0-1"),
        }
    )
    assert quarantine.is_empty()
    assert games.sort("time_control").select("time_control", "white_score").rows() == [("blitz", 0.0), ("rapid", 1.0)]


def _one_game(event: str, day: str, result: str, *, start: str | None = None, round_tag: str = "1") -> str:
    """A PGN of one game of 1001 (White) and 1002 in `event`, without a TimeControl tag (no class stated)."""
    from tests.landing import pgn_game

    game = _with_round(pgn_game(event, day, 1001, 1002, result, start=start), round_tag)
    return game.replace('[TimeControl "5400+30"]\n', "")


def test_the_same_pairing_and_round_in_two_events_sharing_no_game_is_two_games_rated():
    """Two events pairing the same players in the same round on one day, with different results, were quarantined as
    conflicting_result: two undated events of the month (both on its first day), a rapid and a blitz event of one
    day without clocks, two events starting the same day. One pairing of one round of one EVENT is one game: records
    of other event ids whose files share no other game are two games, both rated. The same event id is one game,
    whatever the files are called; so is a game a third record copies (its event then is the game's).
    """
    from tests.landing import pgn_game

    cases = [
        ("club.pgn", "Club Championship", "winter.pgn", "Winter Cup", "????.??.??", None, "1"),
        ("rapid.pgn", "Saturday Rapid", "blitz.pgn", "Saturday Blitz", "2024.01.13", "2024.01.13", "3"),
        ("a.pgn", "Event A", "b.pgn", "Event B", "2024.01.13", "2024.01.13", "1"),
    ]
    for file, event, other_file, other_event, day, start, rnd in cases:
        files = {
            f"GER/2024-01/{file}": _one_game(event, day, "1-0", start=start, round_tag=rnd),
            f"GER/2024-01/{other_file}": _one_game(other_event, day, "0-1", start=start, round_tag=rnd),
        }
        games, quarantine = _split_files(files)
        assert quarantine.is_empty(), (event, quarantine.select("reason", "detail").rows())
        assert sorted(games["white_score"].to_list()) == [0.0, 1.0]
        # The same event sent in a second file with the result changed is one game given two results.
        files[f"GER/2024-01/{other_file}"] = _one_game(event, day, "0-1", start=start, round_tag=rnd)
        games, quarantine = _split_files(files)
        assert games.is_empty() and quarantine["reason"].to_list() == ["conflicting_result"] * 2
    # A copy of open.trf's 5003-5004 alone, in an event of another name: the game it copies conflicts, and so does it.
    lone = pgn_game("Printemps", "2024.01.06", 5003, 5004, "1/2-1/2", start="2024.01.06")
    games, quarantine = _split_files(
        {
            "GER/2024-01/open.trf": _dated_trf(SPRING),
            "GER/2024-01/open-corrected.trf": _dated_trf(SPRING_CORRECTED),
            "FRA/2024-01/lone.pgn": lone,
        }
    )
    conflicts = quarantine.filter(pl.col("reason") == "conflicting_result").sort("source_file")
    assert conflicts["source_file"].to_list() == [
        "FRA/2024-01/lone.pgn",
        "GER/2024-01/open-corrected.trf",
        "GER/2024-01/open.trf",
    ]
    assert "GER/2024-01/open-corrected.trf:" in conflicts["detail"][0]
    assert games.height == 3


def test_a_later_month_s_game_of_another_event_on_a_rated_pairing_s_day_and_round_is_rated(tmp_path):
    """January rated round 1 of 1001-1002 in the Club Championship; February's folder receives the Winter Cup late,
    whose round 1 on that day paired them too, with another result: it was conflicting_result. Another event id, and
    a file sharing no game with January's, is another game; the Club Championship's file sent again under another
    name with that result changed still conflicts, by its event's name, with January's game alone (the Winter Cup's is
    another event's, so the earlier game is known).
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    store.write_text(_one_game("Club Championship", "2024.01.13", "1-0"), "raw/GER/2024-01/club.pgn")
    store.write_text(_one_game("Winter Cup", "2024.01.13", "0-1"), "raw/GER/2024-02/winter.pgn")
    store.write_text(_one_game("Club Championship", "2024.01.13", "1/2-1/2"), "raw/GER/2024-03/club-fixed.pgn")
    validate = MonthValidator(store, ["2024-01", "2024-02", "2024-03"])
    assert validate("2024-01", read_month(store, "2024-01")).games.height == 1
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.quarantine.is_empty() and february.games["white_score"].to_list() == [0.0]
    march = validate("2024-03", read_month(store, "2024-03"))
    assert march.games.is_empty() and march.quarantine["reason"].to_list() == ["conflicting_result"]
    assert march.quarantine["detail"][0].startswith(
        "round 1 of these players was rated in 2024-01 from GER/2024-01/club.pgn:"
    )


# -- one game reported by two federations' files of the month (pipeline/validate/duplicates.py _same_day_firsts) -----

# SPRING's games as a PGN export gives them: (round, day, white, black, result).
SPRING_GAMES = [
    (1, "2024.01.06", 5001, 5002, "1-0"),
    (1, "2024.01.06", 5003, 5004, "1/2-1/2"),
    (2, "2024.01.07", 5003, 5001, "0-1"),
    (2, "2024.01.07", 5002, 5004, "1-0"),
]


def _spring_pgn(rounds: set[int], *, round_tags: bool, start: str | None, changed: dict | None = None) -> str:
    """SPRING's games of `rounds` as one PGN (with or without Round tags and EventDate); `changed`: (white, black) ->
    another result.
    """
    from tests.landing import pgn_game

    return "".join(
        _with_round(
            pgn_game("Spring Open", day, white, black, (changed or {}).get((white, black), result), start=start),
            str(rnd) if round_tags else None,
        )
        for rnd, day, white, black, result in SPRING_GAMES
        if rnd in rounds
    )


def test_a_game_two_federations_report_on_its_day_is_rated_once_whatever_start_or_round_their_files_give():
    """GER's TRF of an open and FRA's PGN of it: without Round tags (EventDate given), the PGN's games were rated as
    games of their own (8 rated for 4); with rounds 2 only and no EventDate, the PGN's event start is inferred from
    round 2's day (7 January, the TRF's tag 042 says 6 January) and its games were rated again too. A dated game is
    one game on its own day across files; the copy names the game rated.
    """
    trf = _dated_trf(SPRING)
    for pgn in [
        _spring_pgn({1, 2}, round_tags=False, start="2024.01.06"),
        _spring_pgn({2}, round_tags=True, start=None),
        _spring_pgn({2}, round_tags=False, start=None),
    ]:
        games, quarantine = _split_files({"GER/2024-01/open.trf": trf, "FRA/2024-01/open.pgn": pgn})
        assert games.height == 4, games.select("source_file", "round", "white_id", "black_id").rows()
        assert set(quarantine["reason"]) == {"duplicate"}
        # FRA's folder sorts first: its records are the games and GER's records of them the copies.
        rated = games.filter(pl.col("source_file") == "FRA/2024-01/open.pgn").height
        assert quarantine.height == rated
        assert quarantine["detail"].str.starts_with("same game as FRA/2024-01/open.pgn:").all()
    # Another result on that day and no round: another game (the result is part of what identifies it), no conflict.
    pgn = _spring_pgn({1}, round_tags=False, start="2024.01.06", changed={(5003, 5004): "1-0"})
    games, quarantine = _split_files({"GER/2024-01/open.trf": trf, "FRA/2024-01/open.pgn": pgn})
    assert games.height == 5 and quarantine["reason"].to_list() == ["duplicate"]
    # A file that tells two games of a day apart (a game number) has two: one is the TRF's game, the other rated.
    match = "white_id,black_id,result,date,game\n" + "5001,5002,1-0,2024-01-06,{}\n" * 2
    games, quarantine = _split_files({"GER/2024-01/open.trf": trf, "FRA/2024-01/match.csv": match.format(1, 2)})
    assert games.height == 4 + 1 and quarantine.select("source_file", "reason").rows() == [
        ("GER/2024-01/open.trf", "duplicate")
    ]


def test_a_round_two_files_date_alike_and_give_two_results_conflicts_whatever_start_they_give():
    """FRA's PGN holds round 2 only, no EventDate (its start inferred from round 2's day), and gives 5002-5004 another
    result than GER's TRF: the round is known in both, so the game is one and its two records conflict, as they would
    under one event start.
    """
    pgn = _spring_pgn({2}, round_tags=True, start=None, changed={(5002, 5004): "0-1"})
    games, quarantine = _split_files({"GER/2024-01/open.trf": _dated_trf(SPRING), "FRA/2024-01/open.pgn": pgn})
    conflicts = quarantine.filter(pl.col("reason") == "conflicting_result")
    assert sorted(conflicts["source_file"].to_list()) == ["FRA/2024-01/open.pgn", "GER/2024-01/open.trf"]
    assert conflicts["detail"].str.starts_with("round 2 of these players is also reported at ").all()
    assert games.height == 3


def test_a_game_an_earlier_month_rated_is_known_on_its_day_whatever_start_or_round_the_later_file_gives(tmp_path):
    """GER's TRF rated January's open; FRA reports it late, in February, as a PGN without Round tags or EventDate (its
    start inferred from its earliest game, round 2's day): its games were rated again in February. They are January's
    games by their day; a round given in both must agree, and another result is another game where none is given.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    store.write_text(_dated_trf(SPRING), "raw/GER/2024-01/open.trf")
    store.write_text(_spring_pgn({2}, round_tags=False, start=None), "raw/FRA/2024-02/open.pgn")
    changed = _spring_pgn({2}, round_tags=False, start=None, changed={(5003, 5001): "1-0"})
    store.write_text(changed, "raw/FRA/2024-03/open.pgn")
    validate = MonthValidator(store, ["2024-01", "2024-02", "2024-03"])
    assert validate("2024-01", read_month(store, "2024-01")).games.height == 4
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games.is_empty() and february.quarantine["reason"].to_list() == ["duplicate"] * 2
    assert february.quarantine["detail"].str.starts_with("same game as 2024-01 GER/2024-01/open.trf:").all()
    march = validate("2024-03", read_month(store, "2024-03"))
    assert march.games.select("white_id", "white_score").rows() == [(5003, 1.0)]
    assert march.quarantine["reason"].to_list() == ["duplicate"]


def test_an_undated_trf_sent_again_in_a_later_month_under_another_name_is_known_by_its_stated_start(tmp_path):
    """A TRF without round dates (no tag 132) states its start in tag 042: GER sent it in January, FRA in February
    under another file name, and its games were rated in both months (undated games were matched by file name only).
    The start the file states keys it; a table file stating none is still matched by name only.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    store.write_text(_undated_trf(WINTER), "raw/GER/2024-01/winter.trf")
    store.write_text(_undated_trf(WINTER), "raw/FRA/2024-02/open-d-hiver.trf")
    csv = "white_id,black_id,result,month,round\n8001,8002,1-0,2024-01,1\n"
    store.write_text(csv, "raw/GER/2024-01/club.csv")
    store.write_text(csv, "raw/FRA/2024-02/club-games.csv")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    january = validate("2024-01", read_month(store, "2024-01"))
    assert january.games.height == 5 and january.games["date"].null_count() == 5
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games["source_file"].to_list() == ["FRA/2024-02/club-games.csv"]
    assert february.quarantine["reason"].to_list() == ["duplicate"] * 4
    assert february.quarantine["detail"].str.starts_with("same game as 2024-01 GER/2024-01/winter.trf:").all()


def test_a_game_two_federations_send_in_a_month_counts_as_reported_by_both(tmp_path):
    """GER's TRF of its open and FRA's copy of it: the copy kept was the first folder's by name (FRA's), so the
    game's `federation` said FRA only, and `restrict: {reported_by: GER}` lost GER's own event (as did
    `trust_stated_ratings: [GER]`). The games table lists the other federations that sent it; restriction reads both.
    A month stored before that column is read with it empty, its games counting for their `federation` alone.
    """
    from pipeline.scenarios.model import Restriction
    from pipeline.scenarios.restriction import restricted_games
    from pipeline.store.monthly import read_stored_months, table_key

    trf = _dated_trf(SPRING)
    games, quarantine = _split_files(
        {"GER/2024-01/open.trf": trf, "FRA/2024-01/open-de-printemps.trf": trf, "ENG/2024-01/own.trf": trf}
    )
    assert games.height == 4 and quarantine.height == 8
    assert games["federation"].to_list() == ["ENG"] * 4
    assert games["also_reported_by"].to_list() == [["FRA", "GER"]] * 4
    for federation in ["GER", "FRA", "ENG"]:
        assert restricted_games(games, Restriction(reported_by=federation), None).height == 4
    assert restricted_games(games, Restriction(reported_by="ITA"), None).is_empty()
    # A game one federation sent twice (a file filed twice) is that federation's alone.
    games, _ = _split_files({"GER/2024-01/open.trf": trf, "GER/2024-01/open-again.trf": trf})
    assert games["also_reported_by"].null_count() == 4
    # Games stored without the column (an older version's store) are read with it empty.
    store = ObjectStore(str(tmp_path))
    store.write_parquet(games.drop("also_reported_by"), table_key(["games"], MONTH))
    stored = read_stored_months(store, ["games"], [MONTH], Games)[MONTH]
    assert stored["also_reported_by"].null_count() == 4
    assert restricted_games(stored, Restriction(reported_by="GER"), None).height == 4
    assert restricted_games(games.drop("also_reported_by"), Restriction(reported_by="GER"), None).height == 4
