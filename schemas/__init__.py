"""Pandera models of every table: the single source of truth for column names and types."""

from schemas.accuracy import Accuracy
from schemas.accuracy_comparison import AccuracyComparison
from schemas.band_trend import BandTrend
from schemas.cohort_drift import CohortDrift
from schemas.crosstable import Crosstable
from schemas.deflation_index import DeflationIndex
from schemas.federation_residuals import FederationResiduals
from schemas.fide_list import FideList
from schemas.games import Games
from schemas.group_truth import GroupTruth
from schemas.identity import IDENTITY_STATUSES, Identity
from schemas.leaderboard import Leaderboard
from schemas.list_changes import LIST_CHANGE_KINDS, ListChanges
from schemas.performance import Performance
from schemas.players import Players
from schemas.points_ledger import PointsFlow, PointsLedger
from schemas.pool_transitions import POOL_DIMENSIONS, PoolTransitions
from schemas.published_list import PublishedList
from schemas.quarantine import QUARANTINE_REASONS, Quarantine
from schemas.rated_games import RatedGames
from schemas.rating_distribution import RatingDistribution
from schemas.rating_list import RatingList, SystemRatingList
from schemas.raw_games import RawGames
from schemas.score_curve import ScoreCurve
from schemas.stated_ratings import StatedRatingDifference, StatedRatings
from schemas.system_state import SystemState, UscfState
from schemas.truth_error import TruthError
from schemas.util import column_descriptions, empty_frame, polars_schema
from schemas.whole_history import WhrHistory, WhrState
from schemas.yearly_drift import YearlyDrift

__all__ = [
    "IDENTITY_STATUSES",
    "LIST_CHANGE_KINDS",
    "POOL_DIMENSIONS",
    "QUARANTINE_REASONS",
    "Accuracy",
    "AccuracyComparison",
    "BandTrend",
    "CohortDrift",
    "Crosstable",
    "DeflationIndex",
    "FederationResiduals",
    "FideList",
    "Games",
    "GroupTruth",
    "Identity",
    "Leaderboard",
    "ListChanges",
    "Performance",
    "Players",
    "PointsFlow",
    "PointsLedger",
    "PoolTransitions",
    "PublishedList",
    "Quarantine",
    "RatedGames",
    "RatingDistribution",
    "RatingList",
    "RawGames",
    "ScoreCurve",
    "StatedRatingDifference",
    "StatedRatings",
    "SystemRatingList",
    "SystemState",
    "UscfState",
    "WhrHistory",
    "WhrState",
    "YearlyDrift",
    "TruthError",
    "column_descriptions",
    "empty_frame",
    "polars_schema",
]
