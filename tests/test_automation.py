"""What the sensor and the landing_zone asset see of the landing zone, and the sensor's cursor (no Dagster run)."""

from pathlib import Path

from pipeline.automation import CURSOR_VERSION, decode_cursor, encode_cursor, rerate_start, unrated_months
from pipeline.landing import DIGEST_LENGTH, inventory, landing_versions
from pipeline.storage import ObjectStore


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
    current = encode_cursor({"2024-02": "b", "2024-01": "a"})
    assert current == f'{{"version":{CURSOR_VERSION},"months":{{"2024-01":"a","2024-02":"b"}}}}'
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
