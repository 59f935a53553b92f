"""The same game reported twice: within a month (another dump, a file sent again) or in an earlier month."""

from __future__ import annotations

import polars as pl

# Files whose rows are games: a file without rounds can still show which of its repeated rows are separate games.
from pipeline.formats import TABLE_FORMATS
from schemas.games import RESULTS

# The same game reported twice: a tournament file submitted again, or the same game in two dumps. _occurrence tells
# apart the games of one pairing that a CSV or Parquet file shows to be separate (with_occurrences).
DUPLICATE_KEY = ["_event_start", "_white", "_black", "round", "result", "_occurrence"]
# The end of a copy's quarantine detail when the copy is a row of the same table file without a round (the per-file
# warning, pipeline.validate.month_figures.file_warnings, finds them by it).
UNTOLD_COPY = "cannot be told from a copy"

GAME_KEY = ["event_start", "event_id", "white_id", "black_id", "round", "white_score"]


def _key_columns(day: pl.Expr, date: pl.Expr, event: pl.Expr) -> list[pl.Expr]:
    """The day and event parts of GAME_KEY: a dated game is keyed by its event's start, an undated one by its event.

    An undated game (no game date, no event start) is filed under the 1st of whichever month it was
    sent in, so the same game sent in two months has two days: its event id is what stays the same.
    """
    undated = date.is_null()
    # Event ids are '<dump key>#<event name>' when the dump names its events (PGN): the name is what two months share.
    # Otherwise (a TRF, a table file without event_id) the id is the dump's key '<FED>/<YYYY-MM>/<name>': its name
    # within the month folder is. The federation goes with the folder, as it goes with a PGN's dump key.
    named = event.str.replace(r"^(?:[^/]*/\d{4}-\d{2}/)?(?:[^#]*#)?", "")
    return [pl.when(~undated).then(day).alias("event_start"), pl.when(undated).then(named).alias("event_id")]


def game_keys(games: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """What identifies each validated game across months (for split_month's seen_keys), with where it was reported:
    the GAME_KEY columns (_key_columns: a dated game by its event's start, an undated one by its event) and month,
    source_file and source_line. One row per game, dated games first; the text naming a game is made only for the
    few found again (with_earlier_reports), not for every game kept.
    """
    lazy = games.lazy()
    where = [*GAME_KEY[2:], "month", "source_file", "source_line"]
    dated = lazy.filter(pl.col("date").is_not_null()).select(
        "event_start", pl.lit(None, dtype=pl.Utf8).alias("event_id"), *where
    )
    undated = lazy.filter(pl.col("date").is_null()).select(
        *_key_columns(pl.col("event_start"), pl.col("date"), pl.col("event_id")), *where
    )
    return pl.concat([dated, undated]).collect()


def with_earlier_reports(frame: pl.DataFrame, seen_keys: pl.DataFrame | None, candidates: pl.Expr) -> pl.DataFrame:
    """_seen_before: where an earlier month already reported this game ('<month> <file>:<line>', the earliest), null
    when none did. Only the `candidates` are looked up (the records that can be a game sent again).
    """
    none = pl.lit(None, dtype=pl.Utf8).alias("_seen_before")
    if seen_keys is None or seen_keys.is_empty():
        return frame.with_columns(none)
    keys = frame.filter(candidates.fill_null(False)).select(
        "record_id",
        *_key_columns(pl.col("_event_start"), pl.col("date"), pl.col("event_id").fill_null(pl.col("source_file"))),
        pl.col("_white").alias("white_id"),
        pl.col("_black").alias("black_id"),
        pl.col("round").cast(pl.Int32),
        pl.col("result").replace_strict(RESULTS, default=None, return_dtype=pl.Float64).alias("white_score"),
    )
    if keys.is_empty():
        return frame.with_columns(none)
    # The earlier games of the candidates' white players only: the join then hashes a few rows, not months of games.
    whites = keys["white_id"].drop_nulls().unique().implode()
    seen = seen_keys.filter(pl.col("white_id").is_in(whites)).select(
        pl.col("event_start").cast(pl.Date),
        pl.col("event_id").cast(pl.Utf8),
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        pl.col("round").cast(pl.Int32),
        pl.col("white_score").cast(pl.Float64),
        "month",
        "source_file",
        "source_line",
    )
    found = (
        keys.join(seen, on=GAME_KEY, how="inner", nulls_equal=True)
        .sort("month", "source_file", "source_line")
        .unique("record_id", keep="first")
        .select("record_id", pl.format("{} {}:{}", "month", "source_file", "source_line").alias("_seen_before"))
    )
    if found.is_empty():
        return frame.with_columns(none)
    return frame.join(found, on="record_id", how="left", maintain_order="left")


def with_occurrences(frame: pl.DataFrame) -> pl.DataFrame:
    """_occurrence: which game of its pairing a record is, among the records of a CSV or Parquet file that give no
    round (0 for every other record, and for the first such game).

    A row of a table file is one game, but without a round two games of the same players with the
    same result in the same month (and on the same day, when dated) have the same DUPLICATE_KEY. The
    file's own structure tells them apart:
    - rows that differ anywhere (blanks and quotes aside), e.g. in a game number or row id column such
      as Kaggle's STID, or in a column the pipeline does not read, are separate games;
    - identical rows are separate games when the two players meet with both colours in the file (a
      match or a double round robin, colours alternating);
    - other identical rows are copies: the later ones keep the first's occurrence, and so are
      quarantined as its duplicates (with_first_copies says why: no round or date to tell them apart).
    A copy of the whole file in another dump numbers its games alike, so its rows are duplicates of
    this file's. Only records that passed every earlier check count, in the frame's (file) order.
    """
    untold = (
        pl.col("_reason").is_null()
        & pl.col("format").is_in(TABLE_FORMATS)
        & pl.col("round").is_null()
        & pl.col("_white").is_not_null()
        & pl.col("_black").is_not_null()
    )
    pairing = [pl.col("source_file"), *[pl.col(c) for c in DUPLICATE_KEY if c != "_occurrence"]]
    # Blanks around fields and quotes do not make a row another game.
    text = pl.col("raw_text").str.replace_all(r'[\s"]', "")
    players = [pl.min_horizontal("_white", "_black"), pl.max_horizontal("_white", "_black")]
    both_colours = pl.col("_white").n_unique().over(pl.col("source_file"), *players, pl.col("_untold")) > 1
    first_of_text = pl.col("_index").min().over(*pairing, text, pl.col("_untold"))
    occurrence = (
        pl.when(~pl.col("_untold"))
        .then(0)
        .when(both_colours)
        .then(pl.int_range(pl.len()).over(*pairing, pl.col("_untold")))
        .otherwise(first_of_text.rank("dense").over(*pairing, pl.col("_untold")) - 1)
    )
    # Every window is within _untold's value, so the rows where it is false (0) are left out: the others, usually none,
    # are computed alone, not the month's raw text (a fide-scale month's 35 MB) rewritten and grouped for nothing.
    rows = (
        frame.select(
            pl.int_range(pl.len()).alias("_index"),
            untold.alias("_untold"),
            "source_file",
            "raw_text",
            *[c for c in DUPLICATE_KEY if c != "_occurrence"],
        )
        .filter(pl.col("_untold").fill_null(True))
        .select("_index", occurrence.cast(pl.UInt32).alias("_occurrence"))
    )
    occurrences = pl.repeat(0, frame.height, dtype=pl.UInt32, eager=True).alias("_occurrence")
    return frame.with_columns(occurrences.scatter(rows["_index"], rows["_occurrence"]) if rows.height else occurrences)


def with_first_copies(frame: pl.DataFrame) -> pl.DataFrame:
    """_first_copy: for a later copy of a game in this month, where its first copy is ('<file>:<line>'); else null.
    _copy_note: for a copy that repeats a row of its own table file without a round, why it is taken for a copy.

    Only records that passed every earlier check compete for "first copy", in the frame's order.
    Copies are rare, so the text is built for their keys only, not for every record of the month.
    """
    frame = with_occurrences(frame)
    candidate = pl.col("_reason").is_null()
    later = candidate & ~pl.struct(*DUPLICATE_KEY).is_first_distinct().over(candidate)
    frame = frame.with_columns(later.alias("_later_copy"))
    copied = frame.filter(pl.col("_later_copy")).select(DUPLICATE_KEY).unique()
    firsts = (
        frame.select(*DUPLICATE_KEY, "source_file", "source_line", "_reason", "_later_copy")
        .filter(candidate & ~pl.col("_later_copy"))
        .join(copied, on=DUPLICATE_KEY, how="semi", nulls_equal=True)
        .select(*DUPLICATE_KEY, pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_first_copy"))
    )
    firsts = firsts.with_columns(pl.col("_first_copy").str.replace(r":\d+$", "").alias("_first_file"))
    same_file = pl.col("_first_file") == pl.col("source_file")
    no_round = pl.col("format").is_in(TABLE_FORMATS) & pl.col("round").is_null()
    note = (
        pl.when(pl.col("date").is_null())
        .then(
            pl.lit(
                f": the file repeats this row and gives no round or date, so a second game of the same players "
                f"{UNTOLD_COPY}; add a round (or game number) or a date column to have such games rated"
            )
        )
        .otherwise(
            pl.lit(
                f": the file repeats this row on the same day and gives no round, so a second game of the same "
                f"players {UNTOLD_COPY}; add a round (or game number) column to have such games rated"
            )
        )
    )
    return (
        frame.join(firsts, on=DUPLICATE_KEY, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            pl.when(pl.col("_later_copy")).then(pl.col("_first_copy")).alias("_first_copy"),
            pl.when(pl.col("_later_copy") & same_file & no_round).then(note).alias("_copy_note"),
        )
        .drop("_later_copy", "_first_file", "_occurrence")
    )


# How far back an undated game sent again counts as a duplicate (a dated one as long as its month's games can be
# reported again: pipeline.rules.calendar.last_list_reached_from).
UNDATED_WINDOW_MONTHS = 12
