"""The same game reported twice: within a month (another dump, a file sent again) or in an earlier month."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

# Files whose rows are games: a file without rounds can still show which of its repeated rows are separate games.
from pipeline.formats import TABLE_FORMATS
from schemas.games import RESULTS, STANDARD_TIME_CONTROLS

# The same game reported twice: a tournament file submitted again, or the same game in two dumps. _occurrence tells
# apart the games of one pairing that a file shows to be separate (with_occurrences).
DUPLICATE_KEY = ["_event_start", "_white", "_black", "round", "result", "_occurrence"]
# The end of a copy's quarantine detail when the copy is a record of the same table file or PGN without a round (the
# per-file warning, pipeline.validate.month_figures.file_warnings, finds them by it, and a PGN's by its advice's end).
UNTOLD_COPY = "cannot be told from a copy"
UNTOLD_PGN_ADVICE = "tag to have such games rated"

GAME_KEY = ["event_start", "event_id", "white_id", "black_id", "round", "white_score"]
# A dated game sent again in a later month, by its own day (with_earlier_reports), and what names the game found.
_SEEN_DAY = ["date", "white_id", "black_id", "white_score"]
_FOUND = ["record_id", "month", "source_file_right", "source_line"]

# One pairing of one round of one event is one game (README, "Rating your own federation's files", **Choice**): two
# records of it that give another result, or the players in other colours, cannot both be rated, and which one is the
# correction is not known (file names sort, they do not date). The advice ends every conflicting_result detail.
CONFLICT_ADVICE = "keep one file (replace the tournament's file in its month folder, remove the other) and run again"
# {} is the earlier game's month folder: where the tournament's file is replaced (README's correction flow).
EARLIER_CONFLICT_ADVICE = (
    "to correct it, replace the tournament's file in its own month folder ({}) and run again "
    "(`recalculation: forward` then carries the correction into the next list) rather than send a second file"
)
# Within a month the day is DUPLICATE_KEY's: what makes two records copies, but for the result and colours.
_PAIRING = ["_event_start", "_low", "_high", "round"]
# A dated record's pairing by its own day: one game across files whatever event start each gives (_same_day_firsts).
_DATED_PAIRING = ["date", "_low", "_high", "round"]
_RESULT_OF_SCORE = {score: result for result, score in RESULTS.items()}


def _players(white: str = "_white", black: str = "_black") -> list[pl.Expr]:
    """The pairing's players whatever their colours: a game sent again with the colours put right is the same game."""
    return [pl.min_horizontal(white, black).alias("_low"), pl.max_horizontal(white, black).alias("_high")]


def _split_by_class(frame: pl.DataFrame, game: Sequence[str]) -> pl.DataFrame:
    """`frame` with _split: the `_class` of records of a `game` whose records state two classes (a rapid and a blitz
    event starting on one day: two games), null where they state at most one; a record stating none is left out of a
    game whose records state two (it is neither's).
    """
    classes = pl.col("_class").drop_nulls().n_unique().over(game)
    return frame.with_columns(pl.when(classes > 1).then(pl.col("_class")).alias("_split")).filter(
        (classes <= 1) | pl.col("_class").is_not_null()
    )


def _one_list(stated_class: pl.Expr) -> pl.Expr:
    """The class a record's clock or dump states, 'modern' as 'classical' (one list: STANDARD_TIME_CONTROLS); null
    when neither states one.
    """
    standard = list(STANDARD_TIME_CONTROLS)
    return stated_class.replace(standard, [standard[0]] * len(standard))


def _key_columns(day: pl.Expr, date: pl.Expr, event: pl.Expr, start: pl.Expr) -> list[pl.Expr]:
    """The day and event parts of GAME_KEY: a dated game is keyed by its event's start (`day`), an undated one by the
    start its file states (`start`: stated_start), and one with neither by its event.

    An undated game without a stated start is filed under the 1st of whichever month it was sent in, so the same game
    sent in two months has two days: its event id is what stays the same. A stated start (a TRF's tag 042 without
    round dates) is the same in both, whatever the file is called.
    """
    by_name = date.is_null() & start.is_null()
    return [
        pl.when(date.is_not_null()).then(day).otherwise(start).alias("event_start"),
        pl.when(by_name).then(_event_name(event)).alias("event_id"),
    ]


def _event_name(event: pl.Expr) -> pl.Expr:
    """An event id as two dumps of one event share it, whatever file, month or federation folder each came in."""
    # Event ids are '<dump key>#<event name>' when the dump names its events (PGN): the name is what two months share.
    # Otherwise (a TRF, a table file without event_id) the id is the dump's key '<FED>/<YYYY-MM>/<name>': its name
    # within the month folder is. The federation goes with the folder, as it goes with a PGN's dump key. An id without
    # that prefix is a table's own event_id, kept whole: a '#' in it is part of its name ('Spring Rapid #1').
    # NFC: a file or event name sent once composed ('café') and once decomposed (macOS's file names) is one name.
    return event.str.replace(r"^[^/]*/\d{4}-\d{2}/(?:[^#]*#)?", "").str.normalize("NFC")


def _event() -> pl.Expr:
    """A raw record's event id: its file's where the file names none (a table file without event_id)."""
    return pl.col("event_id").fill_null(pl.col("source_file"))


def stated_start() -> pl.Expr:
    """The start a raw record's file states for its event: a TRF's tag 042, a PGN's EventDate, a table's event_start;
    null where it states none. A PGN event without EventDate starts on its earliest game date (pipeline.formats.pgn),
    which a copy holding some of its games gives otherwise, a table row's `month` is read as its first day
    (pipeline.formats.tabular: a table's start on a month's first day is taken for one) and a record without either
    starts on its month's first day (split_month): none of them is stated.
    """
    pgn_inferred = (pl.col("format") == "pgn") & ~pl.col("raw_text").str.contains(r'(?i)\[EventDate\s+"[^"?]*\d[^"?]*"')
    a_month = pl.col("format").is_in(TABLE_FORMATS) & (pl.col("event_start").dt.day() == 1)
    return pl.when(~pgn_inferred & ~a_month).then(pl.col("event_start"))


def game_keys(games: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """What identifies each validated game across months (for split_month's seen_keys), with where it was reported:
    the GAME_KEY columns (_key_columns), the game's date (a dated game sent again is also known by its day:
    with_earlier_reports) and month, source_file, source_line and time_control (a conflict is with a game of the list a
    record's clock states). One row per dated game, dated games first; an undated game has two, one keyed by its
    event's start, one by its event's name: the games table does not say whether its file stated the start or the
    month's first day was taken (a record sent again is looked up by the one its file gives). The text naming a game is
    made only for the few found again (with_earlier_reports), not for every game kept. `event` is the game's event id
    as stored (a conflict is with a game of the same event: _earlier_conflicts).
    """
    lazy = games.lazy()
    where: list[str | pl.Expr] = [
        *GAME_KEY[2:],
        "date",
        "month",
        "source_file",
        "source_line",
        "time_control",
        pl.col("event_id").alias("event"),
    ]
    dated = lazy.filter(pl.col("date").is_not_null()).select(
        "event_start", pl.lit(None, dtype=pl.Utf8).alias("event_id"), *where
    )
    undated = lazy.filter(pl.col("date").is_null())
    by_start = undated.select("event_start", pl.lit(None, dtype=pl.Utf8).alias("event_id"), *where)
    none = pl.lit(None, dtype=pl.Date)
    by_name = undated.select(*_key_columns(none, pl.col("date"), pl.col("event_id"), none), *where)
    return pl.concat([dated, by_start, by_name]).collect()


def with_earlier_reports(
    frame: pl.DataFrame, seen_keys: pl.DataFrame | None, candidates: pl.Expr, stated_class: pl.Expr
) -> pl.DataFrame:
    """_seen_before: where an earlier month already reported this game ('<month> <file>:<line>', the earliest), null
    when none did. _conflict_before: for a record whose round is known that an earlier month rated with another result
    or the colours reversed, which game it rated and what to do (a conflicting_result detail), else null.
    Only the `candidates` are looked up (the records that can be a game sent again).

    A conflict needs the round to tell the game: the record's file holds no other record of its pairing and round,
    and the earlier months rated one game of it of the same event (_earlier_conflicts), of the class the record's
    clock or dump states (`stated_class`, null when it states none: any list's). A record that matches an earlier game
    whole is that game's duplicate.
    """
    none = [pl.lit(None, dtype=pl.Utf8).alias("_seen_before"), pl.lit(None, dtype=pl.Utf8).alias("_conflict_before")]
    if seen_keys is None or seen_keys.is_empty():
        return frame.with_columns(none)
    keys = frame.filter(candidates.fill_null(False)).select(
        "record_id",
        "source_file",
        *_key_columns(pl.col("_event_start"), pl.col("date"), _event(), stated_start()),
        _event().alias("_event"),
        "date",
        pl.col("_white").alias("white_id"),
        pl.col("_black").alias("black_id"),
        pl.col("round").cast(pl.Int32),
        pl.col("result").replace_strict(RESULTS, default=None, return_dtype=pl.Float64).alias("white_score"),
        _one_list(stated_class).alias("_class"),
    )
    if keys.is_empty():
        return frame.with_columns(none)
    # The earlier games of the candidates' players only: the join then hashes a few rows, not months of games.
    players = pl.concat([keys["white_id"], keys["black_id"]]).drop_nulls().unique().implode()
    seen = seen_keys.filter(pl.col("white_id").is_in(players)).select(
        pl.col("event_start").cast(pl.Date),
        pl.col("event_id").cast(pl.Utf8),
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        pl.col("round").cast(pl.Int32),
        pl.col("white_score").cast(pl.Float64),
        pl.col("date").cast(pl.Date),
        "month",
        "source_file",
        "source_line",
        _one_list(pl.col("time_control").cast(pl.Utf8)).alias("time_control"),
        pl.col("event").cast(pl.Utf8),
    )
    # A dated game is also the game an earlier month rated on its day whatever start either file gives, where their
    # rounds agree or one gives none (README, **Choice**; _same_day_firsts within a month).
    same_day = (
        keys.filter(pl.col("date").is_not_null())
        .join(seen.filter(pl.col("date").is_not_null()), on=_SEEN_DAY, how="inner", suffix="_seen")
        .filter(pl.col("round").is_null() | pl.col("round_seen").is_null() | (pl.col("round") == pl.col("round_seen")))
        .rename({"source_file_seen": "source_file_right"})
    )
    matches = pl.concat(
        [
            keys.join(seen, on=GAME_KEY, how="inner", nulls_equal=True).select(*_FOUND, "_event"),
            same_day.select(*_FOUND, "_event"),
        ]
    )
    # A record's event shares a game with an earlier month's file: the file sent again (with_conflicts' rule).
    shared = matches.select(
        "_event", pl.col("source_file_right").alias("source_file_earlier"), pl.lit(True).alias("_shares")
    )
    found = (
        matches.sort("month", "source_file_right", "source_line")
        .unique("record_id", keep="first")
        .select("record_id", pl.format("{} {}:{}", "month", "source_file_right", "source_line").alias("_seen_before"))
    )
    conflicts = _earlier_conflicts(keys.join(found, on="record_id", how="anti"), seen, shared.unique())
    if found.is_empty() and conflicts.is_empty():
        return frame.with_columns(none)
    reports = found.join(conflicts, on="record_id", how="full", coalesce=True)
    return frame.join(reports, on="record_id", how="left", maintain_order="left")


def _earlier_conflicts(keys: pl.DataFrame, seen: pl.DataFrame, shared: pl.DataFrame) -> pl.DataFrame:
    """record_id and _conflict_before of the `keys` (none an earlier game's duplicate) that conflict with one: a game of
    the same event (with_conflicts): of the same event id (_event_name), or of a file another record of the key's event
    is a duplicate of (`shared`: _event, source_file_earlier, _shares), the tournament's file sent again.
    """
    players = _players("white_id", "black_id")
    told = keys.filter(
        pl.col("round").is_not_null() & pl.col("white_id").is_not_null() & pl.col("black_id").is_not_null()
    ).with_columns(players)
    earlier = seen.filter(pl.col("round").is_not_null()).with_columns(players)
    kept = ["record_id", "round", "white_id", "month", "source_line", "time_control", "_class", "_event", "event"]
    kept += [f"{name}_earlier" for name in ["source_file", "white_id", "black_id", "white_score"]]
    # By the event's start (or name), and, dated, by the game's own day whatever start either file gives: an earlier
    # game both find is one.
    by_start = ["event_start", "event_id", "_low", "_high", "round"]
    matched = (
        pl.concat(
            [
                told.filter(dated)
                .filter(pl.len().over("source_file", *pairing) == 1)
                .join(earlier.filter(dated), on=pairing, how="inner", nulls_equal=True, suffix="_earlier")
                .select(kept)
                for pairing, dated in [(by_start, pl.lit(True)), (_DATED_PAIRING, pl.col("date").is_not_null())]
            ]
        )
        .unique(maintain_order=True)
        .filter(pl.col("_class").is_null() | (pl.col("_class") == pl.col("time_control")))
        .join(shared, on=["_event", "source_file_earlier"], how="left", maintain_order="left")
        .filter((_event_name(pl.col("_event")) == _event_name(pl.col("event"))) | pl.col("_shares").fill_null(False))
    )
    reversed_colours = pl.when(pl.col("white_id") != pl.col("white_id_earlier")).then(pl.lit(", colours reversed"))
    detail = pl.concat_str(
        [
            pl.format(
                "round {} of these players was rated in {} from {}:{} as {}",
                "round",
                "month",
                "source_file_earlier",
                "source_line",
                pl.col("white_score_earlier").replace_strict(_RESULT_OF_SCORE, default="?", return_dtype=pl.Utf8),
            ),
            reversed_colours,
            pl.format(
                f": the stored lists rated that result; {EARLIER_CONFLICT_ADVICE}",
                pl.col("source_file_earlier").str.replace(r"[^/]*$", ""),
            ),
        ],
        ignore_nulls=True,
    )
    # One earlier game of the pairing's round is the game; several (a match's games of one round) do not tell which.
    return matched.filter(pl.len().over("record_id") == 1).select("record_id", detail.alias("_conflict_before"))


def with_conflicts(frame: pl.DataFrame, refused: pl.Expr, stated_class: pl.Expr) -> pl.DataFrame:
    """_conflict: for a record of a game that another record of this month gives with another result or the colours
    reversed, the other records ('<file>:<line> as <result>') and what to do (a conflicting_result detail), else null.

    The records are those that passed every earlier check and that no later check refuses (`refused`), whose round is
    known (a record without a round conflicts with none), grouped by DUPLICATE_KEY's day (the event's start; undated
    and without one, the month's first day) or, when dated, by their own day (_DATED_PAIRING: as _same_day_firsts,
    whatever start each file gives), the players whatever their colours and the round; then by the class their clocks
    or dumps state (`stated_class`), when two records of one group state two (a rapid and a blitz event starting the
    same day): a record that states none is then left out, and is any class's otherwise. A group conflicts when its
    records differ in result or colours and no file holds two of them (a file with two games of the same players in
    one round, a match's sub-rounds '1.1' and '1.3', tells them apart itself, as with_occurrences does); of it, the
    records two accounts of one event give two results (_accounts_of_one_event), copies included.
    Groups of more than one record are rare, so only they are windowed again and described.
    """
    eligible = (
        pl.col("_reason").is_null()
        & ~refused.fill_null(False)
        & pl.col("round").is_not_null()
        & pl.col("_white").is_not_null()
        & pl.col("_black").is_not_null()
    )
    # Lazy: the pairing's columns are made for the eligible records only (half the time of doing it eagerly).
    rows = (
        frame.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("_index"),
            eligible.alias("_eligible"),
            "_event_start",
            "date",
            *_players(),
            "round",
        )
        .filter(pl.col("_eligible"))
        .with_columns(
            (pl.len().over(_PAIRING) > 1).alias("_by_start"),
            (pl.col("date").is_not_null() & (pl.len().over(_DATED_PAIRING) > 1)).alias("_by_date"),
        )
        .filter(pl.col("_by_start") | pl.col("_by_date"))
        # A day's records of one event start are the event's pairing's already: only two starts need the day's.
        .with_columns(
            pl.col("_by_date")
            & (pl.col("_event_start").min().over(_DATED_PAIRING) != pl.col("_event_start").max().over(_DATED_PAIRING))
        )
        .select("_index", "_by_start", "_by_date")
        .collect()
    )
    conflict = pl.repeat(None, frame.height, dtype=pl.Utf8, eager=True).alias("_conflict")
    if rows.is_empty():
        return frame.with_columns(conflict)
    # A game is one by its event's start or, dated, by its own day (_same_day_firsts): either pairing's records
    # conflict. A record both find conflicting is described by its event's.
    details = pl.concat(
        [
            _conflict_details(frame, rows.filter(pl.col(by))["_index"], pairing, refused, stated_class)
            for by, pairing in [("_by_start", _PAIRING), ("_by_date", _DATED_PAIRING)]
        ]
    ).unique("_index", keep="first", maintain_order=True)
    if details.is_empty():
        return frame.with_columns(conflict)
    return frame.with_columns(conflict.scatter(details["_index"], details["_conflict"]))


def _conflict_details(
    frame: pl.DataFrame, indices: pl.Series, pairing: list[str], refused: pl.Expr, stated_class: pl.Expr
) -> pl.DataFrame:
    """_index and _conflict (with_conflicts) of the `frame` records at `indices` grouped by `pairing`."""
    empty = pl.DataFrame(schema={"_index": pl.UInt32, "_conflict": pl.Utf8})
    if indices.is_empty():
        return empty
    groups = frame[indices].select(
        indices.alias("_index"),
        pairing[0],
        *_players(),
        "round",
        "_white",
        "result",
        "source_file",
        "source_line",
        _event().alias("_event"),
        _one_list(stated_class).alias("_class"),
        pl.concat_str([pl.col("_white").cast(pl.Utf8), pl.col("result")], separator=" ").alias("_outcome"),
    )
    groups = _split_by_class(groups, pairing)
    game = [*pairing, "_split"]
    conflicting = groups.filter(
        (pl.len().over(game) > 1)
        & (pl.len().over(game) == pl.col("source_file").n_unique().over(game))
        & (pl.col("_outcome").n_unique().over(game) > 1)
    )
    if conflicting.is_empty():
        return empty
    accounts = _accounts_of_one_event(frame, conflicting, game, refused, stated_class)
    if accounts.is_empty():
        return empty
    # A record conflicts when its result is one an account of its event contradicts; it names its copies and those
    # accounts (not the records of another event that pairs the same players in that round on that day).
    others = (
        conflicting.join(
            accounts.select(*game, "_outcome").unique(), on=[*game, "_outcome"], how="semi", nulls_equal=True
        )
        .join(conflicting, on=game, how="inner", nulls_equal=True, suffix="_other")
        .filter(pl.col("_index") != pl.col("_index_other"))
        .join(accounts, on=[*game, "_outcome", "_outcome_other"], how="left", nulls_equal=True)
        .filter((pl.col("_outcome") == pl.col("_outcome_other")) | pl.col("_linked").fill_null(False))
        .sort("_index", "source_file_other", "source_line_other")
        .group_by("_index", maintain_order=True)
        .agg(
            pl.first("round"),
            pl.concat_str(
                [
                    pl.format("{}:{} as {}", "source_file_other", "source_line_other", "result_other"),
                    pl.when(pl.col("_white_other") != pl.col("_white")).then(pl.lit(" with colours reversed")),
                    pl.when(
                        (pl.col("_white_other") == pl.col("_white")) & (pl.col("result_other") == pl.col("result"))
                    ).then(pl.lit(" (a copy of this record)")),
                ],
                ignore_nulls=True,
            )
            .str.join(", ")
            .alias("_others"),
        )
    )
    return others.select(
        "_index",
        pl.format(
            "round {} of these players is also reported at {}: the files give this game different results (or "
            "colours) and which is the correction is not known, so none is rated; {}",
            "round",
            "_others",
            pl.lit(CONFLICT_ADVICE),
        ).alias("_conflict"),
    )


def _accounts_of_one_event(
    frame: pl.DataFrame, conflicting: pl.DataFrame, game: list[str], refused: pl.Expr, stated_class: pl.Expr
) -> pl.DataFrame:
    """The pairs of outcomes of each `game` of the `conflicting` records (`_outcome`, `_outcome_other`, `_linked`) that
    two accounts of one event give: a record of each of the same event id (_event_name), or of two events that share
    another game (a record of one is a duplicate of a record of the other: _with_firsts), as a tournament's file sent
    again under another name, or another federation's export of it naming the event otherwise, does.

    The same pairing in the same round on one day in two events that share no game is two games (two undated events
    of one month, a rapid and a blitz event of one day without clocks, two events starting on one day).
    Only the files of records whose event ids differ are looked into again, for the games they share.
    """
    pairs = (
        conflicting.join(conflicting, on=game, how="inner", nulls_equal=True, suffix="_other")
        .filter(pl.col("_outcome") != pl.col("_outcome_other"))
        .with_columns((_event_name(pl.col("_event")) == _event_name(pl.col("_event_other"))).alias("_linked"))
    )
    unnamed = pairs.filter(~pl.col("_linked"))
    if not unnamed.is_empty():
        files = pl.concat([unnamed["source_file"], unnamed["source_file_other"]]).unique()
        shared = _events_sharing_a_game(
            frame.filter(pl.col("source_file").is_in(files.implode())), refused, stated_class
        )
        pairs = pairs.join(shared, on=["_event", "_event_other"], how="left").with_columns(
            pl.col("_linked") | pl.col("_shares").fill_null(False)
        )
    return pairs.filter(pl.col("_linked")).select(*game, "_outcome", "_outcome_other", "_linked").unique()


def _events_sharing_a_game(frame: pl.DataFrame, refused: pl.Expr, stated_class: pl.Expr) -> pl.DataFrame:
    """The pairs of events (`_event`, `_event_other`, `_shares`) of which a record of one is a copy of a record of the
    other in `frame` (whole files), by with_first_copies' rule (_with_firsts).
    """
    copies = (
        _with_firsts(frame, refused, stated_class)
        .filter(pl.col("_reason").is_null() & pl.col("_first").is_not_null())
        .select("_first", _event().alias("_event"))
        .unique()
    )
    return (
        copies.join(copies, on="_first", suffix="_other")
        .filter(pl.col("_event") != pl.col("_event_other"))
        .select("_event", "_event_other", pl.lit(True).alias("_shares"))
        .unique()
    )


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


def with_first_copies(frame: pl.DataFrame, refused: pl.Expr, stated_class: pl.Expr) -> pl.DataFrame:
    """_first_copy: for a later copy of a game in this month, where its first copy is ('<file>:<line>'); else null.
    _also_reported_by: for a game's first copy (and its copies), the other federations whose dumps sent a copy of it
    this month, sorted; null when none did (the games table's also_reported_by).
    _copy_note: for a copy that repeats a record of its own table file or PGN without a round, why it is taken for a
    copy (a PGN's record is its tag section, so a game whose tags repeat an earlier one's is its copy).

    A copy shares the first's DUPLICATE_KEY, or is in another file and dated the same day (_same_day_firsts).
    Only records that passed every earlier check compete for "first copy", in the frame's order, and of them only the
    ones no later check refuses (`refused`, e.g. an implausible stated rating): a copy points to a game that is rated.
    A refused record before that first copy keeps its own reason; one after it is a copy.
    Copies are rare, so the text is built for their keys only, not for every record of the month.
    """
    frame = _with_firsts(frame, refused, stated_class)
    candidate = pl.col("_reason").is_null()
    later = candidate & (pl.col("_index") > pl.col("_first")).fill_null(False)
    frame = frame.with_columns(later.alias("_later_copy"))
    copies = frame.filter(pl.col("_later_copy"))
    # A game counts as reported by every federation whose dump sent it this month, not by the folder of the copy
    # kept alone (national scenarios: pipeline.scenarios.restriction.sent_by).
    sent = copies.group_by("_first").agg(pl.col("federation").unique().alias("_sent"))
    others = pl.col("_sent").list.set_difference(pl.concat_list(pl.col("federation"))).list.sort()
    firsts = (
        frame.filter(pl.col("_index").is_in(sent["_first"].implode()))
        .join(sent, left_on="_index", right_on="_first")
        .select(
            pl.col("_index").alias("_first"),
            pl.format("{}:{}", pl.col("source_file"), pl.col("source_line")).alias("_first_copy"),
            pl.col("source_file").alias("_first_file"),
            pl.when(others.list.len() > 0).then(others).alias("_also_reported_by"),
        )
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


def _with_firsts(frame: pl.DataFrame, refused: pl.Expr, stated_class: pl.Expr) -> pl.DataFrame:
    """`frame` with _occurrence (with_occurrences), _index (its row) and _first: the _index of the first record of
    its game that passed every check and that `refused` does not refuse, the record's own when it is that first; null
    where none is. A record's game is its DUPLICATE_KEY's, or another file's of the same day (_same_day_firsts).
    """
    frame = with_occurrences(frame).with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_index"))
    rated = pl.col("_reason").is_null() & ~refused.fill_null(False)
    first = pl.when(rated).then(pl.col("_index")).min().over(DUPLICATE_KEY)
    return _same_day_firsts(frame.with_columns(first.alias("_first")), stated_class)


# A dated game is one game on its own day whatever event start its files give or infer (README, **Choice**): two
# files' records of the same players, colours, result and day are one game where their rounds agree or one gives
# none. Within one file with_occurrences tells a match's games apart; across files nothing does, so a game without a
# round is taken for the game of another file on its day (two games of the same players, colours and result on one
# day, one file without rounds, are one: the price of not rating a game twice).
_DAY = ["date", "_white", "_black", "result"]


def _same_day_firsts(frame: pl.DataFrame, stated_class: pl.Expr) -> pl.DataFrame:
    """`frame` (with `_index`, and `_first`: the first rated copy of each record's DUPLICATE_KEY) with `_first` also
    joining the records of other files dated the same day (_DAY) into one game.

    Within a day's records of the players, colours and result, a record with a round is the game of that round (and
    occurrence), and a file's records without one, in occurrence order, the games of the day's rounds in order (the
    k-th the k-th round known; past them, the k-th game without a round). A file that gives some of them a round and
    some none is left as with_occurrences has it. Records of two classes (a rapid and a blitz event on one day, by
    their clocks or dumps: `stated_class`) are two games, and one stating none is then left alone, as in
    with_conflicts. Only days some other file also reports are windowed, not the month's every record.
    """
    candidate = (
        pl.col("_reason").is_null()
        & pl.col("date").is_not_null()
        & pl.col("_white").is_not_null()
        & pl.col("_black").is_not_null()
    )
    # A record none of whose DUPLICATE_KEY is rated (all refused) may still be a later copy of another file's game.
    none_rated = pl.col("_first").fill_null(pl.lit(2**32 - 1, dtype=pl.UInt32))
    rows = (
        frame.lazy()
        .select(
            "_index",
            "_first",
            candidate.alias("_candidate"),
            "source_file",
            *_DAY,
            "round",
            "_occurrence",
            _one_list(stated_class).alias("_class"),
        )
        .filter(pl.col("_candidate"))
        # Only days whose records are not one game already (a copy of a whole file is, by DUPLICATE_KEY), by windows
        # of len, min and max first: n_unique over every record costs seven times as much.
        .filter(pl.len().over(_DAY) > 1)
        .filter(none_rated.min().over(_DAY) != none_rated.max().over(_DAY))
        .filter(pl.col("source_file").n_unique().over(_DAY) > 1)
        .collect()
    )
    if rows.is_empty():
        return frame
    untold = pl.col("round").is_null()
    # A round and its occurrence in one number (a match's sub-rounds '1.1', '1.3' are round 1, occurrences 0 and 1).
    told_slot = pl.col("round").cast(pl.Int64) * 65536 + pl.col("_occurrence").cast(pl.Int64)
    rounds_known = told_slot.filter(~untold).unique().sort().over(_DAY, mapping_strategy="join")
    rank = pl.col("_occurrence").rank("dense").over("source_file", *_DAY, untold).cast(pl.Int64) - 1
    slot = (
        pl.when(~untold)
        .then(told_slot)
        .otherwise(pl.coalesce(rounds_known.list.get(rank, null_on_oob=True), -rank - 1))
    )
    linked = (
        _split_by_class(
            rows.filter(untold.n_unique().over("source_file", *_DAY) == 1).with_columns(slot.alias("_slot")),
            [*_DAY, "_slot"],
        )
        .with_columns(pl.col("_first").min().over(*_DAY, "_slot", "_split").alias("_day_first"))
        .filter(pl.col("_day_first") < pl.col("_first").fill_null(pl.col("_day_first") + 1))
    )
    if linked.is_empty():
        return frame
    firsts = frame["_first"].clone().scatter(linked["_index"], linked["_day_first"])
    # A record's copies in its own file (its DUPLICATE_KEY) follow it to the other file's first copy.
    return frame.with_columns(firsts).with_columns(pl.col("_first").min().over(DUPLICATE_KEY))


# How far back an undated game sent again counts as a duplicate (a dated one as long as its month's games can be
# reported again: pipeline.rules.calendar.last_list_reached_from).
UNDATED_WINDOW_MONTHS = 12
