"""The player registry: who may appear in games (README, Where the outputs land)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class Players(pa.DataFrameModel):
    """One row per registered player."""

    player_id: pl.Int64 = pa.Field(gt=0, unique=True, description="FIDE id")
    name: pl.Utf8 = pa.Field(description="Last name, first name")
    federation: pl.Utf8 = pa.Field(description="Three-letter federation code")
    sex: pl.Utf8 = pa.Field(nullable=True, isin=["M", "F"], description="M or F")
    birth_year: pl.Int32 = pa.Field(nullable=True, ge=1900, le=2100, description="Year of birth")
    title: pl.Utf8 = pa.Field(nullable=True, description="FIDE title code, if any")
    registered: pl.Utf8 = pa.Field(
        str_matches=r"^\d{4}-\d{2}$", description="Month of the registry file that introduced the player"
    )

    class Config:
        strict = True
