"""Split raw game records into validated games and quarantined records, each with one reason code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import pandera.polars as pa
import polars as pl

from pipeline.formats import event_named_by_row
from pipeline.formats.common import READER_REASONS

# A stated rating outside RATING_PLAUSIBLE is a typo, not a rating.
from pipeline.formats.fide_list import RATING_PLAUSIBLE
from pipeline.ingest.landing import MISPLACED, NOT_A_FILE
from pipeline.ingest.registry import problem_lines, registries_in_force, registry_file_problems, registry_history
from pipeline.months import add_months, first_day, month_range
from pipeline.rules.calendar import (
    REPORTING_REASONS,
    last_list_reached_from,
    list_of_period,
    reporting_problems,
    tournament_end,
)
from pipeline.rules.time_controls import not_ratable_detail, time_control_class
from pipeline.store.monthly import months_stored, stored_table_months, table_key
from pipeline.store.object_store import ObjectStore
from pipeline.text import capped_detail
from pipeline.validate.duplicates import (
    UNDATED_WINDOW_MONTHS,
    game_keys,
    with_conflicts,
    with_earlier_reports,
    with_first_copies,
)
from pipeline.validate.identity import id_problems, identity_report, resolve_players, with_name_keys
from schemas.games import RESULTS, TIME_CONTROLS, Games
from schemas.quarantine import Quarantine
from schemas.util import conform, polars_schema

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then

DEFAULT_TIME_CONTROL = "classical"


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
    rated: pl.Series | None = None,
) -> MonthSplit:
    """RawGames -> Games, Quarantine and Identity rows; every raw row ends in exactly one of the first two.

    Checks, first match wins: misplaced and not_a_file (landing-zone entries that were not read),
    unparseable (also a day outside its event's stated dates: _with_days_outside_event), unplayed,
    invalid_id (id_problems), unknown_player, self_play,
    result_out_of_domain, duplicate (of an earlier month's game), conflicting_result (the round of an earlier
    month's game with another result or colours: with_earlier_reports), time_control_not_ratable,
    future, after_closing_date and too_late (FIDE's reporting calendar, pipeline.rules.calendar: the
    month folder is the list period the dumps were reported for; a tournament's games are rated in
    a period from the first list whose closing date it ended by to the third list after it ended),
    conflicting_result (records of one round of one pairing this month that give another result or colours:
    with_conflicts), duplicate (of a game earlier in this month: another dump, or the same tournament sent twice; a
    record rating_implausible refuses is nobody's first copy), rating_implausible.

    A game's time_control is FIDE's class for its clock in the era of its day (its date, else its
    event's start; pipeline.rules.time_controls), whatever the dump or reader said, except that a
    declared 'modern' stays 'modern' where the era says classical; without a clock, the class the
    dump declares, else classical.

    players: the registry (may be empty): an id in a dump identifies its player whether registered or
    not (see _resolve_players); a registry used for many months carries its names' keys
    (with_name_keys), else they are computed here. seen_keys: game_keys() of the games of earlier
    months; a game among them is a duplicate here (a tournament reported again in a later month). rated: the
    unregistered ids earlier months rated: one whose every named record of the month names one registered player
    keeps its history, rated under the id (resolve_players).
    check_month=False skips the reporting calendar (a loose file's month is its own). A tournament's end is
    its last game's day in the month's dumps (per file and event), of the games dated by the month's end, or the
    end its dump states when later (pipeline.rules.calendar.tournament_end: a table file's row naming no event
    is a tournament of its own).
    """
    month_start = first_day(month)
    # "First copy" = earliest by file stem, then line: a resubmission's name usually extends the
    # original's ('open-a' -> 'open-a-resubmitted', 'open-a (2)'), so the original's stem sorts first.
    stem = pl.col("source_file").str.replace(r"(?i)(\.(trf|txt|pgn|csv|parquet))?(\.(gz|zst))?$", "")
    frame = raw.sort(stem, pl.col("source_file"), pl.col("source_line"), pl.col("record_id"))
    frame = frame.with_columns(id_problems(pl.col("white_id"), pl.col("black_id")).alias("_id_problem"))
    frame = resolve_players(frame, players, rated)
    # Only records that name players count in the identity report (not unreadable lines, byes or ids that are none).
    identities = identity_report(
        frame.lazy().filter(
            pl.col("parse_error").is_null() & pl.col("_id_problem").is_null() & pl.col("unplayed").is_null()
        ),
        month,
    )

    # A game dated in part ('2023.12.??', '2023.??.??') is of an event started in the latest month its date allows, up
    # to the folder's: the list in force is the newest it can have been played under, as the folder's month is for an
    # undated game. An EventDate known in part starts the event in its known period (date_from).
    latest_month = pl.min_horizontal("date_to", pl.lit(month_start)).dt.month_start()
    partial_start = (
        pl.when(pl.col("date_to").is_not_null())
        .then(pl.max_horizontal("date_from", latest_month))
        .otherwise(pl.col("date_from"))
    )
    frame = frame.with_columns(
        pl.coalesce("event_start", "date", partial_start, pl.lit(month_start)).alias("_event_start"),
        # A partial date's known part bounds the day: a game of 2024.02.?? is no game of January (RawGames.date_from).
        pl.max_horizontal(pl.coalesce("date", "event_start"), "date_from").alias("_game_day"),
    )
    # The clock's class and whether FIDE rates it, under the definitions in force on the game's day.
    clock_day = pl.coalesce("_game_day", "_event_start")
    base, increment = pl.col("tc_base_seconds"), pl.col("tc_increment_seconds")
    frame = frame.with_columns(
        time_control_class(base, increment, clock_day).alias("_clock_class"),
        not_ratable_detail(base, increment, clock_day).alias("_too_fast"),
    )
    # The class a record's clock states, else the one its dump declares (null: neither; rated as the default).
    stated_class = (
        pl.when(pl.col("_clock_class").is_not_null())
        .then(pl.col("_clock_class"))
        .when(pl.col("time_control").is_in(TIME_CONTROLS))
        .then(pl.col("time_control"))
    )
    game_day = pl.col("_game_day")
    # A tournament's end is its last game in the month or before: a game dated after the month cannot have been
    # reported for it (`future`), and one wrong date does not move a whole tournament to another list.
    in_month = game_day < pl.lit(first_day(add_months(month, 1)))
    event = pl.col("event_id").fill_null(pl.col("source_file"))
    named = event_named_by_row(frame, event)
    stated_end = pl.col("event_end")  # a TRF's tag 052: a tournament ends no earlier, even after the month
    events: list[str | pl.Expr] = ["source_file", event]
    frame = _with_days_outside_event(frame, event)
    # A game its own event's dates contradict ends no tournament: its day is not known.
    in_month = in_month & pl.col("_outside_event").is_null()
    alone = None if named.all() else pl.lit(named)
    frame = frame.with_columns(
        tournament_end(pl.when(in_month).then(game_day), events, alone, stated_end).alias("_event_end")
    )
    # A partial date's first day (the game's day) is only a lower bound: its last day ('2023.??.??': 31 December 2023)
    # is the latest the tournament can have ended, which alone can prove it reported too late.
    latest_end = None  # the month's dumps date every game in whole or not at all, as most do
    if frame["date_to"].null_count() < frame.height:
        latest_day = pl.when(in_month).then(pl.coalesce("date_to", game_day))
        frame = frame.with_columns(tournament_end(latest_day, events, alone, stated_end).alias("_latest_end"))
        latest_end = pl.col("_latest_end")
    # An undated game's day is its event's start (a CSV's month column gives the month's first day), or the first day
    # of the period its partial date names.
    day_is = (
        pl.when(pl.col("date").is_not_null())
        .then(pl.lit("game dated"))
        .when(pl.col("date_from") == game_day)
        .then(pl.lit("game dated in part, from"))
        .otherwise(pl.lit("event starts"))
    )
    reported, reported_detail = reporting_problems(pl.col("_event_end"), game_day, month, day_is, latest_end)
    frame = frame.with_columns((reported if check_month else pl.lit(None, dtype=pl.Utf8)).alias("_reported"))
    # The messages of the few games the calendar refuses only: formatting dates on every row cost 0.25 s a month.
    details = frame.filter(pl.col("_reported").is_not_null()).select(
        "record_id", reported_detail.alias("_reported_detail")
    )
    frame = frame.join(details, on="record_id", how="left", maintain_order="left")
    # Landing-zone entries that were not read, and records a reader quarantined for a reason of its own
    # (pipeline.formats.common.READER_REASONS): '<reason>: <detail>'.
    refused = pl.col("parse_error").str.extract(f"^({'|'.join([MISPLACED, NOT_A_FILE, *READER_REASONS])}): ", 1)
    early = [
        # Landing-zone entries that were not read: the reason is the entry's kind, the detail where it belongs.
        (MISPLACED, refused == MISPLACED, pl.col("parse_error").str.strip_prefix(f"{MISPLACED}: ")),
        (NOT_A_FILE, refused == NOT_A_FILE, pl.col("parse_error").str.strip_prefix(f"{NOT_A_FILE}: ")),
        *[(code, refused == code, pl.col("parse_error").str.strip_prefix(f"{code}: ")) for code in READER_REASONS],
        ("unparseable", pl.col("parse_error").is_not_null(), pl.col("parse_error")),
        ("unparseable", pl.col("_outside_event").is_not_null(), pl.col("_outside_event")),
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
            ~pl.col("result").is_in(list(RESULTS)).fill_null(False),
            pl.format("result {} is not 1-0, 0-1 or 1/2-1/2", _quoted_or_missing(pl.col("result"))),
        ),
        # Reported in an earlier month: a duplicate, even though its date is (usually) outside this month.
        ("duplicate", pl.col("_seen_before").is_not_null(), pl.format("same game as {}", pl.col("_seen_before"))),
        ("conflicting_result", pl.col("_conflict_before").is_not_null(), pl.col("_conflict_before")),
        # Before the calendar: a clock FIDE does not rate is rated in no month, so filing the game elsewhere would not
        # help.
        ("time_control_not_ratable", pl.col("_too_fast").is_not_null(), pl.col("_too_fast")),
        *[(code, pl.col("_reported") == code, pl.col("_reported_detail")) for code in REPORTING_REASONS],
    ]
    # An earlier month's game sent again is undated (its month does not show it) or dated before this month: a late
    # report, or a tournament of two months sent whole again in its second (its first month's games were rated
    # there). A game of this month cannot have been rated in an earlier folder, where it was `future`.
    sent_again = pl.col("date").is_null() | (pl.col("date") < pl.lit(month_start))
    frame = with_earlier_reports(frame, seen_keys, sent_again if check_month else pl.lit(True), stated_class)
    frame = frame.with_columns(_first_match(early))

    implausible = _implausible("white_rating") | _implausible("black_rating")
    # A record rating_implausible refuses neither conflicts nor is a first copy: its resubmission with the rating put
    # right is the game. A conflicting record is no first copy either: none of its game's records is rated.
    frame = with_conflicts(frame, implausible, stated_class)
    frame = with_first_copies(frame, implausible | pl.col("_conflict").is_not_null(), stated_class)
    late = [
        ("conflicting_result", pl.col("_conflict").is_not_null(), pl.col("_conflict")),
        (
            "duplicate",
            pl.col("_first_copy").is_not_null(),
            pl.concat_str(
                [pl.format("same game as {}", pl.col("_first_copy")), pl.col("_copy_note")], ignore_nulls=True
            ),
        ),
        (
            "rating_implausible",
            implausible,
            pl.concat_str([_rating_problem("white"), _rating_problem("black")], separator="; ", ignore_nulls=True),
        ),
    ]
    frame = _apply_late(frame, late)

    games = _kept_rows(
        frame,
        pl.col("_reason").is_null(),
        [
            pl.col("record_id").alias("game_id"),
            pl.lit(month).alias("month"),
            pl.col("event_id").fill_null(pl.col("source_file")),
            pl.col("_event_start").alias("event_start"),
            pl.col("_white").alias("white_id"),
            pl.col("_black").alias("black_id"),
            pl.col("result").replace_strict(RESULTS, return_dtype=pl.Float64).alias("white_score"),
            pl.when((pl.col("time_control") == "modern") & (pl.col("_clock_class") == "classical"))
            .then(pl.lit("modern"))
            .otherwise(stated_class.fill_null(pl.lit(DEFAULT_TIME_CONTROL)))
            .alias("time_control"),
            pl.col("white_rating").alias("white_rating_used"),
            pl.col("black_rating").alias("black_rating_used"),
            pl.col("_also_reported_by").alias("also_reported_by"),
        ],
        Games,
    )
    quarantine = _kept_rows(
        frame,
        pl.col("_reason").is_not_null(),
        [
            pl.lit(month).alias("month"),
            pl.col("_reason").alias("reason"),
            capped_detail(pl.col("_detail")).fill_null("").alias("detail"),
        ],
        Quarantine,
    )
    return MonthSplit(games, quarantine, identities)


# A game is played between its event's first and last day. A day before the start its dump states (TRF tag 042, PGN
# EventDate, a table's event_start) or after the end (TRF tag 052) contradicts the record itself: one of the two dates
# is wrong (a typo of the year, day.month.year read as year/month/day), and the game's day picks the time-control era
# and the reporting calendar and is stored, so neither is taken (README, "Rating your own federation's files"). A date
# known in part contradicts only when the whole period it names is outside, and then only a start the dump states: a
# PGN event without EventDate starts on its earliest whole date, which a game of the month before may precede.
_STATED_AS = {"trf": ("tag 132", "tag 042", "tag 052"), "pgn": ("Date", "EventDate", "event_end")}
_TABLE_STATED_AS = ("date", "event_start", "event_end")


def _with_days_outside_event(frame: pl.DataFrame, event: pl.Expr) -> pl.DataFrame:
    """Adds `_outside_event`: why a record's day contradicts its event's stated start or end (see above), else null."""
    whole = pl.col("date").is_not_null()
    first, last = pl.coalesce("date", "date_from"), pl.coalesce("date", "date_to")
    start, end = pl.col("event_start"), pl.col("event_end")
    before = last < start
    if frame["date_to"].null_count() < frame.height:
        # A start that is its event's earliest whole game date may have been taken from it (a PGN without EventDate).
        stated = (start != pl.col("date").min().over("source_file", event)).fill_null(True)
        before = before & (whole | stated)
    sides = frame.select(before.fill_null(False).alias("before"), (first > end).fill_null(False).alias("after"))
    flagged = sides.select((pl.col("before") | pl.col("after")).arg_true()).to_series()
    if flagged.is_empty():  # as nearly always: no message is formatted on every row
        return frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_outside_event"))

    def label(part: int) -> pl.Expr:
        stated_as = pl.col("format").replace_strict(
            {name: names[part] for name, names in _STATED_AS.items()}, default=_TABLE_STATED_AS[part]
        )
        return pl.concat_str([pl.lit(" ("), stated_as, pl.lit(")")])

    day = (
        pl.when(whole)
        .then(pl.format("game dated {}{}", pl.col("date"), label(0)))
        .otherwise(pl.format("game dated in part, between {} and {}{}", first, last, label(0)))
    )
    detail = (
        pl.when(pl.lit(sides["before"].gather(flagged)))
        .then(pl.format("{} is before its event's start {}{}", day, start, label(1)))
        .otherwise(pl.format("{} is after its event's end {}{}", day, end, label(2)))
    )
    details = frame[flagged].select(pl.concat_str([detail, pl.lit(": one of the two dates is wrong")]))
    messages = pl.repeat(None, frame.height, dtype=pl.Utf8, eager=True).alias("_outside_event")
    messages.scatter(flagged, details.to_series())
    return frame.with_columns(messages)


def _kept_rows(
    frame: pl.DataFrame, rows: pl.Expr, columns: list[pl.Expr], model: type[pa.DataFrameModel]
) -> pl.DataFrame:
    """conform(frame.filter(rows).with_columns(columns), model), filtering only the columns that reads: not the
    month's working frame, twice over (0.1 GB at the fide scale). Eager, so the frame's chunks are as they were (the
    Parquet file's row groups follow them).
    """
    made = {column.meta.output_name() for column in columns}
    read = {name for expr in [rows, *columns] for name in expr.meta.root_names()}
    read |= {name for name in polars_schema(model) if name not in made}
    return conform(
        frame.select([name for name in frame.columns if name in read]).filter(rows).with_columns(columns), model
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


def reconcile_files(raw: pl.DataFrame, games: pl.DataFrame, quarantine: pl.DataFrame) -> pl.DataFrame:
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


class MonthValidator:
    """split_month over a run's months, called in order: the registry read once, each month given the registry in
    force in it (registry_in_force: the players registered by then, each named by the newest folder at or before
    it, with the names earlier folders gave them still matched), and a game an earlier month already rated a
    duplicate there: a dated one while its month's tournaments can still be reported (last_list_reached_from), an
    undated one for UNDATED_WINDOW_MONTHS.
    """

    def __init__(self, store: ObjectStore, months: Sequence[str]):
        # Every folder's rows up to the run's last month, their names normalised once (with_name_keys); the registry
        # in force in a month, made once per registry folder (the months up to the next share it).
        # Only the ids and names, all that resolve_players reads: the other fields of a million players' history,
        # and of the registry in force made from it each month, are not held.
        history = registry_history(store, months[-1], columns=["player_id", "name"])
        self.registry = registries_in_force(with_name_keys(history), older_spellings=True)
        self._registry_problems = registry_file_problems(store, months[-1])
        # The games of the stored months before the run that a month of it may receive again; each validated month
        # is added.
        before = month_range(add_months(months[0], -UNDATED_WINDOW_MONTHS), add_months(months[0], -1))
        self._reported: dict[str, pl.DataFrame] = {}
        for month in months_stored(store, ["games"], before):
            stored = store.scan_parquet(table_key(["games"], month))
            if not self._dated_kept(month, months[0]):
                stored = stored.filter(pl.col("date").is_null())
            self._reported[month] = game_keys(stored)
        # The unregistered ids rated so far (every stored month's identity table before the run, then each month's):
        # such an id used for one registered player alone keeps its history (resolve_players).
        stored_identities = [
            store.scan_parquet(table_key(["identity"], month))
            for month in stored_table_months(store, ["identity"])
            if month < months[0]
        ]
        self._rated = _rated_ids(stored_identities)

    def registry_notes(self, month: str) -> list[str]:
        """What of the registry in force in `month` is not read, one line a problem, as the run's summary names it."""
        return problem_lines(self._registry_problems, [month])

    @staticmethod
    def _dated_kept(earlier: str, month: str) -> bool:
        """Whether `month` may receive again a dated game of the folder of `earlier`."""
        return last_list_reached_from(earlier) >= list_of_period(month)

    def __call__(self, month: str, raw: pl.DataFrame) -> MonthSplit:
        window_start = add_months(month, -UNDATED_WINDOW_MONTHS)
        for earlier, keys in list(self._reported.items()):
            if earlier < window_start:
                del self._reported[earlier]
            elif not self._dated_kept(earlier, month):
                self._reported[earlier] = keys.filter(pl.col("event_start").is_null())
        seen = pl.concat(self._reported.values()) if self._reported else None
        split = split_month(raw, self.registry(month), month, seen_keys=seen, rated=self._rated)
        self._reported[month] = game_keys(split.games)
        self._rated = pl.concat([self._rated, _rated_ids([split.identities])]).unique()
        return split


def _rated_ids(identities: Sequence[pl.DataFrame | pl.LazyFrame]) -> pl.Series:
    """The ids identity tables rated without a registry entry (`new`), each once."""
    new = [
        frame.lazy().filter(pl.col("status") == "new").select(pl.col("player_id").cast(pl.Int64))
        for frame in identities
    ]
    return pl.concat(new).unique().collect()["player_id"] if new else pl.Series("player_id", [], dtype=pl.Int64)
