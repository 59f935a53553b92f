"""FIDE's three lists end to end (issue 35).

A store whose dumps hold standard, rapid and blitz games (PGN with TimeControl 5400+30, 900+10 and 180+2, a bullet game
FIDE does not rate, and a TRF of a rapid event) rated by `ratings run` into a standard, a rapid and a blitz chain; the
combined list read back by the FIDE-list reader.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from assets.runtime.cli import main
from pipeline.formats.fide_list import parse_fide_list

SCENARIOS = """
scenarios:
  actual:
    rules: fide-historical
  actual_rapid:
    rules: fide-rapid-historical
    standard_chain: actual
  actual_blitz:
    rules: fide-blitz-historical
    standard_chain: actual
"""

# Standard ratings for all but 100005 and 100007; a rapid rating (and its K) for 100001 only.
SEED_LIST = """player_id,rating,birth_year,rapid_rating,rapid_k
100001,2000,1980,1950,20
100002,1900,1981,,
100003,1800,1982,,
100004,1700,1983,,
100005,,1984,,
100006,2200,1985,,
100007,,1986,,
"""
PLAYERS = """player_id,name,federation,sex,birth_year
100001,"Alpha, Ann",ENG,F,1980
100002,"Beta, Bob",ENG,M,1981
100003,"Gamma, Gus",ENG,M,1982
100004,"Delta, Dora",ENG,F,1983
100005,"Epsilon, Eve",ENG,F,1984
100006,"Zeta, Zak",ENG,M,1985
100007,"Eta, Ed",ENG,M,1986
"""


def _pgn_game(day: str, white: int, black: int, result: str, clock: str, event: str) -> str:
    return (
        f'[Event "{event}"]\n[Site "London"]\n[Date "{day}"]\n[Round "1"]\n[White "W{white}"]\n[Black "B{black}"]\n'
        f'[Result "{result}"]\n[WhiteFideId "{white}"]\n[BlackFideId "{black}"]\n[TimeControl "{clock}"]\n\n'
        f"1. e4 e5 2. Nf3 Nc6 {result}\n\n"
    )


def _trf_line(rank: int, name: str, player_id: int, points: str, rounds: list[tuple[str, str, str]]) -> str:
    played = "".join(f"  {opponent:>4} {colour} {result}" for opponent, colour, result in rounds)
    return f"001 {rank:>4} m    {name:<33} {'':>4} ENG {player_id:>11} {'1985/01/01':10} {points:>4} {rank:>4}{played}"


RAPID_TRF = "\n".join(
    [
        "012 June Rapid",
        "022 London",
        "042 2024/06/08",
        "052 2024/06/08",
        "092 Individual: Round-Robin",
        "122 15'+10''",
        "132" + " " * 88 + "24/06/08  24/06/08  24/06/08",
        # Three rounds, one bye each (quarantined as unplayed): 1-2 1-0, 3-1 draw, 2-3 draw.
        _trf_line(1, "Delta,Dora", 100004, "1.5", [("2", "w", "1"), ("3", "b", "="), ("0000", "-", "U")]),
        _trf_line(2, "Epsilon,Eve", 100005, "0.5", [("1", "b", "0"), ("0000", "-", "U"), ("3", "w", "=")]),
        _trf_line(3, "Zeta,Zak", 100006, "1.0", [("0000", "-", "U"), ("1", "w", "="), ("2", "b", "=")]),
    ]
)


@pytest.fixture(scope="module")
def three_lists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("three-lists")
    store = root / "store"
    may, june = store / "raw" / "ENG" / "2024-05", store / "raw" / "ENG" / "2024-06"
    may.mkdir(parents=True)
    june.mkdir(parents=True)
    players = store / "raw" / "players" / "2024-05"
    players.mkdir(parents=True)
    (players / "seed_list.csv").write_text(SEED_LIST)
    (players / "players.csv").write_text(PLAYERS)
    (may / "open.pgn").write_text(
        _pgn_game("2024.05.04", 100001, 100002, "1-0", "5400+30", "May Open")
        + _pgn_game("2024.05.10", 100001, 100003, "1/2-1/2", "900+10", "May Rapid")
        + _pgn_game("2024.05.11", 100002, 100004, "0-1", "180+2", "May Blitz")
        + _pgn_game("2024.05.12", 100001, 100002, "1-0", "60+0", "May Bullet")
    )
    (june / "june-rapid.trf").write_text(RAPID_TRF + "\n")
    (june / "june.pgn").write_text(_pgn_game("2024.06.15", 100007, 100006, "1-0", "180+2", "June Blitz"))
    scenarios = root / "scenarios.yaml"
    scenarios.write_text(SCENARIOS)
    code = main(["run", "--store", str(store), "--scenarios", str(scenarios), "--dagster-home", str(root / "home")])
    assert code == 0
    return store


def _list(store: Path, scenario: str, month: str) -> dict[int, dict]:
    frame = pl.read_parquet(store / scenario / "rating_list" / f"{month}.parquet")
    return {row["player_id"]: row for row in frame.iter_rows(named=True)}


def test_each_list_rates_its_own_games_and_the_bullet_game_is_quarantined(three_lists: Path):
    games = pl.read_parquet(three_lists / "games" / "2024-05.parquet")
    assert sorted(games["time_control"].to_list()) == ["blitz", "classical", "rapid"]
    quarantine = pl.read_parquet(three_lists / "quarantine" / "2024-05.parquet")
    assert quarantine["reason"].to_list() == ["time_control_not_ratable"]
    assert "1+0: 1 minute for 60 moves" in quarantine["detail"][0]
    # Reconciliation: every raw record of each month is one game or one quarantined record.
    for month in ("2024-05", "2024-06"):
        raw = pl.read_parquet(three_lists / "raw_games" / f"{month}.parquet").height
        validated = pl.read_parquet(three_lists / "games" / f"{month}.parquet").height
        quarantined = pl.read_parquet(three_lists / "quarantine" / f"{month}.parquet").height
        assert raw == validated + quarantined

    standard, rapid, blitz = (
        _list(three_lists, name, "2024-05") for name in ("actual", "actual_rapid", "actual_blitz")
    )
    # The standard game only: 100001 (2000) beats 100002 (1900), D 100: 0.64 expected, K 20: +7 and -7.
    assert [standard[p]["games"] for p in (100001, 100002, 100003)] == [1, 1, 0]
    assert (standard[100001]["rating"], standard[100002]["rating"]) == (2007, 1893)
    # Rapid: 100001 starts from the seed list's rapid 1950 (K 20 as listed) and draws 100003, seeded from the
    # standard 1800 (a player with no rapid games yet: K 40). D 150: 0.70 expected for the higher.
    assert (rapid[100001]["rating"], rapid[100001]["change"]) == (1946, -4)
    assert (rapid[100003]["rating"], rapid[100003]["change"], rapid[100003]["k_used"]) == (1808, 8, 40)
    # Blitz: 100004 (seeded 1700) beats 100002 (seeded 1900): D 200, 0.76 expected, K 40 each: +30 and -30.
    assert (blitz[100004]["rating"], blitz[100002]["rating"]) == (1730, 1870)
    # Nobody is seeded onto a list by a game of another list.
    assert all(rapid[p]["rating"] is None for p in (100002, 100004) if p in rapid)
    assert all(blitz[p]["rating"] is None for p in (100001, 100003) if p in blitz)


def test_the_rapid_event_of_june_is_rated_from_the_standard_list_of_may(three_lists: Path):
    games = pl.read_parquet(three_lists / "games" / "2024-06.parquet")
    rapid_games = games.filter(pl.col("time_control") == "rapid")
    assert rapid_games.height == 3 and set(rapid_games["tc_base_seconds"].to_list()) == {900}
    rapid = _list(three_lists, "actual_rapid", "2024-06")
    # 100004 and 100006 are not on May's rapid list: seeded from the standard list in force in June (May's: 1700
    # and 2200); 100005 holds no rating at all. Only the draw 100004-100006 counts for rated players: D 500 counts
    # as 400 (0.08 expected for the lower), K 40 each: +17 and -17.
    assert (rapid[100004]["games"], rapid[100006]["games"]) == (1, 1)
    assert (rapid[100004]["rating"], rapid[100006]["rating"]) == (1717, 2183)
    assert rapid[100005]["rating"] is None and rapid[100005]["pending_games"] == 2, "toward a first rating"
    blitz = _list(three_lists, "actual_blitz", "2024-06")
    assert blitz[100007]["rating"] is None, "unrated in standard: a blitz game toward a first rating only"
    assert blitz[100006]["rating"] == 2200 and blitz[100006]["games"] == 0, "seeded; a game against an unrated"


def test_the_combined_list_reads_back_to_the_three_lists(three_lists: Path, tmp_path: Path):
    out = tmp_path / "players_list_foa.txt"
    arguments = ["list", "--store", str(three_lists), "--month", "2024-06", "--format", "combined", "--out", str(out)]
    assert main([*arguments, "--scenarios", str(three_lists.parent / "scenarios.yaml")]) == 0
    # The run published the last month's combined list beside its per-list files: the same bytes.
    assert out.read_bytes() == (three_lists / "lists" / "actual" / "2024-06.combined.txt").read_bytes()
    assert not (three_lists / "lists" / "actual_rapid" / "2024-06.combined.txt").exists(), "the standard list's"
    read = parse_fide_list(out.read_bytes(), out.name).players
    rows = {row["player_id"]: row for row in read.iter_rows(named=True)}
    for scenario, kind in (("actual", "standard"), ("actual_rapid", "rapid"), ("actual_blitz", "blitz")):
        for player_id, row in _list(three_lists, scenario, "2024-06").items():
            assert rows[player_id][f"{kind}_rating"] == row["rating"], (scenario, player_id)
            if row["rating"] is not None:
                assert rows[player_id][f"{kind}_k"] == row["k"], (scenario, player_id)
    assert set(rows) == {100001, 100002, 100003, 100004, 100005, 100006, 100007}


def test_the_combined_list_of_a_rapid_scenario_is_refused_naming_its_standard_one(
    three_lists: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "rapid.txt"
    arguments = ["list", "--store", str(three_lists), "--month", "2024-06", "--format", "combined", "--out", str(out)]
    scenarios = ["--scenarios", str(three_lists.parent / "scenarios.yaml")]
    # Written, its SRtng column would hold the rapid ratings: refused instead, saying which scenario to ask for.
    assert main([*arguments, *scenarios, "--scenario", "actual_rapid"]) == 2
    assert not out.exists()
    error = capsys.readouterr().err
    assert "actual_rapid rates the rapid list" in error and "--scenario actual" in error
