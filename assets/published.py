"""Publish stage, per scenario: each month's rating list as CSV, FIDE TXT and a searchable HTML page under lists/."""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, table_key
from assets.metadata import OWNERS, static_metadata, validate
from assets.ratings import rating_list_key
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.ingest import read_players
from pipeline.months import month_range
from pipeline.reports.published_list import (
    published_csv,
    published_html,
    published_list,
    published_list_key,
    published_txt,
)
from pipeline.scenarios import Scenario
from pipeline.storage import redact_url
from pipeline.validate import players_named_in_dumps
from schemas import PublishedList

PUBLISHED_DESCRIPTION = """Scenario `{name}`'s rating list of each month as a rating officer reads it, under \
`lists/{key}/`.

`<YYYY-MM>.csv`: every player on the list with name, federation, title and sex from the player
registry (empty when the registry does not know the player), birth year, rating, change, games, K and
the flags, sorted by rating (unrated last), then name, then id. `<YYYY-MM>.txt`: the rated players in
FIDE's current per-type layout (standard_rating_list.txt; flags i, w, wi). `<YYYY-MM>.html`: one
self-contained page, sortable by any column and searchable by name or id, fast at 500,000 players.
Month M's list is FIDE's list of the 1st of M+1."""


def build_published_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    key = scenario.key

    @dg.asset(
        key=[key, "published_list"],
        group_name=key,
        kinds={"csv", "html", "txt"},
        owners=OWNERS,
        tags={"stage": "publish"},
        code_version=code_version("publish"),
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"rating_list": dg.AssetIn(rating_list_key(scenario))},
        description=PUBLISHED_DESCRIPTION.format(name=scenario.name, key=key),
        # The CSV's columns; no pandera_model entry, since nothing here goes through the Parquet IO manager.
        metadata={"dagster/column_schema": static_metadata(PublishedList)["dagster/column_schema"]},
    )
    def published_list_files(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, rating_list: MonthlyFrames
    ) -> dg.MaterializeResult:
        months = list(context.partition_keys)
        first_partition = partitions.get_first_partition_key()
        assert first_partition is not None  # a run has partitions, so the definition has a first one
        object_store = store.store()
        # Read once for the run; each month sees only the players registered by then. Players the
        # registry does not hold are named as the dumps write them (the identity reports).
        identity_months = [
            m for m in month_range(first_partition, months[-1]) if object_store.exists(table_key(["identity"], m))
        ]
        identities = [
            object_store.read_parquet(
                table_key(["identity"], m), columns=["month", "status", "name", "player_id", "records"]
            )
            for m in identity_months
        ]
        registry = read_players(object_store, months[-1])
        if identities:
            registry = pl.concat([registry, players_named_in_dumps(pl.concat(identities))]).unique(
                "player_id", keep="first", maintain_order=True
            )
        players: dict[str, int] = {}
        for done, month in enumerate(months, start=1):
            published = published_list(rating_list[month], registry.filter(pl.col("registered") <= month))
            validate(PublishedList, published, f"{key}/published_list {month}")
            paths = {}
            for extension, data in (
                ("csv", published_csv(published)),
                ("txt", published_txt(published, month).encode("utf-8")),
                ("html", published_html(published, scenario.name, month).encode("utf-8")),
            ):
                target = published_list_key(key, month, extension)
                object_store.write_bytes(data, target)
                paths[extension] = redact_url(object_store.url(target))
            rated = published.filter(pl.col("rating").is_not_null()).height
            players[month] = published.height
            context.add_asset_metadata(
                {
                    "players": published.height,
                    "rated_players": rated,
                    "unregistered_players": published.filter(pl.col("name").is_null()).height,
                    **{f"{extension}_path": path for extension, path in paths.items()},
                },
                partition_key=month,
            )
            progress.report(f"publish {scenario.name}", month, done, len(months))
        # Run-wide figures go to the run's log: result metadata would land on every month of the run.
        if len(months) > 1:
            context.log.info(
                f"{key}/published_list: {len(months)} months {months[0]}..{months[-1]}, "
                f"{max(players.values()):,} players on the largest list"
            )
        return dg.MaterializeResult()

    return [published_list_files]
