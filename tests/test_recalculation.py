"""A scenario's recalculation policy (issue 36, part 3): `forward` never re-rates a stored list with other games and
rates late reports on the next list, `window: N` recalculates the last N lists, `full` re-rates everything.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from pipeline.operations.automation import scheduled_run
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.recalculation import FORWARD, FULL, frozen_months
from tests.landing import pgn_game, write_raw

MONTHS = ["2024-01", "2024-02", "2024-03"]


@pytest.mark.parametrize(
    ("policy", "stored", "frozen"),
    [
        (FULL, set(MONTHS), []),
        (FORWARD, set(MONTHS), MONTHS),
        (FORWARD, {"2024-01"}, ["2024-01"]),
        (2, set(MONTHS), ["2024-01"]),  # the last two lists are recalculated
        (6, set(MONTHS), []),
    ],
)
def test_frozen_months(policy, stored, frozen):
    assert frozen_months(policy, stored, MONTHS) == frozen


def test_the_policy_is_read_from_the_scenario():
    assert Scenario(name="a", rules="fide-2024").recalculation_policy() == FULL
    assert Scenario(name="a", rules="fide-2024", recalculation="forward").recalculation_policy() == FORWARD
    assert Scenario(name="a", rules="fide-2024", recalculation={"window": 6}).recalculation_policy() == 6
    with pytest.raises(ValueError, match="window"):
        Scenario(name="a", rules="fide-2024", recalculation={"window": 0})


def test_a_window_makes_the_schedule_rate_the_months_before():
    months = [f"2024-{m:02d}" for m in range(1, 13)]
    plan = scheduled_run("2024-09", months, lambda: [], recalculated=6)
    assert not isinstance(plan, str)
    assert plan.tags["dagster/asset_partition_range_start"] == "2024-04"
    assert plan.tags["dagster/asset_partition_range_end"] == "2024-09"


# -- end to end: a late file under each policy -------------------------------------------------------------------

SCENARIOS = """scenarios:
  fwd:
    rules: fide-historical
    recalculation: forward
  whole:
    rules: fide-historical
  win:
    rules: fide-historical
    recalculation: {window: 2}
"""
SEED = "player_id,rating,birth_year\n" + "".join(f"{i},{2100 - 100 * i},198{i}\n" for i in range(1, 7))


def _lists(store: Path, scenario: str) -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in sorted((store / scenario / "rating_list").glob("*.parquet"))}


def _rated_ids(store: Path, scenario: str, month: str) -> set[int]:
    return set(pl.read_parquet(store / scenario / "rated_games" / f"{month}.parquet")["game_id"].to_list())


def _game_ids(store: Path, month: str, source_file: str) -> set[int]:
    games = pl.read_parquet(store / "games" / f"{month}.parquet")
    return set(games.filter(pl.col("source_file").str.ends_with(source_file))["game_id"].to_list())


@pytest.fixture(scope="module")
def late_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from assets.runtime.runs import run_store

    root = tmp_path_factory.mktemp("recalculation")
    store = root / "store"
    write_raw(
        store,
        {
            "players/2023-12/seed_list.csv": SEED,
            "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 1, 2, "1-0")
            + pgn_game("Open", "2024.01.11", 3, 4, "1-0"),
            "GER/2024-02/cup.pgn": pgn_game("Cup", "2024.02.10", 1, 5, "1/2-1/2"),
            "GER/2024-03/match.pgn": pgn_game("Match", "2024.03.10", 2, 3, "0-1"),
        },
    )
    (root / "scenarios.yaml").write_text(SCENARIOS)
    summary = run_store(str(store), scenarios_file=str(root / "scenarios.yaml"), dagster_home=str(root / "home"))
    assert summary["success"]
    return root, store, root / "scenarios.yaml"


def test_late_files_under_each_policy(late_store: tuple[Path, Path, Path]):
    from assets.runtime.runs import run_store

    root, store, scenarios = late_store
    before = {name: _lists(store, name) for name in ("fwd", "whole", "win")}
    # Two files arrive after the lists of March were stored: one filed under January (a tournament of 20 January),
    # one under March (10 March).
    write_raw(
        store,
        {
            "GER/2024-01/late.pgn": pgn_game("Late", "2024.01.20", 4, 5, "1-0"),
            "GER/2024-03/late.pgn": pgn_game("Later", "2024.03.12", 5, 6, "1-0"),
            # And February's only game corrected: a win for 1, not a draw.
            "GER/2024-02/cup.pgn": pgn_game("Cup", "2024.02.10", 1, 5, "1-0"),
        },
    )
    out = io.StringIO()
    summary = run_store(str(store), scenarios_file=str(scenarios), dagster_home=str(root / "home"), out=out)
    assert summary["success"]
    january_late, march_late = _game_ids(store, "2024-01", "late.pgn"), _game_ids(store, "2024-03", "late.pgn")
    assert len(january_late) == len(march_late) == 1

    # forward: no stored list changes; the run says where the games belong.
    assert _lists(store, "fwd") == before["fwd"]
    assert not list((store / "lists" / "fwd").glob("*.changes.csv"))
    assert not january_late & _rated_ids(store, "fwd", "2024-01")
    text = out.getvalue()
    assert "fwd: 1 game(s) filed under 2024-01 after its list was stored" in text
    assert "they belong to the list of 2024-04, where 1 of them will be past their reporting window" in text
    assert "fwd: 1 game(s) the stored list of 2024-02 rated are given otherwise by the files now" in text
    assert "the stored list stands" in text

    # full: every list from January is rated again, January's changes file names the two players.
    assert january_late <= _rated_ids(store, "whole", "2024-01")
    changes = pl.read_csv(store / "lists" / "whole" / "2024-01.changes.csv")
    assert set(changes["player_id"]) == {4, 5}
    assert {1, 5} <= set(pl.read_csv(store / "lists" / "whole" / "2024-02.changes.csv")["player_id"])

    # window 2: January is frozen, its late game is rated on February's list; March rates its own late game.
    assert _lists(store, "win")["2024-01"] == before["win"]["2024-01"]
    assert january_late <= _rated_ids(store, "win", "2024-02")
    assert march_late <= _rated_ids(store, "win", "2024-03")

    # The next month under forward: March's late game is rated on April's list, January's is past its window
    # (its third list was 1 April) and is not rated; both are said.
    write_raw(store, {"GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 1, 6, "1-0")})
    out = io.StringIO()
    summary = run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=str(root / "home"), out=out)
    assert summary["success"]
    april = _rated_ids(store, "fwd", "2024-04")
    assert march_late <= april and not january_late & april
    assert "the list of 2024-04 rates 1 game(s) filed under 2024-03 after their list was stored" in out.getvalue()
    assert "1 game(s) filed under 2024-01 after their list was stored are past their reporting window" in out.getvalue()
    april_list = pl.read_parquet(store / "fwd" / "rating_list" / "2024-04.parquet")
    assert april_list.filter(pl.col("player_id") == 5)["games"].item() == 1

    # Rerunning April changes nothing: the late game is not rated twice.
    april_bytes = (store / "fwd" / "rating_list" / "2024-04.parquet").read_bytes()
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=str(root / "home"))["success"]
    assert (store / "fwd" / "rating_list" / "2024-04.parquet").read_bytes() == april_bytes
