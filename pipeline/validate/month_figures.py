"""What the ingest and validate stages report of each month.

The records read, the games validated, the quarantine by reason and by file (with a warning when most of the month is
quarantined) and how players were identified.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from pipeline.formats import event_named_by_row
from pipeline.ingest.landing import MISPLACED, NOT_A_FILE
from pipeline.rules.calendar import reported_late
from pipeline.text import escape_text
from pipeline.validate.duplicates import CONFLICT_ADVICE, UNTOLD_COPY, UNTOLD_PGN_ADVICE

# Above this share of a month's records in quarantine, the month's report carries a warning.
QUARANTINE_WARNING_SHARE = 0.5
MAX_FILES_LISTED = 20  # files named in a month's by-file counts
WARNING_REASONS = 3  # reasons the warning names


def raw_figures(raw: pl.DataFrame) -> dict[str, int]:
    """A month's RawGames rows: records, unreadable records, federations (whose files were read as dumps) and files."""
    # The record of an entry not read (landing.refusal) names the folder it lay in, which is no federation's dumps.
    # Only the few records with a parse_error are searched, unless one is refused (~10 ms at 2 million records).
    errors, refusal = raw["parse_error"], f"^({MISPLACED}|{NOT_A_FILE}): "
    federation = raw["federation"]
    if errors.drop_nulls().str.contains(refusal).any():
        federation = federation.filter(~errors.str.contains(refusal).fill_null(False))
    return {
        "records": raw.height,
        "unreadable_records": raw.filter(pl.col("parse_error").is_not_null()).height,
        "federations": federation.n_unique(),
        "files": raw["source_file"].n_unique(),
    }


def _value_counts(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Rows per value of `column`, most first, ties by value."""
    return frame.group_by(column).len().sort("len", column, descending=[True, False])


class QuarantineFigures(NamedTuple):
    """A month's quarantine: records, their share of the raw records, counts by reason and by file, a warning."""

    quarantined: int
    share: float
    by_reason: dict[str, int]  # every reason present, most records first
    by_file: dict[str, int]  # the MAX_FILES_LISTED files with the most records
    warning: str  # empty unless more than QUARANTINE_WARNING_SHARE of the records are quarantined


def quarantine_figures(raw_records: int, quarantine: pl.DataFrame) -> QuarantineFigures:
    """The figures of a month's Quarantine rows out of `raw_records` raw records."""
    by_reason = dict(_value_counts(quarantine, "reason").iter_rows())
    share = quarantine.height / raw_records if raw_records else 0.0
    warning = (
        (
            f"{quarantine.height:,} of {raw_records:,} records ({share:.0%}) quarantined; most: "
            + ", ".join(f"{code} {n:,}" for code, n in list(by_reason.items())[:WARNING_REASONS])
        )
        if share > QUARANTINE_WARNING_SHARE
        else ""
    )
    by_file = dict(_value_counts(quarantine, "source_file").head(MAX_FILES_LISTED).iter_rows())
    return QuarantineFigures(quarantine.height, share, by_reason, by_file, warning)


def file_warnings(quarantine: pl.DataFrame) -> list[str]:
    """One warning per CSV, Parquet or PGN file, by name, whose identical records without a round (a PGN's: its
    games' tag sections) were taken for copies and quarantined as duplicates
    (pipeline.validate.duplicates.with_occurrences): adding a round or date column (a PGN's tag) fixes them all.
    Then one per file whose games another file of the month, or an earlier month's rated game, gives another result
    (conflicting_result): keeping one file of the tournament fixes them all.
    """
    if "detail" not in quarantine.columns:
        return []
    return _untold_copy_warnings(quarantine) + _conflict_warnings(quarantine)


def _conflict_warnings(quarantine: pl.DataFrame) -> list[str]:
    """file_warnings' warnings of conflicting_result records, by file: those another file of the month gives another
    result, then those an earlier month rated otherwise (their details end otherwise: its month folder is corrected).
    """
    conflicts = (
        quarantine.filter(pl.col("reason") == "conflicting_result")
        .group_by("source_file", pl.col("detail").str.ends_with(CONFLICT_ADVICE).alias("in_month"))
        .len()
        .sort("source_file", "in_month", descending=[False, True])
    )
    return [
        f"{file}: {rows:,} game(s) are given another result (or colours) by another file of the month and are "
        f"quarantined as conflicting_result, as are that file's: {CONFLICT_ADVICE}"
        if in_month
        else f"{file}: {rows:,} game(s) are given another result (or colours) than an earlier month rated them with "
        "and are quarantined as conflicting_result: a result is corrected by replacing the tournament's file in its "
        "own month folder, not by sending a second file"
        for file, in_month, rows in conflicts.iter_rows()
    ]


def _untold_copy_warnings(quarantine: pl.DataFrame) -> list[str]:
    """file_warnings' warnings of copies without a round."""
    copies = (
        quarantine.filter((pl.col("reason") == "duplicate") & pl.col("detail").str.contains(UNTOLD_COPY, literal=True))
        .group_by("source_file")
        .agg(
            pl.len().alias("rows"),
            pl.col("detail").str.contains("no round or date", literal=True).any(),
            pl.col("detail").str.ends_with(UNTOLD_PGN_ADVICE).any().alias("pgn"),
        )
        .sort("source_file")
    )
    return [
        f"{file}: {rows:,} game(s) repeat an earlier game's tags in the file and are quarantined as duplicate: "
        f"without a round{' or date' if undated else ''} a second game of the same players {UNTOLD_COPY}; add a "
        f"Round{' or Date' if undated else ''} tag to have them rated"
        if pgn
        else f"{file}: {rows:,} row(s) repeat an earlier row of the file and are quarantined as duplicate: without a "
        f"round{' or date' if undated else ''} a second game of the same players {UNTOLD_COPY}; add a round (or "
        f"game number){' or date' if undated else ''} column to have them rated"
        for file, rows, undated, pgn in copies.iter_rows()
    ]


def identity_statuses(identities: pl.DataFrame) -> dict[str, int]:
    """Identity rows (players) per status, by status name."""
    return dict(identities.group_by("status").agg(pl.len()).sort("status").iter_rows())


class Counts(NamedTuple):
    """Counts by value, for a two-column table in the UI: the value's heading, the count's heading, the counts."""

    key: str
    value: str
    counts: dict[str, int]


Figure = int | float | str | Counts


#: The games metadata key of the month's late reports (the run summary adds them up).
REPORTED_LATE = "reported_late"


def validation_figures(
    raw_records: int,
    games: pl.DataFrame,
    quarantine: pl.DataFrame,
    identities: pl.DataFrame,
    month: str | None = None,
    stated_ends: pl.DataFrame | None = None,
) -> dict[str, dict[str, Figure]]:
    """What the UI shows of a validated month, by table: the games, the quarantine (with its warning when most
    records are quarantined) and the identity report. One number per reason and per status as well, so the UI can
    plot each across months. With `month`, the games reported late (pipeline.rules.calendar.reported_late, a
    tournament ending no earlier than the end its dump states: `stated_ends`).
    """
    quarantined = quarantine_figures(raw_records, quarantine)
    warnings = file_warnings(quarantine)[:MAX_FILES_LISTED]
    statuses = identity_statuses(identities)
    return {
        # Late reports the calendar lets in (pipeline.rules.calendar): rated on this list, later than their first.
        "games": {
            "games": games.height,
            "raw_records": raw_records,
            **({REPORTED_LATE: _reported_late(games, month, stated_ends)} if month is not None else {}),
        },
        "quarantine": {
            "quarantined": quarantined.quarantined,
            "quarantined_share": round(quarantined.share, 4),
            **({"warning": quarantined.warning} if quarantined.warning else {}),
            "by_reason": Counts("reason", "records", quarantined.by_reason),
            "by_file": Counts("file", "records", quarantined.by_file),
            **({"file_warnings": "\n".join(map(escape_text, warnings))} if warnings else {}),
            **{f"reason/{code}": n for code, n in quarantined.by_reason.items()},
        },
        "identity": {"players": identities.height, **{f"status/{code}": n for code, n in statuses.items()}},
    }


def _reported_late(games: pl.DataFrame, month: str, stated_ends: pl.DataFrame | None) -> int:
    """pipeline.rules.calendar.reported_late, each game's event named or not by its file (event_named_by_row)."""
    return reported_late(games, month, pl.lit(event_named_by_row(games, pl.col("event_id"))), stated_ends)
