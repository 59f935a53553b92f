"""`make bench`'s own behaviour: a backfill the disk cannot hold is skipped with its reason, not started."""

from pathlib import Path

import pytest

from bench import workloads_backfill
from bench.__main__ import describe


def test_a_backfill_the_disk_cannot_hold_is_skipped_saying_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workloads_backfill, "SCENARIO_BYTES", 10**18)  # more than any disk holds
    reason = workloads_backfill.disk_shortfall(4, str(tmp_path))
    assert reason is not None and reason.startswith(f"needs about 4000000003 GB free under {tmp_path},")
    monkeypatch.setattr(workloads_backfill, "SCENARIO_BYTES", 0)
    monkeypatch.setattr(workloads_backfill, "SHARED_BYTES", 0)
    assert workloads_backfill.disk_shortfall(4, str(tmp_path)) is None
    line = describe({"workload": "backfill-fide-4-scenarios", "skipped": reason})
    assert "SKIPPED: needs about" in line and "ERROR" not in line
