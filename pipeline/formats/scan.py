"""Byte-level scanning of text dumps with NumPy: line offsets, small integers, dates, and strings as zero-copy views."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

NEWLINE, SPACE, TAB = 10, 32, 9
# Bytes appended after the text so that fixed-width windows at any line start stay inside the array.
PADDING = 64
_VIEW_INLINE = 12  # Arrow string views keep strings of up to 12 bytes inline, longer ones by offset


@dataclass
class ByteLines:
    """A text (UTF-8, LF line ends) with the offsets of its lines; `arr` is the text and PADDING bytes after it.

    The bytes after the text are zeros (byte_lines), or the bytes that follow it in a larger text
    (lines_in): only windows that begin inside the text read them, and never use them.
    """

    source: bytes | bytearray  # holds the text at [begin, begin + len(arr) - PADDING)
    begin: int
    buffer: pa.Buffer  # arr's bytes for Arrow string views
    arr: np.ndarray
    starts: np.ndarray  # int64 offset of each line's first byte
    ends: np.ndarray  # int64 offset just past each line's last byte (the '\n' excluded)

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def text_length(self) -> int:
        return len(self.arr) - PADDING

    def holds(self, pattern: bytes) -> bool:
        """Whether the text (not what follows it) holds `pattern`."""
        return self.source.find(pattern, self.begin, self.begin + self.text_length) != -1

    def text(self, index: int) -> str:
        """One line as text (for the rare lines the vectorised paths leave to Python)."""
        return bytes(self.arr[self.starts[index] : self.ends[index]]).decode("utf-8")


def byte_lines(data: bytes | memoryview) -> ByteLines:
    r"""Split UTF-8, LF-only bytes into lines; a missing final '\n' is supplied. The bytes are copied once."""
    data = memoryview(data)
    ends_line = len(data) == 0 or data[-1] == NEWLINE
    padded = bytearray(len(data) + (0 if ends_line else 1) + PADDING)
    padded[: len(data)] = data
    if not ends_line:
        padded[len(data)] = NEWLINE
    return _lines(padded, 0, memoryview(padded))


def lines_in(source: bytes, begin: int, end: int) -> ByteLines:
    r"""The lines of source[begin:end], without copying them when they end with '\n' and PADDING more bytes
    follow them in `source` (the lines then keep `source` alive); else byte_lines of a copy.
    """
    if begin < end and end + PADDING <= len(source) and source[end - 1] == NEWLINE:
        return _lines(source, begin, memoryview(source)[begin : end + PADDING])
    return byte_lines(memoryview(source)[begin:end])


def _lines(source: bytes | bytearray, begin: int, view: memoryview) -> ByteLines:
    arr = np.frombuffer(view, dtype=np.uint8)
    newlines = np.flatnonzero(arr[: len(arr) - PADDING] == NEWLINE)
    starts = np.empty(len(newlines), dtype=np.int64)
    if len(newlines):
        starts[0] = 0
        starts[1:] = newlines[:-1] + 1
    return ByteLines(source, begin, pa.py_buffer(view), arr, starts, newlines.astype(np.int64, copy=False))


def windows(arr: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """(len(starts), width) bytes beginning at each start.

    Gathers one `width`-byte item per start from an overlapping view of the array (stride one byte),
    which NumPy copies item by item: about twice as fast as rows of a sliding-window view.
    """
    items = np.ndarray(shape=(len(arr) - width + 1,), dtype=f"V{width}", buffer=arr, offset=0, strides=(1,))
    return items[starts].view(np.uint8).reshape(len(starts), width)


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # the first k bytes of a word


def words16(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The 16 bytes at each start as two little-endian uint64 words; bytes at or past `lengths` (capped at 16) zeroed.

    The masks are picked word by word from a flat table of nine, which NumPy does several times
    faster than picking rows of a two-column one.
    """
    words = windows(arr, starts, 16).view("<u8")
    if lengths is None:
        return words[:, 0].copy(), words[:, 1].copy()
    low = words[:, 0] & _BYTE_MASKS.take(np.clip(lengths, 0, 8))
    high = words[:, 1] & _BYTE_MASKS.take(np.clip(lengths - 8, 0, 8))
    return low, high


def string_views(lines: ByteLines, starts: np.ndarray, lengths: np.ndarray) -> pl.Series:
    """A Polars String Series of the byte ranges [start, start + length), without copying the text.

    Builds Arrow string views (16 bytes each: the length, then the bytes inline when they fit in
    12, else a 4-byte prefix, buffer 0 and the offset) that point into the text buffer (arr's bytes).
    Ranges must start and end on UTF-8 character boundaries.
    """
    n = len(starts)
    starts = starts.astype(np.int64, copy=False)
    lengths = lengths.astype(np.int64, copy=False)
    views = np.zeros((n, 2), dtype=np.uint64)
    if n:
        low, high = words16(lines.arr, starts, np.minimum(lengths, _VIEW_INLINE))
        views[:, 0] = lengths.astype(np.uint64) | (low << np.uint64(32))
        inline = (low >> np.uint64(32)) | (high << np.uint64(32))
        by_offset = starts.astype(np.uint64) << np.uint64(32)  # buffer index 0 in the low half
        views[:, 1] = np.where(lengths <= _VIEW_INLINE, inline, by_offset)
    array = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), lines.buffer])
    return pl.Series(pl.from_arrow(array))


_ASCII_ZEROS = np.uint64(0x3030303030303030)
_DIGIT_PAIRS = np.uint64(0x00FF00FF00FF00FF)
_DIGIT_QUADS = np.uint64(0x0000FFFF0000FFFF)
_DIGIT_OCTETS = np.uint64(0x00000000FFFFFFFF)
_WORD_DIGITS = 8  # values of up to 8 digits are read as one word
_ABOVE_NINE = np.uint64(0x7676767676767676)  # 0x80 - 10 in every byte
_TOP_BITS = np.uint64(0x8080808080808080)


def parse_digits(
    arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray, max_digits: int = 15
) -> tuple[np.ndarray, np.ndarray]:
    """(value, ok) of unsigned decimal integers written with 1..max_digits digits and nothing else.

    Values of up to 8 digits are read as one word: the digits, right-aligned in it (leading zero
    digits), are combined in three multiply-shift steps (pairs, fours, eights) instead of one pass
    per digit; longer ones digit by digit.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    short = np.clip(lengths, 0, _WORD_DIGITS)
    mask = _BYTE_MASKS.take(short)
    word = windows(arr, starts, _WORD_DIGITS).view("<u8")[:, 0] & mask
    digits = word - (_ASCII_ZEROS & mask)  # no borrow when every byte is a digit
    ok = (lengths >= 1) & (lengths <= min(max_digits, _WORD_DIGITS)) & ((_not_digits(digits) & mask) == 0)
    value = np.where(ok, _word_value(digits, short), 0)
    if max_digits > _WORD_DIGITS:
        longer = np.flatnonzero(lengths > _WORD_DIGITS)
        if len(longer):
            value[longer], ok[longer] = _parse_digits_by_position(arr, starts[longer], lengths[longer], max_digits)
    return value, ok


def _not_digits(digits: np.ndarray) -> np.ndarray:
    """The top bit of every byte of the words (bytes less '0') that is no digit.

    A byte above 9 gets its top bit set by adding 0x76 (or had it already). Carries and borrows between
    bytes start only at a byte that is no digit, which is flagged itself, so the bytes before the lowest
    flag are read right.
    """
    with np.errstate(over="ignore"):
        return ((digits + _ABOVE_NINE) | digits) & _TOP_BITS


def _word_value(digits: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The number whose `count` (1-8) digits are the low bytes of each word (digit values, first digit lowest)."""
    with np.errstate(over="ignore"):
        value = digits << (np.uint64(8) * (np.uint64(8) - np.maximum(count, 1).astype(np.uint64)))
        value = ((value * np.uint64(10)) + (value >> np.uint64(8))) & _DIGIT_PAIRS
        value = ((value * np.uint64(100)) + (value >> np.uint64(16))) & _DIGIT_QUADS
        value = ((value * np.uint64(10000)) + (value >> np.uint64(32))) & _DIGIT_OCTETS
    return value.astype(np.int64)


def _parse_digits_by_position(
    arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray, max_digits: int
) -> tuple[np.ndarray, np.ndarray]:
    """parse_digits, one pass per digit position (for values too long for one word)."""
    n = len(starts)
    value = np.zeros(n, dtype=np.int64)
    width = int(min(max_digits, max(1, lengths.max())))
    digits = windows(arr, starts, width) - np.uint8(48)  # non-digits wrap around to 10 and more
    inside = np.arange(width)[None, :] < lengths[:, None]
    ok = (lengths >= 1) & (lengths <= max_digits) & np.all(~inside | (digits <= 9), axis=1)
    for position in range(width):
        value = np.where(inside[:, position], value * 10 + digits[:, position], value)
    return np.where(ok, value, 0), ok


def leading_digits(
    arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray, max_digits: int = 6
) -> tuple[np.ndarray, np.ndarray]:
    """(value, ok) of the digits a field starts with ('3.12' -> 3), at most max_digits (<= 8) of them; ok is False
    when it starts otherwise.

    One word per field: its bytes that are no digit (_not_digits), or past the field or max_digits, are flagged;
    the digits run up to the lowest flag.
    """
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    digits, count = digit_run(arr, starts, np.clip(lengths, 0, min(max_digits, _WORD_DIGITS)))
    ok = count >= 1
    return np.where(ok, _word_value(digits & _BYTE_MASKS.take(count), count), 0), ok


def digit_run(
    arr: np.ndarray, starts: np.ndarray, readable: np.ndarray | int = _WORD_DIGITS
) -> tuple[np.ndarray, np.ndarray]:
    """(the 8 bytes at each start less '0' each, as a word; how many digits they open with, at most `readable`)."""
    with np.errstate(over="ignore"):
        digits = windows(arr, starts, _WORD_DIGITS).view("<u8")[:, 0] - _ASCII_ZEROS
        flags = _not_digits(digits) | (~_BYTE_MASKS.take(readable) & _TOP_BITS)
        below_lowest_flag = (flags & (~flags + np.uint64(1))) - np.uint64(1)  # all ones when nothing is flagged
    return digits, (np.bitwise_count(below_lowest_flag) // 8).astype(np.int64)


def parse_ymd(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(days since 1970-01-01, ok) of 'YYYY.MM.DD' with '.', '-' or '/' separators; ok False otherwise."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=bool)
    window = windows(arr, starts, 10)
    digits = window - np.uint8(48)  # non-digits wrap around to 10 and more
    ok = (lengths == 10) & np.all(digits[:, [0, 1, 2, 3, 5, 6, 8, 9]] <= 9, axis=1)
    separator = window[:, 4]
    ok &= (separator == window[:, 7]) & ((separator == ord(".")) | (separator == ord("-")) | (separator == ord("/")))
    d = digits.astype(np.int32)
    year = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    month = d[:, 5] * 10 + d[:, 6]
    day = d[:, 8] * 10 + d[:, 9]
    ok &= (month >= 1) & (month <= 12) & (year >= _FIRST_YEAR)
    # The month's first day and length from a table (integer division per date cost more than the rest).
    year_month = np.where(ok, (year - _FIRST_YEAR) * 12 + month - 1, 0)
    ok &= (day >= 1) & (day <= _MONTH_LENGTH.take(year_month))
    return np.where(ok, _MONTH_FIRST_DAY.take(year_month) + day - 1, 0).astype(np.int32), ok


def days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm, integer arithmetic only)."""
    year = year - (month <= 2)
    era = np.floor_divide(year, 400)
    year_of_era = year - era * 400
    day_of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


# Days since 1970-01-01 of the first of every month of the years 1000-9999 (four digits), and the months'
# lengths: parse_ymd reads them instead of computing each date.
_FIRST_YEAR = 1000
_YEARS, _MONTHS = np.repeat(np.arange(_FIRST_YEAR, 10000), 12), np.tile(np.arange(1, 13), 10000 - _FIRST_YEAR)
_MONTH_FIRST_DAY = days_from_civil(_YEARS, _MONTHS, np.ones_like(_YEARS)).astype(np.int32)
_MONTH_LENGTH = (
    days_from_civil(_YEARS + (_MONTHS == 12), _MONTHS % 12 + 1, np.ones_like(_YEARS)) - _MONTH_FIRST_DAY
).astype(np.int32)
