"""A dump's bytes to text: decompression within the caps, encodings detected, lines counted and split."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from pipeline.formats.common import DumpTooLarge, UnreadableDump

# Bounds on one dump, so that a small compressed file cannot exhaust memory (a 20 KB gzip can expand to
# 10 million lines). The ingest reads up to 8 dumps at once on a 24 GB machine, and reading a text
# dump takes a few times its size: 512 MiB of text per file keeps 8 of them well inside memory. The
# byte bound is on the text, plain or decompressed alike (a plain file beyond it is refused from its
# size, unread: text_size_problem). The line bound caps the records a file can make (the largest real
# exports seen, 250,000 PGN games, have about 3 million lines; a TRF line holds at most MAX_ROUNDS
# records). A dump above either bound is quarantined as one record whose reason names the file, the
# bound (CAP_PER_FILE: a run's summary warns of each such file) and what to do.
MAX_DECOMPRESSED_BYTES = 512 << 20
MAX_LINES_PER_FILE = 8_000_000
# A Parquet file is bounded like text: a row is a record as a line is (MAX_ROWS_PER_FILE), and its rows'
# decoded size, estimated from the file's metadata before any value is decoded and then measured as text,
# by MAX_DECOMPRESSED_BYTES. Dictionary and run-length encoding let 300 KB hold 20 million rows (about
# 700 bytes of memory each once read): the rows up to a cap are read, the others are one quarantined
# record naming the cap (tabular.parquet_cells).
MAX_ROWS_PER_FILE = MAX_LINES_PER_FILE
# What every message of a file beyond a cap says (run_plan finds the files not read whole by it in the quarantine).
CAP_PER_FILE = "the cap per file"
# What to do with a file beyond a cap: every file of a month folder is read, so parts of it are each read whole.
SPLIT_ADVICE = "split it into parts within the cap in the same month folder"
# Read from a compressed stream at a time while decompressing (the output is bounded, not the input).
_INFLATE_STEP = 16 << 20

# C0 control characters other than tab, LF, FF and CR: frequent in binary files, rare in text.
_CONTROL_BYTES = bytes(byte for byte in range(0x20) if byte not in (0x09, 0x0A, 0x0C, 0x0D))


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
        f"decompresses to more than {_size(limit)}, {CAP_PER_FILE} (MAX_DECOMPRESSED_BYTES); not read: {SPLIT_ADVICE}"
    )


def text_size_problem(size: int, limit: int | None = None) -> str | None:
    """Why a plain (not compressed) text dump of `size` bytes is not read: more text than MAX_DECOMPRESSED_BYTES, the
    cap a compressed one meets once decompressed; None within it. Told from the size alone, so that a file listed
    with its size is never read (a Parquet file is not text: its rows are capped as they are decoded).
    """
    limit = MAX_DECOMPRESSED_BYTES if limit is None else limit
    if size <= limit:
        return None
    return (
        f"is {size:,} bytes, more than {_size(limit)}, {CAP_PER_FILE} (MAX_DECOMPRESSED_BYTES); "
        f"not read: {SPLIT_ADVICE}"
    )


def _size(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MiB" if size >= 1 << 20 else f"{size:,} bytes"


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
    return f"has more than {limit:,} lines, {CAP_PER_FILE} (MAX_LINES_PER_FILE); not read: {SPLIT_ADVICE}"


def row_cap_message(first: int, rows: int, limit: int = MAX_ROWS_PER_FILE) -> str:
    """The problem of the rows of a Parquet file beyond the row cap (first: the first row not read)."""
    return (
        f"rows {first:,}-{rows:,} not read: the file has {rows:,} rows, more than {limit:,}, "
        f"{CAP_PER_FILE} (MAX_ROWS_PER_FILE): {SPLIT_ADVICE}"
    )


def decoded_cap_message(first: int, rows: int, limit: int = MAX_DECOMPRESSED_BYTES) -> str:
    """The problem of the rows of a Parquet file beyond the decoded-size cap (first: the first row not read)."""
    return (
        f"rows {first:,}-{rows:,} not read: the rows decode to more than {_size(limit)}, "
        f"{CAP_PER_FILE} (MAX_DECOMPRESSED_BYTES): {SPLIT_ADVICE}"
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


# Compressed data and archives by their magic bytes: a dump compressed but not renamed ('games.pgn' holding gzip data).
# The readers decompress gzip (.gz) and zstd (.zst), named after the format: games.pgn.gz (common.strip_compression).
_READ_COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}
_SUFFIX = {"gzip": ".gz", "zstd": ".zst"}
_ARCHIVES = {b"PK\x03\x04": "a zip archive", b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive", b"Rar!\x1a\x07": "a RAR archive"}
_NOT_READ_COMPRESSED = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}
BINARY_CONTENT = "binary content, not a text dump"


def binary_problem(head: bytes) -> str:
    """Why content looks_binary calls binary is not read, from its first bytes: compressed data named as plain text
    is said to be so, with the name that is read (or, for archives and other compressions, what to do).
    """
    for magic, codec in _READ_COMPRESSED.items():
        if head.startswith(magic):
            return (
                f"{BINARY_CONTENT}: it is {codec}-compressed data; a {codec} file is read when its name ends in "
                f"{_SUFFIX[codec]} after its format (games.pgn{_SUFFIX[codec]}, games.csv{_SUFFIX[codec]}): rename it"
            )
    for magic, what in _ARCHIVES.items():
        if head.startswith(magic):
            return f"{BINARY_CONTENT}: it is {what}, which is not read: extract its files into the month folder"
    for magic, codec in _NOT_READ_COMPRESSED.items():
        if head.startswith(magic):
            return (
                f"{BINARY_CONTENT}: it is {codec}-compressed data, which is not read: decompress it, or compress it "
                "with gzip or zstd instead (games.pgn.gz, games.pgn.zst)"
            )
    return BINARY_CONTENT


EMPTY_FILE = "empty file"
_UTF8_BOM, _UTF16_BOMS = b"\xef\xbb\xbf", (b"\xff\xfe", b"\xfe\xff")


def empty_problem(content: bytes) -> str | None:
    """'empty file' (and what the file holds, when it holds anything: only a byte-order mark, only blank lines) for
    content with no text, None for any other. Read up to the first byte that is text: never the whole of a dump.
    """
    if not content:
        return EMPTY_FILE
    bom = next((mark for mark in (_UTF8_BOM, *_UTF16_BOMS) if content.startswith(mark)), b"")
    # UTF-16 writes each blank as two bytes, one of them NUL.
    blank = re.compile(rb"[\s\x00]*" if bom in _UTF16_BOMS else rb"\s*")
    if blank.fullmatch(content, len(bom)) is None:
        return None
    if not bom:
        return f"{EMPTY_FILE}: only blank lines"
    return f"{EMPTY_FILE}: only a byte-order mark" + (" and blank lines" if len(content) > len(bom) else "")


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
    (or 'latin-1' for bytes Windows-1252 leaves undefined), or 'utf-8+windows-1252' for a file whose lines
    are some UTF-8, some legacy, each line read in its own (one stray Latin-1 byte must not garble every name,
    nor a legacy export pasted into a UTF-8 file its UTF-8 names).
    """
    codec = _utf16_codec(data)
    if codec is not None:
        try:
            text = data.decode(codec).lstrip("\ufeff")
        except UnicodeDecodeError as error:
            raise UnreadableDump(f"invalid UTF-16 text: {error}") from error
        if looks_binary(text[:65536].encode("utf-8")):
            raise UnreadableDump(BINARY_CONTENT)
        return text, codec
    if looks_binary(data):
        raise UnreadableDump(binary_problem(data))
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return _decode_not_utf8(data)


def _legacy(data: bytes) -> tuple[str, str]:
    """Windows-1252 (Latin-1 with printable characters at 0x80-0x9F), or Latin-1 when a byte is undefined there."""
    try:
        return data.decode("cp1252"), "windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _decode_not_utf8(data: bytes) -> tuple[str, str]:
    """Bytes that are not all UTF-8: a legacy file, or UTF-8 and legacy lines mixed (see _mixed_lines)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    mixed = _mixed_lines(data)
    if mixed is None:
        return _legacy(data)
    return mixed[0].decode("utf-8"), mixed[1]


def _not_utf8_as_utf8(data: bytes) -> tuple[bytes, str]:
    """_decode_not_utf8's text as UTF-8 bytes, a mixed file's without decoding it into a str."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    mixed = _mixed_lines(data)
    if mixed is None:
        text, encoding = _legacy(data)
        return text.encode("utf-8"), encoding
    return mixed


# A byte's part in UTF-8: 1 for ASCII, the length of the character a lead byte starts (2-4), 0 for a
# continuation byte, -1 for a byte UTF-8 never holds (C0, C1: overlong forms; F5-FF: beyond U+10FFFF).
_UTF8_ROLE = np.array([1] * 128 + [0] * 64 + [-1] * 2 + [2] * 30 + [3] * 16 + [4] * 5 + [-1] * 11, dtype=np.int8)
# The second byte's range after each lead (RFC 3629 §4): E0 and F0 exclude overlong forms, ED the surrogates,
# F4 what lies beyond U+10FFFF.
_SECOND_LOW = np.full(256, 0x80, dtype=np.uint8)
_SECOND_HIGH = np.full(256, 0xBF, dtype=np.uint8)
_SECOND_LOW[[0xE0, 0xF0]] = [0xA0, 0x90]
_SECOND_HIGH[[0xED, 0xF4]] = [0x9F, 0x8F]


def _not_utf8_bytes(arr: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which of the non-ASCII bytes (at positions `high`) break UTF-8, as Python's strict decoder judges.

    Looked at only where the bytes are not ASCII: a lead byte needs its continuation bytes after it, a
    continuation byte a lead 1-3 bytes before it whose character reaches it through continuation bytes, and
    no byte may be one UTF-8 never holds.
    """
    role = _UTF8_ROLE[arr[high]]
    bad = role < 0
    reached = np.zeros(len(high), dtype=bool)
    between = np.ones(len(high), dtype=bool)  # the bytes between the byte and the one `back` before it continue
    for back in (1, 2, 3):
        before = high - back
        role_before = np.where(before >= 0, _UTF8_ROLE[arr[np.maximum(before, 0)]], 1)
        reached |= between & (role_before > back)
        between &= role_before == 0
    bad |= (role == 0) & ~reached
    leads = np.flatnonzero(role >= 2)
    at, length = high[leads], role[leads]
    for ahead in (1, 2, 3):
        position = at + ahead
        follower = arr[np.minimum(position, len(arr) - 1)]
        low = _SECOND_LOW[arr[at]] if ahead == 1 else 0x80
        high_end = _SECOND_HIGH[arr[at]] if ahead == 1 else 0xBF
        missing = (length > ahead) & ((position >= len(arr)) | (follower < low) | (follower > high_end))
        bad[leads[missing]] = True
    return bad


def _utf8_lengths(codec: str) -> np.ndarray:
    """How many bytes of UTF-8 each byte of the legacy encoding becomes."""
    return np.array([len(bytes([byte]).decode(codec, "replace").encode("utf-8")) for byte in range(256)])


# What UTF-8 lines look like in a file that is not all UTF-8: mostly letters of U+00C0-U+017F (accented Latin
# letters, C3 80-BF but x and / signs, C4, C5), or an alphabet's worth of different characters (Cyrillic, Greek, CJK).
# A Windows-1252 line is valid UTF-8 only by accident: an accented capital or ß before one of its symbols
# (`É\xa0` = C9 A0, U+0260), a character or two outside those letters, which one accident cannot add up to.
_UTF8_ALPHABET = 8


def _utf8_evidence(arr: np.ndarray, high: np.ndarray) -> bool:
    """Whether the non-ASCII bytes at `high` (those of the lines that are valid UTF-8) are real UTF-8 text, not a
    Windows-1252 line valid by accident (see _UTF8_ALPHABET): a file with no such evidence is read whole as legacy.
    """
    role = _UTF8_ROLE[arr[high]]
    leads, length = high[role >= 2], role[role >= 2]
    if len(leads) == 0:
        return False
    lead, second = arr[leads], arr[leads + 1]  # the lines are valid UTF-8: a lead's bytes are all there
    letters = ((lead == 0xC3) & (second != 0x97) & (second != 0xB7)) | (lead == 0xC4) | (lead == 0xC5)
    if 2 * int(np.count_nonzero(letters)) >= len(leads):
        return True
    key = np.zeros(len(leads), dtype=np.int64)
    for ahead in range(4):
        byte = arr[np.minimum(leads + ahead, len(arr) - 1)].astype(np.int64)
        key = (key << 8) | np.where(length > ahead, byte, 0)
    return len(np.unique(key)) >= _UTF8_ALPHABET


def _mixed_lines(data: bytes) -> tuple[bytes, str] | None:
    """(the text as UTF-8 bytes, 'utf-8+<legacy encoding>') when some lines are UTF-8 and others not; None when no
    line with a non-ASCII byte is valid UTF-8, or those lines show no UTF-8 text but an accident of Windows-1252
    (_utf8_evidence): a legacy file, read whole as _legacy reads it.

    Each line is read in the encoding it is valid in: a line that is valid UTF-8 and not ASCII is seldom Windows-1252
    (it takes an accented capital followed by a symbol, such as `É` and a no-break space, and the file's other UTF-8
    lines must show accidents rather than letters), so it is read as UTF-8, and a line that is not valid UTF-8 as
    Windows-1252 (Latin-1 when a byte is undefined there). A file of UTF-8 names with
    some games pasted in from a legacy export keeps both kinds of names, however many of each there are. NumPy over
    the non-ASCII bytes and Arrow over the lines: a file of 3 million lines takes a fraction of a second.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    high = np.flatnonzero(arr >= 0x80)
    bad = _not_utf8_bytes(arr, high)
    ends = np.flatnonzero((arr == 0x0A) | (arr == 0x0D))  # a line is its bytes and its terminator
    line_of = np.searchsorted(ends, high)
    legacy = np.zeros(len(ends) + 1, dtype=bool)
    legacy[line_of[bad]] = True
    if legacy[line_of].all() or not _utf8_evidence(arr, high[~legacy[line_of]]):
        return None
    offsets = np.concatenate(([0], ends + 1, [len(arr)])).astype(np.int64)
    lines = pa.Array.from_buffers(pa.large_binary(), len(legacy), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    mask = pa.array(legacy)
    old = pa.compute.filter(lines, mask)
    old_offsets = np.frombuffer(old.buffers()[1], dtype=np.int64)[old.offset : old.offset + len(old) + 1]
    joined = old.buffers()[2].to_pybytes()[old_offsets[0] : old_offsets[-1]]
    text, codec = _legacy(joined)
    grown = np.concatenate(([0], np.cumsum(_utf8_lengths(codec)[np.frombuffer(joined, dtype=np.uint8)])))
    new_offsets = grown[old_offsets - old_offsets[0]].astype(np.int64)
    new = pa.Array.from_buffers(
        pa.large_binary(), len(old), [None, pa.py_buffer(new_offsets), pa.py_buffer(text.encode("utf-8"))]
    )
    fixed = pa.compute.replace_with_mask(lines, mask, new)
    fixed_offsets = np.frombuffer(fixed.buffers()[1], dtype=np.int64)[fixed.offset : fixed.offset + len(fixed) + 1]
    content = fixed.buffers()[2].to_pybytes()[fixed_offsets[0] : fixed_offsets[-1]]
    return content, f"utf-8+{codec}"


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
        raise UnreadableDump(binary_problem(data))
    elif not data.isascii() and not is_utf8(data):
        data, encoding = _not_utf8_as_utf8(data)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data, encoding


def split_lines(text: str) -> list[str]:
    """Lines on CR, LF or CRLF only; str.splitlines would also split on Latin-1's U+0085 and friends."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the terminator of the last line does not open another line
    return lines
