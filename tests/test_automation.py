"""What the sensor and the landing_zone asset see of the landing zone, and the sensor's cursor (no Dagster run)."""

from pathlib import Path

import pytest

from pipeline.ingest.landing import DIGEST_LENGTH, LandingVersions, inventory, landing_versions
from pipeline.operations.automation import (
    CHANGED_MONTHS_TAG,
    CURSOR_VERSION,
    RANGE_END_TAG,
    RANGE_START_TAG,
    TRIGGER_TAG,
    UNRATED_MONTHS_TAG,
    RunRequestPlan,
    decode_cursor,
    encode_cursor,
    list_paths,
    range_tags,
    requests_made,
    rerate_start,
    scheduled_run,
    sensor_run,
    sensor_tick,
    short_months,
    unpartitioned_months,
    unrated_months,
)
from pipeline.settings import Settings, SettingsError
from pipeline.store.object_store import ObjectStore


def landing(tmp_path: Path) -> ObjectStore:
    store = ObjectStore(str(tmp_path / "store"))
    store.write_text("a", "raw/GER/2024-01/a.trf")
    store.write_text("b", "raw/GER/2024-02/b.trf")
    store.write_text("p", "raw/players/2024-02/players.csv")
    store.write_text("m", "raw/GER/2024-3/misplaced.trf")  # quarantined in 2024-03: the month's version sees it
    return store


def test_one_inventory_gives_the_ui_versions_without_the_registry_and_the_sensor_fingerprints_with_it(
    tmp_path: Path,
) -> None:
    store = landing(tmp_path)
    before = landing_versions(store)
    assert sorted(before.dumps) == ["2024-01", "2024-02", "2024-03"] and sorted(before.registry) == ["2024-02"]
    assert landing_versions(store, inventory(store)) == before  # an inventory already listed gives the same
    assert all(len(digest) == DIGEST_LENGTH for digest in [*before.dumps.values(), *before.registry.values()])

    store.write_text("p2", "raw/players/2024-02/players.csv")  # a registry correction
    after = landing_versions(store)
    assert after.dumps == before.dumps  # the UI marks no month's raw_games stale
    changed = {
        m
        for m, d in after.rerate_fingerprints("2024-01", "2024-04").items()
        if before.rerate_fingerprints("2024-01", "2024-04").get(m) != d
    }
    assert changed == {"2024-02"}  # the sensor re-rates from the registry's month (and so every later one)


def test_registry_folders_before_the_first_month_count_in_the_first_and_late_months_wait(tmp_path: Path) -> None:
    store = landing(tmp_path)
    store.write_text("old", "raw/players/2023-06/players.csv")
    store.write_text("x", "raw/GER/2023-11/old.trf")
    store.write_text("n", "raw/GER/2024-06/early.trf")
    versions = landing_versions(store)
    fingerprints = versions.rerate_fingerprints("2024-01", "2024-04")
    assert sorted(fingerprints) == ["2024-01", "2024-02", "2024-03"]
    store.write_text("old2", "raw/players/2023-06/players.csv")
    again = landing_versions(store).rerate_fingerprints("2024-01", "2024-04")
    assert [m for m in fingerprints if fingerprints[m] != again[m]] == ["2024-01"]


def test_a_cursor_of_the_previous_version_reads_as_a_first_tick() -> None:
    old = '{"version":1,"months":{"2024-01":"0123456789abcdef0123"}}'
    assert decode_cursor(old) is None  # -> rerate_start(..., first_tick=True): only months without a list
    assert rerate_start(["2024-01"], [], first_tick=decode_cursor(old) is None) is None
    current = encode_cursor({"2024-02": "b", "2024-01": "a"}, 3)
    assert current == f'{{"version":{CURSOR_VERSION},"months":{{"2024-01":"a","2024-02":"b"}},"requested":3}}'
    assert requests_made(current) == 3 and requests_made(None) == 0 and requests_made(old) == 0
    assert requests_made("not json") == requests_made('{"requested":-1}') == requests_made('{"requested":true}') == 0
    assert decode_cursor(current) == {"2024-01": "a", "2024-02": "b"}
    assert decode_cursor('{"version":2,"months":[]}') is None and decode_cursor("") is None


def test_unrated_months_takes_plain_table_paths(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    store.write_text("x", "actual/rating_list/2024-01.parquet")
    store.write_text("x", "actual/rating_list/2024-02.parquet")
    store.write_text("x", "elo/rating_list/2024-01.parquet")
    months = ["2024-01", "2024-02", "2024-03"]
    assert unrated_months(store, ["actual/rating_list"], months) == ["2024-03"]
    assert unrated_months(store, ["actual/rating_list", "elo/rating_list"], months) == ["2024-02", "2024-03"]


# -- what the schedule and the sensor request ------------------------------------------------------


def test_range_tags_and_short_month_lists() -> None:
    assert range_tags("2024-01", "2024-03") == {RANGE_START_TAG: "2024-01", RANGE_END_TAG: "2024-03"}
    assert short_months(["2024-01", "2024-02"]) == "2024-01,2024-02"
    many = [f"{2020 + i // 12}-{i % 12 + 1:02d}" for i in range(14)]
    assert short_months(many) == ",".join(many[:12]) + ",... (14 months)"
    assert short_months([]) == ""


def test_list_paths_are_each_scenarios_rating_list() -> None:
    from pipeline.scenarios.model import Scenario

    scenarios = {name: Scenario(name=name, description=name, rules="fide-2014") for name in ("actual", "elo-k32")}
    assert list_paths(scenarios) == ["actual/rating_list", "elo_k32/rating_list"]


def test_the_schedule_rates_the_month_just_closed_from_the_earliest_gap_before_it() -> None:
    months = ["2024-01", "2024-02", "2024-03"]

    def never() -> list[str]:
        raise AssertionError("a month outside the partitions needs no listing of the store")

    assert scheduled_run("2024-04", months, never) == "2024-04 is not a partition (2024-01..2024-03)"
    assert scheduled_run("2024-04", [], never) == "2024-04 is not a partition (-..-)"
    plan = scheduled_run("2024-03", months, lambda: [])
    assert plan == RunRequestPlan("monthly-2024-03", {**range_tags("2024-03", "2024-03"), TRIGGER_TAG: "schedule"})
    # February never got its list (a failed run): the run starts there; a gap after the month is not its business.
    plan = scheduled_run("2024-03", months + ["2024-04"], lambda: ["2024-02", "2024-04"])
    assert isinstance(plan, RunRequestPlan) and plan.run_key == "monthly-2024-03"
    assert (plan.tags[RANGE_START_TAG], plan.tags[RANGE_END_TAG]) == ("2024-02", "2024-03")


def test_the_schedule_skips_a_month_that_holds_no_dump_yet_naming_it() -> None:
    months = ["2024-01", "2024-02", "2024-03"]
    skipped = scheduled_run("2024-03", months, lambda: [], held=lambda: ["2024-01", "2024-02"])
    assert isinstance(skipped, str) and skipped.startswith("2024-03 holds no dumps yet: no file under raw/")
    plan = scheduled_run("2024-03", months, lambda: [], held=lambda: months)
    assert isinstance(plan, RunRequestPlan) and plan.run_key == "monthly-2024-03"


def test_the_sensor_rerates_from_the_earliest_change_and_says_why_when_it_does_not() -> None:
    before = {"2024-01": "a", "2024-02": "b", "2024-03": "c"}
    assert sensor_run(None, before, [], "2024-03") == "fingerprinted 3 month(s); every list exists"
    assert sensor_run(before, before, [], "2024-03") == "no month has changed"
    # First tick: only the months without a list, whatever the fingerprints.
    first = sensor_run(None, before, ["2024-03"], "2024-03")
    assert isinstance(first, RunRequestPlan) and first.tags[RANGE_START_TAG] == "2024-03"
    # Nothing changed on a first tick: the months it rates are tagged and logged as unrated, not as changed.
    assert first.tags[UNRATED_MONTHS_TAG] == "2024-03" and CHANGED_MONTHS_TAG not in first.tags
    assert first.note == "rating 2024-03..2024-03: first evaluation, unrated months 2024-03"
    after = {**before, "2024-02": "B"}
    plan = sensor_run(before, after, [], "2024-03")
    assert isinstance(plan, RunRequestPlan)
    assert plan.tags == {
        RANGE_START_TAG: "2024-02",
        RANGE_END_TAG: "2024-03",
        TRIGGER_TAG: "landing_zone",
        CHANGED_MONTHS_TAG: "2024-02",
    }
    assert plan.note == "re-rating 2024-02..2024-03: changed months 2024-02"
    # The key names the range and counts the requests: a tick evaluated again before its cursor was saved asks
    # under the same key (Dagster requests it once), another change under another one.
    assert plan.run_key.startswith("rerate-2024-02-2024-03-1-") and plan == sensor_run(before, after, [], "2024-03")
    other = sensor_run(before, {**before, "2024-02": "C"}, [], "2024-03")
    assert isinstance(other, RunRequestPlan) and other.run_key != plan.run_key
    # A gap before the change: the run starts at the gap.
    gap = sensor_run(before, after, ["2024-01"], "2024-03")
    assert isinstance(gap, RunRequestPlan) and gap.tags[RANGE_START_TAG] == "2024-01"


def test_a_correction_undone_then_made_again_is_requested_each_time() -> None:
    original, corrected = {"2024-01": "a", "2024-02": "O"}, {"2024-01": "a", "2024-02": "C"}
    cursor = encode_cursor(original)
    keys = []
    for state in (corrected, original, corrected):  # correct, restore, correct again
        plan = sensor_run(decode_cursor(cursor), state, [], "2024-02", requests_made(cursor))
        assert isinstance(plan, RunRequestPlan)
        keys.append(plan.run_key)
        cursor = encode_cursor(state, requests_made(cursor) + 1)
    assert len(set(keys)) == 3, keys  # the third was the first's key: Dagster dropped it and C was never rated


def test_closed_months_after_the_last_partition_are_named_and_the_month_in_progress_is_not() -> None:
    held = ["2024-01", "2024-04", "2024-05", "2024-06"]
    assert unpartitioned_months(held, "2024-04", "2024-06") == (
        "2024-05 holds dumps but is not a partition (the last is 2024-04): reload the code location or set "
        "RATINGS_AUTOMATION=on (with RATINGS_LAST_MONTH unset or later)"
    )
    assert unpartitioned_months(held, "2024-03", "2024-07").startswith("2024-04,2024-05,2024-06 hold dumps but are")
    assert unpartitioned_months(held, "2024-05", "2024-06") == ""  # June is in progress: its dumps landed early


def test_months_before_the_first_partition_are_named_as_never_rated_by_the_sensor() -> None:
    """A stray 2019-01 folder before the stored lists' first month 2023-01 (the first partition: assets.definitions)
    is left out of the partitions; the sensor's tick names it, and does not say it will be rated later.
    """
    held = ["2019-01", "2023-01", "2023-02", "2023-03"]
    early, late = unpartitioned_months(held, "2023-02", "2023-06", "2023-01").split("; ")
    assert early == (
        "2019-01 holds dumps but is before the first partition 2023-01, where the chains start from the seed list: not "
        "rated. A stray or mistyped month folder? Move it. To start the chains at 2019-01 on purpose, set "
        "RATINGS_FIRST_MONTH=2019-01 (every stored list is then rated again from the seed list)"
    )
    assert late.startswith("2023-03 holds dumps but is not a partition (the last is 2023-02)")
    assert unpartitioned_months(held[1:], "2023-03", "2023-06", "2023-01") == ""
    versions = LandingVersions(dumps=dict.fromkeys(held[:3], "d"), registry={})
    months = ["2023-01", "2023-02"]
    every_list = sensor_tick(None, versions, [], months, "2023-06")
    assert every_list.run is None and every_list.skip_reason.startswith("fingerprinted 2 month(s); every list exists; ")
    assert "2019-01 holds dumps but is before the first partition 2023-01" in every_list.skip_reason
    assert "reload" not in every_list.skip_reason and "later" not in every_list.skip_reason
    # A month without a list is rated from itself, never from the stray month; the stray month is named beside it.
    unrated = sensor_tick(None, versions, ["2023-02"], months, "2023-06")
    assert unrated.run is not None and unrated.run.tags[RANGE_START_TAG] == "2023-02"
    assert unrated.unseen.startswith("2019-01 holds dumps but is before the first partition 2023-01")


def test_months_before_a_first_month_set_on_purpose_are_not_named_by_the_sensor() -> None:
    """RATINGS_FIRST_MONTH=2023-01 set to leave 2019-01 out: every tick named it as a stray folder to move."""
    held = ["2019-01", "2023-01", "2023-02", "2023-03"]
    versions = LandingVersions(dumps=dict.fromkeys(held, "d"), registry={})
    months = ["2023-01", "2023-02"]
    every_list = sensor_tick(None, versions, [], months, "2023-06", first_month_set=True)
    assert every_list.run is None and "2019-01" not in every_list.skip_reason
    assert every_list.skip_reason.startswith("fingerprinted 2 month(s); every list exists; 2023-03 holds dumps")
    unrated = sensor_tick(None, versions, ["2023-02"], months, "2023-06", first_month_set=True)
    assert unrated.run is not None and unrated.unseen.startswith("2023-03 holds dumps but is not a partition")
    assert "2019-01" not in unrated.unseen


# -- the settings they run by ----------------------------------------------------------------------


def test_automation_settings_come_from_the_environment_with_their_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.schedule_day, settings.schedule_hour, settings.schedule_timezone) == (1, 2, "UTC")
    assert (settings.sensor_interval_seconds, settings.automation) == (300, "off")
    settings = Settings.from_env(
        {
            "RATINGS_SCHEDULE_DAY": " 4 ",
            "RATINGS_SCHEDULE_HOUR": "06",
            "RATINGS_SCHEDULE_TIMEZONE": "Europe/Berlin",
            "RATINGS_SENSOR_INTERVAL_SECONDS": "30",
            "RATINGS_AUTOMATION": " On ",
            "RATINGS_STORE": "",  # empty is unset
        }
    )
    assert (settings.schedule_day, settings.schedule_hour, settings.schedule_timezone) == (4, 6, "Europe/Berlin")
    assert (settings.sensor_interval_seconds, settings.automation, settings.store) == (30, "on", "./data")


@pytest.mark.parametrize(
    "variable, value, allowed",
    [
        ("RATINGS_SCHEDULE_DAY", "31", "from 1 to 28"),  # not every month has it
        ("RATINGS_SCHEDULE_DAY", "0", "from 1 to 28"),
        ("RATINGS_SCHEDULE_DAY", "2.5", "from 1 to 28"),
        ("RATINGS_SCHEDULE_HOUR", "24", "from 0 to 23"),
        ("RATINGS_SCHEDULE_HOUR", "-1", "from 0 to 23"),
        ("RATINGS_SENSOR_INTERVAL_SECONDS", "10", "from 30 to 86400"),
        ("RATINGS_SENSOR_INTERVAL_SECONDS", "five", "from 30 to 86400"),
    ],
)
def test_a_bad_automation_setting_names_the_variable_the_value_and_the_range(
    variable: str, value: str, allowed: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({variable: value})
    assert str(refused.value) == f"bad setting: {variable}={value!r}: expected a whole number {allowed}"


@pytest.mark.parametrize("value", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "Europe", "zone.tab", "utc+3"])
def test_a_bad_schedule_time_zone_names_the_variable(value: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"RATINGS_SCHEDULE_TIMEZONE": value})
    assert str(refused.value) == (
        f"bad setting: RATINGS_SCHEDULE_TIMEZONE={value!r}: not a time zone (IANA name such as Europe/Berlin)"
    )


@pytest.mark.parametrize("value", ["UTC", "Europe/Moscow", "America/Argentina/Buenos_Aires", "Etc/GMT+3"])
def test_iana_time_zones_are_accepted(value: str) -> None:
    assert Settings.from_env({"RATINGS_SCHEDULE_TIMEZONE": value}).schedule_timezone == value


def test_a_last_month_before_the_first_names_the_variable_and_where_the_first_came_from() -> None:
    with pytest.raises(
        SettingsError,
        match=r"^bad setting: RATINGS_LAST_MONTH='2022-12': before the first month "
        r"2023-01 \(the landing zone's first month\)$",
    ):
        Settings.from_env({"RATINGS_LAST_MONTH": "2022-12"}).months_for(["2023-01", "2023-02"])
    with pytest.raises(SettingsError, match=r"before the first month 2023-06 \(RATINGS_FIRST_MONTH\)$"):
        Settings.from_env({"RATINGS_LAST_MONTH": "2023-02", "RATINGS_FIRST_MONTH": "2023-06"}).months_for([])
    assert Settings.from_env({"RATINGS_LAST_MONTH": "2023-01"}).months_for(["2023-01"]) == ("2023-01", "2023-01")


def test_the_partitions_hold_only_months_that_have_ended() -> None:
    """A landing zone holding only the month in progress made partitions with no month, and the UI's definitions
    failed to load (an AssertionError in the chain checks); a first month in progress was taken too.
    """
    settings = Settings.from_env({})
    assert settings.months_for(["2026-11"], current="2026-11") == ("2026-10", None)
    assert settings.months_for(["2026-09", "2026-11"], current="2026-11") == ("2026-09", "2026-09")
    with pytest.raises(SettingsError, match="a month is rated once it has ended, and 2026-11 has not"):
        Settings.from_env({"RATINGS_FIRST_MONTH": "2026-11"}).months_for([], current="2026-11")
