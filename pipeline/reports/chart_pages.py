"""HTML pages around the PNG charts: what the chart covers (months, games) and its figures as a table under it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

import polars as pl

from pipeline.reports.page import frame_table_html, html_page, note_html

CHART_CSS = """
img.chart { display: block; max-width: 100%; height: auto; border: 1px solid #e0e0e0; margin: 8px 0 16px; }
ul.coverage li { margin: 2px 0; }
table td, table th { font-size: 12px; }
"""


def month_span(months: Sequence[str]) -> str:
    """'2015-01 to 2024-12 (120 months)', or the one month."""
    months = sorted(set(months))
    if not months:
        return "no month"
    if len(months) == 1:
        return f"{months[0]} (1 month)"
    return f"{months[0]} to {months[-1]} ({len(months)} months)"


def chart_image(png_href: str, alt: str) -> str:
    return f'<img class="chart" src="{escape(png_href, quote=True)}" alt="{escape(alt, quote=True)}">'


def render_score_curves_page(
    curves: pl.DataFrame,
    scenario: str,
    png_href: str,
    coverage: Mapping[str, str],
    back_href: str | None = None,
    note: str | None = None,
) -> str:
    """The score-curve chart of a scenario with, under it, one row per advantage bin and, per window,
    its games, actual and expected score (%). `coverage`: window label -> the months it covers; `note` above the
    chart when given (what the page lacks, and how to get it).
    """
    games = int(curves["games"].sum()) if curves.height else 0
    title = f"Favourite's score vs rating advantage · {scenario}"
    windows = curves["period"].unique(maintain_order=True).to_list()
    items = "".join(
        f"<li><b>{escape(w)}</b>: months {escape(coverage.get(w, '?'))} · "
        f"{int(curves.filter(pl.col('period') == w)['games'].sum()):,} games</li>"
        for w in windows
    )
    table = ""
    if curves.height:
        wide = (
            curves.select("bin_low", "bin").unique().sort("bin_low").select(pl.col("bin").alias("Advantage (points)"))
        )
        for window in windows:
            part = curves.filter(pl.col("period") == window).select(
                "bin",
                pl.col("games").alias(f"{window} games"),
                pl.col("score_pct").round(1).alias(f"{window} actual %"),
                pl.col("expected_pct").round(1).alias(f"{window} expected %"),
            )
            wide = wide.join(part, left_on="Advantage (points)", right_on="bin", how="left")
        table = frame_table_html(
            wide, "Games, actual and expected score of the favourite per bin and window", float_digits=1
        )
    body = (
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="meta">{games:,} games rated for both players, by window (the last reaches the latest year '
        "with data):</p>"
        f'<ul class="coverage">{items}</ul>\n' + note_html(note) + chart_image(png_href, title) + table
    )
    return html_page(title, body, CHART_CSS, back_href, games=games)


def render_band_trend_page(
    trend: pl.DataFrame,
    scenario: str,
    png_href: str,
    months: Sequence[str],
    back_href: str | None = None,
    note: str | None = None,
) -> str:
    """The band-vs-band chart with its per-year figures (games, actual, expected, difference) under it, and `note`
    above the chart when given.
    """
    games = int(trend["games"].sum()) if trend.height else 0
    title = f"Band vs band by year · {scenario}"
    table = ""
    if trend.height:
        shown = trend.sort("pair", "period").select(
            pl.col("pair").alias("Bands (row vs opponents)"),
            pl.col("period").alias("Year"),
            pl.col("games").alias("Games"),
            pl.col("score_pct").round(1).alias("Actual %"),
            pl.col("expected_pct").round(1).alias("Expected %"),
            pl.col("diff_pct").round(1).alias("Actual minus expected"),
        )
        table = frame_table_html(shown, "The row band's score against the opponent band, either colour", float_digits=1)
    body = (
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="meta">Months {escape(month_span(months))} · {games:,} games between the bands, rated for '
        "both players.</p>\n" + note_html(note) + chart_image(png_href, title) + table
    )
    return html_page(title, body, CHART_CSS, back_href, games=games)


def render_distribution_page(
    distributions: pl.DataFrame,
    scenario: str,
    title: str,
    png_href: str,
    lists: Mapping[str, str],
    back_href: str | None = None,
    note: str | None = None,
) -> str:
    """A rating-distribution chart (one panel per list) with each list's period and rated players under it, and
    `note` above the chart when given (what the page lacks, and how to get it).

    `lists`: panel label -> the rating period whose list it is (e.g. 'January 2016' -> '2015-12').
    """
    rows = []
    for label, period in lists.items():
        own = distributions.filter(pl.col("period") == label)
        rated = int(own["players"].sum()) if own.height else 0
        low, high = own["bin_low"].min(), own["bin_high"].max()  # numbers; None for an empty panel
        lowest = str(int(low)) if isinstance(low, (int, float)) else "—"
        highest = str(int(high)) if isinstance(high, (int, float)) else "—"
        rows.append(
            {
                "List": label,
                "Rating period": period,
                "Rated players": rated,
                "Lowest bin": lowest,
                "Highest bin": highest,
            }
        )
    table = frame_table_html(pl.DataFrame(rows), "One panel per list, all on the same axes") if rows else ""
    periods = sorted(set(lists.values()))
    full_title = f"{title} · {scenario}"
    body = (
        f"<h1>{escape(full_title)}</h1>\n"
        f'<p class="meta">{len(periods)} list{"s" if len(periods) != 1 else ""} (rating periods '
        f"{escape(', '.join(periods))}); rated players in 25-point bins.</p>\n"
        + note_html(note)
        + chart_image(png_href, full_title)
        + table
    )
    return html_page(full_title, body, CHART_CSS, back_href)
