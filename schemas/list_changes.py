"""The changes file of a list rated again (lists/<scenario>/<YYYY-MM>.changes.csv; pipeline.scenarios.amendments)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

#: What happened to a player between the stored version of a list and the one that replaced it (`change`).
LIST_CHANGE_KINDS = ("created", "updated", "deleted")


class ListChanges(pa.DataFrameModel):
    """One row per player whose rating differs between the stored list and the list that replaced it, or who is on
    one of the two only; in player_id order. A contract: scripts outside the project read the CSV by these columns,
    in this order.
    """

    player_id: pl.Int64 = pa.Field(description="FIDE ID (or a local id)")
    name: pl.Utf8 = pa.Field(nullable=True, description="Name in the registry in force in the month; null: none")
    old_rating: pl.Int32 = pa.Field(nullable=True, description="Rating on the stored list; null: unrated or absent")
    new_rating: pl.Int32 = pa.Field(nullable=True, description="Rating on the new list; null: unrated or absent")
    old_games: pl.Int32 = pa.Field(nullable=True, description="Games of the period on the stored list")
    new_games: pl.Int32 = pa.Field(nullable=True, description="Games of the period on the new list")
    change: pl.Utf8 = pa.Field(
        isin=list(LIST_CHANGE_KINDS),
        description="created (on the new list only), deleted (on the stored list only) or updated (its rating)",
    )

    class Config:
        strict = True
