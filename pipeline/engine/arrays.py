"""The rating list's columns as NumPy arrays and back, through their Arrow buffers (no copy where Arrow allows).

The engine (pipeline/engine/period.py) reads a list's columns once, works on them with NumPy gathers and
scatters on the players' positions, and builds the next list's columns from the arrays. A missing
value is a False in a `valid` mask beside its array (None: none missing). Strings are kept as Arrow
string views (16 bytes a value, the short ones inline), so a month written at 300,000 positions is a
NumPy scatter; the pools (a list of structs per player) as their offsets and flat entries.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

_NEWEST = pl.CompatLevel.newest()
_ARROW_TYPES = {
    np.dtype(np.int16): pa.int16(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.uint64): pa.uint64(),
    np.dtype(np.float64): pa.float64(),
}


def arrow_of(series: pl.Series) -> pa.Array:
    """The series as one Arrow array, strings as string views (Polars' own layout: no copy)."""
    if series.n_chunks() > 1:
        series = series.rechunk()
    array = series.to_arrow(compat_level=_NEWEST)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _bits(buffer: pa.Buffer | None, offset: int, length: int) -> np.ndarray:
    raw = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little", count=offset + length)[offset:].view(bool)


def _valid(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return _bits(array.buffers()[0], array.offset, len(array))


def numbers(column: pl.Series | pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, valid) of an integer or float column, read-only; values under a missing entry are unspecified."""
    array = arrow_of(column) if isinstance(column, pl.Series) else column
    dtype = np.dtype(array.type.to_pandas_dtype())
    values = np.frombuffer(array.buffers()[1], dtype=dtype, count=array.offset + len(array))[array.offset :]
    return values, _valid(array)


def bools(series: pl.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, valid) of a Boolean column."""
    array = arrow_of(series)
    return _bits(array.buffers()[1], array.offset, len(array)), _valid(array)


def _bitmap(valid: np.ndarray | None) -> pa.Buffer | None:
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def number_arrow(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """An Arrow array from its values (a NumPy integer or float array) and validity."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(_ARROW_TYPES[values.dtype], len(values), [_bitmap(valid), pa.py_buffer(values)])


def number_series(name: str, values: np.ndarray, valid: np.ndarray | None = None) -> pl.Series:
    """A column from its values (a NumPy integer or float array) and validity."""
    return pl.Series(name, number_arrow(values, valid))


def bool_series(name: str, values: np.ndarray, valid: np.ndarray | None = None) -> pl.Series:
    packed = pa.py_buffer(np.packbits(values, bitorder="little"))
    return pl.Series(name, pa.Array.from_buffers(pa.bool_(), len(values), [_bitmap(valid), packed]))


# -- strings: Arrow string views ----------------------------------------------------------------------


VIEW = np.dtype("V16")  # one Arrow string view as an opaque 16-byte item: gathers and scatters copy whole views


@dataclass
class Strings:
    """A string column as its views (VIEW items: the length and the bytes inline, or the length, a prefix, a buffer
    and an offset), the validity and the data buffers the long strings' views point into.
    """

    views: np.ndarray
    valid: np.ndarray
    buffers: list[pa.Buffer]

    @classmethod
    def of(cls, series: pl.Series) -> Strings:
        return cls.of_arrow(arrow_of(series))

    @classmethod
    def of_arrow(cls, array: pa.Array) -> Strings:
        buffers = array.buffers()
        views = np.frombuffer(buffers[1], dtype=VIEW, count=array.offset + len(array))
        valid = _valid(array)
        return cls(
            views[array.offset :],
            np.ones(len(array), dtype=bool) if valid is None else valid,
            [b for b in buffers[2:] if b is not None],
        )

    @classmethod
    def missing(cls, length: int) -> Strings:
        return cls(np.zeros(length, dtype=VIEW), np.zeros(length, dtype=bool), [])

    def arrow(self) -> pa.Array:
        views = np.ascontiguousarray(self.views)
        return pa.Array.from_buffers(
            pa.string_view(), len(views), [_bitmap(self.valid), pa.py_buffer(views), *self.buffers]
        )

    def series(self, name: str) -> pl.Series:
        return pl.Series(name, self.arrow())

    def compare(self, op: str, bound: str) -> np.ndarray:
        """`value op bound` ("<", "<=", ">" or ">=") per value, False where missing: Polars' comparison of the column
        with a string (bytewise), filled with False.
        """
        keys = self.inline_keys(len(bound.encode()))
        if keys is None:
            return _COMPARISONS[op](self.series("s"), bound).fill_null(False).to_numpy()
        return _COMPARISONS[op](keys, _inline_key(bound)) & self.valid

    def below_previous(self) -> np.ndarray:
        """Whether each value but the first is less than the one before it (bytewise), False where either is missing."""
        keys = self.inline_keys()
        if keys is not None:
            return (keys[1:] < keys[:-1]) & self.valid[1:] & self.valid[:-1]
        values = self.series("s")
        return (values.slice(1) < values.slice(0, max(len(values) - 1, 0))).fill_null(False).to_numpy()

    def inline_keys(self, width: int | None = None) -> np.ndarray | None:
        """Integers ordered as the values present are (bytewise), when all of them are `width` bytes long (None: as
        long as the first), 1 to 8; None otherwise. Values under a missing entry are unspecified.
        """
        # A month (YYYY-MM) is inline in its view: its bytes read as a big-endian integer order the values as their
        # bytes do, and a comparison is one pass over integers, not Polars' pass over 500,000 views (3 ms a month).
        views = np.ascontiguousarray(self.views)
        count = len(views)
        if not count:
            return np.zeros(0, dtype=np.uint64) if width is None or 0 < width <= 8 else None
        lengths = np.ndarray((count,), dtype="<i4", buffer=views, offset=0, strides=(16,))
        if width is None:
            first = int(np.argmax(self.valid))
            width = int(lengths[first]) if self.valid[first] else 1
        if not 0 < width <= 8 or not bool(((lengths == width) | ~self.valid).all()):
            return None
        prefix = np.ndarray((count,), dtype=">u8", buffer=views, offset=4, strides=(16,))
        return prefix >> np.uint64(64 - 8 * width)


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _inline_key(text: str) -> np.uint64:
    return np.uint64(int.from_bytes(text.encode(), "big"))


def inline_view(text: str) -> np.ndarray:
    """The string view of a short string (at most 12 bytes, e.g. a month YYYY-MM): one VIEW item."""
    data = text.encode()
    if len(data) > 12:
        raise ValueError(f"not a short string: {text!r}")
    return np.frombuffer(struct.pack("<i12s", len(data), data), dtype=VIEW).copy()


# -- the list in force, as arrays -----------------------------------------------------------------------


@dataclass
class PoolEntries:
    """The flat run of every pool's entries (month, games, half points, sum of opponents' ratings), with validity."""

    month: Strings
    games: np.ndarray
    games_valid: np.ndarray
    points_x2: np.ndarray
    points_x2_valid: np.ndarray
    opponent_rating_sum: np.ndarray
    opponent_rating_sum_valid: np.ndarray

    def __len__(self) -> int:
        return len(self.games)


def _with_valid(column: pl.Series | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values with 0 under a missing entry, valid) of a numeric column, not to be edited: without a missing entry
    the values are the column's own memory (read-only), not a copy of it.
    """
    values, valid = numbers(column)
    if valid is None:
        return values, np.ones(len(values), dtype=bool)
    return values * valid, valid


@dataclass
class Listed:
    """The columns of the list in force that a period reads, one row per player, in player_id order.

    (change, k_used, games, delisted and newly_rated are the previous period's and are not read.) The arrays are
    read, never edited: some are the frame's own memory.
    """

    ids: np.ndarray
    id_series: pl.Series
    rating: np.ndarray
    rated: np.ndarray
    k: np.ndarray
    k_known: np.ndarray
    games_total: np.ndarray
    games_total_known: np.ndarray
    inactive: np.ndarray
    birth_year: np.ndarray
    birth_year_known: np.ndarray
    birth_series: pl.Series
    ever_2400: np.ndarray
    last_played: Strings
    pending_games: np.ndarray
    pool_start: np.ndarray  # each player's pool: entries[pool_start:pool_end]
    pool_end: np.ndarray
    entries: PoolEntries

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def read(cls, frame: pl.DataFrame) -> Listed:
        """A full list (RatingList columns, none missing where the schema forbids it) as arrays."""
        rating, rated = _with_valid(frame["rating"])
        k, k_known = _with_valid(frame["k"])
        games_total, games_total_known = _with_valid(frame["games_total"])
        birth_year, birth_year_known = _with_valid(frame["birth_year"])
        pending = arrow_of(frame["pending"])
        offsets = np.asarray(pending.offsets, dtype=np.int64)
        struct_values = pending.values
        fields = {struct_values.type.field(i).name: a for i, a in enumerate(struct_values.flatten())}
        games, games_valid = _with_valid(fields["games"])
        points_x2, points_x2_valid = _with_valid(fields["points_x2"])
        opponent_rating_sum, opponent_rating_sum_valid = _with_valid(fields["opponent_rating_sum"])
        return cls(
            ids=frame["player_id"].to_numpy(),
            id_series=frame["player_id"],
            rating=rating,
            rated=rated,
            k=k,
            k_known=k_known,
            games_total=games_total,
            games_total_known=games_total_known,
            inactive=bools(frame["inactive"])[0],
            birth_year=birth_year,
            birth_year_known=birth_year_known,
            birth_series=frame["birth_year"],
            ever_2400=bools(frame["ever_2400"])[0],
            last_played=Strings.of(frame["last_played"]),
            pending_games=numbers(frame["pending_games"])[0],
            pool_start=offsets[:-1],
            pool_end=offsets[1:],
            entries=PoolEntries(
                Strings.of_arrow(fields["month"]),
                games,
                games_valid,
                points_x2,
                points_x2_valid,
                opponent_rating_sum,
                opponent_rating_sum_valid,
            ),
        )

    def merged(self, newcomers: Listed, order: np.ndarray) -> Listed:
        """The list with `newcomers` (players new to it: unrated, no month played, no pool): row i is row order[i] of
        the two lists one after the other.
        """
        if len(newcomers.entries) or newcomers.last_played.valid.any():
            raise ValueError("newcomers hold no pool and no month played")

        def both(name: str) -> np.ndarray:
            return np.concatenate([getattr(self, name), getattr(newcomers, name)])[order]

        ids, birth_year, birth_year_known = both("ids"), both("birth_year"), both("birth_year_known")
        last_played = Strings(
            np.concatenate([self.last_played.views, newcomers.last_played.views])[order],
            np.concatenate([self.last_played.valid, newcomers.last_played.valid])[order],
            self.last_played.buffers,
        )
        return Listed(
            ids=ids,
            id_series=number_series("player_id", ids),
            rating=both("rating"),
            rated=both("rated"),
            k=both("k"),
            k_known=both("k_known"),
            games_total=both("games_total"),
            games_total_known=both("games_total_known"),
            inactive=both("inactive"),
            birth_year=birth_year,
            birth_year_known=birth_year_known,
            birth_series=number_series("birth_year", birth_year, birth_year_known),
            ever_2400=both("ever_2400"),
            last_played=last_played,
            pending_games=both("pending_games"),
            pool_start=both("pool_start"),
            pool_end=both("pool_end"),
            entries=self.entries,
        )


def ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the indices start..end-1 of every range, one after the other; the range each belongs to)."""
    lengths = ends - starts
    owner = np.repeat(np.arange(len(starts)), lengths)
    firsts = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) - np.repeat(firsts - starts, lengths), owner
