"""The invariants of a scenario's chain of lists: the floor, each list carrying the last forward, points conserved."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.invariants.catalog import MonthProblems
from pipeline.months import add_months
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import (
    below_floor,
    cap_may_be_one_sided,
    has_floor,
    rounds_per_event,
    seeds_from_standard,
)
from pipeline.scenarios.chain import previous_list
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import read_stored_month, table_key
from pipeline.store.object_store import ObjectStore
from schemas.conformance import ascends_strictly

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
#: The K each side was rated with (with_sides_k); a per-game table stored before them has the list's k_used instead.
SIDE_K_COLUMNS = ("white_k_used", "black_k_used")


@dataclass(frozen=True)
class ChainProblems:
    """The three invariants of one scenario's chain of lists, from one pass over the months."""

    floor: MonthProblems
    continuity: MonthProblems
    conservation: MonthProblems


def in_id_order(rating_list: pl.DataFrame | None) -> pl.DataFrame | None:
    """The list with player_id flagged sorted when its ids strictly ascend (as the engine keeps them), so that
    Polars joins two lists by merging them instead of hashing (a 737,000-player month's continuity: 91 -> 44 ms).
    A list out of order is returned as it is: the flag is only set where it was verified.
    """
    if rating_list is None or not ascends_strictly(rating_list["player_id"]):
        return rating_list
    return rating_list.with_columns(pl.col("player_id").set_sorted())


def floor_offenders(rating_list: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """Players rated this period (games > 0 or a first rating) published below the rule set's floor."""
    rated_now = (pl.col("games") > 0) | pl.col("newly_rated")
    return rating_list.filter(rated_now & pl.col("rating").is_not_null() & below_floor(pl.col("rating"), rules))


def continuity_problems(previous: pl.DataFrame, current: pl.DataFrame, seeded: bool = False) -> list[str]:
    """How list `current` fails to be `previous` carried forward (empty when it is): every rating is the previous
    one plus the change its games gave plus the correction it carries (recalculation forward; none where the list
    has no `correction` column).

    `seeded`: the list starts unrated players from another list's rating (a rapid or blitz list, from the standard
    list: regulations.seeds_from_standard), so a player who played this month may fall below the floor, and be
    delisted, without a rating on the list before.
    """
    correction = pl.col("correction") if "correction" in current.columns else pl.lit(None, dtype=pl.Int32)
    joined = previous.select("player_id", prev_rating="rating").join(
        current.select("player_id", "rating", "change", "delisted", correction.alias("correction")),
        on="player_id",
        how="left",
        coalesce=True,
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
    carried = pl.col("prev_rating") + pl.col("change").fill_null(0) + pl.col("correction").fill_null(0)
    moved = both.filter(carried != pl.col("rating"))
    if moved.height:
        sample = moved.head(3).select("player_id", "prev_rating", "change", "correction", "rating").rows()
        problems.append(
            f"{moved.height} rating(s) differ from previous + change + correction, e.g. (id, before, change, "
            f"correction, after) {sample}"
        )
    delisted = current.filter(pl.col("delisted") & ~(pl.col("games") > 0) if seeded else pl.col("delisted"))
    # The rated players of the list before among the delisted, first: a join on the few delisted, not a hash of the
    # whole list before (18 -> 5 ms a fide-scale month).
    rated_before = previous.filter(pl.col("rating").is_not_null()).join(
        delisted.select("player_id"), on="player_id", how="semi"
    )
    wrongly_delisted = delisted.join(rated_before, on="player_id", how="anti")
    if wrongly_delisted.height:
        problems.append(
            f"{wrongly_delisted.height} player(s) delisted who were not rated before, e.g. "
            f"{wrongly_delisted['player_id'].head(5).to_list()}"
        )
    return problems


def _read_list(store: ObjectStore, list_path: Sequence[str], month: str) -> pl.DataFrame | None:
    """LIST_COLUMNS of a stored list and its corrections (None: not stored); a list stored before lists had a
    `correction` column carries none.
    """
    try:
        return _in_one_chunk(read_stored_month(store, list_path, month, [*LIST_COLUMNS, "correction"]))
    except pl.exceptions.ColumnNotFoundError:
        frame = _in_one_chunk(read_stored_month(store, list_path, month, LIST_COLUMNS))
        return None if frame is None else frame.with_columns(correction=pl.lit(None, dtype=pl.Int32))


def _in_one_chunk(frame: pl.DataFrame | None) -> pl.DataFrame | None:
    """A stored table as one chunk a column (None: not stored)."""
    # Read, it is a chunk per row group (six for a 700,000-player list); Polars' joins and filters over one cost about
    # half as much (a fide-scale month's continuity 49 -> 32 ms, its conservation 35 -> 26), the copy 1-2 ms.
    return None if frame is None else frame.rechunk()


def with_sides_k(rated_games: pl.DataFrame, rating_list: pl.DataFrame) -> pl.DataFrame:
    """`rated_games` with `white_k` and `black_k`, the K each side was rated with: the per-game table's own (an event
    started before its period is rated with its start's list's K), or, where it gives none, the player's `k_used` on
    the list (only players rated this period have one).
    """
    # A table gives every counted side's K, or none: stored before it had the columns (absent, or added empty by
    # with_later_columns to a kept month), where the list's K stands in.
    if "white_k_used" in rated_games.columns and rated_games["white_k_used"].null_count() < rated_games.height:
        return rated_games.with_columns(white_k="white_k_used", black_k="black_k_used")
    k = rating_list.filter(pl.col("k_used").is_not_null()).select("player_id", "k_used")
    return rated_games.join(k.rename({"player_id": "white_id", "k_used": "white_k"}), on="white_id", how="left").join(
        k.rename({"player_id": "black_id", "k_used": "black_k"}), on="black_id", how="left"
    )


def player_sides(rated_games: pl.DataFrame) -> pl.DataFrame:
    """One row per player per game counted for that player: score, expected, weight, event (and `k`, the K the side
    was rated with, where `rated_games` has with_sides_k's columns).
    """
    common = ["game_id", "event_id", "weight"]
    k = {side: ({"k": f"{side}_k"} if f"{side}_k" in rated_games.columns else {}) for side in ("white", "black")}
    white = rated_games.filter(pl.col("white_expected").is_not_null()).select(
        *common, player_id="white_id", score="white_score", expected="white_expected", **k["white"]
    )
    black = rated_games.filter(pl.col("black_expected").is_not_null()).select(
        *common, player_id="black_id", score=1.0 - pl.col("white_score"), expected="black_expected", **k["black"]
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

    equal_k = with_sides_k(symmetric, rating_list).filter(
        pl.col("white_k").is_not_null() & (pl.col("white_k") == pl.col("black_k"))
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
    sides = player_sides(with_sides_k(rated_games, rating_list))
    per_event = rounds_per_event(rules)
    per_player = sides.group_by("player_id").agg(
        counted=pl.len().cast(pl.Int32),
        delta=pl.col("delta").sum(),
        k_delta=(pl.col("k").cast(pl.Float64) * pl.col("delta")).sum(),
        # Counted only where the slack needs them: the distinct events were half the check's time (15 of 32 ms).
        **({"events": pl.col("event_id").n_unique()} if per_event else {}),
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
    slack = 0.5 * (pl.col("events") if per_event else pl.lit(1)) + FLOAT_TOLERANCE
    off = played.filter(
        pl.col("k_used").is_null() | pl.col("change").is_null() | ((pl.col("change") - pl.col("k_delta")).abs() > slack)
    )
    if off.height:
        sample = off.head(3).select("player_id", "k_used", "change", pl.col("delta").round(4)).rows()
        problems.append(
            f"{off.height} change(s) not sum(K x weight x (score - expected)), e.g. (id, K, change, sum) {sample}"
        )
    return problems


def counted_players(rated_games: pl.DataFrame) -> pl.Series:
    """The players a per-game table counts a weighted game for (a side with an expected score, weight above 0)."""
    weighted = pl.col("weight") > 0
    sides = [
        rated_games.filter(weighted & pl.col(f"{side}_expected").is_not_null())[f"{side}_id"].alias("player_id")
        for side in ("white", "black")
    ]
    return pl.concat(sides).unique()


def period_games_problem(counted: pl.Series, rating_list: pl.DataFrame, period: Sequence[str]) -> str | None:
    """Where the list of a period of several months (lists before July 2012, the first rapid and blitz list) shows no
    game for a player its months' per-game tables count a game for: those games moved nothing (None when none).

    Its change cannot be re-derived from the monthly tables (each month's rows are rated with that month's seeds),
    but a game counted in a month of the period is a game of the list.
    """
    played = rating_list.filter(pl.col("games") > 0).select("player_id")
    missing = counted.to_frame().unique().join(played, on="player_id", how="anti")
    if missing.is_empty():
        return None
    sample = missing["player_id"].sort().head(5).to_list()
    return (
        f"{missing.height} player(s) with games counted in rated_games of {period[0]}..{period[-1]} but none on the "
        f"list that rates that period, e.g. {sample}"
    )


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
    waiting: dict[str, pl.Series] = {}  # a month without a list -> the players its games count, for the next list
    unlisted: list[str] = []  # months whose per-game table is stored and list is not
    for month in months:
        current = in_id_order(_read_list(store, list_path, month))
        if previous is None:  # first month of the run (or after a missing one): read the list before it
            if month == first_partition:
                previous = in_id_order(list_before_first().select(LIST_COLUMNS))
            else:
                previous = in_id_order(_read_list(store, list_path, add_months(month, -1)))
        if current is None:
            for problems in (floor_problems, continuity):
                problems.append(f"{month}: not stored")
            # A run of the per-game table alone (a subset of the chain) writes no list: the list's own checks name a
            # list missing from a run that writes it, so its per-game table is not failed for it.
            if store.exists(table_key(games_path, month)):
                unlisted.append(month)
            else:
                conservation.append(f"{month}: not stored")
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
            seeded = rules is not None and seeds_from_standard(rules)
            continuity.extend(f"{month}: {problem}" for problem in continuity_problems(previous, current, seeded))

        games = _in_one_chunk(read_stored_month(store, games_path, month, RATED_GAMES_COLUMNS, optional=SIDE_K_COLUMNS))
        if games is None:
            conservation.append(f"{month}: not stored")
        elif rules is None:
            outcome = system_conservation_problems(games, current, scenario.system_rules().system.invariants)
            conservation.extend(f"{month}: {problem}" for problem in outcome.problems)
            _add_stats(totals, outcome.stats)
        else:
            # The per-game table holds the month's own games only; a list that also rates earlier
            # months (or gets a one-time uplift) cannot be re-derived from it alone.
            period = scenario.period_months(month, first_partition) if rules.publishes_list_after(month) else []
            check_changes = period == [month] and not scenario.events_after(month)
            outcome = conservation_problems(games, current, rules, check_changes)
            rederived += int(check_changes)
            conservation.extend(f"{month}: {problem}" for problem in outcome.problems)
            _add_stats(totals, outcome.stats)
            if not period:
                waiting[month] = counted_players(games)
            elif len(period) > 1:
                earlier = {m: waiting.pop(m, None) for m in period[:-1]}
                for m, players in earlier.items():
                    if players is None:  # a month of the period before the run
                        stored = read_stored_month(store, games_path, m, RATED_GAMES_COLUMNS)
                        earlier[m] = None if stored is None else counted_players(stored)
                held = [players for players in earlier.values() if players is not None]
                problem = period_games_problem(pl.concat([*held, counted_players(games)]), current, period)
                conservation.extend([f"{month}: {problem}"] if problem else [])
        previous = current
    return ChainProblems(
        floor=MonthProblems(floor_problems, {"players_checked": floor_checked}),
        continuity=MonthProblems(continuity, {"players_carried": carried}),
        conservation=MonthProblems(
            conservation,
            {
                **{k: round(v, 3) for k, v in totals.items()},
                "months_changes_rederived": rederived,
                **({"months_without_list": ", ".join(unlisted)} if unlisted else {}),
            },
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
