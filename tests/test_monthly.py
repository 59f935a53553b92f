"""Monthly tables handed between stages: streams name their model, months are written as they come (no Dagster)."""

import time
import weakref
from pathlib import Path

import pandera.polars as pa
import polars as pl
import pytest

from pipeline.scenarios.chain import MissingMonth, chain_tables, month_figures, previous_list
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import (
    MonthStream,
    months_stored,
    stored_games,
    stored_table_months,
    stream_months,
    table_key,
    write_months,
    write_tables,
)
from pipeline.store.object_store import ObjectStore
from schemas import Games, PointsFlow, PointsLedger, RatedGames, RatingList, SystemRatingList
from schemas.util import polars_schema

MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]


class Counts(pa.DataFrameModel):
    n: pl.Int64 = pa.Field(ge=0)


def no_check(model: type, frame: pl.DataFrame, what: str) -> None:
    return None


def test_write_tables_stores_each_month_before_the_range_ends(tmp_path: Path) -> None:
    """A month's tables are on disk two months later at most: a range never waits in memory."""
    store = ObjectStore(str(tmp_path))
    stored_when_computing: dict[str, list[bool]] = {}

    def frames():
        for i, month in enumerate(MONTHS):
            stored_when_computing[month] = [store.exists(table_key(["a"], m)) for m in MONTHS[: max(0, i - 1)]]
            yield month, (pl.DataFrame({"n": [i]}), pl.DataFrame({"n": [i, i]}))

    seen: list[tuple[int, str, int]] = []
    rows = write_tables(
        store,
        [(["a"], Counts), None],  # the second table is computed but not stored (not selected)
        MONTHS,
        frames(),
        no_check,
        lambda index, month, key, n: seen.append((index, month, n)),
    )
    assert all(all(flags) for flags in stored_when_computing.values())
    assert stored_when_computing["2024-04"] == [True, True]
    assert rows == [dict.fromkeys(MONTHS, 1), {}]
    assert seen == [(0, month, 1) for month in MONTHS]
    assert store.list_files() == [f"a/{month}.parquet" for month in MONTHS]


def _freed(reference: weakref.ref, seconds: float = 5.0) -> bool:
    """Whether the frame behind `reference` is freed within `seconds` (the writer thread may still be writing it)."""
    deadline = time.monotonic() + seconds
    while reference() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    return reference() is None


def test_a_written_month_is_not_held_while_the_next_is_computed(tmp_path: Path) -> None:
    """Once written, a month's frames are freed before the next month is computed (write_tables, write_months and
    stream_months hold no reference to them), so a range's peak is one month, not two.
    """
    store = ObjectStore(str(tmp_path))
    made: list[weakref.ref] = []
    freed_before_next: list[bool] = []

    def frames():
        for i, month in enumerate(MONTHS):
            if made:
                freed_before_next.append(_freed(made[-1]))
            frame = pl.DataFrame({"n": [i]})
            made.append(weakref.ref(frame))
            yield month, (frame,)
            del frame

    write_tables(store, [(["a"], Counts)], MONTHS, frames(), no_check, lambda *_: None)

    def compute(month: str) -> pl.DataFrame:
        if made:
            freed_before_next.append(_freed(made[-1]))
        frame = pl.DataFrame({"n": [MONTHS.index(month)]})
        made.append(weakref.ref(frame))
        return frame

    made.clear()
    stream = stream_months(Counts, MONTHS, compute, lambda month, done: None)
    write_months(store, ["b"], stream, MONTHS, no_check, lambda *_: None)
    assert freed_before_next == [True] * 2 * (len(MONTHS) - 1)


def test_write_months_checks_every_frame_and_names_the_missing_month(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    checked: list[str] = []
    stream = MonthStream(Counts, {"2024-01": pl.DataFrame({"n": [1]})})
    with pytest.raises(ValueError, match="a produced nothing for 2024-02"):
        write_months(store, ["a"], stream, ["2024-01", "2024-02"], lambda m, f, what: checked.append(what), print)
    assert checked == ["a 2024-01"]
    extra = MonthStream(Counts, {"2023-12": pl.DataFrame({"n": [1]})})
    with pytest.raises(ValueError, match="2023-12 is not in this run's partitions"):
        write_months(store, ["a"], extra, ["2024-01"], no_check, print)


def test_a_stream_carries_its_model_and_reports_each_month() -> None:
    reported: list[tuple[str, int]] = []
    stream = stream_months(
        Counts, MONTHS[:3], lambda m: pl.DataFrame({"n": [int(m[-1])]}), lambda m, done: reported.append((m, done))
    )
    assert stream.model is Counts and [f["n"][0] for _, f in stream] == [1, 2, 3]
    assert reported == [("2024-01", 1), ("2024-02", 2), ("2024-03", 3)]


def test_chain_tables_say_what_a_chain_stores_and_carries() -> None:
    rules = Scenario(name="plain", rules="fide-2024")
    system = Scenario(name="g2", system="glicko2")
    assert [(t.name, t.model, t.carried) for t in chain_tables(rules)] == [
        ("rating_list", RatingList, True),
        ("rated_games", RatedGames, False),
        ("points_ledger", PointsLedger, False),
        ("points_flow", PointsFlow, False),
    ]
    assert [t.name for t in chain_tables(system)] == ["rating_list", "system_state", "rated_games"]
    assert chain_tables(system)[0].model is SystemRatingList


def test_a_chain_refuses_to_start_after_a_missing_month(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    missing = r"plain/rating_list for 2024-02 is missing \(.*2024-02.parquet\), so 2024-03 cannot be rated"
    with pytest.raises(MissingMonth, match=missing):
        previous_list(store, Scenario(name="plain", rules="fide-2024"), "2024-03", "2024-01")


def test_month_figures_show_first_what_an_officer_checks() -> None:
    frame = pl.DataFrame({"rating": [1500, None, 2100], "newly_rated": [True, False, False]})
    figures = month_figures({"rating_list": frame, "rated_games": pl.DataFrame({"game_id": [1, 2]})}, "fide-2024")
    assert figures["rated_games"] == {"games": 2} and "system_state" not in figures
    assert figures["rating_list"] == {
        "players": 3,
        "rated_players": 2,
        "newly_rated": 1,
        "games": 2,
        "rating_range": "1500-2100",
        "rules": "fide-2024",
    }
    unrated = frame.with_columns(rating=pl.lit(None, dtype=pl.Int64))
    figures = month_figures({"rating_list": unrated, "rated_games": pl.DataFrame({"game_id": [1, 2]})}, "fide-2024")
    assert (figures["rating_list"]["rated_players"], figures["rating_list"]["rating_range"]) == (0, "no rated players")


def test_stored_games_reads_a_month_or_gives_none_of_the_schemas_columns(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    missing = stored_games(store, "2024-01")
    assert missing.height == 0 and dict(missing.schema) == polars_schema(Games)
    assert stored_games(store, "2024-01", ["white_id", "black_id"]).columns == ["white_id", "black_id"]
    frame = pl.DataFrame({"game_id": [7, 9], "white_id": [1, 2], "black_id": [3, 4]})
    store.write_parquet(frame, table_key(["games"], "2024-02"))
    assert stored_games(store, "2024-02", ["black_id"])["black_id"].to_list() == [3, 4]


def test_a_tables_months_are_its_own_files_not_those_of_a_folder_below(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    frame = pl.DataFrame({"n": [1]})
    for key in ("t/2024-03.parquet", "t/2024-01.parquet", "t/old/2023-05.parquet", "t/2024-02.csv"):
        store.write_parquet(frame, key)
    assert stored_table_months(store, ["t"]) == ["2024-01", "2024-03"]
    assert months_stored(store, ["t"], ["2024-03", "2024-02", "2024-01"]) == ["2024-03", "2024-01"]


def test_games_an_older_version_stored_without_a_column_read_as_this_version_stores_them(tmp_path: Path) -> None:
    """A window scenario's look-back reads games of months an older version validated (no also_reported_by): read as
    they were, they failed the run where they joined this version's month (ColumnNotFoundError, rc 1 on the first
    run after an upgrade). stored_games gives every column of the Games model, the missing one empty.
    """
    from pipeline.scenarios.recalculation import stored_games
    from schemas.games import Games
    from schemas.util import empty_frame

    store = ObjectStore(str(tmp_path))
    now = empty_frame(Games)
    assert "also_reported_by" in now.columns
    older = now.drop("also_reported_by")
    store.write_parquet(older, ObjectStore.table_key("games", "2024-01"))
    read = stored_games(store, "2024-01")
    assert read.columns == now.columns and read.schema == now.schema
    assert pl.concat([now, read], how="vertical_relaxed").columns == now.columns
