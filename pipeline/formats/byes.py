"""Byes written as an opponent: the spellings pairing programs and exports use, found in names."""

from __future__ import annotations

import numpy as np
import polars as pl

# What pairing programs and the sites that publish their pairings write as the opponent of a player
# who had no game that round. A record naming one of these where a player should be, without an id,
# is an unplayed round (a bye), never a game against an invented player of that name. A whole name
# matches, ignoring case and how blanks and dots are spaced, so 'Byers, Tom' or 'Nn, Anh' never does.
# Sources: lichess broadcasts of Swiss-Manager pairings show byes as the player 'BYE'
# (lichess-org/lila#16714, which also finds FIDE ids registered as 'Bye' and 'No player' by mistake:
# hence only without an id), and lichess' relay tools drop games with [White "bye"] / [Black "bye"];
# chess-results' pairing pages write 'bye', 'not paired', and in German 'spielfrei' (also 'Freilos'
# in German club software) and in Portuguese 'não emparceirado', and 'Brett nicht besetzt' for an
# empty board in team events; FIDE C.04.1.c names the odd player's bye the pairing-allocated bye
# (SwissSys: 'PAB', program-allocated bye); FIDE TRF16 codes the half-, full- and zero-point byes
# (H, F, Z), which exports spell out ('Half-point bye', 'BYE (1 point)'); pairing and bracket tools
# print '(bye)' or '-bye-'; 'N.N.' / 'NN' (nomen nescio) is PGN's way of writing nobody. 'No opponent',
# 'Forfeit', 'unpaired' and '--' for an unpaired board come from issue 32's list, not from an export seen.
# '?' is PGN's unknown value, not a bye: such a record stays an unknown player. TRF writes its byes as
# codes in the round cells (trf._bye_records); a 001 line with a bye's name and no id (a dummy player)
# is one too.
BYE_NAME_PATTERNS = (
    r"bye",
    r"\(\s*bye\s*\)",
    r"-+\s*bye\s*-+",
    r"bye\s*\(\s*(?:1|0|½|1/2|0?\.5)\s*(?:points?|pts?\.?)?\s*\)",
    r"(?:full|half|zero|1|0|½|1/2)[\s-]*points?[\s-]*bye",
    r"pab",
    r"(?:pairing|program)[\s-]*allocated[\s-]*bye",
    r"n\.?\s*n\.?",
    r"not\s+paired",
    r"unpaired",
    r"no\s+(?:opponent|player)",
    r"forfeit",
    r"-{2,}",
    r"spielfrei",
    r"freilos",
    r"não\s+emparceirado",
    r"brett\s+nicht\s+besetzt",
)
_BYE_NAME = "(?i)^(?:" + "|".join(BYE_NAME_PATTERNS) + ")$"
# The characters a bye spelling starts and ends with, in either case; no spelling holds a comma
# (tests/test_pairing_exports.py checks both against the spellings). A reader that has a name's bytes at
# hand settles almost every name with them, and runs the pattern on the others only (pgn._names).
BYE_FIRST_CHARACTERS = "b(-10½fhzpnus"
BYE_LAST_CHARACTERS = "e)-b.ndtriso"
BYE_NAME_MAX_BYTES = 32  # the longest a spelling is in UTF-8, with room for blanks


def _edge_bytes(characters: str) -> np.ndarray:
    """A table of the 256 byte values: True for the first UTF-8 byte of the characters, in lower and upper case."""
    table = np.zeros(256, dtype=bool)
    table[[(variant.encode()[0]) for c in characters for variant in (c.lower(), c.upper())]] = True
    return table


BYE_FIRST_BYTES, BYE_LAST_BYTES = _edge_bytes(BYE_FIRST_CHARACTERS), _edge_bytes(BYE_LAST_CHARACTERS)
# A name's last byte is a whole character only for one-byte characters: the last ones must be such.
assert all(len(c.encode()) == 1 for c in BYE_LAST_CHARACTERS)


def bye_names(names: pl.Series) -> np.ndarray:
    """Whether each name is a bye spelling (BYE_NAME_PATTERNS; the readers trim names); False for null."""
    return names.str.contains(_BYE_NAME).fill_null(False).to_numpy()


def with_byes(records: pl.DataFrame) -> pl.DataFrame:
    """`records` (with the RECORD_COLUMNS) with unplayed 'bye' where a side without an id is named as a bye
    (BYE_NAME_PATTERNS), whatever else the reader made of the record (a result without moves reads as a
    forfeit, but there was no opponent to forfeit).
    """
    bye = np.zeros(records.height, dtype=bool)
    for side in ("white", "black"):
        named = bye_names(records[f"{side}_name"])
        if named.any():
            bye |= named & records[f"{side}_id"].is_null().to_numpy()
    if not bye.any():
        return records
    return records.with_columns(
        pl.when(pl.lit(pl.Series(bye))).then(pl.lit("bye")).otherwise(pl.col("unplayed")).alias("unplayed")
    )
