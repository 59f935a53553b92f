"""Ratings a dump states that differ from the list in force (pipeline.scenarios.ratings_used): per side, and the CSV."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class StatedRatingDifference(pa.DataFrameModel):
    """One row per side of a game whose stated rating (TRF rating field, PGN WhiteElo/BlackElo) differs from the list
    in force at its event's start.
    """

    player_id: pl.Int64 = pa.Field(description="The side's player")
    source_file: pl.Utf8 = pa.Field(nullable=True, description="Dump that stated the rating, relative to raw/")
    event_id: pl.Utf8 = pa.Field(nullable=True, description="Event of the game")
    game_id: pl.UInt64 = pa.Field(description="The game")
    stated: pl.Int32 = pa.Field(description="Rating the dump states")
    listed: pl.Int32 = pa.Field(nullable=True, description="Rating on the list in force; null: the list rates none")
    used: pl.Int32 = pa.Field(nullable=True, description="Rating the game is rated with; null: none (unrated)")

    class Config:
        strict = True


class StatedRatings(pa.DataFrameModel):
    """lists/<scenario>/<YYYY-MM>.stated-ratings.csv: one row per player, file, event and statement. A contract:
    scripts read the CSV by these columns, in this order.
    """

    player_id: pl.Int64 = pa.Field(description="The player")
    source_file: pl.Utf8 = pa.Field(nullable=True, description="Dump that stated the rating, relative to raw/")
    event_id: pl.Utf8 = pa.Field(nullable=True, description="Event whose games stated it")
    stated: pl.Int32 = pa.Field(description="Rating the dump states")
    listed: pl.Int32 = pa.Field(nullable=True, description="Rating on the list in force; null: the list rates none")
    used: pl.Int32 = pa.Field(nullable=True, description="Rating the games are rated with; null: none (unrated)")
    games: pl.Int32 = pa.Field(ge=1, description="Games of the event the statement was made in")

    class Config:
        strict = True
