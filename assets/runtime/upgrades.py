"""Whether the stored tables a run continues were made by another version of its code, for `ratings run` and a step.

One judge (made_otherwise) for `ratings run`'s plan (assets.runtime.runs: every month before the run) and for a
Dagster rate step (warn_if_continuing_otherwise: the month before its first alone).
"""

from collections.abc import Callable, Iterable, Sequence
from functools import partial

import dagster as dg

from pipeline.code_versions import code_version
from pipeline.months import add_months
from pipeline.operations.instance_dirs import location_commands
from pipeline.operations.run_plan import MADE_OTHERWISE, games_made_otherwise_line, made_otherwise_line
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import stored_code_version, table_key
from pipeline.store.object_store import ObjectStore

# Dagster's tag for a materialization's code version (dagster._core.definitions.data_version).
CODE_VERSION_TAG = "dagster/code_version"
#: The tag of a run `ratings run` launched: the stage it runs (assets.runtime.runs.execute_stage).
STAGE_TAG = "ratings/stage"
#: The metadata key of the games warning a Dagster rate step puts on its first list, beside MADE_OTHERWISE.
GAMES_MADE_OTHERWISE = "games_made_otherwise"

#: The stored tables every chain rests on, by the stage whose code version makes them: a list rated from scratch
#: reads and validates its month's games anew, so games stored by another version may rate otherwise.
SHARED_TABLES = {"raw_games": "ingest", "games": "validate"}


def latest_materializations(
    instance: dg.DagsterInstance, key: dg.AssetKey, months: set[str]
) -> list[dg.EventLogRecord]:
    """The latest materialization record of `key` the instance holds for each of `months` it records (in no order).
    Two queries: the latest storage ids, then those records.
    """
    latest = instance.get_latest_storage_id_by_partition(key, dg.DagsterEventType.ASSET_MATERIALIZATION, months)
    if not latest:
        return []
    return list(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, storage_ids=list(latest.values())), limit=len(latest)
        ).records
    )


def recorded_versions(instance: dg.DagsterInstance, key: dg.AssetKey, months: set[str]) -> dict[str, str | None]:
    """Month -> the code version Dagster tagged on the latest materialization of `key` the instance records for it
    (None: recorded without one), for the `months` it records. Two queries: the latest storage ids, then those records;
    one for a single month (a rate step's month before): its latest record.
    """
    if len(months) == 1:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=list(months)), limit=1
        ).records
    else:
        records = latest_materializations(instance, key, months)
    return {
        record.asset_materialization.partition: (record.asset_materialization.tags or {}).get(CODE_VERSION_TAG)
        for record in records
        if record.asset_materialization is not None and record.asset_materialization.partition is not None
    }


def footer_confirmed(
    store: ObjectStore, path: Sequence[str], flagged: Iterable[str], now: str | None, first: bool = False
) -> list[str]:
    """The months of `flagged` (the instance's record of their table names another code version than `now`) whose
    stored table's footer does not record `now` either (CODE_VERSION_FOOTER; none: written before tables recorded
    it): a table written again since under another instance (a shared $DAGSTER_HOME, a store rated elsewhere and
    brought back) records the version that wrote it, and the instance's record of it is stale. In month order;
    `first`: only the first such month. A footer read per month asked: none when nothing is flagged.
    """
    confirmed = []
    for month in sorted(flagged):
        if stored_code_version(store, path, month) != now:
            confirmed.append(month)
            if first:
                break
    return confirmed


def made_otherwise(
    instance: dg.DagsterInstance,
    store: ObjectStore,
    key: dg.AssetKey,
    months: Sequence[str],
    declared: Callable[[], str | None],
    first: bool = False,
) -> list[str]:
    """The months of `months` (consecutive; the last is the one a run continues) whose stored table `key` was made by
    another code version than the one it declares now (`declared`, asked only when a table is there to judge: a
    scenario's chain is built to ask it), in month order; `first`: of the months the instance flags, the first alone
    (a caller naming where to start needs no more footer reads).

    The instance's record of each month (recorded_versions: one or two queries), where it names another version,
    confirmed by the table's footer (footer_confirmed: the record may be stale). The last month, where the instance has
    no record of it (a store rated under another instance, an object store from a fresh machine), by its footer alone
    (one read); a table recording none was written before tables recorded it, so by other code. The months between are
    not read one by one (a footer read each, on an object store a request): the first month's footer says whether they
    start there, and then the first and the last are named.
    """
    last, start = months[-1], months[0]
    recorded = recorded_versions(instance, key, set(months))
    unrecorded = last not in recorded and store.exists(table_key(key.path, last))
    if not recorded and not unrecorded:
        return []
    now = declared()
    if now is None:
        return []
    flagged = [month for month, version in recorded.items() if version not in (None, now)]
    other = footer_confirmed(store, key.path, flagged, now, first)
    if unrecorded and stored_code_version(store, key.path, last) != now:
        judged = start == last or start in recorded or stored_code_version(store, key.path, start) == now
        other += [last] if judged else [start, last]
    return sorted(set(other))


def warn_if_continuing_otherwise(
    context: dg.AssetExecutionContext,
    scenario: Scenario,
    key: dg.AssetKey,
    first_partition: str,
    store: ObjectStore,
) -> list[str]:
    """Log a WARNING, and put it in the metadata of the step's first list, when the stored tables of the month before
    it were made by another code version than this run's, as `ratings run` says of the tables it continues (one judge:
    made_otherwise): the list (`key`, the `scenario`'s rating_list) by another than `key` declares now (the scenario's
    definition or the code rating it changed since: an upgrade); its raw_games or games by another than the ingest and
    validate stages' now (an upgrade of the readers or the validation alone, which leaves the list's version as it
    was). A run launched by the schedule, the sensor or the UI says it too; a `ratings run` says it in its plan and
    summary already: its steps put it in the metadata alone, not once more per scenario in the log. Returns the lines.

    That month alone is judged (a query a table; a footer read only where the instance has no record of it or
    names another version): a `ratings run` names the first such month. Nothing is said when the list is not in the
    step's selection.
    """
    first = min(context.partition_keys)
    previous = add_months(first, -1)
    if previous < first_partition or key not in context.selected_asset_keys:
        return []
    instance = context.instance
    lists = made_otherwise(instance, store, key, [previous], lambda: context.assets_def.code_versions_by_key.get(key))
    games = any(
        made_otherwise(instance, store, dg.AssetKey(table), [previous], partial(code_version, stage))
        for table, stage in SHARED_TABLES.items()
    )
    if not lists and not games:
        return []
    commands = location_commands(store)  # what the run's commands are printed with (its scenarios file, instance)
    scenarios = {scenario.name: scenario}
    said = {}
    if lists:
        made = {scenario.name: previous}
        said[MADE_OTHERWISE] = made_otherwise_line(made, commands, first, earliest_known=False, scenarios=scenarios)
    if games:
        games_line = games_made_otherwise_line([previous], commands, first, scenarios, earliest_known=False)
        said[GAMES_MADE_OTHERWISE] = games_line
    for line in said.values() if STAGE_TAG not in context.run.tags else ():
        context.log.warning(line)
    context.add_asset_metadata(said, asset_key=key, partition_key=first)
    return list(said.values())
