"""FIDE Tournament Report File (TRF16 / TRF-2026) -> one raw record per pairing or unpaired round cell."""

from __future__ import annotations

import re

import polars as pl

from pipeline.formats.common import (
    blank_to_null,
    classify_time_control,
    int_error,
    join_errors,
    parse_free_date,
    parse_int,
    parse_time_control,
    quoted,
    split_lines,
)

# 0-based offsets of the fixed 001 columns (the FIDE document counts from 1, inclusive).
RANK = (4, 4)          # columns 5-8
NAME = (14, 33)        # columns 15-47
RATING = (48, 4)       # columns 49-52
ID = (57, 11)          # columns 58-68
FIRST_CELL = 91        # column 92: round 1's opponent rank
CELL_STEP = 10         # each round adds 10 columns
CELL_WIDTH = 8         # opponent (4), blank, colour, blank, result

# A record starts with a three-digit tag (or a JaVaFo XX? extension) and a blank.
TRF_TAG = re.compile(r"^(?:\d{3}|XX[A-Z])(?: |$)")

# Result code pairs that agree, seen from the lower-ranked side and then its opponent.
COMPLEMENTARY = {
    ("1", "0"), ("0", "1"), ("=", "="),
    ("+", "-"), ("-", "+"), ("-", "-"),
    ("W", "L"), ("L", "W"), ("D", "D"),
}
PLAYED_CODES = ["1", "=", "0"]
FORFEIT_CODES = ["+", "-"]
UNDER_ONE_MOVE_CODES = ["W", "D", "L"]
PAIRED_CODES = PLAYED_CODES + FORFEIT_CODES + UNDER_ONE_MOVE_CODES
# White's code -> result from White's view (forfeits in the usual +/- notation).
WHITE_VIEW = {"1": "1-0", "=": "1/2-1/2", "0": "0-1", "W": "1-0", "D": "1/2-1/2", "L": "0-1", "+": "+-", "-": "-+"}


def is_trf_text(text: str) -> bool:
    """True when the first meaningful line is a TRF record (used for .txt dumps)."""
    for line in split_lines(text[:4096]):
        if not line.strip() or line.startswith("###"):
            continue
        return bool(TRF_TAG.match(line))
    return False


def parse_trf(text: str, event_id: str) -> pl.DataFrame:
    """Records of one TRF file (columns of common.RECORD_COLUMNS; position = round, or 'line')."""
    lines = pl.DataFrame({"text": split_lines(text)}, schema={"text": pl.Utf8}).with_row_index("line_no", offset=1)
    lines = lines.with_columns(pl.col("line_no").cast(pl.Int64))
    header = _header(lines)
    players = lines.filter(pl.col("text").str.starts_with("001"))
    if players.is_empty():
        return _no_player_records(lines, event_id)

    players = _player_fields(players)
    rounds = max(_rounds_in_lines(players), len(header["round_dates"]), header["rounds_tag"])
    cells = _cells(players.filter(pl.col("rank_ok")), rounds)
    records = pl.concat(
        [_bad_line_records(players), _bye_records(cells), _pairing_records(cells)],
        how="diagonal_relaxed",
    )
    round_dates = pl.DataFrame(
        {"round": list(range(1, len(header["round_dates"]) + 1)), "date": header["round_dates"]},
        schema={"round": pl.Int32, "date": pl.Date},
    )
    base, increment = header["tc"]
    # Tag 042 is free text in old files; when it cannot be read, round 1's date is the start.
    known_dates = [day for day in header["round_dates"] if day is not None]
    start = header["start"] or (min(known_dates) if known_dates else None)
    records = records.join(round_dates, on="round", how="left").with_columns(
        pl.lit(event_id).alias("event_id"),
        pl.lit(start, dtype=pl.Date).alias("event_start"),
        pl.lit(base, dtype=pl.Int32).alias("tc_base_seconds"),
        pl.lit(increment, dtype=pl.Int32).alias("tc_increment_seconds"),
    )
    # TRF dumps are standard-rated events unless the TRF-2026 encoded time control (tag 222) says otherwise.
    records = records.with_columns(
        classify_time_control(pl.col("tc_base_seconds"), pl.col("tc_increment_seconds")).fill_null("classical").alias("time_control")
    )
    return records.sort("source_line", "round", nulls_last=False)


# -- header ----------------------------------------------------------------------------------------
def _header(lines: pl.DataFrame) -> dict:
    """Tournament tags used for records: start date, round dates, round count, encoded time control."""
    tags = lines.filter(pl.col("text").str.contains(r"^(?:\d{3}|XXR)(?: |$)"))
    first: dict[str, str] = {}
    for text in tags["text"].to_list():
        first.setdefault(text[:3], text)
    start = parse_free_date(first.get("042", "")[4:])
    round_dates = []
    dates_line = first.get("132", "")
    position = FIRST_CELL
    while position < len(dates_line):
        round_dates.append(parse_free_date(dates_line[position : position + CELL_STEP].strip()))
        position += CELL_STEP
    rounds_tag = 0
    for key in ("142", "XXR"):
        match = re.match(r"\s*(\d+)", first.get(key, "")[4:])
        if match:
            rounds_tag = max(rounds_tag, int(match.group(1)))
    tc_text = first.get("222", "")[4:].strip()
    tc = (None, None)
    if tc_text:
        base, increment = parse_time_control(pl.lit(tc_text))
        tc = tuple(pl.select(base, increment).row(0))
    return {"start": start, "round_dates": round_dates, "rounds_tag": rounds_tag, "tc": tc}


def _no_player_records(lines: pl.DataFrame, event_id: str) -> pl.DataFrame:
    """A TRF without any 001 record holds no games; report it once so the dump stays visible."""
    first_line = lines["text"].head(1).to_list() or [""]
    return pl.DataFrame(
        {
            "source_line": [1], "position": ["file"], "raw_text": [first_line[0]],
            "parse_error": ["TRF file has no 001 player records"], "event_id": [event_id],
        },
        schema={"source_line": pl.Int64, "position": pl.Utf8, "raw_text": pl.Utf8, "parse_error": pl.Utf8, "event_id": pl.Utf8},
    )


# -- player lines ----------------------------------------------------------------------------------
def _field(start_length: tuple[int, int]) -> pl.Expr:
    start, length = start_length
    return blank_to_null(pl.col("text").str.slice(start, length))


def _player_fields(players: pl.DataFrame) -> pl.DataFrame:
    """Rank, name, rating and id of each 001 line, with a per-line error for unreadable fields."""
    players = players.with_columns(
        _field(RANK).alias("rank_text"),
        _field(NAME).alias("name"),
        _field(RATING).alias("rating_text"),
        _field(ID).alias("id_text"),
    ).with_columns(
        parse_int(pl.col("rank_text"), pl.Int32).alias("rank"),
        parse_int(pl.col("rating_text"), pl.Int32).alias("rating_value"),
        parse_int(pl.col("id_text"), pl.Int64).alias("id_value"),
    )
    duplicated = pl.col("rank").is_not_null() & pl.col("rank").is_duplicated()
    return players.with_columns(
        # 0 / 0000 in the rating or id columns means "none" in the files seen in the wild.
        pl.when(pl.col("rating_value") > 0).then(pl.col("rating_value")).alias("rating"),
        pl.when(pl.col("id_value") > 0).then(pl.col("id_value")).alias("fide_id"),
        (pl.col("rank").is_not_null() & (pl.col("rank") > 0) & ~duplicated).alias("rank_ok"),
        pl.when(pl.col("rank").is_null() | (pl.col("rank") <= 0))
        .then(pl.format("starting rank {} (columns 5-8) is not a positive number", quoted(pl.col("rank_text").fill_null(""))))
        .when(duplicated)
        .then(pl.format("starting rank {} is used by more than one 001 line", pl.col("rank")))
        .alias("rank_error"),
        join_errors(
            int_error(pl.col("rating_text"), "rating (columns 49-52)", pl.Int32),
            int_error(pl.col("id_text"), "FIDE id (columns 58-68)"),
        ).alias("line_error"),
    )


def _rounds_in_lines(players: pl.DataFrame) -> int:
    """Rounds = the furthest non-blank round cell on any 001 line."""
    longest = players.select(pl.col("text").str.strip_chars_end().str.len_chars().max()).item() or 0
    return max(0, -(-(longest - FIRST_CELL) // CELL_STEP))


def _bad_line_records(players: pl.DataFrame) -> pl.DataFrame:
    """One unparseable record per 001 line whose starting rank is unusable (its cells cannot be paired)."""
    return players.filter(~pl.col("rank_ok")).select(
        pl.col("line_no").alias("source_line"),
        pl.lit("line").alias("position"),
        pl.col("text").alias("raw_text"),
        pl.col("rank_error").alias("parse_error"),
        pl.col("fide_id").alias("white_id"),
        pl.col("name").alias("white_name"),
        pl.col("rating").alias("white_rating"),
    )


# -- round cells -----------------------------------------------------------------------------------
def _cells(players: pl.DataFrame, rounds: int) -> pl.DataFrame:
    """One row per (player line, round): the 8-character cell and its opponent, colour and result."""
    if rounds == 0:
        return players.select("line_no").clear().with_columns(pl.lit(None, pl.Int32).alias("round"))
    per_round = [
        players.select(
            "line_no", "text", "rank", "name", "rating", "fide_id", "line_error",
            pl.lit(r, dtype=pl.Int32).alias("round"),
            pl.col("text").str.slice(FIRST_CELL + CELL_STEP * (r - 1), CELL_WIDTH).str.pad_end(CELL_WIDTH).alias("cell"),
        )
        for r in range(1, rounds + 1)
    ]
    cells = pl.concat(per_round).with_columns(
        blank_to_null(pl.col("cell").str.slice(0, 4)).alias("opponent_text"),
        pl.col("cell").str.slice(5, 1).str.to_lowercase().alias("colour"),
        pl.col("cell").str.slice(7, 1).str.to_uppercase().alias("code"),
        (pl.col("cell").str.strip_chars() == "").alias("blank"),
    ).with_columns(parse_int(pl.col("opponent_text"), pl.Int32).alias("opponent"))
    paired = pl.col("opponent").is_not_null() & (pl.col("opponent") > 0)
    return cells.with_columns(
        pl.when(pl.col("blank")).then(pl.lit("blank"))
        .when(pl.col("opponent_text").is_not_null() & pl.col("opponent").is_null()).then(pl.lit("bad"))
        .when(paired).then(pl.lit("paired"))
        .otherwise(pl.lit("bye"))
        .alias("kind"),
        # A player who was never paired (e.g. a dummy 'spielfrei' line) has no rounds to account for.
        (paired | (pl.col("opponent_text").is_not_null() & pl.col("opponent").is_null())).any().over("line_no").alias("ever_paired"),
    )


def _raw_cell_text(own_rank: pl.Expr, own_cell: pl.Expr, opponent_rank: pl.Expr, opponent_cell: pl.Expr) -> pl.Expr:
    """'round 3: 12 [  40 w 1] / 40 [  12 b 0] | <line>': both sides' cells, then the emitting line."""
    return pl.format(
        "round {}: {} [{}] / {} [{}] | {}",
        pl.col("round"), own_rank, own_cell, opponent_rank.cast(pl.Utf8).fill_null("-"),
        opponent_cell.fill_null("no such cell"), pl.col("text"),
    )


def _bye_records(cells: pl.DataFrame) -> pl.DataFrame:
    """Cells without an opponent (byes H/F/U/Z, blank, 0000) and cells whose opponent is unreadable."""
    unpaired = cells.filter(
        (pl.col("kind") == "bye") | (pl.col("kind") == "bad") | ((pl.col("kind") == "blank") & pl.col("ever_paired"))
    )
    code = pl.when(pl.col("code").str.strip_chars() == "").then(pl.lit("Z")).otherwise(pl.col("code"))
    return unpaired.select(
        pl.col("line_no").alias("source_line"),
        pl.col("round").cast(pl.Utf8).alias("position"),
        pl.col("round"),
        pl.format("round {}: {} [{}] | {}", pl.col("round"), pl.col("rank"), pl.col("cell"), pl.col("text")).alias("raw_text"),
        join_errors(
            pl.when(pl.col("kind") == "bad").then(
                pl.format("round {} opponent {} is not a starting rank", pl.col("round"), quoted(pl.col("opponent_text")))
            ),
            pl.col("line_error"),
        ).alias("parse_error"),
        pl.col("fide_id").alias("white_id"),
        pl.col("name").alias("white_name"),
        pl.col("rating").alias("white_rating"),
        code.alias("result"),
        pl.when(pl.col("kind") != "bad").then(pl.lit("bye")).alias("unplayed"),
    )


def _pairing_records(cells: pl.DataFrame) -> pl.DataFrame:
    """One record per pairing, from the lower rank's line; disagreeing sides become parse errors."""
    paired = cells.filter(pl.col("kind") == "paired")
    partner = cells.select(
        pl.col("rank").alias("opponent"),
        "round",
        pl.col("opponent").alias("p_opponent"),
        pl.col("cell").alias("p_cell"),
        pl.col("colour").alias("p_colour"),
        pl.col("code").alias("p_code"),
        pl.col("name").alias("p_name"),
        pl.col("rating").alias("p_rating"),
        pl.col("fide_id").alias("p_fide_id"),
        pl.col("line_error").alias("p_line_error"),
    )
    joined = paired.join(partner, on=["opponent", "round"], how="left")
    points_back = pl.col("p_opponent").fill_null(-1) == pl.col("rank")
    self_paired = pl.col("opponent") == pl.col("rank")
    # The higher rank's line stays silent only when the lower rank's line will report the pairing.
    emitted = joined.filter((pl.col("rank") < pl.col("opponent")) | ~points_back | self_paired)

    own, other = pl.col("code"), pl.col("p_code")
    pair_ok = pl.lit(False)
    for a, b in COMPLEMENTARY:
        pair_ok = pair_ok | ((own == a) & (other == b))
    known_colour = pl.col("colour").is_in(["w", "b"]) & pl.col("p_colour").is_in(["w", "b"])
    # A played game needs one White and one Black; an unplayed pairing only must not have two of either.
    same_colour = known_colour & (pl.col("colour") == pl.col("p_colour"))
    colours_ok = pl.when(own.is_in(PLAYED_CODES)).then(known_colour & ~same_colour).otherwise(~same_colour)

    disagreement = (
        pl.when(self_paired).then(pl.format("round {}: rank {} is paired against itself", pl.col("round"), pl.col("rank")))
        .when(pl.col("p_cell").is_null()).then(
            pl.format("round {}: opponent rank {} has no 001 record", pl.col("round"), pl.col("opponent")))
        .when(~points_back).then(
            pl.format("round {}: rank {} names opponent {}, whose cell names {}", pl.col("round"), pl.col("rank"),
                      pl.col("opponent"), pl.col("p_opponent").cast(pl.Utf8).fill_null("nobody")))
        .when(~own.is_in(PAIRED_CODES) | ~other.is_in(PAIRED_CODES)).then(
            pl.format("round {}: result codes {} / {} are not valid for a pairing", pl.col("round"), quoted(own), quoted(other)))
        .when(~pair_ok).then(
            pl.format("round {}: results disagree ({} has {}, {} has {})", pl.col("round"), pl.col("rank"), quoted(own),
                      pl.col("opponent"), quoted(other)))
        .when(~colours_ok).then(
            pl.format("round {}: colours disagree ({} has {}, {} has {})", pl.col("round"), pl.col("rank"),
                      quoted(pl.col("colour")), pl.col("opponent"), quoted(pl.col("p_colour"))))
    )
    own_is_white = (pl.col("colour") == "w") | (~pl.col("colour").is_in(["w", "b"]) & (pl.col("p_colour") != "w"))
    white_code = pl.when(own_is_white).then(own).otherwise(other)

    def side(own_column: str, partner_column: str) -> tuple[pl.Expr, pl.Expr]:
        white = pl.when(own_is_white).then(pl.col(own_column)).otherwise(pl.col(partner_column))
        black = pl.when(own_is_white).then(pl.col(partner_column)).otherwise(pl.col(own_column))
        return white, black

    white_id, black_id = side("fide_id", "p_fide_id")
    white_name, black_name = side("name", "p_name")
    white_rating, black_rating = side("rating", "p_rating")
    result = (
        pl.when((own == "-") & (other == "-")).then(pl.lit("--"))
        .otherwise(white_code.replace_strict(WHITE_VIEW, default=None))
    )
    unplayed = (
        pl.when(own.is_in(FORFEIT_CODES)).then(pl.lit("forfeit"))
        .when(own.is_in(UNDER_ONE_MOVE_CODES)).then(pl.lit("under-one-move"))
    )
    return emitted.with_columns(disagreement.alias("disagreement")).select(
        pl.col("line_no").alias("source_line"),
        pl.col("round").cast(pl.Utf8).alias("position"),
        pl.col("round"),
        _raw_cell_text(pl.col("rank"), pl.col("cell"), pl.col("opponent"), pl.col("p_cell")).alias("raw_text"),
        join_errors(pl.col("disagreement"), pl.col("line_error"), pl.col("p_line_error")).alias("parse_error"),
        white_id.alias("white_id"),
        black_id.alias("black_id"),
        white_name.alias("white_name"),
        black_name.alias("black_name"),
        white_rating.alias("white_rating"),
        black_rating.alias("black_rating"),
        pl.when(pl.col("disagreement").is_null()).then(result).otherwise(blank_to_null(own)).alias("result"),
        pl.when(pl.col("disagreement").is_null()).then(unplayed).alias("unplayed"),
    )
