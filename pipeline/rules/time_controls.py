"""FIDE's time-control classes (classical, rapid, blitz, not ratable) by era, as data and Polars expressions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then


@dataclass(frozen=True)
class TimeControlEra:
    """FIDE's rapid and blitz definitions from `start` on, in seconds for 60 moves (base + 60 x increment).

    Blitz runs from blitz_from to blitz_to, rapid from rapid_from (= blitz_to, the other side of the same
    boundary) to rapid_to; from rapid_to on a game is standard (classical). A clock below blitz's minimum
    is a blitz game under the Laws (their blitz has no minimum) that the rating regulations do not rate.
    """

    start: date
    blitz_from: int
    blitz_from_inclusive: bool
    blitz_to: int
    blitz_to_inclusive: bool
    rapid_from: int
    rapid_from_inclusive: bool
    rapid_to: int
    rapid_to_inclusive: bool
    source: str  # the edition and clauses, for docs/rules.md
    minimum_source: str  # where blitz's minimum is written, for a quarantined game's detail

    def __post_init__(self) -> None:
        # Rapid starts where blitz ends, the boundary on exactly one side: no clock falls between them.
        if self.rapid_from != self.blitz_to or self.rapid_from_inclusive == self.blitz_to_inclusive:
            raise ValueError(f"era from {self.start}: rapid must start where blitz ends")


TIME_CONTROL_ERAS: tuple[TimeControlEra, ...] = (
    # FIDE news 5721 (16 Nov 2011), rapid and blitz rating from events of 1 Jan 2012: rapid "at least 15 minutes,
    # but less than 60 minutes ... the time allotted + 60 times any increment or delay"; "Only those "blitz" games
    # where each player has at least five minutes, but less than 15 minutes, after adjustment for any increment
    # or delay mode, will be rated." Also used for earlier dates (no FIDE rapid or blitz rating before).
    TimeControlEra(
        start=date(2012, 1, 1),
        blitz_from=5 * 60,
        blitz_from_inclusive=True,
        blitz_to=15 * 60,
        blitz_to_inclusive=False,
        rapid_from=15 * 60,
        rapid_from_inclusive=True,
        rapid_to=60 * 60,
        rapid_to_inclusive=False,
        source="FIDE news 5721 (16 Nov 2011): rapid and blitz rating from events of 1 Jan 2012",
        minimum_source="FIDE news 5721, 16 Nov 2011",
    ),
    # Laws of Chess 2014 (in force 1 Jul 2014), A.1: rapid "more than 10 minutes but less than 60 minutes ... or
    # the time allotted plus 60 times any increment"; B.1: blitz "10 minutes or less ... or the allotted time plus
    # 60 times any increment is 10 minutes or less". The Laws give blitz no minimum; the 3 minutes are written only
    # in the 2024 rating regulations (B.02 2024 §1.1.2): read back to 2014 (OPEN, no 2014-2022 rating text found).
    TimeControlEra(
        start=date(2014, 7, 1),
        blitz_from=3 * 60,
        blitz_from_inclusive=False,
        blitz_to=10 * 60,
        blitz_to_inclusive=True,
        rapid_from=10 * 60,
        rapid_from_inclusive=False,
        rapid_to=60 * 60,
        rapid_to_inclusive=False,
        source="Laws of Chess 2014, appendices A.1 and B.1; blitz's 3-minute minimum from B.02 2024 §1.1.2 (OPEN)",
        minimum_source="B.02 2024 §1.1.2, read back to 2014",
    ),
    # B.02 Rapid and Blitz Rating Regulations 2024 (applied from 1 Mar 2024), §1.1.1: rapid "more than 10 minutes
    # but less than 60 minutes for each player; or the time allotted + 60 times any increment must be more than 10
    # minutes but less than 60 minutes"; §1.1.2: blitz "more than 3 minutes but not more than 10 minutes ... or the
    # time allotted + 60 times any increment must be more than 3 minutes but not more than 10 minutes".
    TimeControlEra(
        start=date(2024, 3, 1),
        blitz_from=3 * 60,
        blitz_from_inclusive=False,
        blitz_to=10 * 60,
        blitz_to_inclusive=True,
        rapid_from=10 * 60,
        rapid_from_inclusive=False,
        rapid_to=60 * 60,
        rapid_to_inclusive=False,
        source="B.02 Rapid and Blitz Rating Regulations 2024, §1.1.1-1.1.2",
        minimum_source="B.02 2024 §1.1.2",
    ),
)
#: The era in force today: the readers' class at parse time, when no game day is at hand.
CURRENT_ERA = TIME_CONTROL_ERAS[-1]


def era_at(day: date | None) -> TimeControlEra:
    """The era in force on `day` (the first era for earlier days; the current one when the day is unknown)."""
    if day is None:
        return CURRENT_ERA
    return next((era for era in reversed(TIME_CONTROL_ERAS) if day >= era.start), TIME_CONTROL_ERAS[0])


def time_for_60_moves(base_seconds: pl.Expr, increment_seconds: pl.Expr) -> pl.Expr:
    """Seconds for 60 moves, FIDE's count: base + 60 x increment (a missing increment is none); null if no base."""
    return base_seconds.cast(pl.Int64) + 60 * increment_seconds.cast(pl.Int64).fill_null(0)


def time_control_class(base_seconds: pl.Expr, increment_seconds: pl.Expr, day: pl.Expr | None = None) -> pl.Expr:
    """'classical' / 'rapid' / 'blitz' under the era in force on `day` (a Date; null or None: the current era);
    null when the clock is unknown. A clock below blitz's minimum is 'blitz' here: see not_ratable_detail.
    """
    total = time_for_60_moves(base_seconds, increment_seconds)

    def in_era(era: TimeControlEra) -> pl.Expr:
        return (
            pl.when(total.is_null())
            .then(pl.lit(None, pl.Utf8))
            .when(_up_to(total, era.blitz_to, era.blitz_to_inclusive))
            .then(pl.lit("blitz"))
            .when(_up_to(total, era.rapid_to, era.rapid_to_inclusive))
            .then(pl.lit("rapid"))
            .otherwise(pl.lit("classical"))
        )

    return _by_era(day, in_era)


def not_ratable_detail(base_seconds: pl.Expr, increment_seconds: pl.Expr, day: pl.Expr | None = None) -> pl.Expr:
    """Why a clock is too fast for FIDE rating on `day` ('3+0: 3 minutes for 60 moves is not more than blitz's
    minimum of 3 minutes (B.02 2024 §1.1.2)'), or null: a ratable or unknown clock.
    """
    total = time_for_60_moves(base_seconds, increment_seconds)

    def in_era(era: TimeControlEra) -> pl.Expr:
        relation = "is less than" if era.blitz_from_inclusive else "is not more than"
        return pl.when(_up_to(total, era.blitz_from, not era.blitz_from_inclusive)).then(
            pl.format(
                f"{{}}+{{}}: {{}} {{}} for 60 moves {relation} blitz's minimum of {era.blitz_from / 60:g} minutes "
                f"({era.minimum_source})",
                _minutes(base_seconds.cast(pl.Int64)),
                increment_seconds.cast(pl.Int64).fill_null(0),
                _minutes(total),
                pl.when(total == 60).then(pl.lit("minute")).otherwise(pl.lit("minutes")),
            )
        )

    return _by_era(day, in_era)


def not_ratable(base_seconds: pl.Expr, increment_seconds: pl.Expr, day: pl.Expr | None = None) -> pl.Expr:
    """True when a known clock is too fast for FIDE rating on `day` (not_ratable_detail), else False."""
    return not_ratable_detail(base_seconds, increment_seconds, day).is_not_null()


def _up_to(total: pl.Expr, bound: int, inclusive: bool) -> pl.Expr:
    return total <= bound if inclusive else total < bound


def _by_era(day: pl.Expr | None, in_era: Callable[[TimeControlEra], pl.Expr]) -> pl.Expr:
    """in_era(era) of the era in force on each row's `day`; a null day (or no day) gets the current era's."""
    if day is None:
        return in_era(CURRENT_ERA)
    eras = TIME_CONTROL_ERAS
    chain: Then | ChainedThen = pl.when(day < pl.lit(eras[1].start)).then(in_era(eras[0]))
    for era, following in zip(eras[1:-1], eras[2:], strict=True):
        chain = chain.when(day < pl.lit(following.start)).then(in_era(era))
    return chain.otherwise(in_era(eras[-1]))


def _minutes(seconds: pl.Expr) -> pl.Expr:
    """Seconds as minutes for a message: '3', '2.5', '3.33'."""
    return (
        pl.when(seconds % 60 == 0).then((seconds // 60).cast(pl.Utf8)).otherwise((seconds / 60).round(2).cast(pl.Utf8))
    )


# -- docs/rules.md -----------------------------------------------------------------------------------
def _range_text(low: int, low_inclusive: bool, high: int, high_inclusive: bool) -> str:
    return f"{low / 60:g} {'≤' if low_inclusive else '<'} t {'≤' if high_inclusive else '<'} {high / 60:g}"


def describe_time_control_eras() -> str:
    """A Markdown section for docs/rules.md: the eras' bounds, their sources, the open points and readings."""
    lines = [
        "## Time-control classes by era",
        "",
        "Generated from `pipeline/rules/time_controls.py`. t = minutes for 60 moves, base + 60 x increment",
        "(FIDE's count; a delay counts as an increment). The era is the one in force on the game's day (its date,",
        "else its event's start). Validation (`pipeline/validate/split.py`) classes every game with a known clock",
        "by its era, overriding the class the dump or reader gave, except that a declared `modern` stays `modern`",
        "where its era says classical; a game without a clock keeps the class its dump declares, else classical.",
        "A clock a dump states but its reader cannot read is no missing clock: without a class beside it the game",
        "is `unparseable`, naming the value (README, 'Rating your own federation's files').",
        "A clock at or below blitz's minimum is quarantined as `time_control_not_ratable`. `ratings rate-period`",
        "classes its games file's clocks the same way (the game's date, else its event's first date, else the",
        "period's first day) and refuses such a clock, naming the file and the line.",
        "",
        "| from | classical | rapid | blitz | not ratable | source |",
        "|---|---|---|---|---|---|",
    ]
    for index, era in enumerate(TIME_CONTROL_ERAS):
        start = f"{era.start} (and earlier days)" if index == 0 else str(era.start)
        classical = f"t {'>' if era.rapid_to_inclusive else '≥'} {era.rapid_to / 60:g}"
        rapid = _range_text(era.rapid_from, era.rapid_from_inclusive, era.rapid_to, era.rapid_to_inclusive)
        blitz = _range_text(era.blitz_from, era.blitz_from_inclusive, era.blitz_to, era.blitz_to_inclusive)
        too_fast = f"t {'<' if era.blitz_from_inclusive else '≤'} {era.blitz_from / 60:g}"
        lines.append(f"| {start} | {classical} | {rapid} | {blitz} | {too_fast} | {era.source} |")
    lines += [
        "",
        "Open points and the readings chosen:",
        "",
        "- **Before 2012.** FIDE rated no rapid or blitz games before events of 1 Jan 2012; earlier games are",
        "  classed by the 2012 definitions (the Laws of 2009 had the same 15- and 60-minute boundaries, but no",
        "  blitz minimum: the 5-minute minimum is the rating framework's).",
        "- **The 15 to 10 minute switch.** Taken on 1 Jul 2014, the Laws of Chess 2014's date. A report of Sep",
        "  2012 (chess-news.ru, quoting Tkachev) gives 1 Jul 2013: OPEN.",
        "- **Blitz's minimum from 1 Jul 2014 to 29 Feb 2024.** The Laws' blitz has no minimum and the 2014-2022",
        "  rating regulations' wording was not found; the 3 minutes (exclusive) written in B.02 2024 §1.1.2 are",
        "  read back to 1 Jul 2014. OPEN: until then the 2012 rule's 5 minutes may still have applied.",
        '- **Exactly 60 minutes** is standard in every era (rapid is "less than 60 minutes"; the Arbiters\'',
        "  Manual on 30 minutes + 30 seconds a move: \"30' + 30' = 60' ... considered to be standard chess\").",
        '- **Unequal playing times** (B.02 2024 §1.2, "not rated"; 2012: "Both players must have the same',
        '  allotted time") are not checked: a dump gives one clock per game.',
        "- **The game's day picks the era**, its event's start only when it has no date. The 2012 framework and the",
        '  2014 Laws speak of events ("tournaments commencing on or after", "competitions starting on or after"):',
        "  an event straddling 1 Jul 2014 or 1 Mar 2024 may have its games classed in two eras. OPEN.",
        "",
    ]
    return "\n".join(lines)
