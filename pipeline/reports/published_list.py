"""The published rating list of a month: the list with the registry's names, as CSV, FIDE TXT and a searchable HTML
page.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Callable, Mapping
from html import escape

import pandera.polars as pa
import polars as pl

from pipeline.formats.fide_list import format_fide_list
from pipeline.ingest import read_players
from pipeline.monthly import table_key
from pipeline.months import add_months, month_range, parse_month
from pipeline.scenarios import Scenario
from pipeline.storage import ObjectStore, redact_url
from pipeline.validate import LOCAL_ID_BASE, players_named_in_dumps
from schemas.published_list import PublishedList
from schemas.util import conform, polars_schema

LISTS_PREFIX = "lists"
PUBLISHED_COLUMNS = list(polars_schema(PublishedList))
# Text columns the page sends once as a sorted dictionary plus one small index per row.
DICTIONARY_COLUMNS = ("federation", "title", "sex")
FLAG_COLUMNS = ("inactive", "delisted", "newly_rated")


def published_list_key(scenario_key: str, month: str, extension: str) -> str:
    """Object-store key of one published file: lists/<scenario>/<YYYY-MM>.<csv|txt|html>."""
    parse_month(month)
    return f"{LISTS_PREFIX}/{scenario_key}/{month}.{extension}"


def published_list(rating_list: pl.DataFrame, registry: pl.DataFrame | None) -> pl.DataFrame:
    """PublishedList rows: every player of `rating_list`, with name, federation, title and sex from `registry`.

    `registry` (Players rows) may be None, empty or miss players: their registry cells stay empty.
    The birth year is the registry's, else the list's own. Sorted by rating (unrated last), name, id.
    """
    known = pl.DataFrame(
        schema={
            "player_id": pl.Int64,
            "name": pl.Utf8,
            "federation": pl.Utf8,
            "title": pl.Utf8,
            "sex": pl.Utf8,
            "registry_birth_year": pl.Int32,
        }
    )
    if registry is not None and registry.height:
        # An empty registry cell (e.g. a FIDE list without a federation) is unknown, not a value.
        blank_is_null = [
            pl.when(pl.col(c).str.strip_chars() != "").then(pl.col(c).str.strip_chars()).alias(c)
            for c in ("name", "federation", "title", "sex")
        ]
        known = registry.select(
            "player_id", *blank_is_null, pl.col("birth_year").cast(pl.Int32).alias("registry_birth_year")
        )
        known = known.unique("player_id", keep="first", maintain_order=True)
    frame = rating_list.join(known, on="player_id", how="left").with_columns(
        pl.col("player_id").alias("id"),
        pl.coalesce("registry_birth_year", "birth_year").alias("birth_year"),
    )
    frame = frame.sort(["rating", "name", "id"], descending=[True, False, False], nulls_last=True)
    return conform(frame, PublishedList)


def published_registry(store: ObjectStore, first_month: str, last_month: str) -> pl.DataFrame:
    """Players rows naming the lists up to `last_month`: the registry as of `last_month`, then the players it does not
    hold as the dumps name them (players_named_in_dumps of the identity reports of first_month..last_month).

    Read once for a run; `registered` lets each month keep only the players known by then.
    """
    columns = ["month", "status", "name", "player_id", "records"]
    identities = [
        store.read_parquet(table_key(["identity"], month), columns=columns)
        for month in month_range(first_month, last_month)
        if store.exists(table_key(["identity"], month))
    ]
    registry = read_players(store, last_month)
    if identities:
        registry = pl.concat([registry, players_named_in_dumps(pl.concat(identities))]).unique(
            "player_id", keep="first", maintain_order=True
        )
    return registry


def write_published_month(
    store: ObjectStore,
    scenario: Scenario,
    month: str,
    rating_list: pl.DataFrame,
    registry: pl.DataFrame,
    check: Callable[[type[pa.DataFrameModel], pl.DataFrame, str], object],
) -> Mapping[str, int | str]:
    """The month's published list as CSV, TXT and HTML under lists/<scenario>/, after check(PublishedList, list,
    what); returns its figures (players, rated, unregistered) and the three files' locations.

    `registry` is published_registry's: only the players registered by `month` name the list.
    """
    published = published_list(rating_list, registry.filter(pl.col("registered") <= month))
    check(PublishedList, published, f"{scenario.name}/published_list {month}")
    paths = {}
    for extension, data in (
        ("csv", published_csv(published)),
        ("txt", published_txt(published, month).encode("utf-8")),
        ("html", published_html(published, scenario.name, month).encode("utf-8")),
    ):
        target = published_list_key(scenario.name, month, extension)
        store.write_bytes(data, target)
        paths[f"{extension}_path"] = redact_url(store.url(target))
    return {
        "players": published.height,
        "rated_players": published.filter(pl.col("rating").is_not_null()).height,
        "unregistered_players": published.filter(pl.col("name").is_null()).height,
        **paths,
    }


def published_csv(published: pl.DataFrame) -> bytes:
    """The list as UTF-8 CSV, header first, nulls as empty cells, booleans as true/false."""
    return conform(published, PublishedList).write_csv(null_value="").encode("utf-8")


def published_txt(published: pl.DataFrame, month: str) -> str:
    """The rated players with a FIDE id in FIDE's per-type TXT layout, headed with the date of FIDE's list (M -> M+1).

    Players known by name only (local ids, pipeline.validate.LOCAL_ID_BASE and above) have no FIDE id
    to write: they are in the CSV and the HTML page, not in FIDE's format.
    """
    fide_ids = published.filter(pl.col("id") < LOCAL_ID_BASE)
    return format_fide_list(fide_ids.rename({"id": "player_id"}), fide_list_month(month))


def fide_list_month(month: str) -> str:
    """Period M's list is FIDE's list of the 1st of M+1 (README 'Months are rating periods')."""
    return add_months(month, 1)


def month_label(month: str) -> str:
    year, number = parse_month(month)
    return f"{calendar.month_name[number]} {year}"


def _script_json(value: object | str) -> str:
    """JSON that is safe inside <script>: no '<', '>' or '&' can close the element or open a comment."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _columnar_json(published: pl.DataFrame) -> tuple[str, dict[str, list[str]]]:
    """One JSON object of column arrays (text columns with few values as indexes into sorted dictionaries)."""
    dictionaries = {column: sorted(published[column].drop_nulls().unique().to_list()) for column in DICTIONARY_COLUMNS}
    encoded = published.select(
        "id",
        "name",
        *[
            pl.col(c).replace_strict(values, list(range(len(values))), default=None, return_dtype=pl.Int32).alias(c)
            for c, values in dictionaries.items()
        ],
        "birth_year",
        "rating",
        "change",
        "games",
        "k",
        *[pl.col(c).cast(pl.Int8) for c in FLAG_COLUMNS],
    )
    # One row of list columns serialises as {"id":[...],"name":[...],...}: one vectorised pass, no Python per row.
    text = encoded.select(pl.all().implode()).write_json()
    return text[1:-1], dictionaries


def published_html(published: pl.DataFrame, scenario: str, month: str) -> str:
    """A self-contained page of the list: sortable, searchable, rendering only the rows in view (fast at 500k rows).

    Works from file:// (no network, no server); links to the CSV and TXT beside it. Names reach the
    page only as JSON data and are shown with textContent, so no name can inject markup or script.
    """
    published = conform(published, PublishedList)
    data, dictionaries = _columnar_json(published)
    rated = published.filter(pl.col("rating").is_not_null()).height
    fide_month = month_label(fide_list_month(month))
    title = f"Rating list {month}, scenario {scenario}"
    summary = (
        f"Scenario <b>{escape(scenario)}</b>, rating period <b>{escape(month_label(month))}</b> ({escape(month)}): "
        f"the list after the period's games, i.e. FIDE's list of <b>1 {escape(fide_month)}</b>. "
        f"<b>{published.height:,}</b> players, <b>{rated:,}</b> rated "
        f"({int(published['newly_rated'].sum()):,} newly rated, {int(published['inactive'].sum()):,} inactive, "
        f"{int(published['delisted'].sum()):,} delisted)."
    )
    files = " · ".join(
        f'<a href="{escape(month)}.{ext}">{label}</a>' for ext, label in (("csv", "CSV"), ("txt", "FIDE TXT"))
    )
    return PAGE.format(
        title=escape(title),
        summary=summary,
        files=files,
        data=_script_json(data),
        dictionaries=_script_json(dictionaries),
    )


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; color: #222;
       margin: 16px 24px; }}
h1 {{ font-size: 20px; margin: 0 0 4px; }}
p.meta {{ color: #444; margin: 0 0 10px; }}
.bar {{ display: flex; gap: 16px; align-items: center; margin-bottom: 8px; }}
#search {{ font: inherit; padding: 4px 8px; width: 320px; }}
#viewport {{ height: calc(100vh - 170px); min-height: 240px; overflow-y: auto; border: 1px solid #d0d0d0; }}
table {{ border-collapse: collapse; table-layout: fixed; width: 100%; min-width: 1000px; }}
th, td {{ padding: 0 8px; height: 24px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
         border-bottom: 1px solid #eee; }}
thead th {{ position: sticky; top: 0; background: #f2f2f2; font-weight: 600; text-align: left; cursor: pointer;
           user-select: none; border-bottom: 1px solid #ccc; z-index: 1; }}
thead th[aria-sort="ascending"]::after {{ content: " \\25B2"; }}
thead th[aria-sort="descending"]::after {{ content: " \\25BC"; }}
td.num, th.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.pad td {{ padding: 0; border: 0; height: auto; }}
tbody tr:nth-child(even) td {{ background: #fafafa; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="meta">{summary}</p>
<div class="bar">
<input id="search" type="search" placeholder="Search a name or a FIDE id" aria-label="Search a name or a FIDE id"
       autocomplete="off">
<span id="status" role="status"></span>
<span>Download: {files}</span>
</div>
<div id="viewport"><table>
<colgroup id="cols"></colgroup>
<thead><tr id="head"></tr></thead>
<tbody id="rows"></tbody>
</table></div>
<script type="application/json" id="list-data">{data}</script>
<script type="application/json" id="list-dictionaries">{dictionaries}</script>
<script>
"use strict";
(function () {{
  const D = JSON.parse(document.getElementById("list-data").textContent);
  const DICT = JSON.parse(document.getElementById("list-dictionaries").textContent);
  const N = D.id.length, ROW = 24, MAX_PX = 8000000;
  const yes = (v) => (v ? "yes" : "");
  // key, heading, width (px), numeric?, first sort direction (-1 = descending), display
  const COLUMNS = [
    ["id", "FIDE id", 100, true, 1, String],
    ["name", "Name", 260, false, 1, (v) => v],
    ["federation", "Fed", 56, false, 1, (v) => DICT.federation[v]],
    ["title", "Title", 56, false, 1, (v) => DICT.title[v]],
    ["sex", "Sex", 44, false, 1, (v) => DICT.sex[v]],
    ["birth_year", "Born", 60, true, 1, String],
    ["rating", "Rating", 70, true, -1, String],
    ["change", "Change", 70, true, -1, (v) => (v > 0 ? "+" + v : String(v))],
    ["games", "Games", 64, true, -1, String],
    ["k", "K", 44, true, -1, String],
    ["inactive", "Inactive", 70, false, -1, yes],
    ["delisted", "Delisted", 70, false, -1, yes],
    ["newly_rated", "New", 50, false, -1, yes],
  ];
  const base = new Int32Array(N);
  for (let i = 0; i < N; i++) base[i] = i;  // the embedded order: rating, then name, then id
  let sorted = base, view = base, sortKey = "rating", sortDir = -1, query = "";
  let namesFolded = null, idsText = null;

  const head = document.getElementById("head"), cols = document.getElementById("cols");
  COLUMNS.forEach(([key, label, width, numeric, first]) => {{
    const col = document.createElement("col");
    col.style.width = width + "px";
    cols.appendChild(col);
    const th = document.createElement("th");
    th.textContent = label;
    th.dataset.key = key;
    th.scope = "col";
    if (numeric) th.className = "num";
    th.addEventListener("click", () => sortBy(key, key === sortKey ? -sortDir : first));
    head.appendChild(th);
  }});

  function sortBy(key, dir) {{
    const v = D[key];
    const idx = base.slice();
    if (key !== "rating" || dir !== -1) {{
      // Ties keep the embedded order (a-b), and empty cells go last in either direction.
      idx.sort((a, b) => {{
        const x = v[a], y = v[b];
        if (x === y) return a - b;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -dir : dir);
      }});
    }}
    sorted = idx; sortKey = key; sortDir = dir;
    for (const th of head.children)
      th.setAttribute("aria-sort", th.dataset.key === key ? (dir > 0 ? "ascending" : "descending") : "none");
    filter();
  }}

  function fold(text) {{
    return text.normalize("NFD").replace(/[\\u0300-\\u036f]/g, "").toLowerCase();
  }}

  function filter() {{
    const q = fold(query.trim());
    if (!q) {{
      view = sorted;
    }} else {{
      if (namesFolded === null) {{
        namesFolded = D.name.map((n) => (n === null ? "" : fold(n)));
        idsText = D.id.map(String);
      }}
      const digits = /^\\d+$/.test(q);
      const out = new Int32Array(sorted.length);
      let n = 0;
      for (let j = 0; j < sorted.length; j++) {{
        const i = sorted[j];
        if (namesFolded[i].includes(q) || (digits && idsText[i].startsWith(q))) out[n++] = i;
      }}
      view = out.subarray(0, n);
    }}
    document.getElementById("status").textContent =
      (q ? view.length.toLocaleString("en") + " of " : "") + N.toLocaleString("en") + " players";
    viewport.scrollTop = 0;
    render();
  }}

  const viewport = document.getElementById("viewport"), body = document.getElementById("rows");
  function render() {{
    const total = view.length;
    const full = total * ROW, height = Math.min(full, MAX_PX);
    const visible = Math.ceil(viewport.clientHeight / ROW) + 2;
    let first, top;
    if (full <= MAX_PX) {{
      first = Math.floor(viewport.scrollTop / ROW);
      top = first * ROW;
    }} else {{
      // Browsers cap an element's height: beyond MAX_PX the scrollbar maps proportionally to rows.
      const ratio = viewport.scrollTop / Math.max(1, height - viewport.clientHeight);
      first = Math.round(Math.min(1, ratio) * Math.max(0, total - visible + 2));
      top = viewport.scrollTop;
    }}
    first = Math.max(0, Math.min(first, Math.max(0, total - 1)));
    const last = Math.min(total, first + visible);
    const frag = document.createDocumentFragment();
    const pad = (px) => {{
      const tr = document.createElement("tr");
      tr.className = "pad";
      const td = document.createElement("td");
      td.colSpan = COLUMNS.length;
      td.style.height = px + "px";
      tr.appendChild(td);
      return tr;
    }};
    frag.appendChild(pad(Math.min(top, Math.max(0, height - (last - first) * ROW))));
    for (let j = first; j < last; j++) {{
      const i = view[j];
      const tr = document.createElement("tr");
      for (const [key, , , numeric, , show] of COLUMNS) {{
        const td = document.createElement("td");
        const value = D[key][i];
        td.textContent = value === null ? "" : show(value);
        if (numeric) td.className = "num";
        tr.appendChild(td);
      }}
      frag.appendChild(tr);
    }}
    frag.appendChild(pad(Math.max(0, height - top - (last - first) * ROW)));
    body.replaceChildren(frag);
  }}

  let scheduled = false;
  viewport.addEventListener("scroll", () => {{
    if (!scheduled) {{ scheduled = true; requestAnimationFrame(() => {{ scheduled = false; render(); }}); }}
  }});
  window.addEventListener("resize", render);
  let timer = 0;
  document.getElementById("search").addEventListener("input", (event) => {{
    clearTimeout(timer);
    timer = setTimeout(() => {{ query = event.target.value; filter(); }}, 120);
  }});
  sortBy("rating", -1);
  document.body.dataset.ready = "1";
}})();
</script>
</body>
</html>
"""
