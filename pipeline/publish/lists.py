"""The published rating list of a month: the list with the registry's names, as CSV, FIDE TXT and a searchable HTML
page.
"""

from __future__ import annotations

import calendar
import hashlib
import io
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from html import escape
from typing import BinaryIO, NamedTuple

import numpy as np
import pandera.polars as pa
import polars as pl

from pipeline.code_versions import code_version
from pipeline.formats.fide_list import FIDE_IDENTITY, fide_identity_text, write_fide_combined_list, write_fide_list
from pipeline.ingest.registry import players_in_force
from pipeline.months import add_months, parse_month
from pipeline.scenarios.amendments import LISTS_PREFIX, list_file_months
from pipeline.scenarios.model import Scenario
from pipeline.store.kept import KeptRows
from pipeline.store.monthly import stored_table_months, table_key
from pipeline.store.object_store import ObjectStore, redact_url
from pipeline.text import holds_control, printable, published_text_columns, spreadsheet_formulas
from pipeline.validate.identity import LOCAL_ID_BASE, dump_name_versions, named_as_of
from schemas.conformance import ascends_strictly
from schemas.published_list import PublishedList
from schemas.rating_list import RatingList
from schemas.util import conform, polars_schema

PUBLISHED_COLUMNS = list(polars_schema(PublishedList))
# Text columns the page sends once as a sorted dictionary plus one small index per row.
DICTIONARY_COLUMNS = ("federation", "title", "sex")
FLAG_COLUMNS = ("inactive", "delisted", "newly_rated")
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


def list_command(store_url: str, scenario_key: str, month: str, file_format: str = "html") -> str:
    """The command that makes a month's readable list on demand (`ratings list`)."""
    return f"ratings list --store {store_url} --scenario {scenario_key} --month {month} --format {file_format}"


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
    ranked = registry is not None and all(column in registry.columns for column in _RANKED)
    if registry is not None and registry.height:
        # An empty registry cell (e.g. a FIDE list without a federation) is unknown, not a value.
        cells = registry.select(REGISTRY_CELLS) if ranked else _registry_cells(registry)
        birth_year = pl.col("birth_year").cast(pl.Int32).alias("registry_birth_year")
        known = registry.select("player_id", birth_year, *(_RANKED if ranked else ())).with_columns(cells.get_columns())
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


def ranked_registry(players: pl.DataFrame) -> pl.DataFrame:
    """Players rows made ready for many months' lists (published_list): the registry's text cells as published
    (_registry_cells); NAME_ORDER, each named row's place in (name, id) order (null without a name); FIDE_IDENTITY,
    the text the FIDE TXT writes for who the player is (fide_identity_text); and SPREADSHEET_FORMULA, whether a
    spreadsheet would evaluate one of the row's cells (the CSV neutralises those, pipeline.text.published_text).
    """
    in_id_order = _prepared_rows(players)
    named = in_id_order["name"].is_not_null()
    rows = named.arg_true().to_numpy()
    # (name, id) order: a stable sort by name of rows in id order (a second key of 900,000 ids costs a fifth more).
    by_name = in_id_order.filter(named).select(pl.arg_sort_by("name", maintain_order=True))
    places = np.zeros(in_id_order.height, dtype=np.uint32)
    places[rows[by_name.to_series().to_numpy()]] = np.arange(len(rows), dtype=np.uint32)
    return in_id_order.with_columns(pl.when(named).then(pl.Series(places)).alias(NAME_ORDER))


def _prepared_rows(players: pl.DataFrame) -> pl.DataFrame:
    """ranked_registry's rows but NAME_ORDER, in id order: what each row needs whatever other rows it is listed with."""
    cleaned = players.with_columns(_registry_cells(players).get_columns())
    # Searched in the registry's own order, before sorting scatters its text in memory (three times slower).
    cleaned = cleaned.with_columns(_spreadsheet_formulas(cleaned))
    # In id order (an id's registrations keep theirs), so that each month finds its players by position.
    in_id_order = cleaned.sort("player_id", maintain_order=True)
    return in_id_order.with_columns(fide_identity_text(in_id_order))


def _name_keys(ranked: pl.DataFrame) -> pl.Series:
    """Each named row's (name, id) as one text that sorts as the pair does: the name (printable, so without the NUL
    that follows it), NUL, the id in 20 digits (ids are positive).
    """
    return ranked.select(
        pl.concat_str(pl.col("name"), pl.lit("\x00"), pl.col("player_id").cast(pl.Utf8).str.zfill(20))
    ).to_series()


def _sorted_name_keys(ranked: pl.DataFrame) -> pl.Series:
    """The _name_keys of a ranked registry's named rows, in NAME_ORDER (what _with_more_players places names among)."""
    named = ranked.filter(pl.col(NAME_ORDER).is_not_null())
    return _name_keys(named).gather(named[NAME_ORDER].arg_sort())


def _with_more_players(registry: pl.DataFrame, sorted_keys: pl.Series, more: pl.DataFrame) -> pl.DataFrame:
    """ranked_registry of `registry`'s players and `more`'s (ids it does not hold), from `registry` ranked already
    (its named rows' _name_keys in NAME_ORDER: `sorted_keys`) and `more` prepared (_prepared_rows), without sorting
    the registry's names again: each of `more`'s names is placed among them by binary search.
    """
    named = more.filter(pl.col("name").is_not_null())
    keys = _name_keys(named)
    order = keys.arg_sort()
    # How many registry names sort before each added name, the added names in their own order.
    before = sorted_keys.search_sorted(keys.gather(order), side="left").to_numpy().astype(np.int64)
    added_places = pl.Series(np.empty(len(order), dtype=np.uint32))
    added_places = added_places.scatter(order, before + np.arange(len(order)))
    # The registry's places are 0, 1, ... among its named rows (ranked_registry): each moves past the added names
    # that sort before it.
    places = registry[NAME_ORDER].fill_null(0).to_numpy().astype(np.int64)
    places += np.searchsorted(before, places, side="right")
    registry_places = pl.Series(places, dtype=pl.UInt32).set(registry[NAME_ORDER].is_null(), None)
    combined = pl.concat(
        [
            registry.with_columns(registry_places.alias(NAME_ORDER)),
            named.with_columns(added_places.alias(NAME_ORDER)),
            more.filter(pl.col("name").is_null()).with_columns(pl.lit(None, dtype=pl.UInt32).alias(NAME_ORDER)),
        ],
        how="diagonal_relaxed",
    )
    return combined.sort("player_id", maintain_order=True)


def _registry_cells(registry: pl.DataFrame) -> pl.DataFrame:
    """The registry's text cells (REGISTRY_CELLS) as every published file shows them: printable (no control
    character or bidi mark: pipeline.text), without surrounding blanks, null when nothing is left. Each column is
    searched for controls once; only one that holds some is rewritten.
    """
    cells = registry.select(REGISTRY_CELLS)
    cells = cells.with_columns(printable(pl.col(c)) for c in REGISTRY_CELLS if holds_control(cells[c]))
    return cells.select(_blank_is_null(pl.col(c)).alias(c) for c in REGISTRY_CELLS)


def _blank_is_null(text: pl.Expr) -> pl.Expr:
    """The text without surrounding blanks, null when nothing is left."""
    return pl.when(text.str.strip_chars() != "").then(text.str.strip_chars())


def _spreadsheet_formulas(registry: pl.DataFrame) -> pl.Series:
    """SPREADSHEET_FORMULA of each registry row (its cells printable already): whether the CSV must neutralise one
    of its cells. Searched once a run, so that a month's CSV searches only the marked players' text.
    """
    marks = [spreadsheet_formulas(registry[c]) for c in REGISTRY_CELLS]
    return pl.select(pl.any_horizontal(marks).alias(SPREADSHEET_FORMULA)).to_series()


# The registry's cells that name a player; each name's place in the registry's (name, id) order and the TXT's
# text of who each player is (ranked_registry).
REGISTRY_CELLS = ("name", "federation", "title", "sex")
NAME_ORDER = "name_order"
_RANKED = (NAME_ORDER, FIDE_IDENTITY)
# ranked_registry's mark of a row with a cell a spreadsheet would evaluate.
SPREADSHEET_FORMULA = "spreadsheet_formula"


def published_registries(store: ObjectStore, last_month: str, keep: bool = False) -> Callable[[str], pl.DataFrame]:
    """Month (up to `last_month`) -> the Players rows naming that month's list, ranked (ranked_registry): the registry
    in force in the month (every raw/players/<M>/ folder applies from its month), then the players it does not hold
    as the dumps of that month and before name them (pipeline.validate.identity.dump_name_versions of every stored
    identity report).

    A month's list is named by what was known then, whatever months a run publishes and whatever was stored after:
    a month published alone (`ratings list`) writes the bytes a range run wrote. The registry is read once and
    ranked once per folder (from the one a run kept, KEPT_RANKED_FOLDER, where it holds the same rows); the dumps'
    names are prepared once and placed among the registry's names each month. With `keep` (publishing in a run), the
    registry of `last_month` ranked is kept for the next run.
    """
    identities = [
        _identity_columns(store.scan_parquet(table_key(["identity"], month)))
        for month in stored_table_months(store, ["identity"])
        if month <= last_month
    ]
    versions = _prepared_rows(dump_name_versions(pl.concat(identities, how="diagonal_relaxed"))) if identities else None
    if versions is not None:  # in version order again: _prepared_rows keeps each id's versions in order
        versions = versions.sort("player_id", "registered", maintain_order=True)

    # The ranked rows the next folder's registry is ranked from: the store's kept ones (read when first needed), then
    # the last folder's; and the rows ranked anew since the store's (every row where none is, or it was ranked whole).
    kept: pl.DataFrame | None = None
    kept_read, since_kept = False, 0

    def ranked(registry: pl.DataFrame) -> tuple[pl.DataFrame, list[pl.Series], pl.Series, bool]:
        nonlocal kept, kept_read, since_kept
        if not kept_read:
            kept, kept_read = _kept_ranked(store), True
        frame, digests, fresh = _ranked_from(kept, registry)
        since_kept = frame.height if kept is None or fresh == frame.height else since_kept + fresh
        kept = frame.with_columns(digests)
        # Kept again once a twentieth of the rows are ranked anew (a few months of a FIDE list's newcomers): writing
        # it costs more than placing them. The folder's names' keys (the empty list, filled once by month_registry)
        # are made when a month's dumps name players the registry does not.
        return frame, [], digests, since_kept * 20 > frame.height

    registries = players_in_force(store, last_month, ranked)

    def month_registry(month: str) -> pl.DataFrame:
        registry, sorted_keys, digests, stale = registries(month)
        if keep and stale and month == last_month:
            _keep_ranked(store, registry, digests, month)
        if versions is None:
            return registry
        named = named_as_of(versions, month)
        named = named.filter(~pl.col("player_id").is_in(registry["player_id"].implode()))
        if not named.height:
            return registry
        if not sorted_keys:
            sorted_keys.append(_sorted_name_keys(registry))
        return _with_more_players(registry, sorted_keys[0], named)

    return month_registry


#: What publishing keeps for the next run (derived: deleting the folder is safe): the registry in force of the last
#: month a run published, ranked (ranked_registry), with a digest of each Players row it was ranked from. Ranking the
#: fide-scale registry whole is 1.5 CPU-s (900,000 names sorted, the TXT's identity text of each), and a month's
#: registry is last month's plus a few thousand players: they alone are ranked and placed among the kept names.
KEPT_RANKED_FOLDER = "kept/publish"
# LZ4: read back in 0.05 CPU-s (zstd: 0.2; Arrow IPC, which Polars converts on reading: 0.16-0.18).
_KEPT_RANKED = KeptRows(KEPT_RANKED_FOLDER, "registry.json", "ranked-", compression="lz4")
_MADE_FROM = "made_from"


def _ranked_code() -> str:
    """What the ranked rows depend on besides the registry: the publish stage's code and Polars (its row digests)."""
    return code_version("publish", pl.__version__)


def _row_digests(registry: pl.DataFrame) -> pl.Series:
    """A digest of each registry row (Players columns), to tell a kept row ranked from the same row."""
    return registry.hash_rows(seed=1).alias(_MADE_FROM)


def _ranked_from(kept: pl.DataFrame | None, registry: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, int]:
    """ranked_registry(registry), the digest of the row each of its rows was ranked from (_row_digests) and how many
    were ranked anew: from `kept` (ranked rows with their digests) where each of its rows is one of the registry's
    with the same digest, only the registry's other players ranked and placed among its names (_with_more_players);
    else ranked whole.
    """
    digests = registry.select("player_id", _row_digests(registry)).with_row_index("row")
    digests = digests.sort("player_id", maintain_order=True)
    ids, made_from = digests["player_id"].to_numpy(), digests[_MADE_FROM].to_numpy()
    if kept is not None and kept.height <= registry.height and ascends_strictly(digests["player_id"]):
        # Each kept row's player in the registry (ids ascend in both), with the same digest.
        kept_ids = kept["player_id"].to_numpy()
        rows = np.minimum(np.searchsorted(ids, kept_ids), len(ids) - 1)
        if bool(np.all(ids[rows] == kept_ids) & np.all(made_from[rows] == kept[_MADE_FROM].to_numpy())):
            frame = kept.drop(_MADE_FROM)
            added = np.ones(len(ids), dtype=bool)
            added[rows] = False
            fresh = int(added.sum())
            if fresh:  # the players added, in the registry's order (ranked_registry's, for an id's rows)
                more = registry[np.sort(digests["row"].to_numpy()[added])]
                frame = _with_more_players(frame, _sorted_name_keys(frame), _prepared_rows(more))
            return frame, digests[_MADE_FROM], fresh
    return ranked_registry(registry), digests[_MADE_FROM], registry.height


def _kept_ranked(store: ObjectStore) -> pl.DataFrame | None:
    """The kept ranked rows with their digests (KEPT_RANKED_FOLDER), None when none are kept by this code or they
    cannot be read (the registry is then ranked whole).
    """
    kept = _KEPT_RANKED.read(store, _ranked_code())
    return None if kept is None else kept[0]


def _keep_ranked(store: ObjectStore, ranked: pl.DataFrame, digests: pl.Series, month: str) -> None:
    """Keep `ranked` (in id order, the registry of `month`) with the digests of its rows (KeptRows.keep), unless kept
    already or a later month's is (a month published again keeps what the next month continues from).
    """
    code = _ranked_code()
    name = f"ranked-{code}-{hashlib.sha256(digests.to_numpy().tobytes()).hexdigest()[:24]}.parquet"
    described = _KEPT_RANKED.described(store, code)
    if described is not None and (described.get("rows") == name or described.get("month", "") > month):
        return
    _KEPT_RANKED.keep(store, {"code": code, "month": month}, name, ranked.with_columns(digests))


def _identity_columns(identity: pl.LazyFrame) -> pl.DataFrame:
    """The identity report's columns players_named_in_dumps reads (a report stored before federation and title were
    added lacks those two: players_named_in_dumps leaves them unknown).
    """
    columns = ["month", "status", "name", "player_id", "records", "federation", "title"]
    present = identity.collect_schema().names()
    return identity.select([name for name in columns if name in present]).collect()


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
    store: ObjectStore, scenario_key: str, month: str, rating_list: pl.DataFrame, registry: pl.DataFrame
) -> PublishedMonth:
    """The scenario's list of `month` (`rating_list`: at least PUBLISHED_FROM_THE_LIST) named by `registry`
    (published_registries' of the month: only the players registered by `month` name the list), with the previous
    rating of the players delisted this month read from the stored list of the month before.
    """
    registered = registry.filter(pl.col("registered") <= month)
    rows, identity = _published(rating_list, registered)
    rows = with_delisted_previous_ratings(rows, store, scenario_key, month)
    # The list's text is its registry's cells, printable already (_registry_cells); ranked_registry marked the few
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
        # Its text is the registry's cells, made printable by _published (ranked_registry or _registry_cells).
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
    made = published_month(store, scenario.name, month, rating_list, registry)
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


def stored_published_month(store: ObjectStore, scenario_key: str, month: str) -> PublishedMonth:
    """published_month of the scenario's stored list of `month`, named as publishing names it: what `ratings list`
    prints. pipeline.store.object_store raises FileNotFoundError where the month's list is not stored.
    """
    key = table_key([scenario_key, "rating_list"], month)
    if not store.exists(key):
        raise FileNotFoundError(f"no stored {scenario_key} list of {month} ({redact_url(store.url(key))})")
    listed = read_published_list(partial(store.read_parquet, key))
    return published_month(store, scenario_key, month, listed, published_registries(store, month)(month))


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
        made = published_month(store, partner, month, listed, registry)
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


def with_delisted_previous_ratings(
    published: pl.DataFrame, store: ObjectStore, scenario_key: str, month: str
) -> pl.DataFrame:
    """`published` with the previous rating of the players delisted this month (unrated now, so rating - change
    cannot give it) read from the scenario's stored list of the month before, where it is stored.
    """
    delisted = published.filter(pl.col("delisted") & pl.col("previous_rating").is_null())["id"]
    key = table_key([scenario_key, "rating_list"], add_months(month, -1))
    if delisted.is_empty() or not store.exists(key):
        return published
    before = (
        store.scan_parquet(key)
        .filter(pl.col("player_id").is_in(delisted.implode()))
        .select(pl.col("player_id").cast(pl.Int64).alias("id"), pl.col("rating").cast(pl.Int32).alias("_before"))
        .collect()
    )
    return (
        published.join(before, on="id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("previous_rating", "_before").alias("previous_rating"))
        .drop("_before")
    )


def published_csv(published: pl.DataFrame) -> bytes:
    """write_published_csv's file as bytes."""
    buffer = io.BytesIO()
    write_published_csv(published, buffer)
    return buffer.getvalue()


def write_published_csv(published: pl.DataFrame, handle: BinaryIO, *, suspects: pl.Series | None = None) -> None:
    """The list as UTF-8 CSV into `handle`, header first, nulls as empty cells, booleans as true/false.

    Its text cells are inert (pipeline.text.published_text): no control character or bidi mark, and a single quote
    before a cell a spreadsheet would evaluate (OWASP's "CSV Injection"); numbers stay numbers. `suspects`: the ids
    of the only players whose text may need it, where the caller knows them (write_published_month, its text
    printable already): only their rows are searched, not every row.
    """
    published = conform(published, PublishedList)
    if suspects is None:
        published = published_text_columns(published, spreadsheet=True)
    elif len(suspects):
        rows = published["id"].is_in(suspects.implode()).arg_true()
        if len(rows):
            made = published_text_columns(published[rows], spreadsheet=True)
            # scatter into a copy: the frame is the TXT's and the page's too, written beside this file.
            published = published.with_columns(
                published[c].clone().scatter(rows, made[c]) for c in made.columns if made[c].dtype == pl.String
            )
    published.write_csv(handle, null_value="")


def published_txt(published: pl.DataFrame, month: str) -> str:
    """The rated players with a FIDE id in FIDE's per-type TXT layout, headed with the date of FIDE's list (M -> M+1).

    Players known by name only (local ids, pipeline.validate.identity.LOCAL_ID_BASE and above) have no FIDE id
    to write: they are in the CSV and the HTML page, not in FIDE's format.
    """
    return published_txt_bytes(published, month).decode("utf-8")


def published_txt_bytes(published: pl.DataFrame, month: str) -> bytes:
    """published_txt's file, as UTF-8 bytes."""
    buffer = io.BytesIO()
    write_published_txt(published, month, buffer)
    return buffer.getvalue()


def write_published_txt(
    published: pl.DataFrame, month: str, handle: BinaryIO, identity: pl.Series | None = None
) -> None:
    """published_txt's file into `handle` (pipeline.formats.fide_list, written without a Python string of it).

    `identity`: the TXT's text of who each player is, where known beforehand (ranked_registry's FIDE_IDENTITY).
    """
    players = published if identity is None else published.with_columns(identity.alias(FIDE_IDENTITY))
    fide_ids = players.filter(pl.col("id") < LOCAL_ID_BASE).rename({"id": "player_id"})
    write_fide_list(fide_ids, fide_list_month(month), handle)


def write_published_combined(published: pl.DataFrame, handle: BinaryIO, identity: pl.Series | None = None) -> None:
    """Every player of the list with a FIDE id in FIDE's combined layout (players_list_foa.txt: one line a player, the
    standard, rapid and blitz ratings side by side; pipeline.formats.fide_list.write_fide_combined_list). FIDE's
    combined file holds its registered players whether rated or not, so the unrated are in it too. The rapid and
    blitz fields are the rows' rapid_* and blitz_* columns where they carry them (stored_combined_month), else blank.
    """
    players = published if identity is None else published.with_columns(identity.alias(FIDE_IDENTITY))
    write_fide_combined_list(players.filter(pl.col("id") < LOCAL_ID_BASE).rename({"id": "player_id"}), handle)


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


def fide_list_month(month: str) -> str:
    """Period M's list is FIDE's list of the 1st of M+1 (README 'Months are rating periods')."""
    return add_months(month, 1)


def month_label(month: str) -> str:
    year, number = parse_month(month)
    return f"{calendar.month_name[number]} {year}"


def _script_json(value: object | str) -> str:
    """JSON that is safe inside <script>: no '<', '>' or '&' can close the element or open a comment."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script_json_bytes(data: bytes) -> bytes:
    """_script_json of UTF-8 JSON bytes (the bytes of '<', '>' and '&' appear in UTF-8 only as those characters)."""
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _dictionaries(published: pl.DataFrame) -> dict[str, list[str]]:
    """The sorted values of each dictionary column: the page sends each row's index into them."""
    return {column: sorted(published[column].drop_nulls().unique().to_list()) for column in DICTIONARY_COLUMNS}


def _write_columnar_json(published: pl.DataFrame, dictionaries: dict[str, list[str]], handle: BinaryIO) -> None:
    """One JSON object of column arrays into `handle` (text columns with few values as indexes into `dictionaries`),
    safe inside <script> (_script_json_bytes).

    A one-row frame of list columns serialises as [{"id":[...],"name":[...],...}]: one vectorised pass,
    no Python per row. It is made a column at a time, so only the largest column's text is held, not
    the whole object (44 MB for a 737,000-player list).
    """
    encoded = published.select(
        "id",
        "name",
        *[
            pl.col(c).cast(pl.Enum(values)).to_physical().cast(pl.Int32).alias(c)  # the value's place in `values`
            for c, values in dictionaries.items()
        ],
        "birth_year",
        "rating",
        "previous_rating",
        "change",
        "games",
        "k",
        *[pl.col(c).cast(pl.Int8) for c in FLAG_COLUMNS],
    )
    handle.write(b"{")
    for number, column in enumerate(encoded.columns):
        buffer = io.BytesIO()
        encoded.select(pl.col(column).implode()).write_json(buffer)  # [{"<column>":[...]}]
        if number:
            handle.write(b",")
        handle.write(memoryview(_script_json_bytes(buffer.getvalue()))[2:-2])
    handle.write(b"}")


def published_html(published: pl.DataFrame, scenario: str, month: str) -> str:
    """A self-contained page of the list: sortable, searchable, filtered by federation, sex, age band or birth years
    and activity, ranked among the players the filters keep, rendering only the rows in view (fast at 500k rows).

    Works from file:// (no network, no server); links to the CSV and TXT beside it, and each player to their card,
    PLAYER_CARD_LINK (the store's players/<id>.html, which `ratings player ID --html` writes: cards are made on
    request, not with the list). Names reach the page only as JSON data and are shown with textContent, so no name
    can inject markup or script.
    """
    return published_html_bytes(published, scenario, month).decode("utf-8")


def published_html_bytes(published: pl.DataFrame, scenario: str, month: str) -> bytes:
    """published_html's page as UTF-8 bytes."""
    buffer = io.BytesIO()
    write_published_html(published, scenario, month, buffer)
    return buffer.getvalue()


def write_published_html(
    published: pl.DataFrame, scenario: str, month: str, handle: BinaryIO, *, checked: bool = False
) -> None:
    """published_html's page into `handle`; the list's data is never held as a Python string, nor whole (a column at a
    time).

    Its text is printable (pipeline.text.published_text): a bidi override in a name would reorder what the reader
    sees, escaped or not. `checked`: the caller knows the text printable already (write_published_month).
    """
    published = conform(published, PublishedList)
    if not checked:
        published = published_text_columns(published)
    dictionaries = _dictionaries(published)
    rated = published.filter(pl.col("rating").is_not_null()).height
    fide_month = month_label(fide_list_month(month))
    title = f"Rating list {month}, scenario {scenario}"
    summary = (
        f"Scenario <b>{escape(scenario)}</b>, rating period <b>{escape(month_label(month))}</b> ({escape(month)}): "
        f"the list after the period's games, i.e. FIDE's list of <b>1 {escape(fide_month)}</b>. "
        f"<b>{published.height:,}</b> players, <b>{rated:,}</b> rated "
        f"({int(published['newly_rated'].sum()):,} newly rated, {int(published['inactive'].sum()):,} inactive, "
        f"{int(published['delisted'].sum()):,} delisted)."
    )
    files = " · ".join(
        f'<a href="{escape(month)}.{ext}">{label}</a>' for ext, label in (("csv", "CSV"), ("txt", "FIDE TXT"))
    )
    marker = "<!--data-->"  # no text of the page can spell it: its '<' would be escaped
    page = PAGE.format(
        title=escape(title),
        summary=summary,
        files=files,
        data=marker,
        dictionaries=_script_json(dictionaries),
        list_year=parse_month(fide_list_month(month))[0],
        u10=parse_month(fide_list_month(month))[0] - 10,
        card=escape(PLAYER_CARD_LINK),
    )
    before, after = page.split(marker)
    handle.write(before.encode("utf-8"))
    _write_columnar_json(published, dictionaries, handle)
    handle.write(after.encode("utf-8"))


# Where a list page (lists/<scenario>/<YYYY-MM>.html) links each player: the store's players/<id>.html
# (pipeline.reports.player_card.player_page_key), written by `ratings player ID --html`.
PLAYER_CARD_LINK = "../../players/<id>.html"

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; color: #222;
       margin: 16px 24px; }}
h1 {{ font-size: 20px; margin: 0 0 4px; }}
p.meta, p.note {{ color: #444; margin: 0 0 10px; }}
.bar {{ display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-bottom: 8px; }}
.bar label {{ white-space: nowrap; }}
.bar select, .bar input {{ font: inherit; padding: 2px 4px; }}
.bar input[type=number] {{ width: 5.5em; }}
#search {{ padding: 4px 8px; width: 320px; }}
#viewport {{ height: calc(100vh - 210px); min-height: 240px; overflow-y: auto; border: 1px solid #d0d0d0; }}
table {{ border-collapse: collapse; table-layout: fixed; width: 100%; min-width: 1180px; }}
th, td {{ padding: 0 8px; height: 24px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
         border-bottom: 1px solid #eee; }}
thead th {{ position: sticky; top: 0; background: #f2f2f2; font-weight: 600; text-align: left; cursor: pointer;
           user-select: none; border-bottom: 1px solid #ccc; z-index: 1; }}
thead th[aria-sort="ascending"]::after {{ content: " \\25B2"; }}
thead th[aria-sort="descending"]::after {{ content: " \\25BC"; }}
td.num, th.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
td a {{ color: #1f5fa8; text-decoration: none; }}
td a:hover {{ text-decoration: underline; }}
tr.pad td {{ padding: 0; border: 0; height: auto; }}
tbody tr:nth-child(even) td {{ background: #fafafa; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="meta">{summary}</p>
<div class="bar">
<input id="search" type="search" placeholder="Search a name or a FIDE id" aria-label="Search a name or a FIDE id"
       autocomplete="off">
<span id="status" role="status"></span>
<span>Download: {files}</span>
</div>
<div class="bar" id="filters">
<label>Federation <select id="f-federation"><option value="">all</option></select></label>
<label>Sex <select id="f-sex"><option value="">all</option></select></label>
<label>Age <select id="f-age"><option value="">all</option></select></label>
<label>Born from <input id="f-born-from" type="number" min="1800" max="2200" inputmode="numeric"></label>
<label>to <input id="f-born-to" type="number" min="1800" max="2200" inputmode="numeric"></label>
<label>Players <select id="f-activity">
<option value="">all</option><option value="active">rated, active</option>
<option value="inactive">rated, inactive</option><option value="unrated">unrated</option>
<option value="new">newly rated</option>
</select></label>
<button id="f-clear" type="button">Clear filters</button>
</div>
<p class="note">Rank: place by rating among the rated active players the filters keep (equal ratings share a place;
the search does not change it). Ages count from 1 January {list_year}, as FIDE's age categories do (U10: born {u10} or
later). A player's name or id opens their card, <code>{card}</code> in the store, which
<code>ratings player ID --html</code> writes (cards are made on request, not with the list).</p>
<div id="viewport"><table>
<colgroup id="cols"></colgroup>
<thead><tr id="head"></tr></thead>
<tbody id="rows"></tbody>
</table></div>
<script type="application/json" id="list-data">{data}</script>
<script type="application/json" id="list-dictionaries">{dictionaries}</script>
<script>
"use strict";
(function () {{
  const D = JSON.parse(document.getElementById("list-data").textContent);
  const DICT = JSON.parse(document.getElementById("list-dictionaries").textContent);
  const YEAR = {list_year};  // the year of the list's date: age categories count from its 1 January
  const N = D.id.length, ROW = 24, MAX_PX = 8000000;
  const yes = (v) => (v ? "yes" : "");
  const RANK = new Array(N).fill(null);  // place among the rated active players the filters keep
  const card = (id) => "../../players/" + id + ".html";
  // key, heading, width (px), numeric?, first sort direction (-1 = descending), display
  const COLUMNS = [
    ["rank", "Rank", 58, true, 1, String],
    ["id", "FIDE id", 100, true, 1, String],
    ["name", "Name", 250, false, 1, (v) => v],
    ["federation", "Fed", 52, false, 1, (v) => DICT.federation[v]],
    ["title", "Title", 52, false, 1, (v) => DICT.title[v]],
    ["sex", "Sex", 42, false, 1, (v) => DICT.sex[v]],
    ["birth_year", "Born", 56, true, 1, String],
    ["rating", "Rating", 76, true, -1, String],
    ["previous_rating", "Previous", 76, true, -1, String],
    ["change", "Change", 68, true, -1, (v) => (v > 0 ? "+" + v : String(v))],
    ["games", "Games", 62, true, -1, String],
    ["k", "K", 42, true, -1, String],
    ["inactive", "Inactive", 68, false, -1, yes],
    ["delisted", "Delisted", 68, false, -1, yes],
    ["newly_rated", "New", 48, false, -1, yes],
  ];
  const values = (key) => (key === "rank" ? RANK : D[key]);
  const base = new Int32Array(N);
  for (let i = 0; i < N; i++) base[i] = i;  // the embedded order: rating, then name, then id
  let sorted = base, view = base, sortKey = "rating", sortDir = -1, query = "", kept = null;
  let namesFolded = null, idsText = null;

  const head = document.getElementById("head"), cols = document.getElementById("cols");
  COLUMNS.forEach(([key, label, width, numeric, first]) => {{
    const col = document.createElement("col");
    col.style.width = width + "px";
    cols.appendChild(col);
    const th = document.createElement("th");
    th.textContent = label;
    th.dataset.key = key;
    th.scope = "col";
    if (numeric) th.className = "num";
    th.addEventListener("click", () => sortBy(key, key === sortKey ? -sortDir : first));
    head.appendChild(th);
  }});

  const F = {{
    federation: document.getElementById("f-federation"), sex: document.getElementById("f-sex"),
    age: document.getElementById("f-age"), from: document.getElementById("f-born-from"),
    to: document.getElementById("f-born-to"), activity: document.getElementById("f-activity"),
  }};
  function option(select, value, text) {{
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }}
  DICT.federation.forEach((code, index) => option(F.federation, String(index), code));
  DICT.sex.forEach((code, index) => option(F.sex, String(index), code));
  for (const n of [8, 10, 12, 14, 16, 18, 20]) option(F.age, "u" + n, "U" + n + " (born " + (YEAR - n) + " or later)");
  for (const n of [50, 65]) option(F.age, "s" + n, n + "+ (born " + (YEAR - n) + " or earlier)");
  option(F.age, "unknown", "birth year unknown");

  // The filters' rows and the ranks among them; then the sort and the search.
  function applyFilters() {{
    const tests = [], born = D.birth_year;
    const fed = F.federation.value, sex = F.sex.value, age = F.age.value, activity = F.activity.value;
    const from = parseInt(F.from.value, 10), to = parseInt(F.to.value, 10);
    if (fed !== "") {{ const v = Number(fed); tests.push((i) => D.federation[i] === v); }}
    if (sex !== "") {{ const v = Number(sex); tests.push((i) => D.sex[i] === v); }}
    const bornFrom = (low) => tests.push((i) => born[i] !== null && born[i] >= low);
    const bornTo = (high) => tests.push((i) => born[i] !== null && born[i] <= high);
    if (age === "unknown") tests.push((i) => born[i] === null);
    else if (age[0] === "u") bornFrom(YEAR - Number(age.slice(1)));  // U10: born YEAR - 10 or later
    else if (age[0] === "s") bornTo(YEAR - Number(age.slice(1)));  // 50+: born YEAR - 50 or earlier
    if (!Number.isNaN(from)) bornFrom(from);
    if (!Number.isNaN(to)) bornTo(to);
    if (activity === "active") tests.push((i) => D.rating[i] !== null && !D.inactive[i]);
    else if (activity === "inactive") tests.push((i) => D.rating[i] !== null && D.inactive[i] === 1);
    else if (activity === "unrated") tests.push((i) => D.rating[i] === null);
    else if (activity === "new") tests.push((i) => D.newly_rated[i] === 1);
    kept = tests.length ? new Uint8Array(N) : null;
    let place = 0, last = null, lastPlace = null;
    for (let i = 0; i < N; i++) {{  // the embedded order: rating descending, so equal ratings are together
      RANK[i] = null;
      if (kept !== null) {{
        if (!tests.every((test) => test(i))) continue;
        kept[i] = 1;
      }}
      if (D.rating[i] === null || D.inactive[i]) continue;
      place++;
      if (D.rating[i] !== last) {{ last = D.rating[i]; lastPlace = place; }}
      RANK[i] = lastPlace;
    }}
  }}

  function sortBy(key, dir) {{
    const v = values(key);
    const idx = base.slice();
    if (key !== "rating" || dir !== -1) {{
      // Ties keep the embedded order (a-b), and empty cells go last in either direction.
      idx.sort((a, b) => {{
        const x = v[a], y = v[b];
        if (x === y) return a - b;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -dir : dir);
      }});
    }}
    sorted = idx; sortKey = key; sortDir = dir;
    for (const th of head.children)
      th.setAttribute("aria-sort", th.dataset.key === key ? (dir > 0 ? "ascending" : "descending") : "none");
    filter();
  }}

  function fold(text) {{
    return text.normalize("NFD").replace(/[\\u0300-\\u036f]/g, "").toLowerCase();
  }}

  function filter() {{
    const q = fold(query.trim());
    if (!q && kept === null) {{
      view = sorted;
    }} else {{
      if (q && namesFolded === null) {{
        namesFolded = D.name.map((n) => (n === null ? "" : fold(n)));
        idsText = D.id.map(String);
      }}
      const digits = /^\\d+$/.test(q);
      const out = new Int32Array(sorted.length);
      let n = 0;
      for (let j = 0; j < sorted.length; j++) {{
        const i = sorted[j];
        if (kept !== null && !kept[i]) continue;
        if (!q || namesFolded[i].includes(q) || (digits && idsText[i].startsWith(q))) out[n++] = i;
      }}
      view = out.subarray(0, n);
    }}
    document.getElementById("status").textContent =
      (view.length < N ? view.length.toLocaleString("en") + " of " : "") + N.toLocaleString("en") + " players";
    viewport.scrollTop = 0;
    render();
  }}

  function refilter() {{
    applyFilters();
    if (sortKey === "rank") sortBy("rank", sortDir);
    else filter();
  }}

  const viewport = document.getElementById("viewport"), body = document.getElementById("rows");
  function link(i, text) {{
    const a = document.createElement("a");
    a.href = card(D.id[i]);
    a.title = "Player card (ratings player " + D.id[i] + " --html writes it)";
    a.textContent = text;
    return a;
  }}
  function render() {{
    const total = view.length;
    const full = total * ROW, height = Math.min(full, MAX_PX);
    const visible = Math.ceil(viewport.clientHeight / ROW) + 2;
    let first, top;
    if (full <= MAX_PX) {{
      first = Math.floor(viewport.scrollTop / ROW);
      top = first * ROW;
    }} else {{
      // Browsers cap an element's height: beyond MAX_PX the scrollbar maps proportionally to rows.
      const ratio = viewport.scrollTop / Math.max(1, height - viewport.clientHeight);
      first = Math.round(Math.min(1, ratio) * Math.max(0, total - visible + 2));
      top = viewport.scrollTop;
    }}
    first = Math.max(0, Math.min(first, Math.max(0, total - 1)));
    const last = Math.min(total, first + visible);
    const frag = document.createDocumentFragment();
    const pad = (px) => {{
      const tr = document.createElement("tr");
      tr.className = "pad";
      const td = document.createElement("td");
      td.colSpan = COLUMNS.length;
      td.style.height = px + "px";
      tr.appendChild(td);
      return tr;
    }};
    frag.appendChild(pad(Math.min(top, Math.max(0, height - (last - first) * ROW))));
    for (let j = first; j < last; j++) {{
      const i = view[j];
      const tr = document.createElement("tr");
      for (const [key, , , numeric, , show] of COLUMNS) {{
        const td = document.createElement("td");
        const value = values(key)[i];
        const text = value === null ? "" : show(value);
        if (key === "id" || (key === "name" && value !== null)) td.appendChild(link(i, text));
        else td.textContent = text;
        if (numeric) td.className = "num";
        tr.appendChild(td);
      }}
      frag.appendChild(tr);
    }}
    frag.appendChild(pad(Math.max(0, height - top - (last - first) * ROW)));
    body.replaceChildren(frag);
  }}

  let scheduled = false;
  viewport.addEventListener("scroll", () => {{
    if (!scheduled) {{ scheduled = true; requestAnimationFrame(() => {{ scheduled = false; render(); }}); }}
  }});
  window.addEventListener("resize", render);
  let timer = 0;
  document.getElementById("search").addEventListener("input", (event) => {{
    clearTimeout(timer);
    timer = setTimeout(() => {{ query = event.target.value; filter(); }}, 120);
  }});
  for (const control of Object.values(F)) control.addEventListener("change", refilter);
  for (const control of [F.from, F.to]) control.addEventListener("input", () => {{
    clearTimeout(timer);
    timer = setTimeout(refilter, 300);
  }});
  document.getElementById("f-clear").addEventListener("click", () => {{
    for (const control of Object.values(F)) control.value = "";
    refilter();
  }});
  applyFilters();
  sortBy("rating", -1);
  document.body.dataset.ready = "1";
}})();
</script>
</body>
</html>
"""
