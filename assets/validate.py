"""Validate stage: split each month's raw records into games, quarantine and the identity report.

The split: pipeline.validate.split.MonthValidator; each month's figures (pipeline.validate.month_figures) as metadata.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from assets.metadata import counts_table, table_attributes
from assets.storage import ObjectStoreResource, write_month_tables
from pipeline.operations import progress
from pipeline.rules.calendar import stated_tournament_ends
from pipeline.store.monthly import MonthlyFrames
from pipeline.text import markdown_list
from pipeline.validate.month_figures import Counts, validation_figures
from pipeline.validate.split import MonthValidator
from schemas import Games, Identity, Quarantine

GROUP = "validate"


# The validate step's tables, in the order a month's frames come.
VALIDATED = {"games": Games, "quarantine": Quarantine, "identity": Identity}


def build_validation_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    # The three tables of a month are written together as they are made: none waits for a whole range.
    @dg.multi_asset(
        name="validate_games",
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"raw_games": dg.AssetIn("raw_games")},
        outs={name: dg.AssetOut(**table_attributes(model, "validate")) for name, model in VALIDATED.items()},
    )
    def validate_games(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, raw_games: MonthlyFrames
    ) -> Iterator[dg.MaterializeResult]:
        months = list(context.partition_keys)
        object_store = store.store()
        validate_month = MonthValidator(object_store, months)

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
            raw = raw_games[month]
            games, quarantine, identities = validate_month(month, raw)
            figures = validation_figures(
                raw.height, games, quarantine, identities, month, stated_ends=stated_tournament_ends(raw)
            )
            if "warning" in figures["quarantine"]:
                context.log.warning(f"{month}: {figures['quarantine']['warning']}")
            for table, values in figures.items():
                metadata = {k: counts_table(v) if isinstance(v, Counts) else v for k, v in values.items()}
                context.add_asset_metadata(metadata, asset_key=table, partition_key=month)
            unread = dg.MetadataValue.md(markdown_list(validate_month.registry_notes(month)) or "none")
            context.add_asset_metadata({"registry_problems": unread}, asset_key="games", partition_key=month)
            progress.report("validate", month, months.index(month) + 1, len(months))
            return games, quarantine, identities

        tables = [(dg.AssetKey(name), model) for name, model in VALIDATED.items()]
        write_month_tables(context, object_store, tables, months, ((month, one_month(month)) for month in months))
        yield from (dg.MaterializeResult(asset_key=name) for name in VALIDATED)

    return [validate_games]
