"""A `system: whr` chain's storage (issue 39).

Each month stores the player-months it changed, a checkpoint month every one; the stored months give back the in-memory
history bit for bit, a run continuing the chain writes the bytes an uninterrupted one wrote, and a month's rows follow
what it changed, not the length of the history.
"""

import shutil
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.ingest.registry import read_seed_list
from pipeline.months import add_months, month_index, month_range
from pipeline.scenarios.chain import MissingMonth, chain_continues, chain_tables, rate_months
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.whole_history_step import (
    WHR_STATE,
    is_checkpoint,
    new_history,
    params_of,
    rated_of,
    state_frame,
)
from pipeline.scenarios.whole_history_stored import (
    history_as_it_stands,
    list_as_it_stands,
    state_months,
    stored_state,
)
from pipeline.store.monthly import table_key, write_tables
from pipeline.store.object_store import ObjectStore
from pipeline.whole_history.whr import WholeHistory
from schemas import Games
from schemas.conformance import validated
from schemas.util import conform

START = "2023-01"
MONTHS = month_range(START, "2023-10")
# Full sweeps after April and August (4 | index + 1), checkpoints also after June (6 | index + 1).
WHR = Scenario(
    name="w",
    description="WHR",
    system="whr",
    set={"w2": 30, "virtual_draws": 4, "sweeps": 2, "full_sweeps_every": 4, "full_sweeps": 3, "checkpoint_every": 6},
)
CAREER = 4  # months a cohort plays
COHORT = 6  # players joining each month
SEEDED = [9001, 9002]  # seed-list players who play every month


def _games(month: str, rng: np.random.Generator) -> pl.DataFrame:
    """The month's games: each cohort of the last CAREER months and the seeded players, paired at random."""
    m = MONTHS.index(month)
    active = [1000 + 10 * c + i for c in range(max(0, m - CAREER + 1), m + 1) for i in range(COHORT)] + SEEDED
    rows = []
    for round_ in range(3):
        order = rng.permutation(active)
        for white, black in zip(order[0::2], order[1::2], strict=False):
            rows.append((int(white), int(black), float(rng.choice([0.0, 0.5, 1.0])), round_ + 1))
    year, mon = int(month[:4]), int(month[5:])
    n = len(rows)
    return conform(
        pl.DataFrame(
            {
                "game_id": pl.Series(np.arange(n) * 7919 + month_index(month) * 100_000, dtype=pl.UInt64),
                "month": [month] * n,
                "federation": ["GER"] * n,
                "event_id": [f"e{month}"] * n,
                "event_start": [date(year, mon, 1)] * n,
                "date": [date(year, mon, 2)] * n,
                "round": pl.Series([r[3] for r in rows], dtype=pl.Int32),
                "white_id": [r[0] for r in rows],
                "black_id": [r[1] for r in rows],
                "white_score": [r[2] for r in rows],
                "time_control": ["classical"] * n,
                "tc_base_seconds": pl.Series([None] * n, dtype=pl.Int32),
                "tc_increment_seconds": pl.Series([None] * n, dtype=pl.Int32),
                "white_rating_used": pl.Series([None] * n, dtype=pl.Int32),
                "black_rating_used": pl.Series([None] * n, dtype=pl.Int32),
                "colour_known": [i % 5 != 0 for i in range(n)],
                "source_file": [f"GER/{month}/games.csv"] * n,
                "source_line": pl.Series(np.arange(2, n + 2), dtype=pl.Int64),
                "also_reported_by": pl.Series([None] * n, dtype=pl.List(pl.Utf8)),
            }
        ),
        Games,
    )


def _run(store: ObjectStore, months: list[str], games: dict[str, pl.DataFrame]) -> None:
    """The chain over `months` as the rate asset runs it: rate_months, each month's tables by the store's writer."""
    rate = rate_months(store, WHR, months, START)
    tables = [([WHR.name, t.name], t.model) for t in chain_tables(WHR)]
    made = ((month, rate(month, games.__getitem__)) for month in months)
    write_tables(store, tables, months, made, lambda model, frame, _: validated(model, frame), lambda *_: None)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, pl.DataFrame], dict[str, WholeHistory]]:
    """The chain over MONTHS in one run, and the history held in memory after each month (by hand, as its step)."""
    root = tmp_path_factory.mktemp("whr-stored")
    store = ObjectStore(str(root))
    store.write_text("player_id,rating\n9001,2100\n9002,1700\n", f"raw/players/{START}/seed_list.csv")
    store.write_text("player_id,inactive\n", f"raw/GER/{START}/empty.csv")
    rng = np.random.default_rng(39)
    games = {month: _games(month, rng) for month in MONTHS}
    for month, frame in games.items():
        store.write_parquet(frame, table_key(["games"], month))
    _run(store, MONTHS, games)
    history = new_history(WHR, read_seed_list(store, START))
    params = params_of(WHR)
    after: dict[str, WholeHistory] = {}
    for month in MONTHS:
        history.add_month(month_index(month), rated_of(WHR, games[month]))
        full = params.full_sweep_after(month_index(month))
        if full is not None:
            history.fit(max_sweeps=full or None)
        after[month] = _copy(history)
    return root, games, after


def _copy(history: WholeHistory) -> WholeHistory:
    """The estimates and structure as they are now (later months change r and var in place)."""
    copied = WholeHistory(history.params)
    copied.__dict__.update({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in history.__dict__.items()})
    return copied


def test_the_checkpoints_are_the_first_month_the_full_sweeps_and_every_sixth_month() -> None:
    assert [m for m in MONTHS if is_checkpoint(WHR, m, START)] == ["2023-01", "2023-04", "2023-06", "2023-08"]
    assert state_months(WHR, "2023-07", START) == ["2023-06", "2023-07"]
    assert state_months(WHR, "2023-03", START) == ["2023-01", "2023-02", "2023-03"]


def test_the_stored_months_give_back_the_history_held_in_memory_bit_for_bit(chain) -> None:
    root, _, after = chain
    store = ObjectStore(str(root))
    for month in MONTHS:
        held = after[month]
        assert_frame_equal(stored_state(store, WHR, month), state_frame(held), check_exact=True)
        # In Elo, as WholeHistory.history gives it (every player-month as it stands after the month).
        memory = held.history()
        stored = history_as_it_stands(store, WHR, month)
        assert stored["player_id"].to_list() == memory["player_id"].to_list()
        assert stored["month"].to_list() == [f"{m // 12}-{m % 12 + 1:02d}" for m in memory["month"]]
        assert np.array_equal(stored["rating"].to_numpy(), memory["rating"].to_numpy())
        assert np.array_equal(stored["deviation"].to_numpy(), memory["deviation"].to_numpy(), equal_nan=True)
    # The list of March as it stands after October (WholeHistory.list_at, later) against the list as it stood.
    now = list_as_it_stands(store, WHR, "2023-03")
    memory = after[MONTHS[-1]].list_at(month_index("2023-03"))
    assert now["player_id"].to_list() == memory["player_id"].to_list()
    assert np.array_equal(now["rating"].to_numpy(), memory["rating"].to_numpy())
    assert np.array_equal(now["deviation"].to_numpy(), memory["deviation"].to_numpy())
    assert now["games"].to_list() == memory["games"].to_list()
    stood = store.read_parquet(table_key([WHR.name, "rating_list"], "2023-03")).filter(pl.col("player_id") < 9000)
    moved = stood.join(now, on="player_id", suffix="_now")
    assert moved.height == 3 * COHORT and (moved["rating"] - moved["rating_now"]).abs().max() > 1


def test_each_month_stores_what_it_changed_and_not_the_history(chain) -> None:
    root, games, after = chain
    store = ObjectStore(str(root))
    rows = {m: store.parquet_rows(table_key([WHR.name, WHR_STATE], m)) for m in MONTHS}
    played: dict[int, int] = {}  # months played so far, per player
    for month in MONTHS:
        frame = games[month]
        ids = set(frame["white_id"].to_list()) | set(frame["black_id"].to_list())
        played.update({p: played.get(p, 0) + 1 for p in ids})
        total = after[month].n_nodes
        assert total == sum(played.values())
        # A month stores the player-months of its players (a sweep moves each one's every month); a checkpoint all.
        assert rows[month] == (total if is_checkpoint(WHR, month, START) else sum(played[p] for p in ids)), month
    # Players play CAREER months: once every cohort has come in, a month changes as many player-months as the one
    # before, whatever the history holds.
    between = [m for m in MONTHS[CAREER:] if not is_checkpoint(WHR, m, START)]
    assert between == ["2023-05", "2023-07", "2023-09", "2023-10"]
    # The seeded players play every month: each month stores every month of theirs so far.
    seeded = {m: len(SEEDED) * (MONTHS.index(m) + 1) for m in between}
    assert {rows[m] - seeded[m] for m in between} == {COHORT * sum(range(1, CAREER + 1))}
    assert [after[m].n_nodes for m in between] == [94, 146, 198, 224]  # while the history grows


@pytest.mark.parametrize("first", ["2023-03", "2023-08"])
def test_a_run_continuing_the_chain_writes_the_bytes_of_the_uninterrupted_run(chain, tmp_path: Path, first) -> None:
    root, games, _ = chain
    again = tmp_path / "store"
    shutil.copytree(root, again)
    store = ObjectStore(str(again))
    # Only what the warm start needs is there: the months since the last checkpoint, not the ones before.
    needed = state_months(WHR, add_months(first, -1), START)
    for month in MONTHS:
        if month < needed[0] or month >= first:
            store.remove(table_key([WHR.name, WHR_STATE], month))
    _run(store, month_range(first, MONTHS[-1]), games)
    for month in month_range(first, MONTHS[-1]):
        for table in chain_tables(WHR):
            key = table_key([WHR.name, table.name], month)
            assert store.read_bytes(key) == (root / key).read_bytes(), key


def test_a_missing_month_of_the_warm_start_is_named_before_anything_is_rated(chain, tmp_path: Path) -> None:
    root, _, _ = chain
    again = tmp_path / "store"
    shutil.copytree(root, again)
    store = ObjectStore(str(again))
    store.remove(table_key([WHR.name, WHR_STATE], "2023-06"))
    with pytest.raises(MissingMonth, match="w/whr_state for 2023-06 is missing"):
        chain_continues(store, WHR, "2023-08", START)
    chain_continues(store, WHR, "2023-09", START)  # August is a checkpoint: June is not needed


def test_ratings_history_prints_a_month_and_its_list_as_they_stand(chain, tmp_path: Path, capsysbinary) -> None:
    from pipeline.cli.commands import main

    root, _, _ = chain
    scenarios = tmp_path / "s.yaml"
    scenarios.write_text(
        "scenarios:\n  plain:\n    rules: fide-2014\n  w:\n    system: whr\n"
        f"    set: {{{', '.join(f'{k}: {v}' for k, v in WHR.set.items())}}}\n"
    )
    store = ObjectStore(str(root))
    base = ["history", "--store", str(root), "--scenarios", str(scenarios)]
    assert main([*base, "--month", "2023-03", "--as-of", "2023-07"]) == 0
    printed = pl.read_csv(capsysbinary.readouterr().out, schema_overrides={"games": pl.Int32})
    assert_frame_equal(printed, history_as_it_stands(store, WHR, "2023-07", "2023-03"), check_exact=True)
    assert main([*base, "--month", "2023-03", "--list"]) == 0
    printed = pl.read_csv(capsysbinary.readouterr().out)
    assert_frame_equal(printed, list_as_it_stands(store, WHR, "2023-03"), check_exact=True, check_dtypes=False)
    assert main([*base, "--scenario", "plain"]) == 2
    assert "'plain' is not a whole-history scenario" in capsysbinary.readouterr().err.decode()


def test_ratings_history_refuses_a_month_not_stored_or_after_as_of(chain, tmp_path: Path, capsysbinary) -> None:
    """Such a month printed a header-only CSV (or, with --list, a list of a month not rated yet) and exited 0."""
    from pipeline.cli.commands import main

    root, _, _ = chain
    scenarios = tmp_path / "s.yaml"
    scenarios.write_text(
        f"scenarios:\n  w:\n    system: whr\n    set: {{{', '.join(f'{k}: {v}' for k, v in WHR.set.items())}}}\n"
    )
    base = ["history", "--store", str(root), "--scenarios", str(scenarios)]
    for more in ([], ["--list"]):
        assert main([*base, "--month", "2024-05", *more]) == 1
        captured = capsysbinary.readouterr()
        assert captured.out == b"" and b"w has no stored month 2024-05 (it has 2023-01..2023-10)" in captured.err
        assert main([*base, "--month", "2023-08", "--as-of", "2023-05", *more]) == 1
        captured = capsysbinary.readouterr()
        assert captured.out == b"" and b"--month 2023-08 is after --as-of 2023-05" in captured.err
