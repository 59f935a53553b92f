"""The registry and the seed list under raw/players/: players.csv, seed_list.csv or FIDE rating-list files."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import posixpath
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import polars as pl

from pipeline.formats.common import UnreadableDump, strip_compression
from pipeline.formats.decoding import decode_text, decompress, decompress_head
from pipeline.formats.fide_list import FideListFile, detect_layout, parse_fide_list, rating_type_of
from pipeline.formats.fields import OLD_TITLE_CODES, TITLE_CODES, federation_code, title_code
from pipeline.formats.tabular import normalised_header, too_many_columns
from pipeline.ingest.dumps import read_listed
from pipeline.ingest.landing import (
    RAW,
    REGISTRY,
    REGISTRY_FOLDER,
    LandingEntry,
    inventory,
    run_in_progress,
)
from pipeline.months import add_months
from pipeline.store.kept import KeptRows
from pipeline.store.object_store import ObjectStore
from schemas.fide_list import LIST_TYPES
from schemas.players import Players
from schemas.rating_list import LARGEST_LIST_K, RatingList
from schemas.util import column_bounds, conform, empty_frame, polars_schema

PLAYERS_FILE = "players.csv"
SEED_LIST_FILE = "seed_list.csv"


# Other names of a registry's or seed list's columns, as tabular.normalised_header writes them ('FIDE ID' is fide_id,
# 'B-day' b_day: FIDE's own list headers among them). Where a file has several columns for one, the one named as the
# column is read, else the first alias below (a national registry's 'id' beside its 'fide_id' is its own number); the
# others are named as not read (registry_file_problems).
PLAYER_COLUMN_ALIASES = {
    "fide_id": "player_id",
    "fideid": "player_id",
    "id_number": "player_id",
    "fide_number": "player_id",
    "id": "player_id",
    "player_name": "name",
    "full_name": "name",
    "fed": "federation",
    "country": "federation",
    "nation": "federation",
    "gender": "sex",
    "yob": "birth_year",
    "birthyear": "birth_year",
    "year_of_birth": "birth_year",
    "birth_date": "birth_year",
    "birthdate": "birth_year",
    "date_of_birth": "birth_year",
    "birthday": "birth_year",
    "b_day": "birth_year",
    "bday": "birth_year",
    "born": "birth_year",
    "tit": "title",
    "titel": "title",
    "fide_title": "title",
}
SEX_SPELLINGS = {"M": "M", "F": "F", "W": "F"}  # TRF and FIDE lists write women as 'w' or 'f'
# Title codes of the 2001-2012 lists -> today's (OLD_TITLE_CODES, imported above); others (such as 'h' and 'wh')
# are kept as written.


# Who a player is: each field is the newest raw/players/<M>/ folder's at or before a month that states it.
IDENTITY_FIELDS = ("name", "federation", "sex", "birth_year", "title")
# registry_history's column: the month folder a row was read from (it applies from that month on).
SINCE = "since"
# registry_in_force's column (with older_spellings): True on a row that only carries a name an earlier folder gave
# the player, so that a dump still writing it is matched (pipeline.validate.identity.resolve_players).
OLDER_SPELLING = "_older_spelling"


def read_players(store: ObjectStore, up_to_month: str) -> pl.DataFrame:
    """Players rows of the registry in force in `up_to_month`: every raw/players/<m>/ for m <= up_to_month.

    A month folder holds players.csv (the registry) and/or FIDE rating-list files (.txt in the
    layouts A-F, e.g. players_list_foa.txt or JAN04FRL.TXT): both register players. A player is
    `registered` from the first folder holding them; each identity field (IDENTITY_FIELDS) is the
    newest folder's that states it (an empty cell, or a players.csv without the column, keeps the
    older value). Within one folder players.csv comes before the FIDE lists (by name): an id's first
    file wins, a field it leaves empty is the next file's that states it, and what a later file states
    otherwise is named (registry_file_problems). Rows without a usable id register nobody
    (`registry_problems` lists them).
    Rows are in the order players were first registered.
    """
    return conform(registry_in_force(registry_history(store, up_to_month), up_to_month), Players)


# What registries_in_force hands out for a month: the registry itself, or what a caller makes of it once per folder.
Prepared = TypeVar("Prepared")


def _as_it_is(registry: pl.DataFrame) -> pl.DataFrame:
    return registry


@overload
def registries_in_force(history: pl.DataFrame, *, older_spellings: bool = False) -> Callable[[str], pl.DataFrame]: ...
@overload
def registries_in_force(
    history: pl.DataFrame, *, older_spellings: bool = False, prepare: Callable[[pl.DataFrame], Prepared]
) -> Callable[[str], Prepared]: ...
def registries_in_force(
    history: pl.DataFrame,
    *,
    older_spellings: bool = False,
    prepare: Callable[[pl.DataFrame], Any] = _as_it_is,
) -> Callable[[str], Any]:
    """Month -> registry_in_force of that month (passed through `prepare`), from registry_history's rows: each made
    once per folder (it changes only at a folder's month), not once per month. Asked in month order, as runs
    validate, rate and publish, only the registry in force is held (a FIDE list a month is a million rows a month).
    """
    folders = sorted(history[SINCE].unique().to_list())
    walk = _RegistryWalk(history, older_spellings)
    held: list[tuple[str | None, Any]] = []

    def in_force(month: str) -> Any:
        newer = bisect_right(folders, month)
        folder = folders[newer - 1] if newer else None
        if not held or held[0][0] != folder:
            held[:] = [(folder, prepare(walk.registry(month)))]
        return held[0][1]

    return in_force


class _RegistryWalk:
    """registry_in_force of month after month, each made from the one before: the registry in force is updated with
    the rows of the folders since (a FIDE list filed every month changes a few thousand of its million players), not
    made again from every folder before it. Asked for an earlier month, it starts again from the history.
    """

    def __init__(self, history: pl.DataFrame, older_spellings: bool):
        self.history, self.older_spellings = history, older_spellings
        self.month: str | None = None
        self.latest: pl.DataFrame | None = None  # _latest_fields of the history's rows up to self.month
        self.renamed: pl.DataFrame | None = None  # the name rows of players the history names more than one way

    def registry(self, month: str) -> pl.DataFrame:
        """registry_in_force(history, month, older_spellings), the same frame."""
        history = self.history.drop(SINCE)
        if self.latest is None or self.month is None or month < self.month:
            self.latest = _latest_fields(history.filter(self.history[SINCE] <= month))
        elif month > self.month:
            since = self.history[SINCE]
            self.latest = _updated(self.latest, history.filter((since > self.month) & (since <= month)))
        self.month = month
        # Of a history of some columns only (registry_history's `columns`), those it has.
        stated = [pl.col(column).fill_null("") for column in ("name", "federation") if column in self.latest.columns]
        in_force = self.latest.with_columns(stated)
        if not self.older_spellings:
            return in_force
        return _with_older_spellings(in_force, self._renamed().filter(pl.col(SINCE) <= month).drop(SINCE))

    def _renamed(self) -> pl.DataFrame:
        """The history's name rows (player_id, SINCE, the name's columns) of the players it names more than one way:
        only they can have a name the registry in force no longer gives them.
        """
        if self.renamed is None:
            named = [column for column in self.history.columns if column == "name" or column.startswith("_")]
            rows = self.history.select("player_id", SINCE, *named).filter(pl.col("name").is_not_null())
            self.renamed = rows.filter(pl.col("name").n_unique().over("player_id") > 1)
        return self.renamed


def _with_older_spellings(in_force: pl.DataFrame, name_rows: pl.DataFrame) -> pl.DataFrame:
    """`in_force` (OLDER_SPELLING false) and, as rows of their own (OLDER_SPELLING true), the names of `name_rows`
    (player_id and the name's columns, in history order) the registry in force does not give their player.
    """
    older = name_rows.unique(maintain_order=True)
    older = older.join(in_force.select("player_id", "name"), on=["player_id", "name"], how="anti")
    return pl.concat(
        [
            in_force.with_columns(pl.lit(False).alias(OLDER_SPELLING)),
            older.with_columns(pl.lit(True).alias(OLDER_SPELLING)),
        ],
        how="diagonal",
    )


@overload
def players_in_force(store: ObjectStore, last_month: str) -> Callable[[str], pl.DataFrame]: ...
@overload
def players_in_force(
    store: ObjectStore, last_month: str, prepare: Callable[[pl.DataFrame], Prepared]
) -> Callable[[str], Prepared]: ...
def players_in_force(
    store: ObjectStore, last_month: str, prepare: Callable[[pl.DataFrame], Any] = _as_it_is
) -> Callable[[str], Any]:
    """Month (up to `last_month`) -> read_players of that month (passed through `prepare`): registries_in_force over
    the store's folders, read once.
    """
    return registries_in_force(
        registry_history(store, last_month), prepare=lambda registry: prepare(conform(registry, Players))
    )


def registry_history(store: ObjectStore, up_to_month: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """Every version of every player's registry row from the folders raw/players/<m>/, m <= up_to_month, in folder
    order: the Players columns (empty name and federation as null: not stated) and SINCE, the folder's month.
    `columns`: only these of the Players columns (and SINCE); where a run kept the rows, only they are read, and this
    process holds no copy of the others (a fide-scale history's other columns, about 0.1 GB resident).

    A folder's row is kept only where it registers a new player or states a field differently from
    the registry in force before it, so a FIDE list filed every month adds its changes, not another
    million rows. `registered` is the player's first folder. registry_in_force gives any month's registry.
    The folders are read once a process for the same files (a run's validation, chains and lists each ask), and a
    run keeps what it made in the store (KEPT_HISTORY_FOLDER), so the next run reads only the folders added since.
    """
    folders, read = _registry_reads(store, up_to_month)
    files = read[2]
    wanted = None if columns is None else [*columns, SINCE]
    if wanted is not None and not (_read_history and _read_history[0][0] == read):
        kept, kept_files, _ = _kept_history(store, wanted)
        if kept is not None and kept_files[: len(files)] == files:
            return kept if len(kept_files) == len(files) else kept.filter(pl.col(SINCE) <= up_to_month)
    history = _whole_history(store, up_to_month, folders, read)
    return history if wanted is None else history.select(wanted)


def _whole_history(store: ObjectStore, up_to_month: str, folders: dict[str, list[str]], read: tuple) -> pl.DataFrame:
    """registry_history's rows, every column, of the folders `_registry_reads` gave: this process's last answer, the
    rows a run kept, or read (and kept for the next run, with the files' problems, registry_file_problems).
    """
    if _read_history and _read_history[0][0] == read:
        return _read_history[0][1]
    files = read[2]
    kept, kept_files, kept_problems = _kept_history(store)
    if kept is not None and kept_files[: len(files)] == files:
        # Kept from these folders, or from more (a run of a later month, whose rows of these folders are its first):
        # the kept rows stay as they are.
        history = kept if len(kept_files) == len(files) else kept.filter(pl.col(SINCE) <= up_to_month)
        problems = _problems_up_to(kept_problems, up_to_month)
    else:
        if kept is not None and kept_files and files[: len(kept_files)] == kept_files:
            # The kept folders are the first of these, unchanged: only the folders after them are read.
            last_kept = max(_folder_month(key) for key, _ in kept_files)
            history, problems = _with_folders(store, kept, {m: keys for m, keys in folders.items() if m > last_kept})
            problems = pl.concat([kept_problems, problems])
        else:
            history, problems = _with_folders(store, None, folders)
        _keep_history(store, files, history, problems)
    _read_history[:] = [(read, history, problems)]
    return history


def registry_file_problems(store: ObjectStore, up_to_month: str) -> pl.DataFrame:
    """What the files of the folders raw/players/<m>/, m <= up_to_month, hold that is not read, each with why (the
    files registry_history reads, and the seed lists beside them): FILE_PROBLEMS' columns, in folder order, at most
    PROBLEMS_KEPT rows a file. Found as the registry history is read, so kept with it: a run that reads the kept
    rows reads these with them.
    """
    folders, read = _registry_reads(store, up_to_month)
    if not (_read_history and _read_history[0][0] == read):
        kept_files, problems = _kept_files(_KEPT_HISTORY.described(store, _code_stamp()))
        if kept_files and kept_files[: len(read[2])] == read[2]:
            return _problems_up_to(problems, up_to_month)
        _whole_history(store, up_to_month, folders, read)
    return _read_history[0][2]


def _problems_up_to(problems: pl.DataFrame, up_to_month: str) -> pl.DataFrame:
    """The problems of the files in the folders raw/players/<m>/, m <= up_to_month."""
    return problems.filter(pl.col("key").str.split("/").list.get(2) <= up_to_month)


def keep_registry_history(store: ObjectStore, up_to_month: str) -> None:
    """Bring the kept registry rows (KEPT_HISTORY_FOLDER) up to `up_to_month` before a run's stages, in the process
    that holds the run (landing.listing_of_the_run): its stages, in this process or in worker processes, then read
    them, and a run writes the same files however many workers it has. This process keeps no copy in memory.
    """
    try:
        registry_history(store, up_to_month)
    except Exception:  # the store failing: the stages that read it fail too, and say why
        pass
    _read_history.clear()


def _with_folders(
    store: ObjectStore, history: pl.DataFrame | None, folders: dict[str, list[str]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`history` (registry_history's rows of the folders before `folders`; None: none) with the rows of `folders`, and
    the problems of `folders`' files (registry_file_problems).
    """
    read = [_folder_rows(store, keys, month) for month, keys in folders.items()]
    frames = [rows for rows, _ in read if rows is not None]
    problems = pl.concat([FILE_PROBLEMS.clear(), *(found for _, found in read)])
    empty = empty_frame(Players).with_columns(pl.lit(None, dtype=pl.Utf8).alias(SINCE))
    if not frames:
        return (history if history is not None else empty), problems
    added = pl.concat(frames)
    # Each player the new folders name starts from the fields in force before them, as a row of its own, first.
    known = history if history is not None else empty
    before = (
        _latest_fields(known.join(added.select("player_id").unique(), on="player_id", how="semi").drop(SINCE))
        .with_columns(pl.lit(None, dtype=pl.Utf8).alias(SINCE))
        .select(added.columns)
    )
    rows = pl.concat([before, added]).with_row_index("_row")
    first = rows["player_id"].is_first_distinct()
    # A later folder's row of a player is kept where it states a field other than the registry in force: the
    # player's latest value stated in an earlier folder (a folder names a player once). Only the players several
    # rows name are looked at: most are named once.
    again = rows.filter(rows["player_id"].is_duplicated())
    restated = [
        pl.col(field).is_not_null() & pl.col(field).ne_missing(pl.col(field).shift(1).forward_fill().over("player_id"))
        for field in IDENTITY_FIELDS
    ]
    changed = again.filter(pl.any_horizontal(restated))["_row"]
    new_rows = (
        rows.filter((first | rows["_row"].is_in(changed.implode())) & (pl.col("_row") >= before.height))
        .with_columns(pl.col(SINCE).first().over("player_id").alias("_first"))
        .join(before.select("player_id", pl.col("registered").alias("_known")), on="player_id", how="left")
        .with_columns(pl.coalesce("_known", "_first").alias("registered"))
        .select(*polars_schema(Players), SINCE)
    )
    return (new_rows if history is None else pl.concat([history, new_rows])), problems


def _folder_month(key: str) -> str:
    """The month of a registry file's key, raw/players/<YYYY-MM>/..."""
    return key.split("/")[2]


def _registry_reads(store: ObjectStore, up_to_month: str) -> tuple[dict[str, list[str]], tuple]:
    """The registry folders up to `up_to_month` (month -> keys), and what they are read from as a key that changes
    when any file does: the store, the month, and each file's key and stamp (size and mtime, or S3's ETag), in
    folder order.
    """
    entries = inventory(store, REGISTRY_FOLDER)
    folders = {month: keys for month, keys in _keys_by_month(store, entries).items() if month <= up_to_month}
    read_keys = {key for keys in folders.values() for key in keys}
    stamps = tuple(
        sorted(
            ((entry.key, entry.stamp) for entry in entries if entry.key in read_keys),
            key=lambda pair: (_folder_month(pair[0]), pair[0]),
        )
    )
    return folders, (store.url(), up_to_month, stamps)


# registry_history's last answer, with the store, month and files (their stamps) it was read from.
_read_history: list[tuple[tuple, pl.DataFrame, pl.DataFrame]] = []

#: Where a run keeps registry_history's rows for the next run (the fide-scale registry is 204 folders, two
#: CPU-seconds to read again): a Parquet file of the rows, and a description naming it with the files it was made from
#: and the code that read them. Derived: deleting the folder is safe.
KEPT_HISTORY_FOLDER = "registry"
_KEPT_HISTORY = KeptRows(KEPT_HISTORY_FOLDER, "history.json", "history-")


def _code_stamp() -> str:
    """The code that makes the rows: this package, the formats it reads, the Players model."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    sources = [*sorted(package.glob("*.py")), *sorted((package.parent / "formats").glob("*.py"))]
    for path in [*sources, package.parent.parent / "schemas" / "players.py"]:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _kept_history(
    store: ObjectStore, columns: list[str] | None = None
) -> tuple[pl.DataFrame | None, tuple, pl.DataFrame]:
    """The kept rows (only `columns` when given), the files they were made from and the files' problems; (None, (),
    no problems) when none are kept by this code, or they cannot be read (they are made again).
    """
    kept = _KEPT_HISTORY.read(store, _code_stamp(), columns)
    if kept is None:
        return None, (), FILE_PROBLEMS.clear()
    rows, described = kept
    files, problems = _kept_files(described)
    return (rows, files, problems) if files else (None, (), problems)


def _kept_files(described: dict[str, Any] | None) -> tuple[tuple, pl.DataFrame]:
    """The files a kept history description names, and their problems; ((), no problems) for any other shape."""
    if described is None:
        return (), FILE_PROBLEMS.clear()
    try:
        files = tuple((key, stamp) for key, stamp in described["files"])
        return files, pl.DataFrame(described["problems"], schema=FILE_PROBLEMS.schema, orient="row")
    except (KeyError, TypeError, ValueError, pl.exceptions.PolarsError):  # a description of another shape: made again
        return (), FILE_PROBLEMS.clear()


def _keep_history(store: ObjectStore, files: tuple, history: pl.DataFrame, problems: pl.DataFrame) -> None:
    """Keep `history`, made from `files`, and the files' `problems` (KeptRows.keep): only in a run
    (landing.listing_of_the_run), which holds the store's lock; a command that only reads the store (a player's
    card, a list) writes nothing.
    """
    if not run_in_progress(store):
        return
    made_from = {"code": _code_stamp(), "files": [list(pair) for pair in files]}
    name = f"history-{hashlib.sha256(json.dumps(made_from).encode()).hexdigest()[:24]}.parquet"
    _KEPT_HISTORY.keep(store, {**made_from, "problems": [list(row) for row in problems.rows()]}, name, history)


def registry_in_force(history: pl.DataFrame, month: str, older_spellings: bool = False) -> pl.DataFrame:
    """The registry in force in `month` from registry_history's rows: one row per player registered by then, each
    identity field the newest stated at or before `month`, in the order players were first registered.

    Other columns the history carries (such as a name key, pipeline.validate.identity.NAME_KEY) follow
    their row like the name does. With `older_spellings`, the names earlier folders gave a player and
    the newest does not follow as rows of their own (player_id and the name's columns, OLDER_SPELLING
    true), for matching a dump that still writes them.
    """
    rows = history.filter(pl.col(SINCE) <= month)
    in_force = _latest_fields(rows.drop(SINCE)).with_columns(
        pl.col("name").fill_null(""), pl.col("federation").fill_null("")
    )
    if not older_spellings:
        return in_force
    named = [column for column in history.columns if column == "name" or column.startswith("_")]
    return _with_older_spellings(in_force, rows.select("player_id", *named).filter(pl.col("name").is_not_null()))


def _latest_fields(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per player_id (in first-seen order): `registered` the first, every other column the last non-null."""
    others = [column for column in rows.columns if column not in ("player_id", "registered")]
    first = [pl.col("registered").first()] if "registered" in rows.columns else []
    return (
        rows.group_by("player_id", maintain_order=True)
        .agg(*[pl.col(column).drop_nulls().last() for column in others], *first)
        .select(rows.columns)
    )


def _updated(latest: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """_latest_fields of `latest`'s rows then `rows` (the same columns), made by updating `latest` (one row per player)
    with what `rows` state and appending the players it does not hold, not by grouping every row again.
    """
    if rows.is_empty():
        return latest
    changes = _latest_fields(rows)
    # Found from the few changed ids, not the million held: most folders only register new players.
    held = latest["player_id"].is_in(changes["player_id"].implode())
    if held.any():
        known = changes["player_id"].is_in(latest.filter(held)["player_id"].implode())
        latest = latest.update(changes.filter(known), on="player_id", how="left", include_nulls=False)
        changes = changes.filter(~known)
    return pl.concat([latest, changes])


#: registry_file_problems' columns: the file, its line (null: the whole file), what is wrong and what is not read
#: for it, and how many problems the file has in all (its first PROBLEMS_KEPT are rows).
FILE_PROBLEMS = pl.DataFrame(schema={"key": pl.Utf8, "source_line": pl.Int64, "detail": pl.Utf8, "of": pl.Int64})
PROBLEMS_KEPT = 20


def _file_problems(key: str, lines: pl.Series, details: pl.Series) -> pl.DataFrame:
    """FILE_PROBLEMS rows of one file, the first PROBLEMS_KEPT by line."""
    found = pl.DataFrame({"source_line": lines.cast(pl.Int64), "detail": details.cast(pl.Utf8)}).sort("source_line")
    return found.head(PROBLEMS_KEPT).select(
        pl.lit(key).alias("key"), "source_line", "detail", pl.lit(found.height, dtype=pl.Int64).alias("of")
    )


def _whole_file_problem(key: str, detail: str) -> pl.DataFrame:
    """The FILE_PROBLEMS row of a file not read."""
    return pl.DataFrame(
        {"key": [key], "source_line": [None], "detail": [detail], "of": [1]}, schema=FILE_PROBLEMS.schema
    )


def _folder_rows(store: ObjectStore, keys: list[str], month: str) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """One folder's registry rows (players.csv, then the FIDE lists by name, merged: _merged_files), with
    empty names and federations as null (not stated) and SINCE; None when the folder registers nobody. And the
    problems of the folder's files, its seed list's too (registry_file_problems): the rows and files not read.
    """
    frames: list[tuple[str, pl.DataFrame]] = []
    problems = [FILE_PROBLEMS.clear()]
    key = _find_file(keys, PLAYERS_FILE)
    if key is not None:
        try:
            table = _read_table(store, key)
        except ValueError as unreadable:
            problems.append(_whole_file_problem(key, f"not read: {unreadable}"))
        else:
            if "player_id" not in table.columns:
                problems.append(_whole_file_problem(key, f"not read: {_no_id_column(table)}"))
            else:
                frames.append((key, registry_rows(table, month)))
                found = registry_problems(table)
                cells = registry_cell_problems(table)
                header = unread_columns(table)
                problems.append(
                    _file_problems(
                        key,
                        pl.concat(
                            [pl.Series([1] * len(header), dtype=pl.Int64), found["source_line"], cells["source_line"]]
                        ),
                        pl.concat(
                            [
                                pl.Series(header, dtype=pl.Utf8),
                                found["detail"] + ": this row is not read",
                                cells["detail"],
                            ]
                        ),
                    )
                )
    fide_lists, unread = _fide_lists(store, keys)
    problems.append(unread)
    for list_key, fide_list in fide_lists:
        frames.append((list_key, fide_list_registry_rows(fide_list.players, month)))
        rejected = fide_list.rejected
        problems.append(
            _file_problems(list_key, rejected["source_line"], rejected["detail"] + ": this line is not read")
        )
    seed_key = _find_file(keys, SEED_LIST_FILE)
    if seed_key is not None:
        problems.append(_seed_file_problems(store, seed_key))
    if not frames:
        return None, pl.concat(problems)
    not_stated = [pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in ("name", "federation")]
    # is_first_distinct, not unique(keep="first"): the same rows, with a tenth of the memory (0.2 GB for 900,000).
    files = [
        rows.filter(pl.col("player_id").is_first_distinct()).with_columns(
            *not_stated, pl.col("birth_year").cast(pl.Int32)
        )
        for _, rows in frames
    ]
    rows, conflicts = _merged_files(files, [key for key, _ in frames]) if len(files) > 1 else (files[0], None)
    folder = rows.with_columns(pl.lit(month).alias(SINCE)).select("player_id", *IDENTITY_FIELDS, "registered", SINCE)
    return folder, pl.concat([*problems, *([conflicts] if conflicts is not None else [])])


def _merged_files(files: list[pl.DataFrame], keys: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The registry rows of one folder's files (each one row an id, not stated as null), in the order they are read
    (players.csv, then the FIDE lists by name): an id's row is its first file's, each field it does not state taken
    from the first file after it that does (a players.csv without a sex column beside a FIDE list saying F), as a
    later folder's empty cell keeps an earlier folder's value. And (FILE_PROBLEMS) each row of a later file that states
    a field otherwise than the value read, named under that file's key.
    """
    merged, found = files[0], [FILE_PROBLEMS.clear()]
    for key, other in zip(keys[1:], files[1:], strict=True):
        # Joined on the ids both hold, not grouped: two FIDE lists of a folder (standard and rapid) hold the same
        # million players.
        both = merged.join(other.select("player_id", *IDENTITY_FIELDS), on="player_id", suffix="_other")
        differs = [
            pl.col(f"{field}_other").is_not_null()
            & pl.col(field).is_not_null()
            & (pl.col(field) != pl.col(f"{field}_other"))
            for field in IDENTITY_FIELDS
        ]
        stated = both.filter(pl.any_horizontal(differs)).select(
            "player_id",
            pl.concat_str(
                [
                    pl.when(differ).then(pl.format(f"{field} '{{}}' (read: '{{}}')", f"{field}_other", field))
                    for field, differ in zip(IDENTITY_FIELDS, differs, strict=True)
                ],
                separator=", ",
                ignore_nulls=True,
            ).alias("_differs"),
        )
        details = pl.format(
            "player {}: this file's {} is not read: an earlier file of the folder states it otherwise (a folder's "
            "files are read players.csv first, then the FIDE lists by name)",
            "player_id",
            "_differs",
        )
        lines = pl.Series([None] * stated.height, dtype=pl.Int64)  # a FIDE list's players carry no line
        found.append(_file_problems(key, lines, stated.select(details).to_series()))
        # What the earlier files leave empty, this one fills; the ids they do not hold follow theirs.
        empty = [pl.col(field).is_null() & pl.col(f"{field}_other").is_not_null() for field in IDENTITY_FIELDS]
        filled = both.filter(pl.any_horizontal(empty)).select(
            "player_id", *[pl.coalesce(field, f"{field}_other").alias(field) for field in IDENTITY_FIELDS]
        )
        if filled.height:
            merged = merged.update(filled, on="player_id", how="left")
        if other.height > both.height:
            merged = pl.concat([merged, other.filter(~pl.col("player_id").is_in(both["player_id"].implode()))])
    return merged, pl.concat(found)


def _seed_file_problems(store: ObjectStore, key: str) -> pl.DataFrame:
    """FILE_PROBLEMS rows of a seed_list.csv: the rows seed_problems leaves out of the standard list, then those it
    leaves out of the rapid or blitz list only (where the file has their ratings).
    """
    try:
        table = _read_table(store, key)
    except ValueError as unreadable:
        return _whole_file_problem(key, f"not read: {unreadable}")
    found: list[pl.DataFrame] = []
    for list_type in LIST_TYPES:
        if list_type != "standard" and f"{list_type}_rating" not in table.columns:
            continue
        which = "the seed list" if list_type == "standard" else f"the {list_type} seed list"
        left_out = (
            seed_problems(table, list_type)
            .with_columns(
                pl.when(pl.col("detail").str.contains(" is already on line "))
                .then(pl.col("detail") + ": this row is not read")
                .when(pl.col("player_id").is_null())
                .then(pl.col("detail") + ": this row seeds nobody")
                .otherwise(pl.format(f"{{}}: player {{}} is left out of {which}", "detail", "player_id"))
                .alias("detail")
            )
            .select("source_line", "detail")
        )
        if found:
            left_out = left_out.join(found[0], on="source_line", how="anti")
        found.append(left_out)
    every = pl.concat(found)
    return _file_problems(key, every["source_line"], every["detail"])


def read_seed_list(
    store: ObjectStore, chain_start: str | None = None, list_type: str = "standard"
) -> pl.DataFrame | None:
    """The seed list: the list in force before `chain_start`, the month the chains start (_seed_folder), or None;
    of the `list_type` list (standard, rapid or blitz: the rapid and blitz columns of a seed_list.csv or a FIDE
    combined list, or a FIDE list of that type).

    `seed_list.csv` wins; otherwise a FIDE rating-list file (layouts A-F) of that month serves.
    Columns: player_id Int64, rating Int32 (null = unrated), games_total Int32 (empty or missing:
    null for rated players, whose game count is unknown, so they count as established; 0 for
    unrated players; a FIDE list never gives it), birth_year Int32, ever_2400 Boolean (as the file
    states it, null where it does not, and always for a FIDE list: no rule set is known here, so
    whether a rating has reached the elite threshold is decided by the rule set that rates the list,
    from the rating and its k.elite_from, and a list K of 10 means it was reached,
    regulations.mark_elite_reached); from a FIDE list also k (Int16) and inactive (flag i).
    """
    folder = _seed_folder(_registry_keys(store), chain_start, list_type)
    if folder is None:
        return None
    key = _seed_file(folder[1], list_type)
    assert key is not None  # _seed_folder picks folders that have one
    return read_seed_file(store, key, list_type)


def read_seed_file(store: ObjectStore, key: str, list_type: str = "standard") -> pl.DataFrame:
    """The seed rows of one file of raw/players/ for the `list_type` list: a seed_list.csv, or a FIDE rating list
    (read_seed_list's columns).
    """
    if not _is_fide_list_name(key):
        return seed_rows(_read_table(store, key), list_type)
    inner, compression = strip_compression(posixpath.basename(key))
    try:
        fide_list = parse_fide_list(decompress(read_listed(store, key), compression), inner)
    except UnreadableDump as problem:
        raise ValueError(f"player list file {key} is unreadable: {problem}") from problem
    return fide_list_seed_rows(fide_list, list_type)


def later_seed_files(store: ObjectStore, chain_start: str, list_type: str = "standard") -> dict[str, str]:
    """The lists filed after the chains' start: month M -> the key of raw/players/<M>/'s seed list or FIDE list (the
    list in force from M), for every M after `chain_start`. Only the files' names are looked at.
    """
    return {
        month: key
        for month, keys in _registry_keys(store).items()
        if month > chain_start and (key := _seed_file(keys, list_type)) is not None
    }


def seed_list_month(store: ObjectStore, chain_start: str | None = None, list_type: str = "standard") -> str | None:
    """The month folder raw/players/<M>/ that read_seed_list reads its seed list from (the list in force from M), or
    None without one. Only the files' names are looked at.
    """
    folder = _seed_folder(_registry_keys(store), chain_start, list_type)
    return None if folder is None else folder[0]


def _seed_folder(
    registry_keys: dict[str, list[str]], chain_start: str | None, list_type: str = "standard"
) -> tuple[str, list[str]] | None:
    """(month, keys) of the folder the seed list comes from: of the folders holding a seed_list.csv or a FIDE list,
    the newest at or before `chain_start` (a list filed in M is the list in force before M's games), else the
    earliest (a seed filed after the chain's start still starts it); the earliest when `chain_start` is None.
    """
    seeded = [(month, keys) for month, keys in registry_keys.items() if _seed_file(keys, list_type) is not None]
    if not seeded:
        return None
    in_force = [folder for folder in seeded if chain_start is not None and folder[0] <= chain_start]
    return in_force[-1] if in_force else seeded[0]


def _seed_file(keys: list[str], list_type: str = "standard") -> str | None:
    """The key a folder's seed list of the `list_type` list is read from: seed_list.csv, else its first FIDE list of
    that type by name (rapid_..., blitz_...: fide_list.rating_type_of), else its first standard or combined FIDE list
    (a combined list holds the rapid and blitz ratings too), else None.
    """
    fide_lists = [key for key in keys if _is_fide_list_name(key)]
    typed = [key for key in fide_lists if rating_type_of(key) == list_type]
    standard = [key for key in fide_lists if rating_type_of(key) == "standard"]
    return _find_file(keys, SEED_LIST_FILE) or next(iter(typed or standard), None)


# Registry folders the plan names one by one; beyond, the first and the last, and how many in between.
REGISTRY_SPANS_NAMED = 6


def registry_plan(
    store: ObjectStore,
    months: Sequence[str],
    chain_start: str | None = None,
    entries: Sequence[LandingEntry] | None = None,
) -> list[str]:
    """What a run over `months` reads of raw/players/, one line each (file names only, nothing is opened): the seed
    list the chains start from in `chain_start` (default: the first month), which registry files apply to which
    months, and the files of raw/players/ that are not read. `entries`: the landing zone's inventory, when the
    caller has it.

    A folder applies from its month to the month before the next folder; in a month the newest folder
    holding a player names them, the older ones give what it does not state (read_players).
    """
    if not months:
        return []
    start = chain_start or months[0]
    folders = _registry_keys(store) if entries is None else _keys_by_month(store, entries)
    lines = [_seed_line(folders, start, months[0])]
    registering = {month: _registry_files(keys) for month, keys in folders.items()}
    registering = {month: files for month, files in registering.items() if files}
    if not registering:
        lines.append(
            "registry: none (raw/players/<YYYY-MM>/ holds no players.csv or FIDE list): players are the ids and "
            "names the dumps write"
        )
    applies = sorted(registering)
    first, last = months[0], months[-1]
    if applies and first < applies[0]:
        before = add_months(applies[0], -1)
        lines.append(f"registry {first}..{min(before, last)}: none yet (the first applies from {applies[0]})")
    for index, month in enumerate(applies):
        until = add_months(applies[index + 1], -1) if index + 1 < len(applies) else last
        span_first, span_last = max(month, first), min(until, last)
        if month > last:
            lines.append(f"registry from {month}: {', '.join(registering[month])} (after this run's months)")
            continue
        if span_first > span_last:
            continue
        older = applies[:index]
        over = f", then {_folder_list(older)} for what it does not state" if older else ""
        lines.append(f"registry {span_first}..{span_last}: {', '.join(registering[month])}{over}")
    spans = [line for line in lines if line.startswith("registry ") and ": none yet" not in line]
    if len(spans) > REGISTRY_SPANS_NAMED:  # a folder every month: one line says it, not one per month
        first_span, last_span = spans[0], spans[-1]
        lines = [line for line in lines if line not in spans[1:-1]]
        lines[lines.index(first_span) + 1 : lines.index(last_span)] = [
            f"registry: ... {len(spans) - 2} more folders, each in force from its month to the next one's"
        ]
    seed = _seed_folder(folders, start)
    seed_key = _seed_file(seed[1]) if seed is not None else None
    skipped = not_lists(store, inventory(store, REGISTRY_FOLDER) if entries is None else entries)
    lines += [f"not read: {key}: {why}" for key, why in skipped.items()]
    for month, keys in folders.items():
        unread = [key for key in keys if key not in registering.get(month, []) and not _is_seed_csv(key)]
        if unread:
            lines.append(
                f"not read: {', '.join(unread)} (a registry folder holds players.csv, seed_list.csv or FIDE .txt lists)"
            )
        later = _seed_file(keys) if month > start else None
        if later is not None and later != seed_key:
            lines.append(
                f"newcomers from {month}: {later}: its rated players the chains do not rate (on no list yet, unrated "
                "or delisted) join at its rating"
            )
        other_seeds = [key for key in keys if _is_seed_csv(key) and key not in (seed_key, later)]
        if other_seeds:
            lines.append(f"not read: {', '.join(other_seeds)} (only the seed list the chains start from is read)")
    return lines


# registry_problem_lines' most lines naming a problem; the others are counted.
PROBLEM_LINES = 12


def registry_problem_lines(store: ObjectStore, months: Sequence[str]) -> list[str]:
    """What of raw/players/ a run over `months` does not read, one line a problem (registry_file_problems): of the
    newest folder at or before the first month that has any (a registry folder stays in force for what later ones
    do not state) and the folders after it up to the last month, at most PROBLEM_LINES lines, then how many more.
    Reads the registry's folders (or the rows a run kept).
    """
    return problem_lines(registry_file_problems(store, months[-1]), months) if months else []


def problem_lines(problems: pl.DataFrame, months: Sequence[str]) -> list[str]:
    """registry_problem_lines of registry_file_problems' rows (up to the last of `months`, or later)."""
    folder = pl.col("key").str.split("/").list.get(2)
    earlier = problems.filter(folder <= months[0]).select(folder.max()).item()
    problems = problems.filter(folder >= (earlier or months[0]))
    shown = problems.head(PROBLEM_LINES)
    lines = [
        f"WARNING: {key}{'' if line is None else f' line {line}'}: {detail}"
        for key, line, detail in shown.select("key", "source_line", "detail").iter_rows()
    ]
    # Each file's count ("of") is on every row of it.
    per_file = (
        problems.group_by("key").agg(pl.col("of").first()).join(shown.group_by("key").len(), on="key", how="left")
    )
    unshown = per_file.select(pl.col("of") - pl.col("len").fill_null(0))["of"]
    if unshown.sum():
        files = (unshown > 0).sum()
        lines.append(f"WARNING: {unshown.sum():,} more such problems in {files:,} file(s) of {RAW}/{REGISTRY_FOLDER}/")
    return lines


def _seed_line(folders: dict[str, list[str]], chain_start: str, first_month: str) -> str:
    """The plan's line of the seed list: which file, and whether this run reads it."""
    folder = _seed_folder(folders, chain_start)
    if folder is None:
        what = f"seed list: none: every player starts unrated in {chain_start}"
    else:
        month, keys = folder
        key = _seed_file(keys)
        kind = "a FIDE rating list" if key is not None and _is_fide_list_name(key) else "the seed list"
        late = ", after the chains' first month" if month > chain_start else ""
        what = f"seed list: {key} ({kind} filed for {month}{late}): the chains start from it in {chain_start}"
    if first_month > chain_start:
        return f"{what}; this run continues the stored lists of {add_months(first_month, -1)} instead"
    return what


def _registry_files(keys: list[str]) -> list[str]:
    """A folder's keys that register players, in the order they are read: players.csv, then the FIDE lists."""
    players = _find_file(keys, PLAYERS_FILE)
    return ([players] if players is not None else []) + [key for key in keys if _is_fide_list_name(key)]


def _is_seed_csv(key: str) -> bool:
    return strip_compression(posixpath.basename(key))[0] == SEED_LIST_FILE


def _folder_list(months: Sequence[str]) -> str:
    """'raw/players/2004-01/' or 'raw/players/2004-01/ and 2 earlier folders', newest first."""
    newest = f"{RAW}/{REGISTRY_FOLDER}/{months[-1]}/"
    return newest if len(months) == 1 else f"{newest} and {len(months) - 1} earlier folder(s)"


def fide_list_registry_rows(players: pl.DataFrame, month: str) -> pl.DataFrame:
    """Players rows of a parsed FIDE list; lists without a sex column give F for the 'w' flag, else M."""
    sex_from_flag = pl.when(pl.col("flag").fill_null("").str.contains("w")).then(pl.lit("F")).otherwise(pl.lit("M"))
    title = pl.coalesce(pl.col("title"), pl.col("women_title"))
    return players.select(
        "player_id",
        "name",
        pl.col("federation").fill_null(""),
        pl.coalesce(pl.col("sex"), sex_from_flag).alias("sex"),
        "birth_year",
        title.replace(OLD_TITLE_CODES).alias("title"),
        pl.lit(month).alias("registered"),
    )


def fide_list_seed_rows(fide_list: FideListFile, list_type: str = "standard") -> pl.DataFrame:
    """The seed-list columns from a parsed FIDE list for the `list_type` list: a per-type list's own ratings, a
    combined list's ratings of that type.
    """
    kind = fide_list.rating_type if fide_list.rating_type != "standard" else list_type
    rating = pl.col(f"{kind}_rating")
    return fide_list.players.select(
        "player_id",
        rating.alias("rating"),
        pl.when(rating.is_null()).then(pl.lit(0, dtype=pl.Int32)).alias("games_total"),
        "birth_year",
        # The list does not say (regulations.mark_elite_reached reads the rating and the K under the rule set).
        pl.lit(None, dtype=pl.Boolean).alias("ever_2400"),
        pl.col(f"{kind}_k").alias("k"),
        "inactive",
    )


# The columns of players.csv that are read (PLAYER_COLUMN_ALIASES: their other names).
REGISTRY_COLUMNS = ("player_id", *IDENTITY_FIELDS)


def unread_columns(table: pl.DataFrame) -> list[str]:
    """What the header of a players.csv (registry_table's) names that registry_rows does not read: one line a column."""
    read = ", ".join(REGISTRY_COLUMNS)
    return [
        f"column '{column}' is not read"
        + (
            f": another column of the header gives {PLAYER_COLUMN_ALIASES[column]}"
            if column in PLAYER_COLUMN_ALIASES
            else f" (a registry reads {read}, or their usual other names)"
        )
        for column in table.columns
        if column not in REGISTRY_COLUMNS and column != EXTRA_FIELDS
    ]


def _no_id_column(table: pl.DataFrame) -> str:
    """Why a registry CSV without a player_id column registers nobody."""
    columns = ", ".join(f"'{column}'" for column in table.columns if column != EXTRA_FIELDS)
    return f"no player_id column (the header names {columns}): the file registers nobody"


def registry_problems(table: pl.DataFrame) -> pl.DataFrame:
    """Rows of a registry CSV (registry_table's) that cannot register anybody, or not from this row, with why.

    Columns: source_line (the CSV line), reason (unparseable / duplicate), detail, raw_text. A row with fields beyond
    the header's does not line up with its columns (an unquoted comma in a name shifts every field after it), so it
    registers nobody; of the rows of one id the first registers them.
    """
    ids = _text(table, "player_id")
    parsed = ids.cast(pl.Int64, strict=False)
    usable = parsed.is_not_null() & (parsed > 0)
    columns = [c for c in table.columns if c != EXTRA_FIELDS]
    raw_text = pl.concat_str([pl.col(c).fill_null("") for c in columns], separator=",") if columns else pl.lit("")
    frame = table.with_row_index("_row").select(
        (pl.col("_row").cast(pl.Int64) + 2).alias("source_line"),  # line 1 is the header
        raw_text.alias("raw_text"),
        ids.alias("_id_text"),
        _extra(table).alias("_extra"),
        # Only a row that lines up registers anybody: of those, the first of an id.
        pl.when(usable & (_extra(table) == 0)).then(parsed).alias("_id"),
    )
    duplicate = pl.col("_id").is_not_null() & (pl.int_range(pl.len()).over("_id") > 0)
    return (
        frame.with_columns(
            pl.when(pl.col("_id").is_null())
            .then(pl.lit("unparseable"))
            .when(duplicate)
            .then(pl.lit("duplicate"))
            .alias("reason"),
            pl.when(pl.col("_extra") > 0)
            .then(_extra_detail(pl.col("_extra"), len(columns)))
            .when(pl.col("_id").is_null())
            .then(pl.format("player_id {} is not a positive number", pl.col("_id_text").fill_null("(missing)")))
            .when(duplicate)
            .then(
                pl.format(
                    "player_id {} is already registered on line {}",
                    pl.col("_id"),
                    pl.col("source_line").first().over("_id"),
                )
            )
            .alias("detail"),
        )
        .filter(pl.col("reason").is_not_null())
        .select("source_line", "reason", "detail", "raw_text")
    )


def registry_cell_problems(table: pl.DataFrame) -> pl.DataFrame:
    """Cells of the rows of a registry CSV that register a player (registry_problems names the others) that
    registry_rows cannot read and leaves empty: a federation that is no three-letter code ('Germany', 'E<b'), which the
    FIDE TXT would cut to three characters and the FIDE-list reader then refuse; a sex that is neither M nor F; a birth
    year that is no year from 1900 to 2100; a title that is none of FIDE's (a national title, 'NM', is not published
    in FIDE's title columns). Columns: source_line, detail.
    """
    federation, sex, year = _text(table, "federation"), _text(table, "sex"), _text(table, "birth_year")
    title = _text(table, "title")
    registers = _text(table, "player_id").cast(pl.Int64, strict=False).gt(0).fill_null(False) & (_extra(table) == 0)
    unread = [
        (federation, federation_code(federation), "federation '{}' is not a three-letter code"),
        (sex, _sex(table), "sex '{}' is neither M nor F (nor W)"),
        (year, _birth_year(table), "birth_year '{}' is no year from 1900 to 2100"),
        (title, title_code(title), f"title '{{}}' is not a FIDE title ({', '.join(TITLE_CODES)})"),
    ]
    details = [
        pl.when(registers & written.is_not_null() & read.is_null()).then(pl.format(message, written))
        for written, read, message in unread
    ]
    return (
        table.select(
            (pl.int_range(pl.len(), dtype=pl.Int64) + 2).alias("source_line"),  # line 1 is the header
            pl.concat_str(details, separator="; ", ignore_nulls=True).alias("detail"),
        )
        .filter(pl.col("detail") != "")
        .with_columns(pl.col("detail") + ": the cell is left empty")
    )


def _sex(table: pl.DataFrame) -> pl.Expr:
    return _text(table, "sex").str.to_uppercase().replace_strict(SEX_SPELLINGS, default=None)


def _birth_year(table: pl.DataFrame) -> pl.Expr:
    """A registry's birth year: its first four characters ('1985', '1985-03-02'), from 1900 to 2100, else null."""
    year = _text(table, "birth_year").str.slice(0, 4).cast(pl.Int32, strict=False)
    return pl.when(year.is_between(1900, 2100)).then(year)


def _extra(table: pl.DataFrame) -> pl.Expr:
    """registry_table's EXTRA_FIELDS (0 for a table made some other way)."""
    return pl.col(EXTRA_FIELDS) if EXTRA_FIELDS in table.columns else pl.lit(0, dtype=pl.Int32)


def _extra_detail(extra: pl.Expr, width: int) -> pl.Expr:
    """Why a row with `extra` fields beyond the header's `width` is not read."""
    return pl.format(f"the row has {{}} field(s) more than the header's {width}: its fields do not line up", extra)


INT32_MAX = 2**31 - 1  # a count a seed column is read into (Int32)
# Spellings of a seed list's ever_2400.
EVER_TRUE = ("true", "1", "yes", "y", "t")
EVER_FALSE = ("false", "0", "no", "n", "f")


def seed_problems(table: pl.DataFrame, list_type: str = "standard") -> pl.DataFrame:
    """Rows of a seed_list.csv (registry_table's) that seed nobody for the `list_type` list, with why: a player_id
    that is no positive number, fields beyond the header's, a cell seed_rows reads that says something it cannot
    read (a rating, games_total or k that is not a whole number, such as 'abc', '2,100' or 1800.7; a rating outside
    the range a rating list holds, RatingList's; a k below 1 or above LARGEST_LIST_K; a birth_year that is no year;
    an ever_2400 that is neither true nor false), or an id a readable row on an earlier line seeds (of
    the readable rows of an id, the first is read). Such a row is left out of the seed list, never read as an
    unrated player or with the cell as empty (an empty games_total counts as established, an empty rating as
    unrated): a seed list starts every chain.

    Columns: source_line (the CSV line), player_id (null when it cannot be read), detail.
    """
    prefix = "" if list_type == "standard" else f"{list_type}_"
    ids = _text(table, "player_id")
    parsed = ids.cast(pl.Int64, strict=False)
    player_id = pl.when(parsed > 0).then(parsed)

    def whole(column: str, lowest: float, highest: float) -> pl.Expr:
        cell = _text(table, column)
        number = cell.cast(pl.Float64, strict=False)
        return (
            pl.when(cell.is_null())
            .then(None)
            .when(number.is_null())
            .then(pl.format(f"{column} '{{}}' is not a number", cell))
            .when(number != number.round())
            .then(pl.format(f"{column} '{{}}' is not a whole number", cell))
            .when((number < lowest) | (number > highest))
            .then(pl.format(f"{column} '{{}}' is out of range ({int(lowest)} to {int(highest)})", cell))
        )

    # A rating the list's schema would refuse fails no later step: it is named here, with its file and line.
    low, high = column_bounds(RatingList, "rating")

    birth, ever = _text(table, "birth_year"), _text(table, "ever_2400")
    problems = [
        pl.when(player_id.is_null()).then(
            pl.format("player_id {} is not a positive number", ids.fill_null("(missing)"))
        ),
        pl.when(_extra(table) > 0).then(
            _extra_detail(_extra(table), len([c for c in table.columns if c != EXTRA_FIELDS]))
        ),
        whole(f"{prefix}rating", low if low is not None else 0, high if high is not None else INT32_MAX),
        whole(f"{prefix}games_total", 0, INT32_MAX),
        whole(f"{prefix}k", 1, LARGEST_LIST_K),
        pl.when(birth.is_not_null() & birth.str.slice(0, 4).cast(pl.Int32, strict=False).is_null()).then(
            pl.format("birth_year '{}' is not a year", birth)
        ),
        pl.when(ever.is_not_null() & ~ever.str.to_lowercase().is_in([*EVER_TRUE, *EVER_FALSE])).then(
            pl.format("ever_2400 '{}' is neither true nor false", ever)
        ),
    ]
    # Of the rows of an id that can be read, the first seeds the player; the others are named. The lines and ids are
    # columns before the window: an int_range inside it would count within each id.
    readable = pl.col("detail").is_null() & pl.col("player_id").is_not_null()
    first_line = pl.when(readable).then(pl.col("source_line")).min().over("player_id")
    return (
        table.select(
            (pl.int_range(pl.len(), dtype=pl.Int64) + 2).alias("source_line"),  # line 1 is the header
            player_id.alias("player_id"),
            pl.coalesce(problems).alias("detail"),
        )
        .with_columns(
            pl.when(readable & (pl.col("source_line") > first_line))
            .then(pl.format("player_id {} is already on line {}", "player_id", first_line))
            .otherwise(pl.col("detail"))
            .alias("detail")
        )
        .filter(pl.col("detail").is_not_null())
    )


def _registry_keys(store: ObjectStore) -> dict[str, list[str]]:
    """Month -> keys of the regular files in raw/players/<month>/ (links and special files are never read) that can be
    read, sorted (_keys_by_month).
    """
    return _keys_by_month(store, inventory(store, REGISTRY_FOLDER))  # not the dumps: thousands of files a month


def _keys_by_month(store: ObjectStore, entries: Sequence[LandingEntry]) -> dict[str, list[str]]:
    """Month -> the registry entries' keys of that month folder, sorted; not the .txt files that are no FIDE rating
    list (not_lists).
    """
    skipped = not_lists(store, entries)
    keys: dict[str, list[str]] = {}
    for entry in entries:
        if entry.kind == REGISTRY and entry.month is not None and entry.key not in skipped:
            keys.setdefault(entry.month, []).append(entry.key)
    return {month: sorted(found) for month, found in sorted(keys.items())}


# How much of a .txt is read to tell a FIDE list: detect_layout reads the header, or 200 lines of at most 160 bytes.
SNIFF_BYTES = 64_000
# _list_sniffed's answers in this process: (store URL, key, stamp) -> why the file is no FIDE list (None: it is one).
_sniffed: dict[tuple[str, str, str], str | None] = {}


def not_lists(store: ObjectStore, entries: Sequence[LandingEntry]) -> dict[str, str]:
    """The .txt files (also compressed) of raw/players/ that are no FIDE rating list, each with why: a registry folder
    holds players.csv, seed_list.csv and FIDE lists, and notes beside them are not read, not a failed run.

    Told from a file's first SNIFF_BYTES, once a process for a file as it is (its stamp); a file the kept registry
    history was read from (KEPT_HISTORY_FOLDER) is one, and not looked at again.
    """
    txt = [entry for entry in entries if entry.kind == REGISTRY and entry.month and _is_fide_list_name(entry.key)]
    unknown = [entry for entry in txt if (store.url(), entry.key, entry.stamp) not in _sniffed]
    if unknown:
        kept_files = set(_kept_files(_KEPT_HISTORY.described(store, _code_stamp()))[0])
        for entry in unknown:
            is_kept = (entry.key, entry.stamp) in kept_files
            _sniffed[(store.url(), entry.key, entry.stamp)] = None if is_kept else _not_a_list(store, entry.key)
    found = {entry.key: _sniffed[(store.url(), entry.key, entry.stamp)] for entry in txt}
    return {key: why for key, why in found.items() if why is not None}


def _not_a_list(store: ObjectStore, key: str) -> str | None:
    """Why the .txt `key` is no FIDE rating list, from its first bytes; None when it is one."""
    compression = strip_compression(posixpath.basename(key))[1]
    try:
        head = decompress_head(read_listed(store, key, SNIFF_BYTES), compression, SNIFF_BYTES)
        text = decode_text(head)
    except (OSError, UnreadableDump) as problem:
        return f"cannot be read: {problem}"
    if not text.strip():
        return "an empty file"
    if detect_layout(text) is None:
        return "not a FIDE rating list: no known header, and the lines fit none of FIDE's layouts A-F"
    return None


def _is_fide_list_name(key: str) -> bool:
    """A registry key read as a FIDE rating-list file when it is one (not_lists): a .txt, also compressed."""
    return strip_compression(posixpath.basename(key))[0].lower().endswith(".txt")


def _fide_lists(store: ObjectStore, keys: list[str]) -> tuple[list[tuple[str, FideListFile]], pl.DataFrame]:
    """The FIDE rating-list files (.txt, also compressed) among one month's registry keys, parsed, sorted by name,
    with their keys; and (FILE_PROBLEMS) those that cannot be read, which are not read.
    """
    lists, unread = [], [FILE_PROBLEMS.clear()]
    for key in keys:
        if not _is_fide_list_name(key):
            continue
        inner, compression = strip_compression(posixpath.basename(key))
        try:
            lists.append((key, parse_fide_list(decompress(read_listed(store, key), compression), inner)))
        except UnreadableDump as problem:
            unread.append(_whole_file_problem(key, f"not read: {problem}"))
    return lists, pl.concat(unread)


def _find_file(keys: list[str], file_name: str) -> str | None:
    """The key among one month's registry keys named <file_name>, also accepted compressed (.gz/.zst)."""
    for key in keys:
        inner, _ = strip_compression(posixpath.basename(key))
        if inner == file_name:
            return key
    return None


def _read_table(store: ObjectStore, key: str) -> pl.DataFrame:
    """A registry CSV as text columns with lower-case names (types are fixed by the caller)."""
    _, compression = strip_compression(key)
    try:
        return registry_table(decompress(read_listed(store, key), compression))
    except UnreadableDump as problem:
        raise ValueError(f"player registry file {key} is unreadable: {problem}") from problem


def registry_table(data: bytes) -> pl.DataFrame:
    """A registry or seed-list CSV's bytes as text columns with lower-case names; UnreadableDump if not a CSV.

    EXTRA_FIELDS holds, for each row, how many fields with text it has beyond the header's (0 for most rows): they are
    not read, and the row is named (registry_problems, seed_problems), not silently cut.
    """
    text = decode_text(data)
    if not text.strip():
        raise UnreadableDump("empty file")
    too_wide = too_many_columns(text)
    if too_wide is not None:
        raise UnreadableDump(too_wide)
    try:
        table = pl.read_csv(io.StringIO(text), infer_schema=False, truncate_ragged_lines=True)
    except pl.exceptions.PolarsError as error:
        raise UnreadableDump(f"not a readable CSV file: {str(error).splitlines()[0]}") from error
    table.columns = _column_names(text, table.columns)
    return table.with_columns(_extra_fields(text, table.width, table.height).alias(EXTRA_FIELDS))


def _column_names(text: str, read: list[str]) -> list[str]:
    """The columns' names: each header cell as tabular.normalised_header writes it, an alias (PLAYER_COLUMN_ALIASES)
    replaced by its column unless another cell of the header gives that column first (by PLAYER_COLUMN_ALIASES'
    preference); a name given twice is made unique with a suffix. The cells are the header line's as written (Polars
    renames a repeated one), where they line up with the columns read.
    """
    written = next(csv.reader(io.StringIO(text.lstrip("\ufeff").split("\n", 1)[0])), [])
    names = [normalised_header(cell) for cell in (written if len(written) == len(read) else read)]
    preference = {alias: rank for rank, alias in enumerate(PLAYER_COLUMN_ALIASES)}
    chosen: dict[str, str] = {}  # column -> the header name that gives it
    for name in sorted(names, key=lambda name: -1 if name not in preference else preference[name]):
        chosen.setdefault(PLAYER_COLUMN_ALIASES.get(name, name), name)
    given = {name: column for column, name in chosen.items()}
    result: list[str] = []
    for name in names:
        column = given.pop(name, name)
        while column in result:
            column += "_2"
        result.append(column)
    return result


#: registry_table's column: the fields with text a row has beyond its header's.
EXTRA_FIELDS = "_extra_fields"


def _extra_fields(text: str, width: int, rows: int) -> pl.Series:
    """Each data row's fields with text beyond `width`, counted on its line: the commas outside quotes, trailing empty
    fields left out. Polars reads a blank line as an empty row, so row i is data line i; only a quoted field holding a
    line break breaks that, and then nothing is counted (every row 0) rather than rows named by the wrong line.
    """
    lines = pl.Series([text], dtype=pl.Utf8).str.split("\n").explode().str.strip_suffix("\r")
    if lines.len() and lines[-1] == "":
        lines = lines.head(-1)
    if lines.len() - 1 != rows:
        return pl.Series(EXTRA_FIELDS, [0] * rows, dtype=pl.Int32)
    unquoted = lines.slice(1).str.replace_all(r'"[^"]*"', "").str.replace(r"[,\s]+$", "")
    fields = unquoted.str.count_matches(",", literal=True).cast(pl.Int32) + 1
    return (fields - width).clip(lower_bound=0).alias(EXTRA_FIELDS)


def _text(table: pl.DataFrame, column: str) -> pl.Expr:
    """Stripped text of an optional column (null when absent or empty)."""
    if column not in table.columns:
        return pl.lit(None, dtype=pl.Utf8)
    stripped = pl.col(column).str.strip_chars()
    return pl.when(stripped == "").then(None).otherwise(stripped)


def registry_rows(table: pl.DataFrame, month: str) -> pl.DataFrame:
    """Typed Players rows of one registry file; rows without a usable id cannot register anybody."""
    rows = table.filter(_extra(table) == 0).select(
        _text(table, "player_id").cast(pl.Int64, strict=False).alias("player_id"),
        _text(table, "name").fill_null("").alias("name"),
        # Checked as a TRF's: a federation that is no three-letter code is left empty (registry_cell_problems).
        federation_code(_text(table, "federation")).fill_null("").alias("federation"),
        _sex(table).alias("sex"),
        _birth_year(table).alias("birth_year"),
        # 'GM', 'gm' or 'g' is GM; any other title is named and left empty (registry_cell_problems).
        title_code(_text(table, "title")).alias("title"),
        pl.lit(month).alias("registered"),
    )
    return rows.filter(pl.col("player_id").is_not_null() & (pl.col("player_id") > 0))


def seed_rows(table: pl.DataFrame, list_type: str = "standard") -> pl.DataFrame:
    """The seed-list columns of a seed_list.csv (registry_table's): player_id, rating, games_total, birth_year,
    ever_2400, k. For the rapid or blitz list, rating and k are the file's rapid_rating and rapid_k (or blitz_rating
    and blitz_k), and its games_total (the standard list's) is not read. The rows seed_problems names are left out.
    """
    prefix = "" if list_type == "standard" else f"{list_type}_"
    rating = _text(table, f"{prefix}rating").cast(pl.Float64, strict=False).cast(pl.Int32, strict=False)
    games_total = _text(table, "games_total" if not prefix else f"{prefix}games_total").cast(pl.Float64, strict=False)
    ever = _text(table, "ever_2400").str.to_lowercase()
    problems = seed_problems(table, list_type)["source_line"]
    return (
        table.select(
            (pl.int_range(pl.len(), dtype=pl.Int64) + 2).alias("_line"),
            _text(table, "player_id").cast(pl.Int64, strict=False).alias("player_id"),
            rating.alias("rating"),
            # An empty games_total is unknown: null (established, see regulations.development_coefficient) for a rated
            # player, 0 for an unrated one.
            pl.when(rating.is_null())
            .then(games_total.fill_null(0))
            .otherwise(games_total)
            .cast(pl.Int32, strict=False)
            .alias("games_total"),
            _text(table, "birth_year").str.slice(0, 4).cast(pl.Int32, strict=False).alias("birth_year"),
            # As stated; null where the file does not say (regulations.mark_elite_reached decides under the rule set).
            pl.when(ever.is_in(EVER_TRUE)).then(True).when(ever.is_in(EVER_FALSE)).then(False).alias("ever_2400"),
            # The K the list published (optional): a tiered policy honours it, see regulations.k_from_previous_list.
            _text(table, f"{prefix}k").cast(pl.Float64, strict=False).cast(pl.Int16, strict=False).alias("k"),
        )
        .filter(~pl.col("_line").is_in(problems.implode()))
        .drop("_line")
    )
