"""Helpers shared by the dump readers: decompression, decoding, field parsing and the RawGames frame."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from pipeline.hashing import _FNV_OFFSET, _FNV_PRIME  # the record id must equal stable_hash of the key
from schemas.raw_games import RawGames
from schemas.util import conform, polars_schema

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

RAW_SCHEMA = polars_schema(RawGames)

#: Columns a format reader fills itself; the rest (month, federation, ...) come from `finish_records`.
RECORD_COLUMNS = [
    "source_line",
    "position",
    "raw_text",
    "parse_error",
    "event_id",
    "event_start",
    "date",
    "round",
    "white_id",
    "black_id",
    "white_name",
    "black_name",
    "result",
    "unplayed",
    "time_control",
    "tc_base_seconds",
    "tc_increment_seconds",
    "white_rating",
    "black_rating",
]

COMPRESSION_SUFFIXES = (".gz", ".zst")

# FIDE B.02 2024, rapid and blitz chapter (docs/regulations.md): time counted as base + 60 x increment;
# blitz "more than 3 and at most 10 minutes", rapid "more than 10 and less than 60 minutes"; standard
# from 60 minutes (§1.1, the minimum playing time). Controls of 3 minutes or less count as blitz here.
BLITZ_UP_TO_SECONDS = 10 * 60
RAPID_BELOW_SECONDS = 60 * 60
# A clock written without units ('90+30', '90', '40/90+30') has its base in minutes up to this value
# and in seconds above it ('5400+30', as PGN writes it); the increment is always in seconds. No FIDE
# standard control has a base above 150 minutes. Bases of 60-150 are ambiguous ('120+2': a 2-hour
# game or 2-minute blitz) and are read as minutes: a base of 2.5 minutes or less is mostly bullet,
# which FIDE does not rate (blitz needs more than 3 minutes for 60 moves). Units ('2 min + 2 s') win.
CLOCK_MINUTES_UP_TO = 150


# Bounds on one dump, so that a small compressed file cannot exhaust memory (a 20 KB gzip can expand to
# 10 million lines). The ingest reads up to 8 dumps at once on a 24 GB machine, and reading a text
# dump takes a few times its size: 512 MiB of text per file keeps 8 of them well inside memory. The
# line bound caps the records a file can make (the largest real exports seen, 250,000 PGN games, have
# about 3 million lines; a TRF line holds at most MAX_ROUNDS records). A dump above either bound is
# quarantined as one record whose reason names the file and the bound.
MAX_DECOMPRESSED_BYTES = 512 << 20
MAX_LINES_PER_FILE = 8_000_000
# A Parquet file is bounded like text: a row is a record as a line is (MAX_ROWS_PER_FILE), and its rows'
# decoded size, estimated from the file's metadata before any value is decoded and then measured as text,
# by MAX_DECOMPRESSED_BYTES. Dictionary and run-length encoding let 300 KB hold 20 million rows (about
# 700 bytes of memory each once read): the rows up to a cap are read, the others are one quarantined
# record naming the cap (tabular.parquet_cells).
MAX_ROWS_PER_FILE = MAX_LINES_PER_FILE
# Read from a compressed stream at a time while decompressing (the output is bounded, not the input).
_INFLATE_STEP = 16 << 20

# C0 control characters other than tab, LF, FF and CR: frequent in binary files, rare in text.
_CONTROL_BYTES = bytes(byte for byte in range(0x20) if byte not in (0x09, 0x0A, 0x0C, 0x0D))


class UnreadableDump(Exception):
    """The bytes of a dump cannot be turned into text or a table (the whole file is quarantined)."""


class DumpTooLarge(UnreadableDump):
    """A dump beyond MAX_DECOMPRESSED_BYTES or MAX_LINES_PER_FILE (quarantined whole, its name in the reason)."""


class StorageReadError(OSError):
    """Reading a DumpFile from storage failed: the store's problem, not the dump's (raised, never quarantined)."""


class DumpFile:
    """A dump in storage, opened only when its reader needs it, in place of its bytes (see read_dumps).

    A .pgn.zst is decompressed straight from `open()`'s file object, so that the compressed file is
    never held whole either; every other dump is `read()` whole, as its reader needs all of it.
    `opener` returns a new binary file object at the start of the dump each time it is called;
    `closes`: whether the readers close that object when done (False for a caller's own handle).
    """

    def __init__(self, opener: Callable[[], BinaryIO], closes: bool = True) -> None:
        self._opener = opener
        self.closes = closes

    def open(self) -> BinaryIO:
        try:
            return self._opener()
        except Exception as error:
            raise StorageReadError(f"cannot open the dump: {error}") from error

    def read(self, size: int = -1) -> bytes:
        """The dump's bytes (the first `size` of them when size >= 0)."""
        handle = self.open()
        try:
            return handle.read(size)
        except Exception as error:
            raise StorageReadError(f"cannot read the dump: {error}") from error
        finally:
            if self.closes:
                handle.close()


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
def decompress(data: bytes, compression: str | None, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Undo .gz / .zst (at most `limit` bytes out); raises UnreadableDump when the stream is corrupt, has
    bytes after its end, expands beyond the limit, or zstd is unavailable. Dumps use decompress_dump.
    """
    content, trailing = decompress_dump(data, compression, limit)
    if trailing is not None:
        raise UnreadableDump(f"corrupt gzip stream: {trailing}")
    return content


def decompress_dump(
    data: bytes, compression: str | None, limit: int = MAX_DECOMPRESSED_BYTES
) -> tuple[bytes, str | None]:
    """(content, problem with bytes after the last gzip member, or None); the output is bounded by `limit`.

    Streamed: no more than `limit` + 1 bytes are ever produced, however far the stream would expand.
    Concatenated gzip members are all read (as gzip does); bytes after the last member that are not
    gzip data lose nothing before them: they come back as a problem for the caller to report.
    """
    if compression is None:
        return data, None
    if compression == "gz":
        return _gunzip(data, limit)
    if compression == "zst":
        return _zstd_decompress(data, limit), None
    raise UnreadableDump(f"unknown compression {compression!r}")


def _too_large(limit: int) -> UnreadableDump:
    return DumpTooLarge(
        f"decompresses to more than {limit / (1 << 20):,.0f} MiB, the cap per file (MAX_DECOMPRESSED_BYTES); not read"
    )


def _gunzip(data: bytes, limit: int) -> tuple[bytes, str | None]:
    chunks: list[bytes] = []
    size = 0
    position = 0
    view = memoryview(data)
    while position < len(data):
        if data[position : position + 2] != b"\x1f\x8b":
            if position == 0:
                raise UnreadableDump("corrupt gzip stream: not a gzip file")
            if not data[position:].strip(b"\0"):
                break  # zero padding after the last member, which gzip itself accepts
            return b"".join(
                chunks
            ), f"{len(data) - position:,} bytes after the end of the gzip stream are not gzip data"
        inflater = zlib.decompressobj(wbits=31)
        member: list[bytes] = []
        member_size = 0
        try:
            pending: bytes | memoryview = view[position : position + _INFLATE_STEP]
            fed = position + len(pending)
            while True:
                piece = inflater.decompress(pending, limit + 1 - size - member_size)
                member.append(piece)
                member_size += len(piece)
                if size + member_size > limit:
                    raise _too_large(limit)
                if inflater.eof:
                    break
                pending = inflater.unconsumed_tail
                if not pending:
                    if fed >= len(data):
                        raise zlib.error("the stream ends before its end marker (truncated file)")
                    pending = view[fed : fed + _INFLATE_STEP]
                    fed += len(pending)
        except zlib.error as error:
            if position == 0:
                raise UnreadableDump(f"corrupt gzip stream: {error}") from error
            return b"".join(
                chunks
            ), f"{len(data) - position:,} bytes after the end of the gzip stream are not a valid gzip member ({error})"
        chunks.extend(member)
        size += member_size
        position = fed - len(inflater.unused_data)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), None


def _zstd_decompress(data: bytes, limit: int = MAX_DECOMPRESSED_BYTES, head: bool = False) -> bytes:
    """The content of a zstd stream (at most `limit` bytes: more raises DumpTooLarge, or is cut off when `head`)."""
    try:
        import zstandard  # optional: preferred when installed
    except ImportError:
        zstandard = None
    try:
        if zstandard is not None:
            content = zstandard.ZstdDecompressor().stream_reader(data).read(limit + 1)
        else:
            # pyarrow (a dependency anyway) reads zstd frames when the zstandard module is absent.
            import pyarrow as pa

            if not pa.Codec.is_available("zstd"):
                raise UnreadableDump("cannot read .zst: neither zstandard nor pyarrow's zstd codec is available")
            with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
                content = stream.read(limit + 1)
    except UnreadableDump:
        raise
    except Exception as error:  # any codec failure means the file content is bad, not the code
        raise UnreadableDump(f"corrupt zstd stream: {error}") from error
    if len(content) > limit:
        if head:
            return content[:limit]
        raise _too_large(limit)
    return content


def decompress_head(data: bytes, compression: str | None, size: int) -> bytes:
    """The first `size` bytes of the content (to sniff a format), never decompressing more than that."""
    if compression is None:
        return data[:size]
    if compression == "gz":
        try:
            return zlib.decompressobj(wbits=31).decompress(data, size)
        except zlib.error as error:
            raise UnreadableDump(f"corrupt gzip stream: {error}") from error
    if compression == "zst":
        return _zstd_decompress(data, size, head=True)
    raise UnreadableDump(f"unknown compression {compression!r}")


def check_line_count(content: bytes, limit: int = MAX_LINES_PER_FILE) -> None:
    """UnreadableDump when the text has more than `limit` lines (LF or CR ends; counted at C speed)."""
    if len(content) <= limit:
        return
    lines = count_byte(content, b"\n")
    if lines <= limit and b"\r" in content:  # CR ends are counted only in files that have any
        lines = max(lines, count_byte(content, b"\r"))
    if lines > limit:
        raise DumpTooLarge(line_cap_message(limit))


def line_cap_message(limit: int = MAX_LINES_PER_FILE) -> str:
    return f"has more than {limit:,} lines, the cap per file (MAX_LINES_PER_FILE); not read"


def row_cap_message(first: int, rows: int, limit: int = MAX_ROWS_PER_FILE) -> str:
    """The problem of the rows of a Parquet file beyond the row cap (first: the first row not read)."""
    return (
        f"rows {first:,}-{rows:,} not read: the file has {rows:,} rows, more than {limit:,}, "
        "the cap per file (MAX_ROWS_PER_FILE)"
    )


def decoded_cap_message(first: int, rows: int, limit: int = MAX_DECOMPRESSED_BYTES) -> str:
    """The problem of the rows of a Parquet file beyond the decoded-size cap (first: the first row not read)."""
    return (
        f"rows {first:,}-{rows:,} not read: the rows decode to more than "
        f"{f'{limit / (1 << 20):,.0f} MiB' if limit >= 1 << 20 else f'{limit:,} bytes'}, "
        "the cap per file (MAX_DECOMPRESSED_BYTES)"
    )


def count_byte(data: bytes | memoryview, byte: bytes, block: int = 4 << 20) -> int:
    """How often `byte` occurs in `data`: NumPy over cache-sized blocks, about 4 times bytes.count's speed."""
    arr = np.frombuffer(data, dtype=np.uint8)
    code = ord(byte)
    return sum(int(np.count_nonzero(arr[begin : begin + block] == code)) for begin in range(0, len(arr), block))


def looks_binary(data: bytes) -> bool:
    """True for content that is clearly not a text dump (NUL bytes or many control characters)."""
    # A stray NUL byte in a text file is not enough: only the line (record) that holds it is bad.
    sample = data[:65536]
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
    """The text of a dump (see decode_text_detected)."""
    return decode_text_detected(data)[0]


def decode_text_detected(data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8 (BOM dropped) when valid, UTF-16 when it says so, else the legacy fallback.

    The encoding is chosen per file: 'utf-8', 'utf-16-le' / 'utf-16-be' / 'utf-16', 'windows-1252'
    (or 'latin-1' for bytes Windows-1252 leaves undefined), or 'utf-8+windows-1252' for a UTF-8 file
    with a few lines in the legacy encoding (one stray Latin-1 byte must not garble every name).
    """
    codec = _utf16_codec(data)
    if codec is not None:
        try:
            text = data.decode(codec).lstrip("\ufeff")
        except UnicodeDecodeError as error:
            raise UnreadableDump(f"invalid UTF-16 text: {error}") from error
        if looks_binary(text[:65536].encode("utf-8")):
            raise UnreadableDump("binary content, not a text dump")
        return text, codec
    if looks_binary(data):
        raise UnreadableDump("binary content, not a text dump")
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return _decode_not_utf8(data)


_ASCII = bytes(range(128))
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_LINE_WITH_ESCAPED_BYTE = re.compile("[^\n\r]*[\udc80-\udcff][^\n\r]*")


def _legacy(data: bytes) -> tuple[str, str]:
    """Windows-1252 (Latin-1 with printable characters at 0x80-0x9F), or Latin-1 when a byte is undefined there."""
    try:
        return data.decode("cp1252"), "windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _decode_not_utf8(data: bytes) -> tuple[str, str]:
    """Bytes that are not all UTF-8: mostly UTF-8 with a few legacy lines, or a legacy file."""
    text = data.decode("utf-8", errors="surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    invalid = len(_ESCAPED_BYTE.findall(text))
    non_ascii = len(data.translate(None, _ASCII))  # the non-ASCII bytes
    # Bytes of valid multi-byte characters (2-4 each): clearly more UTF-8 characters than stray bytes.
    if (non_ascii - invalid) / 2 > invalid:
        fixed = _LINE_WITH_ESCAPED_BYTE.sub(
            lambda line: _legacy(line.group().encode("utf-8", "surrogateescape"))[0], text
        )
        return fixed, "utf-8+windows-1252"
    return _legacy(data[3:] if data.startswith(b"\xef\xbb\xbf") else data)


def is_utf8(data: bytes | bytearray | memoryview) -> bool:
    """Whether the bytes are valid UTF-8, as Python's strict decoder judges (no surrogates, no overlong forms).

    Arrow's validator reads 338 MB of mostly ASCII text with names in UTF-8 in about 20 ms; decoding it
    into a str only to test it took 0.4 s, 12 % of reading a large PGN export.
    """
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


class Utf8Stream:
    """is_utf8 of a stream read block by block: a character cut between two blocks is checked whole."""

    def __init__(self) -> None:
        self.pending = b""  # the start of a character the last block ended in

    def feed(self, block: bytes) -> bool:
        """Whether the text so far is UTF-8 (up to a character the block may end in the middle of)."""
        data = self.pending + block if self.pending else block
        cut = len(data) - _unfinished_character(data)
        self.pending = bytes(data[cut:])
        return is_utf8(memoryview(data)[:cut])

    def finished(self) -> bool:
        """Whether the stream ended on a whole character (call once the last block was fed)."""
        return not self.pending


def _unfinished_character(data: bytes) -> int:
    """How many bytes at the end begin a multi-byte character that needs more bytes than are there."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:  # a lead byte: 110xxxxx, 1110xxxx or 11110xxx (longer ones are never valid)
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if back < needed else 0
    return 0


def utf8_lf_bytes(data: bytes) -> bytes:
    """The bytes of a text dump as UTF-8 with LF line ends (see utf8_lf_bytes_detected)."""
    return utf8_lf_bytes_detected(data)[0]


def utf8_lf_bytes_detected(data: bytes) -> tuple[bytes, str]:
    """(bytes as UTF-8 with LF line ends, encoding as decode_text_detected names it), for the byte-level readers.

    Cheap for the common case (ASCII or valid UTF-8 with LF): no decoding, no copy.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    encoding = "utf-8"
    if _utf16_codec(data) is not None:
        text, encoding = decode_text_detected(data)
        data = text.encode("utf-8")
    elif looks_binary(data):
        raise UnreadableDump("binary content, not a text dump")
    elif not data.isascii() and not is_utf8(data):
        text, encoding = _decode_not_utf8(data)
        data = text.encode("utf-8")
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data, encoding


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


def parse_int(text: pl.Expr, dtype: PolarsDataType = pl.Int64) -> pl.Expr:
    """Whole numbers written in digits (a sign, and '.0' as float columns print '1850.0', allowed) -> integer;
    anything else (exponents such as '2e3', fractions, words) -> null.
    """
    stripped = text.cast(pl.Utf8).str.strip_chars()
    whole_float = stripped.str.extract(r"^([+-]?\d+)\.0*$", 1)
    return pl.coalesce(stripped.cast(dtype, strict=False), whole_float.cast(dtype, strict=False))


def parse_id(text: pl.Expr, dtype: PolarsDataType = pl.Int64) -> pl.Expr:
    """Ids and ranks: digits only, as written (surrounding blanks allowed); '1.5e7', '-5', '+5', '12.0' -> null."""
    stripped = text.cast(pl.Utf8).str.strip_chars()
    signed = stripped.str.starts_with("+") | stripped.str.starts_with("-")
    return pl.when(~signed).then(stripped.cast(dtype, strict=False))


def int_error(text: pl.Expr, label: str, dtype: PolarsDataType = pl.Int64, parsed: pl.Expr | None = None) -> pl.Expr:
    """Error message when a present cell does not parse as an integer, else null (`parsed`: parse_int(text, dtype), if
    at hand).
    """
    bad = text.is_not_null() & (parse_int(text, dtype) if parsed is None else parsed).is_null()
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a number", quoted(text)))


def id_error(text: pl.Expr, label: str, parsed: pl.Expr) -> pl.Expr:
    """Error message when a present id cell is not written in digits only, else null (`parsed`: parse_id(text))."""
    bad = text.is_not_null() & parsed.is_null()
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a number (an id is written in digits only)", quoted(text)))


def quoted(text: pl.Expr) -> pl.Expr:
    return pl.concat_str([pl.lit("'"), text, pl.lit("'")])


def parse_iso_date(text: pl.Expr) -> pl.Expr:
    """YYYY-MM-DD, YYYY.MM.DD or YYYY/MM/DD -> Date; unknown parts such as '??' and impossible dates -> null."""
    dashed = text.str.replace_all(".", "-", literal=True).str.replace_all("/", "-", literal=True)
    # A four-digit year first: '10.01.2024' must not be read as the year 10.
    return pl.when(dashed.str.contains(r"^\d{4}-\d{1,2}-\d{1,2}$")).then(dashed.str.to_date("%Y-%m-%d", strict=False))


# PGN writes unknown date parts as '??' ('2024.??.??', '????.??.??'): unknown, not wrong.
PGN_UNKNOWN_DATE = r"^(?:\d{4}|\?{4})[.\-/](?:\d{2}|\?{2})[.\-/](?:\d{2}|\?{2})$"


def date_error(text: pl.Expr, parsed: pl.Expr, label: str, unknown_allowed: bool = False) -> pl.Expr:
    """'<label> '<value>' is not a date' when a present value is not a valid date (PGN's '??' parts allowed)."""
    bad = text.is_not_null() & parsed.is_null()
    if unknown_allowed:
        bad = bad & ~(text.str.contains(PGN_UNKNOWN_DATE) & text.str.contains("?", literal=True))
    return pl.when(bad).then(pl.format(f"{label} {{}} is not a date", quoted(text)))


def join_errors(*messages: pl.Expr) -> pl.Expr:
    """'; '-joined non-null messages, or null when there are none."""
    joined = pl.concat_str(list(messages), separator="; ", ignore_nulls=True)
    return pl.when(joined == "").then(None).otherwise(joined)


# -- time controls ---------------------------------------------------------------------------------
def classify_time_control(base_seconds: pl.Expr, increment_seconds: pl.Expr) -> pl.Expr:
    """Classical / rapid / blitz from the time for 60 moves (base + 60 x increment, FIDE's count); null if unknown."""
    total = base_seconds + 60 * increment_seconds.fill_null(0)
    return (
        pl.when(base_seconds.is_null())
        .then(None)
        .when(total <= BLITZ_UP_TO_SECONDS)
        .then(pl.lit("blitz"))
        .when(total < RAPID_BELOW_SECONDS)
        .then(pl.lit("rapid"))
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


def parse_clock(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(base seconds, increment seconds) of a clock a person typed: parse_time_control's forms, where a
    unit-less base up to CLOCK_MINUTES_UP_TO is minutes ('90+30' = '5400+30'; '90' = 90 minutes).
    """
    base, increment = parse_time_control(text)
    unitless = ~text.str.contains(r"[^\d\s+/:]")
    in_minutes = unitless & (base <= CLOCK_MINUTES_UP_TO)
    return pl.when(in_minutes).then(base * 60).otherwise(base), increment


# -- free-text dates (one value per file, so plain Python) ------------------------------------------
_YMD = re.compile(r"(\d{4})\D{1,3}(\d{1,2})\D{1,3}(\d{1,2})")
_DMY = re.compile(r"(\d{1,2})\D{1,3}(\d{1,2})\D{1,3}(\d{4})")
_YY_MM_DD = re.compile(r"^(\d{2})\D(\d{1,2})\D(\d{1,2})$")


def parse_free_date_checked(text: str | None) -> tuple[date | None, bool]:
    """(date, impossible): `impossible` is True when the text holds a date that does not exist ('2024/02/30')."""
    if not text:
        return None, False
    text = text.strip()
    for pattern, order in ((_YMD, "ymd"), (_DMY, "dmy"), (_YY_MM_DD, "yy")):
        match = pattern.search(text)
        if not match:
            continue
        a, b, c = (int(g) for g in match.groups())
        year, month, day = (
            (a, b, c) if order == "ymd" else (c, b, a) if order == "dmy" else (2000 + a if a < 70 else 1900 + a, b, c)
        )
        try:
            return date(year, month, day), False
        except ValueError:
            return None, True
    return None, False


# -- byes written as an opponent, reasons a reader settles -----------------------------------------
# Quarantine reasons a reader decides itself (schemas.quarantine): a record whose parse_error reads
# '<reason>: <detail>' is quarantined under that reason, not as unparseable (pipeline.validate.split).
DUPLICATE_PLAYER = "duplicate_player"  # TRF: one FIDE id on two 001 lines of a file
CONFLICTING_TAGS = "conflicting_tags"  # PGN: a tag given twice in a game with different values
READER_REASONS = (DUPLICATE_PLAYER, CONFLICTING_TAGS)

# What pairing programs and the sites that publish their pairings write as the opponent of a player
# who had no game that round. A record naming one of these where a player should be, without an id,
# is an unplayed round (a bye), never a game against an invented player of that name. A whole name
# matches, ignoring case and how blanks and dots are spaced, so 'Byers, Tom' or 'Nn, Anh' never does.
# Sources: lichess broadcasts of Swiss-Manager pairings show byes as the player 'BYE'
# (lichess-org/lila#16714, which also finds FIDE ids registered as 'Bye' and 'No player' by mistake:
# hence only without an id), and lichess' relay tools drop games with [White "bye"] / [Black "bye"];
# chess-results' pairing pages write 'bye', 'not paired', and in German 'spielfrei' (also 'Freilos'
# in German club software) and in Portuguese 'não emparceirado', and 'Brett nicht besetzt' for an
# empty board in team events; FIDE C.04.1.c names the odd player's bye the pairing-allocated bye
# (SwissSys: 'PAB', program-allocated bye); FIDE TRF16 codes the half-, full- and zero-point byes
# (H, F, Z), which exports spell out ('Half-point bye', 'BYE (1 point)'); pairing and bracket tools
# print '(bye)' or '-bye-'; 'N.N.' / 'NN' (nomen nescio) is PGN's way of writing nobody. 'No opponent',
# 'Forfeit', 'unpaired' and '--' for an unpaired board come from issue 32's list, not from an export seen.
# '?' is PGN's unknown value, not a bye: such a record stays an unknown player. TRF writes its byes as
# codes in the round cells (trf._bye_records); a 001 line with a bye's name and no id (a dummy player)
# is one too.
BYE_NAME_PATTERNS = (
    r"bye",
    r"\(\s*bye\s*\)",
    r"-+\s*bye\s*-+",
    r"bye\s*\(\s*(?:1|0|½|1/2|0?\.5)\s*(?:points?|pts?\.?)?\s*\)",
    r"(?:full|half|zero|1|0|½|1/2)[\s-]*points?[\s-]*bye",
    r"pab",
    r"(?:pairing|program)[\s-]*allocated[\s-]*bye",
    r"n\.?\s*n\.?",
    r"not\s+paired",
    r"unpaired",
    r"no\s+(?:opponent|player)",
    r"forfeit",
    r"-{2,}",
    r"spielfrei",
    r"freilos",
    r"não\s+emparceirado",
    r"brett\s+nicht\s+besetzt",
)
_BYE_NAME = "(?i)^(?:" + "|".join(BYE_NAME_PATTERNS) + ")$"
# The characters a bye spelling starts and ends with, in either case; no spelling holds a comma
# (tests/test_pairing_exports.py checks both against the spellings). A reader that has a name's bytes at
# hand settles almost every name with them, and runs the pattern on the others only (pgn._names).
BYE_FIRST_CHARACTERS = "b(-10½fhzpnus"
BYE_LAST_CHARACTERS = "e)-b.ndtriso"
BYE_NAME_MAX_BYTES = 32  # the longest a spelling is in UTF-8, with room for blanks
# Formats whose reader leaves its byes to finish_batch (with_byes); TRF and PGN mark theirs where it is cheap.
_BYES_AT_FINISH = ("csv", "parquet")


def _edge_bytes(characters: str) -> np.ndarray:
    """A table of the 256 byte values: True for the first UTF-8 byte of the characters, in lower and upper case."""
    table = np.zeros(256, dtype=bool)
    table[[(variant.encode()[0]) for c in characters for variant in (c.lower(), c.upper())]] = True
    return table


BYE_FIRST_BYTES, BYE_LAST_BYTES = _edge_bytes(BYE_FIRST_CHARACTERS), _edge_bytes(BYE_LAST_CHARACTERS)
# A name's last byte is a whole character only for one-byte characters: the last ones must be such.
assert all(len(c.encode()) == 1 for c in BYE_LAST_CHARACTERS)


def bye_names(names: pl.Series) -> np.ndarray:
    """Whether each name is a bye spelling (BYE_NAME_PATTERNS; the readers trim names); False for null."""
    return names.str.contains(_BYE_NAME).fill_null(False).to_numpy()


def with_byes(records: pl.DataFrame) -> pl.DataFrame:
    """`records` (with the RECORD_COLUMNS) with unplayed 'bye' where a side without an id is named as a bye
    (BYE_NAME_PATTERNS), whatever else the reader made of the record (a result without moves reads as a
    forfeit, but there was no opponent to forfeit).
    """
    bye = np.zeros(records.height, dtype=bool)
    for side in ("white", "black"):
        named = bye_names(records[f"{side}_name"])
        if named.any():
            bye |= named & records[f"{side}_id"].is_null().to_numpy()
    if not bye.any():
        return records
    return records.with_columns(
        pl.when(pl.lit(pl.Series(bye))).then(pl.lit("bye")).otherwise(pl.col("unplayed")).alias("unplayed")
    )


# -- output ----------------------------------------------------------------------------------------
def finish_records(records: pl.DataFrame, source_file: str, federation: str, month: str, fmt: str) -> pl.DataFrame:
    """Add the landing-zone columns and the record id, fill absent columns, conform to RawGames."""
    return finish_batch(
        records.with_columns(pl.lit(0, dtype=pl.Int32).alias("file")), [source_file], [federation], month, fmt
    )


def finish_batch(
    records: pl.DataFrame, source_files: list[str], federations: list[str], month: str, fmt: str
) -> pl.DataFrame:
    """finish_records for the records of many dumps; `records.file` indexes source_files / federations."""
    missing = [
        pl.lit(None, dtype=RAW_SCHEMA.get(name, pl.Utf8)).alias(name)
        for name in RECORD_COLUMNS
        if name not in records.columns
    ]
    file = records["file"].cast(pl.Int64).to_numpy()
    records = records.with_columns(missing)
    if fmt in _BYES_AT_FINISH:
        records = with_byes(records)
    records = records.with_columns(
        pl.lit(month).alias("month"),
        pl.Series("federation", federations, dtype=pl.Utf8).gather(file),
        pl.Series("source_file", source_files, dtype=pl.Utf8).gather(file),
        pl.lit(fmt).alias("format"),
        pl.col("raw_text").fill_null(""),
    )
    # record_id = stable_hash('<source_file>:<source_line>:<position>'), the file part hashed once per file.
    states = np.array([_fnv_state(name + ":") for name in source_files], dtype=np.uint64)
    states = states[file] if len(file) else np.zeros(0, np.uint64)
    record_id = record_ids(states, records["source_line"], records["position"])
    return conform(records.with_columns(record_id), RawGames)


def record_ids(states: np.ndarray, source_line: pl.Series, position: pl.Series) -> pl.Series:
    """continue_stable_hash(states, '<source_line>:<position>' of each row), without making those strings.

    FNV-1a is a left fold over the bytes: the line's digits, then ':', then the position's bytes.
    A row whose line or position is null hashes no suffix at all (its suffix is null, read as '').
    """
    line_text, position_text = source_line.cast(pl.Utf8), position.cast(pl.Utf8)
    hashes = _continue_fnv(states.astype(np.uint64, copy=True), line_text)
    with np.errstate(over="ignore"):
        hashes ^= np.uint64(ord(":"))
        hashes *= _FNV_PRIME
    hashes = _continue_fnv(hashes, position_text)
    missing = (line_text.is_null() | position_text.is_null()).to_numpy()
    if missing.any():
        hashes[missing] = states[missing]
    return pl.Series("record_id", hashes, dtype=pl.UInt64)


def _continue_fnv(hashes: np.ndarray, texts: pl.Series) -> np.ndarray:
    """FNV-1a continued from `hashes` over each text's UTF-8 bytes (null: none), in place when it can be.

    The texts' bytes are gathered into a (width, rows) matrix at once, so that each byte position is a
    contiguous row; rows whose text has ended keep their hash.
    """
    array = pa.compute.cast(texts.fill_null("").to_arrow(), pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    if n == 0:
        return hashes
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + n + 1]
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0))
    if width == 0:
        return hashes
    buffer = array.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    padded = np.zeros(int(offsets[-1]) + width, dtype=np.uint8)  # every window of `width` bytes stays inside
    padded[: offsets[-1] - offsets[0]] = data[offsets[0] : offsets[-1]]
    items = np.ndarray(shape=(len(padded) - width + 1,), dtype=f"V{width}", buffer=padded, strides=(1,))
    matrix = np.ascontiguousarray(items[offsets[:-1] - offsets[0]].view(np.uint8).reshape(n, width).T)
    shortest = int(lengths.min())
    with np.errstate(over="ignore"):
        for position in range(width):
            if position < shortest:  # every text still has bytes
                hashes ^= matrix[position]
                hashes *= _FNV_PRIME
            else:
                hashes = np.where(lengths > position, (hashes ^ matrix[position]) * _FNV_PRIME, hashes)
    return hashes


def _fnv_state(prefix: str) -> np.uint64:
    """FNV-1a state after the bytes of `prefix` (stable_hash's hash when nothing follows)."""
    state = _FNV_OFFSET
    with np.errstate(over="ignore"):
        for byte in prefix.encode("utf-8"):
            state = (state ^ np.uint64(byte)) * _FNV_PRIME
    return state


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


def unreadable_record(
    source_file: str,
    federation: str,
    month: str,
    fmt: str,
    problem: str,
    raw_text: str = "",
    source_line: int = 1,
    position: str = "file",
) -> pl.DataFrame:
    """The single RawGames row standing for a dump that could not be read at all (or for an unreadable part of it)."""
    record = pl.DataFrame(
        {"source_line": [source_line], "position": [position], "raw_text": [raw_text], "parse_error": [problem]},
        schema={"source_line": pl.Int64, "position": pl.Utf8, "raw_text": pl.Utf8, "parse_error": pl.Utf8},
    )
    return finish_records(
        record.with_columns(pl.lit(event_key(source_file)).alias("event_id")), source_file, federation, month, fmt
    )


def preview(data: bytes, limit: int = 200) -> str:
    """A printable excerpt of unreadable bytes for the quarantine's raw_text."""
    return data[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
