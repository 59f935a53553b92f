"""`make bench`'s own behaviour: a backfill too large for the disk is skipped saying why; a backfill says its CPU."""

from pathlib import Path

import pytest

from bench import workloads_backfill
from bench.__main__ import describe
from bench.measure import cpu_seconds


def test_a_backfill_the_disk_cannot_hold_is_skipped_saying_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workloads_backfill, "SCENARIO_BYTES", 10**18)  # more than any disk holds
    reason = workloads_backfill.disk_shortfall(4, str(tmp_path))
    assert reason is not None and reason.startswith(f"needs about 4000000003 GB free under {tmp_path},")
    monkeypatch.setattr(workloads_backfill, "SCENARIO_BYTES", 0)
    monkeypatch.setattr(workloads_backfill, "SHARED_BYTES", 0)
    assert workloads_backfill.disk_shortfall(4, str(tmp_path)) is None
    line = describe({"workload": "backfill-fide-4-scenarios", "skipped": reason})
    assert "SKIPPED: needs about" in line and "ERROR" not in line


def test_a_backfill_line_says_its_cpu_and_how_many_cores_it_kept_busy() -> None:
    line = describe(
        {
            "workload": "backfill-fide",
            "seconds": 300.0,
            "cpu_seconds": 450.0,
            "cores_busy": 1.5,
            "items": 21_867_136,
            "unit": "games",
            "runs": 1,
            "peak_tree_rss_mb": 1300,
            "peak_rss_mb": 1290.0,
        }
    )
    assert "CPU 450.0 s (1.5 cores busy)" in line and "72,890 games/s" in line


def test_cpu_seconds_count_the_ended_worker_processes_too() -> None:
    import multiprocessing

    before = cpu_seconds(children=True)
    worker = multiprocessing.get_context("spawn").Process(target=sum, args=(range(80_000_000),))
    worker.start()
    worker.join()
    # The worker's own CPU (about a second of summing) is counted once it has ended.
    assert cpu_seconds(children=True) - before > 0.3


def test_the_database_shaped_pgn_workload_reads_as_real_exports_do(tmp_path: Path) -> None:
    """ingest-pgn-full's files: every game a valid record, UTF-8 names kept, comments skipped, empty Elo unrated."""
    import polars as pl

    from bench.workloads_ingest import _timed_read, write_pgn_full

    paths = write_pgn_full(tmp_path, games=4_000)
    text = paths[0].read_text(encoding="utf-8")
    assert "{" in text and not text.isascii() and text.count("\n") > 4_000 // len(paths) * 22  # 17 tags, movetext
    records, _, _ = _timed_read(paths, "ENG")
    assert records.height == 4_000 and records["parse_error"].null_count() == 4_000
    assert records["white_name"].str.contains("ü|á|ć|Ø|ó|ë").any()
    unrated = records["white_rating"].null_count() / records.height
    assert 0.05 < unrated < 0.15 and records.filter(pl.col("white_id").is_null()).height == 0
