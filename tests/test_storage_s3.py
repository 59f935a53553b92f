"""The object store on a local directory and on a real S3 server (SeaweedFS on 127.0.0.1).

Same code path, atomic writes, identical bytes.
"""

import os
import threading
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import s3fs
from polars.testing import assert_frame_equal

from assets.automation import range_tags
from assets.storage import ObjectStoreResource
from pipeline.store.monthly import months_stored, stored_table_months
from pipeline.store.object_store import ObjectStore, polars_s3_options, store_root_from_env
from tests.conftest import TINY_END, TINY_START
from tests.servers import (
    BUCKET,
    FAKE_KEY_ID,
    FAKE_SECRET,
    CountingProxy,
    assert_same_tables,
    copy_tree,
    s3_environment,
    stored_objects,
    tables,
)

PLAIN_SCENARIO = {"name": "plain", "description": "FIDE's regulations", "rules": "fide-historical"}
RANGE_TAGS = range_tags(TINY_START, TINY_END)
TWO_YEARS = [f"{year}-{month:02d}" for year in (2023, 2024) for month in range(1, 13)]


@pytest.fixture(params=["local", "s3"])
def any_root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The same tests on a local directory and on s3://chess/<unique prefix>."""
    if request.param == "local":
        root = str(tmp_path / "store")
        monkeypatch.setenv("RATINGS_STORE", root)
        return root
    return request.getfixturevalue("s3_root")


def sample_frame(rows: int = 1000) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "player_id": pl.int_range(1, rows + 1, eager=True).cast(pl.Int64),
            "rating": (pl.int_range(0, rows, eager=True) % 1200 + 1400).cast(pl.Int32),
            "month": ["2024-03"] * rows,
        }
    )


# -- one code path ---------------------------------------------------------------------------------


def test_the_same_operations_behave_the_same_locally_and_on_s3(any_root: str) -> None:
    store = ObjectStore(any_root)
    assert store.is_s3 == any_root.startswith("s3://") and store.is_local != store.is_s3
    frame = sample_frame()
    store.write_parquet(frame, "plain/rating_list/2024-03.parquet")
    store.write_text("hello", "raw/GER/2024-03/notes.txt")

    assert_frame_equal(store.read_parquet("plain/rating_list/2024-03.parquet"), frame)
    assert_frame_equal(
        store.read_parquet("plain/rating_list/2024-03.parquet", columns=["rating"]), frame.select("rating")
    )
    assert store.parquet_schema("plain/rating_list/2024-03.parquet") == dict(frame.schema)
    assert store.parquet_rows("plain/rating_list/2024-03.parquet") == frame.height
    assert store.parquet_footer("plain/rating_list/2024-03.parquet").get("ratings/code_version") is None
    store.write_parquet(frame.head(3), "plain/rating_list/2024-04.parquet", footer={"ratings/code_version": "v1"})
    assert store.parquet_footer("plain/rating_list/2024-04.parquet")["ratings/code_version"] == "v1"
    both = store.read_parquets(["plain/rating_list/2024-04.parquet", "plain/rating_list/2024-03.parquet"])
    assert_frame_equal(both[0], frame.head(3))
    assert_frame_equal(both[1], frame)
    assert stored_table_months(store, ["plain", "rating_list"]) == ["2024-03", "2024-04"]
    assert months_stored(store, ["plain", "rating_list"], ["2024-05", "2024-04", "2024-03"]) == ["2024-04", "2024-03"]
    store.remove("plain/rating_list/2024-04.parquet")
    assert store.read_bytes("raw/GER/2024-03/notes.txt") == b"hello"
    assert store.exists("raw/GER/2024-03/notes.txt") and not store.exists("raw/GER/2024-04/notes.txt")
    assert store.list_files() == ["plain/rating_list/2024-03.parquet", "raw/GER/2024-03/notes.txt"]
    assert store.list_dirs("raw") == ["GER"] and store.list_dirs("raw", "GER") == ["2024-03"]
    stamps = store.list_stamps("raw")
    assert list(stamps) == ["raw/GER/2024-03/notes.txt"] and stamps["raw/GER/2024-03/notes.txt"].startswith("5 ")
    expected_url = (
        f"{any_root}/raw/GER/2024-03/notes.txt"
        if store.is_s3
        else os.path.join(any_root, "raw", "GER", "2024-03", "notes.txt")
    )
    assert store.url("raw/GER/2024-03/notes.txt") == expected_url


def test_the_store_is_configured_by_environment(s3_root: str, s3_server) -> None:
    # RATINGS_STORE picks the root; AWS_ENDPOINT_URL reaches both s3fs and Polars' native client.
    assert store_root_from_env() == s3_root
    assert ObjectStoreResource().store().root == s3_root
    assert polars_s3_options()["aws_endpoint_url"] == s3_server.endpoint
    store = ObjectStore()
    store.write_parquet(sample_frame(3), "t.parquet")
    native = pl.read_parquet(f"{s3_root}/t.parquet", storage_options=polars_s3_options())
    assert native.height == 3 and store.fs.exists(f"{BUCKET}/{s3_root.split('/', 3)[3]}/t.parquet")


def test_credentials_in_a_shared_credentials_file_reach_polars_too(
    s3_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in ~/.aws/credentials alone (no AWS_ACCESS_KEY_ID): s3fs found them, and Polars' reads failed, as an
    unknown storage option turned off its own credential chain.
    """
    ObjectStore(s3_root).write_parquet(sample_frame(3), "t.parquet")
    (tmp_path / "aws-credentials").write_text(
        f"[default]\naws_access_key_id = {FAKE_KEY_ID}\naws_secret_access_key = {FAKE_SECRET}\n"
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s3fs.S3FileSystem.clear_instance_cache()
    store = ObjectStore(s3_root)
    assert store.read_parquet("t.parquet").height == 3
    assert store.scan_parquet("t.parquet").select(pl.len()).collect().item() == 3


def test_folder_markers_are_no_files(s3_root: str) -> None:
    """The empty 'folder/' objects S3 consoles and sync tools make are neither listed nor read as dumps."""
    store = ObjectStore(s3_root)
    store.write_text("white_id,black_id,result\n1,2,1-0\n", "raw/GER/2024-01/g.csv")
    for marker in ("raw/", "raw/GER/", "raw/GER/2024-01/", "raw/players/2024-01/"):
        store.fs.pipe_file(store.path(marker) + "/", b"")
    assert store.list_files("raw") == ["raw/GER/2024-01/g.csv"]
    assert list(store.list_stamps("raw")) == ["raw/GER/2024-01/g.csv"]


def test_a_replaced_object_changes_its_stamp_and_listings_are_never_stale(s3_root: str) -> None:
    store = ObjectStore(s3_root)
    store.write_text("v1", "raw/GER/2024-01/a.csv")
    before = store.list_stamps("raw")
    # Another writer (the federation's upload) adds and replaces files behind the store's back.
    other = ObjectStore(s3_root)
    other.fs.pipe_file(other.path("raw/GER/2024-01/b.csv"), b"new")
    other.fs.pipe_file(other.path("raw/GER/2024-01/a.csv"), b"v2")
    after = store.list_stamps("raw")
    assert sorted(after) == ["raw/GER/2024-01/a.csv", "raw/GER/2024-01/b.csv"]
    assert after["raw/GER/2024-01/a.csv"] != before["raw/GER/2024-01/a.csv"]


# -- atomic writes ---------------------------------------------------------------------------------


def test_a_reader_never_sees_a_half_written_object(any_root: str) -> None:
    store = ObjectStore(any_root)
    versions = [os.urandom(3 << 20), os.urandom(5 << 20)]  # several MB: a partial write would show
    store.write_bytes(versions[0], "big.bin")
    stop, seen, errors = threading.Event(), [], []

    def read_continuously() -> None:
        while not stop.is_set():
            try:
                seen.append(store.read_bytes("big.bin"))
            except Exception as exc:  # noqa: BLE001 - any read error is a finding
                errors.append(exc)

    reader = threading.Thread(target=read_continuously)
    reader.start()
    try:
        for i in range(8):
            store.write_bytes(versions[i % 2], "big.bin")
    finally:
        stop.set()
        reader.join()
    assert not errors and seen
    assert all(data == versions[0] or data == versions[1] for data in seen)


def test_a_failed_local_write_leaves_the_old_file_and_no_debris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ObjectStore(str(tmp_path / "store"))
    store.write_bytes(b"old", "t/2024-01.parquet")

    def crash(*_args) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        store.write_bytes(b"new", "t/2024-01.parquet")
    assert store.read_bytes("t/2024-01.parquet") == b"old"
    assert [p.name for p in (tmp_path / "store" / "t").iterdir()] == ["2024-01.parquet"]


def test_credentials_in_the_root_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(ValueError) as refused:
        ObjectStore("s3://AKIAXXXX:VerySecret123@bucket/prefix")
    assert "VerySecret123" not in str(refused.value) and "AKIAXXXX" not in str(refused.value)
    assert "AWS_ACCESS_KEY_ID" in str(refused.value)


# -- round trips -----------------------------------------------------------------------------------


def test_s3_round_trips_per_operation(s3_server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What each store operation costs on S3, counted at the wire (s3fs and Polars' own client alike)."""
    proxy = CountingProxy(s3_server.port)
    try:
        s3_environment(monkeypatch, proxy.endpoint, tmp_path)
        store = ObjectStore(f"s3://{BUCKET}/round-trips-{os.getpid()}")
        key = "plain/rating_list/2024-03.parquet"
        measured = {}
        for name, operation in [
            ("write_parquet", lambda: store.write_parquet(sample_frame(50_000), key)),
            ("read_parquet", lambda: store.read_parquet(key)),
            ("read_parquet 1 column", lambda: store.read_parquet(key, columns=["rating"])),
            ("parquet_schema", lambda: store.parquet_schema(key)),
            ("parquet_rows", lambda: store.parquet_rows(key)),
            ("exists (present)", lambda: store.exists(key)),
            ("list_stamps", lambda: store.list_stamps("plain")),
            ("months_stored, 24 months", lambda: months_stored(store, ["plain", "rating_list"], TWO_YEARS)),
        ]:
            proxy.reset()
            operation()
            measured[name] = proxy.reset()
    finally:
        proxy.close()
    print({name: dict(counts) for name, counts in measured.items()})
    assert measured["write_parquet"] == {"PUT": 1}  # one atomic PUT, nothing else
    assert sum(measured["read_parquet"].values()) <= 2 and set(measured["read_parquet"]) == {"GET"}
    assert measured["parquet_schema"] == {"GET": 1}  # the footer only
    assert sum(measured["parquet_rows"].values()) <= 2
    assert measured["exists (present)"] == {"HEAD": 1}
    assert measured["list_stamps"] == {"GET": 1}  # one LIST for the whole tree
    assert sum(measured["months_stored, 24 months"].values()) <= 3  # a listing, not a request a month


# -- identical bytes -------------------------------------------------------------------------------


def materialize_tiny(
    root: str, tags: dict[str, str] | None = None, partition_key: str | None = None
) -> dg.ExecuteInProcessResult:
    from assets.definitions import build_defs
    from pipeline.scenarios.model import Scenario

    defs = build_defs(TINY_START, TINY_END, root=root, scenarios={"plain": Scenario(**PLAIN_SCENARIO)})
    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
        resources=defs.resources,
        tags=tags,
        partition_key=partition_key,
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )


def test_rematerializing_gives_identical_bytes_locally_and_on_s3(
    s3_root: str, tiny_landing_zone: Path, tmp_path: Path
) -> None:
    local, s3 = ObjectStore(str(tmp_path / "local")), ObjectStore(s3_root)
    for store in (local, s3):
        copy_tree(tiny_landing_zone, store, "raw")
        assert materialize_tiny(store.root, tags=RANGE_TAGS).success
    first = tables(stored_objects(local))
    assert_same_tables(first, tables(stored_objects(s3)))  # the same bytes on both backends

    assert materialize_tiny(s3.root, partition_key="2024-03").success  # one month of the chain again
    assert_same_tables(first, tables(stored_objects(s3)))
    assert materialize_tiny(local.root, tags=RANGE_TAGS).success  # the whole range again
    assert_same_tables(first, tables(stored_objects(local)))
