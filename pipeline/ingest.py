"""Read the landing zone (raw/<federation>/<month>/ dumps and raw/players/) into RawGames and Players frames."""

from __future__ import annotations

import io
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import polars as pl

from pipeline.formats import read_dump
from pipeline.formats.common import UnreadableDump, decode_text, decompress, strip_compression
from pipeline.months import parse_month
from pipeline.storage import ObjectStore
from schemas.players import Players
from schemas.raw_games import RawGames
from schemas.util import conform, empty_frame

RAW = "raw"
PLAYERS_FOLDER = "players"
PLAYERS_FILE = "players.csv"
SEED_LIST_FILE = "seed_list.csv"
# Dumps are independent; threads overlap object-store latency with parsing (Polars releases the GIL).
READ_WORKERS = 8

PLAYER_COLUMN_ALIASES = {"id": "player_id", "fide_id": "player_id", "fed": "federation", "birthday": "birth_year", "born": "birth_year"}
SEX_SPELLINGS = {"M": "M", "F": "F", "W": "F"}  # TRF and FIDE lists write women as 'w' or 'f'


def read_file(path_or_bytes: str | os.PathLike | bytes | BinaryIO, name: str, federation: str, month: str) -> pl.DataFrame:
    """RawGames rows of one dump (format from the extension of `name`; .gz/.zst read transparently).

    `name` is the dump's key relative to raw/, e.g. 'GER/2024-01/open-a.trf': it becomes
    source_file, and without its extensions the default event_id.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
    elif hasattr(path_or_bytes, "read"):
        data = path_or_bytes.read()  # an open binary file, e.g. from ObjectStore.open
    else:
        data = Path(path_or_bytes).read_bytes()
    return read_dump(data, name, federation, month)


def month_dump_keys(store: ObjectStore, month: str) -> list[tuple[str, str]]:
    """(federation, key) of every dump under raw/<federation>/<month>/, players excluded, sorted."""
    parse_month(month)
    keys = []
    for federation in store.list_dirs(RAW):
        if federation == PLAYERS_FOLDER:
            continue
        keys.extend((federation, key) for key in store.list_files(RAW, federation, month))
    return keys


def read_month(store: ObjectStore, month: str) -> pl.DataFrame:
    """RawGames rows for every dump under raw/<federation>/<month>/ (all federations except 'players')."""
    keys = month_dump_keys(store, month)
    if not keys:
        return empty_frame(RawGames)

    def read_one(federation_key: tuple[str, str]) -> pl.DataFrame:
        federation, key = federation_key
        return read_dump(_read_listed(store, key), _relative_to_raw(key), federation, month)

    with ThreadPoolExecutor(max_workers=min(READ_WORKERS, len(keys))) as pool:
        frames = list(pool.map(read_one, keys))
    return pl.concat(frames, how="vertical")


def read_players(store: ObjectStore, up_to_month: str) -> pl.DataFrame:
    """Players rows from raw/players/<m>/players.csv for every m <= up_to_month; first registration wins."""
    frames = []
    for month in _player_months(store):
        if month > up_to_month:
            break
        key = _find_file(store, month, PLAYERS_FILE)
        if key is not None:
            frames.append(_registry_rows(_read_table(store, key), month))
    if not frames:
        return empty_frame(Players)
    players = pl.concat(frames, how="vertical").unique("player_id", keep="first", maintain_order=True)
    return conform(players, Players)


def read_seed_list(store: ObjectStore) -> pl.DataFrame | None:
    """The earliest raw/players/<m>/seed_list.csv, or None.

    Columns: player_id Int64, rating Int32 (null = unrated), games_total Int32 (missing -> 0),
    birth_year Int32, ever_2400 Boolean (missing -> rating >= 2400).
    """
    for month in _player_months(store):
        key = _find_file(store, month, SEED_LIST_FILE)
        if key is not None:
            return _seed_rows(_read_table(store, key))
    return None


# -- helpers ---------------------------------------------------------------------------------------
def _relative_to_raw(key: str) -> str:
    return key[len(RAW) + 1 :] if key.startswith(RAW + "/") else key


def _read_listed(store: ObjectStore, key: str) -> bytes:
    """Bytes of a key that came from the store's own listing.

    ObjectStore.path rejects names such as 'Open A (final).trf' to keep writes safe; a listed key
    cannot escape the store, so such names are read through the filesystem directly.
    """
    try:
        return store.read_bytes(key)
    except ValueError:
        return store.fs.cat_file(posixpath.join(store.base.replace(os.sep, "/"), key))


def _player_months(store: ObjectStore) -> list[str]:
    months = []
    for folder in store.list_dirs(RAW, PLAYERS_FOLDER):
        try:
            parse_month(folder)
        except ValueError:
            continue  # not a month folder (e.g. a README directory)
        months.append(folder)
    return sorted(months)


def _find_file(store: ObjectStore, month: str, file_name: str) -> str | None:
    """Key of raw/players/<month>/<file_name>, also accepted compressed (.gz/.zst)."""
    for key in store.list_files(RAW, PLAYERS_FOLDER, month):
        inner, _ = strip_compression(posixpath.basename(key))
        if inner == file_name:
            return key
    return None


def _read_table(store: ObjectStore, key: str) -> pl.DataFrame:
    """A registry CSV as text columns with lower-case names (types are fixed by the caller)."""
    _, compression = strip_compression(key)
    try:
        text = decode_text(decompress(_read_listed(store, key), compression))
    except UnreadableDump as problem:
        raise ValueError(f"player registry file {key} is unreadable: {problem}") from problem
    table = pl.read_csv(io.StringIO(text), infer_schema=False, truncate_ragged_lines=True)
    return table.rename({name: PLAYER_COLUMN_ALIASES.get(name.strip().lower(), name.strip().lower()) for name in table.columns})


def _text(table: pl.DataFrame, column: str) -> pl.Expr:
    """Stripped text of an optional column (null when absent or empty)."""
    if column not in table.columns:
        return pl.lit(None, dtype=pl.Utf8)
    stripped = pl.col(column).str.strip_chars()
    return pl.when(stripped == "").then(None).otherwise(stripped)


def _registry_rows(table: pl.DataFrame, month: str) -> pl.DataFrame:
    """Typed Players rows of one registry file; rows without a usable id cannot register anybody."""
    birth_year = _text(table, "birth_year").str.slice(0, 4).cast(pl.Int32, strict=False)
    rows = table.select(
        _text(table, "player_id").cast(pl.Int64, strict=False).alias("player_id"),
        _text(table, "name").fill_null("").alias("name"),
        _text(table, "federation").fill_null("").alias("federation"),
        _text(table, "sex").str.to_uppercase().replace_strict(SEX_SPELLINGS, default=None).alias("sex"),
        pl.when(birth_year.is_between(1900, 2100)).then(birth_year).alias("birth_year"),
        _text(table, "title").alias("title"),
        pl.lit(month).alias("registered"),
    )
    return rows.filter(pl.col("player_id").is_not_null() & (pl.col("player_id") > 0))


def _seed_rows(table: pl.DataFrame) -> pl.DataFrame:
    rating = _text(table, "rating").cast(pl.Float64, strict=False).round().cast(pl.Int32)
    ever = _text(table, "ever_2400").str.to_lowercase()
    return table.select(
        _text(table, "player_id").cast(pl.Int64, strict=False).alias("player_id"),
        rating.alias("rating"),
        _text(table, "games_total").cast(pl.Int32, strict=False).fill_null(0).alias("games_total"),
        _text(table, "birth_year").str.slice(0, 4).cast(pl.Int32, strict=False).alias("birth_year"),
        pl.coalesce(
            pl.when(ever.is_in(["true", "1", "yes", "y", "t"])).then(True).when(ever.is_in(["false", "0", "no", "n", "f"])).then(False),
            rating.fill_null(0) >= 2400,
        ).alias("ever_2400"),
    ).filter(pl.col("player_id").is_not_null())
