"""FIDE's rapid and blitz rule sets (issue 35).

Each era's clauses as table tests, a standard rating seeding the list, the 600-point rule of December 2024, and
`ratings rate-period` on a rapid period as an officer runs it.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.engine.period import normalize_list, rate_period
from pipeline.rules.model import load_rules, preset_names, resolve_rules
from pipeline.rules.regulations import _gap_not_rated_numpy, gap_not_rated, seeded_from_standard
from pipeline.scenarios.model import Scenario, rate_scenario_month

ERAS = ("2012", "2014", "2017", "2022-10", "2024", "2024-12")


# -- the schedules: which era rates which period ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("month", "preset", "k", "cap", "floor", "first_event_points"),
    [
        ("2012-03", "fide-rapid-2012", "constant 20", 400, 1200, 1.0),  # before the first list (1 July 2012)
        ("2013-03", "fide-rapid-2012", "constant 20", 400, 1000, 1.0),
        ("2015-06", "fide-rapid-2014", "constant 20", 400, 1000, 1.0),
        ("2019-01", "fide-rapid-2017", "constant 20", 735, 1000, 1.0),
        ("2023-01", "fide-rapid-2022-10", "fide 40/20/10", 735, 1000, 1.0),
        ("2024-06", "fide-rapid-2024", "fide 40/20/10", 400, 1400, 0.5),
        ("2025-11", "fide-rapid-2024-12", "fide 40/20/10", 400, 1400, 0.5),
    ],
)
def test_the_rapid_schedule_by_period(month, preset, k, cap, floor, first_event_points):
    rules = resolve_rules("fide-rapid-historical", month)
    assert rules.name == preset
    policy = f"constant {rules.k.value}" if rules.k.kind == "constant" else f"fide {rules.k.newcomer}/20/10"
    assert (policy, rules.cap_difference, rules.floor) == (k, cap, floor)
    assert rules.initial.first_event_min_points == first_event_points
    assert rules.list_type == "rapid" and rules.seed_from_standard
    assert rules.cap_mode == "every-game", "no 2650 exemption and no once-per-event cap for rapid and blitz"


def test_the_first_rapid_list_rates_january_to_june_2012_together():
    """FIDE news 5721: events from 1 January 2012, first list 1 July 2012. A rapid game of January and one of May, in
    a chain started in January 2012, both move the list of 1 July (period 2012-06): 2000 + 20 x 0.5 each.
    """
    assert not resolve_rules("fide-rapid-historical", "2012-05").publishes_list_after("2012-05")
    assert resolve_rules("fide-rapid-historical", "2012-06").publishes_list_after("2012-06")
    assert resolve_rules("fide-rapid-historical", "2012-08").publishes_list_after("2012-08")
    scenario = Scenario(name="rapid", rules="fide-rapid-historical")
    assert scenario.period_months("2012-06", "2012-01") == [f"2012-0{m}" for m in range(1, 7)]
    seed = normalize_list(pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [2000] * 4, "games_total": [100] * 4}))

    def game(game_id: int, white: int, black: int, day: str) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "game_id": [game_id],
                "white_id": [white],
                "black_id": [black],
                "white_score": [1.0],
                "time_control": ["rapid"],
                "event_id": [f"e{game_id}"],
                "event_start": [date.fromisoformat(day)],
                "date": [date.fromisoformat(day)],
            },
            schema_overrides={"game_id": pl.UInt64},
        )

    games = {"2012-01": game(1, 1, 2, "2012-01-14"), "2012-05": game(2, 3, 4, "2012-05-12")}
    empty = games["2012-01"].clear()
    listed = seed
    for month in [f"2012-0{m}" for m in range(1, 7)]:
        listed = rate_scenario_month(
            scenario, listed, lambda m: games.get(m, empty), month, start="2012-01"
        ).rating_list
    rows = {row["player_id"]: (row["rating"], row["games"]) for row in listed.iter_rows(named=True)}
    assert rows == {1: (2010, 1), 2: (1990, 1), 3: (2010, 1), 4: (1990, 1)}


@pytest.mark.parametrize("preset", ["fide-rapid-2012", "fide-blitz-2012", "fide-rapid-2014", "fide-blitz-2024-12"])
def test_an_event_started_before_2012_is_not_rated_on_the_rapid_and_blitz_lists(preset):
    """FIDE news 5721: "Tournaments commencing on or after 1st January 2012". An event of 20 December 2011 reported in
    January 2012 weighs 0 (its players keep their ratings); one of 2 January 2012 is rated.
    """
    rules = load_rules(preset)
    kind = rules.list_type
    previous = normalize_list(pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [2000] * 4, "games_total": [100] * 4}))
    games = pl.DataFrame(
        {
            "event_id": ["xmas", "new year"],
            "event_start": [date(2011, 12, 20), date(2012, 1, 2)],
            "white_id": [1, 3],
            "black_id": [2, 4],
            "white_score": [1.0, 1.0],
            "time_control": [kind, kind],
        }
    )
    result = rate_period(previous, games, rules, "2012-01")
    assert result.rated_games.sort("game_id")["weight"].to_list() == [0.0, 1.0]
    games_played = dict(zip(result.rating_list["player_id"], result.rating_list["games"], strict=True))
    assert games_played == {1: 0, 2: 0, 3: 1, 4: 1}
    assert load_rules("fide-2012").events_from is None, "the standard list rates every event"


def test_a_period_reaches_back_to_the_previous_list_of_any_rule_set():
    """A rule set listing in January and July (`list_months: [1, 7]`) rates six months on each list."""
    scenario = Scenario(name="twice", rules="fide-2012", set={"list_months": [1, 7]})
    assert scenario.period_months("2013-12", "2010-01") == [f"2013-{m:02d}" for m in range(7, 13)]
    assert scenario.period_months("2013-12", "2013-10") == ["2013-10", "2013-11", "2013-12"], "not before the start"


@pytest.mark.parametrize("era", ERAS)
def test_each_blitz_preset_is_its_rapid_namesake_for_blitz_games(era):
    rapid, blitz = load_rules(f"fide-rapid-{era}"), load_rules(f"fide-blitz-{era}")
    different = {"name", "description", "source", "list_type", "weights"}
    assert rapid.model_dump(exclude=different) == blitz.model_dump(exclude=different)
    assert (rapid.weights["rapid"], rapid.weights["blitz"], rapid.weights["classical"]) == (1.0, 0.0, 0.0)
    assert (blitz.weights["rapid"], blitz.weights["blitz"], blitz.weights["classical"]) == (0.0, 1.0, 0.0)
    assert blitz.list_type == "blitz"


def test_ratings_rules_lists_the_rapid_and_blitz_presets(capsys):
    names = set(preset_names())
    assert {"fide-rapid-historical", "fide-blitz-historical"} <= names
    assert {f"fide-{kind}-{era}" for kind in ("rapid", "blitz") for era in ERAS} <= names
    assert main(["rules"]) == 0
    listed = capsys.readouterr().out
    assert "fide-blitz-historical" in listed and "fide-rapid-2024-12" in listed


# -- the 600-point rule (B.02 Rapid and Blitz 2024 §7.3.1, from 1 December 2024) --------------------------------


@pytest.mark.parametrize(
    ("white", "black", "not_rated"),
    [
        (2650, 2000, True),  # 650 apart, one above 2600
        (2601, 2001, True),  # exactly 600 counts ("600 points or more")
        (2601, 2002, False),  # 599 apart
        (2600, 2000, False),  # 2600 is not "above 2600"
        (2000, 2700, True),  # either colour
        (2700, None, False),  # no rating: no gap
    ],
)
def test_the_gap_rule_table(white, black, not_rated):
    rules = load_rules("fide-rapid-2024-12")
    frame = pl.DataFrame(
        {"white_rating_used": [white], "black_rating_used": [black]},
        schema={"white_rating_used": pl.Int32, "black_rating_used": pl.Int32},
    )
    assert frame.select(gap_not_rated(rules)).item() is not_rated
    twin = _gap_not_rated_numpy(
        rules,
        np.array([white or 0], dtype=np.int32),
        np.array([white is not None]),
        np.array([black or 0], dtype=np.int32),
        np.array([black is not None]),
    )
    assert bool(twin[0]) is not_rated
    assert frame.select(gap_not_rated(load_rules("fide-rapid-2024"))).item() is False


def test_a_game_over_the_gap_is_rated_for_neither_player():
    previous = pl.DataFrame({"player_id": [1, 2, 3], "rating": [2650, 2000, 2300]})
    games = pl.DataFrame(
        {"white_id": [1, 1], "black_id": [2, 3], "white_score": [0.0, 1.0], "time_control": ["rapid", "rapid"]}
    )
    after = rate_period(previous, games, load_rules("fide-rapid-2024-12"), "2025-01").rating_list
    changes = dict(zip(after["player_id"], after["change"], strict=True))
    games_played = dict(zip(after["player_id"], after["games"], strict=True))
    assert changes[2] == 0 and games_played[2] == 0, "the 650-point game is not rated for the lower player"
    assert games_played[1] == 1, "the higher player's other game (350 apart) is rated"
    before = rate_period(previous, games, load_rules("fide-rapid-2024"), "2024-11").rating_list
    assert dict(zip(before["player_id"], before["games"], strict=True))[2] == 1, "rated before December 2024"


# -- a standard rating seeds the list (FIDE news 5721; B.02 Rapid and Blitz 2024 §7.2.1) ----------------------


def test_a_standard_rating_seeds_only_the_unrated_players_of_the_month():
    rules = load_rules("fide-rapid-2012")
    rapid = normalize_list(pl.DataFrame({"player_id": [1, 2], "rating": [2100, None]}))
    standard = pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [2200, 1900, 1700, 2500], "birth_year": [1990] * 4})
    seeds = seeded_from_standard(rules, rapid, standard, pl.Series([1, 2, 3]))
    assert seeds["player_id"].to_list() == [2, 3], "1 is rated on the rapid list; 4 did not play"
    assert seeds["rating"].to_list() == [1900, 1700]
    assert seeded_from_standard(load_rules("fide-2012"), rapid, standard, pl.Series([2, 3])).height == 0


def test_a_seeded_player_is_rated_from_the_seed_and_drops_its_pool():
    """Player 2 held a pool of unrated rapid games; a standard rating of 1900 makes it rated (§7.2.1: "7.2.2 to
    7.2.5 below do not apply"); player 3 is new to the rapid list.
    """
    rules = load_rules("fide-rapid-2024")
    pool_holder = rate_period(
        normalize_list(pl.DataFrame({"player_id": [1], "rating": [1900]})),
        pl.DataFrame({"white_id": [2], "black_id": [1], "white_score": [0.5], "time_control": ["rapid"]}),
        rules,
        "2024-05",
    ).rating_list
    assert pool_holder.filter(pl.col("player_id") == 2)["pending_games"].item() == 1
    games = pl.DataFrame(
        {"white_id": [2, 3], "black_id": [1, 1], "white_score": [1.0, 0.5], "time_control": ["rapid", "rapid"]}
    )
    standard = pl.DataFrame({"player_id": [2, 3], "rating": [1900, 1900], "birth_year": [1980, 2015]})
    after = rate_period(pool_holder, games, rules, "2024-06", standard=standard).rating_list
    rows = {row["player_id"]: row for row in after.iter_rows(named=True)}
    # K 40: a seeded player has no games on the rapid list yet (the newcomer's K, docs/rules.md); 1 game each.
    assert rows[2]["rating"] == 1900 + 20 and rows[2]["pending_games"] == 0 and rows[2]["games_total"] == 1
    assert rows[3]["rating"] == 1900 and rows[3]["birth_year"] == 2015
    assert not rows[2]["newly_rated"]


@pytest.mark.parametrize(("standard", "k"), [(2550, 10), (2399, 40)])
def test_a_seeded_players_k_takes_the_tiers_in_order(standard, k):
    """From October 2022 a player seeded from the standard list (B.02 Rapid and Blitz 2024 §7.2.1: "considered to be
    rated") takes §7.3.3's K tiers in regulations.development_coefficient's order: 10 once the rating reached 2400
    (the standard rating it starts from counts), else the newcomer's 40 until 30 games on the list (docs/rules.md).
    """
    opponent = normalize_list(pl.DataFrame({"player_id": [1], "rating": [2000], "games_total": [100]}))
    games = pl.DataFrame({"white_id": [2], "black_id": [1], "white_score": [0.5], "time_control": ["rapid"]})
    standard = pl.DataFrame({"player_id": [2], "rating": [standard], "birth_year": [1980]})
    after = rate_period(opponent, games, load_rules("fide-rapid-2024"), "2024-05", standard=standard).rating_list
    assert after.filter(pl.col("player_id") == 2)["k_used"].item() == k


def test_a_first_event_below_the_minimum_leaves_the_first_rating_with_its_points():
    """Until February 2024 a rapid newcomer's first event counts only with at least one point: a half point in event
    `a` is disregarded, games and points alike, so the first rating rests on event `b` alone (3 of 5 against 2000:
    2000 + 20 per half point above 50 %, 2020). Counting `a`'s half point with `b`'s games gave 2040.
    """
    seven = list(range(100, 107))
    before = normalize_list(pl.DataFrame({"player_id": [*seven, 1], "rating": [2000] * 7 + [None]}))
    games = pl.DataFrame(
        {
            "event_id": ["a", "a", "b", "b", "b", "b", "b"],
            "white_id": [1] * 7,
            "black_id": seven,
            "white_score": [0.5, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0],
            "time_control": ["rapid"] * 7,
        }
    )
    after = rate_period(before, games, load_rules("fide-rapid-2014"), "2015-05").rating_list
    newcomer = after.filter(pl.col("player_id") == 1).row(0, named=True)
    assert (newcomer["rating"], newcomer["games"]) == (2020, 5)


# -- ratings rate-period on a rapid period (issue 35's hand cases) ---------------------------------------------


def test_rate_period_rapid_2013_hand_cases(tmp_path: Path, capsys):
    """K 20 for every player in 2013: a 2500 player (standard K would be 10) losing to a 2100 player gets -18 and
    the winner +18; a player unrated in rapid with standard_rating 1850 beating an 1850 player ends at 1860. The
    games file names no time control: a rapid period's games are rapid.
    """
    (tmp_path / "prev.csv").write_text(
        "player_id,rating,standard_rating\n1,2500,2520\n2,2100,2050\n3,,1850\n4,1850,1900\n5,,\n"
    )
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result\ne1,2,1,1-0\ne1,3,4,1-0\n")
    out = tmp_path / "new.csv"
    code = main(
        [
            "rate-period",
            "--rules",
            "fide-rapid-historical",
            "--month",
            "2013-03",
            "--list",
            str(tmp_path / "prev.csv"),
            "--games",
            str(tmp_path / "games.csv"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    new = pl.read_csv(out)
    rating = dict(zip(new["player_id"], new["rating"], strict=True))
    change = dict(zip(new["player_id"], new["change"], strict=True))
    assert (change[1], change[2]) == (-18, 18)
    assert (rating[1], rating[2], rating[3], rating[4]) == (2482, 2118, 1860, 1840)
    assert rating[5] is None
    assert "fide-rapid-2012" in capsys.readouterr().err


def test_rate_period_says_when_standard_rating_is_not_used(tmp_path: Path, capsys):
    (tmp_path / "prev.csv").write_text("player_id,rating,standard_rating\n1,2000,2000\n2,,1900\n")
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result\ne1,1,2,1-0\n")
    out = tmp_path / "new.csv"
    arguments = ["--month", "2024-05", "--list", str(tmp_path / "prev.csv"), "--games", str(tmp_path / "games.csv")]
    assert main(["rate-period", "--rules", "fide-2024", *arguments, "--out", str(out)]) == 0
    warning = capsys.readouterr().err
    assert "standard_rating is not used" in warning and "standard list" in warning
    assert pl.read_csv(out).filter(pl.col("player_id") == 2)["rating"].item() is None, "unrated in standard"


def test_continuity_lets_a_seeded_player_who_played_fall_below_the_floor():
    """A player seeded at 1010 who loses below the floor is delisted without a rating on the rapid list before; a
    player delisted without games, or on a list nobody seeds, is still a continuity problem.
    """
    from pipeline.invariants.chain import continuity_problems

    previous = pl.DataFrame({"player_id": [1, 2], "rating": [2000, None], "change": [0, None], "delisted": [False] * 2})
    current = pl.DataFrame(
        {"player_id": [1, 2], "rating": [1990, None], "change": [-10, None], "delisted": [False, True], "games": [1, 1]}
    )
    assert continuity_problems(previous, current, seeded=True) == []
    assert "delisted who were not rated before" in continuity_problems(previous, current)[0]
    idle = current.with_columns(pl.Series("games", [1, 0]))
    assert "delisted who were not rated before" in continuity_problems(previous, idle, seeded=True)[0]


# -- seed lists per time control (raw/players/<M>/) -------------------------------------------------------------


def test_a_seed_list_csv_seeds_each_list_from_its_own_columns():
    from pipeline.ingest.registry import seed_rows

    table = pl.DataFrame(
        {
            "player_id": ["1", "2", "3"],
            "rating": ["2100", "1900", ""],
            "k": ["20", "20", ""],
            "rapid_rating": ["2050", "", "1700"],
            "rapid_k": ["20", "", "40"],
            "blitz_rating": ["", "1950", ""],
        }
    )
    standard, rapid, blitz = (seed_rows(table, kind) for kind in ("standard", "rapid", "blitz"))
    assert standard["rating"].to_list() == [2100, 1900, None]
    assert rapid["rating"].to_list() == [2050, None, 1700] and rapid["k"].to_list() == [20, None, 40]
    assert blitz["rating"].to_list() == [None, 1950, None] and blitz["k"].to_list() == [None, None, None]


def test_each_chain_takes_its_own_fide_list_of_a_month_folder():
    from pipeline.ingest.registry import _seed_file

    folder = "raw/players/2013-01/"
    keys = [folder + name for name in ("blitz_jan13frl.txt", "players_list_foa.txt", "rapid_jan13frl.txt.gz")]
    assert _seed_file(keys, "standard") == folder + "players_list_foa.txt"
    assert _seed_file(keys, "rapid") == folder + "rapid_jan13frl.txt.gz"
    assert _seed_file(keys, "blitz") == folder + "blitz_jan13frl.txt"
    # A combined list alone seeds all three (its rapid and blitz fields); a seed_list.csv wins over any list.
    assert _seed_file([folder + "players_list_foa.txt"], "blitz") == folder + "players_list_foa.txt"
    assert _seed_file([*keys, folder + "seed_list.csv"], "rapid") == folder + "seed_list.csv"


def test_a_fide_combined_list_seeds_the_rapid_and_blitz_chains_with_their_own_ratings():
    import io

    from pipeline.formats.fide_list import parse_fide_list, write_fide_combined_list
    from pipeline.ingest.registry import fide_list_seed_rows

    players = pl.DataFrame(
        {
            "player_id": [100, 200],
            "name": ["Alpha, Ann", "Beta, Bob"],
            "federation": ["ENG", "GER"],
            "sex": ["F", "M"],
            "title": [None, "GM"],
            "birth_year": [1990, 1980],
            "rating": [2100, 2500],
            "games": [3, 0],
            "k": [20, 10],
            "inactive": [False, False],
            "rapid_rating": [2050, None],
            "rapid_games": [5, None],
            "rapid_k": [20, None],
            "blitz_rating": [None, 2600],
            "blitz_games": [None, 9],
            "blitz_k": [None, 20],
        }
    )
    handle = io.BytesIO()
    write_fide_combined_list(players, handle)
    parsed = parse_fide_list(handle.getvalue(), "players_list_foa.txt")
    rows = {kind: fide_list_seed_rows(parsed, kind).sort("player_id") for kind in ("standard", "rapid", "blitz")}
    assert rows["standard"]["rating"].to_list() == [2100, 2500]
    assert rows["rapid"]["rating"].to_list() == [2050, None] and rows["rapid"]["k"].to_list() == [20, None]
    assert rows["blitz"]["rating"].to_list() == [None, 2600]


def test_fides_real_rapid_list_of_january_2013_seeds_the_rapid_chain():
    from pipeline.formats.fide_list import parse_fide_list
    from pipeline.ingest.registry import fide_list_seed_rows

    path = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "fide-lists-2013-rapid" / "rapid_jan13frl.txt"
    if not path.exists():
        pytest.skip(f"{path} is absent (shared/realdata not mounted)")
    rows = fide_list_seed_rows(parse_fide_list(path.read_bytes(), path.name), "rapid")
    assert rows.height == 11_098 and rows["rating"].null_count() == 0
    assert set(rows["k"].to_list()) == {20}, "K 20 for every player of FIDE's 2013 rapid list"
    assert rows["rating"].min() >= 1000


def test_the_default_rapid_and_blitz_lists_are_compressed_on_the_march_2024_list_as_the_standard_one() -> None:
    """FIDE's one-time compression of 1 March 2024 came on all three lists (docs/regulations.md): without it the rapid
    and blitz chains kept ratings of 1000-1399 under the 1400 floor of their 2024 rules, delisted as they played.
    """
    from pipeline.scenarios.model import load_scenarios

    scenarios = load_scenarios()
    compressed = {
        name
        for name, scenario in scenarios.items()
        if any(event.compress is not None for event in scenario.events_after("2024-02"))
    }
    assert {"actual", "actual_rapid", "actual_blitz"} <= compressed
    for name in ("actual_rapid", "actual_blitz"):
        assert resolve_rules(scenarios[name].rules, "2024-03").floor == 1400
