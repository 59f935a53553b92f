"""The Dagster instance of `assets/runtime/dagster.yaml`.

Which directory a store's runs go to, and Dagster's SQLite storage, with its connections kept open.

Each store has its own instance unless one is named (operations.instance_dirs.instance_dir: `--dagster-home`, else
$DAGSTER_HOME, else `<store>/.dagster`), so that the UI over a store shows its runs and materializations only.

Dagster's SQLite run and event-log storages build a new SQLAlchemy engine, open the database file and
dispose of it again for every statement batch, and commit with a disk flush each time: about 5 ms
of CPU for every event a run records. A FIDE-scale backfill records about 10,000 (planned and
stored materializations, per-month check results), so the storage cost more CPU than rating the
players. The classes here are the same storages, same files and same schema (the UI, `dagster dev`
and Dagster's own CLI read them as usual), with one pooled engine per database file, kept for the
life of the process: about 1.4 ms an event. A range step's events of one kind (its planned and stored
materializations, one a month and asset, and its check evaluations, one a month and check) are stored
together, in one transaction per database: 0.59 ms an event over the fide-scale history's 13,949 (1.47 one
by one), the same rows (tests/test_instance.py compares them with Dagster's own storage's).

`RatingsInstance` makes these storages the default from the instance directory, as Dagster's own
SQLite default is (`config_defaults`), so that a `storage:` block in dagster.yaml (PostgreSQL) still
replaces them, and has Dagster hand their events over in batches.
"""

from __future__ import annotations

import os
import shutil
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import yaml
from dagster._core.events import ASSET_EVENTS, DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

from pipeline.operations.instance_dirs import (
    FROM_ENVIRONMENT,
    FROM_OPTION,
    FROM_STORE,
    instance_dir,
    store_instance_dir,
)
from pipeline.store.lock import STORE_TAG
from pipeline.store.object_store import StoreFault, fault_line

# Instance settings shipped with the project (telemetry off), copied into an instance directory that has none.
INSTANCE_YAML = os.path.join(os.path.dirname(__file__), "dagster.yaml")


#: What to do about an instance directory that cannot be written (a read-only store holding its own instance).
UNWRITABLE_INSTANCE = "its databases (runs, events) are written to; give another with --dagster-home DIR"


def instance_home(dagster_home: str | None, store_url: str) -> str:
    """The Dagster instance directory of the store at `store_url` (redacted; absolute for a local store), made, with
    the shipped dagster.yaml when it has none: `dagster_home`, else $DAGSTER_HOME, else the store's own.
    """
    home, _ = instance_dir(dagster_home, store_url)
    try:
        os.makedirs(home, exist_ok=True)
        if os.path.isfile(INSTANCE_YAML) and not os.path.exists(os.path.join(home, "dagster.yaml")):
            shutil.copyfile(INSTANCE_YAML, os.path.join(home, "dagster.yaml"))
    except OSError as error:
        line = fault_line(home, error, "making the Dagster instance directory")
        if line is None:
            raise
        raise StoreFault(f"{line}: {UNWRITABLE_INSTANCE}") from error
    if not os.access(home, os.W_OK):
        # SQLite said only "unable to open database file", naming no path.
        raise StoreFault(f"the Dagster instance directory {home} cannot be written to: {UNWRITABLE_INSTANCE}")
    return home


def open_storages(instance: dg.DagsterInstance) -> dict[str, Any]:
    """The alembic revision (database's, code's) of each storage of the instance (runs, event log, schedules), each
    opened once, which makes its schema where there is none.

    `ratings ui` opens them before it starts `dg dev`: on a fresh instance directory its webserver and daemon would
    make the databases at the same moment, and alembic find two heads ("has more than one head present").
    """
    storages = {
        "runs": instance.run_storage,
        "events": instance.event_log_storage,
        "schedules": instance.schedule_storage,
    }
    return {name: storage.alembic_version() for name, storage in storages.items() if storage is not None}


def other_stores(instance: dg.DagsterInstance, store_url: str) -> list[str]:
    """The stores other than `store_url` whose runs the instance holds (by the runs' ratings/store tag), sorted.

    An instance shared by several stores shows their materializations of the same assets as one history.
    """
    values = {
        value for key, found in instance.get_run_tags(tag_keys=[STORE_TAG]) if key == STORE_TAG for value in found
    }
    return sorted(values - {store_url})


def instance_notes(instance: dg.DagsterInstance, home: str, source: str, store_url: str, shown: int = 3) -> list[str]:
    """What a command over the store at `store_url` says of the instance it uses (`home`, from `source`): that it
    also holds other stores' runs (an instance is never shared silently), and that the store's own instance
    exists elsewhere (its earlier runs are there, not in `home`).
    """
    notes = []
    others = other_stores(instance, store_url)
    if others:
        named = ", ".join(others[:shown]) + (f" and {len(others) - shown} more" if len(others) > shown else "")
        remedy = {
            FROM_ENVIRONMENT: "unset DAGSTER_HOME to give each store its own instance",
            FROM_OPTION: "without --dagster-home each store has its own instance",
        }.get(source, "the store was moved or copied with its instance")
        notes.append(
            f"NOTE: the Dagster instance {home} ({source}) also holds the runs of {named}: the UI over it shows "
            f"their runs and materializations beside this store's ({remedy})"
        )
    own = store_instance_dir(store_url)
    if source != FROM_STORE and os.path.isdir(own) and os.path.abspath(home) != own:
        notes.append(
            f"NOTE: the store's own Dagster instance {own} holds its runs without --dagster-home and DAGSTER_HOME; "
            f"this command uses {home} ({source})"
        )
    return notes


# Events Dagster hands the storage together (RatingsInstance._get_event_batch_size): a run's planned materializations,
# and the materializations of one asset over a month range, one a month.
EVENT_BATCH_SIZE = 1000

# Event-log databases whose engines a process keeps open: one per run (the UI reads many runs), plus
# the cross-run index. Older ones are closed.
OPEN_EVENT_LOG_SHARDS = 16

_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def _forget_parent_connections() -> None:
    """In a forked child, drop the parent's pooled connections without closing them (SQLite's rule for fork)."""
    for engine in list(_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_parent_connections)


def _skip_commit_flush_in_wal(dbapi_connection: Any, _record: Any) -> None:
    # In WAL mode, synchronous=NORMAL cannot corrupt the database: it only skips the flush of each
    # commit, so a power cut (not a crash of the process) may lose the last events. Dagster makes its
    # databases WAL; one still in rollback mode keeps Dagster's full flush.
    (journal_mode,) = dbapi_connection.execute("PRAGMA journal_mode").fetchone()
    if str(journal_mode).lower() == "wal":
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def pooled_sqlite_engine(conn_string: str) -> Engine:
    """An engine for one SQLite file whose connections stay open between uses (any thread may use them)."""
    engine = create_engine(
        conn_string,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )
    event.listen(engine, "connect", _skip_commit_flush_in_wal)
    _ENGINES.add(engine)
    return engine


@dataclass
class Batch:
    """A batch of events being stored: the thread storing it, and each database's connection in its transaction."""

    thread: int
    transactions: ExitStack
    connections: dict[str, Connection] = field(default_factory=dict)


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log, with the engines of the last databases used kept open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        # Set before Dagster's constructor, which already writes to the index database.
        self._shard_engines: OrderedDict[str, Engine] = OrderedDict()
        self._tables_present: set[str] = set()
        self._asset_key_columns_present: set[str] = set()
        self._batch: Batch | None = None  # the batch being stored, if any
        self._held: list[EventLogEntry] = []  # check evaluations waiting for the step's next other event
        self._held_lock = threading.Lock()
        super().__init__(base_dir, inst_data=inst_data)

    # Dagster asks the index database about its own schema for every check result and asset event (does the
    # checks table exist, has the asset-key table a column), building a new engine for each table question:
    # about 0.6 ms of CPU an event, some 4 s of the 204-month backfill. A table or column once there stays
    # (migrations add them; wipe forgets), so only what is present is remembered; an absent one is asked again.
    def has_table(self, table_name: str) -> bool:
        if table_name not in self._tables_present:
            if not super().has_table(table_name):
                return False
            self._tables_present.add(table_name)
        return True

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        if column_name not in self._asset_key_columns_present:
            if not super()._has_asset_key_col_on_connection(conn, column_name):
                return False
            self._asset_key_columns_present.add(column_name)
        return True

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]) -> Any:
        return cls(inst_data=inst_data, **config_value)

    def store_event(self, event: EventLogEntry) -> None:
        # A range step's check evaluations come one by one (one a month and check, about 4,000 a chain), each stored
        # by Dagster in three transactions; they wait here for the step's next other event (its output or its end),
        # then go in one transaction per database.
        if event.run_id and event.dagster_event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            with self._held_lock:
                self._held.append(event)
                full = len(self._held) >= EVENT_BATCH_SIZE
            if full:
                self._store_held()
            return
        self._store_held()
        super().store_event(event)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """What store_event stores for each event, in one transaction per database rather than one per statement.

        Dagster hands over a run's planned materializations and the materializations of each asset of a range step
        (one a month) as batches (RatingsInstance._get_event_batch_size); its own version stores them one by one.
        """
        self._store_held()
        if len({e.run_id for e in events}) == 1 and all(e.dagster_event_type in ASSET_EVENTS for e in events):
            self._store_asset_events(events)
        else:
            self._store_together(events)

    def _store_asset_events(self, events: Sequence[EventLogEntry]) -> None:
        """store_event's rows for one run's asset events, the asset's row of the index written once for each kind of
        event rather than once for each event (it holds, column by column, what the last event setting that column
        wrote, and each kind of event sets the same columns).
        """
        rows = [self._event_to_row(e) for e in events]
        last_of_kind = {(e.get_dagster_event().asset_key, e.dagster_event_type): i for i, e in enumerate(events)}
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        with self.index_transaction() as conn:
            inserted = SqlEventLogStorageTable.insert().returning(
                SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
            )
            ids = [row[0] for row in conn.execute(inserted, rows)]
            self._store_asset_event_tags(conn, events, ids)
            for i in sorted(last_of_kind.values()):
                self._store_asset_event(conn, events[i], ids[i])

    def _store_held(self) -> None:
        with self._held_lock:  # any thread may store events: each held one is taken once
            held, self._held = self._held, []
        if held:
            self._store_together(held)

    def _store_together(self, events: Sequence[EventLogEntry]) -> None:
        with self._db_lock, ExitStack() as transactions:
            self._batch = Batch(threading.get_ident(), transactions)
            try:
                for event in events:
                    super().store_event(event)
            finally:
                self._batch = None

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        batch = self._batch
        if batch is not None and batch.thread == threading.get_ident():
            # Storing a batch: every statement on a database shares one transaction, committed when the batch ends.
            if shard not in batch.connections:
                batch.connections[shard] = batch.transactions.enter_context(self._transaction(shard))
            yield batch.connections[shard]
            return
        # Dagster's lock makes one connection at a time per storage, as in its own _connect.
        with self._db_lock, self._transaction(shard) as conn:
            yield conn

    @contextmanager
    def _transaction(self, shard: str) -> Iterator[Connection]:
        engine = self._shard_engines.pop(shard, None) or pooled_sqlite_engine(self.conn_string_for_shard(shard))
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
            engine.dispose()  # connections made before _initdb switched the file to WAL
        self._shard_engines[shard] = engine
        while len(self._shard_engines) > OPEN_EVENT_LOG_SHARDS:
            self._shard_engines.popitem(last=False)[1].dispose()
        with engine.connect() as conn, conn.begin():
            yield conn

    def _close_engines(self) -> None:
        with self._db_lock:
            while self._shard_engines:
                self._shard_engines.popitem()[1].dispose()

    def wipe(self) -> None:
        with self._held_lock:
            self._held.clear()
        self._close_engines()  # wipe deletes the run databases' files
        self._tables_present.clear()
        self._asset_key_columns_present.clear()
        super().wipe()

    def dispose(self) -> None:
        self._store_held()
        super().dispose()
        self._close_engines()


class PooledSqliteRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage with one engine whose connections stay open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._engine = pooled_sqlite_engine(conn_string)
        super().__init__(conn_string, inst_data=inst_data)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]) -> Any:
        return cls.from_local(inst_data=inst_data, **config_value)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        # No lock: Dagster nests these connections (a query inside a transaction); the pool hands out another.
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage layout under one directory (runs, event logs, schedules), with pooled connections."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self.base_dir = base_dir
        # Dagster's own layout of the files under the instance directory, so that the stock classes find them.
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]) -> Any:
        return cls.from_local(inst_data=inst_data, **config_value)


class RatingsInstance(dg.DagsterInstance):
    """A Dagster instance whose default storage is `PooledSqliteStorage` in the instance directory."""

    def _get_event_batch_size(self) -> int:
        # Dagster batches events only when DAGSTER_EVENT_BATCH_SIZE says so (0 by default); the pooled SQLite
        # storage stores a batch in two transactions (PooledSqliteEventLogStorage.store_event_batch).
        if "DAGSTER_EVENT_BATCH_SIZE" not in os.environ and isinstance(
            self._event_storage, PooledSqliteEventLogStorage
        ):
            return EVENT_BATCH_SIZE
        return super()._get_event_batch_size()

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}

    @staticmethod
    def config_defaults(base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        storage = ConfigurableClassData(
            __name__, PooledSqliteStorage.__name__, yaml.dump({"base_dir": base_dir}, default_flow_style=False)
        )
        return {**InstanceRef.config_defaults(base_dir), "storage": storage}
