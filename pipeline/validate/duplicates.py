"""The same game reported twice: within a month (another dump, a file sent again) or in an earlier month."""

from __future__ import annotations

import polars as pl

# Files whose rows are games: a file without rounds can still show which of its repeated rows are separate games.
from pipeline.formats import TABLE_FORMATS
from schemas.games import RESULTS

# The same game reported twice: a tournament file submitted again, or the same game in two dumps. _occurrence tells
# apart the games of one pairing that a file shows to be separate (with_occurrences).
DUPLICATE_KEY = ["_event_start", "_white", "_black", "round", "result", "_occurrence"]
# The end of a copy's quarantine detail when the copy is a record of the same table file or PGN without a round (the
# per-file warning, pipeline.validate.month_figures.file_warnings, finds them by it, and a PGN's by its advice's end).
UNTOLD_COPY = "cannot be told from a copy"
UNTOLD_PGN_ADVICE = "tag to have such games rated"

GAME_KEY = ["event_start", "event_id", "white_id", "black_id", "round", "white_score"]


def _key_columns(day: pl.Expr, date: pl.Expr, event: pl.Expr) -> list[pl.Expr]:
    """The day and event parts of GAME_KEY: a dated game is keyed by its event's start, an undated one by its event.

    An undated game (no game date, no event start) is filed under the 1st of whichever month it was
    sent in, so the same game sent in two months has two days: its event id is what stays the same.
    """
    undated = date.is_null()
    # Event ids are '<dump key>#<event name>' when the dump names its events (PGN): the name is what two months share.
    # Otherwise (a TRF, a table file without event_id) the id is the dump's key '<FED>/<YYYY-MM>/<name>': its name
    # within the month folder is. The federation goes with the folder, as it goes with a PGN's dump key. An id without
    # that prefix is a table's own event_id, kept whole: a '#' in it is part of its name ('Spring Rapid #1').
    # NFC: a file or event name sent once composed ('café') and once decomposed (macOS's file names) is one name.
    named = event.str.replace(r"^[^/]*/\d{4}-\d{2}/(?:[^#]*#)?", "").str.normalize("NFC")
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
    """_occurrence: which game of its pairing a record is, among the records of one file that share a DUPLICATE_KEY
    (0 for every other record, and for the first such game).

    A record of a table file or a PGN is one game, but two games of the same players with the same result in the
    same month (on the same day, when dated) can share a DUPLICATE_KEY: a table file gives no round, a PGN's
    sub-rounds ('1.1', '1.3': round 1) or a missing Round tag do not tell a match's games apart. The file itself does:
    - rows of a table file that differ anywhere (blanks and quotes aside), e.g. in a game number or row id
      column such as Kaggle's STID or a column the pipeline does not read, and PGN records whose Round tag as
      written ('1.1', '1.3') or date differs, are separate games (a PGN copy that adds an ECO or PlyCount tag
      is a copy);
    - identical rows of a table file are separate games when the two players meet with both colours in the
      file (a match or a double round robin, colours alternating);
    - other identical records are copies: the later ones keep the first's occurrence, and so are
      quarantined as its duplicates (with_first_copies says why: no round or date to tell them apart).
    A copy of the whole file in another dump numbers its games alike, so its records are duplicates of
    this file's. A TRF holds a pairing of a round once, and a table row with a round is told by it: both keep 0.
    Only records that passed every earlier check count, in the frame's (file) order.
    """
    table = pl.col("format").is_in(TABLE_FORMATS)
    untold = (
        pl.col("_reason").is_null()
        & (pl.col("format") != "trf")
        & (pl.col("round").is_null() | ~table)
        & pl.col("_white").is_not_null()
        & pl.col("_black").is_not_null()
    )
    pairing = [pl.col("source_file"), *[pl.col(c) for c in DUPLICATE_KEY if c != "_occurrence"]]
    # Blanks around fields and quotes do not make a row another game; a PGN game is told from another of its pairing
    # by the tags that say which game it is, not by tags an export adds or leaves out.
    pgn_told = pl.concat_str(
        pl.col("raw_text").str.extract(r'(?i)\[Round\s+"([^"]*)"').fill_null(""),
        pl.col("date").cast(pl.Utf8).fill_null(""),
        separator="|",
    )
    text = pl.when(pl.col("_table")).then(pl.col("raw_text").str.replace_all(r'[\s"]', "")).otherwise(pgn_told)
    players = [pl.min_horizontal("_white", "_black"), pl.max_horizontal("_white", "_black")]
    both_colours = pl.col("_white").n_unique().over(pl.col("source_file"), *players) > 1
    first_of_text = pl.col("_index").min().over(*pairing, text)
    occurrence = (
        pl.when(pl.col("_table") & both_colours)
        .then(pl.int_range(pl.len()).over(*pairing))
        .otherwise(first_of_text.rank("dense").over(*pairing) - 1)
    )
    # Only the records that may share a key within their file are windowed: a table file's rows without a round (usually
    # none) and the PGN records whose key repeats in their file, not the month's raw text (a fide-scale month's 35 MB)
    # rewritten and grouped for nothing. A table file's rows are all kept, as both_colours reads the whole file.
    rows = (
        frame.select(
            pl.int_range(pl.len()).alias("_index"),
            untold.alias("_untold"),
            table.alias("_table"),
            "source_file",
            "raw_text",
            "date",
            *[c for c in DUPLICATE_KEY if c != "_occurrence"],
        )
        .filter(pl.col("_untold").fill_null(True))
        .filter(pl.col("_table") | (pl.len().over(*pairing) > 1))
        .select("_index", occurrence.cast(pl.UInt32).alias("_occurrence"))
    )
    occurrences = pl.repeat(0, frame.height, dtype=pl.UInt32, eager=True).alias("_occurrence")
    return frame.with_columns(occurrences.scatter(rows["_index"], rows["_occurrence"]) if rows.height else occurrences)


def with_first_copies(frame: pl.DataFrame, refused: pl.Expr) -> pl.DataFrame:
    """_first_copy: for a later copy of a game in this month, where its first copy is ('<file>:<line>'); else null.
    _copy_note: for a copy that repeats a record of its own table file or PGN without a round, why it is taken for a
    copy (a PGN's record is its tag section, so a game whose tags repeat an earlier one's is its copy).

    Only records that passed every earlier check compete for "first copy", in the frame's order, and of them only the
    ones no later check refuses (`refused`, e.g. an implausible stated rating): a copy points to a game that is rated.
    A refused record before that first copy keeps its own reason; one after it is a copy.
    Copies are rare, so the text is built for their keys only, not for every record of the month.
    """
    frame = with_occurrences(frame)
    candidate = pl.col("_reason").is_null()
    frame = frame.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_index"))
    first = pl.when(candidate & ~refused.fill_null(False)).then(pl.col("_index")).min().over(DUPLICATE_KEY)
    later = candidate & (pl.col("_index") > pl.col("_first")).fill_null(False)
    frame = frame.with_columns(first.alias("_first")).with_columns(later.alias("_later_copy"))
    copied = frame.filter(pl.col("_later_copy"))["_first"].unique()
    firsts = frame.filter(pl.col("_index").is_in(copied.implode())).select(
        pl.col("_index").alias("_first"),
        pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_first_copy"),
        pl.col("source_file").alias("_first_file"),
    )
    same_file = pl.col("_first_file") == pl.col("source_file")
    pgn = pl.col("format") == "pgn"
    no_round = (pl.col("format").is_in(TABLE_FORMATS) | pgn) & pl.col("round").is_null()
    note = (
        pl.when(pgn & pl.col("date").is_null())
        .then(
            pl.lit(
                f": the file repeats this game's tags and gives no round or date, so a second game of the same players "
                f"{UNTOLD_COPY}; add a Round or Date {UNTOLD_PGN_ADVICE}"
            )
        )
        .when(pgn)
        .then(
            pl.lit(
                f": the file repeats this game's tags on the same day and gives no round, so a second game of the same "
                f"players {UNTOLD_COPY}; add a Round {UNTOLD_PGN_ADVICE}"
            )
        )
        .when(pl.col("date").is_null())
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
    frame = frame.join(firsts, on="_first", how="left", maintain_order="left").with_columns(
        pl.when(pl.col("_later_copy")).then(pl.col("_first_copy")).alias("_first_copy")
    )
    # The notes are made for the untold copies only (usually none), not chosen among four texts for every record.
    notes = frame.filter(pl.col("_later_copy") & same_file & no_round).select("_index", note.alias("_copy_note"))
    copy_note = pl.repeat(None, frame.height, dtype=pl.Utf8, eager=True).alias("_copy_note")
    return frame.with_columns(
        copy_note.scatter(notes["_index"], notes["_copy_note"]) if notes.height else copy_note
    ).drop("_later_copy", "_first_file", "_occurrence", "_index", "_first")


# How far back an undated game sent again counts as a duplicate (a dated one as long as its month's games can be
# reported again: pipeline.rules.calendar.last_list_reached_from).
UNDATED_WINDOW_MONTHS = 12
