"""FIDE's reporting calendar (issue 36): the month folder is the list period the dumps were reported for.

A tournament is rated from the first list whose closing date it ended by up to the third list after it ended, with the
ratings of the list in force at its start; outside, its games are quarantined with the clause they break.
"""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipeline.rules.calendar import on_time_folder, reporting_problems
from tests.landing import pgn_game, write_raw


def _problem(event_end: date, month: str, game_day: date | None = None) -> tuple[str | None, str | None]:
    reason, detail = reporting_problems(pl.lit(event_end), pl.lit(game_day or event_end), month)
    return pl.select(reason.alias("reason"), detail.alias("detail")).row(0)


# -- the windows' edges (B.02 2024 §7.1.3: closing date 3 days before the list; §9.1: the third list after the end) --


@pytest.mark.parametrize(
    ("event_end", "month", "reason"),
    [
        (date(2024, 1, 26), "2024-01", None),  # five days to the end of the month: its own month's list...
        (date(2024, 1, 26), "2024-02", None),  # ... or the following one (§9.1)
        (date(2024, 1, 27), "2024-02", None),
        (date(2024, 1, 29), "2024-01", None),  # on the closing date of the list of 1 February
        (date(2024, 1, 30), "2024-01", "after_closing_date"),  # after it: the list of 1 March
        (date(2024, 1, 31), "2024-01", "after_closing_date"),  # the last day of the month
        (date(2024, 1, 31), "2024-02", None),
        (date(2024, 1, 28), "2024-03", None),  # the third list after the end (1 April): the last
        (date(2024, 1, 28), "2024-04", "too_late"),  # the fourth (1 May): not rated
        (date(2024, 1, 31), "2024-04", "too_late"),
        (date(2024, 2, 28), "2024-02", "after_closing_date"),  # 2024 is a leap year: closing date 27 February
        (date(2024, 2, 27), "2024-02", None),
        (date(2024, 3, 2), "2024-02", "future"),  # dated after the month it was reported for
        (date(2010, 2, 20), "2010-02", None),  # six lists a year, closing date 7 days before (22 February)
        (date(2010, 2, 23), "2010-02", "after_closing_date"),
        (date(2010, 2, 23), "2010-03", None),  # rated on the list of 1 May, as are the games of March and April
    ],
)
def test_the_calendar_table(event_end, month, reason):
    assert _problem(event_end, month)[0] == reason


def test_each_reason_names_its_clause_and_where_the_games_belong():
    assert _problem(date(2024, 1, 30), "2024-01")[1] == (
        "the tournament ends 2024-01-30, after the closing date of the list of 1 February 2024 (2024-01-29; B.02 "
        "2022 [S]): it is rated on the list of 1 March 2024, filed under 2024-02 or later"
    )
    # The edition in force for the folder's list: B.02 2022 from January 2022, the 2014 text from July 2014.
    assert "(2022-01-29; B.02 2022 [S])" in _problem(date(2022, 1, 30), "2022-01")[1]
    assert "(2021-11-28; the 2014 regulations [S])" in _problem(date(2021, 11, 30), "2021-11")[1]
    assert "(2013-11-28; the 2014 regulations' closing date [U])" in _problem(date(2013, 11, 30), "2013-11")[1]
    assert _problem(date(2024, 3, 28), "2024-07")[1] == (
        "the tournament ended 2024-03-28: the list of 1 August 2024 is after the third list since (of 1 June 2024; "
        "B.02 2024 §9.1): not rated"
    )
    assert on_time_folder(date(2024, 1, 30)) == "2024-02" and on_time_folder(date(2024, 1, 29)) == "2024-01"


# -- end to end: a late tournament rated with the list in force at its start ------------------------------------

SCENARIOS = "scenarios:\n  actual:\n    rules: fide-historical\n"
SEED = "player_id,rating,birth_year\n1,2000,1980\n2,1900,1981\n3,1800,1982\n4,1700,1983\n"


@pytest.fixture(scope="module")
def calendar_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from assets.runtime.cli import main

    root = tmp_path_factory.mktemp("calendar")
    store = root / "store"
    files = {
        "players/2023-12/seed_list.csv": SEED,
        "GER/2023-12/dec-open.pgn": pgn_game("Dec Open", "2023.12.10", 1, 2, "1-0"),
        "GER/2024-01/jan-open.pgn": pgn_game("Jan Open", "2024.01.10", 1, 3, "0-1")
        # Ends 31 January, filed under January: after the closing date of the list of 1 February.
        + pgn_game("Month End", "2024.01.31", 2, 3, "1-0", start="2024.01.30"),
        # Played 22-28 January, reported for the list of 1 March: rated in February with the list of 1 January.
        "GER/2024-02/late-cup.pgn": pgn_game("Late Cup", "2024.01.22", 1, 4, "1/2-1/2", start="2024.01.22")
        + pgn_game("Late Cup", "2024.01.28", 4, 2, "1-0", start="2024.01.22")
        + pgn_game("Feb Open", "2024.03.02", 2, 3, "1-0"),  # dated after February
        # Ended 28 January, reported for the list of 1 July: after the third list (1 April).
        "GER/2024-06/old-cup.pgn": pgn_game("Old Cup", "2024.01.28", 3, 4, "1-0", start="2024.01.27"),
    }
    write_raw(store, files)
    (root / "scenarios.yaml").write_text(SCENARIOS)
    command = ["run", "--store", str(store), "--scenarios", str(root / "scenarios.yaml")]
    assert main([*command, "--dagster-home", str(root / "home")]) == 0
    return store


def _table(store: Path, table: str, month: str) -> pl.DataFrame:
    return pl.read_parquet(store / table / f"{month}.parquet")


def _ratings(store: Path, month: str) -> dict[int, int]:
    frame = _table(store, "actual/rating_list", month)
    return dict(zip(frame["player_id"], frame["rating"], strict=True))


def test_a_late_tournament_is_rated_with_the_list_in_force_at_its_start(calendar_store: Path):
    december, january = _ratings(calendar_store, "2023-12"), _ratings(calendar_store, "2024-01")
    assert december[1] != january[1], "player 1 played in January: the two lists differ"
    late = _table(calendar_store, "actual/rated_games", "2024-02").sort("white_id")
    used = dict(zip(late["white_id"], late["white_rating_used"], strict=True))
    assert used == {1: december[1], 4: december[4]}, "the list of 1 January 2024 (period 2023-12), not of 1 February"
    assert late["month"].unique().to_list() == ["2024-02"]


def test_outside_the_window_the_games_are_quarantined_with_their_reason(calendar_store: Path):
    reasons = {
        month: sorted(_table(calendar_store, "quarantine", month)["reason"].to_list())
        for month in ("2024-01", "2024-02", "2024-06")
    }
    assert reasons == {"2024-01": ["after_closing_date"], "2024-02": ["future"], "2024-06": ["too_late"]}
    detail = _table(calendar_store, "quarantine", "2024-01")["detail"].item()
    assert "filed under 2024-02" in detail and "closing date" in detail
    # Reconciliation: every raw record of every month is one game or one quarantined record.
    for month in ("2023-12", "2024-01", "2024-02", "2024-06"):
        raw = _table(calendar_store, "raw_games", month).height
        assert raw == _table(calendar_store, "games", month).height + _table(calendar_store, "quarantine", month).height


def test_reported_late_counts_games_rated_after_their_first_list():
    from pipeline.rules.calendar import reported_late, stated_tournament_ends

    games = pl.DataFrame(
        {
            "source_file": ["a.pgn"] * 2 + ["b.pgn"] * 2 + ["c.pgn"],
            "event_id": ["Late Cup"] * 2 + ["Month End"] * 2 + ["Feb Open"],
            # Late Cup ended 20 January (first list: 1 February; eleven days before the month's end, so no carry-over);
            # Month End ended 31 January, after that list's closing date (first list: 1 March, so on time in
            # February); Feb Open is February's own.
            "date": [date(2024, 1, 15), date(2024, 1, 20), date(2024, 1, 20), date(2024, 1, 31), date(2024, 2, 10)],
            "event_start": [date(2024, 1, 15)] * 2 + [date(2024, 1, 20)] * 2 + [date(2024, 2, 10)],
        }
    )
    every_event_named = pl.lit(True)
    assert reported_late(games, "2024-02", every_event_named) == 2
    assert reported_late(games.filter(pl.col("source_file") == "a.pgn"), "2024-01", every_event_named) == 0
    # Games of no named tournament are late each by its own day: of Month End's, the game of 20 January.
    assert reported_late(games, "2024-02", pl.col("source_file") != "b.pgn") == 3
    # A TRF's tag 052 may end a tournament after its last game: Late Cup stated to end on 30 January was first
    # rateable on 1 March's list, so February's folder has it on time.
    raw = games.with_columns(
        event_end=pl.when(pl.col("source_file") == "a.pgn").then(pl.lit(date(2024, 1, 30))),
        event_id=pl.when(pl.col("source_file") == "a.pgn").then(pl.lit(None)).otherwise("event_id"),
    )
    stated = stated_tournament_ends(raw)
    assert stated.rows() == [("a.pgn", "a.pgn", date(2024, 1, 30))]
    assert reported_late(games, "2024-02", every_event_named, stated.with_columns(event_id=pl.lit("Late Cup"))) == 0
    # A stated end earlier than the last game's day moves nothing, and a row naming no tournament keeps its own day.
    early = pl.DataFrame({"source_file": ["b.pgn"], "event_id": ["Month End"], "event_end": [date(2024, 1, 2)]})
    assert reported_late(games, "2024-02", every_event_named, early) == 2
    assert reported_late(games, "2024-02", pl.col("source_file") != "b.pgn", early) == 3


@pytest.mark.parametrize(
    ("event_end", "late"),
    [
        (date(2024, 4, 26), 0),  # four days to the month's end: in time for the list of 1 June too (§9.1)
        (date(2024, 4, 25), 0),  # five days: still
        (date(2024, 4, 24), 1),  # six: its list is 1 May's, so May's folder is a late report
        (date(2024, 3, 28), 1),  # the carry-over reaches the following list only (1 May), not 1 June
    ],
)
def test_reported_late_leaves_out_the_five_day_carry_over(event_end, late):
    """B.02 2024 §9.1 allows a tournament ending in a month's last five days to be reported for the following list:
    May's folder holds such a tournament of April in time, so the run summary does not count it as late.
    """
    from pipeline.rules.calendar import reported_late

    games = pl.DataFrame(
        {"source_file": ["a.pgn"], "event_id": ["Cup"], "date": [event_end], "event_start": [event_end]}
    )
    assert _problem(event_end, "2024-05")[0] is None
    assert reported_late(games, "2024-05", pl.lit(True)) == late


def _trf_player(rank: int, fide_id: int, cells: list[str], rating: int) -> str:
    """A TRF16 001 record (rank 5-8, name 15-47, rating 49-52, id 58-68, rounds from column 92)."""
    line = f"001 {rank:>4}      {f'Player,{rank}':<33} {rating:>4} GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  "
    return (line + "  ".join(cells)).rstrip()


# Played 22-28 January 2024, two rounds: 1 beats 2 and draws 3; 4 beats 3 and loses to... nobody (2 vs 4 drawn).
LATE_TRF = (
    "\n".join(
        [
            "012 Late Winter Open",
            "042 2024/01/22",
            "052 2024/01/28",
            "132" + " " * 88 + "24/01/22  24/01/28",
            _trf_player(1, 1, ["   2 w 1", "   3 b ="], 2050),
            _trf_player(2, 2, ["   1 b 0", "   4 w ="], 1950),
            _trf_player(3, 3, ["   4 w 0", "   1 w ="], 1800),
            _trf_player(4, 4, ["   3 b 1", "   2 b ="], 1700),
        ]
    )
    + "\n"
)


def test_a_trf_reported_a_month_late_is_rated_with_the_list_of_its_start_and_too_late_in_june(tmp_path: Path):
    from assets.runtime.cli import main

    store = tmp_path / "store"
    files = {
        "players/2023-12/seed_list.csv": SEED,
        # January's own games move players 1 and 3, so the lists of 1 January and 1 February differ for them.
        "GER/2024-01/jan-open.pgn": pgn_game("Jan Open", "2024.01.10", 1, 3, "0-1"),
        "GER/2024-02/late-winter.trf": LATE_TRF,
        "GER/2024-06/late-winter.trf": LATE_TRF,
    }
    write_raw(store, files)
    (tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    command = ["run", "--store", str(store), "--scenarios", str(tmp_path / "scenarios.yaml")]
    assert main([*command, "--dagster-home", str(tmp_path / "home")]) == 0

    # The list of 1 January 2024 is the seed list (the chain starts in January).
    december = {int(line.split(",")[0]): int(line.split(",")[1]) for line in SEED.splitlines()[1:]}
    january = _ratings(store, "2024-01")
    assert december[1] != january[1] and december[3] != january[3]
    rated = _table(store, "actual/rated_games", "2024-02")
    assert rated.height == 4 and rated["month"].unique().to_list() == ["2024-02"]
    used = {
        (row["white_id"], row["black_id"]): (row["white_rating_used"], row["black_rating_used"])
        for row in rated.iter_rows(named=True)
    }
    # The list of 1 January 2024 (period 2023-12), not of 1 February, nor the ratings the TRF states.
    assert used[(1, 2)] == (december[1], december[2]) and used[(3, 1)] == (december[3], december[1])
    february = _table(store, "actual/rating_list", "2024-02").filter(pl.col("player_id") == 1)
    assert february["games"].item() == 2
    # The same file filed for the list of 1 July: after the third list since its end (1 April), not rated.
    june = _table(store, "quarantine", "2024-06")
    assert june.height == 4 and set(june["reason"]) == {"too_late"}
    assert "B.02 2024 §9.1" in june["detail"][0] and "2024-01-28" in june["detail"][0]


def test_a_late_tournament_is_rated_with_the_k_of_the_list_in_force_at_its_start(tmp_path: Path):
    from assets.runtime.cli import main

    store = tmp_path / "store"
    # Player 1 is new to the list (26 games): K 40 until 30 games (B.02 2024 §8.3.3). Two games in December keep K 40
    # on the list of 1 January; two in January reach 30, so the list of 1 February gives K 20.
    seed = "player_id,rating,birth_year,games_total\n1,2000,1980,26\n" + "".join(
        f"{p},{1900 + 20 * p},1980,\n" for p in range(2, 7)
    )
    files = {
        "players/2023-12/seed_list.csv": seed,
        "GER/2023-12/dec.pgn": pgn_game("Dec Open", "2023.12.10", 1, 2, "1-0")
        + pgn_game("Dec Open", "2023.12.11", 3, 1, "0-1"),
        "GER/2024-01/jan.pgn": pgn_game("Jan Open", "2024.01.10", 1, 4, "1/2-1/2")
        + pgn_game("Jan Open", "2024.01.11", 5, 1, "1-0"),
        # Played 22-28 January, reported for the list of 1 March; and February's own event.
        "GER/2024-02/feb.pgn": pgn_game("Late Cup", "2024.01.22", 1, 6, "1-0", start="2024.01.22")
        + pgn_game("Late Cup", "2024.01.28", 2, 1, "0-1", start="2024.01.22")
        + pgn_game("Feb Open", "2024.02.10", 1, 3, "0-1"),
    }
    write_raw(store, files)
    (tmp_path / "scenarios.yaml").write_text(SCENARIOS)
    command = ["run", "--store", str(store), "--scenarios", str(tmp_path / "scenarios.yaml")]
    assert main([*command, "--dagster-home", str(tmp_path / "home")]) == 0

    def k_of(month: str) -> int:
        return _table(store, "actual/rating_list", month).filter(pl.col("player_id") == 1)["k"].item()

    assert (k_of("2023-12"), k_of("2024-01")) == (40, 20), "the lists of 1 January and 1 February"
    rated = _table(store, "actual/rated_games", "2024-02")
    sides = pl.concat(
        [
            rated.filter(pl.col("white_id") == 1).select(
                "event_id", k="white_k_used", delta=pl.col("white_score") - pl.col("white_expected")
            ),
            rated.filter(pl.col("black_id") == 1).select(
                "event_id", k="black_k_used", delta=1.0 - pl.col("white_score") - pl.col("black_expected")
            ),
        ]
    )
    events = sides.with_columns(pl.col("event_id").str.split("#").list.last())  # <file>#<event>
    assert dict(events.group_by("event_id").agg(pl.col("k").unique()).iter_rows()) == {
        "Late Cup": [k_of("2023-12")],
        "Feb Open": [k_of("2024-01")],
    }
    february = _table(store, "actual/rating_list", "2024-02").filter(pl.col("player_id") == 1)
    weighted = float((sides["k"].cast(pl.Float64) * sides["delta"]).sum())
    period_k_only = 20 * float(sides["delta"].sum())
    assert february["change"].item() == math.copysign(math.floor(abs(weighted) + 0.5), weighted)
    assert round(period_k_only) != february["change"].item(), "the case tells the two readings apart"
    assert february["k_used"].item() == 20, "the list's K used is the period's"
    # The player card shows each game's K and adds up the same change.
    from pipeline.reports.player_card import player_report
    from pipeline.store.object_store import ObjectStore

    report = player_report(ObjectStore(str(store)), 1, "actual", "2024-02")
    assert sorted(report.games["k"].to_list()) == [20, 40, 40]
    assert report.rounded_change == february["change"].item()


@pytest.mark.parametrize(("stated_end", "late"), [("2024/01/20", 4), ("2024/01/30", 0)])
def test_the_late_count_of_a_month_reads_the_end_a_trf_states(stated_end: str, late: int):
    """Played until 20 January: reported for February's folder it is late, unless its 052 says it ended on the 30th,
    after the closing date of the list of 1 February (so its first list is 1 March). (Played until the 28th, §9.1's
    carry-over would have it in time for 1 March's list either way.)
    """
    from pipeline.formats import read_dumps
    from pipeline.rules.calendar import stated_tournament_ends
    from pipeline.validate.month_figures import validation_figures
    from pipeline.validate.split import split_games
    from schemas import Players
    from schemas.util import empty_frame

    played_earlier = LATE_TRF.replace("042 2024/01/22", "042 2024/01/15").replace(
        "24/01/22  24/01/28", "24/01/15  24/01/20"
    )
    text = played_earlier.replace("052 2024/01/28", f"052 {stated_end}").encode()
    raw = pl.concat(read_dumps([(text, "GER/2024-02/late-winter.trf", "GER")], "2024-02"))
    games, quarantine = split_games(raw, empty_frame(Players), "2024-02")
    assert games.height == 4 and quarantine.is_empty()
    identities = pl.DataFrame({"status": []}, schema={"status": pl.Utf8})
    figures = validation_figures(raw.height, games, quarantine, identities, "2024-02", stated_tournament_ends(raw))
    assert figures["games"]["reported_late"] == late


def test_a_game_dated_in_part_is_too_late_only_by_the_last_day_its_date_allows():
    """A PGN date known in part ('2023.??.??', '2023.12.??') gives the first and last days of its period: the first
    proves a game `future`, only the last can prove it `too_late`. In January 2024's folder a game of 2023.??.?? may
    have been played on 31 December 2023, in time for that folder's list (1 February); it was quarantined as too late
    with a tournament "ended 2023-01-01" nobody reported. Its event starts in the latest month the date allows (the
    list in force: 1 December 2023's), as for 2023.12.??, which was given the folder's first day (1 January's list).
    """
    from pipeline.formats import read_dumps
    from pipeline.validate.split import split_games
    from schemas import Players
    from schemas.util import empty_frame

    text = (
        pgn_game("Year Only", "2023.??.??", 1, 2, "1-0")
        + pgn_game("Month Only", "2023.12.??", 3, 4, "1-0")
        + pgn_game("Old Month", "2023.10.??", 1, 3, "1-0")
        + pgn_game("This Year", "2024.??.??", 2, 4, "1-0")
    ).encode()

    def split(month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        raw = pl.concat(read_dumps([(text, f"GER/{month}/partial.pgn", "GER")], month))
        return split_games(raw, empty_frame(Players), month)

    raw = pl.concat(read_dumps([(text, "GER/2024-01/partial.pgn", "GER")], "2024-01"))
    assert raw.select("date_from", "date_to").rows() == [
        (date(2023, 1, 1), date(2023, 12, 31)),
        (date(2023, 12, 1), date(2023, 12, 31)),
        (date(2023, 10, 1), date(2023, 10, 31)),
        (date(2024, 1, 1), date(2024, 12, 31)),
    ]
    games, quarantine = split("2024-01")
    starts = dict(zip(games["event_id"].str.split("#").list.last(), games["event_start"], strict=True))
    assert starts == {"Year Only": date(2023, 12, 1), "Month Only": date(2023, 12, 1), "This Year": date(2024, 1, 1)}
    assert games["date"].null_count() == 3, "a partial date's bounds are never stored as the game's date"
    # 2023.10.?? ended by 31 October: its third list is 1 January 2024, before the folder's.
    assert quarantine.select("reason", "detail").rows() == [
        (
            "too_late",
            "the tournament ended 2023-10-31 at the latest (a date known in part): the list of 1 February 2024 is "
            "after the third list since (of 1 January 2024; late window [U]): not rated",
        )
    ]
    # For April's list (1 May) even 31 December 2023 is too late: the detail names that bound, not 1 January.
    games, quarantine = split("2024-04")
    late = quarantine.filter(pl.col("source_line") == 1)
    assert late["reason"].to_list() == ["too_late"]
    assert late["detail"].item().startswith("the tournament ended 2023-12-31 at the latest (a date known in part)")


def test_the_calendar_s_list_months_are_the_presets_for_every_month_2000_to_2030():
    """FIDE's list calendar is written twice, as data: the reporting eras' list months (rules/calendar.py) and the
    standard presets' `list_months` as fide-historical switches them. The list of period M is dated the 1st of M+1.
    """
    from pipeline.months import add_months, month_index, month_range
    from pipeline.rules.calendar import list_of_period
    from pipeline.rules.model import resolve_rules

    periods = month_range("2000-01", "2030-12")
    calendar = [list_of_period(m) == month_index(add_months(m, 1)) for m in periods]
    presets = [resolve_rules("fide-historical", m).publishes_list_after(m) for m in periods]
    disagree = [m for m, a, b in zip(periods, calendar, presets, strict=True) if a != b]
    assert not disagree, f"the calendar and the presets disagree on the lists after {disagree[:6]}"
    assert 0 < sum(calendar) < len(periods)  # both quarterly and monthly eras are covered
