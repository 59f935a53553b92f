"""Asset checks on every partitioned table: reconciliation, stored schema, duplicates, floor, list continuity, rating-point conservation."""

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dagster as dg
import polars as pl

from assets.io_manager import table_key
from assets.metadata import counts_table, pandera_model_of
from assets.ratings import previous_list, rated_games_key, rating_list_key
from assets.resources import ObjectStoreResource
from pipeline.landing import inventory, unplaced
from pipeline.months import add_months
from pipeline.rules import RuleSet
from pipeline.scenarios import Scenario
from pipeline.validate import reconcile as reconcile_files
from pipeline.storage import ObjectStore
from schemas.util import polars_schema

RECONCILIATION = "reconciliation"
LANDING_ZONE_LAYOUT = "landing_zone_layout"
LANDING_ZONE_LAYOUT_DESCRIPTION = """Every file under raw/ is read or accounted for in a month.

Files in a month folder that are not read (misplaced, links, special files) are quarantined in that
month; this check lists the files no month accounts for (directly under raw/ or raw/<FED>/, or in a
folder that is no month), with where they belong. A warning: the dumps in place are rated all the same."""
SCHEMA = "schema"
NO_DUPLICATE_GAMES = "no_duplicate_games"
NO_DUPLICATE_PLAYERS = "no_duplicate_players"
FLOOR_RESPECTED = "floor_respected"
LIST_CONTINUITY = "list_continuity"
POINTS_CONSERVED = "rating_points_conserved"

# Failing months listed in a check's metadata at most; the count says how many there were.
MAX_LISTED_PROBLEMS = 25
# Footers are tiny: fetch many at once so a 200-month check on S3 is not 200 sequential round trips.
FOOTER_READ_THREADS = 16
# What the per-file reconciliation reads of each month's tables.
RECONCILED_COLUMNS = {
    "raw_games": ["source_file", "record_id"], "games": ["source_file", "game_id"], "quarantine": ["source_file", "record_id"],
}
# Expected scores are stored as hundredths / 100 in float64; identities hold to far better than this.
FLOAT_TOLERANCE = 1e-6

RECONCILIATION_DESCRIPTION = """raw_games rows = games rows + quarantine rows, for every month of the run and every source file.

Per file, by record id: every raw record is exactly one game or one quarantined record. Nothing is
lost between the landing zone and the validated tables. Blocking: a failing month stops
the rating of the run."""

SCHEMA_DESCRIPTION = """The stored Parquet file of every month of the run has exactly the columns and types of `{model}`.

Read from each file's footer (no data), so it also catches files written by another version of the
pipeline or by hand. Blocking: a table with the wrong shape never feeds the next stage."""

NO_DUPLICATE_GAMES_DESCRIPTION = """No game_id occurs twice in a month (duplicate submissions are quarantined, not rated twice). Blocking."""

NO_DUPLICATE_PLAYERS_DESCRIPTION = """No player_id occurs twice on a month's list. Blocking."""

FLOOR_DESCRIPTION = """No player whose rating was calculated this period is published below the rule set's floor.

The floor is the one of the rule set the scenario rates the month under (Scenario.rules_for). Only
players with games > 0 (or a first rating) are checked: a list legitimately carries untouched ratings
below a floor introduced later until those players play again. Blocking."""

CONTINUITY_DESCRIPTION = """List M is list M-1 carried forward: nobody disappears, nobody loses a rating without the delisted flag,
and every rating on both lists moved by exactly its `change` (rating_M = rating_M-1 + change_M).

For the first month of the partitions, M-1 is the seed list the chain started from. Blocking."""

CONSERVATION_DESCRIPTION = """Rating points are conserved in games between rated players, and the list rests on exactly these games.

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


@dataclass(frozen=True)
class MonthProblems:
    """The outcome of one check over the months of a run: what failed, and numbers for the UI."""

    problems: list[str]
    stats: dict[str, int | float | str]

    @property
    def passed(self) -> bool:
        return not self.problems


def _listed(problems: list[str]) -> dg.MetadataValue:
    shown = problems[:MAX_LISTED_PROBLEMS]
    more = len(problems) - len(shown)
    return dg.MetadataValue.md("\n".join(f"- {p}" for p in shown) + (f"\n- ... and {more} more" if more else ""))


def _result(asset_key: dg.AssetKey, name: str, months: Sequence[str], outcome: MonthProblems) -> dg.AssetCheckResult:
    metadata: dict[str, object] = {"months_checked": len(months), "first_month": months[0], "last_month": months[-1],
                                   **outcome.stats}
    if outcome.problems:
        metadata["problems"] = _listed(outcome.problems)
        metadata["problem_count"] = len(outcome.problems)
    return dg.AssetCheckResult(asset_key=asset_key, check_name=name, passed=outcome.passed, metadata=metadata)


# -- reconciliation ----------------------------------------------------------------------------

def stored_rows(store: ObjectStore, asset: str, month: str) -> int | None:
    """Row count of a stored month from the Parquet footer (no data read); None when it is missing."""
    key = table_key([asset], month)
    if not store.exists(key):
        return None
    return store.parquet_rows(key)


def reconcile(store: ObjectStore, months: list[str]) -> tuple[list[str], dict[str, int]]:
    """(failing months and files with their counts, totals) for the stored raw_games / games / quarantine.

    Per month, then per source file by record id (pipeline.validate.reconcile): every raw record of
    every file is exactly one game or one quarantined record. Each table is read once, two columns.
    """
    failing: list[str] = []
    totals = {"raw_games": 0, "games": 0, "quarantine": 0, "files": 0}
    for month in months:
        tables = {asset: _read(store, [asset], month, columns) for asset, columns in RECONCILED_COLUMNS.items()}
        if any(table is None for table in tables.values()):
            missing = ", ".join(asset for asset, table in tables.items() if table is None)
            failing.append(f"{month}: not stored ({missing})")
            continue
        counts = {asset: table.height for asset, table in tables.items()}
        for asset, n in counts.items():
            totals[asset] += n
        if counts["raw_games"] != counts["games"] + counts["quarantine"]:
            failing.append(f"{month}: raw {counts['raw_games']} != games {counts['games']} + quarantine {counts['quarantine']}")
        per_file = reconcile_files(tables["raw_games"], tables["games"], tables["quarantine"])
        totals["files"] += per_file.height
        for file, records, games, quarantined in per_file.filter(~pl.col("ok")).select(
                "source_file", "records", "games", "quarantined").iter_rows():
            counted = "the record ids differ" if records == games + quarantined else f"{games} games + {quarantined} quarantined"
            failing.append(f"{month} {file}: {records} records, {counted}")
    return failing, totals


def mostly_quarantined(store: ObjectStore, months: Sequence[str], share: float = 0.5) -> list[str]:
    """'<month>: q of n records (p%) quarantined' for the months whose quarantine exceeds `share` of the records."""
    found = []
    for month in months:
        records, quarantined = stored_rows(store, "raw_games", month), stored_rows(store, "quarantine", month)
        if records and quarantined is not None and quarantined > share * records:
            found.append(f"{month}: {quarantined:,} of {records:,} records ({quarantined / records:.0%}) quarantined")
    return found


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
        metadata: dict[str, object] = {
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
        metadata: dict[str, object] = {"unplaced_files": len(problems)}
        if problems:
            metadata["problems"] = _listed(problems)
        return dg.AssetCheckResult(passed=not problems, severity=dg.AssetCheckSeverity.WARN, metadata=metadata)

    return [reconciliation, landing_zone_layout]


# -- pure checks (no Dagster: testable on plain frames) -----------------------------------------

def schema_problems(store: ObjectStore, asset_path: Sequence[str], expected: pl.Schema, months: Sequence[str]) -> MonthProblems:
    """Months whose stored file is missing or whose footer schema differs from `expected` (names, order, types)."""

    def footer(month: str) -> dict[str, pl.DataType] | None:
        key = table_key(asset_path, month)
        return store.parquet_schema(key) if store.exists(key) else None

    with ThreadPoolExecutor(max_workers=min(FOOTER_READ_THREADS, max(1, len(months)))) as pool:
        footers = list(pool.map(footer, months))
    problems = []
    want = list(expected.items())
    for month, found in zip(months, footers):
        if found is None:
            problems.append(f"{month}: not stored")
        elif list(found.items()) != want:
            missing = [n for n in expected if n not in found]
            extra = [n for n in found if n not in expected]
            retyped = [f"{n} {found[n]} (want {t})" for n, t in want if n in found and found[n] != t]
            detail = "; ".join(part for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unexpected {', '.join(extra)}" if extra else "",
                f"types {', '.join(retyped)}" if retyped else "",
                "column order" if not (missing or extra or retyped) else "",
            ) if part)
            problems.append(f"{month}: {detail}")
    return MonthProblems(problems, {"columns": len(want)})


def duplicate_ids(frame: pl.DataFrame, column: str) -> list:
    """Values of `column` that occur more than once, sorted."""
    return sorted(frame.group_by(column).len().filter(pl.col("len") > 1)[column].to_list())


def floor_offenders(rating_list: pl.DataFrame, floor: int | None) -> pl.DataFrame:
    """Players rated this period (games > 0 or a first rating) published below `floor`."""
    if floor is None:
        return rating_list.clear()
    rated_now = (pl.col("games") > 0) | pl.col("newly_rated")
    return rating_list.filter(rated_now & pl.col("rating").is_not_null() & (pl.col("rating") < floor))


def continuity_problems(previous: pl.DataFrame, current: pl.DataFrame) -> list[str]:
    """How list `current` fails to be `previous` carried forward (empty when it is)."""
    joined = previous.select("player_id", prev_rating="rating").join(
        current.select("player_id", "rating", "change", "delisted"), on="player_id", how="left", coalesce=True
    )
    problems = []
    gone = joined.filter(pl.col("delisted").is_null())["player_id"]
    if gone.len():
        problems.append(f"{gone.len()} player(s) of the previous list missing, e.g. {gone.head(5).to_list()}")
    lost = joined.filter(pl.col("prev_rating").is_not_null() & pl.col("rating").is_null() & (pl.col("delisted") == False))  # noqa: E712
    if lost.height:
        problems.append(f"{lost.height} player(s) lost their rating without the delisted flag, e.g. {lost['player_id'].head(5).to_list()}")
    both = joined.filter(pl.col("prev_rating").is_not_null() & pl.col("rating").is_not_null())
    moved = both.filter((pl.col("prev_rating") + pl.col("change").fill_null(0)) != pl.col("rating"))
    if moved.height:
        sample = moved.head(3).select("player_id", "prev_rating", "change", "rating").rows()
        problems.append(f"{moved.height} rating(s) differ from previous + change, e.g. (id, before, change, after) {sample}")
    wrongly_delisted = current.filter(pl.col("delisted")).join(previous.filter(pl.col("rating").is_not_null()), on="player_id", how="anti")
    if wrongly_delisted.height:
        problems.append(f"{wrongly_delisted.height} player(s) delisted who were not rated before, e.g. {wrongly_delisted['player_id'].head(5).to_list()}")
    return problems


def _one_sided_cap(rules: RuleSet) -> pl.Expr:
    """Games where the 400-point rule may have been applied to one side only (not a zero-sum game by design)."""
    if rules.cap_mode in ("off", "every-game") or rules.cap_difference is None:
        return pl.lit(False)
    beyond_cap = (pl.col("white_rating_used") - pl.col("black_rating_used")).abs() > rules.cap_difference
    if rules.cap_mode == "exempt-top":
        exempt = (pl.col("white_rating_used") >= rules.cap_exempt_from) | (pl.col("black_rating_used") >= rules.cap_exempt_from)
        return beyond_cap & exempt
    return beyond_cap  # once-per-event: the capped game differs per player


def player_sides(rated_games: pl.DataFrame) -> pl.DataFrame:
    """One row per player per game counted for that player: score, expected, weight, event."""
    common = ["game_id", "event_id", "weight"]
    white = rated_games.filter(pl.col("white_expected").is_not_null()).select(
        *common, player_id="white_id", score="white_score", expected="white_expected")
    black = rated_games.filter(pl.col("black_expected").is_not_null()).select(
        *common, player_id="black_id", score=1.0 - pl.col("white_score"), expected="black_expected")
    return pl.concat([white, black]).with_columns(delta=pl.col("weight") * (pl.col("score") - pl.col("expected")))


def conservation_problems(
    rated_games: pl.DataFrame, rating_list: pl.DataFrame, rules: RuleSet, check_changes: bool
) -> MonthProblems:
    """Zero-sum expectations, conserved points between equal-K players, and changes re-derived from the games."""
    problems: list[str] = []
    both_rated = rated_games.filter(pl.col("white_expected").is_not_null() & pl.col("black_expected").is_not_null())
    symmetric = both_rated.filter(~_one_sided_cap(rules))
    imbalance = symmetric.with_columns(gap=(pl.col("white_expected") + pl.col("black_expected") - 1.0).abs())
    broken = imbalance.filter(pl.col("gap") > FLOAT_TOLERANCE)
    if broken.height:
        problems.append(f"{broken.height} game(s) where the expectations do not sum to 1, e.g. game_id {broken['game_id'].head(3).to_list()}")

    # Only players rated this period have a K; the others cannot be in an equal-K game.
    k = rating_list.filter(pl.col("k_used").is_not_null()).select("player_id", "k_used")
    equal_k = (
        symmetric.join(k.rename({"player_id": "white_id", "k_used": "white_k"}), on="white_id", how="left")
        .join(k.rename({"player_id": "black_id", "k_used": "black_k"}), on="black_id", how="left")
        .filter(pl.col("white_k").is_not_null() & (pl.col("white_k") == pl.col("black_k")))
    )
    exchanged = equal_k.select(
        net=(pl.col("white_k").cast(pl.Float64) * pl.col("weight")
             * ((pl.col("white_score") - pl.col("white_expected")) + ((1.0 - pl.col("white_score")) - pl.col("black_expected")))).sum(),
        moved=(pl.col("white_k").cast(pl.Float64) * pl.col("weight") * (pl.col("white_score") - pl.col("white_expected")).abs()).sum(),
    )
    net, moved = exchanged.row(0) if equal_k.height else (0.0, 0.0)
    if abs(net) > FLOAT_TOLERANCE * max(1, equal_k.height):
        problems.append(f"rating points not conserved between equal-K players: net {net:+.6f} over {equal_k.height} games")

    stats: dict[str, int | float | str] = {
        "games_both_rated": both_rated.height,
        "games_zero_sum_checked": symmetric.height,
        "games_equal_k": equal_k.height,
        "points_exchanged_equal_k": round(float(moved), 3),
        "points_net_equal_k": round(float(net), 9),
    }
    if check_changes:
        problems.extend(_change_problems(rated_games, rating_list, rules))
        stats["changes_rederived"] = "yes"
    else:
        stats["changes_rederived"] = "skipped (multi-month period or one-time event)"
    return MonthProblems(problems, stats)


def _change_problems(rated_games: pl.DataFrame, rating_list: pl.DataFrame, rules: RuleSet) -> list[str]:
    sides = player_sides(rated_games)
    per_player = sides.group_by("player_id").agg(
        counted=pl.len().cast(pl.Int32), delta=pl.col("delta").sum(), events=pl.col("event_id").n_unique()
    )
    # Players without games on the list need a look only if rated_games counts games for them (the full join).
    rated_before = rating_list.filter((pl.col("change").is_not_null() | pl.col("delisted")) & (pl.col("games") > 0)).select(
        "player_id", "games", "change", "k_used")
    joined = rated_before.join(per_player, on="player_id", how="full", coalesce=True).with_columns(
        pl.col("counted").fill_null(0), pl.col("games").fill_null(0))
    problems = []
    miscounted = joined.filter(pl.col("counted") != pl.col("games"))
    if miscounted.height:
        sample = miscounted.head(3).select("player_id", "games", "counted").rows()
        problems.append(f"{miscounted.height} player(s) whose list games differ from rated_games, e.g. (id, list, games) {sample}")
    played = joined.filter(pl.col("counted") > 0)
    slack = 0.5 * (pl.col("events") if rules.rounding == "per-event" else pl.lit(1)) + FLOAT_TOLERANCE
    off = played.filter(
        pl.col("k_used").is_null() | pl.col("change").is_null()
        | ((pl.col("change") - pl.col("k_used").cast(pl.Float64) * pl.col("delta")).abs() > slack)
    )
    if off.height:
        sample = off.head(3).select("player_id", "k_used", "change", pl.col("delta").round(4)).rows()
        problems.append(f"{off.height} change(s) not K x sum(weight x (score - expected)), e.g. (id, K, change, sum) {sample}")
    return problems


# -- Dagster wiring ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _TableCheck:
    """One check of one asset: its spec and how to evaluate it for the months of a run."""

    spec: dg.AssetCheckSpec
    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]


def _schema_check(spec: dg.AssetSpec, model: object) -> _TableCheck:
    expected = polars_schema(model)
    return _TableCheck(
        dg.AssetCheckSpec(SCHEMA, asset=spec.key, blocking=True, partitions_def=spec.partitions_def,
                          description=SCHEMA_DESCRIPTION.format(model=f"schemas.{model.__name__}")),
        lambda store, months: schema_problems(store, spec.key.path, expected, months),
    )


def _duplicates_check(spec: dg.AssetSpec, name: str, column: str, description: str) -> _TableCheck:
    def evaluate(store: ObjectStore, months: list[str]) -> MonthProblems:
        problems, rows = [], 0
        for month in months:
            frame = _read(store, spec.key.path, month, [column])
            if frame is None:
                problems.append(f"{month}: not stored")
                continue
            rows += frame.height
            twice = duplicate_ids(frame, column)
            if twice:
                problems.append(f"{month}: {len(twice)} duplicate {column}(s), e.g. {twice[:5]}")
        return MonthProblems(problems, {"rows": rows})

    return _TableCheck(dg.AssetCheckSpec(name, asset=spec.key, blocking=True, partitions_def=spec.partitions_def,
                                         description=description), evaluate)


def _read(store: ObjectStore, asset_path: Sequence[str], month: str, columns: list[str] | None = None) -> pl.DataFrame | None:
    key = table_key(asset_path, month)
    return store.read_parquet(key, columns=columns) if store.exists(key) else None


LIST_COLUMNS = ["player_id", "rating", "change", "k_used", "games", "delisted", "newly_rated"]
RATED_GAMES_COLUMNS = ["game_id", "event_id", "white_id", "black_id", "white_score", "white_rating_used",
                       "black_rating_used", "white_expected", "black_expected", "weight"]


def _list_checks(list_spec: dg.AssetSpec, games_spec: dg.AssetSpec, scenario: Scenario) -> list[_TableCheck]:
    """Floor, continuity and conservation of one scenario's chain.

    They read the same lists, so one pass over the months evaluates all three (each list is read
    once, and serves as the previous list of the next month); the pass runs when the first of them
    is evaluated and the others take their outcome from it.
    """
    partitions = list_spec.partitions_def
    first_partition = partitions.get_first_partition_key()
    list_path, games_path = list_spec.key.path, games_spec.key.path
    # The last pass: its store object (held, so that no later object can take its identity), months and outcome.
    last: dict[str, object] = {}

    def one_pass(store: ObjectStore, months: list[str]) -> dict[str, MonthProblems]:
        if last.get("store") is not store or last.get("months") != months:
            last.update(store=store, months=list(months), outcome=_evaluate_list_checks(store, months))
        return last["outcome"]

    def _evaluate_list_checks(store: ObjectStore, months: list[str]) -> dict[str, MonthProblems]:
        floor_problems: list[str] = []
        continuity: list[str] = []
        conservation: list[str] = []
        floor_checked = carried = rederived = 0
        totals: dict[str, float] = {"games_both_rated": 0, "games_zero_sum_checked": 0, "games_equal_k": 0,
                                    "points_exchanged_equal_k": 0.0}
        previous: pl.DataFrame | None = None
        for month in months:
            current = _read(store, list_path, month, LIST_COLUMNS)
            if previous is None:  # first month of the run (or after a missing one): read the list before it
                if month == first_partition:
                    previous = previous_list(store, scenario, month, first_partition).select(LIST_COLUMNS)
                else:
                    previous = _read(store, list_path, add_months(month, -1), LIST_COLUMNS)
            if current is None:
                for problems in (floor_problems, continuity, conservation):
                    problems.append(f"{month}: not stored")
                previous = None
                continue
            rules = scenario.rules_for(month)

            offenders = floor_offenders(current, rules.floor)
            floor_checked += current.filter((pl.col("games") > 0) | pl.col("newly_rated")).height if rules.floor is not None else 0
            if offenders.height:
                sample = offenders.head(5).select("player_id", "rating").rows()
                floor_problems.append(f"{month}: {offenders.height} player(s) below the floor {rules.floor}, e.g. {sample}")

            if previous is None:
                continuity.append(f"{month}: the list of {add_months(month, -1)} is not stored")
            else:
                carried += previous.height
                continuity.extend(f"{month}: {problem}" for problem in continuity_problems(previous, current))

            games = _read(store, games_path, month, RATED_GAMES_COLUMNS)
            if games is None:
                conservation.append(f"{month}: not stored")
            else:
                # The per-game table holds the month's own games only; a list that also rates earlier
                # months (or gets a one-time uplift) cannot be re-derived from it alone.
                single_month_list = rules.publishes_list_after(month) and scenario.period_months(month) == [month]
                check_changes = single_month_list and not scenario.events_after(month)
                outcome = conservation_problems(games, current, rules, check_changes)
                rederived += int(check_changes)
                conservation.extend(f"{month}: {problem}" for problem in outcome.problems)
                for name in totals:
                    totals[name] += outcome.stats[name]
            previous = current
        return {
            FLOOR_RESPECTED: MonthProblems(floor_problems, {"players_checked": floor_checked}),
            LIST_CONTINUITY: MonthProblems(continuity, {"players_carried": carried}),
            POINTS_CONSERVED: MonthProblems(
                conservation, {**{k: round(v, 3) for k, v in totals.items()}, "months_changes_rederived": rederived}),
        }

    def spec(asset: dg.AssetSpec, name: str, description: str) -> dg.AssetCheckSpec:
        return dg.AssetCheckSpec(name, asset=asset.key, blocking=True, partitions_def=asset.partitions_def,
                                 description=description, additional_deps=[list_spec.key] if asset is games_spec else None)

    def outcome_of(name: str) -> Callable[[ObjectStore, list[str]], MonthProblems]:
        return lambda store, months: one_pass(store, months)[name]

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

    @dg.multi_asset_check(name=f"{step}_checks", specs=[check.spec for check in checks], can_subset=True,
                          description=f"Checks of the tables step {step} writes, for every month of the run.")
    def table_checks(context: dg.AssetCheckExecutionContext, store: ObjectStoreResource) -> Iterable[dg.AssetCheckResult]:
        months = list(context.partition_keys)
        object_store = store.store()
        for key in sorted(context.selected_asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
            check = by_key[key]
            yield _result(key.asset_key, key.name, months, check.evaluate(object_store, months))

    return table_checks
