"""Validated, rated games: the canonical games table (README, Where the outputs land)."""

from __future__ import annotations

from typing import Annotated

import pandera.polars as pa
import polars as pl

#: The games' time-control classes (`time_control`); a games file given to `ratings rate-period` may name them.
TIME_CONTROLS = ["classical", "modern", "rapid", "blitz"]
#: The classes FIDE's standard list rates: a game of either is one of that list's games.
STANDARD_TIME_CONTROLS = ("classical", "modern")
#: The games' results as the dumps are read (raw_games' `result`) and White's score in each: the results validation
#: keeps.
RESULTS = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


class Games(pa.DataFrameModel):
    """Validated games of the month: the only input of the rating calculation.

    One row per game that passed every check (parsable, played, known players, result in domain, date in
    the month, not a duplicate, plausible stated ratings), a game a rating period may rate. Validated
    against this model on every run.
    """

    game_id: pl.UInt64 = pa.Field(unique=True, description="Stable hash of source file and position in it")
    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Rating period (YYYY-MM)")
    federation: pl.Utf8 = pa.Field(description="Federation whose dump's copy of the game is kept (the first by file)")
    also_reported_by: Annotated[pl.List, pl.Utf8] = pa.Field(
        nullable=True,
        description=(
            "Other federations whose dumps sent the game in its month, their copies quarantined as its duplicates "
            "(sorted; null: none). A scenario restricted to or trusting a federation's reports reads both columns"
        ),
    )
    event_id: pl.Utf8 = pa.Field(description="Event identifier")
    event_start: pl.Date = pa.Field(description="First day of the event: picks the list in force")
    date: pl.Date = pa.Field(nullable=True, description="Date the game was played, when known")
    round: pl.Int32 = pa.Field(nullable=True, description="Round number within the event")
    white_id: pl.Int64 = pa.Field(gt=0, description="White's FIDE id")
    black_id: pl.Int64 = pa.Field(gt=0, description="Black's FIDE id")
    white_score: pl.Float64 = pa.Field(isin=[0.0, 0.5, 1.0], description="White's score: 1, 0.5 or 0")
    time_control: pl.Utf8 = pa.Field(isin=TIME_CONTROLS, description="Time-control class")
    tc_base_seconds: pl.Int32 = pa.Field(nullable=True, description="Base time per player in seconds")
    tc_increment_seconds: pl.Int32 = pa.Field(nullable=True, description="Increment per move in seconds")
    white_rating_used: pl.Int32 = pa.Field(
        nullable=True, description="White's rating stated by the source (list in force at event start)"
    )
    black_rating_used: pl.Int32 = pa.Field(
        nullable=True, description="Black's rating stated by the source (list in force at event start)"
    )
    colour_known: pl.Boolean = pa.Field(
        nullable=True,
        description="False when White is not known to be the first player: no White advantage (null: known)",
    )
    source_file: pl.Utf8 = pa.Field(description="Dump the game came from, relative to raw/")
    source_line: pl.Int64 = pa.Field(ge=1, description="1-based line in that dump")

    class Config:
        strict = True

    @pa.dataframe_check
    @classmethod
    def no_self_play(cls, data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("white_id") != pl.col("black_id"))
