"""The summary crosstable as a self-contained HTML page laid out like Sonas's 2023 tables."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import polars as pl

from pipeline.analytics.crosstable import format_difference, format_row_summary
from pipeline.analytics.grid import DEFAULT_MIN_GAMES, Cell, crosstable_grid
from pipeline.analytics.windows import PeriodWindow, describe_coverage
from pipeline.reports.page import html_page, note_html

# Over-performance blue, under-performance red (Sonas's colours); mixed with white by the size of
# the difference so that small, noisy differences stay pale.
BLUE = (33, 102, 172)
RED = (178, 24, 43)
DEFAULT_SATURATION_PCT = 10.0

CROSSTABLE_CSS = """
table.crosstable { font-size: 13px; }
table.crosstable td, table.crosstable th { text-align: center; min-width: 52px; padding: 3px 4px; }
table.crosstable thead th { font-size: 12px; }
table.crosstable th[scope=row] { text-align: left; white-space: nowrap; }
table.crosstable td.summary { text-align: left; white-space: nowrap; font-weight: 600; }
table.crosstable td.diag { background: #e6e6e6; color: #888; }
table.crosstable td.thin { background: #f4f4f4; color: #999; }
table.crosstable small { display: block; font-size: 10px; opacity: 0.85; }
table.crosstable small.ae { white-space: nowrap; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 2px; font-size: 12px; }
p.coverage { font-weight: 600; }
p.coverage.partial { color: #8a4b00; }
@media print {
  @page { size: A4 landscape; margin: 8mm; }
  table.crosstable { font-size: 8px; }
  table.crosstable td, table.crosstable th { min-width: 0; padding: 1px 2px; }
  table.crosstable thead th { font-size: 8px; }
  table.crosstable small { font-size: 7px; opacity: 1; }
}
"""


def shade(diff_pct: float, saturation_pct: float = DEFAULT_SATURATION_PCT) -> tuple[str, str]:
    """(background, text colour) for a difference: blue above 0, red below, full colour at saturation_pct."""
    strength = min(abs(diff_pct) / saturation_pct, 1.0) if saturation_pct > 0 else 1.0
    base = BLUE if diff_pct > 0 else RED
    mixed = tuple(round(255 + (channel - 255) * strength) for channel in base)
    text = "#fff" if strength > 0.6 else "#222"
    return "#{:02x}{:02x}{:02x}".format(*mixed), text


def _cell_html(
    cell: Cell | None,
    hover: str,
    min_games: int,
    saturation_pct: float,
    as_summary: bool = False,
) -> str:
    """A shaded difference cell, or a grey insufficient one; a summary cell reads like Sonas's row label."""
    css = "summary " if as_summary else ""
    if cell is None:
        return f'<td class="{css}thin" title="{escape(hover, quote=True)}: no games">·</td>'
    if cell.games < min_games:
        hint = f"{hover}: {cell.games:,} games, fewer than {min_games}"
        content = escape(format_row_summary(cell.diff_pct, cell.games)) if as_summary else "·"
        return f'<td class="{css}thin" title="{escape(hint, quote=True)}">{content}</td>'
    background, colour = shade(cell.diff_pct, saturation_pct)
    # Actual and expected are printed, not only in title=: hover text never reaches paper.
    actual_expected = f'<small class="ae">{cell.score_pct:.1f} / {cell.expected_pct:.1f}</small>'
    content = (
        escape(format_row_summary(cell.diff_pct, cell.games)) + actual_expected
        if as_summary
        else f"{format_difference(cell.diff_pct)}{actual_expected}<small>{cell.games:,}</small>"
    )
    details = (
        f"{hover}: {cell.score_pct:.1f}% actual, {cell.expected_pct:.1f}% expected, "
        f"{format_row_summary(cell.diff_pct, cell.games)}"
    )
    class_attr = ' class="summary"' if as_summary else ""
    return (
        f'<td{class_attr} style="background:{background};color:{colour}" '
        f'title="{escape(details, quote=True)}">{content}</td>'
    )


def _legend(saturation_pct: float) -> str:
    steps = [-saturation_pct, -saturation_pct / 2, 0.0, saturation_pct / 2, saturation_pct]
    swatches = []
    for step in steps:
        background, colour = shade(step, saturation_pct) if step else ("#ffffff", "#222")
        swatches.append(f'<span style="background:{background};color:{colour}">{step:+.0f}%</span>')
    return (
        '<p class="legend">Actual minus expected score: '
        + "".join(swatches)
        + ' &nbsp;<span class="thin" style="background:#f4f4f4;color:#999">·</span> too few games<br>'
        "Each cell: actual minus expected score of the row band; below it the row band's actual / "
        "expected score (%), then the number of games.</p>"
    )


def render_crosstable_html(
    crosstable: pl.DataFrame,
    scenario: str,
    rule_set: str,
    min_games: int = DEFAULT_MIN_GAMES,
    saturation_pct: float = DEFAULT_SATURATION_PCT,
    period: str | None = None,
    back_href: str | None = None,
    window: PeriodWindow | None = None,
    months: Sequence[str] | None = None,
    note: str | None = None,
) -> str:
    """One period's Crosstable frame as a complete HTML page (inline CSS, readable offline, printable).

    One row per band: the band, its summary ('+4.5% in 6,865 games'), then one cell per opponent
    band ('vs. 1200-99' ... 'vs. 2500+') with the difference, the actual / expected score and the
    games as text, the diagonal 'X'. Cells with fewer than `min_games` games show a grey '·'.
    `period` overrides the label taken from the frame (needed for an empty frame). `months` (those
    with data in the table) are stated on the page, against `window` when given, so a window the
    data covers only in part says which months it really covers. `note` (what the page lacks, and how to get it)
    under the coverage when given.
    """
    grid = crosstable_grid(crosstable)
    period_label = period or (window.label if window else None) or grid.period or "?"
    coverage, partial = _coverage(window, months)
    title = (
        f"Summary crosstable {period_label}" + (f" (data {_span(months)} only)" if partial else "") + f" · {scenario}"
    )
    header = '<th scope="col">Band</th><th scope="col">Overall</th>' + "".join(
        f'<th scope="col">vs. {escape(band)}</th>' for band in grid.bands
    )
    rows = []
    for band in grid.bands:
        summary_html = _cell_html(
            grid.summaries.get(band), f"{band} vs. all other bands", min_games, saturation_pct, as_summary=True
        )
        cells = [
            '<td class="diag" title="same band: not counted">X</td>'
            if opponent == band
            else _cell_html(grid.cells.get((band, opponent)), f"{band} vs. {opponent}", min_games, saturation_pct)
            for opponent in grid.bands
        ]
        rows.append(f'<tr><th scope="row">{escape(band)}</th>{summary_html}{"".join(cells)}</tr>')
    caption = (
        f"Period <b>{escape(period_label)}</b>"
        + (f" · months {escape(coverage)}" if coverage else "")
        + f" · scenario <b>{escape(scenario)}</b> · rule set "
        f"<b>{escape(rule_set)}</b> · {grid.games_counted:,} games between different bands, "
        f"{len(grid.bands)} bands · row band's actual minus expected score; "
        f"cells with fewer than {min_games} games shown as ·"
    )
    empty_note = "" if grid.bands else "<p>No game was rated for both players in this period.</p>"
    coverage_html = (
        f'<p class="coverage{" partial" if partial else ""}">Months covered: {escape(coverage)} · '
        f"{grid.games_counted:,} games between different bands</p>\n"
        if coverage
        else ""
    )
    body = (
        f"<h1>{escape(title)}</h1>\n{coverage_html}{note_html(note)}"
        '<p class="meta">Players grouped by the rating used for the game; same-band games excluded; '
        "only games rated for both players count.</p>\n"
        f"{_legend(saturation_pct)}\n{empty_note}"
        f'<table class="crosstable"><caption>{caption}</caption>'
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return html_page(title, body, CROSSTABLE_CSS, back_href, games=grid.games_counted)


def _span(months: Sequence[str] | None) -> str:
    months = sorted(months or [])
    if not months:
        return "none"
    return months[0] if len(months) == 1 else f"{months[0]} to {months[-1]}"


def _coverage(window: PeriodWindow | None, months: Sequence[str] | None) -> tuple[str, bool]:
    """(the months the page covers in words, whether they fall short of the window's label)."""
    if months is None:
        return "", False
    if window is None:
        return f"{_span(months)} ({len(months)} months)", False
    return describe_coverage(window, months), len(set(months)) < len(window.months())
