"""A seed list's values out of range: named with their file and line and left out, or warned of in the run's plan."""

from __future__ import annotations

from pathlib import Path

from pipeline.ingest.dumps import read_month
from pipeline.ingest.registry import registry_problem_lines, registry_table, seed_problems, seed_rows
from pipeline.rules.model import preset_names, resolve_rules, schedule_months
from pipeline.scenarios.chain import rate_months, seeds_below_floor
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from pipeline.validate.split import MonthValidator
from schemas import Games, RatingList, empty_frame
from schemas.rating_list import LARGEST_LIST_K
from schemas.util import column_bounds
from tests.landing import write_raw

SEED = "player_id,rating,games_total,k\n"


def test_a_seed_rating_or_k_out_of_range_is_named_and_leaves_the_player_out() -> None:
    """A rating the rating list's schema refuses (21000, -1) and a K above any list's (700, 41) are named, and those
    players are left out of the seed list; the schema's and the largest K's own bounds are read.
    """
    low, high = column_bounds(RatingList, "rating")
    assert (low, high) == (0, 4000)
    rows = [(1, high + 1, ""), (2, low - 1, ""), (3, high, ""), (4, 2000, 700), (5, 2000, LARGEST_LIST_K + 1)]
    rows += [(6, 2000, LARGEST_LIST_K), (7, low, 1)]
    table = registry_table((SEED + "".join(f"{p},{r},50,{k}\n" for p, r, k in rows)).encode())
    problems = seed_problems(table).select("player_id", "detail").rows()
    assert problems == [
        (1, f"rating '{high + 1}' is out of range ({low} to {high})"),
        (2, f"rating '{low - 1}' is out of range ({low} to {high})"),
        (4, f"k '700' is out of range (1 to {LARGEST_LIST_K})"),
        (5, f"k '{LARGEST_LIST_K + 1}' is out of range (1 to {LARGEST_LIST_K})"),
    ]
    assert seed_rows(table)["player_id"].to_list() == [3, 6, 7]
    # The rapid list's own columns are held to the same bounds.
    rapid = registry_table(f"player_id,rapid_rating,rapid_k\n1,{high + 1},\n2,2000,700\n3,2000,20\n".encode())
    assert seed_problems(rapid, "rapid")["player_id"].to_list() == [1, 2]


def test_a_seed_rating_above_the_lists_range_is_a_named_line_not_a_failed_list(tmp_path: Path) -> None:
    """Store S of the registry audit: a seed rating of 21000 reached the first list, which its schema then refused
    with a traceback naming no file; now the run names the file and line, and the list holds the others.
    """
    store = ObjectStore(str(tmp_path))
    write_raw(tmp_path, {"players/2024-01/seed_list.csv": SEED + "1,21000,50,\n2,1800,50,\n"})
    rate = rate_months(store, Scenario(name="actual", rules="fide-2024"), ["2024-01"], "2024-01")
    rating_list = rate("2024-01", lambda _month: empty_frame(Games))[0]
    RatingList.validate(rating_list)
    assert rating_list["player_id"].to_list() == [2]
    assert registry_problem_lines(store, ["2024-01"]) == [
        "WARNING: raw/players/2024-01/seed_list.csv line 2: rating '21000' is out of range (0 to 4000): player 1 is "
        "left out of the seed list"
    ]


def test_the_largest_list_k_is_the_largest_k_any_preset_declares() -> None:
    """The bound of a seed list's K is no preset's K under it: a preset declaring a larger one must raise it."""
    declared = set()
    for name in preset_names():
        for month in schedule_months(name) or ["2024-01"]:
            k = resolve_rules(name, month).k
            tiers = [k.value] if k.kind == "constant" else [k.newcomer, k.junior, k.standard, k.elite]
            declared |= {value for value in tiers if value is not None}
    assert max(declared) == LARGEST_LIST_K


def test_the_plan_warns_of_seed_ratings_below_the_first_months_floor(tmp_path: Path) -> None:
    """A seed rating of 5 (a typo for 1500) is kept and delists its player once they play: the plan says so, once a
    seed list, against the lowest floor of the rule-set scenarios starting from it that have one in the chain's first
    month (not Elo's, which has none, nor a rating system's): a rating one of them floors by design is not a typo.
    """
    from pipeline.operations.run_plan import plan_run

    store = ObjectStore(str(tmp_path))
    seeds = SEED + "1,5,50,\n2,1800,50,\n3,1200,50,\n"
    games = "event_id,round,date,white_id,black_id,result\ne,1,2024-01-03,1,2,0-1\n"
    write_raw(tmp_path, {"players/2024-01/seed_list.csv": seeds, "GER/2024-01/games.csv": games})
    scenarios = [
        Scenario(name="actual", rules="fide-2024"),
        Scenario(name="sonas", rules="sonas-2002"),
        Scenario(name="elo", rules="elo-32"),
        Scenario(name="glicko", system="glicko2"),
    ]
    floors = {s.name: s.rules_for("2024-01").floor for s in scenarios if not s.is_system}
    lowest = min(floor for floor in floors.values() if floor is not None)
    # The setting this test needs: player 3's 1200 lies between the two floors, player 1's 5 below both.
    assert floors["elo"] is None and floors["actual"] > 1200 > floors["sonas"] == lowest > 5
    (line,) = seeds_below_floor(store, scenarios, "2024-01")
    # One line for the seed list the rule-set scenarios with a floor start from, against the lowest of their floors:
    # player 3's 1200 is below fide-2024's 1400 only.
    assert line.startswith(
        f"WARNING: actual, sonas: 1 player(s) of the seed list rated below the lowest floor of their rules in 2024-01 "
        f"({lowest}, sonas-2002): 1 (5); "
    ), line
    # The run's plan says it where the run starts the chain, not where it continues a stored list.
    (tmp_path / "scenarios.yaml").write_text("scenarios:\n  actual:\n    rules: fide-2024\n")
    plan = plan_run(str(tmp_path), None, None, str(tmp_path / "scenarios.yaml"))
    assert any(note.startswith("WARNING: actual: ") and "1 (5)" in note for note in plan.notes)
    # What the line says: the chain keeps the seed as it stands until the player plays, then delists them.
    validated = MonthValidator(store, ["2024-01"])("2024-01", read_month(store, "2024-01")).games
    rate = rate_months(store, scenarios[0], ["2024-01"], "2024-01")
    january = rate("2024-01", lambda _month: validated)[0].sort("player_id")
    assert january.select("rating", "delisted").rows()[0::2] == [(None, True), (1200, False)]
