"""Split raw game records into validated games and quarantined records, each with one reason code."""

from __future__ import annotations

import pandera.errors
import pandera.polars as pa
import polars as pl

from pipeline.months import add_months, first_day
from schemas.games import TIME_CONTROLS, Games
from schemas.quarantine import Quarantine
from schemas.util import conform

VALID_RESULTS = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}
# A stated rating outside this range is a typo, not a rating (FIDE's floor has never been below 1000).
RATING_PLAUSIBLE = (1000, 3000)
DEFAULT_TIME_CONTROL = "classical"
# The same game reported twice: a tournament file submitted again, or the same game in two dumps.
DUPLICATE_KEY = ["_event_start", "_white", "_black", "round", "result"]


def split_games(
    raw: pl.DataFrame,
    players: pl.DataFrame,
    month: str,
    *,
    seen_keys: pl.DataFrame | None = None,
    ids_known: bool = False,
    check_month: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """RawGames -> (Games, Quarantine); every raw row ends in exactly one of them.

    Checks, first match wins: unparseable, unplayed, unknown_player, self_play,
    result_out_of_domain, duplicate (of an earlier month's game), date_outside_month,
    duplicate (of a game earlier in this month: another dump, or the same tournament sent twice),
    rating_implausible.

    seen_keys: game_keys() of the games of earlier months; a game among them is a duplicate here
    (a tournament reported again in a later month). ids_known: there is no registry (validating
    loose files): any id present counts as known, and only a missing or unreadable id is an
    unknown player. check_month=False skips date_outside_month (a loose file's month is its own).
    """
    month_start, next_month_start = first_day(month), first_day(add_months(month, 1))
    # "First copy" = earliest by file stem, then line: a resubmission's name usually extends the
    # original's ('open-a' -> 'open-a-resubmitted', 'open-a (2)'), so the original's stem sorts first.
    stem = pl.col("source_file").str.replace(r"(?i)(\.(trf|txt|pgn|csv|parquet))?(\.(gz|zst))?$", "")
    frame = raw.sort(stem, pl.col("source_file"), pl.col("source_line"), pl.col("record_id"))
    if ids_known:
        players = raw.select(pl.concat_list("white_id", "black_id").explode().drop_nulls().unique().alias("player_id")).with_columns(
            pl.lit(None, dtype=pl.Utf8).alias("name"))
    frame = _resolve_players(frame, players)
    if ids_known:
        frame = frame.with_columns(
            pl.when(pl.col(f"_{side}").is_null()).then(pl.lit(f"{side} has no usable FIDE id (no registry to match names against)"))
            .alias(f"_{side}_problem")
            for side in ("white", "black")
        )

    frame = frame.with_columns(
        pl.coalesce("event_start", "date", pl.lit(month_start)).alias("_event_start"),
        pl.coalesce("date", "event_start").alias("_game_day"),
    )
    game_day = pl.col("_game_day")
    outside = game_day.is_not_null() & ((game_day < month_start) | (game_day >= next_month_start)) & pl.lit(check_month)
    early = [
        ("unparseable", pl.col("parse_error").is_not_null(), pl.col("parse_error")),
        ("unplayed", pl.col("unplayed").is_not_null(),
         pl.format("{} (result {})", pl.col("unplayed"), pl.col("result").fill_null("none"))),
        ("unknown_player", pl.col("_white").is_null() | pl.col("_black").is_null(),
         pl.concat_str([pl.col("_white_problem"), pl.col("_black_problem")], separator="; ", ignore_nulls=True)),
        ("self_play", pl.col("_white") == pl.col("_black"),
         pl.format("white and black are both player {}", pl.col("_white"))),
        ("result_out_of_domain", ~pl.col("result").is_in(list(VALID_RESULTS)).fill_null(False),
         pl.format("result {} is not 1-0, 0-1 or 1/2-1/2", _quoted_or_missing(pl.col("result")))),
        # Reported in an earlier month: a duplicate, even though its date is (usually) outside this month.
        ("duplicate", pl.col("_seen_before").is_not_null(), pl.format("same game as {}", pl.col("_seen_before"))),
        ("date_outside_month", outside,
         pl.format("game date {} is not in {}", game_day.cast(pl.Utf8), pl.lit(month))),
    ]
    frame = _with_earlier_reports(frame, seen_keys)
    frame = frame.with_columns(_first_match(early))

    frame = _with_first_copies(frame)
    late = [
        ("duplicate", pl.col("_first_copy").is_not_null(), pl.format("same game as {}", pl.col("_first_copy"))),
        ("rating_implausible", _implausible("white_rating") | _implausible("black_rating"),
         pl.concat_str([_rating_problem("white"), _rating_problem("black")], separator="; ", ignore_nulls=True)),
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
        pl.when(pl.col("time_control").is_in(TIME_CONTROLS)).then(pl.col("time_control"))
        .otherwise(pl.lit(DEFAULT_TIME_CONTROL)).alias("time_control"),
        pl.col("white_rating").alias("white_rating_used"),
        pl.col("black_rating").alias("black_rating_used"),
    )
    quarantine = frame.filter(pl.col("_reason").is_not_null()).with_columns(
        pl.lit(month).alias("month"),
        pl.col("_reason").alias("reason"),
        pl.col("_detail").fill_null("").alias("detail"),
    )
    return conform(games, Games), conform(quarantine, Quarantine)


GAME_KEY = ["event_start", "white_id", "black_id", "round", "white_score"]


def game_keys(games: pl.DataFrame) -> pl.DataFrame:
    """What identifies each validated game across months (for split_games' seen_keys), with where it was seen.

    Columns: the GAME_KEY columns and first_seen ('<month> <source file>:<line>'); one row per key.
    """
    return games.select(
        *GAME_KEY, pl.format("{} {}:{}", pl.col("month"), pl.col("source_file"), pl.col("source_line")).alias("first_seen"),
    ).unique(GAME_KEY, keep="first", maintain_order=True)


def _with_earlier_reports(frame: pl.DataFrame, seen_keys: pl.DataFrame | None) -> pl.DataFrame:
    """_seen_before: where an earlier month already reported this game (null when none did)."""
    if seen_keys is None or seen_keys.is_empty():
        return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_seen_before"))
    keys = frame.select(
        pl.col("_event_start").alias("event_start"), pl.col("_white").alias("white_id"), pl.col("_black").alias("black_id"),
        pl.col("round").cast(pl.Int32), pl.col("result").replace_strict(VALID_RESULTS, default=None, return_dtype=pl.Float64).alias("white_score"),
    )
    seen = seen_keys.select(
        pl.col("event_start").cast(pl.Date), pl.col("white_id").cast(pl.Int64), pl.col("black_id").cast(pl.Int64),
        pl.col("round").cast(pl.Int32), pl.col("white_score").cast(pl.Float64), pl.col("first_seen").cast(pl.Utf8),
    ).unique(GAME_KEY, keep="first")
    found = keys.join(seen, on=GAME_KEY, how="left", nulls_equal=True, maintain_order="left")["first_seen"]
    return frame.with_columns(found.alias("_seen_before"))


def reconcile(raw: pl.DataFrame, games: pl.DataFrame, quarantine: pl.DataFrame) -> pl.DataFrame:
    """One row per source file: records read, games, quarantined, and ok (records = games + quarantined).

    Also flags a file whose records are not all accounted for one to one (ok needs the ids to match,
    not only the counts).
    """
    records = raw.group_by("source_file").agg(pl.len().cast(pl.Int64).alias("records"))
    landed = pl.concat([
        games.select("source_file", pl.col("game_id").alias("record_id"), pl.lit(1).alias("_game")),
        quarantine.select("source_file", "record_id", pl.lit(0).alias("_game")),
    ])
    per_file = landed.group_by("source_file").agg(
        pl.col("_game").sum().cast(pl.Int64).alias("games"),
        (pl.len() - pl.col("_game").sum()).cast(pl.Int64).alias("quarantined"),
    )
    unmatched = (
        raw.select("source_file", "record_id").join(landed.select("record_id"), on="record_id", how="anti")
        .group_by("source_file").agg(pl.len().alias("_unmatched"))
    )
    return (
        records.join(per_file, on="source_file", how="full", coalesce=True)
        .join(unmatched, on="source_file", how="left")
        .with_columns(pl.col("records", "games", "quarantined").fill_null(0))
        .with_columns(
            ((pl.col("records") == pl.col("games") + pl.col("quarantined")) & pl.col("_unmatched").is_null()).alias("ok")
        )
        .drop("_unmatched")
        .sort("source_file")
    )


def schema_failures(frame: pl.DataFrame, model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """The rows of `frame` that break the Pandera model, one row per (row, failed check), for asset checks.

    Columns: row (0-based index in frame, null for table-level failures such as a missing column),
    column, check, failure_case, then the frame's own columns of that row (null for table-level
    failures). Empty when the frame is valid.
    """
    try:
        model.validate(frame, lazy=True)
        cases = None
    except pandera.errors.SchemaErrors as errors:
        cases = errors.failure_cases
    except pandera.errors.SchemaError as error:  # non-lazy paths (e.g. dataframe-level dtype coercion)
        cases = pl.DataFrame({"index": [None], "column": [getattr(error.schema, "name", None)], "check": [str(error.check)],
                              "failure_case": [str(error)]})
    described = pl.DataFrame(schema={"row": pl.Int64, "column": pl.Utf8, "check": pl.Utf8, "failure_case": pl.Utf8})
    if cases is None or cases.height == 0:
        return pl.concat([described, frame.clear()], how="horizontal")
    described = pl.DataFrame({
        "row": pl.Series(cases["index"].to_list(), dtype=pl.Int64) if "index" in cases.columns else [None] * cases.height,
        "column": cases["column"].cast(pl.Utf8) if "column" in cases.columns else [None] * cases.height,
        "check": cases["check"].cast(pl.Utf8) if "check" in cases.columns else [None] * cases.height,
        "failure_case": cases["failure_case"].cast(pl.Utf8) if "failure_case" in cases.columns else [None] * cases.height,
    }, schema=described.schema)
    rows = frame.with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    return described.join(rows, on="row", how="left", maintain_order="left")


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
    reason, detail = pl.when(pl.lit(False)).then(pl.lit(None, pl.Utf8)), pl.when(pl.lit(False)).then(pl.lit(None, pl.Utf8))
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
    """Comparable form of 'Last, First': trimmed, single spaces, one space after the comma."""
    return name.str.strip_chars().str.replace_all(r"\s+", " ").str.replace_all(r"\s*,\s*", ", ")


def _resolve_players(frame: pl.DataFrame, players: pl.DataFrame) -> pl.DataFrame:
    """_white/_black: the registered id (given id, else a unique exact name match), with a problem text."""
    registered = players["player_id"].cast(pl.Int64).implode()
    frame = frame.with_row_index("_row")
    for side in ("white", "black"):
        given, name = pl.col(f"{side}_id"), pl.col(f"{side}_name")
        # Names are looked up only for the (few) records without an id, not for the whole month.
        by_name = _name_matches(frame.filter(given.is_null() & name.is_not_null()).select("_row", name.alias("_raw_name")), players)
        frame = (
            frame.join(by_name, on="_row", how="left", maintain_order="left")
            .with_columns(given.is_in(registered).fill_null(False).alias("_registered"))
            .with_columns(
                pl.when(given.is_not_null())
                .then(pl.when(pl.col("_registered")).then(given))
                .when(pl.col("_name_matches") == 1)
                .then(pl.col("_name_id"))
                .alias(f"_{side}"),
                pl.when(given.is_not_null() & ~pl.col("_registered"))
                .then(pl.format(f"{side} id {{}} is not registered", given))
                .when(given.is_null() & name.is_null())
                .then(pl.lit(f"{side} has neither id nor name"))
                .when(given.is_null() & pl.col("_name_matches").is_null())
                .then(pl.format(f"{side} has no id and name '{{}}' matches no registered player", name))
                .when(given.is_null() & (pl.col("_name_matches") > 1))
                .then(pl.format(f"{side} has no id and name '{{}}' matches {{}} registered players", name, pl.col("_name_matches")))
                .alias(f"_{side}_problem"),
            )
            .drop("_name_id", "_name_matches", "_registered")
        )
    return frame.drop("_row")


def _name_matches(wanted: pl.DataFrame, players: pl.DataFrame) -> pl.DataFrame:
    """Per wanted row (_row, _raw_name): the first registered id with that name and how many share it (null: none).

    Normalising every registered name costs more than the rest of a month's validation, so the
    registry is first narrowed to names containing a wanted surname: normalisation only changes
    blanks, so a registered name equal to a wanted one after it contains the wanted name's first word.
    """
    wanted = wanted.with_columns(name_key(pl.col("_raw_name")).alias("_name"))
    schema = {"_row": wanted["_row"].dtype, "_name_id": pl.Int64, "_name_matches": pl.UInt32}
    if wanted.is_empty():
        return pl.DataFrame(schema=schema)
    first_words = wanted["_name"].str.extract(r"^([^ ,]+)", 1)
    if first_words.null_count():  # a name that starts with a comma: no word to narrow by
        candidates = players
    else:
        candidates = players.filter(pl.col("name").str.contains_any(first_words.unique().to_list()))
    candidates = candidates.select(name_key(pl.col("name")).alias("_name"), pl.col("player_id").cast(pl.Int64))
    by_name = candidates.group_by("_name", maintain_order=True).agg(
        pl.col("player_id").first().alias("_name_id"), pl.len().cast(pl.UInt32).alias("_name_matches")
    )
    return wanted.join(by_name, on="_name", how="inner").select(*schema)
