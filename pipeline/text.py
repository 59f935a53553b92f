"""Text from dumps made safe to print and to publish: control characters and bidi overrides dropped or shown."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidi marks, embeddings, overrides and isolates
# (U+061C, U+200E/F, U+202A-E, U+2066-9) that make a line read backwards.
CONTROL_OR_BIDI = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
# The ones that separate words (tab, line ends, form feed, the information separators, NEL, LS, PS): published as a
# blank, so that "Ørsted,\nJosé" still reads as two words; every other one is dropped (a bidi mark is invisible).
_BREAKS = "[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]"
# What makes a spreadsheet evaluate a cell when it comes first: OWASP's "CSV Injection"
# (https://owasp.org/www-community/attacks/CSV_Injection: =, +, -, @, tab 0x09, carriage return 0x0D, line feed
# 0x0A), and the full-width ＝ ＋ － ＠ that some spreadsheets read as their ASCII twins. Blanks before one do not
# make it safe to every reader, so they count as the start too.
_FORMULA_CHARACTERS = "=+\\-@\t\r\n\uff1d\uff0b\uff0d\uff20"
_FORMULA_START = f"^([ ]*[{_FORMULA_CHARACTERS}])"
# OWASP's same page: a field separator inside the text can start a new cell. The CSV writer quotes commas, but a
# spreadsheet in a locale that separates with ';' splits the line there, quotes or not.
_FORMULA_AFTER_SEMICOLON = f";([ ]*[{_FORMULA_CHARACTERS}])"

# A quarantine detail quotes the dump (a line, a cell, a header's column names): a 50 MB line made a 52 MB detail,
# stored twice (raw_games, quarantine) and printed whole by `ratings validate`. A longer detail keeps its start (what
# is wrong, and the quote's beginning) and its end (the advice after the quote), and says how much it leaves out.
DETAIL_CHARS = 1_000
_DETAIL_HEAD, _DETAIL_TAIL = 600, 300

_UNPRINTABLE = re.compile(CONTROL_OR_BIDI)
_BREAK = re.compile(_BREAKS)
# What Markdown or HTML in Dagster's UI (CommonMark with GitHub's extensions) reads in a line of text: emphasis,
# code, links and images, headings, tables, HTML tags (< >), strikethrough (~), the autolink literals of GitHub's
# extension (the ':' of http:// and https://, the '@' of an e-mail address, the dot of www.), and at the start of
# the line a list item's marker (- + 1. 1)). CommonMark ("Backslash escapes",
# https://spec.commonmark.org/0.31.2/#backslash-escapes): any ASCII punctuation escaped with a backslash is shown as
# itself; '&' would start an entity reference instead, so it is written &amp;.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]()!#|<>~@]|:(?=//)|(?<=www)\.", re.IGNORECASE)
_MARKDOWN_LINE_START = re.compile(r"^( *)([-+]|\d{1,9}[.)])")


# Unicode's format characters (category Cf: the zero-width space and joiners, the soft hyphen, the BOM, the word
# joiner, tags) are invisible: a terminal line showed the folder 'G\u200bER' as 'GER'. Printed text escapes them as
# Python's repr (and so a quarantine detail quoting a folder) does; a published page keeps them (printable_text: a
# joiner belongs to some scripts' spelling). Any character but ASCII is looked at, the ordinary ones kept.
_ESCAPED = re.compile(f"{CONTROL_OR_BIDI}|[^\\x00-\\x7f]")


def _escaped(character: str) -> str:
    if not (_UNPRINTABLE.match(character) or unicodedata.category(character) == "Cf"):
        return character
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_text(text: str) -> str:
    r"""`text` with every control character, bidi mark and other invisible format character written as \xNN,
    \uNNNN or \UNNNNNNNN (ESC -> \x1b, a zero-width space -> \u200b), the rest unchanged.
    """
    return _ESCAPED.sub(lambda m: _escaped(m.group()), text)


def shell_word(text: str) -> str:
    """`text` as one word of a shell command a person copies from the output (a store path with blanks quoted)."""
    return shlex.quote(text)


class Placeholder(str):
    """A word of a printed command that a person replaces (`<YYYY-MM>`, `csv|txt|html`): shown as written, unquoted."""


# The options of the command that printed a `ratings` command which that command takes too, and must repeat to run
# as printed: a `ratings run` suggested after a run with --scenarios F that left F out rated other chains, or
# refused for their missing lists.
CARRIED_OPTIONS = {
    "run": ("--store", "--scenarios", "--dagster-home"),
    "demo": ("--store", "--dagster-home"),
    "list": ("--store", "--scenarios"),
    "player": ("--store", "--scenarios"),
    "ui": ("--store", "--dagster-home"),
}
# `ratings ui` has no --scenarios: the definitions it serves read the scenarios file from the environment.
SCENARIOS_VARIABLE = {"ui": "RATINGS_SCENARIOS"}


@dataclass(frozen=True)
class CommandLines:
    """The one way a `ratings` command that output tells a person to run is written: with the options of the command
    that printed it which it takes (CARRIED_OPTIONS; None: not given, so not carried), every word shell-quoted but a
    Placeholder. `dagster_home` is given only when it is not the store's own instance (which needs no option).
    """

    store: str | None = None
    scenarios: str | None = None
    dagster_home: str | None = None

    def ratings(self, command: str, *words: str) -> str:
        """`ratings <command> --store S <words> [--scenarios F] [--dagster-home H]`, as far as `command` takes them
        (`RATINGS_SCENARIOS=F ratings ui ...` for the UI).
        """
        given = {"--store": self.store, "--scenarios": self.scenarios, "--dagster-home": self.dagster_home}
        carried = {option: value for option in CARRIED_OPTIONS.get(command, ()) if (value := given[option])}
        store = carried.pop("--store", None)
        parts = [*(["--store", store] if store else []), *words, *(w for pair in carried.items() for w in pair)]
        shown = [word if isinstance(word, Placeholder) else shell_word(word) for word in parts]
        variable = SCENARIOS_VARIABLE.get(command)
        setting = [f"{variable}={shell_word(self.scenarios)}"] if variable and self.scenarios else []
        return " ".join([*setting, "ratings", command, *shown])


def escape_lines(text: str) -> str:
    """escape_text of each line of a message the project wrote over several lines, the line breaks kept."""
    return "\n".join(escape_text(line) for line in text.split("\n"))


def printable_text(text: str) -> str:
    """`text` as published on a page: controls that separate words become a blank, the other controls and bidi
    marks are dropped; text without any is returned unchanged.
    """
    return _UNPRINTABLE.sub("", _BREAK.sub(" ", text))


def markdown_text(text: str) -> str:
    """printable_text of `text` made literal in Markdown: shown in the UI as written, never as a link, image, tag or
    emphasis (see _MARKDOWN_SPECIAL); one line, since the word-separating controls became blanks.
    """
    text = _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), printable_text(text).replace("&", "&amp;"))
    return _MARKDOWN_LINE_START.sub(lambda m: f"{m[1]}{m[2][:-1]}\\{m[2][-1]}", text)


def markdown_list(lines: Iterable[str]) -> str:
    """A Markdown bullet list of `lines`, each shown as written (markdown_text)."""
    return "\n".join(f"- {markdown_text(line)}" for line in lines)


def markdown_list_lines(markdown: str) -> list[str]:
    """The lines markdown_list made `markdown` of, as written (its escapes undone), for a reader outside Markdown."""
    items = (line[2:] for line in markdown.split("\n") if line.startswith("- "))
    return [_MARKDOWN_ESCAPED.sub(lambda m: m[1] or "&", item) for item in items]


# What markdown_text escaped: ASCII punctuation after a backslash, and '&' written &amp;.
_MARKDOWN_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])|&amp;")


def markdown_code_block(text: str) -> str:
    """`text` (a frame's repr, say) as a Markdown code block its own backticks cannot close: CommonMark ("Fenced
    code blocks", https://spec.commonmark.org/0.31.2/#fenced-code-blocks) closes a fence only with a run of at least
    as many backticks, so the fence is one longer than the longest run in `text`; each line printable_text.
    """
    lines = [printable_text(line) for line in text.split("\n")]
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", "\n".join(lines))), default=0))
    return "\n".join([fence, *lines, fence])


def capped_detail(detail: pl.Expr) -> pl.Expr:
    """A quarantine detail of at most about DETAIL_CHARS characters: a longer one as its first and last characters
    around '... (N characters left out) ...'. The one cap on what details quote from a dump: every reader's problems
    (formats.common.finish_batch) and every quarantine detail (validate.split) pass through it.
    """
    length = detail.str.len_chars()
    left_out = (length - _DETAIL_HEAD - _DETAIL_TAIL).cast(pl.Utf8)
    # Thousands separators without a lookahead (Polars' regex has none): every three digits from the right.
    grouped = left_out.str.reverse().str.replace_all(r"(\d{3})", "${1},").str.strip_suffix(",").str.reverse()
    shortened = pl.concat_str(
        [
            detail.str.head(_DETAIL_HEAD),
            pl.lit(" ... ("),
            grouped,
            pl.lit(" characters left out) ... "),
            detail.str.tail(_DETAIL_TAIL),
        ]
    )
    return pl.when(length > DETAIL_CHARS).then(shortened).otherwise(detail)


def printable(text: pl.Expr) -> pl.Expr:
    """printable_text in Polars: the expression's text with word-separating controls as a blank, the others dropped."""
    return text.str.replace_all(_BREAKS, " ").str.replace_all(CONTROL_OR_BIDI, "")


def holds_control(column: pl.Series) -> bool:
    """Whether any cell of a text column holds a control character or bidi mark (one search of the column)."""
    return bool(column.str.contains(CONTROL_OR_BIDI).any())


def published_text(column: pl.Series, *, spreadsheet: bool = False) -> pl.Series:
    """A text column as it is published: printable (no control character or bidi mark), and with `spreadsheet`
    (a CSV) each cell a spreadsheet would evaluate as a formula prefixed with a single quote, as OWASP advises
    (see _FORMULA_CHARACTERS), and each ';' that would start such a cell followed by one.

    The column is searched once for each (not a Python call per cell), and only a column that holds such a cell
    is rewritten: ordinary text comes back as it came, the same bytes.
    """
    if holds_control(column):
        column = column.to_frame().select(printable(pl.col(column.name))).to_series()
    if not spreadsheet:
        return column
    if column.str.contains(_FORMULA_START).any():
        column = column.str.replace(_FORMULA_START, "'$1")
    if column.str.contains(";", literal=True).any() and column.str.contains(_FORMULA_AFTER_SEMICOLON).any():
        column = column.str.replace_all(_FORMULA_AFTER_SEMICOLON, ";'$1")
    return column


def spreadsheet_formulas(column: pl.Series) -> pl.Series:
    """Whether a spreadsheet would evaluate each cell of a printable text column (published_text would change it
    with `spreadsheet`); false for a null.
    """
    found = column.str.contains(_FORMULA_START)
    if column.str.contains(";", literal=True).any():
        found = found | column.str.contains(_FORMULA_AFTER_SEMICOLON)
    return found.fill_null(False)


def published_text_columns(frame: pl.DataFrame, *, spreadsheet: bool = False) -> pl.DataFrame:
    """`frame` with each text column as published_text makes it; numbers (a change of -12, say) stay numbers."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(published_text(frame[name], spreadsheet=spreadsheet) for name in text)


def some_names(names: Sequence[str], shown: int = 3) -> str:
    """The first `shown` names, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
