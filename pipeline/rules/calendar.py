"""FIDE's reporting calendar by era: on which lists a tournament may be rated, from its end date.

As data and Polars expressions.

The landing zone's month folder raw/<FED>/<YYYY-MM>/ is the rating period the dumps were reported for: period M's
list is FIDE's list of the 1st of M+1 (or, before July 2012, the next list FIDE published after M). A tournament
may be rated on the first list whose closing date it ended by, and reported late up to the third list after it
ended; a report for an earlier list than that, or a later one, is quarantined with the clause it breaks.
"""

from __future__ import annotations

from calendar import month_name
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache

import numpy as np
import polars as pl

from pipeline.months import (
    add_months,
    first_day,
    month_index,
    month_index_of_day,
    month_label,
    month_range,
    month_start,
)


@dataclass(frozen=True)
class ReportingEra:
    """The calendar of the lists dated from `start` on: the months FIDE published a list (None: every month), the
    closing date (a tournament ending less than `closing_days` before a list's date waits for the next list) and
    the last list a late report may reach (the `late_lists`-th list dated after the tournament's end).
    """

    start: date
    list_months: tuple[int, ...] | None
    closing_days: int
    late_lists: int
    closing_clause: str  # cited where a tournament ended after a list's closing date
    late_clause: str  # cited where a report came after the last list it could reach


REPORTING_ERAS: tuple[ReportingEra, ...] = (
    # Quarterly lists (1 January, April, July, October) until June 2009. The closing date and the late window of
    # that time were not found [U]: the 2009 text's seven days and the 2024 text's third list are kept.
    ReportingEra(date(1970, 1, 1), (1, 4, 7, 10), 7, 3, "closing date [U]", "late window [U]"),
    # FIDE news 4059 (13 July 2009): six lists a year (January, March, May, July, September, November), "closing
    # date 7 days before" (docs/regulations.md, the 2009-2012 row) [S]; the late window [U].
    ReportingEra(date(2009, 7, 1), (1, 3, 5, 7, 9, 11), 7, 3, "FIDE news 4059 (2009)", "late window [U]"),
    # Monthly lists from 1 July 2012. The text of July 2012 - June 2014 was not found: the 2014 text's closing date is
    # kept [U]. B.02 2014 (in force 1 July 2014 - 31 December 2021, with its 2017 revision): 3 days before the list
    # (§7.1x, kinabaluchess.com copy) [S]. B.02 2022 (1 January 2022 - 29 February 2024): 3 days [S]. The late window
    # as in 2024 [U].
    ReportingEra(date(2012, 7, 1), None, 3, 3, "the 2014 regulations' closing date [U]", "late window [U]"),
    ReportingEra(date(2014, 7, 1), None, 3, 3, "the 2014 regulations [S]", "late window [U]"),
    ReportingEra(date(2022, 1, 1), None, 3, 3, "B.02 2022 [S]", "late window [U]"),
    # B.02 2024 §7.1.3: "The closing date for tournaments for a list is 3 days before the date of the list"; §9.1:
    # the report is uploaded in time for the list the tournament is registered for or, "if there are five days or
    # less from the last day of the tournament to the end of the month, for the following list"; a report not in
    # time for the third list after the tournament ends: "the tournament will not be rated".
    ReportingEra(date(2024, 3, 1), None, 3, 3, "B.02 2024 §7.1.3", "B.02 2024 §9.1"),
)

#: The quarantine reasons of the calendar (reporting_problems), in the order they are tested.
REPORTING_REASONS = ("future", "after_closing_date", "too_late")

# Month indexes (month_index: year x 12 + month - 1) the lookup tables below cover; outside, the nearest end is used.
_FIRST, _LAST = month_index("1970-01"), month_index("2100-12")


def era_of_list(list_month: int) -> ReportingEra:
    """The era of a list dated the 1st of month index `list_month`."""
    year, month = divmod(list_month, 12)
    day = date(year, month + 1, 1)
    return next(era for era in reversed(REPORTING_ERAS) if day >= era.start)


def _is_list_month(list_month: int) -> bool:
    era = era_of_list(list_month)
    return era.list_months is None or list_month % 12 + 1 in era.list_months


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[str]]:
    """For every month index m of the span: the k-th list month after m (k = 1..3, lists dated the 1st of a month
    after m's), the closing days of the list month, and the late lists of the era of that list.
    """
    months = np.arange(_FIRST, _LAST + 1)
    listed = np.array([_is_list_month(int(m)) for m in months])
    list_indexes = months[listed]
    after = np.searchsorted(list_indexes, months, side="right")  # first list month > m
    width = max(era.late_lists for era in REPORTING_ERAS) + 1
    following = np.stack(
        [list_indexes[np.minimum(after + k, len(list_indexes) - 1)] for k in range(width)], axis=1
    ).astype(np.int32)
    closing = np.array([era_of_list(int(m)).closing_days for m in months], dtype=np.int32)
    late = np.array([era_of_list(int(m)).late_lists for m in months], dtype=np.int32)
    closing_clauses = [era_of_list(int(m)).closing_clause for m in months]
    late_clauses = [era_of_list(int(m)).late_clause for m in months]
    return following, closing, late, closing_clauses, late_clauses


_FOLLOWING, _CLOSING_DAYS, _LATE_LISTS, _CLOSING_CLAUSES, _LATE_CLAUSES = _tables()


def list_of_period(month: str) -> int:
    """The month index of the list period `month`'s games are rated on: the first list dated after the month."""
    return int(_FOLLOWING[_position(month_index(month)), 0])


def _position(index: int) -> int:
    return min(max(index, _FIRST), _LAST) - _FIRST


def _lookup(table: np.ndarray | list[str], index: pl.Expr, offset: int = _FIRST) -> pl.Expr:
    """table[index - offset] per row (a month index's entry of a table over the span, by default)."""
    return pl.lit(pl.Series(table)).gather(index - offset)


def reporting_windows(event_end: pl.Expr) -> dict[str, pl.Expr]:
    """For a tournament ending on `event_end` (a Date): the month indexes of the first list it may be rated on (the
    first list dated after it whose closing date it ended by: `first`), of the last it is reported in time for
    (`on_time`: the first, or the following one by §9.1's carry-over), of the last (the late_lists-th list dated
    after it: `last`), and the first list's closing date (`closing`), as expressions.
    """
    end_month = month_index_of_day(event_end)
    month = end_month.clip(_FIRST, _LAST)
    after, second = _lookup(_FOLLOWING[:, 0], month), _lookup(_FOLLOWING[:, 1], month)
    closing_days = _lookup(_CLOSING_DAYS, after)
    closing = month_start(after) - pl.duration(days=closing_days)
    first = pl.when(event_end <= closing).then(after).otherwise(second)
    on_time = pl.max_horizontal(first, pl.when(carried_over(event_end)).then(second))
    late = _lookup(_LATE_LISTS, after)
    following = _lookup(_FOLLOWING.ravel(), (month - _FIRST) * _FOLLOWING.shape[1] + late - 1, offset=0)
    # The earliest folder of the first list: the tournament's month, or the next when it ended after the closing.
    folder = end_month + (event_end > closing).cast(pl.Int32)
    return {
        "first": first,
        "on_time": on_time,
        "last": following,
        "closing": closing,
        "folder": folder,
        "closing_clause": _lookup(_CLOSING_CLAUSES, after),
    }


def last_listed_in(list_month: str, next_list: str) -> list[str]:
    """The months a tournament may end in for its last list (reporting_windows' `last`, the late window) to be
    `list_month` or another before `next_list`: its games missing the first are past their window at the second.
    """
    width = max(era.late_lists for era in REPORTING_ERAS) * 4  # lists a quarter apart at the widest
    months = month_range(add_months(list_month, -width), add_months(list_month, -1))
    ends = pl.DataFrame({"end": [first_day(month) for month in months]})
    last = ends.select(reporting_windows(pl.col("end"))["last"]).to_series().to_list()
    low, high = month_index(list_month), month_index(next_list)
    return [month for month, index in zip(months, last, strict=True) if low <= index < high]


# B.02 2024 §9.1: the report is uploaded in time for the list the tournament is registered for or, "if there are five
# days or less from the last day of the tournament to the end of the month, for the following list". Earlier texts
# [U]: applied in every era, as the late window is.
CARRY_OVER_DAYS = 5


def carried_over(event_end: pl.Expr) -> pl.Expr:
    """Whether a tournament ending on `event_end` may be reported in time for the list after its own (§9.1)."""
    return (event_end.dt.month_end() - event_end).dt.total_days() <= CARRY_OVER_DAYS


def reporting_problems(
    event_end: pl.Expr,
    game_day: pl.Expr,
    month: str,
    day_is: pl.Expr | None = None,
    latest_end: pl.Expr | None = None,
) -> tuple[pl.Expr, pl.Expr]:
    """(reason, detail) of a game of a tournament ending on `event_end`, dated `game_day`, in the folder of period
    `month`: `future` (dated after the month), `after_closing_date` (the tournament ended after the closing date of
    the month's list: a later month's), `too_late` (the month's list is later than the third list after the
    tournament ended), else nulls. Null dates pass. `day_is` names the day in the message ('game dated', the
    default; 'event starts' for an undated game). `latest_end`: the latest day the tournament can have ended where
    its games are dated in part (`event_end` and `game_day` are then the earliest): only it can prove a report too
    late, and the detail names it as a bound, not as the end.
    """
    listed = list_of_period(month)
    next_month_start = first_day(add_months(month, 1))
    windows = reporting_windows(event_end)
    last_end = event_end if latest_end is None else latest_end
    last_list = windows["last"] if latest_end is None else reporting_windows(latest_end)["last"]
    list_label = _list_label(pl.lit(listed))
    future = game_day.is_not_null() & (game_day >= pl.lit(next_month_start))
    early = event_end.is_not_null() & (pl.lit(listed) < windows["first"])
    late = last_end.is_not_null() & (pl.lit(listed) > last_list)
    ended = pl.format("ended {}", last_end)
    if latest_end is not None:
        bound = pl.format("ended {} at the latest (a date known in part)", last_end)
        ended = pl.when(last_end == event_end).then(ended).otherwise(bound)
    reason = (
        pl.when(future)
        .then(pl.lit("future"))
        .when(early)
        .then(pl.lit("after_closing_date"))
        .when(late)
        .then(pl.lit("too_late"))
    )
    detail = (
        pl.when(future)
        .then(
            pl.format(
                "{} {}, after {}: the month its dump was reported for",
                day_is if day_is is not None else pl.lit("game dated"),
                game_day,
                pl.lit(month),
            )
        )
        .when(early)
        .then(
            pl.format(
                "the tournament ends {}, after the closing date of the list of {} ({}; {}): it is rated on the "
                "list of {}, filed under {} or later",
                event_end,
                list_label,
                # The closing date of the folder's own list (a stated end may fall after the folder's month).
                pl.lit(date(listed // 12, listed % 12 + 1, 1) - timedelta(days=int(_CLOSING_DAYS[_position(listed)]))),
                pl.lit(_CLOSING_CLAUSES[_position(listed)]),
                _list_label(windows["first"]),
                month_label(windows["folder"]),
            )
        )
        .when(late)
        .then(
            pl.format(
                "the tournament {}: the list of {} is after the third list since (of {}; {}): not rated",
                ended,
                list_label,
                _list_label(last_list),
                # The rule in force for the list the report was sent for.
                pl.lit(_LATE_CLAUSES[_position(listed)]),
            )
        )
    )
    return reason, detail


def tournament_end(
    day: pl.Expr, event: Sequence[str | pl.Expr], named: pl.Expr | None, stated_end: pl.Expr | None = None
) -> pl.Expr:
    """The day a game's tournament ends, for the calendar: the last `day` of the games of its `event` (the columns
    that name one tournament: a file and its event id). A game whose event is not `named` (a row of a CSV or Parquet
    dump without an event id: pipeline.formats.event_named_by_row) is a tournament of its own, ending on its day:
    a list of games is no tournament, and one recent row must not carry older ones into its window (a reading, as
    the regulations know only tournaments; README, "A games CSV or Parquet file"). None: every event is named.
    `stated_end`: the end the dump states (a TRF's tag 052), when later than its last game's day.
    """
    last_day = (day.max() if stated_end is None else pl.max_horizontal(day.max(), stated_end.max())).over(*event)
    return last_day if named is None else pl.when(named.fill_null(True)).then(last_day).otherwise(day)


def reported_after_first_list(event_end: pl.Expr, month: str) -> pl.Expr:
    """Whether a tournament ending on `event_end`, reported in the folder of period `month`, was reported for a later
    list than the first it could be rated on (a late report, or one past its window: reporting_problems tells them
    apart); false where the end is unknown.
    """
    return event_end.is_not_null() & (pl.lit(list_of_period(month)) > reporting_windows(event_end)["first"])


@cache  # asked for each earlier month at every month a run validates: 0.7 ms a Polars evaluation
def last_list_reached_from(month: str) -> int:
    """The month index of the last list a tournament reported in the folder of period `month` can be reported for
    again: the late limit of one ending on the month's last day (a folder's games are dated by its month's end, or
    they are `future`), so no later list receives a game of this folder as on time.
    """
    last_day = first_day(add_months(month, 1)) - timedelta(days=1)
    return int(pl.select(reporting_windows(pl.lit(last_day))["last"]).item())


def reported_late(games: pl.DataFrame, month: str, named: pl.Expr, stated_ends: pl.DataFrame | None = None) -> int:
    """How many of period `month`'s validated games (Games rows) were reported for a later list than the last their
    tournament was in time for (late reports within the window): the first it could be rated on, or the following
    one when it ended in its month's last five days (§9.1's carry-over, in time: carried_over). A
    tournament's end is its last game's day in the month's games (its start where undated; tournament_end, with
    `named` whether a game's event names a tournament), or the end its dump states when later: `stated_ends`, one
    row per (source_file, event_id) with its `event_end` (stated_tournament_ends), as the validation filed it.
    """
    if games.is_empty():
        return 0
    # Per tournament (a game of no named one alone), then the calendar on a few thousand rows, not on every game.
    alone = pl.when(~named.fill_null(True)).then(pl.int_range(pl.len()))
    events = games.group_by("source_file", "event_id", alone.alias("_alone")).agg(
        end=pl.coalesce("date", "event_start").max(), games=pl.len()
    )
    if stated_ends is not None and not stated_ends.is_empty():
        events = events.join(stated_ends, on=["source_file", "event_id"], how="left").with_columns(
            end=pl.when(pl.col("_alone").is_null()).then(pl.max_horizontal("end", "event_end")).otherwise("end")
        )
    end = pl.col("end")
    late = end.is_not_null() & (pl.lit(list_of_period(month)) > reporting_windows(end)["on_time"])
    return int(events.select(pl.col("games").filter(late).sum()).item())


def stated_tournament_ends(raw: pl.DataFrame) -> pl.DataFrame:
    """The ends a month's dumps state (RawGames.event_end: a TRF's tag 052), one row per (source_file, event_id),
    the event id filled as the validation fills it, for reported_late.
    """
    return (
        raw.lazy()
        .filter(pl.col("event_end").is_not_null())
        .group_by("source_file", pl.col("event_id").fill_null(pl.col("source_file")))
        .agg(pl.col("event_end").max())
        .collect()
    )


def _list_label(index: pl.Expr) -> pl.Expr:
    """'1 February 2024' for a list dated the 1st of month index `index`."""
    return pl.format("1 {} {}", _lookup(list(month_name)[1:], index % 12, offset=0), index // 12)


def on_time_folder(event_end: date) -> str:
    """The month folder a tournament ending on `event_end` is reported in on time: its own month, or the next when
    it ended after the closing date of its month's list.
    """
    folder = pl.select(reporting_windows(pl.lit(event_end))["folder"]).item()
    return pl.select(month_label(pl.lit(folder))).item()


def describe_reporting_calendar() -> str:
    """A Markdown section for docs/rules.md: the calendar's eras, the quarantine reasons and the readings chosen."""
    lines = [
        "## The reporting calendar",
        "",
        "Generated from `pipeline/rules/calendar.py`. The landing zone's month folder M is the rating period the dumps",
        "were reported for: its list is the first list FIDE published after M (the 1st of M+1 since July 2012). A",
        "tournament is rated from the first list whose closing date it ended by to the late-report limit, the n-th",
        "list dated after its end. Its end is its last game's day in the folder's dumps (per file and event), of the",
        "games dated by the month's end, or the end a TRF states (tag 052) when later; a row of a CSV or Parquet file",
        "without `event_id` is a tournament of its own, ending on its day.",
        "",
        "| lists dated from | lists | closing date | late reports up to | sources |",
        "|---|---|---|---|---|",
    ]
    for era in REPORTING_ERAS:
        months = "monthly" if era.list_months is None else "months " + ", ".join(map(str, era.list_months))
        lines.append(
            f"| {era.start.isoformat()} | {months} | {era.closing_days} days before the list | the "
            f"{_ORDINALS[era.late_lists]} list after the end | {era.closing_clause}; {era.late_clause} |"
        )
    lines += [
        "",
        "Validation quarantines a game as `future` (dated after its folder's month), `after_closing_date` (its",
        "tournament ended after the closing date of the folder's list; the detail names the list it is rated on and",
        "the first folder for it) or `too_late` (the folder's list is after the last list a late report may reach).",
        "",
        "| question | reading chosen |",
        "|---|---|",
        '| "the third list after the tournament ends" (B.02 2024 §9.1) | the lists dated after its end day, the '
        "first of them counting even when the tournament ended after its closing date |",
        "| the five-day carry-over (§9.1) | inside both windows: a tournament ending in a month's last five days may "
        "be filed in its month (when it ended by the closing date) or the next; no folder is refused for it, and the "
        "next month's folder does not count it as reported late (the run summary) |",
        "| a tournament's end | its last game in the folder's month or before: a game dated after the month is "
        "`future` alone, so one wrong date does not move a whole tournament |",
        "| a game dated in part (PGN `2023.12.??`, `2023.??.??`) | played between the first and the last day of its "
        "month or year: the first alone proves it `future` or its tournament ended after the closing date, the last "
        "alone that the report is `too_late` (the detail names that day as the latest end, no end being reported) |",
        "| closing dates and late windows before 2024 | 7 days from July 2009 (FIDE news 4059 [S]), 3 days from July "
        "2012 (the text of 2012-2014 not found: the 2014 text's [U]), July 2014 (the 2014 text [S]) and January 2022 "
        "(B.02 2022 [S]); three lists and the five-day carry-over in every era [U]; quarterly lists: 7 days [U] |",
        "| the ratings of a tournament started before its period | the list in force at its start (the chain's "
        "list of the month before the start month; before the chain's start, its seed list): its rating and its K "
        "(the list's `k` column, the K it published for the period after it; issue 36 reads §9.1 so, and FIDE's "
        "calculations print K per tournament). A player that list gives no K, and a constant-K rule set, use the "
        "period's K; the K x n cap counts the period's games. `rated_games` shows each side's K (`white_k_used`, "
        "`black_k_used`); the list's `k_used` stays the period's |",
        "| a rating the dump states (TRF, PGN WhiteElo/BlackElo) | checked against the list in force at the "
        "tournament's start: the list's rating wins, a player it does not rate is unrated, every difference is "
        "listed (lists/<scenario>/<M>.stated-ratings.csv); a scenario may trust a source (`trust_stated_ratings`) |",
        "| a late or corrected report after the list it was filed for was stored | the scenario's `recalculation`: "
        "`full` re-rates from that month; `forward` (FIDE) rates added games on the next list not yet stored, "
        "within the window; a corrected game keeps the stored list and changes the next list not yet stored: its "
        "`correction` column adds, for each player, the corrected list's rating minus the stored one's (the list "
        "rated again in memory), recorded in `lists/<scenario>/<M>.corrections.csv` so that it is carried once; "
        "`window: N` re-rates the last N lists |",
        "",
    ]
    return "\n".join(lines)


_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}
