"""PGN game headers -> one raw record per game, parsed with Polars over the file's lines (moves only counted)."""

from __future__ import annotations

import polars as pl

from pipeline.formats.common import (
    blank_to_null,
    classify_time_control,
    join_errors,
    parse_int,
    parse_iso_date,
    parse_time_control,
    quoted,
    split_lines,
)

TAGS = [
    "Event", "Date", "EventDate", "Round", "White", "Black", "Result", "WhiteFideId", "BlackFideId",
    "WhiteElo", "BlackElo", "TimeControl", "Termination",
]
_TAG_LINE = r'^\[\s*([A-Za-z0-9_]+)\s+"(.*)"\s*\]$'
_MISSING = ["", "?", "-", "0"]  # how PGN exports spell "no id" / "unrated" (the Olympiad file uses Elo "0")


def parse_pgn(text: str, event_key: str) -> pl.DataFrame:
    """Records of one PGN file (columns of common.RECORD_COLUMNS; position = game number)."""
    lines = _classified_lines(text)
    games = _games(lines)
    preamble = _preamble_record(lines)
    if games.is_empty():
        return preamble if preamble is not None else games
    records = _records(games, event_key)
    return records if preamble is None else pl.concat([preamble, records], how="diagonal_relaxed")


def _classified_lines(text: str) -> pl.DataFrame:
    """Each line with its tag name/value (if a tag) and the number of the game it belongs to (0 = before any)."""
    lines = pl.DataFrame({"text": split_lines(text)}, schema={"text": pl.Utf8}).with_row_index("line_no", offset=1)
    stripped = pl.col("text").str.strip_chars()
    lines = lines.with_columns(
        pl.col("line_no").cast(pl.Int64),
        # '[%clk ...]' at a line start is a comment continuation, not a tag.
        (stripped.str.starts_with("[") & ~stripped.str.starts_with("[%")).alias("tagish"),
        stripped.str.extract_groups(_TAG_LINE).alias("tag"),
    ).with_columns(
        pl.when(pl.col("tagish")).then(pl.col("tag").struct.field("1")).alias("tag_name"),
        pl.when(pl.col("tagish")).then(
            pl.col("tag").struct.field("2").str.replace_all(r'\"', '"', literal=True).str.replace_all("\\\\", "\\", literal=True)
        ).alias("tag_value"),
    ).drop("tag")
    # A game starts where a tag section starts; a second Event tag inside one section (games whose
    # tag sections touch without movetext or a blank line between them) starts another game.
    section_start = pl.col("tagish") & ~pl.col("tagish").shift(1, fill_value=False)
    is_event = pl.col("tag_name") == "Event"
    lines = lines.with_columns(section_start.cum_sum().alias("section"))
    events_so_far = is_event.fill_null(False).cast(pl.Int32).cum_sum().over("section")
    game_start = section_start | (is_event.fill_null(False) & (events_so_far > 1))
    return lines.with_columns(game_start.cum_sum().alias("game"))


def _preamble_record(lines: pl.DataFrame) -> pl.DataFrame | None:
    """Text before the first tag section (or a file with no tags at all) is reported, never dropped."""
    before = lines.filter(
        (pl.col("game") == 0) & (pl.col("text").str.strip_chars() != "") & ~pl.col("text").str.starts_with("%")
    )
    if before.is_empty():
        return None
    first = before.row(0, named=True)
    return pl.DataFrame(
        {
            "source_line": [first["line_no"]], "position": ["preamble"],
            "raw_text": ["\n".join(before["text"].head(20).to_list())],
            "parse_error": [f"{before.height} line(s) of text outside any PGN tag section"],
        },
        schema={"source_line": pl.Int64, "position": pl.Utf8, "raw_text": pl.Utf8, "parse_error": pl.Utf8},
    )


def _games(lines: pl.DataFrame) -> pl.DataFrame:
    """One row per game: first header line, header block, wanted tags, malformed tag lines, movetext."""
    in_game = lines.filter(pl.col("game") > 0)
    tag_line = pl.col("tagish")
    malformed = tag_line & pl.col("tag_name").is_null()
    movetext = ~tag_line & (pl.col("text").str.strip_chars() != "") & ~pl.col("text").str.starts_with("%")
    return in_game.group_by("game", maintain_order=True).agg(
        pl.col("line_no").filter(tag_line).first().alias("source_line"),
        pl.col("text").filter(tag_line).str.join("\n").alias("raw_text"),
        pl.col("line_no").filter(malformed).first().alias("malformed_line"),
        pl.col("text").filter(malformed).first().alias("malformed_text"),
        pl.col("text").filter(movetext).str.join("\n").alias("movetext"),
        *[pl.col("tag_value").filter(pl.col("tag_name") == tag).first().alias(tag) for tag in TAGS],
    )


def _has_move(movetext: pl.Expr, result: pl.Expr) -> pl.Expr:
    """Whether the movetext holds at least one move once comments, variations, numbers and results go."""
    cleaned = movetext.str.replace_all(r"\{[^}]*\}", " ").str.replace_all(r";[^\n]*", " ")
    for _ in range(3):  # variations nest; three levels is plenty for real exports
        cleaned = cleaned.str.replace_all(r"\([^()]*\)", " ")
    cleaned = (
        cleaned.str.replace_all(r"\$\d+", " ")
        .str.replace_all(r"\d+\.+", " ")
        .str.replace_all(r"(^|\s)(1-0|0-1|1/2-1/2|½-½|\*)(\s|$)", " ")
        .str.strip_chars()
    )
    # The result token may be spelt oddly (the Olympiad's double forfeit '0-0'): drop it as Result says.
    cleaned = cleaned.str.strip_suffix(result.fill_null("\x00")).str.strip_chars()
    return cleaned.str.contains(r"[A-Za-z]|0-0")


def _side_int(tag: str, label: str, dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """(value, error) of an id/Elo tag: missing spellings -> null; other non-numbers -> error."""
    text = blank_to_null(pl.col(tag))
    present = text.is_not_null() & ~text.is_in(_MISSING)
    value = pl.when(present).then(parse_int(text, dtype))
    error = pl.when(present & value.is_null()).then(pl.format(f"{label} {{}} is not a number", quoted(text)))
    return value, error


def _records(games: pl.DataFrame, event_key: str) -> pl.DataFrame:
    white_id, white_id_error = _side_int("WhiteFideId", "WhiteFideId", pl.Int64)
    black_id, black_id_error = _side_int("BlackFideId", "BlackFideId", pl.Int64)
    white_elo, white_elo_error = _side_int("WhiteElo", "WhiteElo", pl.Int32)
    black_elo, black_elo_error = _side_int("BlackElo", "BlackElo", pl.Int32)
    result = blank_to_null(pl.col("Result")).replace({"½-½": "1/2-1/2"})
    base, increment = parse_time_control(pl.col("TimeControl"))
    termination = pl.col("Termination").str.to_lowercase().fill_null("")
    # Without movetext (exports that strip moves, like the FWWRC file) the move count is unknown: assume played.
    moves_known = pl.col("movetext") != ""
    no_moves = moves_known & ~_has_move(pl.col("movetext"), result)
    unplayed = (
        pl.when(termination.str.contains("forfeit|unplayed")).then(pl.lit("forfeit"))
        .when(no_moves & result.is_in(["1-0", "0-1", "0-0"])).then(pl.lit("forfeit"))
        .when(no_moves).then(pl.lit("under-one-move"))
    )
    event = blank_to_null(pl.col("Event"))
    named_event = event.is_not_null() & (event != "?")
    records = games.select(
        "source_line",
        pl.col("game").cast(pl.Utf8).alias("position"),
        "raw_text",
        join_errors(
            pl.when(pl.col("malformed_line").is_not_null()).then(
                pl.format("malformed tag line {}: {}", pl.col("malformed_line"), pl.col("malformed_text"))),
            white_id_error, black_id_error, white_elo_error, black_elo_error,
        ).alias("parse_error"),
        # Events are named per file: the same Event name in another federation's file is another event.
        pl.when(named_event).then(pl.format("{}#{}", pl.lit(event_key), event)).otherwise(pl.lit(event_key)).alias("event_id"),
        parse_iso_date(pl.col("EventDate")).alias("event_start"),
        parse_iso_date(pl.col("Date")).alias("date"),
        pl.col("Round").str.extract(r"^\s*(\d+)", 1).cast(pl.Int32, strict=False).alias("round"),
        white_id.alias("white_id"),
        black_id.alias("black_id"),
        blank_to_null(pl.col("White")).alias("white_name"),
        blank_to_null(pl.col("Black")).alias("black_name"),
        result.alias("result"),
        unplayed.alias("unplayed"),
        base.alias("tc_base_seconds"),
        increment.alias("tc_increment_seconds"),
        white_elo.alias("white_rating"),
        black_elo.alias("black_rating"),
    )
    # No EventDate: the event started on its earliest game date in this file.
    return records.with_columns(
        pl.coalesce(pl.col("event_start"), pl.col("date").min().over("event_id")).alias("event_start"),
        classify_time_control(pl.col("tc_base_seconds"), pl.col("tc_increment_seconds")).alias("time_control"),
    )
