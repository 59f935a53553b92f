"""A month's dumps read into RawGames: every entry of raw/<federation>/<YYYY-MM>/ read, or quarantined whole."""

from __future__ import annotations

import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO, cast

import polars as pl

from pipeline.formats import (
    UNKNOWN_FORMAT,
    DumpFile,
    detect_format,
    read_dump,
    read_dumps,
    too_large_to_read,
    unreadable_because,
)
from pipeline.formats.common import DumpTooLarge, strip_compression, unread_reason, unreadable_record
from pipeline.ingest.landing import (
    DUMP,
    RAW,
    LandingEntry,
    inventory,
    month_entries,
    refusal,
)
from pipeline.months import parse_month
from pipeline.store.object_store import ObjectStore
from schemas.raw_games import RawGames
from schemas.util import empty_frame

# Dumps are independent; threads overlap object-store latency with parsing (Polars releases the GIL).
READ_WORKERS = 8
# Formats read_dumps parses many files at once (one vectorised pass per batch instead of per file).
BATCHED_FORMATS = ("trf", "pgn", "csv", "parquet")


def read_file(
    path_or_bytes: str | os.PathLike | bytes | BinaryIO, name: str, federation: str, month: str
) -> pl.DataFrame:
    """RawGames rows of one dump (format from the extension of `name`; .gz/.zst read transparently).

    `name` is the dump's key relative to raw/, e.g. 'GER/2024-01/open-a.trf': it becomes
    source_file, and without its extensions the default event_id.
    """
    data: bytes | DumpFile
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
    elif hasattr(path_or_bytes, "read"):  # an open binary file, e.g. from ObjectStore.open
        handle = cast(BinaryIO, path_or_bytes)
        if _streamed(name) and handle.seekable():
            # Read as it is decompressed, never whole; the caller's handle stays open (a fallback re-reads it).
            start = handle.tell()

            def rewound() -> BinaryIO:
                handle.seek(start)
                return handle

            data = DumpFile(rewound, closes=False)
        else:
            data = handle.read()
    elif _streamed(name):
        path = Path(path_or_bytes)
        data = DumpFile(lambda: path.open("rb"))
    else:
        data = Path(path_or_bytes).read_bytes()
    return read_dump(data, name, federation, month)


def _streamed(name: str) -> bool:
    """Dumps read_dumps decompresses and parses as a stream from a DumpFile (a .pgn.zst), never reading them whole."""
    inner, compression = strip_compression(name)
    return compression == "zst" and detect_format(inner) == "pgn"


def read_month(store: ObjectStore, month: str, entries: list[LandingEntry] | None = None) -> pl.DataFrame:
    """RawGames rows for every dump under raw/<federation>/<month>/ (all federations except 'players').

    Entries of the month that are not read (a misplaced file, a link, a FIFO) become one record each,
    whose parse_error says what it is and where a file belongs. `entries`: the landing zone's
    inventory when the caller already has it (a range run lists the landing zone once).
    """
    parse_month(month)
    entries = month_entries(inventory(store) if entries is None else entries, month)
    keys = [(entry.federation, entry.key) for entry in entries if entry.kind == DUMP]
    refused = [
        unreadable_record(_relative_to_raw(entry.key), entry.federation, month, UNKNOWN_FORMAT, refusal(entry))
        for entry in entries
        if entry.kind != DUMP
    ]
    if not keys:
        return pl.concat(refused, how="vertical") if refused else empty_frame(RawGames)
    listed_size = {entry.key: _listed_size(entry.stamp) for entry in entries if entry.kind == DUMP}
    # A plain dump of more text than the cap is one record from its listed size, never read (a compressed one is
    # never decompressed beyond it): reading it whole only to refuse it could take more memory than the month.
    too_large = {
        (federation, key): why
        for federation, key in keys
        if (why := too_large_to_read(key, listed_size.get(key) or 0)) is not None
    }
    refused += [
        unreadable_record(
            _relative_to_raw(key),
            federation,
            month,
            detect_format(key),
            unreadable_because(DumpTooLarge(why), _relative_to_raw(key)),
        )
        for (federation, key), why in too_large.items()
    ]
    keys = [dump for dump in keys if dump not in too_large]
    # A .pgn.zst is decompressed and parsed straight from the store as it is read (DumpFile): never
    # held whole, compressed or not. Every other dump is read whole, in threads.
    read_whole = [(federation, key) for federation, key in keys if not _streamed(key)]
    with ThreadPoolExecutor(max_workers=max(1, min(READ_WORKERS, len(read_whole)))) as pool:
        whole = pool.map(lambda fk: _read_or_why(store, fk[1], listed_size.get(fk[1])), read_whole)
        outcome = dict(zip(read_whole, whole, strict=True))
    # A dump gone or refused since the listing (deleted, permissions changed) is one record saying so: one file never
    # stops the others. A fault of the store itself (unreachable, EIO) stops the run, as it would every read after.
    contents = {dump: content for dump, content in outcome.items() if isinstance(content, bytes)}
    refused += [
        unreadable_record(_relative_to_raw(key), federation, month, UNKNOWN_FORMAT, why)
        for (federation, key), why in outcome.items()
        if isinstance(why, str)
    ]
    dumps: list[tuple[bytes | DumpFile, str, str]] = [
        (
            contents[federation, key] if (federation, key) in contents else _listed_file(store, key),
            _relative_to_raw(key),
            federation,
        )
        for federation, key in keys
        if (federation, key) in contents or _streamed(key)
    ]
    # TRF, PGN, CSV and Parquet files are parsed together in batches (a month holds hundreds of small
    # ones); the other dumps (streamed .pgn.zst, unknown types) file by file, overlapping in threads.
    batched = [index for index, (_, name, _) in enumerate(dumps) if detect_format(name) in BATCHED_FORMATS]
    others = sorted(set(range(len(dumps))) - set(batched))
    frames: list[pl.DataFrame | None] = [None] * len(dumps)
    for index, frame in zip(batched, read_dumps([dumps[index] for index in batched], month), strict=True):
        frames[index] = frame
    with ThreadPoolExecutor(max_workers=max(1, min(READ_WORKERS, len(others)))) as pool:
        for index, frame in zip(others, pool.map(lambda i: read_dumps([dumps[i]], month)[0], others), strict=True):
            frames[index] = frame
    read = [frame for frame in frames if frame is not None]
    assert len(read) == len(dumps)  # `batched` and `others` together cover every dump
    return pl.concat([*read, *refused], how="vertical")


# -- helpers ---------------------------------------------------------------------------------------
def _relative_to_raw(key: str) -> str:
    return key[len(RAW) + 1 :] if key.startswith(RAW + "/") else key


def _read_or_why(store: ObjectStore, key: str, listed_size: int | None = None) -> bytes | str:
    """read_listed, or why the file could not be read (pipeline.formats.common.unread_reason), or why it is not the
    file the run listed: of another size than `listed_size` (written to while the run read it, as an upload in
    progress or an append). The run's listing is what it records it rated; the file as it is now is the next run's.
    """
    try:
        content = read_listed(store, key)
    except OSError as error:
        why = unread_reason(error)
        if why is None:
            raise
        return why
    if listed_size is not None and len(content) != listed_size:
        return (
            f"the file changed while the run read it (listed with {listed_size:,} bytes, read with {len(content):,}): "
            "run again to rate it as it is now"
        )
    return content


def _listed_size(stamp: str) -> int | None:
    """The size a landing entry's stamp ('size stamp', ObjectStore.list_stamps) gives, None when it gives none."""
    size = stamp.split(" ", 1)[0]
    return int(size) if size.isdigit() else None


def read_listed(store: ObjectStore, key: str, size: int | None = None) -> bytes:
    """Bytes of a key that came from the store's own listing (only its first `size` when given: one ranged read).

    ObjectStore.path rejects names such as 'Open A (final).trf' to keep writes safe; a listed key
    cannot escape the store, so such names are read through the filesystem directly.
    """
    try:
        path = store.path(key)
    except ValueError:
        path = posixpath.join(store.base.replace(os.sep, "/"), key)
    return store.fs.cat_file(path, start=None if size is None else 0, end=size)


def _listed_file(store: ObjectStore, key: str) -> DumpFile:
    """A listed key as a DumpFile, opened from the store when it is read (see _read_listed for the names)."""

    def opener() -> BinaryIO:
        try:
            return store.open(key)
        except ValueError:  # a name ObjectStore.path refuses for writes; a listed key cannot escape the store
            return store.fs.open(posixpath.join(store.base.replace(os.sep, "/"), key), "rb")

    return DumpFile(opener)
