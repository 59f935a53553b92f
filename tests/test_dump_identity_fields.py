"""What dumps state about a game beyond its players and result.

A CSV's colour_known reaches the games table and the systems, and the titles and federations of TRF 001 lines and PGN
tags name the players no registry holds.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.formats import read_dumps
from pipeline.systems import empty_state, get_system, rate_system_period
from pipeline.validate.identity import players_named_in_dumps
from pipeline.validate.split import split_month
from schemas import Players, empty_frame
from schemas.util import conform

MONTH = "2024-01"


def month_split(files: dict[str, str], registry: pl.DataFrame | None = None):
    """split_month of the files (name -> text) as one month's dumps of federation GER."""
    dumps = [(text.encode(), f"GER/{MONTH}/{name}", "GER") for name, text in files.items()]
    raw = pl.concat(read_dumps(dumps, MONTH))
    return raw, split_month(raw, registry if registry is not None else empty_frame(Players), MONTH)


# -- colour_known ------------------------------------------------------------------------------------------------
CSV = (
    "white_id,black_id,result,date,round,colour_known\n"
    "1001,1002,1/2-1/2,2024-01-05,1,false\n"
    "1003,1004,1/2-1/2,2024-01-05,1,true\n"
    "1005,1006,1/2-1/2,2024-01-05,1,\n"
)


def test_a_csv_colour_known_false_reaches_the_games_table():
    raw, split = month_split({"games.csv": CSV})
    assert raw.sort("source_line")["colour_known"].to_list() == [False, True, True]
    assert split.games.sort("white_id")["colour_known"].to_list() == [False, True, True]


def test_trf_and_pgn_leave_colour_known_null_which_the_systems_read_as_known():
    raw, split = month_split({"event.trf": TRF, "games.pgn": PGN})
    assert raw["colour_known"].null_count() == raw.height
    assert split.games.height and split.games["colour_known"].null_count() == split.games.height
    elo = get_system("elo")
    params = elo.params(k=20, white_advantage=30, init_rating=2200)
    rated = rate_system_period(elo, empty_state(elo), split.games, params, 1)
    assert rated.games["white_expected"].to_list() == pytest.approx([1 / (1 + 10 ** (-30 / 400))] * split.games.height)


def test_games_whose_colours_are_unknown_get_no_white_advantage():
    _, split = month_split({"games.csv": CSV})
    elo = get_system("elo")
    params = elo.params(k=20, white_advantage=30, init_rating=2200)
    games = split.games.sort("white_id")
    rated = rate_system_period(elo, empty_state(elo), games, params, 1)
    with_advantage = 1 / (1 + 10 ** (-30 / 400))
    assert rated.games["white_expected"].to_list() == pytest.approx([0.5, with_advantage, with_advantage])
    # A draw between equals moves White's rating only where White was expected to score more.
    state = dict(zip(rated.state["player_id"], rated.state["rating"], strict=True))
    assert state[1001] == pytest.approx(2200.0)
    assert state[1003] == pytest.approx(2200 + 20 * (0.5 - with_advantage))


# -- titles and federations ------------------------------------------------------------------------------------
def trf_player(rank: int, title: str, name: str, federation: str, fide_id: str, cells: list[str]) -> str:
    """A 001 record: sex (column 10), title (11-13), name (15-47), rating (49-52), federation (54-56), id (58-68)."""
    line = f"001 {rank:>4} m{title:>3} {name:<33} 2000 {federation:<3} {fide_id:>11} 1990/01/01  0.0 {rank:>4}  "
    assert len(line) == 91
    return (line + "  ".join(cells)).rstrip()


TRF = "\n".join(
    [
        "012 Test Open",
        trf_player(1, "GM", "Alpha, Anna", "ger", "4100001", ["   2 w 1", "   3 b =", "   4 w 1"]),
        trf_player(2, " wg", "Beta, Berta", "FRA", "4100002", ["   1 b 0", "   4 b =", "   3 w 1"]),
        trf_player(3, "", "Gamma, Gus", "12", "4100003", ["   4 w 0", "   1 w =", "   2 b 0"]),
        trf_player(4, "XYZ", "Delta, Dora", "", "4100004", ["   3 b 1", "   2 w =", "   1 b 0"]),
    ]
)


def pgn_game(white: str, black: str, tags: str, result: str = "1-0") -> str:
    return (
        f'[Event "Club"]\n[Date "2024.01.10"]\n[Round "1"]\n[White "{white}"]\n[Black "{black}"]\n'
        f'[Result "{result}"]\n{tags}\n1. e4 e5 {result}\n\n'
    )


PGN = pgn_game(
    "Epsilon, Eva",
    "Zeta, Zoe",
    '[WhiteFideId "4200001"]\n[BlackFideId "4200002"]\n[WhiteTitle "WIM"]\n[BlackTitle "BOT"]\n'
    '[WhiteTeam "Germany"]\n[BlackTeam "FRA"]',
) + pgn_game("Eta, Emil", "Epsilon, Eva", '[BlackFideId "4200001"]\n[WhiteTitle "cm"]', result="0-1")


def test_trf_001_titles_and_federations_are_read_per_side_as_codes():
    raw, _ = month_split({"event.trf": TRF})
    games = raw.filter(pl.col("parse_error").is_null())
    sides = pl.concat(
        [
            games.select(
                pl.col(f"{side}_id").alias("id"),
                pl.col(f"{side}_title").alias("title"),
                pl.col(f"{side}_federation").alias("federation"),
            )
            for side in ("white", "black")
        ]
    ).unique()
    assert sorted(sides.rows(), key=lambda row: row[0]) == [
        (4100001, "GM", "GER"),  # lowercase federation: uppercased
        (4100002, "WGM", "FRA"),  # the old lowercase code
        (4100003, None, None),  # no title; '12' is no federation
        (4100004, None, None),  # 'XYZ' is no FIDE title; blank federation
    ]


def test_pgn_titles_are_read_and_team_names_are_no_federation():
    raw, _ = month_split({"games.pgn": PGN})
    raw = raw.sort("source_line")
    assert raw["white_title"].to_list() == ["WIM", "CM"]
    assert raw["black_title"].to_list() == [None, None]  # BOT is no FIDE title; the second game states none
    # PGN has no federation tag: WhiteTeam / BlackTeam (a country, a club) are not read as one.
    assert raw["white_federation"].null_count() == raw["black_federation"].null_count() == raw.height


def test_unregistered_players_take_the_federation_and_title_their_dumps_state():
    _, split = month_split({"event.trf": TRF, "games.pgn": PGN})
    identities = split.identities
    by_id = {row["player_id"]: row for row in identities.iter_rows(named=True)}
    assert (by_id[4100001]["federation"], by_id[4100001]["title"]) == ("GER", "GM")
    assert (by_id[4200001]["federation"], by_id[4200001]["title"]) == (None, "WIM")
    named = {row["player_id"]: row for row in players_named_in_dumps(identities).iter_rows(named=True)}
    assert (named[4100001]["federation"], named[4100001]["title"]) == ("GER", "GM")
    assert (named[4100002]["federation"], named[4100002]["title"]) == ("FRA", "WGM")
    assert (named[4100003]["federation"], named[4100003]["title"]) == ("", None)
    assert (named[4200001]["federation"], named[4200001]["title"]) == ("", "WIM")
    # A player named without an id (a local id) takes what the dump states too.
    (eta,) = [row for row in named.values() if row["name"] == "Eta, Emil"]
    assert eta["title"] == "CM"


def test_the_most_frequent_stated_value_wins_and_the_registry_keeps_its_own():
    registry = conform(
        pl.DataFrame(
            {
                "player_id": [4100002],
                "name": ["Beta, Berta"],
                "federation": ["ESP"],
                "sex": ["F"],
                "birth_year": [1990],
                "title": [None],
                "registered": ["2023-01"],
            }
        ),
        Players,
    )
    # Alpha is GER in two files and AUT in one: GER.
    other = TRF.replace("Test Open", "Second").replace("ger", "AUT")
    third = TRF.replace("Test Open", "Third")
    _, split = month_split({"a.trf": TRF, "b.trf": other, "c.trf": third}, registry)
    named = {row["player_id"]: row for row in players_named_in_dumps(split.identities).iter_rows(named=True)}
    assert named[4100001]["federation"] == "GER"
    # A registered player is not in the identity report, so the registry's federation and title stand.
    assert 4100002 not in named
    assert 4100002 not in split.identities["player_id"].to_list()


def test_identity_reports_stored_before_federation_and_title_name_players_without_them():
    _, split = month_split({"event.trf": TRF})
    old = split.identities.drop("federation", "title")
    named = players_named_in_dumps(old)
    assert named["federation"].unique().to_list() == [""] and named["title"].null_count() == named.height
