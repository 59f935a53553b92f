"""The fast PGN paths read exactly what the plain ones read: pieces cut anywhere, .pgn.zst streamed, caps kept."""

from __future__ import annotations

import functools
import random

import pyarrow as pa
import pytest

import pipeline.formats.compressed as compressed
import pipeline.formats.pgn as pgn
from pipeline.formats import read_dump
from pipeline.formats.decoding import utf8_lf_bytes

GAME = (
    '[Event "Open {0}"]\n[Site "Town"]\n[Date "2024.03.{1:02d}"]\n[Round "{2}.1"]\n[White "Müller, {0}"]\n'
    '[Black "Player, {1}"]\n[Result "1-0"]\n[WhiteFideId "{3}"]\n[BlackFideId "4600011"]\n[WhiteElo "2105"]\n'
    '[BlackElo "?"]\n[TimeControl "5400+30"]\n\n{4} 1-0\n\n'
)
MOVES = [
    "1. e4 e5 2. Nf3",
    '1. e4 {a comment\n\n[Event "inside a comment"]\n} e5',  # a tag-like line inside a comment spanning lines
    "1. d4 ; a line comment {\n2. c4",  # ';' hides the brace
    "{ [%clk 0:03:00] } 1. e4 { [%clk 0:02:59] }",
    "[%clk 0:01:00]\n1. c4",
    '1. e4 e5\n\n[Event "Say \\"hi\\""]\n[Result "0-1"]\n\n0-1',  # escapes: the slow path, in another game
    "",
]


def _pgn(games: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    return "".join(
        GAME.format(g % 7, g % 28 + 1, g % 9 + 1, rng.choice(["4600003", "", "abc", "1850.0"]), rng.choice(MOVES))
        for g in range(games)
    ).encode()


def _zst(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(data)
    return sink.getvalue().to_pybytes()


def _read(data: bytes, name: str = "x.pgn"):
    return read_dump(data, f"GER/2024-01/{name}", "GER", "2024-01")


@pytest.mark.parametrize("chunk_bytes", [64, 301, 1000])
def test_streamed_pieces_equal_the_whole_texts_pieces(monkeypatch, chunk_bytes):
    monkeypatch.setattr(pgn, "CHUNK_BYTES", chunk_bytes)
    text = utf8_lf_bytes(_pgn(40) + b"\n\n[%not a tag]\n\n" + _pgn(5, seed=1))
    whole = [text[begin:end] for begin, end in pgn._chunk_bounds(text)]
    for block in (1, 2, 3, 17, 500, len(text)):
        blocks = [text[at : at + block] for at in range(0, len(text), block)]
        assert list(pgn.stream_pieces(iter(blocks))) == whole


@pytest.mark.parametrize("chunk_bytes", [64, 257, 700, 4096])
def test_pieces_cut_inside_games_comments_and_tags_change_nothing(monkeypatch, chunk_bytes):
    data = _pgn(60, seed=chunk_bytes)
    whole = _read(data)
    monkeypatch.setattr(pgn, "CHUNK_BYTES", chunk_bytes)
    assert len(pgn._chunk_bounds(utf8_lf_bytes(data))) > 3
    assert _read(data).equals(whole)


@pytest.mark.parametrize("block", [5, 333, 1 << 20])
@pytest.mark.parametrize("crlf", [False, True])
def test_zst_is_streamed_and_equals_the_plain_file(monkeypatch, block, crlf):
    data = _pgn(80, seed=block)
    data = data.replace(b"\n", b"\r\n") if crlf else data
    plain = _read(data, "x.pgn")
    monkeypatch.setattr(compressed, "STREAM_BLOCK", block)
    monkeypatch.setattr(pgn, "CHUNK_BYTES", 900)  # several pieces, filled from several blocks
    streamed = _read(_zst(data), "x.pgn.zst")
    assert streamed.drop("record_id", "source_file").equals(plain.drop("record_id", "source_file"))
    assert streamed["source_file"].unique().to_list() == ["GER/2024-01/x.pgn.zst"]


def test_zst_holds_one_piece_at_a_time(monkeypatch):
    """The parser is handed pieces as the stream goes, not the file once it is read."""
    monkeypatch.setattr(compressed, "STREAM_BLOCK", 1000)
    monkeypatch.setattr(pgn, "CHUNK_BYTES", 2000)
    data = _pgn(100)
    plain_height = _read(data).height
    seen: list[int] = []
    real = pgn.byte_lines

    def spy(buffer):
        seen.append(len(buffer))
        return real(buffer)

    monkeypatch.setattr(pgn, "byte_lines", spy)
    assert _read(_zst(data), "x.pgn.zst").height == plain_height > 100
    assert len(seen) >= 10 and max(seen) < 4000  # about a piece each (a cut waits for the next game start)


@pytest.mark.parametrize(
    ("content", "encoding"),
    [
        ('[Event "Café"]\n[Result "1-0"]\n\n1. e4 1-0\n'.encode("cp1252"), "windows-1252"),
        ('[Event "Café"]\n[Result "1-0"]\n\n1. e4 1-0\n'.encode("utf-16"), "utf-16"),
        (b"\xef\xbb\xbf" + _pgn(3), "utf-8"),
    ],
)
def test_zst_encodings_are_decided_per_file_as_before(content, encoding):
    encodings: list[str | None] = []
    streamed = read_dump(_zst(content), "GER/2024-01/e.pgn.zst", "GER", "2024-01", encodings)
    plain = _read(content, "e.pgn")
    assert encodings == [encoding]
    assert streamed.drop("record_id", "source_file").equals(plain.drop("record_id", "source_file"))


def test_zst_beyond_the_size_cap_is_one_record_naming_the_cap(monkeypatch):
    monkeypatch.setattr(compressed, "MAX_DECOMPRESSED_BYTES", 1 << 20)
    monkeypatch.setattr(compressed, "STREAM_BLOCK", 1 << 16)
    records = _read(_zst(_pgn(5000)), "big.pgn.zst")
    assert records.height == 1
    assert records["parse_error"][0] == (
        "GER/2024-01/big.pgn.zst: decompresses to more than 1 MiB, the cap per file (MAX_DECOMPRESSED_BYTES); "
        "not read: split it into parts within the cap in the same month folder"
    )


def test_zst_beyond_the_line_cap_is_one_record_naming_the_cap(monkeypatch):
    monkeypatch.setattr(compressed, "MAX_LINES_PER_FILE", 1000)
    records = _read(_zst(_pgn(200)), "long.pgn.zst")
    assert records.height == 1
    assert records["parse_error"][0] == (
        "GER/2024-01/long.pgn.zst: has more than 1,000 lines, the cap per file (MAX_LINES_PER_FILE); not read: "
        "split it into parts within the cap in the same month folder"
    )


@pytest.mark.parametrize(
    ("content", "reason"), [(b"", "empty file"), (b" \n\n", "empty file"), (bytes(range(256)) * 50, "binary content")]
)
def test_zst_empty_and_binary_files(content, reason):
    records = _read(_zst(content), "odd.pgn.zst")
    assert records.height == 1 and records["parse_error"][0].startswith(reason)


def test_corrupt_and_truncated_zst_are_one_record():
    packed = _zst(_pgn(50))
    for broken in (packed[: len(packed) // 2], packed[:8] + b"\xff" * 16 + packed[24:]):
        records = _read(broken, "bad.pgn.zst")
        assert records.height == 1 and records["parse_error"][0].startswith("corrupt zstd stream")


def test_zst_from_the_object_store_is_never_held_whole(tmp_path):
    """read_month streams a .pgn.zst from ObjectStore.open: memory stays far below the compressed file's size."""
    import base64
    import os
    import tracemalloc

    from pipeline.ingest.dumps import read_month
    from pipeline.store.object_store import ObjectStore

    # Games with long incompressible comments: about 36 MB compressed, 48 MB of text.
    comments = base64.b64encode(os.urandom(36 << 20)).decode()
    step = 24_000
    text = "".join(
        GAME.format(g % 7, g % 28 + 1, g % 9 + 1, 4600003 + g, "1. e4 {" + comments[at : at + step] + "}")
        for g, at in enumerate(range(0, len(comments), step))
    ).encode()
    packed = _zst(text)
    del comments, text
    target = tmp_path / "raw" / "GER" / "2024-01" / "big.pgn.zst"
    target.parent.mkdir(parents=True)
    target.write_bytes(packed)
    tracemalloc.start()
    try:
        streamed = read_month(ObjectStore(str(tmp_path)), "2024-01")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(packed) > 30 << 20
    assert peak < len(packed) / 2, f"{peak:,} bytes held at the peak for a file of {len(packed):,}"
    assert streamed.height > 1000 and streamed["parse_error"].null_count() == streamed.height
    assert streamed.equals(read_dump(packed, "GER/2024-01/big.pgn.zst", "GER", "2024-01"))


def test_read_file_streams_a_zst_path_or_handle_and_falls_back_for_other_encodings(tmp_path):
    from pipeline.formats import DumpFile
    from pipeline.ingest.dumps import read_file

    name = "GER/2024-01/x.pgn.zst"
    for content in (_pgn(30), '[Event "Café"]\n[Result "1-0"]\n\n1. e4 1-0\n'.encode("cp1252")):
        packed = _zst(content)
        path = tmp_path / "x.pgn.zst"
        path.write_bytes(packed)
        expected = read_dump(packed, name, "GER", "2024-01")
        assert read_file(path, name, "GER", "2024-01").equals(expected)
        with path.open("rb") as handle:
            handle.read(0)
            assert read_file(handle, name, "GER", "2024-01").equals(expected)
            assert not handle.closed  # the caller's handle is the caller's to close
        encodings: list[str | None] = []
        source = DumpFile(functools.partial(path.open, "rb"))
        assert read_dump(source, name, "GER", "2024-01", encodings).equals(expected)
        assert encodings == ["utf-8" if content.isascii() or b"\xc3" in content else "windows-1252"]


def test_a_store_that_fails_to_read_raises_and_a_file_gone_is_one_record():
    import io

    from pipeline.formats import DumpFile
    from pipeline.formats.common import StorageReadError

    class Failing(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            raise ConnectionError("the store went away")

    def missing():
        raise FileNotFoundError("gone")

    for name in ("GER/2024-01/x.pgn.zst", "GER/2024-01/x.pgn"):
        with pytest.raises(StorageReadError):
            read_dump(DumpFile(Failing), name, "GER", "2024-01")
        # The file gone since the listing is the file's problem, not the store's: one record says so.
        gone = read_dump(DumpFile(missing), name, "GER", "2024-01")
        assert gone["parse_error"].to_list() == [
            "the file is gone: it was deleted or renamed after the landing zone was listed"
        ]


@pytest.mark.parametrize("chunk_bytes", [64, 300, 1200])
def test_pieces_read_in_place_equal_padded_copies(monkeypatch, chunk_bytes):
    """A large file's pieces are read where they lie: the next piece's bytes after them (quotes, escapes, braces,
    ';' and NUL bytes) change nothing against reading each piece from a zero-padded copy.
    """
    odd = '[Event "Say \\"hi\\""]\n[Site "{x;"]\n[White "a\\\\b"]\n[Result "1-0"]\n\n{ ; } 1. e4 1-0\n\n'
    data = (_pgn(30, seed=3).decode() + odd + _pgn(20, seed=4).decode() + odd).encode()
    data = data.replace(b'[Black "Player, 5"]', b'[Black "Play\x00er"]')
    monkeypatch.setattr(pgn, "CHUNK_BYTES", chunk_bytes)
    in_place = _read(data)
    copied: list[int] = []

    def copy(source, begin, end):
        copied.append(end - begin)
        return pgn.byte_lines(memoryview(source)[begin:end])

    monkeypatch.setattr(pgn, "lines_in", copy)
    assert _read(data).equals(in_place, null_equal=True)
    assert len(copied) > 3


def test_lines_in_reads_in_place_only_with_room_after():
    from pipeline.formats.scan import PADDING, lines_in

    text = b"[a]\n\n" * 40
    inside = lines_in(text, 0, 20)
    assert inside.source is text and inside.text_length == 20 and inside.count == 8
    assert not inside.holds(b"]\n\n[a]\n\n[a]\n\n[a]\n\n[a]\n")  # the bytes after the text are not its own
    at_end = lines_in(text, len(text) - 10, len(text))  # no PADDING bytes after: a zero-padded copy
    assert at_end.source is not text and bytes(at_end.arr[10:]) == bytes(PADDING)
    unfinished = lines_in(text, 0, 18)  # no final newline: a copy that supplies it
    assert unfinished.source is not text and unfinished.text_length == 19
