"""FIDE rating-list files (fixed-width TXT layouts A-F) -> FideList rows, plus every line that could not be used."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO

import polars as pl

from pipeline.formats.common import UnreadableDump
from pipeline.formats.decoding import decode_text, split_lines
from pipeline.formats.fields import parse_int, quoted, two_digit_year
from pipeline.text import holds_control, printable
from schemas.fide_list import FEDERATION_PATTERN, LIST_TYPES, FideList
from schemas.util import conform, polars_schema

# 0-based half-open slices of each layout (reference section 3.2). 'rating', 'games', 'k' are the
# per-type lists' own columns, renamed to the file's rating type when the file is read.
LAYOUTS: dict[str, dict[str, tuple[int, int]]] = {
    "A": {
        "player_id": (0, 15),
        "name": (15, 76),
        "federation": (76, 80),
        "sex": (80, 84),
        "title": (84, 89),
        "women_title": (89, 94),
        "other_titles": (94, 109),
        "foa_title": (109, 113),
        "standard_rating": (113, 119),
        "standard_games": (119, 123),
        "standard_k": (123, 126),
        "rapid_rating": (126, 132),
        "rapid_games": (132, 136),
        "rapid_k": (136, 139),
        "blitz_rating": (139, 145),
        "blitz_games": (145, 149),
        "blitz_k": (149, 152),
        "birth": (152, 158),
        "flag": (158, 162),
    },
    "B": {
        "player_id": (0, 15),
        "name": (15, 76),
        "federation": (76, 80),
        "sex": (80, 84),
        "title": (84, 89),
        "women_title": (89, 94),
        "other_titles": (94, 109),
        "foa_title": (109, 113),
        "rating": (113, 119),
        "games": (119, 123),
        "k": (123, 126),
        "birth": (126, 132),
        "flag": (132, 136),
    },
    "C": {
        "player_id": (0, 15),
        "name": (15, 76),
        "federation": (76, 80),
        "sex": (80, 84),
        "title": (84, 89),
        "women_title": (89, 94),
        "other_titles": (94, 109),
        "standard_rating": (109, 115),
        "standard_games": (115, 119),
        "standard_k": (119, 122),
        "rapid_rating": (122, 128),
        "rapid_games": (128, 132),
        "rapid_k": (132, 135),
        "blitz_rating": (135, 141),
        "blitz_games": (141, 145),
        "blitz_k": (145, 148),
        "birth": (148, 154),
        "flag": (154, 158),
    },
    "D": {
        "player_id": (0, 15),
        "name": (15, 76),
        "federation": (76, 80),
        "sex": (80, 84),
        "title": (84, 89),
        "women_title": (89, 94),
        "other_titles": (94, 109),
        "rating": (109, 115),
        "games": (115, 119),
        "k": (119, 122),
        "birth": (122, 128),
        "flag": (128, 132),
    },
    "E": {
        "player_id": (0, 10),
        "name": (10, 44),
        "title": (44, 48),
        "federation": (48, 53),
        "rating": (53, 59),
        "games": (59, 64),
        "birth": (64, 70),
        "flag": (70, 76),
    },
    "F": {
        "player_id": (0, 10),
        "name": (10, 44),
        "title": (44, 48),
        "federation": (48, 52),
        "rating": (52, 58),
        "games": (58, 63),
        "birth": (63, 73),
        "flag": (73, 79),
    },
}
# The usual full line length of each layout (lines may also come right-trimmed).
WIDTHS = {"A": 162, "B": 136, "C": 158, "D": 132, "E": 76, "F": 79}
COMBINED = {"A", "C"}
# What the birth column holds: a year (0 / 0000 when unknown), or layout F's dd.mm.yy ('  .  .' unknown).
BIRTH_PATTERNS = {layout: r"^(\d{4}|0|)$" for layout in "ABCDE"} | {"F": r"^(\d{1,2}\.\d{1,2}\.\d{2}|\.\s*\.|)$"}
# A data line must reach this field: the per-type lists list rated players only; the combined
# lists always fill the sex column.
REQUIRED_FIELD = {"A": "sex", "B": "rating", "C": "sex", "D": "rating", "E": "rating", "F": "rating"}
RATING_PLAUSIBLE = (1000, 3000)  # no FIDE list has ever published a rating outside this range
_MONTHS = {
    name: number
    for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1
    )
}
_PERIOD_TOKEN = re.compile(r"(?i)(?<![a-z])(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(\d{2})(?!\d)")
_REJECT_SCHEMA = pl.Schema({"source_line": pl.Int64, "raw_text": pl.Utf8, "reason": pl.Utf8, "detail": pl.Utf8})


@dataclass
class FideListFile:
    """What one list file holds: its layout, rating type, period, the players, and the rejected lines."""

    layout: str
    rating_type: str  # standard / rapid / blitz (per-type lists); standard for combined lists
    period: str | None  # YYYY-MM from the header or the file name, when either says
    records: int  # player lines read (header, blank and end-of-file lines excluded)
    players: pl.DataFrame  # FideList rows
    rejected: pl.DataFrame  # source_line, raw_text, reason (quarantine code), detail


def rating_type_of(name: str) -> str:
    """'rapid_jan13frl.txt' -> rapid, 'blitz_...' -> blitz, anything else -> standard."""
    base = name.rsplit("/", 1)[-1].lower()
    return "rapid" if "rapid" in base else "blitz" if "blitz" in base else "standard"


def period_of(*texts: str) -> str | None:
    """YYYY-MM of the first 'jan13' / 'APR04' style token in the texts (header first, then file name)."""
    for text in texts:
        match = _PERIOD_TOKEN.search(text or "")
        if match:
            year = int(match.group(2))
            return f"{two_digit_year(year)}-{_MONTHS[match.group(1).lower()]:02d}"
    return None


def detect_layout(text: str) -> str | None:
    """Layout letter of a FIDE list text (from its header, else from its data lines), or None."""
    lines = [line for line in split_lines(text[:200_000]) if line.strip() and line.strip() != "\x1a"]
    if not lines:
        return None
    header = _header_layout(lines[0])
    if header is not None:
        return header
    return _data_layout(lines[:200])


def _header_layout(line: str) -> str | None:
    lowered = line.lower()
    if lowered.startswith("id_number") or (lowered.startswith("id number") and "birthday" in lowered):
        return "F"
    if lowered.startswith("id number") and "titl" in lowered and "sex" not in lowered:
        return "E"
    if lowered.startswith("id number"):
        has_foa, has_srtng = " foa " in f" {lowered} ", "srtng" in lowered
        return "A" if has_foa and has_srtng else "B" if has_foa else "C" if has_srtng else "D"
    return None


def _data_layout(lines: list[str]) -> str | None:
    """The layout under which most sample lines read as players (an id, a name, a federation, a number)."""
    sample = pl.DataFrame({"text": lines}, schema={"text": pl.Utf8})
    longest = max(len(line) for line in lines)
    best, best_score = None, 0.0
    for layout, fields in LAYOUTS.items():
        ratings = [bounds for field, bounds in fields.items() if field.endswith("rating")]
        score = (
            sample.select(
                (
                    _slice(fields["player_id"]).str.contains(r"^\d+$")
                    & (_slice(fields["name"]) != "")
                    & _slice(fields["federation"]).str.contains(FEDERATION_PATTERN)
                    & pl.all_horizontal(_slice(bounds).str.contains(r"^\d*$") for bounds in ratings)
                    # Nearly every listed player has a rating in a list's (first) rating column.
                    & pl.any_horizontal(_slice(bounds).str.contains(r"^\d+$") for bounds in ratings)
                    & _slice(fields["birth"]).str.contains(BIRTH_PATTERNS[layout])
                    & (pl.col("text").str.len_chars() <= WIDTHS[layout] + 3)
                ).mean()
            ).item()
            or 0.0
        )
        # Layouts that fit equally well (C and D share their first columns): the line width decides.
        score += 0.01 if abs(longest - WIDTHS[layout]) <= 3 else 0.0
        if score > best_score:
            best, best_score = layout, score
    return best if best_score >= 0.51 else None


def _slice(bounds: tuple[int, int], shift: pl.Expr | None = None) -> pl.Expr:
    start, end = bounds
    offset = pl.lit(start) if shift is None else shift + start
    return pl.col("text").str.slice(offset, end - start).str.strip_chars()


def parse_fide_list(data: bytes, name: str) -> FideListFile:
    """Players of a FIDE list file; raises UnreadableDump when the bytes are not a list at all."""
    text = decode_text(data)
    if not text.strip():
        raise UnreadableDump("empty file")
    layout = detect_layout(text)
    if layout is None:
        raise UnreadableDump("not a FIDE rating list: no known header, and the lines fit none of the layouts A-F")
    lines = pl.DataFrame({"text": split_lines(text)}, schema={"text": pl.Utf8}).with_row_index("source_line", offset=1)
    # Not records: blank lines, DOS end-of-file marks (APR04FRL.TXT ends with ^Z), and the header.
    lines = lines.with_columns(pl.col("source_line").cast(pl.Int64)).filter(
        pl.col("text").str.strip_chars(" \t\x1a") != ""
    )
    header = lines["text"][0] if lines.height and _header_layout(lines["text"][0]) is not None else ""
    data_lines = lines.slice(1) if header else lines
    rating_type, period = rating_type_of(name), period_of(header, name)
    players, rejected = _read_lines(data_lines, layout, rating_type, period)
    return FideListFile(layout, rating_type, period, data_lines.height, players, rejected)


def _read_lines(
    lines: pl.DataFrame, layout: str, rating_type: str, period: str | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    fields = dict(LAYOUTS[layout])
    for generic in ("rating", "games", "k"):
        if generic in fields:
            fields[f"{rating_type}_{generic}"] = fields.pop(generic)
    # Layout A's rare 163-character lines: an overflowing OTit pushes the later columns right.
    shift = (pl.col("text").str.len_chars() - WIDTHS["A"]).clip(0, 3) if layout == "A" else None
    texts = {
        field: _slice(bounds, shift if shift is not None and bounds[0] >= 109 else None)
        for field, bounds in fields.items()
    }
    frame = lines.with_columns([expr.alias(f"_{field}") for field, expr in texts.items()])
    numbers = [f for f in fields if f.endswith(("_rating", "_games", "_k"))]
    frame = frame.with_columns([parse_int(pl.col(f"_{field}")).alias(field) for field in numbers + ["player_id"]])
    required = fields[_required_field(layout, rating_type)]
    line_length = pl.col("text").str.strip_chars_end("\r").str.len_chars()
    longest = WIDTHS[layout] + (1 if layout == "A" else 0)  # layout A's OTit may overflow by one
    problems = [
        pl.when(pl.col("text").str.strip_chars_end().str.len_chars() > longest).then(
            pl.format(
                f"line is too long ({{}} characters; layout {layout} lines have {WIDTHS[layout]})",
                pl.col("text").str.strip_chars_end().str.len_chars(),
            )
        ),
        pl.when(line_length <= required[0]).then(
            pl.format(
                f"line is cut short ({{}} characters; layout {layout} needs at least {required[0] + 1})", line_length
            )
        ),
        pl.when(pl.col("player_id").is_null() | (pl.col("player_id") <= 0)).then(
            pl.format(
                f"FIDE id {{}} (columns {fields['player_id'][0] + 1}-{fields['player_id'][1]}) is not a number",
                quoted(pl.col("_player_id")),
            )
        ),
        pl.when(pl.col("_name") == "").then(pl.lit("no name")),
        pl.when((pl.col("_federation") != "") & ~pl.col("_federation").str.contains(FEDERATION_PATTERN)).then(
            pl.format("federation {} is not a three-letter code", quoted(pl.col("_federation")))
        ),
    ]
    if "sex" in fields:
        problems.append(
            pl.when(~pl.col("_sex").is_in(["M", "F", ""])).then(
                pl.format("sex {} is not M or F", quoted(pl.col("_sex")))
            )
        )
    for field in numbers:
        problems.append(
            pl.when((pl.col(f"_{field}") != "") & pl.col(field).is_null()).then(
                pl.format(f"{field.replace('_', ' ')} {{}} is not a number", quoted(pl.col(f"_{field}")))
            )
        )
    if layout not in COMBINED:
        problems.append(pl.when(pl.col(f"_{rating_type}_rating") == "").then(pl.lit(f"no {rating_type} rating")))
    low, high = RATING_PLAUSIBLE
    implausible = [
        pl.when((pl.col(f"{kind}_rating") > 0) & ~pl.col(f"{kind}_rating").is_between(low, high)).then(
            pl.format(f"{kind} rating {{}} is outside {low}-{high}", pl.col(f"{kind}_rating"))
        )
        for kind in LIST_TYPES
        if f"{kind}_rating" in fields
    ]
    frame = frame.with_columns(
        pl.concat_str(problems, separator="; ", ignore_nulls=True).alias("_unparseable"),
        pl.concat_str(implausible, separator="; ", ignore_nulls=True).alias("_implausible"),
    ).with_columns(
        pl.when(pl.col("_unparseable") != "")
        .then(pl.lit("unparseable"))
        .when(pl.col("_implausible") != "")
        .then(pl.lit("rating_implausible"))
        .alias("_reason")
    )
    # A player listed twice: the first line stands, later ones are duplicates.
    first_seen = pl.col("source_line").first().over("player_id")
    frame = frame.with_columns(
        pl.when(
            pl.col("_reason").is_null()
            & (pl.int_range(pl.len()).over(pl.col("player_id"), pl.col("_reason").is_null()) > 0)
        )
        .then(pl.lit("duplicate"))
        .otherwise(pl.col("_reason"))
        .alias("_reason"),
    ).with_columns(
        pl.when(pl.col("_reason") == "unparseable")
        .then(pl.col("_unparseable"))
        .when(pl.col("_reason") == "rating_implausible")
        .then(pl.col("_implausible"))
        .when(pl.col("_reason") == "duplicate")
        .then(pl.format("FIDE id {} is already listed on line {}", pl.col("player_id"), first_seen))
        .alias("_detail")
    )
    rejected = frame.filter(pl.col("_reason").is_not_null()).select(
        "source_line",
        pl.col("text").alias("raw_text"),
        pl.col("_reason").alias("reason"),
        pl.col("_detail").alias("detail"),
    )
    return _players(frame.filter(pl.col("_reason").is_null()), fields, layout, period), rejected.cast(_REJECT_SCHEMA)


def _required_field(layout: str, rating_type: str) -> str:
    field = REQUIRED_FIELD[layout]
    return f"{rating_type}_{field}" if field == "rating" else field


# Layout F writes the birthday dd.mm.yy, without the century (README, "Rating your own federation's files": a
# choice, the layout's description being silent on it).
def two_digit_birth_year(yy: pl.Expr, period: str | None) -> pl.Expr:
    """The birth year of layout F's two-digit `yy`: the century that puts it no later than the year of the list of
    `period` (YYYY-MM); 1930-2029 while the list's month is unknown, which a caller that learns it later (the
    pool ledger's --months) derives again with it: a birth year after the list makes a negative age.
    """
    pivot = int(period[2:4]) if period else 29
    return pl.when(yy <= pivot).then(2000 + yy).otherwise(1900 + yy)


def _players(frame: pl.DataFrame, fields: dict[str, tuple[int, int]], layout: str, period: str | None) -> pl.DataFrame:
    """Typed FideList rows of the lines that passed."""

    def text(field: str) -> pl.Expr:
        if field not in fields:
            return pl.lit(None, dtype=pl.Utf8)
        return pl.when(pl.col(f"_{field}") != "").then(pl.col(f"_{field}"))

    birth = pl.col("_birth") if "birth" in fields else pl.lit("")
    if layout == "F":
        parts = birth.str.extract_groups(r"^(\d{1,2})\.(\d{1,2})\.(\d{2})$")
        year = two_digit_birth_year(parts.struct.field("3").cast(pl.Int32, strict=False), period)
        birth_date = pl.date(
            year,
            parts.struct.field("2").cast(pl.Int32, strict=False),
            parts.struct.field("1").cast(pl.Int32, strict=False),
        )
        birth_year = year
    else:
        birth_year = birth.str.extract(r"^(\d{4})$", 1).cast(pl.Int32, strict=False)
        birth_date = pl.lit(None, dtype=pl.Date)
    flag = text("flag")
    rows = frame.with_columns(
        pl.col("_name").alias("name"),
        text("federation").alias("federation"),
        text("sex").alias("sex"),
        text("title").alias("title"),
        text("women_title").alias("women_title"),
        text("other_titles").alias("other_titles"),
        text("foa_title").alias("foa_title"),
        pl.when(birth_year.is_between(1850, 2100)).then(birth_year).alias("birth_year"),
        birth_date.alias("birth_date"),
        flag.alias("flag"),
        flag.fill_null("").str.contains("i").alias("inactive"),
        *[
            pl.when(pl.col(f"{kind}_rating") > 0).then(pl.col(f"{kind}_rating")).alias(f"{kind}_rating")
            for kind in LIST_TYPES
            if f"{kind}_rating" in fields
        ],
    )
    schema = polars_schema(FideList)
    rows = rows.with_columns(
        [pl.lit(None, dtype=dtype).alias(name) for name, dtype in schema.items() if name not in rows.columns]
    )
    return conform(rows, FideList)


# -- writing ---------------------------------------------------------------------------------------
# Header tokens of the per-type layout B; each starts at its column's first position (reference 3.2).
_LAYOUT_B_HEADINGS = {
    "player_id": "ID Number",
    "name": "Name",
    "federation": "Fed",
    "sex": "Sex",
    "title": "Tit",
    "women_title": "WTit",
    "other_titles": "OTit",
    "foa_title": "FOA",
    # "rating": the list's month (list_month_token), set per list
    "games": "Gms",
    "k": "K",
    "birth": "B-day",
    "flag": "Flag",
}
WOMEN_TITLES = ("WGM", "WIM", "WFM", "WCM", "wg", "wm", "wf", "wc")
_MONTH_TOKENS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


def list_month_token(list_month: str) -> str:
    """'2024-04' -> 'APR24', the heading of a per-type list's rating column."""
    year, month = int(list_month[:4]), int(list_month[5:7])
    return f"{_MONTH_TOKENS[month - 1]}{year % 100:02d}"


# Each field's width in every layout.
_FIELD_WIDTHS = {
    layout: {field: end - start for field, (start, end) in fields.items()} for layout, fields in LAYOUTS.items()
}
# Header tokens of the combined layout A (reference 3.2), each at its column's first position, as in FIDE's file.
_LAYOUT_A_HEADINGS = {
    **{field: heading for field, heading in _LAYOUT_B_HEADINGS.items() if field in LAYOUTS["A"]},
    "standard_rating": "SRtng",
    "standard_games": "SGm",
    "standard_k": "SK",
    "rapid_rating": "RRtng",
    "rapid_games": "RGm",
    "rapid_k": "Rk",
    "blitz_rating": "BRtng",
    "blitz_games": "BGm",
    "blitz_k": "BK",
}
# write_fide_combined_list's optional columns, the rapid and blitz lists' own.
COMBINED_OPTIONAL = [f"{kind}_{part}" for kind in LIST_TYPES if kind != "standard" for part in ("rating", "games", "k")]
# The players' column written into each numeric field of a written layout, checked against its column (the text
# columns are cut to fit). The combined list's standard fields hold write_fide_list's rating, games and k.
_NUMBER_COLUMNS: dict[str, dict[str, str]] = {
    "B": {"player_id": "player_id", "rating": "rating", "games": "games", "k": "k"},
    "A": {"player_id": "player_id", "standard_rating": "rating", "standard_games": "games", "standard_k": "k"}
    | {column: column for column in COMBINED_OPTIONAL},
}
# A column of numbers spanning fewer values is written through a table of its range (_per_value).
_NUMBER_TABLE_ROWS = 100_000
# Fields whose text follows from one column of few values: made once per value, looked up per row (_per_value).
_BY_VALUE = {
    layout: {
        "federation": "federation",
        "sex": "sex",
        "title": "title",
        "women_title": "title",
        "birth": "birth_year",
    }
    | {field: column for field, column in numbers.items() if field != "player_id"}
    for layout, numbers in _NUMBER_COLUMNS.items()
}
# The fields that say who a player is, the same in every month's list (fide_identity_text), and the month's own.
# Layouts A and B share these columns, so one identity text serves both.
_IDENTITY_FIELDS = ["player_id", "name", "federation", "sex", "title", "women_title", "other_titles", "foa_title"]
# write_fide_list's optional column of fide_identity_text.
FIDE_IDENTITY = "fide_identity"


def write_fide_list(players: pl.DataFrame, list_month: str, handle: BinaryIO, line_end: str = "\r\n") -> None:
    """The rated players as FIDE's current per-type list (layout B, e.g. standard_rating_list.txt), UTF-8 encoded
    into `handle`.

    `players`: player_id, name, federation, sex, title, birth_year, rating, games, k, inactive, in the
    order to print (any may be null but player_id). `list_month` (YYYY-MM) is the date of the list,
    the heading of its rating column. Like FIDE's per-type lists, unrated players are left out. Women
    (sex F) carry the flag w, inactive players i. Text fields are cut to leave one blank before the
    next column; a number too wide for its column raises ValueError rather than shift the line (read
    from the numbers' range, not every cell's length). Polars makes and writes the lines in one streaming pass, so
    the file's text is never held whole.

    `players` may also carry FIDE_IDENTITY, fide_identity_text's text of its players, made once for many lists
    of the same players: where it is not null, the fields it holds are not made again.
    """
    headings = dict(_LAYOUT_B_HEADINGS, rating=list_month_token(list_month))
    _write_lines(players.filter(pl.col("rating").is_not_null()), "B", headings, handle, line_end)


def write_fide_combined_list(players: pl.DataFrame, handle: BinaryIO, line_end: str = "\r\n") -> None:
    """The players as FIDE's combined list (layout A, players_list_foa.txt: standard, rapid and blitz side by side,
    162 characters a line), UTF-8 encoded into `handle`.

    `players`: write_fide_list's columns (player_id, name, federation, sex, title, birth_year, rating, games, k,
    inactive; optionally FIDE_IDENTITY), in the order to print, rating, games and k being the standard list's.
    The optional COMBINED_OPTIONAL columns (rapid_rating, rapid_games, rapid_k, blitz_rating, blitz_games,
    blitz_k) fill the rapid and blitz fields; absent or null, those are left blank. Unlike the per-type list,
    every player given is listed, rated or not (FIDE's combined file lists the players of any of the three lists:
    the caller chooses them).

    The conventions are write_fide_list's: text cut to leave one blank before the next column and made printable,
    a number too wide for its column a ValueError, numbers left-aligned at their column's start (as in FIDE's
    file), the flag w (sex F), i (inactive) or wi. A rated player's unknown games count is 0; an unrated
    player's games and K are blank, as the rating is. An unknown birth year is written 0000, as write_fide_list
    writes it (FIDE's combined file is reported to write 0; the reader takes either). Streamed by Polars in one
    pass, as write_fide_list is.
    """
    missing = [column for column in COMBINED_OPTIONAL if column not in players.columns]
    rows = players.with_columns([pl.lit(None, dtype=pl.Int32).alias(column) for column in missing])
    _write_lines(rows, "A", _LAYOUT_A_HEADINGS, handle, line_end)


def _write_lines(rows: pl.DataFrame, layout: str, headings: dict[str, str], handle: BinaryIO, line_end: str) -> None:
    """The header (`headings` at their columns) and one line of `layout` per row of `rows` into `handle`."""
    fields, width = list(LAYOUTS[layout]), _FIELD_WIDTHS[layout]
    header = "".join(headings[field].ljust(width[field]) for field in fields).rstrip()
    for field, column in _NUMBER_COLUMNS[layout].items():
        low, high = -(10 ** (width[field] - 1)) + 1, 10 ** width[field] - 1  # what fits the column
        least, most = rows.select(
            pl.col(column).min().fill_null(0).alias("least"), pl.col(column).max().fill_null(0).alias("most")
        ).row(0)
        if least < low or most > high:
            longest = rows.select(pl.col(column).cast(pl.Utf8).str.len_chars().max()).item()
            raise ValueError(
                f"a {field} value of {longest} characters does not fit FIDE's {width[field]}-character column"
            )
    if FIDE_IDENTITY in rows.columns:
        identity = rows[FIDE_IDENTITY]
        if identity.null_count():
            missing = identity.is_null()
            identity = identity.scatter(missing.arg_true(), fide_identity_text(rows.filter(missing)))
        after_identity = [field for field in fields if field not in _IDENTITY_FIELDS]
        cells = [pl.lit(identity), *_line_cells(rows, after_identity, layout)]
    else:
        cells = _line_cells(rows, fields, layout)
    handle.write((header + line_end).encode("utf-8"))
    handle.flush()  # Polars writes the lines through the handle's file descriptor where it has one
    # One text column, never quoted: each line is written as it is, each followed by line_end.
    line = pl.concat_str(cells).alias("line")
    rows.lazy().select(line).sink_csv(handle, include_header=False, quote_style="never", line_terminator=line_end)


def fide_identity_text(players: pl.DataFrame) -> pl.Series:
    """The text of layout B's fields that say who each player is (id, name, federation, sex, titles: the first 113
    characters of the line, the same in layout A), as write_fide_list writes them. Made once, it serves every
    month's list of the same players (their FIDE_IDENTITY column); the columns are write_fide_list's.
    """
    return players.select(pl.concat_str(_line_cells(players, _IDENTITY_FIELDS)).alias(FIDE_IDENTITY)).to_series()


def _line_cells(rows: pl.DataFrame, fields: list[str], layout: str = "B") -> list[pl.Expr]:
    """The padded text of `fields` (the written `layout`'s: B or A) for each of `rows`: write_fide_list's players,
    with write_fide_combined_list's rapid and blitz columns for layout A.
    """
    width, by_value, numbers = _FIELD_WIDTHS[layout], _BY_VALUE[layout], _NUMBER_COLUMNS[layout]

    def text(column: str, field: str) -> pl.Expr:
        # Published text (pipeline.text.printable): a line end or tab would break the fixed-width line, a bidi
        # override would make it read backwards. Names seldom hold one: one search of the whole column spares
        # replacing in every cell. A field written per value is cleaned in its few distinct values only.
        cleaned = pl.col(column)
        if field in by_value or holds_control(rows[column]):
            cleaned = printable(cleaned)
        return cleaned.str.strip_chars().fill_null("").str.slice(0, width[field] - 1)

    def number(column: str, unknown: str = "") -> pl.Expr:
        return pl.col(column).cast(pl.Utf8).fill_null(unknown)

    def women_title() -> pl.Expr:
        title = text("title", "title")
        return pl.when(title.is_in(WOMEN_TITLES)).then(title).otherwise(pl.lit(""))

    def flag() -> pl.Expr:  # w: a woman, i: inactive; the four texts picked by a number per row
        woman, inactive = pl.col("sex").eq("F").fill_null(False), pl.col("inactive").fill_null(False)
        return pl.lit(pl.Series(["", "i", "w", "wi"])).gather(woman.cast(pl.UInt8) * 2 + inactive.cast(pl.UInt8))

    made: dict[str, Callable[[], pl.Expr]] = {  # each field's text before padding, made only for the fields asked for
        "name": lambda: text("name", "name"),
        "federation": lambda: text("federation", "federation"),
        "sex": lambda: text("sex", "sex"),
        "title": lambda: text("title", "title"),
        "women_title": women_title,
        "other_titles": lambda: pl.lit(""),
        "foa_title": lambda: pl.lit(""),
        "birth": lambda: (
            pl.when(pl.col("birth_year").is_between(1000, 9999))
            .then(pl.col("birth_year").cast(pl.Utf8))
            .otherwise(pl.lit("0000"))
        ),
        "flag": flag,
        # A rated player's unknown games count is 0; a K or rating unknown is left blank.
        **{field: partial(number, column, "0" if field.endswith("games") else "") for field, column in numbers.items()},
    }

    def cell(field: str) -> pl.Expr:
        padded = made[field]().str.pad_end(width[field])
        written = _per_value(rows, by_value[field], padded) if field in by_value else padded
        kind, _, part = field.rpartition("_")
        if part in ("games", "k"):  # an unrated player's games and K are blank, as their rating (layout A only)
            rating = numbers[f"{kind}_rating" if kind else "rating"]
            if rows[rating].null_count():
                written = pl.when(pl.col(rating).is_null()).then(pl.lit(" " * width[field])).otherwise(written)
        return written

    return [cell(field) for field in fields]


def _per_value(rows: pl.DataFrame, column: str, cell: pl.Expr) -> pl.Expr:
    """`cell` (an expression of `column` alone) made once for each value of `column`, then looked up for every row:
    the same text, made a few hundred times rather than once a player (federations, titles, ratings, K, birth years).
    Numbers are looked up by position in a table of their range, other values by hashing.
    """
    values = rows[column]
    least, most = (values.min(), values.max()) if values.dtype.is_integer() else (None, None)
    if isinstance(least, int) and isinstance(most, int) and most - least < _NUMBER_TABLE_ROWS:
        texts = pl.DataFrame({column: pl.int_range(least, most + 1, eager=True).cast(values.dtype)}).select(cell)
        unknown = pl.DataFrame({column: [None]}, schema={column: values.dtype}).select(cell).item()
        # Shifted as Int64: in its own type (Int8 from -99 to 99, say) the position could overflow.
        return pl.lit(texts.to_series()).gather(pl.col(column).cast(pl.Int64) - least).fill_null(unknown)
    distinct = rows.select(pl.col(column).unique())
    return pl.col(column).replace_strict(distinct[column], distinct.select(cell).to_series(), return_dtype=pl.Utf8)
