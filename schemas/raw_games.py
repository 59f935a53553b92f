"""Raw game records as read from the landing zone, before any validation."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class RawGames(pa.DataFrameModel):
    """Every record of the month's federation dumps, one row per record, before validation.

    Reads `raw/<federation>/<YYYY-MM>/` in the object store (TRF, PGN, CSV or Parquet, optionally
    .gz/.zst). A row is a candidate game, an unplayed pairing or an unreadable record, kept with
    `parse_error` set, so that raw_games rows = games rows + quarantine rows for every month (the
    reconciliation check). The landing zone itself is never modified.
    """

    record_id: pl.UInt64 = pa.Field(unique=True, description="Stable hash of source file and position in it")
    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Landing-zone month folder (YYYY-MM)")
    federation: pl.Utf8 = pa.Field(description="Landing-zone federation folder")
    source_file: pl.Utf8 = pa.Field(description="Path of the dump relative to the raw/ root")
    source_line: pl.Int64 = pa.Field(ge=1, description="1-based line of the record in the (decompressed) file")
    format: pl.Utf8 = pa.Field(
        isin=["trf", "pgn", "csv", "parquet", "unknown"],
        description="Detected file format (unknown: an extension the pipeline does not read)",
    )
    raw_text: pl.Utf8 = pa.Field(description="The record's raw text (for TRF: the line and the round cell)")
    parse_error: pl.Utf8 = pa.Field(nullable=True, description="Why the record could not be read; null when it was")
    event_id: pl.Utf8 = pa.Field(nullable=True, description="Event identifier in the source")
    event_start: pl.Date = pa.Field(nullable=True, description="First day of the event, when known")
    event_end: pl.Date = pa.Field(
        nullable=True, description="Last day of the event as the source states it (TRF tag 052), when it does"
    )
    date: pl.Date = pa.Field(nullable=True, description="Date the game was played, when known")
    date_from: pl.Date = pa.Field(
        nullable=True,
        description="First day of the period a partial date names, the day being unknown (PGN '2024.02.??': "
        "2024-02-01, '2025.??.??': 2025-01-01); null otherwise",
    )
    date_to: pl.Date = pa.Field(
        nullable=True,
        description="Last day of the period a partial date names, the day being unknown (PGN '2024.02.??': "
        "2024-02-29, '2025.??.??': 2025-12-31); null otherwise",
    )
    round: pl.Int32 = pa.Field(nullable=True, description="Round number within the event")
    white_id: pl.Int64 = pa.Field(nullable=True, description="White's FIDE id as given in the source")
    black_id: pl.Int64 = pa.Field(nullable=True, description="Black's FIDE id as given in the source")
    white_name: pl.Utf8 = pa.Field(nullable=True, description="White's name as given in the source")
    black_name: pl.Utf8 = pa.Field(nullable=True, description="Black's name as given in the source")
    result: pl.Utf8 = pa.Field(nullable=True, description="Result as read: 1-0, 0-1, 1/2-1/2, or the source's own code")
    unplayed: pl.Utf8 = pa.Field(nullable=True, description="forfeit / bye / under-one-move when the source says so")
    time_control: pl.Utf8 = pa.Field(nullable=True, description="classical / modern / rapid / blitz when known")
    tc_base_seconds: pl.Int32 = pa.Field(nullable=True, description="Base time per player in seconds")
    tc_increment_seconds: pl.Int32 = pa.Field(nullable=True, description="Increment per move in seconds")
    white_rating: pl.Int32 = pa.Field(nullable=True, description="White's rating stated in the source")
    black_rating: pl.Int32 = pa.Field(nullable=True, description="Black's rating stated in the source")
    colour_known: pl.Boolean = pa.Field(
        nullable=True,
        description="False when the source says White is not known to be the first player (null: known)",
    )
    white_title: pl.Utf8 = pa.Field(nullable=True, description="White's FIDE title stated in the source (GM, WIM, ...)")
    black_title: pl.Utf8 = pa.Field(nullable=True, description="Black's FIDE title stated in the source (GM, WIM, ...)")
    white_federation: pl.Utf8 = pa.Field(
        nullable=True, description="White's three-letter FIDE federation stated in the source"
    )
    black_federation: pl.Utf8 = pa.Field(
        nullable=True, description="Black's three-letter FIDE federation stated in the source"
    )

    class Config:
        strict = True
