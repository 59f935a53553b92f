"""The one FNV-1a 64 of the record ids and local ids (pipeline.hashing) against a plain-Python reference."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from pipeline.formats.common import record_ids
from pipeline.hashing import continue_hash, hash_state, stable_hash

_OFFSET, _PRIME, _MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a_64(text: str) -> int:
    """FNV-1a 64 as its authors define it: for each byte, xor then multiply, modulo 2^64."""
    value = _OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _PRIME) & _MASK
    return value


# The published test vectors of FNV-1a 64 (Fowler, Noll and Vo's fnv_test.c): the reference is FNV-1a itself.
@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("foobar", 0x85944171F73967E8)],
)
def test_the_reference_gives_the_published_vectors(text: str, expected: int) -> None:
    assert fnv1a_64(text) == expected


def _texts() -> list[str | None]:
    rng = random.Random(5)
    letters = "ab,- ÄöØ½ß日"
    # Lengths on both sides of the blocks the hash gathers its bytes in, and one much longer than all the others.
    lengths = [0, 1, 2, 7, 8, 63, 64, 65, 127, 128, 129, 300]
    texts: list[str | None] = ["".join(rng.choice(letters) for _ in range(rng.choice(lengths))) for _ in range(400)]
    return [*texts, None, "", "x" * 5000, "foobar"]


def test_stable_hash_is_fnv1a_64_of_each_text_null_as_empty() -> None:
    texts = _texts()
    assert stable_hash(pl.Series("t", texts)).to_list() == [fnv1a_64(t or "") for t in texts]
    assert stable_hash(pl.Series("t", [], dtype=pl.Utf8)).to_list() == []


def test_a_hash_continued_after_a_prefix_is_the_hash_of_the_whole_text() -> None:
    texts = [t or "" for t in _texts()]
    assert int(hash_state("GER/2024-01/a.pgn:")) == fnv1a_64("GER/2024-01/a.pgn:")
    states = np.array([hash_state(f"file{i % 3}:") for i in range(len(texts))], dtype=np.uint64)
    continued = continue_hash(states.copy(), pl.Series(texts))
    assert continued.tolist() == [fnv1a_64(f"file{i % 3}:{t}") for i, t in enumerate(texts)]
    # The same bytes after every state at once.
    assert hash_state("~:", states).tolist() == [fnv1a_64(f"file{i % 3}:~:") for i in range(len(texts))]


def test_record_ids_hash_line_and_position_after_the_file() -> None:
    lines = pl.Series([1, 22, 333, None, 5], dtype=pl.Int64)
    positions = pl.Series(["1", "game 2", "½", "3", None])
    states = np.array([hash_state("f.pgn:")] * 5, dtype=np.uint64)
    expected = [fnv1a_64(f"f.pgn:{line}:{position}") for line, position in zip(lines, positions, strict=True)]
    expected[3:] = [fnv1a_64("f.pgn:")] * 2  # a row without a line or a position hashes no suffix
    assert record_ids(states, lines, positions).to_list() == expected
