"""Raw records that are not rated games, each with a reason code (README, Where the outputs land)."""

from __future__ import annotations

import inspect

import pandera.polars as pa
import polars as pl

QUARANTINE_REASONS = {
    "misplaced": (
        "a file outside `raw/<FED>/<YYYY-MM>/` or in an oddly named folder: not read; the detail says where it belongs"
    ),
    "not_a_file": "a symbolic link or special file in the landing zone: never followed or read",
    "unparseable": "the record could not be read",
    "unplayed": "forfeit, bye or a game of less than one move (not rated)",
    "unknown_player": (
        "a player cannot be identified: neither id nor name, a name several players hold, or a mistyped id"
    ),
    "self_play": "white and black are the same player",
    "result_out_of_domain": "the result is not 1-0, 0-1 or 1/2-1/2",
    "time_control_not_ratable": (
        "the clock is too fast for FIDE rating in the game's era: blitz needs more than 3 minutes for 60 moves"
        " (at least 5 before July 2014)"
    ),
    "date_outside_month": "the game date is not in the dump's month (stores validated before the reporting calendar)",
    "future": "the game is dated after the month its dump was reported for",
    "after_closing_date": "the tournament ended after the closing date of the month's list: a later month's",
    "too_late": "reported after the third list since the tournament ended: not rated (FIDE B.02 §9.1)",
    "duplicate": "the same game was already reported",
    "conflicting_result": (
        "another file, or an earlier month's rated game, gives the same round of the same players another result (or"
        " colours): which one is right is unknown"
    ),
    "rating_implausible": "a stated rating is outside 1000-3000",
    "invalid_id": "a player id that cannot be a FIDE id: 0, negative, beyond FIDE's range or in the local-id range",
    "duplicate_player": "one FIDE id on two player lines of one tournament: the lines' games are not rated",
    "conflicting_tags": "a PGN game repeats a tag with different values: which one holds is unknown",
}


class Quarantine(pa.DataFrameModel):
    """Raw records of the month that did not become games, each with a reason code.

    Forfeits, byes, unknown players, duplicates, unreadable lines... with the raw text, source file and
    line so the federation can correct its dump. Nothing is dropped: raw_games = games + quarantine.
    Reason codes:
    """

    record_id: pl.UInt64 = pa.Field(unique=True, description="Stable hash of source file and position in it")
    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Landing-zone month folder")
    federation: pl.Utf8 = pa.Field(description="Landing-zone federation folder")
    source_file: pl.Utf8 = pa.Field(description="Dump the record came from, relative to raw/")
    source_line: pl.Int64 = pa.Field(ge=1, description="1-based line in that dump")
    reason: pl.Utf8 = pa.Field(isin=list(QUARANTINE_REASONS), description="Reason code")
    detail: pl.Utf8 = pa.Field(description="Human-readable explanation of the reason")
    raw_text: pl.Utf8 = pa.Field(description="The record's raw text, unchanged")

    class Config:
        strict = True


# The reason codes, from the one list the validation and this model's `reason` field use.
Quarantine.__doc__ = (
    inspect.cleandoc(Quarantine.__doc__ or "")
    + " "
    + ", ".join(f"`{code}` ({text})" for code, text in QUARANTINE_REASONS.items())
    + "."
)
