"""Validate stage: split each month's raw records into rated-game candidates (games) and quarantine."""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream, split_stream
from assets.metadata import KINDS, OWNERS, counts_table, static_metadata
from assets.versions import code_version
from assets.resources import ObjectStoreResource
from pipeline.ingest import read_players
from pipeline.validate import split_games
from schemas import QUARANTINE_REASONS, Games, Quarantine

GROUP = "validate"

GAMES_DESCRIPTION = """Validated games of the month: the only input of the rating calculation.

One row per game that passed every check (parsable, played, known players, result in domain, date in
the month, not a duplicate, plausible stated ratings), in the canonical columns of schemas.Games.
Validated against the Pandera model on every run."""

QUARANTINE_DESCRIPTION = """Raw records of the month that did not become games, each with a reason code.

Forfeits, byes, unknown players, duplicates, unreadable lines... with the raw text, source file and
line so the federation can correct its dump. Nothing is dropped: raw_games = games + quarantine.
Reason codes: """ + ", ".join(f"`{code}` ({text})" for code, text in QUARANTINE_REASONS.items()) + "."


def build_validation_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.multi_asset(
        name="validate_games",
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"raw_games": dg.AssetIn("raw_games")},
        outs={
            "games": dg.AssetOut(kinds=KINDS, description=GAMES_DESCRIPTION, metadata=static_metadata(Games),
                                 code_version=code_version("validate"), owners=OWNERS, tags={"stage": "validate"}),
            "quarantine": dg.AssetOut(kinds=KINDS, description=QUARANTINE_DESCRIPTION, metadata=static_metadata(Quarantine),
                                      code_version=code_version("validate"), owners=OWNERS, tags={"stage": "validate"}),
        },
    )
    def validate_games(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, raw_games: MonthlyFrames
    ) -> tuple[MonthStream, MonthStream]:
        months = list(context.partition_keys)
        object_store = store.store()

        # The registry is read once for the run: a month sees the players registered up to it.
        registry = read_players(object_store, months[-1])

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
            raw = raw_games[month]
            games, quarantine = split_games(raw, registry.filter(pl.col("registered") <= month), month)
            reasons = dict(quarantine.group_by("reason").len().sort("len", "reason", descending=[True, False]).iter_rows())
            context.add_asset_metadata(
                {"games": games.height, "raw_records": raw.height}, asset_key="games", partition_key=month
            )
            context.add_asset_metadata(
                {
                    "quarantined": quarantine.height,
                    "by_reason": counts_table(reasons, "reason", "records"),
                    # One number per reason as well, so the UI can plot each across months.
                    **{f"reason/{code}": n for code, n in reasons.items()},
                },
                asset_key="quarantine",
                partition_key=month,
            )
            progress.report("validate", month, months.index(month) + 1, len(months))
            return games, quarantine

        games_stream, quarantine_stream = split_stream(months, one_month, outputs=2)
        return games_stream, quarantine_stream

    return [validate_games]
