"""Asset checks over pipeline.invariants: a factory for the checks each stage declares beside the tables it writes."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

import dagster as dg
import pandera.polars as pa

# Not exported by dagster: the materialization an evaluation verified (AssetCheckEvaluation's target).
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData as Target,
)

from assets.metadata import Metadata
from assets.runtime.upgrades import latest_materializations
from assets.storage import ObjectStoreResource
from pipeline.invariants.catalog import (
    CHECK_DESCRIPTIONS,
    FLOOR_RESPECTED,
    LEDGER_BALANCE,
    LIST_CONTINUITY,
    NO_DUPLICATE_GAMES,
    NO_DUPLICATE_PLAYERS,
    POINTS_CONSERVED,
    SCHEMA,
    MonthProblems,
)
from pipeline.invariants.chain import ChainPass
from pipeline.invariants.ledger import ledger_problems
from pipeline.invariants.store_checks import STORE_CHECKS, problems_by_month
from pipeline.invariants.tables import duplicate_problems, schema_problems
from pipeline.scenarios.chain import FLOWS, LEDGER
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from pipeline.text import markdown_list
from schemas.util import polars_schema

# Failing months listed in a check's metadata at most; the count says how many there were.
MAX_LISTED_PROBLEMS = 25
# The duplicate check of a table, by the column that must not repeat within a month.
DUPLICATE_CHECKS = {"game_id": NO_DUPLICATE_GAMES, "player_id": NO_DUPLICATE_PLAYERS}


@dataclass(frozen=True)
class CheckedTable:
    """A partitioned Parquet table a step writes: its key, its Pandera model, the column unique within a month, and
    the store-wide checks that guard it (pipeline.invariants.store_checks.STORE_CHECKS).
    """

    key: dg.AssetKey
    model: type[pa.DataFrameModel]
    unique: str | None = None
    store_checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Check:
    """One check of one table: its spec and how to evaluate it for the months of a run."""

    spec: dg.AssetCheckSpec
    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]


def _listed(problems: list[str]) -> dg.MetadataValue:
    shown = problems[:MAX_LISTED_PROBLEMS]
    more = len(problems) - len(shown)
    return dg.MetadataValue.md(markdown_list(shown) + (f"\n- ... and {more} more" if more else ""))


def _spec(
    name: str,
    key: dg.AssetKey,
    partitions: dg.PartitionsDefinition,
    reads: Sequence[dg.AssetKey] = (),
    warning: bool = False,
    **text: str,
) -> dg.AssetCheckSpec:
    # The check's partitions are the table's, so a run checks the months it just materialized.
    return dg.AssetCheckSpec(
        name,
        asset=key,
        blocking=not warning,
        partitions_def=partitions,
        description=CHECK_DESCRIPTIONS[name].format(**text),
        additional_deps=list(reads) or None,
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
    for name in table.store_checks:
        check = STORE_CHECKS[name]
        reads = [dg.AssetKey(read) for read in check.reads]
        checks.append(_Check(_spec(name, table.key, partitions, reads, check.warning), check.evaluate))
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

    checks = [
        _Check(_spec(FLOOR_RESPECTED, list_key, partitions), outcome_of("floor")),
        _Check(_spec(LIST_CONTINUITY, list_key, partitions), outcome_of("continuity")),
        _Check(_spec(POINTS_CONSERVED, games_key, partitions, reads=[list_key]), outcome_of("conservation")),
    ]
    if not scenario.is_system:
        ledger, flows = (dg.AssetKey([scenario.name, name]) for name in (LEDGER, FLOWS))
        spec = _spec(LEDGER_BALANCE, ledger, partitions, reads=[flows])
        checks.append(_Check(spec, partial(ledger_problems, scenario_name=scenario.name, first_month=first_partition)))
    return checks


def month_targets(instance: dg.DagsterInstance, key: dg.AssetKey, months: Iterable[str]) -> dict[str, Target]:
    """Each month's latest materialization of `key`: what an evaluation of that month verifies (its target).

    The UI counts a month's check as passed or failed only while its latest evaluation targets the
    month's latest materialization; an evaluation without a target reads as never run (Missing).
    """
    records = latest_materializations(instance, key, set(months))
    return {
        record.partition_key: Target(run_id=record.run_id, storage_id=record.storage_id, timestamp=record.timestamp)
        for record in records
        if record.partition_key is not None
    }


def _evaluations(
    context: dg.AssetCheckExecutionContext, spec: dg.AssetCheckSpec, months: list[str], outcome: MonthProblems
) -> Iterable[dg.AssetCheckEvaluation | dg.AssetCheckResult | dg.Output]:
    """What a check verified, month by month, as the UI reads it: each month passed or failed, against that month's
    latest materialization.

    A step of one partition (a run of one month launched from the UI) yields its result, which Dagster
    records for that month. A range step's own result would carry no partition (the UI would list the
    months as skipped or missing), so a range step records one evaluation per month, with its target;
    over several months, then the range's result (no partition: the run's figures), else the step's output.
    """
    severity = dg.AssetCheckSeverity.ERROR if spec.blocking else dg.AssetCheckSeverity.WARN
    metadata: Metadata = {"months_checked": len(months), "first_month": months[0], "last_month": months[-1]}
    metadata.update(outcome.stats)
    if outcome.problems:
        metadata.update(problems=_listed(outcome.problems), problem_count=len(outcome.problems))
    result = dg.AssetCheckResult(
        asset_key=spec.asset_key, check_name=spec.name, passed=outcome.passed, metadata=metadata, severity=severity
    )
    if context.has_partition_key:
        yield result
        return
    targets = month_targets(context.instance, spec.asset_key, months)
    for month, own in problems_by_month(outcome.problems, months).items():
        yield dg.AssetCheckEvaluation(
            asset_key=spec.asset_key,
            check_name=spec.name,
            passed=not own,
            partition=month,
            severity=severity,
            blocking=spec.blocking,
            metadata=metadata if len(months) == 1 else ({"problems": _listed(own)} if own else {"month": month}),
            target_materialization_data=targets.get(month),
        )
    if len(months) > 1:
        yield result
    else:  # the check's output, which the steps a blocking check guards wait for
        yield dg.Output(None, output_name=context.job_def.asset_layer.get_op_output_name(spec.key))


def stage_checks(
    step: str,
    partitions: dg.PartitionsDefinition,
    tables: Iterable[CheckedTable],
    chain: tuple[Scenario, dg.AssetKey, dg.AssetKey] | None = None,
) -> dg.AssetChecksDefinition:
    """One multi-check step over the tables a step writes: schema, duplicates and store-wide checks of each, and, for
    a scenario's chain (scenario, list key, per-game table key), floor, continuity and conservation.

    One step per stage keeps a range run to one extra step (the lists are read once for all their
    checks), and blocking stays acyclic: a step's checks wait only for that step.
    """
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
    def table_checks(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> Iterable:
        months = list(context.partition_keys)
        object_store = store.store()
        for key in sorted(context.selected_asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
            check = by_key[key]
            yield from _evaluations(context, check.spec, months, check.evaluate(object_store, months))

    return table_checks
