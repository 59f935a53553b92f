"""Metadata builders shared by the assets: column schemas from the Pandera models, count tables, validation reports."""

from __future__ import annotations

import inspect
from typing import Any

import dagster as dg
import pandera.errors
import pandera.polars as pa
import polars as pl

from pipeline.code_versions import code_version
from pipeline.scenarios.model import Scenario
from pipeline.text import escape_text, markdown_code_block
from pipeline.validate.month_figures import Counts
from schemas.conformance import validated

KINDS = {"polars", "parquet"}
# Who answers for the tables: the federation's rating office (Dagster owners are team: or e-mail).
OWNERS = ["team:rating-office"]
FAILURE_SAMPLE_ROWS = 20
#: Metadata the assets and checks attach: values Dagster takes as they are (its RawMetadataValue, not exported).
Metadata = dict[str, dg.MetadataValue[Any] | dg.TableSchema | dg.TableColumnLineage | str | int | float | None]


def column_schema(model: type[pa.DataFrameModel]) -> dg.TableSchema:
    """The Pandera model as a Dagster TableSchema: dtypes, nullability, uniqueness, checks and descriptions."""
    schema = model.to_schema()
    columns = []
    for name, column in schema.columns.items():
        other = [str(check.error) for check in column.checks if check.error]
        columns.append(
            dg.TableColumn(
                name=name,
                type=str(column.dtype),
                description=column.description or None,
                constraints=dg.TableColumnConstraints(
                    nullable=bool(column.nullable), unique=bool(column.unique), other=other or None
                ),
            )
        )
    return dg.TableSchema(columns=columns)


def static_metadata(model: type[pa.DataFrameModel], **extra: Any) -> dict[str, Any]:
    """Definition-time metadata of an asset stored as one Pandera model: its columns, for the UI."""
    return {"dagster/column_schema": column_schema(model), **extra}


def table_description(model: type[pa.DataFrameModel], scenario: Scenario | None = None, **fields: str) -> str:
    """An asset's description: its Pandera model's docstring (schemas/ says what each table holds), formatted, under
    the scenario it belongs to.
    """
    text = inspect.cleandoc(model.__doc__ or model.__name__)
    text = text.format(**fields) if fields else text
    if scenario is None:
        return text
    return f"Scenario `{scenario.name}`: {scenario.description.rstrip('.') or scenario.name}.\n\n{text}"


def table_attributes(
    model: type[pa.DataFrameModel],
    stage: str,
    scenario: Scenario | None = None,
    version: str = "",
    kinds: set[str] = KINDS,
    tag: str | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """What an asset stored as one Pandera model's table declares, on an asset or an AssetOut alike: its kinds, its
    description and columns from the model, its stage's code version (`version` adds to the stage's sources) and tag.
    """
    return {
        "kinds": kinds,
        "description": table_description(model, scenario),
        "metadata": static_metadata(model, **metadata),
        "tags": {"stage": tag or stage},
        "code_version": code_version(stage, version),
    }


def counts_table(counts: Counts) -> dg.TableMetadataValue:
    """A two-column table (e.g. reason -> records) for the UI."""
    schema = dg.TableSchema(columns=[dg.TableColumn(counts.key, "string"), dg.TableColumn(counts.value, "int")])
    records = [dg.TableRecord({counts.key: escape_text(k), counts.value: int(v)}) for k, v in counts.counts.items()]
    return dg.MetadataValue.table(records=records, schema=schema)


def validate(model: type[pa.DataFrameModel], frame: pl.DataFrame, what: str) -> pl.DataFrame:
    """Model.validate(frame, lazy=True) (skipped where schemas.conformance shows it passes); on failure a dg.Failure
    with the failure cases for the run page.
    """
    try:
        return validated(model, frame)
    except pandera.errors.SchemaErrors as error:
        cases = error.failure_cases
        sample = cases.head(FAILURE_SAMPLE_ROWS) if isinstance(cases, pl.DataFrame) else cases
        raise dg.Failure(
            description=f"{what} does not match schemas.{model.__name__}: {len(cases)} failure case(s)",
            metadata={
                "num_failure_cases": len(cases),
                "failure_cases_sample": dg.MetadataValue.md(markdown_code_block(str(sample))),
            },
        ) from error
