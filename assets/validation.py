"""Validate stage: split each month's raw records into rated-game candidates (games) and quarantine."""

import dagster as dg
import pandera.polars as pa
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream, split_stream, table_key
from assets.metadata import KINDS, OWNERS, counts_table, static_metadata
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.ingest import read_players
from pipeline.months import add_months, month_range
from pipeline.validate import split_month, undated_game_keys
from schemas import IDENTITY_STATUSES, QUARANTINE_REASONS, Games, Identity, Quarantine

GROUP = "validate"

GAMES_DESCRIPTION = """Validated games of the month: the only input of the rating calculation.

One row per game that passed every check (parsable, played, known players, result in domain, date in
the month, not a duplicate, plausible stated ratings), in the canonical columns of schemas.Games.
Validated against the Pandera model on every run."""

QUARANTINE_DESCRIPTION = (
    """Raw records of the month that did not become games, each with a reason code.

Forfeits, byes, unknown players, duplicates, unreadable lines... with the raw text, source file and
line so the federation can correct its dump. Nothing is dropped: raw_games = games + quarantine.
Reason codes: """
    + ", ".join(f"`{code}` ({text})" for code, text in QUARANTINE_REASONS.items())
    + "."
)

IDENTITY_DESCRIPTION = (
    """How the players written in the month's dumps were identified (the identity report).

An id in a dump identifies its player, registered or not; the registry adds names. One row per
player written otherwise than as a registered id: """
    + ", ".join(f"`{code}` ({text})" for code, text in IDENTITY_STATUSES.items())
    + "."
)

# Above this share of a month's records in quarantine, the month's metadata carries a warning.
QUARANTINE_WARNING_SHARE = 0.5
# How far back an undated game sent again counts as a duplicate (a dated one is caught by its date).
UNDATED_WINDOW_MONTHS = 12
MAX_FILES_LISTED = 20  # the by_file table of a month's quarantine metadata


def _validated_table(description: str, model: type[pa.DataFrameModel]) -> dg.AssetOut:
    """One output of the validate step: the attributes its three tables share, and the table's own model."""
    return dg.AssetOut(
        kinds=KINDS,
        description=description,
        metadata=static_metadata(model),
        code_version=code_version("validate"),
        owners=OWNERS,
        tags={"stage": "validate"},
    )


def build_validation_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    @dg.multi_asset(
        name="validate_games",
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"raw_games": dg.AssetIn("raw_games")},
        outs={
            "games": _validated_table(GAMES_DESCRIPTION, Games),
            "quarantine": _validated_table(QUARANTINE_DESCRIPTION, Quarantine),
            "identity": _validated_table(IDENTITY_DESCRIPTION, Identity),
        },
    )
    def validate_games(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, raw_games: MonthlyFrames
    ) -> tuple[MonthStream, MonthStream, MonthStream]:
        months = list(context.partition_keys)
        object_store = store.store()

        # The registry is read once for the run: a month sees the players registered up to it.
        registry = read_players(object_store, months[-1])
        # Undated games of the last months, by month: one sent again in a later month is a duplicate there.
        undated: dict[str, pl.DataFrame] = {
            month: undated_game_keys(object_store.scan_parquet(table_key(["games"], month)))
            for month in month_range(add_months(months[0], -UNDATED_WINDOW_MONTHS), add_months(months[0], -1))
            if object_store.exists(table_key(["games"], month))
        }

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
            raw = raw_games[month]
            window_start = add_months(month, -UNDATED_WINDOW_MONTHS)
            for earlier in [m for m in undated if m < window_start]:
                del undated[earlier]
            seen = pl.concat(undated.values()) if undated else None
            games, quarantine, identities = split_month(
                raw, registry.filter(pl.col("registered") <= month), month, seen_keys=seen
            )
            undated[month] = undated_game_keys(games)
            reasons = dict(
                quarantine.group_by("reason").len().sort("len", "reason", descending=[True, False]).iter_rows()
            )
            share = quarantine.height / raw.height if raw.height else 0.0
            warning = (
                (
                    f"{quarantine.height:,} of {raw.height:,} records ({share:.0%}) quarantined; most: "
                    + ", ".join(f"{code} {n:,}" for code, n in list(reasons.items())[:3])
                )
                if share > QUARANTINE_WARNING_SHARE
                else ""
            )
            if warning:
                context.log.warning(f"{month}: {warning}")
            context.add_asset_metadata(
                {"games": games.height, "raw_records": raw.height}, asset_key="games", partition_key=month
            )
            context.add_asset_metadata(
                {
                    "quarantined": quarantine.height,
                    "quarantined_share": round(share, 4),
                    **({"warning": warning} if warning else {}),
                    "by_reason": counts_table(reasons, "reason", "records"),
                    "by_file": counts_table(
                        dict(
                            quarantine.group_by("source_file")
                            .len()
                            .sort("len", "source_file", descending=[True, False])
                            .head(MAX_FILES_LISTED)
                            .iter_rows()
                        ),
                        "file",
                        "records",
                    ),
                    # One number per reason as well, so the UI can plot each across months.
                    **{f"reason/{code}": n for code, n in reasons.items()},
                },
                asset_key="quarantine",
                partition_key=month,
            )
            statuses = dict(identities.group_by("status").agg(pl.len()).sort("status").iter_rows())
            context.add_asset_metadata(
                {"players": identities.height, **{f"status/{code}": n for code, n in statuses.items()}},
                asset_key="identity",
                partition_key=month,
            )
            progress.report("validate", month, months.index(month) + 1, len(months))
            return games, quarantine, identities

        return split_stream(months, one_month, outputs=3)

    return [validate_games]
