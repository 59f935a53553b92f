"""What a month's published list is: its rating list named by the registry, in reading order.

With the figures publishing reports; stored for the months a run publishes, made on demand by `ratings list` (its files:
list_files).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import BinaryIO, NamedTuple

import numpy as np
import pandera.polars as pa
import polars as pl

from pipeline.formats.fide_list import FIDE_IDENTITY
from pipeline.months import add_months, parse_month
from pipeline.publish.list_files import (
    write_published_combined,
    write_published_csv,
    write_published_html,
    write_published_txt,
)
from pipeline.publish.ranked_registry import (
    NAME_ORDER,
    RANKED_COLUMNS,
    REGISTRY_CELLS,
    SPREADSHEET_FORMULA,
    published_registries,
    registry_cells,
)
from pipeline.scenarios.amendments import LISTS_PREFIX, list_file_months
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import store_failed, stored_table_months, table_key, unreadable_table
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import CommandLines
from pipeline.validate.identity import LOCAL_ID_BASE
from schemas.conformance import ascends_strictly
from schemas.published_list import PublishedList
from schemas.rating_list import RatingList
from schemas.util import polars_schema

PUBLISHED_COLUMNS = list(polars_schema(PublishedList))
# Files of a month made at once (write_published_month).
PUBLISH_THREADS = 3


def published_list_key(scenario_key: str, month: str, extension: str) -> str:
    """Object-store key of one published file: lists/<scenario>/<YYYY-MM>.<csv|txt|html>."""
    parse_month(month)
    return f"{LISTS_PREFIX}/{scenario_key}/{month}.{extension}"


#: The combined list's file beside a month's per-list files: lists/<scenario>/<YYYY-MM>.combined.txt.
COMBINED_EXTENSION = "combined.txt"


def write_combined_month(store: ObjectStore, scenario_key: str, month: str, partners: Mapping[str, str]) -> str:
    """FIDE's combined list of the scenario's month with its rapid and blitz partners (stored_combined_month) under
    lists/<scenario>/<YYYY-MM>.combined.txt: the bytes `ratings list --format combined` prints; returns its place.
    """
    made = stored_combined_month(store, scenario_key, month, partners)
    target = published_list_key(scenario_key, month, COMBINED_EXTENSION)
    store.write_with(lambda handle: write_published_file(made, "combined", handle), target)
    return redact_url(store.url(target))


def readable_list_months(store: ObjectStore, scenario_key: str) -> list[str]:
    """The months of the scenario's published files under lists/<scenario>/ (any of STORED_FORMATS), in order."""
    return list_file_months(store, scenario_key, [f".{extension}" for extension in STORED_FORMATS])


def list_command(commands: CommandLines, scenario_key: str, month: str, file_format: str = "html") -> str:
    """The command that makes a month's readable list on demand (`ratings list`), over the store and with the
    scenarios file of `commands`.
    """
    return commands.ratings("list", "--scenario", scenario_key, "--month", month, "--format", file_format)


def published_list(rating_list: pl.DataFrame, registry: pl.DataFrame | None) -> pl.DataFrame:
    """PublishedList rows: every player of `rating_list`, with name, federation, title and sex from `registry`.

    `registry` (Players rows) may be None, empty or miss players: their registry cells stay empty.
    The birth year is the registry's, else the list's own. Sorted by rating (unrated last), name, id.
    A registry made by ranked_registry (published_registries) has its cells cleaned already, places each
    name (NAME_ORDER) and is in id order: each player's registry row is then found by position, not joined,
    and the list put in order without comparing names.
    """
    return _published(rating_list, registry)[0]


def _published(rating_list: pl.DataFrame, registry: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.Series | None]:
    """published_list's rows, and the FIDE TXT's identity text of each (FIDE_IDENTITY: null for a player the
    registry does not name) where the registry is ranked_registry's; else None.
    """
    known = pl.DataFrame(
        schema={
            "player_id": pl.Int64,
            "name": pl.Utf8,
            "federation": pl.Utf8,
            "title": pl.Utf8,
            "sex": pl.Utf8,
            "registry_birth_year": pl.Int32,
        }
    )
    ranked = registry is not None and all(column in registry.columns for column in RANKED_COLUMNS)
    if registry is not None and registry.height:
        # An empty registry cell (e.g. a FIDE list without a federation) is unknown, not a value.
        cells = registry.select(REGISTRY_CELLS) if ranked else registry_cells(registry)
        birth_year = pl.col("birth_year").cast(pl.Int32).alias("registry_birth_year")
        known = registry.select("player_id", birth_year, *(RANKED_COLUMNS if ranked else ())).with_columns(
            cells.get_columns()
        )
    # Only the columns the list publishes (not e.g. its pending games), so that reordering copies little.
    listed = rating_list.select([c for c in rating_list.columns if c in _FROM_THE_LIST or c == CORRECTION])
    rows = _registry_rows(listed["player_id"], known["player_id"]) if ranked and known.height else None
    if rows is not None:  # the registry's row of each player by position, not by a join (about half the time)
        order = _reading_order(listed["player_id"], listed["rating"], known[NAME_ORDER].gather(rows))
        if order is not None:
            found = known.drop("player_id", NAME_ORDER).select(pl.all().gather(rows.gather(order)))
            frame = _published_columns(pl.concat([listed[order], found.drop(FIDE_IDENTITY)], how="horizontal"))
            return frame, found[FIDE_IDENTITY]
    known = known.filter(pl.col("player_id").is_first_distinct())
    frame = _published_columns(listed.join(known, on="player_id", how="left"))
    return frame.sort(["rating", "name", "id"], descending=[True, False, False], nulls_last=True), None


def _registry_rows(player_ids: pl.Series, registry_ids: pl.Series) -> pl.Series | None:
    """Each player's row in the registry (null where unregistered), found by binary search; None unless the registry's
    ids ascend strictly (ranked_registry sorts them; a registry with an id twice takes the join).
    """
    if not ascends_strictly(registry_ids):
        return None
    registered = registry_ids.to_numpy()
    wanted = player_ids.to_numpy()
    rows = np.searchsorted(registered, wanted)
    found = rows < len(registered)
    found[found] = registered[rows[found]] == wanted[found]
    return pl.Series(rows, dtype=pl.Int64).set(pl.Series(~found), None)


# The players a list ranks: rated, without the inactive flag (FIDE's ranking leaves the inactive out).
RANKED = pl.col("rating").is_not_null() & ~pl.col("inactive").fill_null(False)
# Each ranked player's place by rating, equal ratings sharing the higher place (1, 2, 2, 4); the page's script
# ranks the same way among the players its filters keep.
RANK = pl.when(RANKED).then(pl.col("rating")).rank("min", descending=True)
# The rating list's columns a published list shows (the registry gives the others, or they are made from these).
_FROM_THE_LIST = {"player_id", *polars_schema(PublishedList)} - {"rank", "previous_rating"}
# What publishing reads of a stored rating list (not its pending games, most of the cost of reading it whole).
PUBLISHED_FROM_THE_LIST = tuple(column for column in polars_schema(RatingList) if column in _FROM_THE_LIST)
# Points a list adds for corrections of an earlier list's games (recalculation forward): part of the change it
# publishes, not a published column.
CORRECTION = "correction"


def read_published_list(read: Callable[..., pl.DataFrame]) -> pl.DataFrame:
    """What publishing reads of a stored list through `read(columns=...)`: PUBLISHED_FROM_THE_LIST and the corrections
    it carries (none on a list stored before lists had the column).
    """
    try:
        return read(columns=[*PUBLISHED_FROM_THE_LIST, CORRECTION])
    except pl.exceptions.ColumnNotFoundError:
        return read(columns=list(PUBLISHED_FROM_THE_LIST))


def _published_columns(joined: pl.DataFrame) -> pl.DataFrame:
    """The PublishedList columns of a rating list joined with the registry: the id, the registry's birth year else the
    list's, the rank (RANK), the change (with the correction the list carries) and the previous rating (rating -
    change), each column in its type.
    """
    change = pl.col("change") + pl.col(CORRECTION).fill_null(0) if CORRECTION in joined.columns else pl.col("change")
    sources = {
        "id": pl.col("player_id"),
        "birth_year": pl.coalesce("registry_birth_year", "birth_year"),
        "rank": RANK,
        "change": change,
        "previous_rating": pl.when(pl.col("change").is_not_null() & ~pl.col("newly_rated").fill_null(False)).then(
            pl.col("rating") - change
        ),
    }
    return joined.select(
        sources.get(name, pl.col(name)).cast(dtype).alias(name) for name, dtype in polars_schema(PublishedList).items()
    )


def _reading_order(player_ids: pl.Series, ratings: pl.Series, name_places: pl.Series) -> pl.Series | None:
    """The rows in reading order, rating descending (unrated last), then name, then id (unnamed last), given each
    row's NAME_ORDER; None when two rows have the same (a player listed twice), which the join orders instead.

    The named rows are put in name order by placing each at its NAME_ORDER, the unnamed follow by id, then a stable
    sort on the rating alone (a radix sort of 16-bit keys): no comparison of names, nor of 64-bit keys.
    """
    named = name_places.is_not_null().to_numpy()
    places = name_places.to_numpy()[named].astype(np.int64)
    slots = np.full(int(places.max(initial=-1)) + 1, -1, dtype=np.int64)
    slots[places] = np.flatnonzero(named)
    placed = slots[slots >= 0]
    if len(placed) < len(places):
        return None
    unnamed = np.flatnonzero(~named)
    unnamed = unnamed[np.argsort(player_ids.to_numpy()[unnamed], kind="stable")]
    by_name = np.concatenate([placed, unnamed])
    highest, lowest = ratings.max(), ratings.min()
    if not isinstance(highest, int) or not isinstance(lowest, int):  # nobody rated: the name order stands
        return pl.Series(by_name, dtype=pl.Int64)
    # Distance below the highest rating, the unrated one further: 16 bits for any real range of ratings.
    below = highest - ratings.cast(pl.Int64).fill_null(lowest - 1).to_numpy()[by_name]
    key = below.astype(np.uint16) if highest - lowest < np.iinfo(np.uint16).max else below
    return pl.Series(by_name[np.argsort(key, kind="stable")], dtype=pl.Int64)


class PublishedMonth(NamedTuple):
    """A month's published list made ready for its files (published_month): the PublishedList rows, the FIDE TXT's
    identity text of each (None: made by the TXT's writer), and the ids of the players whose text a spreadsheet
    could evaluate (None: unknown, searched by the CSV's writer).
    """

    scenario: str
    month: str
    rows: pl.DataFrame
    identity: pl.Series | None
    suspects: pl.Series | None


def published_month(
    store: ObjectStore,
    scenario_key: str,
    month: str,
    rating_list: pl.DataFrame,
    registry: pl.DataFrame,
    list_type: str | None = "standard",
) -> PublishedMonth:
    """The scenario's list of `month` (`rating_list`: at least PUBLISHED_FROM_THE_LIST) named by `registry`
    (published_registries' of the month: only the players registered by `month` name the list), with the previous
    ratings and changes the list before says (with_previous_list_ratings; `list_type`: which seed list is the list
    before the chain's first month, None for a scenario with a seed file of its own).
    """
    registered = registry.filter(pl.col("registered") <= month)
    rows, identity = _published(rating_list, registered)
    rows = with_previous_list_ratings(rows, store, scenario_key, month, list_type)
    # The list's text is its registry's cells, printable already (registry_cells); ranked_registry marked the few
    # players a spreadsheet would evaluate. The CSV and the page need not search 700,000 names again.
    suspects = (
        registered.filter(SPREADSHEET_FORMULA)["player_id"] if SPREADSHEET_FORMULA in registered.columns else None
    )
    return PublishedMonth(scenario_key, month, rows, identity, suspects)


def write_published_file(month: PublishedMonth, file_format: str, handle: BinaryIO) -> None:
    """One of PUBLISHED_FORMATS of the month's published list into `handle`: what publishing stores as
    lists/<scenario>/<YYYY-MM>.<format> and `ratings list --format` prints, byte for byte.
    """
    rows = month.rows
    if file_format == "csv":
        write_published_csv(rows, handle, suspects=month.suspects)
    elif file_format == "txt":
        write_published_txt(rows, month.month, handle, month.identity)
    elif file_format == "html":
        # Its text is the registry's cells, made printable by _published (ranked_registry or registry_cells).
        write_published_html(rows, month.scenario, month.month, handle, checked=True)
    elif file_format == "combined":
        write_published_combined(rows, handle, month.identity)
    else:
        raise ValueError(f"unknown list format {file_format!r}: one of {', '.join(PUBLISHED_FORMATS)}")


# The files publishing writes for a month, and every format `ratings list` makes.
STORED_FORMATS = ("csv", "txt", "html")
PUBLISHED_FORMATS = (*STORED_FORMATS, "combined")


def write_published_month(
    store: ObjectStore,
    scenario: Scenario,
    month: str,
    rating_list: pl.DataFrame,
    registry: pl.DataFrame,
    check: Callable[[type[pa.DataFrameModel], pl.DataFrame, str], object],
) -> Mapping[str, int | str]:
    """The month's published list (published_month) as CSV, TXT and HTML under lists/<scenario>/, after
    check(PublishedList, list, what); returns its figures (players, rated, unregistered) and the three files'
    locations.
    """
    seeded_from = scenario.list_type() if scenario.seed_list is None else None
    made = published_month(store, scenario.name, month, rating_list, registry, seeded_from)
    published = made.rows
    check(PublishedList, published, f"{scenario.name}/published_list {month}")

    def render_and_write(extension: str) -> str:
        target = published_list_key(scenario.name, month, extension)
        store.write_with(lambda handle: write_published_file(made, extension, handle), target)
        return redact_url(store.url(target))

    # The three files side by side: Polars releases the GIL, so a second core does not sit idle. Each
    # file goes to the store as it is made, never held whole (a 900,000-player TXT is 100 MB).
    with ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="publish") as pool:
        written = {extension: pool.submit(render_and_write, extension) for extension in STORED_FORMATS}
        paths = {f"{extension}_path": future.result() for extension, future in written.items()}
    rated = published.filter(pl.col("rating").is_not_null()).height
    left_out = txt_left_out(published)
    return {
        "players": published.height,
        "rated_players": rated,
        "unregistered_players": published.filter(pl.col("name").is_null()).height,
        "txt_players": rated - left_out,
        TXT_LEFT_OUT: left_out,
        **paths,
    }


def stored_published_month(
    store: ObjectStore, scenario_key: str, month: str, list_type: str | None = "standard"
) -> PublishedMonth:
    """published_month of the scenario's stored list of `month`, named as publishing names it: what `ratings list`
    prints. pipeline.store.object_store raises FileNotFoundError where the month's list is not stored.
    """
    key = table_key([scenario_key, "rating_list"], month)
    if not store.exists(key):
        raise FileNotFoundError(f"no stored {scenario_key} list of {month} ({redact_url(store.url(key))})")
    try:
        listed = read_published_list(partial(store.read_parquet, key))
    except (pl.exceptions.PolarsError, OSError) as error:  # Polars' message names no file
        if store_failed(error):
            raise
        raise unreadable_table(store, key, error) from None
    registry = published_registries(store, month)(month)
    return published_month(store, scenario_key, month, listed, registry, list_type)


def stored_combined_month(
    store: ObjectStore, scenario_key: str, month: str, partners: Mapping[str, str]
) -> PublishedMonth:
    """stored_published_month of the standard list, with the rapid and blitz ratings of `partners` (list type ->
    scenario: the chains its standard list seeds, Scenario.standard_chain) of the same month beside it, for FIDE's
    combined layout: every player of any of the three lists, a player of the rapid or blitz list only unrated in
    the standard columns. The rows keep the standard list's order, the players it does not hold placed among its
    unrated by name and id. A partner without a stored list of the month leaves its columns blank.
    """
    standard = stored_published_month(store, scenario_key, month)
    registry = None
    rows = standard.rows if standard.identity is None else standard.rows.with_columns(standard.identity)
    extra_ratings = []
    for kind, partner in partners.items():
        key = table_key([partner, "rating_list"], month)
        if not store.exists(key):
            continue
        if registry is None:
            registry = published_registries(store, month)(month)
        listed = read_published_list(partial(store.read_parquet, key))
        made = published_month(store, partner, month, listed, registry, kind)
        partner_rows = made.rows if made.identity is None else made.rows.with_columns(made.identity)
        if FIDE_IDENTITY in rows.columns and FIDE_IDENTITY not in partner_rows.columns:
            partner_rows = partner_rows.with_columns(pl.lit(None, dtype=pl.String).alias(FIDE_IDENTITY))
        extra_ratings.append(
            partner_rows.select(
                "id",
                pl.col("rating").alias(f"{kind}_rating"),
                pl.col("games").alias(f"{kind}_games"),
                pl.col("k").alias(f"{kind}_k"),
            )
        )
        only_here = partner_rows.join(rows.select("id"), on="id", how="anti").with_columns(
            *(
                pl.lit(None, dtype=rows.schema[c]).alias(c)
                for c in ("rating", "games", "k", "change", "rank", "previous_rating")
                if c in rows.columns
            ),
            pl.lit(False).alias("inactive"),
        )
        if only_here.height:
            rated = rows.filter(pl.col("rating").is_not_null())
            unrated = pl.concat([rows.filter(pl.col("rating").is_null()), only_here.select(rows.columns)])
            rows = pl.concat([rated, unrated.sort("name", "id", nulls_last=True)])
    for ratings in extra_ratings:
        rows = rows.join(ratings, on="id", how="left", maintain_order="left")
    identity = rows[FIDE_IDENTITY] if FIDE_IDENTITY in rows.columns else None
    return PublishedMonth(scenario_key, month, rows.drop(FIDE_IDENTITY, strict=False), identity, standard.suspects)


def previous_list_ratings(
    store: ObjectStore, scenario_key: str, month: str, list_type: str | None = "standard"
) -> pl.DataFrame | None:
    """The id and `_before` (the rating, null: unrated) of every player rated on the list before the scenario's list of
    `month`: its stored list of the month before, else, where it stores no list before `month` (its chain's first
    month), the landing zone's seed list of `list_type` in force then (None: the scenario has a seed file of its own,
    not read here). None where neither is there.
    """
    key = table_key([scenario_key, "rating_list"], add_months(month, -1))
    if store.exists(key):
        before = store.scan_parquet(key).select("player_id", "rating").collect()
    elif any(stored < month for stored in stored_table_months(store, [scenario_key, "rating_list"])):
        return None
    elif list_type is None:
        return None
    else:
        from pipeline.ingest.registry import read_seed_list

        seed = read_seed_list(store, month, list_type)
        if seed is None:
            return None
        before = seed.select("player_id", "rating")
    return before.filter(pl.col("rating").is_not_null()).select(
        pl.col("player_id").cast(pl.Int64).alias("id"), pl.col("rating").cast(pl.Int32).alias("_before")
    )


def with_previous_list_ratings(
    published: pl.DataFrame, store: ObjectStore, scenario_key: str, month: str, list_type: str | None = "standard"
) -> pl.DataFrame:
    """`published` with previous_rating and change as the list before says (previous_list_ratings): a player unrated
    there (a rapid or blitz player seeded from the standard list, a player a later FIDE list adds) has neither, though
    the engine's change runs from the seed; a delisted player (unrated now, so rating - change cannot give it) has the
    rating of the list before, and no change (unrated after). Unchanged where the list before is not at hand.
    """
    before = previous_list_ratings(store, scenario_key, month, list_type)
    if before is None:
        return published
    # A hash set of ids, not a join of the two lists: a tenth of the time at 700,000 players.
    marked = published.with_columns(pl.col("id").is_in(before["id"].implode()).alias("_before"))
    rated_before = pl.col("_before")
    marked = marked.with_columns(
        pl.when(rated_before).then(pl.col("previous_rating")).alias("previous_rating"),
        pl.when(rated_before & pl.col("rating").is_not_null()).then(pl.col("change")).alias("change"),
    )
    delisted = marked.filter(rated_before & pl.col("previous_rating").is_null())["id"]
    if delisted.is_empty():
        return marked.drop("_before")
    was = before.filter(pl.col("id").is_in(delisted.implode()))
    return (
        marked.drop("_before")
        .join(was, on="id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("previous_rating", "_before").alias("previous_rating"))
        .drop("_before")
    )


# write_published_month's figure: the rated players the FIDE TXT leaves out, and why (TXT_LEFT_OUT_REASON).
TXT_LEFT_OUT = "txt_left_out"
TXT_LEFT_OUT_REASON = "no FIDE id (identified by name only: a local id, 10^15 and above)"


def txt_left_out(published: pl.DataFrame) -> int:
    """The rated players of a published list (PublishedList rows) the FIDE TXT leaves out: those without a FIDE id
    (local ids, TXT_LEFT_OUT_REASON). They are in the CSV and on the page; the unrated are in no FIDE TXT at all.
    """
    return published.filter(pl.col("rating").is_not_null() & (pl.col("id") >= LOCAL_ID_BASE)).height


def stored_txt_left_out(store: ObjectStore, scenario_key: str, month: str) -> int:
    """txt_left_out of the month's published TXT, counted on the scenario's stored rating list (only its id and
    rating columns are read): what a run's summary says of each list.
    """
    listed = store.scan_parquet(table_key([scenario_key, "rating_list"], month))
    rated = pl.col("rating").is_not_null() & (pl.col("player_id") >= LOCAL_ID_BASE)
    return int(listed.select(rated.sum()).collect().item())
