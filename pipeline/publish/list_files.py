"""A published month's files, each written into a handle.

The CSV, FIDE's TXT and combined layouts, and the searchable HTML page.
"""

from __future__ import annotations

import calendar
import io
import json
from html import escape
from typing import BinaryIO

import polars as pl

from pipeline.formats.fide_list import FIDE_IDENTITY, write_fide_combined_list, write_fide_list
from pipeline.months import add_months, parse_month
from pipeline.text import published_text_columns
from pipeline.validate.identity import LOCAL_ID_BASE
from schemas.published_list import PublishedList
from schemas.util import conform

# Text columns the page sends once as a sorted dictionary plus one small index per row.
DICTIONARY_COLUMNS = ("federation", "title", "sex")
FLAG_COLUMNS = ("inactive", "delisted", "newly_rated")


def published_csv(published: pl.DataFrame) -> bytes:
    """write_published_csv's file as bytes."""
    buffer = io.BytesIO()
    write_published_csv(published, buffer)
    return buffer.getvalue()


def write_published_csv(published: pl.DataFrame, handle: BinaryIO, *, suspects: pl.Series | None = None) -> None:
    """The list as UTF-8 CSV into `handle`, header first, nulls as empty cells, booleans as true/false.

    Its text cells are inert (pipeline.text.published_text): no control character or bidi mark, and a single quote
    before a cell a spreadsheet would evaluate (OWASP's "CSV Injection"); numbers stay numbers. `suspects`: the ids
    of the only players whose text may need it, where the caller knows them (write_published_month, its text
    printable already): only their rows are searched, not every row.
    """
    published = conform(published, PublishedList)
    if suspects is None:
        published = published_text_columns(published, spreadsheet=True)
    elif len(suspects):
        rows = published["id"].is_in(suspects.implode()).arg_true()
        if len(rows):
            made = published_text_columns(published[rows], spreadsheet=True)
            # scatter into a copy: the frame is the TXT's and the page's too, written beside this file.
            published = published.with_columns(
                published[c].clone().scatter(rows, made[c]) for c in made.columns if made[c].dtype == pl.String
            )
    published.write_csv(handle, null_value="")


def published_txt(published: pl.DataFrame, month: str) -> str:
    """The rated players with a FIDE id in FIDE's per-type TXT layout, headed with the date of FIDE's list (M -> M+1).

    Players known by name only (local ids, pipeline.validate.identity.LOCAL_ID_BASE and above) have no FIDE id
    to write: they are in the CSV and the HTML page, not in FIDE's format.
    """
    return published_txt_bytes(published, month).decode("utf-8")


def published_txt_bytes(published: pl.DataFrame, month: str) -> bytes:
    """published_txt's file, as UTF-8 bytes."""
    buffer = io.BytesIO()
    write_published_txt(published, month, buffer)
    return buffer.getvalue()


def write_published_txt(
    published: pl.DataFrame, month: str, handle: BinaryIO, identity: pl.Series | None = None
) -> None:
    """published_txt's file into `handle` (pipeline.formats.fide_list, written without a Python string of it).

    `identity`: the TXT's text of who each player is, where known beforehand (ranked_registry's FIDE_IDENTITY).
    """
    players = published if identity is None else published.with_columns(identity.alias(FIDE_IDENTITY))
    fide_ids = players.filter(pl.col("id") < LOCAL_ID_BASE).rename({"id": "player_id"})
    write_fide_list(fide_ids, fide_list_month(month), handle)


def write_published_combined(published: pl.DataFrame, handle: BinaryIO, identity: pl.Series | None = None) -> None:
    """Every player of the list with a FIDE id in FIDE's combined layout (players_list_foa.txt: one line a player, the
    standard, rapid and blitz ratings side by side; pipeline.formats.fide_list.write_fide_combined_list). FIDE's
    combined file holds its registered players whether rated or not, so the unrated are in it too. The rapid and
    blitz fields are the rows' rapid_* and blitz_* columns where they carry them (stored_combined_month), else blank.
    """
    players = published if identity is None else published.with_columns(identity.alias(FIDE_IDENTITY))
    write_fide_combined_list(players.filter(pl.col("id") < LOCAL_ID_BASE).rename({"id": "player_id"}), handle)


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


def _script_json_bytes(data: bytes) -> bytes:
    """_script_json of UTF-8 JSON bytes (the bytes of '<', '>' and '&' appear in UTF-8 only as those characters)."""
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _dictionaries(published: pl.DataFrame) -> dict[str, list[str]]:
    """The sorted values of each dictionary column: the page sends each row's index into them."""
    return {column: sorted(published[column].drop_nulls().unique().to_list()) for column in DICTIONARY_COLUMNS}


def _write_columnar_json(published: pl.DataFrame, dictionaries: dict[str, list[str]], handle: BinaryIO) -> None:
    """One JSON object of column arrays into `handle` (text columns with few values as indexes into `dictionaries`),
    safe inside <script> (_script_json_bytes).

    A one-row frame of list columns serialises as [{"id":[...],"name":[...],...}]: one vectorised pass,
    no Python per row. It is made a column at a time, so only the largest column's text is held, not
    the whole object (44 MB for a 737,000-player list).
    """
    encoded = published.select(
        "id",
        "name",
        *[
            pl.col(c).cast(pl.Enum(values)).to_physical().cast(pl.Int32).alias(c)  # the value's place in `values`
            for c, values in dictionaries.items()
        ],
        "birth_year",
        "rating",
        "previous_rating",
        "change",
        "games",
        "k",
        *[pl.col(c).cast(pl.Int8) for c in FLAG_COLUMNS],
    )
    handle.write(b"{")
    for number, column in enumerate(encoded.columns):
        buffer = io.BytesIO()
        encoded.select(pl.col(column).implode()).write_json(buffer)  # [{"<column>":[...]}]
        if number:
            handle.write(b",")
        handle.write(memoryview(_script_json_bytes(buffer.getvalue()))[2:-2])
    handle.write(b"}")


def published_html(published: pl.DataFrame, scenario: str, month: str) -> str:
    """A self-contained page of the list: sortable, searchable, filtered by federation, sex, age band or birth years
    and activity, ranked among the players the filters keep, rendering only the rows in view (fast at 500k rows).

    Works from file:// (no network, no server); links to the CSV and TXT beside it, and each player to their card,
    PLAYER_CARD_LINK (the store's players/<id>.html, which `ratings player ID --html` writes: cards are made on
    request, not with the list). Names reach the page only as JSON data and are shown with textContent, so no name
    can inject markup or script.
    """
    return published_html_bytes(published, scenario, month).decode("utf-8")


def published_html_bytes(published: pl.DataFrame, scenario: str, month: str) -> bytes:
    """published_html's page as UTF-8 bytes."""
    buffer = io.BytesIO()
    write_published_html(published, scenario, month, buffer)
    return buffer.getvalue()


def write_published_html(
    published: pl.DataFrame, scenario: str, month: str, handle: BinaryIO, *, checked: bool = False
) -> None:
    """published_html's page into `handle`; the list's data is never held as a Python string, nor whole (a column at a
    time).

    Its text is printable (pipeline.text.published_text): a bidi override in a name would reorder what the reader
    sees, escaped or not. `checked`: the caller knows the text printable already (write_published_month).
    """
    published = conform(published, PublishedList)
    if not checked:
        published = published_text_columns(published)
    dictionaries = _dictionaries(published)
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
    marker = "<!--data-->"  # no text of the page can spell it: its '<' would be escaped
    page = PAGE.format(
        title=escape(title),
        summary=summary,
        files=files,
        data=marker,
        dictionaries=_script_json(dictionaries),
        list_year=parse_month(fide_list_month(month))[0],
        u10=parse_month(fide_list_month(month))[0] - 10,
        card=escape(PLAYER_CARD_LINK),
    )
    before, after = page.split(marker)
    handle.write(before.encode("utf-8"))
    _write_columnar_json(published, dictionaries, handle)
    handle.write(after.encode("utf-8"))


# Where a list page (lists/<scenario>/<YYYY-MM>.html) links each player: the store's players/<id>.html
# (pipeline.reports.player_card.player_page_key), written by `ratings player ID --html`.
PLAYER_CARD_LINK = "../../players/<id>.html"

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
p.meta, p.note {{ color: #444; margin: 0 0 10px; }}
.bar {{ display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-bottom: 8px; }}
.bar label {{ white-space: nowrap; }}
.bar select, .bar input {{ font: inherit; padding: 2px 4px; }}
.bar input[type=number] {{ width: 5.5em; }}
#search {{ padding: 4px 8px; width: 320px; }}
#viewport {{ height: calc(100vh - 210px); min-height: 240px; overflow-y: auto; border: 1px solid #d0d0d0; }}
table {{ border-collapse: collapse; table-layout: fixed; width: 100%; min-width: 1180px; }}
th, td {{ padding: 0 8px; height: 24px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
         border-bottom: 1px solid #eee; }}
thead th {{ position: sticky; top: 0; background: #f2f2f2; font-weight: 600; text-align: left; cursor: pointer;
           user-select: none; border-bottom: 1px solid #ccc; z-index: 1; }}
thead th[aria-sort="ascending"]::after {{ content: " \\25B2"; }}
thead th[aria-sort="descending"]::after {{ content: " \\25BC"; }}
td.num, th.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
td a {{ color: #1f5fa8; text-decoration: none; }}
td a:hover {{ text-decoration: underline; }}
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
<div class="bar" id="filters">
<label>Federation <select id="f-federation"><option value="">all</option></select></label>
<label>Sex <select id="f-sex"><option value="">all</option></select></label>
<label>Age <select id="f-age"><option value="">all</option></select></label>
<label>Born from <input id="f-born-from" type="number" min="1800" max="2200" inputmode="numeric"></label>
<label>to <input id="f-born-to" type="number" min="1800" max="2200" inputmode="numeric"></label>
<label>Players <select id="f-activity">
<option value="">all</option><option value="active">rated, active</option>
<option value="inactive">rated, inactive</option><option value="unrated">unrated</option>
<option value="new">newly rated</option>
</select></label>
<button id="f-clear" type="button">Clear filters</button>
</div>
<p class="note">Rank: place by rating among the rated active players the filters keep (equal ratings share a place;
the search does not change it). Ages count from 1 January {list_year}, as FIDE's age categories do (U10: born {u10} or
later). A player's name or id opens their card, <code>{card}</code> in the store, which
<code>ratings player ID --html</code> writes (cards are made on request, not with the list).</p>
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
  const YEAR = {list_year};  // the year of the list's date: age categories count from its 1 January
  const N = D.id.length, ROW = 24, MAX_PX = 8000000;
  const yes = (v) => (v ? "yes" : "");
  const RANK = new Array(N).fill(null);  // place among the rated active players the filters keep
  const card = (id) => "../../players/" + id + ".html";
  // key, heading, width (px), numeric?, first sort direction (-1 = descending), display
  const COLUMNS = [
    ["rank", "Rank", 58, true, 1, String],
    ["id", "FIDE id", 100, true, 1, String],
    ["name", "Name", 250, false, 1, (v) => v],
    ["federation", "Fed", 52, false, 1, (v) => DICT.federation[v]],
    ["title", "Title", 52, false, 1, (v) => DICT.title[v]],
    ["sex", "Sex", 42, false, 1, (v) => DICT.sex[v]],
    ["birth_year", "Born", 56, true, 1, String],
    ["rating", "Rating", 76, true, -1, String],
    ["previous_rating", "Previous", 76, true, -1, String],
    ["change", "Change", 68, true, -1, (v) => (v > 0 ? "+" + v : String(v))],
    ["games", "Games", 62, true, -1, String],
    ["k", "K", 42, true, -1, String],
    ["inactive", "Inactive", 68, false, -1, yes],
    ["delisted", "Delisted", 68, false, -1, yes],
    ["newly_rated", "New", 48, false, -1, yes],
  ];
  const values = (key) => (key === "rank" ? RANK : D[key]);
  const base = new Int32Array(N);
  for (let i = 0; i < N; i++) base[i] = i;  // the embedded order: rating, then name, then id
  let sorted = base, view = base, sortKey = "rating", sortDir = -1, query = "", kept = null;
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

  const F = {{
    federation: document.getElementById("f-federation"), sex: document.getElementById("f-sex"),
    age: document.getElementById("f-age"), from: document.getElementById("f-born-from"),
    to: document.getElementById("f-born-to"), activity: document.getElementById("f-activity"),
  }};
  function option(select, value, text) {{
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }}
  DICT.federation.forEach((code, index) => option(F.federation, String(index), code));
  DICT.sex.forEach((code, index) => option(F.sex, String(index), code));
  for (const n of [8, 10, 12, 14, 16, 18, 20]) option(F.age, "u" + n, "U" + n + " (born " + (YEAR - n) + " or later)");
  for (const n of [50, 65]) option(F.age, "s" + n, n + "+ (born " + (YEAR - n) + " or earlier)");
  option(F.age, "unknown", "birth year unknown");

  // The filters' rows and the ranks among them; then the sort and the search.
  function applyFilters() {{
    const tests = [], born = D.birth_year;
    const fed = F.federation.value, sex = F.sex.value, age = F.age.value, activity = F.activity.value;
    const from = parseInt(F.from.value, 10), to = parseInt(F.to.value, 10);
    if (fed !== "") {{ const v = Number(fed); tests.push((i) => D.federation[i] === v); }}
    if (sex !== "") {{ const v = Number(sex); tests.push((i) => D.sex[i] === v); }}
    const bornFrom = (low) => tests.push((i) => born[i] !== null && born[i] >= low);
    const bornTo = (high) => tests.push((i) => born[i] !== null && born[i] <= high);
    if (age === "unknown") tests.push((i) => born[i] === null);
    else if (age[0] === "u") bornFrom(YEAR - Number(age.slice(1)));  // U10: born YEAR - 10 or later
    else if (age[0] === "s") bornTo(YEAR - Number(age.slice(1)));  // 50+: born YEAR - 50 or earlier
    if (!Number.isNaN(from)) bornFrom(from);
    if (!Number.isNaN(to)) bornTo(to);
    if (activity === "active") tests.push((i) => D.rating[i] !== null && !D.inactive[i]);
    else if (activity === "inactive") tests.push((i) => D.rating[i] !== null && D.inactive[i] === 1);
    else if (activity === "unrated") tests.push((i) => D.rating[i] === null);
    else if (activity === "new") tests.push((i) => D.newly_rated[i] === 1);
    kept = tests.length ? new Uint8Array(N) : null;
    let place = 0, last = null, lastPlace = null;
    for (let i = 0; i < N; i++) {{  // the embedded order: rating descending, so equal ratings are together
      RANK[i] = null;
      if (kept !== null) {{
        if (!tests.every((test) => test(i))) continue;
        kept[i] = 1;
      }}
      if (D.rating[i] === null || D.inactive[i]) continue;
      place++;
      if (D.rating[i] !== last) {{ last = D.rating[i]; lastPlace = place; }}
      RANK[i] = lastPlace;
    }}
  }}

  function sortBy(key, dir) {{
    const v = values(key);
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
    if (!q && kept === null) {{
      view = sorted;
    }} else {{
      if (q && namesFolded === null) {{
        namesFolded = D.name.map((n) => (n === null ? "" : fold(n)));
        idsText = D.id.map(String);
      }}
      const digits = /^\\d+$/.test(q);
      const out = new Int32Array(sorted.length);
      let n = 0;
      for (let j = 0; j < sorted.length; j++) {{
        const i = sorted[j];
        if (kept !== null && !kept[i]) continue;
        if (!q || namesFolded[i].includes(q) || (digits && idsText[i].startsWith(q))) out[n++] = i;
      }}
      view = out.subarray(0, n);
    }}
    document.getElementById("status").textContent =
      (view.length < N ? view.length.toLocaleString("en") + " of " : "") + N.toLocaleString("en") + " players";
    viewport.scrollTop = 0;
    render();
  }}

  function refilter() {{
    applyFilters();
    if (sortKey === "rank") sortBy("rank", sortDir);
    else filter();
  }}

  const viewport = document.getElementById("viewport"), body = document.getElementById("rows");
  function link(i, text) {{
    const a = document.createElement("a");
    a.href = card(D.id[i]);
    a.title = "Player card (ratings player " + D.id[i] + " --html writes it)";
    a.textContent = text;
    return a;
  }}
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
        const value = values(key)[i];
        const text = value === null ? "" : show(value);
        if (key === "id" || (key === "name" && value !== null)) td.appendChild(link(i, text));
        else td.textContent = text;
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
  for (const control of Object.values(F)) control.addEventListener("change", refilter);
  for (const control of [F.from, F.to]) control.addEventListener("input", () => {{
    clearTimeout(timer);
    timer = setTimeout(refilter, 300);
  }});
  document.getElementById("f-clear").addEventListener("click", () => {{
    for (const control of Object.values(F)) control.value = "";
    refilter();
  }});
  applyFilters();
  sortBy("rating", -1);
  document.body.dataset.ready = "1";
}})();
</script>
</body>
</html>
"""
