"""Month arithmetic on Polars columns (pipeline.months) equals the plain one, and the Kaggle MonthID's one rule."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipeline.evaluation.raters import period_month
from pipeline.formats.fields import KAGGLE_LAST_MONTH_ID, kaggle_month_index, parse_month_cell
from pipeline.months import (
    first_day,
    month_from_index,
    month_index,
    month_index_of,
    month_index_of_day,
    month_label,
    month_range,
    month_start,
)

# Months of every calendar month, a year below 1000 (its label padded to four digits) and far ahead.
MONTHS = [*month_range("1998-11", "2001-02"), "0999-12", "1000-01", "2100-12"]


def test_the_column_forms_equal_the_plain_ones() -> None:
    frame = pl.DataFrame({"month": MONTHS, "day": [first_day(m).replace(day=28) for m in MONTHS]})
    got = frame.select(
        month_index_of(pl.col("month")).alias("index"),
        month_index_of_day(pl.col("day")).alias("of_day"),
        month_label(month_index_of(pl.col("month"))).alias("label"),
        month_start(month_index_of(pl.col("month"))).alias("start"),
    )
    assert got["index"].to_list() == [month_index(m) for m in MONTHS]
    assert got["of_day"].to_list() == [month_index(m) for m in MONTHS]
    assert got["label"].to_list() == [month_from_index(month_index(m)) for m in MONTHS] == MONTHS
    assert got["start"].to_list() == [first_day(m) for m in MONTHS]


# The contest's MonthID: 1 is January 1999 (its data description), counted on; nothing outside 1..1200.
@pytest.mark.parametrize(
    ("number", "month"),
    [(1, "1999-01"), (12, "1999-12"), (13, "2000-01"), (85, "2006-01"), (KAGGLE_LAST_MONTH_ID, "2098-12")],
)
def test_a_kaggle_month_id_is_one_month_for_the_csv_reader_and_evaluate(number: int, month: str) -> None:
    read = pl.select(
        month_label(kaggle_month_index(pl.lit(number))).alias("label"),
        parse_month_cell(pl.lit(str(number))).alias("cell"),
    ).row(0)
    assert read == (month, date.fromisoformat(f"{month}-01"))
    assert period_month(number) == month


@pytest.mark.parametrize("number", [0, -1, KAGGLE_LAST_MONTH_ID + 1])
def test_a_number_outside_the_kaggle_months_is_none_of_them(number: int) -> None:
    assert pl.select(kaggle_month_index(pl.lit(number))).item() is None
    assert period_month(number) == month_from_index(number)
