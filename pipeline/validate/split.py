"""Split raw game records into validated games and quarantined records, each with one reason code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import polars as pl

from pipeline.formats.common import READER_REASONS

# A stated rating outside RATING_PLAUSIBLE is a typo, not a rating.
from pipeline.formats.fide_list import RATING_PLAUSIBLE
from pipeline.hashing import stable_hash
from pipeline.ingest.landing import MISPLACED, NOT_A_FILE
from pipeline.ingest.read import read_players
from pipeline.months import add_months, first_day, month_range
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from schemas.games import TIME_CONTROLS, Games
from schemas.identity import Identity
from schemas.players import Players
from schemas.quarantine import Quarantine
from schemas.util import conform

if TYPE_CHECKING:
    from polars._typing import PolarsDataType
    from polars.expr.whenthen import ChainedThen, Then

VALID_RESULTS = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}
DEFAULT_TIME_CONTROL = "classical"
# The same game reported twice: a tournament file submitted again, or the same game in two dumps.
DUPLICATE_KEY = ["_event_start", "_white", "_black", "round", "result"]


class MonthSplit(NamedTuple):
    """A month's raw records split: validated games, quarantined records, and how players were identified."""

    games: pl.DataFrame
    quarantine: pl.DataFrame
    identities: pl.DataFrame


def split_games(
    raw: pl.DataFrame,
    players: pl.DataFrame,
    month: str,
    *,
    seen_keys: pl.DataFrame | None = None,
    check_month: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """RawGames -> (Games, Quarantine); every raw row ends in exactly one of them (see split_month)."""
    split = split_month(raw, players, month, seen_keys=seen_keys, check_month=check_month)
    return split.games, split.quarantine


def split_month(
    raw: pl.DataFrame,
    players: pl.DataFrame,
    month: str,
    *,
    seen_keys: pl.DataFrame | None = None,
    check_month: bool = True,
) -> MonthSplit:
    """RawGames -> Games, Quarantine and Identity rows; every raw row ends in exactly one of the first two.

    Checks, first match wins: misplaced and not_a_file (landing-zone entries that were not read),
    unparseable, unplayed, invalid_id (id_problems), unknown_player, self_play,
    result_out_of_domain, duplicate (of an earlier month's game), date_outside_month,
    duplicate (of a game earlier in this month: another dump, or the same tournament sent twice),
    rating_implausible.

    players: the registry (may be empty): an id in a dump identifies its player whether registered or
    not (see _resolve_players); a registry used for many months carries its names' keys
    (with_name_keys), else they are computed here. seen_keys: game_keys() of the games of earlier
    months; a game among them is a duplicate here (a tournament reported again in a later month).
    check_month=False skips date_outside_month (a loose file's month is its own).
    """
    month_start, next_month_start = first_day(month), first_day(add_months(month, 1))
    # "First copy" = earliest by file stem, then line: a resubmission's name usually extends the
    # original's ('open-a' -> 'open-a-resubmitted', 'open-a (2)'), so the original's stem sorts first.
    stem = pl.col("source_file").str.replace(r"(?i)(\.(trf|txt|pgn|csv|parquet))?(\.(gz|zst))?$", "")
    frame = raw.sort(stem, pl.col("source_file"), pl.col("source_line"), pl.col("record_id"))
    frame = frame.with_columns(id_problems(pl.col("white_id"), pl.col("black_id")).alias("_id_problem"))
    frame = _resolve_players(frame, players)
    # Only records that name players count in the identity report (not unreadable lines, byes or ids that are none).
    identities = identity_report(
        frame.filter(pl.col("parse_error").is_null() & pl.col("_id_problem").is_null() & pl.col("unplayed").is_null()),
        month,
    )

    frame = frame.with_columns(
        pl.coalesce("event_start", "date", pl.lit(month_start)).alias("_event_start"),
        pl.coalesce("date", "event_start").alias("_game_day"),
    )
    game_day = pl.col("_game_day")
    outside = game_day.is_not_null() & ((game_day < month_start) | (game_day >= next_month_start)) & pl.lit(check_month)
    # Landing-zone entries that were not read, and records a reader quarantined for a reason of its own
    # (pipeline.formats.common.READER_REASONS): '<reason>: <detail>'.
    refused = pl.col("parse_error").str.extract(f"^({'|'.join([MISPLACED, NOT_A_FILE, *READER_REASONS])}): ", 1)
    early = [
        # Landing-zone entries that were not read: the reason is the entry's kind, the detail where it belongs.
        (MISPLACED, refused == MISPLACED, pl.col("parse_error").str.strip_prefix(f"{MISPLACED}: ")),
        (NOT_A_FILE, refused == NOT_A_FILE, pl.col("parse_error").str.strip_prefix(f"{NOT_A_FILE}: ")),
        *[(code, refused == code, pl.col("parse_error").str.strip_prefix(f"{code}: ")) for code in READER_REASONS],
        ("unparseable", pl.col("parse_error").is_not_null(), pl.col("parse_error")),
        (
            "unplayed",
            pl.col("unplayed").is_not_null(),
            pl.format("{} (result {})", pl.col("unplayed"), pl.col("result").fill_null("none")),
        ),
        # After `unplayed`: exports write a bye's missing opponent as id 0, and a round not played rates nobody.
        ("invalid_id", pl.col("_id_problem").is_not_null(), pl.col("_id_problem")),
        (
            "unknown_player",
            pl.col("_white").is_null() | pl.col("_black").is_null(),
            pl.concat_str([pl.col("_white_problem"), pl.col("_black_problem")], separator="; ", ignore_nulls=True),
        ),
        (
            "self_play",
            pl.col("_white") == pl.col("_black"),
            pl.format("white and black are both player {}", pl.col("_white")),
        ),
        (
            "result_out_of_domain",
            ~pl.col("result").is_in(list(VALID_RESULTS)).fill_null(False),
            pl.format("result {} is not 1-0, 0-1 or 1/2-1/2", _quoted_or_missing(pl.col("result"))),
        ),
        # Reported in an earlier month: a duplicate, even though its date is (usually) outside this month.
        ("duplicate", pl.col("_seen_before").is_not_null(), pl.format("same game as {}", pl.col("_seen_before"))),
        ("date_outside_month", outside, pl.format("game date {} is not in {}", game_day.cast(pl.Utf8), pl.lit(month))),
    ]
    frame = _with_earlier_reports(frame, seen_keys)
    frame = frame.with_columns(_first_match(early))

    frame = _with_first_copies(frame)
    late = [
        ("duplicate", pl.col("_first_copy").is_not_null(), pl.format("same game as {}", pl.col("_first_copy"))),
        (
            "rating_implausible",
            _implausible("white_rating") | _implausible("black_rating"),
            pl.concat_str([_rating_problem("white"), _rating_problem("black")], separator="; ", ignore_nulls=True),
        ),
    ]
    frame = _apply_late(frame, late)

    games = frame.filter(pl.col("_reason").is_null()).with_columns(
        pl.col("record_id").alias("game_id"),
        pl.lit(month).alias("month"),
        pl.col("event_id").fill_null(pl.col("source_file")),
        pl.col("_event_start").alias("event_start"),
        pl.col("_white").alias("white_id"),
        pl.col("_black").alias("black_id"),
        pl.col("result").replace_strict(VALID_RESULTS, return_dtype=pl.Float64).alias("white_score"),
        pl.when(pl.col("time_control").is_in(TIME_CONTROLS))
        .then(pl.col("time_control"))
        .otherwise(pl.lit(DEFAULT_TIME_CONTROL))
        .alias("time_control"),
        pl.col("white_rating").alias("white_rating_used"),
        pl.col("black_rating").alias("black_rating_used"),
    )
    quarantine = frame.filter(pl.col("_reason").is_not_null()).with_columns(
        pl.lit(month).alias("month"),
        pl.col("_reason").alias("reason"),
        pl.col("_detail").fill_null("").alias("detail"),
    )
    return MonthSplit(conform(games, Games), conform(quarantine, Quarantine), identities)


GAME_KEY = ["event_start", "event_id", "white_id", "black_id", "round", "white_score"]


def _key_columns(day: pl.Expr, date: pl.Expr, event: pl.Expr) -> list[pl.Expr]:
    """The day and event parts of GAME_KEY: a dated game is keyed by its event's start, an undated one by its event.

    An undated game (no game date, no event start) is filed under the 1st of whichever month it was
    sent in, so the same game sent in two months has two days: its event id is what stays the same.
    """
    undated = date.is_null()
    # Event ids are '<dump key>#<event name>' when the dump names its events: the name is what two months share.
    named = event.str.replace(r"^.*?#", "")
    return [pl.when(~undated).then(day).alias("event_start"), pl.when(undated).then(named).alias("event_id")]


def game_keys(games: pl.DataFrame) -> pl.DataFrame:
    """What identifies each validated game across months (for split_games' seen_keys), with where it was seen.

    Columns: the GAME_KEY columns and first_seen ('<month> <source file>:<line>'); one row per key.
    """
    return games.select(
        *_key_columns(pl.col("event_start"), pl.col("date"), pl.col("event_id")),
        *GAME_KEY[2:],
        pl.format("{} {}:{}", pl.col("month"), pl.col("source_file"), pl.col("source_line")).alias("first_seen"),
    ).unique(GAME_KEY, keep="first", maintain_order=True)


def undated_game_keys(games: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """game_keys() of the games without a date: the only ones the month check cannot catch when sent again later."""
    return game_keys(games.lazy().filter(pl.col("date").is_null()).collect())


def _with_earlier_reports(frame: pl.DataFrame, seen_keys: pl.DataFrame | None) -> pl.DataFrame:
    """_seen_before: where an earlier month already reported this game (null when none did)."""
    if seen_keys is None or seen_keys.is_empty():
        return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_seen_before"))
    keys = frame.select(
        *_key_columns(pl.col("_event_start"), pl.col("date"), pl.col("event_id").fill_null(pl.col("source_file"))),
        pl.col("_white").alias("white_id"),
        pl.col("_black").alias("black_id"),
        pl.col("round").cast(pl.Int32),
        pl.col("result").replace_strict(VALID_RESULTS, default=None, return_dtype=pl.Float64).alias("white_score"),
    )
    seen = seen_keys.select(
        pl.col("event_start").cast(pl.Date),
        pl.col("event_id").cast(pl.Utf8),
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        pl.col("round").cast(pl.Int32),
        pl.col("white_score").cast(pl.Float64),
        pl.col("first_seen").cast(pl.Utf8),
    ).unique(GAME_KEY, keep="first")
    found = keys.join(seen, on=GAME_KEY, how="left", nulls_equal=True, maintain_order="left")["first_seen"]
    return frame.with_columns(found.alias("_seen_before"))


def reconcile(raw: pl.DataFrame, games: pl.DataFrame, quarantine: pl.DataFrame) -> pl.DataFrame:
    """One row per source file: records read, games, quarantined, and ok (records = games + quarantined).

    Also flags a file whose records are not all accounted for one to one (ok needs the ids to match,
    not only the counts).
    """
    records = raw.group_by("source_file").agg(pl.len().cast(pl.Int64).alias("records"))
    landed = pl.concat(
        [
            games.select("source_file", pl.col("game_id").alias("record_id"), pl.lit(1).alias("_game")),
            quarantine.select("source_file", "record_id", pl.lit(0).alias("_game")),
        ]
    )
    per_file = landed.group_by("source_file").agg(
        pl.col("_game").sum().cast(pl.Int64).alias("games"),
        (pl.len() - pl.col("_game").sum()).cast(pl.Int64).alias("quarantined"),
    )
    unmatched = (
        raw.select("source_file", "record_id")
        .join(landed.select("record_id"), on="record_id", how="anti")
        .group_by("source_file")
        .agg(pl.len().alias("_unmatched"))
    )
    return (
        records.join(per_file, on="source_file", how="full", coalesce=True)
        .join(unmatched, on="source_file", how="left")
        .with_columns(pl.col("records", "games", "quarantined").fill_null(0))
        .with_columns(
            ((pl.col("records") == pl.col("games") + pl.col("quarantined")) & pl.col("_unmatched").is_null()).alias(
                "ok"
            )
        )
        .drop("_unmatched")
        .sort("source_file")
    )


def _with_first_copies(frame: pl.DataFrame) -> pl.DataFrame:
    """_first_copy: for a later copy of a game in this month, where its first copy is ('<file>:<line>'); else null.

    Only records that passed every earlier check compete for "first copy", in the frame's order.
    Copies are rare, so the text is built for their keys only, not for every record of the month.
    """
    candidate = pl.col("_reason").is_null()
    later = candidate & ~pl.struct(*DUPLICATE_KEY).is_first_distinct().over(candidate)
    frame = frame.with_columns(later.alias("_later_copy"))
    copied = frame.filter(pl.col("_later_copy")).select(DUPLICATE_KEY).unique()
    firsts = (
        frame.filter(candidate & ~pl.col("_later_copy"))
        .join(copied, on=DUPLICATE_KEY, how="semi", nulls_equal=True)
        .select(*DUPLICATE_KEY, pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_first_copy"))
    )
    return (
        frame.join(firsts, on=DUPLICATE_KEY, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(pl.when(pl.col("_later_copy")).then(pl.col("_first_copy")).alias("_first_copy"))
        .drop("_later_copy")
    )


def _first_match(checks: list[tuple[str, pl.Expr, pl.Expr]]) -> list[pl.Expr]:
    """(_reason, _detail) of the first check that holds, or nulls."""
    reason: Then | ChainedThen = pl.when(pl.lit(False)).then(pl.lit(None, pl.Utf8))
    detail: Then | ChainedThen = pl.when(pl.lit(False)).then(pl.lit(None, pl.Utf8))
    for code, condition, message in checks:
        condition = condition.fill_null(False)
        reason = reason.when(condition).then(pl.lit(code))
        detail = detail.when(condition).then(message)
    return [reason.alias("_reason"), detail.alias("_detail")]


def _apply_late(frame: pl.DataFrame, late: list[tuple[str, pl.Expr, pl.Expr]]) -> pl.DataFrame:
    """Run the checks that depend on earlier outcomes, without overwriting an earlier reason."""
    reason, detail = _first_match(late)
    frame = frame.with_columns(reason.alias("_late_reason"), detail.alias("_late_detail"))
    return frame.with_columns(
        pl.coalesce("_reason", "_late_reason").alias("_reason"),
        pl.when(pl.col("_reason").is_null()).then(pl.col("_late_detail")).otherwise(pl.col("_detail")).alias("_detail"),
    )


def _quoted_or_missing(text: pl.Expr) -> pl.Expr:
    return pl.when(text.is_null()).then(pl.lit("(missing)")).otherwise(pl.concat_str([pl.lit("'"), text, pl.lit("'")]))


def _implausible(column: str) -> pl.Expr:
    low, high = RATING_PLAUSIBLE
    return pl.col(column).is_not_null() & ((pl.col(column) < low) | (pl.col(column) > high))


def _rating_problem(side: str) -> pl.Expr:
    low, high = RATING_PLAUSIBLE
    return pl.when(_implausible(f"{side}_rating")).then(
        pl.format(f"{side} rating {{}} is outside {low}-{high}", pl.col(f"{side}_rating"))
    )


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


def _resolve_players(frame: pl.DataFrame, players: pl.DataFrame) -> pl.DataFrame:
    """_white/_black: the id the record is rated under, _<side>_status (schemas.identity) and a problem text.

    An id written in the dump identifies the player, registered or not: the registry adds names,
    federations and titles, and identifies records that carry a name only. The one exception is an
    unregistered id whose name the registry holds under another id: a mistyped id, not a new player.
    A record without an id is matched by name against the registry and the month's own (name, id) pairs.
    """
    registered = players["player_id"].cast(pl.Int64).implode()
    # Only ids that can identify somebody are given to records by name (a registry's id 0 or a dump's 10^16
    # would reach the games table through a name).
    registry_names = (
        with_name_keys(players)
        .select(pl.col(NAME_KEY), pl.col("player_id").cast(pl.Int64))
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
            .select(name_key(pl.col("name")).alias(NAME_KEY), pl.col("player_id"))
        )
        everyone = pl.concat([registry_names, dump_names])
    else:
        everyone = registry_names
    frame = frame.with_row_index("_row")
    for side in ("white", "black"):
        given, name = pl.col(f"{side}_id"), pl.col(f"{side}_name")
        frame = frame.with_columns(given.is_in(registered).fill_null(False).alias("_registered"))
        frame = frame.with_columns(_local_ids(frame, name, given.is_null() & _is_a_name(name)))
        # Names are looked up only for the (few) records that need it, not for the whole month.
        by_name = _name_matches(
            frame.filter(given.is_null() & name.is_not_null()).select("_row", name.alias("_raw_name")), everyone
        )
        mistyped = (
            (
                _name_matches(
                    frame.filter(given.is_not_null() & ~pl.col("_registered") & name.is_not_null()).select(
                        "_row", name.alias("_raw_name")
                    ),
                    registry_names,
                ).select("_row", pl.col("_name_id").alias("_registered_as"))
            )
            if players.height
            else pl.DataFrame(schema={"_row": pl.UInt32, "_registered_as": pl.Int64})
        )
        frame = (
            frame.join(by_name, on="_row", how="left", maintain_order="left")
            .join(mistyped, on="_row", how="left", maintain_order="left")
            .with_columns(
                pl.when(given.is_not_null() & pl.col("_registered"))
                .then(pl.lit("registered"))
                .when(given.is_not_null() & pl.col("_registered_as").is_null())
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
                        f"{side} id {{}} is not registered, and '{{}}' is registered as {{}} (a mistyped id?)",
                        given,
                        name,
                        pl.col("_registered_as"),
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
            .drop("_name_id", "_name_matches", "_registered", "_registered_as", "_local_id")
        )
    return frame.drop("_row")


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

    `players` holds (NAME_KEY, player_id) pairs, possibly several per id, in registry order.
    """
    wanted = wanted.with_columns(name_key(pl.col("_raw_name")).alias(NAME_KEY))
    schema: dict[str, PolarsDataType] = {"_row": wanted["_row"].dtype, "_name_id": pl.Int64, "_name_matches": pl.UInt32}
    if wanted.is_empty():
        return pl.DataFrame(schema=schema)
    by_name = (
        players.filter(pl.col(NAME_KEY).is_in(wanted[NAME_KEY].implode()))
        .unique(maintain_order=True)
        .group_by(NAME_KEY, maintain_order=True)
        .agg(pl.col("player_id").first().alias("_name_id"), pl.len().cast(pl.UInt32).alias("_name_matches"))
    )
    return wanted.join(by_name, on=NAME_KEY, how="inner").select(*schema)


def identity_report(frame: pl.DataFrame, month: str) -> pl.DataFrame:
    """schemas.Identity rows of a resolved month frame (both sides; registered ids are not listed)."""
    # Registered ids are most of a month: they are dropped before any text is built.
    sides = pl.concat(
        [
            frame.filter(pl.col(f"_{side}_status") != "registered").select(
                pl.col(f"_{side}_status").alias("status"),
                pl.col(f"{side}_name").alias("name"),
                pl.col(f"{side}_id").alias("given_id"),
                pl.col(f"_{side}").alias("player_id"),
                pl.col(f"_{side}_candidates").alias("candidates"),
                pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_where"),
            )
            for side in ("white", "black")
        ]
    )
    report = sides.group_by("status", "name", "given_id", "player_id", maintain_order=True).agg(
        pl.col("candidates").max(),
        pl.len().cast(pl.UInt32).alias("records"),
        pl.col("_where").first().alias("first_seen"),
    )
    # Spellings name_key merged (NFC and NFD, an invisible character, blanks) are rows of their own, as written;
    # `spellings` says how many there are, since two of them may print alike.
    report = report.with_columns(
        pl.col("name").n_unique().over("player_id", name_key(pl.col("name"))).cast(pl.UInt32).alias("spellings")
    )
    return conform(report.with_columns(pl.lit(month).alias("month")), Identity).sort(
        "status", "name", "given_id", nulls_last=True
    )


def players_named_in_dumps(identities: pl.DataFrame) -> pl.DataFrame:
    """Players rows (name only) for the ids identities rated without a registry entry: new ids and local ids.

    The name is the one written in the dumps (the latest month's, then the most records); federation,
    sex, title and birth year stay unknown. `registered` is the month the name was seen.
    """
    named = identities.filter(
        pl.col("status").is_in(["new", "new_name"]) & pl.col("player_id").is_not_null() & pl.col("name").is_not_null()
    )
    return conform(
        named.sort(["month", "records"], descending=[True, True])
        .filter(pl.col("player_id").is_first_distinct())
        .select(
            "player_id",
            name_key(pl.col("name")).alias("name"),
            pl.lit("").alias("federation"),
            pl.lit(None, dtype=pl.Utf8).alias("sex"),
            pl.lit(None, dtype=pl.Int32).alias("birth_year"),
            pl.lit(None, dtype=pl.Utf8).alias("title"),
            pl.col("month").alias("registered"),
        )
        .sort("player_id"),
        Players,
    )


# How far back an undated game sent again counts as a duplicate (a dated one is caught by its date).
UNDATED_WINDOW_MONTHS = 12


class MonthValidator:
    """split_month over a run's months, called in order: the registry read once (a month sees the players registered
    by then), and an undated game already reported in the UNDATED_WINDOW_MONTHS before a month a duplicate there.
    """

    def __init__(self, store: ObjectStore, months: Sequence[str]):
        self._registry = with_name_keys(read_players(store, months[-1]))
        # Undated games of the stored months before the run, by month; each validated month is added.
        before = month_range(add_months(months[0], -UNDATED_WINDOW_MONTHS), add_months(months[0], -1))
        self._undated: dict[str, pl.DataFrame] = {
            month: undated_game_keys(store.scan_parquet(table_key(["games"], month)))
            for month in before
            if store.exists(table_key(["games"], month))
        }

    def __call__(self, month: str, raw: pl.DataFrame) -> MonthSplit:
        window_start = add_months(month, -UNDATED_WINDOW_MONTHS)
        for earlier in [m for m in self._undated if m < window_start]:
            del self._undated[earlier]
        seen = pl.concat(self._undated.values()) if self._undated else None
        split = split_month(raw, self._registry.filter(pl.col("registered") <= month), month, seen_keys=seen)
        self._undated[month] = undated_game_keys(split.games)
        return split
