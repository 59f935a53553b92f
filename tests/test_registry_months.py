"""The registry in force each month: every raw/players/<M>/ folder applies from its month.

The newest folder names a player, the first registers them; the seed list is the list in force before the chains start,
and the run's plan says which files apply to which months. Real FIDE lists of 2004 from ../shared/realdata when it is
there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.formats.fide_list import parse_fide_list
from pipeline.ingest.dumps import read_month
from pipeline.ingest.registry import (
    OLDER_SPELLING,
    SINCE,
    read_players,
    read_seed_list,
    registry_history,
    registry_in_force,
    registry_plan,
    seed_list_month,
)
from pipeline.months import month_range
from pipeline.publish.lists import published_list
from pipeline.scenarios.chain import ChainNotes, rate_months, seed_clock_month
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from pipeline.validate.identity import NAME_KEY
from pipeline.validate.split import MonthValidator
from schemas import Games, Players, empty_frame

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
LISTS_2004 = REALDATA / "fide-lists-2004"


def _store(tmp_path: Path, files: dict[str, str]) -> ObjectStore:
    store = ObjectStore(str(tmp_path))
    for key, text in files.items():
        store.write_text(text, key)
    return store


HEADER = "player_id,name,federation,sex,birth_year,title\n"
FOLDERS = {
    "raw/players/2024-01/players.csv": HEADER
    + '1,"Alpha, Anna",GER,F,1990,WFM\n2,"Beta, Bernd",GER,M,1991,\n5,"Echo, Emma",AUT,F,,\n',
    # March: Anna renamed and titled, her federation left empty (not stated); Bernd renamed to tell him from a new
    # 'Beta, Bernd' (id 4); Carl new.
    "raw/players/2024-03/players.csv": HEADER
    + '1,"Alpha-Neu, Anna",,F,1990,WIM\n2,"Beta, Bernd Sr.",GER,M,1991,\n3,"Gamma, Carl",SUI,M,2001,\n'
    + '4,"Beta, Bernd",GER,M,2005,\n5,"Echo, Emma",AUT,F,,\n',
    # May: a registry without a title column names nobody's title.
    "raw/players/2024-05/players.csv": "player_id,name,birth_year\n5,,1999\n",
}


def test_each_field_is_the_newest_folders_and_a_player_is_registered_from_the_first(tmp_path: Path) -> None:
    store = _store(tmp_path, FOLDERS)
    february, march, may = (read_players(store, month) for month in ("2024-02", "2024-03", "2024-05"))
    for players in (february, march, may):
        Players.validate(players)
    rows = {
        month: {row["player_id"]: row for row in frame.iter_rows(named=True)}
        for month, frame in (("2024-02", february), ("2024-03", march), ("2024-05", may))
    }
    assert sorted(rows["2024-02"]) == [1, 2, 5] and sorted(rows["2024-03"]) == [1, 2, 3, 4, 5]
    anna_feb, anna_mar = rows["2024-02"][1], rows["2024-03"][1]
    assert (anna_feb["name"], anna_feb["title"], anna_feb["federation"]) == ("Alpha, Anna", "WFM", "GER")
    # The newest folder wins for what it states; an empty cell keeps the older value.
    assert (anna_mar["name"], anna_mar["title"], anna_mar["federation"]) == ("Alpha-Neu, Anna", "WIM", "GER")
    assert anna_mar["registered"] == "2024-01" and rows["2024-03"][3]["registered"] == "2024-03"
    # May's file states Emma's birth year only: her name, federation and sex stay March's.
    emma = rows["2024-05"][5]
    assert (emma["name"], emma["federation"], emma["sex"], emma["birth_year"]) == ("Echo, Emma", "AUT", "F", 1999)
    assert rows["2024-05"][1]["title"] == "WIM"
    # Players in the order they were first registered.
    assert may["player_id"].to_list() == [1, 2, 5, 3, 4]


def test_the_history_holds_each_folders_changes_only(tmp_path: Path) -> None:
    history = registry_history(_store(tmp_path, FOLDERS), "2024-12")
    # January's three; in March Anna and Bernd changed, Carl and the new Bernd are new, Emma is restated as she was.
    assert history.select("player_id", SINCE).rows() == [
        (1, "2024-01"),
        (2, "2024-01"),
        (5, "2024-01"),
        (1, "2024-03"),
        (2, "2024-03"),
        (3, "2024-03"),
        (4, "2024-03"),
        (5, "2024-05"),
    ]
    assert registry_in_force(history, "2023-12").height == 0


def test_each_month_is_validated_against_the_registry_in_force_then(tmp_path: Path) -> None:
    files = dict(FOLDERS)
    row = "event_id,round,white_id,black_id,white_name,black_name,result\n"
    # Carl, by name only, before and after March registers him; Anna under her January name after March; 'Beta,
    # Bernd' is Bernd (2) in February and the new player 4 from March, whose registry holds that name today.
    games = (
        '{0},1,,5,"Gamma, Carl","Echo, Emma",1-0\n'
        '{0},2,,5,"Alpha, Anna","Echo, Emma",0-1\n'
        '{0},3,,5,"Beta, Bernd","Echo, Emma",1-0\n'
    )
    for month in ("2024-02", "2024-03", "2024-04"):
        files[f"raw/GER/{month}/games.csv"] = row + games.format(f"league {month}")
    store = _store(tmp_path, files)
    months = month_range("2024-02", "2024-04")
    validate = MonthValidator(store, months)
    white = {}
    for month in months:
        split = validate(month, read_month(store, month))
        white[month] = split.games.sort("round")["white_id"].to_list()
        statuses = dict(split.identities.select("name", "status").iter_rows())
        assert statuses["Gamma, Carl"] == ("new_name" if month == "2024-02" else "matched_by_name")
    assert white["2024-02"][1:] == [1, 2]
    assert white["2024-03"][1:] == [1, 4] and white["2024-03"][0] == 3  # an older spelling still finds Anna
    assert white["2024-04"] == white["2024-03"]
    # The registry in force is made once per registry folder: April shares March's.
    assert validate.registry("2024-04") is validate.registry("2024-03")
    march = validate.registry("2024-03")
    assert NAME_KEY in march.columns
    assert march.filter(pl.col(OLDER_SPELLING))["name"].to_list() == ["Alpha, Anna", "Beta, Bernd"]


def test_the_seed_list_is_the_list_in_force_when_the_chains_start(tmp_path: Path) -> None:
    store = _store(
        tmp_path,
        {
            "raw/players/2024-01/seed_list.csv": "player_id,rating\n1,2000\n",
            "raw/players/2024-03/seed_list.csv": "player_id,rating\n1,2050\n3,1900\n",
        },
    )

    def ratings(chain_start: str | None) -> list[int]:
        seed = read_seed_list(store, chain_start)
        assert seed is not None
        return seed["rating"].to_list()

    assert ratings(None) == [2000]  # the earliest, without a start
    assert ratings("2024-02") == [2000]
    assert ratings("2024-03") == [2050, 1900]
    assert ratings("2023-06") == [2000]  # filed after the start: still the first
    assert [seed_list_month(store, start) for start in ("2023-06", "2024-02", "2024-06")] == [
        "2024-01",
        "2024-01",
        "2024-03",
    ]
    scenario = Scenario(name="actual", rules="fide-2014")
    # The inactivity clock runs from the month before the list the chain starts from.
    assert seed_clock_month(store, scenario, "2024-06") == "2024-02"
    assert seed_clock_month(store, scenario, "2024-02") == "2023-12"
    first = rate_months(store, scenario, ["2024-06"], "2024-06")
    rating_list, *_ = first("2024-06", lambda _month: empty_frame(Games))
    assert dict(rating_list.select("player_id", "rating").iter_rows()) == {1: 2050, 3: 1900}


def test_the_plan_says_which_files_apply_to_which_months(tmp_path: Path) -> None:
    store = _store(
        tmp_path,
        {
            **FOLDERS,
            "raw/players/2024-03/notes.md": "x",
            "raw/players/2024-01/seed_list.csv": "player_id,rating\n1,2000\n",
        },
    )
    assert registry_plan(store, month_range("2023-12", "2024-04")) == [
        "seed list: raw/players/2024-01/seed_list.csv (the seed list filed for 2024-01, after the chains' first "
        "month): the chains start from it in 2023-12",
        "registry 2023-12..2023-12: none yet (the first applies from 2024-01)",
        "registry 2024-01..2024-02: raw/players/2024-01/players.csv",
        "registry 2024-03..2024-04: raw/players/2024-03/players.csv, then raw/players/2024-01/ for what it does not "
        "state",
        "registry from 2024-05: raw/players/2024-05/players.csv (after this run's months)",
        "not read: raw/players/2024-03/notes.md (a registry folder holds players.csv, seed_list.csv or FIDE .txt "
        "lists)",
    ]
    later = registry_plan(store, ["2024-06"], chain_start="2024-01")
    assert later[0].endswith("; this run continues the stored lists of 2024-05 instead")
    assert later[1:] == [
        "registry 2024-06..2024-06: raw/players/2024-05/players.csv, then raw/players/2024-03/ and 1 earlier "
        "folder(s) for what it does not state",
        "not read: raw/players/2024-03/notes.md (a registry folder holds players.csv, seed_list.csv or FIDE .txt "
        "lists)",
    ]
    assert registry_plan(ObjectStore(str(tmp_path / "empty")), ["2024-01"]) == [
        "seed list: none: every player starts unrated in 2024-01",
        "registry: none (raw/players/<YYYY-MM>/ holds no players.csv or FIDE list): players are the ids and names the "
        "dumps write",
    ]


# The audit's registry and seed list: a repeated id, an id that is no number, a row with a field too many, seed
# ratings that are no whole number.
AUDITED = {
    "raw/players/2024-01/players.csv": HEADER
    + '4600003,"Alpha, Anna",GER,F,1990,WGM\n4600011,"Beta, Bernd",GER,M,2008,\n4600011,"Beta, Bernhard",AUT,M,2007,\n'
    + 'abc,"Nobody, N",GER,M,1990,\n4600020,"Gamma, G",GER,M,1990,GM,extra\n',
    "raw/players/2024-01/seed_list.csv": "player_id,rating,games_total,birth_year,ever_2400,k\n"
    + '4600003,2405,310,1990,true,10\n4600011,abc,12,2008,false,40\n4600020,"2,100",50,1990,,\n'
    + "4600038,1800.7,50,1990,,\n4600046,1800.0,50,1990,,\n4600054,1900,12x,2010,,\n",
}


def test_seed_rows_that_cannot_be_read_are_left_out_and_named_never_seeded_unrated(tmp_path: Path) -> None:
    from pipeline.ingest.registry import registry_problem_lines

    store = _store(tmp_path, AUDITED)
    seed = read_seed_list(store, "2024-01")
    # 4600011 ('abc'), 4600020 ('2,100'), 4600038 (1800.7) and 4600054 (games_total '12x': read as empty, an
    # established player) were seeded as unrated, at 1801 and as established; 1800.0 is a whole number.
    assert seed.select("player_id", "rating").rows() == [(4600003, 2405), (4600046, 1800)]
    players = read_players(store, "2024-01")
    # The first row of an id registers them; a row with a field too many registers nobody (its fields do not line up).
    assert players.select("player_id", "name").rows() == [(4600003, "Alpha, Anna"), (4600011, "Beta, Bernd")]
    folder = "raw/players/2024-01"
    assert registry_problem_lines(store, ["2024-01"]) == [
        f"WARNING: {folder}/players.csv line 4: player_id 4600011 is already registered on line 3: this row is not "
        "read",
        f"WARNING: {folder}/players.csv line 5: player_id abc is not a positive number: this row is not read",
        f"WARNING: {folder}/players.csv line 6: the row has 1 field(s) more than the header's 6: its fields do not "
        "line up: this row is not read",
        f"WARNING: {folder}/seed_list.csv line 3: rating 'abc' is not a number: player 4600011 is left out of the "
        "seed list",
        f"WARNING: {folder}/seed_list.csv line 4: rating '2,100' is not a number: player 4600020 is left out of the "
        "seed list",
        f"WARNING: {folder}/seed_list.csv line 5: rating '1800.7' is not a whole number: player 4600038 is left out "
        "of the seed list",
        f"WARNING: {folder}/seed_list.csv line 7: games_total '12x' is not a number: player 4600054 is left out of "
        "the seed list",
    ]
    # A folder before the run's first month still names its problems (it is in force); one after the last does not.
    assert len(registry_problem_lines(store, ["2024-03"])) == 7 and registry_problem_lines(store, ["2023-12"]) == []


def test_a_repeated_seed_row_is_named_and_the_first_readable_one_seeds(tmp_path: Path) -> None:
    from pipeline.ingest.registry import registry_table, seed_problems, seed_rows

    table = registry_table(b"player_id,rating,rapid_rating\n5,abc,1500\n5,1500,x\n5,1600,\n6,1700,\n6,1701,\n")
    assert seed_problems(table).select("source_line", "detail").rows() == [
        (2, "rating 'abc' is not a number"),
        (4, "player_id 5 is already on line 3"),
        (6, "player_id 6 is already on line 5"),
    ]
    assert seed_rows(table).select("player_id", "rating").rows() == [(5, 1500), (6, 1700)]
    # The rapid list reads its own rating: line 2 seeds it, line 3's rapid rating cannot be read.
    assert seed_rows(table, "rapid").select("player_id", "rating").rows() == [(5, 1500), (6, None)]


def _fide_list(*lines: tuple[str, str]) -> str:
    """A standard list in layout B (FIDE's 2012-2025 TXT) of (id, name) lines, each GER rated 2000."""
    from tests.test_formats import TestFideLists, fixed_width

    rows = [
        fixed_width("B", player_id=pid, name=name, federation="GER", sex="M", rating="2000", games="5", k="20")
        for pid, name in lines
    ]
    return "\n".join([TestFideLists.HEADERS["B"], *rows]) + "\n"


def test_a_txt_that_is_no_fide_list_is_not_read_and_named_not_a_failed_run(tmp_path: Path) -> None:
    import gzip

    from pipeline.ingest.registry import registry_problem_lines

    listed = _fide_list(("4600003", "Alpha, Anna"), ("4600003", "Alpha, Anna"), ("4600011", "Beta, Bernd"))
    store = _store(
        tmp_path,
        {
            # notes.txt sorts before the list: it was taken for the seed list, and failed the run unreadable.
            "raw/players/2024-01/notes.txt": "these are my notes about the players\n",
            "raw/players/2024-01/standard_jan24frl.txt": listed,
            "raw/players/2024-02/notes.txt": "",
        },
    )
    store.write_bytes(gzip.compress(b"not a list either\n" * 10), "raw/players/2024-02/more.txt.gz")
    assert registry_plan(store, ["2024-01", "2024-02"]) == [
        "seed list: raw/players/2024-01/standard_jan24frl.txt (a FIDE rating list filed for 2024-01): the chains "
        "start from it in 2024-01",
        "registry 2024-01..2024-02: raw/players/2024-01/standard_jan24frl.txt",
        "not read: raw/players/2024-01/notes.txt: not a FIDE rating list: no known header, and the lines fit none of "
        "FIDE's layouts A-F",
        "not read: raw/players/2024-02/more.txt.gz: not a FIDE rating list: no known header, and the lines fit none "
        "of FIDE's layouts A-F",
        "not read: raw/players/2024-02/notes.txt: an empty file",
    ]
    assert read_seed_list(store, "2024-01").select("player_id", "rating").rows() == [(4600003, 2000), (4600011, 2000)]
    assert read_players(store, "2024-02")["player_id"].to_list() == [4600003, 4600011]
    MonthValidator(store, ["2024-01", "2024-02"])  # raised: "player list file ... notes.txt is unreadable"
    # The list itself is read, its damaged line named with its file and line.
    assert registry_problem_lines(store, ["2024-01"]) == [
        "WARNING: raw/players/2024-01/standard_jan24frl.txt line 3: FIDE id 4600003 is already listed on line 2: "
        "this line is not read"
    ]


# -- FIDE's lists of January and April 2004 ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def lists_2004() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(January's players, April's players) as parsed from FIDE's files."""
    if not LISTS_2004.is_dir():
        pytest.skip(f"{LISTS_2004} is absent (shared/realdata not mounted)")
    return tuple(  # type: ignore[return-value]
        parse_fide_list((LISTS_2004 / name).read_bytes(), name).players for name in ("JAN04FRL.TXT", "APR04FRL.TXT")
    )


def _two_list_store(root: Path, dumps: dict[str, str] | None = None) -> ObjectStore:
    for month, name in (("2004-01", "JAN04FRL.TXT"), ("2004-04", "APR04FRL.TXT")):
        (root / "raw/players" / month).mkdir(parents=True)
        shutil.copyfile(LISTS_2004 / name, root / "raw/players" / month / name)
    store = ObjectStore(str(root))
    for key, text in (dumps or {}).items():
        store.write_text(text, key)
    return store


def test_april_2004s_newcomers_are_registered_from_april_and_its_corrections_apply_from_april(
    lists_2004, tmp_path: Path
) -> None:
    january, april = lists_2004
    newcomers = april.join(january, on="player_id", how="anti")
    assert newcomers.height == 1_880
    store = _two_list_store(tmp_path)
    march, may = read_players(store, "2004-03"), read_players(store, "2004-05")
    assert (march.height, may.height) == (january.height, january.height + 1_880)
    assert may.filter(pl.col("registered") == "2004-04")["player_id"].sort().equals(newcomers["player_id"].sort())
    # January wrote her title into her name (and WGM as her title); April corrected both.
    olga = 14102463
    assert march.filter(pl.col("player_id") == olga).select("name", "title").row(0) == ("Alexandrova, Olga (IM)", "WGM")
    assert may.filter(pl.col("player_id") == olga).select("name", "title", "registered").row(0) == (
        "Alexandrova, Olga",
        "IM",
        "2004-01",
    )


def test_the_later_lists_new_players_are_on_the_later_months_lists(lists_2004, tmp_path: Path) -> None:
    """Two FIDE lists in two raw/players/ folders and dumps of 2004-02 and 2004-05: players new on April's list are
    registered, named and identified by name from April on, and are on the lists that rate May's games named as
    April's list names them (2004's lists were quarterly: the list after June rates April to June).
    """
    january, april = lists_2004
    newcomers = april.join(january, on="player_id", how="anti").sort("player_id")
    (by_id, _), (by_name, name) = newcomers.select("player_id", "name").rows()[:2]
    opponent = january.sort("player_id")["player_id"][0]
    header = "event_id,round,date,white_id,black_id,white_name,black_name,result\n"

    def games(day: str) -> str:
        return header + f'e,1,{day},{by_id},{opponent},,,1-0\ne,2,{day},,{opponent},"{name}",,0-1\n'

    store = _two_list_store(
        tmp_path,
        {"raw/ENG/2004-02/games.csv": games("2004-02-10"), "raw/ENG/2004-05/games.csv": games("2004-05-10")},
    )
    months = month_range("2004-01", "2004-07")
    validate = MonthValidator(store, months)
    rate = rate_months(store, Scenario(name="actual", rules="fide-historical"), months, "2004-01")
    validated: dict[str, pl.DataFrame] = {}
    published = {}
    for month in months:
        split = validate(month, read_month(store, month))
        validated[month] = split.games
        statuses = dict(split.identities.select("name", "status").iter_rows())
        if month in ("2004-02", "2004-05"):
            # Written by name only: a new local player before April's list registers them, their FIDE id after.
            assert statuses[name] == ("new_name" if month == "2004-02" else "matched_by_name")
        rating_list, *_ = rate(month, lambda games_month: validated.get(games_month, empty_frame(Games)))
        published[month] = published_list(rating_list, read_players(store, month))
    names = dict(april.filter(pl.col("player_id").is_in([by_id, by_name])).select("player_id", "name").iter_rows())
    for month in ("2004-06", "2004-07"):
        listed = published[month].filter(pl.col("id").is_in([by_id, by_name]))
        assert dict(listed.select("id", "name").iter_rows()) == names
        assert set(listed["federation"].to_list()) <= set(april["federation"].to_list())
    # Every player April's list rates who is on no earlier list joins the chain at April's rating, played or not.
    joined = newcomers.filter(pl.col("standard_rating").is_not_null() & ~pl.col("player_id").is_in([by_id, by_name]))
    july = published["2004-07"].join(joined.select("player_id", "standard_rating"), left_on="id", right_on="player_id")
    assert joined.height > 1000 and july.height == joined.height
    assert (july["rating"] == july["standard_rating"]).all()
    # Before April neither was registered: the one written by id is on the list unnamed, the other under a local id.
    march = published["2004-03"]
    assert march.filter(pl.col("id") == by_id)["name"].to_list() in ([None], [""])
    assert march.filter(pl.col("id") == by_name).height == 0


def test_a_chain_starting_after_the_later_list_starts_from_it(lists_2004, tmp_path: Path) -> None:
    """FIDE's TRF example of July 2005 rated over both lists: the chains start from April's list, the list in force
    before 2005-07, so all of April's newcomers are on the 2005-07 list.
    """
    trf = REALDATA / "example1.trf"
    if not trf.exists():
        pytest.skip(f"{trf} is absent")
    january, april = lists_2004
    store = _two_list_store(tmp_path, {"raw/GER/2005-07/example1.trf": trf.read_text(encoding="latin-1")})
    assert seed_list_month(store, "2005-07") == "2004-04"
    assert registry_plan(store, ["2005-07"])[0] == (
        "seed list: raw/players/2004-04/APR04FRL.TXT (a FIDE rating list filed for 2004-04): the chains start from "
        "it in 2005-07"
    )
    validate = MonthValidator(store, ["2005-07"])
    games = validate("2005-07", read_month(store, "2005-07")).games
    assert games.height > 0
    rate = rate_months(store, Scenario(name="actual", rules="fide-historical"), ["2005-07"], "2005-07")
    rating_list, *_ = rate("2005-07", lambda _month: games)
    newcomers = april.join(january, on="player_id", how="anti")["player_id"]
    assert newcomers.is_in(rating_list["player_id"].implode()).all()


@pytest.mark.parametrize(
    "scenario", [Scenario(name="actual", rules="fide-2024"), Scenario(name="glicko2", system="glicko2")]
)
def test_a_later_lists_rated_newcomers_join_the_chain_at_its_rating_from_its_month(
    tmp_path: Path, scenario: Scenario
) -> None:
    """A seed list filed in a later month brings its rated players no list of the chain holds yet, at its rating,
    from that month on (and into a system's state); a player the chain lists keeps the chain's rating.
    """
    seed = "player_id,rating,games_total,birth_year\n"
    store = _store(
        tmp_path,
        {
            "raw/players/2024-01/seed_list.csv": seed + "1,2000,50,1990\n2,1800,50,1991\n",
            # March's list: 1 at another rating (the chain keeps its own), 3 new and rated, 4 new and unrated.
            "raw/players/2024-03/seed_list.csv": seed + "1,2100,60,1990\n2,1800,50,1991\n3,1950,30,1995\n4,,0,2000\n",
            "raw/ENG/2024-02/games.csv": "event_id,round,date,white_id,black_id,result\ne,1,2024-02-03,1,2,1-0\n",
        },
    )
    months = month_range("2024-01", "2024-04")
    validate = MonthValidator(store, months)
    rate = rate_months(store, scenario, months, "2024-01")
    lists = {}
    for month in months:
        games = validate(month, read_month(store, month)).games
        validated = {month: games}
        lists[month] = rate(month, lambda games_month, held=validated: held.get(games_month, empty_frame(Games)))
    ratings = {month: dict(frames[0].select("player_id", "rating").iter_rows()) for month, frames in lists.items()}
    assert 3 not in ratings["2024-02"] and ratings["2024-03"][3] == ratings["2024-04"][3] == 1950
    assert 4 not in ratings["2024-04"]  # an unrated player of the later list is the registry's, not the list's
    assert ratings["2024-03"][1] == ratings["2024-02"][1] != 2100  # the chain's own rating, moved by February's win
    assert all(frames[0]["player_id"].is_sorted() for frames in lists.values())
    if not scenario.is_system:
        # The pool's ledger: the later list's newcomer joins it as seeded, and every month balances.
        ledgers = {month: frames[2].row(0, named=True) for month, frames in lists.items()}
        assert all(ledger["unexplained"] == 0 for ledger in ledgers.values())
        assert ledgers["2024-03"]["seeded"] == 1950 and ledgers["2024-02"]["seeded"] == 0
    if scenario.is_system:
        state = lists["2024-04"][1]
        assert 3 in state["player_id"].to_list() and state["player_id"].is_sorted()


def test_a_later_list_rates_a_player_the_chain_holds_unrated_from_its_month(tmp_path: Path) -> None:
    """A later list's rating reaches a player the chain holds unrated (B.02 §8.2.4: a published rating received while
    unrated is the rating he is rated with): 5, pooling one game toward a first rating, and 6, delisted in February,
    are on March's list at its rating, 5's pool dropped and his March game rated from it; the chain notes both.
    """
    seed = "player_id,rating,games_total,birth_year\n"
    games = "event_id,round,date,white_id,black_id,result\n"
    store = _store(
        tmp_path,
        {
            "raw/players/2024-01/seed_list.csv": seed + "1,2000,50,1990\n2,1800,50,1991\n6,1401,50,1992\n",
            "raw/players/2024-03/seed_list.csv": seed + "5,2500,40,\n6,1500,60,\n",
            "raw/ENG/2024-02/games.csv": games + "e,1,2024-02-03,5,1,1-0\ne,2,2024-02-04,6,2,0-1\n",
            "raw/ENG/2024-03/games.csv": games + "f,1,2024-03-03,5,2,1-0\n",
        },
    )
    months = month_range("2024-01", "2024-03")
    validate = MonthValidator(store, months)
    notes = ChainNotes()
    rate = rate_months(store, Scenario(name="actual", rules="fide-2024"), months, "2024-01", notes=notes)
    lists = {}
    for month in months:
        games_of = validate(month, read_month(store, month)).games
        lists[month] = rate(month, lambda _month, held=games_of: held)
    february, march = (lists[m][0].filter(pl.col("player_id").is_in([5, 6])).sort("player_id") for m in months[1:])
    assert february.select("rating", "pending_games", "delisted").rows() == [(None, 1, False), (None, 0, True)]
    assert march["pending_games"].to_list() == [0, 0] and march["newly_rated"].to_list() == [False, False]
    assert march.filter(pl.col("player_id") == 6)["rating"].item() == 1500
    rated_games = lists["2024-03"][1]
    assert rated_games["white_rating_used"].to_list() == [2500] and rated_games["white_expected"].is_not_null().all()
    five = march.row(0, named=True)
    assert five["rating"] == 2500 + five["change"] and five["change"] != 0 and five["games_total"] == 41
    ledger = lists["2024-03"][2].row(0, named=True)
    assert ledger["seeded"] == 2500 + 1500 and ledger["unexplained"] == 0
    assert notes.joined == {"2024-03": 2}


def test_the_registrys_birth_year_gives_every_listed_players_k_from_its_folders_month(tmp_path: Path) -> None:
    """A listed player's junior K (B.02 §8.3.3: 40 under 18 below 2300) follows the registry's birth year in force,
    not only a newcomer's: the seed list's empty year takes January's registry year, and March's folder corrects
    other players' years from March on, played or not, for the K March's games use too (the K February's list stated
    under the old year is decided again), both ways; the K a player keeps once reached stands (10, the seed's K of a
    player below 2400; 40 until 30 games); the list's year stands where the registry states none.
    """
    store = _store(
        tmp_path,
        {
            "raw/players/2024-01/seed_list.csv": "player_id,rating,games_total,birth_year,k\n"
            "1,1800,50,,\n2,1800,50,1990,\n3,1800,50,1990,\n4,1800,50,1990,\n5,2350,50,1990,10\n6,1800,10,,\n",
            "raw/players/2024-01/players.csv": HEADER
            + '1,"One, A",GER,M,2012,\n2,"Two, B",GER,M,1990,\n6,"Six, F",GER,M,2012,\n',
            "raw/players/2024-03/players.csv": HEADER
            + '1,"One, A",GER,M,1990,\n2,"Two, B",GER,M,2012,\n3,"Three, C",GER,M,2012,\n5,"Five, E",GER,M,2012,\n'
            + '6,"Six, F",GER,M,1990,\n',
            "raw/ENG/2024-01/games.csv": "event_id,round,date,white_id,black_id,result\ne,1,2024-01-03,1,2,1-0\n",
            "raw/ENG/2024-03/games.csv": "event_id,round,date,white_id,black_id,result\n"
            "f,1,2024-03-03,1,2,1-0\nf,2,2024-03-03,3,4,1-0\nf,3,2024-03-03,5,6,1-0\n",
        },
    )
    months = month_range("2024-01", "2024-03")
    validate = MonthValidator(store, months)
    rate = rate_months(store, Scenario(name="actual", rules="fide-2024"), months, "2024-01")
    lists = {}
    for month in months:
        games = validate(month, read_month(store, month)).games
        lists[month] = rate(month, lambda _month, held=games: held)[0]
    listed = {
        m: {row[0]: row[1:] for row in frame.select("player_id", "birth_year", "k", "k_used").rows()}
        for m, frame in lists.items()
    }
    assert listed["2024-01"][1] == (2012, 40, 40)  # the seed's empty year: January's registry, for the K used too
    assert listed["2024-01"][2] == (1990, 20, 20)
    assert listed["2024-02"][2][:2] == listed["2024-02"][3][:2] == (1990, 20)
    assert listed["2024-02"][1][:2] == (2012, 40)
    # March's corrections, for March's games too: adult -> junior (2, 3), junior -> adult (1); 4 kept his year.
    assert listed["2024-03"][2] == listed["2024-03"][3] == (2012, 40, 40)
    assert listed["2024-03"][1] == (1990, 20, 20)
    assert listed["2024-03"][4] == (1990, 20, 20)  # no registry row: the list's year
    # The K reached stands: 5's K 10 (reached 2400 once), 6's K 40 of a player with fewer than 30 games.
    assert listed["2024-02"][5][1:] == (10, None) and listed["2024-03"][5] == (2012, 10, 10)
    assert listed["2024-02"][6][1:] == (40, None) and listed["2024-03"][6] == (1990, 40, 40)


def test_a_registry_folder_every_month_is_named_first_and_last_with_how_many_between(tmp_path: Path) -> None:
    months = month_range("2024-01", "2024-10")
    folders = {f"raw/players/{m}/players.csv": HEADER + f'{i},"P{i}, X",GER,M,1990,\n' for i, m in enumerate(months, 1)}
    store = _store(tmp_path, folders)
    spans = [line for line in registry_plan(store, months) if line.startswith("registry")]
    assert spans[0] == "registry 2024-01..2024-01: raw/players/2024-01/players.csv"
    assert spans[1] == "registry: ... 8 more folders, each in force from its month to the next one's"
    assert spans[2].startswith("registry 2024-10..2024-10: raw/players/2024-10/players.csv, then") and len(spans) == 3


@pytest.mark.parametrize("seed", range(8))
def test_the_registry_walked_month_by_month_is_the_registry_in_force_made_from_the_history(seed: int) -> None:
    """registries_in_force updates the registry in force from the folders since the month it made last: the same
    frames registry_in_force makes from the whole history, with and without older spellings and name keys, asked in
    month order, with months skipped, and again from an earlier month.
    """
    import numpy as np

    from pipeline.ingest.registry import registries_in_force

    rng = np.random.default_rng(seed)
    names = ["Ann", "Bea", "Cid", None]
    rows = []
    for month in ["2024-01", "2024-02", "2024-04", "2024-05", "2024-07"]:
        for player in rng.choice(np.arange(1, 40), size=int(rng.integers(0, 25)), replace=False):
            rows.append(
                {
                    "player_id": int(player),
                    "name": names[rng.integers(0, len(names))],
                    "federation": [None, "GER", "ENG"][rng.integers(0, 3)],
                    "sex": [None, "M", "F"][rng.integers(0, 3)],
                    "birth_year": [None, 1990, 2001][rng.integers(0, 3)],
                    "title": [None, "FM"][rng.integers(0, 2)],
                    SINCE: month,
                }
            )
    history = pl.DataFrame(rows, schema_overrides={"birth_year": pl.Int32}).with_columns(
        pl.col(SINCE).first().over("player_id").alias("registered"),
        pl.col("name").str.to_lowercase().alias("_key"),
    )
    months = ["2024-01", "2024-02", "2024-03", "2024-04", "2024-06", "2024-07", "2024-08"]
    for older in (False, True):
        walk = registries_in_force(history, older_spellings=older)
        # Of the ids and names only (validation's history, registry_history's `columns`): those columns, the same.
        names_only = registries_in_force(history.select("player_id", "name", "_key", SINCE), older_spellings=older)
        for month in [*months, "2024-02", "2024-05", "2024-07"]:
            whole = registry_in_force(history, month, older)
            assert walk(month).equals(whole), (older, month)
            assert names_only(month).equals(whole.select(names_only(month).columns)), (older, month)


@pytest.mark.parametrize("seed", range(5))
def test_the_history_keeps_a_folders_row_where_it_registers_or_restates_a_player(seed: int, tmp_path: Path) -> None:
    """registry_history against the rule done by hand, folder by folder: a row is kept where the player is new or a
    field it states differs from the newest the earlier folders stated (empty cells state nothing).
    """
    import numpy as np

    from pipeline.ingest.registry import IDENTITY_FIELDS, _folder_rows, _registry_keys

    rng = np.random.default_rng(seed)
    store = ObjectStore(str(tmp_path))
    values = {
        "name": ["", "Ann, A", "Bea, B"],
        "federation": ["", "GER", "ENG"],
        "sex": ["", "M", "F"],
        "birth_year": ["", "1990", "2001"],
        "title": ["", "FM", "GM"],
    }
    for month in ("2024-01", "2024-02", "2024-04", "2024-05"):
        players = rng.choice(np.arange(1, 30), size=int(rng.integers(1, 20)), replace=False)
        lines = ["player_id," + ",".join(values)]
        for player in players:
            lines.append(f"{player}," + ",".join(options[rng.integers(0, 3)] for options in values.values()))
        store.write_text("\n".join(lines) + "\n", f"raw/players/{month}/players.csv")
    expected, in_force = [], {}
    for month, keys in _registry_keys(store).items():
        for row in _folder_rows(store, keys, month)[0].iter_rows(named=True):
            before = in_force.get(row["player_id"])
            stated = {field: row[field] for field in IDENTITY_FIELDS if row[field] is not None}
            if before is None or any(before.get(field) != value for field, value in stated.items()):
                expected.append((row["player_id"], *(row[field] for field in IDENTITY_FIELDS), month))
            in_force[row["player_id"]] = {**(before or {}), **stated}
    history = registry_history(store, "2024-12")
    assert history.select("player_id", *IDENTITY_FIELDS, SINCE).rows() == expected
    first = {}
    for player, *_, month in expected:
        first.setdefault(player, month)
    assert dict(zip(history["player_id"], history["registered"], strict=True)) == first


def test_a_run_keeps_the_registry_history_and_the_next_reads_only_the_folders_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.ingest import registry
    from pipeline.ingest.landing import inventory, listing_of_the_run

    store = _store(tmp_path, FOLDERS)
    whole = {month: registry_history(store, month) for month in ("2024-03", "2024-05")}
    assert not (tmp_path / registry.KEPT_HISTORY_FOLDER).exists()  # read outside a run: nothing written
    read: list[str] = []
    folder_rows = registry._folder_rows
    monkeypatch.setattr(
        registry, "_folder_rows", lambda s, keys, month: read.append(month) or folder_rows(s, keys, month)
    )

    def a_run(month: str) -> pl.DataFrame:
        registry._read_history.clear()  # a new process
        with listing_of_the_run(store, inventory(store)):
            return registry_history(store, month)

    assert a_run("2024-03").equals(whole["2024-03"]) and read == ["2024-01", "2024-03"]
    # Some columns only: read from the kept rows (no folder read), or taken from this process's rows.
    registry._read_history.clear()
    names = registry_history(store, "2024-03", columns=["player_id", "name"])
    assert names.equals(whole["2024-03"].select("player_id", "name", SINCE)) and len(read) == 2
    assert not registry._read_history  # not held for the next call
    held = registry_history(store, "2024-03")
    assert registry_history(store, "2024-03", ["name"]).equals(held.select("name", SINCE)) and len(read) == 2
    # The next month's run reads May's folder alone, and its rows are those of reading every folder.
    assert a_run("2024-05").equals(whole["2024-05"]) and read[2:] == ["2024-05"]
    registry._read_history.clear()
    assert registry_history(store, "2024-05").equals(whole["2024-05"]) and len(read) == 3  # kept: nothing read
    kept = sorted(path.name for path in (tmp_path / registry.KEPT_HISTORY_FOLDER).iterdir())
    assert len(kept) == 2 and "history.json" in kept  # the rows of the older run are gone
    # A run of an earlier month takes its folders' rows from the kept ones, and keeps them as they are.
    assert a_run("2024-03").equals(whole["2024-03"]) and len(read) == 3
    assert sorted(path.name for path in (tmp_path / registry.KEPT_HISTORY_FOLDER).iterdir()) == kept
    # A folder the kept rows were made from, changed: every folder is read again.
    store.write_text(
        FOLDERS["raw/players/2024-03/players.csv"] + '6,"Fox, Fay",GER,F,2000,\n', "raw/players/2024-03/players.csv"
    )
    changed = a_run("2024-05")
    assert read[3:] == ["2024-01", "2024-03", "2024-05"] and 6 in changed["player_id"].to_list()
    registry._read_history.clear()
    assert registry_history(store, "2024-05").equals(changed)
    # A damaged file is made again, never read as rows.
    (tmp_path / registry.KEPT_HISTORY_FOLDER / "history.json").write_bytes(b"{damaged")
    assert a_run("2024-05").equals(changed) and len(read) == 9
    # Kept rows that are not the files' any more: some columns of the rows read again.
    registry._read_history.clear()
    store.write_text(FOLDERS["raw/players/2024-03/players.csv"], "raw/players/2024-03/players.csv")
    names = registry_history(store, "2024-05", columns=["player_id", "name"])
    assert names.equals(whole["2024-05"].select("player_id", "name", SINCE)) and len(read) == 12


def test_a_runs_kept_registry_keeps_its_files_problems_and_a_long_list_of_them_is_counted(tmp_path: Path) -> None:
    from pipeline.ingest import registry
    from pipeline.ingest.landing import inventory, listing_of_the_run
    from pipeline.ingest.registry import registry_file_problems, registry_problem_lines

    store = _store(tmp_path, AUDITED)
    bad_seeds = "".join(f"{4700000 + n},x{n},,,,\n" for n in range(15))
    store.write_text(
        "player_id,rating,games_total,birth_year,ever_2400,k\n" + bad_seeds, "raw/players/2024-02/seed_list.csv"
    )
    whole = registry_file_problems(store, "2024-02")
    assert whole.height == 3 + 4 + 15 and whole.filter(pl.col("key").str.contains("2024-02"))[
        "of"
    ].unique().to_list() == [15]
    # A run of February alone: the newest folder at or before it with problems; of both months, both folders.
    lines = registry_problem_lines(store, ["2024-02"])
    assert len(lines) == 13 and lines[-1] == "WARNING: 3 more such problems in 1 file(s) of raw/players/"
    lines = registry_problem_lines(store, ["2024-01", "2024-02"])
    assert len(lines) == 13 and lines[-1] == "WARNING: 10 more such problems in 1 file(s) of raw/players/"

    def a_run(month: str) -> None:
        registry._read_history.clear()  # a new process
        with listing_of_the_run(store, inventory(store)):
            registry.keep_registry_history(store, month)

    a_run("2024-01")
    # Read back with the kept rows: no folder read (this process holds no history), the problems of the kept folders.
    assert registry_file_problems(store, "2024-01").equals(whole.filter(pl.col("key").str.contains("2024-01")))
    assert not registry._read_history
    # The next month's run reads February's folder alone, and adds its problems to the kept ones.
    a_run("2024-02")
    assert registry_file_problems(store, "2024-02").equals(whole) and not registry._read_history


def test_a_registry_federation_that_is_no_three_letter_code_is_named_and_left_empty(tmp_path: Path) -> None:
    from pipeline.ingest.registry import registry_problem_lines

    rows = '1,"Alpha, Anna",E<b,F,1990,\n2,"Beta, Bernd",Germany,M,1991,\n3,"Gamma, Carl", ger ,M,2001,\n'
    store = _store(tmp_path, {"raw/players/2024-01/players.csv": HEADER + rows + "4,,,M,2002,\n"})
    players = read_players(store, "2024-01").sort("player_id")
    # Read as a TRF's federation is ('ger' is GER); the others would be cut to 'E<b', 'Ger' in the FIDE TXT.
    assert players["federation"].to_list() == ["", "", "GER", ""]  # empty as an empty cell is
    assert registry_problem_lines(store, ["2024-01"]) == [
        "WARNING: raw/players/2024-01/players.csv line 2: federation 'E<b' is not a three-letter code: the cell is "
        "left empty",
        "WARNING: raw/players/2024-01/players.csv line 3: federation 'Germany' is not a three-letter code: the cell "
        "is left empty",
    ]


def test_a_registry_sex_or_birth_year_that_cannot_be_read_is_named_and_left_empty(tmp_path: Path) -> None:
    from pipeline.ingest.registry import registry_problem_lines

    rows = '1,"Alpha, Anna",GER,X,1990,\n2,"Beta, Bernd",GER,M,85,\n3,"Gamma, Carl",GER,w,1985-03-02,\n'
    store = _store(tmp_path, {"raw/players/2024-01/players.csv": HEADER + rows})
    players = read_players(store, "2024-01").sort("player_id")
    assert players.select("sex", "birth_year").rows() == [(None, 1990), ("M", None), ("F", 1985)]
    assert registry_problem_lines(store, ["2024-01"]) == [
        "WARNING: raw/players/2024-01/players.csv line 2: sex 'X' is neither M nor F (nor W): the cell is left empty",
        "WARNING: raw/players/2024-01/players.csv line 3: birth_year '85' is no year from 1900 to 2100: the cell is "
        "left empty",
    ]


def test_a_registry_title_that_is_no_fide_title_is_named_and_left_empty(tmp_path: Path) -> None:
    from pipeline.ingest.registry import registry_problem_lines

    rows = '1,"Alpha, Anna",GER,F,1990,wgm\n2,"Beta, Bernd",GER,M,1991,**bold**\n3,"Gamma, Carl",GER,M,1985,g\n'
    store = _store(tmp_path, {"raw/players/2024-01/players.csv": HEADER + rows + '4,"Delta, Dora",GER,F,1999,NM\n'})
    players = read_players(store, "2024-01").sort("player_id")
    assert players["title"].to_list() == ["WGM", None, "GM", None]
    assert registry_problem_lines(store, ["2024-01"]) == [
        "WARNING: raw/players/2024-01/players.csv line 3: title '**bold**' is not a FIDE title (GM, IM, FM, CM, WGM, "
        "WIM, WFM, WCM): the cell is left empty",
        "WARNING: raw/players/2024-01/players.csv line 5: title 'NM' is not a FIDE title (GM, IM, FM, CM, WGM, WIM, "
        "WFM, WCM): the cell is left empty",
    ]
