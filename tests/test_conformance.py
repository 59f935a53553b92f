"""schemas.conformance: the one-query answer agrees with Pandera's validation, on real tables and on spoiled copies."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pandera.errors
import pandera.polars as pa
import polars as pl
import pytest

import schemas
from pipeline.engine.period import normalize_list, rate_period
from pipeline.ingest.dumps import read_month
from pipeline.ingest.registry import read_players, read_seed_list
from pipeline.rules.model import resolve_rules
from pipeline.store.object_store import ObjectStore
from pipeline.validate.split import split_games
from schemas import Games, Quarantine, RatedGames, RatingList, RawGames, SystemRatingList
from schemas.conformance import conforms, validated
from schemas.util import empty_frame

MODELS = [getattr(schemas, name) for name in schemas.__all__ if isinstance(getattr(schemas, name), type)]
MONTH = "2024-02"
SPOILED_PER_MODEL = 30  # besides a missing value in each column; Pandera takes about 30 ms to report a refusal


def pandera_passes(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> bool:
    try:
        model.validate(frame, lazy=True)
    except (pandera.errors.SchemaErrors, pandera.errors.SchemaError):
        return False
    return True


@pytest.fixture(scope="module")
def real_tables(tiny_landing_zone: Path) -> dict[type[pa.DataFrameModel], pl.DataFrame]:
    """One month of the tiny federation through the pure pipeline: records, games, quarantine, list, per-game table."""
    store = ObjectStore(str(tiny_landing_zone.parent))
    seed = read_seed_list(store)
    previous = normalize_list(seed, "2024-01") if seed is not None else None
    players = read_players(store, MONTH)
    raw = read_month(store, MONTH)
    games, quarantine = split_games(raw, players, MONTH)
    period = rate_period(previous, games, resolve_rules("fide-2024", MONTH), MONTH, players=players)
    system_list = period.rating_list.with_columns(
        pl.Series("deviation", [80.0 + i % 50 for i in range(period.rating_list.height)]),
        pl.Series("volatility", [None if i % 3 else 0.06 for i in range(period.rating_list.height)], dtype=pl.Float64),
    )
    return {
        RawGames: raw,
        Games: games,
        Quarantine: quarantine,
        RatingList: period.rating_list,
        RatedGames: period.rated_games,
        SystemRatingList: system_list,
    }


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_model_is_answered_in_one_query(model: type[pa.DataFrameModel]) -> None:
    # False would send every table of that model through Pandera: correct, but the speed-up lost.
    assert conforms(model, empty_frame(model))


def test_the_pipelines_own_tables_conform_as_pandera_says(real_tables: dict) -> None:
    for model, frame in real_tables.items():
        assert frame.height > 0, model.__name__
        assert pandera_passes(model, frame), model.__name__
        assert conforms(model, frame), model.__name__
        assert validated(model, frame) is frame


def spoiled(frame: pl.DataFrame, rng: random.Random) -> Iterator[tuple[str, pl.DataFrame]]:
    """Copies of a valid frame, each spoiled in one way a writer could get wrong (or harmlessly, e.g. a null where
    the model allows one).
    """
    row = rng.randrange(frame.height)
    other = (row + 1 + rng.randrange(frame.height - 1)) % frame.height

    def cell(column: str, value: object) -> pl.DataFrame:
        at_row = pl.int_range(pl.len()) == row
        return frame.with_columns(pl.when(at_row).then(value).otherwise(pl.col(column)).alias(column))

    for column, dtype in frame.schema.items():
        yield f"{column} null", cell(column, pl.lit(None, dtype))
        yield f"{column} repeated", cell(column, pl.col(column).get(other))
        if dtype.is_integer():
            for value in (0, -1, 1, 4001, 10**6):
                if pl.Series([value]).cast(dtype, strict=False).null_count() == 0:
                    yield f"{column} = {value}", cell(column, pl.lit(value, dtype))
            yield f"{column} as Float64", frame.with_columns(pl.col(column).cast(pl.Float64))
        elif dtype.is_float():
            for value in (float("nan"), -0.5, 0.0, 0.25, 0.5, 1e9):
                yield f"{column} = {value}", cell(column, pl.lit(value, dtype))
            yield f"{column} as Float32", frame.with_columns(pl.col(column).cast(pl.Float32))
        elif dtype == pl.Utf8:
            for value in ("", "x", "2024-13", "24-01", "classical", "blitz "):
                yield f"{column} = {value!r}", cell(column, pl.lit(value, dtype))
            yield f"{column} as Categorical", frame.with_columns(pl.col(column).cast(pl.Categorical))
        elif dtype == pl.Boolean:
            yield f"{column} as Int8", frame.with_columns(pl.col(column).cast(pl.Int8))
        yield f"without {column}", frame.drop(column)
    yield "an extra column", frame.with_columns(pl.lit(1).alias("extra"))
    if {"white_id", "black_id"} <= set(frame.columns):
        yield "self-play", cell("black_id", pl.col("white_id"))
    yield "columns reordered", frame.select(reversed(frame.columns))
    yield "no rows", frame.clear()


def test_spoiled_tables_conform_exactly_when_pandera_accepts_them(real_tables: dict) -> None:
    rng = random.Random(17)
    compared = refused = 0
    for model, frame in real_tables.items():
        every = list(spoiled(frame, rng))
        missing = [(what, copy) for what, copy in every if what.endswith((" null", " = nan"))]  # each column's
        others = [(what, copy) for what, copy in every if not what.endswith((" null", " = nan"))]
        for what, copy in missing + rng.sample(others, min(len(others), SPOILED_PER_MODEL)):
            passes = pandera_passes(model, copy)
            assert conforms(model, copy) == passes, f"{model.__name__}: {what} (Pandera: {passes})"
            compared += 1
            refused += not passes
    # Both answers are exercised: most spoilings are refused, some (nulls where allowed, order) are not.
    assert compared > 200 and 0.3 * compared < refused < compared


def test_a_failing_frame_still_gets_pandera_s_report(real_tables: dict) -> None:
    games = real_tables[Games]
    bad = games.with_columns(games["white_score"].scatter(0, 0.25))
    with pytest.raises(pandera.errors.SchemaErrors) as raised:
        validated(Games, bad)
    assert "white_score" in str(raised.value) and "isin" in str(raised.value)


def test_a_model_using_what_one_query_does_not_reproduce_goes_to_pandera() -> None:
    class Coerced(pa.DataFrameModel):
        value: pl.Int64 = pa.Field(ge=0)

        class Config:
            coerce = True

    frame = pl.DataFrame({"value": [1, 2]}, schema={"value": pl.Int32})
    assert not conforms(Coerced, frame)  # Pandera would cast the column: its output is not the frame
    assert validated(Coerced, frame).schema["value"] == pl.Int64


@pytest.mark.parametrize(
    ("check", "values", "passes"),
    [
        (lambda data: data.lazyframe.select(pl.col("a") > 0, pl.col("b") > 0), [(1, 1), (1, None)], True),
        (lambda data: data.lazyframe.select(pl.col("a") > 0, pl.col("b") > 0), [(1, 1), (0, None)], False),
        (lambda data: data.lazyframe.select(pl.col("a") > pl.col("b")), [(2, 1), (None, 1)], True),
        (lambda data: True, [(1, 1)], True),
        (lambda data: False, [(1, 1)], False),
    ],
)
def test_frame_checks_reduce_as_pandera_reduces_them(check: Callable, values: list, passes: bool) -> None:
    class Model(pa.DataFrameModel):
        a: pl.Int64 = pa.Field(nullable=True)
        b: pl.Int64 = pa.Field(nullable=True)

        @pa.dataframe_check
        @classmethod
        def given(cls, data: pa.PolarsData) -> pl.LazyFrame | bool:
            return check(data)

    frame = pl.DataFrame(values, schema={"a": pl.Int64, "b": pl.Int64}, orient="row")
    assert pandera_passes(Model, frame) == passes
    assert conforms(Model, frame) == passes


def test_ids_in_order_are_unique_without_hashing_and_a_repeat_is_still_found(real_tables: dict) -> None:
    """A strictly ascending id column is known unique from one pass; any repeat, in order or not, still fails."""
    players = real_tables[RatingList].sort("player_id")
    assert players.height > 100 and conforms(RatingList, players)
    ids = players["player_id"]
    neighbour = players.with_columns(ids.scatter(80, ids[79]))  # equal to the row before: no longer strictly ascending
    far = players.with_columns(ids.scatter(10, ids[90])).sort("player_id", descending=True)  # out of order and repeated
    shuffled = players.sample(fraction=1.0, shuffle=True, seed=3)  # unique, not in order
    for frame, passes in ((neighbour, False), (far, False), (shuffled, True)):
        assert conforms(RatingList, frame) == passes == pandera_passes(RatingList, frame)
    # Hashed UInt64 ids whose differences overflow: 0 comes back after three rising steps of a third of 2**64.
    games = real_tables[Games].head(4).with_columns(pl.Series("game_id", [0, 6 * 10**18, 12 * 10**18, 0], pl.UInt64))
    assert not conforms(Games, games) and not pandera_passes(Games, games)
