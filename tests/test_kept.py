"""What a run keeps for the next (pipeline.store.kept): read back only whole and made by the same code."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipeline.store.kept import KeptRows, read_description
from pipeline.store.object_store import ObjectStore

KEPT = KeptRows("kept/test", "rows.json", "rows-")
ROWS = pl.DataFrame({"player_id": [1, 2, 3], "name": ["a", "b", "c"]})


def test_kept_rows_are_read_back_with_their_description_by_the_code_that_kept_them(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    assert KEPT.read(store, "code-1") is None  # none kept
    KEPT.keep(store, {"code": "code-1", "month": "2024-05"}, "rows-one.parquet", ROWS)
    rows, described = KEPT.read(store, "code-1") or (None, None)
    assert rows is not None and rows.equals(ROWS)
    assert described == {"code": "code-1", "month": "2024-05", "rows": "rows-one.parquet"}
    only = KEPT.read(store, "code-1", columns=["name"])
    assert only is not None and only[0].columns == ["name"]
    assert KEPT.read(store, "code-2") is None  # kept by other code: made again


def test_keeping_new_rows_removes_the_older_and_leaves_other_files(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    store.write_bytes(b"other", "kept/test/notes.txt")
    KEPT.keep(store, {"code": "c"}, "rows-one.parquet", ROWS)
    KEPT.keep(store, {"code": "c"}, "rows-two.parquet", ROWS.head(2))
    assert sorted(Path(key).name for key in store.list_stamps("kept/test")) == [
        "notes.txt",
        "rows-two.parquet",
        "rows.json",
    ]
    kept = KEPT.read(store, "c")
    assert kept is not None and kept[0].height == 2


def test_damaged_or_missing_kept_files_read_as_none(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    KEPT.keep(store, {"code": "c"}, "rows-one.parquet", ROWS)
    store.remove("kept/test/rows-one.parquet")
    assert KEPT.read(store, "c") is None  # the rows gone
    KEPT.keep(store, {"code": "c"}, "rows-one.parquet", ROWS)
    store.write_bytes(b"PAR1 not parquet", "kept/test/rows-one.parquet")
    assert KEPT.read(store, "c") is None  # the rows damaged
    for damaged in (b"{damaged", b"[1, 2]", b"\xff\xfe"):
        store.write_bytes(damaged, "kept/test/rows.json")
        assert KEPT.read(store, "c") is None and read_description(store, "kept/test/rows.json") is None


def test_lz4_rows_read_back_the_same(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    fast = KeptRows("kept/fast", "rows.json", "rows-", compression="lz4")
    fast.keep(store, {"code": "c"}, "rows-one.parquet", ROWS)
    kept = fast.read(store, "c")
    assert kept is not None and kept[0].equals(ROWS)
    codec = pq.ParquetFile(tmp_path / "kept/fast/rows-one.parquet").metadata.row_group(0).column(0).compression
    assert codec.startswith("LZ4")
