"""Helpers shared by the dump readers: decompression, decoding, field parsing and the RawGames frame."""

from __future__ import annotations

import gzip
import re
from datetime import date

import polars as pl

from pipeline.hashing import stable_hash
from schemas.raw_games import RawGames
from schemas.util import conform, polars_schema

RAW_SCHEMA = polars_schema(RawGames)

#: Columns a format reader fills itself; the rest (month, federation, ...) come from `finish_records`.
RECORD_COLUMNS = [
    "source_line", "position", "raw_text", "parse_error", "event_id", "event_start", "date", "round",
    "white_id", "black_id", "white_name", "black_name", "result", "unplayed", "time_control",
    "tc_base_seconds", "tc_increment_seconds", "white_rating", "black_rating",
]

COMPRESSION_SUFFIXES = (".gz", ".zst")

# Below 10 minutes of thinking time (base + 60 x increment) is blitz, below 60 rapid (brief, FIDE-like).
BLITZ_BELOW_SECONDS = 10 * 60
RAPID_BELOW_SECONDS = 60 * 60


# C0 control characters other than tab, LF, FF and CR: frequent in binary files, rare in text.
_CONTROL_BYTES = bytes(byte for byte in range(0x20) if byte not in (0x09, 0x0A, 0x0C, 0x0D))


class UnreadableDump(Exception):
    """The bytes of a dump cannot be turned into text or a table (the whole file is quarantined)."""


# -- names -----------------------------------------------------------------------------------------
def strip_compression(name: str) -> tuple[str, str | None]:
    """'a/b.pgn.gz' -> ('a/b.pgn', 'gz'); names without a compression suffix come back unchanged."""
    for suffix in COMPRESSION_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, None


def event_key(name: str) -> str:
    """The dump's key without compression and format extensions: the default event id."""
    inner, _ = strip_compression(name)
    slash = inner.rfind("/")
    dot = inner.rfind(".")
    return inner[:dot] if dot > slash + 1 else inner


# -- bytes -> text ---------------------------------------------------------------------------------
def decompress(data: bytes, compression: str | None) -> bytes:
    """Undo .gz / .zst; raises UnreadableDump when the stream is corrupt or zstd is unavailable."""
    if compression is None:
        return data
    if compression == "gz":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, ValueError) as error:
            raise UnreadableDump(f"corrupt gzip stream: {error}") from error
    if compression == "zst":
        return _zstd_decompress(data)
    raise UnreadableDump(f"unknown compression {compression!r}")


def _zstd_decompress(data: bytes) -> bytes:
    try:
        import zstandard  # optional: preferred when installed
    except ImportError:
        zstandard = None
    try:
        if zstandard is not None:
            return zstandard.ZstdDecompressor().stream_reader(data).read()
        # pyarrow (a dependency anyway) reads zstd frames when the zstandard module is absent.
        import pyarrow as pa

        if not pa.Codec.is_available("zstd"):
            raise UnreadableDump("cannot read .zst: neither zstandard nor pyarrow's zstd codec is available")
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            return stream.read()
    except UnreadableDump:
        raise
    except Exception as error:  # any codec failure means the file content is bad, not the code
        raise UnreadableDump(f"corrupt zstd stream: {error}") from error


def looks_binary(data: bytes) -> bool:
    """True for content that is clearly not a text dump (NUL bytes or many control characters)."""
    sample = data[:65536]
    if b"\x00" in sample:
        return True
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return bool(sample) and controls / len(sample) > 0.05


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM dropped) when valid, else Latin-1, which accepts any byte (old TRF/PGN files)."""
    if looks_binary(data):
        raise UnreadableDump("binary content, not a text dump")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def split_lines(text: str) -> list[str]:
    """Lines on CR, LF or CRLF only; str.splitlines would also split on Latin-1's U+0085 and friends."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the terminator of the last line does not open another line
    return lines


# -- field parsing (expressions) -------------------------------------------------------------------
def blank_to_null(expr: pl.Expr) -> pl.Expr:
    """Strip a text cell; empty means missing."""
    stripped = expr.cast(pl.Utf8).str.strip_chars()
    return pl.when(stripped == "").then(None).otherwise(stripped)


def parse_int(text: pl.Expr, dtype: pl.DataType = pl.Int64) -> pl.Expr:
    """Whole numbers (also written '1850.0', as float columns print) -> integer; anything else -> null."""
    # A float cast is much faster than a regex and accepts every spelling we want to accept.
    number = text.cast(pl.Float64, strict=False)
    whole = number.is_finite() & (number == number.round())
    return pl.when(whole).then(number).cast(dtype, strict=False)


def int_error(text: pl.Expr, label: str, dtype: pl.DataType = pl.Int64) -> pl.Expr:
    """Error message when a present cell does not parse as an integer, else null."""
    bad = text.is_not_null() & parse_int(text, dtype).is_null()
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a number", quoted(text)))


def quoted(text: pl.Expr) -> pl.Expr:
    return pl.concat_str([pl.lit("'"), text, pl.lit("'")])


def parse_iso_date(text: pl.Expr) -> pl.Expr:
    """YYYY-MM-DD, YYYY.MM.DD or YYYY/MM/DD -> Date; unknown parts such as '??' -> null."""
    dashed = text.str.replace_all(".", "-", literal=True).str.replace_all("/", "-", literal=True)
    return dashed.str.to_date("%Y-%m-%d", strict=False)


def join_errors(*messages: pl.Expr) -> pl.Expr:
    """'; '-joined non-null messages, or null when there are none."""
    joined = pl.concat_str(list(messages), separator="; ", ignore_nulls=True)
    return pl.when(joined == "").then(None).otherwise(joined)


# -- time controls ---------------------------------------------------------------------------------
def classify_time_control(base_seconds: pl.Expr, increment_seconds: pl.Expr) -> pl.Expr:
    """classical / rapid / blitz from the time for 60 moves (base + 60 x increment); null if unknown."""
    total = base_seconds + 60 * increment_seconds.fill_null(0)
    return (
        pl.when(base_seconds.is_null()).then(None)
        .when(total < BLITZ_BELOW_SECONDS).then(pl.lit("blitz"))
        .when(total < RAPID_BELOW_SECONDS).then(pl.lit("rapid"))
        .otherwise(pl.lit("classical"))
    )


def parse_time_control(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(base seconds, increment seconds) from PGN/TRF-2026 forms or common free text.

    '5400+30', '40/5400+30:1800+30' (first period counts), '900', and free text such as
    '15 min. + 10 s. per move' or '90 minutes + 30 seconds'.
    """
    structured = text.str.extract_groups(r"^\s*(?:\d+/)?(\d+)(?:\+(\d+))?\s*(?::.*)?$")
    free = text.str.extract_groups(r"(?i)(\d+)\s*(?:min|minutes|')\S*(?:.*?\+\s*(\d+)\s*(?:s|sec|seconds|\"))?")
    base = pl.coalesce(
        structured.struct.field("1").cast(pl.Int32, strict=False),
        free.struct.field("1").cast(pl.Int32, strict=False) * 60,
    )
    increment = (
        pl.when(structured.struct.field("1").is_not_null())
        .then(structured.struct.field("2").cast(pl.Int32, strict=False).fill_null(0))
        .when(free.struct.field("1").is_not_null())
        .then(free.struct.field("2").cast(pl.Int32, strict=False).fill_null(0))
    )
    return base, increment


# -- free-text dates (one value per file, so plain Python) ------------------------------------------
_YMD = re.compile(r"(\d{4})\D{1,3}(\d{1,2})\D{1,3}(\d{1,2})")
_DMY = re.compile(r"(\d{1,2})\D{1,3}(\d{1,2})\D{1,3}(\d{4})")
_YY_MM_DD = re.compile(r"^(\d{2})\D(\d{1,2})\D(\d{1,2})$")


def parse_free_date(text: str | None) -> date | None:
    """'2024/01/05', '2024.01.05', '28. 07. 2005', '05/01/2024' (day first) or TRF '24/01/05' -> date."""
    if not text:
        return None
    text = text.strip()
    for pattern, order in ((_YMD, "ymd"), (_DMY, "dmy"), (_YY_MM_DD, "yy")):
        match = pattern.search(text)
        if not match:
            continue
        a, b, c = (int(g) for g in match.groups())
        year, month, day = (a, b, c) if order == "ymd" else (c, b, a) if order == "dmy" else (2000 + a if a < 70 else 1900 + a, b, c)
        try:
            return date(year, month, day)
        except ValueError:
            return None
    return None


# -- output ----------------------------------------------------------------------------------------
def finish_records(records: pl.DataFrame, source_file: str, federation: str, month: str, fmt: str) -> pl.DataFrame:
    """Add the landing-zone columns and the record id, fill absent columns, conform to RawGames."""
    missing = [pl.lit(None, dtype=RAW_SCHEMA.get(name, pl.Utf8)).alias(name) for name in RECORD_COLUMNS if name not in records.columns]
    records = records.with_columns(missing).with_columns(
        pl.lit(month).alias("month"),
        pl.lit(federation).alias("federation"),
        pl.lit(source_file).alias("source_file"),
        pl.lit(fmt).alias("format"),
        pl.col("raw_text").fill_null(""),
    )
    keys = records.select(
        pl.format("{}:{}:{}", pl.col("source_file"), pl.col("source_line"), pl.col("position").cast(pl.Utf8))
    ).to_series()
    return conform(records.with_columns(stable_hash(keys).alias("record_id")), RawGames)


def unreadable_record(source_file: str, federation: str, month: str, fmt: str, problem: str, raw_text: str = "") -> pl.DataFrame:
    """The single RawGames row that stands for a dump that could not be read at all."""
    record = pl.DataFrame(
        {"source_line": [1], "position": ["file"], "raw_text": [raw_text], "parse_error": [problem]},
        schema={"source_line": pl.Int64, "position": pl.Utf8, "raw_text": pl.Utf8, "parse_error": pl.Utf8},
    )
    return finish_records(record.with_columns(pl.lit(event_key(source_file)).alias("event_id")), source_file, federation, month, fmt)


def preview(data: bytes, limit: int = 200) -> str:
    """A printable excerpt of unreadable bytes for the quarantine's raw_text."""
    return data[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
