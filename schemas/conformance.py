"""Every data check of a Pandera model in one Polars query, so that only a frame that may fail goes through Pandera.

Pandera's Polars backend runs each check of each column as queries of their own (`Games` takes about
50, with nearly 20 ms of fixed cost per table whatever its size), and the pipeline validates every table
of every month it stores. `conforms` asks the same questions in one query: the model's own dtype test
for each column, then nullability (NaN counting as null for floats), uniqueness and every check the model
declares (its own check functions, their outputs reduced as Pandera reduces them). When it answers
True, Pandera would accept the frame as it is; anything else (a failed check, or a model using a
feature this does not reproduce, such as coercion or defaults) goes to Pandera, whose report is the
one users see. So the models stay the single truth, and a frame never passes here that Pandera would
refuse.
"""

from __future__ import annotations

from functools import cache

import pandera.polars as pa
import polars as pl
from pandera.api.checks import Check
from pandera.api.polars.types import PolarsData
from pandera.constants import CHECK_OUTPUT_KEY


@cache
def _schema(model: type[pa.DataFrameModel]) -> pa.DataFrameSchema | None:
    """The model's schema, or None when it uses what `conforms` does not reproduce."""
    schema = model.to_schema()
    if (
        schema.coerce
        or schema.strict not in (True, False)  # "filter" drops columns: Pandera's output differs from its input
        or schema.ordered
        or schema.unique
        or schema.add_missing_columns
        or schema.drop_invalid_rows
        or getattr(schema, "parsers", None)
        or any(check.groupby is not None for check in schema.checks)
    ):
        return None
    for column in schema.columns.values():
        if (
            column.coerce
            or column.regex
            or not column.required
            or column.default is not None
            or column.drop_invalid_rows
            or getattr(column, "parsers", None)
            or any(check.groupby is not None for check in column.checks)
        ):
            return None
    return schema


def _check_passed(check: Check, data: PolarsData, name: str) -> pl.LazyFrame | bool:
    """One row, one column `name`: whether the check holds on every row, as Pandera's Polars backend decides it.

    The check's output comes from Pandera's own backend (several output columns folded into one), with
    the built-in check function looked up again first, as Check.__call__ does (a backend registered
    after the model was built adds its data types to the registry's function, not to the one the
    check kept); a null output passes with ignore_na and fails without, as the backend reduces it.
    """
    builtin = getattr(check._check_fn, "__name__", None)
    if builtin is not None and check.is_builtin_check(builtin):
        check._check_fn = check.get_builtin_check_fn(builtin)
    output = check.get_backend(data.lazyframe)(check).apply(data)
    if isinstance(output, bool):
        return output
    holds = pl.col(CHECK_OUTPUT_KEY)
    holds = (holds | holds.is_null()) if check.ignore_na else holds.fill_null(False)
    return output.select(holds.all().alias(name))


def ascends_strictly(values: pl.Series) -> bool:
    """Whether each value is above the one before, so that all are distinct: a list kept in id order is then known
    unique in one pass (1 ms for 737,000 ids) rather than by hashing them (25-35 ms). Its first values decide first.
    """
    if not values.dtype.is_integer() or values.null_count():
        return False

    def ascends(part: pl.Series) -> bool:  # compared, not subtracted: a difference of UInt64 ids can overflow
        return part.len() < 2 or bool((part.slice(1) > part.slice(0, part.len() - 1)).all())

    return ascends(values.head(64)) and ascends(values)


def conforms(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> bool:
    """True when Pandera's model.validate(frame) would pass and return the frame's data unchanged; False when it may
    not (then ask Pandera, which says why or finds that it does pass).
    """
    model_schema = _schema(model)
    if model_schema is None:
        return False
    schema = frame.schema
    if model_schema.strict is True and any(name not in model_schema.columns for name in schema):
        return False
    lazy = frame.lazy()
    answers: list[pl.LazyFrame] = []
    try:
        for number, (name, column) in enumerate(model_schema.columns.items()):
            if name not in schema:
                return False
            data = PolarsData(lazy, name)
            # As the backend calls it: with the Polars dtype, which its Polars engine types accept.
            if column.dtype is not None and not column.dtype.check(schema[name], data):
                return False
            if not column.nullable:
                present = pl.col(name).is_not_null()
                if schema[name] in (pl.Float32, pl.Float64):  # Pandera counts NaN as missing in floats
                    present &= pl.col(name).is_not_nan()
                answers.append(lazy.select(present.all().alias(f"present {number}")))
            if column.unique and not ascends_strictly(frame[name]):
                answers.append(lazy.select((pl.col(name).n_unique() == pl.len()).alias(f"unique {number}")))
            for index, check in enumerate(column.checks):
                answer = _check_passed(check, data, f"check {number}.{index}")
                if answer is False:
                    return False
                if answer is not True:
                    answers.append(answer)
        for index, check in enumerate(model_schema.checks):
            answer = _check_passed(check, PolarsData(lazy, "*"), f"frame check {index}")
            if answer is False:
                return False
            if answer is not True:
                answers.append(answer)
        if not answers:
            return True
        return all(pl.concat(answers, how="horizontal").collect().row(0))
    except Exception:
        return False  # a check that cannot run (Pandera reports it as the check's error), or a dtype it cannot compare


def validated(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> pl.DataFrame:
    """model.validate(frame, lazy=True), skipped when `conforms` shows it would pass (then the frame itself)."""
    if conforms(model, frame):
        return frame
    return model.validate(frame, lazy=True)
