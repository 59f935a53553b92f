"""Ingest workloads: reading generated PGN and TRF dumps of a million games, and many small CSV and Parquet tables.

The input is written untimed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from bench.measure import cpu_seconds
from pipeline.formats import DumpFile, read_dumps

GAMES = 1_000_000
PGN_FILES = 4  # a federation's month as a few large exports
TRF_PLAYERS, TRF_ROUNDS = 100, 9  # a typical weekend open: 450 games per file
MONTH = "2024-03"


def _timed_read(paths: list[Path], federation: str) -> tuple[pl.DataFrame, float, float]:
    """Read the files (bytes from disk, then parse), returning (records, wall seconds, CPU seconds).

    A .pgn.zst is handed over as a DumpFile, as ingest.read_month does: decompressed and parsed as it
    is read from disk, never held whole.
    """
    wall, cpu = time.perf_counter(), cpu_seconds()
    dumps = [(_source(path), f"{federation}/{MONTH}/{path.name}", federation) for path in paths]
    records = pl.concat(read_dumps(dumps, MONTH))
    return records, time.perf_counter() - wall, cpu_seconds() - cpu


def _source(path: Path) -> bytes | DumpFile:
    return DumpFile(lambda: path.open("rb")) if path.name.endswith(".pgn.zst") else path.read_bytes()


def _metrics(records: pl.DataFrame, wall: float, cpu: float, files: int, size: int) -> dict:
    games = records.filter(pl.col("parse_error").is_null() & pl.col("unplayed").is_null()).height
    return {
        "seconds": round(wall, 3),
        "items": games,
        "unit": "games",
        "records": records.height,
        "files": files,
        "megabytes": round(size / 1e6, 1),
        "cpu_seconds": round(cpu, 3),
        "games_per_cpu_second": round(games / cpu),
    }


# -- PGN -------------------------------------------------------------------------------------------
def write_pgn(folder: Path, games: int = GAMES, files: int = PGN_FILES, seed: int = 7) -> list[Path]:
    """PGN exports with a federation's usual tags and a short movetext, built column-wise by Polars."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(1_000_000, 40_000_000), 60_000, replace=False)
    white = rng.integers(0, len(ids), games)
    black = (white + rng.integers(1, len(ids), games)) % len(ids)
    frame = pl.DataFrame(
        {
            "event": np.arange(games) // 400,
            "round": np.arange(games) % 9 + 1,
            "board": np.arange(games) % 200 + 1,
            "day": rng.integers(1, 29, games),
            "white": ids[white],
            "black": ids[black],
            "white_elo": rng.integers(1400, 2700, games),
            "black_elo": rng.integers(1400, 2700, games),
            "result": pl.Series(np.array(["1-0", "0-1", "1/2-1/2"])[rng.integers(0, 3, games)]),
        }
    )
    text = frame.select(
        pl.format(
            '[Event "Club open {}"]\n[Site "Town"]\n[Date "2024.03.{}"]\n[Round "{}.{}"]\n[White "Player, {}"]\n'
            '[Black "Player, {}"]\n[Result "{}"]\n[WhiteFideId "{}"]\n[BlackFideId "{}"]\n[WhiteElo "{}"]\n'
            '[BlackElo "{}"]\n[EventDate "2024.03.01"]\n[TimeControl "5400+30"]\n\n'
            "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 {}\n\n",
            "event",
            pl.col("day").cast(pl.Utf8).str.zfill(2),
            "round",
            "board",
            "white",
            "black",
            "result",
            "white",
            "black",
            "white_elo",
            "black_elo",
            "result",
        ).alias("game")
    )
    return _write_pgn_files(text["game"], folder, files, "export")


def _write_pgn_files(games: pl.Series, folder: Path, files: int, name: str) -> list[Path]:
    """The games' texts in order, cut into `files` files of about equal size: <folder>/<name>-<k>.pgn, UTF-8."""
    parts = pl.DataFrame({"game": games}).with_columns((pl.int_range(pl.len()) * files // pl.len()).alias("file"))
    paths = []
    for (file,), part in parts.partition_by("file", as_dict=True, maintain_order=True).items():
        path = folder / f"{name}-{file}.pgn"
        path.write_text(part["game"].str.join("").item(), encoding="utf-8")
        paths.append(path)
    return paths


def _ingest(write, federation: str) -> dict:
    """Write the input files (untimed) into a temporary folder, then time reading them as one month."""
    with tempfile.TemporaryDirectory() as folder:
        paths = write(Path(folder))
        size = sum(path.stat().st_size for path in paths)
        records, wall, cpu = _timed_read(paths, federation)
    return _metrics(records, wall, cpu, len(paths), size)


def ingest_pgn() -> dict:
    """1,000,000 games in 4 PGN files (about 340 MB): headers parsed, moves only checked for a first move."""
    return _ingest(write_pgn, "ENG")


# A game's moves as a database export writes them: wrapped at 79 columns, a few with comments.
_OPENING = (
    "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6 6. Be3 e5 7. Nb3 Be6 8. f3 Be7 9. Qd2 O-O 10. O-O-O Nbd7"
)
_MIDDLE = " 11. g4 b5 12. g5 b4 13. Ne2 Ne8 14. f4 a5 15. f5 a4 16. Nbd4 exd4 17. Nxd4 b3 18. Kb1 bxc2+ 19. Nxc2 Bb3"
_COMMENT = " {White has the initiative, but Black's queenside counterplay comes first.}"


def _movetexts() -> list[str]:
    """Movetexts of 2 to 12 lines, wrapped as exports do, with and without a comment."""
    import textwrap

    texts = []
    for moves in (_OPENING, _OPENING + _MIDDLE, _OPENING + _MIDDLE * 2, _OPENING + _MIDDLE * 4):
        for comment in ("", _COMMENT):
            after = moves.index(" 5. ")  # the comment after a move, as annotators place them
            texts.append("\n".join(textwrap.wrap(moves[:after] + comment + moves[after:], 79)))
    return texts


def write_pgn_full(folder: Path, games: int = GAMES // 2, files: int = PGN_FILES, seed: int = 8) -> list[Path]:
    """PGN exports shaped like a games database's (TWIC's, a federation's): 17 tags, names in UTF-8, wrapped
    movetext of 2-12 lines with comments in some games, unrated players' Elo left empty.
    """
    rng = np.random.default_rng(seed)
    surnames = np.array(["Müller", "Sánchez", "Đukić", "Nowak", "Smith", "Øvergaard", "Kovács", "Ivanov", "Brown"])
    given = np.array(["Anna", "José", "Jürgen", "Li", "Zoë", "Piotr", "Mary", "Ólafur"])
    ids = rng.choice(np.arange(1_000_000, 40_000_000), 60_000, replace=False)
    white, black = rng.integers(0, len(ids), games), rng.integers(0, len(ids), games)
    elo = rng.integers(1400, 2700, (2, games))
    unrated = rng.random((2, games)) < 0.1
    movetexts = np.array(_movetexts())
    frame = pl.DataFrame(
        {
            "event": np.arange(games) // 400,
            "round": np.arange(games) % 9 + 1,
            "board": np.arange(games) % 200 + 1,
            "day": rng.integers(1, 29, games),
            "white_name": surnames[ids[white] % len(surnames)],
            "white_given": given[ids[white] % len(given)],
            "black_name": surnames[ids[black] % len(surnames)],
            "black_given": given[ids[black] % len(given)],
            "white": ids[white],
            "black": ids[black],
            "white_elo": pl.Series(np.where(unrated[0], "", elo[0].astype(str))),
            "black_elo": pl.Series(np.where(unrated[1], "", elo[1].astype(str))),
            "result": pl.Series(np.array(["1-0", "0-1", "1/2-1/2"])[rng.integers(0, 3, games)]),
            "moves": pl.Series(movetexts[rng.integers(0, len(movetexts), games)]),
        }
    )
    text = frame.select(
        pl.format(
            '[Event "Open {}"]\n[Site "Town ENG"]\n[Date "2024.03.{}"]\n[Round "{}.{}"]\n[White "{}, {}"]\n'
            '[Black "{}, {}"]\n[Result "{}"]\n[WhiteElo "{}"]\n[BlackElo "{}"]\n[ECO "B90"]\n'
            '[WhiteFideId "{}"]\n[BlackFideId "{}"]\n[PlyCount "80"]\n[EventDate "2024.03.01"]\n'
            '[EventType "swiss"]\n[EventRounds "9"]\n[EventCountry "ENG"]\n\n{} {}\n\n',
            "event",
            pl.col("day").cast(pl.Utf8).str.zfill(2),
            "round",
            "board",
            "white_name",
            "white_given",
            "black_name",
            "black_given",
            "result",
            "white_elo",
            "black_elo",
            "white",
            "black",
            "moves",
            "result",
        ).alias("game")
    )
    return _write_pgn_files(text["game"], folder, files, "database")


def ingest_pgn_full() -> dict:
    """500,000 games with full movetext (about 340 MB in 4 files), as a games database exports them; headers only."""
    return _ingest(write_pgn_full, "ENG")


def write_pgn_zst(folder: Path) -> list[Path]:
    """The ingest-pgn files compressed with zstd (.pgn.zst); the plain files are removed."""
    import pyarrow as pa

    paths = []
    for path in write_pgn(folder):
        packed = path.with_name(path.name + ".zst")
        with pa.CompressedOutputStream(str(packed), "zstd") as stream:
            stream.write(path.read_bytes())
        path.unlink()
        paths.append(packed)
    return paths


def ingest_pgn_zst() -> dict:
    """The same 1,000,000 games as .pgn.zst files, decompressed as a stream while they are parsed."""
    return _ingest(write_pgn_zst, "ENG")


# -- TRF -------------------------------------------------------------------------------------------
def write_trf(
    folder: Path, games: int = GAMES, players: int = TRF_PLAYERS, rounds: int = TRF_ROUNDS, seed: int = 11
) -> list[Path]:
    """Swiss-like TRF16 files: every round pairs a random permutation of the players, board by board."""
    rng = np.random.default_rng(seed)
    events = -(-games // (players * rounds // 2))
    # Opponent rank, colour and result code of every (event, player, round) cell.
    opponent = np.zeros((events, players, rounds), dtype=np.int32)
    colour = np.zeros((events, players, rounds), dtype="<U1")
    code = np.zeros((events, players, rounds), dtype="<U1")
    rows = np.arange(events)[:, None]
    for r in range(rounds):
        order = np.argsort(rng.random((events, players)), axis=1)
        white, black = order[:, 0::2], order[:, 1::2]
        outcome = rng.integers(0, 3, white.shape)
        opponent[rows, white, r], opponent[rows, black, r] = black + 1, white + 1
        colour[rows, white, r], colour[rows, black, r] = "w", "b"
        code[rows, white, r] = np.array(["1", "=", "0"])[outcome]
        code[rows, black, r] = np.array(["0", "=", "1"])[outcome]
    cells = pl.DataFrame(
        {
            "event": np.repeat(np.arange(events), players * rounds),
            "rank": np.tile(np.repeat(np.arange(1, players + 1), rounds), events),
            "cell": pl.Series(opponent.ravel()).cast(pl.Utf8).str.pad_start(4)
            + " "
            + pl.Series(colour.ravel())
            + " "
            + pl.Series(code.ravel()),
        }
    )
    lines = (
        cells.group_by("event", "rank", maintain_order=True)
        .agg(pl.col("cell").str.join("  "))
        .with_columns(
            pl.format(
                "001 {} m    {} {} GER {} 1990/01/01  4.5 {}  {}",
                pl.col("rank").cast(pl.Utf8).str.pad_start(4),
                pl.format("Player, {}", pl.col("rank")).str.pad_end(33),
                (1500 + pl.col("rank") * 7).cast(pl.Utf8),
                (pl.col("event") * 1000 + pl.col("rank") + 10_000_000).cast(pl.Utf8).str.pad_start(11),
                pl.col("rank").cast(pl.Utf8).str.pad_start(4),
                pl.col("cell"),
            ).alias("line")
        )
    )
    dates = "".join(f"24/03/{day:02d}  " for day in range(1, rounds + 1)).rstrip()
    header = (
        f"012 Weekend open\n022 Town\n042 2024/03/01\n052 2024/03/{rounds:02d}\n062 {players}\n"
        f"092 Individual: Swiss-System\n122 90'+30''\n{'132'.ljust(91)}{dates}\n"
    )
    paths = []
    bodies = lines.group_by("event", maintain_order=True).agg(pl.col("line").str.join("\n"))
    for event, body in bodies.iter_rows():
        path = folder / f"open-{event:05d}.trf"
        path.write_text(header + body + "\n")
        paths.append(path)
    return paths


def ingest_trf() -> dict:
    """1,000,350 games in 2,223 TRF files of 100 players and 9 rounds, read as one month."""
    return _ingest(write_trf, "GER")


# -- CSV and Parquet -------------------------------------------------------------------------------
TABLE_FILES, TABLE_GAMES_PER_FILE = 2_000, 50  # a federation that uploads one small table per tournament


def write_tables(
    folder: Path, files: int = TABLE_FILES, games: int = TABLE_GAMES_PER_FILE, seed: int = 13
) -> list[Path]:
    """Small game tables, half CSV and half Parquet, with the columns a federation's export usually has."""
    rng = np.random.default_rng(seed)
    paths = []
    for file in range(files):
        table = pl.DataFrame(
            {
                "event_id": [f"tournament-{file}"] * games,
                "date": [f"2024-03-{day:02d}" for day in rng.integers(1, 29, games)],
                "round": rng.integers(1, 10, games),
                "white_id": rng.integers(1_000_000, 40_000_000, games),
                "black_id": rng.integers(1_000_000, 40_000_000, games),
                "result": np.array(["1-0", "0-1", "1/2-1/2"])[rng.integers(0, 3, games)],
                "white_rating": rng.integers(1400, 2700, games),
                "black_rating": rng.integers(1400, 2700, games),
                "time_control": ["classical"] * games,
            }
        )
        path = folder / f"tournament-{file:04d}.{'csv' if file % 2 else 'parquet'}"
        table.write_csv(path) if file % 2 else table.write_parquet(path)
        paths.append(path)
    return paths


def ingest_small_tables() -> dict:
    """100,000 games in 2,000 small CSV and Parquet files (50 games each), read as one month."""
    return _ingest(write_tables, "NOR")


WORKLOADS = {
    "ingest-pgn": ingest_pgn,
    "ingest-pgn-zst": ingest_pgn_zst,
    "ingest-pgn-full": ingest_pgn_full,
    "ingest-trf": ingest_trf,
    "ingest-small-tables": ingest_small_tables,
}
