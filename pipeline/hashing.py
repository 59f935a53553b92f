"""Stable 64-bit ids (FNV-1a over UTF-8 bytes), vectorised with NumPy: same text, same id, any version."""

from __future__ import annotations

import numpy as np
import polars as pl

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def stable_hash(texts: pl.Series) -> pl.Series:
    """FNV-1a 64 of each string; unlike Series.hash() it never changes between Polars releases."""
    texts = texts.cast(pl.Utf8).fill_null("")
    lengths = texts.str.len_bytes().to_numpy().astype(np.int64)
    n = len(texts)
    hashes = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    if n == 0:
        return pl.Series(texts.name, hashes, dtype=pl.UInt64)
    # Encode all strings as one byte buffer with their offsets (Arrow layout), then walk byte
    # position by byte position over all rows at once.
    data = np.frombuffer("".join(texts.to_list()).encode("utf-8"), dtype=np.uint8)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max())):
            rows = np.nonzero(lengths > position)[0]
            byte = data[offsets[rows] + position].astype(np.uint64)
            hashes[rows] = (hashes[rows] ^ byte) * _FNV_PRIME
    return pl.Series(texts.name, hashes, dtype=pl.UInt64)
