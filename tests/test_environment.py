"""What the environment must not change.

The locale's encoding, a terminal's, the thread count, the machine's time zone, and a landing zone or store that is a
link, a FIFO or read-only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import polars as pl
import pytest

from pipeline.ingest.dumps import read_month
from pipeline.store.object_store import ObjectStore, StoreFault
from tests.test_ingest_validate import WINTER, _undated_trf

ROOT = Path(__file__).resolve().parents[1]


def test_a_file_name_sent_composed_then_decomposed_is_the_same_undated_event(tmp_path: Path) -> None:
    """'café.trf' in January and the same file named in NFD (as macOS writes names) in February: its undated games
    were rated twice, the names compared as raw strings. A table's own event id likewise.
    """
    from pipeline.validate.split import MonthValidator

    store = ObjectStore(str(tmp_path))
    header = "event_id,round,white_id,black_id,result\n"
    for month, form in (("2024-01", "NFC"), ("2024-02", "NFD")):
        folder = tmp_path / "raw" / "GER" / month
        folder.mkdir(parents=True)
        (folder / f"{unicodedata.normalize(form, 'café')}.trf").write_text(_undated_trf(WINTER))
        (folder / "club.csv").write_text(header + f"{unicodedata.normalize(form, 'Café Open')},1,1001,1002,1-0\n")
    validate = MonthValidator(store, ["2024-01", "2024-02"])
    assert validate("2024-01", read_month(store, "2024-01")).games.height == 5
    february = validate("2024-02", read_month(store, "2024-02"))
    assert february.games.is_empty()
    assert february.quarantine["reason"].to_list() == ["duplicate"] * 5


def test_ratings_validate_reports_a_fifo_as_not_a_file_without_reading_it(tmp_path: Path) -> None:
    """Reading a FIFO waited for a writer for ever: `ratings validate` hung."""
    from pipeline.validate.file_report import FileReport, report_file

    fifo = tmp_path / "open.trf"
    os.mkfifo(fifo)
    reports: list[FileReport] = []
    reading = threading.Thread(target=lambda: reports.append(report_file(str(fifo))), daemon=True)
    reading.start()
    reading.join(timeout=20)
    waited = reading.is_alive()
    if waited:  # it waits for a writer: be one, with nothing to say, and let it end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reading.join()
    assert not waited and len(reports) == 1
    report = reports[0]
    assert not report.readable and not report.opened
    assert report.problems == [
        "not_a_file: a special file (FIFO, device or socket) is not read (only regular files are): copy the file "
        "itself into the landing zone"
    ]


def test_an_undated_file_s_month_is_the_current_month_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ratings validate` took the local date (date.today) where the runs take UTC's month (landing.month_bounds)."""
    from pipeline.validate import file_report

    monkeypatch.setattr(file_report, "month_bounds", lambda: ("1970-01", "1999-12"))
    undated = pl.DataFrame({"date": [None], "event_start": [None]}, schema={"date": pl.Date, "event_start": pl.Date})
    assert file_report._own_month(undated) == "1999-12"


def test_a_symlinked_landing_zone_is_named_as_a_link(tmp_path: Path) -> None:
    """store/raw -> ../realraw was 'holds no dumps in month folders': the link is not followed, and says so."""
    from pipeline.operations.run_plan import StoreError, require_landing_zone

    (tmp_path / "realraw" / "GER" / "2024-01").mkdir(parents=True)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "raw").symlink_to("../realraw")
    with pytest.raises(StoreError, match=r"/store/raw is a symbolic link, which is not read"):
        require_landing_zone(ObjectStore(str(tmp_path / "store")))


def test_a_lock_that_cannot_be_written_is_said_as_the_store_s_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only store gave "[Errno 30] Read-only file system: '.../.ratings-run.lock'"."""
    import errno

    from pipeline.store import lock

    def read_only(path: str, *args: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    monkeypatch.setattr(lock.os, "open", read_only)
    with pytest.raises(StoreFault) as raised, lock.store_lock(ObjectStore(str(tmp_path))):
        pass
    assert str(raised.value) == f"Read-only file system (EROFS) writing the run's lock {tmp_path}/.ratings-run.lock"


def test_the_makefile_quotes_the_r_library_where_a_shell_reads_it() -> None:
    """A project path with a space split `mkdir -p $(RLIB)` and `R CMD INSTALL -l $(RLIB)` in two."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    uses = [(line, match.start()) for line in lines for match in re.finditer(re.escape("$(RLIB)"), line)]
    assert len(uses) >= 5
    assert [line for line, at in uses if line[:at].count('"') % 2 == 0 and not line.startswith("RLIB")] == []


def test_definitions_refuse_to_load_where_file_names_are_not_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    """`dg dev` or a deployment under a Latin-1 or ASCII locale rated file names decoded otherwise: other ids."""
    from pipeline.cli import encoding

    monkeypatch.setattr(encoding.sys, "getfilesystemencoding", lambda: "iso8859-1")
    with pytest.raises(RuntimeError, match=r"decoded as iso8859-1 .* set PYTHONUTF8=1"):
        encoding.require_utf8_file_names()
    import assets.definitions

    with pytest.raises(RuntimeError, match="PYTHONUTF8=1"):
        assets.definitions.defs()


# -- in processes of their own (integration: tests/conftest.py INTEGRATION_TESTS) ---------------------------------

NON_ASCII_TRF = "sommeropen-wießee-ä.trf"


def _ratings(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from assets.runtime.cli import main; raise SystemExit(main())", *args]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(command, env=environment, cwd=cwd, capture_output=True, text=True, timeout=300)


def _non_utf8_locale(tmp_path: Path) -> dict[str, str]:
    """A Latin-1 locale compiled into a private LOCPATH where localedef can; else C without coercion: ASCII."""
    locales = tmp_path / "locales"
    made = (
        subprocess.run(
            ["localedef", "-i", "de_DE", "-f", "ISO-8859-1", str(locales / "de_DE.ISO-8859-1")], capture_output=True
        )
        if _has("localedef")
        else None
    )
    if made is not None and made.returncode == 0:
        return {"LOCPATH": str(locales), "LC_ALL": "de_DE.ISO-8859-1", "PYTHONUTF8": "0"}
    return {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


def _has(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


def test_a_non_utf8_locale_reads_non_ascii_file_names_as_a_utf8_one_does(tmp_path: Path) -> None:
    """Under a Latin-1 locale file names were decoded otherwise (other source_file, record and game ids); under ASCII
    every file with such a name failed ("surrogates not allowed"). `ratings` now runs itself in UTF-8 mode.
    """
    (tmp_path / "locales").mkdir()
    dump = tmp_path / NON_ASCII_TRF
    dump.write_text(_undated_trf(WINTER))
    utf8 = _ratings(["validate", "--json", str(dump)], {}, tmp_path)
    for locale in (_non_utf8_locale(tmp_path), {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}):
        other = _ratings(["validate", "--json", str(dump)], locale, tmp_path)
        assert (other.returncode, other.stdout, other.stderr) == (utf8.returncode, utf8.stdout, utf8.stderr)
    assert utf8.returncode == 0 and "\\u00df" in utf8.stdout and '"games": 4' in utf8.stdout


def test_output_a_terminal_cannot_encode_is_escaped_not_an_error(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii: a command that had done its work exited 2 ("'ascii' codec can't encode")."""
    dump = tmp_path / NON_ASCII_TRF
    dump.write_text(_undated_trf(WINTER))
    shown = _ratings(["validate", str(dump)], {"PYTHONIOENCODING": "ascii"}, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "sommeropen-wie\\xdfee-\\xe4.trf: trf:" in shown.stdout


THREADS_PROBE = """
import hashlib, io
import numpy as np, polars as pl
from pipeline.analytics.accuracy import accuracy_on_common_sides, predictive_accuracy
from pipeline.analytics.truth import rating_error_vs_truth

n = 300_000
rng = np.random.default_rng(3)
ids = rng.permutation(n).astype(np.int64) + 1
strength = rng.normal(1800, 300, n)
rating_list = pl.DataFrame({"player_id": ids, "rating": np.round(strength + rng.normal(0, 80, n)).astype(np.int64)})
truth = pl.DataFrame({"player_id": ids[::-1].copy(), "month": ["2024-01"] * n, "strength": strength[::-1].copy()})
expected = rng.uniform(0.05, 0.95, n)
rated = pl.DataFrame({
    "game_id": np.arange(n, dtype=np.uint64),
    "white_id": rng.integers(1, n + 1, n),
    "black_id": rng.integers(1, n + 1, n),
    "white_score": rng.choice([0.0, 0.5, 1.0], n),
    "white_expected": expected,
    "black_expected": 1 - expected,
})
another = rng.uniform(0.05, 0.95, n)
other = rated.with_columns(white_expected=pl.Series(another), black_expected=pl.Series(1 - another))
for frame in (
    rating_error_vs_truth(rating_list, truth, "2024-01"),
    predictive_accuracy(rated, "2024-01", "x"),
    accuracy_on_common_sides({"x": rated, "y": other}, "2024-01"),
):
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    print(hashlib.sha256(buffer.getvalue()).hexdigest())
"""


def test_truth_error_and_accuracy_are_the_same_bytes_whatever_the_thread_count() -> None:
    """A sort after a join or group-by leaves one chunk per thread, and a whole column's sum adds chunk by chunk:
    POLARS_MAX_THREADS=1 and 8 wrote other last bits in truth_error and accuracy (and so common_accuracy, the
    leaderboard and the accuracy report). The scenarios' accuracies on their common sides, summed in one group-by
    (accuracy_on_common_sides), are probed too.
    """
    digests = [
        subprocess.run(
            [sys.executable, "-c", THREADS_PROBE],
            env={**os.environ, "PYTHONPATH": str(ROOT), "POLARS_MAX_THREADS": str(threads)},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout.split()
        for threads in (1, 8, 8)
    ]
    assert len(digests[0]) == 3 and digests[0] == digests[1] == digests[2]
