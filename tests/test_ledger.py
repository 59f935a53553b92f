"""The pool's points ledger (issue 37, part 1).

Every channel on a month built by hand, and months the engine rates balancing to the point.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.engine.period import compress, normalize_list, rate_period
from pipeline.rules.model import load_rules
from pipeline.scenarios.corrections import with_corrections
from pipeline.scenarios.ledger import points_ledger
from schemas import PointsFlow, PointsLedger
from schemas.rated_games import RatedGames
from schemas.util import empty_frame

#: The K policy of the rule set these months are rated under (fide-2024), whose newcomers the flows group.
FIDE_K = load_rules("fide-2024").k


def listed(rows: list[tuple], **more: list) -> pl.DataFrame:
    """A full list from (player_id, rating, inactive) rows and further columns."""
    ids, ratings, inactive = (list(column) for column in zip(*rows, strict=True))
    return normalize_list(pl.DataFrame({"player_id": ids, "rating": ratings, "inactive": inactive, **more}))


def test_each_channel_on_a_month_built_by_hand():
    # 1 plays (+7), 2 stays without games, 3 becomes inactive, 4 (inactive) returns and plays (-3), 5 is new (1500),
    # 6 falls below the floor after a game (-20 from 1410), 7 is seeded at 1600 and plays (+2), 8 gets a correction
    # (+4) and no game; the month's compression lifts 2 by 10.
    previous = listed(
        [(1, 2000, False), (2, 1900, False), (3, 1800, False), (4, 1700, True), (5, None, False), (6, 1410, False)]
        + [(7, None, False), (8, 2100, False)]
    )
    after_games = listed(
        [(1, 2007, False), (2, 1900, False), (3, 1800, True), (4, 1697, False), (5, 1500, False), (6, None, False)]
        + [(7, 1602, False), (8, 2100, False)],
        change=[7, 0, 0, -3, None, -20, 2, 0],
        newly_rated=[False, False, False, False, True, False, False, False],
        delisted=[False, False, False, False, False, True, False, False],
    )
    current = after_games.with_columns(
        rating=pl.Series([2007, 1910, 1800, 1697, 1500, None, 1602, 2104], dtype=pl.Int32),
        correction=pl.Series([None] * 7 + [4], dtype=pl.Int32),
    )
    ledger, flows = points_ledger(previous, after_games, current, empty_frame(RatedGames), "2024-03", FIDE_K, True)
    PointsLedger.validate(ledger)
    PointsFlow.validate(flows)
    row = ledger.row(0, named=True)
    before = 2000 + 1900 + 1800 + 1410 + 2100
    after = 2007 + 1910 + 1697 + 1500 + 1602 + 2104
    assert (row["pool_before"], row["pool_after"], row["pool_change"]) == (before, after, after - before)
    assert (row["players_before"], row["players_after"]) == (5, 6)
    expected = {
        "games_change": 7 - 3 - 20 + 2,
        "corrections": 4,
        "one_time_events": 10,
        "newcomers": 1500,
        "seeded": 1600,
        "returning": 1700,
        "became_inactive": 1800,
        "delisted": 1410 - 20,
        "left_the_list": 0,
        "unexplained": 0,
    }
    assert {key: row[key] for key in expected} == expected
    # A correction that takes a player below the floor leaves with them: still no point unexplained.
    corrected_out = current.with_columns(
        correction=pl.when(pl.col("player_id") == 6).then(-5).otherwise(pl.col("correction")).cast(pl.Int32)
    )
    out = points_ledger(previous, after_games, corrected_out, empty_frame(RatedGames), "2024-03", FIDE_K, True)[0]
    assert (out["corrections"][0], out["delisted"][0], out["unexplained"][0]) == (-1, 1410 - 20 - 5, 0)
    # A point the channels do not account for shows as unexplained: here the month's event, said not to be there.
    assert (
        points_ledger(previous, after_games, current, empty_frame(RatedGames), "2024-03", FIDE_K)[0]["unexplained"][0]
        == 10
    )
    tampered = current.with_columns(rating=pl.when(pl.col("player_id") == 2).then(1911).otherwise(pl.col("rating")))
    assert (
        points_ledger(previous, after_games, tampered, empty_frame(RatedGames), "2024-03", FIDE_K)[0]["unexplained"][0]
        == 11
    )


def test_a_correction_that_takes_a_player_below_the_floor_delists_them_and_the_ledger_counts_it():
    # The list that carries a correction (recalculation forward) puts the corrected rating through the floor as a game
    # would (corrections.with_corrections): 2 falls under 1400 by -60 without a game, 3 holds a rating an earlier floor
    # allowed (a rapid or blitz list of 2024) and +50 leaves it under, 4 plays and is corrected (+8) above it. The list
    # after the games delisted nobody: the ledger counted 2 and 3 leaving in no channel (ledger_balance failed on the
    # seeded rapid and blitz lists by the sum of their ratings).
    rules = load_rules("fide-2024")
    rows = [(1, 2000, False), (2, 1450, False), (3, 1100, False), (4, 1500, False)]
    previous = listed(rows, games_total=[50] * 4)
    after_games = listed(
        [(1, 2004, False), (2, 1450, False), (3, 1100, False), (4, 1496, False)],
        games_total=[55, 50, 50, 55],
        change=[4, 0, 0, -4],
        newly_rated=[False] * 4,
        delisted=[False] * 4,
    )
    points = pl.DataFrame(
        {"player_id": [2, 3, 4], "correction": [-60, 50, 8]}, schema={"player_id": pl.Int64, "correction": pl.Int32}
    )
    current, not_applied = with_corrections(after_games, previous, points, rules, "2024-05")
    assert not_applied.is_empty() and current["delisted"].to_list() == [False, True, True, False]
    row = points_ledger(previous, after_games, current, empty_frame(RatedGames), "2024-05", rules.k)[0].row(
        0, named=True
    )
    assert row["pool_change"] == (2004 + 1504) - (2000 + 1450 + 1100 + 1500)
    assert (row["corrections"], row["delisted"]) == (-60 + 50 + 8, (1450 - 60) + (1100 + 50))
    assert (row["players_after"], row["unexplained"]) == (2, 0)


def engine_month(month: str, rules_name: str, compression: bool = False):
    """A month the engine rates: 60 rated players (a few inactive), 20 unrated, 300 games in 5 events."""
    import numpy as np

    rng = np.random.default_rng(7)
    ids = np.arange(1, 81)
    ratings = [int(r) if i < 60 else None for i, r in enumerate(rng.normal(1900, 250, 80).clip(1450, 2700))]
    previous = normalize_list(
        pl.DataFrame(
            {
                "player_id": ids,
                "rating": ratings,
                "inactive": [i % 17 == 0 and i < 60 for i in range(80)],
                "games_total": [int(g) if i < 60 else 0 for i, g in enumerate(rng.integers(0, 80, 80))],
                "birth_year": rng.integers(1950, 2012, 80),
            }
        )
    )
    white = rng.integers(1, 81, 300)
    black = (white + rng.integers(1, 80, 300) - 1) % 80 + 1
    games = pl.DataFrame(
        {
            "game_id": np.arange(300, dtype=np.uint64),
            "event_id": [f"e{i % 5}" for i in range(300)],
            "white_id": white,
            "black_id": black,
            "white_score": rng.choice([0.0, 0.5, 1.0], 300),
        }
    )
    rules = load_rules(rules_name)
    result = rate_period(previous, games, rules, month)
    after_games = result.rating_list
    current = compress(after_games) if compression else after_games
    return previous, after_games, current, result.rated_games


@pytest.mark.parametrize(
    ("rules", "compression"), [("fide-2024", False), ("fide-2024", True), ("fide-2009", False), ("fide-2022", False)]
)
def test_months_the_engine_rates_balance_and_the_flows_add_up_to_the_games(rules: str, compression: bool):
    previous, after_games, current, period_games = engine_month("2024-03", rules, compression)
    ledger, flows = points_ledger(
        previous, after_games, current, period_games, "2024-03", load_rules(rules).k, compression
    )
    row = ledger.row(0, named=True)
    assert row["unexplained"] == 0
    assert row["games_change"] != 0 and row["newcomers"] + row["returning"] > 0
    assert (row["one_time_events"] > 0) == compression
    # The flows of each grouping add up to the games' points before rounding, and these plus rounding to the change.
    for grouping in ("kind", "band"):
        assert flows.filter(pl.col("grouping") == grouping)["points"].sum() == pytest.approx(row["games_not_zero_sum"])
    assert row["games_not_zero_sum"] + row["games_rounding"] == pytest.approx(row["games_change"])
    # Each counting side's points, recomputed from the per-game table and the list's K: the flows' sides and sum.
    sides = pl.concat(
        [
            period_games.select(
                pl.col("white_id").alias("player_id"), "white_score", "white_expected", "weight"
            ).rename({"white_score": "score", "white_expected": "expected"}),
            period_games.select(
                pl.col("black_id").alias("player_id"),
                (1 - pl.col("white_score")).alias("score"),
                "black_expected",
                "weight",
            ).rename({"black_expected": "expected"}),
        ]
    ).filter(pl.col("expected").is_not_null() & (pl.col("weight") > 0))
    points = sides.join(current.select("player_id", "k_used"), on="player_id").select(
        (pl.col("k_used") * pl.col("weight") * (pl.col("score") - pl.col("expected"))).sum()
    )
    assert points.item() == pytest.approx(row["games_not_zero_sum"])
    assert flows.filter(pl.col("grouping") == "kind")["sides"].sum() == sides.height


def test_the_balance_check_names_a_broken_channel_flows_that_do_not_add_up_and_a_broken_chain(tmp_path):
    from pipeline.invariants.ledger import ledger_problems
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    months = ["2024-02", "2024-03"]
    previous, after_games, current, period_games = engine_month("2024-03", "fide-2024")
    ended = None
    for month in months:  # the same figures twice, the second month's pool moved to start where the first ended
        ledger, flows = points_ledger(previous, after_games, current, period_games, month, FIDE_K)
        if ended is not None:
            shift = ended - ledger["pool_before"][0]
            ledger = ledger.with_columns(pl.col("pool_before") + shift, pl.col("pool_after") + shift)
        ended = ledger["pool_after"][0]
        store.write_parquet(ledger, table_key(["s", "points_ledger"], month))
        store.write_parquet(flows, table_key(["s", "points_flow"], month))

    def problems() -> list[str]:
        return ledger_problems(store, months, "s").problems

    def rewrite(table: str, month: str, change: pl.Expr) -> None:
        key = table_key(["s", table], month)
        store.write_parquet(store.read_parquet(key).with_columns(change), key)

    assert problems() == []
    rewrite("points_ledger", "2024-02", pl.col("newcomers") + 3)  # a channel computed wrong, unexplained left at 0
    rewrite("points_flow", "2024-03", pl.col("points") * 1.01)
    rewrite("points_ledger", "2024-03", pl.col("pool_before") + 1)
    found = problems()
    assert found[0].startswith("2024-02: -3 rating points not accounted for")
    assert sum(p.startswith("2024-03: the flows by") for p in found) == 2  # both groupings
    assert any(p.startswith("2024-03: the pool starts at") for p in found)
    store.remove(table_key(["s", "points_flow"], "2024-02"))
    assert "2024-02: no points ledger stored for the month" in problems()


def test_the_chains_first_month_is_not_held_to_a_ledger_left_from_an_earlier_first_month(tmp_path):
    """A chain whose first month moved later (its first month's dumps removed) starts from the seed list: the ledger
    stored for the month before is an earlier chain's, and its pool is no start the first month must meet.
    """
    from pipeline.invariants.ledger import ledger_problems
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    ledger, flows = points_ledger(*engine_month("2024-03", "fide-2024"), "2024-03", FIDE_K)
    for month, shift in (("2024-02", 10_304), ("2024-03", 0)):
        moved = ledger.with_columns(pl.col("pool_before") + shift, pl.col("pool_after") + shift)
        store.write_parquet(moved, table_key(["s", "points_ledger"], month))
        store.write_parquet(flows, table_key(["s", "points_flow"], month))
    assert ledger_problems(store, ["2024-03"], "s").problems == [
        f"2024-03: the pool starts at {ledger['pool_before'][0]:,} points, the month before ended at "
        f"{ledger['pool_after'][0] + 10_304:,}"
    ]
    assert ledger_problems(store, ["2024-03"], "s", first_month="2024-03").problems == []
    # A later month of the chain is still held to the one before it.
    assert ledger_problems(store, ["2024-03"], "s", first_month="2024-02").problems != []
    # The run's check knows the chain's first month: its partitions' first.
    import dagster as dg

    from assets.checks import _chain_checks
    from pipeline.invariants.catalog import LEDGER_BALANCE
    from pipeline.scenarios.model import Scenario

    keys = [dg.AssetKey(["s", table]) for table in ("rating_list", "rated_games")]
    for first, passed in (("2024-03", True), ("2024-02", False)):
        partitions = dg.StaticPartitionsDefinition(sorted({first, "2024-03"}))
        checks = _chain_checks(Scenario(name="s", rules="fide-2024"), *keys, partitions)
        (check,) = [c for c in checks if c.spec.name == LEDGER_BALANCE]
        assert check.evaluate(store, ["2024-03"]).passed is passed


def test_the_balance_check_holds_each_flow_matrix_to_the_games_channel(tmp_path):
    from pipeline.invariants.ledger import ledger_problems
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    ledger, flows = points_ledger(*engine_month("2024-03", "fide-2024"), "2024-03", FIDE_K)
    ledger_key, flows_key = table_key(["s", "points_ledger"], "2024-03"), table_key(["s", "points_flow"], "2024-03")
    store.write_parquet(ledger, ledger_key)
    store.write_parquet(flows, flows_key)
    assert ledger["games_rounding"][0] != 0 and ledger_problems(store, ["2024-03"], "s").problems == []
    # The rounding moved: the flows no longer add up to the games channel, whatever the other channels say.
    store.write_parquet(ledger.with_columns(pl.col("games_rounding") + 2), ledger_key)
    found = ledger_problems(store, ["2024-03"], "s").problems
    assert len(found) == 2 and all("the games channel to" in problem for problem in found)
    # A grouping not stored adds up to nothing: a month with games and no band flows fails.
    store.write_parquet(ledger, ledger_key)
    store.write_parquet(flows.filter(pl.col("grouping") == "kind"), flows_key)
    games_points = ledger["games_not_zero_sum"][0]
    assert ledger_problems(store, ["2024-03"], "s").problems == [
        f"2024-03: the flows by band add up to 0.000 points, the games' points to {games_points:,.3f}"
    ]


def test_a_list_that_lost_a_player_after_its_games_shows_it_and_is_not_refused():
    previous, after_games, current, period_games = engine_month("2024-03", "fide-2024")
    in_pool = previous.filter(pl.col("rating").is_not_null() & ~pl.col("inactive"))
    lost, rating = in_pool.row(0)[:2]
    ledger, _ = points_ledger(
        previous, after_games, current.filter(pl.col("player_id") != lost), period_games, "2024-03", FIDE_K
    )
    # The player leaves the pool with the rating of the list before; what their games moved leaves with them.
    assert ledger["left_the_list"][0] == rating and ledger["unexplained"][0] == 0


# -- the groups: one rule, its NumPy twin, the threshold of the rule set in force -----------------------------------


def _player_states() -> pl.DataFrame:
    """Every combination of the columns a player's group depends on, missing values included."""
    rows = [
        {"rating": r, "games_total": g, "birth_year": b}
        for r in (None, 1500, 2450)
        for g in (None, 0, 19, 20, 29, 30, 31, 300)
        for b in (None, 1950, 2003, 2004, 2005, 2020)
    ]
    return pl.DataFrame(rows, schema={"rating": pl.Int32, "games_total": pl.Int32, "birth_year": pl.Int32})


@pytest.mark.parametrize("newcomer_until_games", [30, 20, 0])
def test_the_groups_numpy_twin_equals_the_rule_on_every_player_state(newcomer_until_games: int):
    import numpy as np

    from pipeline.scenarios.ledger import KINDS, _player_kind_numpy, player_kind

    policy = load_rules("fide-2024", [f"k.newcomer_until_games={newcomer_until_games}"]).k
    states = _player_states()

    def values(name: str) -> tuple[np.ndarray, np.ndarray]:
        return states[name].fill_null(0).to_numpy(), states[name].is_not_null().to_numpy()

    (_, rated), (games, games_known), (birth, birth_known) = (
        values(c) for c in ("rating", "games_total", "birth_year")
    )
    for year in (2023, 2024):
        twin = _player_kind_numpy(policy, year, rated, games, games_known, birth, birth_known)
        rule = states.select(player_kind(policy, year)).to_series()
        assert [KINDS[kind] for kind in twin] == rule.to_list()
    assert rule.n_unique() == (4 if newcomer_until_games else 3)  # with no newcomer K, nobody is a newcomer


def test_the_flows_newcomers_are_those_of_the_rule_set_the_period_is_rated_under():
    previous, after_games, current, period_games = engine_month("2024-03", "fide-2024")
    newcomers = {}
    for until in (0, 30, 80):
        policy = load_rules("fide-2024", [f"k.newcomer_until_games={until}"]).k
        flows = points_ledger(previous, after_games, current, period_games, "2024-03", policy)[1]
        kinds = flows.filter(pl.col("grouping") == "kind")
        newcomers[until] = kinds.filter(pl.col("group") == "newcomer")["sides"].sum()
        assert kinds["points"].sum() == pytest.approx(flows.filter(pl.col("grouping") == "band")["points"].sum())
    assert newcomers[0] == 0 < newcomers[30] < newcomers[80]


def test_a_scenarios_k_policy_is_its_rule_sets_in_the_month_and_fides_default_for_a_system():
    from pipeline.scenarios.model import SYSTEM_K_POLICY, Scenario

    scenario = Scenario(name="s", rules="fide-2024", set={"k.newcomer_until_games": 20})
    assert scenario.k_policy("2024-03") == scenario.rules_for("2024-03").k
    assert scenario.k_policy("2024-03").newcomer_until_games == 20
    assert Scenario(name="g", system="glicko2").k_policy("2024-03") is SYSTEM_K_POLICY


@pytest.mark.parametrize("lost_one", [False, True])
def test_the_flows_group_each_player_of_the_list_before_once_and_each_side_as_the_rule_does(
    monkeypatch: pytest.MonkeyPatch, lost_one: bool
):
    import pipeline.scenarios.ledger as ledger_module
    from pipeline.scenarios.ledger import BAND_WIDTH, player_kind

    previous, after_games, current, period_games = engine_month("2024-03", "fide-2024")
    if lost_one:  # a player the list lost: as an opponent, unrated (absent from the list the sides are read on)
        lost = previous.filter(pl.col("rating").is_not_null())["player_id"][0]
        after_games, current = (frame.filter(pl.col("player_id") != lost) for frame in (after_games, current))
    groups = previous.select(
        "player_id",
        kind=player_kind(FIDE_K, 2024),
        band=pl.when(pl.col("rating").is_null())
        .then(pl.lit("unrated"))
        .otherwise(
            pl.format(
                "{}-{}",
                pl.col("rating") // BAND_WIDTH * BAND_WIDTH,
                pl.col("rating") // BAND_WIDTH * BAND_WIDTH + BAND_WIDTH - 1,
            )
        ),
    ).join(current.select("player_id"), on="player_id", how="semi")
    sides = pl.concat(
        [
            period_games.select(
                player="white_id",
                opponent="black_id",
                k="white_k_used",
                score="white_score",
                expected="white_expected",
                weight="weight",
            ),
            period_games.select(
                player="black_id",
                opponent="white_id",
                k="black_k_used",
                score=1 - pl.col("white_score"),
                expected="black_expected",
                weight="weight",
            ),
        ]
    ).filter(
        pl.col("expected").is_not_null()
        & (pl.col("weight") > 0)
        & pl.col("player").is_in(current["player_id"].implode())
    )
    sides = sides.with_columns(points=pl.col("k") * pl.col("weight") * (pl.col("score") - pl.col("expected")))
    made: list[int] = []
    twin = ledger_module._player_kind_numpy
    monkeypatch.setattr(ledger_module, "_player_kind_numpy", lambda *args: made.append(len(args[2])) or twin(*args))
    for grouping in ("kind", "band"):
        named = groups.select("player_id", group=grouping)
        expected = (
            sides.join(named, left_on="player", right_on="player_id", how="left")
            .join(named.rename({"group": "opponent_group"}), left_on="opponent", right_on="player_id", how="left")
            .with_columns(pl.col("group", "opponent_group").fill_null("unrated"))
            .group_by("group", "opponent_group")
            .agg(sides=pl.len().cast(pl.Int64), points=pl.col("points").sum())
            .sort("group", "opponent_group")
        )
        made.clear()
        flows = points_ledger(previous, after_games, current, period_games, "2024-03", FIDE_K)[1]
        # Each player of the list before grouped once, not each side's player and opponent.
        assert made == [previous.height]
        flows = flows.filter(pl.col("grouping") == grouping)
        assert flows.select("group", "opponent_group", "sides").equals(
            expected.select("group", "opponent_group", "sides")
        )
        assert flows["points"].to_list() == pytest.approx(expected["points"].to_list())
