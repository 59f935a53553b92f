"""Report rendering (docs/analytics.md): HTML pages, PNG charts and the report index, as str/bytes."""

from pipeline.reports.charts import plot_accuracy, plot_band_trend, plot_rating_distribution, plot_score_curves
from pipeline.reports.crosstable_html import render_crosstable_html
from pipeline.reports.index import (
    CROSS_SCENARIO,
    INDEX_NAME,
    REPORTS_PREFIX,
    ReportEntry,
    index_href_from,
    render_index,
    report_entry,
    report_path,
)
from pipeline.reports.page import render_table_page

__all__ = [
    "CROSS_SCENARIO",
    "INDEX_NAME",
    "REPORTS_PREFIX",
    "ReportEntry",
    "index_href_from",
    "plot_accuracy",
    "plot_band_trend",
    "plot_rating_distribution",
    "plot_score_curves",
    "render_crosstable_html",
    "render_index",
    "render_table_page",
    "report_entry",
    "report_path",
]
