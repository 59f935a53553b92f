"""The object store: one root (local directory or any fsspec URL such as s3://bucket/prefix), atomic writes."""

from __future__ import annotations

import io
import os
import posixpath
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import fsspec
import polars as pl

DEFAULT_ROOT = "./data"
STORE_ENV = "RATINGS_STORE"

_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")


def store_root_from_env() -> str:
    """The configured object-store root: $RATINGS_STORE, else ./data."""
    return os.environ.get(STORE_ENV) or DEFAULT_ROOT


def safe_part(part: str) -> str:
    """Reject path parts that could leave the store prefix (.., /, empty, hidden names)."""
    if not _SAFE_PART.match(part) or part in {".", ".."} or ".." in part.split("."):
        raise ValueError(f"unsafe path component {part!r}")
    return part


@dataclass
class ObjectStore:
    """Reads and writes under `root`; every write is atomic (temp object + rename, or a single PUT)."""

    root: str = field(default_factory=store_root_from_env)

    def __post_init__(self) -> None:
        self.fs, base = fsspec.core.url_to_fs(self.root)
        self.base = base.rstrip("/") if base not in ("/", "") else base
        self.is_local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))
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
        return full[len(base):] if full.startswith(base) else full

    # -- queries -------------------------------------------------------------------------------
    def exists(self, *parts: str) -> bool:
        return self.fs.exists(self.path(*parts))

    def list_files(self, *parts: str) -> list[str]:
        """All files below a key, as keys relative to the root, sorted."""
        top = self.path(*parts)
        if not self.fs.exists(top):
            return []
        found = self.fs.find(top)
        return sorted(self.relative(p) for p in found)

    def list_dirs(self, *parts: str) -> list[str]:
        top = self.path(*parts)
        if not self.fs.exists(top):
            return []
        entries = self.fs.ls(top, detail=True)
        return sorted(posixpath.basename(e["name"].rstrip("/")) for e in entries if e["type"] == "directory")

    # -- bytes ---------------------------------------------------------------------------------
    def read_bytes(self, *parts: str) -> bytes:
        return self.fs.cat_file(self.path(*parts))

    def open(self, *parts: str, mode: str = "rb"):
        return self.fs.open(self.path(*parts), mode)

    def write_bytes(self, data: bytes, *parts: str) -> str:
        """Write atomically: readers see the old object or the new one, never a partial one."""
        target = self.path(*parts)
        if self.is_local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = f"{target}.tmp-{uuid.uuid4().hex}"
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        else:
            # An object store PUT is atomic: the object appears whole or not at all.
            self.fs.pipe_file(target, data)
        return target

    # -- tables --------------------------------------------------------------------------------
    def write_parquet(self, frame: pl.DataFrame, *parts: str) -> str:
        buffer = io.BytesIO()
        frame.write_parquet(buffer, compression="zstd", statistics=True)
        return self.write_bytes(buffer.getvalue(), *parts)

    def read_parquet(self, *parts: str) -> pl.DataFrame:
        with self.open(*parts) as handle:
            return pl.read_parquet(handle)

    def write_text(self, text: str, *parts: str) -> str:
        return self.write_bytes(text.encode("utf-8"), *parts)

    def iter_files(self, *parts: str) -> Iterator[str]:
        yield from self.list_files(*parts)

    # -- layout --------------------------------------------------------------------------------
    @staticmethod
    def table_key(table: str, month: str) -> str:
        """Where a monthly table lives: <table>/<YYYY-MM>.parquet (table may contain '/')."""
        return f"{table}/{month}.parquet"
