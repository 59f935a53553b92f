"""Rate stage, one chain per scenario (pipeline.scenarios.chain), with the checks of its tables.

The tables: the monthly list, the per-game calculation and, for a rating system, its state.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from assets.checks import CheckedTable, stage_checks
from assets.metadata import table_attributes
from assets.partitions import PREVIOUS_MONTH
from assets.runtime.upgrades import warn_if_continuing_otherwise
from assets.storage import ObjectStoreResource, write_month_tables
from pipeline.operations import progress
from pipeline.operations.instance_dirs import location_commands
from pipeline.scenarios.chain import (
    ChainNotes,
    ChainTable,
    MissingMonth,
    chain_tables,
    dependency_order,
    games_or_empty,
    lineage_reads,
    month_figures,
    rate_months,
)
from pipeline.scenarios.model import MAX_PERIOD_MONTHS, Scenario
from pipeline.scenarios.month_records import month_records
from pipeline.scenarios.recalculation import LOOK_BACK_MONTHS, late_reports
from pipeline.store.monthly import MonthlyFrames


def months_around(start_offset: int, end_offset: int) -> dg.TimeWindowPartitionMapping:
    """Months start_offset..end_offset around a month (the first months have none before them), made in build_defs,
    which keeps Dagster's beta warning about it quiet.
    """
    return dg.TimeWindowPartitionMapping(start_offset, end_offset, allow_nonexistent_upstream_partitions=True)


def chain_key(scenario: Scenario, table: str) -> dg.AssetKey:
    """The key of a table of the scenario's chain (pipeline.scenarios.chain.chain_tables): `<scenario>/<table>`."""
    return dg.AssetKey([scenario.name, table])


def build_rating_defs(
    partitions: dg.PartitionsDefinition,
    scenario: Scenario,
    list_freshness: dg.FreshnessPolicy | None = None,
    standard_chain: Scenario | None = None,
) -> dg.Definitions:
    """The scenario's chain as one step writing its tables month by month, and the checks of those tables; the list
    is expected by `list_freshness` (when the monthly schedule rates the month just closed). A rapid or blitz chain
    reads `standard_chain`'s list (a system's: its state) of M-1, and waits for M's so that a backfill runs it whole.
    """
    first_partition = partitions.get_first_partition_key()
    tables = chain_tables(scenario)
    stored_order = dependency_order(tables)
    keys = {table.name: chain_key(scenario, table.name) for table in tables}

    # A rule set's list month rates the games since its previous list; a system rates each month alone.
    # A list month rates the games of the months since the previous list (quarterly before July 2009).
    games_mapping = None if scenario.is_system else months_around(-(MAX_PERIOD_MONTHS - 1), 0)

    def spec(table: ChainTable) -> dg.AssetSpec:
        # Each table's own lineage: the month's games and the tables of the month before it is computed from
        # (lineage_reads: one self-dependency per chain, which a backfill then runs whole, in one run).
        # The previous month is read from the store, not loaded as an input: in a range run the IO manager
        # would try to load months not yet written.
        # A rule set's list M also reads the lists in force at its late events' start (B.02 2024 §9.1), up to
        # LOOK_BACK_MONTHS back.
        lists = {"rating_list": PREVIOUS_MONTH if scenario.is_system else months_around(-LOOK_BACK_MONTHS, -1)}
        before = [dg.AssetDep(keys[r], partition_mapping=lists.get(r, PREVIOUS_MONTH)) for r in lineage_reads(table)]
        if standard_chain is not None:
            seeding = "system_state" if standard_chain.is_system else "rating_list"  # uscf: games, unrounded rating
            before.append(dg.AssetDep(chain_key(standard_chain, seeding), partition_mapping=months_around(-1, 0)))
        return dg.AssetSpec(
            keys[table.name],
            deps=[dg.AssetDep("games", partition_mapping=games_mapping), *before],
            # The scenario's own definition is part of its code: editing it in the YAML marks its chain stale.
            **table_attributes(table.model, "rate", scenario, scenario.model_dump_json()),
            freshness_policy=list_freshness if table.name == "rating_list" else None,
            skippable=True,  # a subset stores only what was selected
        )

    # Each month's tables are written as they are made (none waits for a whole range), and a subset
    # such as the list alone is a valid selection: the month is computed whole, the rest not stored.
    @dg.multi_asset(
        name=f"rate_{scenario.name}",
        can_subset=True,
        group_name=scenario.name,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"games": dg.AssetIn("games")},  # its partition mapping is the dependency's (in each spec)
        specs=[spec(table) for table in tables],
    )
    def rate(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, games: MonthlyFrames
    ) -> Iterator[dg.MaterializeResult]:
        months = list(context.partition_keys)
        assert first_partition is not None  # a run has partitions, so the definition has a first one
        object_store = store.store()
        notes = ChainNotes()
        late = late_reports(object_store, scenario, months, first_partition)
        warn_if_continuing_otherwise(context, scenario, keys["rating_list"], first_partition, object_store)
        try:
            rate_month = rate_months(object_store, scenario, months, first_partition, standard_chain, late, notes)
        except MissingMonth as missing:
            raise dg.Failure(
                description=missing.explained(location_commands(object_store)),
                metadata={"missing_month": missing.missing_month, "expected_at": missing.location},
            ) from None
        games_of = games_or_empty(games)

        selected = [table.name for table in tables if keys[table.name] in context.selected_asset_keys]
        stored = [(keys[t.name], t.model) if t.name in selected else None for t in tables]

        record = month_records(object_store, scenario, months, late, notes, keys["rating_list"].path)

        def one_month(month: str) -> tuple[pl.DataFrame, ...]:
            frames = rate_month(month, games_of)
            figures = month_figures(dict(zip(keys, frames, strict=True)), scenario.rules_name(month))
            recorded = record(month, frames[0], "rating_list" in selected)  # before the writer stores the month
            figures["rating_list"].update(recorded.metadata)
            for line in recorded.warnings:
                context.log.warning(line)
            for name in selected:
                context.add_asset_metadata(figures[name], asset_key=keys[name], partition_key=month)
            progress.report(f"rate {scenario.name}", month, months.index(month) + 1, len(months))
            return frames

        frames = ((month, one_month(month)) for month in months)
        write_month_tables(context, object_store, stored, months, frames)
        # Dagster takes a multi-asset's results in the order of its tables' dependencies (the state before the list).
        yield from (dg.MaterializeResult(asset_key=keys[name]) for name in stored_order if name in selected)

    checks = stage_checks(
        rate.node_def.name,
        partitions,
        [CheckedTable(keys[table.name], table.model, table.unique) for table in tables],
        chain=(scenario, keys["rating_list"], keys["rated_games"]),
    )
    return dg.Definitions(assets=[rate], asset_checks=[checks])
