"""The run's registry made ready to name its published lists, once a run, and kept for the next run.

Its cells cleaned, each name's place in (name, id) order and each player's FIDE TXT identity text made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import polars as pl

from pipeline.code_versions import code_version
from pipeline.formats.fide_list import FIDE_IDENTITY, fide_identity_text
from pipeline.ingest.registry import players_in_force
from pipeline.store.kept import KeptRows
from pipeline.store.monthly import stored_table_months, table_key
from pipeline.store.object_store import ObjectStore
from pipeline.text import holds_control, printable, spreadsheet_formulas
from pipeline.validate.identity import dump_name_versions, named_as_of
from schemas.conformance import ascends_strictly

# The registry's cells that name a player; each name's place in the registry's (name, id) order and the TXT's
# text of who each player is (ranked_registry).
REGISTRY_CELLS = ("name", "federation", "title", "sex")
NAME_ORDER = "name_order"
RANKED_COLUMNS = (NAME_ORDER, FIDE_IDENTITY)
# ranked_registry's mark of a row with a cell a spreadsheet would evaluate.
SPREADSHEET_FORMULA = "spreadsheet_formula"


def ranked_registry(players: pl.DataFrame) -> pl.DataFrame:
    """Players rows made ready for many months' lists (published_list): the registry's text cells as published
    (registry_cells); NAME_ORDER, each named row's place in (name, id) order (null without a name); FIDE_IDENTITY,
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
    cleaned = players.with_columns(registry_cells(players).get_columns())
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


def registry_cells(registry: pl.DataFrame) -> pl.DataFrame:
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
    versions = stored_name_versions(store, last_month)
    if versions is not None:  # in version order again: _prepared_rows keeps each id's versions in order
        versions = _prepared_rows(versions).sort("player_id", "registered", maintain_order=True)

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
        named = named_beside(registry, versions, month)
        if named is None:
            return registry
        if not sorted_keys:
            sorted_keys.append(_sorted_name_keys(registry))
        return _with_more_players(registry, sorted_keys[0], named)

    return month_registry


def stored_name_versions(store: ObjectStore, last_month: str) -> pl.DataFrame | None:
    """dump_name_versions of every stored identity report of `last_month` and before (None: none is stored): how the
    dumps name the players the registry does not hold, month by month (named_beside).
    """
    identities = [
        _identity_columns(store.scan_parquet(table_key(["identity"], month)))
        for month in stored_table_months(store, ["identity"])
        if month <= last_month
    ]
    return dump_name_versions(pl.concat(identities, how="diagonal_relaxed")) if identities else None


def named_beside(registry: pl.DataFrame, versions: pl.DataFrame | None, month: str) -> pl.DataFrame | None:
    """The one rule of who names a player in a month's outputs (the published lists, the federation residuals): the
    registry in force in `month` (`registry`) where it holds the player, its federation too, even an empty one; else
    the dumps of `month` and before (`versions`, stored_name_versions in (player_id, registered) order; named_as_of).
    Returns the Players rows of the players named by the dumps alone, None when there are none.
    """
    if versions is None:
        return None
    named = named_as_of(versions, month).filter(~pl.col("player_id").is_in(registry["player_id"].implode()))
    return named if named.height else None


def federations_in_force(store: ObjectStore, last_month: str) -> Callable[[str], pl.DataFrame]:
    """Month (up to `last_month`) -> (player_id, federation) of every player its list names (named_beside): the
    registry's, then the dumps' of the players it does not hold. Read once: the registry's folders and the identity
    reports.
    """
    registries = players_in_force(store, last_month, lambda registry: registry.select("player_id", "federation"))
    versions = stored_name_versions(store, last_month)

    def federations(month: str) -> pl.DataFrame:
        registry = registries(month)
        named = named_beside(registry, versions, month)
        if named is None:
            return registry
        return pl.concat([registry, named.select(registry.columns)], how="vertical_relaxed")

    return federations


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
