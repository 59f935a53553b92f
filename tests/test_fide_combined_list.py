"""write_fide_combined_list: FIDE's combined list (layout A, players_list_foa.txt) written, then read back."""

from __future__ import annotations

import io
from typing import Any

import polars as pl
import pytest

from pipeline.formats.fide_list import (
    COMBINED_OPTIONAL,
    FIDE_IDENTITY,
    LAYOUTS,
    WIDTHS,
    fide_identity_text,
    parse_fide_list,
    write_fide_combined_list,
)
from pipeline.text import printable_text

# The header of players_list_foa.txt, as the reference (section 3.2, layout A) gives it.
HEADER = (
    "ID Number      Name                                                         Fed Sex Tit  WTit OTit           "
    "FOA SRtng SGm SK RRtng RGm Rk BRtng BGm BK B-day Flag"
)
SCHEMA = {
    "player_id": pl.Int64,
    "name": pl.Utf8,
    "federation": pl.Utf8,
    "sex": pl.Utf8,
    "title": pl.Utf8,
    "birth_year": pl.Int32,
    "rating": pl.Int32,
    "games": pl.Int32,
    "k": pl.Int16,
    "inactive": pl.Boolean,
} | {column: pl.Int16 if column.endswith("_k") else pl.Int32 for column in COMBINED_OPTIONAL}
# rating, games, k: the standard list's; rapid and blitz where a player has them.
PLAYERS: list[dict[str, Any]] = [
    {"player_id": 1503014, "name": "Carlsen, Magnus", "federation": "NOR", "sex": "M", "title": "GM",
     "birth_year": 1990, "rating": 2823, "games": 0, "k": 10, "inactive": False,
     "rapid_rating": 2801, "rapid_games": 12, "rapid_k": 10, "blitz_rating": 2860, "blitz_games": 0, "blitz_k": 10},
    {"player_id": 4100000, "name": "Ørsted, Josée Æbeltoft-Šimková", "federation": "DEN", "sex": "F",
     "title": "WGM", "birth_year": 1985, "rating": 2301, "games": 7, "k": 20, "inactive": False,
     "rapid_rating": None, "rapid_games": None, "rapid_k": None, "blitz_rating": 2250, "blitz_games": 4, "blitz_k": 20},
    {"player_id": 12345678, "name": "Quiet, Player", "federation": "ENG", "sex": "M", "title": None,
     "birth_year": 1950, "rating": 1712, "games": 0, "k": 20, "inactive": True},
    {"player_id": 987654321, "name": "New, Comer", "federation": None, "sex": "F", "title": None,
     "birth_year": None, "rating": None, "games": None, "k": None, "inactive": True},
    {"player_id": 200, "name": "名字, 中文", "federation": "CHN", "sex": "M", "title": "FM",
     "birth_year": 2011, "rating": 2100, "games": 9, "k": 40, "inactive": None,
     "rapid_rating": 2050, "rapid_games": 0, "rapid_k": 20},
]  # fmt: skip


def players(rows: list[dict[str, Any]] = PLAYERS, *, combined: bool = True) -> pl.DataFrame:
    """`rows` as write_fide_combined_list takes them: with the rapid and blitz columns (null where a row has none),
    or (combined=False) without them.
    """
    columns = [column for column in SCHEMA if combined or column not in COMBINED_OPTIONAL]
    schema = {column: SCHEMA[column] for column in columns}
    return pl.DataFrame([{column: row.get(column) for column in schema} for row in rows], schema=schema)


def written(frame: pl.DataFrame, line_end: str = "\r\n") -> bytes:
    buffer = io.BytesIO()
    write_fide_combined_list(frame, buffer, line_end)
    return buffer.getvalue()


def lines_of(frame: pl.DataFrame) -> list[str]:
    text = written(frame).decode("utf-8")
    assert text.endswith("\r\n")
    return text.split("\r\n")[:-1]


@pytest.mark.parametrize("combined", [True, False])
def test_round_trip_through_the_projects_reader(combined: bool) -> None:
    frame = players(combined=combined)
    parsed = parse_fide_list(written(frame), "players_list_foa.txt")
    assert (parsed.layout, parsed.rating_type, parsed.records) == ("A", "standard", len(PLAYERS))
    assert parsed.rejected.height == 0
    kinds = ["standard", "rapid", "blitz"] if combined else ["standard"]
    got = parsed.players.select(
        "player_id",
        "name",
        "federation",
        "sex",
        "title",
        "women_title",
        "birth_year",
        "flag",
        "inactive",
        *[f"{kind}_{part}" for kind in kinds for part in ("rating", "games", "k")],
    )
    want = frame.select(
        "player_id",
        "name",
        "federation",
        "sex",
        "title",
        pl.when(pl.col("title") == "WGM").then(pl.col("title")).alias("women_title"),
        "birth_year",
        pl.Series(["", "w", "i", "wi", ""]).replace("", None).alias("flag"),
        pl.col("inactive").fill_null(False),
        *[
            pl.col(column).alias(f"standard_{column}" if column in ("rating", "games", "k") else column)
            for column in ("rating", "games", "k", *(COMBINED_OPTIONAL if combined else []))
        ],
    )
    assert got.to_dicts() == want.to_dicts()
    if not combined:  # no rapid or blitz columns given: those fields are blank, read as unrated
        assert parsed.players.select(COMBINED_OPTIONAL).null_count().row(0) == (len(PLAYERS),) * 6


def test_the_header_is_fide_s_and_every_heading_starts_its_column() -> None:
    header = lines_of(players())[0]
    assert header == HEADER.rstrip()
    for field, (start, _) in LAYOUTS["A"].items():
        assert header[start] != " " and (start == 0 or header[start - 1] == " "), field


@pytest.mark.parametrize("combined", [True, False])
def test_every_data_line_is_162_characters(combined: bool) -> None:
    lines = lines_of(players(combined=combined))
    assert len(lines) == len(PLAYERS) + 1
    assert {len(line) for line in lines[1:]} == {WIDTHS["A"]} == {162}


def test_a_line_as_fide_prints_it() -> None:
    """Numbers left-aligned at their columns' starts, blank WTit and flag: a line of FIDE's own file."""
    assert lines_of(players(PLAYERS[:1]))[1] == (
        "1503014        Carlsen, Magnus                                              NOR M   GM                    "
        "       2823  0   10 2801  12  10 2860  0   10 1990      "
    )


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"birth_year": None}, "birth", "0000"),  # write_fide_list's unknown year (FIDE is reported to write 0)
        ({"birth_year": 1}, "birth", "0000"),
        ({"sex": "F", "inactive": True}, "flag", "wi"),
        ({"sex": "F", "inactive": None}, "flag", "w"),
        ({"sex": None, "inactive": True}, "flag", "i"),
        ({"games": None}, "standard_games", "0"),  # a rated player's unknown games count
        ({"rating": None, "games": 5, "k": 20}, "standard_games", ""),  # an unrated player's games and K: blank
        ({"rating": None, "games": 5, "k": 20}, "standard_k", ""),  # as the docstring says: no rating, no K
        ({"rapid_rating": None, "rapid_k": 40}, "rapid_k", ""),
        ({"blitz_rating": None, "blitz_k": 20}, "blitz_k", ""),
        ({"rapid_rating": None, "rapid_games": 3}, "rapid_games", ""),
        ({"blitz_rating": 2000, "blitz_games": None}, "blitz_games", "0"),
        ({"blitz_rating": 2000, "blitz_k": None}, "blitz_k", ""),
        ({"title": "WIM"}, "women_title", "WIM"),
        ({"title": " gm "}, "title", "gm"),
        ({"federation": None}, "federation", ""),
        ({"name": "x" * 70}, "name", "x" * 60),  # cut to leave one blank before Fed
        ({"name": " Doe,\u202e Jane "}, "name", "Doe, Jane"),  # printable: a bidi override dropped
        ({"name": "Doe,\x00Jane"}, "name", "Doe,Jane"),
    ],
)
def test_field_text(changes: dict[str, Any], field: str, text: str) -> None:
    line = lines_of(players([PLAYERS[0] | changes]))[1]
    start, end = LAYOUTS["A"][field]
    assert len(line) == 162 and line[start:end] == text.ljust(end - start)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("rating", 1_000_000, "standard_rating value of 7 characters .* 6-character"),
        ("rating", -100_000, "standard_rating value of 7 characters"),
        ("games", 10_000, "standard_games value of 5 characters .* 4-character"),
        ("k", 1_000, "standard_k value of 4 characters .* 3-character"),
        ("rapid_rating", 1_000_000, "rapid_rating value of 7 characters"),
        ("blitz_games", 10_000, "blitz_games value of 5 characters"),
        ("player_id", 10**15, "player_id value of 16 characters .* 15-character"),
    ],
)
def test_a_number_too_wide_for_its_column_raises(column: str, value: int, message: str) -> None:
    frame = players().with_columns(
        pl.when(pl.col("player_id") == 200).then(value).otherwise(pl.col(column)).cast(pl.Int64).alias(column)
    )
    with pytest.raises(ValueError, match=message):
        written(frame)


@pytest.mark.parametrize("name", ["Tab,\tName", "New,\nLine", "Carriage,\r\nReturn", "Form,\x0cFeed\u2028Sep"])
def test_a_name_with_a_tab_or_line_break_stays_on_its_line(name: str) -> None:
    rows = [PLAYERS[0] | {"name": name}, PLAYERS[1]]
    data = written(players(rows))
    lines = data.decode("utf-8").split("\r\n")
    assert len(lines) == 4 and lines[-1] == "" and all(len(line) == 162 for line in lines[1:3])
    parsed = parse_fide_list(data, "players_list_foa.txt")
    assert parsed.rejected.height == 0
    assert parsed.players["player_id"].to_list() == [1503014, 4100000]
    assert parsed.players["name"][0] == printable_text(name) and "  " not in printable_text("Tab,\tName")


def test_the_identity_text_given_is_the_start_of_each_line() -> None:
    """FIDE_IDENTITY (fide_identity_text, made once for many lists): the same file, the lines taking it as given."""
    frame = players()
    identity = fide_identity_text(frame)
    assert written(frame.with_columns(identity.alias(FIDE_IDENTITY))) == written(frame)
    partial = identity.clone().scatter([1, 3], None)  # scatter changes the series it is called on
    assert written(frame.with_columns(partial.alias(FIDE_IDENTITY))) == written(frame)
    marked = identity.str.replace(r"^.", "X")
    lines = lines_of(frame.with_columns(marked.alias(FIDE_IDENTITY)))[1:]
    assert [line[0] for line in lines] == ["X"] * len(PLAYERS) and {len(line) for line in lines} == {162}


def test_line_end_and_no_players() -> None:
    assert written(players([]), "\n") == (HEADER + "\n").encode()
    parsed = parse_fide_list(written(players([])), "players_list_foa.txt")
    assert parsed.layout == "A" and parsed.players.height == 0
    assert b"\r" not in written(players(), "\n")
