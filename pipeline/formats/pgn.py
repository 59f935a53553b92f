"""PGN game headers -> one raw record per game.

NumPy scans the bytes for lines, tag sections and values; Polars types them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.formats.byes import BYE_FIRST_BYTES, BYE_LAST_BYTES, BYE_NAME_MAX_BYTES, bye_names
from pipeline.formats.common import CONFLICTING_TAGS
from pipeline.formats.decoding import utf8_lf_bytes
from pipeline.formats.fields import (
    RESULT_SPELLINGS,
    blank_to_null,
    classify_time_control,
    date_error,
    join_errors,
    minutes_written_as_seconds,
    parse_id,
    parse_int,
    parse_iso_date,
    parse_time_control,
    quoted,
    result_as_read,
    stated_class,
    title_code,
    unreadable_clock,
)
from pipeline.formats.scan import (
    PADDING,
    SPACE,
    TAB,
    ByteLines,
    byte_lines,
    digit_run,
    leading_digits,
    lines_in,
    parse_digits,
    parse_ymd,
    string_views,
    windows,
    words16,
)

TAGS = [
    "Event",
    "Date",
    "EventDate",
    "Round",
    "White",
    "Black",
    "Result",
    "WhiteFideId",
    "BlackFideId",
    "WhiteElo",
    "BlackElo",
    "WhiteTitle",
    "BlackTitle",
    "TimeControl",
    "Termination",
]
T = TypeVar("T")
_TAG_INDEX = {tag: index for index, tag in enumerate(TAGS)}
# Tag names are case-sensitive in the PGN standard (8.1), but exports write '[white "..."]' or 'WhiteFIDEId', and no
# tag differs from a wanted one by case alone: names are matched whatever their case (a choice: README, "Rating your
# own federation's files").
_FOLDED_INDEX = {tag.lower(): index for index, tag in enumerate(TAGS)}
_EVENT = _TAG_INDEX["Event"]
_MISSING = ["", "?", "-", "0"]  # how PGN exports spell "no id" / "unrated" (the Olympiad file uses Elo "0")
_MISSING_BYTE = np.zeros(256, dtype=bool)
_MISSING_BYTE[[ord(spelling) for spelling in _MISSING if len(spelling) == 1]] = True
assert "" in _MISSING and all(len(spelling) <= 1 for spelling in _MISSING), "spellings _int_values settles by bytes"

# Large files are scanned in pieces cut at game starts: the per-line arrays of a few MB stay in
# the CPU caches (4 MB pieces read about 20 % faster than 32 MB ones, and memory stays flat).
CHUNK_BYTES = 4 << 20
# Tag names are read from a fixed window after '['; longer names are never among TAGS.
_NAME_WINDOW = 16
_NAME_BYTES = np.zeros(256, dtype=bool)
_NAME_BYTES[[ord(c) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"]] = True
_QUOTE, _OPEN, _CLOSE, _BACKSLASH, _PERCENT = (ord(c) for c in '"[]\\%')
_BRACE_OPEN, _BRACE_CLOSE, _SEMICOLON = (ord(c) for c in "{};")
_ID_TAGS = ("WhiteFideId", "BlackFideId")
# The slow path for the rare tag lines the byte test does not accept (escapes, odd spacing, junk).
_TAG_LINE = re.compile(r'\[\s*([A-Za-z0-9_]+)\s+"(.*)"\s*\]')
# '[Event "x"] [Site "y"]': several tags on one line are reported as a malformed tag line.
_SECOND_TAG = re.compile(r'(?<!\\)"\s*\]\s*\[\s*[A-Za-z0-9_]+\s+"')
# Several games' Event tags on one line, counted whatever the tag's case, as tag names are read (README).
_EVENT_TAG = re.compile(r"(?i)\[event\s")
# A movetext line that opens with a numbered move ('1. e4', '12...Nf6' is not needed: first lines only).
_OPENS_WITH_MOVE = r"^\d+\.\s*[a-hKQRBNO]"
# Per game: whether its Event / TimeControl / Termination starts a run of equal values (see _per_run).
_RUN_COLUMNS = ("_new_Event", "_new_TimeControl", "_new_Termination")
_MALFORMED = -2
_UNWANTED = -1
# Elo values are read into Int32 columns.
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # the first k bytes of a word
_ONE_BYTES = np.uint64(0x0101010101010101)


def _pattern_words(pattern: bytes) -> tuple[int, int, int, int]:
    """A pattern of up to 16 bytes as (low word, high word, low mask, high mask): little-endian, zero-padded."""
    padded, mask = pattern.ljust(_NAME_WINDOW, b"\0"), (b"\xff" * len(pattern)).ljust(_NAME_WINDOW, b"\0")
    return (
        int.from_bytes(padded[:8], "little"),
        int.from_bytes(padded[8:], "little"),
        int.from_bytes(mask[:8], "little"),
        int.from_bytes(mask[8:], "little"),
    )


# A wanted tag line opens with its name, a blank and a quote: '[Event "'. After the '[', the first
# six bytes of that pattern, case folded ('event ', 'eventd', 'date "', 'whitef', 'whitee'...), tell the wanted
# names apart; a multiplicative hash of them picks a slot of a small table holding the candidate's
# index in TAGS (or a last candidate that matches nothing), and the whole pattern confirms it.
_PATTERNS = [_pattern_words(tag.lower().encode() + b' "') for tag in TAGS] + [(1, 0, 0, 0)]  # (1 & 0) != ... never
_PATTERN_LOW, _PATTERN_HIGH, _PATTERN_MASK_LOW, _PATTERN_MASK_HIGH = (
    np.array(column, dtype=np.uint64) for column in zip(*_PATTERNS, strict=True)
)
_PATTERN_MASK_LOW[-1] = 0  # the never-matching candidate: (low & 0) is never 1
_NAME_LENGTH = np.array([len(tag.encode()) for tag in TAGS] + [0], dtype=np.int64)
_PREFIX_MASK = np.uint64((1 << 48) - 1)
_HASH_MULTIPLIER = np.uint64(0xFF51AFD7ED558CCD)  # MurmurHash3's finaliser constant: no two wanted names collide
_HASH_BITS = 8  # 7 bits put two of the case-folded names in one slot
# OR-ing 0x20 into every byte folds ASCII capitals to lower case and keeps digits, the blank and the quote; bytes it
# turns into a blank or a quote (NUL, 0x02) are no name or spacing the fast path then accepts.
_FOLD = np.uint64(0x2020202020202020)


def _slot(low: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return ((low & _PREFIX_MASK) * _HASH_MULTIPLIER) >> np.uint64(64 - _HASH_BITS)


_SLOT_TAG = np.full(1 << _HASH_BITS, len(TAGS), dtype=np.intp)
_SLOT_TAG[_slot(_PATTERN_LOW[: len(TAGS)])] = np.arange(len(TAGS))
assert len(np.unique(_slot(_PATTERN_LOW[: len(TAGS)]))) == len(TAGS), "two wanted tag names share a hash slot"


def parse_pgn(text: str, event_key: str) -> pl.DataFrame:
    """Records of one PGN file given as text (see parse_pgn_bytes)."""
    return parse_pgn_bytes(text.encode("utf-8"), event_key)


def parse_pgn_bytes(data: bytes, event_key: str) -> pl.DataFrame:
    """Records of one PGN file (columns of common.RECORD_COLUMNS; position = game number)."""
    return parse_pgn_batch([utf8_lf_bytes(data)], [event_key]).drop("file")


def parse_pgn_batch(texts: list[bytes], event_keys: list[str]) -> pl.DataFrame:
    """Records of many PGN files at once, with a 'file' column: the index of the text in `texts`.

    The texts must be UTF-8 with LF line ends (utf8_lf_bytes). Small files are laid end to end and
    scanned together, so a month of small files costs about what one file of their total size does;
    line numbers, game numbers, preambles and event ids still come out per file.
    """
    return _parse_pieces(_pieces(texts), event_keys)


def parse_pgn_stream(blocks: Iterable[bytes], event_key: str) -> pl.DataFrame:
    """Records of one PGN file given as consecutive blocks of its UTF-8, LF-only text (a decompressing
    stream), with a 'file' column of zeros; equal to parse_pgn_batch([b"".join(blocks)], [event_key]).

    The file is cut into the same pieces as a whole text would be (see _chunk_bounds), and each
    piece's text columns are copied out of it, so that only about one piece is held at a time.
    """
    single, origin = np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.int64)
    # Each piece goes straight from the stream's buffer into its ByteLines, and nothing between here and
    # _parse_pieces keeps it once the next one is being made.
    pieces = stream_pieces(blocks, lambda piece: (byte_lines(piece), single, origin))
    return _parse_pieces(pieces, [event_key], compact=True)


def _parse_pieces(
    pieces: Iterable[tuple[ByteLines | Callable[[], ByteLines], np.ndarray, np.ndarray]],
    event_keys: list[str],
    compact: bool = False,
) -> pl.DataFrame:
    """The records of the files `event_keys` names, scanned piece by piece (see _pieces): a piece comes as its
    ByteLines, or as what makes them when they are needed.
    """
    files_count = len(event_keys)
    parts: list[pl.DataFrame] = []
    preambles: list[pl.DataFrame] = []
    # Lines and games of a large file's earlier pieces, which number the later pieces' lines and games.
    lines_before = np.zeros(files_count, dtype=np.int64)
    games_before = np.zeros(files_count, dtype=np.int64)
    for buffer, files, byte_starts in pieces:
        lines = buffer if isinstance(buffer, ByteLines) else buffer()
        del buffer
        segments = _Segments(files, byte_starts, lines_before[files], games_before[files])
        games, preamble = _scan(lines, segments, escapes=lines.holds(b"\\"))
        lines_before[files] += np.diff(np.searchsorted(lines.starts, byte_starts), append=lines.count)
        games_before += np.bincount(games["file"].to_numpy(), minlength=files_count)
        parts.append(_own_strings(games) if compact else games)
        del lines, games  # before the next piece's lines are built (streamed pieces: one piece at a time)
        if preamble is not None:
            preambles.append(preamble)
    records = _records(pl.concat(parts) if parts else _empty_games(), event_keys)
    if not preambles:
        return records
    # A file's preamble record comes before its games (the stable sort keeps each file's order).
    return pl.concat([*preambles, records], how="diagonal_relaxed").sort("file", maintain_order=True)


def _own_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with its text columns copied into buffers of their own (they are views into the piece's bytes)."""
    return frame.with_columns(
        pl.Series(name, pl.from_arrow(frame[name].to_arrow().cast(pa.large_string())), dtype=pl.Utf8)
        for name, dtype in frame.schema.items()
        if dtype == pl.Utf8
    )


def stream_pieces(blocks: Iterable[bytes], make: Callable[[memoryview], T] = bytes) -> Iterator[T]:  # type: ignore[assignment]
    """The pieces _pieces would cut from the concatenated blocks (one text), without joining them, each as
    `make` turns its bytes (a memoryview, valid during the call only) into what is yielded.

    A text of at most CHUNK_BYTES is one piece; a longer one is cut where _chunk_bounds cuts it:
    at the first game start at least CHUNK_BYTES into the piece. Only the text not yet cut off and
    the block being read are held here. An empty text has no piece.
    """
    buffer = bytearray()
    searched = 0  # candidates before this offset of `buffer` were rejected (or not yet reachable)
    for block in blocks:
        buffer += block
        while len(buffer) > CHUNK_BYTES:
            cut, searched = _next_cut(buffer, max(searched, CHUNK_BYTES), final=False)
            if cut is None:
                break
            yield _made(make, buffer, cut)
            del buffer[:cut]
            searched = 0
    while len(buffer) > CHUNK_BYTES:
        cut, searched = _next_cut(buffer, max(searched, CHUNK_BYTES), final=True)
        if cut is None:
            break
        yield _made(make, buffer, cut)
        del buffer[:cut]
        searched = 0
    if buffer:
        yield _made(make, buffer, len(buffer))


def _made(make: Callable[[memoryview], T], buffer: bytearray, end: int) -> T:
    """make(the first `end` bytes of buffer), the view released before the buffer is cut."""
    with memoryview(buffer) as view, view[:end] as piece:
        return make(piece)


def _next_cut(buffer: bytearray, start: int, final: bool) -> tuple[int | None, int]:
    """(where the piece that opens `buffer` ends, or None; offset to search on from), as _chunk_bounds decides.

    Not `final`: more text may follow, so a candidate whose next byte is not there yet waits.
    """
    cut = buffer.find(b"\n\n[", start)
    while cut != -1:
        if not final and cut + 3 >= len(buffer):
            return None, cut  # whether it is '[%' is not known yet
        # '[%clk ...' is a comment, not a tag; nor is a '[' line inside a {comment}.
        if buffer[cut + 3 : cut + 4] == b"%" or buffer.rfind(b"{", 0, cut) > buffer.rfind(b"}", 0, cut):
            cut = buffer.find(b"\n\n[", cut + 3)
            continue
        return cut + 2, 0
    # No candidate yet: the last two bytes may open one that the next block completes.
    return None, max(start, len(buffer) - 2)


def _pieces(texts: list[bytes]) -> list[tuple[Callable[[], ByteLines], np.ndarray, np.ndarray]]:
    """(what makes its ByteLines, file indexes, byte offsets) to scan: small files end to end up to CHUNK_BYTES,
    larger ones in pieces.

    Every file of a joint piece ends with a newline, so no line runs on into the next file. Empty
    texts have no lines, so no records, and get no piece. A large file's pieces are read in place
    (lines_in: its bytes after a piece pad it), all but the last, which is copied; small files are
    joined with the padding after them, so no piece's text is copied twice.
    """
    groups: list[list[int]] = []
    size = CHUNK_BYTES  # full: the next file opens a group
    for index, text in enumerate(texts):
        if not text:
            continue
        if len(text) > CHUNK_BYTES:
            groups.append([index])
            size = CHUNK_BYTES
            continue
        if size + len(text) + 1 > CHUNK_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(index)
        size += len(text) + 1
    pieces: list[tuple[Callable[[], ByteLines], np.ndarray, np.ndarray]] = []
    for group in groups:
        text = texts[group[0]]
        if len(text) > CHUNK_BYTES:
            pieces.extend(
                (partial(lines_in, text, begin, end), np.array(group), np.zeros(1, dtype=np.int64))
                for begin, end in _chunk_bounds(text)
            )
            continue
        parts = [texts[index] if texts[index].endswith(b"\n") else texts[index] + b"\n" for index in group]
        offsets = np.cumsum([0] + [len(part) for part in parts[:-1]])
        joined = b"".join([*parts, bytes(PADDING)])
        pieces.append((partial(lines_in, joined, 0, len(joined) - PADDING), np.array(group), offsets))
    return pieces


def _chunk_bounds(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of about CHUNK_BYTES that each begin with a game (a tag line after a blank line)."""
    bounds, begin = [], 0
    while len(data) - begin > CHUNK_BYTES:
        cut = data.find(b"\n\n[", begin + CHUNK_BYTES)
        # '[%clk ...' is a comment, not a tag; nor is a '[' line inside a {comment} (the last brace before it is '{').
        while cut != -1 and (
            data[cut + 3 : cut + 4] == b"%" or data.rfind(b"{", begin, cut) > data.rfind(b"}", begin, cut)
        ):
            cut = data.find(b"\n\n[", cut + 3)
        if cut == -1:
            break
        bounds.append((begin, cut + 2))
        begin = cut + 2
    bounds.append((begin, len(data)))
    return bounds


@dataclass
class _TagValues:
    """The first value of one tag in each game of a chunk: a byte range, or a slow-path string."""

    start: np.ndarray
    length: np.ndarray
    present: np.ndarray
    slow: dict[int, str]  # game index (0-based) -> unescaped value


@dataclass
class _Segments:
    """The files (or the piece of one large file) laid end to end in a scanned piece."""

    file: np.ndarray  # index of each segment's file in the batch
    byte_start: np.ndarray  # offset of each segment in the piece
    line_offset: np.ndarray  # lines of the file before the segment (a large file's earlier pieces)
    game_offset: np.ndarray  # games of the file before the segment


def _scan(lines: ByteLines, segments: _Segments, escapes: bool) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """One row per game of a piece (file, first tag line, header block, typed tag values, move facts), and its files'
    preambles.

    escapes: the piece holds a backslash.
    """
    arr, starts, ends = lines.arr, lines.starts, lines.ends
    first = arr[starts]
    content = starts
    indented = np.flatnonzero(((first == SPACE) | (first == TAB)) & (starts < ends))
    if len(indented):  # rare: lines that start with blanks
        content = starts.copy()
        for i in indented.tolist():
            content[i] = ends[i] - len(bytes(arr[starts[i] : ends[i]]).lstrip(b" \t"))
        first_content = arr[content]
    else:
        first_content = first
    blank = content >= ends
    tagish = ~blank & (first_content == _OPEN) & (arr[content + 1] != _PERCENT)
    escape = first == _PERCENT

    segment_first = np.searchsorted(starts, segments.byte_start)
    # One file from the piece's first byte (a large file's piece, or a lone small file): no search.
    single = len(segments.byte_start) == 1 and segments.byte_start[0] == 0
    if single:
        segment = np.zeros(lines.count, dtype=np.intp)
    else:
        segment = np.searchsorted(segments.byte_start, starts, side="right") - 1
    unclosed: np.ndarray | None = None
    if lines.holds(b"{"):  # a line that starts inside a {comment} is part of it, never a tag line
        in_comment, unclosed = _comment_lines(lines, content, tagish, escape, segments.byte_start)
        tagish &= ~in_comment
    movetext = ~blank & ~tagish & ~escape
    # 0-based line number of every line within its file.
    if single:
        file_line = np.arange(lines.count, dtype=np.int64) + int(segments.line_offset[0] - segment_first[0])
    else:
        file_line = np.arange(lines.count) - (segment_first - segments.line_offset)[segment]

    tag_lines = np.flatnonzero(tagish)
    tag_of, value_start, value_end, slow_values = _tags(
        lines, tag_lines, content.take(tag_lines), ends.take(tag_lines), escapes
    )
    continued = _broken_values(lines, content, tag_lines[tag_of == _MALFORMED], tagish, blank, escape)
    if len(continued):  # rare: they join the tag lines, malformed
        tagish[continued], movetext[continued] = True, False
        at = np.searchsorted(tag_lines, continued)
        slow_values = {j + int(np.searchsorted(at, j, side="right")): value for j, value in slow_values.items()}
        tag_lines, tag_of = np.insert(tag_lines, at, continued), np.insert(tag_of, at, _MALFORMED)
        value_start, value_end = np.insert(value_start, at, 0), np.insert(value_end, at, 0)
    game = _game_numbers(tagish, tag_lines, tag_of, None if single else segment, segment_first)
    games = int(game.max(initial=0))
    preamble = _preamble(lines, game, blank, escape, file_line, segments.file, segment)
    if games == 0:
        return _empty_games(), preamble

    first_line = np.flatnonzero(np.diff(game, prepend=0) > 0)
    game_segment = segment[first_line]
    # Game number within its file: games count on from the file's earlier pieces.
    position = np.arange(games) - np.searchsorted(game_segment, game_segment) + 1 + segments.game_offset[game_segment]
    tag_game = game.take(tag_lines)
    last_tag = tag_lines.take(np.searchsorted(tag_game, np.arange(1, games + 1), side="right") - 1)
    first_rows, repeated = _first_rows(tag_of, tag_game, games)
    values = _first_values(first_rows, value_start, value_end, slow_values)
    errors: dict[int, list[str]] = {}
    if len(repeated):  # rare: a game gives a wanted tag more than once
        _conflicting_tags(
            lines, repeated, (tag_of, tag_game, tag_lines, file_line), (value_start, value_end), slow_values, errors
        )
    malformed_at = np.flatnonzero(tag_of == _MALFORMED)
    malformed_games, first_malformed = np.unique(tag_game[malformed_at], return_index=True)
    runs_on = set(continued.tolist())
    for g, line in zip(malformed_games.tolist(), tag_lines[malformed_at[first_malformed]].tolist(), strict=True):
        error = f"malformed tag line {file_line[line] + 1}: {lines.text(line)}"
        if line + 1 in runs_on:
            last = line + 1
            while last + 1 in runs_on:
                last += 1
            error += f" (its value runs on to line {file_line[last] + 1}: a line break inside a tag value)"
        elif (count := len(_EVENT_TAG.findall(lines.text(line)))) > 1:
            error += f" ({count} games on one line, read as one record: a PGN tag stands on a line of its own)"
        errors.setdefault(g - 1, []).append(error)
    if unclosed is not None:
        for line in unclosed.tolist():
            if game[line] > 0:
                errors.setdefault(int(game[line]) - 1, []).append(
                    f"comment '{{' on line {file_line[line] + 1} is never closed (read as ending with its line)"
                )
    # A NUL byte spoils the game whose lines hold it, not the file (the zero padding is no NUL of the text).
    if lines.holds(b"\x00"):
        nul_lines = np.unique(np.searchsorted(starts, np.flatnonzero(arr[: len(arr) - PADDING] == 0), side="right") - 1)
        for line in nul_lines[game[nul_lines] > 0].tolist():
            errors.setdefault(int(game[line]) - 1, []).append(
                f"line {file_line[line] + 1} holds a NUL byte (binary data)"
            )
    white_id = _int_values(lines, values["WhiteFideId"], "WhiteFideId", errors)
    black_id = _int_values(lines, values["BlackFideId"], "BlackFideId", errors)
    white_name, white_bye = _names(lines, values["White"])
    black_name, black_bye = _names(lines, values["Black"])
    # A side written as a bye ('BYE', 'Half-point bye'...) without an id: the round was not played.
    bye = np.zeros(games, dtype=bool)
    for named, given in ((white_bye, white_id), (black_bye, black_id)):
        if named.any():
            bye |= named & given.is_null().to_numpy()
    white_elo = _int_values(lines, values["WhiteElo"], "WhiteElo", errors)
    # Titles as codes (GM, WIM, ...; Lichess's NM, LM and BOT are no FIDE titles: null). PGN has no federation tag
    # (WhiteTeam holds a country's or a club's name), so white_federation and black_federation stay null.
    titles = pl.DataFrame(
        {
            "white": _strings(lines, values["WhiteTitle"], trim=True),
            "black": _strings(lines, values["BlackTitle"], trim=True),
        }
    ).select(title_code(pl.col("white")).alias("white_title"), title_code(pl.col("black")).alias("black_title"))
    black_elo = _int_values(lines, values["BlackElo"], "BlackElo", errors)
    result = _strings(lines, values["Result"], trim=True)
    day, day_from, day_to = _date_values(lines, values["Date"], "Date", errors)
    event_start, start_from, _ = _date_values(lines, values["EventDate"], "EventDate", errors)
    # A game is played on or after its event's start: an EventDate known in part bounds an undated game's day too.
    date_from = pl.select(pl.when(day.is_null()).then(pl.max_horizontal(day_from, start_from))).to_series()
    _before_partial_start(day, day_to, event_start, start_from, errors)
    moves_known, has_move, last_move_line = _move_facts(lines, game, movetext, content, games, result)
    _disagreeing_results(lines, np.where(has_move, last_move_line, -1), values["Result"], result, file_line, errors)
    # Where a file's runs of equal Event, TimeControl and Termination values start (see _per_run). _records reads
    # those columns only there, so only there are they made (a run's other games hold null).
    file_starts = np.ones(games, dtype=bool)
    file_starts[1:] = game_segment[1:] != game_segment[:-1]
    run_starts = {tag: _changes(arr, values[tag]) | file_starts for tag in ("Event", "TimeControl", "Termination")}
    frame = pl.DataFrame(
        {
            "file": pl.Series(segments.file[game_segment], dtype=pl.Int32),
            "source_line": pl.Series(file_line[first_line] + 1, dtype=pl.Int64),
            "position": pl.Series(position, dtype=pl.Int64).cast(pl.Utf8),
            "raw_text": string_views(lines, starts[first_line], ends[last_tag] - starts[first_line]),
            "parse_error": _error_column(errors, games),
            "Event": _at_run_starts(lines, values["Event"], run_starts["Event"], trim=True),
            "date": day,
            "date_from": date_from,
            "date_to": day_to,
            "event_start": event_start,
            "round": _round_values(lines, values["Round"]),
            "white_id": white_id,
            "black_id": black_id,
            "white_name": white_name,
            "black_name": black_name,
            "Result": result,
            "TimeControl": _at_run_starts(lines, values["TimeControl"], run_starts["TimeControl"]),
            "Termination": _at_run_starts(lines, values["Termination"], run_starts["Termination"]),
            "white_rating": white_elo.cast(pl.Int32),
            "black_rating": black_elo.cast(pl.Int32),
            "white_title": titles["white_title"],
            "black_title": titles["black_title"],
            "moves_known": moves_known,
            "has_move": has_move,
            "_bye": bye,
            **{f"_new_{tag}": new for tag, new in run_starts.items()},
        }
    )
    return frame, preamble


def _changes(arr: np.ndarray, values: _TagValues) -> np.ndarray:
    """Per game, whether its value may differ from the previous game's (the first game's always does).

    Values are compared as written (the same bytes, or both absent); slow-path values always count as
    changed, and so does the value after one.
    """
    start, length, present = values.start, values.length, values.present
    changed = np.ones(len(start), dtype=bool)
    if len(start) < 2:
        return changed
    same = (length[1:] == length[:-1]) & (present[1:] == present[:-1])
    rows = np.flatnonzero(same & present[1:]) + 1  # both written, as long: compare 16 bytes at a time
    offset = 0
    while len(rows):
        if offset == 0:  # each game's first 16 bytes once, compared with the previous game's
            every_low, every_high = words16(arr, start, np.minimum(length, 16))
            low, high = every_low.take(rows), every_high.take(rows)
            previous_low, previous_high = every_low.take(rows - 1), every_high.take(rows - 1)
        else:
            width = np.minimum(length[rows] - offset, 16)
            low, high = words16(arr, start[rows] + offset, width)
            previous_low, previous_high = words16(arr, start[rows - 1] + offset, width)
        equal = (low == previous_low) & (high == previous_high)
        same[rows[~equal] - 1] = False
        rows = rows[equal & (length[rows] > offset + 16)]
        offset += 16
    changed[1:] = ~same
    for g in values.slow:
        changed[g : g + 2] = True
    return changed


def _comment_lines(
    lines: ByteLines, content: np.ndarray, tagish: np.ndarray, escape: np.ndarray, segment_starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """(tag-like lines whose first character lies inside a {comment}, lines holding a '{' never closed in their file or
    None).

    PGN comments run from '{' to the next '}' (they do not nest) or from ';' to the end of the
    line; '%' lines are skipped, and braces inside a tag line's value are text. A position is inside
    a comment exactly when the last brace before it that counts is a '{' (after a '}' one is always
    outside; after a '{', always inside, whether that '{' opened the comment or sat in it). That
    makes the test vectorised: no walk over the comments. A ';' outside a comment hides the braces
    after it on its line, which can change what is inside, so the (rare) ';' comments are settled
    in a few rounds. Each file of the piece starts outside any comment.
    """
    arr, starts, ends = lines.arr, lines.starts, lines.ends
    body = arr[: len(arr) - PADDING]
    # '{' and '}' (0x7B, 0x7D) are the bytes b with (b - 0x7B) & 0xFD == 0, worked out in one temporary array.
    work = body - np.uint8(_BRACE_OPEN)
    work &= np.uint8(0xFD)
    braces = np.flatnonzero(np.equal(work, 0, out=work.view(bool)))
    del work
    line_of = np.searchsorted(starts, braces, side="right") - 1
    # A line that is a whole tag ('[Name "value"]') keeps its braces as text.
    last = arr[np.maximum(ends - 1, 0)]
    tag_shaped = tagish & (last == _CLOSE) & (arr[np.maximum(ends - 2, 0)] == _QUOTE)
    keep = ~escape[line_of] & ~tag_shaped[line_of]
    braces, line_of = braces[keep], line_of[keep]
    semicolons = np.zeros(0, dtype=np.int64)
    if lines.holds(b";"):
        semicolons = np.flatnonzero(body == _SEMICOLON)
        semicolon_line = np.searchsorted(starts, semicolons, side="right") - 1
        keep = ~escape[semicolon_line] & ~tag_shaped[semicolon_line]
        semicolons, semicolon_line = semicolons[keep], semicolon_line[keep]
    # Each file starts outside: a virtual '}' at its first byte.
    events = np.concatenate([braces, segment_starts.astype(np.int64)])
    opens = np.concatenate([arr[braces] == _BRACE_OPEN, np.zeros(len(segment_starts), dtype=bool)])
    order = np.argsort(events, kind="stable")
    events, opens = events[order], opens[order]
    active = np.ones(len(events), dtype=bool)

    def inside(positions: np.ndarray) -> np.ndarray:
        live = np.flatnonzero(active)
        before = np.searchsorted(events[live], positions, side="left") - 1
        return (before >= 0) & opens[live[np.maximum(before, 0)]]

    if len(semicolons):
        for _ in range(8):  # each round can only hide more braces; real files settle in one or two
            open_semicolons = semicolons[~inside(semicolons)]
            if not len(open_semicolons):
                break
            # Braces after an open ';' on the same line are comment text.
            line_end = ends[np.searchsorted(starts, open_semicolons, side="right") - 1]
            hidden = np.zeros(len(events) + 1, dtype=int)
            np.add.at(hidden, np.searchsorted(events, open_semicolons, side="right"), 1)
            np.add.at(hidden, np.searchsorted(events, line_end, side="left"), -1)
            now = active & (np.cumsum(hidden)[:-1] == 0)
            if np.array_equal(now, active):
                break
            active = now
    # A '{' never closed in its file would turn the rest of the file, later games too, into its comment:
    # it is reported (its game becomes unparseable) and read as ending with its line instead.
    unclosed = None
    live = np.flatnonzero(active)
    segment_of = np.searchsorted(segment_starts, events[live], side="right") - 1
    last_close = np.full(len(segment_starts), -1, dtype=np.int64)
    closes = ~opens[live]
    np.maximum.at(last_close, segment_of[closes], events[live][closes])
    open_at_end = opens[live] & (events[live] > last_close[segment_of])
    if open_at_end.any():
        _, first = np.unique(segment_of[open_at_end], return_index=True)
        unclosed = np.searchsorted(starts, events[live][open_at_end][first], side="right") - 1
        active[live[open_at_end]] = False
    # Only a line that looks like a tag line can change by being inside a comment.
    candidates = np.flatnonzero(tagish)
    in_comment = np.zeros(len(content), dtype=bool)
    in_comment[candidates] = inside(content[candidates])
    return in_comment, unclosed


_MOST_VALUE_LINES = 20


def _broken_values(
    lines: ByteLines,
    content: np.ndarray,
    malformed: np.ndarray,
    tagish: np.ndarray,
    blank: np.ndarray,
    escape: np.ndarray,
) -> np.ndarray:
    """The lines that carry on a tag value broken by a line break ('[Event "A' then 'B"]'): up to the first line
    ending with '"]', before any blank or tag line. They stay in the tag section, so that the game is one record,
    unparseable for its malformed tag line, not a malformed piece and a game rated without the tag.

    malformed: the malformed tag lines (rare), of which only those leaving a value open are followed.
    """
    arr, ends = lines.arr, lines.ends
    continued: list[int] = []
    for line in malformed.tolist():
        text = bytes(arr[content[line] : ends[line]]).rstrip(b" \t")
        if text.endswith(b"]") or (text.count(b'"') - text.count(b'\\"')) % 2 == 0:
            continue  # blanks after the ']', or no value left open: a malformed line of its own
        following = line + 1
        while following < min(line + 1 + _MOST_VALUE_LINES, lines.count) and not (
            blank[following] or tagish[following] or escape[following]
        ):
            if bytes(arr[lines.starts[following] : ends[following]]).rstrip(b" \t").endswith(b'"]'):
                continued.extend(range(line + 1, following + 1))
                break
            following += 1
    return np.array(continued, dtype=np.int64)


def _first_rows(tag_of: np.ndarray, tag_game: np.ndarray, games: int) -> tuple[np.ndarray, np.ndarray]:
    """((len(TAGS), games) index of the first tag line of each wanted tag in each game, -1 when absent; the tag lines
    of the tags a game gives more than once, in line order).

    A repeated tag does not overwrite the first one. Repeats are rare, so the table is filled in one
    assignment and only the cells that several lines competed for are settled with a minimum.
    """
    rows = np.flatnonzero(tag_of >= 0)
    cell = tag_of.take(rows) * games + (tag_game.take(rows) - 1)
    table = np.full(games * len(TAGS), -1, dtype=np.int64)
    table[cell] = rows
    lost = table.take(cell) != rows
    repeated = rows[:0]
    if lost.any():
        contested = np.isin(cell, np.unique(cell[lost]))
        table[cell[contested]] = np.iinfo(np.int64).max
        np.minimum.at(table, cell[contested], rows[contested])
        repeated = rows[contested]
    return table.reshape(len(TAGS), games), repeated


def _conflicting_tags(
    lines: ByteLines,
    repeated: np.ndarray,
    where: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    value_range: tuple[np.ndarray, np.ndarray],
    slow_values: dict[int, str],
    errors: dict[int, list[str]],
) -> None:
    """A game that gives a wanted tag twice with different values ([Result "1-0"] and [Result "0-1"]) cannot be
    read: which value holds is unknown. Its errors open with a conflicting_tags message naming each such tag
    and its values with their lines; the same value given again is harmless.

    repeated: the tag lines (indexes into tag_lines) of the repeated tags (_first_rows); where: (tag_of,
    tag_game, tag_lines, file_line); value_range: (value_start, value_end). Python per repeated line only.
    """
    tag_of, tag_game, tag_lines, file_line = where
    value_start, value_end = value_range
    seen: dict[tuple[int, int], dict[str, int]] = {}  # (game, tag) -> value -> first line holding it
    for j in repeated.tolist():
        value = slow_values[j] if j in slow_values else lines.arr[value_start[j] : value_end[j]].tobytes().decode()
        values = seen.setdefault((int(tag_game[j]), int(tag_of[j])), {})
        values.setdefault(value.strip(" \t"), int(file_line[tag_lines[j]]) + 1)
    conflicts: dict[int, list[str]] = {}
    for (g, tag), values in seen.items():
        if len(values) > 1:
            written = " and ".join(f"'{value}' (line {line})" for value, line in values.items())
            conflicts.setdefault(g - 1, []).append(f"{TAGS[tag]} is {written}")
    for g, texts in conflicts.items():
        errors.setdefault(g, []).insert(0, f"{CONFLICTING_TAGS}: {'; '.join(texts)}")


def _first_values(
    first_rows: np.ndarray, value_start: np.ndarray, value_end: np.ndarray, slow_values: dict[int, str]
) -> dict[str, _TagValues]:
    """Each wanted tag's value in every game, from the _first_rows table."""
    present = first_rows >= 0
    rows = np.where(present, first_rows, 0)
    if len(value_start):
        start = np.where(present, value_start.take(rows), 0)
        length = np.where(present, value_end.take(rows) - start, 0)
    else:
        start = length = np.zeros(first_rows.shape, dtype=np.int64)
    slow: list[dict[int, str]] = [{} for _ in TAGS]
    if slow_values:
        keys = np.fromiter(slow_values, dtype=np.int64, count=len(slow_values))
        for index, g in zip(*np.nonzero(present & np.isin(first_rows, keys)), strict=True):
            slow[index][int(g)] = slow_values[int(first_rows[index, g])]
            start[index, g] = length[index, g] = 0
    return {tag: _TagValues(start[index], length[index], present[index], slow[index]) for index, tag in enumerate(TAGS)}


def _strings(
    lines: ByteLines,
    values: _TagValues,
    rows: np.ndarray | None = None,
    trim: bool = False,
    edges: tuple[np.ndarray, np.ndarray] | None = None,
) -> pl.Series:
    """The values as strings (null where the tag is absent), for all games or the given rows.

    trim: strip surrounding blanks, and make empty values null. The bytes show which values need
    it (usually none), so only those are touched. edges: the values' first and last bytes (_edges), when
    at hand (all games only).
    """
    if rows is None:
        rows = np.arange(len(values.present))
        starts, lengths, present = values.start, values.length, values.present.copy()
    else:
        starts, lengths, present = values.start[rows], values.length[rows], values.present[rows].copy()
    column = string_views(lines, starts, lengths)
    fixes: dict[int, str | None] = {}
    if values.slow:
        position = {int(g): i for i, g in enumerate(rows.tolist())}
        fixes = {position[g]: text for g, text in values.slow.items() if g in position}
    if trim:
        first, last = edges if edges is not None else _edges(lines, starts, lengths)
        blank_edge = (first == SPACE) | (first == TAB) | (last == SPACE) | (last == TAB)
        for i in np.flatnonzero(present & ((lengths == 0) | blank_edge)).tolist():
            fixes.setdefault(i, bytes(lines.arr[starts[i] : starts[i] + lengths[i]]).decode("utf-8"))
        fixes = {i: (text.strip(" \t") or None) if text is not None else None for i, text in fixes.items()}
    for i, text in fixes.items():
        if text is None:
            present[i] = False
    kept = {i: text for i, text in fixes.items() if text is not None}
    if kept:
        column = column.scatter(list(kept), list(kept.values()))
    if present.all():
        return column
    if not present.any():
        return _nulls(len(rows))
    return column.set(pl.Series(~present), None)


def _edges(lines: ByteLines, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last byte of each value (of an empty value: the byte at its start, a quote)."""
    return lines.arr.take(starts), lines.arr.take(starts + np.maximum(lengths, 1) - 1)


_BLANK_BYTES = np.zeros(256, dtype=bool)
_BLANK_BYTES[[SPACE, TAB]] = True
_COMMA = ord(",")


def _names(lines: ByteLines, values: _TagValues) -> tuple[pl.Series, np.ndarray]:
    """The White or Black values (_strings, trimmed) and whether each is written as a bye (byes.bye_names).

    Every name's first and last bytes are read to trim it anyway: a bye spelling starts and ends with
    few characters (byes.BYE_FIRST_CHARACTERS) and holds no comma, so they rule out almost every real
    name, and the spelling pattern runs on the others only. Running it on every name would cost several
    per cent of the reader: names are views into the file (a cache miss each), and the pattern ignores case.
    """
    first, last = _edges(lines, values.start, values.length)
    names = _strings(lines, values, trim=True, edges=(first, last))
    may_be = (
        values.present
        & (values.length <= BYE_NAME_MAX_BYTES)
        & (BYE_FIRST_BYTES.take(first) | _BLANK_BYTES.take(first))
        & (BYE_LAST_BYTES.take(last) | _BLANK_BYTES.take(last))
    )
    rows = np.flatnonzero(may_be)
    if len(rows):
        # Nor has a spelling a comma, which 'Surname, Given' names have: read from the bytes (one gather).
        window = windows(lines.arr, values.start.take(rows), BYE_NAME_MAX_BYTES)
        inside = np.arange(BYE_NAME_MAX_BYTES) < values.length.take(rows)[:, None]
        rows = rows[~((window == _COMMA) & inside).any(axis=1)]
    if values.slow:  # escaped values: their bytes are not the text
        rows = np.union1d(rows, np.fromiter(values.slow, dtype=np.int64, count=len(values.slow)))
    bye = np.zeros(len(names), dtype=bool)
    if len(rows):
        bye[rows] = bye_names(names.gather(rows))
    return names, bye


def _at_run_starts(lines: ByteLines, values: _TagValues, run_start: np.ndarray, trim: bool = False) -> pl.Series:
    """_strings of the games that start a run of equal values (run_start), null for the others."""
    heads = np.flatnonzero(run_start)
    head_values = _strings(lines, values, heads, trim=trim)
    # Gathered from [null, head values...]: 0 for a game inside a run, k for the run's k-th head.
    at = np.where(run_start, np.cumsum(run_start), 0)
    return pl.concat([pl.Series([None], dtype=pl.Utf8), head_values.cast(pl.Utf8)]).gather(at)


def _int_values(lines: ByteLines, values: _TagValues, label: str, errors: dict[int, list[str]]) -> pl.Series:
    """Id / Elo tags: digits are read from the bytes; 'missing' spellings are null; other text is an error."""
    number, ok = parse_digits(lines.arr, values.start, values.length)
    ok &= values.present & (number > 0)
    is_id = label in _ID_TAGS
    if not is_id:  # an Elo is an Int32 column: a larger value is its game's error, never the file's
        ok &= number <= _INT32_MAX
    for g in values.slow:
        ok[g] = False
    result = pl.Series(number).set(pl.Series(~ok), None) if not ok.all() else pl.Series(number)
    # The one-byte spellings of "none" ('', '0', '?', '-') are settled here: only other text goes to Polars.
    odd = np.flatnonzero(values.present & ~ok)
    length = values.length.take(odd)
    missing = (length == 0) | ((length == 1) & _MISSING_BYTE.take(lines.arr.take(values.start.take(odd))))
    if values.slow:
        missing &= ~np.isin(odd, list(values.slow))  # their text is in `slow`, not at start
    odd = odd[~missing]  # ' 1850 ', '1850.0', 'abc', escaped values
    if len(odd):
        text = blank_to_null(pl.col("text"))
        present = text.is_not_null() & ~text.is_in(_MISSING)
        # Ids are digits only ('4.600003e6' is no id); Elo values may be written as whole floats ('2200.0').
        parse, rule = (parse_id, " (an id is written in digits only)") if is_id else (parse_int, "")
        parsed = parse(text)
        in_range = parsed.is_between(_INT32_MIN, _INT32_MAX) if not is_id else parsed.is_not_null()
        checked = pl.DataFrame({"text": _strings(lines, values, odd)}).select(
            pl.when(present & in_range).then(parsed).alias("value"),
            pl.when(present & parsed.is_null())
            .then(pl.format(f"{label} {{}} is not a number{rule}", quoted(text)))
            .when(present & ~in_range)
            .then(pl.format(f"{label} {{}} is out of range (at most {_INT32_MAX})", quoted(text)))
            .alias("error"),
        )
        result = result.scatter(odd, checked["value"])
        for g, message in zip(
            odd[checked["error"].is_not_null().to_numpy()].tolist(),
            checked["error"].drop_nulls().to_list(),
            strict=True,
        ):
            errors.setdefault(g, []).append(message)
    return result.alias(label)


def _before_partial_start(
    day: pl.Series, day_to: pl.Series, event_start: pl.Series, start_from: pl.Series, errors: dict[int, list[str]]
) -> None:
    """A game whose whole Date (or every day of a Date known in part) is before the first day of its EventDate known
    in part ('2023.12.31' beside '2024.01.??') is refused as one before a whole EventDate is: validation
    (validate.split._with_days_outside_event, where the clause and its reading are) sees whole starts only.
    """
    early = pl.select(
        ((pl.coalesce(pl.lit(day), pl.lit(day_to)) < pl.lit(start_from)) & pl.lit(event_start).is_null()).arg_true()
    ).to_series()
    for g in early.to_list():
        dated = f"game dated {day[g]}" if day[g] is not None else f"game dated in part, by {day_to[g]} at the latest"
        errors.setdefault(g, []).append(
            f"{dated} (Date) is before its event's start, {start_from[g]} at the earliest (EventDate, known in part): "
            "one of the two dates is wrong"
        )


def _date_values(
    lines: ByteLines, values: _TagValues, label: str, errors: dict[int, list[str]]
) -> tuple[pl.Series, pl.Series, pl.Series]:
    """(dates, first days of partial dates, last days of partial dates): 'YYYY.MM.DD' read from the bytes, other
    spellings through parse_iso_date; a date with unknown parts ('2024.02.??') is null, and the first and last days
    of the period its known part names (_partial_date_start, _partial_date_length) are in the second and third series.

    A date that is written but does not exist ('2024.02.30', '2024.13.01') or is not year first
    ('10.01.2024') is an error of its game, naming the value.
    """
    days, ok = parse_ymd(lines.arr, values.start, values.length)
    ok &= values.present
    for g in values.slow:
        ok[g] = False
    result = pl.Series(days).cast(pl.Date)
    result = result.set(pl.Series(~ok), None) if not ok.all() else result
    partial = pl.Series([None], dtype=pl.Date).new_from_index(0, len(result))
    partial_end = partial.clone()  # scatter writes in place
    odd = np.flatnonzero(values.present & ~ok)
    if len(odd):
        text = blank_to_null(pl.col("text"))
        checked = pl.DataFrame({"text": _strings(lines, values, odd)}).select(
            parse_iso_date(text).alias("value"),
            date_error(text, parse_iso_date(text), label, unknown_allowed=True).alias("error"),
            _partial_date_start(text).alias("partial"),
            _partial_date_start(text).dt.offset_by(_partial_date_length(text)).dt.offset_by("-1d").alias("end"),
        )
        result = result.scatter(odd, checked["value"])
        partial = partial.scatter(odd, checked["partial"])
        partial_end = partial_end.scatter(odd, checked["end"])
        for g, message in zip(
            odd[checked["error"].is_not_null().to_numpy()].tolist(),
            checked["error"].drop_nulls().to_list(),
            strict=True,
        ):
            errors.setdefault(g, []).append(message)
    return result, partial, partial_end


# PGN standard §8.1.1.3: "If the any of the digit fields are not known, then question marks are used in place of the
# digits" ('2024.02.??', '2025.??.??'). The known part still dates the game: a game of February is not one of January.
_PARTIAL_DATE = r"^(\d{4})[.\-/](\d{2}|\?\?)[.\-/](?:\d{2}|\?\?)$"


def _partial_date_start(text: pl.Expr) -> pl.Expr:
    """The first day of the period a date with unknown parts names (its year's, or its month's when that is known);
    null for other text.
    """
    parts = text.str.extract_groups(_PARTIAL_DATE)
    month = parts.struct.field("2").cast(pl.Int8, strict=False).fill_null(1)
    return pl.when(text.str.contains("?", literal=True) & month.is_between(1, 12)).then(
        pl.date(parts.struct.field("1").cast(pl.Int32, strict=False), month, 1)
    )


def _partial_date_length(text: pl.Expr) -> pl.Expr:
    """'1mo' when a date with unknown parts names its month, else '1y': the period _partial_date_start starts."""
    known_month = text.str.extract(_PARTIAL_DATE, 2).str.contains(r"^\d{2}$")
    return pl.when(known_month).then(pl.lit("1mo")).otherwise(pl.lit("1y"))


def _round_values(lines: ByteLines, values: _TagValues) -> pl.Series:
    """The round number a Round tag starts with ('3.12' is round 3, board 12); null when it has none."""
    number, ok = leading_digits(lines.arr, values.start, values.length)
    ok &= values.present
    for g in values.slow:
        ok[g] = False
    result = pl.Series(number, dtype=pl.Int64)
    result = result.set(pl.Series(~ok), None) if not ok.all() else result
    odd = np.flatnonzero(values.present & ~ok)  # leading blanks, escapes: the general rule
    if len(odd):
        checked = (
            pl.DataFrame({"text": _strings(lines, values, odd)})
            .select(pl.col("text").str.extract(r"^\s*(\d+)", 1).cast(pl.Int64, strict=False))
            .to_series()
        )
        result = result.scatter(odd, checked)
    return result.cast(pl.Int32, strict=False)


def _nulls(count: int) -> pl.Series:
    """A String Series of `count` nulls (built without a Polars query, unlike pl.repeat)."""
    return pl.Series([None], dtype=pl.Utf8).new_from_index(0, count)


def _error_column(errors: dict[int, list[str]], games: int) -> pl.Series:
    """'; '-joined problems per game, null for the (usual) games without any."""
    column = _nulls(games)
    if errors:
        order = sorted(errors)
        column = column.scatter(order, ["; ".join(errors[g]) for g in order])
    return column


def _tags(
    lines: ByteLines, tag_lines: np.ndarray, begin: np.ndarray, end: np.ndarray, escapes: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """Per tag line: index in TAGS (-1 other tag, -2 malformed), value byte range, and slow-path values.

    The fast path accepts '[Name "value"]' exactly: two quotes in the line, the first right after
    the first blank, the second before the closing ']'; anything else (escapes, odd spacing, junk)
    goes through a regular expression line by line, which real files rarely need.
    """
    arr = lines.arr
    last = arr.take(end - 1)
    for j in np.flatnonzero((last == SPACE) | (last == TAB)).tolist():  # rare: blanks after ']'
        end[j] = begin[j] + len(bytes(arr[begin[j] : end[j]]).rstrip(b" \t"))
        last[j] = arr[end[j] - 1]
    close_at = end - 2
    # The 16 bytes after each '[' (one gather): the wanted names' patterns are matched on them, and
    # other tags' names are found and checked in them.
    window = windows(arr, begin + 1, _NAME_WINDOW)
    words = window.view("<u8")
    low, high = words[:, 0] | _FOLD, words[:, 1] | _FOLD
    index = _SLOT_TAG.take(_slot(low))
    pattern = ((low & _PATTERN_MASK_LOW.take(index)) == _PATTERN_LOW.take(index)) & (
        (high & _PATTERN_MASK_HIGH.take(index)) == _PATTERN_HIGH.take(index)
    )
    # Where each line's first quote would be: after its wanted name and the blank, or after the first
    # blank in the window (other tags); -1 when no blank is there (no name of < 16 bytes).
    name_length = _NAME_LENGTH.take(index)
    other = np.flatnonzero(~pattern)
    if len(other):
        blanks = window[other] == SPACE
        first_blank = blanks.argmax(axis=1)
        name_length[other] = np.where(blanks[np.arange(len(other)), first_blank], first_blank, -1)
    open_at = begin + name_length + 2
    # Usually every tag line holds exactly two quotes (there, and before the closing ']') and the
    # piece no other: then the piece's quotes number twice its tag lines, and the positions above
    # are the lines' first quotes. Otherwise each line's quotes are found and counted.
    if (
        len(tag_lines)
        and np.count_nonzero(arr[: lines.text_length] == _QUOTE) == 2 * len(tag_lines)
        and (name_length >= 0).all()
        and (open_at < close_at).all()
        and (arr.take(open_at) == _QUOTE).all()
        and (arr.take(close_at) == _QUOTE).all()
    ):
        # The blank before the first quote and the closing quote are known to be there.
        fast = (name_length >= 1) & (name_length < _NAME_WINDOW) & (last == _CLOSE)
    else:
        quote_at = np.flatnonzero(arr[: lines.text_length] == _QUOTE)
        open_at, two_quotes = _two_quotes(quote_at, begin, end)
        name_length = open_at - begin - 2
        fast = (
            two_quotes
            & (name_length >= 1)
            & (name_length < _NAME_WINDOW)
            & (last == _CLOSE)
            & (arr[close_at] == _QUOTE)
            & (arr[open_at - 1] == SPACE)
        )
        # A wanted name's pattern counts only where its quote is the line's first.
        pattern &= open_at == begin + _NAME_LENGTH[index] + 2
    if escapes:
        odd = np.zeros(lines.count + 1, dtype=bool)
        backslashes = np.flatnonzero(arr[: lines.text_length] == _BACKSLASH)
        odd[np.searchsorted(lines.starts, backslashes, side="right") - 1] = True
        fast &= ~odd[tag_lines]
    value_start, value_end = open_at + 1, close_at
    hit = fast & pattern
    tag_of = np.where(hit, index, _UNWANTED)
    # Other tags must still be well-formed names (letters, digits, '_'; no blank).
    other = np.flatnonzero(fast & ~hit)
    if len(other):
        # Every byte of the name a name byte: its flags (0/1 bytes) read 8 at a time, those past the name masked.
        flags = _NAME_BYTES.view(np.uint8).take(window[other]).view("<u8")
        length = name_length[other]
        low_mask, high_mask = _BYTE_MASKS.take(np.clip(length, 0, 8)), _BYTE_MASKS.take(np.clip(length - 8, 0, 8))
        names_ok = ((flags[:, 0] & low_mask) == (_ONE_BYTES & low_mask)) & (
            (flags[:, 1] & high_mask) == (_ONE_BYTES & high_mask)
        )
        for j in other[~names_ok].tolist():
            # A wanted name followed by NUL bytes ('Date\0') is read as that name, as the zero-padded
            # name words always read it (its game is in error anyway: a NUL byte).
            name = bytes(window[j, : name_length[j]]).rstrip(b"\0").decode("latin-1")
            if len(name) < name_length[j] and name.lower() in _FOLDED_INDEX:
                tag_of[j] = _FOLDED_INDEX[name.lower()]
            else:
                fast[j] = False

    slow_values: dict[int, str] = {}
    for j in np.flatnonzero(~fast).tolist():
        match = _TAG_LINE.fullmatch(bytes(arr[begin[j] : end[j]]).decode("utf-8"))
        if match is None or _SECOND_TAG.search(match.group(2)):
            tag_of[j] = _MALFORMED
            continue
        tag_of[j] = _FOLDED_INDEX.get(match.group(1).lower(), _UNWANTED)
        if tag_of[j] >= 0:
            slow_values[j] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
    return tag_of, value_start, value_end, slow_values


def _two_quotes(quote_at: np.ndarray, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first quote of each line [begin, end), whether the line holds exactly two quotes)."""
    first = np.searchsorted(quote_at, begin)
    two = np.searchsorted(quote_at, end) - first == 2
    if not len(quote_at):
        return begin + 1, two  # no line holds quotes (any position keeps the gathers in bounds)
    return np.where(two, quote_at[np.minimum(first, len(quote_at) - 1)], begin + 1), two


def _game_numbers(
    tagish: np.ndarray,
    tag_lines: np.ndarray,
    tag_of: np.ndarray,
    segment: np.ndarray | None,
    segment_first: np.ndarray,
) -> np.ndarray:
    """Game number of every line in the piece, counted across its files (0 before a file's first game).

    A game starts where a tag section starts; a second Event tag inside one section (games whose
    tag sections touch without movetext or a blank line between them) starts another game. A
    file's first line starts a section even when the previous file ended inside a tag section.
    segment: each line's file in the piece, None when it holds one file from its first line.
    """
    count = len(tagish)
    if len(tag_lines) == 0:
        return np.zeros(count, dtype=np.int64)
    starts_game = tagish.copy()
    starts_game[1:] &= ~tagish[:-1]
    starts_game[segment_first] = tagish[segment_first]  # section starts so far
    # An Event line starts a game when the Event line before it is in the same section.
    events = tag_lines[tag_of == _EVENT]
    event_section = np.searchsorted(np.flatnonzero(starts_game), events, side="right")
    starts_game[events[1:][event_section[1:] == event_section[:-1]]] = True
    game = np.cumsum(starts_game)
    if segment is None:  # the first line is the file's: lines before its first game have game 0 already
        return game
    # Lines of a file before its first game (its preamble) belong to no game, not the previous file's last.
    games_before_segment = game[segment_first] - starts_game[segment_first]
    return np.where(game > games_before_segment[segment], game, 0)


def _move_facts(
    lines: ByteLines, game: np.ndarray, movetext: np.ndarray, content: np.ndarray, games: int, result: pl.Series
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(moves_known, has_move, last movetext line or -1) per game: movetext present, and at least one move in it.

    Most games open their movetext with a numbered move ('1. e4'); only the others (no such
    opening: comments first, a bare result, a '0-0' double forfeit) are cleaned and searched.
    """
    move_lines = np.flatnonzero(movetext & (game > 0))
    move_game = game[move_lines]
    moves_known = np.zeros(games, dtype=bool)
    moves_known[move_game - 1] = True
    has_move = np.zeros(games, dtype=bool)
    last_line = np.full(games, -1, dtype=np.int64)
    if len(move_lines) == 0:
        return moves_known, has_move, last_line
    first = np.flatnonzero(np.diff(move_game, prepend=0))  # games are numbered in line order
    last_line[move_game[first] - 1] = move_lines[np.append(first[1:], len(move_lines)) - 1]
    with_moves = move_game[first]
    first_lines = move_lines[first]
    quick = _opens_with_move(lines.arr, content[first_lines])
    other = np.flatnonzero(~quick)
    if len(other):  # other spellings ('1.\te4', '12345678. e4', Unicode digits or blanks): the pattern itself
        begin, end = content[first_lines[other]], lines.ends[first_lines[other]]
        quick[other] = string_views(lines, begin, end - begin).str.contains(_OPENS_WITH_MOVE).to_numpy()
    has_move[with_moves[quick] - 1] = True
    unsure = with_moves[~quick]
    if len(unsure):
        texts: dict[int, list[str]] = {int(g): [] for g in unsure}
        unsure_lines = move_lines[np.isin(move_game, unsure)]
        for line, g in zip(unsure_lines.tolist(), game[unsure_lines].tolist(), strict=True):
            texts[g].append(lines.text(line))
        checked = (
            pl.DataFrame({"movetext": ["\n".join(texts[int(g)]) for g in unsure], "result": result.gather(unsure - 1)})
            .select(_has_move(pl.col("movetext"), blank_to_null(pl.col("result"))))
            .to_series()
            .to_numpy()
        )
        has_move[unsure - 1] = checked
    return moves_known, has_move, last_line


_MARKER_WORDS = {marker: int.from_bytes(marker.encode(), "little") for marker in ("1-0", "0-1", "1/2-1/2", "*")}
_MARKER_VALUES = np.array(list(_MARKER_WORDS.values()), dtype=np.uint64)
_MARKER_BOUNDARY = np.zeros(256, dtype=bool)
_MARKER_BOUNDARY[list(b" \t})\n")] = True  # '\n': the marker opens its line


# PGN standard 8.2.6: the movetext ends with a game termination marker, which "shall match" the Result tag's value.
def _disagreeing_results(
    lines: ByteLines,
    last_line: np.ndarray,
    values: _TagValues,
    result: pl.Series,
    file_line: np.ndarray,
    errors: dict[int, list[str]],
) -> None:
    """A game whose movetext ends with a result (1-0, 0-1, 1/2-1/2, *) other than its Result tag cannot be read: which
    one holds is unknown. Only the 8 bytes before each game's last movetext line's end are read; a movetext without
    such a marker (moves only, a comment last, '0-0') is not judged, nor is a game without a Result tag, one whose
    last line holds a ';' (the marker may be a rest-of-line comment's words), or a game without a move (last_line
    -1: the marker alone, read by the rules of games without a move). A Result spelt otherwise ('1:0', '1/2') is
    compared as the marker it means (fields.RESULT_SPELLINGS).
    """
    arr = lines.arr
    games = np.flatnonzero(last_line >= 0)
    line = last_line.take(games)
    end = lines.ends.take(line)
    # One gather of the 8 bytes before each end, read as a word: a marker is its last 1, 3 or 7 bytes, with a blank (or
    # a comment's or variation's end) or the line's start (the previous line's '\n') before it. A movetext line follows
    # a tag line, so end >= 8 (the bytes lie in the piece) but for junk.
    word = windows(arr, np.maximum(end - 8, 0), 8).view("<u8")[:, 0]
    blanks_after = np.flatnonzero(_BLANK_BYTES.take((word >> np.uint64(56)).astype(np.intp)))
    if len(blanks_after):  # rare: blanks after the marker
        for i in blanks_after.tolist():
            begin = int(lines.starts[line[i]])
            end[i] = begin + len(bytes(arr[begin : end[i]]).rstrip(b" \t"))
        word[blanks_after] = windows(arr, np.maximum(end[blanks_after] - 8, 0), 8).view("<u8")[:, 0]
    found_games, found_codes = [], []
    for code, (text, value) in enumerate(_MARKER_WORDS.items()):
        width = len(text)
        found = np.flatnonzero((word >> np.uint64(8 * (8 - width))) == np.uint64(value))
        before = ((word.take(found) >> np.uint64(8 * (7 - width))) & np.uint64(0xFF)).astype(np.intp)
        found = found[(end.take(found) >= 8) & _MARKER_BOUNDARY.take(before)]
        found_games.append(found)
        found_codes.append(np.full(len(found), code, dtype=np.int64))
    order = np.concatenate(found_games)
    games, marker, end = games.take(order), np.concatenate(found_codes), end.take(order)
    # The Result tag's bytes as written, compared with the marker's; the (rare) others are settled on the strings.
    start, size = values.start.take(games), values.length.take(games)
    written = windows(arr, start, 8).view("<u8")[:, 0] & _BYTE_MASKS.take(np.clip(size, 0, 8))
    differ = (written != _MARKER_VALUES.take(marker)) & values.present.take(games)
    texts = list(_MARKER_WORDS)
    for g, code, line_end in zip(games[differ].tolist(), marker[differ].tolist(), end[differ].tolist(), strict=True):
        tag = result[g]
        if tag is None or RESULT_SPELLINGS.get(tag, tag) == texts[code]:
            continue
        at = int(np.searchsorted(lines.starts, line_end, side="right")) - 1
        if b";" in bytes(arr[lines.starts[at] : line_end]):
            continue
        errors.setdefault(g, []).append(
            f"Result is '{tag}' but the movetext ends with '{texts[code]}' (line {file_line[at] + 1}); "
            "PGN standard 8.2.6: they must be the same"
        )


_MOVE_LETTERS = np.zeros(256, dtype=bool)
_MOVE_LETTERS[list(b"abcdefghKQRBNO")] = True
_MOST_MOVE_NUMBER_DIGITS = 7


def _opens_with_move(arr: np.ndarray, starts: np.ndarray) -> np.ndarray:
    r"""Whether the line at each start opens as '1. e4' or '12.Nf3': ASCII digits, '.', at most one blank, a
    move's letter; True only where _OPENS_WITH_MOVE matches (False may still match it in another spelling).

    A line's '\n' ends any such opening, so the bytes read may run on into the next line.
    """
    _, digits = digit_run(arr, starts)
    after = arr.take(starts + digits + 1)
    return (
        (digits >= 1)
        & (digits <= _MOST_MOVE_NUMBER_DIGITS)
        & (arr.take(starts + digits) == ord("."))
        & (_MOVE_LETTERS.take(after) | ((after == SPACE) & _MOVE_LETTERS.take(arr.take(starts + digits + 2))))
    )


def _preamble(
    lines: ByteLines,
    game: np.ndarray,
    blank: np.ndarray,
    escape: np.ndarray,
    file_line: np.ndarray,
    segment_file: np.ndarray,
    segment: np.ndarray,
) -> pl.DataFrame | None:
    """Text before a file's first tag section (or in a file with no tags at all) is reported, never dropped.

    One record per file that has such text; a large file's later pieces start with a game, so only
    its first piece can have any.
    """
    before = np.flatnonzero((game == 0) & ~blank & ~escape)
    if len(before) == 0:
        return None
    files, first, counts = np.unique(segment_file[segment[before]], return_index=True, return_counts=True)
    shown = [
        before[begin : begin + min(count, 20)].tolist()
        for begin, count in zip(first.tolist(), counts.tolist(), strict=True)
    ]
    return pl.DataFrame(
        {
            "file": files,
            "source_line": file_line[before[first]] + 1,
            "position": ["preamble"] * len(files),
            "raw_text": ["\n".join(lines.text(line) for line in rows) for rows in shown],
            "parse_error": [f"{count} line(s) of text outside any PGN tag section" for count in counts.tolist()],
        },
        schema={
            "file": pl.Int32,
            "source_line": pl.Int64,
            "position": pl.Utf8,
            "raw_text": pl.Utf8,
            "parse_error": pl.Utf8,
        },
    )


def _empty_games() -> pl.DataFrame:
    """The per-game frame of a piece without games (same columns as _scan's)."""
    schema = {
        "file": pl.Int32,
        "source_line": pl.Int64,
        "position": pl.Utf8,
        "raw_text": pl.Utf8,
        "parse_error": pl.Utf8,
        "Event": pl.Utf8,
        "date": pl.Date,
        "date_from": pl.Date,
        "date_to": pl.Date,
        "event_start": pl.Date,
        "round": pl.Int32,
        "white_id": pl.Int64,
        "black_id": pl.Int64,
        "white_name": pl.Utf8,
        "black_name": pl.Utf8,
        "Result": pl.Utf8,
        "TimeControl": pl.Utf8,
        "Termination": pl.Utf8,
        "white_rating": pl.Int32,
        "black_rating": pl.Int32,
        "white_title": pl.Utf8,
        "black_title": pl.Utf8,
        "moves_known": pl.Boolean,
        "has_move": pl.Boolean,
        "_bye": pl.Boolean,
        **dict.fromkeys(_RUN_COLUMNS, pl.Boolean),
    }
    return pl.DataFrame(schema=schema)


def _has_move(movetext: pl.Expr, result: pl.Expr) -> pl.Expr:
    """Whether the movetext holds at least one move once comments, variations, numbers and results go."""
    cleaned = movetext.str.replace_all(r"\{[^}]*\}", " ").str.replace_all(r";[^\n]*", " ")
    for _ in range(3):  # variations nest; three levels is plenty for real exports
        cleaned = cleaned.str.replace_all(r"\([^()]*\)", " ")
    cleaned = (
        cleaned.str.replace_all(r"\$\d+", " ")
        .str.replace_all(r"\d+\.+", " ")
        .str.replace_all(r"(^|\s)(1-0|0-1|1/2-1/2|½-½|\*)(\s|$)", " ")
        .str.strip_chars()
    )
    # The result token may be spelt oddly (the Olympiad's double forfeit '0-0'): drop it as Result says.
    cleaned = cleaned.str.strip_suffix(result.fill_null("\x00")).str.strip_chars()
    return cleaned.str.contains(r"[A-Za-z]|0-0")


def _per_distinct(frame: pl.DataFrame, column: str, exprs: dict[str, pl.Expr]) -> pl.DataFrame:
    """Evaluate expressions of one low-cardinality column once per distinct value, then join them back."""
    distinct = frame.select(pl.col(column).unique()).with_columns(**exprs)
    return frame.join(distinct, on=column, how="left", nulls_equal=True, maintain_order="left")


def _per_run(
    games: pl.DataFrame,
    column: str,
    exprs: dict[str, pl.Expr],
    keep: tuple[str, ...] = (),
    then: tuple[pl.Expr, ...] = (),
) -> pl.DataFrame:
    """The columns `exprs` make of `column`, for every game: evaluated once per distinct value among the first
    games of the column's runs (games.'_new_<column>' marks them), then spread over each run.

    Consecutive games of a file mostly share their Event, TimeControl and Termination, so a million games
    are a few thousand runs, and the per-value work (and its hashing of strings) is done on those only.
    `keep`: columns of the heads that `then`, more columns, is evaluated on with the new ones, per run.
    """
    new = games[f"_new_{column}"].to_numpy()
    heads = games.select(column, *keep)[np.flatnonzero(new)]
    derived = _per_distinct(heads, column, exprs).drop(column)
    if then:
        derived = derived.with_columns(*then).drop(*keep)
    run = np.cumsum(new) - 1
    return derived.select(pl.all().gather(run))


# PGN standard 9.8.1 (Termination): of its values (abandoned, adjudication, death, emergency, normal, rules
# infraction, time forfeit, unterminated) none says a game was not played; "time forfeit" is a game lost on the
# clock, played and rated (FIDE B.02 5.1: a game where each player made a move is rated). Exports add their own
# "forfeit" (a game lost without play) and "unplayed": those words, but not a game lost on time, however it is put
# ("time forfeit", Lichess's flag fall; "forfeit on time", "forfeited by time"; "lost on time" has no such word).
_LOST_ON_TIME = r"\btime[\s_-]*forfeit|\bforfeit\w*\s+(?:on|by)\s+time\b"


def _unplayed_termination(termination: pl.Expr) -> pl.Expr:
    """Whether a (lower-case) Termination says the game was not played: the word forfeit (forfeited, forfeits) or
    unplayed, except a game lost on time (_LOST_ON_TIME).
    """
    return termination.str.contains(r"\b(forfeit\w*|unplayed)\b") & ~termination.str.contains(_LOST_ON_TIME)


def _records(games: pl.DataFrame, event_keys: list[str]) -> pl.DataFrame:
    """Record columns from the typed per-game values: event id, result, unplayed, time control.

    event_keys: the default event id of each file that games.file indexes.
    """
    base, increment = parse_time_control(pl.col("TimeControl"))
    event = pl.col("Event")  # already stripped, empty -> null
    named_event = event.is_not_null() & (event != "?")
    # Event, TimeControl and Termination repeat across a file: work on their runs' distinct values.
    time_control = _per_run(
        games,
        "TimeControl",
        {
            "tc_base_seconds": base,
            "tc_increment_seconds": increment,
            "time_control": pl.coalesce(classify_time_control(base, increment), stated_class(pl.col("TimeControl"))),
            "_clock_error": pl.coalesce(
                minutes_written_as_seconds(pl.col("TimeControl"), base, increment),
                unreadable_clock(pl.col("TimeControl"), base, "TimeControl"),
            ),
        },
    )
    # Events are named per file: the same Event name in another federation's file is another event.
    # event_id = the file's key, then '#<Event>' when the game names its event. (A file's first game
    # starts a run: _scan starts one at every piece, and a piece's files are whole.)
    suffix = pl.when(named_event).then(pl.format("#{}", event)).otherwise(pl.lit(""))
    event_key = pl.lit(pl.Series(event_keys, dtype=pl.Utf8)).gather(pl.col("file"))
    event_id = pl.concat_str(event_key, pl.col("_event_suffix")).alias("event_id")
    events = _per_run(games, "Event", {"_event_suffix": suffix}, keep=("file",), then=(event_id,))
    termination = pl.col("Termination").str.to_lowercase().fill_null("")
    # A bye has no opponent: some exports write it as [Termination "bye"] beside a Black of "?" (PGN-Standard
    # issue 10), which would otherwise be an unknown player's game.
    forfeit = _per_run(
        games,
        "Termination",
        {"_forfeit": _unplayed_termination(termination), "_bye_termination": termination.str.contains(r"\bbye\b")},
    )
    result = games.select(result_as_read(pl.col("Result")).alias("result")).to_series()
    # Without movetext (exports that strip moves, like the FWWRC file) the move count is unknown: assume
    # played. unplayed: 'bye' (a side is written as a bye, or Termination says so), else 'forfeit' (Termination
    # says so, or a decisive result without a move: a bye has one too, but there was nobody to forfeit), else
    # 'under-one-move' without a move, else null; picked from the four by a code per game.
    no_moves = games["moves_known"].to_numpy() & ~games["has_move"].to_numpy()
    decisive = result.is_in(["1-0", "0-1", "0-0"]).fill_null(False).to_numpy()
    forfeited = forfeit["_forfeit"].to_numpy() | (no_moves & decisive)
    bye = games["_bye"].to_numpy() | forfeit["_bye_termination"].to_numpy()
    code = np.where(bye, 3, np.where(forfeited, 1, np.where(no_moves, 2, 0)))
    unplayed = pl.Series("unplayed", [None, "forfeit", "under-one-move", "bye"], dtype=pl.Utf8).gather(code)
    # No EventDate: the event started on its earliest game date in this file. Within a file the
    # suffix names the event (two files may share a key, so the file is part of the group).
    if games["event_start"].null_count():
        earliest = pl.col("date").min().over("file", events["_event_suffix"])
        games = games.with_columns(pl.coalesce(pl.col("event_start"), earliest).alias("event_start"))
    # One select (with_columns then drop would copy every column into one chunk).
    dropped = {"Event", "Result", "TimeControl", "Termination", "moves_known", "has_move", "_bye", *_RUN_COLUMNS}
    clock_error = time_control.get_column("_clock_error")
    if clock_error.null_count() < clock_error.len():
        games = games.with_columns(join_errors(pl.col("parse_error"), pl.lit(clock_error)).alias("parse_error"))
    return games.select(
        *(name for name in games.columns if name not in dropped),
        *time_control.drop("_clock_error").get_columns(),
        result,
        events["event_id"],
        unplayed,
    )
