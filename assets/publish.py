"""Publish stage, per scenario: each month's rating list and FIDE's combined list (pipeline.publish.lists).

Each month's list as CSV, FIDE TXT and a searchable HTML page under lists/; the combined list of a standard list with
the rapid and blitz lists it seeds.
"""

from collections.abc import Mapping
from functools import partial

import dagster as dg

from assets.metadata import table_attributes, validate
from assets.rate import chain_key
from assets.storage import ObjectStoreResource
from pipeline.operations import progress
from pipeline.publish.lists import read_published_list, write_combined_month, write_published_month
from pipeline.publish.ranked_registry import published_registries
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import MonthlyFrames
from schemas import PublishedList

# The stage tag of the published lists (table_attributes' "publish" below): `ratings run` selects them by it
# (assets.runtime.runs.stage_selection).
PUBLISH_STAGE = "publish"


def build_published_assets(
    partitions: dg.PartitionsDefinition, scenario: Scenario, partners: Mapping[str, Scenario] | None = None
) -> list[dg.AssetsDefinition]:
    """The scenario's published lists; with `partners` (list type -> the rapid and blitz chains its standard list
    seeds), FIDE's combined list of the three beside them each month (their lists of the month: its lineage).
    """
    key = scenario.name
    partners = dict(partners or {})

    @dg.asset(
        key=[key, "published_list"],
        group_name=key,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"rating_list": dg.AssetIn(chain_key(scenario, "rating_list"))},
        deps=[chain_key(partner, "rating_list") for partner in partners.values()],
        # The CSV's columns; the files are written here, not through the Parquet IO manager.
        **table_attributes(PublishedList, "publish", scenario, kinds={"csv", "html", "txt"}),
    )
    def published_list_files(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, rating_list: MonthlyFrames
    ) -> dg.MaterializeResult:
        months = list(context.partition_keys)
        object_store = store.store()
        registry_of = published_registries(object_store, months[-1], keep=True)
        largest = 0
        for done, month in enumerate(months, start=1):
            try:
                listed = read_published_list(partial(rating_list.read, month))
            except FileNotFoundError as missing:  # its message names the list and what to materialize
                raise dg.Failure(description=str(missing)) from None
            figures = write_published_month(object_store, scenario, month, listed, registry_of(month), validate)
            if partners:
                names = {kind: partner.name for kind, partner in partners.items()}
                figures = {**figures, "combined_path": write_combined_month(object_store, key, month, names)}
            context.add_asset_metadata(dict(figures), partition_key=month)
            largest = max(largest, int(figures["players"]))
            progress.report(f"publish {scenario.name}", month, done, len(months))
        # Run-wide figures go to the run's log: result metadata would land on every month of the run.
        if len(months) > 1:
            context.log.info(
                f"{key}/published_list: {len(months)} months {months[0]}..{months[-1]}, "
                f"{largest:,} players on the largest list"
            )
        return dg.MaterializeResult()

    return [published_list_files]
