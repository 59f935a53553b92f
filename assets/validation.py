"""Validate stage: split each month's raw records into games, quarantine and the identity report
(pipeline.validate.MonthValidator), with each month's figures (pipeline.month_report) as metadata.
"""

import dagster as dg
import polars as pl

from assets.metadata import counts_table, table_attributes
from assets.storage import ObjectStoreResource
from pipeline import progress
from pipeline.month_report import identity_statuses, quarantine_figures
from pipeline.monthly import MonthlyFrames, MonthStream, split_stream
from pipeline.validate import MonthValidator
from schemas import Games, Identity, Quarantine

GROUP = "validate"


def build_validation_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.multi_asset(
        name="validate_games",
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"raw_games": dg.AssetIn("raw_games")},
        outs={
            "games": dg.AssetOut(**table_attributes(Games, "validate")),
            "quarantine": dg.AssetOut(**table_attributes(Quarantine, "validate")),
            "identity": dg.AssetOut(**table_attributes(Identity, "validate")),
        },
    )
    def validate_games(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, raw_games: MonthlyFrames
    ) -> tuple[MonthStream, MonthStream, MonthStream]:
        months = list(context.partition_keys)
        validate_month = MonthValidator(store.store(), months)

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
            raw = raw_games[month]
            games, quarantine, identities = validate_month(month, raw)
            figures = quarantine_figures(raw.height, quarantine)
            if figures.warning:
                context.log.warning(f"{month}: {figures.warning}")
            context.add_asset_metadata(
                {"games": games.height, "raw_records": raw.height}, asset_key="games", partition_key=month
            )
            context.add_asset_metadata(
                {
                    "quarantined": figures.quarantined,
                    "quarantined_share": round(figures.share, 4),
                    **({"warning": figures.warning} if figures.warning else {}),
                    "by_reason": counts_table(figures.by_reason, "reason", "records"),
                    "by_file": counts_table(figures.by_file, "file", "records"),
                    # One number per reason as well, so the UI can plot each across months.
                    **{f"reason/{code}": n for code, n in figures.by_reason.items()},
                },
                asset_key="quarantine",
                partition_key=month,
            )
            statuses = identity_statuses(identities)
            context.add_asset_metadata(
                {"players": identities.height, **{f"status/{code}": n for code, n in statuses.items()}},
                asset_key="identity",
                partition_key=month,
            )
            progress.report("validate", month, months.index(month) + 1, len(months))
            return games, quarantine, identities

        games, quarantine, identity = split_stream(months, one_month, models=[Games, Quarantine, Identity])
        return games, quarantine, identity

    return [validate_games]
