"""A scenario's chain of lists month after month: where it starts, what a month carries on, what it stores."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandera.polars as pa
import polars as pl

from pipeline.engine.period import PeriodResult, normalize_list
from pipeline.formats.table_files import too_wide_header
from pipeline.formats.tabular import parquet_too_many_columns
from pipeline.ingest.registry import (
    SINCE,
    later_seed_files,
    read_seed_file,
    read_seed_list,
    registry_history,
    registry_in_force,
    seed_list_month,
)
from pipeline.months import add_months, month_range, parse_month
from pipeline.rules.model import KPolicy, RulesError, RuleSet
from pipeline.rules.regulations import below_floor, game_weight, k_for_corrected_birth_years, lowest_published_rating
from pipeline.scenarios.corrections import stored_points, with_corrections
from pipeline.scenarios.ledger import points_ledger
from pipeline.scenarios.model import Scenario, rate_scenario_month
from pipeline.scenarios.ratings_used import ListsInForce
from pipeline.scenarios.recalculation import LateReports
from pipeline.scenarios.restriction import Restriction, members_only, restricted_in_month
from pipeline.scenarios.system_step import rate_system_month, seed_state
from pipeline.scenarios.whole_history_step import (
    WHR_STATE,
    fit_warning,
    is_checkpoint,
    is_whole_history,
    new_history,
    rate_whr_month,
)
from pipeline.scenarios.whole_history_stored import added_games, restored, state_frames, state_months
from pipeline.store.kept import keep_list_before_events
from pipeline.store.monthly import read_stored_month, stored_table_months, table_key
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import CommandLines
from schemas import (
    Games,
    Players,
    PointsFlow,
    PointsLedger,
    RatedGames,
    RatingList,
    SystemRatingList,
    SystemState,
    WhrState,
)
from schemas.conformance import conforms
from schemas.util import conform, empty_frame, polars_schema


class ChainTable(NamedTuple):
    """One table a scenario's chain stores every month."""

    name: str
    model: type[pa.DataFrameModel]
    unique: str | None  # the column no value may repeat in within a month
    carried: bool = False  # month M starts from this table's month M-1
    # The chain tables whose month M-1 this table's month M is computed from (with M's games): its lineage. A
    # system's state never reads the list, so the month-before dependencies draw no cycle between two tables.
    reads: tuple[str, ...] = ()


def dependency_order(tables: list[ChainTable]) -> list[str]:
    """The chain's table names, each after the other tables it is computed from (ChainTable.reads)."""
    order: list[str] = []
    while len(order) < len(tables):
        ready = [t.name for t in tables if t.name not in order and set(t.reads) - {t.name} <= set(order)]
        if not ready:
            raise ValueError(f"the chain's tables read each other: {[(t.name, t.reads) for t in tables]}")
        order += ready
    return order


def chain_tables(scenario: Scenario) -> list[ChainTable]:
    """The tables the chain writes, in the order a month's outputs are stored (the carried state before the games)."""
    if is_whole_history(scenario):
        # Every table of the month is read back from the whole history once the month's games are in it; the history
        # continues from its warm start (WHR_STATE: the player-months each month changed, laid over the last month
        # that stored every one); the games are predicted from the state before the month.
        return [
            ChainTable(
                "rating_list",
                SystemRatingList,
                "player_id",
                carried=True,
                reads=("rating_list", "system_state", WHR_STATE),
            ),
            ChainTable("system_state", SystemState, "player_id", carried=True, reads=("system_state", WHR_STATE)),
            ChainTable(WHR_STATE, WhrState, None, carried=True, reads=(WHR_STATE,)),
            ChainTable("rated_games", RatedGames, "game_id", reads=("system_state",)),
        ]
    if scenario.is_system:
        # The new state comes from the state alone; the list is the previous list updated with the new ratings;
        # the games are predicted from the state before the month (pipeline.scenarios.system_step).
        return [
            ChainTable(
                "rating_list", SystemRatingList, "player_id", carried=True, reads=("rating_list", "system_state")
            ),
            ChainTable(
                "system_state", scenario.system_rules().system.state_model, None, carried=True, reads=("system_state",)
            ),
            ChainTable("rated_games", RatedGames, "game_id", reads=("system_state",)),
        ]
    return [
        ChainTable("rating_list", RatingList, "player_id", carried=True, reads=("rating_list",)),
        ChainTable("rated_games", RatedGames, "game_id", reads=("rating_list",)),
        # The pool's points ledger of the list and the points its groups won from each other (scenarios.ledger).
        ChainTable(LEDGER, PointsLedger, None, reads=("rating_list",)),
        ChainTable(FLOWS, PointsFlow, None, reads=("rating_list",)),
    ]


LEDGER, FLOWS = "points_ledger", "points_flow"


def lineage_reads(table: ChainTable) -> tuple[str, ...]:
    """The chain tables whose month M-1 the graph says `table`'s month M is computed from: its reads, without itself
    when it reads another table of the chain (that table carries the chain month to month).

    Dagster's asset backfill runs a self-dependent asset in no run with another asset it depends on (1.13,
    asset_backfill.py: "Self-dependant assets cannot be materialized in the same run as other assets"): a system's
    list drawn as reading its own M-1 and its state's went to a run after the state's, whose checks then found no
    list. One self-dependent table per chain keeps the chain one run.
    """
    others = tuple(read for read in table.reads if read != table.name)
    return others or table.reads


class MissingMonth(LookupError):
    """The stored table of the month before the first month of a run is missing, unreadable or not this chain's: the
    chain cannot continue from it.
    """

    def __init__(
        self,
        table: str,
        month: str,
        before: str,
        location: str,
        problem: str = "is missing",
        store_url: str = "",
        rebuild_from: str | None = None,
    ):
        self.table, self.month, self.missing_month = table, month, before
        self.location, self.problem = location, problem
        # A run from `before` alone would stop at the month before it in turn: the command starts at the chain's first
        # month without a stored table.
        self.rebuild_from = rebuild_from or before
        super().__init__(self.explained(CommandLines(store_url or None)))

    def explained(self, commands: CommandLines) -> str:
        """What is missing and the `ratings run` that rebuilds it, written by `commands` (a run's: its scenarios file
        and instance too).
        """
        month, before, start = self.month, self.missing_month, self.rebuild_from
        since = f" ({start}: the chain's first month without one)" if start != before else ""
        return (
            f"{self.table} for {before} {self.problem} ({self.location}), so {month} cannot be rated (the list for "
            f"{month} is the list for {before} plus {month}'s games). Rebuild it with "
            f"`{commands.ratings('run', '--from', start)}`{since} (or a range starting earlier), then rate {month}."
        )


def read_scenario_seed(store: ObjectStore, scenario: Scenario, chain_start: str | None = None) -> pl.DataFrame | None:
    """The scenario's own seed list (a CSV or Parquet key in the store), else the landing zone's: the list in force
    before `chain_start` (registry.read_seed_list).
    """
    if scenario.seed_list is None:
        return read_seed_list(store, chain_start, scenario.list_type())
    with store.open(scenario.seed_list) as handle:
        data = handle.read()
    parquet = scenario.seed_list.endswith(".parquet")
    # Polars allocates per column before it reads a row: a header of a million columns would stop the process.
    too_wide = parquet_too_many_columns(data) if parquet else too_wide_header(io.BytesIO(data))
    if too_wide is not None:
        raise ValueError(f"seed list {scenario.seed_list} is not read: {too_wide}")
    if parquet:
        return pl.read_parquet(data)
    return pl.read_csv(data, schema_overrides={"player_id": pl.Int64, "rating": pl.Int32})


def seed_clock_month(store: ObjectStore, scenario: Scenario, chain_start: str) -> str:
    """The month a seeded player's inactivity clock runs from, as if they had last played in it.

    A seed list in raw/players/<M>/ is the list in force from M, so its players played at the latest
    in M-1; the scenario's own seed list, and the landing zone's filed after the chain's start, are the
    list in force before the chain's first month.
    """
    filed = seed_list_month(store, chain_start, scenario.list_type()) if scenario.seed_list is None else None
    return add_months(min(filed, chain_start) if filed is not None else chain_start, -1)


def seeded_list(seed: pl.DataFrame | None, clock_month: str) -> pl.DataFrame:
    """The seed as a full list, each rated player's inactivity clock started at `clock_month`.

    FIDE flags a player inactive after a year without a rated game (rules.inactive_after_months). A
    seed list carries no game dates, so a seeded player who never plays would stay as active as the
    seed says for ever; counting from the seed list's date makes them inactive a year after it, as
    FIDE's lists do. A player the seed already flags inactive keeps the flag (no last_played: the flag
    holds until they play). A seed's own last_played, where it has one, is kept.
    """
    if seed is None:
        return empty_frame(RatingList)
    listed = normalize_list(seed)
    starts_clock = pl.col("last_played").is_null() & pl.col("rating").is_not_null() & pl.col("inactive").not_()
    return listed.with_columns(
        pl.when(starts_clock).then(pl.lit(clock_month)).otherwise(pl.col("last_played")).alias("last_played")
    )


# FIDE Rating Regulations B.02 (2024) §8.2.4: an unrated player who receives a published rating before a tournament of
# theirs is rated is rated as a rated player with that rating. A later list in raw/players/<M>/ is such a published
# rating for every player the chain holds unrated (pooling toward a first rating, or delisted): README, step 2.
def with_later_list_newcomers(
    carried: dict[str, pl.DataFrame], scenario: Scenario, later: pl.DataFrame, month: str
) -> tuple[dict[str, pl.DataFrame], int]:
    """The list (and a system's state) in force before `month` with the rated players of a list filed in `month` that
    the chain does not rate, each at that list's rating, as the seed list's players joined at the start; and how many
    joined.

    A federation files FIDE's newer list (or its own seed list) in raw/players/<M>/: its players the chain does not
    rate were rated by events the federation's dumps do not hold, so they join the chain where the list says they
    stand (their inactivity clock from M-1), under every scenario alike. That includes a player the chain holds
    unrated: pooling games toward a first rating, or delisted below the floor. The list's rating replaces the pool,
    which is dropped: the list rated those games too where they were rated at all (FIDE pools an unrated player's
    results over every rated event, §7.1.4), so pooling them on would count them twice. Players the chain rates
    (inactive ones too) keep the chain's own rating. What the chain knew of a joined player that the list does not
    say stays: the birth year where the list has none, and ever_2400 once reached (K 10 for good).
    """
    previous = carried["list"]
    rated = later.filter(pl.col("rating").is_not_null())
    newcomers = rated.join(
        previous.filter(pl.col("rating").is_not_null()).select("player_id"), on="player_id", how="anti"
    )
    if newcomers.is_empty():
        return carried, 0
    joined = seeded_list(newcomers, add_months(month, -1))
    known = previous.select("player_id", held_birth_year="birth_year", held_ever_2400="ever_2400")
    joined = (
        joined.join(known, on="player_id", how="left")
        .with_columns(
            pl.coalesce("birth_year", "held_birth_year").cast(previous.schema["birth_year"]).alias("birth_year"),
            (pl.col("ever_2400") | pl.col("held_ever_2400").fill_null(False)).alias("ever_2400"),
        )
        .drop("held_birth_year", "held_ever_2400")
    )
    kept = previous.join(joined.select("player_id"), on="player_id", how="anti")
    listed = pl.concat([kept, joined], how="diagonal_relaxed").select(previous.columns).sort("player_id")
    updated = {"list": listed}
    if "state" in carried:
        state = carried["state"].join(joined.select("player_id"), on="player_id", how="anti")
        joined_state = seed_state(scenario, joined, month).select(state.columns)
        updated["state"] = pl.concat([state, joined_state], how="vertical_relaxed").sort("player_id")
    return updated, joined.height


#: Columns a chain table gained after tables were stored without them, with the dtype of their empty value: a table
#: stored before is read with them empty (a list stored then carries no correction), and written with them when it is
#: written again.
LATER_COLUMNS = {
    "correction": pl.Int32,
    "white_k_used": pl.Int16,
    "black_k_used": pl.Int16,
    "rest_ratings": pl.Utf8,
    "p_fictional": pl.Float64,
    "inherited_results": pl.Int64,
}


def with_later_columns(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """`frame` (a stored month of a chain table) with the model's LATER_COLUMNS it lacks, empty, in the model's order
    when it has every column of the model.
    """
    columns = list(polars_schema(model))
    missing = [c for c in LATER_COLUMNS if c in columns and c not in frame.columns]
    if not missing:
        return frame
    frame = frame.with_columns(pl.lit(None, dtype=LATER_COLUMNS[c]).alias(c) for c in missing)
    if set(columns) <= set(frame.columns):
        frame = frame.select(columns, *(c for c in frame.columns if c not in columns))
    return frame


def _stored_month_before(
    store: ObjectStore,
    path: Sequence[str],
    month: str,
    model: type[pa.DataFrameModel],
    chain_start: str | None = None,
) -> pl.DataFrame:
    """The stored table of M-1, refused (MissingMonth) when it is missing, unreadable, or not a table of this chain;
    a missing one is rebuilt from the first month since `chain_start` without a stored table (one listing).
    """
    before = add_months(month, -1)
    key = table_key(path, before)
    where, root = redact_url(store.url(key)), redact_url(store.url())

    def refused(problem: str, rebuild_from: str | None = None) -> MissingMonth:
        return MissingMonth("/".join(path), month, before, where, problem, root, rebuild_from)

    if not store.exists(key):
        stored = set(stored_table_months(store, path)) if chain_start is not None else set()
        earlier = month_range(chain_start, before) if chain_start is not None and chain_start <= before else []
        raise refused("is missing", next((m for m in earlier if m not in stored), None))
    try:
        frame = store.read_parquet(key)
    except Exception as error:  # a truncated or overwritten file: pyarrow's and Polars' errors differ by version
        raise refused(f"cannot be read ({type(error).__name__})") from None
    frame = with_later_columns(frame, model)
    problem = foreign_table_problem(frame, model, before)
    if problem:
        raise refused(problem)
    return frame


def foreign_table_problem(frame: pl.DataFrame, model: type[pa.DataFrameModel], month: str) -> str | None:
    """Why a stored month of a chain table cannot be the one the chain wrote for `month`, else None.

    It must have the model's columns and pass its checks (a list of another kind of scenario, or
    another table, does not), and a list may name no month after its own (a later month's list copied
    over it does).
    """
    missing = [column for column in polars_schema(model) if column not in frame.columns]
    if missing:
        return f"is not a {model.__name__} table (no column {', '.join(missing[:3])})"
    if not conforms(model, frame):
        return f"does not pass the {model.__name__} model's checks"
    for column in ("last_played", "pending_since"):
        if column in frame.columns:
            latest = frame[column].max()
            if isinstance(latest, str) and latest > month:
                return f"names month {latest} in {column}, after its own month: it is another month's table"
    return None


def previous_list(store: ObjectStore, scenario: Scenario, month: str, chain_start: str) -> pl.DataFrame:
    """The list in force before `month`: the seed list at the chain's start, else the stored list of M-1."""
    if month == chain_start:
        seeded = seeded_list(
            read_scenario_seed(store, scenario, chain_start), seed_clock_month(store, scenario, chain_start)
        )
        if scenario.restrict is None:
            return seeded
        return members_only(seeded, scenario.restrict, registry_history(store, chain_start), chain_start)
    model = SystemRatingList if scenario.is_system else RatingList
    return _stored_month_before(store, [scenario.name, "rating_list"], month, model, chain_start)


#: Of the seed list's players below a floor, how many seeds_below_floor names by id; the others are counted.
BELOW_FLOOR_NAMED = 5


def seeds_below_floor(store: ObjectStore, scenarios: Iterable[Scenario], chain_start: str) -> list[str]:
    """Plan lines (WARNING), one a seed list the run's rule-set scenarios start from at `chain_start`, naming its rated
    players below the LOWEST floor of those scenarios' rules in that month (regulations.below_floor): a rating no
    list of any of them publishes (a typo: 5 for 1500). The chain takes the seed as it stands, so their opponents are
    rated against it, and the list delists them once they play; the seed list itself says nothing of it. The lowest
    floor, not each scenario's: a what-if scenario applying a later era's floor to a list issued under an earlier one
    (sonas_2017: 1400 from 2017 on FIDE's lists floored at 1000) holds ratings below it by design, not by mistake.
    """
    by_start: dict[tuple[str | None, str, str], list[Scenario]] = {}
    for scenario in scenarios:
        if not scenario.is_system and lowest_published_rating(scenario.rules_for(chain_start)) is not None:
            start = (scenario.seed_list, scenario.list_type(), repr(scenario.restrict))
            by_start.setdefault(start, []).append(scenario)
    lines = []
    for starting in by_start.values():
        # Scenarios starting from the same list read it once (a FIDE list of a million players: a second or two).
        try:
            seeded = previous_list(store, starting[0], chain_start, chain_start)
        except (ValueError, OSError):
            continue  # a seed list that cannot be read: the run says so where it reads it
        rules = min((s.rules_for(chain_start) for s in starting), key=lambda r: lowest_published_rating(r) or 0)
        below = seeded.filter(below_floor(pl.col("rating"), rules).fill_null(False))
        if below.is_empty():
            continue
        named = ", ".join(
            f"{player} ({rating})"
            for player, rating in below.head(BELOW_FLOOR_NAMED).select("player_id", "rating").rows()
        )
        more = f" and {below.height - BELOW_FLOOR_NAMED:,} more" if below.height > BELOW_FLOOR_NAMED else ""
        names = ", ".join(s.name for s in starting)
        floor = f"the lowest floor of their rules in {chain_start} ({lowest_published_rating(rules)}, {rules.name})"
        lines.append(
            f"WARNING: {names}: {below.height:,} player(s) of the seed list rated below {floor}: "
            f"{named}{more}; their rating counts for their opponents and the list delists them once they play"
        )
    return lines


def previous_state(store: ObjectStore, scenario: Scenario, month: str, chain_start: str) -> pl.DataFrame:
    """A system's state before `month`: from the seed list at the chain's start, else the stored state of M-1."""
    if month == chain_start:
        return seed_state(scenario, previous_list(store, scenario, month, chain_start), month)
    model = scenario.system_rules().system.state_model
    return _stored_month_before(store, [scenario.name, "system_state"], month, model, chain_start)


def chain_continues(store: ObjectStore, scenario: Scenario, first_month: str, chain_start: str) -> None:
    """Check, before anything is written, that a run from `first_month` can continue the scenario's stored chain:
    MissingMonth naming the table of the month before when it is missing, unreadable or foreign.
    """
    if first_month <= chain_start:
        return
    previous_list(store, scenario, first_month, chain_start)
    if scenario.is_system:
        previous_state(store, scenario, first_month, chain_start)
    if is_whole_history(scenario):
        # The months whose changes make the warm start: there, and WhrState tables by their footers (read by the run).
        for month in state_months(scenario, add_months(first_month, -1), chain_start):
            key = table_key([scenario.name, WHR_STATE], month)
            where, root = redact_url(store.url(key)), redact_url(store.url())
            if not store.exists(key):
                raise MissingMonth(f"{scenario.name}/{WHR_STATE}", first_month, month, where, store_url=root)
            # A month stored before WhrState held the player-months' games (every player-month, every month) is not
            # one: the chain is rated again from its start.
            held = store.parquet_schema(key)
            missing = [c for c in ("player_id", "month", "r", "variance", "games") if c not in held]
            if missing:
                problem = f"is not a WhrState table (no column {', '.join(missing)})"
                raise MissingMonth(f"{scenario.name}/{WHR_STATE}", first_month, month, where, problem, root)


def month_figures(frames: Mapping[str, pl.DataFrame], rules_name: str) -> dict[str, dict[str, Any]]:
    """What the UI shows of a month of each chain table (by name). Of the list, what a rating officer checks first:
    size, rated players, newcomers, games, range and the rules it was rated under.
    """
    rating_list, rated_games = frames["rating_list"], frames["rated_games"]
    # From the rating column alone: filtering the whole list (its pools included) cost 12 ms a fide-scale month.
    ratings = rating_list["rating"]
    rated_players = ratings.len() - ratings.null_count()
    low, high = ratings.min(), ratings.max()
    figures: dict[str, dict[str, Any]] = {
        "rating_list": {
            "players": rating_list.height,
            "rated_players": rated_players,
            "newly_rated": int(rating_list["newly_rated"].sum()),
            "games": rated_games.height,
            "rating_range": f"{low!s}-{high!s}" if rated_players else "no rated players",
            "rules": rules_name,
        },
        "rated_games": {"games": rated_games.height},
    }
    if "system_state" in frames:
        figures["system_state"] = {"players": frames["system_state"].height}
    if WHR_STATE in frames:
        # The player-months the month changed: every one in a checkpoint month (WhrState).
        figures[WHR_STATE] = {"player_months_stored": frames[WHR_STATE].height}
    if LEDGER in frames:
        ledger = frames[LEDGER].row(0, named=True)
        names = ("pool_change", "games_change", "newcomers", "became_inactive", "one_time_events", "unexplained")
        figures[LEDGER] = {"pool_points": ledger["pool_after"], **{name: ledger[name] for name in names}}
        figures[FLOWS] = {"groups": frames[FLOWS].height}
    return figures


def standard_in_force(
    store: ObjectStore, standard_chain: Scenario, month: str, chain_start: str, players: pl.Series | None = None
) -> pl.DataFrame:
    """The standard list in force in `month` (the standard chain's list of the month before, its seed list at the
    chain's start): player_id, rating and birth_year, of `players` only where given. MissingMonth when it is not
    stored: the rapid or blitz month cannot be rated without it.
    """
    columns = ["player_id", "rating", "birth_year"]
    if month == chain_start:
        frame = previous_list(store, standard_chain, month, chain_start).select(columns)
    else:
        key = table_key([standard_chain.name, "rating_list"], add_months(month, -1))
        if not store.exists(key):
            _stored_month_before(store, [standard_chain.name, "rating_list"], month, RatingList, chain_start)  # raises
        frame = store.read_parquet(key, columns=columns)
    if players is not None:
        frame = frame.filter(pl.col("player_id").is_in(players.cast(pl.Int64).implode()))
    return frame


def standard_state(
    store: ObjectStore, standard_chain: Scenario, month: str, chain_start: str, players: pl.Series | None = None
) -> pl.DataFrame:
    """The state in force in `month` of the system chain that seeds another of its system (uscf's regular list
    seeding quick and blitz): its state of the month before (its seed state at the chain's start): player_id,
    rating and games (what the rating rests on), of `players` only where given. MissingMonth when it is not stored.
    """
    frame = previous_state(store, standard_chain, month, chain_start).select("player_id", "rating", "games")
    if players is not None:
        frame = frame.filter(pl.col("player_id").is_in(players.cast(pl.Int64).implode()))
    return frame


def rate_months(
    store: ObjectStore,
    scenario: Scenario,
    months: Sequence[str],
    chain_start: str,
    standard_chain: Scenario | None = None,
    late: LateReports | None = None,
    notes: ChainNotes | None = None,
) -> Callable[[str, Callable[[str], pl.DataFrame]], tuple[pl.DataFrame, ...]]:
    """A function rating the run's months in order, each from the one before, returning chain_tables' frames.

    `chain_start` is the store's first month (the first partition), where the chain starts from the
    seed list; any later month continues the stored list of the month before, which is read (or
    refused with MissingMonth) before anything is rated, so a gap fails before any month is written.
    The registry's history is read once: a month sees the registry in force then (birth years of newcomers), made
    for the month's players only, and the birth years it states then of every listed player. `standard_chain`
    (Scenario.standard_chain) is the scenario whose standard list in force seeds a rapid or blitz month's unrated
    players; it must be stored for the month before each month.
    `late` is the scenario's recalculation policy for the run (pipeline.scenarios.recalculation; None: `full`): the
    games a frozen month rates, the late games a later list rates, the frozen months that keep their tables, and
    the corrections of their games, computed here (a frozen list rated again in memory with the games the files give
    now) and added to the next list not stored yet.
    `notes` receives what a month found besides its tables (the stated ratings that differ from the list).
    """
    if is_whole_history(scenario):
        if late is not None:
            raise RulesError(f"scenario {scenario.name!r}: a whole-history chain is rated with recalculation full")
        return _whole_history_months(store, scenario, months, chain_start, notes)
    notes = notes if notes is not None else ChainNotes()
    carried = {"list": previous_list(store, scenario, months[0], chain_start)}

    # The lists of the months before, for the events started before their period (ListsInForce).
    def stored_list(month: str) -> pl.DataFrame:
        if month < chain_start:
            return previous_list(store, scenario, chain_start, chain_start)
        return _stored_month_before(store, [scenario.name, "rating_list"], add_months(month, 1), RatingList)

    in_force = ListsInForce(scenario, {add_months(months[0], -1): carried["list"]}, stored_list)
    # What seeds the chain must be stored for the month before the run's first (MissingMonth before anything is rated).
    if standard_chain is not None and standard_chain.is_system:
        standard_state(store, standard_chain, months[0], chain_start, pl.Series([], dtype=pl.Int64))
    elif standard_chain is not None:
        standard_in_force(store, standard_chain, months[0], chain_start, pl.Series([], dtype=pl.Int64))
    if scenario.is_system:
        carried["state"] = previous_state(store, scenario, months[0], chain_start)
    history = registry_history(store, months[-1])
    births = registered_births(history)
    list_type = scenario.list_type()
    later_lists = later_seed_files(store, chain_start, list_type) if scenario.seed_list is None else {}

    def with_newcomers(listed: dict[str, pl.DataFrame], month: str) -> tuple[dict[str, pl.DataFrame], int]:
        if month not in later_lists:
            return listed, 0
        later = members_only(read_seed_file(store, later_lists[month], list_type), scenario.restrict, history, month)
        return with_later_list_newcomers(listed, scenario, later, month)

    def rate_list(month: str, previous: pl.DataFrame, read: dict[str, pl.DataFrame]) -> PeriodResult:
        """The list of `month` from `previous` and the games of its period (`read`), as the chain rates it."""
        first = min(read)
        checked = {m: in_force.ratings_used(frame, first) for m, frame in read.items()}
        rated = {m: frame for m, (frame, _) in checked.items()}
        notes.stated[month] = rated_here(checked[month][1], rated[month], scenario.rules_for(month))
        players = _registered_players(history, rated.values(), month)
        standard = None
        if standard_chain is not None:
            standard = standard_in_force(store, standard_chain, month, chain_start, players_of(rated.values()))
        games_of = _held_first(rated, lambda _: empty_frame(Games))
        listed = with_registered_births(previous, births, month, scenario.rules_for(month).k)
        return rate_scenario_month(
            scenario, listed, games_of, month, players=players, standard=standard, start=chain_start
        )

    def correct(month: str, previous: pl.DataFrame, stored: pl.DataFrame, read: dict[str, pl.DataFrame]) -> None:
        """The correction of the stored list of `month` (LateReports.correct): the list rated again in memory from
        `previous` with the games of its period as the files give them now (`read`).
        """
        assert late is not None
        # The corrections the stored list carries (of earlier lists' games) stand: applied to the list rated again,
        # so that its correction is its own games' alone, not theirs undone.
        rated_again = rate_list(month, previous, read).rating_list
        rules = scenario.rules_for(month)
        corrected, _ = with_corrections(rated_again, previous, stored_points(stored), rules, month)
        notes.stated.pop(month, None)  # the stored list's stated ratings stand
        late.correct(month, stored, corrected)

    if late is not None and not scenario.is_system:
        # The stored lists before the run whose games the files give otherwise now, in order: their corrections go to
        # the run's first list not stored before it.
        for month, games in sorted(late.looked_back.items()):
            try:
                previous = with_newcomers({"list": previous_list(store, scenario, month, chain_start)}, month)[0][
                    "list"
                ]
            except MissingMonth as missing:
                late.cannot_correct(month, f"the list of {missing.missing_month} is {missing.problem}")
                continue
            stored = read_stored_month(store, [scenario.name, "rating_list"], month)
            assert stored is not None  # a list month of the look-back is stored
            period = {m: games.clear() for m in scenario.months_read(month, chain_start)}
            correct(month, previous, with_later_columns(stored, RatingList), {**period, month: games})

    def rate(month: str, games_of: Callable[[str], pl.DataFrame]) -> tuple[pl.DataFrame, ...]:
        if scenario.restrict is not None:
            # A national scenario's games are the only games there are for it, late reports and frozen months included.
            games_of = _restricted(games_of, scenario.restrict, history)
        # The list the month starts from, as stored: players a later FIDE list adds join the pool as seeded.
        before = carried["list"]
        joined_carried, joined = with_newcomers(carried, month)
        carried.update(joined_carried)
        if joined:
            notes.joined[month] = joined
        if late is not None:
            games_of = late.games_of(month, games_of)
        read = {m: games_of(m) for m in scenario.months_read(month, chain_start)}
        if late is not None and late.keeps(month, read):
            kept = stored_tables(store, scenario, month)
            publishes = not scenario.is_system and scenario.rules_for(month).publishes_list_after(month)
            if publishes and any(late.changed(m) for m in read):
                correct(month, carried["list"], kept[0], {m: late.corrected_games(m, f) for m, f in read.items()})
            carried.update(list=kept[0], **({"state": kept[1]} if scenario.is_system else {}))
            in_force.keep(month, kept[0])
            if scenario.is_system:
                return kept
            return (*kept[:2], *kept_ledger(store, scenario, month, before, kept[0], kept[1]))
        if scenario.is_system:
            players = _registered_players(history, read.values(), month)
            seeds = None
            if standard_chain is not None:
                seeds = standard_state(store, standard_chain, month, chain_start, players_of(read.values()))
            system = rate_system_month(scenario, carried["list"], carried["state"], read[month], month, players, seeds)
            carried.update(list=system.rating_list, state=system.state)
            if late is not None:
                late.listed(month, system.rating_list)
            return system.rating_list, system.state, system.rated_games
        if late is not None and not late.is_frozen(month):
            # A list not stored before rates the games of its period as the files give them now (a frozen month of
            # its period that a corrected file changed keeps its stored tables, which carry no list change).
            read = {m: late.corrected_games(m, frame) for m, frame in read.items()}
        result = rate_list(month, carried["list"], read)
        rating_list = result.rating_list
        if late is not None:
            rating_list = late.with_corrections(month, rating_list, carried["list"], scenario.rules_for(month))
            publishes = scenario.rules_for(month).publishes_list_after(month)
            if publishes and late.rated_again(month) and any(late.changed(m) for m in read):
                # Rated again from the games it rated as they were: the others' change is its correction, as kept.
                stated = notes.stated.get(month)
                correct(month, carried["list"], rating_list, {m: late.corrected_games(m, f) for m, f in read.items()})
                if stated is not None:
                    notes.stated[month] = stated
            late.listed(month, rating_list)
        carried["list"] = rating_list
        in_force.keep(month, rating_list)
        assert result.after_games is not None and result.period_games is not None  # rate_scenario_month's
        event = bool(scenario.events_after(month))
        if event:
            # The list the events change exists here alone; the compression page draws it (event months only).
            keep_list_before_events(store, scenario.name, month, result.after_games, rating_list)
        ledger = points_ledger(
            before, result.after_games, rating_list, result.period_games, month, scenario.k_policy(month), event
        )
        return rating_list, result.rated_games, *ledger

    return rate


def _whole_history_months(
    store: ObjectStore, scenario: Scenario, months: Sequence[str], chain_start: str, notes: ChainNotes | None = None
) -> Callable[[str, Callable[[str], pl.DataFrame]], tuple[pl.DataFrame, ...]]:
    """rate_months for a whole-history scenario: the history of the month before the run rebuilt from its warm start
    (the stored WhrState up to M-1 and the games the chain's earlier months added), then every month added to it.
    """
    seed = read_scenario_seed(store, scenario, chain_start)
    carried = {
        "list": previous_list(store, scenario, months[0], chain_start),
        "state": previous_state(store, scenario, months[0], chain_start),
    }
    if months[0] == chain_start:
        history = new_history(scenario, seed)
    else:
        before = add_months(months[0], -1)
        states = state_frames(store, scenario, before, chain_start)
        past = ((m, added_games(store, scenario, m)) for m in month_range(chain_start, before))
        try:
            history = restored(scenario, seed, states, past)
        except (ValueError, FileNotFoundError) as problem:
            where = redact_url(store.url(table_key([scenario.name, WHR_STATE], before)))
            raise MissingMonth(f"{scenario.name}/{WHR_STATE}", months[0], before, where, str(problem)) from None
    registry = registry_history(store, months[-1])

    def rate(month: str, games_of: Callable[[str], pl.DataFrame]) -> tuple[pl.DataFrame, ...]:
        games = games_of(month)
        players = _registered_players(registry, [games], month)
        checkpoint = is_checkpoint(scenario, month, chain_start)
        result = rate_whr_month(scenario, history, carried["list"], carried["state"], games, month, players, checkpoint)
        carried.update(list=result.rating_list, state=result.state)
        warning = fit_warning(scenario, history, month)
        if notes is not None and warning is not None:
            notes.unconverged[month] = warning
        return tuple(result)

    return rate


#: The metadata key of a list's count of players a later list brought in at its rating (the run summary adds them up).
JOINED_FROM_LATER_LIST = "joined_from_later_list"


class ChainNotes:
    """What the chain's months found besides their tables: month -> the stated ratings that differ from the list in
    force (pipeline.scenarios.ratings_used.DIFFERENCE_SCHEMA), of the games of that month; month -> why a
    whole-history month's fit to tolerance is not converged (whole_history_step.fit_warning); month -> how many
    players the list filed in that month's registry folder brought in at its rating (with_later_list_newcomers).
    """

    def __init__(self) -> None:
        self.stated: dict[str, pl.DataFrame] = {}
        self.unconverged: dict[str, str] = {}
        self.joined: dict[str, int] = {}


def stored_tables(store: ObjectStore, scenario: Scenario, month: str) -> tuple[pl.DataFrame, ...]:
    """The chain's stored list and per-game table of `month` (a system's state between them), in chain_tables'
    order (with LATER_COLUMNS where stored without).
    """
    return tuple(
        with_later_columns(store.read_parquet(table_key([scenario.name, t.name], month)), t.model)
        for t in chain_tables(scenario)
        if t.name not in (LEDGER, FLOWS)
    )


def kept_ledger(
    store: ObjectStore,
    scenario: Scenario,
    month: str,
    before: pl.DataFrame,
    kept_list: pl.DataFrame,
    kept_games: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ledger tables of a month that keeps its stored tables: the stored ones, else (a store written before the
    ledger) made from the stored list, which no longer tells its games' change from its one-time event's.
    """
    keys = [table_key([scenario.name, name], month) for name in (LEDGER, FLOWS)]
    if all(store.exists(key) for key in keys):
        ledger, flows = (store.read_parquet(key) for key in keys)
        return ledger, flows
    period = kept_games if scenario.rules_for(month).publishes_list_after(month) else kept_games.clear()
    events = bool(scenario.events_after(month))
    return points_ledger(before, kept_list, kept_list, period, month, scenario.k_policy(month), events)


def rated_here(differences: pl.DataFrame, games: pl.DataFrame, rules: RuleSet) -> pl.DataFrame:
    """The stated ratings that differ from the list (DIFFERENCE_SCHEMA) of the games the list rates (game_weight above
    0: its time controls, its events): a classical TRF's stated rating is no difference of the rapid list.
    """
    if differences.is_empty():
        return differences
    weighed = games.filter(game_weight(rules) > 0).select(pl.col("game_id").cast(differences.schema["game_id"]))
    return differences.join(weighed, on="game_id", how="semi")


def _restricted(
    games_of: Callable[[str], pl.DataFrame], restriction: Restriction, history: pl.DataFrame
) -> Callable[[str], pl.DataFrame]:
    """games_of with only the games `restriction` keeps (each month's players' federations as registered then)."""
    return lambda month: restricted_in_month(games_of(month), restriction, history, month)


def _held_first(
    held: dict[str, pl.DataFrame], games_of: Callable[[str], pl.DataFrame]
) -> Callable[[str], pl.DataFrame]:
    """games_of, answering the months of `held` from it (read once)."""
    return lambda month: held[month] if month in held else games_of(month)


def players_of(games: Iterable[pl.DataFrame]) -> pl.Series:
    """Every side's player id of `games` (repeats kept), as player_id."""
    sides = [frame[side].cast(pl.Int64).alias("player_id") for frame in games for side in ("white_id", "black_id")]
    return pl.concat(sides) if sides else pl.Series("player_id", [], dtype=pl.Int64)


def registered_births(history: pl.DataFrame) -> pl.DataFrame:
    """The birth years registry_history's rows state (player_id, SINCE, birth_year), by player and then folder, for
    with_registered_births.
    """
    if "birth_year" not in history.columns:
        return pl.DataFrame(schema={"player_id": pl.Int64, SINCE: pl.Utf8, "birth_year": pl.Int32})
    return (
        history.filter(pl.col("birth_year").is_not_null())
        .select(pl.col("player_id").cast(pl.Int64), SINCE, pl.col("birth_year").cast(pl.Int32))
        .sort("player_id", SINCE, maintain_order=True)
    )


# README, "Rating your own federation's files", step 2: a registry folder "corrects the others from that month on",
# and a seed list's birth_year is optional. So the registry's year in force wins over the list's for every player of
# the list, not only for the players new to it (engine.period._newcomers), as a system's chain has it
# (system_step.with_registered_births): the list's year stands where the registry states none. The K the list stated
# under a year corrected so is decided again from the month on (regulations.k_for_corrected_birth_years).
def with_registered_births(
    rating_list: pl.DataFrame, births: pl.DataFrame, month: str, policy: KPolicy | None = None
) -> pl.DataFrame:
    """`rating_list` with each player's birth year the registry's in force in `month` (registered_births' rows),
    the list's where the registry states none; under `policy` (the K policy of period `month`), with the K of each
    player whose corrected year changes it decided again.
    """
    stated = births.filter(pl.col(SINCE) <= month)
    if stated.is_empty() or rating_list.is_empty():
        return rating_list
    # The rows are by player then folder: a player's last row is the newest folder's year, and the players are in
    # id order, so each listed player is found by a binary search (a join of a fide-scale list cost 10 times more).
    newest = stated.filter(pl.col("player_id") != pl.col("player_id").shift(-1, fill_value=-1))
    registered, ids = newest["player_id"].to_numpy(), rating_list["player_id"].to_numpy()
    at = np.minimum(np.searchsorted(registered, ids), len(registered) - 1)
    found = pl.Series(registered[at] == ids)
    year = pl.Series(newest["birth_year"].to_numpy()[at])
    listed = rating_list["birth_year"]
    years = pl.select(pl.when(found).then(year).otherwise(listed).cast(listed.dtype)).to_series()
    if years.equals(listed, check_names=False, null_equal=True):
        return rating_list
    corrected = rating_list.with_columns(years.alias("birth_year"))
    if policy is None:
        return corrected
    return k_for_corrected_birth_years(corrected, listed, policy, parse_month(month)[0])


def _registered_players(history: pl.DataFrame, games: Iterable[pl.DataFrame], month: str) -> pl.DataFrame:
    """The registry in force in `month` (Players rows) of the players of `games` only: what the engine reads of it,
    the birth years of the players new to the list, without making the registry of every registered player.
    """
    rows = history.filter(pl.col("player_id").is_in(players_of(games).implode()))
    return conform(registry_in_force(rows, month), Players)


def games_or_empty(games: Any) -> Callable[[str], pl.DataFrame]:
    """Month -> validated games; months before the first partition have none (nothing was ingested for them)."""
    return lambda month: games[month] if month in games else empty_frame(Games)
