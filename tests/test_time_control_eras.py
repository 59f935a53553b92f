"""Every game's time-control class by the FIDE era of its day (pipeline.rules.time_controls).

The readers' parse-time class (the current era) and validation: the era's class overrides the dump's, a clock FIDE does
not rate is quarantined as time_control_not_ratable, a game without a clock keeps its declared class.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.period_files import read_period_games
from pipeline.formats import read_dumps
from pipeline.formats.fields import classify_time_control
from pipeline.formats.table_files import InputFileError
from pipeline.rules.time_controls import (
    CURRENT_ERA,
    TIME_CONTROL_ERAS,
    TimeControlEra,
    describe_time_control_eras,
    era_at,
    not_ratable,
    not_ratable_detail,
    time_control_class,
)
from pipeline.validate.split import split_month
from schemas import Players, empty_frame
from schemas.quarantine import QUARANTINE_REASONS

DATA = Path(__file__).parent / "data"

NOT_RATABLE = "not ratable"


def classed(base: int | None, increment: int | None, day: str | None) -> str | None:
    """The class of one clock on one day, or NOT_RATABLE."""
    frame = pl.DataFrame(
        {"base": [base], "increment": [increment], "day": [date.fromisoformat(day) if day else None]},
        schema={"base": pl.Int32, "increment": pl.Int32, "day": pl.Date},
    )
    base_, increment_, day_ = pl.col("base"), pl.col("increment"), pl.col("day")
    row = frame.select(
        time_control_class(base_, increment_, day_), not_ratable(base_, increment_, day_).alias("too_fast")
    ).row(0)
    return NOT_RATABLE if row[1] else row[0]


# (base seconds, increment seconds, game day) -> class; t = base + 60 x increment, in minutes.
CASES = [
    # 2012 rules (FIDE news 5721), also for 2013 and earlier days: rapid 15 <= t < 60, blitz 5 <= t < 15.
    (5400, 30, "2013-05-01", "classical"),
    (900, 10, "2013-05-01", "rapid"),
    (900, 0, "2013-05-01", "rapid"),  # exactly 15: rapid ("at least 15")
    (899, 0, "2013-05-01", "blitz"),
    (600, 0, "2013-05-01", "blitz"),  # 10 min is blitz under the 2012 rules: under 15
    (660, 0, "2014-06-30", "blitz"),  # 11 min: still the 2012 rules on their last day
    (300, 0, "2013-05-01", "blitz"),  # exactly 5: blitz ("at least five minutes")
    (180, 2, "2013-05-01", "blitz"),  # 3 + 2 = 5: "3 minutes plus 2 second increment ... is acceptable"
    (240, 0, "2013-05-01", NOT_RATABLE),
    (240, 0, "2014-06-30", NOT_RATABLE),
    (240, 0, "2005-03-01", NOT_RATABLE),  # before 2012: the 2012 rules
    (600, 0, "2005-03-01", "blitz"),
    # Laws of Chess 2014, from 1 Jul 2014: rapid 10 < t < 60, blitz 3 < t <= 10 (the minimum read from B.02 2024).
    (600, 0, "2015-01-01", "blitz"),  # exactly 10: blitz ("10 minutes or less")
    (660, 0, "2015-01-01", "rapid"),
    (660, 0, "2014-07-01", "rapid"),  # the first day of the 2014 rules
    (601, 0, "2015-01-01", "rapid"),
    (240, 0, "2014-07-01", "blitz"),
    (181, 0, "2015-01-01", "blitz"),
    (180, 0, "2015-01-01", NOT_RATABLE),
    (180, 0, "2024-02-29", NOT_RATABLE),
    # B.02 2024, from 1 Mar 2024: rapid 10 < t < 60, blitz 3 < t <= 10.
    (180, 0, "2024-06-01", NOT_RATABLE),  # exactly 3: "more than 3 minutes"
    (180, 2, "2024-06-01", "blitz"),  # 3 + 2 = 5 min
    (60, 0, "2024-06-01", NOT_RATABLE),  # bullet
    (0, 0, "2024-06-01", NOT_RATABLE),
    (300, None, "2024-06-01", "blitz"),  # no increment given: none
    (600, 5, "2024-06-01", "rapid"),  # 10 + 5 = 15
    (2400, 20, "2024-06-01", "classical"),  # 40 + 20 = 60
    # Standard from 60 minutes in every era: exactly 60 is standard, not rapid.
    (3600, 0, "2013-05-01", "classical"),
    (3600, 0, "2015-01-01", "classical"),
    (3600, 0, "2024-06-01", "classical"),
    (3599, 0, "2013-05-01", "rapid"),
    (3599, 0, "2024-06-01", "rapid"),
    # No day: the current era. No clock: unknown.
    (660, 0, None, "rapid"),
    (180, 0, None, NOT_RATABLE),
    (None, None, "2024-06-01", None),
    (None, 5, "2013-05-01", None),
]


@pytest.mark.parametrize("base, increment, day, expected", CASES)
def test_class_by_era(base, increment, day, expected):
    assert classed(base, increment, day) == expected


@pytest.mark.parametrize(
    "base, increment, day, detail",
    [
        (
            180,
            0,
            "2024-06-01",
            "3+0: 3 minutes for 60 moves is not more than blitz's minimum of 3 minutes (B.02 2024 §1.1.2)",
        ),
        (
            240,
            0,
            "2013-05-01",
            "4+0: 4 minutes for 60 moves is less than blitz's minimum of 5 minutes (FIDE news 5721, 16 Nov 2011)",
        ),
        (
            90,
            1,
            "2016-01-01",
            "1.5+1: 2.5 minutes for 60 moves is not more than blitz's minimum of 3 minutes"
            " (B.02 2024 §1.1.2, read back to 2014)",
        ),
        (180, 2, "2024-06-01", None),
        (None, None, "2024-06-01", None),
    ],
)
def test_not_ratable_detail(base, increment, day, detail):
    frame = pl.DataFrame(
        {"base": [base], "increment": [increment], "day": [date.fromisoformat(day)]},
        schema={"base": pl.Int32, "increment": pl.Int32, "day": pl.Date},
    )
    assert frame.select(not_ratable_detail(pl.col("base"), pl.col("increment"), pl.col("day"))).item() == detail


def test_the_readers_class_is_the_current_eras():
    """Parse time has no game day: classify_time_control gives the current era's class, 3 minutes or less blitz."""
    clocks = pl.DataFrame(
        {"base": [0, 60, 180, 181, 600, 601, 900, 3599, 3600, 5400, None], "increment": [0] * 10 + [None]},
        schema={"base": pl.Int32, "increment": pl.Int32},
    )
    base, increment = pl.col("base"), pl.col("increment")
    today = pl.lit(date(2030, 1, 1))
    got = clocks.select(
        classify_time_control(base, increment).alias("parse"), time_control_class(base, increment, today).alias("era")
    )
    assert got["parse"].to_list() == got["era"].to_list()
    assert got["parse"].to_list() == ["blitz"] * 5 + ["rapid"] * 3 + ["classical"] * 2 + [None]


def test_eras_are_data_in_order():
    starts = [era.start for era in TIME_CONTROL_ERAS]
    assert starts == sorted(starts) == [date(2012, 1, 1), date(2014, 7, 1), date(2024, 3, 1)]
    assert CURRENT_ERA is TIME_CONTROL_ERAS[-1] and era_at(None) is CURRENT_ERA
    assert era_at(date(2001, 1, 1)) is era_at(date(2014, 6, 30)) is TIME_CONTROL_ERAS[0]
    assert era_at(date(2014, 7, 1)) is TIME_CONTROL_ERAS[1] and era_at(date(2024, 3, 1)) is CURRENT_ERA
    with pytest.raises(ValueError, match="rapid must start where blitz ends"):
        TimeControlEra(date(2030, 1, 1), 180, False, 600, True, 600, True, 3600, False, "-", "-")


def test_the_eras_section_for_the_rules_doc():
    text = describe_time_control_eras()
    assert text.startswith("## Time-control classes by era\n")
    for era in TIME_CONTROL_ERAS:
        assert f"| {era.start}" in text and era.source in text
    assert "| 2014-07-01 | t ≥ 60 | 10 < t < 60 | 3 < t ≤ 10 | t ≤ 3 |" in text
    assert "| 5 ≤ t < 15 | t < 5 |" in text and "OPEN" in text


# -- validation ------------------------------------------------------------------------------------


HEADER = "event_id,event_start,date,round,white_id,black_id,result,time_control,tc_base_seconds,tc_increment_seconds\n"


def split_csv(month: str, rows: list[str]):
    text = HEADER + "".join(f"{row}\n" for row in rows)
    raw = pl.concat(read_dumps([(text.encode(), f"GER/{month}/games.csv", "GER")], month))
    split = split_month(raw, empty_frame(Players), month)
    landed = pl.concat([split.games["game_id"], split.quarantine["record_id"]])
    assert landed.is_unique().all() and landed.sort().equals(raw["record_id"].sort())  # each row in exactly one
    return split


def by_round(frame: pl.DataFrame, columns: tuple[str, ...]) -> dict[int, tuple]:
    return {row["round"]: tuple(row[c] for c in columns) for row in frame.iter_rows(named=True)}


def test_validation_classes_by_era_and_quarantines_clocks_fide_does_not_rate():
    split = split_csv(
        "2024-06",
        [
            "e,2024-06-01,2024-06-02,1,1001,1002,1-0,,180,0",  # 3+0: not ratable
            "e,2024-06-01,2024-06-02,2,1001,1003,1-0,rapid,,",  # no clock: the declared class
            "e,2024-06-01,2024-06-02,3,1002,1003,0-1,,,",  # no clock, no class: classical
            "e,2024-06-01,2024-06-02,4,1002,1004,0-1,modern,5400,30",  # declared modern, classical clock
            "e,2024-06-01,2024-06-02,5,1003,1004,0-1,modern,900,10",  # declared modern, rapid clock: rapid
            "e,2024-06-01,2024-06-02,6,1001,1004,1-0,classical,180,2",  # the clock wins over the declared class
            "e,2024-06-01,2024-06-02,7,1004,1005,1-0,blitz,,",
            "e,2024-05-01,2024-05-20,8,1001,1005,1-0,,60,0",  # outside the month too: not ratable is said first
            "e,2024-06-01,2024-06-02,9,1002,1005,+-,,60,0",  # a forfeit: unplayed, whatever its clock
        ],
    )
    games = by_round(split.games, ("time_control", "tc_base_seconds"))
    assert games == {
        2: ("rapid", None),
        3: ("classical", None),
        4: ("modern", 5400),
        5: ("rapid", 900),
        6: ("blitz", 180),
        7: ("blitz", None),
    }
    quarantine = by_round(
        split.quarantine.with_columns(pl.col("source_line").sub(1).cast(pl.Int32).alias("round")), ("reason", "detail")
    )
    assert quarantine == {
        1: (
            "time_control_not_ratable",
            "3+0: 3 minutes for 60 moves is not more than blitz's minimum of 3 minutes (B.02 2024 §1.1.2)",
        ),
        8: (
            "time_control_not_ratable",
            "1+0: 1 minute for 60 moves is not more than blitz's minimum of 3 minutes (B.02 2024 §1.1.2)",
        ),
        9: ("unplayed", "forfeit (result +-)"),
    }
    assert "time_control_not_ratable" in QUARANTINE_REASONS


def test_the_era_is_the_games_day_else_its_events_start():
    june = split_csv(
        "2014-06",
        [
            # Ending by 28 June, the closing date of the list of 1 July (the calendar): rated in June.
            "e,2014-06-01,2014-06-28,1,1001,1002,1-0,,660,0",  # 11 min, 2012 rules: blitz
            "e,2014-06-01,2014-06-28,2,1001,1003,1-0,,240,0",  # 4 min, 2012 rules: under 5, not ratable
            "e,2014-06-01,,3,1002,1003,1-0,,900,0",  # no date: the event's start, 15 min: rapid
        ],
    )
    assert by_round(june.games, ("time_control",)) == {1: ("blitz",), 3: ("rapid",)}
    assert june.quarantine["reason"].to_list() == ["time_control_not_ratable"]
    assert june.quarantine["detail"].to_list() == [
        "4+0: 4 minutes for 60 moves is less than blitz's minimum of 5 minutes (FIDE news 5721, 16 Nov 2011)"
    ]
    # The same event's games of the next day, under the Laws of 2014.
    july = split_csv(
        "2014-07",
        [
            "e,2014-06-28,2014-07-01,1,1001,1002,1-0,,660,0",  # 11 min: rapid
            "e,2014-06-28,2014-07-01,2,1001,1003,1-0,,240,0",  # 4 min: blitz
            "e,2014-07-01,,3,1002,1003,1-0,,600,0",  # no date, event from 1 Jul: 10 min, blitz
        ],
    )
    assert by_round(july.games, ("time_control",)) == {1: ("rapid",), 2: ("blitz",), 3: ("blitz",)}
    assert july.quarantine.is_empty()


def test_rate_period_games_are_classed_by_the_era_of_their_day(tmp_path: Path):
    """`ratings rate-period` has no validation: its games file is classed as validation would class it."""
    games = tmp_path / "games.csv"
    games.write_text(
        "event_id,white_id,black_id,result,date,time_control\n"
        "a,1,2,1-0,2014-06-30,11+0\n"  # 2012 rules: blitz under 15 minutes
        "b,1,2,1-0,2014-07-01,11+0\n"  # Laws of 2014: rapid over 10 minutes
        "c,1,2,1-0,,12+0\n"  # no date: its event's start, 30 June: blitz
        "c,3,4,1-0,2014-06-30,blitz\n"
        "d,1,2,1-0,,4+0\n"  # no date in the event: the month's first day, July 2014: blitz over 3 minutes
    )
    assert read_period_games(str(games), "2014-07")["time_control"].to_list() == [
        "blitz",
        "rapid",
        "blitz",
        "blitz",
        "blitz",
    ]
    # Without a date column every game is of the month's first day: in 2013, 12 minutes are blitz (not the rapid
    # of today's definitions).
    games.write_text("event_id,white_id,black_id,result,time_control\ne,5,6,1-0,12+0\n")
    assert read_period_games(str(games), "2013-05")["time_control"].to_list() == ["blitz"]
    assert read_period_games(str(games), "2024-05")["time_control"].to_list() == ["rapid"]


@pytest.mark.parametrize(
    ("month", "clock", "line", "detail"),
    [
        ("2024-05", "3+0", 3, "3+0: 3 minutes for 60 moves is not more than blitz's minimum of 3 minutes (B.02 2024"),
        ("2013-05", "4+0", 3, "4+0: 4 minutes for 60 moves is less than blitz's minimum of 5 minutes (FIDE news 5721"),
    ],
)
def test_rate_period_refuses_a_clock_fide_does_not_rate_on_its_day(
    tmp_path: Path, month: str, clock: str, line: int, detail: str
):
    games = tmp_path / "games.csv"
    games.write_text(f"event_id,white_id,black_id,result,time_control\ne,1,2,1-0,5+3\ne,3,4,1-0,{clock}\n")
    with pytest.raises(InputFileError) as error:
        read_period_games(str(games), month)
    message = str(error.value)
    assert message.startswith(f"{games}: line {line}: time_control '{clock}' on {month}-01 is not ratable by FIDE")
    assert detail in message and "remove the game" in message


# -- TRF: the clock of tag 122 when tag 222 is absent, the class tag 092 declares when there is no clock ---------


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["122 90 min + 30 sec"], ("classical", 5400, 30)),
        (["122 15'+10''"], ("rapid", 900, 10)),
        (["122 3'+2''"], ("blitz", 180, 2)),
        (["122 90+30"], ("classical", 5400, 30)),  # typed: a base up to 150 is minutes
        (["122 90'+30''", "222 900+10"], ("rapid", 900, 10)),  # TRF-2026's encoded clock wins
        (["092 Individual: Swiss-System, Rapid"], ("rapid", None, None)),  # no clock: the declared class
        (["092 Individual: Swiss-System, Blitz", "122 sandclock 60"], ("blitz", None, None)),  # a clock not read
        (["122 40/120, 60"], ("classical", 7200, 0)),  # of several periods the first, typed in minutes
        (["122 G/90;d5"], ("classical", 5400, 5)),  # a delay counts as an increment
        (["092 Individual: Swiss-System"], ("classical", None, None)),
        (["122 Blitz 3+2"], ("blitz", 180, 2)),  # a class word, then the clock
        (["122 G/90+30"], ("classical", 5400, 30)),  # US Chess notation, in minutes
        (["122 G60+30"], ("classical", 3600, 30)),
        (["122 90m+30s"], ("classical", 5400, 30)),
        (["122 1h30+30s"], ("classical", 5400, 30)),
        (["122 90 min + 30 sec", "222 5400 + 30"], ("classical", 5400, 30)),
        (["122 Rapid"], ("rapid", None, None)),  # a class word alone states the class
        (["122 ?"], ("classical", None, None)),  # unknown: no clock stated
    ],
)
def test_trf_time_control_from_its_tags(tags, expected):
    from pipeline.formats.trf import parse_trf

    lines = (DATA / "tiny.trf").read_bytes().decode("latin-1").splitlines()
    kept = [line for line in lines if not line.startswith(("092", "122", "222"))]
    records = parse_trf("\n".join(kept[:5] + tags + kept[5:]), "tiny")
    played = records.filter(pl.col("parse_error").is_null())
    assert played.height > 0
    assert set(played.select("time_control", "tc_base_seconds", "tc_increment_seconds").rows()) == {expected}


@pytest.mark.parametrize("clock", ["122 sandclock 60", "122 40 moves in a while", "222 *60"])
def test_trf_clock_that_cannot_be_read_without_a_class_is_unparseable(clock):
    """A clock stated but not read, with no class in tag 092, was rated as standard: each record says why."""
    from pipeline.formats.trf import parse_trf

    lines = (DATA / "tiny.trf").read_bytes().decode("latin-1").splitlines()
    kept = [line for line in lines if not line.startswith(("092", "122", "222"))]
    records = parse_trf("\n".join([*kept[:5], clock, *kept[5:]]), "tiny")
    detail = (
        f"time control (tag {clock[:3]}) '{clock[4:]}' is neither a clock this reader knows nor a class (classical, "
        "rapid, blitz): write the base and the increment with their units, as in 90 min + 30 s (tag 092 names no "
        "class either)"
    )
    assert records.height > 0
    assert records["parse_error"].str.contains(detail, literal=True).all()
