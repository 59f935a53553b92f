"""Who a record's players are.

Ids checked, names normalised and matched against the registry, local ids, the identity report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from pipeline.hashing import stable_hash
from pipeline.ingest.registry import OLDER_SPELLING
from schemas.identity import Identity
from schemas.players import Players
from schemas.util import conform

if TYPE_CHECKING:
    from polars._typing import PolarsDataType


def name_key(name: pl.Expr) -> pl.Expr:
    """Comparable form of 'Last, First': invisible characters dropped, Unicode NFC, trimmed, single spaces, one space
    after the comma.

    Invisible characters are Unicode's format characters (category Cf: zero-width space and joiners,
    word joiner, BOM, soft hyphen, bidi controls): a name pasted from a web page or a word processor
    carries them unseen, and they are dropped first so that what they separated can compose. NFC, not
    NFKC: it makes 'é' written as one character or as 'e' and a combining accent one name, and leaves a
    name already in NFC as it is, so the local ids (local_id) of the names seen so far stay the same;
    NFKC would also fold compatibility characters (ligatures, full-width letters), changing the key,
    and so the local id, of names written with them.
    """
    visible = name.str.replace_all(r"\p{Cf}", "").str.normalize("NFC")
    return visible.str.strip_chars().str.replace_all(r"\s+", " ").str.replace_all(r"\s*,\s*", ", ")


# The registry's names in name_key form: a column a run's registry carries so that each month does not
# normalise its 900,000 names again (with_name_keys).
NAME_KEY = "_name"


def with_name_keys(players: pl.DataFrame) -> pl.DataFrame:
    """`players` with NAME_KEY (name_key of name), computed only when it does not carry it already."""
    return players if NAME_KEY in players.columns else players.with_columns(name_key(pl.col("name")).alias(NAME_KEY))


def resolve_players(frame: pl.DataFrame, players: pl.DataFrame, rated: pl.Series | None = None) -> pl.DataFrame:
    """_white/_black: the id the record is rated under, _<side>_status (schemas.identity) and a problem text.

    An id written in the dump identifies the player, registered or not: the registry adds names,
    federations and titles, and identifies records that carry a name only. The one exception is an
    unregistered id whose name the registry holds under another id: a mistyped id, not a new player
    (_mistyped_records). A record without an id is matched by name against the registry and the month's own
    (name, id) pairs. `rated`: the unregistered ids earlier months rated (their identity tables' `new` ids), which
    keep their history where they are used for one registered player alone.
    """
    registered = players["player_id"].cast(pl.Int64).implode()
    # Only ids that can identify somebody are given to records by name (a registry's id 0 or a dump's 10^16
    # would reach the games table through a name). A registry in force (pipeline.ingest.registry.registry_in_force)
    # may also hold the names earlier folders gave its players (OLDER_SPELLING): tried only for names no player
    # holds today, so a renamed player is still found under the old name, and a name given to another player
    # since is that player's.
    older = pl.col(OLDER_SPELLING) if OLDER_SPELLING in players.columns else pl.lit(False)
    registry_names = (
        with_name_keys(players)
        .select(pl.col(NAME_KEY), pl.col("player_id").cast(pl.Int64), older.alias(OLDER_SPELLING))
        .filter(is_valid_id(pl.col("player_id")))
    )
    name_only = frame.select(
        (
            (pl.col("white_id").is_null() & pl.col("white_name").is_not_null())
            | (pl.col("black_id").is_null() & pl.col("black_name").is_not_null())
        ).any()
    ).item()
    if name_only:  # most months have none: the month's (name, id) pairs are gathered only when needed
        dump_names = (
            pl.concat(
                [
                    frame.select(pl.col(f"{side}_name").alias("name"), pl.col(f"{side}_id").alias("player_id"))
                    for side in ("white", "black")
                ]
            )
            .filter(pl.col("name").is_not_null() & is_valid_id(pl.col("player_id")))
            .unique()
            .select(name_key(pl.col("name")).alias(NAME_KEY), pl.col("player_id"), pl.lit(False).alias(OLDER_SPELLING))
        )
        everyone = pl.concat([registry_names, dump_names])
    else:
        everyone = registry_names
    frame = frame.with_row_index("_row")
    mistyped = _mistyped_records(frame, registered, registry_names, rated) if players.height else _NO_MISTYPED
    for side in ("white", "black"):
        given, name = pl.col(f"{side}_id"), pl.col(f"{side}_name")
        frame = frame.with_columns(given.is_in(registered).fill_null(False).alias("_registered"))
        frame = frame.with_columns(_local_ids(frame, name, given.is_null() & _is_a_name(name)))
        # Names are looked up only for the (few) records that need it, not for the whole month.
        by_name = _name_matches(
            frame.filter(given.is_null() & name.is_not_null()).select("_row", name.alias("_raw_name")), everyone
        )
        frame = (
            frame.join(by_name, on="_row", how="left", maintain_order="left")
            .join(mistyped.filter(pl.col("_side") == side).drop("_side"), on="_row", how="left", maintain_order="left")
            .with_columns(
                pl.when(given.is_not_null() & pl.col("_registered"))
                .then(pl.lit("registered"))
                .when(given.is_not_null() & (pl.col("_registered_as").is_null() | pl.col("_kept").fill_null(False)))
                .then(pl.lit("new"))
                .when(given.is_not_null())
                .then(pl.lit("id_mismatch"))
                .when(pl.col("_name_matches") == 1)
                .then(pl.lit("matched_by_name"))
                .when(pl.col("_name_matches") > 1)
                .then(pl.lit("ambiguous"))
                .when(_is_a_name(name))
                .then(pl.lit("new_name"))
                .otherwise(pl.lit("unmatched"))
                .alias(f"_{side}_status"),
                pl.col("_name_matches").fill_null(0).alias(f"_{side}_candidates"),
                pl.col("_registered_as").alias(f"_{side}_registered_as"),
            )
            .with_columns(
                pl.when(pl.col(f"_{side}_status").is_in(["registered", "new"]))
                .then(given)
                .when(pl.col(f"_{side}_status") == "matched_by_name")
                .then(pl.col("_name_id"))
                .when(pl.col(f"_{side}_status") == "new_name")
                .then(pl.col("_local_id"))
                .alias(f"_{side}"),
                pl.when(pl.col(f"_{side}_status") == "id_mismatch")
                .then(
                    pl.format(
                        f"{side} id {{}} is not registered, and '{{}}' is registered as {{}} (a mistyped id?{{}})",
                        given,
                        pl.col("_mistyped_name"),
                        pl.col("_registered_as"),
                        pl.when(name.is_null() | (name != pl.col("_mistyped_name")))
                        .then(pl.lit("; another record of the month writes the id beside that name"))
                        .otherwise(pl.lit("")),
                    )
                )
                .when(pl.col(f"_{side}_status") == "unmatched")
                .then(pl.format(f"{side} has neither id nor name (name as written: '{{}}')", name.fill_null("")))
                .when(pl.col(f"_{side}_status") == "ambiguous")
                .then(
                    pl.format(f"{side} has no id and name '{{}}' matches {{}} players", name, pl.col("_name_matches"))
                )
                .alias(f"_{side}_problem"),
            )
            .drop("_name_id", "_name_matches", "_registered", "_registered_as", "_mistyped_name", "_kept", "_local_id")
        )
    return frame.drop("_row")


_NO_MISTYPED = pl.DataFrame(
    schema={
        "_row": pl.UInt32,
        "_side": pl.Utf8,
        "_registered_as": pl.Int64,
        "_mistyped_name": pl.Utf8,
        "_kept": pl.Boolean,
    }
)


def _mistyped_records(
    frame: pl.DataFrame, registered: pl.Series, registry_names: pl.DataFrame, rated: pl.Series | None
) -> pl.DataFrame:
    """The month's records (_row, _side) whose unregistered id is written where the registry holds the player under
    another id: that id (_registered_as), the name that shows it (_mistyped_name) and whether the records are rated
    under the written id all the same (_kept); every other record is rated under the id it writes.

    A record is a mistyped id when its id is unregistered and its name is registered under another id: decided per
    record where the month writes the id beside other names too (an unregistered player's id copied onto a
    registered player's line: only that line is quarantined, whatever the id's history). Where every named record of
    the id names one registered player, the id is that player's written wrongly, or a player rated under it before
    the registry gave the name to another id, and the verdict is the id's, over all its records, those without a
    name too: an id earlier months rated (`rated`) keeps its history, every record rated under it (_kept; the run's
    summary warns, names_registered_elsewhere); any other is quarantined whole (a record without a name would rate
    under the id the player the named ones show to be somebody else).
    """
    # Only records whose id the registry does not hold are looked at (a month of registered ids has none).
    unregistered = pl.concat(
        [
            frame.select(
                "_row",
                pl.lit(side).alias("_side"),
                pl.col(f"{side}_id").alias("_id"),
                pl.col(f"{side}_name").alias("_raw_name"),
            ).filter(pl.col("_id").is_not_null() & ~pl.col("_id").is_in(registered))
            for side in ("white", "black")
        ]
    ).sort("_row", maintain_order=True)
    named = unregistered.filter(_is_a_name(pl.col("_raw_name"))).with_row_index("_named_row")
    matches = _name_matches(named.select(pl.col("_named_row").alias("_row"), "_raw_name"), registry_names)
    named = named.join(matches.rename({"_row": "_named_row"}), on="_named_row", how="left", maintain_order="left")
    # One registered player in every named record of the id: the verdict is the id's.
    consistent = (
        named.group_by("_id", maintain_order=True)
        .agg(
            pl.col("_name_id").first().alias("_registered_as"),
            pl.col("_raw_name").first().alias("_mistyped_name"),
            (pl.col("_name_id").is_not_null().all() & (pl.col("_name_id").n_unique() == 1)).alias("_one_player"),
        )
        .filter("_one_player")
        .drop("_one_player")
    )
    kept = pl.col("_id").is_in(rated.implode()) if rated is not None and rated.len() else pl.lit(False)
    whole = unregistered.join(consistent, on="_id").select(
        "_row", "_side", "_registered_as", "_mistyped_name", kept.alias("_kept")
    )
    by_record = named.filter(
        pl.col("_name_id").is_not_null() & ~pl.col("_id").is_in(consistent["_id"].implode())
    ).select(
        "_row",
        "_side",
        pl.col("_name_id").alias("_registered_as"),
        pl.col("_raw_name").alias("_mistyped_name"),
        pl.lit(False).alias("_kept"),
    )
    return pl.concat([whole, by_record]).cast(_NO_MISTYPED.schema)


# Players known by name only get a local id from their name: above every FIDE id, stable across months.
LOCAL_ID_BASE = 10**15
# The largest id a dump may give a player. Real FIDE ids have up to 9 digits today (the largest in the real
# files of ../shared/realdata, PGN FideId tags, are 653046340 and 569000166; the 2004 and 2013 lists hold
# 7- and 8-digit ids), and FIDE's formats leave room to grow: TRF's id field (columns 58-68) is 11
# characters "including 3 digits reserve", the rating lists' is 15 wide. 11 digits is the widest id a
# FIDE file can carry in every layout, so a real id is never refused; above it, and up to the local ids,
# an id is a mistake (a phone number, two ids run together, a spreadsheet's mangled number).
MAX_FIDE_ID = 10**11 - 1


def is_valid_id(player_id: pl.Expr) -> pl.Expr:
    """Whether an id can be a player's id as a dump writes it: 1..MAX_FIDE_ID (null stays null)."""
    return player_id.is_between(1, MAX_FIDE_ID)


def id_problems(white_id: pl.Expr, black_id: pl.Expr) -> pl.Expr:
    """Why the ids as read cannot identify players ('; '-joined, one per side), or null when both can (or are absent).

    The one check of every format's ids (TRF, PGN, CSV, Parquet): the readers parse what is written and
    this decides whether it can be an id, so that `ratings validate` and the pipeline agree. 0 and
    negative ids, ids beyond MAX_FIDE_ID and ids in the local-id range (LOCAL_ID_BASE and above, which
    the pipeline gives players known by name only; an id there would merge a dump's player with one of
    them) are quarantined as invalid_id: none of them would survive the games table's ids > 0, or be
    the player the dump means. A reader that reads '0' as "no id" (TRF's 0000, PGN's "0") gives null.
    """
    problems = []
    for side, given in (("white", white_id), ("black", black_id)):
        problems.append(
            pl.when(given == 0)
            .then(pl.lit(f"{side} id 0 is no player id (leave it empty when the player has none)"))
            .when(given < 0)
            .then(pl.format(f"{side} id {{}} is negative: a player id is a positive number", given))
            .when(given >= LOCAL_ID_BASE)
            .then(
                pl.format(
                    f"{side} id {{}} is in the local-id range (10^15 and above, the ids of players known by name "
                    "only): no FIDE id",
                    given,
                )
            )
            .when(given > MAX_FIDE_ID)
            .then(
                pl.format(
                    f"{side} id {{}} is beyond FIDE's id range (at most {len(str(MAX_FIDE_ID))} digits)",
                    given,
                )
            )
        )
    joined = pl.concat_str(problems, separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _is_a_name(name: pl.Expr) -> pl.Expr:
    """A written name that can identify somebody: it holds a letter ('?', '-' or '' name nobody)."""
    return name.str.contains(r"\p{L}").fill_null(False)


def local_id(names: pl.Series) -> pl.Series:
    """The local id of each name (normalised first): LOCAL_ID_BASE + a stable hash, so equal names get equal ids."""
    keys = names.to_frame("name").select(name_key(pl.col("name"))).to_series()
    return (stable_hash(keys) % LOCAL_ID_BASE).cast(pl.Int64) + LOCAL_ID_BASE


def _local_ids(frame: pl.DataFrame, name: pl.Expr, needed: pl.Expr) -> pl.Series:
    """_local_id: the local id of the rows where `needed` holds (null elsewhere); hashed only for those rows."""
    rows = frame.select(pl.col("_row"), name.alias("_n"), needed.alias("_needed")).filter(pl.col("_needed"))
    ids = pl.Series("_local_id", [None] * frame.height, dtype=pl.Int64)
    if rows.height:
        ids = ids.scatter(rows["_row"], local_id(rows["_n"]))
    return ids


def _name_matches(wanted: pl.DataFrame, players: pl.DataFrame) -> pl.DataFrame:
    """Per wanted row (_row, _raw_name): the first id with that name and how many distinct ids share it (null: none).

    `players` holds (NAME_KEY, player_id, OLDER_SPELLING) pairs, possibly several per id, in registry order; the
    older spellings are looked at only for names no other pair holds.
    """
    wanted = wanted.with_columns(name_key(pl.col("_raw_name")).alias(NAME_KEY))
    schema: dict[str, PolarsDataType] = {"_row": wanted["_row"].dtype, "_name_id": pl.Int64, "_name_matches": pl.UInt32}
    if wanted.is_empty():
        return pl.DataFrame(schema=schema)
    candidates = players.filter(pl.col(NAME_KEY).is_in(wanted[NAME_KEY].implode())).select(
        NAME_KEY, "player_id", OLDER_SPELLING
    )
    # A name held today hides the older spellings of it.
    current = candidates.filter(~pl.col(OLDER_SPELLING))
    candidates = candidates.filter(~pl.col(OLDER_SPELLING) | ~pl.col(NAME_KEY).is_in(current[NAME_KEY].implode()))
    by_name = (
        candidates.select(NAME_KEY, "player_id")
        .unique(maintain_order=True)
        .group_by(NAME_KEY, maintain_order=True)
        .agg(pl.col("player_id").first().alias("_name_id"), pl.len().cast(pl.UInt32).alias("_name_matches"))
    )
    return wanted.join(by_name, on=NAME_KEY, how="inner").select(*schema)


def identity_report(frame: pl.DataFrame | pl.LazyFrame, month: str) -> pl.DataFrame:
    """schemas.Identity rows of a resolved month frame (both sides; registered ids are not listed)."""
    # Registered ids are most of a month: they are dropped before any text is built, and (lazily) only the columns
    # read here are filtered, not the whole month's.
    sides = pl.concat(
        [
            frame.lazy()
            .filter(pl.col(f"_{side}_status") != "registered")
            .select(
                pl.col(f"_{side}_status").alias("status"),
                pl.col(f"{side}_name").alias("name"),
                pl.col(f"{side}_id").alias("given_id"),
                pl.col(f"_{side}").alias("player_id"),
                pl.col(f"_{side}_candidates").alias("candidates"),
                pl.col(f"_{side}_registered_as").alias("registered_as"),
                pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_where"),
                pl.col(f"{side}_federation").alias("federation"),
                pl.col(f"{side}_title").alias("title"),
            )
            .collect()
            for side in ("white", "black")
        ]
    )
    report = sides.group_by("status", "name", "given_id", "player_id", maintain_order=True).agg(
        pl.col("candidates").max(),
        pl.col("registered_as").max(),
        pl.len().cast(pl.UInt32).alias("records"),
        pl.col("_where").first().alias("first_seen"),
        *[_most_frequent(column) for column in ("federation", "title")],
    )
    # Spellings name_key merged (NFC and NFD, an invisible character, blanks) are rows of their own, as written;
    # `spellings` says how many there are, since two of them may print alike.
    report = report.with_columns(
        pl.col("name").n_unique().over("player_id", name_key(pl.col("name"))).cast(pl.UInt32).alias("spellings")
    )
    return conform(report.with_columns(pl.lit(month).alias("month")), Identity).sort(
        "status", "name", "given_id", nulls_last=True
    )


def _most_frequent(column: str) -> pl.Expr:
    """The value of `column` the most records of a group state (ties: the first in sort order), null when none does."""
    values = pl.col(column).drop_nulls()
    return values.mode().sort().first().alias(column)


def dump_name_versions(identities: pl.DataFrame) -> pl.DataFrame:
    """Every version of how the dumps name the ids identities rated without a registry entry (new ids and local ids):
    one row per player and month that names them, in (player_id, month) order, holding what a list of that month or
    later names them by until a later month names them again (players_named_in_dumps).

    A month's name is the one the most of its records write (ties: the first in text order); the federation and
    title are the most recent month's that states one (each month's from its most records), else '' and null. The
    columns are the Players columns, `registered` being the month of the version.
    """
    stated = [pl.lit(None, dtype=pl.Utf8).alias(name) for name in ("federation", "title") if name not in identities]
    named = identities.with_columns(stated).filter(
        pl.col("status").is_in(["new", "new_name"]) & pl.col("player_id").is_not_null() & pl.col("name").is_not_null()
    )
    by_records = named.sort(["player_id", "month", "records", "name"], descending=[False, False, True, False])
    per_month = by_records.group_by("player_id", "month", maintain_order=True).agg(
        pl.col("name").first(), pl.col("federation").drop_nulls().first(), pl.col("title").drop_nulls().first()
    )
    return conform(
        per_month.select(
            "player_id",
            name_key(pl.col("name")).alias("name"),
            pl.col("federation").forward_fill().over("player_id").fill_null(""),
            pl.lit(None, dtype=pl.Utf8).alias("sex"),
            pl.lit(None, dtype=pl.Int32).alias("birth_year"),
            pl.col("title").forward_fill().over("player_id"),
            pl.col("month").alias("registered"),
        ),
        Players,
    )


def named_as_of(versions: pl.DataFrame, month: str | None = None) -> pl.DataFrame:
    """Players rows from dump_name_versions: each player's latest version of `month` or before (None: the latest),
    in id order.
    """
    known = versions if month is None else versions.filter(pl.col("registered") <= month)
    return known.filter(pl.col("player_id").is_last_distinct())


def players_named_in_dumps(identities: pl.DataFrame, month: str | None = None) -> pl.DataFrame:
    """Players rows for the ids identities rated without a registry entry (new ids and local ids), named as the dumps
    of `month` and before name them (None: all of them; dump_name_versions): the name written in the dumps (the latest
    month's, then the most records); the federation and title the latest the dumps state ('' and null when none
    does); sex and birth year unknown. `registered` is the month the name was seen. The registry's rows win over these
    (pipeline.publish.lists).
    """
    return named_as_of(dump_name_versions(identities), month)


def names_given_ids(identities: pl.DataFrame) -> pl.DataFrame:
    """The players the dumps named only and a month rated under a local id (new_name) whose name a later month matched
    to an id (matched_by_name: the registry registered the name since, or a dump wrote it beside an id).

    Nothing carries the local id's games over to that id: from the later month the name's records are that id's, who
    starts as a player of their own, and the local id keeps its games (unrated ones pending for ever). `identities`:
    identity rows of any months (month, status, name, player_id). One row per local id and id, in local-id order:
    name (as first written), local_id, first (the local id's first month), player_id, month (the first month of
    `player_id`'s after `first`).
    """
    matched = identities.filter((pl.col("status") == "matched_by_name") & pl.col("player_id").is_not_null())
    # A name comes back every month: each spelling is normalised once (name_key), not once per month's row.
    spellings = (
        identities.filter(pl.col("status") == "new_name")
        .sort("month", maintain_order=True)
        .group_by("name", maintain_order=True)
        .agg(pl.col("player_id").first().alias("local_id"), pl.col("month").first().alias("first"))
    )
    if matched.is_empty() or spellings.is_empty():  # most runs: nothing to normalise
        spellings = spellings.clear()
    local = (
        spellings.with_columns(name_key(pl.col("name")).alias(NAME_KEY))
        .sort("first", maintain_order=True)
        .group_by(NAME_KEY)
        .agg(pl.col("name").first(), pl.col("local_id").first(), pl.col("first").first())
    )
    return (
        local.join(matched.select(name_key(pl.col("name")).alias(NAME_KEY), "player_id", "month"), on=NAME_KEY)
        .filter(pl.col("month") > pl.col("first"))
        .group_by("name", "local_id", "first", "player_id")
        .agg(pl.col("month").min())
        .sort("local_id", "month", "player_id")
    )


def name_id_lines(splits: pl.DataFrame) -> list[str]:
    """What the run's summary says of each names_given_ids row, and what to do about it."""
    return [
        f"'{name}' was rated by name under the local id {local} from {first}; from {month} the name's records are "
        f"rated as {player} (registered since, or written beside that id in the dumps), a player of their own, and the "
        f"local id keeps its games: to rate them all as {player}, register {player} under this name in "
        f"raw/players/{first}/ (or write the id in the dumps from {first}) and run again from {first}"
        for name, local, first, player, month in splits.select("name", "local_id", "first", "player_id", "month").rows()
    ]


def names_registered_elsewhere(identities: pl.DataFrame) -> pl.DataFrame:
    """The unregistered ids rated under their history though the name their records write is registered under another
    id (`new` rows with registered_as: _mistyped_records keeps an id earlier months rated).

    `identities`: identity rows of any months (month, status, name, player_id, registered_as), those of these ids'
    `new` rows before they were first told apart included. One row per id and registered id, in id order: player_id,
    name (as first written), registered_as, since (the id's first month), first and last (the months its records
    wrote a name the registry holds as registered_as).
    """
    new = identities.filter(pl.col("status") == "new")
    told = new.filter(pl.col("registered_as").is_not_null()).sort("month", maintain_order=True)
    since = (
        new.filter(pl.col("player_id").is_in(told["player_id"].implode()))
        .group_by("player_id")
        .agg(pl.col("month").min().alias("since"))
    )
    return (
        told.group_by("player_id", "registered_as", maintain_order=True)
        .agg(
            pl.col("name").drop_nulls().first(),
            pl.col("month").min().alias("first"),
            pl.col("month").max().alias("last"),
        )
        .join(since, on="player_id")
        .select("player_id", "name", "registered_as", "since", "first", "last")
        .sort("player_id", "first", "registered_as")
    )


def registered_elsewhere_lines(ids: pl.DataFrame) -> list[str]:
    """What the run's summary says of each names_registered_elsewhere row, and what to do about it."""
    lines = []
    for player, name, registered_as, since, first, last in ids.rows():
        months = first if first == last else f"{first}..{last}"
        lines.append(
            f"id {player} is not registered, and its records of {months} write '{name}', whom the registry "
            f"registers as {registered_as}: they are rated as {player}, whose games since {since} are rated under "
            f"it, not as {registered_as}. To rate them as {registered_as}, write {registered_as} in the dumps "
            f"instead of {player} and run again from {since}; to keep {player}, register it in raw/players/{since}/ "
            f"(under a name that tells it apart from {registered_as}'s, or records written by name alone match both)"
        )
    return lines
