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

# Analytics tables (issue 5).
from schemas.accuracy import Accuracy  # noqa: E402
from schemas.accuracy_comparison import AccuracyComparison  # noqa: E402
from schemas.band_trend import BandTrend  # noqa: E402
from schemas.rating_distribution import RatingDistribution  # noqa: E402
from schemas.score_curve import ScoreCurve  # noqa: E402

__all__ += ["Accuracy", "AccuracyComparison", "BandTrend", "RatingDistribution", "ScoreCurve"]
