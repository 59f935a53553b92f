"""A scenario's recalculation policy (issue 36, part 3): `forward`, `window: N` and `full`.

`forward` never re-rates a stored list with other games and rates late reports on the next list, `window: N`
recalculates the last N lists, `full` re-rates everything.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.period import normalize_list, rate_period
from pipeline.invariants.chain import chain_problems, continuity_problems, floor_offenders
from pipeline.months import add_months
from pipeline.operations.automation import scheduled_run
from pipeline.rules.model import load_rules
from pipeline.scenarios.chain import previous_list
from pipeline.scenarios.corrections import list_correction, with_corrections
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.recalculation import FORWARD, FULL, frozen_months
from pipeline.store.object_store import ObjectStore
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
    # February's corrected game: its stored list stands, the correction goes to the next list not stored.
    assert "fwd: 1 game(s) the stored list of 2024-02 rated are given otherwise by the files now" in text
    assert "the stored list stands, and its correction (2 player(s)" in text
    assert "is carried to the list of 2024-04 (recalculation: forward)" in text

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
    # February's correction reaches April: 1 won the game he had drawn with 5.
    corrections = dict(april_list.filter(pl.col("correction").is_not_null()).select("player_id", "correction").rows())
    assert set(corrections) == {1, 5} and corrections[1] > 0 > corrections[5]
    assert "the list of 2024-04 carries the corrections of 2024-02's games: 2 player(s)" in out.getvalue()
    # The player card's rating before is the list of March's, not the list's rating less its change alone.
    from pipeline.reports.player_card import player_report, render_text
    from pipeline.store.object_store import ObjectStore

    march = pl.read_parquet(store / "fwd" / "rating_list" / "2024-03.parquet").filter(pl.col("player_id") == 1)
    card = render_text(player_report(ObjectStore(str(store)), 1, "fwd", "2024-04"))
    assert f"Rating before {march['rating'].item()}," in card
    assert f"a correction of an earlier list {corrections[1]:+d} (lists/fwd/2024-04.corrections.csv)" in card

    # Rerunning April changes nothing: neither the late game nor the correction is counted twice.
    april_bytes = (store / "fwd" / "rating_list" / "2024-04.parquet").read_bytes()
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=str(root / "home"))["success"]
    assert (store / "fwd" / "rating_list" / "2024-04.parquet").read_bytes() == april_bytes


# -- corrections under forward: the next list carries them -----------------------------------------------------------


def test_a_correction_is_the_corrected_list_minus_the_stored_one():
    """list_correction against two ratings of one month from one list: the stored games, and the same games with one
    result and one player corrected; compared with the two lists read row by row in Python.
    """
    rules = load_rules("fide-2024")
    previous = normalize_list(
        pl.DataFrame({"player_id": [1, 2, 3, 4, 5, 7], "rating": [2000, 1900, 1800, 1700, 1600, None]})
    )
    games = pl.DataFrame(
        {"game_id": [1, 2, 3], "white_id": [1, 3, 4], "black_id": [2, 5, 7], "white_score": [1.0, 0.5, 0.5]}
    )
    # Game 1 was a loss for 1, and game 3 was 4 against 5, not against the unrated 7.
    corrected_games = games.with_columns(
        white_score=pl.Series([0.0, 0.5, 0.5]), black_id=pl.Series([2, 5, 5], dtype=pl.Int64)
    )
    stored = rate_period(previous, games, rules, "2024-05").rating_list
    corrected = rate_period(previous, corrected_games, rules, "2024-05").rating_list

    found = list_correction(stored, corrected)

    before = dict(zip(stored["player_id"].to_list(), stored["rating"].to_list(), strict=True))
    after = dict(zip(corrected["player_id"].to_list(), corrected["rating"].to_list(), strict=True))
    expected = {
        player: after[player] - rating
        for player, rating in before.items()
        if rating is not None and after.get(player) is not None and after[player] != rating
    }
    points = found.points
    assert dict(zip(points["player_id"].to_list(), points["correction"].to_list(), strict=True)) == expected
    # The players of the corrected games: 1 and 2 by the result, 4 (his game now counts) and 5 (one game more); 3's
    # game is the same.
    assert set(expected) == {1, 2, 4, 5}
    assert expected[1] < 0 < expected[2]
    # 7 loses the game of his pool: not a rating to correct.
    assert found.not_carried.to_list() == [7]
    assert list_correction(stored, stored).points.is_empty()


def test_corrections_carried_keep_the_list_continuous_and_go_through_the_floor():
    rules = load_rules("fide-2024")  # floor 1400, K 10 from 2400
    previous = normalize_list(pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [1450, 2395, 1401, 1800]}))
    games = pl.DataFrame({"game_id": [1], "white_id": [3], "black_id": [4], "white_score": [0.0]})
    rated = rate_period(previous, games, rules, "2024-05").rating_list
    assert rated.filter(pl.col("player_id") == 3)["delisted"].item()  # his loss took him below the floor
    points = pl.DataFrame(
        {"player_id": [1, 2, 3, 5], "correction": [-60, 10, 5, 7]},
        schema={"player_id": pl.Int64, "correction": pl.Int32},
    )

    corrected, not_applied = with_corrections(rated, previous, points, rules, "2024-05")

    assert not_applied.to_list() == [5]  # not on the list
    rows = {row["player_id"]: row for row in corrected.iter_rows(named=True)}
    games_rows = {row["player_id"]: row for row in rated.iter_rows(named=True)}
    # Below the floor by the correction: delisted.
    assert rows[1]["rating"] is None and rows[1]["delisted"] and rows[1]["correction"] == -60
    # Past 2400 by it: K 10 for good.
    assert rows[2]["rating"] == 2395 + 10 and rows[2]["ever_2400"] and rows[2]["k"] == 10
    assert not games_rows[2]["ever_2400"] and games_rows[2]["k"] != 10
    # Lifted above the floor again: listed, at the rating his game gave plus the correction.
    assert rows[3]["rating"] == 1401 + games_rows[3]["change"] + 5 and not rows[3]["delisted"]
    assert rows[4] == games_rows[4]
    assert corrected.schema == rated.schema
    assert continuity_problems(previous, corrected) == []
    assert floor_offenders(corrected, rules).is_empty()
    # Without the column, the ratings are not the previous ones plus their change.
    uncorrected = continuity_problems(previous, corrected.with_columns(correction=pl.lit(None, dtype=pl.Int32)))
    assert "differ from previous + change + correction" in " ".join(uncorrected)


CORRECTED_SCENARIOS = """scenarios:
  fwd:
    rules: fide-historical
    recalculation: forward
  whole:
    rules: fide-historical
"""
JANUARY = pgn_game("Open", "2024.01.10", 1, 2, "1-0") + pgn_game("Open", "2024.01.11", 3, 4, "1-0")


def _three_months(root: Path, scenarios_text: str = CORRECTED_SCENARIOS) -> tuple[Path, Path]:
    """A store of three months rated under `forward` (fwd) and `full` (whole), and the other scenarios given."""
    from assets.runtime.runs import run_store

    store = root / "store"
    write_raw(
        store,
        {
            "players/2023-12/seed_list.csv": SEED,
            "GER/2024-01/open.pgn": JANUARY,
            "GER/2024-02/cup.pgn": pgn_game("Cup", "2024.02.10", 1, 5, "1/2-1/2"),
            "GER/2024-03/match.pgn": pgn_game("Match", "2024.03.10", 2, 3, "0-1"),
        },
    )
    (root / "scenarios.yaml").write_text(scenarios_text)
    scenarios = root / "scenarios.yaml"
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=str(root / "home"))["success"]
    return store, scenarios


def _stored(store: Path, scenario: str) -> dict[str, bytes]:
    """Every stored table file of the scenario's chain, and its corrections files, by path."""
    files = [*(store / scenario).glob("*/*.parquet"), *(store / "lists" / scenario).glob("*.corrections.csv")]
    return {str(path.relative_to(store)): path.read_bytes() for path in sorted(files)}


def _list(store: Path, scenario: str, month: str) -> pl.DataFrame:
    return pl.read_parquet(store / scenario / "rating_list" / f"{month}.parquet")


def _expected_corrections(stored_january: pl.DataFrame, full_january: pl.DataFrame) -> dict[int, int]:
    """Player -> rating on the list a `full` scenario makes of January after the correction minus the stored one, for
    the players rated on both whose rating differs.
    """
    both = stored_january.join(full_january, on="player_id", suffix="_full").filter(
        pl.col("rating").is_not_null() & pl.col("rating_full").is_not_null()
    )
    differs = both.filter(pl.col("rating") != pl.col("rating_full"))
    return dict(zip(differs["player_id"], (differs["rating_full"] - differs["rating"]).to_list(), strict=True))


def _assert_carried(store: Path, month: str, expected: dict[int, int]) -> None:
    """The list of `month` corrects exactly `expected`, each rating the previous one + change + correction, and its
    corrections file says so.
    """
    listed = _list(store, "fwd", month).join(
        _list(store, "fwd", add_months(month, -1)).select("player_id", previous="rating"), on="player_id", how="left"
    )
    corrected = listed.filter(pl.col("correction").is_not_null())
    assert dict(zip(corrected["player_id"], corrected["correction"], strict=True)) == expected
    rated = listed.filter(pl.col("rating").is_not_null() & pl.col("previous").is_not_null())
    total = rated["previous"] + rated["change"] + rated["correction"].fill_null(0)
    assert (total == rated["rating"]).all()
    recorded = pl.read_csv(store / "lists" / "fwd" / f"{month}.corrections.csv")
    assert recorded.columns == ["month", "player_id", "correction"]
    assert dict(zip(recorded["player_id"], recorded["correction"], strict=True)) == expected
    assert set(recorded["month"]) == {"2024-01"}


def _chain_passes(store: Path, months: list[str]) -> None:
    """Floor, continuity and conservation of the fwd chain, evaluated again on the store."""
    scenario = Scenario(name="fwd", rules="fide-historical", recalculation="forward")
    object_store = ObjectStore(str(store))
    outcome = chain_problems(
        object_store,
        scenario,
        months,
        ["fwd", "rating_list"],
        ["fwd", "rated_games"],
        "2024-01",
        lambda: previous_list(object_store, scenario, "2024-01", "2024-01"),
    )
    assert outcome.floor.passed and outcome.continuity.passed and outcome.conservation.passed, outcome


def test_a_corrected_file_goes_into_the_next_list_under_forward(tmp_path: Path):
    """The sensor's run from the corrected month keeps every stored list and says where the correction goes; the
    schedule's run of the next month carries it; reruns of either write the same bytes.
    """
    from assets.runtime.runs import run_store

    store, scenarios = _three_months(tmp_path)
    home = str(tmp_path / "home")
    stored_january = _list(store, "fwd", "2024-01")
    before = _stored(store, "fwd")
    # January's first game corrected: a win for 2, not for 1.
    corrected = pgn_game("Open", "2024.01.10", 1, 2, "0-1") + pgn_game("Open", "2024.01.11", 3, 4, "1-0")
    write_raw(store, {"GER/2024-01/open.pgn": corrected})
    out = io.StringIO()
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=out)["success"]
    assert _stored(store, "fwd") == before  # no stored table changes, no list carries anything yet
    expected = _expected_corrections(stored_january, _list(store, "whole", "2024-01"))
    assert set(expected) == {1, 2}  # the players of the corrected game
    gained, lost = sum(v for v in expected.values() if v > 0), -sum(v for v in expected.values() if v < 0)
    said = (
        "fwd: 1 game(s) the stored list of 2024-01 rated are given otherwise by the files now (GER/2024-01/open.pgn: "
        f"a corrected result or player): the stored list stands, and its correction (2 player(s), +{gained} / -{lost} "
        "points) is carried to the list of 2024-04 (recalculation: forward)"
    )
    assert said in out.getvalue()
    assert "not rated again" not in out.getvalue()

    write_raw(store, {"GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 1, 6, "1-0")})
    out = io.StringIO()
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=home, out=out)["success"]
    _assert_carried(store, "2024-04", expected)
    assert "fwd: the list of 2024-04 carries the corrections of 2024-01's games: 2 player(s)" in out.getvalue()
    assert _stored(store, "fwd")["fwd/rating_list/2024-01.parquet"] == before["fwd/rating_list/2024-01.parquet"]
    _chain_passes(store, ["2024-01", "2024-02", "2024-03", "2024-04"])
    # The published list: the change a reader sees is the rating's move since March, its columns the contract's.
    published = pl.read_csv(store / "lists" / "fwd" / "2024-04.csv")
    assert published.columns == pl.read_csv(store / "lists" / "fwd" / "2024-03.csv").columns
    march = dict(zip(*_list(store, "fwd", "2024-03").select("player_id", "rating").get_columns(), strict=True))
    for row in published.filter(pl.col("id").is_in(list(expected))).iter_rows(named=True):
        assert row["previous_rating"] == march[row["id"]] and row["rating"] - row["change"] == march[row["id"]]

    # Reruns: the schedule's month again, then the whole range; nothing is carried twice, the same bytes.
    after = _stored(store, "fwd")
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=home)["success"]
    assert _stored(store, "fwd") == after
    out = io.StringIO()
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=out)["success"]
    assert _stored(store, "fwd") == after
    assert "its correction was carried to the list of 2024-04 (recalculation: forward)" in out.getvalue()


def test_games_filed_late_are_said_to_wait_for_the_first_list_not_stored_whatever_the_runs_range(tmp_path: Path):
    """A run of the late file's month alone named the stored (frozen) list after it as theirs, and a run from a later
    month said nothing of them at all: only a default run said where they go.
    """
    from assets.runtime.runs import run_store

    store, scenarios = _three_months(
        tmp_path, "scenarios:\n  fwd:\n    rules: fide-historical\n    recalculation: forward\n"
    )
    home = str(tmp_path / "home")
    write_raw(store, {"GER/2024-01/late.pgn": pgn_game("Late", "2024.01.20", 4, 5, "1-0")})
    where = "they belong to the list of 2024-04, where 1 of them will be past their reporting window (not rated)"
    out = io.StringIO()
    assert run_store(str(store), "2024-01", "2024-01", str(scenarios), dagster_home=home, out=out)["success"]
    assert (
        f"fwd: 1 game(s) filed under 2024-01 after its list was stored (GER/2024-01/late.pgn) are not rated on it "
        f"(recalculation: forward): {where}" in out.getvalue()
    )
    for first in ("2024-02", "2024-03"):
        out = io.StringIO()
        assert run_store(str(store), first, None, str(scenarios), dagster_home=home, out=out)["success"]
        said = [line.strip() for line in out.getvalue().splitlines() if "filed under 2024-01" in line]
        assert set(said) == {
            "fwd: 1 game(s) filed under 2024-01 after their list was stored (GER/2024-01/late.pgn) are rated on no "
            f"list of this run (recalculation: forward): {where}"
        }, (first, out.getvalue())


def test_a_run_that_finds_a_correction_carries_it_on_its_first_new_list(tmp_path: Path):
    """A run of the stored months and the next finds January's corrected games and carries them to the next one; a
    player the correction brings in unrated is named, not corrected.
    """
    from assets.runtime.runs import run_store

    store, scenarios = _three_months(tmp_path)
    home = str(tmp_path / "home")
    stored_january = _list(store, "fwd", "2024-01")
    stored_tables = {k: v for k, v in _stored(store, "fwd").items() if "2024-04" not in k}
    # January's first game a win for 2, and the second one 3's draw with 7 (not rated), not a win against 4.
    write_raw(
        store,
        {
            "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 1, 2, "0-1")
            + pgn_game("Open", "2024.01.11", 3, 7, "1/2-1/2"),
            "GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 1, 6, "1-0"),
        },
    )
    out = io.StringIO()
    assert run_store(str(store), "2024-01", "2024-04", str(scenarios), dagster_home=home, out=out)["success"]
    assert {k: v for k, v in _stored(store, "fwd").items() if k in stored_tables} == stored_tables
    expected = _expected_corrections(stored_january, _list(store, "whole", "2024-01"))
    assert set(expected) == {1, 2, 3, 4}
    _assert_carried(store, "2024-04", expected)
    _chain_passes(store, ["2024-01", "2024-02", "2024-03", "2024-04"])
    text = out.getvalue()
    assert "its correction (4 player(s)" in text and "is carried to the list of 2024-04" in text
    assert (
        "fwd: 1 player(s) whose rated status or pool of unrated games the correction of 2024-01 changes are not "
        "corrected (e.g. 7): a scenario under `full` re-rates them"
    ) in text
    assert "fwd: the list of 2024-04 carries the corrections of 2024-01's games: 4 player(s)" in text

    after = _stored(store, "fwd")
    assert run_store(str(store), "2024-01", "2024-04", str(scenarios), dagster_home=home)["success"]
    assert _stored(store, "fwd") == after


def _recorded(store: Path, scenario: str, month: str) -> dict[int, int]:
    """Player -> the points the scenario's list of `month` records carrying for January's games."""
    recorded = pl.read_csv(store / "lists" / scenario / f"{month}.corrections.csv")
    assert set(recorded["month"]) == {"2024-01"}
    return dict(zip(recorded["player_id"], recorded["correction"], strict=True))


def test_a_withdrawn_correction_is_taken_back_under_forward_and_window(tmp_path: Path):
    """January's corrected file put back as it was after a stored list carried the correction: the next list not
    stored yet takes it back, the run says so, and reruns carry nothing more.
    """
    from assets.runtime.runs import run_store

    windowed = CORRECTED_SCENARIOS + "  win:\n    rules: fide-historical\n    recalculation: {window: 2}\n"
    store, scenarios = _three_months(tmp_path, windowed)
    home = str(tmp_path / "home")
    stored_january = _list(store, "fwd", "2024-01")
    corrected = pgn_game("Open", "2024.01.10", 1, 2, "0-1") + pgn_game("Open", "2024.01.11", 3, 4, "1-0")
    write_raw(store, {"GER/2024-01/open.pgn": corrected})
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home)["success"]
    expected = _expected_corrections(stored_january, _list(store, "whole", "2024-01"))
    assert set(expected) == {1, 2}
    # window 2: January is frozen, February's list (rated again) carries its correction.
    assert _recorded(store, "win", "2024-02") == expected
    write_raw(store, {"GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 1, 6, "1-0")})
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=home)["success"]
    _assert_carried(store, "2024-04", expected)

    # January's file as it was: the correction is withdrawn.
    write_raw(store, {"GER/2024-01/open.pgn": JANUARY})
    fwd_before = _stored(store, "fwd")
    out = io.StringIO()
    assert run_store(str(store), "2024-01", "2024-04", str(scenarios), dagster_home=home, out=out)["success"]
    assert _list(store, "whole", "2024-01").equals(stored_january)
    taken_back = {player: -points for player, points in expected.items()}
    gained, lost = sum(v for v in taken_back.values() if v > 0), -sum(v for v in taken_back.values() if v < 0)
    said = (
        "the files give the games the stored list of 2024-01 rated as it rated them again: the stored list stands, "
        "and its correction, carried to the list of {}, is taken back (2 player(s), +{} / -{} points) on the list of "
        "{} (recalculation: {})"
    )
    text = out.getvalue()
    assert "fwd: " + said.format("2024-04", gained, lost, "2024-05", "forward") in text
    assert "win: " + said.format("2024-02", gained, lost, "2024-03", "window 2") in text
    # forward: every list was stored, none changes; window: March (rated again) takes it back.
    assert _stored(store, "fwd") == fwd_before
    assert _recorded(store, "win", "2024-03") == taken_back
    march = _list(store, "win", "2024-03").filter(pl.col("correction").is_not_null())
    assert dict(zip(march["player_id"], march["correction"], strict=True)) == taken_back
    assert "win: the list of 2024-03 carries the corrections of 2024-01's games: 2 player(s)" in text
    after = {name: _stored(store, name) for name in ("fwd", "win")}
    assert run_store(str(store), "2024-01", "2024-04", str(scenarios), dagster_home=home)["success"]
    assert {name: _stored(store, name) for name in ("fwd", "win")} == after

    # The schedule's run of May: forward's list takes it back; window's lists took it back already.
    write_raw(store, {"GER/2024-05/may.pgn": pgn_game("May", "2024.05.10", 2, 6, "1-0")})
    out = io.StringIO()
    assert run_store(str(store), "2024-05", "2024-05", str(scenarios), dagster_home=home, out=out)["success"]
    _assert_carried(store, "2024-05", taken_back)
    text = out.getvalue()
    assert "fwd: " + said.format("2024-04", gained, lost, "2024-05", "forward") in text
    assert "win: the files give" not in text
    assert not (store / "lists" / "win" / "2024-05.corrections.csv").exists()
    _chain_passes(store, ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05"])
    # Nothing more: the whole range again writes the same bytes and takes nothing back.
    after = {name: _stored(store, name) for name in ("fwd", "win")}
    out = io.StringIO()
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=out)["success"]
    assert {name: _stored(store, name) for name in ("fwd", "win")} == after
    assert "taken back" not in out.getvalue()


def test_a_list_carrying_a_correction_whose_own_games_are_corrected_corrects_those_games_alone(tmp_path: Path):
    """April's stored list (forward) carries January's correction of players 1 and 2; then April's own game is
    corrected. April's correction compares April rated again with the games the files give now against the stored
    April: both with the correction April carries, so that it names April's players alone (4 and 6), not January's
    correction undone.
    """
    from assets.runtime.runs import run_store

    store, scenarios = _three_months(tmp_path)
    home = str(tmp_path / "home")
    corrected = pgn_game("Open", "2024.01.10", 1, 2, "0-1") + pgn_game("Open", "2024.01.11", 3, 4, "1-0")
    write_raw(store, {"GER/2024-01/open.pgn": corrected})
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home)["success"]
    write_raw(store, {"GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 4, 6, "1-0")})
    assert run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=home)["success"]
    assert set(_recorded(store, "fwd", "2024-04")) == {1, 2}

    write_raw(
        store,
        {
            "GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 4, 6, "0-1"),
            "GER/2024-05/may.pgn": pgn_game("May", "2024.05.10", 3, 5, "1/2-1/2"),
        },
    )
    assert run_store(str(store), "2024-04", "2024-05", str(scenarios), dagster_home=home)["success"]
    may = pl.read_csv(store / "lists" / "fwd" / "2024-05.corrections.csv")
    assert set(may["month"]) == {"2024-04"}
    carried = dict(zip(may["player_id"], may["correction"], strict=True))
    # Players 4 and 6 met nobody January's correction changed: `full` rates April as the files give it now.
    expected = _expected_corrections(_list(store, "fwd", "2024-04"), _list(store, "whole", "2024-04"))
    assert carried == {player: expected[player] for player in (4, 6)}
    assert carried[4] < 0 < carried[6]


def test_later_lists_are_named_stale_while_made_from_a_list_that_changed_since(tmp_path: Path):
    """A run of earlier months that rates every list as stored (a rerun; a `forward` scenario keeping its lists) leaves
    the lists after it as they were. A list that changed leaves the later ones stale until they are rated again, and
    every run says so: the one that changed it, one rating it again as it now is, and a later run continuing from them.
    """
    from assets.runtime.runs import run_store

    store, scenarios = _three_months(tmp_path)
    home = str(tmp_path / "home")
    summary = run_store(str(store), "2024-01", "2024-02", str(scenarios), dagster_home=home, out=io.StringIO())
    assert summary["success"] and summary["stale_after"] == {}

    corrected = pgn_game("Open", "2024.01.10", 1, 2, "0-1") + pgn_game("Open", "2024.01.11", 3, 4, "1-0")
    write_raw(store, {"GER/2024-01/open.pgn": corrected})
    for _ in range(2):  # the second run rates the lists as the first stored them: March is as stale as before
        out = io.StringIO()
        summary = run_store(str(store), "2024-01", "2024-02", str(scenarios), dagster_home=home, out=out)
        assert summary["success"] and list(summary["stale_after"]) == ["whole"]
        assert "(2024-03..2024-03, scenarios whole)" in out.getvalue()

    write_raw(store, {"GER/2024-04/apr.pgn": pgn_game("April", "2024.04.10", 1, 6, "1-0")})
    out = io.StringIO()
    summary = run_store(str(store), "2024-04", "2024-04", str(scenarios), dagster_home=home, out=out)
    assert summary["lists_stale_before"] == {"whole": "2024-03"}
    warning = (
        "WARNING: stored lists before 2024-04 were made from a list that has changed since (whole from 2024-03), and "
        f"this run continues from them: bring them up to date with `ratings run --store {store} --from 2024-03 "
        f"--scenarios {scenarios} --dagster-home {home}`"
    )
    assert out.getvalue().count(warning) == 2  # in the plan and in the summary

    out = io.StringIO()
    summary = run_store(str(store), "2024-03", "2024-04", str(scenarios), dagster_home=home, out=out)
    assert summary["success"] and summary["lists_stale_before"] == {} and summary["stale_after"] == {}
    assert "stale" not in out.getvalue() and "has changed since" not in out.getvalue()


def test_a_late_tournament_waiting_for_the_next_list_ends_when_its_trf_says(tmp_path: Path):
    """Under `forward`, a game filed after its list was stored waits for the next list, within its window: the window
    runs from the tournament's end, which a TRF's tag 052 may state after its games' days (here undated games of a
    tournament started on 1 December and ended on 5 January: its lists are those of January to March).
    """
    from assets.runtime.runs import run_store

    store = tmp_path / "store"
    write_raw(
        store,
        {
            "players/2023-11/seed_list.csv": SEED,
            "GER/2023-12/dec.pgn": pgn_game("December", "2023.12.10", 1, 2, "1-0"),
            "GER/2024-01/jan.pgn": pgn_game("January", "2024.01.10", 3, 4, "1-0"),
            "GER/2024-02/feb.pgn": pgn_game("February", "2024.02.10", 1, 3, "1-0"),
        },
    )
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  fwd:\n    rules: fide-historical\n    recalculation: forward\n")
    home = str(tmp_path / "home")
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=io.StringIO())["success"]

    player = "001 {rank:>4}      {name:<33} {rating:>4} GER {fide_id:>11} 1990/01/01  0.0 {rank:>4}  {cell}\n"
    late = "012 Winter Open\n042 2023/12/01\n052 2024/01/05\n" + "".join(
        player.format(rank=rank, name=f"Player,{rank}", rating=2000, fide_id=fide_id, cell=cell)
        for rank, fide_id, cell in ((1, 5, "   2 w 1"), (2, 6, "   1 b 0"))
    )
    write_raw(store, {"GER/2024-01/late.trf": late})
    out = io.StringIO()
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=out)["success"]
    waiting = _game_ids(store, "2024-01", "late.trf")
    assert len(waiting) == 1 and not waiting & _rated_ids(store, "fwd", "2024-01")
    assert "fwd: 1 game(s) filed under 2024-01 after its list was stored" in out.getvalue()
    assert "past their reporting window" not in out.getvalue()

    write_raw(store, {"GER/2024-03/mar.pgn": pgn_game("March", "2024.03.10", 2, 4, "1-0")})
    out = io.StringIO()
    assert run_store(str(store), "2024-03", "2024-03", str(scenarios), dagster_home=home, out=out)["success"]
    assert waiting <= _rated_ids(store, "fwd", "2024-03")
    assert "the list of 2024-03 rates 1 game(s) filed under 2024-01 after their list was stored" in out.getvalue()


def test_a_stored_list_whose_list_before_is_rated_otherwise_is_rated_again_not_kept(tmp_path: Path):
    """A stored list that would keep its tables (a game it rated is gone) though the run rated the list before it
    otherwise (as a code change does to an older version's store) was kept, and the chain broke at it: list_continuity
    refused the run's own lists. It is rated again from the games it rated, a system's and a rule set's alike.
    """
    from assets.runtime.runs import run_store

    store = tmp_path / "store"
    february = pgn_game("Cup", "2024.02.10", 1, 5, "1/2-1/2") + pgn_game("Cup", "2024.02.11", 2, 4, "1-0")
    write_raw(
        store,
        {
            "players/2023-12/seed_list.csv": SEED,
            "GER/2024-01/open.pgn": JANUARY,
            "GER/2024-02/cup.pgn": february,
            "GER/2024-03/match.pgn": pgn_game("Match", "2024.03.10", 2, 3, "0-1"),
        },
    )
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text(
        "scenarios:\n  fwd:\n    rules: fide-historical\n    recalculation: forward\n"
        "  sys:\n    system: glicko2\n    recalculation: forward\n"
    )
    home = str(tmp_path / "home")
    assert run_store(str(store), scenarios_file=str(scenarios), dagster_home=home)["success"]
    # As an older version rated them: player 6 (no games) five points higher on every list, a continuous chain.
    for name in ("fwd", "sys"):
        for month in MONTHS:
            path = store / name / "rating_list" / f"{month}.parquet"
            older = pl.read_parquet(path)
            rating = pl.when(pl.col("player_id") == 6).then(pl.col("rating") + 5).otherwise(pl.col("rating"))
            older.with_columns(rating.cast(older["rating"].dtype)).write_parquet(path)
    corrected = pgn_game("Cup", "2024.02.10", 1, 5, "1/2-1/2") + pgn_game("Cup", "2024.02.11", 2, 4, "0-1")
    write_raw(store, {"GER/2024-02/cup.pgn": corrected})
    out = io.StringIO()
    result = run_store(str(store), scenarios_file=str(scenarios), dagster_home=home, out=out)
    assert result["success"], out.getvalue()[-3000:]
    for name in ("fwd", "sys"):
        lists = [_list(store, name, month) for month in MONTHS]
        assert [continuity_problems(a, b) for a, b in zip(lists[:-1], lists[1:], strict=True)] == [[], []]
        assert (
            lists[1].filter(pl.col("player_id") == 6)["rating"].item()
            == lists[0].filter(pl.col("player_id") == 6)["rating"].item()
        )
        said = (
            f"{name}: 1 game(s) the stored list of 2024-02 rated are given otherwise by the files now "
            "(GER/2024-02/cup.pgn: a corrected result or player): the list before it changed in this run, so the list "
            "of 2024-02 is rated again from the games it rated that the files still give as they were"
        )
        assert said in out.getvalue()
        # Rated again without the corrected game: a system does not rate it, a rule set carries its correction.
        rated = _rated_ids(store, name, "2024-02")
        assert len(rated) == 1 and rated < _game_ids(store, "2024-02", "GER/2024-02/cup.pgn")
    assert "its correction (2 player(s), " in out.getvalue() and "carried to the list of 2024-04" in out.getvalue()


def test_stated_ends_of_raw_records_stored_before_they_kept_them_are_none(tmp_path: Path):
    """Raw records stored by a version that kept no stated end (no `event_end` column) failed the run with a
    ColumnNotFoundError; they state none (the last game's day ends the tournament), and a stated end is still read.
    """
    from datetime import date

    from pipeline.scenarios.recalculation import with_stated_ends

    store = ObjectStore(str(tmp_path))
    (tmp_path / "raw_games").mkdir()
    raw = pl.DataFrame({"source_file": ["GER/2024-01/a.trf"], "event_id": ["e1"], "event_end": [date(2024, 1, 31)]})
    raw.drop("event_end").write_parquet(tmp_path / "raw_games" / "2024-01.parquet")
    raw.write_parquet(tmp_path / "raw_games" / "2024-02.parquet")
    games = pl.DataFrame({"source_file": ["GER/2024-01/a.trf"], "event_id": ["e1"], "game_id": [7]})
    older = with_stated_ends(store, "2024-01", games)
    assert older["_stated_end"].to_list() == [None] and older.schema["_stated_end"] == pl.Date
    assert with_stated_ends(store, "2024-02", games)["_stated_end"].to_list() == [date(2024, 1, 31)]
