"""The registry and the seed list under raw/players/: players.csv, seed_list.csv or FIDE rating-list files."""

from __future__ import annotations

import io
import posixpath

import polars as pl

from pipeline.formats.common import UnreadableDump, strip_compression
from pipeline.formats.decoding import decode_text, decompress
from pipeline.formats.fide_list import FideListFile, parse_fide_list
from pipeline.ingest.dumps import read_listed
from pipeline.ingest.landing import (
    REGISTRY,
    REGISTRY_FOLDER,
    inventory,
)
from pipeline.store.object_store import ObjectStore
from schemas.players import Players
from schemas.util import conform, empty_frame

PLAYERS_FOLDER = REGISTRY_FOLDER
PLAYERS_FILE = "players.csv"
SEED_LIST_FILE = "seed_list.csv"


PLAYER_COLUMN_ALIASES = {
    "id": "player_id",
    "fide_id": "player_id",
    "fed": "federation",
    "birthday": "birth_year",
    "born": "birth_year",
}
SEX_SPELLINGS = {"M": "M", "F": "F", "W": "F"}  # TRF and FIDE lists write women as 'w' or 'f'
# Title codes of the 2001-2012 lists -> today's; others (such as 'h' and 'wh') are kept as written.
OLD_TITLE_CODES = {"g": "GM", "m": "IM", "f": "FM", "c": "CM", "wg": "WGM", "wm": "WIM", "wf": "WFM", "wc": "WCM"}


def read_players(store: ObjectStore, up_to_month: str) -> pl.DataFrame:
    """Players rows from raw/players/<m>/ for every m <= up_to_month; first registration wins.

    A month folder holds players.csv (the registry) and/or FIDE rating-list files (.txt in the
    layouts A-F, e.g. players_list_foa.txt or JAN04FRL.TXT): both register players. Rows without a
    usable id register nobody (`registry_problems` lists them).
    """
    frames = []
    for month, keys in _registry_keys(store).items():
        if month > up_to_month:
            break
        key = _find_file(keys, PLAYERS_FILE)
        if key is not None:
            frames.append(registry_rows(_read_table(store, key), month))
        for fide_list in _fide_lists(store, keys):
            frames.append(fide_list_registry_rows(fide_list.players, month))
    if not frames:
        return empty_frame(Players)
    # is_first_distinct, not unique(keep="first"): the same rows, with a tenth of the memory (0.2 GB for 900,000).
    players = pl.concat(frames, how="vertical").filter(pl.col("player_id").is_first_distinct())
    return conform(players, Players)


def read_seed_list(store: ObjectStore) -> pl.DataFrame | None:
    """The seed list of the earliest raw/players/<m>/ that has one, or None.

    `seed_list.csv` wins; otherwise a FIDE rating-list file (layouts A-F) of that month serves.
    Columns: player_id Int64, rating Int32 (null = unrated), games_total Int32 (empty or missing:
    null for rated players, whose game count is unknown, so they count as established; 0 for
    unrated players; a FIDE list never gives it), birth_year Int32, ever_2400 Boolean (as the file
    states it, null where it does not, and always for a FIDE list: no rule set is known here, so
    whether a rating has reached the elite threshold is decided by the rule set that rates the list,
    from the rating and its k.elite_from, and a list K of 10 means it was reached,
    regulations.k_ten_for_good); from a FIDE list also k (Int16) and inactive (flag i).
    """
    for keys in _registry_keys(store).values():
        key = _find_file(keys, SEED_LIST_FILE)
        if key is not None:
            return seed_rows(_read_table(store, key))
        lists = _fide_lists(store, keys)
        if lists:
            return fide_list_seed_rows(lists[0])
    return None


def seed_list_month(store: ObjectStore) -> str | None:
    """The month folder raw/players/<M>/ that read_seed_list reads its seed list from (the list in force from M), or
    None without one. Only the files' names are looked at.
    """
    for month, keys in _registry_keys(store).items():
        if _find_file(keys, SEED_LIST_FILE) is not None or any(_is_fide_list_name(key) for key in keys):
            return month
    return None


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


def fide_list_seed_rows(fide_list: FideListFile) -> pl.DataFrame:
    """The seed-list columns from a parsed FIDE list, rated in the list's own rating type."""
    kind = fide_list.rating_type
    rating = pl.col(f"{kind}_rating")
    return fide_list.players.select(
        "player_id",
        rating.alias("rating"),
        pl.when(rating.is_null()).then(pl.lit(0, dtype=pl.Int32)).alias("games_total"),
        "birth_year",
        # The list does not say (regulations.k_ten_for_good reads the rating and the K under the rule set).
        pl.lit(None, dtype=pl.Boolean).alias("ever_2400"),
        pl.col(f"{kind}_k").alias("k"),
        "inactive",
    )


def registry_problems(table: pl.DataFrame) -> pl.DataFrame:
    """Rows of a registry CSV (text columns, lower-case names) that cannot register anybody, with why.

    Columns: source_line (the CSV line), reason (unparseable / duplicate), detail, raw_text.
    """
    ids = _text(table, "player_id")
    parsed = ids.cast(pl.Int64, strict=False)
    usable = parsed.is_not_null() & (parsed > 0)
    raw_text = (
        pl.concat_str([pl.col(c).fill_null("") for c in table.columns], separator=",") if table.columns else pl.lit("")
    )
    frame = table.with_row_index("_row").select(
        (pl.col("_row").cast(pl.Int64) + 2).alias("source_line"),  # line 1 is the header
        raw_text.alias("raw_text"),
        ids.alias("_id_text"),
        pl.when(usable).then(parsed).alias("_id"),
    )
    duplicate = pl.col("_id").is_not_null() & (pl.int_range(pl.len()).over("_id") > 0)
    return (
        frame.with_columns(
            pl.when(pl.col("_id").is_null())
            .then(pl.lit("unparseable"))
            .when(duplicate)
            .then(pl.lit("duplicate"))
            .alias("reason"),
            pl.when(pl.col("_id").is_null())
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


def _registry_keys(store: ObjectStore) -> dict[str, list[str]]:
    """Month -> keys of the regular files in raw/players/<month>/ (links and special files are never read), sorted."""
    keys: dict[str, list[str]] = {}
    for entry in inventory(store, REGISTRY_FOLDER):  # not the federations' dumps: thousands of files a month
        if entry.kind == REGISTRY and entry.month is not None:
            keys.setdefault(entry.month, []).append(entry.key)
    return dict(sorted(keys.items()))


def _is_fide_list_name(key: str) -> bool:
    """A registry key read as a FIDE rating-list file: a .txt, also compressed."""
    return strip_compression(posixpath.basename(key))[0].lower().endswith(".txt")


def _fide_lists(store: ObjectStore, keys: list[str]) -> list[FideListFile]:
    """The FIDE rating-list files (.txt, also compressed) among one month's registry keys, parsed, sorted by name."""
    lists = []
    for key in keys:
        if not _is_fide_list_name(key):
            continue
        inner, compression = strip_compression(posixpath.basename(key))
        try:
            lists.append(parse_fide_list(decompress(read_listed(store, key), compression), inner))
        except UnreadableDump as problem:
            raise ValueError(f"player list file {key} is unreadable: {problem}") from problem
    return lists


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
    """A registry or seed-list CSV's bytes as text columns with lower-case names; UnreadableDump if not a CSV."""
    text = decode_text(data)
    if not text.strip():
        raise UnreadableDump("empty file")
    try:
        table = pl.read_csv(io.StringIO(text), infer_schema=False, truncate_ragged_lines=True)
    except pl.exceptions.PolarsError as error:
        raise UnreadableDump(f"not a readable CSV file: {str(error).splitlines()[0]}") from error
    return table.rename(
        {name: PLAYER_COLUMN_ALIASES.get(name.strip().lower(), name.strip().lower()) for name in table.columns}
    )


def _text(table: pl.DataFrame, column: str) -> pl.Expr:
    """Stripped text of an optional column (null when absent or empty)."""
    if column not in table.columns:
        return pl.lit(None, dtype=pl.Utf8)
    stripped = pl.col(column).str.strip_chars()
    return pl.when(stripped == "").then(None).otherwise(stripped)


def registry_rows(table: pl.DataFrame, month: str) -> pl.DataFrame:
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


def seed_rows(table: pl.DataFrame) -> pl.DataFrame:
    """The seed-list columns of a seed_list.csv (text columns, lower-case names): player_id, rating, games_total,
    birth_year, ever_2400, k.
    """
    rating = _text(table, "rating").cast(pl.Float64, strict=False).round().cast(pl.Int32)
    games_total = _text(table, "games_total").cast(pl.Int32, strict=False)
    ever = _text(table, "ever_2400").str.to_lowercase()
    return table.select(
        _text(table, "player_id").cast(pl.Int64, strict=False).alias("player_id"),
        rating.alias("rating"),
        # An empty games_total is unknown: null (established, see regulations.development_coefficient) for a rated
        # player, 0 for an unrated one.
        pl.when(rating.is_null()).then(games_total.fill_null(0)).otherwise(games_total).alias("games_total"),
        _text(table, "birth_year").str.slice(0, 4).cast(pl.Int32, strict=False).alias("birth_year"),
        # As stated; null where the file does not say (regulations.k_ten_for_good decides under the rule set).
        pl.when(ever.is_in(["true", "1", "yes", "y", "t"]))
        .then(True)
        .when(ever.is_in(["false", "0", "no", "n", "f"]))
        .then(False)
        .alias("ever_2400"),
        # The K the list published (optional): a tiered policy honours it, see regulations.k_from_previous_list.
        _text(table, "k").cast(pl.Int16, strict=False).alias("k"),
    ).filter(pl.col("player_id").is_not_null())
