"""Parquet IO manager over pipeline.storage.ObjectStore: one file per asset and month, range outputs streamed."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal, overload

import dagster as dg
import polars as pl
from pydantic import Field

from assets.lineage import column_lineage
from assets.metadata import Metadata, pandera_model_of, validate
from assets.resources import ROOT_DESCRIPTION, ObjectStoreResource
from pipeline.storage import ObjectStore, redact_url

# Months computed but not yet written, per output: enough to overlap writing with computing.
MAX_PENDING_WRITES = 1


def table_key(asset_path: Sequence[str], month: str | None) -> str:
    """Object-store key of an asset's month: <asset key path>/<YYYY-MM>.parquet, or <asset>.parquet unpartitioned."""
    base = "/".join(asset_path)
    return f"{base}.parquet" if month is None else ObjectStore.table_key(base, month)


class MonthStream:
    """An iterable of (month, frame) pairs that the IO manager writes one by one.

    A plain generator cannot be returned from an asset: Dagster would iterate it as the asset's own
    event stream. Wrapping it lets a range run compute, write and drop one month at a time.
    """

    def __init__(self, pairs: Iterable[tuple[str, pl.DataFrame]]):
        self._pairs = pairs

    def __iter__(self) -> Iterator[tuple[str, pl.DataFrame]]:
        return iter(self._pairs)


@overload
def split_stream(
    months: Sequence[str], compute: Callable[[str], tuple[pl.DataFrame, ...]], outputs: Literal[2]
) -> tuple[MonthStream, MonthStream]: ...
@overload
def split_stream(
    months: Sequence[str], compute: Callable[[str], tuple[pl.DataFrame, ...]], outputs: Literal[3]
) -> tuple[MonthStream, MonthStream, MonthStream]: ...
@overload
def split_stream(
    months: Sequence[str], compute: Callable[[str], tuple[pl.DataFrame, ...]], outputs: int
) -> tuple[MonthStream, ...]: ...
def split_stream(
    months: Sequence[str], compute: Callable[[str], tuple[pl.DataFrame, ...]], outputs: int
) -> tuple[MonthStream, ...]:
    """One MonthStream per output of a multi_asset, computing each month once.

    Dagster stores a multi_asset's outputs one after the other, so whichever output is written first
    drives the computation and the months of the other outputs wait in a buffer until their turn.
    """
    pending = iter(months)
    buffers: list[deque[tuple[str, pl.DataFrame]]] = [deque() for _ in range(outputs)]

    def advance() -> bool:
        month = next(pending, None)
        if month is None:
            return False
        frames = compute(month)
        if len(frames) != outputs:
            raise ValueError(f"expected {outputs} frames for {month}, got {len(frames)}")
        for buffer, frame in zip(buffers, frames, strict=True):
            buffer.append((month, frame))
        return True

    def side(index: int) -> Iterator[tuple[str, pl.DataFrame]]:
        while True:
            if not buffers[index] and not advance():
                return
            yield buffers[index].popleft()

    return tuple(MonthStream(side(i)) for i in range(outputs))


class MonthlyFrames(Mapping[str, pl.DataFrame]):
    """Read-only month -> DataFrame view of a partitioned asset's stored months; each month is read on access."""

    def __init__(self, store: ObjectStore, asset_path: Sequence[str], months: Sequence[str]):
        self._store = store
        self._path = list(asset_path)
        self._months = list(months)

    def __getitem__(self, month: str) -> pl.DataFrame:
        if month not in self._months:
            raise KeyError(month)
        key = table_key(self._path, month)
        if not self._store.exists(key):
            raise FileNotFoundError(
                f"{'/'.join(self._path)} has no stored partition {month} ({redact_url(self._store.url(key))}); "
                f"materialize {'/'.join(self._path)} for {month} first"
            )
        return self._store.read_parquet(key)

    def __contains__(self, month: object) -> bool:
        return month in self._months

    def __iter__(self) -> Iterator[str]:
        return iter(self._months)

    def __len__(self) -> int:
        return len(self._months)

    def __repr__(self) -> str:
        span = f"{self._months[0]}..{self._months[-1]}" if self._months else "no months"
        return f"MonthlyFrames({'/'.join(self._path)}, {span})"


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores each asset month as <root>/<asset>/<YYYY-MM>.parquet (atomic writes) and loads inputs lazily.

    Outputs may be a DataFrame (one month, or an unpartitioned asset), a dict month -> DataFrame, or a
    MonthStream of (month, DataFrame) pairs for range runs. Partitioned inputs load as a read-only
    month -> DataFrame mapping that reads each month only when the asset asks for it.
    """

    # The same store resource the assets use: one root, configured once.
    store: ObjectStoreResource = Field(default_factory=ObjectStoreResource, description=ROOT_DESCRIPTION)

    def _store(self) -> ObjectStore:
        return self.store.store()

    # -- output --------------------------------------------------------------------------------
    def handle_output(self, context: dg.OutputContext, obj: object) -> None:
        store = self._store()
        path = list(context.asset_key.path)
        model = pandera_model_of(context.definition_metadata or {})

        def validate_and_write(frame: pl.DataFrame, key: str, what: str) -> None:
            # Every table is checked against its Pandera model (schemas/) before it is stored.
            if model is not None:
                validate(model, frame, what)
            store.write_parquet(frame, key)

        if not context.has_asset_partitions:
            if not isinstance(obj, pl.DataFrame):
                raise TypeError(f"{'/'.join(path)} is not partitioned: expected a DataFrame, got {type(obj).__name__}")
            key = table_key(path, None)
            validate_and_write(obj, key, "/".join(path))
            context.add_output_metadata({"dagster/row_count": obj.height, "path": redact_url(store.url(key))})
            return

        expected = list(context.asset_partition_keys)
        lineage = column_lineage(context.asset_key)
        rows: dict[str, int] = {}
        written: deque[tuple[str, str, int, Future]] = deque()

        def finish_oldest() -> None:
            month, key, height, write = written.popleft()
            write.result()  # re-raises the write's error, if any
            month_metadata: Metadata = {
                "dagster/partition_row_count": height,
                "path": redact_url(store.url(key)),
            }
            if lineage is not None:
                month_metadata["dagster/column_lineage"] = lineage
            self._add_month_metadata(context, month, month_metadata)

        # Month M is validated, compressed and written in a thread while month M+1 is computed (Polars
        # releases the GIL); at most MAX_PENDING_WRITES frames wait, so memory stays flat.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet-writer") as writer:
            try:
                for month, frame in self._month_frames(obj, expected):
                    if month not in expected:
                        raise ValueError(
                            f"{'/'.join(path)}: month {month} is not in this run's partitions"
                            f" {expected[0]}..{expected[-1]}"
                        )
                    if month in rows:
                        raise ValueError(f"{'/'.join(path)}: month {month} produced twice")
                    if not isinstance(frame, pl.DataFrame):
                        raise TypeError(f"{'/'.join(path)} {month}: expected a DataFrame, got {type(frame).__name__}")
                    key = table_key(path, month)
                    written.append(
                        (
                            month,
                            key,
                            frame.height,
                            writer.submit(validate_and_write, frame, key, f"{'/'.join(path)} {month}"),
                        )
                    )
                    rows[month] = frame.height
                    while len(written) > MAX_PENDING_WRITES:
                        finish_oldest()
            finally:
                # Also when a later month fails: the writes already started finish before the step ends.
                while written:
                    finish_oldest()
        missing = [m for m in expected if m not in rows]
        if missing:
            raise ValueError(f"{'/'.join(path)} produced nothing for {', '.join(missing)}")

        # Run-wide figures go to the run's log: as output metadata they would land on every month's
        # materialization, above the month's own figures in the UI.
        if len(rows) > 1:
            context.log.info(
                f"{'/'.join(path)}: {sum(rows.values()):,} rows over {len(rows)} months {min(rows)}..{max(rows)}"
            )

    @staticmethod
    def _month_frames(obj: object, expected: list[str]) -> Iterable[tuple[str, pl.DataFrame]]:
        if isinstance(obj, pl.DataFrame):
            if len(expected) != 1:
                raise TypeError(
                    f"one DataFrame for {len(expected)} months: return a dict month -> DataFrame or a MonthStream"
                )
            return [(expected[0], obj)]
        if isinstance(obj, Mapping):
            return obj.items()
        if isinstance(obj, MonthStream):
            return obj
        raise TypeError(f"expected a DataFrame, a dict month -> DataFrame or a MonthStream, got {type(obj).__name__}")

    @staticmethod
    def _add_month_metadata(context: dg.OutputContext, month: str, metadata: Metadata) -> None:
        # Partition-scoped metadata lands on that month's materialization only, so a 120-month run
        # shows each month's own row count and path. Outside a run (build_output_context in a unit
        # test) there is no step context: the metadata goes on the output instead.
        try:
            step = context.step_context
        except dg.DagsterInvariantViolationError:
            step = None
        if step is not None:
            step.add_asset_metadata(metadata, asset_key=context.asset_key, partition_key=month)
        elif not context.get_logged_metadata():
            context.add_output_metadata(metadata)

    # -- input ---------------------------------------------------------------------------------
    def load_input(self, context: dg.InputContext) -> Mapping[str, pl.DataFrame] | pl.DataFrame:
        store = self._store()
        path = list(context.asset_key.path)
        if context.has_asset_partitions:
            return MonthlyFrames(store, path, list(context.asset_partition_keys))
        key = table_key(path, None)
        if not store.exists(key):
            raise FileNotFoundError(f"{'/'.join(path)} is not stored yet ({redact_url(store.url(key))})")
        return store.read_parquet(key)
