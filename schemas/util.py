"""Helpers that turn a Pandera model into a Polars schema, an empty frame or column docs."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    """Column name -> Polars dtype, in the model's declared order."""
    schema = model.to_schema()
    return pl.Schema({name: column.dtype.type for name, column in schema.columns.items()})


def empty_frame(model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """A zero-row frame with exactly the model's columns and dtypes."""
    return pl.DataFrame(schema=polars_schema(model))


def conform(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """Select the model's columns in order, casting each to its declared dtype."""
    schema = polars_schema(model)
    return frame.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])


def column_bounds(model: type[pa.DataFrameModel], column: str) -> tuple[float | None, float | None]:
    """The lowest and highest value the model's Field(ge=..., le=...) allow in `column`, None where it sets none."""
    lowest = highest = None
    for check in model.to_schema().columns[column].checks:
        if check.name == "greater_than_or_equal_to":
            lowest = check.statistics["min_value"]
        elif check.name == "less_than_or_equal_to":
            highest = check.statistics["max_value"]
    return lowest, highest


def column_descriptions(model: type[pa.DataFrameModel]) -> dict[str, str]:
    """Column name -> description, as written in the model's Field(description=...)."""
    schema = model.to_schema()
    return {name: (column.description or "") for name, column in schema.columns.items()}
