"""What a Dagster rate step says when the stored list it continues was made by another version of its code."""

import dagster as dg

from pipeline.months import add_months
from pipeline.operations.instance_dirs import location_commands
from pipeline.operations.run_plan import MADE_OTHERWISE, made_otherwise_line
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore

# Dagster's tag for a materialization's code version (dagster._core.definitions.data_version).
CODE_VERSION_TAG = "dagster/code_version"
#: The tag of a run `ratings run` launched: the stage it runs (assets.runtime.runs.execute_stage).
STAGE_TAG = "ratings/stage"


def warn_if_continuing_otherwise(
    context: dg.AssetExecutionContext,
    scenario: Scenario,
    key: dg.AssetKey,
    first_partition: str,
    store: ObjectStore,
) -> str | None:
    """Log a WARNING, and put it in the metadata of the step's first list, when the stored list of the month before
    it (`key`, the `scenario`'s rating_list) was made by another code version than the one `key` declares now (the
    scenario's definition or the code rating it changed since: an upgrade), as `ratings run` says of the lists it
    continues; a run launched by the schedule, the sensor or the UI says it too. A `ratings run` says it in its plan
    and summary already: its steps put it in the metadata alone, not once more per scenario in the log.
    One query: the month's latest materialization, whose version Dagster tagged; the months before it are not asked
    (a `ratings run` names the first). Nothing is said without a recorded version (a list made under another
    instance), nor when the list is not in the step's selection.
    """
    first = min(context.partition_keys)
    previous = add_months(first, -1)
    if previous < first_partition or key not in context.selected_asset_keys:
        return None
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[previous]), limit=1
    ).records
    stored = records[0].asset_materialization if records else None
    now = context.assets_def.code_versions_by_key.get(key)
    if stored is None or now is None or (stored.tags or {}).get(CODE_VERSION_TAG, now) == now:
        return None
    made = {scenario.name: previous}
    commands = location_commands(store)  # what the run's commands are printed with (its scenarios file, instance)
    line = made_otherwise_line(made, commands, first, earliest_known=False, scenarios={scenario.name: scenario})
    if STAGE_TAG not in context.run.tags:
        context.log.warning(line)
    context.add_asset_metadata({MADE_OTHERWISE: line}, asset_key=key, partition_key=first)
    return line
