"""One player from a store.

Rating history under every scenario, a list's calculation as FIDE shows it, performance ratings.

The calculation repeats the engine's arithmetic on the stored `rated_games`: per game the change is
K x (score - expected) x weight, K being the list's `k_used` (K after the K x n cap); the period's
change is their sum rounded as the list's rule set rounds it, by the engine's own function
(regulations._rating_changes_numpy): once, to the nearest whole number, 0.5 away from zero (§8.3.4), or each
event's sum for a rule set that rounds per event (`rounding: per-event`). That is the list's `change`.
A list rates the games of every month of its rating period: before July 2012 FIDE published a list only every
three, then every two months (Scenario.period_months), so the list of March 2008 rates January to March.

Only the rows of the one player are read: one Polars scan per scenario over the Parquet files of all its months,
the filter on the player's id pushed down to the files, which Polars reads side by side.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

import numpy as np
import polars as pl

from pipeline.analytics.performance import performance_ratings
from pipeline.ingest.landing import RAW, REGISTRY_FOLDER
from pipeline.months import add_months
from pipeline.reports.first_rating import FirstRating, first_rating, first_rating_lines, pool_row
from pipeline.reports.page import frame_table_html, html_page, html_text
from pipeline.rules.model import RuleSet
from pipeline.rules.regulations import _rating_changes_numpy, rounds_per_event
from pipeline.scenarios.amendments import player_amendments
from pipeline.scenarios.chain import LEDGER
from pipeline.scenarios.model import BASELINE_SCENARIO, MAX_PERIOD_MONTHS, Scenario, canonical_name
from pipeline.store.kept import BEFORE_EVENTS_COLUMNS, list_before_events
from pipeline.store.monthly import store_failed, stored_table_months, unreadable_table
from pipeline.store.object_store import ObjectStore, is_safe_part, polars_s3_options
from pipeline.text import escape_text, printable_text
from pipeline.validate.identity import LOCAL_ID_BASE, name_key, players_named_in_dumps

DEFAULT_SCENARIO = BASELINE_SCENARIO
RATING_LIST, RATED_GAMES, IDENTITY, SYSTEM_STATE = "rating_list", "rated_games", "identity", "system_state"
# <store>/players/<id>.html: the player cards `ratings player ID --html` writes, which the HTML lists link to.
PLAYER_PAGES = "players"
# What the history reads of each stored list (only the player's row).
HISTORY_COLUMNS = {
    "rating": pl.Int32,
    "change": pl.Int32,
    # A corrected earlier list's difference carried on this one (pipeline.scenarios.corrections); absent from lists
    # stored before it, and from a rating system's.
    "correction": pl.Int32,
    "k_used": pl.Int16,
    "games": pl.Int32,
    "inactive": pl.Boolean,
    "delisted": pl.Boolean,
    "newly_rated": pl.Boolean,
}
# The file-name month scan_tables adds to each row (rated_games has a `month` column of its own).
FILE_MONTH = "_file_month"
# The identity statuses whose rows name the player the records were rated under (schemas.identity).
NAMED_STATUSES = ("new", "new_name", "matched_by_name")
# Matches listed when a name is ambiguous.
MATCHES_SHOWN = 50


class PlayerReportError(ValueError):
    """The store cannot answer for this player (no lists, unknown id or scenario, month not stored)."""


class AmbiguousPlayerError(PlayerReportError):
    """A name several players hold: `matches` lists them (player_id, name, federation, birth_year), by name."""

    def __init__(self, query: str, matches: pl.DataFrame) -> None:
        super().__init__(
            f"{matches.height} players match {escape_text(query)!r}: run `ratings player ID` with one of their ids"
        )
        self.query = query
        self.matches = matches


@dataclass
class PlayerReport:
    """What `ratings player` prints and writes as HTML."""

    player_id: int
    name: str | None
    scenarios: list[str]  # every scenario of the store, in history column order
    scenario: str  # the scenario whose calculation is shown
    month: str  # the list whose calculation is shown (the list after this month's games)
    history: pl.DataFrame  # the months shown: month, one rating column per scenario, games and flags under `scenario`
    list_row: dict  # the player's row of <scenario>/rating_list/<month>: rating, change, k_used, games
    games: pl.DataFrame  # the rating period's games, one row each, with expected score and change
    performance: pl.DataFrame  # Performance rows of the player for the period (scope month, then events)
    total_change: float | None  # K x sum of (score - expected) x weight, unrounded; None when no game was rated
    rounded_change: int | None  # total_change rounded as the rule set rounds it (period_change)
    period: list[str] = field(default_factory=list)  # the months whose games the list rates (default: [month])
    list_published: bool = True  # False: no list was published after `month` (its games count on a later list)
    next_list: str | None = None  # where list_published is False: the month whose list rates `month`'s games
    chart_history: pl.DataFrame | None = None  # every month (the chart's line); None: `history`
    hidden_months: int = 0  # months of the history without activity, not shown
    details: dict = field(default_factory=dict)  # federation, title, birth_year where the registry states them
    # The months of `scenario` whose list was rated again after it was stored and moved this player
    # (pipeline.scenarios.amendments): month, old_rating, new_rating, old_games, new_games, change.
    amended: pl.DataFrame | None = None
    # The rating on the list before the period's (its stored list, in the chain's first month the seed list); None:
    # unrated there, or not known.
    rating_before: int | None = None
    # The list's one-time events' share of its change (a compression's uplift): the rating after them minus the one
    # kept before them (pipeline.store.kept); None where the month had none or the list before them is not kept.
    one_time_events: int | None = None
    # The month had one-time events (its points ledger says so) whose share the chain did not keep: the list's change
    # cannot be compared with its games'.
    one_time_events_unkept: bool = False
    # The list's rule set rounds the change per event (§8.3.4's exception), not once for the period.
    rounds_per_event: bool = False
    # A first rating the list published (its pool and the rule function's figures), or the pool of a player still
    # unrated on it (pipeline.reports.first_rating); None for a rated player, and under a rating system.
    first_rating: FirstRating | None = None

    def period_months(self) -> list[str]:
        return self.period or [self.month]


# -- reading the store -------------------------------------------------------------------------


def stored_list_months(store: ObjectStore) -> dict[str, list[str]]:
    """Scenario (asset-key prefix) -> the months of its stored rating lists, for every scenario with at least one:
    `actual` first, then by name.
    """
    # Not raw/, nor a hidden folder such as the store's own Dagster instance (.dagster): no scenario's.
    found = {
        name: stored_table_months(store, [name, RATING_LIST])
        for name in store.list_dirs()
        if name != RAW and is_safe_part(name)
    }
    return dict(
        sorted(((k, v) for k, v in found.items() if v), key=lambda item: (item[0] != DEFAULT_SCENARIO, item[0]))
    )


def scan_tables(store: ObjectStore, keys: Sequence[str]) -> pl.LazyFrame:
    """The stored Parquet tables `keys` (at least one) as one LazyFrame with FILE_MONTH, each row's file's month.

    One scan of many files, not one scan per file: a filter is pushed down to every file, which Polars reads side
    by side (600 monthly lists: 0.3 s instead of 3 s). The first file's columns are the frame's: a column missing
    from a later file is null there, one it has beyond them is left out.
    """
    options: dict = {"include_file_paths": FILE_MONTH, "missing_columns": "insert", "extra_columns": "ignore"}
    if store.is_local:
        scan = pl.scan_parquet([store.path(key) for key in keys], **options)
    elif store.is_s3:
        scan = pl.scan_parquet([store.url(key) for key in keys], storage_options=polars_s3_options(), **options)
    else:  # another filesystem: one table at a time
        return pl.concat(
            [store.scan_parquet(key).with_columns(pl.lit(key).alias(FILE_MONTH)) for key in keys],
            how="diagonal_relaxed",
        ).with_columns(_file_month())
    return scan.with_columns(_file_month())


#: What Polars raises for a file that is not Parquet or is cut short.
UNREADABLE = (pl.exceptions.PolarsError, OSError)


def collect_tables(
    store: ObjectStore, keys: Sequence[str], query: Callable[[pl.LazyFrame], pl.LazyFrame]
) -> pl.DataFrame:
    """`query` of scan_tables(store, keys), collected. Where the joint scan fails, the files are asked one by one, so
    that the error names the one that cannot be read (Polars' does not): UnreadableTableError.
    """
    try:
        return query(scan_tables(store, keys)).collect()
    except UNREADABLE as error:
        if not store_failed(error):
            name_the_unreadable(store, keys, query)
        raise


def name_the_unreadable(store: ObjectStore, keys: Sequence[str], query: Callable[[pl.LazyFrame], pl.LazyFrame]) -> None:
    """UnreadableTableError naming the first of `keys` whose `query` fails alone; nothing when each is read. A store
    that fails meanwhile (store_failed) is no file's fault: its error is raised as it is.
    """
    for key in keys:
        try:
            query(scan_tables(store, [key])).collect()
        except UNREADABLE as error:
            if store_failed(error):
                raise
            raise unreadable_table(store, key, error) from None


def _file_month() -> pl.Expr:
    return pl.col(FILE_MONTH).str.extract(r"(\d{4}-\d{2})\.parquet$").alias(FILE_MONTH)


def rating_history(store: ObjectStore, player_id: int, months: Mapping[str, Sequence[str]]) -> pl.DataFrame:
    """scenario, month, rating, change, correction, k_used, games and the flags of the player on every stored list of
    `months` (scenario -> months; only that player's rows are read).
    """
    keys = {
        scenario: [ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month) for month in stored]
        for scenario, stored in months.items()
        if stored
    }
    try:
        return _rating_history(store, player_id, keys)
    except UNREADABLE as error:
        if store_failed(error):
            raise
        name_the_unreadable(
            store, [k for of in keys.values() for k in of], lambda s: s.filter(pl.col("player_id") == player_id)
        )
        raise


def _rating_history(store: ObjectStore, player_id: int, keys: Mapping[str, Sequence[str]]) -> pl.DataFrame:
    """rating_history of the lists `keys` (scenario -> its lists' keys)."""
    scans = []
    for scenario, stored in keys.items():
        scan = scan_tables(store, stored)
        held = scan.collect_schema()
        scans.append(
            scan.filter(pl.col("player_id") == player_id).select(
                pl.lit(scenario).alias("scenario"),
                pl.col(FILE_MONTH).alias("month"),
                *(
                    (pl.col(column) if column in held else pl.lit(None)).cast(dtype).alias(column)
                    for column, dtype in HISTORY_COLUMNS.items()
                ),
            )
        )
    if not scans:
        return pl.DataFrame(schema={"scenario": pl.Utf8, "month": pl.Utf8, **HISTORY_COLUMNS})
    # One collect: Polars reads every scenario's files side by side.
    return pl.concat(scans).collect().sort("month", "scenario")


def active_months(rows: pl.DataFrame) -> pl.Series:
    """The months of rating_history's `rows` with activity under any scenario: rated games, a rating change, a rating
    that differs from the list before (a first rating, a delisting), or a flag set or changed (inactive, newly rated,
    delisted). A player's first list counts as one (a first appearance).
    """
    before = {column: pl.col(column).shift(1).over("scenario") for column in ("rating", "inactive")}
    moved = (
        (pl.col("games").fill_null(0) > 0)
        | (pl.col("change").fill_null(0) != 0)
        | pl.col("rating").ne_missing(before["rating"])
        | (pl.col("inactive").fill_null(False) != before["inactive"].fill_null(False))
        | pl.col("delisted").fill_null(False)
        | pl.col("newly_rated").fill_null(False)
        | (pl.col("month") == pl.col("month").min().over("scenario"))
    )
    return rows.sort("scenario", "month").filter(moved)["month"].unique().sort()


def _flags(row_inactive: pl.Expr, delisted: pl.Expr, newly_rated: pl.Expr) -> pl.Expr:
    words = [
        pl.when(newly_rated).then(pl.lit("newly rated")),
        pl.when(row_inactive).then(pl.lit("inactive")),
        pl.when(delisted).then(pl.lit("delisted")),
    ]
    return pl.concat_str(words, separator=", ", ignore_nulls=True).fill_null("")


def history_table(rows: pl.DataFrame, scenarios: list[str], scenario: str) -> pl.DataFrame:
    """month, one rating column per scenario (null: unrated or not on that list), games and flags under `scenario`."""
    table = rows.select("month").unique().sort("month")
    for name in scenarios:
        table = table.join(
            rows.filter(pl.col("scenario") == name).select("month", pl.col("rating").alias(name)),
            on="month",
            how="left",
        )
    own = rows.filter(pl.col("scenario") == scenario).select(
        "month", "games", _flags(pl.col("inactive"), pl.col("delisted"), pl.col("newly_rated")).alias("flags")
    )
    return table.join(own, on="month", how="left").with_columns(pl.col("flags").fill_null("")).sort("month")


def list_period(
    store: ObjectStore, scenario_name: str, month: str, scenarios: Mapping[str, Scenario] | None = None
) -> tuple[list[str], bool, str | None]:
    """(the months whose games the list of `month` rates, whether a list was published after `month`, and where none
    was the month whose list rates its games, when known).

    A scenario of `scenarios` says it (Scenario.period_months; a rating system rates each month alone). For another
    (a store rated with another scenarios file) the stored lists tell: a month after which no list was published
    holds a list carried forward (no K used, no game rated: pipeline.engine.period.carry_forward), and such months
    before a list belong to its period, up to MAX_PERIOD_MONTHS.
    """
    scenario = _scenario_named(scenarios or {}, scenario_name)
    if scenario is not None and scenario.is_system:
        return [month], True, None
    if scenario is not None:
        if not scenario.rules_for(month).publishes_list_after(month):
            later = [add_months(month, n) for n in range(1, MAX_PERIOD_MONTHS)]
            return [month], False, next((m for m in later if scenario.rules_for(m).publishes_list_after(m)), None)
        months = scenario.period_months(month)
    elif store.exists(scenario_name, SYSTEM_STATE):
        return [month], True, None
    elif _carried_forward(store, scenario_name, month):
        return [month], False, None
    else:
        months = [month]
        while len(months) < MAX_PERIOD_MONTHS and _carried_forward(store, scenario_name, add_months(months[0], -1)):
            months.insert(0, add_months(months[0], -1))
    # Months before the store's first have no games here (the seed list is the list in force before it).
    stored = [m for m in months if store.exists(ObjectStore.table_key(f"{scenario_name}/{RATED_GAMES}", m))]
    return stored or [month], True, None


def _carried_forward(store: ObjectStore, scenario: str, month: str) -> bool:
    """Whether the stored list of `month` is one carried forward (no K used and no rated game on it)."""
    key = ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month)
    if not store.exists(key):
        return False
    used = store.scan_parquet(key).select((pl.col("k_used").is_not_null() | (pl.col("games") > 0)).any())
    return not used.collect().item()


def _player_rated_games(store: ObjectStore, scenario: str, months: Sequence[str], player_id: int) -> pl.DataFrame:
    keys = [ObjectStore.table_key(f"{scenario}/{RATED_GAMES}", month) for month in months]
    missing = [month for month, key in zip(months, keys, strict=True) if not store.exists(key)]
    if missing:
        raise PlayerReportError(f"no {scenario} rated_games for {', '.join(missing)} in the store")
    mine = (pl.col("white_id") == player_id) | (pl.col("black_id") == player_id)
    return collect_tables(store, keys, lambda scan: scan.filter(mine).drop(FILE_MONTH))


def _player_details(store: ObjectStore, month: str, ids: pl.Series) -> pl.DataFrame:
    """player_id, name, federation, title, birth_year of `ids`: the registry in force in `month`, else the name the
    dumps of `month` and before gave them, as the list of `month` names them (players_named_in_dumps: a player
    without a registry entry is named in a month without games too).
    """
    schema = pl.Schema(
        {"player_id": pl.Int64, "name": pl.Utf8, "federation": pl.Utf8, "title": pl.Utf8, "birth_year": pl.Int32}
    )
    frames = []
    if store.exists(RAW, REGISTRY_FOLDER):
        from pipeline.ingest.registry import read_players

        frames.append(read_players(store, month).select(list(schema)))
    # One listing, then one scan of the months' identity reports reading only the rows of `ids`.
    identity = [ObjectStore.table_key(IDENTITY, m) for m in stored_table_months(store, [IDENTITY]) if m <= month]
    if identity:
        written = collect_tables(
            store,
            identity,
            lambda scan: scan.filter(pl.col("player_id").is_in(ids.implode())).select(
                "month", "status", "name", "player_id", "records"
            ),
        )
        named = players_named_in_dumps(written)
        frames.append(named.select("player_id", "name"))
    if not frames:
        return pl.DataFrame(schema=schema)
    found = pl.concat([f.filter(pl.col("player_id").is_in(ids.implode())) for f in frames], how="diagonal_relaxed")
    return found.cast(schema).select(list(schema)).unique("player_id", keep="first", maintain_order=True)


def _scenario_named(scenarios: Mapping[str, Scenario], name: str) -> Scenario | None:
    """The scenario of `scenarios` stored under `name` (the canonical spelling: a key may be written 'elo-32')."""
    return scenarios.get(name) or next((s for s in scenarios.values() if s.name == name), None)


def _scenario_map(scenarios: Mapping[str, Scenario] | None) -> Mapping[str, Scenario]:
    """`scenarios`, else the scenarios file the settings name (empty when it cannot be read)."""
    if scenarios is not None:
        return scenarios
    from pipeline.rules.model import RulesError
    from pipeline.scenarios.model import load_scenarios

    try:
        return load_scenarios()
    except RulesError:
        return {}


def player_report(
    store: ObjectStore,
    player_id: int,
    scenario: str | None = None,
    month: str | None = None,
    *,
    all_months: bool = False,
    scenarios: Mapping[str, Scenario] | None = None,
) -> PlayerReport:
    """The report of one player; default scenario `actual` (else the first), default month the latest list on which
    they had rated games. The history shows only the months with activity (active_months) and the latest list,
    unless `all_months`. `scenarios` (default: the settings' scenarios file) says which months each list rates.
    """
    months = stored_list_months(store)
    names = list(months)
    if not names:
        raise PlayerReportError(f"{store.url()}: no rating list in the store (materialize some months first)")
    if scenario is not None:
        wanted = canonical_name(scenario)
        if wanted not in names:
            raise PlayerReportError(f"scenario {scenario!r} has no rating list in the store (has: {', '.join(names)})")
        scenario = wanted
    else:
        scenario = names[0]
    rows = rating_history(store, player_id, months)
    if rows.is_empty():
        raise PlayerReportError(f"player {player_id} is on no rating list of {store.url()}")
    own = rows.filter(pl.col("scenario") == scenario)
    if month is None:
        played = own.filter(pl.col("games") > 0)
        latest = (played if played.height else own)["month"].max() if own.height else None
        if not isinstance(latest, str):  # a "YYYY-MM" text column: None when the player has no row
            raise PlayerReportError(f"player {player_id} is on no {scenario} rating list")
        month = latest
    elif month not in months[scenario]:
        raise PlayerReportError(f"no {scenario} rating list for {month} in the store")
    list_rows = own.filter(pl.col("month") == month)
    if list_rows.is_empty():
        raise PlayerReportError(f"player {player_id} is not on the {scenario} rating list of {month}")
    list_row = list_rows.row(0, named=True)
    period, published, next_list = list_period(store, scenario, month, _scenario_map(scenarios))
    player_games = _player_rated_games(store, scenario, period, player_id)
    opponents = pl.concat([player_games["white_id"], player_games["black_id"], pl.Series([player_id])]).unique()
    people = _player_details(store, month, opponents)
    k_used = list_row["k_used"] if published else None
    games = period_games(player_games, player_id, k_used, people.select("player_id", "name"))
    chain = _scenario_named(_scenario_map(scenarios), scenario)
    rules = chain.rules_for(month) if chain is not None and not chain.is_system else None
    total, rounded = period_change(games, k_used, rules)
    performance = performance_ratings(player_games, month).filter(pl.col("player_id") == player_id)
    full = history_table(rows, names, scenario)
    if all_months:
        shown = full
    else:
        kept = pl.concat([active_months(rows), full["month"].tail(1)]).unique()
        shown = full.filter(pl.col("month").is_in(kept.implode()))
    own_details = people.filter(pl.col("player_id") == player_id)
    details = own_details.row(0, named=True) if own_details.height else {}
    before = _rating_before(store, scenario, period[0], player_id, own, chain)
    first = None
    if published and (list_row["newly_rated"] or list_row["rating"] is None) and not (chain and chain.is_system):
        own_pool = pool_row(store, ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month), player_id)
        pool_before = None
        if list_row["newly_rated"]:
            key_before = ObjectStore.table_key(f"{scenario}/{RATING_LIST}", add_months(period[0], -1))
            pool_before = pool_row(store, key_before, player_id)
        first = first_rating(store, rules, month, period, player_id, player_games, list_row, own_pool, pool_before)
    one_time = _one_time_events(store, scenario, month, player_id, list_row["rating"]) if published else None
    return PlayerReport(
        player_id=player_id,
        name=details.get("name"),
        scenarios=names,
        scenario=scenario,
        month=month,
        history=shown,
        list_row=list_row,
        games=games,
        performance=performance,
        total_change=total,
        rounded_change=rounded,
        rounds_per_event=rules is not None and rounds_per_event(rules),
        period=period,
        list_published=published,
        next_list=next_list,
        chart_history=full,
        hidden_months=full.height - shown.height,
        details={k: details[k] for k in ("federation", "title", "birth_year") if details.get(k) not in (None, "")},
        amended=player_amendments(store, scenario, player_id).drop("player_id", "name"),
        rating_before=before,
        one_time_events=one_time,
        one_time_events_unkept=published and one_time is None and _had_one_time_events(store, scenario, month, chain),
        first_rating=first,
    )


def _rating_before(
    store: ObjectStore, scenario: str, first_month: str, player_id: int, own: pl.DataFrame, chain: Scenario | None
) -> int | None:
    """The player's rating on the list before the period's first month (`own`: their rating_history rows under the
    scenario): its stored list, else, where the scenario stores no list before, the seed list (publish's reading).
    """
    month_before = add_months(first_month, -1)
    if own.filter(pl.col("month") < first_month).height or store.exists(
        ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month_before)
    ):
        row = own.filter(pl.col("month") == month_before)
        return row["rating"][0] if row.height else None
    from pipeline.publish.lists import previous_list_ratings

    list_type = "standard" if chain is None else chain.list_type() if chain.seed_list is None else None
    seed = previous_list_ratings(store, scenario, first_month, list_type)
    if seed is None:
        return None
    found = seed.filter(pl.col("id") == player_id)
    return found["_before"][0] if found.height else None


def _one_time_events(store: ObjectStore, scenario: str, month: str, player_id: int, rating: int | None) -> int | None:
    """The share of the month's one-time events (a compression) in the player's change: their rating on the stored
    list minus the one the chain kept before the events (kept.list_before_events); None where none is kept.
    """
    key = ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month)
    if rating is None or not store.exists(key):
        return None
    stored = store.read_parquet(key, columns=BEFORE_EVENTS_COLUMNS)
    before = list_before_events(store, scenario, month, stored)
    if before is None:
        return None
    row = before.filter(pl.col("player_id") == player_id)
    return rating - int(row["rating"][0]) if row.height else None


def _had_one_time_events(store: ObjectStore, scenario: str, month: str, chain: Scenario | None) -> bool:
    """Whether the month's list holds one-time events (a compression): the scenario's definition, else (a scenario the
    scenarios file does not hold) its points ledger's channel.
    """
    if chain is not None:
        return bool(chain.events_after(month))
    key = ObjectStore.table_key(f"{scenario}/{LEDGER}", month)
    if not store.exists(key):
        return False
    return bool((store.read_parquet(key, columns=["one_time_events"])["one_time_events"] != 0).any())


def period_games(rated_games: pl.DataFrame, player_id: int, k_used: int | None, names: pl.DataFrame) -> pl.DataFrame:
    """The player's games among `rated_games` (one or several months') as FIDE's individual calculation lists them,
    in month, event and game order.

    change = K x (score - expected) x weight; null when the game does not count for the player (unrated
    before the period, opponent without a rating, unrated time control) or no list rates it yet (`k_used` None).
    K is the player's side's in `rated_games` (an event started before the period: its start's list's), else
    `k_used`, the list's.
    """
    games = rated_games.filter((pl.col("white_id") == player_id) | (pl.col("black_id") == player_id))
    white = pl.col("white_id") == player_id
    table = games.select(
        pl.col("month") if "month" in games.columns else pl.lit(None, dtype=pl.Utf8).alias("month"),
        "game_id",
        "event_id",
        pl.when(white).then(pl.lit("w")).otherwise(pl.lit("b")).alias("colour"),
        pl.when(white).then(pl.col("black_id")).otherwise(pl.col("white_id")).alias("opponent_id"),
        pl.when(white).then(pl.col("white_rating_used")).otherwise(pl.col("black_rating_used")).alias("own_rating"),
        pl.when(white)
        .then(pl.col("black_rating_used"))
        .otherwise(pl.col("white_rating_used"))
        .alias("opponent_rating"),
        pl.when(white).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")).alias("score"),
        pl.when(white).then(pl.col("white_expected")).otherwise(pl.col("black_expected")).alias("expected"),
        "weight",
        (
            pl.when(white).then(pl.col("white_k_used")).otherwise(pl.col("black_k_used"))
            if "white_k_used" in games.columns
            else pl.lit(None)
        )
        .cast(pl.Float64)
        .alias("side_k"),
    )
    # Expected scores are hundredths (table 8.1.2): work in hundredths, as the engine does, so sums are exact.
    delta_h = (pl.col("score") * 100.0 - (pl.col("expected") * 100.0).round(9)) * pl.col("weight")
    k = pl.coalesce("side_k", pl.lit(k_used, dtype=pl.Float64)) if k_used is not None else pl.lit(None, pl.Float64)
    return (
        table.join(names.rename({"player_id": "opponent_id", "name": "opponent_name"}), on="opponent_id", how="left")
        .with_columns(delta_h=delta_h, k=pl.when(delta_h.is_not_null()).then(k).cast(pl.Int16))
        .with_columns(change=pl.col("k") * pl.col("delta_h") / 100.0)
        .select(
            "month",
            "event_id",
            "game_id",
            "colour",
            "opponent_id",
            "opponent_name",
            "own_rating",
            "opponent_rating",
            "score",
            "expected",
            "weight",
            "delta_h",
            "k",
            "change",
        )
        .sort("month", "event_id", "game_id", nulls_last=True)
    )


def period_change(
    games: pl.DataFrame, k_used: int | None, rules: RuleSet | None = None
) -> tuple[float | None, int | None]:
    """(the counted games' K x (score - expected) x weight summed, that rounded) as the engine computes the list's
    change (regulations._rating_changes_numpy): rounded once 0.5 away from zero, or per event where `rules` round
    per event (None: a rule set not known here, rounded once). K is each game's (period_games), `k_used` where a
    table gives none.
    """
    counted = games.filter(pl.col("delta_h").is_not_null())
    if k_used is None or counted.is_empty():
        return None, None
    delta_h = counted["delta_h"].cast(pl.Float64).to_numpy()
    side_k = (
        counted["k"].fill_null(k_used).cast(pl.Int16).to_numpy()
        if "k" in counted.columns
        else np.full(counted.height, k_used, dtype=np.int16)
    )
    player = np.zeros(counted.height, dtype=np.int64)  # one player: every side is theirs
    exact, rounded = _rating_changes_numpy(
        rules is not None and rounds_per_event(rules),
        np.array([k_used], dtype=np.int16),
        np.bincount(player, weights=delta_h),  # summed in order, as the engine sums a player's sides
        delta_h,
        player,
        side_k,
        counted["event_id"].cast(pl.Utf8),
    )
    return float(exact[0]), int(rounded[0])


# -- finding a player by name ------------------------------------------------------------------


def _folded(name: pl.Expr) -> pl.Expr:
    """A name as a search compares it: name_key's form, accents dropped, lower case."""
    return name_key(name).str.normalize("NFKD").str.replace_all(r"\p{M}", "").str.to_lowercase()


def player_names(store: ObjectStore, month: str) -> pl.DataFrame:
    """player_id, name, federation, birth_year of every player a name can find: the registry in force in `month`,
    then the names the dumps wrote for players the registry does not name (identity tables of every stored month:
    unregistered FIDE ids and local ids), each (id, name) once.
    """
    schema = pl.Schema({"player_id": pl.Int64, "name": pl.Utf8, "federation": pl.Utf8, "birth_year": pl.Int32})
    frames = [pl.DataFrame(schema=schema)]
    if store.exists(RAW, REGISTRY_FOLDER):
        from pipeline.ingest.registry import read_players

        frames.append(read_players(store, month).select(list(schema)).cast(schema))
    identity = [key for key in store.list_files(IDENTITY) if re.fullmatch(rf"{IDENTITY}/\d{{4}}-\d{{2}}\.parquet", key)]
    if identity:
        written = collect_tables(
            store,
            identity,
            lambda scan: (
                scan.filter(pl.col("status").is_in(NAMED_STATUSES) & pl.col("player_id").is_not_null())
                .select(pl.col("player_id").cast(pl.Int64), pl.col("name").cast(pl.Utf8))
                .unique()
            ),
        )
        frames.append(written)
    found = pl.concat(frames, how="diagonal_relaxed").filter(pl.col("name").is_not_null())
    return found.unique(["player_id", "name"], keep="first", maintain_order=True)


def find_players(store: ObjectStore, query: str) -> pl.DataFrame:
    """The players of the store's lists whose name matches `query` (player_id, name, federation, birth_year; one row
    a player, by name then id): those whose name is the query (blanks, the comma's spacing, Unicode forms, invisible
    characters, accents and case aside), else those whose name holds every word of it ("carlsen", "Magnus Carlsen").
    Only players on the latest list of the store's first scenario count (a registered player who never played has no
    card).
    """
    months = stored_list_months(store)
    if not months:
        raise PlayerReportError(f"{store.url()}: no rating list in the store (materialize some months first)")
    scenario, stored = next(iter(months.items()))
    latest = stored[-1]
    wanted = pl.select(_folded(pl.lit(query.strip()))).item() or ""
    words = [word for word in re.split(r"[\s,]+", wanted) if word]
    if not words:
        raise PlayerReportError("give a player's name or id")
    names = player_names(store, latest).with_columns(_folded(pl.col("name")).alias("_folded"))
    matches = names.filter(pl.col("_folded") == wanted)
    if matches.is_empty():
        matches = names.filter(pl.all_horizontal(pl.col("_folded").str.contains(word, literal=True) for word in words))
    if matches.height:
        listed = (
            store.scan_parquet(ObjectStore.table_key(f"{scenario}/{RATING_LIST}", latest))
            .filter(pl.col("player_id").is_in(matches["player_id"].unique().implode()))
            .select(pl.col("player_id").cast(pl.Int64))
            .collect()
        )
        matches = matches.join(listed, on="player_id", how="semi")
    return matches.unique("player_id", keep="first", maintain_order=True).drop("_folded").sort("name", "player_id")


def resolve_player(store: ObjectStore, query: str) -> int:
    """The id `query` gives (digits) or the one player whose name it is (find_players); AmbiguousPlayerError lists
    the players when several match, PlayerReportError says when none does.
    """
    text = query.strip()
    if text.isdigit():
        return int(text)
    matches = find_players(store, text)
    if matches.is_empty():
        raise PlayerReportError(f"no player on the stored lists is named {escape_text(text)!r}")
    if matches.height > 1:
        raise AmbiguousPlayerError(text, matches)
    return int(matches["player_id"][0])


def matches_text(error: AmbiguousPlayerError) -> str:
    """The players of an ambiguous name, one a line (id, name, federation, birth year), names escaped."""
    lines = []
    for row in error.matches.head(MATCHES_SHOWN).iter_rows(named=True):
        extra = ", ".join(str(row[c]) for c in ("federation", "birth_year") if row.get(c) not in (None, ""))
        lines.append(
            f"{row['player_id']:>16}  {escape_text(row['name'] or '')}" + (f"  ({escape_text(extra)})" if extra else "")
        )
    if error.matches.height > MATCHES_SHOWN:
        lines.append(f"... and {error.matches.height - MATCHES_SHOWN:,} more: give more of the name")
    return "\n".join(lines)


def player_page_key(player_id: int) -> str:
    """Where `ratings player ID --html` writes a player's card in the store, the page the HTML lists link to."""
    return f"{PLAYER_PAGES}/{int(player_id)}.html"


# -- rendering ---------------------------------------------------------------------------------


def _fmt(value: object, spec: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _signed(value: float | int | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _result(score: float) -> str:
    return {1.0: "1", 0.5: "½", 0.0: "0"}.get(score, str(score))


def _period_text(report: PlayerReport) -> str:
    months = report.period_months()
    return months[0] if len(months) == 1 else f"{months[0]}..{months[-1]}"


def calculation_heading(report: PlayerReport) -> str:
    months = report.period_months()
    if not report.list_published:
        return f"Games of {report.month} under {report.scenario}"
    if len(months) == 1:
        return f"Calculation for {report.month} under {report.scenario}"
    return (
        f"Calculation for the list of {report.month} under {report.scenario}: "
        f"rating period {_period_text(report)} ({len(months)} months, one list)"
    )


def _summary_lines(report: PlayerReport) -> list[str]:
    row = report.list_row
    if not report.list_published:
        later = f"the list of {report.next_list}" if report.next_list else "the next list"
        return [
            f"No list was published after {report.month} under {report.scenario}: its games are rated on {later} "
            f"(`--month {report.next_list}`), which rates them with the other games of its period."
            if report.next_list
            else f"No list was published after {report.month} under {report.scenario}: its games are rated on {later}.",
        ]
    correction = row.get("correction") or 0
    before = report.rating_before
    carried = (
        f"; a correction of an earlier list {_signed(correction)} (lists/{report.scenario}/{report.month}"
        ".corrections.csv)"
        if correction
        else ""
    )
    lines = [
        f"Rating before {_fmt(before)}, K {_fmt(row['k_used'])}, rated games {_fmt(row['games'])}{carried}; "
        f"rating after {_fmt(row['rating'])}.",
    ]
    what = "this month" if len(report.period_months()) == 1 else "in this rating period"
    events = report.one_time_events or 0
    # The list after the month's one-time events minus the one the chain kept before them.
    event_text = f"the month's one-time event (a compression) {events:+d} (kept/rate/{report.scenario}/)"
    unkept = (
        f"also holds the month's one-time event (a compression), whose share is not kept (kept/rate/{report.scenario}/"
        "): rating the month again keeps it"
    )
    first = report.first_rating
    if first is not None and first.published:
        lines += first_rating_lines(first, report.scenario, None if report.one_time_events_unkept else events)
        if events:
            lines.append(f"The list's change {_signed(row['change'])} is {event_text}.")
    elif report.total_change is None or report.rounded_change is None:
        lines.append(f"No game changed a rating {what} (unrated before it, or no rated opponent).")
        if first is not None:
            lines += first_rating_lines(first, report.scenario)
        if events:
            lines.append(f"The list's change {_signed(row['change'])} is {event_text}.")
    elif report.one_time_events_unkept:
        lines.append(
            f"Total change: sum of K x (score - expected) x weight = {report.total_change:+.2f}, {_rounding(report)} "
            f"{report.rounded_change:+d}; the list's change {_signed(row['change'])} {unkept}."
        )
    else:
        rounded = report.rounded_change
        with_events = f", with {event_text}: {rounded + events:+d}," if events else ","
        agrees = "equal to" if rounded + events == row["change"] else "NOT equal to"
        lines.append(
            f"Total change: sum of K x (score - expected) x weight = {report.total_change:+.2f}, "
            f"{_rounding(report)} {rounded:+d}{with_events} {agrees} the list's change {_signed(row['change'])}."
        )
    return lines


def _rounding(report: PlayerReport) -> str:
    """How the rule set rounds the period's change (§8.3.4), as the total's line says it."""
    if report.rounds_per_event:
        return "rounded per event (0.5 away from zero) and summed"
    return "rounded once (0.5 away from zero)"


def _amended_lines(report: PlayerReport) -> list[str]:
    """The months whose list was rated again after it was stored and moved the player, one line each."""
    if report.amended is None or report.amended.is_empty():
        return []
    lines = [
        f"Amended lists under {report.scenario} (rated again after they were stored; lists/<scenario>/<YYYY-MM>"
        ".changes.csv, the replaced list beside it as .previous.parquet):"
    ]
    for row in report.amended.iter_rows(named=True):
        lines.append(
            f"  {row['month']}: {row['change']}, rating {_fmt(row['old_rating'])} -> {_fmt(row['new_rating'])}, "
            f"games {_fmt(row['old_games'])} -> {_fmt(row['new_games'])}"
        )
    return lines


def _history_heading(report: PlayerReport) -> str:
    heading = f"Rating history (the list after each month's games; games and flags under {report.scenario})"
    if report.hidden_months:
        heading += (
            f": the months with activity and the latest list; {report.hidden_months} months without a game, a change "
            "or a flag are not shown (`ratings player --all-months` shows them)"
        )
    return heading


def _title(report: PlayerReport, clean: Callable[[str], str] = printable_text, gap: str = " ") -> str:
    """'Player <id> <name> (federation, title, born <year>)', the registry's text made safe by `clean`."""
    title = f"Player {report.player_id}"
    if report.name:
        title += f"{gap}{clean(report.name)}"
    known = [clean(str(report.details[k])) for k in ("federation", "title") if k in report.details]
    if "birth_year" in report.details:
        known.append(f"born {report.details['birth_year']}")
    if report.player_id >= LOCAL_ID_BASE:
        known.append("no FIDE id: a local id given by name")
    return title + (f" ({', '.join(known)})" if known else "")


def _performance_rows(report: PlayerReport) -> pl.DataFrame:
    whole = "(whole month)" if len(report.period_months()) == 1 else "(whole period)"
    return report.performance.select(
        pl.coalesce("event_id", pl.lit(whole)).alias("event"),
        "games",
        "score",
        pl.col("average_opponent").round(1).alias("Ra"),
        "p",
        "dp",
        pl.col("performance_fide").alias("FIDE Ra+dp"),
        pl.col("performance_400").alias("algorithm of 400"),
    )


def render_text(report: PlayerReport) -> str:
    """The report for a terminal; names from files are escaped (no control characters reach the terminal)."""
    out = [_title(report, escape_text, gap="  "), "", _history_heading(report)]
    columns = ["month", *report.scenarios, "games"]
    widths = [max(7, len(c)) for c in columns]
    out.append("  ".join([*(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)), "flags"]))
    for row in report.history.iter_rows(named=True):
        cells = [f"{_fmt(row[c]):>{w}}" for c, w in zip(columns, widths, strict=True)]
        out.append("  ".join([*cells, row.get("flags") or ""]).rstrip())
    amended = _amended_lines(report)
    out += ["", *amended, *([""] if amended else []), calculation_heading(report), *_summary_lines(report), ""]
    several = _several_months(report.games)
    events = [escape_text(str(e)) for e in report.games["event_id"].to_list()] + [
        escape_text(str(e or "")) for e in report.performance["event_id"].to_list()
    ]
    ew = min(40, max([len("(whole period)"), *map(len, events)]))
    month_column = f"{'month':<8}" if several else ""
    header = (
        f"{month_column}{'event':<{ew}} {'opp id':>16}  {'opponent':<26} {'Ro':>5} {'opp':>5} {'res':>3} {'exp':>5} "
        f"{'w':>4} {'K':>3} {'change':>7}"
    )
    out.append(header)
    for g in report.games.iter_rows(named=True):
        month_cell = f"{g['month'] or '':<8}" if several else ""
        out.append(
            f"{month_cell}{escape_text(str(g['event_id']))[:ew]:<{ew}} {g['opponent_id']:>16}  "
            f"{escape_text(g['opponent_name'] or '')[:26]:<26} "
            f"{_fmt(g['own_rating']):>5} {_fmt(g['opponent_rating']):>5} {_result(g['score']):>3} "
            f"{_fmt(g['expected'], '.2f'):>5} {_fmt(g['weight'], '.2f'):>4} {_fmt(g['k']):>3} "
            f"{_signed(g['change'], 2):>7}"
        )
    out += ["", f"Performance ratings, {_period_text(report)} (games against opponents with a rating used)"]
    perf = _performance_rows(report)
    if perf.is_empty():
        out.append("no game against an opponent with a rating")
    for p in perf.iter_rows(named=True):
        out.append(
            f"{escape_text(p['event'])[:ew]:<{ew}} games {p['games']:>3}  score {p['score']:>4g}  Ra {p['Ra']:>6.1f}  "
            f"p {p['p']:.2f}  dp {p['dp']:>4}  FIDE {p['FIDE Ra+dp']:>4}  algorithm of 400 {p['algorithm of 400']:>4}"
        )
    return "\n".join(out)


def _several_months(games: pl.DataFrame) -> bool:
    """Whether the games shown come from several months (then each game's month is shown)."""
    return "month" in games.columns and games["month"].drop_nulls().n_unique() > 1


def chart_title(report: PlayerReport) -> str:
    """The chart's title: the player's name (printable, and a '$' kept as text, not read as Matplotlib's mathtext),
    else the id.
    """
    who = printable_text(report.name).replace("$", r"\$") if report.name else str(report.player_id)
    return f"Rating history of {who}"


def render_html(report: PlayerReport, *, in_store: bool = False, list_made_by: str | None = None) -> str:
    """A self-contained page: history table and chart (PNG inline as base64), the list's calculation, performance.

    `in_store`: the page is the store's players/<id>.html (player_page_key), so it links to the published list of the
    calculation's month, or, where that month has none (`list_made_by`: the command that makes it), says how to make it.
    """
    # matplotlib only when a page is drawn: `ratings player` prints text without it.
    from pipeline.reports.charts import plot_rating_history

    title = _title(report)
    chart_rows = report.chart_history if report.chart_history is not None else report.history
    png = plot_rating_history(chart_rows, report.scenarios, title=chart_title(report))
    chart = (
        '<img alt="Rating history, one line per scenario" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
    )
    # Ids and ratings as text: the table would print numbers with thousands separators.
    several = _several_months(report.games)
    games = report.games.select(
        *(["month"] if several else []),
        "event_id",
        pl.col("opponent_id").cast(pl.Utf8),
        "opponent_name",
        pl.col("own_rating").cast(pl.Utf8).alias("Ro"),
        pl.col("opponent_rating").cast(pl.Utf8).alias("opponent rating"),
        "score",
        "expected",
        "weight",
        pl.col("k").cast(pl.Utf8).alias("K"),
        pl.col("change").round(2),
    )
    history = report.history.with_columns(pl.col(report.scenarios).cast(pl.Utf8))
    performance = _performance_rows(report).with_columns(pl.col("FIDE Ra+dp", "algorithm of 400").cast(pl.Utf8))
    links = ""
    if in_store:
        scenario, month = escape(report.scenario, quote=True), escape(report.month, quote=True)
        label = f"{escape(report.scenario)} {escape(report.month)}"
        the_list = (
            f'The list: <a href="../lists/{scenario}/{month}.html">{label}</a>.'
            if list_made_by is None
            else f"The list of {escape(report.month)} has no readable page yet: <code>{escape(list_made_by)}</code>."
        )
        links = (
            f'<p class="meta">{the_list} Made by <code>ratings player {report.player_id} --html</code>; '
            "run it again after new months are rated.</p>"
        )
    body = "\n".join(
        [
            f"<h1>{html_text(title)}</h1>",
            (
                f'<p class="meta">Scenarios: {escape(", ".join(report.scenarios))}. Calculation: '
                f"{escape(report.month)} under {escape(report.scenario)}.</p>"
            ),
            links,
            "<h2>Rating history</h2>",
            chart,
            frame_table_html(history, _history_heading(report), float_digits=0),
            *(f"<p>{html_text(line)}</p>" for line in _amended_lines(report)),
            f"<h2>{html_text(calculation_heading(report))}</h2>",
            *(f"<p>{html_text(line)}</p>" for line in _summary_lines(report)),
            frame_table_html(games, "change = K x (score - expected) x weight", float_digits=2),
            f"<h2>Performance ratings, {escape(_period_text(report))}</h2>",
            frame_table_html(
                performance,
                "FIDE: Ra + dp (table 8.1.1); algorithm of 400: (sum of ratings + 400 x (W - L)) / n",
                float_digits=2,
            ),
        ]
    )
    return html_page(title, body, extra_css="img { max-width: 100%; }")
