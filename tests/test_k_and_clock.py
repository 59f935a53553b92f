"""K whatever the list says (docs/rules.md, "K and the list a period starts from") and rate-period's clocks.

Every expected value is worked out by hand in the comment next to it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.cli.period_files import read_period_games
from pipeline.engine.period import normalize_list, rate_period
from pipeline.ingest.registry import registry_table, seed_rows
from pipeline.rules.model import load_rules


def player(frame: pl.DataFrame, player_id: int) -> dict:
    return frame.filter(pl.col("player_id") == player_id).row(0, named=True)


def one_win(previous: pl.DataFrame, rules: str, month: str = "2024-05") -> pl.DataFrame:
    """Player 1 (White) beats player 2 once; the new list."""
    games = pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [1.0]})
    return rate_period(previous, games, load_rules(rules), month).rating_list


# -- K --------------------------------------------------------------------------------------------


def test_empty_games_total_in_a_landing_zone_seed_list_is_established():
    seed = seed_rows(
        registry_table(b"player_id,rating,games_total,birth_year\n1,2349,,1990\n2,2349,100,1990\n3,,,2000\n")
    )
    assert seed["games_total"].to_list() == [None, 100, 0]  # rated: unknown; unrated: 0
    new = one_win(normalize_list(seed), "fide-2024")
    # D = 0 -> PD .50; K 20 (established, below 2400, born 1990: no junior): 20 x (1 - .50) = +10.
    # (As a newcomer it would have been K 40: +20.)
    assert (player(new, 1)["k_used"], player(new, 1)["change"], player(new, 1)["rating"]) == (20, 10, 2359)
    assert player(new, 1)["k"] == 20  # 2359 < 2400, still established


def test_list_k_10_below_2400_stays_10_under_a_tiered_policy(tmp_path: Path):
    (tmp_path / "april.csv").write_text(
        "player_id,rating,k,games_total,birth_year\n1,2390,10,300,1980\n2,2390,20,300,1980\n3,2300,10,300,1980\n"
    )
    (tmp_path / "may.csv").write_text("event_id,white_id,black_id,result\ne,1,2,1-0\n")
    out = tmp_path / "new.csv"
    assert (
        main(
            [
                "rate-period",
                "--rules",
                "fide-2024",
                "--month",
                "2024-05",
                "--list",
                str(tmp_path / "april.csv"),
                "--games",
                str(tmp_path / "may.csv"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    new = pl.read_csv(out)
    # Player 1: K 10 x (1 - .50) = +5 -> 2395, below 2400 but K 10 for good (FIDE §8.3.3).
    assert (player(new, 1)["rating"], player(new, 1)["k_used"], player(new, 1)["k"]) == (2395, 10, 10)
    # Player 3 did not play: 2300 with K 10 on the list, K 10 on the next one too.
    assert player(new, 3)["k"] == 10
    # Player 2 (K 20): 20 x (0 - .50) = -10 -> 2380, K 20.
    assert (player(new, 2)["rating"], player(new, 2)["k"]) == (2380, 20)
    # A list written by rate-period carries ever_2400, so the period after keeps K 10 as well.
    assert player(new, 1)["ever_2400"] is True
    later = rate_period(
        normalize_list(new.drop("pending")),
        pl.DataFrame(schema={"white_id": pl.Int64, "black_id": pl.Int64, "white_score": pl.Float64}),
        load_rules("fide-2024"),
        "2024-06",
    ).rating_list
    assert player(later, 1)["k"] == 10


def rate_period_cli(tmp_path: Path, previous: Path, games: str, month: str, *options: str) -> Path:
    """`ratings rate-period` on `previous` and the games text; the new list's path."""
    (tmp_path / f"{month}-games.csv").write_text("event_id,white_id,black_id,result\n" + games)
    out = tmp_path / f"{month}.csv"
    arguments = ["rate-period", "--rules", "fide-2024", "--month", month, "--list", str(previous)]
    arguments += ["--games", str(tmp_path / f"{month}-games.csv"), "--out", str(out), *options]
    assert main(arguments) == 0
    return out


def test_elite_from_2300_keeps_k_10_after_a_drop_below_it_over_two_chained_periods(tmp_path: Path):
    """Issue 33: `--set k.elite_from=2300`, a player listed at 2350 without a K column (K 10), drops to 2290 and
    keeps K 10 on the next list and in the period after it.
    """
    (tmp_path / "april.csv").write_text(
        "player_id,rating,games_total,birth_year\n1,2350,300,1980\n2,2350,300,1980\n3,2290,300,1980\n"
    )
    elite_2300 = ("--set", "k.elite_from=2300")
    may = rate_period_cli(tmp_path, tmp_path / "april.csv", "e,1,2,0-1\n" * 12, "2024-05", *elite_2300)
    new = pl.read_csv(may)
    # Player 1: 2350 >= 2300, K 10; 12 losses at D 0 (PD .50 each): 10 x (0 - 6) = -60 -> 2290, below 2300, and
    # the next list's K is still 10 (it reached 2300). Player 2: 10 x (12 - 6) = +60 -> 2410.
    assert (player(new, 1)["k_used"], player(new, 1)["rating"], player(new, 1)["k"]) == (10, 2290, 10)
    assert player(new, 1)["ever_2400"] is True
    assert (player(new, 2)["rating"], player(new, 3)["k"]) == (2410, 20)  # player 3: 2290, never 2300: K 20
    june = pl.read_csv(rate_period_cli(tmp_path, may, "f,1,3,1-0\n", "2024-06", *elite_2300))
    # Player 1 (2290, K 10 on the list) beats player 3 (2290, K 20) at D 0: 10 x .50 = +5 -> 2295; 20 x -.50 = -10.
    assert (player(june, 1)["k_used"], player(june, 1)["rating"], player(june, 1)["k"]) == (10, 2295, 10)
    assert (player(june, 3)["k_used"], player(june, 3)["rating"]) == (20, 2280)
    # Under the default elite_from 2400 the same May gives player 1 K 20 (2350 < 2400): 20 x -6 = -120 -> 2230.
    default = pl.read_csv(rate_period_cli(tmp_path, tmp_path / "april.csv", "e,1,2,0-1\n" * 12, "2024-05"))
    assert (player(default, 1)["k_used"], player(default, 1)["rating"], player(default, 1)["ever_2400"]) == (
        20,
        2230,
        False,
    )


def test_constant_k_rule_set_uses_its_own_k_not_the_lists():
    previous = pl.DataFrame({"player_id": [1, 2], "rating": [2000, 2000], "k": [20, 20]})
    new = one_win(previous, "sonas-2002")
    # Sonas: White expects 0.541767 at equal ratings; 24 x (1 - 0.541767) = 10.998 -> +11 (K 20 would give +9).
    assert (player(new, 1)["k_used"], player(new, 1)["change"]) == (24, 11)
    # Black: 24 x (0 - 0.458233) = -10.998 -> -11.
    assert player(new, 2)["change"] == -11


def test_tiered_policy_honours_the_list_k():
    # Born 1980, 300 games, 2000: the policy would say K 20; the list says 40.
    previous = pl.DataFrame(
        {
            "player_id": [1, 2],
            "rating": [2000, 2000],
            "k": [40, 20],
            "games_total": [300, 300],
            "birth_year": [1980, 1980],
        }
    )
    new = one_win(previous, "fide-2024")
    # 40 x (1 - .50) = +20 with the list's K.
    assert (player(new, 1)["k_used"], player(new, 1)["change"], player(new, 1)["rating"]) == (40, 20, 2020)
    # The next list's K is the policy's again: 2020, 301 games, adult -> 20.
    assert player(new, 1)["k"] == 20


# -- time_control as a class or a clock ----------------------------------------------------------


def rated_games(tmp_path: Path, time_controls: list[str], rules: str = "sonas-2002") -> pl.DataFrame:
    lines = "".join(f"e,1,2,1-0,{tc}\n" for tc in time_controls)
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result,time_control\n" + lines)
    games = read_period_games(str(tmp_path / "games.csv"), "2024-05")
    previous = pl.DataFrame({"player_id": [1, 2], "rating": [2000, 2000]})
    return rate_period(previous, games, load_rules(rules), "2024-05").rated_games.sort("game_id")


def test_clock_in_minutes_and_in_seconds_give_the_same_sonas_weight(tmp_path: Path):
    rated = rated_games(tmp_path, ["90+30", "5400+30", "90"])
    # 90 min + 30 s a move: 90 + 40 x 30 / 60 = 110 min through move 40, between 60 (0.55) and 120 (1.00):
    # 0.55 + (110 - 60) x (1.00 - 0.55) / (120 - 60) = 0.55 + 50 x 0.0075 = 0.925.
    # Plain 90 (minutes, no increment): 0.55 + 30 x 0.0075 = 0.775.
    assert rated["weight"].to_list() == pytest.approx([0.925, 0.925, 0.775])
    assert rated["time_control"].to_list() == ["classical"] * 3  # 60 moves take >= 60 minutes


def test_clock_gives_fides_class(tmp_path: Path):
    rated = rated_games(tmp_path, ["10+0", "15+10", "60", "blitz"], rules="fide-2024")
    # Base + 60 x increment: 10 min -> blitz (at most 10); 15 + 10 = 25 min -> rapid; 60 min -> standard.
    assert rated["time_control"].to_list() == ["blitz", "rapid", "classical", "blitz"]
    # FIDE's standard list weighs only the standard game.
    assert rated["weight"].to_list() == [0.0, 0.0, 1.0, 0.0]


# -- rate-period's messages -----------------------------------------------------------------------


@pytest.fixture
def prev(tmp_path: Path) -> Path:
    (tmp_path / "april.csv").write_text("player_id,rating\n1,2000\n2,2000\n")
    return tmp_path / "april.csv"


def test_unknown_columns_are_named_in_a_warning(tmp_path: Path, prev: Path, capsys: pytest.CaptureFixture):
    games = tmp_path / "may_games.csv"
    games.write_text("event_id,white_id,black_id,result,whte_id,rating_used\ne,1,2,1-0,1,2000\n")
    assert (
        main(
            [
                "rate-period",
                "--rules",
                "fide-2024",
                "--month",
                "2024-05",
                "--list",
                str(prev),
                "--games",
                str(games),
                "--out",
                str(tmp_path / "new.csv"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert f"ratings rate-period: warning: {games}: ignoring unknown column(s) whte_id, rating_used\n" in err
    assert (tmp_path / "new.csv").exists()  # the run went on


def test_bad_clock_is_a_one_line_error_naming_file_line_and_value(
    tmp_path: Path, prev: Path, capsys: pytest.CaptureFixture
):
    games = tmp_path / "may_games.csv"
    games.write_text("event_id,white_id,black_id,result,time_control\ne,1,2,1-0,90+30\ne,1,2,1-0,fast\n")
    assert (
        main(
            [
                "rate-period",
                "--rules",
                "fide-2024",
                "--month",
                "2024-05",
                "--list",
                str(prev),
                "--games",
                str(games),
                "--out",
                str(tmp_path / "new.csv"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        f"ratings rate-period: error: {games}: line 3:"
        " time_control 'fast' is not classical, modern, rapid, blitz or a clock"
    )
    assert not (tmp_path / "new.csv").exists()
