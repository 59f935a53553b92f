"""Helpers shared by the dump readers: decompression, decoding, field parsing and the RawGames frame."""

from __future__ import annotations

import gzip
import re
from datetime import date

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from pipeline.hashing import _FNV_OFFSET, _FNV_PRIME  # the record id must equal stable_hash of the key
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


def _utf16_codec(data: bytes) -> str | None:
    """'utf-16' when the bytes are UTF-16 text (with a BOM, or NULs in every other byte), else None."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    sample = data[:4096]
    if len(sample) >= 4:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) >= 0.9 * len(odd) and even.count(0) == 0:
            return "utf-16-le"
        if even.count(0) >= 0.9 * len(even) and odd.count(0) == 0:
            return "utf-16-be"
    return None


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM dropped) when valid, UTF-16 when it says so, else Latin-1, which accepts any byte."""
    codec = _utf16_codec(data)
    if codec is not None:
        try:
            text = data.decode(codec).lstrip("\ufeff")
        except UnicodeDecodeError as error:
            raise UnreadableDump(f"invalid UTF-16 text: {error}") from error
        if looks_binary(text[:65536].encode("utf-8")):
            raise UnreadableDump("binary content, not a text dump")
        return text
    if looks_binary(data):
        raise UnreadableDump("binary content, not a text dump")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def utf8_lf_bytes(data: bytes) -> bytes:
    """The bytes of a text dump as UTF-8 with LF line ends (what the byte-level readers expect).

    Cheap for the common case (ASCII or valid UTF-8 with LF): no decoding, no copy.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if _utf16_codec(data) is not None:
        data = decode_text(data).encode("utf-8")
    elif looks_binary(data):
        raise UnreadableDump("binary content, not a text dump")
    elif not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            data = data.decode("latin-1").encode("utf-8")  # old files: every byte is a Latin-1 character
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


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


def int_error(text: pl.Expr, label: str, dtype: pl.DataType = pl.Int64, parsed: pl.Expr | None = None) -> pl.Expr:
    """Error message when a present cell does not parse as an integer, else null (`parsed`: parse_int(text, dtype), if at hand)."""
    bad = text.is_not_null() & (parse_int(text, dtype) if parsed is None else parsed).is_null()
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
    return finish_batch(records.with_columns(pl.lit(0, dtype=pl.Int32).alias("file")), [source_file], [federation], month, fmt)


def finish_batch(records: pl.DataFrame, source_files: list[str], federations: list[str], month: str, fmt: str) -> pl.DataFrame:
    """finish_records for the records of many dumps; `records.file` indexes source_files / federations."""
    missing = [pl.lit(None, dtype=RAW_SCHEMA.get(name, pl.Utf8)).alias(name) for name in RECORD_COLUMNS if name not in records.columns]
    file = records["file"].cast(pl.Int64).to_numpy()
    records = records.with_columns(missing).with_columns(
        pl.lit(month).alias("month"),
        pl.Series("federation", federations, dtype=pl.Utf8).gather(file),
        pl.Series("source_file", source_files, dtype=pl.Utf8).gather(file),
        pl.lit(fmt).alias("format"),
        pl.col("raw_text").fill_null(""),
    )
    # record_id = stable_hash('<source_file>:<source_line>:<position>'), the file part hashed once per file.
    suffixes = records.select(pl.format("{}:{}", pl.col("source_line"), pl.col("position").cast(pl.Utf8))).to_series()
    states = np.array([_fnv_state(name + ":") for name in source_files], dtype=np.uint64)
    record_id = continue_stable_hash(states[file] if len(file) else np.zeros(0, np.uint64), suffixes)
    return conform(records.with_columns(record_id.alias("record_id")), RawGames)


def _fnv_state(prefix: str) -> np.uint64:
    """FNV-1a state after the bytes of `prefix` (stable_hash's hash when nothing follows)."""
    state = _FNV_OFFSET
    with np.errstate(over="ignore"):
        for byte in prefix.encode("utf-8"):
            state = (state ^ np.uint64(byte)) * _FNV_PRIME
    return state


def prefixed_stable_hash(prefix: str, suffixes: pl.Series) -> pl.Series:
    """stable_hash(prefix + suffix) for every suffix, with the shared prefix hashed once."""
    return continue_stable_hash(np.full(len(suffixes), _fnv_state(prefix), dtype=np.uint64), suffixes)


def continue_stable_hash(states: np.ndarray, suffixes: pl.Series) -> pl.Series:
    """Continue FNV-1a from per-row states over each suffix's bytes (equal to stable_hash of prefix + suffix).

    FNV-1a is a left fold over the bytes, so rows that share a prefix share the state after it;
    only the short suffixes ('line:position') are walked, byte position by byte position.
    """
    suffixes = suffixes.cast(pl.Utf8).fill_null("")
    array = pa.compute.cast(suffixes.to_arrow(), pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    hashes = states.astype(np.uint64, copy=True)
    if n:
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + n + 1]
        data = array.buffers()[2]
        data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        data = np.concatenate([data, np.zeros(1, np.uint8)])  # a readable byte past the end for the masked gathers
        lengths = np.diff(offsets)
        with np.errstate(over="ignore"):
            for position in range(int(lengths.max(initial=0))):
                active = lengths > position
                byte = data[np.where(active, offsets[:-1] + position, len(data) - 1)].astype(np.uint64)
                hashes = np.where(active, (hashes ^ byte) * _FNV_PRIME, hashes)
    return pl.Series("record_id", hashes, dtype=pl.UInt64)


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
