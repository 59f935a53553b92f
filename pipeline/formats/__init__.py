"""Readers of the landing-zone dump formats (TRF, PGN, CSV, Parquet), each turning bytes into RawGames rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import polars as pl

from pipeline.formats.common import (
    DumpFile,
    DumpTooLarge,
    StorageReadError,
    UnreadableDump,
    event_key,
    finish_batch,
    preview,
    strip_compression,
    unread_reason,
    unreadable_record,
)
from pipeline.formats.compressed import NotStreamable, read_pgn_zst
from pipeline.formats.decoding import (
    EMPTY_FILE,
    check_line_count,
    decode_text_detected,
    decompress_dump,
    empty_problem,
    text_size_problem,
    utf8_lf_bytes_detected,
)
from pipeline.formats.pgn import parse_pgn_batch
from pipeline.formats.tabular import TableCells, csv_cells, parquet_cells, table_records
from pipeline.formats.trf import is_trf_text, parse_trf_batch

#: Extension (after any .gz/.zst) -> format code in RawGames.format. '.txt' is TRF when it looks like TRF.
EXTENSION_FORMATS = {".trf": "trf", ".txt": "trf", ".pgn": "pgn", ".csv": "csv", ".parquet": "parquet"}
UNKNOWN_FORMAT = "unknown"
# TRF texts parsed in one batch: large enough to amortise Polars' per-call cost over many files.
TRF_BATCH_CHARACTERS = 64 << 20
# PGN bytes parsed in one batch (scanned in CHUNK_BYTES pieces, typed and finished together).
PGN_BATCH_BYTES = 64 << 20
# CSV and Parquet bytes parsed in one batch (each file is split into text cells alone, in threads).
TABLE_BATCH_BYTES = 64 << 20
TABLE_CELL_THREADS = 4
#: A parsed batch's items: decoded TRF text, PGN as UTF-8 bytes with LF line ends, or a CSV or Parquet file's cells.
Text = TypeVar("Text", str, bytes, TableCells)
#: What is cut into batches by its length: text, or a dump's bytes.
Raw = TypeVar("Raw", str, bytes)

#: Formats whose rows are games, each naming its tournament in an event_id column or none.
TABLE_FORMATS = ("csv", "parquet")

__all__ = [
    "EXTENSION_FORMATS",
    "TABLE_FORMATS",
    "UNKNOWN_FORMAT",
    "DumpFile",
    "detect_format",
    "event_named_by_row",
    "read_dump",
    "read_dumps",
    "too_large_to_read",
]


def detect_format(name: str) -> str:
    """Format code of a dump from its name; 'unknown' for extensions the pipeline does not read."""
    inner, _ = strip_compression(name)
    lowered = inner.lower()
    for extension, fmt in EXTENSION_FORMATS.items():
        if lowered.endswith(extension):
            return fmt
    return UNKNOWN_FORMAT


def event_named_by_row(frame: pl.DataFrame, event_id: pl.Expr) -> pl.Series:
    """Whether each row's `event_id` (of a frame with source_file) names a tournament: false for the rows of a CSV or
    Parquet dump that name none, whose event is the file's default (event_key): such a file is a list of games,
    which need not be one tournament.
    """
    # A default event id starts the file's name: only those rows (a TRF's or a table's without event ids) are looked
    # up, not every row of a month.
    maybe_default = frame.select(pl.col("source_file").str.starts_with(event_id).fill_null(False)).to_series()
    named = ~maybe_default
    if not maybe_default.any():
        return named
    rows = frame.filter(maybe_default).select(event_id.alias("event_id"), "source_file")
    files = rows["source_file"].unique().to_list()
    defaults = {name: event_key(name) for name in files if detect_format(name) in TABLE_FORMATS}
    default = pl.col("source_file").replace_strict(defaults, default=None, return_dtype=pl.Utf8)
    exact = rows.select(default.is_null() | (pl.col("event_id") != default)).to_series()
    return named.scatter(maybe_default.arg_true(), exact)


def too_large_to_read(name: str, size: int) -> str | None:
    """Why a dump of `size` bytes is not read, told from its name and size alone: a plain text dump (not compressed,
    not Parquet, whose rows are capped as they are decoded) of more text than decoding.text_size_problem allows; None
    for any other. Callers that know the size before reading (a listing, a stat) never read such a file.
    """
    if strip_compression(name)[1] is not None or detect_format(name) in ("parquet", UNKNOWN_FORMAT):
        return None
    return text_size_problem(size)


def inner_name_is_txt(name: str) -> bool:
    """'.txt' dumps are TRF only when their content says so (federations also upload notes)."""
    return strip_compression(name)[0].lower().endswith(".txt")


def read_dump(
    data: bytes | DumpFile, name: str, federation: str, month: str, encodings: list[str | None] | None = None
) -> pl.DataFrame:
    """RawGames rows of one dump; bad content becomes a parse_error row, never an exception.

    `name` is the dump's key relative to raw/ (e.g. 'GER/2024-01/open-a.trf'): it is the
    source_file of every row and, without extensions, the default event id. `encodings`, when
    given, receives the text encoding the dump was read in (see read_dumps).
    """
    return read_dumps([(data, name, federation)], month, encodings)[0]


def read_dumps(
    dumps: Sequence[tuple[bytes | DumpFile, str, str]], month: str, encodings: list[str | None] | None = None
) -> list[pl.DataFrame]:
    """RawGames rows of many dumps (bytes or DumpFile, name, federation) of one month, in the same order.

    The files of each format are parsed together in batches (a month holds thousands of small
    tournament files); CSV and Parquet files are first split into cells one by one. One bad file
    never stops the others: what cannot be read, even through an unexpected error, becomes that
    file's unreadable record (a DumpFile the store fails to read raises StorageReadError instead).
    `encodings`, when given, is filled with each dump's text encoding ('utf-8', 'windows-1252', ...;
    None for Parquet and for files that could not be read), one entry per dump. A .pgn.zst given as a
    DumpFile is decompressed and parsed as it is read; every other DumpFile is read whole first.
    """
    results: list[pl.DataFrame | None] = [None] * len(dumps)
    detected: list[str | None] = [None] * len(dumps)
    trf: list[tuple[int, str]] = []  # (dump index, decoded text)
    pgn: list[tuple[int, bytes]] = []  # (dump index, UTF-8 LF bytes)
    tables: dict[str, list[tuple[int, bytes]]] = {"csv": [], "parquet": []}  # format -> (dump index, content)
    trailing: dict[int, tuple[str, int]] = {}  # dump index -> (problem after the gzip stream, line it is reported on)
    sources: list[bytes | DumpFile] = [source for source, _, _ in dumps]  # a DumpFile gives way to its bytes once read
    for index, (_, name, federation) in enumerate(dumps):
        fmt = detect_format(name)
        try:
            if fmt == UNKNOWN_FORMAT:
                raise UnreadableDump(f"unknown file type {name.rsplit('/', 1)[-1]!r}")
            compression = strip_compression(name)[1]
            if fmt == "pgn" and compression == "zst":
                try:  # streamed: never the whole decompressed file in memory (nor the compressed one, from a DumpFile)
                    records, detected[index] = _read_pgn_zst(sources[index], event_key(name))
                    results[index] = finish_batch(records, [name], [federation], month, fmt)
                    continue
                except NotStreamable:  # an encoding that needs the whole file: read it in memory below
                    pass
            data = _bytes(sources, index)
            too_large = too_large_to_read(name, len(data))
            if too_large is not None:
                raise DumpTooLarge(too_large)
            content, after_stream = decompress_dump(data, compression)
            if fmt != "parquet":
                check_line_count(content)
            empty = empty_problem(content)
            if empty is not None:
                raise UnreadableDump(empty)
            if after_stream is not None:
                trailing[index] = (
                    after_stream,
                    content.count(b"\n") + (0 if content.endswith(b"\n") or not content else 1) + 1,
                )
            if fmt == "trf":
                text, detected[index] = decode_text_detected(content)
                if not text.strip():  # blanks in UTF-16 without a byte-order mark
                    raise UnreadableDump(f"{EMPTY_FILE}: only blank lines")
                if inner_name_is_txt(name) and not is_trf_text(text):
                    raise UnreadableDump("text file does not start with TRF records")
                trf.append((index, text))
                continue
            if fmt == "pgn":
                lf_bytes, detected[index] = utf8_lf_bytes_detected(content)  # per file: encodings differ between files
                pgn.append((index, lf_bytes))
                continue
            tables[fmt].append((index, content))  # split into cells below, several files at a time
        except StorageReadError as error:  # the file gone or refused since the listing is one record; else raised
            why = unread_reason(error)
            if why is None:
                raise
            results[index] = unreadable_record(name, federation, month, fmt, why)
        except Exception as error:  # see unreadable_because
            why = unreadable_because(error, name)
            results[index] = unreadable_record(name, federation, month, fmt, why, _preview(sources[index]))
    # Every dump that reaches a batch was read whole above: the batches see bytes only.
    read = [
        (source if isinstance(source, bytes) else b"", name, federation)
        for source, (_, name, federation) in zip(sources, dumps, strict=True)
    ]

    def text_dumps() -> None:
        for batch in _batches(trf, TRF_BATCH_CHARACTERS):
            _read_batch(batch, read, month, "trf", results, _trf_records)
        for pgn_batch in _batches(pgn, PGN_BATCH_BYTES):
            _read_batch(pgn_batch, read, month, "pgn", results, _pgn_records)

    def table_dumps() -> None:
        # A batch's cells are made and parsed before the next batch's: the text cells of a month's large tables
        # are never all held at once.
        for fmt, contents in tables.items():
            for contents_batch in _batches(contents, TABLE_BATCH_BYTES):
                cells_batch = _split_tables(contents_batch, fmt, dumps, month, results, detected, sources)
                if cells_batch:
                    _read_batch(cells_batch, read, month, fmt, results, _table_records)

    # The tables beside the text dumps, in a second thread: each fills only its own dumps' places in `results`, and
    # both are mostly NumPy and Polars, which release the GIL (24 FIDE-scale months read in 6.8 s instead of 7.9,
    # at the same CPU).
    if (trf or pgn) and any(tables.values()):
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="table-dumps") as beside:
            tables_read = beside.submit(table_dumps)
            text_dumps()
            tables_read.result()
    else:
        text_dumps()
        table_dumps()
    for index, frame in enumerate(results):
        if frame is not None and frame.is_empty():  # read, and no record in it: the file is named all the same
            _, name, federation = read[index]
            fmt = detect_format(name)
            results[index] = unreadable_record(name, federation, month, fmt, _no_records(fmt), preview(read[index][0]))
    for index, (trailing_problem, line) in trailing.items():
        _, name, federation = read[index]
        extra = unreadable_record(
            name,
            federation,
            month,
            detect_format(name),
            trailing_problem,
            preview(read[index][0][-200:]),
            source_line=line,
            position="after-stream",
        )
        parsed = results[index]
        assert parsed is not None  # every dump has its frame by now (parsed, or its unreadable record)
        results[index] = pl.concat([parsed, extra], how="vertical")
    if encodings is not None:
        encodings[:] = detected
    finished = [frame for frame in results if frame is not None]
    assert len(finished) == len(dumps)  # every dump has its frame (parsed, or its unreadable record)
    return finished


def _no_records(fmt: str) -> str:
    """The problem of a file with text in it and no record: every file read ends as records, so that it is counted."""
    holds = {
        "csv": "a header and no rows",
        "parquet": "no rows",
        "pgn": "no game, only comments, escape lines (%) or blank lines",
    }
    return f"{EMPTY_FILE}: {holds.get(fmt, 'no game')}"


def _read_pgn_zst(source: bytes | DumpFile, key: str) -> tuple[pl.DataFrame, str]:
    """compressed.read_pgn_zst of the bytes, or straight from the DumpFile's file object (closed after)."""
    if isinstance(source, DumpFile):
        handle = source.open()
        try:
            return read_pgn_zst(handle, key)
        finally:
            if source.closes:
                handle.close()
    return read_pgn_zst(source, key)


def _bytes(sources: list[bytes | DumpFile], index: int) -> bytes:
    """The dump's bytes, read whole from its DumpFile the first time (and kept in `sources` from then on)."""
    source = sources[index]
    if isinstance(source, DumpFile):
        source = sources[index] = source.read()
    return source


def _preview(source: bytes | DumpFile) -> str:
    """preview() of a dump's first bytes (read from its DumpFile when it was never read whole)."""
    return preview(source.read(200) if isinstance(source, DumpFile) else source)


def unexpected(error: Exception) -> str:
    """The parse_error of a file an unexpected exception stopped (the message says what, not a traceback)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"could not be read: {type(error).__name__}{': ' + message[:300] if message else ''}"


def _trf_records(batch: list[tuple[int, str]], dumps: list[tuple[bytes, str, str]]) -> pl.DataFrame:
    return parse_trf_batch([text for _, text in batch], [event_key(dumps[index][1]) for index, _ in batch])


def _pgn_records(batch: list[tuple[int, bytes]], dumps: list[tuple[bytes, str, str]]) -> pl.DataFrame:
    return parse_pgn_batch([text for _, text in batch], [event_key(dumps[index][1]) for index, _ in batch])


def _read_batch(
    batch: list[tuple[int, Text]],
    dumps: list[tuple[bytes, str, str]],
    month: str,
    fmt: str,
    results: list[pl.DataFrame | None],
    parse: Callable[[list[tuple[int, Text]], list[tuple[bytes, str, str]]], pl.DataFrame],
) -> None:
    """Parse and finish one batch; when it fails, each of its files alone, so that one file's failure stays its own."""
    try:
        _split_batch(parse(batch, dumps), batch, dumps, month, fmt, results)
        return
    except Exception as error:
        if len(batch) == 1:
            data, name, federation = dumps[batch[0][0]]
            results[batch[0][0]] = unreadable_record(name, federation, month, fmt, unexpected(error), preview(data))
            return
    for item in batch:
        _read_batch([item], dumps, month, fmt, results, parse)


def _split_batch(
    records: pl.DataFrame,
    batch: Sequence[tuple[int, object]],
    dumps: list[tuple[bytes, str, str]],
    month: str,
    fmt: str,
    results: list[pl.DataFrame | None],
) -> None:
    """Finish a batch's records (records.file indexes the batch) and store each file's rows at its dump index."""
    names = [dumps[index][1] for index, _ in batch]
    finished = finish_batch(records, names, [dumps[index][2] for index, _ in batch], month, fmt)
    if len(batch) == 1:  # read_dump and per-file callers: nothing to split
        results[batch[0][0]] = finished
        return
    by_file = finished.with_columns(records["file"]).partition_by("file", as_dict=True, include_key=False)
    for position, (index, _) in enumerate(batch):
        # A file without records (a PGN text of blank lines) still gets its empty frame.
        results[index] = by_file[(position,)] if (position,) in by_file else finished.clear()


def _split_tables(
    contents: list[tuple[int, bytes]],
    fmt: str,
    dumps: Sequence[tuple[bytes | DumpFile, str, str]],
    month: str,
    results: list[pl.DataFrame | None],
    detected: list[str | None],
    sources: list[bytes | DumpFile],
) -> list[tuple[int, TableCells]]:
    """The cells of `fmt` (CSV or Parquet) dumps, split in threads (mostly Polars, which releases the GIL, so large
    files overlap); a dump that cannot be split gets its unreadable record in `results` instead.
    """
    cells_batch: list[tuple[int, TableCells]] = []
    with ThreadPoolExecutor(max_workers=max(1, min(TABLE_CELL_THREADS, len(contents)))) as pool:
        split = pool.map(lambda item: _cells_or_problem(item[1], fmt, dumps[item[0]][1]), contents)
        for (index, _), (cells, encoding, why) in zip(contents, split, strict=True):
            if cells is None:
                _, name, federation = dumps[index]
                results[index] = unreadable_record(name, federation, month, fmt, why, _preview(sources[index]))
            else:
                detected[index] = encoding
                cells_batch.append((index, cells))
    return cells_batch


def _table_records(batch: list[tuple[int, TableCells]], dumps: list[tuple[bytes, str, str]]) -> pl.DataFrame:
    return table_records([cells for _, cells in batch], [event_key(dumps[index][1]) for index, _ in batch])


def _cells_or_problem(content: bytes, fmt: str, name: str) -> tuple[TableCells | None, str | None, str]:
    """(cells, text encoding, '') of a CSV or Parquet dump, or (None, None, why it cannot be read)."""
    try:
        cells, encoding = _table_cells(content, fmt)
        return cells, encoding, ""
    except Exception as error:  # see unreadable_because
        return None, None, unreadable_because(error, name)


def unreadable_because(error: Exception, name: str) -> str:
    """Why a dump cannot be read, for its unreadable record. Any exception counts: a bug or a library failure on odd
    content is this file's problem, not the run's.
    """
    if isinstance(error, DumpTooLarge):
        return f"{name}: {error}"
    if isinstance(error, UnreadableDump):
        return str(error)
    return unexpected(error)


def _table_cells(content: bytes, fmt: str) -> tuple[TableCells, str | None]:
    """(cells, text encoding) of a CSV or Parquet dump (raises UnreadableDump for content that is not one)."""
    if fmt == "parquet":
        return parquet_cells(content), None
    text, encoding = decode_text_detected(content)
    return csv_cells(text), encoding


def _batches(texts: list[tuple[int, Raw]], limit: int) -> list[list[tuple[int, Raw]]]:
    """Consecutive groups of texts of at most `limit` characters or bytes (a larger text is a group of its own)."""
    batches: list[list[tuple[int, Raw]]] = []
    size = 0
    for item in texts:
        if not batches or size + len(item[1]) > limit:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += len(item[1])
    return batches
