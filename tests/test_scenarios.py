"""Every preset against worked examples, the compression, list frequency and scenarios.

Scenarios also run side by side in Dagster.
"""

import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipeline.engine.period import compress, normalize_list, rate_period
from pipeline.rules.model import RulesError, load_rules, preset_names, resolve_rules
from pipeline.scenarios.model import RESERVED_NAMES, Scenario, load_scenarios, rate_scenario_month

EMPTY_GAMES = pl.DataFrame(schema={"white_id": pl.Int64, "black_id": pl.Int64, "white_score": pl.Float64})


def row(frame: pl.DataFrame, player_id: int) -> dict:
    return frame.filter(pl.col("player_id") == player_id).row(0, named=True)


def single_game(rules: str, own: int, opponent: int, score: float, month: str = "2020-05", **game) -> dict:
    previous = pl.DataFrame({"player_id": [1, 2], "rating": [own, opponent], "games_total": [100, 100]})
    games = pl.DataFrame(
        {"white_id": [1], "black_id": [2], "white_score": [score], **{k: [v] for k, v in game.items()}}
    )
    result = rate_period(previous, games, load_rules(rules), month)
    return row(result.rating_list, 1) | {
        "expected": result.rated_games["white_expected"][0],
        "weight": result.rated_games["weight"][0],
    }


def test_every_preset_of_product_3_1_loads():
    for name in (
        "fide-2009",
        "fide-2012",
        "fide-2014",
        "fide-2017",
        "fide-2022",
        "fide-2024",
        "fide-2025-10",
        "sonas-2002",
        "elo-32",
    ):
        assert load_rules(name).name == name
    assert "fide-historical" in preset_names()


# -- presets against worked examples ----------------------------------------------------------


def test_fide_2008_350_point_rule_and_k_15():
    row_ = single_game("fide-2008", 2200, 1800, 1.0, month="2008-03")
    assert row_["expected"] == pytest.approx(0.89)  # D 400 counts as 350: table 345-357 -> .89
    assert (row_["k_used"], row_["change"]) == (15, 2)  # 15 x .11 = 1.65 -> 2


def test_fide_2009_and_2012_k_and_floor():
    assert single_game("fide-2009", 2200, 1700, 1.0)["expected"] == pytest.approx(0.92)  # 400-point rule from July 2009
    assert load_rules("fide-2009").floor == 1200 and load_rules("fide-2012").floor == 1000
    newcomer = pl.DataFrame({"player_id": [1, 2], "rating": [1500, 1500], "games_total": [10, 100]})
    k = rate_period(newcomer, EMPTY_GAMES, load_rules("fide-2012"), "2013-01").rating_list["k"].to_list()
    assert k == [30, 15]
    k = rate_period(newcomer, EMPTY_GAMES, load_rules("fide-2009"), "2010-01").rating_list["k"].to_list()
    assert k == [25, 15]


def test_fide_2009_initial_rating_needs_nine_games_and_adds_12_5_per_half_point():
    rated = pl.DataFrame({"player_id": list(range(10, 19)), "rating": [1800] * 9})

    def newcomer(n: int, points: float) -> dict:
        scores = [1.0] * int(points) + [0.0] * (n - int(points))
        games = pl.DataFrame(
            {"event_id": ["e"] * n, "white_id": [1] * n, "black_id": list(range(10, 10 + n)), "white_score": scores}
        )
        return row(rate_period(rated, games, load_rules("fide-2009"), "2010-03").rating_list, 1)

    assert newcomer(8, 6)["rating"] is None
    assert newcomer(9, 6)["rating"] == 1800 + 38  # 3 half points over 50 % x 12.5 = 37.5 -> 38


def test_fide_2017_introduces_the_700_rule():
    previous = pl.DataFrame(
        {"player_id": [1, 2], "rating": [2000, 2000], "games_total": [100, 100], "birth_year": [1980, 1980]}
    )
    games = pl.DataFrame({"white_id": [1] * 39, "black_id": [2] * 39, "white_score": [1.0] * 39})
    assert row(rate_period(previous, games, load_rules("fide-2014"), "2016-05").rating_list, 1)["k_used"] == 20
    assert (
        row(rate_period(previous, games, load_rules("fide-2017"), "2018-05").rating_list, 1)["k_used"] == 17
    )  # 700 // 39


def test_sonas_2002_expectancy_k_and_time_control_weights():
    equal = single_game("sonas-2002", 2000, 2000, 1.0)
    assert equal["expected"] == pytest.approx(0.541767)
    assert equal["change"] == round(24 * (1 - 0.541767))
    assert single_game("sonas-2002", 2400, 1900, 1.0)["expected"] == pytest.approx(0.541767 + 0.001164 * 390)  # clamped
    assert single_game("sonas-2002", 2000, 2000, 1.0, time_control="rapid")["weight"] == pytest.approx(0.29)
    # 90 minutes + 30 s a move: 110 minutes through move 40, between 60 (0.55) and 120 (1.00).
    weighted = single_game("sonas-2002", 2000, 2000, 1.0, tc_base_seconds=5400, tc_increment_seconds=30)
    assert weighted["weight"] == pytest.approx(0.55 + 50 * 0.45 / 60)
    assert single_game("sonas-2002", 2000, 2000, 1.0, tc_base_seconds=180, tc_increment_seconds=0)[
        "weight"
    ] == pytest.approx(0.18)


def test_black_side_of_sonas_2002_is_the_complement():
    previous = pl.DataFrame({"player_id": [1, 2], "rating": [2000, 2100]})
    games = pl.DataFrame({"white_id": [1], "black_id": [2], "white_score": [0.5]})
    rated = rate_period(previous, games, load_rules("sonas-2002"), "2020-01").rated_games
    assert rated["white_expected"][0] == pytest.approx(0.541767 - 0.1164)
    assert rated["black_expected"][0] == pytest.approx(1 - (0.541767 - 0.1164))


# -- the one-time compression ------------------------------------------------------------------


def test_compression_worked_examples_order_and_fresh_start():
    pending = [{"month": "2024-01", "games": 3, "points_x2": 4, "opponent_rating_sum": 5400}]
    listed = normalize_list(
        pl.DataFrame({"player_id": [1, 2, 3, 4, 5, 6], "rating": [1000, 1500, 1950, 2000, 2300, None]})
    ).with_columns(
        pending=pl.when(pl.col("player_id") == 6)
        .then(pl.lit(pending, dtype=listed_dtype()))
        .otherwise(pl.col("pending")),
        pending_games=pl.when(pl.col("player_id") == 6).then(3).otherwise(0).cast(pl.Int32),
    )
    out = compress(listed)
    assert out.sort("player_id")["rating"].to_list() == [1400, 1700, 1970, 2000, 2300, None]
    assert out.sort("player_id")["change"].to_list()[:3] == [400, 200, 20]
    assert row(out, 6)["pending_games"] == 0 and row(out, 6)["pending"] == []
    assert row(compress(listed, fresh_start=False), 6)["pending_games"] == 3
    odd = compress(normalize_list(pl.DataFrame({"player_id": [1, 2, 3], "rating": [1001, 1002, 1999]})))
    assert odd["rating"].to_list() == [1401, 1401, 1999]  # 399.6 -> 400, 399.2 -> 399, 0.4 -> 0
    every = compress(normalize_list(pl.DataFrame({"player_id": range(1, 1302), "rating": range(800, 2101)})))["rating"]
    assert every.is_sorted() and every.filter(pl.Series(range(800, 2101)) < 2000).max() <= 2000


def listed_dtype():
    from schemas.rating_list import POOL_ENTRY

    return pl.List(POOL_ENTRY)


def test_compression_reaches_newcomers_of_the_month():
    rated = pl.DataFrame({"player_id": list(range(10, 15)), "rating": [1500] * 5})
    games = pl.DataFrame(
        {"event_id": ["e"] * 5, "white_id": [1] * 5, "black_id": list(range(10, 15)), "white_score": [0.5] * 5}
    )
    scenario = Scenario(name="t", rules="fide-2022", events=[{"after": "2023-06", "compress": {}}])
    result = rate_scenario_month(scenario, normalize_list(rated), lambda m: games, "2023-06")
    assert row(result.rating_list, 1)["rating"] == 1500 + 200  # rated 1500 this month, then compressed
    assert row(result.rating_list, 10)["rating"] == 1700


def test_rate_period_compress_flag_is_the_same_compression(tmp_path: Path):
    import subprocess
    import sys

    (tmp_path / "prev.csv").write_text("player_id,rating\n1,1500\n2,1950\n")
    (tmp_path / "games.csv").write_text("event_id,white_id,black_id,result\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "rate-period",
            "--rules",
            "fide-2024",
            "--month",
            "2024-02",
            "--list",
            str(tmp_path / "prev.csv"),
            "--games",
            str(tmp_path / "games.csv"),
            "--out",
            str(tmp_path / "new.csv"),
            "--compress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert pl.read_csv(tmp_path / "new.csv").sort("player_id")["rating"].to_list() == [1700, 1970]


# -- list frequency before July 2012 ---------------------------------------------------------


def test_historical_list_frequency_rates_only_on_list_months():
    actual = load_scenarios()["actual"]
    previous = normalize_list(pl.DataFrame({"player_id": [1, 2], "rating": [2000, 2000], "games_total": [100, 100]}))
    games = {
        "2010-01": pl.DataFrame(
            {"game_id": [1], "white_id": [1], "black_id": [2], "white_score": [1.0]},
            schema_overrides={"game_id": pl.UInt64},
        ),
        "2010-02": pl.DataFrame(
            {"game_id": [2], "white_id": [1], "black_id": [2], "white_score": [1.0]},
            schema_overrides={"game_id": pl.UInt64},
        ),
    }
    january = rate_scenario_month(actual, previous, games.__getitem__, "2010-01")
    # No list on 1 February 2010: ratings unchanged, but January's games are annotated.
    assert row(january.rating_list, 1)["rating"] == 2000 and january.rated_games.height == 1
    february = rate_scenario_month(actual, january.rating_list, games.__getitem__, "2010-02")
    # The list of 1 March 2010 rates January's and February's games together: 2 x 15 x 0.5 = 15.
    assert (row(february.rating_list, 1)["rating"], row(february.rating_list, 1)["games"]) == (2015, 2)
    assert february.rated_games["game_id"].to_list() == [2]
    assert actual.period_months("2008-03") == ["2008-01", "2008-02", "2008-03"]
    assert actual.period_months("2012-08") == ["2012-08"]


def test_historical_schedule_switches_on_the_documented_dates():
    expected = {
        "2008-05": "fide-2008",
        "2009-07": "fide-2009",
        "2012-07": "fide-2012",
        "2014-07": "fide-2014",
        "2017-07": "fide-2017",
        "2022-01": "fide-2022",
        "2024-03": "fide-2024",
        "2025-10": "fide-2025-10",
    }
    for month, name in expected.items():
        assert resolve_rules("fide-historical", month).name == name, month
    assert resolve_rules("fide-historical", "2011-07").k.newcomer == 30
    assert resolve_rules("fide-historical", "2011-06").k.newcomer == 25


# -- scenarios ---------------------------------------------------------------------------------


def test_default_scenarios_and_their_switches():
    scenarios = load_scenarios()
    assert {"actual", "sonas_2017", "sonas_2002", "elo_480"} <= set(scenarios)
    sonas = scenarios["sonas_2017"]
    assert (sonas.rules_for("2017-01").name, sonas.rules_for("2017-02").name) == ("fide-2014", "fide-2024")
    assert [e.after for e in sonas.events] == ["2017-01"]
    assert [e.after for e in scenarios["actual"].events] == ["2024-02"]
    elo = scenarios["elo_480"].rules_for("2016-01")
    assert (elo.expectancy, elo.scale, elo.name) == ("logistic", 480, "fide-2014")


def test_bad_scenario_files_name_the_problem(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n  mine:\n    rules: fide-1850\n")
    with pytest.raises(RulesError, match="unknown rule set 'fide-1850'"):
        load_scenarios(str(path))
    path.write_text("scenarios:\n  Bad Name:\n    rules: fide-2024\n")
    with pytest.raises(RulesError, match="scenario 'Bad Name'"):
        load_scenarios(str(path))
    path.write_text("scenarios:\n  mine:\n    rules: fide-2024\n    events:\n      - {after: 2024-13, compress: {}}\n")
    with pytest.raises(RulesError, match="not a month"):
        load_scenarios(str(path))


@pytest.mark.parametrize("name", sorted(RESERVED_NAMES))
def test_a_scenario_may_not_take_the_name_of_a_folder_or_stage_of_the_stores_own(tmp_path: Path, name: str):
    """Its tables would go among the store's own: `raw` wrote them into the landing zone, `reports` among the pages."""
    path, spelled = tmp_path / "s.yaml", name.replace("_", "-")  # a dash is read as an underscore
    path.write_text(f"scenarios:\n  {spelled}:\n    rules: fide-2024\n")
    with pytest.raises(RulesError, match=re.escape(f"{path}: scenario '{spelled}': ") + f".*'{name}' is one of the"):
        load_scenarios(str(path))
    assert Scenario(name=f"{name}_2", rules="fide-2024").name == f"{name}_2"  # the name alone is taken


def test_the_reserved_names_hold_every_top_folder_and_shared_group_the_pipeline_makes(tmp_path: Path):
    """RESERVED_NAMES against what the pipeline makes beside its scenarios: the top of every asset key (the table's
    folder) and every Dagster group of the definitions, and the constants naming the store's other folders.
    """
    from assets.definitions import build_defs
    from pipeline.analytics.truth import TRUTH_KEY
    from pipeline.ingest.landing import RAW
    from pipeline.ingest.registry import KEPT_HISTORY_FOLDER
    from pipeline.publish.ranked_registry import KEPT_RANKED_FOLDER
    from pipeline.reports.index import REPORTS_PREFIX
    from pipeline.reports.player_card import PLAYER_PAGES
    from pipeline.scenarios.amendments import LISTS_PREFIX

    scenarios = load_scenarios()
    graph = build_defs("2024-01", "2024-02", root=str(tmp_path), scenarios=scenarios).resolve_asset_graph()
    made = {key.path[0] for key in graph.get_all_asset_keys()}
    made |= {graph.get(key).group_name for key in graph.get_all_asset_keys()}
    assert "games" in made and "evaluation" in made and "common_games" in made  # what the test reads is there
    folders = [RAW, KEPT_HISTORY_FOLDER, KEPT_RANKED_FOLDER, REPORTS_PREFIX, PLAYER_PAGES, LISTS_PREFIX, TRUTH_KEY]
    assert (made - set(scenarios)) | {path.split("/")[0] for path in folders} <= RESERVED_NAMES


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        # Checked at 2000-01 and its own switches only, this failed mid-backfill at 2025-10 (exempt-top needs it).
        ("  mine:\n    rules: fide-historical\n    set: {cap_exempt_from: null}\n", "cap_exempt_from"),
        ("  mine: fide-2024\n", "scenario 'mine': expected a mapping"),
        ("  mine:\n    rules: fide-2024\n  mine:\n    rules: fide-2022\n", "found the key 'mine' twice"),
        ("  mine:\n    rules: fide-2024\n    events:\n      - {after: 2024-02, compress: {factor: 7}}\n", "factor"),
        (
            "  mine:\n    rules: fide-2024\n    events:\n      - {after: 2024-02, compress: {threshold: -5}}\n",
            "threshold",
        ),
        (
            "  mine:\n    rules: fide-2024\n    events:\n      - {after: 2024-02, compress: {}}\n"
            "      - {after: 2024-02, compress: {factor: 0.2}}\n",
            "two compress events after 2024-02",
        ),
    ],
)
def test_a_scenario_file_is_refused_at_load_where_it_would_fail_later_or_be_read_silently(
    tmp_path: Path, body: str, problem: str
):
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n" + body)
    with pytest.raises(RulesError, match=problem):
        load_scenarios(str(path))


def test_a_mapping_in_a_scenarios_set_merges_into_the_rule_sets_and_the_switchs_into_it():
    scenario = Scenario(
        name="s",
        rules="fide-historical",
        set={"initial": {"min_games": 9}},
        schedule=({"from": "2024-06", "rules": "fide-2024", "set": {"initial": {"pool_months": 12}}},),
    )
    before, after = scenario.rules_for("2024-05").initial, scenario.rules_for("2024-07").initial
    assert (before.min_games, before.pool_months, before.formula, before.max_rating) == (
        9,
        26,
        "hypothetical-draws",
        2200,
    )
    assert (after.min_games, after.pool_months, after.formula, after.max_rating) == (9, 12, "hypothetical-draws", 2200)


def elite_2300_seed() -> pl.DataFrame:
    """A seed list as the landing zone gives it (no K, no ever_2400): players 1 and 2 at 2350, player 3 at 2290."""
    from pipeline.ingest.registry import registry_table, seed_rows
    from pipeline.scenarios.chain import seeded_list

    seed = seed_rows(
        registry_table(b"player_id,rating,games_total,birth_year\n1,2350,300,1980\n2,2350,300,1980\n3,2290,300,1980\n")
    )
    return seeded_list(seed, "2024-04")


def games_frame(white: list[int], black: list[int], white_score: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"game_id": range(len(white)), "white_id": white, "black_id": black, "white_score": white_score},
        schema_overrides={"game_id": pl.UInt64},
    )


def test_a_scenario_with_elite_from_2300_keeps_k_10_after_a_drop_below_it():
    """Issue 33, through a scenario: `set: {k.elite_from: 2300}`, rated over two months from a seed list."""
    scenario = Scenario(name="elite_2300", rules="fide-2024", set={"k.elite_from": 2300})
    games = {"2024-05": games_frame([1] * 12, [2] * 12, [0.0] * 12), "2024-06": games_frame([1], [3], [1.0])}
    may = rate_scenario_month(scenario, elite_2300_seed(), games.__getitem__, "2024-05").rating_list
    # Player 1: 2350 >= 2300, K 10; 12 losses at D 0: 10 x (0 - 6) = -60 -> 2290; still K 10 on the list.
    assert (row(may, 1)["k_used"], row(may, 1)["rating"], row(may, 1)["k"], row(may, 1)["ever_2400"]) == (
        10,
        2290,
        10,
        True,
    )
    june = rate_scenario_month(scenario, may, games.__getitem__, "2024-06").rating_list
    # Player 1 (K 10) beats player 3 (2290, never 2300: K 20) at D 0: +5 -> 2295 and -10 -> 2280.
    assert (row(june, 1)["k_used"], row(june, 1)["rating"], row(june, 1)["k"]) == (10, 2295, 10)
    assert (row(june, 3)["k_used"], row(june, 3)["rating"]) == (20, 2280)


def test_a_list_carried_through_a_month_without_a_list_is_read_under_the_scenarios_threshold():
    # 2008: quarterly lists, none on 1 June; the seed list states no ever_2400.
    games = {"2008-05": games_frame([1], [2], [1.0])}
    for elite_from, reached in ((2300, [True, True, False]), (2400, [False, False, False])):
        scenario = Scenario(name="q", rules="fide-2008", set={"k.elite_from": elite_from})
        carried = rate_scenario_month(scenario, elite_2300_seed(), games.__getitem__, "2008-05").rating_list
        assert carried["rating"].to_list() == [2350, 2350, 2290]  # no list: unchanged
        assert carried["ever_2400"].to_list() == reached


def test_rules_for_is_resolved_once_per_scenario_and_month(tmp_path: Path):
    scenario = Scenario(name="s", rules="fide-historical", set={"k.elite_from": 2300})
    first = scenario.rules_for("2010-05")
    assert scenario.rules_for("2010-05") is first and first.name == "fide-2009"
    assert Scenario(name="t", rules="fide-historical", set={"k.elite_from": 2300}).rules_for("2010-05") is first
    assert scenario.rules_for("2024-05").name == "fide-2024"
    changed = scenario.model_copy(update={"set": {"k.elite_from": 2350}})
    assert changed.rules_for("2010-05").k.elite_from == 2350 and scenario.rules_for("2010-05").k.elite_from == 2300
    # A rule-set file named by its path is read again on every call: an edit is seen.
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nextends: fide-2024\nk: {elite_from: 2300}\n")
    from_file = Scenario(name="f", rules=str(path))
    assert from_file.rules_for("2024-05").k.elite_from == 2300
    path.write_text("name: mine\nextends: fide-2024\nk: {elite_from: 2350}\n")
    assert from_file.rules_for("2024-05").k.elite_from == 2350


# -- two scenarios side by side in Dagster -------------------------------------------------------


def test_two_scenarios_diverge_exactly_from_the_switch_month(tmp_path: Path):
    from assets.definitions import build_defs
    from pipeline.generator import generate
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    root = str(tmp_path / "store")
    generate(root, seed=3, players=500, start="2016-06", end="2017-06")
    scenarios = {name: s for name, s in load_scenarios().items() if name in ("actual", "sonas_2017")}
    defs = build_defs("2016-06", "2017-06", root=root, scenarios=scenarios)
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        tags={"dagster/asset_partition_range_start": "2016-06", "dagster/asset_partition_range_end": "2017-06"},
    )
    assert result.success
    store = ObjectStore(root)
    months = [f"2016-{m:02d}" for m in range(6, 13)] + [f"2017-{m:02d}" for m in range(1, 7)]
    same = []
    for month in months:
        actual = store.read_parquet(table_key(["actual", "rating_list"], month))
        sonas = store.read_parquet(table_key(["sonas_2017", "rating_list"], month))
        same.append(actual.equals(sonas))
    assert same == [True] * 7 + [False] * 6  # identical through 2016-12, different from 2017-01 on
    january = store.read_parquet(table_key(["sonas_2017", "rating_list"], "2017-01"))
    assert january.filter(pl.col("rating") < 1400).height == 0  # compressed: 1000 -> 1400 at the bottom
    for asset in ("actual/rating_list", "sonas_2017/rating_list", "sonas_2017/crosstable"):
        mats = [
            e
            for e in result.get_asset_materialization_events()
            if e.step_materialization_data.materialization.asset_key.to_user_string() == asset
        ]
        assert len(mats) == 13, asset


@pytest.mark.slow  # 17 years through Dagster: about 80 s (make test-slow)
def test_the_historical_regime_replays_2008_to_2024_in_one_run(tmp_path: Path):
    from assets.definitions import build_defs
    from pipeline.generator import generate
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    root = str(tmp_path / "store")
    generate(root, seed=5, players=1200, start="2008-01", end="2024-12")
    defs = build_defs("2008-01", "2024-12", root=root, scenarios={"actual": load_scenarios()["actual"]})
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        tags={"dagster/asset_partition_range_start": "2008-01", "dagster/asset_partition_range_end": "2024-12"},
    )
    assert result.success
    store = ObjectStore(root)

    def listed(month: str) -> pl.DataFrame:
        return store.read_parquet(table_key(["actual", "rating_list"], month))

    # Quarterly lists in 2008: January and February carry the list; March's list rates all three months.
    assert listed("2008-01")["games"].sum() == listed("2008-02")["games"].sum() == 0
    assert listed("2008-03")["games"].sum() > 0
    # Monthly lists from July 2012; the March 2024 compression leaves nobody rated below 1400.
    assert listed("2012-07")["games"].sum() > 0 and listed("2012-08")["games"].sum() > 0
    assert listed("2024-02").filter(pl.col("rating") < 1400).height == 0
    monthly = {
        "raw_games",
        "games",
        "quarantine",
        "actual/rating_list",
        "actual/rated_games",
        "actual/crosstable",
        "actual/accuracy",
    }
    counts: dict[str, int] = {}
    for event in result.get_asset_materialization_events():
        key = event.step_materialization_data.materialization.asset_key.to_user_string()
        counts[key] = counts.get(key, 0) + 1
    assert {k: counts[k] for k in monthly} == dict.fromkeys(monthly, 204)


def test_docs_rules_md_is_current():
    from pipeline.rules.doc import render

    docs = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert docs.read_text() == render(), "regenerate with: python -m pipeline.rules.doc > docs/rules.md"


def test_a_scenarios_rule_file_is_read_from_the_scenarios_files_folder(tmp_path, monkeypatch):
    """As `extends` and a schedule entry's `rules:`: a run started in another folder, or the UI's code location, reads
    the same file (here a same-named file in the current folder says otherwise, and is not read).
    """
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.yaml").write_text("extends: fide-2024\nname: mine\nfloor: 1500\n")
    (tmp_path / "mine.yaml").write_text("extends: fide-2024\nname: other\nfloor: 1100\n")
    (tmp_path / "sub" / "scenarios.yaml").write_text(
        "scenarios:\n  own:\n    rules: mine.yaml\n  switched:\n    rules: fide-2022\n"
        "    schedule:\n      - {from: '2024-03', rules: mine.yaml}\n"
    )
    monkeypatch.chdir(tmp_path)
    scenarios = load_scenarios("sub/scenarios.yaml")
    assert scenarios["own"].rules_for("2024-05").floor == 1500
    assert scenarios["switched"].rules_for("2024-05").floor == 1500
    assert scenarios["switched"].rules_for("2024-01").name == "fide-2022"
