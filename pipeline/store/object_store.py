"""The object store: one root (local directory or any fsspec URL such as s3://bucket/prefix), atomic writes."""

from __future__ import annotations

import errno
import io
import os
import posixpath
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO
from urllib.parse import urlsplit

import fsspec
import polars as pl

from pipeline.settings import Settings

S3_PROTOCOLS = ("s3", "s3a")

_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")
# Object-store stamps that change whenever an object's content does, best first.
_STAMP_FIELDS = ("ETag", "etag", "mtime", "LastModified", "last_modified", "created")


# zstd's level 1, not Polars' default 3: the tables come out the same size (a fide-scale list 4.80 MB against 4.83,
# its per-game table 4.46 against 4.45) for about 13 % less CPU in writing them, which every month of every chain does.
PARQUET_ZSTD_LEVEL = 1


TEMP_MARK = ".tmp-"
_TEMP_NAME = re.compile(re.escape(TEMP_MARK) + r"(\d+)-[0-9a-f]{32}$")


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with that pid exists (a temp file's writer, a run's executor)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def orphaned_temp_name(name: str) -> bool:
    """Whether `name` is a temporary file's or folder's (TEMP_MARK, then its writer's pid) whose writer has ended."""
    match = _TEMP_NAME.search(name)
    return match is not None and not process_alive(int(match.group(1)))


# Errors that mean the store itself failed (not the data): named in one line with the path and the cause.
_FAULT_ERRNOS = (
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EIO,
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ECONNREFUSED,
    errno.ECONNRESET,
    errno.ETIMEDOUT,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
)
# Polars and other Rust code report an OS error in their message only, as "... (os error 28)".
_RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")
# Class names of the errors an unreachable object store raises (botocore, aiohttp, asyncio), by name: Dagster
# hands the CLI its errors as names and messages, and pipeline/ must not import what s3fs happens to use.
UNREACHABLE_ERRORS = {
    "EndpointConnectionError": "connection failed",
    "ConnectTimeoutError": "connection timed out",
    "ReadTimeoutError": "read timed out",
    "ConnectionClosedError": "connection closed",
    "ClientConnectorError": "connection failed",
    "ServerDisconnectedError": "server disconnected",
    "ConnectionRefusedError": "connection refused",
    "TimeoutError": "timed out",
}


def write_local_file(target: str, write: Callable[[BinaryIO], object], mode: int | None = None) -> None:
    """What `write` writes into a binary handle, as the local file `target` whole or not at all: into a temporary file
    beside it, synced, then renamed over it; a write that fails leaves no temporary file. `mode`: the permission bits
    the file gets (None: the umask's, as for any new file).
    """
    # The writer's pid in the name tells a later run whether the writer is gone (see remove_orphaned_temp_files).
    tmp = f"{target}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)  # the write failed before the rename: leave no debris


class StoreFault(OSError):
    """A read or write the store failed (full disk, I/O error, denied, unreachable), its message naming the cause
    and the redacted path or URL in one line.
    """


def fault_cause(error: BaseException) -> str | None:
    """What made the store fail, in a few words (ENOSPC, connection refused, ...), from `error` or the errors it
    was raised from; None when `error` is not a store fault.
    """
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, StoreFault):
            return str(seen)
        number = seen.errno if isinstance(seen, OSError) else None
        if number is None and (match := _RUST_OS_ERROR.search(str(seen))):
            number = int(match.group(1))
        if number in _FAULT_ERRNOS:
            return f"{os.strerror(number)} ({errno.errorcode[number]})"
        if type(seen).__name__ in UNREACHABLE_ERRORS:
            return f"object store unreachable: {UNREACHABLE_ERRORS[type(seen).__name__]}"
        seen = seen.__cause__ or seen.__context__
    return None


def fault_line(where: str, error: BaseException, doing: str = "at") -> str | None:
    """'<cause> <doing> <where>' for a store fault (where redacted), else None."""
    cause = fault_cause(error)
    if cause is None:
        return None
    if isinstance(error, StoreFault):
        return cause
    seen: BaseException | None = error
    while seen is not None:  # an error naming its own file knows better where it happened
        if isinstance(seen, OSError) and isinstance(seen.filename, str):
            where = seen.filename
            break
        seen = seen.__cause__ or seen.__context__
    return f"{cause} {doing} {redact_url(where)}"


def store_root_from_env() -> str:
    """The configured object-store root (pipeline.settings: $RATINGS_STORE, else ./data)."""
    return str(Settings.one_from_env("store"))


def is_safe_part(part: str) -> bool:
    """Whether safe_part takes `part` (a folder found in a listing, say, that a key may be made of)."""
    return isinstance(part, str) and bool(_SAFE_PART.match(part))


def safe_part(part: str) -> str:
    r"""Reject path parts that could leave the store prefix: '..', '/', '\', empty, hidden or '~' names.

    A part must start with a letter or digit and hold only letters, digits and . _ = + -, so neither
    '..' nor a separator of any platform can get through.
    """
    if not is_safe_part(part):
        raise ValueError(f"unsafe path component {part!r}")
    return part


def _reject_credentials_in_root(root: str) -> None:
    """s3://KEY:SECRET@bucket (or a user alone) would put a secret into every URL the store reports: refuse it,
    unechoed.
    """
    if "://" in root and "@" in urlsplit(root).netloc:
        scheme = root.split("://", 1)[0]
        raise ValueError(
            f"the object-store root must not contain credentials ({scheme}://<user>:<password>@...): "
            "use the standard AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables or an instance role"
        )


def s3_endpoint_from_env() -> str | None:
    """The S3 endpoint of an S3-compatible server, as botocore reads it (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def polars_s3_options() -> dict[str, str | int]:
    """Storage options for Polars' own S3 client, from the same environment s3fs/botocore read.

    The endpoint is passed explicitly because Polars caches one client per bucket URL and options: without
    it, a process that talks to two endpoints would reuse the first. Credentials are never passed: Polars
    resolves them itself (AWS_ACCESS_KEY_ID..., profiles, instance roles), so they stay out of our objects.
    AWS_MAX_ATTEMPTS, botocore's retry knob, bounds Polars' retries too.
    """
    options: dict[str, str | int] = {}
    endpoint = s3_endpoint_from_env()
    if endpoint:
        options["aws_endpoint_url"] = endpoint
        if endpoint.startswith("http://"):
            # `allow_http`, not `aws_allow_http`: Polars takes any key it does not know as an explicit credential and
            # then leaves out its own credential chain (profiles, shared credentials files), so a store whose keys
            # are in ~/.aws/credentials failed at the first Parquet read.
            options["allow_http"] = "true"
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["aws_region"] = region
    attempts = os.environ.get("AWS_MAX_ATTEMPTS")
    if attempts and attempts.isdigit() and int(attempts) >= 1:
        options["max_retries"] = int(attempts) - 1
    return options


def _folder_marker(path: str) -> bool:
    """An empty object named like a folder ('raw/GER/2024-01/'), as S3 consoles and sync tools make to show a folder:
    s3fs lists it as a file, but it holds nothing and is no file of the folder.
    """
    return path.endswith("/")


_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@")


def redact_url(url: str) -> str:
    """Drop any user:password@ part of a URL before it reaches metadata or logs."""
    return _USERINFO.sub(r"\1", url)


def file_stamp(info: dict) -> str:
    """What changes when a file's content does: S3's ETag, else the modification time (from an fsspec info dict)."""
    for name in _STAMP_FIELDS:
        if info.get(name) is not None:
            return str(info[name])
    return ""


@dataclass
class ObjectStore:
    """Reads and writes under `root`; every write is atomic (temp file + rename locally, one PUT on S3).

    Configured by environment: RATINGS_STORE (a directory or s3://bucket/prefix), and for S3 the usual
    AWS variables (credentials, AWS_REGION, AWS_ENDPOINT_URL for S3-compatible servers, AWS_MAX_ATTEMPTS).
    Listings are never cached, so new dumps in the landing zone are seen at once. S3 reads of whole
    Parquet tables, columns and footers go through Polars' native client (faster than s3fs at every
    size we measured); listings and byte reads/writes go through s3fs.
    """

    root: str = field(default_factory=store_root_from_env)

    def __post_init__(self) -> None:
        _reject_credentials_in_root(self.root)
        protocol = self.root.split("://", 1)[0] if "://" in self.root else "file"
        options: dict[str, object] = {}
        if protocol in S3_PROTOCOLS:
            # Listings must be fresh: the landing zone changes under a long-lived process (sensors).
            options["use_listings_cache"] = False
            # Explicit (botocore would read it too) so that s3fs's instance cache keys on the endpoint.
            if s3_endpoint_from_env():
                options["endpoint_url"] = s3_endpoint_from_env()
        self.fs, base = fsspec.core.url_to_fs(self.root, **options)
        self.base = base.rstrip("/") if base not in ("/", "") else base
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.is_local = "file" in protocols
        self.is_s3 = any(p in S3_PROTOCOLS for p in protocols)
        if self.is_local:
            self.base = os.path.abspath(self.base)

    # -- paths ---------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        """Absolute path inside the store for a relative key (each part checked)."""
        rel = [safe_part(p) for part in parts for p in part.split("/") if p]
        return posixpath.join(self.base, *rel) if not self.is_local else os.path.join(self.base, *rel)

    def url(self, *parts: str) -> str:
        """Human-facing location of a key (for metadata and summaries)."""
        path = self.path(*parts)
        if self.is_local:
            return path
        protocol = self.fs.protocol[0] if isinstance(self.fs.protocol, tuple) else self.fs.protocol
        return f"{protocol}://{path}"

    def relative(self, full_path: str) -> str:
        full = full_path.replace(os.sep, "/")
        base = self.base.replace(os.sep, "/").rstrip("/") + "/"
        return full[len(base) :] if full.startswith(base) else full

    # -- queries -------------------------------------------------------------------------------
    def exists(self, *parts: str) -> bool:
        return self.fs.exists(self.path(*parts))

    def list_files(self, *parts: str) -> list[str]:
        """All files below a key, as keys relative to the root, sorted."""
        top = self.path(*parts)
        if not self.fs.exists(top):
            return []
        found = self.fs.find(top)
        return sorted(self.relative(p) for p in found if not _folder_marker(p))

    def list_dirs(self, *parts: str) -> list[str]:
        top = self.path(*parts)
        if not self.fs.exists(top):
            return []
        entries = self.fs.ls(top, detail=True)
        return sorted(posixpath.basename(e["name"].rstrip("/")) for e in entries if e["type"] == "directory")

    def list_stamps(self, *parts: str) -> dict[str, str]:
        """Key -> 'size stamp' of every file below a key, from one listing (S3: ETag; local: mtime).

        The stamp changes when an object is replaced, so it fingerprints the landing zone without
        reading any dump.
        """
        # No exists() first: find() of a missing prefix is empty, and on S3 that saves two requests.
        found = self.fs.find(self.path(*parts), detail=True)
        return {
            self.relative(path): f"{info.get('size')} {file_stamp(info)}"
            for path, info in sorted(found.items())
            if info.get("type", "file") != "directory" and not _folder_marker(path)
        }

    # -- bytes ---------------------------------------------------------------------------------
    def read_bytes(self, *parts: str) -> bytes:
        return self.fs.cat_file(self.path(*parts))

    def open(self, *parts: str, mode: str = "rb"):
        return self.fs.open(self.path(*parts), mode)

    def write_bytes(self, data: bytes, *parts: str) -> str:
        """Write atomically: readers see the old object or the new one, never a partial one."""
        return self.write_with(lambda handle: handle.write(data), *parts)

    def write_with(self, write: Callable[[BinaryIO], object], *parts: str) -> str:
        """Write atomically what `write` writes into the binary handle it is given.

        Locally the bytes go straight into a temporary file, never held whole in memory (a month's
        published lists are 160 MB); on S3 they are gathered, then sent in one PUT.
        """
        target = self.path(*parts)
        try:
            self._write_with(write, target)
        except Exception as error:
            # A full disk or an unreachable store must say where: an OSError of write() names no file.
            line = fault_line(self.url(*parts), error, "writing")
            if line is None or isinstance(error, StoreFault):
                raise
            raise StoreFault(line) from error
        return target

    def _write_with(self, write: Callable[[BinaryIO], object], target: str) -> None:
        if self.is_local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_local_file(target, write)
        else:
            # An object-store PUT is atomic: the object appears whole or not at all. s3fs switches to a
            # multipart upload above 100 MB, which is atomic too (visible only once completed).
            buffer = io.BytesIO()
            write(buffer)
            self.fs.pipe_file(target, buffer.getvalue())

    def remove(self, *parts: str) -> None:
        """Delete one file (no error when it is already gone)."""
        target = self.path(*parts)
        if self.fs.exists(target):
            self.fs.rm_file(target)

    def remove_orphaned_temp_files(self) -> int:
        """Delete the temporary files of local writes whose writing process has ended (killed mid-write); count them.

        raw/ is never touched. Object stores have no temporary files (a PUT is atomic).
        """
        if not self.is_local or not os.path.isdir(self.base):
            return 0
        removed = 0
        for folder, dirs, files in os.walk(self.base):
            if folder == self.base and "raw" in dirs:
                dirs.remove("raw")
            for name in files:
                if orphaned_temp_name(name):
                    os.remove(os.path.join(folder, name))
                    removed += 1
        return removed

    # -- tables --------------------------------------------------------------------------------
    def write_parquet(self, frame: pl.DataFrame, *parts: str, footer: Mapping[str, str] | None = None) -> str:
        """Parquet bytes that depend only on the frame and `footer` (key-value metadata; same frame and footer, same
        bytes), written atomically.
        """
        metadata = dict(footer) if footer else None
        return self.write_with(
            lambda handle: frame.write_parquet(
                handle, compression="zstd", compression_level=PARQUET_ZSTD_LEVEL, statistics=True, metadata=metadata
            ),
            *parts,
        )

    def parquet_footer(self, *parts: str) -> dict[str, str]:
        """The key-value metadata of a stored table (write_parquet's `footer`), from its footer only."""
        if self.is_local:
            found = pl.read_parquet_metadata(self.path(*parts))
        elif self.is_s3:
            found = pl.read_parquet_metadata(self.url(*parts), storage_options=polars_s3_options())
        else:
            with self.open(*parts) as handle:
                found = pl.read_parquet_metadata(handle)
        return dict(found)

    def read_parquet(self, *parts: str, columns: list[str] | None = None) -> pl.DataFrame:
        """A stored table, optionally only some columns (on S3 only those columns' bytes are fetched)."""
        if self.is_local:
            return pl.read_parquet(self.path(*parts), columns=columns)
        if self.is_s3:
            return pl.read_parquet(self.url(*parts), columns=columns, storage_options=polars_s3_options())
        with self.open(*parts) as handle:
            return pl.read_parquet(handle, columns=columns)

    def read_parquets(self, keys: Sequence[str]) -> list[pl.DataFrame]:
        """read_parquet of each key, in order. Read together: a report's two hundred monthly tables of a few rows
        each cost a read's fixed overhead each (a third of a CPU-second for three such tables), not their rows.
        """
        if self.is_local:
            return pl.collect_all([pl.scan_parquet(self.path(key), hive_partitioning=False) for key in keys])
        if self.is_s3:
            return pl.collect_all([pl.scan_parquet(self.url(key), storage_options=polars_s3_options()) for key in keys])
        return [self.read_parquet(key) for key in keys]

    def scan_parquet(self, *parts: str) -> pl.LazyFrame:
        """A stored table as a LazyFrame, so that filters read only what they need (e.g. one month of the truth)."""
        if self.is_local:
            return pl.scan_parquet(self.path(*parts))
        if self.is_s3:
            return pl.scan_parquet(self.url(*parts), storage_options=polars_s3_options())
        return self.read_parquet(*parts).lazy()

    def parquet_schema(self, *parts: str) -> dict[str, pl.DataType]:
        """Column name -> Polars type of a stored table, from its footer only."""
        if self.is_local:
            return dict(pl.read_parquet_schema(self.path(*parts)))
        if self.is_s3:
            return dict(pl.scan_parquet(self.url(*parts), storage_options=polars_s3_options()).collect_schema())
        with self.open(*parts) as handle:
            return dict(pl.read_parquet_schema(handle))

    def parquet_rows(self, *parts: str) -> int:
        """Row count of a stored table, from its footer only."""
        import pyarrow.parquet as pq

        if self.is_s3:
            return (
                pl.scan_parquet(self.url(*parts), storage_options=polars_s3_options()).select(pl.len()).collect().item()
            )
        with self.open(*parts) as handle:
            return pq.ParquetFile(handle).metadata.num_rows

    def write_text(self, text: str, *parts: str) -> str:
        return self.write_bytes(text.encode("utf-8"), *parts)

    # -- layout --------------------------------------------------------------------------------
    @staticmethod
    def table_key(table: str, month: str) -> str:
        """Where a monthly table lives: <table>/<YYYY-MM>.parquet (table may contain '/')."""
        return f"{table}/{month}.parquet"
