"""Compatibility home of the summary crosstable; the code lives in pipeline.analytics.crosstable."""

from pipeline.analytics.crosstable import (
    SUMMARY_BAND,
    band_label_expr,
    band_low_expr,
    combine_crosstables,
    format_difference,
    format_row_summary,
    summary_crosstable,
)

__all__ = [
    "SUMMARY_BAND",
    "band_label_expr",
    "band_low_expr",
    "combine_crosstables",
    "format_difference",
    "format_row_summary",
    "summary_crosstable",
]
