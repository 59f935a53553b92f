"""FIDE Tournament Report File (TRF16 / TRF-2026) -> one raw record per pairing or unpaired round cell.

Many files are parsed in one batch (one set of Polars operations keyed by file), so a month of
small tournament files costs about as much as one large file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

import numpy as np
import polars as pl

from pipeline.formats.byes import bye_names
from pipeline.formats.common import DUPLICATE_PLAYER
from pipeline.formats.decoding import split_lines
from pipeline.formats.fields import (
    blank_to_null,
    classify_time_control,
    federation_code,
    id_error,
    int_error,
    join_errors,
    parse_clock,
    parse_free_date_checked,
    parse_id,
    parse_int,
    parse_time_control,
    quoted,
    stated_class,
    title_code,
    two_digit_year,
    unreadable_clock,
)

# 0-based offsets of the fixed 001 columns (the FIDE document counts from 1, inclusive).
RANK = (4, 4)  # columns 5-8
TITLE = (10, 3)  # columns 11-13: GM, WIM, ... (old files: g, wm, ...)
NAME = (14, 33)  # columns 15-47
RATING = (48, 4)  # columns 49-52
FEDERATION = (53, 3)  # columns 54-56
ID = (57, 11)  # columns 58-68
FIRST_CELL = 91  # column 92: round 1's opponent rank
CELL_STEP = 10  # each round adds 10 columns
CELL_WIDTH = 8  # opponent (4), blank, colour, blank, result
# Longer events do not exist (a double round robin of 100 players has 198 rounds); a longer 001
# line is junk, and is reported instead of being cut into thousands of "rounds".
MAX_ROUNDS = 200
MAX_LINE = FIRST_CELL + CELL_STEP * MAX_ROUNDS

# A record starts with a three-digit tag (or a JaVaFo XX? extension) and a blank.
TRF_TAG = re.compile(r"^(?:\d{3}|XX[A-Z])(?: |$)")
# A player record: '001' and a blank (or nothing). '001x' or '001<tab>' is no record, but a junk line.
PLAYER_TAG = r"^001(?: |$)"
NUL_PROBLEM = "line holds a NUL byte (binary data), not a TRF record"
# TRF-2026 National Rating Support records: a federation code instead of '001', then a starting rank.
NRS_TAG = r"^[A-Z]{3} [ \d]{3}\d"

# Result code pairs that agree, seen from the lower-ranked side and then its opponent.
COMPLEMENTARY = {
    ("1", "0"),
    ("0", "1"),
    ("=", "="),
    ("+", "-"),
    ("-", "+"),
    ("-", "-"),
    ("W", "L"),
    ("L", "W"),
    ("D", "D"),
}
PLAYED_CODES = ["1", "=", "0"]
FORFEIT_CODES = ["+", "-"]
UNDER_ONE_MOVE_CODES = ["W", "D", "L"]
PAIRED_CODES = PLAYED_CODES + FORFEIT_CODES + UNDER_ONE_MOVE_CODES
# White's code -> result from White's view (forfeits in the usual +/- notation).
WHITE_VIEW = {"1": "1-0", "=": "1/2-1/2", "0": "0-1", "W": "1-0", "D": "1/2-1/2", "L": "0-1", "+": "+-", "-": "-+"}

_LINE_SCHEMA = {"file": pl.Int32, "line_no": pl.Int64, "text": pl.Utf8}
_RECORD_SCHEMA = {
    "file": pl.Int32,
    "source_line": pl.Int64,
    "position": pl.Utf8,
    "raw_text": pl.Utf8,
    "parse_error": pl.Utf8,
    "event_id": pl.Utf8,
}


@dataclass
class TrfHeader:
    """The tournament tags a record needs: start date, round dates, round count, encoded time control."""

    start: date | None
    round_dates: list[date | None]
    rounds_tag: int
    tc: tuple[int | None, int | None]  # base and increment seconds of tag 222, else of tag 122's text
    declared: str | None = None  # the class tag 092 (type of tournament) names: rapid, blitz or classical
    start_error: str | None = None  # tag 042 holds a date that does not exist
    end: date | None = None  # tag 052, the last day of the tournament (the reporting calendar files it by this day)
    end_error: str | None = None  # tag 052 holds a date that does not exist, or one before tag 042's
    round_date_errors: dict[int, str] | None = None  # round -> the impossible date tag 132 gives it
    tc_error: str | None = None  # tag 222/122 states a clock that cannot be read, and no class is declared


def is_trf_text(text: str) -> bool:
    """True when the first meaningful line is a TRF record (used for .txt dumps)."""
    for line in split_lines(text[:4096]):
        if not line.strip() or line.startswith("###"):
            continue
        return bool(TRF_TAG.match(line))
    return False


def parse_trf(text: str, event_id: str) -> pl.DataFrame:
    """Records of one TRF file (columns of common.RECORD_COLUMNS; position = round, or 'line')."""
    return parse_trf_batch([text], [event_id]).drop("file")


def parse_trf_batch(texts: list[str], event_ids: list[str]) -> pl.DataFrame:
    """Records of many TRF files at once, with a 'file' column: the index of the text in `texts`."""
    sizes = []
    all_lines: list[str] = []
    for text in texts:
        text_lines = split_lines(text)
        sizes.append(len(text_lines))
        all_lines.extend(text_lines)
    lines = pl.DataFrame({"text": all_lines}, schema={"text": pl.Utf8}).with_columns(
        pl.Series("file", np.repeat(np.arange(len(texts), dtype=np.int32), sizes)),
    )
    lines = lines.with_columns((pl.int_range(pl.len(), dtype=pl.Int64).over("file") + 1).alias("line_no")).select(
        list(_LINE_SCHEMA)
    )
    nul_lines = None
    if any("\x00" in text for text in texts):  # rare: only the lines that hold one are lost, as junk records
        has_nul = pl.col("text").str.contains("\x00", literal=True)
        nul_lines = lines.filter(has_nul)
        lines = lines.filter(~has_nul)
    files = pl.DataFrame(
        {"file": range(len(texts)), "event_id": event_ids}, schema={"file": pl.Int32, "event_id": pl.Utf8}
    )
    headers = _headers(lines, len(texts))

    players = _player_fields(lines.filter(pl.col("text").str.contains(PLAYER_TAG)))
    without_players = files.join(players.select("file").unique(), on="file", how="anti")
    usable = players.filter(pl.col("rank_ok"))
    cells, usable = _checked_cells(usable, headers)
    records = pl.concat(
        [
            _bad_line_records(players),
            _cut_line_records(usable),
            _junk_records(lines),
            *([] if nul_lines is None else [_junk_records(nul_lines, NUL_PROBLEM)]),
            _nrs_records(lines, players),
            _bye_records(cells),
            _pairing_records(cells),
        ],
        how="diagonal_relaxed",
    )
    records = _with_file_facts(records, files, headers)
    empty = _no_player_records(lines, without_players)
    if not empty.is_empty():
        records = pl.concat([records, empty], how="diagonal_relaxed")
    return records.sort("file", "source_line", "round", nulls_last=False)


# -- header ----------------------------------------------------------------------------------------
def _headers(lines: pl.DataFrame, count: int) -> list[TrfHeader]:
    """Per file: the first of each tag that matters (042, 052, 092, 122, 132, 142, XXR, 222), parsed in Python (a few
    per file).
    """
    tags = lines.filter(pl.col("text").str.contains(r"^(?:042|052|092|122|132|142|222|XXR)(?: |$)"))
    tags = tags.with_columns(pl.col("text").str.slice(0, 3).alias("tag")).unique(
        ["file", "tag"], keep="first", maintain_order=True
    )
    first: list[dict[str, str]] = [{} for _ in range(count)]
    round_dates_line = [0] * count  # the line of tag 132, which a round date's problem names
    for file, tag, text, line_no in tags.select("file", "tag", "text", "line_no").iter_rows():
        first[file][tag] = text
        if tag == "132":
            round_dates_line[file] = line_no
    headers = []
    time_controls: dict[str, tuple] = {}  # a clock's text -> base, increment, the class it names, why it is unread
    for file, tags_of_file in enumerate(first):
        round_dates, round_date_errors = _round_dates(tags_of_file.get("132", ""), round_dates_line[file])
        start_text = tags_of_file.get("042", "")[4:]
        start, start_problem = parse_free_date_checked(start_text)
        end, end_error = _end_date(tags_of_file.get("052", "")[4:], start)
        rounds_tag = 0
        for key in ("142", "XXR"):
            match = re.match(r"\s*(\d+)", tags_of_file.get(key, "")[4:])
            if match:
                rounds_tag = max(rounds_tag, min(int(match.group(1)), MAX_ROUNDS))
        # TRF-2026's encoded time control (222, in seconds: '5400+30'), else TRF16's text as a person writes it (122:
        # "90'+30''", '15 min + 10 sec', '90+30' in minutes).
        encoded, typed = tags_of_file.get("222", "")[4:].strip(), tags_of_file.get("122", "")[4:].strip()
        tc_text = f"222 {encoded}" if encoded else f"122 {typed}" if typed else ""
        if tc_text and tc_text not in time_controls:
            parse = parse_time_control if encoded else parse_clock
            text = pl.lit(encoded or typed)
            base, increment = parse(text)
            label = f"time control (tag {tc_text[:3]})"
            time_controls[tc_text] = pl.select(
                base.alias("base"),
                increment.alias("increment"),
                stated_class(text).alias("class"),
                unreadable_clock(text, base, label).alias("unread"),
            ).row(0)
        base_seconds, increment_seconds, stated, unreadable = time_controls.get(tc_text, (None, None, None, None))
        declared = _declared_class(tags_of_file.get("092", "")[4:]) or stated
        headers.append(
            TrfHeader(
                start=start,
                round_dates=round_dates,
                rounds_tag=rounds_tag,
                tc=(base_seconds, increment_seconds),
                declared=declared,
                tc_error=None if declared or unreadable is None else f"{unreadable} (tag 092 names no class either)",
                start_error=f"event start '{start_text.strip()}' (tag 042) {start_problem}" if start_problem else None,
                round_date_errors=round_date_errors,
                end=end,
                end_error=end_error,
            )
        )
    return headers


# TRF16 (FIDE handbook C.04 Annex 2): "052 Date of end", free text in old files (example1.trf: '31. 07. 2005'),
# YYYY/MM/DD in TRF-2026. The reporting calendar files a tournament by the day it ended (B.02 2024 §7.1.3, §9.1).
def _end_date(text: str, start: date | None) -> tuple[date | None, str | None]:
    """(the tournament's last day from tag 052's text, or None; why the tag cannot be used, or None).

    Text that holds no date at all is read as no 052, as for 042 (old files write free text): the
    end is then the last game's day. A date that does not exist, or one before the start (042),
    leaves the month the tournament is rated in unknown, so it is a problem of every record.
    """
    end, problem = parse_free_date_checked(text, last=True)
    if problem:
        return None, f"event end '{text.strip()}' (tag 052) {problem}"
    if end is not None and start is not None and end < start:
        return None, f"event end {end} (tag 052) is before its start {start} (tag 042)"
    return end, None


# A class named in tag 092 (type of tournament), e.g. "Individual: Swiss-System, Rapid".
_DECLARED_CLASS = re.compile(r"(?i)\b(rapid|blitz|standard|classical)\b")


def _declared_class(text: str) -> str | None:
    """The class tag 092 names (standard is classical), or None."""
    match = _DECLARED_CLASS.search(text)
    if match is None:
        return None
    named = match.group(1).lower()
    return "classical" if named == "standard" else named


# TRF16 (FIDE handbook C.04 Annex 2): tag 132 writes round r's date YY/MM/DD in columns 92 + 10 (r - 1); TRF-2026
# writes YYYY/MM/DD, wider than the cell. A two-digit year first is read in TRF16's form only: '10.01.24' is as
# likely day.month.year, and a misread round date rates its games in another year's era and list, without a word.
_ROUND_DATE = re.compile(r"^(?:(\d{2})/(\d{1,2})/(\d{1,2})|(\d{4})[/.-](\d{1,2})[/.-](\d{1,2}))$")
# Where the dates do not sit in their columns: every token holding a digit, in order (words such as 'Dates:' skipped).
_DATE_TOKEN = re.compile(r"\S*\d\S*")


def _round_date(cell: str) -> tuple[date | None, bool]:
    """(the day a tag 132 cell states in TRF's forms (_ROUND_DATE), or None; True when the cell is in another form)."""
    match = _ROUND_DATE.match(cell)
    if match is None:
        return None, True
    short, short_month, short_day, long, long_month, long_day = match.groups()
    year = int(long) if long else two_digit_year(int(short))
    month, day = (long_month, long_day) if long else (short_month, short_day)
    try:
        return date(year, int(month), int(day)), False
    except ValueError:
        return None, False


def _in_one_cell(position: int, width: int) -> bool:
    """Whether a tag 132 token at `position` (0-based) lies within one round's columns (92 + 10 (r - 1), 10 wide)."""
    return (
        position >= FIRST_CELL
        and (position - FIRST_CELL) // CELL_STEP == (position + width - 1 - FIRST_CELL) // CELL_STEP
    )


def _round_dates(line: str, line_no: int) -> tuple[list[date | None], dict[int, str]]:
    """Tag 132: round r's date in columns 92 + 10 (r - 1) (_ROUND_DATE), and why a round's date cannot be used: it
    does not exist, or it is written in another form (named with the line and column).

    When the dates do not sit in those columns (wider YYYY/MM/DD dates, other spacing: a token runs across a cell's
    edge), they are taken in order of appearance instead; while each sits in a cell, a blank cell is a round without
    a date and the next date stays on its own round.
    """
    cells = [
        (position, line[position : position + CELL_STEP].strip())
        for position in range(FIRST_CELL, min(len(line), MAX_LINE), CELL_STEP)
    ]
    checked = [_round_date(cell) if cell else (None, False) for _, cell in cells]
    if any(other_form for _, other_form in checked):
        tokens = [(4 + token.start(), token.group()) for token in _DATE_TOKEN.finditer(line[4:])][:MAX_ROUNDS]
        if not all(_in_one_cell(position, len(token)) for position, token in tokens):
            cells = tokens
            checked = [_round_date(cell) for _, cell in cells]
    errors = {}
    for r, ((position, cell), (day, other_form)) in enumerate(zip(cells, checked, strict=True)):
        where = f"(tag 132, line {line_no}, column {position + 1})"
        if other_form:
            errors[r + 1] = (
                f"round {r + 1} date '{cell}' {where} is neither YY/MM/DD "
                "(TRF16) nor YYYY/MM/DD: not read, as 10.01.24 may be day.month.year"
            )
        elif day is None and cell:
            errors[r + 1] = f"round {r + 1} date '{cell}' {where} is not a date"
    return [day for day, _ in checked], errors


def _with_file_facts(records: pl.DataFrame, files: pl.DataFrame, headers: list[TrfHeader]) -> pl.DataFrame:
    """Event id, start, round dates and time control of each record's file."""
    round_dates = pl.DataFrame(
        {
            "file": [f for f, header in enumerate(headers) for _ in header.round_dates],
            "round": [r + 1 for header in headers for r in range(len(header.round_dates))],
            "date": [day for header in headers for day in header.round_dates],
            "_date_error": [
                (header.round_date_errors or {}).get(r + 1)
                for header in headers
                for r in range(len(header.round_dates))
            ],
        },
        schema={"file": pl.Int32, "round": pl.Int32, "date": pl.Date, "_date_error": pl.Utf8},
    )
    facts = files.with_columns(
        # Tag 042 is free text in old files; when it cannot be read, the earliest round date is the start.
        pl.Series(
            "event_start",
            [header.start or min((d for d in header.round_dates if d), default=None) for header in headers],
            dtype=pl.Date,
        ),
        pl.Series("event_end", [header.end for header in headers], dtype=pl.Date),
        pl.Series("tc_base_seconds", [header.tc[0] for header in headers], dtype=pl.Int32),
        pl.Series("tc_increment_seconds", [header.tc[1] for header in headers], dtype=pl.Int32),
        pl.Series("_declared_class", [header.declared for header in headers], dtype=pl.Utf8),
    )
    records = (
        records.drop("event_id", strict=False)
        .join(facts, on="file", how="left")
        .join(round_dates, on=["file", "round"], how="left")
    )
    # A date that is written but does not exist ('24/02/30') makes the records it dates unparseable, and a clock that
    # cannot be read beside no class the file's records (never taken as classical).
    start_errors = [
        "; ".join(error for error in (header.start_error, header.end_error, header.tc_error) if error) or None
        for header in headers
    ]
    if any(start_errors) or any(header.round_date_errors for header in headers):
        records = (
            records.join(
                pl.DataFrame(
                    {"file": range(len(headers)), "_start_error": start_errors},
                    schema={"file": pl.Int32, "_start_error": pl.Utf8},
                ),
                on="file",
                how="left",
            )
            .with_columns(
                join_errors(pl.col("parse_error"), pl.col("_start_error"), pl.col("_date_error")).alias("parse_error")
            )
            .drop("_start_error")
        )
    records = records.drop("_date_error")
    # TRF dumps are standard-rated events unless their clock (tag 222, else 122) or their type (092, else a class word
    # opening 122) says otherwise; no clock stated at all is the only way to the default.
    return records.with_columns(
        classify_time_control(pl.col("tc_base_seconds"), pl.col("tc_increment_seconds"))
        .fill_null(pl.col("_declared_class"))
        .fill_null("classical")
        .alias("time_control")
    ).drop("_declared_class")


def _no_player_records(lines: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
    """A TRF without any 001 record holds no games; report it once so the dump stays visible."""
    if files.is_empty():
        return pl.DataFrame(schema=_RECORD_SCHEMA)
    first_lines = lines.filter(pl.col("line_no") == 1).select("file", pl.col("text").alias("raw_text"))
    return files.join(first_lines, on="file", how="left").select(
        "file",
        pl.lit(1, dtype=pl.Int64).alias("source_line"),
        pl.lit("file").alias("position"),
        pl.col("raw_text").fill_null(""),
        pl.lit("TRF file has no 001 player records").alias("parse_error"),
        "event_id",
    )


# -- player lines ----------------------------------------------------------------------------------
def _field(start_length: tuple[int, int]) -> pl.Expr:
    start, length = start_length
    return blank_to_null(pl.col("text").str.slice(start, length))


def _player_fields(players: pl.DataFrame) -> pl.DataFrame:
    """Rank, name, rating, id, title and federation of each 001 line, with a per-line error for unreadable fields.

    A title or federation that is no FIDE code is left null, not reported: the rating does not depend on them.
    """
    players = players.with_columns(
        _field(RANK).alias("rank_text"),
        title_code(pl.col("text").str.slice(*TITLE)).alias("title"),
        federation_code(pl.col("text").str.slice(*FEDERATION)).alias("player_federation"),
        _field(NAME).alias("name"),
        _field(RATING).alias("rating_text"),
        _field(ID).alias("id_text"),
        pl.col("text").str.strip_chars_end().str.len_chars().alias("length"),
    ).with_columns(
        # Ranks and ids are read as written, digits only: ' 2e9' is no rank (it would size arrays) and
        # '4.600003e6' or '-1002' no id.
        parse_id(pl.col("rank_text"), pl.Int32).alias("rank"),
        parse_int(pl.col("rating_text"), pl.Int32).alias("rating_value"),
        parse_id(pl.col("id_text"), pl.Int64).alias("id_value"),
    )
    duplicated = pl.col("rank").is_not_null() & pl.col("rank").is_duplicated().over("file")
    # Rare: the messages are made only when a line has a field across a blank column (one pattern: 10 ms a 100,000
    # lines, where a slice per column took 30).
    shifted = players.select(
        pl.col("text").str.contains("|".join(f"^.{{{column - 1}}}\\S" for column, _ in _SEPARATORS)).any()
    ).item()
    too_long = pl.col("length") > MAX_LINE
    players = players.with_columns(
        # 0 / 0000 in the rating or id columns means "none" in the files seen in the wild.
        pl.when(pl.col("rating_value") > 0).then(pl.col("rating_value")).alias("rating"),
        pl.when(pl.col("id_value") > 0).then(pl.col("id_value")).alias("fide_id"),
        (pl.col("rank").is_not_null() & (pl.col("rank") > 0) & ~duplicated & ~too_long).alias("rank_ok"),
        pl.when(too_long)
        .then(
            pl.format(
                f"001 record is {{}} characters long; {MAX_ROUNDS} rounds end at column {MAX_LINE}", pl.col("length")
            )
        )
        .when(pl.col("rank").is_null() | (pl.col("rank") <= 0))
        .then(
            pl.format(
                "starting rank {} (columns 5-8) is not a positive number", quoted(pl.col("rank_text").fill_null(""))
            )
        )
        .when(duplicated)
        .then(pl.format("starting rank {} is used by more than one 001 line", pl.col("rank")))
        .alias("rank_error"),
        join_errors(
            int_error(pl.col("rating_text"), "rating (columns 49-52)", pl.Int32),
            id_error(pl.col("id_text"), "FIDE id (columns 58-68)", pl.col("id_value")),
            *([_runs_into(column, field) for column, field in _SEPARATORS] if shifted else []),
        ).alias("line_error"),
    )
    # A line named as a bye ('spielfrei', 'BYE') without an id is a dummy some programs pair the odd player
    # against: its pairings are byes (byes.BYE_NAME_PATTERNS), one test per line, not per round.
    dummy = bye_names(players["name"]) & players["fide_id"].is_null().to_numpy()
    return players.with_columns(_duplicate_ids(players), pl.Series("bye_line", dummy))


# TRF16 (FIDE handbook C.04 Annex 2; TRF-2026 keeps the 001 layout) leaves a blank column between the fields of a
# 001 line. A number shifted across one (an id ending in column 69, against the birth date) would be sliced into
# another number without a word: '46000111990/01/01' reads as id 460001. The blanks beside the numbers the rating
# rests on are checked: (1-based column, the fields on either side, one of which was written across it).
_SEPARATORS = (
    (9, "starting rank (columns 5-8) or sex (10)"),
    (48, "name (columns 15-47) or rating (49-52)"),
    (53, "rating (columns 49-52) or federation (54-56)"),
    (57, "federation (columns 54-56) or FIDE id (58-68)"),
    (69, "FIDE id (columns 58-68) or birth date (70-79)"),
)


def _runs_into(column: int, field: str) -> pl.Expr:
    """'<fields> runs into column <column>' when that column, blank in TRF16's layout, holds a character; else null."""
    return pl.when(pl.col("text").str.slice(column - 1, 1).str.strip_chars() != "").then(
        pl.format(
            "{} runs into column {} ({})",
            pl.lit(field),
            pl.lit(column),
            quoted(pl.col("text").str.slice(column - 1, 1)),
        )
    )


def _duplicate_ids(players: pl.DataFrame) -> pl.Series:
    """duplicate_id: on a usable 001 line whose FIDE id another usable line of its file holds too, which lines
    hold it ('FIDE id 4100018 is on 001 lines 5 (rank 1) and 9 (rank 5)'); null on the others.

    Both lines' pairings would rate one player twice a round, with two ratings: neither line can be
    trusted, so their games are quarantined (see _pairing_records). Lines whose rank is unusable pair
    nobody and do not count.
    """
    usable_id = pl.when(pl.col("rank_ok")).then(pl.col("fide_id"))
    twice = players.select(
        (usable_id.is_not_null() & usable_id.is_duplicated().over("file")).fill_null(False)
    ).to_series()
    column = pl.Series("duplicate_id", [None], dtype=pl.Utf8).new_from_index(0, players.height)
    if not twice.any():
        return column
    # Rare: the message is built for the lines that share an id only.
    shared = players.filter(twice).with_row_index("_order")
    lines = (
        shared.sort("line_no")
        .group_by("file", "fide_id", maintain_order=True)
        .agg(pl.format("{} (rank {})", pl.col("line_no"), pl.col("rank")).str.join(" and ").alias("_lines"))
    )
    messages = shared.join(lines, on=["file", "fide_id"], how="left").sort("_order")
    text = messages.select(pl.format("FIDE id {} is on 001 lines {}", pl.col("fide_id"), pl.col("_lines")))
    return column.scatter(np.flatnonzero(twice.to_numpy()), text.to_series())


def _rounds(players: pl.DataFrame, headers: list[TrfHeader]) -> pl.DataFrame:
    """Rounds per file: the furthest round cell on a usable 001 line, or what the header says, if more."""
    from_lines = (
        players.filter(pl.col("rank_ok"))
        .group_by("file")
        .agg(
            ((pl.col("length").max() - FIRST_CELL + CELL_STEP - 1) // CELL_STEP).clip(0, MAX_ROUNDS).alias("from_lines")
        )
    )
    from_header = pl.DataFrame(
        {"file": range(len(headers)), "from_header": [max(len(h.round_dates), h.rounds_tag) for h in headers]},
        schema={"file": pl.Int32, "from_header": pl.Int32},
    )
    return from_header.join(from_lines, on="file", how="left").select(
        "file",
        pl.max_horizontal(pl.col("from_header"), pl.col("from_lines").fill_null(0)).cast(pl.Int32).alias("rounds"),
    )


def _bad_line_records(players: pl.DataFrame) -> pl.DataFrame:
    """One unparseable record per 001 line whose starting rank is unusable (its cells cannot be paired)."""
    return players.filter(~pl.col("rank_ok")).select(
        "file",
        pl.col("line_no").alias("source_line"),
        pl.lit("line").alias("position"),
        pl.col("text").alias("raw_text"),
        pl.col("rank_error").alias("parse_error"),
        pl.col("fide_id").alias("white_id"),
        pl.col("name").alias("white_name"),
        pl.col("rating").alias("white_rating"),
    )


def _junk_records(lines: pl.DataFrame, problem: str | None = None) -> pl.DataFrame:
    """Lines that are no TRF record at all (not a tag, an NRS record or a ### comment): reported, not skipped.

    Unknown three-character tags are ignored, as the format asks; text that starts otherwise (an
    indented 001 record, stray prose) would otherwise vanish without a trace.
    """
    junk = (
        lines
        if problem is not None
        else lines.filter(
            (pl.col("text").str.strip_chars() != "")
            & ~pl.col("text").str.contains(r"^(?:\d{3}|XX[A-Z]|[A-Z]{3})(?: |$)")
            & ~pl.col("text").str.starts_with("###")
        )
    )
    return junk.select(
        "file",
        pl.col("line_no").alias("source_line"),
        pl.lit("line").alias("position"),
        pl.col("text").alias("raw_text"),
        pl.lit(
            problem or "not a TRF record (a record starts with a three-character tag and a blank, e.g. '001 ')"
        ).alias("parse_error"),
    )


def _nrs_records(lines: pl.DataFrame, players: pl.DataFrame) -> pl.DataFrame:
    """TRF-2026 National Rating Support lines are player data, not games: only broken ones become records.

    A valid NRS line links by starting rank (columns 5-8) to a 001 line of the same file and carries
    the national rating (49-52) and id (58-68); one that links to no player, or has unreadable
    numbers, is reported so the federation can fix it.
    """
    nrs = lines.filter(pl.col("text").str.contains(NRS_TAG) & ~pl.col("text").str.starts_with("XX"))
    if nrs.is_empty():
        return pl.DataFrame(schema=_RECORD_SCHEMA)
    nrs = nrs.with_columns(
        _field(RANK).alias("rank_text"),
        _field(RATING).alias("rating_text"),
        _field(ID).alias("id_text"),
    ).with_columns(parse_id(pl.col("rank_text"), pl.Int32).alias("rank"), parse_id(pl.col("id_text")).alias("_id"))
    known = players.filter(pl.col("rank_ok")).select("file", "rank", pl.lit(True).alias("linked"))
    nrs = nrs.join(known, on=["file", "rank"], how="left")
    problem = join_errors(
        pl.when(pl.col("linked").is_null()).then(
            pl.format(
                "NRS record {}: starting rank {} (columns 5-8) has no 001 record",
                pl.col("text").str.slice(0, 3),
                quoted(pl.col("rank_text").fill_null("")),
            )
        ),
        int_error(pl.col("rating_text"), "national rating (columns 49-52)", pl.Int32),
        id_error(pl.col("id_text"), "national id (columns 58-68)", pl.col("_id")),
    )
    return (
        nrs.with_columns(problem.alias("parse_error"))
        .filter(pl.col("parse_error").is_not_null())
        .select(
            "file",
            pl.col("line_no").alias("source_line"),
            pl.lit("nrs").alias("position"),
            pl.col("text").alias("raw_text"),
            "parse_error",
        )
    )


# -- round cells -----------------------------------------------------------------------------------
def _checked_cells(usable: pl.DataFrame, headers: list[TrfHeader]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(cells, usable player lines with 'cut_at': the first round whose cell is malformed, or null).

    Text after a line's last round cell (a note, 'withdrew') is no round: it must neither add rounds
    to the event (every other player would get byes for them) nor become byes itself. The cells are
    cut at the first malformed one, the rounds counted again without what was cut, and the cut text
    becomes one unparseable record for the line (_cut_line_records).
    """
    cells = _cells(usable, _rounds(usable, headers))
    bad = cells.filter(~pl.col("cell_ok"))
    if bad.is_empty():
        return cells, usable.with_columns(pl.lit(None, dtype=pl.Int32).alias("cut_at"))
    first_bad = bad.group_by("file", "line_no").agg(pl.col("round").min().alias("first_bad_round"))
    usable = usable.join(first_bad, on=["file", "line_no"], how="left", maintain_order="left").with_columns(
        pl.col("first_bad_round").alias("cut_at"),
        # The line counts for the event's rounds only up to its last well-formed cell.
        pl.when(pl.col("first_bad_round").is_not_null())
        .then(pl.min_horizontal(pl.col("length"), FIRST_CELL + CELL_STEP * (pl.col("first_bad_round") - 1) - 2))
        .otherwise(pl.col("length"))
        .alias("length"),
    )
    cells = _cells(usable.drop("first_bad_round"), _rounds(usable, headers), first_bad)
    return cells, usable.drop("first_bad_round")


def _cut_line_records(usable: pl.DataFrame) -> pl.DataFrame:
    """One unparseable record per 001 line whose text from some column on is not round cells."""
    cut = usable.filter(pl.col("cut_at").is_not_null())
    if cut.is_empty():
        return pl.DataFrame(schema=_RECORD_SCHEMA)
    column = FIRST_CELL + CELL_STEP * (pl.col("cut_at") - 1)
    return cut.select(
        "file",
        pl.col("line_no").alias("source_line"),
        pl.lit("line").alias("position"),
        pl.col("text").alias("raw_text"),
        join_errors(
            pl.format(
                "round {} onwards: {} (from column {}) is not a round cell (opponent rank, colour, result)",
                pl.col("cut_at"),
                quoted(pl.col("text").str.slice(column).str.strip_chars().str.slice(0, 60)),
                column + 1,
            ),
            pl.col("line_error"),
        ).alias("parse_error"),
        pl.col("fide_id").alias("white_id"),
        pl.col("name").alias("white_name"),
        pl.col("rating").alias("white_rating"),
    )


def _cells(players: pl.DataFrame, rounds: pl.DataFrame, cut: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per (player line, round): the 8-character cell and its opponent, colour and result.

    `cut`: (file, line_no, first_bad_round) of lines whose cells are cut from that round on (kind 'cut').
    """
    players = players.join(rounds, on="file", how="left").with_row_index("player_row")
    # At least one (possibly empty) slice, so that an event without rounds still has every column.
    longest = players["rounds"].max()  # Int32: an int, or None when there is no player or no round count
    most = max(1, longest if isinstance(longest, int) else 0)
    columns = [
        "file",
        "player_row",
        "line_no",
        "text",
        "rank",
        "name",
        "rating",
        "fide_id",
        "title",
        "player_federation",
        "line_error",
        "duplicate_id",
        "bye_line",
    ]
    per_round = [
        players.filter(pl.col("rounds") >= r).select(
            *columns,
            pl.lit(r, dtype=pl.Int32).alias("round"),
            pl.col("text")
            .str.slice(FIRST_CELL + CELL_STEP * (r - 1), CELL_WIDTH)
            .str.pad_end(CELL_WIDTH)
            .alias("cell"),
            # The two columns before the cell (after the previous one) must be blank.
            (
                pl.col("text").str.slice(FIRST_CELL + CELL_STEP * (r - 1) - 2, 2).str.strip_chars() == ""
                if r > 1
                else pl.lit(True)
            ).alias("gap_ok"),
        )
        for r in range(1, most + 1)
    ]
    cells = (
        pl.concat(per_round)
        .with_columns(
            blank_to_null(pl.col("cell").str.slice(0, 4)).alias("opponent_text"),
            pl.col("cell").str.slice(5, 1).str.to_lowercase().alias("colour"),
            pl.col("cell").str.slice(7, 1).str.to_uppercase().alias("code"),
            (pl.col("cell").str.strip_chars() == "").alias("blank"),
            ((pl.col("cell").str.slice(4, 1) == " ") & (pl.col("cell").str.slice(6, 1) == " ")).alias("literal"),
        )
        .with_columns(parse_id(pl.col("opponent_text"), pl.Int32).alias("opponent"))
    )
    # A round cell is 'oooo c r': an opponent rank in digits (or blank), a colour and a result code,
    # each with blanks between. Anything else is no cell: the line's text from there on is reported.
    shaped = (
        (pl.col("opponent_text").is_null() | pl.col("opponent").is_not_null()) & pl.col("literal") & pl.col("gap_ok")
    )
    cells = cells.with_columns((pl.col("blank") | shaped).alias("cell_ok"))
    if cut is not None:  # cells from a line's first malformed cell on belong to its one 'line' record
        cells = (
            cells.join(cut, on=["file", "line_no"], how="left", maintain_order="left")
            .with_columns((pl.col("round") >= pl.col("first_bad_round").fill_null(MAX_ROUNDS + 1)).alias("cut"))
            .drop("first_bad_round")
        )
    else:
        cells = cells.with_columns(pl.lit(False).alias("cut"))
    cells = cells.with_columns(pl.when(pl.col("cut")).then(None).otherwise(pl.col("opponent")).alias("opponent"))
    paired = pl.col("opponent").is_not_null() & (pl.col("opponent") > 0)
    cells = cells.with_columns(
        pl.when(pl.col("cut"))
        .then(pl.lit("cut"))
        .when(pl.col("blank"))
        .then(pl.lit("blank"))
        .when(pl.col("opponent_text").is_not_null() & pl.col("opponent").is_null())
        .then(pl.lit("bad"))
        .when(paired)
        .then(pl.lit("paired"))
        .otherwise(pl.lit("bye"))
        .alias("kind"),
    )
    # A player who was never paired (e.g. a dummy 'spielfrei' line) has no rounds to account for.
    row = cells["player_row"].to_numpy()
    pairing_like = cells.select(pl.col("kind").is_in(["paired", "bad"])).to_series().to_numpy()
    ever = np.bincount(row, weights=pairing_like, minlength=players.height) > 0
    return cells.with_columns(pl.Series("ever_paired", ever[row]), _partner_cells(players, cells))


def _partner_cells(players: pl.DataFrame, cells: pl.DataFrame) -> pl.Series:
    """Row in `cells` of the opponent's cell for the same round (null: no opponent, or no such rank).

    Index arithmetic instead of a join on (file, rank, round): players are numbered, each file's
    ranks map to player numbers through a dense table, and each player's cells sit at fixed offsets.
    """
    player_rounds = players["rounds"].fill_null(0).to_numpy().astype(np.int64)
    player_file = players["file"].to_numpy().astype(np.int64)
    player_rank = players["rank"].to_numpy().astype(np.int64)
    files = int(player_file.max()) + 1 if len(player_file) else 0
    # Each player's cells start at cell_base[player] (rounds 1..rounds of the player's file).
    cell_base = np.zeros(len(player_rounds), dtype=np.int64)
    np.cumsum(player_rounds[:-1], out=cell_base[1:])
    row, round_index = cells["player_row"].to_numpy().astype(np.int64), cells["round"].to_numpy().astype(np.int64) - 1
    cell_of = np.full(int(player_rounds.sum()), -1, dtype=np.int64)
    cell_of[cell_base[row] + round_index] = np.arange(len(row))
    # Starting rank -> player number, per file: ranks of file f sit at rank_base[f] + rank.
    max_rank = np.zeros(files, dtype=np.int64)
    np.maximum.at(max_rank, player_file, player_rank)
    rank_base = np.zeros(files + 1, dtype=np.int64)
    np.cumsum(max_rank + 1, out=rank_base[1:])
    rank_table = np.full(int(rank_base[-1]), -1, dtype=np.int64)
    rank_table[rank_base[player_file] + player_rank] = np.arange(len(player_rank))
    file = cells["file"].to_numpy().astype(np.int64)
    opponent = cells["opponent"].fill_null(0).to_numpy().astype(np.int64)
    valid = (opponent > 0) & (opponent <= max_rank[file])
    partner = np.where(valid, rank_table[np.where(valid, rank_base[file] + opponent, 0)], -1)
    found = partner >= 0
    partner_cell = np.where(found, cell_of[np.where(found, cell_base[partner] + round_index, 0)], -1)
    return pl.Series("partner_cell", partner_cell).replace(-1, None)


def _raw_cell_text(own_rank: pl.Expr, own_cell: pl.Expr, opponent_rank: pl.Expr, opponent_cell: pl.Expr) -> pl.Expr:
    """'round 3: 12 [  40 w 1] / 40 [  12 b 0] | <line>': both sides' cells, then the emitting line."""
    return pl.format(
        "round {}: {} [{}] / {} [{}] | {}",
        pl.col("round"),
        own_rank,
        own_cell,
        opponent_rank.cast(pl.Utf8).fill_null("-"),
        opponent_cell.fill_null("no such cell"),
        pl.col("text"),
    )


def _bye_records(cells: pl.DataFrame) -> pl.DataFrame:
    """Cells without an opponent (byes H/F/U/Z, blank, 0000) and cells whose opponent is unreadable."""
    unpaired = cells.filter(
        (pl.col("kind") == "bye") | (pl.col("kind") == "bad") | ((pl.col("kind") == "blank") & pl.col("ever_paired"))
    )
    code = pl.when(pl.col("code").str.strip_chars() == "").then(pl.lit("Z")).otherwise(pl.col("code"))
    return unpaired.select(
        "file",
        pl.col("line_no").alias("source_line"),
        pl.col("round").cast(pl.Utf8).alias("position"),
        pl.col("round"),
        pl.format("round {}: {} [{}] | {}", pl.col("round"), pl.col("rank"), pl.col("cell"), pl.col("text")).alias(
            "raw_text"
        ),
        join_errors(
            pl.when(pl.col("kind") == "bad").then(
                pl.format(
                    "round {} opponent {} is not a starting rank", pl.col("round"), quoted(pl.col("opponent_text"))
                )
            ),
            pl.col("line_error"),
        ).alias("parse_error"),
        pl.col("fide_id").alias("white_id"),
        pl.col("name").alias("white_name"),
        pl.col("rating").alias("white_rating"),
        pl.col("title").alias("white_title"),
        pl.col("player_federation").alias("white_federation"),
        code.alias("result"),
        pl.when(pl.col("kind") != "bad").then(pl.lit("bye")).alias("unplayed"),
    )


def _pairing_records(cells: pl.DataFrame) -> pl.DataFrame:
    """One record per pairing, from the lower rank's line; disagreeing sides become parse errors."""
    paired = cells.filter(pl.col("kind") == "paired")
    partner_columns = {
        "opponent": "p_opponent",
        "cell": "p_cell",
        "colour": "p_colour",
        "code": "p_code",
        "name": "p_name",
        "rating": "p_rating",
        "fide_id": "p_fide_id",
        "title": "p_title",
        "player_federation": "p_player_federation",
        "line_error": "p_line_error",
        "duplicate_id": "p_duplicate_id",
        "bye_line": "p_bye_line",
    }
    partner_cell = paired["partner_cell"]
    has_partner = partner_cell.is_not_null()
    partner = cells.select(list(partner_columns)).rename(partner_columns)[partner_cell.fill_null(0)]
    joined = pl.concat([paired, partner.select(pl.when(has_partner).then(pl.all()).name.keep())], how="horizontal")
    points_back = pl.col("p_opponent").fill_null(-1) == pl.col("rank")
    self_paired = pl.col("opponent") == pl.col("rank")
    # The higher rank's line stays silent only when the lower rank's line will report the pairing.
    emitted = joined.filter((pl.col("rank") < pl.col("opponent")) | ~points_back | self_paired)

    own, other = pl.col("code"), pl.col("p_code")
    pair_ok = pl.concat_str([own, other]).is_in([a + b for a, b in COMPLEMENTARY])
    known_colour = pl.col("colour").is_in(["w", "b"]) & pl.col("p_colour").is_in(["w", "b"])
    # A played game needs one White and one Black; an unplayed pairing only must not have two of either.
    same_colour = known_colour & (pl.col("colour") == pl.col("p_colour"))
    colours_ok = pl.when(own.is_in(PLAYED_CODES)).then(known_colour & ~same_colour).otherwise(~same_colour)

    valid_codes = own.is_in(PAIRED_CODES) & other.is_in(PAIRED_CODES)
    agree = ~self_paired & pl.col("p_cell").is_not_null() & points_back & valid_codes & pair_ok & colours_ok
    disagreement = (
        pl.when(self_paired)
        .then(pl.format("round {}: rank {} is paired against itself", pl.col("round"), pl.col("rank")))
        .when(pl.col("p_cell").is_null())
        .then(pl.format("round {}: opponent rank {} has no 001 record", pl.col("round"), pl.col("opponent")))
        .when(~points_back)
        .then(
            pl.format(
                "round {}: rank {} names opponent {}, whose cell names {}",
                pl.col("round"),
                pl.col("rank"),
                pl.col("opponent"),
                pl.col("p_opponent").cast(pl.Utf8).fill_null("nobody"),
            )
        )
        .when(~own.is_in(PAIRED_CODES) | ~other.is_in(PAIRED_CODES))
        .then(
            pl.format(
                "round {}: result codes {} / {} are not valid for a pairing",
                pl.col("round"),
                quoted(own),
                quoted(other),
            )
        )
        .when(~pair_ok)
        .then(
            pl.format(
                "round {}: results disagree ({} has {}, {} has {})",
                pl.col("round"),
                pl.col("rank"),
                quoted(own),
                pl.col("opponent"),
                quoted(other),
            )
        )
        .when(~colours_ok)
        .then(
            pl.format(
                "round {}: colours disagree ({} has {}, {} has {})",
                pl.col("round"),
                pl.col("rank"),
                quoted(pl.col("colour")),
                pl.col("opponent"),
                quoted(pl.col("p_colour")),
            )
        )
    )
    emitted = emitted.with_columns(agree.fill_null(False).alias("_agree"))
    # Messages are built only for the (few) pairings whose sides disagree.
    emitted = pl.concat(
        [
            emitted.filter(pl.col("_agree")).with_columns(pl.lit(None, dtype=pl.Utf8).alias("disagreement")),
            emitted.filter(~pl.col("_agree")).with_columns(disagreement.alias("disagreement")),
        ]
    )
    own_is_white = (pl.col("colour") == "w") | (~pl.col("colour").is_in(["w", "b"]) & (pl.col("p_colour") != "w"))
    white_code = pl.when(own_is_white).then(own).otherwise(other)

    def side(own_column: str, partner_column: str) -> tuple[pl.Expr, pl.Expr]:
        white = pl.when(own_is_white).then(pl.col(own_column)).otherwise(pl.col(partner_column))
        black = pl.when(own_is_white).then(pl.col(partner_column)).otherwise(pl.col(own_column))
        return white, black

    white_id, black_id = side("fide_id", "p_fide_id")
    white_name, black_name = side("name", "p_name")
    white_rating, black_rating = side("rating", "p_rating")
    white_title, black_title = side("title", "p_title")
    white_federation, black_federation = side("player_federation", "p_player_federation")
    result = (
        pl.when((own == "-") & (other == "-"))
        .then(pl.lit("--"))
        .otherwise(white_code.replace_strict(WHITE_VIEW, default=None))
    )
    unplayed = (
        pl.when(pl.col("bye_line") | pl.col("p_bye_line").fill_null(False))
        .then(pl.lit("bye"))
        .when(own.is_in(FORFEIT_CODES))
        .then(pl.lit("forfeit"))
        .when(own.is_in(UNDER_ONE_MOVE_CODES))
        .then(pl.lit("under-one-move"))
    )
    # A side whose FIDE id is on another line too makes the pairing a duplicate_player record (the reason first,
    # then the lines holding each id; one message when both sides are lines of the same id).
    duplicate = join_errors(
        pl.col("duplicate_id"),
        pl.when(pl.col("p_duplicate_id") != pl.col("duplicate_id").fill_null("")).then(pl.col("p_duplicate_id")),
    )
    return emitted.select(
        "file",
        pl.col("line_no").alias("source_line"),
        pl.col("round").cast(pl.Utf8).alias("position"),
        pl.col("round"),
        _raw_cell_text(pl.col("rank"), pl.col("cell"), pl.col("opponent"), pl.col("p_cell")).alias("raw_text"),
        join_errors(
            pl.when(duplicate.is_not_null()).then(pl.format(f"{DUPLICATE_PLAYER}: {{}}", duplicate)),
            pl.col("disagreement"),
            pl.col("line_error"),
            pl.col("p_line_error"),
        ).alias("parse_error"),
        white_id.alias("white_id"),
        black_id.alias("black_id"),
        white_name.alias("white_name"),
        black_name.alias("black_name"),
        white_rating.alias("white_rating"),
        black_rating.alias("black_rating"),
        white_title.alias("white_title"),
        black_title.alias("black_title"),
        white_federation.alias("white_federation"),
        black_federation.alias("black_federation"),
        pl.when(pl.col("disagreement").is_null()).then(result).otherwise(blank_to_null(own)).alias("result"),
        pl.when(pl.col("disagreement").is_null()).then(unplayed).alias("unplayed"),
    )
