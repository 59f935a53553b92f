"""Operations: asset checks on every table, the monthly schedule, the landing-zone sensor, the instance, and faults."""

import dataclasses
import datetime as dt
import gzip
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import numpy as np
import polars as pl
import pytest
import yaml

from assets.automation import SCHEDULE_NAME, SENSOR_NAME, build_landing_sensor, build_monthly_schedule
from assets.partitions import monthly_partitions
from assets.storage import ObjectStoreResource
from pipeline.ingest.landing import landing_month, landing_versions
from pipeline.invariants.catalog import (
    FLOOR_RESPECTED,
    LANDING_ZONE_LAYOUT,
    LIST_CONTINUITY,
    NO_DUPLICATE_GAMES,
    NO_DUPLICATE_PLAYERS,
    POINTS_CONSERVED,
    QUARANTINE_SHARE,
    RECONCILIATION,
    SCHEMA,
)
from pipeline.invariants.chain import (
    LIST_COLUMNS,
    RATED_GAMES_COLUMNS,
    SIDE_K_COLUMNS,
    conservation_problems,
    continuity_problems,
    floor_offenders,
    in_id_order,
)
from pipeline.invariants.tables import duplicate_ids, schema_problems
from pipeline.operations import progress
from pipeline.operations.automation import (
    CHANGED_MONTHS_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    changed_months,
    decode_cursor,
    encode_cursor,
    range_tags,
    rerate_start,
)
from pipeline.rules.model import LIST_CLASSES, load_rules, preset_names, resolve_rules, schedule_of
from pipeline.scenarios.chain import with_later_columns
from pipeline.scenarios.model import Scenario
from pipeline.settings import Settings
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.text import markdown_text
from schemas import RatedGames, RatingList
from schemas.util import polars_schema
from tests.conftest import TINY_END, TINY_START
from tests.servers import BUCKET, assert_same_tables, copy_tree, stored_objects, tables

PLAIN = Scenario(name="plain", description="FIDE's regulations, no events", rules="fide-historical")
MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]
INSTANCE_YAML = Path(__file__).resolve().parents[1] / "assets" / "runtime" / "dagster.yaml"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def build(root: str) -> dg.Definitions:
    from assets.definitions import build_defs

    return build_defs(TINY_START, TINY_END, root=root, scenarios={"plain": PLAIN})


def materialize(root: str, first: str = TINY_START, last: str = TINY_END, **kwargs) -> dg.ExecuteInProcessResult:
    defs = build(root)
    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        tags=range_tags(first, last),
        run_config=QUIET,
        **kwargs,
    )


@pytest.fixture(scope="module")
def rated_tiny(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The tiny federation rated 2024-01..2024-04 in one uninterrupted run (read-only: copy before changing)."""
    root = tmp_path_factory.mktemp("rated") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    result = materialize(str(root))
    assert result.success
    return SimpleNamespace(root=str(root), result=result, tables=tables(stored_objects(ObjectStore(str(root)))))


def copy_of(rated_tiny: SimpleNamespace, tmp_path: Path) -> str:
    root = tmp_path / "store"
    shutil.copytree(rated_tiny.root, root)
    return str(root)


def evaluations(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


# -- checks: wiring --------------------------------------------------------------------------------


def test_every_partitioned_table_has_blocking_checks_on_its_own_partitions() -> None:
    defs = build("/nonexistent")
    graph = defs.resolve_asset_graph()
    checks = {}
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        checks.setdefault(key.asset_key.to_user_string(), {})[key.name] = spec
    tables_with_models = [
        spec
        for asset in defs.assets
        if isinstance(asset, dg.AssetsDefinition)
        for spec in asset.specs
        if spec.partitions_def is not None and "parquet" in spec.kinds and "dagster/column_schema" in spec.metadata
    ]
    assert {"raw_games", "games", "quarantine", "plain/rating_list", "plain/rated_games", "plain/crosstable"} <= {
        s.key.to_user_string() for s in tables_with_models
    }
    for spec in tables_with_models:
        name = spec.key.to_user_string()
        assert SCHEMA in checks[name], name
    assert set(checks["plain/rating_list"]) == {SCHEMA, NO_DUPLICATE_PLAYERS, FLOOR_RESPECTED, LIST_CONTINUITY}
    assert set(checks["plain/rated_games"]) == {SCHEMA, NO_DUPLICATE_GAMES, POINTS_CONSERVED}
    assert set(checks["games"]) == {SCHEMA, NO_DUPLICATE_GAMES, RECONCILIATION}
    for per_asset in checks.values():
        for spec in per_asset.values():
            # The layout check only warns: dumps that are in place are rated all the same.
            assert spec.blocking or spec.name in (LANDING_ZONE_LAYOUT, QUARANTINE_SHARE)
            # Pitfall: without the asset's partitions a check evaluates the wrong month.
            assert spec.partitions_def == graph.get(spec.asset_key).partitions_def


def test_every_check_passes_on_a_clean_range_and_reports_what_it_verified(rated_tiny: SimpleNamespace) -> None:
    found = evaluations(rated_tiny.result)
    assert found and all(e.passed for e in found.values()), [k for k, e in found.items() if not e.passed]
    conserved = found[("plain/rated_games", POINTS_CONSERVED)].metadata
    assert conserved["months_checked"].value == 4
    assert conserved["games_equal_k"].value > 0 and conserved["points_exchanged_equal_k"].value > 0
    assert conserved["months_changes_rederived"].value == 4
    assert found[("plain/rating_list", FLOOR_RESPECTED)].metadata["players_checked"].value > 0


# -- checks: each one fails when it should -----------------------------------------------------------


def read(root: str, path: list[str], month: str, columns: list[str] | None = None) -> pl.DataFrame:
    return ObjectStore(root).read_parquet(table_key(path, month), columns=columns)


def test_schema_check_names_the_month_and_the_column(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    root = copy_of(rated_tiny, tmp_path)
    store = ObjectStore(root)
    wrong = read(root, ["plain", "rating_list"], "2024-02").with_columns(pl.col("rating").cast(pl.Float64))
    store.write_parquet(wrong, table_key(["plain", "rating_list"], "2024-02"))
    store.fs.rm(store.path(table_key(["plain", "rating_list"], "2024-04")))
    outcome = schema_problems(store, ["plain", "rating_list"], polars_schema(RatingList), MONTHS)
    assert outcome.problems == ["2024-02: types rating Float64 (want Int32)", "2024-04: not stored"]


def test_duplicates_and_floor_offenders_are_found() -> None:
    frame = pl.DataFrame({"player_id": [1, 2, 2, 3, 3, 3]})
    assert duplicate_ids(frame, "player_id") == [2, 3]
    # Ids in strictly ascending order are unique without hashing; a repeat out of order is still found.
    assert duplicate_ids(pl.DataFrame({"player_id": [1, 2, 5, 9]}), "player_id") == []
    assert duplicate_ids(pl.DataFrame({"player_id": [1, 3, 2, 3]}), "player_id") == [3]
    rating_list = pl.DataFrame(
        {
            "player_id": [1, 2, 3, 4],
            "rating": [1390, 1390, 1395, None],
            "games": [3, 0, 0, 2],
            "newly_rated": [False, False, True, False],
        }
    )
    # Player 2 did not play: a rating below a floor introduced later stays until they do.
    assert floor_offenders(rating_list, load_rules("fide-2024"))["player_id"].to_list() == [1, 3]  # floor 1400
    assert floor_offenders(rating_list, load_rules("elo-32")).height == 0  # no floor


def test_continuity_catches_vanished_players_silent_unrating_and_unexplained_moves(rated_tiny: SimpleNamespace) -> None:
    previous = read(rated_tiny.root, ["plain", "rating_list"], "2024-02", LIST_COLUMNS)
    current = read(rated_tiny.root, ["plain", "rating_list"], "2024-03", LIST_COLUMNS)
    assert continuity_problems(previous, current) == []
    rated = current.filter(pl.col("rating").is_not_null() & pl.col("player_id").is_in(previous["player_id"].implode()))
    a, b, c = rated["player_id"].head(3).to_list()
    assert "missing" in continuity_problems(previous, current.filter(pl.col("player_id") != a))[0]
    unrated = current.with_columns(rating=pl.when(pl.col("player_id") == b).then(None).otherwise(pl.col("rating")))
    assert "without the delisted flag" in " ".join(continuity_problems(previous, unrated))
    moved = current.with_columns(
        rating=pl.when(pl.col("player_id") == c).then(pl.col("rating") + 1).otherwise(pl.col("rating"))
    )
    assert "previous + change" in " ".join(continuity_problems(previous, moved))

    # Lists in id order are joined as sorted (merged), with the same findings; a list out of order is not flagged.
    for variant in (current, current.filter(pl.col("player_id") != a), unrated, moved):
        merged = continuity_problems(in_id_order(previous), in_id_order(variant))
        assert merged == continuity_problems(previous, variant)
    assert in_id_order(current)["player_id"].flags["SORTED_ASC"]
    shuffled = current.sample(fraction=1.0, shuffle=True, seed=3)
    assert not in_id_order(shuffled)["player_id"].flags["SORTED_ASC"]
    assert continuity_problems(in_id_order(previous), in_id_order(shuffled)) == []


def test_list_checks_read_the_store_again_on_every_run(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    """The three list checks share one pass over the months; a later run with the same definitions reads anew."""
    root = copy_of(rated_tiny, tmp_path)
    defs = build(root)
    selection = dg.AssetSelection.checks_for_assets(dg.AssetKey(["plain", "rating_list"]))

    def run_checks() -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
        return evaluations(
            dg.materialize(
                [*defs.assets, *defs.asset_checks],
                resources=defs.resources,
                selection=selection,
                tags=range_tags(TINY_START, TINY_END),
                run_config=QUIET,
                raise_on_error=False,
            )
        )

    assert run_checks()[("plain/rating_list", LIST_CONTINUITY)].passed
    key = table_key(["plain", "rating_list"], "2024-03")
    tampered = read(root, ["plain", "rating_list"], "2024-03")
    first_rated = tampered.filter(pl.col("rating").is_not_null())["player_id"][0]
    tampered = tampered.with_columns(
        rating=pl.when(pl.col("player_id") == first_rated).then(pl.col("rating") + 1).otherwise(pl.col("rating"))
    )
    ObjectStore(root).write_parquet(tampered, key)
    continuity = run_checks()[("plain/rating_list", LIST_CONTINUITY)]
    assert not continuity.passed and "2024-03" in continuity.metadata["problems"].value


def month_with_equal_k(root: str) -> tuple[str, pl.DataFrame, pl.DataFrame]:
    for month in MONTHS:
        games = read(root, ["plain", "rated_games"], month, [*RATED_GAMES_COLUMNS, *SIDE_K_COLUMNS])
        rating_list = read(root, ["plain", "rating_list"], month, LIST_COLUMNS)
        outcome = conservation_problems(games, rating_list, PLAIN.rules_for(month), check_changes=True)
        if outcome.stats["games_equal_k"] > 0:
            return month, games, rating_list
    raise AssertionError("the tiny federation has no month with games between equal-K players")


def test_conservation_holds_on_real_lists_and_fails_on_each_kind_of_tampering(rated_tiny: SimpleNamespace) -> None:
    month, games, rating_list = month_with_equal_k(rated_tiny.root)
    rules = PLAIN.rules_for(month)
    assert conservation_problems(games, rating_list, rules, check_changes=True).passed
    both = games.filter(pl.col("white_expected").is_not_null() & pl.col("black_expected").is_not_null())
    game = both["game_id"][0]
    white = both["white_id"][0]

    # One side's expectation shifted: the game is no longer zero-sum, and that player's change no longer follows.
    skewed = games.with_columns(
        white_expected=pl.when(pl.col("game_id") == game)
        .then(pl.col("white_expected") + 0.05)
        .otherwise(pl.col("white_expected"))
    )
    problems = " ".join(conservation_problems(skewed, rating_list, rules, check_changes=True).problems)
    assert "do not sum to 1" in problems

    # A change one point off, beyond what rounding explains.
    off = rating_list.with_columns(
        change=pl.when(pl.col("player_id") == white).then(pl.col("change") + 1).otherwise(pl.col("change"))
    )
    assert "not sum(K x" in " ".join(conservation_problems(games, off, rules, check_changes=True).problems)

    # A game lost from the per-game table: the list rests on games that are not there.
    lost = games.filter(pl.col("game_id") != game)
    assert "list games differ" in " ".join(conservation_problems(lost, rating_list, rules, check_changes=True).problems)

    # A K in the per-game table that is not the K the change was computed with.
    doubled = {
        f"{side}_k_used": pl.when(pl.col(f"{side}_id") == white)
        .then(pl.col(f"{side}_k_used") * 2)
        .otherwise(pl.col(f"{side}_k_used"))
        for side in ("white", "black")
    }
    assert "not sum(K x" in " ".join(
        conservation_problems(games.with_columns(**doubled), rating_list, rules, True).problems
    )
    # A per-game table stored before it held each side's K: the list's K on it.
    wrong_k = rating_list.with_columns(
        k_used=pl.when(pl.col("player_id") == white).then(pl.col("k_used") * 2).otherwise(pl.col("k_used"))
    )
    old_table = games.drop("white_k_used", "black_k_used")
    # A kept month of an older store read back with the columns added empty (with_later_columns): the same.
    emptied = with_later_columns(old_table.with_columns(month=pl.lit(month)), RatedGames)
    for table in (old_table, emptied):
        assert conservation_problems(table, rating_list, rules, check_changes=True).passed
        assert "not sum(K x" in " ".join(conservation_problems(table, wrong_k, rules, check_changes=True).problems)


def test_conservation_leaves_out_games_the_400_point_rule_treats_one_sidedly() -> None:
    # 2022-2024 rules cap the difference once per event: the capped game differs per player, so a game
    # with a difference above 400 is legitimately not zero-sum; below the cap it must be.
    games = pl.DataFrame(
        {
            "game_id": pl.Series([1, 2], dtype=pl.UInt64),
            "event_id": ["e", "e"],
            "white_id": [10, 10],
            "black_id": [20, 20],
            "white_score": [1.0, 0.5],
            "white_rating_used": pl.Series([2200, 2200], dtype=pl.Int32),
            "black_rating_used": pl.Series([1700, 2100], dtype=pl.Int32),
            "white_expected": [0.92, 0.64],
            "black_expected": [0.04, 0.36],
            "weight": [1.0, 1.0],
        }
    )
    rating_list = pl.DataFrame(
        {
            "player_id": [10, 20],
            "change": [0, 0],
            "k_used": pl.Series([20, 20], dtype=pl.Int16),
            "games": [2, 2],
            "delisted": [False, False],
        }
    )
    once_per_event = resolve_rules("fide-2022", "2023-01")
    every_game = once_per_event.model_copy(update={"cap_mode": "every-game"})
    assert conservation_problems(games, rating_list, once_per_event, check_changes=False).passed
    assert "do not sum to 1" in conservation_problems(games, rating_list, every_game, check_changes=False).problems[0]


def synthetic_month(players: int = 3000, games: int = 4000, seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A list (80 % rated) and a month of random classical pairings in events of 60 games."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1_000_000, 1_000_000 + players, dtype=np.int64)
    ratings = np.clip(rng.normal(1700, 350, players), 1000, 2850).astype(np.int32)
    previous = pl.DataFrame(
        {
            "player_id": ids,
            "rating": ratings,
            "games_total": rng.integers(0, 300, players).astype(np.int32),
            "birth_year": rng.integers(1940, 2015, players).astype(np.int32),
        }
    )
    previous = previous.with_columns(rating=pl.when(pl.Series(rng.random(players) < 0.8)).then(pl.col("rating")))
    white = rng.integers(0, players, games)
    black = (white + rng.integers(1, players, games)) % players
    month = pl.DataFrame(
        {
            "game_id": np.arange(games, dtype=np.uint64),
            "event_id": (np.arange(games) // 60).astype(str),
            "white_id": ids[white],
            "black_id": ids[black],
            "white_score": rng.choice([0.0, 0.5, 1.0], games),
        }
    ).with_columns(time_control=pl.lit("classical"), event_start=pl.lit("2024-05-03").str.to_date())
    return previous, month


@pytest.mark.parametrize("preset", [p for p in preset_names() if schedule_of(p) is None])
def test_the_list_checks_hold_under_every_rule_set(preset: str) -> None:
    from pipeline.engine.period import normalize_list, rate_period

    rules = load_rules(preset)
    previous, games = synthetic_month()
    previous = normalize_list(previous)
    games = games.with_columns(time_control=pl.lit(LIST_CLASSES[rules.list_type]))  # the games the list rates
    for variant in (rules, rules.model_copy(update={"rounding": "per-event", "k_games_cap": 700})):
        result = rate_period(previous, games, variant, "2024-05")
        outcome = conservation_problems(result.rated_games, result.rating_list, variant, check_changes=True)
        assert outcome.passed and outcome.stats["games_equal_k"] > 0, (preset, variant.rounding, outcome.problems)
        assert continuity_problems(previous, result.rating_list) == []
        assert floor_offenders(result.rating_list, variant).height == 0


def test_a_failing_blocking_check_stops_everything_downstream(tiny_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.scenarios.chain as chain

    rate = chain.rate_scenario_month

    def losing_a_player(*args, **kwargs):
        result = rate(*args, **kwargs)
        if args[3] == "2024-02":  # month: the list forgets its first player
            return dataclasses.replace(result, rating_list=result.rating_list.slice(1))
        return result

    monkeypatch.setattr(chain, "rate_scenario_month", losing_a_player)
    result = materialize(tiny_store, "2024-01", "2024-02", raise_on_error=False)
    assert not result.success
    evaluation = evaluations(result)[("plain/rating_list", LIST_CONTINUITY)]
    assert (
        not evaluation.passed
        and markdown_text("2024-02: 1 player(s) of the previous list missing") in evaluation.metadata["problems"].value
    )
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "plain/rating_list" in materialized and "plain/crosstable" not in materialized


# -- schedule --------------------------------------------------------------------------------------


def test_schedule_day_and_hour_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    partitions = monthly_partitions(TINY_START, TINY_END)
    assert build_monthly_schedule("all_months", partitions, {}).cron_schedule == "0 2 1 * *"
    monkeypatch.setenv("RATINGS_SCHEDULE_DAY", "4")
    monkeypatch.setenv("RATINGS_SCHEDULE_HOUR", "6")
    schedule = build_monthly_schedule("all_months", partitions, {})
    assert schedule.cron_schedule == "0 6 4 * *" and schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    monkeypatch.setenv("RATINGS_AUTOMATION", "on")
    assert build_monthly_schedule("all_months", partitions, {}).default_status == dg.DefaultScheduleStatus.RUNNING
    monkeypatch.setenv("RATINGS_SCHEDULE_DAY", "31")  # not every month has it
    with pytest.raises(ValueError, match="RATINGS_SCHEDULE_DAY='31': expected a whole number from 1 to 28"):
        build_monthly_schedule("all_months", partitions, {})


def test_schedule_and_sensor_take_the_settings_they_are_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATINGS_SCHEDULE_DAY", "31")  # given settings: the environment is not read
    partitions = monthly_partitions(TINY_START, TINY_END)
    settings = Settings(
        schedule_day=5, schedule_hour=7, schedule_timezone="Europe/Berlin", sensor_interval_seconds=60, automation="on"
    )
    schedule = build_monthly_schedule("all_months", partitions, {}, settings)
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 7 5 * *", "Europe/Berlin")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    sensor = build_landing_sensor("all_months", partitions, {}, settings)
    assert sensor.minimum_interval_seconds == 60 and sensor.default_status == dg.DefaultSensorStatus.RUNNING
    stopped = build_landing_sensor("all_months", partitions, {}, Settings())
    assert stopped.minimum_interval_seconds == 300 and stopped.default_status == dg.DefaultSensorStatus.STOPPED


def tick(defs: dg.Definitions, root: str, when: dt.datetime) -> list[dg.RunRequest] | str:
    context = dg.build_schedule_context(
        scheduled_execution_time=when, resources={"store": ObjectStoreResource(root=root)}
    )
    data = defs.resolve_schedule_def(SCHEDULE_NAME).evaluate_tick(context)
    return data.run_requests or data.skip_message


def test_schedule_rates_the_month_just_closed_and_catches_up_a_gap(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    root = copy_of(rated_tiny, tmp_path)
    defs = build(root)
    [request] = tick(defs, root, dt.datetime(2024, 4, 1, 2, tzinfo=dt.UTC))
    assert request.tags[RANGE_START_TAG] == request.tags[RANGE_END_TAG] == "2024-03"
    assert request.run_key == "monthly-2024-03"
    # March's list was never written (a failed run): April's tick re-rates from March.
    ObjectStore(root).fs.rm(ObjectStore(root).path(table_key(["plain", "rating_list"], "2024-03")))
    [request] = tick(defs, root, dt.datetime(2024, 5, 1, 2, tzinfo=dt.UTC))
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == ("2024-03", "2024-04")
    assert "not a partition" in tick(defs, root, dt.datetime(2024, 7, 1, 2, tzinfo=dt.UTC))


@pytest.mark.parametrize(
    "zone, local_tick, closed",
    [
        ("Europe/Moscow", dt.datetime(2024, 4, 1, 2), "2024-03"),  # UTC+3: 23:00 UTC on the 31st
        ("Europe/Athens", dt.datetime(2024, 4, 1, 2), "2024-03"),  # summer time, UTC+3
        ("Europe/Athens", dt.datetime(2024, 3, 1, 2), "2024-02"),  # winter time, UTC+2: midnight UTC
        ("Pacific/Kiritimati", dt.datetime(2024, 4, 1, 2), "2024-03"),  # UTC+14: noon UTC on the 31st
        ("America/New_York", dt.datetime(2024, 4, 1, 2), "2024-03"),  # west of UTC, summer time
        ("America/Los_Angeles", dt.datetime(2024, 3, 1, 23), "2024-02"),  # 07:00 UTC on the 2nd
        ("UTC", dt.datetime(2024, 4, 1, 0), "2024-03"),
    ],
)
def test_the_schedule_rates_the_month_just_closed_in_its_own_time_zone(
    rated_tiny: SimpleNamespace, zone: str, local_tick: dt.datetime, closed: str
) -> None:
    from zoneinfo import ZoneInfo

    schedule = build_monthly_schedule(
        "all_months", monthly_partitions(TINY_START, None), {"plain": PLAIN}, Settings(schedule_timezone=zone)
    )
    when = local_tick.replace(tzinfo=ZoneInfo(zone))
    # The daemon passes the tick in the schedule's zone; the same instant in UTC is read the same.
    for instant in (when, when.astimezone(dt.UTC)):
        context = dg.build_schedule_context(
            scheduled_execution_time=instant, resources={"store": ObjectStoreResource(root=rated_tiny.root)}
        )
        data = schedule.evaluate_tick(context)
        assert [r.run_key for r in data.run_requests or []] == [f"monthly-{closed}"], data.skip_message


def test_the_schedule_skips_the_month_just_closed_while_it_holds_no_dump(
    rated_tiny: SimpleNamespace, tmp_path: Path
) -> None:
    root = copy_of(rated_tiny, tmp_path)
    for folder in Path(root, "raw").glob("*/2024-04"):  # the dumps arrive after the schedule's day
        shutil.rmtree(folder)
    skipped = tick(build(root), root, dt.datetime(2024, 5, 1, 2, tzinfo=dt.UTC))
    assert isinstance(skipped, str) and skipped.startswith("2024-04 holds no dumps yet: no file under raw/")
    [request] = tick(build(root), root, dt.datetime(2024, 4, 1, 2, tzinfo=dt.UTC))
    assert request.run_key == "monthly-2024-03"


# -- sensor ----------------------------------------------------------------------------------------


def landing_fingerprints(store: ObjectStore, first_month: str, last_month: str) -> dict[str, str]:
    return landing_versions(store).rerate_fingerprints(first_month, last_month)


def test_fingerprints_see_new_replaced_and_removed_files_and_registry_changes(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path / "store"))
    store.write_text("a", "raw/GER/2024-02/a.csv")
    store.write_text("p", "raw/players/2023-12/players.csv")  # before the first month: affects the first
    store.write_text("x", "raw/GER/2023-11/old.csv")  # dumps before the first month are never read
    store.write_text("n", "raw/GER/2024-06/early.csv")  # after the last month: not yet
    first = landing_fingerprints(store, "2024-01", "2024-04")
    assert sorted(first) == ["2024-01", "2024-02"]
    assert landing_month("raw/players/2024-03/players.csv", "2024-01") == "2024-03"
    assert landing_month("raw/GER/README.md", "2024-01") is None

    store.write_text("a2", "raw/GER/2024-02/a.csv")  # replaced (size changes too)
    store.write_text("b", "raw/NOR/2024-03/b.csv")  # new federation, new month
    store.write_text("p2", "raw/players/2023-12/players.csv")  # registry correction
    second = landing_fingerprints(store, "2024-01", "2024-04")
    assert changed_months(first, second) == ["2024-01", "2024-02", "2024-03"]
    store.fs.rm(store.path("raw/NOR/2024-03/b.csv"))  # removed
    assert changed_months(second, landing_fingerprints(store, "2024-01", "2024-04")) == ["2024-03"]
    assert decode_cursor(encode_cursor(second)) == second and decode_cursor("not json") is None


def test_rerate_start_covers_gaps_before_the_change() -> None:
    assert rerate_start([], ["2024-01", "2024-02"], first_tick=True) == "2024-01"
    assert rerate_start(["2024-03"], [], first_tick=True) is None  # first tick trusts existing lists
    assert rerate_start(["2024-03", "2024-04"], [], first_tick=False) == "2024-03"
    assert rerate_start(["2024-03"], ["2024-02"], first_tick=False) == "2024-02"
    assert rerate_start([], ["2024-02"], first_tick=False) is None


def sense(defs: dg.Definitions, root: str, cursor: str | None = None):
    context = dg.build_sensor_context(cursor=cursor, resources={"store": ObjectStoreResource(root=root)})
    return defs.resolve_sensor_def(SENSOR_NAME).evaluate_tick(context)


def test_first_tick_rates_months_without_lists_then_waits_for_changes(
    tiny_store: str, rated_tiny: SimpleNamespace
) -> None:
    fresh = sense(build(tiny_store), tiny_store)
    [request] = fresh.run_requests
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == (TINY_START, TINY_END)
    done = sense(build(rated_tiny.root), rated_tiny.root)
    assert not done.run_requests and "every list exists" in done.skip_message
    again = sense(build(rated_tiny.root), rated_tiny.root, cursor=done.cursor)
    assert not again.run_requests and again.skip_message == "no month has changed" and again.cursor == done.cursor


def late_dump(rated: list[int]) -> str:
    """A tournament the federation forgot to upload: classical games between rated players, as CSV."""
    header = (
        "event_id,event_start,date,round,white_id,black_id,result,time_control,"
        "tc_base_seconds,tc_increment_seconds,white_rating,black_rating\n"
    )
    pairs = zip(rated[0:12:2], rated[1:12:2], strict=True)
    rows = [
        f"late-open,2024-02-20,2024-02-20,{n},{white},{black},1-0,classical,5400,30,,\n"
        for n, (white, black) in enumerate(pairs, 1)
    ]
    return header + "".join(rows)


def test_a_late_correction_rerates_that_month_and_later_ones_like_a_full_recompute(
    rated_tiny: SimpleNamespace, tmp_path: Path
) -> None:
    root = copy_of(rated_tiny, tmp_path / "live")
    store = ObjectStore(root)
    defs = build(root)
    cursor = sense(defs, root).cursor
    january = {
        key: os.stat(store.path(key)).st_mtime_ns
        for key in store.list_files()
        if key.endswith("/2024-01.parquet") and not key.startswith("raw/")
    }

    january_list = read(root, ["plain", "rating_list"], "2024-01")
    store.write_text(
        late_dump(january_list.filter(pl.col("rating").is_not_null())["player_id"].to_list()),
        "raw/NOR/2024-02/late-open.csv",
    )
    sensed = sense(defs, root, cursor)
    [request] = sensed.run_requests
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == ("2024-02", TINY_END)
    assert request.tags[CHANGED_MONTHS_TAG] == "2024-02"
    assert defs.resolve_job_def("all_months").execute_in_process(tags=request.tags, run_config=QUIET).success
    assert not sense(defs, root, sensed.cursor).run_requests  # handled: nothing more to do

    after = tables(stored_objects(store))
    # January is untouched, file for file; February's list changed with the corrected result.
    assert {key: os.stat(store.path(key)).st_mtime_ns for key in january} == january
    assert all(after[key] == rated_tiny.tables[key] for key in january if key in after)
    assert after["plain/rating_list/2024-02.parquet"] != rated_tiny.tables["plain/rating_list/2024-02.parquet"]
    # And every month equals a recompute of the whole chain from the corrected landing zone.
    full = tmp_path / "full"
    shutil.copytree(Path(root) / "raw", full / "raw")
    assert materialize(str(full)).success
    assert_same_tables(tables(stored_objects(ObjectStore(str(full)))), after)


def test_a_correction_undone_then_made_again_is_requested_again(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    root = copy_of(rated_tiny, tmp_path)
    defs = build(root)
    dump = Path(root, "raw/NOR/2024-02/games.csv")
    original, corrected = tmp_path / "O.csv", tmp_path / "C.csv"
    cursor = sense(defs, root).cursor
    shutil.copy2(dump, original)
    corrected.write_text(dump.read_text().replace("1-0", "0-1", 1))
    keys = []
    for version in (corrected, original, corrected):  # the copies keep their mtimes: each state's fingerprint
        shutil.copy2(version, dump)
        sensed = sense(defs, root, cursor)
        [request] = sensed.run_requests
        keys.append(request.run_key)
        cursor = sensed.cursor
    # Dagster drops a request whose key it has seen: the third had the first's key, and C was never rated.
    assert len(set(keys)) == 3, keys


def test_a_month_closed_after_the_partitions_were_loaded_is_named(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    root = copy_of(rated_tiny, tmp_path)
    defs = build(root)  # partitions 2024-01..2024-04, fixed when the definitions load
    cursor = sense(defs, root).cursor
    shutil.copytree(Path(root, "raw/NOR/2024-04"), Path(root, "raw/NOR/2024-05"))
    later = sense(defs, root, cursor)
    assert not later.run_requests and later.skip_message == (
        "no month has changed; 2024-05 holds dumps but is not a partition (the last is 2024-04): reload the code "
        "location or set RATINGS_AUTOMATION=on (with RATINGS_LAST_MONTH unset or later)"
    )


def test_dumps_landing_before_their_month_closes_wait_for_it(rated_tiny: SimpleNamespace, tmp_path: Path) -> None:
    root = copy_of(rated_tiny, tmp_path)
    defs = build(root)
    cursor = sense(defs, root).cursor
    ObjectStore(root).write_text("event_id,white_id\n", "raw/GER/2024-05/early.csv")
    later = sense(defs, root, cursor)
    assert not later.run_requests and "2024-05" not in decode_cursor(later.cursor)


# -- faults ----------------------------------------------------------------------------------------


def test_object_store_stopped_mid_backfill_then_the_rerun_matches_an_uninterrupted_run(
    restartable_s3, rated_tiny: SimpleNamespace, tiny_landing_zone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # fail fast once the store is gone (the default retries ~10 s)
    root = f"s3://{BUCKET}/fault"
    store = ObjectStore(root)
    copy_tree(tiny_landing_zone, store, "raw")

    def stop_the_store_during_march(stage: str, month: str, done: int, total: int) -> None:
        # Lists are written in a thread while the next month is rated, one month behind at most:
        # once March is rated, January's list is written and February's is being written.
        if stage == "rate plain" and month == "2024-03":
            restartable_s3.kill()

    previous = progress.install(stop_the_store_during_march)
    try:
        interrupted = materialize(root, raise_on_error=False)
    finally:
        progress.install(previous)
    assert not interrupted.success
    restartable_s3.start()  # same data directory, same ports

    written = tables(stored_objects(store))
    assert "plain/rating_list/2024-01.parquet" in written and "plain/rating_list/2024-03.parquet" not in written
    for key, data in written.items():  # whatever was written is whole: no half-written object
        assert pl.read_parquet(data).height >= 0, key

    assert materialize(root).success
    assert_same_tables(rated_tiny.tables, tables(stored_objects(store)))


def test_corrupted_and_truncated_dumps_are_quarantined_and_the_run_continues(tiny_store: str) -> None:
    store = ObjectStore(tiny_store)
    csv = store.read_bytes("raw/NOR/2024-02/games.csv")
    store.write_bytes(gzip.compress(csv)[: len(csv) // 3], "raw/NOR/2024-02/late-upload.csv.gz")  # truncated gzip
    store.write_bytes(os.urandom(2048), "raw/ENG/2024-02/corrupt.pgn")  # binary garbage
    trf = next(k for k in store.list_files("raw", "GER", "2024-02") if k.endswith(".trf"))
    text = store.read_bytes(trf)
    store.write_bytes(text[: int(len(text) * 0.6)], trf)  # cut in the middle of a line

    result = materialize(tiny_store, "2024-01", "2024-02")
    assert result.success
    quarantine = read(tiny_store, ["quarantine"], "2024-02")
    bad_files = set(quarantine["source_file"].unique().to_list())
    assert {"NOR/2024-02/late-upload.csv.gz", "ENG/2024-02/corrupt.pgn"} <= bad_files
    assert evaluations(result)[("games", RECONCILIATION)].passed
    assert read(tiny_store, ["plain", "rating_list"], "2024-02").height > 0


# -- instance --------------------------------------------------------------------------------------


def postgres_block() -> dict:
    """The commented PostgreSQL storage block of assets/runtime/dagster.yaml, uncommented."""
    text = INSTANCE_YAML.read_text()
    block = text.split("# >>> postgres\n", 1)[1].split("# <<< postgres", 1)[0]
    return yaml.safe_load("\n".join(line.removeprefix("# ") for line in block.splitlines()))


def test_the_instance_template_is_valid_with_telemetry_off_and_secrets_only_from_the_environment(
    tmp_path: Path,
) -> None:
    settings = yaml.safe_load(INSTANCE_YAML.read_text())
    assert settings["telemetry"] == {"enabled": False}
    assert "storage" not in settings  # SQLite under $DAGSTER_HOME by default, connections kept open
    shutil.copyfile(INSTANCE_YAML, tmp_path / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    assert type(instance.run_storage).__name__ == "PooledSqliteRunStorage"
    assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
    assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
    database = postgres_block()["storage"]["postgres"]["postgres_db"]
    secrets = {name: value for name, value in database.items() if name != "scheme"}
    assert all(isinstance(value, dict) and set(value) == {"env"} for value in secrets.values())


def test_a_postgres_backed_instance_records_a_month_range_end_to_end(
    postgres_server, tiny_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import urlsplit

    import psycopg2

    url = urlsplit(postgres_server.url)
    for name, value in {
        "DAGSTER_PG_HOST": url.hostname,
        "DAGSTER_PG_PORT": str(url.port),
        "DAGSTER_PG_USER": url.username,
        "DAGSTER_PG_PASSWORD": "unused-with-trust-auth",
        "DAGSTER_PG_DB": url.path.lstrip("/"),
    }.items():
        monkeypatch.setenv(name, value)
    settings = {**yaml.safe_load(INSTANCE_YAML.read_text()), **postgres_block()}
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(settings))
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        result = materialize(tiny_store, "2024-01", "2024-02", instance=instance)
        assert result.success
        records = instance.fetch_materializations(dg.AssetKey(["plain", "rating_list"]), limit=10).records
        assert sorted(r.partition_key for r in records) == ["2024-01", "2024-02"]
        assert all(e.passed for e in result.get_asset_check_evaluations())
    finally:
        instance.dispose()
    with psycopg2.connect(postgres_server.url) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM runs WHERE run_id = %s", (result.run_id,))
        assert cursor.fetchone()[0] == 1  # the run lives in PostgreSQL, not in a SQLite file


def test_a_ledger_channel_computed_wrong_fails_the_balance_check_and_stops_what_follows(
    tiny_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.scenarios.chain as chain

    ledger_of = chain.points_ledger

    def returning_miscounted(*args, **kwargs):
        ledger, flows = ledger_of(*args, **kwargs)
        if args[4] == "2024-02":  # month: five points too many for the players who came back
            ledger = ledger.with_columns(returning=ledger["returning"] + 5)
        return ledger, flows

    monkeypatch.setattr(chain, "points_ledger", returning_miscounted)
    result = materialize(tiny_store, "2024-01", "2024-02", raise_on_error=False)
    assert not result.success
    evaluation = evaluations(result)[("plain/points_ledger", "ledger_balance")]
    assert (
        not evaluation.passed and "2024-02: -5 rating points not accounted for" in evaluation.metadata["problems"].value
    )
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "plain/points_ledger" in materialized and "plain/crosstable" not in materialized
