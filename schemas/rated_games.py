"""Per-game rating calculation of one period: what each side's change rests on."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class RatedGames(pa.DataFrameModel):
    """Per-game calculation behind a scenario's lists: one row per game of the period, with the ratings
    used, each side's expected score and the time-control weight.

    A side's expected score is null when the game does not count for that side (for example a rated
    player against an unrated opponent, or a game whose time control the rule set ignores). Feeds the
    crosstables and the accuracy reports.
    """

    game_id: pl.UInt64 = pa.Field(unique=True, description="Game id (see games)")
    month: pl.Utf8 = pa.Field(description="Rating period (YYYY-MM)")
    event_id: pl.Utf8 = pa.Field(description="Event identifier")
    white_id: pl.Int64 = pa.Field(description="White's FIDE id")
    black_id: pl.Int64 = pa.Field(description="Black's FIDE id")
    white_score: pl.Float64 = pa.Field(isin=[0.0, 0.5, 1.0], description="White's score")
    time_control: pl.Utf8 = pa.Field(description="Time-control class")
    white_rating_used: pl.Int32 = pa.Field(
        nullable=True, description="White's rating for this game (source, else list in force)"
    )
    black_rating_used: pl.Int32 = pa.Field(
        nullable=True, description="Black's rating for this game (source, else list in force)"
    )
    white_expected: pl.Float64 = pa.Field(nullable=True, description="White's expected score after the 400-point rule")
    black_expected: pl.Float64 = pa.Field(nullable=True, description="Black's expected score after the 400-point rule")
    white_k_used: pl.Int16 = pa.Field(
        nullable=True,
        description="K White's side is rated with: the player's K of the period, or of the list in force at the "
        "start of an event started before it (null where the side does not count)",
    )
    black_k_used: pl.Int16 = pa.Field(nullable=True, description="K Black's side is rated with (as white_k_used)")
    weight: pl.Float64 = pa.Field(ge=0, description="Time-control weight of the game in the rule set")

    class Config:
        strict = True
