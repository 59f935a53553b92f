"""Published text is inert: no CSV cell a spreadsheet would evaluate, no control or bidi character in any file."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.formats.fide_list import parse_fide_list
from pipeline.publish.list_files import published_csv, published_html, published_txt_bytes
from pipeline.publish.lists import _published, published_list, write_published_month
from pipeline.publish.ranked_registry import SPREADSHEET_FORMULA, ranked_registry
from pipeline.reports.page import frame_table_html, render_table_page
from pipeline.reports.player_card import AmbiguousPlayerError, PlayerReport, matches_text, render_html, render_text
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from pipeline.text import (
    escape_text,
    markdown_code_block,
    markdown_list,
    markdown_text,
    printable_text,
    published_text,
)
from tests.test_published_list import rating_list, registry

# What a spreadsheet evaluates when a cell starts with it (OWASP "CSV Injection", and the full-width forms).
FORMULA_START = re.compile("^[=+\\-@\t\r\n\uff1d\uff0b\uff0d\uff20]")
# What no published text may hold: C0 and C1 controls, DEL, line and paragraph separators, bidi controls.
CONTROL_OR_BIDI = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
RLO, PDF = "\u202e", "\u202c"


def unprintable(page: str) -> list[str]:
    """The control and bidi characters of a whole file but its own line ends."""
    return CONTROL_OR_BIDI.findall(page.replace("\r\n", "").replace("\n", ""))


HOSTILE = [  # (name, federation, title)
    ('=HYPERLINK("http://x")', "GER", "GM"),
    ("+1", "+FR", "IM"),
    ("-2+3", "NOR", "-"),
    ("@SUM(A1)", "@US", "WGM"),
    ("\t=1", "ESP", "\t=2"),
    ("\r=1", "\r=X", "FM"),
    ("\uff1d1", "\uff0bGE", "\uff20T"),
    (f"Evil{RLO}gnp.exe{PDF}, Mallory", f"{RLO}RUS", "GM"),
    ("Bell\x07and\x1b[31mred, Eve", "FRA", "C\x85M"),
    (f"{RLO}=cmd|' /C calc'!A0", "ITA", None),
    ("Smith; =1+1, Ann", "ENG", None),
    ("Isolate\u2066, Ivy\u2069 \u200fmark\u061c", "EGY", None),
]
ORDINARY = [  # names, federations and titles that must come out exactly as they went in
    ("Carlsen, Magnus", "NOR", "GM"),
    ("Ørsted-Øberg, Zoë", "DEN", "WIM"),
    ('Quote "q", Comma', "USA", None),
    ("名字, 中文", "CHN", None),
    ("Al-Khwarizmi, محمد", "UAE", "FM"),
    ("O'Brien, Sean-Paul", "IRL", None),
]


def hostile_list() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A list of every HOSTILE and ORDINARY player, rated, with negative and positive changes."""
    rows = HOSTILE + ORDINARY
    players = rating_list(
        [
            {"player_id": 1000 + i, "rating": 2000 + 10 * i, "change": -12 if i % 2 else 7, "k": 20, "games": 3}
            for i in range(len(rows))
        ]
    )
    known = registry(
        [
            {"player_id": 1000 + i, "name": name, "federation": federation, "title": title, "sex": "MF"[i % 2]}
            for i, (name, federation, title) in enumerate(rows)
        ]
    )
    return players, known


def csv_cells(data: bytes) -> list[dict[str, str]]:
    """The CSV's rows as a spreadsheet's reader sees them (RFC 4180 quoting)."""
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))


def semicolon_cells(data: bytes) -> list[str]:
    """Every cell of the CSV as a spreadsheet in a ';' locale splits it (quotes matter only at a cell's start)."""
    return [cell for line in data.decode("utf-8").split("\n") for cell in next(csv.reader([line], delimiter=";"), [])]


@pytest.fixture(scope="module", params=["ranked", "plain"])
def published(request: pytest.FixtureRequest) -> pl.DataFrame:
    players, known = hostile_list()
    return published_list(players, ranked_registry(known) if request.param == "ranked" else known)


def test_no_csv_cell_is_a_formula_and_numbers_stay_numbers(published: pl.DataFrame) -> None:
    data = published_csv(published)
    rows = csv_cells(data)
    assert len(rows) == len(HOSTILE) + len(ORDINARY)
    for row in rows:
        for column in ("name", "federation", "title", "sex"):
            assert not FORMULA_START.match(row[column]), (column, row[column])
            assert not CONTROL_OR_BIDI.search(row[column]), (column, row[column])
    # Neutralised with a single quote, the text otherwise kept (the control or bidi character dropped first).
    names = {row["name"] for row in rows}
    assert {'\'=HYPERLINK("http://x")', "'+1", "'-2+3", "'@SUM(A1)", "'=1", "'\uff1d1"} <= names
    assert "'=cmd|' /C calc'!A0" in names and "Evilgnp.exe, Mallory" in names
    assert "Smith;' =1+1, Ann" in names  # a ';' locale would start a cell there: it starts with the quote
    assert {row["federation"] for row in rows} >= {"'+FR", "'@US", "'=X", "'\uff0bGE", "RUS"}
    assert {row["title"] for row in rows} >= {"'-", "'=2", "'\uff20T", "C M"}
    # Numbers are not text: a negative change is still a number, unquoted.
    frame = pl.read_csv(data)
    assert frame["change"].dtype.is_integer() and frame["change"].min() == -12 and frame["rating"].dtype.is_integer()
    assert b",-12," in data and b",'-12," not in data
    # In a ';' locale too, no cell starts a formula.
    assert not [cell for cell in semicolon_cells(data) if FORMULA_START.match(cell)]


def test_ordinary_names_are_unchanged_in_every_file(published: pl.DataFrame) -> None:
    rows = {row["id"]: row for row in csv_cells(published_csv(published))}
    txt = published_txt_bytes(published, "2024-03").decode("utf-8")
    page = published_html(published, "actual", "2024-03")
    data = json.loads(re.search(r'id="list-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    offset = len(HOSTILE)
    for i, (name, federation, title) in enumerate(ORDINARY):
        row = rows[str(1000 + offset + i)]
        assert (row["name"], row["federation"], row["title"]) == (name, federation, title or "")
        assert name in txt and name in data["name"]


def test_an_ordinary_list_is_written_byte_for_byte_as_before() -> None:
    """published_text leaves a column without anything to neutralise as it is: the same Series, the same bytes."""
    players, known = hostile_list()
    calm = known.filter(pl.col("player_id") >= 1000 + len(HOSTILE))
    published = published_list(players, calm)
    plain = published.write_csv(null_value="").encode("utf-8")
    assert published_csv(published) == plain
    for column in ("name", "federation", "title", "sex"):
        assert published_text(published[column], spreadsheet=True).equals(published[column])


def test_txt_has_no_control_or_bidi_character_and_reads_back(published: pl.DataFrame) -> None:
    data = published_txt_bytes(published, "2024-03")
    text = data.decode("utf-8")
    lines = text.split("\r\n")
    assert lines[-1] == "" and not CONTROL_OR_BIDI.search("".join(lines))
    back = parse_fide_list(data, "standard_rating_list.txt")
    # Every line reads back into its columns; only the federations that are not three letters are refused.
    assert back.players.height + back.rejected.height == len(HOSTILE) + len(ORDINARY)
    assert back.rejected.height == 4 and back.rejected["detail"].str.contains("three-letter code").all()
    assert "Evilgnp.exe, Mallory" in back.players["name"].to_list()
    assert "Belland[31mred, Eve" in back.players["name"].to_list()  # ESC and BEL dropped, the text kept
    # Fixed width: every line as long as FIDE's layout B, never shifted by a control.
    assert {len(line) for line in lines[1:-1]} == {136}


def test_html_list_has_no_control_or_bidi_character(published: pl.DataFrame) -> None:
    page = published_html(published, "actual", "2024-03")
    data = re.search(r'id="list-data">(.*?)</script>', page, re.S).group(1)  # type: ignore[union-attr]
    dictionaries = re.search(r'id="list-dictionaries">(.*?)</script>', page, re.S).group(1)  # type: ignore[union-attr]
    decoded = json.loads(data), json.loads(dictionaries)
    shown = json.dumps(decoded, ensure_ascii=False)  # what the page's script reads, escapes undone
    assert not CONTROL_OR_BIDI.search(shown) and not unprintable(page)
    assert "Evilgnp.exe, Mallory" in decoded[0]["name"] and "=1" in decoded[0]["name"]  # shown, not neutralised
    assert "</script><" not in data


def test_the_months_files_are_the_writers_own(tmp_path: Path) -> None:
    """write_published_month skips searching text the ranked registry cleaned and marked: the same bytes."""
    players, known = hostile_list()
    ranked = ranked_registry(known)
    assert ranked.filter(SPREADSHEET_FORMULA).height == 9  # the marks: every player with a cell to neutralise
    store = ObjectStore(str(tmp_path))
    scenario = Scenario(name="actual", description="", rules="fide-2024")
    write_published_month(store, scenario, "2024-02", players, ranked, lambda *_: None)
    published, _ = _published(players, ranked)
    assert store.read_bytes("lists/actual/2024-02.csv") == published_csv(published)
    assert store.read_bytes("lists/actual/2024-02.html").decode() == published_html(published, "actual", "2024-02")
    assert store.read_bytes("lists/actual/2024-02.txt") == published_txt_bytes(published, "2024-02")


def test_report_pages_and_player_page_drop_bidi_and_controls() -> None:
    name = f"Evil{RLO}gnp.exe{PDF}, Mallory\x1b[2J <b>x</b>"
    table = frame_table_html(pl.DataFrame({"opponent": [name], "rating": [2100]}), caption=f"caption{RLO}")
    assert not CONTROL_OR_BIDI.search(table) and "Evilgnp.exe, Mallory[2J &lt;b&gt;x&lt;/b&gt;" in table
    page = render_table_page(pl.DataFrame({"name": [name]}), f"Title{RLO}")
    assert not unprintable(page) and "<b>x</b>" not in page
    html = render_html(hostile_report(name))
    assert not unprintable(html)
    assert "Player 7 Evilgnp.exe, Mallory[2J &lt;b&gt;x&lt;/b&gt;" in html and "Open2024" in html and "=1, Opp" in html
    assert "(&lt;i&gt;GER, GM, born 1990)" in html


def hostile_report(name: str) -> PlayerReport:
    """A player card whose name, federation, event and opponent hold controls, a bidi override and markup."""
    return PlayerReport(
        player_id=7,
        name=name,
        scenarios=["actual"],
        scenario="actual",
        month="2024-02",
        history=pl.DataFrame({"month": ["2024-02"], "actual": [2100], "games": [1]}),
        list_row={"rating": 2100, "change": 5, "k_used": 20, "games": 1},
        games=pl.DataFrame(
            {
                "event_id": [f"Open{RLO}2024"],
                "game_id": ["g1"],
                "colour": ["w"],
                "opponent_id": [8],
                "opponent_name": [f"{RLO}=1, Opp\x07"],
                "own_rating": [2095],
                "opponent_rating": [2000],
                "score": [1.0],
                "expected": [0.64],
                "weight": [1.0],
                "delta_h": [36.0],
                "k": [20],
                "change": [7.2],
            }
        ),
        performance=pl.DataFrame(
            schema={
                "event_id": pl.Utf8,
                "games": pl.Int64,
                "score": pl.Float64,
                "average_opponent": pl.Float64,
                "p": pl.Float64,
                "dp": pl.Int64,
                "performance_fide": pl.Int64,
                "performance_400": pl.Int64,
            }
        ),
        total_change=7.2,
        rounded_change=7,
        details={"federation": f"<i>{RLO}GER", "title": "GM", "birth_year": 1990},
    )


def test_player_text_and_a_names_matches_show_controls_escaped() -> None:
    r"""In a terminal a control character or bidi override of a name is written out (\x1b), never sent."""
    text = render_text(hostile_report(f"Evil{RLO}gnp.exe{PDF}, Mallory\x1b[2J"))
    assert not unprintable(text)
    assert "Player 7  Evil\\u202egnp.exe\\u202c, Mallory\\x1b[2J (<i>\\u202eGER, GM, born 1990)" in text
    assert "Open\\u202e2024" in text and "\\u202e=1, Opp\\x07" in text
    matches = pl.DataFrame(
        {
            "player_id": [1, 2],
            "name": [f"{RLO}Smith, Ann\x1b", "Smith, Bob"],
            "federation": ["\x07ENG", None],
            "birth_year": [1990, None],
        }  # fmt: skip
    )
    listed = matches_text(AmbiguousPlayerError(f"smith{RLO}", matches))
    assert not unprintable(listed) and "\\u202eSmith, Ann\\x1b  (\\x07ENG, 1990)" in listed
    assert not unprintable(str(AmbiguousPlayerError(f"smith{RLO}", matches)))


def test_the_list_pages_script_writes_no_markup() -> None:
    """The page builds its rows, links and filter options with textContent and DOM nodes: no markup from data."""
    players, known = hostile_list()
    page = published_html(published_list(players, known), "actual", "2024-03")
    script = page[page.rindex("<script>") :]
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
    # A link's address is made of the player's id, a number, only.
    assert "a.href = card(D.id[i]);" in script and '"../../players/" + id + ".html"' in script


def test_printable_text_and_escape_text_agree_on_what_is_unprintable() -> None:
    for character in ["\x00", "\t", "\x1b", "\x7f", "\x85", "\x9f", "\u061c", "\u200e", "\u202e", "\u2066", "\u2029"]:
        assert CONTROL_OR_BIDI.search(escape_text(f"a{character}b")) is None
        assert CONTROL_OR_BIDI.search(printable_text(f"a{character}b")) is None
    assert printable_text("Ørsted,\nJosé\u200f") == "Ørsted, José"
    for ordinary in ("Carlsen, Magnus", "Zoë & <b>", "名字", "\u00a0nbsp"):
        assert printable_text(ordinary) == ordinary == escape_text(ordinary)


@pytest.mark.parametrize(
    "text, shown",
    [
        ("![](http://127.0.0.1:8999/fed.png)", r"\!\[\]\(http\://127.0.0.1:8999/fed.png\)"),  # an image the UI fetches
        ("[click me](https://x.org)", r"\[click me\]\(https\://x.org\)"),  # a live link
        ("<img src=x onerror=alert(1)>", r"\<img src=x onerror=alert\(1\)\>"),  # HTML the sanitizer would drop
        ("raw/<FED>/<YYYY-MM>/", r"raw/\<FED\>/\<YYYY-MM\>/"),  # the project's placeholders, not tags
        ("**bold** __b__ *i* _i_", r"\*\*bold\*\* \_\_b\_\_ \*i\* \_i\_"),
        ("`code` ~~struck~~ a\\b", r"\`code\` \~\~struck\~\~ a\\b"),
        ("# heading | a | b |", r"\# heading \| a \| b \|"),
        ("AT&T &amp; &#60;", r"AT&amp;T &amp;amp; &amp;\#60;"),  # an entity shown as written, not as what it names
        ("see http://x.org, www.x.org or a@x.org", r"see http\://x.org, www\.x.org or a\@x.org"),  # GFM autolinks
        ("- item", r"\- item"),  # a list inside the list item
        ("12. item", r"12\. item"),
        ("fed\u202e.pgn\nnext", "fed.pgn next"),  # printable_text first: one line, no bidi override
        ("2024-02: Müller, Jörg 1-0", "2024-02: Müller, Jörg 1-0"),  # ordinary text unchanged
    ],
)
def test_markdown_text_shows_each_construct_as_written(text: str, shown: str) -> None:
    assert markdown_text(text) == shown


def test_markdown_lists_and_code_blocks_keep_raw_text_inside() -> None:
    assert markdown_list(["a*b", "<c>"]) == "- a\\*b\n- \\<c\\>"
    # An item's own line break is a blank: one item stays one item.
    assert markdown_list(["[x](y)", "a\nb"]) == "- \\[x\\]\\(y\\)\n- a b"
    # Three backticks in a value cannot close the block: the fence is longer than any run in the text.
    block = markdown_code_block("value\n```\n![](http://x/y.png)\u202e")
    assert block == "````\nvalue\n```\n![](http://x/y.png)\n````"
    assert markdown_code_block("a") == "```\na\n```"
