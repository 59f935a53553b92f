"""Performance ratings by hand, the Performance table, `ratings performance`.

By hand: FIDE's Ra + dp and the algorithm of 400.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.analytics.performance import performance_by, performance_ratings, performance_sides
from pipeline.cli.commands import main
from schemas.performance import Performance
from schemas.rated_games import RatedGames
from schemas.util import polars_schema

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"

# (event, white, black, white_score, white rating used, black rating used, weight)
GAMES = [
    # Player 1 in e1: beats 2 (2000) and 3 (2100), draws 4 (1900); beats 5, who has no rating: not counted for 1.
    ("e1", 1, 2, 1.0, 2200, 2000, 1.0),
    ("e1", 3, 1, 0.0, 2100, 2200, 1.0),
    ("e1", 1, 4, 0.5, 2200, 1900, 1.0),
    ("e1", 1, 5, 1.0, 2200, None, 1.0),
    # Player 1 in e2: loses to 6 (2300); a rapid game the scenario does not rate (weight 0) does not count.
    ("e2", 1, 6, 0.0, 2200, 2300, 1.0),
    ("e2", 7, 1, 0.0, 2500, 2200, 0.0),
    # 100 %: unrated 8 beats 9 (1800) and 10 (1901). 0 %: unrated 11 loses to 12 (1800) and 13 (1901).
    ("e3", 8, 9, 1.0, None, 1800, 1.0),
    ("e3", 10, 8, 0.0, 1901, None, 1.0),
    ("e3", 11, 12, 0.0, None, 1800, 1.0),
    ("e3", 13, 11, 1.0, 1901, None, 1.0),
    # 50 %: 14 beats 15 (2000) and loses to 16 (2200).
    ("e4", 14, 15, 1.0, 2100, 2000, 1.0),
    ("e4", 16, 14, 1.0, 2200, 2100, 1.0),
]


def rated_games(rows=GAMES) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "game_id": list(range(1, len(rows) + 1)),
            "month": ["2024-05"] * len(rows),
            "event_id": [r[0] for r in rows],
            "white_id": [r[1] for r in rows],
            "black_id": [r[2] for r in rows],
            "white_score": [r[3] for r in rows],
            "time_control": ["classical"] * len(rows),
            "white_rating_used": [r[4] for r in rows],
            "black_rating_used": [r[5] for r in rows],
            "white_expected": [None] * len(rows),
            "black_expected": [None] * len(rows),
            "white_k_used": [None] * len(rows),
            "black_k_used": [None] * len(rows),
            "weight": [r[6] for r in rows],
        },
        schema=polars_schema(RatedGames),
    )


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return Performance.validate(performance_ratings(rated_games(), "2024-05"))


def row(table: pl.DataFrame, player: int, event: str | None) -> dict:
    found = table.filter((pl.col("player_id") == player) & (pl.col("event_id").eq_missing(event)))
    assert found.height == 1, (player, event)
    return found.row(0, named=True)


def figures(r: dict) -> tuple:
    return r["games"], r["score"], r["average_opponent"], r["p"], r["dp"], r["performance_fide"], r["performance_400"]


def test_one_event_fide_and_400(table: pl.DataFrame) -> None:
    # e1 for player 1: counted 2000 W, 2100 W, 1900 D (the unrated 5 left out): 3 games, 2.5 points.
    # Ra = 6000 / 3 = 2000; p = 2.5 / 3 = 0.8333 -> 0.83 -> dp 273; Rp = 2273.
    # 400: (6000 + 400 x (2 - 0)) / 3 = 6800 / 3 = 2266.67 -> 2267.
    r = row(table, 1, "e1")
    assert r["scope"] == "event" and (r["wins"], r["draws"], r["losses"]) == (2, 1, 0)
    assert figures(r) == (3, 2.5, 2000.0, 0.83, 273, 2273, 2267)


def test_zero_in_an_event_is_minus_800(table: pl.DataFrame) -> None:
    # e2 for player 1: only the loss to 2300 counts (the weight-0 rapid win does not): p = 0 -> dp -800.
    # Rp = 2300 - 800 = 1500; 400: (2300 - 400) / 1 = 1900.
    assert figures(row(table, 1, "e2")) == (1, 0.0, 2300.0, 0.0, -800, 1500, 1900)


def test_month_row_pools_the_events_and_rounds_p_half_up(table: pl.DataFrame) -> None:
    # Month of player 1: 4 counted games (e1's three and e2's one), 2.5 points, W 2 D 1 L 1.
    # Ra = (6000 + 2300) / 4 = 2075; p = 2.5 / 4 = 0.625 -> 0.63 (half up) -> dp 95; Rp = 2170.
    # 400: (8300 + 400 x (2 - 1)) / 4 = 8700 / 4 = 2175.
    r = row(table, 1, None)
    assert r["scope"] == "month" and r["month"] == "2024-05"
    assert figures(r) == (4, 2.5, 2075.0, 0.63, 95, 2170, 2175)


def test_perfect_score_and_half_points_round_up(table: pl.DataFrame) -> None:
    # Player 8 (unrated) beats 1800 and 1901: Ra = 3701 / 2 = 1850.5, p = 1 -> dp 800.
    # Rp = 2650.5 -> 2651 (0.5 up); 400: (3701 + 800) / 2 = 2250.5 -> 2251.
    assert figures(row(table, 8, None)) == (2, 2.0, 1850.5, 1.0, 800, 2651, 2251)
    # Player 11 loses both: Rp = 1850.5 - 800 = 1050.5 -> 1051; 400: (3701 - 800) / 2 = 1450.5 -> 1451.
    assert figures(row(table, 11, None)) == (2, 0.0, 1850.5, 0.0, -800, 1051, 1451)


def test_fifty_percent_is_the_average(table: pl.DataFrame) -> None:
    # Player 14: beats 2000, loses to 2200: Ra 2100, p 0.50 -> dp 0, Rp 2100; 400: (4200 + 0) / 2 = 2100.
    assert figures(row(table, 14, None)) == (2, 1.0, 2100.0, 0.5, 0, 2100, 2100)


def test_only_games_against_a_rating_used_count(table: pl.DataFrame) -> None:
    # 9 and 10 played the unrated 8 only: no row. 5 (unrated) lost to 1 (2200): it has a row of its own.
    assert table.filter(pl.col("player_id").is_in([9, 10, 12, 13])).is_empty()
    # 5: one game, 0 points against 2200: 2200 - 800 = 1400; 400: 2200 - 400 = 1800.
    assert figures(row(table, 5, "e1")) == (1, 0.0, 2200.0, 0.0, -800, 1400, 1800)
    # One month row per player, one event row per (player, event).
    months = table.filter(pl.col("scope") == "month")
    assert months["player_id"].is_unique().all() and months["event_id"].is_null().all()
    # The player's month row first, then their events.
    assert table.filter(pl.col("player_id") == 1)["event_id"].to_list() == [None, "e1", "e2"]


def test_near_perfect_is_not_800_and_p_rounds_half_up() -> None:
    # 199 wins and a draw in 200 games against 2000s: p = 0.9975 would round to 1.00, but only a perfect score
    # gets 800, so p = 0.99 -> dp 677: Rp = 2677. 400: (400000 + 400 x 199) / 200 = 2398.
    near = pl.DataFrame({"player_id": [1] * 200, "opponent_rating": [2000] * 200, "score": [1.0] * 199 + [0.5]})
    r = performance_by(near, ["player_id"]).row(0, named=True)
    assert (r["p"], r["dp"], r["performance_fide"], r["performance_400"]) == (0.99, 677, 2677, 2398)
    # 23 wins, 17 losses: p = 0.575 -> 0.58 (half up) -> dp 57: Rp = 2057. 400: 2000 + 400 x 6 / 40 = 2060.
    half = pl.DataFrame({"player_id": [1] * 40, "opponent_rating": [2000] * 40, "score": [1.0] * 23 + [0.0] * 17})
    r = performance_by(half, ["player_id"]).row(0, named=True)
    assert (r["p"], r["dp"], r["performance_fide"], r["performance_400"]) == (0.58, 57, 2057, 2060)


def test_an_empty_month_gives_an_empty_valid_table() -> None:
    empty = performance_ratings(rated_games([]), "2024-05")
    assert empty.is_empty() and dict(Performance.validate(empty).schema) == dict(polars_schema(Performance))


# -- ratings performance FILE ------------------------------------------------------------------


def player_line(rank: int, name: str, rating: int | None, fide_id: int | None, points: float, rounds: list) -> str:
    """A TRF-16 001 line; rounds: (opponent rank, colour, result) or None for no game."""
    line = (
        f"001 {rank:>4}      {name:<33} {rating or '':>4} GER {fide_id or '':>11} 1990/01/01 {points:>4.1f} {rank:>4}"
    )
    for cell in rounds:
        line += "          " if cell is None else f"  {cell[0]:>4} {cell[1]} {cell[2]}"
    return line


def small_trf(path: Path) -> Path:
    lines = [
        "012 Test Open",
        "042 2024/05/04",
        "052 2024/05/06",
        # Alpha (2200) beats Beta (2000) and Gamma (2100), draws Delta (1900), beats Epsilon (no rating, no id).
        player_line(1, "Alpha, Anna", 2200, 4600003, 3.5, [(2, "w", "1"), (3, "b", "1"), (4, "w", "="), (5, "b", "1")]),
        # Round 4: Beta wins against Gamma by forfeit: an unplayed game, not counted.
        player_line(2, "Beta, Bernd", 2000, 4600011, 1.0, [(1, "b", "0"), None, None, (3, "w", "+")]),
        player_line(3, "Gamma, Gita", 2100, 4600020, 0.0, [None, (1, "w", "0"), None, (2, "b", "-")]),
        player_line(4, "Delta, Dora", 1900, 4600038, 0.5, [None, None, (1, "b", "="), None]),
        # Epsilon and Zeta have neither id nor rating: identified by name. Zeta met only Epsilon.
        player_line(5, "Epsilon, Emil", None, None, 1.0, [(6, "w", "1"), None, None, (1, "w", "0")]),
        player_line(6, "Zeta, Zoe", None, None, 0.0, [(5, "b", "0"), None, None, None]),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_json(capsys: pytest.CaptureFixture, path: Path) -> dict:
    assert main(["performance", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object
    return json.loads(out)


def test_cli_on_a_small_trf(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    players = {p["name"]: p for p in run_json(capsys, small_trf(tmp_path / "open.trf"))["players"]}
    assert set(players) == {"Alpha, Anna", "Beta, Bernd", "Gamma, Gita", "Delta, Dora", "Epsilon, Emil", "Zeta, Zoe"}
    assert all(
        set(p) == {"id", "name", "games", "score", "average_opponent", "performance_fide", "performance_400"}
        for p in players.values()
    )
    # Alpha: 2000 W, 2100 W, 1900 D count (Epsilon is unrated): Ra 2000, p 0.83 -> 273: 2273; 400: 6800 / 3 -> 2267.
    assert players["Alpha, Anna"] == {
        "id": 4600003,
        "name": "Alpha, Anna",
        "games": 3,
        "score": 2.5,
        "average_opponent": 2000.0,
        "performance_fide": 2273,
        "performance_400": 2267,
    }
    # Beta: the forfeit does not count; one loss to 2200: 1400 and 1800.
    assert (
        players["Beta, Bernd"]["games"],
        players["Beta, Bernd"]["performance_fide"],
        players["Beta, Bernd"]["performance_400"],
    ) == (1, 1400, 1800)
    # Delta: one draw with 2200: p 0.50 -> 2200 both ways.
    assert (players["Delta, Dora"]["performance_fide"], players["Delta, Dora"]["performance_400"]) == (2200, 2200)
    # Epsilon: no id; against a rating only the loss to Alpha counts: 1400 / 1800.
    assert players["Epsilon, Emil"]["id"] is None
    assert (players["Epsilon, Emil"]["games"], players["Epsilon, Emil"]["performance_fide"]) == (1, 1400)
    # Zeta met only the unrated Epsilon: no performance.
    assert players["Zeta, Zoe"] == {
        "id": None,
        "name": "Zeta, Zoe",
        "games": 0,
        "score": 0.0,
        "average_opponent": None,
        "performance_fide": None,
        "performance_400": None,
    }


def test_cli_text_is_a_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["performance", str(small_trf(tmp_path / "open.trf"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    alpha = next(line for line in lines if "Alpha, Anna" in line)
    assert alpha.split()[-2:] == ["2273", "2267"] and "4600003" in alpha


@pytest.mark.parametrize(
    "content, problem",
    [
        (None, "cannot be read"),
        (b"\x00\x01\x02binary\xff\xfe", "no game could be read"),
    ],
)
def test_cli_bad_files_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, content, problem) -> None:
    path = tmp_path / "broken.trf"
    if content is not None:
        path.write_bytes(content)
    assert main(["performance", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and str(path) in captured.err and problem in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.skipif(not (REALDATA / "example1.trf").is_file(), reason="shared/realdata/example1.trf not present")
def test_cli_on_fides_example_trf(capsys: pytest.CaptureFixture) -> None:
    players = {p["id"]: p for p in run_json(capsys, REALDATA / "example1.trf")["players"]}
    # Vasquez (3400042), start rank 1: 141 w 1, 78 b 1, 42 w 1, 21 b 1, 16 w 1, 25 b =, 31 w = (6.0 points).
    # Opponents' ratings on their 001 lines: 141 Storkebaum 1895, 78 Konik 2079, 42 Ziegler 2149,
    # 21 Isserman 2302, 16 Reschke 2346, 25 Strohhaeker 2251, 31 Uwira 2219: sum 15241, Ra = 2177.29.
    # p = 6 / 7 = 0.857 -> 0.86 -> dp 309: Rp = 2486.29 -> 2486. 400: (15241 + 400 x 5) / 7 = 17241 / 7 = 2463.
    assert players[3400042] == {
        "id": 3400042,
        "name": "Vasquez,Rodrigo",
        "games": 7,
        "score": 6.0,
        "average_opponent": 2177.29,
        "performance_fide": 2486,
        "performance_400": 2463,
    }


def test_cli_names_the_games_it_leaves_out_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """B's only games were unreadable or quarantined: B vanished from the table, exit 0, without a word."""

    def game(day: int, black: str, black_elo: str, result: str, movetext_result: str) -> str:
        return (
            f'[Event "E"]\n[Date "2024.01.{day}"]\n[White "A, a"]\n[Black "{black}"]\n[WhiteElo "2000"]\n'
            f'[BlackElo "{black_elo}"]\n[Result "{result}"]\n\n1. e4 {movetext_result}\n\n'
        )

    path = tmp_path / "bad.pgn"
    path.write_text(
        game(10, "B, b", "21OO", "1-0", "1-0")
        + game(11, "B, b", "2100", "2-0", "1-0")
        + game(12, "C, c", "2100", "1-0", "1-0")
    )
    assert main(["performance", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert [p["name"] for p in json.loads(captured.out)["players"]] == ["A, a", "C, c"]
    assert captured.err.splitlines() == [
        f"{path}: line 1: BlackElo '21OO' is not a number",
        f"{path}: line 11: Result is '2-0' but the movetext ends with '1-0' (line 19); PGN standard 8.2.6: they must "
        "be the same",
    ]
    # An unplayed game (the small TRF's forfeit) counts for nobody and is no problem of the file.
    assert main(["performance", str(small_trf(tmp_path / "open.trf"))]) == 0
    assert capsys.readouterr().err == ""


def test_the_month_table_is_added_up_in_numpy_in_the_tables_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # Events whose names do not sort as they come, players in no order, one id beyond a combined key's reach (the
    # sides are then sorted by both keys, not one), games that do not count: the table equals the generic
    # per-(player, event) and per-player figures, each player's month row first, then their events by name.
    rows = [("e3", 1, 2, 1.0, 2200, 2000, 1.0), ("b1", 1, 3, 0.5, 2200, 2100, 1.0), *GAMES]
    rows += [("a9", 2**62, 1, 0.0, 1500, 2200, 1.0), ("a9", 2, 2**62, 0.5, 2000, 1500, 1.0)]
    for games in (
        rated_games(rows),
        rated_games(rows).filter((pl.col("white_id") < 2**62) & (pl.col("black_id") < 2**62)),
    ):
        sides = performance_sides(games)
        per_event = performance_by(sides, ["player_id", "event_id"]).with_columns(scope=pl.lit("event"))
        per_month = performance_by(sides, ["player_id"]).with_columns(scope=pl.lit("month"), event_id=pl.lit(None))
        expected = pl.concat([per_month, per_event.select(per_month.columns)], how="vertical_relaxed")
        expected = expected.with_columns(month=pl.lit("2024-05")).sort("player_id", "event_id", nulls_last=False)
        # No Polars grouping: the totals are NumPy's.
        with monkeypatch.context() as patched:
            patched.setattr(pl.DataFrame, "group_by", lambda *args, **kwargs: pytest.fail("grouped in Polars"))
            table = Performance.validate(performance_ratings(games, "2024-05"))
        assert table.equals(expected.select(table.columns))
