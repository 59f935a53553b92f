"""Fields of a dump as Polars expressions: integers, ids, dates, results' errors, time controls, clocks."""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

import polars as pl

from pipeline.ingest.federations import FEDERATION_CODE
from pipeline.months import MONTH_PATTERN, month_index_of, month_start
from pipeline.rules.time_controls import time_control_class

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

# A clock written without units ('90+30', '90', '40/90+30') has its base in minutes up to this value
# and in seconds above it ('5400+30', as PGN writes it); the increment is always in seconds. No FIDE
# standard control has a base above 150 minutes. Bases of 60-150 are ambiguous ('120+2': a 2-hour
# game or 2-minute blitz) and are read as minutes: a base of 2.5 minutes or less is mostly bullet,
# which FIDE does not rate (blitz needs more than 3 minutes for 60 moves). Units ('2 min + 2 s') win.
CLOCK_MINUTES_UP_TO = 150


# FIDE's title codes, as the pipeline writes them (players' `title`), and the codes older FIDE lists and TRF files
# write in lowercase for them (the TRF 001 line's title columns: 'g' for GM, 'wg' for WGM, ...).
TITLE_CODES = ("GM", "IM", "FM", "CM", "WGM", "WIM", "WFM", "WCM")
OLD_TITLE_CODES = {"g": "GM", "m": "IM", "f": "FM", "c": "CM", "wg": "WGM", "wm": "WIM", "wf": "WFM", "wc": "WCM"}


def title_code(text: pl.Expr) -> pl.Expr:
    """A title as a dump states it ('GM', ' wg', 'im') -> its code (TITLE_CODES), else null (blank, 'NM', 'BOT')."""
    trimmed = text.str.strip_chars()
    upper = trimmed.str.to_uppercase()
    return (
        pl.when(upper.is_in(TITLE_CODES))
        .then(upper)
        .otherwise(trimmed.str.to_lowercase().replace_strict(OLD_TITLE_CODES, default=None, return_dtype=pl.Utf8))
    )


def federation_code(text: pl.Expr) -> pl.Expr:
    """A federation as a dump states it -> its three-letter code in uppercase ('ger ' -> 'GER'), else null."""
    upper = text.str.strip_chars().str.to_uppercase()
    return pl.when(upper.str.contains(FEDERATION_CODE.pattern)).then(upper)


# -- field parsing (expressions) -------------------------------------------------------------------
def blank_to_null(expr: pl.Expr) -> pl.Expr:
    """Strip a text cell; empty means missing."""
    stripped = expr.cast(pl.Utf8).str.strip_chars()
    return pl.when(stripped == "").then(None).otherwise(stripped)


def parse_int(text: pl.Expr, dtype: PolarsDataType = pl.Int64) -> pl.Expr:
    """Whole numbers written in digits (a sign, and '.0' as float columns print '1850.0', allowed) -> integer;
    anything else (exponents such as '2e3', fractions, words) -> null.
    """
    stripped = text.cast(pl.Utf8).str.strip_chars()
    whole_float = stripped.str.extract(r"^([+-]?\d+)\.0*$", 1)
    return pl.coalesce(stripped.cast(dtype, strict=False), whole_float.cast(dtype, strict=False))


def parse_id(text: pl.Expr, dtype: PolarsDataType = pl.Int64) -> pl.Expr:
    """Ids and ranks: digits only, as written (surrounding blanks allowed); '1.5e7', '-5', '+5', '12.0' -> null."""
    stripped = text.cast(pl.Utf8).str.strip_chars()
    signed = stripped.str.starts_with("+") | stripped.str.starts_with("-")
    return pl.when(~signed).then(stripped.cast(dtype, strict=False))


def int_error(text: pl.Expr, label: str, dtype: PolarsDataType = pl.Int64, parsed: pl.Expr | None = None) -> pl.Expr:
    """Error message when a present cell does not parse as an integer, else null (`parsed`: parse_int(text, dtype), if
    at hand).
    """
    bad = text.is_not_null() & (parse_int(text, dtype) if parsed is None else parsed).is_null()
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a number", quoted(text)))


def id_error(text: pl.Expr, label: str, parsed: pl.Expr) -> pl.Expr:
    """Error message when a present id cell is not written in digits only, else null (`parsed`: parse_id(text))."""
    bad = text.is_not_null() & parsed.is_null()
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a number (an id is written in digits only)", quoted(text)))


def quoted(text: pl.Expr) -> pl.Expr:
    return pl.concat_str([pl.lit("'"), text, pl.lit("'")])


def parse_iso_date(text: pl.Expr) -> pl.Expr:
    """YYYY-MM-DD, YYYY.MM.DD or YYYY/MM/DD -> Date; unknown parts such as '??' and impossible dates -> null."""
    dashed = text.str.replace_all(".", "-", literal=True).str.replace_all("/", "-", literal=True)
    # A four-digit year first: '10.01.2024' must not be read as the year 10.
    return pl.when(dashed.str.contains(r"^\d{4}-\d{1,2}-\d{1,2}$")).then(dashed.str.to_date("%Y-%m-%d", strict=False))


# The Kaggle 2011 contest's games files (Deloitte/FIDE Chess Rating Challenge, FIDE's own games): their column names
# and what each stands for (their Player1 is not necessarily White), and their month numbers (MonthID), 1 = January
# 1999, up to KAGGLE_LAST_MONTH_ID. A games file's `month` column may be YYYY-MM or such a number.
KAGGLE_COLUMNS = {"MonthID": "month", "Player1": "white_id", "Player2": "black_id", "Player1Score": "white_score"}
KAGGLE_FIRST_YEAR = 1999
KAGGLE_LAST_MONTH_ID = 1200  # December 2098


def kaggle_month_index(number: pl.Expr) -> pl.Expr:
    """The month index (pipeline.months.month_index) of a Kaggle MonthID, null outside 1..KAGGLE_LAST_MONTH_ID."""
    return pl.when((number >= 1) & (number <= KAGGLE_LAST_MONTH_ID)).then(KAGGLE_FIRST_YEAR * 12 + number - 1)


def parse_month_cell(text: pl.Expr) -> pl.Expr:
    """A month cell -> the Date of its first day: 'YYYY-MM', or a Kaggle MonthID (1 = 1999-01); anything else null."""
    stripped = text.str.strip_chars()
    year_month = pl.when(stripped.str.contains(MONTH_PATTERN.pattern)).then(month_index_of(stripped))
    return month_start(pl.coalesce(year_month, kaggle_month_index(stripped.cast(pl.Int64, strict=False))))


def month_cell_error(text: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    """Why a present month cell is no month (parse_month_cell), or null."""
    return pl.when(text.is_not_null() & parsed.is_null()).then(
        pl.format(
            "month {} is neither YYYY-MM nor a Kaggle MonthID (a whole number from 1 = {}-01)",
            quoted(text),
            pl.lit(str(KAGGLE_FIRST_YEAR)),
        )
    )


# The results' other spellings met in dumps and games files, each read as the result it means (PGN's three, which
# raw_games and validation keep: schemas.games.RESULTS): every reader applies this one map (a reading of this project;
# README, "A games CSV or Parquet file"). A PGN Result tag spelt so is compared with the movetext's marker as read.
RESULT_SPELLINGS = {
    "½-½": "1/2-1/2",
    "½": "1/2-1/2",
    "1/2": "1/2-1/2",
    "0.5-0.5": "1/2-1/2",
    "=": "1/2-1/2",
    "1:0": "1-0",
    "0:1": "0-1",
}


def result_as_read(text: pl.Expr) -> pl.Expr:
    """A result as written -> as read (RESULT_SPELLINGS: '1:0' -> '1-0'); any other text as it is."""
    # A comparison per spelling: a few times faster than Expr.replace's lookup over a million games.
    as_read: pl.Expr = text
    for written, read in reversed(RESULT_SPELLINGS.items()):
        as_read = pl.when(text == written).then(pl.lit(read)).otherwise(as_read)
    return as_read


def parse_flag(text: pl.Expr, true_text: tuple[str, ...], false_text: tuple[str, ...]) -> pl.Expr:
    """A yes/no cell -> Boolean (true_text / false_text, any case); anything else null."""
    lowered = text.str.strip_chars().str.to_lowercase()
    return pl.when(lowered.is_in(list(true_text))).then(True).when(lowered.is_in(list(false_text))).then(False)


# PGN writes unknown date parts as '??' ('2024.??.??', '????.??.??'): unknown, not wrong.
PGN_UNKNOWN_DATE = r"^(?:\d{4}|\?{4})[.\-/](?:\d{2}|\?{2})[.\-/](?:\d{2}|\?{2})$"


def date_error(text: pl.Expr, parsed: pl.Expr, label: str, unknown_allowed: bool = False) -> pl.Expr:
    """'<label> '<value>' is not a date' when a present value is not a valid date (PGN's '??' parts allowed)."""
    bad = text.is_not_null() & parsed.is_null()
    if unknown_allowed:
        bad = bad & ~(text.str.contains(PGN_UNKNOWN_DATE) & text.str.contains("?", literal=True))
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a date", quoted(text)))


def join_errors(*messages: pl.Expr) -> pl.Expr:
    """'; '-joined non-null messages, or null when there are none."""
    joined = pl.concat_str(list(messages), separator="; ", ignore_nulls=True)
    return pl.when(joined == "").then(None).otherwise(joined)


# -- time controls ---------------------------------------------------------------------------------
def classify_time_control(base_seconds: pl.Expr, increment_seconds: pl.Expr) -> pl.Expr:
    """Classical / rapid / blitz from the time for 60 moves (base + 60 x increment, FIDE's count); null if unknown.

    Parse time knows no game day: the current era's boundaries (pipeline.rules.time_controls; controls at or
    below blitz's minimum count as blitz here). Validation classes each game again by the era of its day.
    """
    return time_control_class(base_seconds, increment_seconds)


# A clock may open with the class it is played at ('Blitz 3+2', 'Rapid: 15+10'); a class word alone states the class.
_CLASS_WORD = r"(?i)^\s*(blitz|rapid|standard|classical)\b[\s:,-]*"
# PGN standard §9.6.1: '?' is an unknown time control and '-' none in use: both are a clock not stated.
CLOCK_NOT_STATED = ("?", "-")


def _without_class_word(text: pl.Expr) -> pl.Expr:
    return text.str.replace(_CLASS_WORD, "")


def stated_class(text: pl.Expr) -> pl.Expr:
    """The class a clock's text opens with ('Blitz 3+2' -> 'blitz'; standard is classical), else null."""
    named = text.str.extract(_CLASS_WORD, 1).str.to_lowercase()
    return pl.when(named == "standard").then(pl.lit("classical")).otherwise(named)


def _unitless(text: pl.Expr) -> pl.Expr:
    return ~_without_class_word(text).str.contains(r"[^\d\s+/:,;]")


def parse_time_control(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(base seconds, increment seconds) from PGN/TRF-2026 forms or common free text.

    '5400+30' (also '5400 + 30'), '40/5400+30:1800+30' (first period counts), '900', free text such as
    '15 min. + 10 s. per move', '90 minutes + 30 seconds' or TRF16's "90'+30''", hours and minutes ('90m+30s',
    '1h30+30s'), US Chess notation in minutes ('G/5', 'G60+30', 'SD/90+30', a delay 'G/90;d5' as an increment), each
    after a class word ('Blitz 3+2'); of several periods ('40/120, 60') the first.
    Anything else, PGN's sandclock ('*60') among it, is null.
    """
    text = _without_class_word(text)
    # Later periods after ':' (PGN), or ',' and ';' as people type them ('40/120, 60'): the first period counts.
    structured = text.str.extract_groups(r"^\s*(?:\d+/)?(\d+)(?:\s*\+\s*(\d+))?\s*(?:[:,;].*)?$")
    # US Chess: 'G/90' is a game in 90 minutes, 'SD/90' a sudden-death period of 90 (US Chess rule 5C); a delay
    # ('G/90;d5', 'G/90 d5') counts as an increment, as FIDE's count of 60 moves has it (docs/rules.md).
    us_chess = text.str.extract_groups(
        r"(?i)^\s*(?:G|SD)\s*/?\s*(\d+)(?:\s*\+\s*(\d+)\s*s?|\s*[;,]?\s*d\s*(\d+)\s*s?)?\s*$"
    )
    hours = text.str.extract_groups(r"(?i)^\s*(?:(\d+)\s*h\s*(?:(\d+)\s*m?)?|(\d+)\s*m)\s*(?:\+\s*(\d+)\s*s?)?\s*$")
    free = text.str.extract_groups(r"(?i)(\d+)\s*(?:min|minutes|')[^\s+]*(?:.*?\+\s*(\d+)\s*(?:s|sec|seconds|\"|''))?")

    def number(groups: pl.Expr, name: str) -> pl.Expr:
        return groups.struct.field(name).cast(pl.Int32, strict=False)

    hours_read = number(hours, "1").is_not_null() | number(hours, "3").is_not_null()
    base = pl.coalesce(
        number(structured, "1"),
        number(us_chess, "1") * 60,
        pl.when(hours_read).then(
            number(hours, "1").fill_null(0) * 3600
            + pl.coalesce(number(hours, "2"), number(hours, "3")).fill_null(0) * 60
        ),
        number(free, "1") * 60,
    )
    increment = (
        pl.when(number(structured, "1").is_not_null())
        .then(number(structured, "2").fill_null(0))
        .when(number(us_chess, "1").is_not_null())
        .then(pl.coalesce(number(us_chess, "2"), number(us_chess, "3")).fill_null(0))
        .when(hours_read)
        .then(number(hours, "4").fill_null(0))
        .when(number(free, "1").is_not_null())
        .then(number(free, "2").fill_null(0))
    )
    return base, increment


def unreadable_clock(text: pl.Expr, base: pl.Expr, label: str) -> pl.Expr:
    """Why a stated clock is not read ('<label> '<value>' is no clock ...'), or null: a clock that cannot be read and
    states no class is never taken as classical (a reading of this project; README, "Rating your own federation's
    files").
    """
    stated = text.is_not_null() & ~text.str.strip_chars().is_in(CLOCK_NOT_STATED)
    return pl.when(stated & base.is_null() & stated_class(text).is_null()).then(
        pl.format(
            f"{label} {{}} is neither a clock this reader knows nor a class (classical, rapid, blitz): write the "
            "base and the increment with their units, as in 90 min + 30 s",
            quoted(text),
        )
    )


# PGN's TimeControl counts seconds (PGN standard §9.6.1). A unit-less base under three minutes with an increment of two
# seconds or more is no clock players use in seconds ('90+30', '15+10', '10+5'), but is the common way of writing
# minutes: read as seconds it would move a classical game to the rapid list and a rapid one to blitz, so it is
# refused (a reading of this project; README, "A PGN game").
_SECONDS_BASE_UNDER, _SECONDS_INCREMENT_FROM = 180, 2


def minutes_written_as_seconds(text: pl.Expr, base: pl.Expr, increment: pl.Expr) -> pl.Expr:
    """Why a PGN TimeControl reads as minutes though PGN counts seconds (see above), or null."""
    suspect = _unitless(text) & (base < _SECONDS_BASE_UNDER) & (increment >= _SECONDS_INCREMENT_FROM)
    return pl.when(suspect).then(
        pl.format(
            "TimeControl {} reads as {} s + {} s a move (PGN counts seconds), a clock nobody plays: if minutes were "
            "meant, write {}+{}",
            quoted(text),
            base,
            increment,
            base * 60,
            increment,
        )
    )


def parse_clock(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(base seconds, increment seconds) of a clock a person typed: parse_time_control's forms, where a
    unit-less base up to CLOCK_MINUTES_UP_TO is minutes ('90+30' = '5400+30'; '90' = 90 minutes).
    """
    base, increment = parse_time_control(text)
    in_minutes = _unitless(text) & (base <= CLOCK_MINUTES_UP_TO)
    return pl.when(in_minutes).then(base * 60).otherwise(base), increment


# -- free-text dates (one value per file, so plain Python) ------------------------------------------
# A whole date, a four-digit year first or last, read from the left so that '10.01.2024 - 12.01.2024' is two dates
# (not the year-first '2024 - 12.01').
_WHOLE_DATE = re.compile(
    r"(?<!\d)(?:(\d{4})\D{1,3}(\d{1,2})\D{1,3}(\d{1,2})|(\d{1,2})\D{1,3}(\d{1,2})\D{1,3}(\d{4}))(?!\d)"
)
# Old files write a tournament's days as a range whose first day leaves out what it shares with the last
# ('10.-11.01.2024', '28.07.-31.07.2005', '28. 07. - 31. 07. 2005'): the first day with a dot (and its month), or
# right before the dash ('10-11.01.2024'), a dash, a whole date. 'Open 2 - 10.01.2024' is no range.
_DAY_RANGE = re.compile(
    r"(?<!\d)(\d{1,2})(?:\.\s*(?:(\d{1,2})\.?\s*)?|(?=[-–]))[-–]\s*(\d{1,2})\D{1,3}(\d{1,2})\D{1,3}(\d{4})(?!\d)"
)
# A two-digit year first is read in TRF16's form only (YY/MM/DD, as tag 132 writes it): '12.01.24' is as likely
# day.month.year, and a misread start or end files the tournament in another year's list, without a word. Spaced as
# old files space their dates ('10. 01. 24') too.
_YY_MM_DD = re.compile(r"^(\d{2})/(\d{1,2})/(\d{1,2})$")
_TWO_DIGIT_YEAR = re.compile(r"^\d{1,2}\D{1,3}\d{1,2}\D{1,3}\d{1,2}$")
_TWO_DIGIT_YEAR_WHY = "a two-digit year is read only as YY/MM/DD, TRF16's form: '{}' may be day.month.year"


def two_digit_year(year: int) -> int:
    """The year a two-digit year stands for, 1970-2069: TRF16's YY/MM/DD dates, old FIDE lists' 'APR04' periods."""
    return 2000 + year if year < 70 else 1900 + year


# TRF16 (FIDE handbook C.04 Annex 2): "042 Date of start", "052 Date of end", free text in old files. A range stands
# for the tournament's days: a start is its first day, an end its last (a reading of this project; README, "A TRF
# file").
def parse_free_date_checked(text: str | None, last: bool = False) -> tuple[date | None, str | None]:
    """(date, why the text's date cannot be used, or None): the first date the text holds, or with `last` the last
    (of a range such as '10.-11.01.2024' or '10.01.2024 - 12.01.2024'). Why: 'is not a date' (with the reason when the
    date exists but its order cannot be told: '12.01.24', as YY/MM/DD is TRF16's only two-digit form).
    """
    if not text:
        return None, None
    text = text.strip()
    if _TWO_DIGIT_YEAR.match(text) and not _YY_MM_DD.match(text):
        return None, f"is not a date ({_TWO_DIGIT_YEAR_WHY.format(text)})"
    found = [
        (int(y), int(m), int(d)) if y else (int(year), int(month), int(day))
        for y, m, d, day, month, year in _WHOLE_DATE.findall(text)
    ]
    if len(found) == 1 and (days := _DAY_RANGE.search(text)):
        first_day, first_month, day, month, year = days.groups()
        first = (int(year), int(first_month or month), int(first_day))
        if first[1:] > (int(month), int(day)):  # '28.12.-02.01.2025': the first day is in the year before
            first = (first[0] - 1, *first[1:])
        found = [first, found[0]]
    if not found and (short := _YY_MM_DD.match(text)):
        a, month, day = (int(g) for g in short.groups())
        found = [(two_digit_year(a), month, day)]
    if not found:
        return None, None
    year, month, day = found[-1] if last else found[0]
    try:
        return date(year, month, day), None
    except ValueError:
        return None, "is not a date"
