"""The report index (reports/index.html): every page and chart by scenario and period, relative links only."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import quote, urlsplit

from pipeline.reports.page import html_page
from pipeline.store.object_store import safe_part

REPORTS_PREFIX = "reports"
INDEX_NAME = "index.html"
# Reports that compare scenarios (e.g. the accuracy comparison) are filed under this scenario name.
CROSS_SCENARIO = "all-scenarios"
# The leaderboard's page and data (pipeline.evaluation.scenarios) are filed under this name: a section, not a scenario.
LEADERBOARD_SECTION = "evaluation"
# The index's sections that are no scenario's, first and in this order, by their titles.
OWN_SECTIONS = {
    CROSS_SCENARIO: "All scenarios",
    LEADERBOARD_SECTION: "Leaderboard: every scenario predicting the held-out months",
}

# Column order and headings of the index; other kinds follow alphabetically under their own name.
KIND_TITLES = {
    "crosstable": "Summary crosstable",
    "score-curves": "Score vs rating difference",
    "band-trend": "Band vs band",
    "rating-distribution": "Rating distribution",
    "accuracy": "Predictive accuracy",
    "accuracy-comparison": "Scenario comparison",
    "pool-health": "Pool health",
    "pool-health-groups": "Pool health: groups against the truth",
    "pool-health-federations": "Pool health: federation residuals",
    "leaderboard": "Leaderboard",
}
LINK_LABELS = {"html": "page", "png": "chart", "parquet": "data", "csv": "data", "md": "notes"}

INDEX_CSS = """
table.index td { white-space: nowrap; }
table.index td a { margin-right: 8px; }
ul.toc { padding-left: 18px; }
"""


@dataclass(frozen=True)
class ReportEntry:
    """One stored page or chart: scenario, period (month, year or window), kind, and its path relative to reports/."""

    scenario: str
    period: str
    kind: str
    href: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.href)
        if parts.scheme or parts.netloc or self.href.startswith("/") or "\\" in self.href or not self.href:
            raise ValueError(f"report links must be relative paths (offline index), got {self.href!r}")


def report_path(scenario: str, kind: str, period: str, extension: str) -> str:
    """Where a report lives relative to reports/: '<scenario>/<kind>/<period>.<extension>'."""
    return f"{safe_part(scenario)}/{safe_part(kind)}/{safe_part(period)}.{safe_part(extension)}"


def report_entry(scenario: str, kind: str, period: str, extension: str) -> ReportEntry:
    """The index entry of a report stored at `report_path(...)`."""
    return ReportEntry(scenario, period, kind, report_path(scenario, kind, period, extension))


def index_href_from(path: str) -> str:
    """Relative link from a report at `path` (relative to reports/) back to the index, e.g. '../../index.html'."""
    return posixpath.relpath(INDEX_NAME, posixpath.dirname(path) or ".")


_MONTH_IN = re.compile(r"(\d{4})-(0[1-9]|1[0-2])(?!\d)")
_YEARS_IN = re.compile(r"^(\d{4})(?:-(\d{4}|\d{2}))?$")


def period_order(period: str) -> tuple[int, str, str, str]:
    """Sort key putting periods in chronological order: by first month, then last month.

    '2019', '2013-16' (years, Sonas's notation) and '2015-2024' are year ranges; a period holding a
    month ('compression-2024-02') sits at that month; undated ones ('january-lists') come last.
    """
    if match := _YEARS_IN.match(period):
        first = int(match.group(1))
        end = match.group(2)
        last = first if end is None else int(end) if len(end) == 4 else (first // 100) * 100 + int(end)
        return (0, f"{first:04d}-01", f"{last:04d}-12", period)
    if match := _MONTH_IN.search(period):
        month = f"{match.group(1)}-{match.group(2)}"
        return (0, month, month, period)
    return (1, "", "", period)


def _kind_order(kind: str) -> tuple[int, str]:
    order = list(KIND_TITLES)
    return (order.index(kind), kind) if kind in order else (len(order), kind)


def _link(entry: ReportEntry) -> str:
    extension = entry.href.rsplit(".", 1)[-1].lower() if "." in entry.href else ""
    label = LINK_LABELS.get(extension, extension or "link")
    return f'<a href="{escape(quote(entry.href, safe="/._-+=~"), quote=True)}">{escape(label)}</a>'


def _scenario_title(scenario: str) -> str:
    return OWN_SECTIONS.get(scenario, f"Scenario {scenario}")


def _section_order(scenario: str) -> tuple[int, str]:
    own = list(OWN_SECTIONS)
    return (own.index(scenario), "") if scenario in own else (len(own), scenario)


def render_index(
    entries: Iterable[ReportEntry],
    title: str = "Rating reports",
    note: str = "",
    readable_lists: Mapping[str, Sequence[str]] | None = None,
    list_command: str = "",
) -> str:
    """The index page: a section per scenario (cross-scenario reports and the leaderboard first), a row per period and a
    column per report kind, each cell linking the page / chart / data of that report; then the readable lists
    (`readable_lists`: scenario -> the months published under lists/) and `list_command`, how to make the others.
    """
    entries = sorted(
        set(entries),
        key=lambda e: (_section_order(e.scenario), period_order(e.period), _kind_order(e.kind), e.href),
    )
    scenarios = list(dict.fromkeys(entry.scenario for entry in entries))
    sections = []
    for number, scenario in enumerate(scenarios):
        own = [entry for entry in entries if entry.scenario == scenario]
        kinds = sorted({entry.kind for entry in own}, key=_kind_order)
        periods = sorted({entry.period for entry in own}, key=period_order)
        header = '<th scope="col">Period</th>' + "".join(
            f'<th scope="col">{escape(KIND_TITLES.get(kind, kind))}</th>' for kind in kinds
        )
        rows = []
        for period in periods:
            cells = "".join(
                "<td>" + "".join(_link(e) for e in own if e.period == period and e.kind == kind) + "</td>"
                for kind in kinds
            )
            rows.append(f'<tr><th scope="row">{escape(period)}</th>{cells}</tr>')
        sections.append(
            f'<h2 id="s{number}">{escape(_scenario_title(scenario))}</h2>\n'
            f'<table class="index"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        )
    if readable_lists is not None:
        sections.append(_readable_lists_section(readable_lists, list_command))
    toc = "".join(f'<li><a href="#s{n}">{escape(_scenario_title(s))}</a></li>' for n, s in enumerate(scenarios))
    if readable_lists is not None:
        toc += '<li><a href="#lists">Readable lists</a></li>'
    summary = f"{len(entries):,} reports in {len(scenarios)} sections."
    body = (
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="meta">{escape(note + " " if note else "")}{summary} All links are relative: the folder can be '
        "copied and opened offline.</p>\n"
        f'<ul class="toc">{toc}</ul>\n' + ("\n".join(sections) if sections else "<p>No reports yet.</p>")
    )
    return html_page(title, body, INDEX_CSS)


def _readable_lists_section(readable_lists: Mapping[str, Sequence[str]], list_command: str) -> str:
    """The index's links to the published lists (lists/<scenario>/<YYYY-MM>.html|csv|txt, beside reports/) and the
    command that makes any other month's.
    """
    rows = []
    for scenario, months in readable_lists.items():
        links = " ".join(
            f"{escape(month)}: "
            + " ".join(
                f'<a href="{escape(quote(f"../lists/{scenario}/{month}.{extension}", safe="/._-+=~"), quote=True)}">'
                f"{label}</a>"
                for extension, label in (("html", "page"), ("csv", "CSV"), ("txt", "FIDE TXT"))
            )
            for month in months
        )
        rows.append(f'<tr><th scope="row">{escape(scenario)}</th><td>{links or "none"}</td></tr>')
    other = f" Any other month's: <code>{escape(list_command)}</code>." if list_command else ""
    return (
        '<h2 id="lists">Readable lists</h2>\n'
        f'<p class="meta">The months whose lists a run published (under lists/, beside reports/).{other}</p>\n'
        f'<table class="index"><tbody>{"".join(rows)}</tbody></table>'
    )
