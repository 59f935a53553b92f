"""Self-contained HTML pages: one shell with inline CSS (no external assets) and a plain frame-as-table page."""

from __future__ import annotations

from html import escape

import polars as pl

from pipeline.text import printable_text

BASE_CSS = """
body { font: 14px/1.4 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; color: #222;
       margin: 24px; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
p.meta { color: #555; margin: 0 0 16px; }
a { color: #1f5fa8; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d0d0; padding: 4px 8px; }
thead th { background: #f2f2f2; font-weight: 600; }
caption { caption-side: top; text-align: left; padding: 0 0 8px; color: #333; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
nav { margin-bottom: 12px; }
@media print {
  nav { display: none; }
  body { margin: 0; font-size: 11px; }
  /* Browsers drop backgrounds in print unless told: the shading carries meaning. */
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  img { max-width: 100%; }
  table { page-break-inside: auto; }
  tr { page-break-inside: avoid; }
}
"""
GAMES_META = "report-games"


def html_text(text: str) -> str:
    """`text` as a page shows it: printable (pipeline.text: a bidi override in a name from a dump would reorder what
    the reader sees, escaped or not), then escaped for HTML.
    """
    return escape(printable_text(text))


def note_html(note: str | None) -> str:
    """What a page lacks, and how to get it, above what it shows (nothing without a note)."""
    return f'<p class="meta"><b>{html_text(note)}</b></p>\n' if note else ""


def html_page(
    title: str, body: str, extra_css: str = "", back_href: str | None = None, games: int | None = None
) -> str:
    """A complete UTF-8 HTML document; `body` is trusted HTML built by this package, `title` is text (html_text).

    `back_href` (relative) adds a link back to the report index, so pages work opened from disk.
    `games` (the games the page rests on) is stated in a `report-games` meta tag, which the index
    reads to leave out pages without a game.
    """
    nav = f'<nav><a href="{escape(back_href, quote=True)}">&larr; All reports</a></nav>\n' if back_href else ""
    games_meta = f'<meta name="{GAMES_META}" content="{int(games)}">\n' if games is not None else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"{games_meta}<title>{html_text(title)}</title>\n<style>{BASE_CSS}{extra_css}</style>\n</head>\n"
        f"<body>\n{nav}{body}\n</body>\n</html>\n"
    )


def _format_value(value: object, float_digits: int) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.{float_digits}f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def frame_table_html(frame: pl.DataFrame, caption: str = "", float_digits: int = 3) -> str:
    """A frame as an HTML <table> (numbers right-aligned, nulls as a dash); every value as text (html_text)."""
    numeric = {name for name, dtype in frame.schema.items() if dtype.is_numeric()}
    header = "".join(f'<th scope="col">{html_text(name)}</th>' for name in frame.columns)
    rows = []
    for row in frame.iter_rows():
        cells = "".join(
            f'<td class="num">{html_text(_format_value(value, float_digits))}</td>'
            if name in numeric
            else f"<td>{html_text(_format_value(value, float_digits))}</td>"
            for name, value in zip(frame.columns, row, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    caption_html = f"<caption>{html_text(caption)}</caption>" if caption else ""
    return f"<table>{caption_html}<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_table_page(
    frame: pl.DataFrame,
    title: str,
    caption: str = "",
    float_digits: int = 3,
    back_href: str | None = None,
) -> str:
    """A page showing one frame as a table, e.g. the accuracy comparison or a curve's data."""
    body = f"<h1>{html_text(title)}</h1>\n" + frame_table_html(frame, caption, float_digits)
    return html_page(title, body, back_href=back_href)
