"""Asset checks over pipeline.invariants: the store-wide ones of the validate stage, and a factory for the checks each
stage declares beside the tables it writes.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dagster as dg
import pandera.polars as pa

from assets.metadata import Metadata
from assets.resources import ObjectStoreResource
from pipeline.invariants import (
    CHECK_DESCRIPTIONS,
    FLOOR_RESPECTED,
    LANDING_ZONE_LAYOUT,
    LIST_CONTINUITY,
    NO_DUPLICATE_GAMES,
    NO_DUPLICATE_PLAYERS,
    POINTS_CONSERVED,
    QUARANTINE_SHARE,
    RECONCILIATION,
    SCHEMA,
    ChainPass,
    MonthProblems,
    duplicate_problems,
    landing_layout_problems,
    quarantine_share_problems,
    reconciliation_problems,
    schema_problems,
)
from pipeline.scenarios import Scenario
from pipeline.storage import ObjectStore
from schemas.util import polars_schema

# Failing months listed in a check's metadata at most; the count says how many there were.
MAX_LISTED_PROBLEMS = 25
# The duplicate check of a table, by the column that must not repeat within a month.
DUPLICATE_CHECKS = {"game_id": NO_DUPLICATE_GAMES, "player_id": NO_DUPLICATE_PLAYERS}


def _listed(problems: list[str]) -> dg.MetadataValue:
    shown = problems[:MAX_LISTED_PROBLEMS]
    more = len(problems) - len(shown)
    return dg.MetadataValue.md("\n".join(f"- {p}" for p in shown) + (f"\n- ... and {more} more" if more else ""))


def _month_by_month(
    context: dg.AssetCheckExecutionContext,
    asset_key: dg.AssetKey,
    name: str,
    months: Sequence[str],
    problems: Sequence[str],
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
) -> None:
    """One evaluation per month of a range run, so the UI shows each month passed or failed.

    A range step's own result carries no partition: without these the UI lists every month of the
    range as skipped. A problem belongs to the months its text starts with ('2024-02: ...'); a
    problem naming no month (a whole-store one) fails every month.
    """
    if len(months) < 2:
        return  # a single-month step's result is that month's
    spec = next(spec for spec in context.check_specs if spec.key == dg.AssetCheckKey(asset_key, name))
    store_wide = [p for p in problems if not any(p.startswith(month) for month in months)]
    for month in months:
        own = [p for p in problems if p.startswith(month)] + store_wide
        # Dagster's log_event handles AssetCheckEvaluation, but its UserEvent annotation leaves it out.
        context.op_execution_context.log_event(
            dg.AssetCheckEvaluation(  # type: ignore[arg-type]
                asset_key=asset_key,
                check_name=name,
                passed=not own,
                partition=month,
                severity=severity,
                blocking=spec.blocking,
                metadata={"problems": _listed(own)} if own else {"month": month},
            )
        )


def _result(
    asset_key: dg.AssetKey,
    name: str,
    months: Sequence[str],
    outcome: MonthProblems,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
) -> dg.AssetCheckResult:
    metadata: Metadata = {
        "months_checked": len(months),
        "first_month": months[0],
        "last_month": months[-1],
        **outcome.stats,
    }
    if outcome.problems:
        metadata["problems"] = _listed(outcome.problems)
        metadata["problem_count"] = len(outcome.problems)
    return dg.AssetCheckResult(
        asset_key=asset_key, check_name=name, passed=outcome.passed, metadata=metadata, severity=severity
    )


# -- the store-wide checks of ingest and validation ----------------------------------------------

# name: (asset, how it is evaluated, severity, other tables it reads). Blocking when an error: a
# warning's months are rated all the same (the dumps in place; the records all accounted for).
STORE_CHECKS: dict[str, tuple[str, Callable[[ObjectStore, list[str]], MonthProblems], dg.AssetCheckSeverity, list]] = {
    RECONCILIATION: ("games", reconciliation_problems, dg.AssetCheckSeverity.ERROR, ["raw_games", "quarantine"]),
    LANDING_ZONE_LAYOUT: ("raw_games", landing_layout_problems, dg.AssetCheckSeverity.WARN, []),
    QUARANTINE_SHARE: ("quarantine", quarantine_share_problems, dg.AssetCheckSeverity.WARN, ["raw_games"]),
}


def build_checks(partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The store-wide checks of ingest and validation: reconciliation, landing-zone layout, quarantine share."""

    def store_check(name: str) -> dg.AssetChecksDefinition:
        asset, evaluate, severity, reads = STORE_CHECKS[name]

        @dg.asset_check(
            asset=asset,
            name=name,
            blocking=severity == dg.AssetCheckSeverity.ERROR,
            # Same partitions as the asset, so the check covers the months just materialized (without
            # it Dagster evaluates the check against the wrong partition).
            partitions_def=partitions,
            additional_deps=reads,
            description=CHECK_DESCRIPTIONS[name],
        )
        def check(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> dg.AssetCheckResult:
            months = list(context.partition_keys)
            outcome = evaluate(store.store(), months)
            _month_by_month(context, dg.AssetKey(asset), name, months, outcome.problems, severity)
            return _result(dg.AssetKey(asset), name, months, outcome, severity)

        return check

    return [store_check(name) for name in STORE_CHECKS]


# -- the checks a stage declares beside its tables ---------------------------------------------------


@dataclass(frozen=True)
class CheckedTable:
    """A partitioned Parquet table a step writes: its key, its Pandera model, the column unique within a month."""

    key: dg.AssetKey
    model: type[pa.DataFrameModel]
    unique: str | None = None


@dataclass(frozen=True)
class _Check:
    """One check of one table: its spec and how to evaluate it for the months of a run."""

    spec: dg.AssetCheckSpec
    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]


def _spec(
    name: str, key: dg.AssetKey, partitions: dg.PartitionsDefinition, also_reads: dg.AssetKey | None = None, **text: str
) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        name,
        asset=key,
        blocking=True,
        partitions_def=partitions,
        description=CHECK_DESCRIPTIONS[name].format(**text),
        additional_deps=[also_reads] if also_reads is not None else None,
    )


def _table_checks(table: CheckedTable, partitions: dg.PartitionsDefinition) -> list[_Check]:
    expected = polars_schema(table.model)
    path = table.key.path
    checks = [
        _Check(
            _spec(SCHEMA, table.key, partitions, model=f"schemas.{table.model.__name__}"),
            lambda store, months: schema_problems(store, path, expected, months),
        )
    ]
    column = table.unique
    if column is not None:
        checks.append(
            _Check(
                _spec(DUPLICATE_CHECKS[column], table.key, partitions),
                lambda store, months: duplicate_problems(store, path, column, months),
            )
        )
    return checks


def _chain_checks(
    scenario: Scenario, list_key: dg.AssetKey, games_key: dg.AssetKey, partitions: dg.PartitionsDefinition
) -> list[_Check]:
    """Floor, continuity and conservation of one scenario's chain.

    They read the same lists, so one pass over the months evaluates all three (each list is read
    once, and serves as the previous list of the next month); the pass runs when the first of them
    is evaluated and the others take their outcome from it.
    """
    first_partition = partitions.get_first_partition_key()
    assert first_partition is not None  # partitioned tables have a first partition
    chain = ChainPass(scenario, list_key.path, games_key.path, first_partition)

    def outcome_of(field: str) -> Callable[[ObjectStore, list[str]], MonthProblems]:
        return lambda store, months: getattr(chain.outcome(store, months), field)

    return [
        _Check(_spec(FLOOR_RESPECTED, list_key, partitions), outcome_of("floor")),
        _Check(_spec(LIST_CONTINUITY, list_key, partitions), outcome_of("continuity")),
        _Check(_spec(POINTS_CONSERVED, games_key, partitions, also_reads=list_key), outcome_of("conservation")),
    ]


def stage_checks(
    step: str,
    partitions: dg.PartitionsDefinition,
    tables: Iterable[CheckedTable],
    chain: tuple[Scenario, dg.AssetKey, dg.AssetKey] | None = None,
) -> dg.AssetChecksDefinition:
    """One blocking multi-check step over the tables a step writes: schema and duplicates of each, and, for a
    scenario's chain (scenario, list key, per-game table key), floor, continuity and conservation.

    One step per stage keeps a range run to one extra step (the lists are read once for all their
    checks), and blocking stays acyclic: a step's checks wait only for that step.
    """
    tables = list(tables)
    checks = [check for table in tables for check in _table_checks(table, partitions)]
    if chain is not None:
        checks += _chain_checks(*chain, partitions)
    by_key = {check.spec.key: check for check in checks}

    @dg.multi_asset_check(
        name=f"{step}_checks",
        specs=[check.spec for check in checks],
        can_subset=True,
        description=f"Checks of the tables step {step} writes, for every month of the run.",
    )
    def table_checks(
        context: dg.AssetCheckExecutionContext, store: ObjectStoreResource
    ) -> Iterable[dg.AssetCheckResult]:
        months = list(context.partition_keys)
        object_store = store.store()
        for key in sorted(context.selected_asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
            outcome = by_key[key].evaluate(object_store, months)
            _month_by_month(context, key.asset_key, key.name, months, outcome.problems)
            yield _result(key.asset_key, key.name, months, outcome)

    return table_checks
