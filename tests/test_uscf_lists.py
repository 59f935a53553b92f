"""US Chess's regular, quick and blitz lists (pipeline/systems/uscf.py, rule 5C).

Which list rates a game, a uscf scenario per list (a dual-rated game in regular and quick), quick and blitz seeded from
regular, and rate-period.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assets.partitions import monthly_partitions
from assets.rate import build_rating_defs, chain_key
from pipeline.cli.system_period import rate_system_files
from pipeline.engine.period import normalize_list
from pipeline.months import month_index
from pipeline.rules.model import RulesError
from pipeline.scenarios.chain import rate_months
from pipeline.scenarios.model import Scenario, compared_scenarios, load_scenarios, seeded_lists
from pipeline.scenarios.system_step import rate_system_month, seed_state
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.systems import get_system, rate_system_period
from pipeline.systems.uscf import rated_in_list
from schemas.games import Games
from schemas.util import conform

USCF = get_system("uscf")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "scenarios-uscf.yaml"


def lists_of(base: int | None, increment: int | None, time_control: str) -> set[str]:
    """The US Chess lists that rate a game of this clock (seconds) and FIDE class."""
    game = pl.DataFrame(
        {"time_control": [time_control], "tc_base_seconds": [base], "tc_increment_seconds": [increment]},
        schema={"time_control": pl.Utf8, "tc_base_seconds": pl.Int32, "tc_increment_seconds": pl.Int32},
    )
    return {name for name in ("regular", "quick", "blitz") if game.select(rated_in_list(name)).item()}


# Rule 5C: total = mm + ss (main minutes + increment or delay seconds); blitz 5..10, quick-only 10 < t < 30,
# dual 30..65, regular-only > 65; main time at least 3 minutes (blitz), 5 (the others). No clock: the FIDE class.
# fmt: off
@pytest.mark.parametrize(
    ("base", "increment", "time_control", "lists"),
    [
        (300, 0, "blitz", {"blitz"}),  # G/5 d0: 5, blitz's lower end (inclusive)
        (290, 0, "blitz", set()),  # 4:50: below blitz's 5
        (180, 2, "blitz", {"blitz"}),  # G/3+2: 5 with the minimum 3 minutes of main time
        (170, 3, "blitz", set()),  # 2:50 + 3 = 5.8, but main time under 3 minutes
        (420, 3, "blitz", {"blitz"}),  # G/7 d3: 10, blitz's upper end (inclusive)
        (600, 0, "rapid", {"blitz"}),  # G/10: 10 is blitz, not quick (FIDE calls it rapid)
        (600, 1, "rapid", {"quick"}),  # G/10+1: 11, just above 10: quick only
        (300, 6, "rapid", {"quick"}),  # G/5+6: 11 with the minimum 5 minutes of main time
        (240, 25, "rapid", set()),  # G/4+25: 29, main time under 5 minutes (Just's quiz)
        (1500, 4, "rapid", {"quick"}),  # G/25 d4: 29, quick only
        (1740, 0, "rapid", {"quick"}),  # G/29: quick only
        (1800, 0, "rapid", {"quick", "regular"}),  # G/30: 30, the dual band's lower end (inclusive)
        (1200, 10, "rapid", {"quick", "regular"}),  # G/20+10: 30, dual
        (1800, None, "rapid", {"quick", "regular"}),  # a clock without its increment has none: 30, dual
        (2700, 0, "rapid", {"quick", "regular"}),  # G/45: dual
        (3600, 5, "classical", {"quick", "regular"}),  # G/60 d5: 65, the dual band's upper end (inclusive)
        (3300, 10, "rapid", {"quick", "regular"}),  # G/55+10: 65, dual
        (3930, 0, "classical", {"regular"}),  # 65.5: above 65, regular only
        (3600, 6, "classical", {"regular"}),  # G/60+6: 66, regular only
        (5400, 30, "classical", {"regular"}),  # 90+30: 120, regular only
        (0, 90, "classical", set()),  # 0+90: 90, but no main time
        (None, None, "classical", {"regular"}),  # unknown clock: FIDE class classical -> regular
        (None, None, "modern", {"regular"}),  # modern -> regular
        (None, None, "rapid", {"quick"}),  # rapid -> quick only (dual cannot be told)
        (None, None, "blitz", {"blitz"}),  # blitz -> blitz
    ],
)
# fmt: on
def test_which_list_rates_a_clock(base, increment, time_control, lists):
    assert lists_of(base, increment, time_control) == lists


# -- a scenario per list -------------------------------------------------------------------------

REGULAR = Scenario(name="uscf_regular", system="uscf")
QUICK = Scenario(name="uscf_quick", system="uscf", set={"rating_list": "quick"}, standard_chain="uscf_regular")
BLITZ = Scenario(name="uscf_blitz", system="uscf", set={"rating_list": "blitz"}, standard_chain="uscf_regular")

# Game 1 dual-rated (G/45), game 2 blitz (G/3+2), game 3 regular only (90+30), game 4 quick only (G/15+5), game 5
# a classical game without a clock.
CLOCKS = [(2700, 0, "rapid"), (180, 2, "blitz"), (5400, 30, "classical"), (900, 5, "rapid"), (None, None, "classical")]


def month_games(pairs: list[tuple[int, int]], clocks=CLOCKS, month: str = "2024-03", first_id: int = 1) -> pl.DataFrame:
    """Validated games (Games) of one event each, White winning, with the clocks given."""
    year, number = (int(part) for part in month.split("-"))
    frame = pl.DataFrame(
        {
            "game_id": list(range(first_id, first_id + len(pairs))),
            "month": month,
            "federation": "USA",
            "event_id": [f"e{i}" for i in range(first_id, first_id + len(pairs))],
            "event_start": date(year, number, 5),
            "date": date(year, number, 5),
            "round": 1,
            "white_id": [white for white, _ in pairs],
            "black_id": [black for _, black in pairs],
            "white_score": 1.0,
            "time_control": [clock[2] for clock in clocks],
            "tc_base_seconds": [clock[0] for clock in clocks],
            "tc_increment_seconds": [clock[1] for clock in clocks],
            "white_rating_used": None,
            "black_rating_used": None,
            "colour_known": True,
            "source_file": "USA/x.csv",
            "source_line": list(range(2, 2 + len(pairs))),
            "also_reported_by": pl.Series([None] * len(pairs), dtype=pl.List(pl.Utf8)),
        }
    )
    return conform(frame, Games)


PAIRS = [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10)]


def rated_ids(scenario: Scenario, games: pl.DataFrame) -> list[int]:
    seed = pl.DataFrame({"player_id": [0], "rating": [None]}, schema={"player_id": pl.Int64, "rating": pl.Int32})
    month = rate_system_month(scenario, normalize_list(seed), seed_state(scenario, seed, "2024-03"), games, "2024-03")
    return month.rated_games.filter(pl.col("weight") > 0)["game_id"].sort().to_list()


def test_a_dual_rated_game_is_in_regular_and_quick_and_a_blitz_game_in_blitz_only():
    games = month_games(PAIRS)
    assert rated_ids(REGULAR, games) == [1, 3, 5]
    assert rated_ids(QUICK, games) == [1, 4]
    assert rated_ids(BLITZ, games) == [2]


def test_the_default_uscf_scenario_rates_classical_games_as_before():
    """Default rating_list regular: classical and modern games, clock known or not, rated exactly as the class filter
    (time_controls classical, modern) rated them before the lists existed.
    """
    clocks = [(5400, 30, "classical"), (None, None, "classical"), (7200, 0, "modern"), (3600, 30, "classical")]
    games = month_games([(1, 2), (2, 3), (3, 1), (4, 1)], clocks)
    seed = pl.DataFrame({"player_id": [1, 2], "rating": [1900, 1700]})
    default = Scenario(name="u", system="uscf")
    assert default.system_rules().params.rating_list == "regular"
    assert default.list_type() == "standard"
    result = rate_system_month(default, normalize_list(seed), seed_state(default, seed, "2024-03"), games, "2024-03")
    rules = default.system_rules()
    before = games.filter(pl.col("time_control").is_in(["classical", "modern"]))
    by_hand = rate_system_period(
        rules.system, seed_state(default, seed, "2024-03"), before, rules.params, month_index("2024-03")
    ).state
    assert_frame_equal(result.state, by_hand)
    assert result.rated_games["weight"].to_list() == [1.0] * 4


def test_the_example_file_holds_the_three_lists_seeded_from_regular():
    scenarios = load_scenarios(str(EXAMPLE))
    lists = {name: (s.system_rules().params.rating_list, s.list_type()) for name, s in scenarios.items()}
    assert lists == {
        "uscf_regular": ("regular", "standard"),
        "uscf_quick": ("quick", "rapid"),
        "uscf_blitz": ("blitz", "blitz"),
    }
    assert scenarios["uscf_quick"].standard_chain == scenarios["uscf_blitz"].standard_chain == "uscf_regular"
    # The comparison sets side by side the scenarios of one list; FIDE's combined list has no system partners.
    assert list(compared_scenarios(scenarios)) == ["uscf_regular"]
    assert seeded_lists(scenarios, "uscf_regular") == {}


def write_scenarios(tmp_path: Path, body: str) -> str:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n" + body)
    return str(path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  u:\n    system: uscf\n    time_controls: [rapid]\n",
            r"time_controls: system 'uscf' chooses the games it rates from their clocks",
        ),
        ("  u:\n    system: uscf\n    set: {rating_list: bullet}\n", r"set.rating_list: Input should be 'regular'"),
        (
            "  u:\n    system: uscf\n    rates: standard\n    set: {rating_list: quick}\n",
            r"rates: standard, but its uscf parameters rate the rapid list",
        ),
        (
            "  a:\n    rules: fide-historical\n  u:\n    system: uscf\n    set: {rating_list: quick}\n"
            "    standard_chain: a\n",
            r"standard_chain: a is not a uscf scenario",
        ),
        (
            "  r:\n    system: uscf\n  g:\n    system: glicko2\n    time_controls: [rapid]\n    standard_chain: r\n",
            r"standard_chain: no list of system glicko2 is seeded by another list",
        ),
        (
            "  r:\n    system: uscf\n  u:\n    system: uscf\n    standard_chain: r\n",
            r"standard_chain: a standard list is not seeded by another standard list",
        ),
    ],
)
def test_a_wrong_uscf_list_scenario_is_refused(tmp_path: Path, body: str, message: str):
    with pytest.raises(RulesError, match=message):
        load_scenarios(write_scenarios(tmp_path, body))


# -- quick and blitz seeded from regular ---------------------------------------------------------


def uscf_state(rows: list[dict]) -> pl.DataFrame:
    base = {"games": 0, "wins": 0, "draws": 0, "losses": 0, "last_period": None, "deviation": None}
    base |= {"volatility": None, "peak": None, "events_3plus": 0, "birth_year": None}
    return pl.DataFrame([base | row for row in rows], schema=USCF.state_schema())


def test_a_player_unrated_in_quick_starts_from_the_regular_rating_on_at_most_ten_games():
    # Player 1: regular 1800 on 40 games -> quick 1800 on N = 10 (P/10); player 3: regular 1500 on 4 games -> on 4;
    # player 5: no regular rating -> Step 1's age-based rating on N = 0; player 7: quick-rated already, kept.
    regular = pl.DataFrame(
        {"player_id": [1, 3, 7], "rating": [1800.0, 1500.0, 2000.0], "games": [40, 4, 100]},
        schema={"player_id": pl.Int64, "rating": pl.Float64, "games": pl.Int64},
    )
    quick_state = uscf_state([{"player_id": 7, "rating": 1650.0, "games": 30, "wins": 15, "losses": 15}])
    clocks = [(2700, 0, "rapid")] * 4
    games = month_games([(1, 2), (3, 4), (5, 6), (7, 8)], clocks)
    seed = normalize_list(pl.DataFrame({"player_id": [7], "rating": [1650]}))
    month = rate_system_month(QUICK, seed, quick_state, games, "2024-03", seeds=regular)
    started = uscf_state(
        [
            {"player_id": 7, "rating": 1650.0, "games": 30, "wins": 15, "losses": 15},
            {"player_id": 1, "rating": 1800.0, "games": 10},
            {"player_id": 3, "rating": 1500.0, "games": 4},
        ]
    ).sort("player_id")
    rules = QUICK.system_rules()
    by_hand = rate_system_period(rules.system, started, games, rules.params, month_index("2024-03")).state
    assert_frame_equal(month.state, by_hand)
    assert month.state.filter(pl.col("player_id") == 1)["games"].item() == 11  # P/10 + 1 game
    # The games are predicted from the regular rating the quick list starts from.
    used = dict(month.rated_games.select("white_id", "white_rating_used").iter_rows())
    assert used == {1: 1800, 3: 1500, 5: 1300, 7: 1650}
    # No regular rating: Step 1 (1300 without a birth year), as without seeds.
    alone = rate_system_month(QUICK, seed, quick_state, games, "2024-03")
    assert rating_of(alone.state, 5) == rating_of(month.state, 5)
    assert rating_of(alone.state, 1) != rating_of(month.state, 1)


def rating_of(state: pl.DataFrame, player: int) -> float:
    return state.filter(pl.col("player_id") == player)["rating"].item()


def test_a_quick_chain_reads_the_regular_chains_state_of_the_month_before(tmp_path: Path):
    """Chain level: the regular chain's stored state of M-1 seeds the quick chain's month M; at the chain's start
    (the seed state) nobody has a regular rating to start from.
    """
    store = ObjectStore(str(tmp_path))
    store.write_text("player_id,rating\n", "raw/players/2024-01/seed_list.csv")
    store.write_text("player_id,inactive\n", "raw/USA/2024-01/empty.csv")
    january = month_games([(1, 2), (2, 3), (3, 1)], [(5400, 30, "classical")] * 3, "2024-01")
    february = month_games([(1, 4)], [(900, 0, "rapid")], "2024-02", first_id=10)
    games = {"2024-01": january, "2024-02": february}
    months = ["2024-01", "2024-02"]
    rate_regular = rate_months(store, REGULAR, months, "2024-01")
    for month in months:
        rating_list, state, rated = rate_regular(month, games.__getitem__)
        store.write_parquet(state, table_key([REGULAR.name, "system_state"], month))
        store.write_parquet(rating_list, table_key([REGULAR.name, "rating_list"], month))
    rate_quick = rate_months(store, QUICK, months, "2024-01", standard_chain=REGULAR)
    quick_january = rate_quick("2024-01", games.__getitem__)
    assert quick_january[2].filter(pl.col("weight") > 0).is_empty()  # no quick game in January
    _, quick_state, quick_games = rate_quick("2024-02", games.__getitem__)
    regular_january = store.read_parquet(table_key([REGULAR.name, "system_state"], "2024-01"))
    player_1 = regular_january.filter(pl.col("player_id") == 1).row(0, named=True)
    assert quick_games.filter(pl.col("game_id") == 10)["white_rating_used"].item() == round(player_1["rating"])
    assert quick_state.filter(pl.col("player_id") == 1)["games"].item() == min(player_1["games"], 10) + 1


def test_the_quick_chain_depends_on_the_regular_chains_state():
    defs = build_rating_defs(monthly_partitions("2024-01", "2024-03"), QUICK, standard_chain=REGULAR)
    specs = [spec for asset in defs.assets or () if isinstance(asset, dg.AssetsDefinition) for spec in asset.specs]
    assert specs
    for spec in specs:  # every table of the quick chain's month reads the regular chain's state of M-1
        assert chain_key(REGULAR, "system_state") in {dep.asset_key for dep in spec.deps}


# -- rate-period ---------------------------------------------------------------------------------


def test_rate_period_rates_the_list_the_knob_names(tmp_path: Path):
    (tmp_path / "prev.csv").write_text(
        "player_id,rating,games_total,standard_rating,standard_games\n1,1600,30,,\n2,1600,30,,\n3,,,1900,50\n"
    )
    # A dual-rated game (45 minutes), a blitz game (3+2), a regular-only game (90+30) and a quick-only one (15).
    (tmp_path / "games.csv").write_text(
        "event_id,white_id,black_id,result,time_control\ne1,1,2,1-0,45\ne2,1,2,1-0,3+2\ne3,1,2,0-1,90+30\n"
        "e4,3,1,1-0,15+0\n"
    )

    def rate(*overrides: str) -> pl.DataFrame:
        files = [str(tmp_path / name) for name in ("prev.csv", "games.csv")]
        return rate_system_files("uscf", "2024-03", *files, overrides).sort("player_id")

    def games_of(new: pl.DataFrame, player: int) -> int:
        return new.filter(pl.col("player_id") == player)["games_total"].item()

    regular, quick, blitz = rate(), rate("rating_list=quick"), rate("rating_list=blitz")
    assert games_of(regular, 2) == 30 + 2  # e1 (dual) and e3
    assert games_of(quick, 2) == 30 + 1  # e1 only
    assert games_of(blitz, 2) == 30 + 1  # e2 only
    # Player 3, unrated, starts quick from his regular 1900 on 10 games: 11 games after e4; regular ignores it.
    assert games_of(quick, 3) == 11
    assert games_of(regular, 3) == 0


def test_rate_period_without_a_clock_takes_the_class_of_the_list(tmp_path: Path):
    (tmp_path / "prev.csv").write_text("player_id,rating,games_total\n1,1600,30\n2,1600,30\n")
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result\ne1,1,2,1-0\n")
    files = [str(tmp_path / name) for name in ("prev.csv", "games.csv")]
    new = rate_system_files("uscf", "2024-03", *files, ("rating_list=blitz",))
    assert new.filter(pl.col("player_id") == 1)["games_total"].item() == 31


# -- the three lists through `ratings run` -------------------------------------------------------

PLAYERS = """player_id,name,federation,sex,birth_year
100001,"Alpha, Ann",USA,F,
100002,"Beta, Bob",USA,M,
100003,"Gamma, Gus",USA,M,
100004,"Delta, Dora",USA,F,
100005,"Epsilon, Eve",USA,F,
"""


def _pgn_game(day: str, white: int, black: int, result: str, clock: str, event: str) -> str:
    return (
        f'[Event "{event}"]\n[Site "Saint Louis"]\n[Date "{day}"]\n[Round "1"]\n[White "W{white}"]\n'
        f'[Black "B{black}"]\n[Result "{result}"]\n[WhiteFideId "{white}"]\n[BlackFideId "{black}"]\n'
        f'[TimeControl "{clock}"]\n\n1. e4 e5 {result}\n\n'
    )


@pytest.fixture(scope="module")
def uscf_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`ratings run` of examples/scenarios-uscf.yaml on two months: May holds a regular-only event (90+30), a
    dual-rated game (G/45) and a blitz game (3+2); June a quick game (G/15) of a player rated in regular in May.
    """
    from assets.runtime.cli import main

    root = tmp_path_factory.mktemp("uscf-lists")
    store = root / "store"
    may, june, players = (store / "raw" / part for part in ("USA/2024-05", "USA/2024-06", "players/2024-05"))
    for folder in (may, june, players):
        folder.mkdir(parents=True)
    (players / "players.csv").write_text(PLAYERS)
    (players / "seed_list.csv").write_text("player_id,rating\n")
    (may / "may.pgn").write_text(
        _pgn_game("2024.05.04", 100001, 100002, "1-0", "5400+30", "May Open")
        + _pgn_game("2024.05.04", 100003, 100004, "1/2-1/2", "5400+30", "May Open")
        + _pgn_game("2024.05.05", 100001, 100003, "1-0", "5400+30", "May Open")
        + _pgn_game("2024.05.11", 100002, 100004, "1-0", "2700", "May G45")
        + _pgn_game("2024.05.18", 100002, 100004, "0-1", "180+2", "May Blitz")
    )
    (june / "june.pgn").write_text(_pgn_game("2024.06.08", 100001, 100005, "1-0", "900", "June Quick"))
    arguments = ["run", "--store", str(store), "--scenarios", str(EXAMPLE), "--dagster-home", str(root / "home")]
    assert main(arguments) == 0
    return store


def _rated(store: Path, scenario: str, month: str) -> pl.DataFrame:
    frame = pl.read_parquet(store / scenario / "rated_games" / f"{month}.parquet")
    return frame.filter(pl.col("weight") > 0)


def test_a_run_rates_the_dual_game_in_regular_and_quick_and_the_blitz_game_in_blitz(uscf_runs: Path):
    games = pl.read_parquet(uscf_runs / "games" / "2024-05.parquet").select("game_id", "event_id")
    event = dict(games.iter_rows())
    events = {
        name: sorted(event[game] for game in _rated(uscf_runs, name, "2024-05")["game_id"])
        for name in ("uscf_regular", "uscf_quick", "uscf_blitz")
    }
    open_event, g45, blitz = (
        next(e for e in set(event.values()) if name in e) for name in ("Open", "G45", "Blitz")
    )
    assert events == {
        "uscf_regular": sorted([open_event] * 3 + [g45]),
        "uscf_quick": [g45],
        "uscf_blitz": [blitz],
    }


def test_a_run_starts_a_quick_player_from_the_regular_list_of_the_month_before(uscf_runs: Path):
    regular_may = pl.read_parquet(uscf_runs / "uscf_regular" / "system_state" / "2024-05.parquet")
    ann = regular_may.filter(pl.col("player_id") == 100001).row(0, named=True)
    assert ann["games"] == 2
    june = _rated(uscf_runs, "uscf_quick", "2024-06")
    assert june["white_rating_used"].to_list() == [round(ann["rating"])]
    quick_june = pl.read_parquet(uscf_runs / "uscf_quick" / "system_state" / "2024-06.parquet")
    assert quick_june.filter(pl.col("player_id") == 100001)["games"].item() == 2 + 1  # N = min(2, 10), + 1 game
