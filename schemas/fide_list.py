"""A parsed FIDE rating-list file (any of the layouts A-F of the reference, section 3.2), one row per player."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

#: The FIDE lists a rule set can rate: the standard list, and the rapid and blitz lists (monthly since July 2012); a
#: combined list's columns, one group each. Here, not in pipeline.rules.model, so that the readers of the lists (whose
#: code versions do not hash the rule sets) name them too.
LIST_TYPES = ("standard", "rapid", "blitz")


#: A federation code: three capital letters (GER), as FIDE's lists, the scenarios and raw/<FED>/ folders write it.
FEDERATION_PATTERN = r"^[A-Z]{3}$"


class FideList(pa.DataFrameModel):
    """One row per player line that parsed; rejected lines are reported beside it, never dropped.

    A per-type list (B, D, E, F) fills the columns of its own rating type only (from the file name:
    'rapid_...', 'blitz_...', else standard); the combined lists (A, C) fill all three.
    """

    player_id: pl.Int64 = pa.Field(gt=0, unique=True, description="FIDE id")
    name: pl.Utf8 = pa.Field(description="'Lastname, Firstname' as listed")
    federation: pl.Utf8 = pa.Field(
        nullable=True, str_matches=FEDERATION_PATTERN, description="Three-letter federation code"
    )
    sex: pl.Utf8 = pa.Field(
        nullable=True,
        isin=["M", "F"],
        description="M or F; layouts E and F have no sex column (women carry the 'w' flag)",
    )
    title: pl.Utf8 = pa.Field(
        nullable=True,
        description="Title as listed: GM, IM, FM, CM, WGM... (old lists: g, m, f, c, wg, wm, wf, wc, h, wh)",
    )
    women_title: pl.Utf8 = pa.Field(nullable=True, description="Women's title (WTit column of layouts A-D)")
    other_titles: pl.Utf8 = pa.Field(
        nullable=True, description="Comma-separated other titles: IA, FA, IO, FT... (OTit)"
    )
    foa_title: pl.Utf8 = pa.Field(nullable=True, description="FIDE Online Arena title (layouts A, B)")
    standard_rating: pl.Int32 = pa.Field(nullable=True, ge=0, le=4000, description="Standard rating; null = not rated")
    standard_games: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Rated standard games in the period that ended at this list"
    )
    standard_k: pl.Int16 = pa.Field(
        nullable=True, ge=0, description="Standard K for the next period, before the K x n cap"
    )
    rapid_rating: pl.Int32 = pa.Field(nullable=True, ge=0, le=4000, description="Rapid rating; null = not rated")
    rapid_games: pl.Int32 = pa.Field(nullable=True, ge=0, description="Rated rapid games in the period")
    rapid_k: pl.Int16 = pa.Field(nullable=True, ge=0, description="Rapid K for the next period")
    blitz_rating: pl.Int32 = pa.Field(nullable=True, ge=0, le=4000, description="Blitz rating; null = not rated")
    blitz_games: pl.Int32 = pa.Field(nullable=True, ge=0, description="Rated blitz games in the period")
    blitz_k: pl.Int16 = pa.Field(nullable=True, ge=0, description="Blitz K for the next period")
    birth_year: pl.Int32 = pa.Field(
        nullable=True, ge=1850, le=2100, description="Year of birth; null when the list gives 0/0000 or nothing"
    )
    birth_date: pl.Date = pa.Field(nullable=True, description="Full birth date (layout F's dd.mm.yy only)")
    flag: pl.Utf8 = pa.Field(nullable=True, description="Flag as listed: i (inactive), w (woman), wi")
    inactive: pl.Boolean = pa.Field(description="The flag holds 'i': no rated game in the last 12 months")
    source_line: pl.Int64 = pa.Field(ge=1, description="1-based line of the player in the file")

    class Config:
        strict = True
