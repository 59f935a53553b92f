"""The invariants behind the asset checks, on small stores written by hand (no Dagster run)."""

from pathlib import Path

import polars as pl

from pipeline.engine.period import normalize_list, rate_period
from pipeline.invariants.chain import LIST_COLUMNS, chain_problems
from pipeline.invariants.store_checks import mostly_quarantined
from pipeline.invariants.tables import duplicate_problems
from pipeline.scenarios.model import Scenario, rate_scenario_month
from pipeline.store.monthly import stored_rows, table_key
from pipeline.store.object_store import ObjectStore

PLAIN = Scenario(name="plain", description="FIDE's regulations, no events", rules="fide-2024")
LIST_PATH, GAMES_PATH = ["plain", "rating_list"], ["plain", "rated_games"]


def test_stored_rows_and_mostly_quarantined_months(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    for month, records, quarantined in (("2024-01", 10, 2), ("2024-02", 4, 3)):
        store.write_parquet(pl.DataFrame({"record_id": range(records)}), table_key(["raw_games"], month))
        store.write_parquet(pl.DataFrame({"record_id": range(quarantined)}), table_key(["quarantine"], month))
    assert stored_rows(store, "raw_games", "2024-01") == 10 and stored_rows(store, "raw_games", "2024-03") is None
    assert mostly_quarantined(store, ["2024-01", "2024-02", "2024-03"]) == ["2024-02: 3 of 4 records (75%) quarantined"]


def test_duplicate_problems_name_the_month_and_the_ids(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    store.write_parquet(pl.DataFrame({"game_id": [1, 2, 3]}), table_key(["games"], "2024-01"))
    store.write_parquet(pl.DataFrame({"game_id": [1, 2, 2, 5, 5]}), table_key(["games"], "2024-02"))
    outcome = duplicate_problems(store, ["games"], "game_id", ["2024-01", "2024-02", "2024-03"])
    assert outcome.problems == ["2024-02: 2 duplicate game_id(s), e.g. [2, 5]", "2024-03: not stored"]
    assert outcome.stats == {"rows": 8}


def rated_chain(store: ObjectStore) -> pl.DataFrame:
    """Two months of the synthetic federation of test_operations rated and stored; returns the seed list."""
    from tests.test_operations import synthetic_month

    seed, games = synthetic_month(players=600, games=800)
    seed = normalize_list(seed)
    previous = seed
    for month in ("2024-05", "2024-06"):
        result = rate_period(
            previous, games.with_columns(event_start=pl.lit(f"{month}-03").str.to_date()), PLAIN.rules_for(month), month
        )
        store.write_parquet(result.rating_list, table_key(LIST_PATH, month))
        store.write_parquet(result.rated_games, table_key(GAMES_PATH, month))
        previous = result.rating_list
    return seed


def test_chain_problems_pass_on_a_rated_chain_and_name_what_breaks(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    seed = rated_chain(store)
    months = ["2024-05", "2024-06"]
    outcome = chain_problems(store, PLAIN, months, LIST_PATH, GAMES_PATH, "2024-05", lambda: seed)
    assert outcome.floor.passed and outcome.continuity.passed and outcome.conservation.passed
    assert outcome.continuity.stats["players_carried"] == 2 * seed.height
    assert outcome.conservation.stats["months_changes_rederived"] == 2

    # From a later first month, the list before it is read from the store, not asked for.
    later = chain_problems(store, PLAIN, ["2024-06"], LIST_PATH, GAMES_PATH, "2024-05", lambda: pl.DataFrame())
    assert later.continuity.passed

    june = store.read_parquet(table_key(LIST_PATH, "2024-06"))
    store.write_parquet(june.slice(1), table_key(LIST_PATH, "2024-06"))
    broken = chain_problems(store, PLAIN, months, LIST_PATH, GAMES_PATH, "2024-05", lambda: seed)
    assert broken.continuity.problems[0].startswith("2024-06: 1 player(s) of the previous list missing")

    store.fs.rm(store.path(table_key(GAMES_PATH, "2024-05")))
    store.fs.rm(store.path(table_key(LIST_PATH, "2024-06")))
    missing = chain_problems(store, PLAIN, months, LIST_PATH, GAMES_PATH, "2024-05", lambda: seed.select(LIST_COLUMNS))
    # June's per-game table without its list (a run of the table alone, or of a split chain) is not failed for the list
    # its run did not write: the list's own checks name a missing list.
    assert missing.conservation.problems == ["2024-05: not stored"]
    assert missing.conservation.stats["months_without_list"] == "2024-06"
    assert missing.floor.problems == missing.continuity.problems == ["2024-06: not stored"]


def test_continuity_counts_the_correction_a_list_carries() -> None:
    """A rating that moved by its change plus the correction its list carries is carried forward; without the
    correction it is not.
    """
    from pipeline.invariants.chain import continuity_problems

    previous = normalize_list(pl.DataFrame({"player_id": [1, 2], "rating": [2000, 1900]}))
    current = previous.with_columns(
        change=pl.Series([5, -5], dtype=pl.Int32),
        correction=pl.Series([-12, None], dtype=pl.Int32),
        rating=pl.Series([2000 + 5 - 12, 1900 - 5], dtype=pl.Int32),
    )
    assert continuity_problems(previous, current) == []
    [problem] = continuity_problems(previous, current.with_columns(correction=pl.lit(None, dtype=pl.Int32)))
    assert (
        problem.startswith("1 rating(s) differ from previous + change + correction") and "(1, 2000, 5, None" in problem
    )
    # A list without the column (stored before it) is read as correcting nothing.
    assert continuity_problems(previous, current.drop("correction").with_columns(rating=pl.Series([2005, 1895]))) == []


def test_continuity_names_the_players_delisted_who_were_not_rated_before() -> None:
    """Only a rated player can fall below the floor: a delisted player unrated on the list before (or not on it) is a
    problem; one rated before is not.
    """
    from pipeline.invariants.chain import continuity_problems

    previous = normalize_list(pl.DataFrame({"player_id": [1, 2, 3], "rating": [1010, None, 1500]}))
    current = normalize_list(
        pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [None, None, 1500, None], "games": [3, 2, 0, 4]})
    ).with_columns(delisted=pl.Series([True, True, False, True]), change=pl.Series([-20, None, None, None]))
    [problem] = continuity_problems(previous, current)
    assert problem == "2 player(s) delisted who were not rated before, e.g. [2, 4]"
    assert continuity_problems(previous, current.with_columns(delisted=pl.Series([True, False, False, False]))) == []


def test_a_list_of_several_months_that_leaves_out_a_counted_game_is_named(tmp_path: Path) -> None:
    """The first rapid list (1 July 2012) rates January-June 2012. A list whose period stopped short of January (three
    months, as before) left January's game, counted with weight 1 in its per-game table, off the list: conservation
    names it; the list rating the whole period passes.
    """
    rapid = Scenario(name="rapid", rules="fide-rapid-historical")
    seed = normalize_list(pl.DataFrame({"player_id": [1, 2, 3, 4], "rating": [2000] * 4, "games_total": [100] * 4}))
    games = {
        month: pl.DataFrame(
            {"game_id": [n], "event_id": [f"e{n}"], "white_id": [w], "black_id": [b], "white_score": [1.0]},
            schema_overrides={"game_id": pl.UInt64},
        ).with_columns(time_control=pl.lit("rapid"), event_start=pl.lit(f"{month}-10").str.to_date())
        for n, (month, w, b) in enumerate((("2012-01", 1, 2), ("2012-05", 3, 4)), start=1)
    }
    empty = games["2012-01"].clear()
    months = [f"2012-0{m}" for m in range(1, 7)]
    paths = ["rapid", "rating_list"], ["rapid", "rated_games"]

    def rate_chain(start: str) -> None:
        previous = seed
        for month in months:
            result = rate_scenario_month(rapid, previous, lambda m: games.get(m, empty), month, start=start)
            store.write_parquet(result.rating_list, table_key(paths[0], month))
            store.write_parquet(result.rated_games, table_key(paths[1], month))
            previous = result.rating_list

    store = ObjectStore(str(tmp_path))
    rate_chain("2012-01")
    assert chain_problems(store, rapid, months, *paths, "2012-01", lambda: seed).conservation.passed
    rate_chain("2012-04")  # the list of June rates April-June only
    short = chain_problems(store, rapid, months, *paths, "2012-01", lambda: seed).conservation.problems
    assert short == [
        "2012-06: 2 player(s) with games counted in rated_games of 2012-01..2012-06 but none on the list that rates "
        "that period, e.g. [1, 2]"
    ]
    # From a run starting within the period, the months before it are read from the store.
    assert chain_problems(store, rapid, months[4:], *paths, "2012-01", lambda: seed).conservation.problems == short


def test_the_chain_pass_checks_each_stored_table_in_one_chunk(tmp_path: Path, monkeypatch) -> None:
    import pipeline.invariants.chain as chain_module

    store = ObjectStore(str(tmp_path))
    seed = rated_chain(store)
    months = ["2024-05", "2024-06"]
    # Files of several row groups (a fide-scale list has six), which Polars reads as a chunk each.
    for path in (LIST_PATH, GAMES_PATH):
        for month in months:
            key = table_key(path, month)
            store.read_parquet(key).write_parquet(store.path(key), row_group_size=100)
    assert store.read_parquet(table_key(LIST_PATH, "2024-06"))["player_id"].n_chunks() > 1
    chunks: list[int] = []
    for name in ("continuity_problems", "conservation_problems"):
        check = getattr(chain_module, name)

        def counted(*args, check=check, **kwargs):
            chunks.extend(max(frame.n_chunks("all")) for frame in args if isinstance(frame, pl.DataFrame))
            return check(*args, **kwargs)

        monkeypatch.setattr(chain_module, name, counted)
    outcome = chain_problems(store, PLAIN, months, LIST_PATH, GAMES_PATH, "2024-05", lambda: seed)
    assert outcome.continuity.passed and outcome.conservation.passed
    assert len(chunks) == 8 and set(chunks) == {1}
