"""Analyses of rated games and rating lists (docs/analytics.md): pure functions on Polars frames, no Dagster."""

from pipeline.analytics.accuracy import (
    CommonSides,
    accuracy_on_common_sides,
    common_sides,
    compare_accuracy,
    predicted_sides,
    predictive_accuracy,
)
from pipeline.analytics.crosstable import combine_crosstables, format_row_summary, summary_crosstable
from pipeline.analytics.curves import (
    DEFAULT_BAND_PAIRS,
    BandPair,
    band_trend,
    combine_band_trends,
    combine_score_curves,
    score_curve,
)
from pipeline.analytics.distribution import (
    DISTRIBUTION_COLUMNS,
    january_lists,
    rating_distribution,
    rating_distributions,
)
from pipeline.analytics.performance import performance_ratings
from pipeline.analytics.windows import (
    SONAS_WINDOWS,
    PeriodWindow,
    covered_months,
    covering_windows,
    describe_coverage,
    frames_in_window,
    parse_window,
    year_window,
    years_of,
)

__all__ = [
    "DEFAULT_BAND_PAIRS",
    "DISTRIBUTION_COLUMNS",
    "SONAS_WINDOWS",
    "BandPair",
    "CommonSides",
    "PeriodWindow",
    "accuracy_on_common_sides",
    "band_trend",
    "combine_band_trends",
    "combine_crosstables",
    "combine_score_curves",
    "common_sides",
    "compare_accuracy",
    "covered_months",
    "covering_windows",
    "describe_coverage",
    "format_row_summary",
    "frames_in_window",
    "january_lists",
    "parse_window",
    "performance_ratings",
    "predicted_sides",
    "predictive_accuracy",
    "rating_distribution",
    "rating_distributions",
    "score_curve",
    "summary_crosstable",
    "year_window",
    "years_of",
]
