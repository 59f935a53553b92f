"""Pandera models of every table: the single source of truth for column names and types."""

from schemas.crosstable import Crosstable
from schemas.games import Games
from schemas.players import Players
from schemas.quarantine import QUARANTINE_REASONS, Quarantine
from schemas.rated_games import RatedGames
from schemas.rating_list import RatingList
from schemas.raw_games import RawGames
from schemas.util import column_descriptions, empty_frame, polars_schema

__all__ = [
    "QUARANTINE_REASONS",
    "Crosstable",
    "Games",
    "Players",
    "Quarantine",
    "RatedGames",
    "RatingList",
    "RawGames",
    "column_descriptions",
    "empty_frame",
    "polars_schema",
]
