"""The landing zone as an observable source asset: a data version per month from the dumps it holds."""

import dagster as dg

from assets.resources import ObjectStoreResource
from pipeline.landing import landing_versions

LANDING_DESCRIPTION = """The federations' raw dumps as received: `raw/<federation>/<YYYY-MM>/<file>` in the object \
store.

Never modified by the pipeline. Observing it records one data version per month (from the dumps'
keys, sizes and etags/modification times), so that a late correction to an old month marks that
month's raw_games, and everything rated after it, as stale in the UI."""


def build_landing_asset(partitions: dg.PartitionsDefinition):
    @dg.observable_source_asset(
        name="landing_zone",
        group_name="ingest",
        partitions_def=partitions,
        description=LANDING_DESCRIPTION,
        tags={"stage": "ingest"},
    )
    def landing_zone(context, store: ObjectStoreResource) -> dg.DataVersionsByPartition:
        # Without the registry's digests: raw_games does not read the registry (the sensor re-rates for it instead).
        fingerprints = landing_versions(store.store()).dumps
        months = partitions.get_partition_keys()
        return dg.DataVersionsByPartition({month: fingerprints.get(month, "empty") for month in months})

    return landing_zone
