"""Streaming reads of compressed PGN dumps: a .pgn.zst is decompressed and parsed block by block.

The in-memory path (decoding.decompress_dump, then the batch reader) holds the whole decompressed
file; this one holds one block of it and the PGN piece being filled (pgn.stream_pieces), with the
same caps and the same outcome: the same records, and the same single record with the same reason
for a file beyond MAX_DECOMPRESSED_BYTES or MAX_LINES_PER_FILE, a corrupt stream, an empty or a
binary file. Files that are not UTF-8 (or are UTF-16) need whole-file decisions about their encoding
(decoding.utf8_lf_bytes_detected): for them the stream reports NotStreamable, and the caller falls
back to the in-memory path, which is what they got before (and reads the whole file).

The compressed file itself is read as the stream goes when the caller passes a file object (a
common.DumpFile from ingest.dumps.read_month or read_file, opened with ObjectStore.open): then it is never
held whole either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import polars as pl

from pipeline.formats.common import DumpTooLarge, StorageReadError, UnreadableDump
from pipeline.formats.decoding import (
    EMPTY_FILE,
    MAX_DECOMPRESSED_BYTES,
    MAX_LINES_PER_FILE,
    Utf8Stream,
    _too_large,
    _utf16_codec,
    binary_problem,
    empty_problem,
    line_cap_message,
    looks_binary,
)
from pipeline.formats.pgn import parse_pgn_stream

# Decompressed bytes read at a time (with the PGN piece being filled and the one being parsed, about
# what is held); the head decides UTF-16 and binary content (4 KB and 64 KB of it).
STREAM_BLOCK = 1 << 20
_HEAD = 65536
_BOM = b"\xef\xbb\xbf"


class NotStreamable(Exception):
    """The file's encoding needs the whole file (not UTF-8, or UTF-16): read it in memory instead."""


def zstd_blocks(source: bytes | BinaryIO, limit: int | None = None) -> Iterator[bytes]:
    """The decompressed content of a zstd stream in blocks; DumpTooLarge past `limit` bytes (default
    MAX_DECOMPRESSED_BYTES), UnreadableDump when the stream is corrupt (the messages of decoding.decompress_dump).

    `source` is the compressed bytes or a binary file object, read sequentially as the blocks are
    taken (only the codec's buffer of it is held) and left open: whoever opened it closes it.
    """
    limit = MAX_DECOMPRESSED_BYTES if limit is None else limit
    try:
        import zstandard  # optional: preferred when installed, as in decoding._zstd_decompress
    except ImportError:
        zstandard = None
    total = 0
    try:
        if zstandard is not None:
            reader = zstandard.ZstdDecompressor().stream_reader(source, closefd=False)
        else:
            import pyarrow as pa

            if not pa.Codec.is_available("zstd"):
                raise UnreadableDump("cannot read .zst: neither zstandard nor pyarrow's zstd codec is available")
            raw = (
                pa.BufferReader(source)
                if isinstance(source, (bytes, bytearray, memoryview))
                else pa.PythonFile(_Borrowed(source), mode="r")
            )
            reader = pa.CompressedInputStream(raw, "zstd")
        with reader:
            while True:
                # Never more than limit + 1 bytes in all, as the in-memory read.
                block = reader.read(min(STREAM_BLOCK, limit + 1 - total))
                if not block:
                    return
                total += len(block)
                if total > limit:
                    raise _too_large(limit)
                yield bytes(block)
    except (UnreadableDump, StorageReadError):
        raise
    except Exception as error:  # any codec failure means the file content is bad, not the code
        raise UnreadableDump(f"corrupt zstd stream: {error}") from error


class _Borrowed:
    """A caller's file object, read through but never closed (closing the codec's stream closes its source)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        try:
            return self._handle.read(size)
        except Exception as error:  # the store failed, not the dump: never "corrupt zstd stream"
            raise StorageReadError(f"cannot read the dump: {error}") from error

    def close(self) -> None:
        self.closed = True


def read_pgn_zst(source: bytes | BinaryIO, event_key: str) -> tuple[pl.DataFrame, str]:
    """(records as pgn.parse_pgn_batch gives them for one file, 'utf-8') of a .pgn.zst, streamed.

    `source`: the compressed bytes, or a binary file object (ObjectStore.open), which is read as the
    stream goes, so that neither the compressed nor the decompressed file is ever held whole.

    Raises what read_dumps reports as the file's single record, in its order: the decompression
    problems, the line cap, an empty file, binary content; NotStreamable for other encodings.
    """
    text = _Text(zstd_blocks(source))
    records = parse_pgn_stream(text.blocks(), event_key)
    text.finish()
    return records, "utf-8"


class _Text:
    """The UTF-8 LF text of a decompressed stream, block by block, with the checks read_dumps makes on the whole.

    Problems are collected while reading and raised by `finish`, in read_dumps' order, once the
    whole stream was read (the decompression problems end the reading at once). Past the line cap,
    or in binary content, nothing more is handed on to the parser.
    """

    def __init__(self, raw: Iterator[bytes]) -> None:
        self.raw = raw
        self.newlines = 0
        self.returns = 0
        self.size = 0
        self.all_space = True
        self.binary = False
        self.head = b""  # the text's first bytes (binary_problem tells compressed data by them)
        self.start = b""  # the stream's first bytes, BOM and all (empty_problem)
        self.utf8: Utf8Stream | None = None
        self.finished = False

    @property
    def over_line_cap(self) -> bool:
        return self.size > MAX_LINES_PER_FILE and max(self.newlines, self.returns) > MAX_LINES_PER_FILE

    def blocks(self) -> Iterator[bytes]:
        head = bytearray()
        started = False
        carry = b""  # a CR that ended the last block: a CRLF may span two blocks
        for block in self.raw:
            self._count(block)
            if not started:
                head += block
                if len(head) < _HEAD + len(_BOM):
                    continue
                block, head, started = self._open(bytes(head)), bytearray(), True
            block, carry = carry + block, b""
            if block.endswith(b"\r"):
                block, carry = block[:-1], b"\r"
            text = self._text(block)
            if text:
                yield text
        if not started:  # the whole stream is shorter than the head: it is the last block
            carry = self._open(bytes(head))
        text = self._text(carry)
        if text:
            yield text
        if self.utf8 is not None and not self._skipping() and not self.utf8.finished():
            raise NotStreamable("not UTF-8")
        self.finished = True

    def _count(self, block: bytes) -> None:
        self.size += len(block)
        self.newlines += block.count(b"\n")
        if b"\r" in block:
            self.returns += block.count(b"\r")
        if self.all_space and not block.isspace():
            self.all_space = False

    def _open(self, head: bytes) -> bytes:
        """The start of the stream: BOM dropped; UTF-16 is not streamed; binary content is noted."""
        self.start = head
        data = head[len(_BOM) :] if head.startswith(_BOM) else head
        if _utf16_codec(data) is not None:
            raise NotStreamable("UTF-16")
        self.binary = looks_binary(data)
        self.head = data[:16]
        return data

    def _skipping(self) -> bool:
        """The file will be one record (binary, or beyond the line cap): its text is not parsed."""
        return self.binary or self.over_line_cap

    def _text(self, block: bytes) -> bytes:
        if self._skipping():
            return b""
        if not block.isascii() or (self.utf8 is not None and self.utf8.pending):
            self._validate(block)
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return block

    def _validate(self, block: bytes) -> None:
        if self.utf8 is None:
            self.utf8 = Utf8Stream()
        if not self.utf8.feed(block):
            raise NotStreamable("not UTF-8")

    def finish(self) -> None:
        """Raise the file's problem, if it has one (the stream has been read to its end)."""
        assert self.finished
        if self.over_line_cap:
            raise DumpTooLarge(line_cap_message(MAX_LINES_PER_FILE))
        if self.size <= len(self.start):  # the whole stream is its start: what an in-memory read would say
            empty = empty_problem(self.start)
            if empty is not None:
                raise UnreadableDump(empty)
        elif self.all_space:
            raise UnreadableDump(f"{EMPTY_FILE}: only blank lines")
        if self.binary:
            raise UnreadableDump(binary_problem(self.head))
