"""Ctrl-C and SIGTERM in the commands of pure code: the shell's code, one line of what was written, no partial file."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.cli.interrupted import NOTHING_WRITTEN, outputs_before, written_note

RATINGS = [sys.executable, "-m", "assets"]  # the installed `ratings` command's entry point


def test_the_line_says_what_the_command_wrote_before_the_signal(tmp_path: Path) -> None:
    """An output file left as it was, one replaced (whole) before the signal, standard output, a read-only command, a
    command cut short before its arguments were read, and `generate` into a local store at each point of moving its
    data set into place.
    """
    from assets.runtime.interrupts import interrupted_line

    out = tmp_path / "new.csv"
    out.write_text("old\n")
    rate = argparse.Namespace(command="rate-period", out=str(out))
    before = outputs_before(rate)
    assert written_note(rate, before).startswith(f"{out} was not written (files are written whole or not at all")
    out.unlink()
    out.write_text("new\n")  # a new file where the old one was: what write_file_whole's rename leaves
    assert written_note(rate, before) == f"{out} was written whole before it stopped"
    listing = argparse.Namespace(command="list", out=None)
    assert written_note(listing, outputs_before(listing)) == f"{NOTHING_WRITTEN} (standard output may hold part of it)"
    validate = argparse.Namespace(command="validate")
    assert written_note(validate, outputs_before(validate)) == NOTHING_WRITTEN == written_note(None, None)

    store = tmp_path / "store"
    generate = argparse.Namespace(command="generate", out=str(store), force=False)
    before = outputs_before(generate)
    assert "made in a temporary folder" in written_note(generate, before)
    (store / "raw").mkdir(parents=True)
    truth = store / "truth" / "strength.parquet"
    assert written_note(generate, before) == (
        f"{store / 'raw'} was moved into place but not {truth}: run the same command again with --force"
    )
    truth.parent.mkdir()
    truth.write_bytes(b"")
    assert written_note(generate, before).endswith("were written whole before it stopped")
    forced = argparse.Namespace(command="generate", out=str(store), force=True)
    assert "they are written in place" in written_note(forced, outputs_before(forced))

    assert interrupted_line("validate", signal.SIGINT, NOTHING_WRITTEN) == (
        "ratings validate: interrupted (Ctrl-C); nothing was written"
    )
    assert (
        interrupted_line("", signal.SIGTERM, NOTHING_WRITTEN) == "ratings: interrupted (SIGTERM); nothing was written"
    )


def _inputs(root: Path) -> None:
    """A previous list of 100,000 players and 300,000 games: about a second of rate-period's and validate's work."""
    rng = np.random.default_rng(1)
    players, games = 100_000, 300_000
    pl.DataFrame({"player_id": np.arange(1, players + 1), "rating": rng.integers(1400, 2600, players)}).write_csv(
        root / "previous.csv"
    )
    white = rng.integers(1, players + 1, games)
    pl.DataFrame(
        {
            "event_id": [f"e{i // 500}" for i in range(games)],
            "white_id": white,
            "black_id": (white + rng.integers(1, players, games) - 1) % players + 1,
            "result": rng.choice(["1-0", "0-1", "1/2-1/2"], games),
        }
    ).write_csv(root / "games.csv")


def _polars_loaded(pid: int) -> bool:
    """Whether the process has loaded Polars: past `ratings`' start, where its handlers are already on."""
    try:
        return "polars" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _any_file(folder: Path) -> Callable[[int], bool]:
    return lambda _pid: any(path.is_file() for path in folder.rglob("*"))


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


GENERATE = ["generate", "--players", "30000", "--start", "2023-01", "--end", "2024-12"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_and_sigterm_end_every_command_in_one_line_leaving_no_partial_file(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """`validate` (reads), `rate-period --out` (writes a file) and `generate` (writes a store) started as the installed
    command, each signalled once it is working (Polars loaded; generate's first file written): SIGINT to its process
    group, as a terminal's Ctrl-C, and SIGTERM to it alone. Each ends with 128 + the signal and one line on stderr
    naming the command and what it wrote, no traceback; rate-period's output and generate's store hold no file, whole
    or partial; generate run again writes what an uninterrupted generation writes.
    """
    from pipeline.generator import generate

    _inputs(tmp_path)
    out, store = tmp_path / "out", tmp_path / "store"
    out.mkdir()
    # The command, when it is working, and what its line may say it wrote (rate-period: nothing, when the signal came
    # before it had read its arguments).
    cases: list[tuple[list[str], Callable[[int], bool], tuple[str, ...]]] = [
        (["validate", str(tmp_path / "games.csv")], _polars_loaded, (NOTHING_WRITTEN,)),
        (
            [
                "rate-period",
                "--rules",
                "fide-2014",
                "--month",
                "2024-03",
                "--list",
                str(tmp_path / "previous.csv"),
                "--games",
                str(tmp_path / "games.csv"),
                "--out",
                str(out / "new.csv"),
            ],
            _polars_loaded,
            (f"{out / 'new.csv'} was not written", NOTHING_WRITTEN),
        ),
        ([*GENERATE, "--out", str(store)], _any_file(store), (f"{NOTHING_WRITTEN} (the data set is made in a",)),
    ]
    said = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    for argv, working, written in cases:
        command = subprocess.Popen(
            [*RATINGS, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while not working(command.pid) and command.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert command.poll() is None, f"{argv[0]} ended before it was signalled: {command.stderr.read()}"
        if signum == signal.SIGINT:
            os.killpg(command.pid, signum)
        else:
            os.kill(command.pid, signum)
        _, err = command.communicate(timeout=60)
        lines = err.splitlines()
        assert command.returncode == 128 + signum, err
        assert len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(f"ratings {argv[0]}: interrupted ({said}); ")
        assert any(lines[0].startswith(f"ratings {argv[0]}: interrupted ({said}); {note}") for note in written), err
    assert _files(out) == [] and _files(store) == []

    subprocess.run([*RATINGS, *GENERATE, "--out", str(store)], check=True, capture_output=True, timeout=120)
    generate(str(tmp_path / "uninterrupted"), players=30000, start="2023-01", end="2024-12")
    assert _files(store) == _files(tmp_path / "uninterrupted")
    assert all(
        (store / name).read_bytes() == (tmp_path / "uninterrupted" / name).read_bytes() for name in _files(store)
    )
