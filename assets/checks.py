"""Asset checks on every partitioned table (reconciliation, schema, duplicates, floor, continuity, conservation) over
pipeline.invariants.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dagster as dg
import pandera.polars as pa

from assets.metadata import Metadata, counts_table, pandera_model_of
from assets.ratings import previous_list, rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from pipeline.invariants import (
    RECONCILED_COLUMNS,
    ChainProblems,
    MonthProblems,
    chain_problems,
    duplicate_problems,
    mostly_quarantined,
    reconcile,
    schema_problems,
)
from pipeline.landing import inventory, unplaced
from pipeline.scenarios import Scenario
from pipeline.storage import ObjectStore
from schemas.util import polars_schema

RECONCILIATION = "reconciliation"
LANDING_ZONE_LAYOUT = "landing_zone_layout"
LANDING_ZONE_LAYOUT_DESCRIPTION = """Every file under raw/ is read or accounted for in a month.

Files in a month folder that are not read (misplaced, links, special files) are quarantined in that
month; this check lists the files no month accounts for (directly under raw/ or raw/<FED>/, or in a
folder that is no month), with where they belong. A warning: the dumps in place are rated all the same."""
QUARANTINE_SHARE = "quarantine_share"
QUARANTINE_SHARE_DESCRIPTION = """At most half of a month's raw records are quarantined.

More usually means a missing registry, a dump in the wrong month folder or an export in another
layout, not a federation's bad month. A warning, not blocking: every record is still accounted for
(the reconciliation check), and the month's reasons are in its quarantine metadata."""
SCHEMA = "schema"
NO_DUPLICATE_GAMES = "no_duplicate_games"
NO_DUPLICATE_PLAYERS = "no_duplicate_players"
FLOOR_RESPECTED = "floor_respected"
LIST_CONTINUITY = "list_continuity"
POINTS_CONSERVED = "rating_points_conserved"

# Failing months listed in a check's metadata at most; the count says how many there were.
MAX_LISTED_PROBLEMS = 25

RECONCILIATION_DESCRIPTION = """raw_games rows = games rows + quarantine rows, for every month of the run and every \
source file.

Per file, by record id: every raw record is exactly one game or one quarantined record. Nothing is
lost between the landing zone and the validated tables. Blocking: a failing month stops
the rating of the run."""

SCHEMA_DESCRIPTION = """The stored Parquet file of every month of the run has exactly the columns and types of \
`{model}`.

Read from each file's footer (no data), so it also catches files written by another version of the
pipeline or by hand. Blocking: a table with the wrong shape never feeds the next stage."""

NO_DUPLICATE_GAMES_DESCRIPTION = (
    """No game_id occurs twice in a month (duplicate submissions are quarantined, not rated twice). Blocking."""
)

NO_DUPLICATE_PLAYERS_DESCRIPTION = """No player_id occurs twice on a month's list. Blocking."""

FLOOR_DESCRIPTION = """No player whose rating was calculated this period is published below the rule set's floor.

The floor is the one of the rule set the scenario rates the month under (Scenario.rules_for). Only
players with games > 0 (or a first rating) are checked: a list legitimately carries untouched ratings
below a floor introduced later until those players play again. Blocking."""

CONTINUITY_DESCRIPTION = """List M is list M-1 carried forward: nobody disappears, nobody loses a rating without the \
delisted flag,
and every rating on both lists moved by exactly its `change` (rating_M = rating_M-1 + change_M).

For the first month of the partitions, M-1 is the seed list the chain started from. Blocking."""

CONSERVATION_DESCRIPTION = """Rating points are conserved in games between rated players, and the list rests on \
exactly these games.

For each month, from rated_games and the month's list:
1. zero-sum expectation: every game rated for both sides has white_expected + black_expected = 1, so
   the two sides' (score - expected) sum to 0. This holds for every expectancy model (FIDE table,
   logistic, Elo-Davidson, Sonas-linear) whenever the 400-point rule treats both sides alike; games
   where it may not (once-per-event capping, or the exemption of players rated 2650+) with a rating
   difference above the cap are left out;
2. conservation: over the games whose two players had the same K this period (k_used on the list),
   the rating points exchanged before rounding, K x weight x (score - expected) summed over both
   sides, add up to 0;
3. the list rests on these games: for every player rated before the period, `games` on the list is
   the number of games counted for them in rated_games, and `change` is K x sum(weight x (score -
   expected)) rounded as the rule set says (within 0.5, or 0.5 per event when rounding per event).
   Skipped for months whose list also rates earlier months' games (quarterly lists before 2009) or
   after a one-time event (the 2024 compression adds to `change`).
It fails on a game counted twice or for one side only, a wrong K, a one-sided 400-point rule, or a
list not computed from the stored per-game table. Blocking: crosstables and reports wait for it."""


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


def _result(asset_key: dg.AssetKey, name: str, months: Sequence[str], outcome: MonthProblems) -> dg.AssetCheckResult:
    metadata: Metadata = {
        "months_checked": len(months),
        "first_month": months[0],
        "last_month": months[-1],
        **outcome.stats,
    }
    if outcome.problems:
        metadata["problems"] = _listed(outcome.problems)
        metadata["problem_count"] = len(outcome.problems)
    return dg.AssetCheckResult(asset_key=asset_key, check_name=name, passed=outcome.passed, metadata=metadata)


def build_checks(partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    """The reconciliation check of the validate stage (the other checks come from build_table_checks)."""

    @dg.asset_check(
        asset="games",
        name=RECONCILIATION,
        blocking=True,
        # Same partitions as the asset, so the check covers the months just materialized (without
        # it Dagster evaluates the check against the wrong partition).
        partitions_def=partitions,
        additional_deps=["raw_games", "quarantine"],
        description=RECONCILIATION_DESCRIPTION,
    )
    def reconciliation(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> dg.AssetCheckResult:
        months = list(context.partition_keys)
        failing, totals = reconcile(store.store(), months)
        rows = {asset: n for asset, n in totals.items() if asset in RECONCILED_COLUMNS}
        metadata: Metadata = {
            "months_checked": len(months),
            "first_month": months[0],
            "last_month": months[-1],
            "source_files_checked": totals["files"],
            **{f"{asset}_rows": n for asset, n in rows.items()},
        }
        if failing:
            metadata["failing_months"] = _listed(failing)
            metadata["failing_count"] = len(failing)
        else:
            metadata["totals"] = counts_table(rows, "table")
        # Reconciled but mostly quarantined: every record is accounted for, yet the month is suspect
        # (a missing registry, a wrong month folder...): a warning, not a failure.
        warnings = mostly_quarantined(store.store(), months)
        if warnings:
            metadata["mostly_quarantined_months"] = _listed(warnings)
            metadata["mostly_quarantined_count"] = len(warnings)
        _month_by_month(context, dg.AssetKey("games"), RECONCILIATION, months, failing)
        return dg.AssetCheckResult(passed=not failing, metadata=metadata)

    @dg.asset_check(
        asset="raw_games",
        name=LANDING_ZONE_LAYOUT,
        # Not blocking: the months' dumps that are in place are read and rated all the same.
        blocking=False,
        partitions_def=partitions,
        description=LANDING_ZONE_LAYOUT_DESCRIPTION,
    )
    def landing_zone_layout(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> dg.AssetCheckResult:
        entries = unplaced(inventory(store.store()))
        problems = [f"{entry.key}: {entry.problem}" for entry in entries]
        metadata: Metadata = {"unplaced_files": len(problems)}
        if problems:
            metadata["problems"] = _listed(problems)
        months = list(context.partition_keys)
        _month_by_month(
            context, dg.AssetKey("raw_games"), LANDING_ZONE_LAYOUT, months, problems, dg.AssetCheckSeverity.WARN
        )
        return dg.AssetCheckResult(passed=not problems, severity=dg.AssetCheckSeverity.WARN, metadata=metadata)

    @dg.asset_check(
        asset="quarantine",
        name=QUARANTINE_SHARE,
        # A warning: the records are all accounted for; a reader should look, not be kept from the list.
        blocking=False,
        partitions_def=partitions,
        description=QUARANTINE_SHARE_DESCRIPTION,
    )
    def quarantine_share(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> dg.AssetCheckResult:
        months = list(context.partition_keys)
        warnings = mostly_quarantined(store.store(), months)
        _month_by_month(
            context, dg.AssetKey("quarantine"), QUARANTINE_SHARE, months, warnings, dg.AssetCheckSeverity.WARN
        )
        metadata: Metadata = {"months_checked": len(months), "mostly_quarantined_months": len(warnings)}
        if warnings:
            metadata["problems"] = _listed(warnings)
        return dg.AssetCheckResult(passed=not warnings, severity=dg.AssetCheckSeverity.WARN, metadata=metadata)

    return [reconciliation, landing_zone_layout, quarantine_share]


# -- Dagster wiring ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TableCheck:
    """One check of one asset: its spec and how to evaluate it for the months of a run."""

    spec: dg.AssetCheckSpec
    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]


def _schema_check(spec: dg.AssetSpec, model: type[pa.DataFrameModel]) -> _TableCheck:
    expected = polars_schema(model)
    return _TableCheck(
        dg.AssetCheckSpec(
            SCHEMA,
            asset=spec.key,
            blocking=True,
            partitions_def=spec.partitions_def,
            description=SCHEMA_DESCRIPTION.format(model=f"schemas.{model.__name__}"),
        ),
        lambda store, months: schema_problems(store, spec.key.path, expected, months),
    )


def _duplicates_check(spec: dg.AssetSpec, name: str, column: str, description: str) -> _TableCheck:
    return _TableCheck(
        dg.AssetCheckSpec(
            name, asset=spec.key, blocking=True, partitions_def=spec.partitions_def, description=description
        ),
        lambda store, months: duplicate_problems(store, spec.key.path, column, months),
    )


def _list_checks(list_spec: dg.AssetSpec, games_spec: dg.AssetSpec, scenario: Scenario) -> list[_TableCheck]:
    """Floor, continuity and conservation of one scenario's chain.

    They read the same lists, so one pass over the months evaluates all three (each list is read
    once, and serves as the previous list of the next month); the pass runs when the first of them
    is evaluated and the others take their outcome from it.
    """
    partitions = list_spec.partitions_def
    assert partitions is not None  # _checks_of builds checks for partitioned tables only
    first_partition = partitions.get_first_partition_key()
    # The last pass: its store object (held, so that no later object can take its identity), months and outcome.
    last: dict[str, object] = {}

    def one_pass(store: ObjectStore, months: list[str]) -> ChainProblems:
        assert first_partition is not None  # a check runs on partitions, so the definition has a first one
        if last.get("store") is not store or last.get("months") != months:
            outcome = chain_problems(
                store,
                scenario,
                months,
                list_spec.key.path,
                games_spec.key.path,
                first_partition,
                lambda: previous_list(store, scenario, first_partition, first_partition),
            )
            last.update(store=store, months=list(months), outcome=outcome)
        cached = last["outcome"]
        assert isinstance(cached, ChainProblems)
        return cached

    def spec(asset: dg.AssetSpec, name: str, description: str) -> dg.AssetCheckSpec:
        return dg.AssetCheckSpec(
            name,
            asset=asset.key,
            blocking=True,
            partitions_def=asset.partitions_def,
            description=description,
            additional_deps=[list_spec.key] if asset is games_spec else None,
        )

    def outcome_of(name: str) -> Callable[[ObjectStore, list[str]], MonthProblems]:
        field = {FLOOR_RESPECTED: "floor", LIST_CONTINUITY: "continuity", POINTS_CONSERVED: "conservation"}[name]
        return lambda store, months: getattr(one_pass(store, months), field)

    return [
        _TableCheck(spec(list_spec, FLOOR_RESPECTED, FLOOR_DESCRIPTION), outcome_of(FLOOR_RESPECTED)),
        _TableCheck(spec(list_spec, LIST_CONTINUITY, CONTINUITY_DESCRIPTION), outcome_of(LIST_CONTINUITY)),
        _TableCheck(spec(games_spec, POINTS_CONSERVED, CONSERVATION_DESCRIPTION), outcome_of(POINTS_CONSERVED)),
    ]


def _checks_of(asset: dg.AssetsDefinition, scenarios: Iterable[Scenario]) -> list[_TableCheck]:
    """Every check on the partitioned Parquet tables one asset step produces."""
    specs = {spec.key: spec for spec in asset.specs if spec.partitions_def is not None and "parquet" in spec.kinds}
    checks: list[_TableCheck] = []
    for spec in specs.values():
        model = pandera_model_of(spec.metadata)
        if model is not None:
            checks.append(_schema_check(spec, model))
        if spec.key.path[-1] in ("games", "rated_games"):
            checks.append(_duplicates_check(spec, NO_DUPLICATE_GAMES, "game_id", NO_DUPLICATE_GAMES_DESCRIPTION))
        if spec.key.path[-1] == "rating_list":
            checks.append(_duplicates_check(spec, NO_DUPLICATE_PLAYERS, "player_id", NO_DUPLICATE_PLAYERS_DESCRIPTION))
    for scenario in scenarios:
        list_key, games_key = rating_list_key(scenario), rated_games_key(scenario)
        if list_key in specs and games_key in specs:
            checks.extend(_list_checks(specs[list_key], specs[games_key], scenario))
    return checks


def build_table_checks(assets: Iterable[object], scenarios: dict[str, Scenario]) -> list[dg.AssetChecksDefinition]:
    """One blocking multi-check step per asset step, covering every partitioned Parquet table it writes.

    Grouping by step keeps a range run to one extra step per stage (the lists are read once for all
    their checks), and blocking stays acyclic: a step's checks wait only for that step.
    """
    definitions = []
    for asset in assets:
        if not isinstance(asset, dg.AssetsDefinition) or not asset.is_executable:
            continue
        checks = _checks_of(asset, scenarios.values())
        if checks:
            definitions.append(_multi_check(asset.node_def.name, checks))
    return definitions


def _multi_check(step: str, checks: list[_TableCheck]) -> dg.AssetChecksDefinition:
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
