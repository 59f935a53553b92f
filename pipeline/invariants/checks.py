"""The invariants the asset checks verify, as plain functions over an ObjectStore or frames (no Dagster)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from pipeline.ingest.landing import inventory, unplaced
from pipeline.months import add_months
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import below_floor, cap_may_be_one_sided, has_floor
from pipeline.scenarios.chain import previous_list
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.validate.month_figures import QUARANTINE_WARNING_SHARE
from pipeline.validate.split import reconcile as reconcile_files
from schemas.conformance import ascends_strictly

# Footers are tiny: fetch many at once so a 200-month check on S3 is not 200 sequential round trips.
FOOTER_READ_THREADS = 16
# What the per-file reconciliation reads of each month's tables.
RECONCILED_COLUMNS = {
    "raw_games": ["source_file", "record_id"],
    "games": ["source_file", "game_id"],
    "quarantine": ["source_file", "record_id"],
}
# Expected scores are stored as hundredths / 100 in float64; identities hold to far better than this.
FLOAT_TOLERANCE = 1e-6
LIST_COLUMNS = ["player_id", "rating", "change", "k_used", "games", "delisted", "newly_rated"]
RATED_GAMES_COLUMNS = [
    "game_id",
    "event_id",
    "white_id",
    "black_id",
    "white_score",
    "white_rating_used",
    "black_rating_used",
    "white_expected",
    "black_expected",
    "weight",
]


# -- the checks that verify these invariants, and what each asserts (the UI shows the text) --------------

RECONCILIATION = "reconciliation"
LANDING_ZONE_LAYOUT = "landing_zone_layout"
QUARANTINE_SHARE = "quarantine_share"
SCHEMA = "schema"
NO_DUPLICATE_GAMES = "no_duplicate_games"
NO_DUPLICATE_PLAYERS = "no_duplicate_players"
FLOOR_RESPECTED = "floor_respected"
LIST_CONTINUITY = "list_continuity"
POINTS_CONSERVED = "rating_points_conserved"

CHECK_DESCRIPTIONS = {
    RECONCILIATION: """raw_games rows = games rows + quarantine rows, for every month of the run and every \
source file.

Per file, by record id: every raw record is exactly one game or one quarantined record. Nothing is
lost between the landing zone and the validated tables. Blocking: a failing month stops
the rating of the run.""",
    LANDING_ZONE_LAYOUT: """Every file under raw/ is read or accounted for in a month.

Files in a month folder that are not read (misplaced, links, special files) are quarantined in that
month; this check lists the files no month accounts for (directly under raw/ or raw/<FED>/, or in a
folder that is no month), with where they belong. A warning: the dumps in place are rated all the same.""",
    QUARANTINE_SHARE: """At most half of a month's raw records are quarantined.

More usually means a missing registry, a dump in the wrong month folder or an export in another
layout, not a federation's bad month. A warning, not blocking: every record is still accounted for
(the reconciliation check), and the month's reasons are in its quarantine metadata.""",
    SCHEMA: """The stored Parquet file of every month of the run has exactly the columns and types of \
`{model}`.

Read from each file's footer (no data), so it also catches files written by another version of the
pipeline or by hand. Blocking: a table with the wrong shape never feeds the next stage.""",
    NO_DUPLICATE_GAMES: "No game_id occurs twice in a month (duplicate submissions are quarantined, not rated "
    "twice). Blocking.",
    NO_DUPLICATE_PLAYERS: "No player_id occurs twice on a month's list. Blocking.",
    FLOOR_RESPECTED: """No player whose rating was calculated this period is published below the rule set's floor.

The floor is the one of the rule set the scenario rates the month under (Scenario.rules_for). Only
players with games > 0 (or a first rating) are checked: a list legitimately carries untouched ratings
below a floor introduced later until those players play again. Blocking.""",
    LIST_CONTINUITY: """List M is list M-1 carried forward: nobody disappears, nobody loses a rating without the \
delisted flag,
and every rating on both lists moved by exactly its `change` (rating_M = rating_M-1 + change_M).

For the first month of the partitions, M-1 is the seed list the chain started from. Blocking.""",
    POINTS_CONSERVED: """Rating points are conserved in games between rated players, and the list rests on \
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
list not computed from the stored per-game table. Blocking: crosstables and reports wait for it.""",
}


@dataclass(frozen=True)
class MonthProblems:
    """The outcome of one check over the months of a run: what failed, and numbers for the UI."""

    problems: list[str]
    stats: dict[str, int | float | str]

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class ChainProblems:
    """The three invariants of one scenario's chain of lists, from one pass over the months."""

    floor: MonthProblems
    continuity: MonthProblems
    conservation: MonthProblems


def read_month(
    store: ObjectStore, asset_path: Sequence[str], month: str, columns: list[str] | None = None
) -> pl.DataFrame | None:
    """A stored month of a table (only `columns` when given), or None when it is not stored."""
    key = table_key(asset_path, month)
    return store.read_parquet(key, columns=columns) if store.exists(key) else None


def in_id_order(rating_list: pl.DataFrame | None) -> pl.DataFrame | None:
    """The list with player_id flagged sorted when its ids strictly ascend (as the engine keeps them), so that
    Polars joins two lists by merging them instead of hashing (a 737,000-player month's continuity: 91 -> 44 ms).
    A list out of order is returned as it is: the flag is only set where it was verified.
    """
    if rating_list is None or not ascends_strictly(rating_list["player_id"]):
        return rating_list
    return rating_list.with_columns(pl.col("player_id").set_sorted())


# -- reconciliation ----------------------------------------------------------------------------


def stored_rows(store: ObjectStore, asset: str, month: str) -> int | None:
    """Row count of a stored month from the Parquet footer (no data read); None when it is missing."""
    key = table_key([asset], month)
    if not store.exists(key):
        return None
    return store.parquet_rows(key)


def reconcile(store: ObjectStore, months: list[str]) -> tuple[list[str], dict[str, int]]:
    """(failing months and files with their counts, totals) for the stored raw_games / games / quarantine.

    Per month, then per source file by record id (pipeline.validate.split.reconcile): every raw record of
    every file is exactly one game or one quarantined record. Each table is read once, two columns.
    """
    failing: list[str] = []
    totals = {"raw_games": 0, "games": 0, "quarantine": 0, "files": 0}
    for month in months:
        stored = {asset: read_month(store, [asset], month, columns) for asset, columns in RECONCILED_COLUMNS.items()}
        tables = {asset: table for asset, table in stored.items() if table is not None}
        if len(tables) < len(stored):
            missing = ", ".join(asset for asset, table in stored.items() if table is None)
            failing.append(f"{month}: not stored ({missing})")
            continue
        counts = {asset: table.height for asset, table in tables.items()}
        for asset, n in counts.items():
            totals[asset] += n
        if counts["raw_games"] != counts["games"] + counts["quarantine"]:
            failing.append(
                f"{month}: raw {counts['raw_games']} != games {counts['games']} + quarantine {counts['quarantine']}"
            )
        per_file = reconcile_files(tables["raw_games"], tables["games"], tables["quarantine"])
        totals["files"] += per_file.height
        for file, records, games, quarantined in (
            per_file.filter(~pl.col("ok")).select("source_file", "records", "games", "quarantined").iter_rows()
        ):
            counted = (
                "the record ids differ"
                if records == games + quarantined
                else f"{games} games + {quarantined} quarantined"
            )
            failing.append(f"{month} {file}: {records} records, {counted}")
    return failing, totals


def mostly_quarantined(store: ObjectStore, months: Sequence[str], share: float = QUARANTINE_WARNING_SHARE) -> list[str]:
    """'<month>: q of n records (p%) quarantined' for the months whose quarantine exceeds `share` of the records."""
    found = []
    for month in months:
        records, quarantined = stored_rows(store, "raw_games", month), stored_rows(store, "quarantine", month)
        if records and quarantined is not None and quarantined > share * records:
            found.append(f"{month}: {quarantined:,} of {records:,} records ({quarantined / records:.0%}) quarantined")
    return found


def reconciliation_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The reconciliation check: failing months and files (reconcile), and the rows and files it counted."""
    failing, totals = reconcile(store, months)
    rows = {f"{asset}_rows": totals[asset] for asset in RECONCILED_COLUMNS}
    return MonthProblems(failing, {"source_files_checked": totals["files"], **rows})


def quarantine_share_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The quarantine-share check: the months more than half quarantined."""
    found = mostly_quarantined(store, months)
    return MonthProblems(found, {"mostly_quarantined_months": len(found)})


def landing_layout_problems(store: ObjectStore, months: list[str]) -> MonthProblems:
    """The landing-zone layout check: the files under raw/ that no month accounts for (the same for every month)."""
    found = [f"{entry.key}: {entry.problem}" for entry in unplaced(inventory(store))]
    return MonthProblems(found, {"unplaced_files": len(found)})


@dataclass(frozen=True)
class StoreCheck:
    """A check over the whole store for the months of a run, declared on the table it guards."""

    evaluate: Callable[[ObjectStore, list[str]], MonthProblems]
    reads: tuple[str, ...] = ()  # the other tables it reads
    # A warning's months are rated all the same: the dumps in place, every record accounted for.
    warning: bool = False


STORE_CHECKS = {
    RECONCILIATION: StoreCheck(reconciliation_problems, reads=("raw_games", "quarantine")),
    LANDING_ZONE_LAYOUT: StoreCheck(landing_layout_problems, warning=True),
    QUARANTINE_SHARE: StoreCheck(quarantine_share_problems, reads=("raw_games",), warning=True),
}


def problems_by_month(problems: Sequence[str], months: Sequence[str]) -> dict[str, list[str]]:
    """Each month's problems: those whose text starts with the month ('2024-02: ...'), and those naming no month
    (a whole-store problem fails every month).
    """
    store_wide = [p for p in problems if not any(p.startswith(month) for month in months)]
    return {month: [p for p in problems if p.startswith(month)] + store_wide for month in months}


# -- per table ---------------------------------------------------------------------------------


def schema_problems(
    store: ObjectStore, asset_path: Sequence[str], expected: pl.Schema, months: Sequence[str]
) -> MonthProblems:
    """Months whose stored file is missing or whose footer schema differs from `expected` (names, order, types)."""

    def footer(month: str) -> dict[str, pl.DataType] | None:
        key = table_key(asset_path, month)
        return store.parquet_schema(key) if store.exists(key) else None

    with ThreadPoolExecutor(max_workers=min(FOOTER_READ_THREADS, max(1, len(months)))) as pool:
        footers = list(pool.map(footer, months))
    problems = []
    want = list(expected.items())
    for month, found in zip(months, footers, strict=True):
        if found is None:
            problems.append(f"{month}: not stored")
        elif list(found.items()) != want:
            missing = [n for n in expected if n not in found]
            extra = [n for n in found if n not in expected]
            retyped = [f"{n} {found[n]} (want {t})" for n, t in want if n in found and found[n] != t]
            detail = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unexpected {', '.join(extra)}" if extra else "",
                    f"types {', '.join(retyped)}" if retyped else "",
                    "column order" if not (missing or extra or retyped) else "",
                )
                if part
            )
            problems.append(f"{month}: {detail}")
    return MonthProblems(problems, {"columns": len(want)})


def duplicate_ids(frame: pl.DataFrame, column: str) -> list:
    """Values of `column` that occur more than once, sorted."""
    if ascends_strictly(frame[column]):  # a list in id order: known unique without hashing 737,000 ids
        return []
    return sorted(frame.group_by(column).len().filter(pl.col("len") > 1)[column].to_list())


def duplicate_problems(
    store: ObjectStore, asset_path: Sequence[str], column: str, months: Sequence[str]
) -> MonthProblems:
    """Months whose stored table is missing or holds a value of `column` more than once."""
    problems, rows = [], 0
    for month in months:
        frame = read_month(store, asset_path, month, [column])
        if frame is None:
            problems.append(f"{month}: not stored")
            continue
        rows += frame.height
        twice = duplicate_ids(frame, column)
        if twice:
            problems.append(f"{month}: {len(twice)} duplicate {column}(s), e.g. {twice[:5]}")
    return MonthProblems(problems, {"rows": rows})


def floor_offenders(rating_list: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """Players rated this period (games > 0 or a first rating) published below the rule set's floor."""
    rated_now = (pl.col("games") > 0) | pl.col("newly_rated")
    return rating_list.filter(rated_now & pl.col("rating").is_not_null() & below_floor(pl.col("rating"), rules))


def continuity_problems(previous: pl.DataFrame, current: pl.DataFrame) -> list[str]:
    """How list `current` fails to be `previous` carried forward (empty when it is)."""
    joined = previous.select("player_id", prev_rating="rating").join(
        current.select("player_id", "rating", "change", "delisted"), on="player_id", how="left", coalesce=True
    )
    problems = []
    gone = joined.filter(pl.col("delisted").is_null())["player_id"]
    if gone.len():
        problems.append(f"{gone.len()} player(s) of the previous list missing, e.g. {gone.head(5).to_list()}")
    lost = joined.filter(pl.col("prev_rating").is_not_null() & pl.col("rating").is_null() & pl.col("delisted").not_())
    if lost.height:
        problems.append(
            f"{lost.height} player(s) lost their rating without the delisted flag, e.g. "
            f"{lost['player_id'].head(5).to_list()}"
        )
    both = joined.filter(pl.col("prev_rating").is_not_null() & pl.col("rating").is_not_null())
    moved = both.filter((pl.col("prev_rating") + pl.col("change").fill_null(0)) != pl.col("rating"))
    if moved.height:
        sample = moved.head(3).select("player_id", "prev_rating", "change", "rating").rows()
        problems.append(
            f"{moved.height} rating(s) differ from previous + change, e.g. (id, before, change, after) {sample}"
        )
    wrongly_delisted = current.filter(pl.col("delisted")).join(
        previous.filter(pl.col("rating").is_not_null()), on="player_id", how="anti"
    )
    if wrongly_delisted.height:
        problems.append(
            f"{wrongly_delisted.height} player(s) delisted who were not rated before, e.g. "
            f"{wrongly_delisted['player_id'].head(5).to_list()}"
        )
    return problems


def player_sides(rated_games: pl.DataFrame) -> pl.DataFrame:
    """One row per player per game counted for that player: score, expected, weight, event."""
    common = ["game_id", "event_id", "weight"]
    white = rated_games.filter(pl.col("white_expected").is_not_null()).select(
        *common, player_id="white_id", score="white_score", expected="white_expected"
    )
    black = rated_games.filter(pl.col("black_expected").is_not_null()).select(
        *common, player_id="black_id", score=1.0 - pl.col("white_score"), expected="black_expected"
    )
    return pl.concat([white, black]).with_columns(delta=pl.col("weight") * (pl.col("score") - pl.col("expected")))


def conservation_problems(
    rated_games: pl.DataFrame, rating_list: pl.DataFrame, rules: RuleSet, check_changes: bool
) -> MonthProblems:
    """Zero-sum expectations, conserved points between equal-K players, and changes re-derived from the games."""
    problems: list[str] = []
    both_rated = rated_games.filter(pl.col("white_expected").is_not_null() & pl.col("black_expected").is_not_null())
    symmetric = both_rated.filter(~cap_may_be_one_sided(rules))
    imbalance = symmetric.with_columns(gap=(pl.col("white_expected") + pl.col("black_expected") - 1.0).abs())
    broken = imbalance.filter(pl.col("gap") > FLOAT_TOLERANCE)
    if broken.height:
        problems.append(
            f"{broken.height} game(s) where the expectations do not sum to 1, e.g. game_id "
            f"{broken['game_id'].head(3).to_list()}"
        )

    # Only players rated this period have a K; the others cannot be in an equal-K game.
    k = rating_list.filter(pl.col("k_used").is_not_null()).select("player_id", "k_used")
    equal_k = (
        symmetric.join(k.rename({"player_id": "white_id", "k_used": "white_k"}), on="white_id", how="left")
        .join(k.rename({"player_id": "black_id", "k_used": "black_k"}), on="black_id", how="left")
        .filter(pl.col("white_k").is_not_null() & (pl.col("white_k") == pl.col("black_k")))
    )
    exchanged = equal_k.select(
        net=(
            pl.col("white_k").cast(pl.Float64)
            * pl.col("weight")
            * (
                (pl.col("white_score") - pl.col("white_expected"))
                + ((1.0 - pl.col("white_score")) - pl.col("black_expected"))
            )
        ).sum(),
        moved=(
            pl.col("white_k").cast(pl.Float64)
            * pl.col("weight")
            * (pl.col("white_score") - pl.col("white_expected")).abs()
        ).sum(),
    )
    net, moved = exchanged.row(0) if equal_k.height else (0.0, 0.0)
    if abs(net) > FLOAT_TOLERANCE * max(1, equal_k.height):
        problems.append(
            f"rating points not conserved between equal-K players: net {net:+.6f} over {equal_k.height} games"
        )

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
    rated_before = rating_list.filter(
        (pl.col("change").is_not_null() | pl.col("delisted")) & (pl.col("games") > 0)
    ).select("player_id", "games", "change", "k_used")
    joined = rated_before.join(per_player, on="player_id", how="full", coalesce=True).with_columns(
        pl.col("counted").fill_null(0), pl.col("games").fill_null(0)
    )
    problems = []
    miscounted = joined.filter(pl.col("counted") != pl.col("games"))
    if miscounted.height:
        sample = miscounted.head(3).select("player_id", "games", "counted").rows()
        problems.append(
            f"{miscounted.height} player(s) whose list games differ from rated_games, e.g. (id, list, games) {sample}"
        )
    played = joined.filter(pl.col("counted") > 0)
    slack = 0.5 * (pl.col("events") if rules.rounding == "per-event" else pl.lit(1)) + FLOAT_TOLERANCE
    off = played.filter(
        pl.col("k_used").is_null()
        | pl.col("change").is_null()
        | ((pl.col("change") - pl.col("k_used").cast(pl.Float64) * pl.col("delta")).abs() > slack)
    )
    if off.height:
        sample = off.head(3).select("player_id", "k_used", "change", pl.col("delta").round(4)).rows()
        problems.append(
            f"{off.height} change(s) not K x sum(weight x (score - expected)), e.g. (id, K, change, sum) {sample}"
        )
    return problems


def system_conservation_problems(
    rated_games: pl.DataFrame, rating_list: pl.DataFrame, invariants: frozenset[str]
) -> MonthProblems:
    """What a rating system's month must satisfy: the invariants it declares, and a list resting on exactly these games.

    `zero_sum_expectation`: white_expected + black_expected = 1 in every game rated for both sides.
    Always: `games` on the list is the number of games rated for the player in rated_games (a system
    rates every game of its time controls for both sides). Rating points are not conserved by
    Glicko-type systems (each side's step depends on its own deviation), so there is no K to check.
    """
    problems: list[str] = []
    both_rated = rated_games.filter(pl.col("white_expected").is_not_null() & pl.col("black_expected").is_not_null())
    zero_sum = "zero_sum_expectation" in invariants
    if zero_sum:
        broken = both_rated.filter((pl.col("white_expected") + pl.col("black_expected") - 1.0).abs() > FLOAT_TOLERANCE)
        if broken.height:
            problems.append(
                f"{broken.height} game(s) where the expectations do not sum to 1, e.g. game_id "
                f"{broken['game_id'].head(3).to_list()}"
            )
    one_sided = rated_games.filter(pl.col("white_expected").is_null() != pl.col("black_expected").is_null())
    if one_sided.height:
        problems.append(
            f"{one_sided.height} game(s) rated for one side only, e.g. game_id {one_sided['game_id'].head(3).to_list()}"
        )
    counted = player_sides(rated_games).group_by("player_id").agg(counted=pl.len().cast(pl.Int32))
    joined = (
        rating_list.filter(pl.col("games") > 0)
        .select("player_id", "games")
        .join(counted, on="player_id", how="full", coalesce=True)
        .with_columns(pl.col("games").fill_null(0), pl.col("counted").fill_null(0))
    )
    miscounted = joined.filter(pl.col("games") != pl.col("counted"))
    if miscounted.height:
        sample = miscounted.head(3).select("player_id", "games", "counted").rows()
        problems.append(
            f"{miscounted.height} player(s) whose list games differ from rated_games, e.g. (id, list, games) {sample}"
        )
    stats: dict[str, int | float | str] = {
        "games_both_rated": both_rated.height,
        "games_zero_sum_checked": both_rated.height if zero_sum else 0,
        "games_equal_k": 0,
        "points_exchanged_equal_k": 0.0,
    }
    return MonthProblems(problems, stats)


# -- per scenario chain ------------------------------------------------------------------------


def _add_stats(totals: dict[str, float], stats: dict[str, int | float | str]) -> None:
    """Add a month's `stats` to the run's `totals`, key by key (the keys of `totals`: counts and point sums)."""
    for name in totals:
        value = stats[name]
        if isinstance(value, str):
            raise TypeError(f"stat {name!r} is not a number: {value!r}")
        totals[name] += value


def chain_problems(
    store: ObjectStore,
    scenario: Scenario,
    months: Sequence[str],
    list_path: Sequence[str],
    games_path: Sequence[str],
    first_partition: str,
    list_before_first: Callable[[], pl.DataFrame],
) -> ChainProblems:
    """Floor, continuity and conservation of one scenario's chain over `months`, in one pass.

    Each list is read once and serves as the previous list of the next month. The list before
    `first_partition` is not a stored month (it is the seed list the chain starts from), so the
    caller says how to get it.
    """
    floor_problems: list[str] = []
    continuity: list[str] = []
    conservation: list[str] = []
    floor_checked = carried = rederived = 0
    totals: dict[str, float] = {
        "games_both_rated": 0,
        "games_zero_sum_checked": 0,
        "games_equal_k": 0,
        "points_exchanged_equal_k": 0.0,
    }
    previous: pl.DataFrame | None = None
    for month in months:
        current = in_id_order(read_month(store, list_path, month, LIST_COLUMNS))
        if previous is None:  # first month of the run (or after a missing one): read the list before it
            if month == first_partition:
                previous = in_id_order(list_before_first().select(LIST_COLUMNS))
            else:
                previous = in_id_order(read_month(store, list_path, add_months(month, -1), LIST_COLUMNS))
        if current is None:
            for problems in (floor_problems, continuity, conservation):
                problems.append(f"{month}: not stored")
            previous = None
            continue
        # A rating system has no floor to check (uscf's floors are part of its own update).
        rules = None if scenario.is_system else scenario.rules_for(month)

        offenders = floor_offenders(current, rules) if rules is not None else current.clear()
        floor_checked += (
            current.filter((pl.col("games") > 0) | pl.col("newly_rated")).height
            if rules is not None and has_floor(rules)
            else 0
        )
        if offenders.height:
            sample = offenders.head(5).select("player_id", "rating").rows()
            highest = offenders["rating"].max()
            assert isinstance(highest, int)  # offenders are rated players: an integer rating each
            floor_problems.append(
                f"{month}: {offenders.height} player(s) below the floor (highest offender {highest}), e.g. {sample}"
            )

        if previous is None:
            continuity.append(f"{month}: the list of {add_months(month, -1)} is not stored")
        else:
            carried += previous.height
            continuity.extend(f"{month}: {problem}" for problem in continuity_problems(previous, current))

        games = read_month(store, games_path, month, RATED_GAMES_COLUMNS)
        if games is None:
            conservation.append(f"{month}: not stored")
        elif rules is None:
            outcome = system_conservation_problems(games, current, scenario.system_rules().system.invariants)
            conservation.extend(f"{month}: {problem}" for problem in outcome.problems)
            _add_stats(totals, outcome.stats)
        else:
            # The per-game table holds the month's own games only; a list that also rates earlier
            # months (or gets a one-time uplift) cannot be re-derived from it alone.
            single_month_list = rules.publishes_list_after(month) and scenario.period_months(month) == [month]
            check_changes = single_month_list and not scenario.events_after(month)
            outcome = conservation_problems(games, current, rules, check_changes)
            rederived += int(check_changes)
            conservation.extend(f"{month}: {problem}" for problem in outcome.problems)
            _add_stats(totals, outcome.stats)
        previous = current
    return ChainProblems(
        floor=MonthProblems(floor_problems, {"players_checked": floor_checked}),
        continuity=MonthProblems(continuity, {"players_carried": carried}),
        conservation=MonthProblems(
            conservation, {**{k: round(v, 3) for k, v in totals.items()}, "months_changes_rederived": rederived}
        ),
    )


class ChainPass:
    """Floor, continuity and conservation of one scenario's chain, from one pass over a run's months.

    The three checks read the same lists, so the pass runs when the first of them is evaluated and
    the others take its outcome (each list is read once, and serves as the previous list of the next
    month). The list before the first partition is the seed list the chain starts from.
    """

    def __init__(self, scenario: Scenario, list_path: Sequence[str], games_path: Sequence[str], first_partition: str):
        self.scenario, self.list_path, self.games_path = scenario, list_path, games_path
        self.first_partition = first_partition
        # The last pass: its store (held, so that no later object can take its identity), months and outcome.
        self._last: tuple[ObjectStore, list[str], ChainProblems] | None = None

    def outcome(self, store: ObjectStore, months: list[str]) -> ChainProblems:
        if self._last is None or self._last[0] is not store or self._last[1] != months:
            first = self.first_partition
            outcome = chain_problems(
                store,
                self.scenario,
                months,
                self.list_path,
                self.games_path,
                first,
                lambda: previous_list(store, self.scenario, first, first),
            )
            self._last = (store, list(months), outcome)
        return self._last[2]
