"""Stable 64-bit ids (FNV-1a over UTF-8 bytes), vectorised with NumPy: same text, same id, any version."""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
# Bytes gathered per pass: the matrix of a pass is at most rows x this, however long one hostile text is.
_BLOCK = 64


def stable_hash(texts: pl.Series) -> pl.Series:
    """FNV-1a 64 of each string (null: ''); unlike Series.hash() it never changes between Polars releases."""
    hashes = continue_hash(np.full(len(texts), _FNV_OFFSET, dtype=np.uint64), texts.cast(pl.Utf8))
    return pl.Series(texts.name, hashes, dtype=pl.UInt64)


@overload
def hash_state(text: str) -> np.uint64: ...
@overload
def hash_state(text: str, state: np.ndarray) -> np.ndarray: ...
def hash_state(text: str, state: Any = _FNV_OFFSET) -> Any:
    """FNV-1a state after the bytes of `text`, from `state` (one, or an array of them: the same bytes after each):
    stable_hash(prefix + suffix) is continue_hash(hash_state(prefix), suffix).
    """
    with np.errstate(over="ignore"):
        for byte in text.encode("utf-8"):
            state = (state ^ np.uint64(byte)) * _FNV_PRIME
    return state


def continue_hash(hashes: np.ndarray, texts: pl.Series) -> np.ndarray:
    """FNV-1a continued from `hashes` (uint64, one per text) over each text's UTF-8 bytes (null: none), in place.

    FNV-1a is a left fold over the bytes, so rows that share a prefix share the state after it and only the rest is
    walked. The texts' bytes are gathered into a (width, rows) matrix a block of byte positions at a time, so that each
    byte position is a contiguous row; rows whose text has ended keep their hash.
    """
    array = pa.compute.cast(texts.cast(pl.Utf8).fill_null("").to_arrow(), pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    if n == 0:
        return hashes
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + n + 1]
    lengths = np.diff(offsets)
    longest = int(lengths.max(initial=0))
    if longest == 0:
        return hashes
    buffer = array.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    width = min(longest, _BLOCK)
    padded = np.zeros(int(offsets[-1] - offsets[0]) + width, dtype=np.uint8)  # every window stays inside
    padded[: offsets[-1] - offsets[0]] = data[offsets[0] : offsets[-1]]
    items = np.ndarray(shape=(len(padded) - width + 1,), dtype=f"V{width}", buffer=padded, strides=(1,))
    starts = offsets[:-1] - offsets[0]
    rows: np.ndarray | None = None  # None: every row (no gather of the hashes needed)
    with np.errstate(over="ignore"):
        for done in range(0, longest, width):
            if done:
                rows = np.flatnonzero(lengths > done)
            block = hashes if rows is None else hashes[rows]
            left = (lengths if rows is None else lengths[rows]) - done
            at = starts if rows is None else starts[rows]
            matrix = np.ascontiguousarray(items[at + done].view(np.uint8).reshape(len(left), width).T)
            shortest = int(left.min())
            for position in range(min(width, longest - done)):
                if position < shortest:  # every text still has bytes
                    block ^= matrix[position]
                    block *= _FNV_PRIME
                else:
                    block = np.where(left > position, (block ^ matrix[position]) * _FNV_PRIME, block)
            if rows is not None:
                hashes[rows] = block
            elif block is not hashes:
                hashes[:] = block
    return hashes
