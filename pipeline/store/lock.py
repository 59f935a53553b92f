"""One writer per store: the lock a `ratings run` holds on its store, in the store itself (docs/operations.md, 5)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import posixpath
import shlex
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from pipeline.store.object_store import (
    ObjectStore,
    StoreFault,
    fault_cause,
    fault_line,
    process_alive,
    redact_url,
)

# A dot name: safe_part refuses it, so no table, report or landing-zone name can ever be this key.
LOCK_KEY = ".ratings-run.lock"
# An S3 lock is rewritten this often; one not rewritten for STALE_AFTER_SECONDS belongs to a dead or cut-off
# run (ten missed heartbeats: a slow store or a skewed clock is not taken for a dead run).
HEARTBEAT_SECONDS = 60.0
STALE_AFTER_SECONDS = 600.0
WAIT_POLL_SECONDS = 2.0
# The run tag naming a run's store (its redacted URL, absolute for a local store): the shipped dagster.yaml allows
# one run per value at a time, so runs that Dagster launches on one store queue, and the UI says which limit.
STORE_TAG = "ratings/store"
# `ratings run`'s exit code when the store is locked: EX_TEMPFAIL of sysexits.h, "try again later".
EXIT_LOCKED = 75
# The descriptors of the local locks this process holds. A flock belongs to the open file, not to a process: the
# run's worker processes are handed these (pipeline.operations.waves.run_waves), so the kernel drops the lock only
# once the last process of the run has ended, however the parent ended.
_HELD: set[int] = set()


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its object says (what a refused run prints)."""

    host: str
    pid: int
    since: str
    command: str
    token: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, since {self.since}: {self.command}"

    @classmethod
    def parse(cls, data: bytes) -> Holder | None:
        """The holder a lock object names; None for bytes that are not one (a lock being written)."""
        try:
            fields = json.loads(data.decode("utf-8"))
            return cls(
                str(fields["host"]),
                int(fields["pid"]),
                str(fields["since"]),
                str(fields["command"]),
                str(fields["token"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class StoreLocked(RuntimeError):
    """Another run holds the store's lock (a refused run prints this one line and exits with EXIT_LOCKED)."""

    def __init__(self, where: str, holder: Holder | None, who: str = ""):
        self.where, self.holder = where, holder
        who = who or (holder.describe() if holder else "a run whose lock is being written")
        super().__init__(
            f"{where} is in use by another run ({who}); not started: run again when it has finished, or add --wait"
        )


def store_tag(store: ObjectStore) -> dict[str, str]:
    """The STORE_TAG of runs over `store` (never credentials: a root holding any is refused by ObjectStore)."""
    return {STORE_TAG: redact_url(store.url())}


def current_command() -> str:
    """The command line of this process, as a person would type it (each argument redacted, at most 200 characters)."""
    words = [os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:]]
    line = " ".join(shlex.quote(redact_url(word)) for word in words)
    return line if len(line) <= 200 else line[:197] + "..."


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _precondition_failed(error: BaseException) -> bool:
    """Whether an S3 error is a failed If-None-Match/If-Match (HTTP 412), however s3fs translated it."""
    seen: BaseException | None = error
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
            return True
        if isinstance(seen, FileExistsError) or "pre-condition" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class StoreLock:
    """The lock of one store, held by this process from acquire() to release().

    Local store: a file created (O_CREAT) and held with flock, which the kernel drops when the process
    and the worker processes it hands the file to (held_lock_files) have ended, however they end (SIGKILL
    too), so a lock file nobody holds is stale by definition. S3: an object created with If-None-Match: "*"
    (one creator wins), rewritten every HEARTBEAT_SECONDS and deleted with If-Match on its ETag; it is
    stale once its process is gone on this host, or its heartbeat is older than STALE_AFTER_SECONDS, and
    taken over with If-Match on the stale ETag (one taker wins). Its process's workers cannot hold an
    object: on Linux they die with their parent (pipeline.operations.waves), elsewhere they finish their run.
    """

    def __init__(self, store: ObjectStore, command: str | None = None):
        self.store = store
        self.where = redact_url(store.url())
        self.lock_url = f"{self.where}/{LOCK_KEY}"
        self.me = Holder(socket.gethostname(), os.getpid(), _now(), command or current_command(), uuid.uuid4().hex)
        self._fd: int | None = None
        self._etag: str | None = None
        self._beating = threading.Event()
        self._heart: threading.Thread | None = None
        self.lost: str | None = None  # why an S3 lock was lost mid-run (its heartbeat found another holder)

    @property
    def path(self) -> str:
        base = self.store.base
        return os.path.join(base, LOCK_KEY) if self.store.is_local else posixpath.join(base, LOCK_KEY)

    def _content(self) -> bytes:
        return json.dumps({**self.me.__dict__, "heartbeat": _now()}, indent=1).encode("utf-8")

    # -- acquiring -------------------------------------------------------------------------------
    def try_acquire(self) -> tuple[bool, Holder | None, str | None]:
        """(acquired, the holder named by the lock object found, a note when a stale lock was taken over)."""
        return self._try_local() if self.store.is_local else self._try_object()

    def _try_local(self) -> tuple[bool, Holder | None, str | None]:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:  # a read-only store, a denied folder: said as the store's other writes say it
            line = fault_line(self.lock_url, error, "writing the run's lock")
            if line is None:
                raise
            raise StoreFault(line) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False, self._read_local_holder(), None
        try:
            # The file may have been released and unlinked between our open and our flock: we would hold a lock
            # on a name nobody sees. Only the inode at the path counts.
            if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                os.close(fd)
                return self._try_local()
        except FileNotFoundError:
            os.close(fd)
            return self._try_local()
        previous = Holder.parse(os.pread(fd, 1 << 16, 0))
        os.ftruncate(fd, 0)
        os.pwrite(fd, self._content(), 0)
        os.fsync(fd)
        self._fd = fd
        _HELD.add(fd)
        note = None
        if previous is not None:
            note = f"took over the lock of a run that ended without releasing it ({previous.describe()})"
        return True, previous, note

    def _read_local_holder(self) -> Holder | None:
        # The holder writes its name right after its flock: a moment later it is there.
        for _ in range(20):
            with contextlib.suppress(FileNotFoundError):
                with open(self.path, "rb") as handle:
                    holder = Holder.parse(handle.read())
                if holder is not None:
                    return holder
            time.sleep(0.05)
        return None

    def _put(self, **conditions: str) -> str:
        """One PUT of the lock object under `conditions` (IfNoneMatch / IfMatch); its new ETag."""
        response = self.store.fs.pipe_file(self.path, self._content(), **conditions)
        etag = response.get("ETag") if isinstance(response, dict) else None
        return etag or self.store.fs.info(self.path)["ETag"]

    def _try_object(self) -> tuple[bool, Holder | None, str | None]:
        try:
            self._etag = self._put(IfNoneMatch="*")
            return self._confirm(), None, None
        except OSError as error:
            if not _precondition_failed(error):
                raise
        try:
            info = self.store.fs.info(self.path)
            holder = Holder.parse(self.store.fs.cat_file(self.path))
        except FileNotFoundError:
            return self._try_object()  # released meanwhile
        why = self._stale(holder, info)
        if why is None:
            return False, holder, None
        try:
            self._etag = self._put(IfMatch=info["ETag"])  # only one run can replace the stale object
        except OSError as error:
            if not _precondition_failed(error):
                raise
            return False, holder, None  # another run took it over first
        who = holder.describe() if holder else "an unreadable lock"
        return self._confirm(), holder, f"took over the lock of a run that {why} ({who})"

    def _confirm(self) -> bool:
        """Read the lock back: a server that ignores conditional writes would let two runs overwrite each other."""
        holder = Holder.parse(self.store.fs.cat_file(self.path))
        if holder is None or holder.token != self.me.token:
            self._etag = None
            return False
        self._heart = threading.Thread(target=self._heartbeat, name="store-lock-heartbeat", daemon=True)
        self._heart.start()
        return True

    @staticmethod
    def _stale(holder: Holder | None, info: dict[str, Any]) -> str | None:
        """Why an S3 lock no longer belongs to a living run, or None while it does."""
        if holder is not None and holder.host == socket.gethostname() and not process_alive(holder.pid):
            return "ended without releasing it"
        stamp = info.get("LastModified")
        if isinstance(stamp, datetime):
            age = (datetime.now(UTC) - stamp).total_seconds()
            if age > STALE_AFTER_SECONDS:
                return f"sent no heartbeat for {age / 60:.0f} minutes"
        return None

    def _heartbeat(self) -> None:
        while not self._beating.wait(HEARTBEAT_SECONDS):
            try:
                self._etag = self._put(IfMatch=self._etag or "")
            except OSError as error:
                if _precondition_failed(error):
                    holder = None
                    with contextlib.suppress(Exception):
                        holder = Holder.parse(self.store.fs.cat_file(self.path))
                    self.lost = f"the lock of {self.where} was taken over ({holder.describe() if holder else 'gone'})"
                    return
            except Exception:  # noqa: BLE001 - a store hiccup: the next beat tries again, staleness allows ten
                pass

    # -- releasing -------------------------------------------------------------------------------
    def release(self) -> None:
        """Give the lock up (only our own: a lock taken over from us is left to its new holder)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            _HELD.discard(fd)
            # Unlinked while still flocked, so no run can flock this inode in between and think it holds the lock.
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    os.unlink(self.path)
            os.close(fd)
        if self._heart is not None:
            self._beating.set()
            self._heart.join()
            self._heart = None
        if self._etag is not None and self.lost is None:
            etag, self._etag = self._etag, None
            with contextlib.suppress(FileNotFoundError):
                holder = Holder.parse(self.store.fs.cat_file(self.path))
                if holder is not None and holder.token == self.me.token:
                    self._delete(etag)

    def _delete(self, etag: str) -> None:
        """Delete the lock object if it is still the one we wrote (If-Match; a server ignoring it deletes anyway)."""
        from fsspec.asyn import sync

        bucket, key, _ = self.store.fs.split_path(self.path)
        try:
            sync(self.store.fs.loop, self.store.fs._call_s3, "delete_object", Bucket=bucket, Key=key, IfMatch=etag)
        except Exception as error:  # noqa: BLE001 - botocore's ClientError, untranslated by _call_s3
            if not _precondition_failed(error):
                raise


def held_lock_files() -> list[int]:
    """The descriptors of the local store locks this process holds (for its worker processes to hold too)."""
    return sorted(_HELD)


@contextlib.contextmanager
def store_lock(store: ObjectStore, wait: bool = False, out: TextIO | None = None) -> Iterator[StoreLock]:
    """Hold `store`'s lock for the block; StoreLocked when another run holds it, or wait for it with `wait`.

    Released on every way out of the block (an exception, Ctrl-C); a killed process's lock is stale (StoreLock).
    A local store that does not exist yet is not locked: there is nothing to protect, and the run refuses it.
    """
    out = out or sys.stdout
    lock = StoreLock(store)
    if store.is_local and not os.path.isdir(store.base):
        yield lock
        return
    announced = False
    while True:
        acquired, holder, note = lock.try_acquire()
        if acquired:
            break
        if not wait:
            raise StoreLocked(lock.where, holder)
        if not announced:
            who = holder.describe() if holder else "another run"
            print(f"Waiting for the lock of {lock.where}, held by {who} ...", file=out, flush=True)
            announced = True
        time.sleep(WAIT_POLL_SECONDS)
    if note:
        print(f"Lock: {note}", file=out, flush=True)
    try:
        yield lock
    finally:
        if lock.lost:
            print(f"Lock: WARNING: {lock.lost} while this run was writing", file=out, flush=True)
        try:
            lock.release()
        except Exception as error:  # noqa: BLE001 - the run's own outcome (or error) matters more than the lock's
            cause = fault_cause(error) or f"{type(error).__name__}: {error}"
            print(
                f"Lock: could not remove {lock.lock_url} ({cause}); the next run on {lock.me.host} takes it over, "
                f"one elsewhere after {STALE_AFTER_SECONDS / 60:.0f} minutes",
                file=out,
                flush=True,
            )
