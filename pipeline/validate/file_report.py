"""What `ratings validate` says about loose files.

Detected format, records read, rated games, players, quarantine by reason.

Files are validated outside a landing zone, so there is no player registry and no month folder:
every FIDE id present counts as a known player, a player without an id is identified by the name
written in the file (a TRF's local players, a PGN without FideId tags), unknown_player is left for
records with neither; and a dump's month is its own (date_outside_month never applies; its records
are labelled with the most common month of their dates).
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.formats import detect_format, read_dump, too_large_to_read, unexpected, unreadable_because
from pipeline.formats.common import READER_REASONS, DumpTooLarge, UnreadableDump, strip_compression
from pipeline.formats.decoding import check_line_count, decode_text, decode_text_detected, decompress, decompress_head
from pipeline.formats.fide_list import detect_layout, parse_fide_list
from pipeline.formats.trf import PLAYER_TAG, is_trf_text
from pipeline.ingest.landing import NOT_A_FILE, SPECIAL_FILE, month_bounds, not_a_file_problem
from pipeline.ingest.registry import registry_problems, registry_table, seed_problems
from pipeline.text import escape_text
from pipeline.validate.split import split_games
from schemas.players import Players
from schemas.util import empty_frame

# Problems printed per file (all of them are counted).
MAX_PROBLEMS = 20
# Bytes of a file's (decompressed) start that decide its kind.
SNIFF_BYTES = 400_000
FIDE_LIST_PREFIX = "fide-list-"


@dataclass
class FileReport:
    """One file's outcome; `as_json` is the contract of `ratings validate --json`."""

    path: str
    format: str
    records: int = 0
    games: int = 0
    players: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # 'line N: what is wrong', the first MAX_PROBLEMS
    readable: bool = True  # False: nothing in the file could be read
    opened: bool = True  # False: the file itself could not be read (missing, a folder, no permission)
    encoding: str | None = None  # text encoding read ('utf-8', 'windows-1252', ...); None: binary or unread

    def as_json(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "records": self.records,
            "games": self.games,
            "players": self.players,
            "quarantined": dict(self.quarantined),
            "encoding": self.encoding,
            "readable": self.readable,
            "opened": self.opened,
        }

    def summary(self) -> str:
        """One line for people: format and counts, quarantine by reason; a file that could not be opened has none."""
        if not self.opened:
            return f"{self.path}: not read"
        counts = f"{self.records:,} records"
        if self.format.startswith(FIDE_LIST_PREFIX) or self.format in ("players-csv", "seed-csv"):
            counts += f", {self.players:,} players"
        else:
            counts += f", {self.games:,} rated games"
        quarantined = sum(self.quarantined.values())
        if quarantined:
            reasons = ", ".join(f"{reason} {n:,}" for reason, n in self.quarantined.items())
            counts += f", {quarantined:,} quarantined ({reasons})"
        if self.encoding not in (None, "utf-8"):
            counts += f" [{self.encoding}]"
        return f"{self.path}: {self.format}: {counts}"


def report_files(paths: list[str]) -> list[FileReport]:
    """A report per path, in order; never raises, and one file's failure never hides another's report."""
    return [report_file(path) for path in paths]


def report_file(path: str) -> FileReport:
    """Read one file of any supported kind and count what became of its records.

    Never raises: an unexpected error while reading becomes the file's one unparseable record with
    a problem line saying what happened. Text that came from the file or its name (paths, names,
    problems) is made printable: a dump cannot send escape sequences to the terminal.
    """
    try:
        report = _report_file(path)
    except Exception as error:  # a bug or a library failure on odd content must not stop the other files
        try:
            fmt = detect_format(path)
        except Exception:
            fmt = "unknown"
        report = FileReport(
            path,
            fmt,
            records=1,
            quarantined={"unparseable": 1},
            problems=[f"line 1: {unexpected(error)}"],
            readable=False,
        )
    report.path = escape_text(report.path)
    report.problems = [escape_text(problem) for problem in report.problems]
    return report


def _not_opened(path: str, problem: str) -> FileReport:
    """The report of a file that could not be opened (`problem`: why)."""
    return FileReport(path, detect_format(path), problems=[problem], readable=False, opened=False)


def _report_file(path: str) -> FileReport:
    try:
        # Stat first: reading a FIFO would wait for a writer for ever; a run does not read one either.
        if not stat.S_ISREG(mode := os.stat(path).st_mode) and not stat.S_ISDIR(mode):
            return _not_opened(path, f"{NOT_A_FILE}: {not_a_file_problem(SPECIAL_FILE)}")
        too_large = _too_large(path)
        if too_large is not None:
            return too_large
        data = Path(path).read_bytes()
    except OSError as error:
        return _not_opened(path, f"cannot be read: {error.strerror or error}")
    fmt = sniff_format(data, path)
    try:
        if fmt.startswith(FIDE_LIST_PREFIX):
            return _fide_list_report(data, path)
        if fmt in ("players-csv", "seed-csv"):
            return _registry_report(data, path, fmt)
    except UnreadableDump as problem:
        return FileReport(
            path, fmt, records=1, quarantined={"unparseable": 1}, problems=[f"line 1: {problem}"], readable=False
        )
    return _dump_report(data, path, fmt)


def _too_large(path: str) -> FileReport | None:
    """The report of a plain text dump beyond the text cap, as a run quarantines it (formats.too_large_to_read), told
    from its size and first bytes (a registry CSV is not a dump) without reading it whole; None for any other file.
    """
    why = too_large_to_read(path, os.stat(path).st_size)
    if why is None:
        return None
    with open(path, "rb") as handle:
        fmt = sniff_format(handle.read(SNIFF_BYTES), path)
    if fmt not in ("trf", "pgn", "csv"):
        return None
    problem = unreadable_because(DumpTooLarge(why), path)
    return FileReport(
        path, fmt, records=1, quarantined={"unparseable": 1}, problems=[f"line 1: {problem}"], readable=False
    )


def sniff_format(data: bytes, path: str) -> str:
    """Trf / pgn / csv / parquet (game dumps), players-csv, seed-csv, fide-list-<layout>, or unknown."""
    fmt = detect_format(path)
    inner, compression = strip_compression(path)
    if fmt not in ("trf", "csv"):
        return fmt
    try:
        text = decode_text(decompress_head(data, compression, SNIFF_BYTES))
    except UnreadableDump:
        return fmt  # the dump reader reports why
    if fmt == "csv":
        header = {name.strip().strip('"').lower() for name in text.lstrip("\ufeff").split("\n", 1)[0].split(",")}
        if not header & {"white_id", "black_id", "white", "black", "result"}:
            if header & {"player_id", "id", "fide_id"}:
                return "players-csv" if "name" in header else "seed-csv" if "rating" in header else fmt
        return fmt
    if inner.lower().endswith(".txt") and not is_trf_text(text):
        layout = detect_layout(text)
        if layout is not None:
            return FIDE_LIST_PREFIX + layout
    return fmt


def _dump_report(data: bytes, path: str, fmt: str) -> FileReport:
    encodings: list[str | None] = []
    raw = read_dump(data, path, "", "1970-01", encodings)
    month = _own_month(raw)
    raw = raw.with_columns(pl.lit(month).alias("month"))
    games, quarantine = split_games(raw, empty_frame(Players), month, check_month=False)
    # What is wrong with the file itself: unreadable records, and those a reader quarantined for a reason of its own
    # (one FIDE id on two TRF lines, a PGN tag given twice with different values), named by their reason. A line
    # can hold several records (a TRF player line: one per round): the text breaks the tie, so the listing is
    # the same on every run.
    problems = (
        quarantine.filter(pl.col("reason").is_in(["unparseable", *READER_REASONS]))
        .with_columns(
            pl.when(pl.col("reason") == "unparseable")
            .then(pl.col("detail"))
            .otherwise(pl.format("{}: {}", pl.col("reason"), pl.col("detail")))
            .alias("detail")
        )
        .sort("source_line", "detail")
        .head(MAX_PROBLEMS)
    )
    return FileReport(
        path,
        fmt,
        records=raw.height,
        games=games.height,
        players=_trf_players(data, path) if fmt == "trf" else 0,
        quarantined=_reason_counts(quarantine["reason"]),
        problems=[f"line {line}: {detail}" for line, detail in problems.select("source_line", "detail").iter_rows()],
        # Nothing could be read when no record could be (a binary or empty file, a PGN without games...).
        readable=raw["parse_error"].null_count() > 0,
        encoding=encodings[0] if encodings else None,
    )


def _trf_players(data: bytes, path: str) -> int:
    """The 001 player records of a TRF file (records of the report are its pairings and byes)."""
    try:
        content = decompress(data, strip_compression(path)[1])
        check_line_count(content)  # a line bomb is one quarantined record: do not split it here either
        text = decode_text(content)
    except UnreadableDump:
        return 0
    # The reader's own rule: '001' and a blank; lines with a NUL byte are junk.
    lines = pl.Series(text.replace("\r", "\n").split("\n"), dtype=pl.Utf8)
    return int((lines.str.contains(PLAYER_TAG) & ~lines.str.contains("\x00", literal=True)).sum())


def _own_month(raw: pl.DataFrame) -> str:
    """The most common YYYY-MM among the records' dates (the current month when none has a date)."""
    days = raw.select(pl.coalesce("date", "event_start").dt.strftime("%Y-%m").drop_nulls().alias("month"))["month"]
    if days.is_empty():
        return month_bounds()[1]  # the current month as a run's is: UTC's
    return days.value_counts(sort=True)["month"][0]


def _fide_list_report(data: bytes, path: str) -> FileReport:
    inner, compression = strip_compression(path)
    content = decompress(data, compression)
    fide_list = parse_fide_list(content, inner)
    rejected = fide_list.rejected.sort("source_line")
    return FileReport(
        path,
        FIDE_LIST_PREFIX + fide_list.layout,
        records=fide_list.records,
        players=fide_list.players.height,
        quarantined=_reason_counts(rejected["reason"]),
        problems=[
            f"line {line}: {detail}"
            for line, detail in rejected.head(MAX_PROBLEMS).select("source_line", "detail").iter_rows()
        ],
        readable=fide_list.players.height > 0,
        encoding=_encoding(content),
    )


def _registry_report(data: bytes, path: str, fmt: str) -> FileReport:
    """A player registry or seed-list CSV: rows, usable players, and the rows that register nobody."""
    content = decompress(data, strip_compression(path)[1])
    table = registry_table(content)
    problems = registry_problems(table).drop("raw_text")
    if fmt == "seed-csv":
        # What a run leaves out of the seed list (registry.seed_problems), so that this report and the run agree.
        unread = seed_problems(table).select("source_line", pl.lit("unparseable").alias("reason"), "detail")
        # One reason per row: an unusable id first, then what the seed list cannot read.
        problems = pl.concat([problems, unread]).unique("source_line", keep="first", maintain_order=True)
    problems = problems.sort("source_line")
    return FileReport(
        path,
        fmt,
        records=table.height,
        players=table.height - problems.height,
        quarantined=_reason_counts(problems["reason"]),
        problems=[
            f"line {line}: {detail}"
            for line, detail in problems.head(MAX_PROBLEMS).select("source_line", "detail").iter_rows()
        ],
        readable=table.height > problems.height,
        encoding=_encoding(content),
    )


def _encoding(content: bytes) -> str | None:
    """The text encoding the readers detect for these bytes (None when they are no text)."""
    try:
        return decode_text_detected(content)[1]
    except UnreadableDump:
        return None


def _reason_counts(reasons: pl.Series) -> dict[str, int]:
    """Reason -> records, most frequent first."""
    return dict(Counter(reasons.to_list()).most_common())
