"""The published rating list: the month's list with the registry's names, in reading order.

Stored as lists/<scenario>/<YYYY-MM>.csv.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class PublishedList(pa.DataFrameModel):
    """The month's rating list as a rating officer reads it, under `lists/<scenario>/`.

    `<YYYY-MM>.csv`: every player on the list with name, federation, title and sex from the player
    registry (empty when the registry does not know the player), birth year, rating, change, games, K,
    the flags, rank and the rating on the previous list, sorted by rating (unrated last), then name, then
    id: one row of this model per player.
    `<YYYY-MM>.txt`: the rated players in FIDE's current per-type layout (standard_rating_list.txt; flags
    i, w, wi; players without a FIDE id are left out). `<YYYY-MM>.html`: one self-contained page, sortable by
    any column, searchable by name or id, filtered by federation, sex, age and activity, each player linked to
    their card (`players/<id>.html`, written by `ratings player ID --html`), fast at 500,000 players. Month M's
    list is FIDE's list of the 1st of M+1.
    """

    id: pl.Int64 = pa.Field(gt=0, unique=True, description="FIDE id")
    name: pl.Utf8 = pa.Field(
        nullable=True,
        description="'Lastname, Firstname' from the player registry; empty when the registry does not know the player",
    )
    federation: pl.Utf8 = pa.Field(nullable=True, description="Three-letter federation code (registry)")
    title: pl.Utf8 = pa.Field(nullable=True, description="FIDE title code, e.g. GM, WIM (registry)")
    sex: pl.Utf8 = pa.Field(nullable=True, isin=["M", "F"], description="M or F (registry)")
    birth_year: pl.Int32 = pa.Field(nullable=True, description="Year of birth: the registry's, else the rating list's")
    rating: pl.Int32 = pa.Field(nullable=True, ge=0, le=4000, description="Published rating; empty = unrated")
    change: pl.Int32 = pa.Field(
        nullable=True,
        description=(
            "Rating change this period, with the points the list adds for corrections of an earlier list's games "
            "(the rating list's change + correction); empty when unrated on the list before (a first rating, a "
            "rapid or blitz player seeded from the standard list) or after (a delisted player)"
        ),
    )
    games: pl.Int32 = pa.Field(ge=0, description="Rated games this period")
    k: pl.Int16 = pa.Field(
        nullable=True, ge=0, description="K factor for the next period, before the K x n cap (the list's k)"
    )
    inactive: pl.Boolean = pa.Field(description="FIDE flag i: no rated game for the configured number of months")
    delisted: pl.Boolean = pa.Field(description="Fell below the floor this period and became unrated")
    newly_rated: pl.Boolean = pa.Field(description="Received a first rating this period")
    rank: pl.Int32 = pa.Field(
        nullable=True,
        ge=1,
        description=(
            "Place by rating among the list's rated players without the inactive flag (equal ratings share the "
            "higher place: 1, 2, 2, 4); empty for unrated and inactive players"
        ),
    )
    previous_rating: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        le=4000,
        description=(
            "Rating on the previous list (rating - change; a delisted player's from the list before: the stored "
            "list of the month before, in the chain's first month the seed list); empty when unrated there"
        ),
    )

    class Config:
        strict = True
