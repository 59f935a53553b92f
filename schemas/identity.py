"""The identity report of a month: how the players written in the dumps were identified (registry, names)."""

from __future__ import annotations

import inspect

import pandera.polars as pa
import polars as pl

IDENTITY_STATUSES = {
    "new": "the dump gives a FIDE id the registry does not hold (or there is no registry): rated under that id",
    "matched_by_name": "no id in the dump; the name matches exactly one player of the registry or of the month's dumps",
    "ambiguous": "no id in the dump; the name matches several players (quarantined as unknown_player)",
    "new_name": "no id in the dump, and a name no known player holds: rated under a local id made from the name",
    "unmatched": "neither an id nor a name in the dump (quarantined as unknown_player)",
    "id_mismatch": "the id is not registered but the name is registered under another id: a mistyped id (quarantined)",
}


class Identity(pa.DataFrameModel):
    """How the players written in the month's dumps were identified (the identity report).

    An id in a dump identifies its player, registered or not; the registry adds names. One row per
    (status, name as written, id as written, id used) of the month's records; players written as a
    registered id are not listed. Statuses:
    """

    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Landing-zone month folder")
    status: pl.Utf8 = pa.Field(isin=list(IDENTITY_STATUSES), description="How the player was identified")
    name: pl.Utf8 = pa.Field(nullable=True, description="Name as written in the dump")
    given_id: pl.Int64 = pa.Field(nullable=True, description="FIDE id as written in the dump (null: none)")
    player_id: pl.Int64 = pa.Field(nullable=True, description="Id the records were rated under (null: not identified)")
    candidates: pl.UInt32 = pa.Field(ge=0, description="Players the name matches (registry and the month's dumps)")
    records: pl.UInt32 = pa.Field(ge=1, description="Records of the month that name this player this way")
    first_seen: pl.Utf8 = pa.Field(description="First record: `<source file>:<line>`")
    federation: pl.Utf8 = pa.Field(
        nullable=True,
        description="Three-letter FIDE federation the dump states for this player (most records' value; null: none)",
    )
    title: pl.Utf8 = pa.Field(
        nullable=True, description="FIDE title the dump states for this player (most records' value; null: none)"
    )
    spellings: pl.UInt32 = pa.Field(
        ge=1,
        description=(
            "Spellings of this name, as written, the month's records use for this id; above 1, spellings that "
            "differ only in Unicode form (NFC/NFD), invisible characters or blanks were merged into one player "
            "(each spelling is a row, and may print alike)"
        ),
    )
    registered_as: pl.Int64 = pa.Field(
        nullable=True,
        description=(
            "For an id the registry does not hold written beside a name it holds under another id: that id "
            "(id_mismatch: quarantined as a mistyped id; new: rated under the written id, which earlier months rated)"
        ),
    )

    class Config:
        strict = True


# The statuses, from the one list the validation and this model's `status` field use.
Identity.__doc__ = (
    inspect.cleandoc(Identity.__doc__ or "")
    + " "
    + ", ".join(f"`{code}` ({text})" for code, text in IDENTITY_STATUSES.items())
    + "."
)
