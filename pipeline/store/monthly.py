"""Monthly tables as stages hand them over: stored months read on demand, computed months streamed with their model."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pandera.polars as pa
import polars as pl

from pipeline.formats.common import StorageReadError
from pipeline.months import MONTH_PATTERN
from pipeline.store.object_store import ObjectStore, fault_cause, redact_url
from schemas.games import Games
from schemas.util import empty_frame, polars_schema

Model = type[pa.DataFrameModel]


def table_key(asset_path: Sequence[str], month: str | None) -> str:
    """Object-store key of a table's month: <table path>/<YYYY-MM>.parquet, or <table path>.parquet unpartitioned."""
    base = "/".join(asset_path)
    return f"{base}.parquet" if month is None else ObjectStore.table_key(base, month)


def stored_table_months(store: ObjectStore, asset_path: Sequence[str]) -> list[str]:
    """The months a table has stored (its <table path>/<YYYY-MM>.parquet keys, not those of a folder below it), sorted:
    one listing.
    """
    prefix = "/".join(asset_path) + "/"
    names = [
        key[len(prefix) : -len(".parquet")]
        for key in store.list_files(*asset_path)
        if key.startswith(prefix) and key.endswith(".parquet") and "/" not in key[len(prefix) :]
    ]
    # A table's month is its file's name: another name (a copy, 2024-13.parquet) is no month of it.
    return [name for name in names if MONTH_PATTERN.match(name)]


class UnreadableTableError(ValueError):
    """A stored table's file cannot be read (not Parquet, cut short); the message names it."""


def store_failed(error: BaseException) -> bool:
    """Whether reading a stored table failed for the store's sake (unreachable, an I/O error, denied: fault_cause; a
    StorageReadError), not the file's: such an error is raised as it is, never unreadable_table's advice to move a
    file that may well be whole out of the store.
    """
    return isinstance(error, StorageReadError) or fault_cause(error) is not None


def unreadable_table(store: ObjectStore, key: str, error: Exception) -> UnreadableTableError:
    """The error naming `key`, which Polars' own message does not."""
    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return UnreadableTableError(
        f"{redact_url(store.url(key))} cannot be read ({first_line}): move it out of the store, or rate its month again"
    )


def months_stored(store: ObjectStore, asset_path: Sequence[str], months: Sequence[str]) -> list[str]:
    """The months of `months` for which the table is in the store, in their order: one listing, not a look per month
    (on S3 a request each).
    """
    if not months:  # nothing to list for (the summary of a run whose store failed asks so, and must not fail again)
        return []
    held = set(stored_table_months(store, asset_path))
    return [month for month in months if month in held]


def read_stored_months(
    store: ObjectStore, asset_path: Sequence[str], months: Sequence[str], model: Model | None = None
) -> dict[str, pl.DataFrame]:
    """The stored months of `months` of a table (months_stored), in their order; with `model`, each read as the model
    says: its columns in its order, each cast to its dtype, a column the month was stored without empty. A month an
    older version wrote (a column retyped or added since) then concatenates with the others.
    """
    held = months_stored(store, asset_path, months)
    frames = store.read_parquets([table_key(asset_path, month) for month in held])
    if model is not None:
        frames = [as_stored_now(frame, model) for frame in frames]
    return dict(zip(held, frames, strict=True))


def as_stored_now(frame: pl.DataFrame, model: Model) -> pl.DataFrame:
    """A stored table as this version's `model` has it: its columns in its order, each cast to its dtype, a column an
    older version stored the table without (games' also_reported_by) empty, so that it concatenates with new frames.
    """
    return with_schema(frame, polars_schema(model))


def with_schema(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """`frame`'s columns of `schema`, in its order, each cast to its dtype; one the frame lacks empty."""
    return frame.select(
        pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in schema.items()
    )


def read_stored_month(
    store: ObjectStore,
    asset_path: Sequence[str],
    month: str,
    columns: list[str] | None = None,
    optional: Sequence[str] = (),
) -> pl.DataFrame | None:
    """A stored month of a table (only `columns` when given, and those of `optional` the stored file has: columns a
    table gained after older stores were written), or None when it is not stored.
    """
    key = table_key(asset_path, month)
    if not store.exists(key):
        return None
    if columns is not None and optional:
        held = store.parquet_schema(key)
        columns = [*columns, *(name for name in optional if name in held)]
    return store.read_parquet(key, columns=columns)


def stored_games(store: ObjectStore, month: str, columns: list[str] | None = None) -> pl.DataFrame:
    """The month's validated games as stored (only `columns` when given; else every column of the Games model, one an
    older version did not store empty: as_stored_now); none where the month has no games stored.
    """
    stored = read_stored_month(store, ["games"], month, columns)
    if stored is not None:
        return stored if columns is not None else as_stored_now(stored, Games)
    return empty_frame(Games) if columns is None else empty_frame(Games).select(columns)


def stored_rows(store: ObjectStore, asset: str, month: str) -> int | None:
    """Row count of a stored month from the Parquet footer (no data read); None when it is missing."""
    key = table_key([asset], month)
    if not store.exists(key):
        return None
    return store.parquet_rows(key)


class Table:
    """One unpartitioned table and the Pandera model it must match before it is stored."""

    def __init__(self, model: Model, frame: pl.DataFrame):
        self.model = model
        self.frame = frame


class MonthStream:
    """(month, frame) pairs of one table, the Pandera model they must match, written one by one as they come.

    A plain generator cannot be returned from an asset: Dagster would iterate it as the asset's own
    event stream. Wrapping it lets a range run compute, write and drop one month at a time.
    """

    def __init__(self, model: Model, pairs: Iterable[tuple[str, pl.DataFrame]] | Mapping[str, pl.DataFrame]):
        self.model = model
        self._pairs = pairs.items() if isinstance(pairs, Mapping) else pairs

    def __iter__(self) -> Iterator[tuple[str, pl.DataFrame]]:
        return iter(self._pairs)


def stream_months(
    model: Model, months: Sequence[str], compute: Callable[[str], pl.DataFrame], report: Callable[[str, int], None]
) -> MonthStream:
    """compute(month) for each month in order, as a MonthStream; report(month, done) after each."""

    def pairs() -> Iterator[tuple[str, pl.DataFrame]]:
        for done, month in enumerate(months, start=1):
            frame = compute(month)
            report(month, done)
            yield month, frame
            # Not held while the next month is computed: the writer has it as long as it needs it.
            del frame

    return MonthStream(model, pairs())


class MonthlyFrames(Mapping[str, pl.DataFrame]):
    """Read-only month -> DataFrame view of a table's stored months; each month is read on access."""

    def __init__(self, store: ObjectStore, asset_path: Sequence[str], months: Sequence[str]):
        self._store = store
        self._path = list(asset_path)
        self._months = list(months)

    def __getitem__(self, month: str) -> pl.DataFrame:
        return self.read(month)

    def read(self, month: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """The stored month, only `columns` when given."""
        if month not in self._months:
            raise KeyError(month)
        key = table_key(self._path, month)
        if not self._store.exists(key):
            raise FileNotFoundError(
                f"{'/'.join(self._path)} has no stored partition {month} ({redact_url(self._store.url(key))}); "
                f"materialize {'/'.join(self._path)} for {month} first"
            )
        return self._store.read_parquet(key, columns=None if columns is None else list(columns))

    def __contains__(self, month: object) -> bool:
        return month in self._months

    def __iter__(self) -> Iterator[str]:
        return iter(self._months)

    def __len__(self) -> int:
        return len(self._months)

    def __repr__(self) -> str:
        span = f"{self._months[0]}..{self._months[-1]}" if self._months else "no months"
        return f"MonthlyFrames({'/'.join(self._path)}, {span})"


# Months computed but not yet written, per table: enough to overlap writing with computing.
MAX_PENDING_WRITES = 1


def write_months(
    store: ObjectStore,
    path: Sequence[str],
    stream: MonthStream,
    months: Sequence[str],
    check: Callable[[Model, pl.DataFrame, str], object],
    written: Callable[[str, str, int], None],
    footer: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Store each month of `stream` under `path` (see write_tables, `footer` in each file); written(month, key,
    rows) after each.
    """
    return write_tables(
        store,
        [(path, stream.model)],
        months,
        # map, not a generator expression: that would hold each month's frame until the next has been computed.
        map(lambda pair: (pair[0], (pair[1],)), stream),
        check,
        lambda _, month, key, rows: written(month, key, rows),
        [footer],
    )[0]


#: The footer key (key-value metadata) of a stored table holding the code version of the asset that wrote it, as the
#: Dagster instance records it too: what a run continuing the table compares where the instance has no record of it
#: (a store moved to another instance, an object store rated from a fresh machine).
CODE_VERSION_FOOTER = "ratings/code_version"


def stored_code_version(store: ObjectStore, path: Sequence[str], month: str) -> str | None:
    """The code version a stored monthly table's footer records (CODE_VERSION_FOOTER); None: no such table, or one
    written before tables recorded it.
    """
    key = table_key(path, month)
    return store.parquet_footer(key).get(CODE_VERSION_FOOTER) if store.exists(key) else None


def write_tables(
    store: ObjectStore,
    tables: Sequence[tuple[Sequence[str], Model] | None],
    months: Sequence[str],
    frames: Iterable[tuple[str, tuple[pl.DataFrame, ...]]],
    check: Callable[[Model, pl.DataFrame, str], object],
    written: Callable[[int, str, str, int], None],
    footers: Sequence[Mapping[str, str] | None] = (),
) -> list[dict[str, int]]:
    """Store each month's frames as they come, one per table ((path, model), or None: not stored), after
    check(model, frame, what); written(table index, month, key, rows) after each. Returns month -> rows per table.
    `footers`: each table's key-value metadata (by index; none where not given), in every month's file.

    Month M is checked, compressed and written in a thread while month M+1 is computed (Polars
    releases the GIL); at most MAX_PENDING_WRITES months wait, so memory stays flat whatever the range.
    Exactly `months` must come, each once.
    """
    rows: list[dict[str, int]] = [{} for _ in tables]
    pending: deque[list[tuple[int, str, str, int, Future]]] = deque()

    def check_and_write(
        model: Model, frame: pl.DataFrame, key: str, what: str, footer: Mapping[str, str] | None
    ) -> None:
        check(model, frame, what)
        store.write_parquet(frame, key, footer=footer)

    def finish_oldest() -> None:
        for index, month, key, height, write in pending.popleft():
            write.result()  # re-raises the write's error, if any
            written(index, month, key, height)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet-writer") as writer:

        def start_writes(month: str, month_frames: tuple[pl.DataFrame, ...]) -> list[tuple[int, str, str, int, Future]]:
            writes = []
            for index, (table, frame) in enumerate(zip(tables, month_frames, strict=True)):
                if table is None:
                    continue
                path, model = table
                name = "/".join(path)
                if month not in months:
                    raise ValueError(f"{name}: month {month} is not in this run's partitions {months[0]}..{months[-1]}")
                if month in rows[index]:
                    raise ValueError(f"{name}: month {month} produced twice")
                if not isinstance(frame, pl.DataFrame):
                    raise TypeError(f"{name} {month}: expected a DataFrame, got {type(frame).__name__}")
                key = table_key(path, month)
                footer = footers[index] if index < len(footers) else None
                write = writer.submit(check_and_write, model, frame, key, f"{name} {month}", footer)
                writes.append((index, month, key, frame.height, write))
                rows[index][month] = frame.height
            return writes

        try:
            for month, month_frames in frames:
                pending.append(start_writes(month, month_frames))
                # From here the writer alone holds the month's frames, until they are written: not this loop until
                # the next month has been computed (a fide-scale month's tables, 0.1 GB beside the next month's).
                del month_frames
                while len(pending) > MAX_PENDING_WRITES:
                    finish_oldest()
        finally:
            # Also when a later month fails: the writes already started finish before the step ends.
            while pending:
                finish_oldest()
    for table, table_rows in zip(tables, rows, strict=True):
        missing = [m for m in months if m not in table_rows]
        if table is not None and missing:
            raise ValueError(f"{'/'.join(table[0])} produced nothing for {', '.join(missing)}")
    return rows
