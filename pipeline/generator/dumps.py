"""Renders the simulation as landing-zone files: TRF (GER), PGN (ENG), CSV (NOR), player registry, seed list, truth."""

from __future__ import annotations

import io
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import polars as pl

from pipeline.generator import config as C
from pipeline.generator.events import Schedule
from pipeline.generator.pairing import BLACK, WHITE, Crosstable
from pipeline.generator.population import Population
from pipeline.months import month_from_index
from pipeline.storage import ObjectStore

_RESULT_TEXT = {ord("1"): "1-0", ord("="): "1/2-1/2", ord("0"): "0-1", ord("+"): "1-0", ord("-"): "0-1"}
_RESULT_BY_CODE = np.array([_RESULT_TEXT.get(c, "") for c in range(256)], dtype=object)
_FORFEIT_CODES = (ord("+"), ord("-"))
_COLOUR_CHAR = {0: "-", WHITE: "w", BLACK: "b"}
_OPENINGS = (
    "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6",
    "1. d4 d5 2. c4 e6 3. Nc3 Nf6",
    "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6",
    "1. d4 Nf6 2. c4 g6 3. Nc3 Bg7",
    "1. c4 e5 2. Nc3 Nf6",
    "1. e4 e6 2. d4 d5 3. Nc3 Bb4",
    "1. Nf3 d5 2. g3 Nf6 3. Bg2 c6",
    "1. e4 c6 2. d4 d5 3. e5 Bf5",
)
DUPLICATE_SUFFIX = "-resubmitted"
REGISTRY_COLUMNS = ("player_id", "name", "federation", "sex", "birth_year", "title")
CSV_COLUMNS = ("event_id", "event_start", "date", "round", "white_id", "black_id", "result", "time_control",
               "tc_base_seconds", "tc_increment_seconds", "white_rating", "black_rating")


WRITER_THREADS = 4  # each write ends in an fsync (or a PUT): overlap them, the content stays deterministic


@dataclass
class DumpStats:
    """What was written, for the generation summary."""

    files: int = 0
    duplicate_files: int = 0
    id_typos: int = 0
    dated_outside_month: int = 0
    keys: list[str] = field(default_factory=list)


class DumpWriter:
    """Writes every landing-zone file of one simulation through the object store."""

    def __init__(self, store: ObjectStore, rng: np.random.Generator, pop: Population, schedule: Schedule,
                 table: Crosstable, first_absolute_month: int, months: int) -> None:
        self.store, self.rng, self.pop, self.schedule, self.table = store, rng, pop, schedule, table
        self.first, self.months = first_absolute_month, months
        self.labels = [month_from_index(first_absolute_month + m) for m in range(months)]
        self.stats = DumpStats()
        self._pending: list[Future] = []
        self._pool: ThreadPoolExecutor | None = None
        # Round dates of every event, computed once.
        self.dates = [[self.round_date(e, r) for r in range(int(schedule.rounds[e]))] for e in range(schedule.events)]
        # Per game: its event and round date; the dirty-date flag applies to PGN and CSV dumps.
        self.game_event = schedule.entry_event[table.game_white]
        n_games = len(self.game_event)
        self.early_date = self.rng.random(n_games) < C.DATE_OUTSIDE_MONTH_RATE
        self.movetext_pick = self.rng.integers(0, len(_OPENINGS), n_games)
        self.duplicate_event = self.rng.random(schedule.events) < C.DUPLICATE_FILE_RATE
        # TRF round cells name the opponent by starting rank (0 = not paired).
        self.opponent_rank = np.where(table.opponent >= 0, schedule.entry_start_rank[np.maximum(table.opponent, 0)], 0)
        # Games of each event are contiguous (sorted by event, round, board).
        self.game_start = np.searchsorted(self.game_event, np.arange(schedule.events), side="left")
        self.game_end = np.searchsorted(self.game_event, np.arange(schedule.events), side="right")

    # -- dates -------------------------------------------------------------------------------------
    def round_date(self, event: int, round_index: int) -> date:
        year, month0 = divmod(self.first + int(self.schedule.month[event]), 12)
        return date(year, month0 + 1, self.schedule.round_day(event, round_index))

    @staticmethod
    def one_month_early(day: date) -> date:
        """A typo'd month: the same day (clamped) one month earlier, outside the dump's month."""
        year, month = (day.year, day.month - 1) if day.month > 1 else (day.year - 1, 12)
        return date(year, month, min(day.day, 28))

    # -- everything --------------------------------------------------------------------------------
    def write_all(self) -> DumpStats:
        with ThreadPoolExecutor(max_workers=WRITER_THREADS) as pool:
            self._pool = pool
            self.write_registry()
            self.write_seed_list()
            for event in range(self.schedule.events):
                fed = C.FEDERATIONS[self.schedule.host[event]]
                fmt = C.DUMP_FORMAT[fed]
                if fmt == "trf":
                    self._write_event_file(event, fed, ".trf", self.trf_text(event))
                elif fmt == "pgn":
                    self._write_event_file(event, fed, ".pgn", self.pgn_text(event))
            self.write_csv_dumps()
            self.write_truth()
            for pending in self._pending:
                pending.result()  # re-raise any write error
        return self.stats

    def _write(self, data: bytes, key: str) -> None:
        self._pending.append(self._pool.submit(self.store.write_bytes, data, key))
        self.stats.files += 1
        self.stats.keys.append(key)

    def _write_event_file(self, event: int, fed: str, extension: str, text: str) -> None:
        month = self.labels[self.schedule.month[event]]
        data = text.encode("utf-8")
        event_id = self.schedule.event_id[event]
        self._write(data, f"raw/{fed}/{month}/{event_id}{extension}")
        if self.duplicate_event[event]:
            # The organiser sent the same file again under another name.
            self._write(data, f"raw/{fed}/{month}/{event_id}{DUPLICATE_SUFFIX}{extension}")
            self.stats.duplicate_files += 1

    # -- TRF ---------------------------------------------------------------------------------------
    def trf_text(self, event: int) -> str:
        s, pop, table = self.schedule, self.pop, self.table
        first, size, rounds = int(s.first_entry[event]), int(s.size[event]), int(s.rounds[event])
        dates = self.dates[event]
        entries = range(first, first + size)
        rated = int((s.entry_stated_rating[first:first + size] > 0).sum())
        kind = "Individual: Round-Robin" if s.round_robin[event] else "Individual: Swiss-System"
        lines = [
            f"012 {s.name[event]}",
            f"022 {s.city[event]}",
            f"032 {C.FEDERATIONS[s.host[event]]}",
            f"042 {dates[0]:%Y/%m/%d}",
            f"052 {dates[-1]:%Y/%m/%d}",
            f"062 {size}",
            f"072 {rated}",
            f"092 {kind}",
            "122 90'+30''",
            # Round dates start in column 92 (1-based), one every 10 columns.
            "132".ljust(91) + "  ".join(f"{d:%y/%m/%d}" for d in dates),
        ]
        opponent_rank = self.opponent_rank
        for i in entries:
            p = int(s.entry_player[i])
            rating = int(s.entry_stated_rating[i])
            cells = "".join(
                f"  {opponent_rank[i, r]:4d} {_COLOUR_CHAR[int(table.colour[i, r])]} {chr(table.code[i, r])}"
                if opponent_rank[i, r] else f"  0000 - {chr(table.code[i, r])}"
                for r in range(rounds)
            )
            lines.append(
                f"001 {s.entry_start_rank[i]:4d} {'w' if pop.female[p] else 'm'}{pop.title[p]:>3} "
                f"{pop.name[p][:33]:<33} {rating if rating else '':>4} {C.FEDERATIONS[pop.federation[p]]:3} "
                f"{pop.player_id[p]:>11} {pop.birth_year[p]:04d}/01/01 {table.points[i]:4.1f} "
                f"{table.final_rank[i]:4d}{cells}"
            )
        return "\n".join(lines) + "\n"

    # -- PGN ---------------------------------------------------------------------------------------
    def pgn_text(self, event: int) -> str:
        s, pop, table = self.schedule, self.pop, self.table
        dates = [f"{d:%Y.%m.%d}" for d in self.dates[event]]
        # Tags shared by every game of the event, split around the per-game ones.
        event_tags = f'[Event "{s.name[event]}"]\n[Site "{s.city[event]}"]\n'
        closing_tags = f'[EventDate "{dates[0]}"]\n[TimeControl "{C.CLASSICAL_TC[0]}+{C.CLASSICAL_TC[1]}"]\n'
        blocks = []
        for g in range(self.game_start[event], self.game_end[event]):
            w_entry, b_entry = int(table.game_white[g]), int(table.game_black[g])
            w, b = int(s.entry_player[w_entry]), int(s.entry_player[b_entry])
            r = int(table.game_round[g])
            played_on = dates[r]
            if self.early_date[g]:
                played_on = f"{self.one_month_early(self.dates[event][r]):%Y.%m.%d}"
                self.stats.dated_outside_month += 1
            code = int(table.game_code[g])
            result = _RESULT_TEXT[code]
            elo = ""
            if s.entry_stated_rating[w_entry]:
                elo += f'[WhiteElo "{s.entry_stated_rating[w_entry]}"]\n'
            if s.entry_stated_rating[b_entry]:
                elo += f'[BlackElo "{s.entry_stated_rating[b_entry]}"]\n'
            forfeit = code in _FORFEIT_CODES
            termination = '[Termination "forfeit"]\n' if forfeit else ""
            moves = result if forfeit else f"{_OPENINGS[self.movetext_pick[g]]} {result}"
            blocks.append(
                f'{event_tags}[Date "{played_on}"]\n[Round "{r + 1}"]\n[White "{pop.name[w]}"]\n'
                f'[Black "{pop.name[b]}"]\n[Result "{result}"]\n[WhiteFideId "{pop.player_id[w]}"]\n'
                f'[BlackFideId "{pop.player_id[b]}"]\n{elo}{closing_tags}{termination}\n{moves}\n'
            )
        return "\n".join(blocks)

    # -- CSV ---------------------------------------------------------------------------------------
    def write_csv_dumps(self) -> None:
        """One games.csv per month for every CSV federation: played games only (no forfeits or byes)."""
        s, pop, table = self.schedule, self.pop, self.table
        played = table.played
        ids = pop.player_id
        all_ids_sorted = np.sort(ids)
        for f, fed in enumerate(C.FEDERATIONS):
            if C.DUMP_FORMAT[fed] != "csv":
                continue
            mine = np.nonzero(played & (s.host[self.game_event] == f))[0]
            white_id = ids[s.entry_player[table.game_white[mine]]].copy()
            black_id = ids[s.entry_player[table.game_black[mine]]].copy()
            typo = self.rng.random(len(mine)) < C.ID_TYPO_RATE
            typo_white = self.rng.random(len(mine)) < 0.5
            white_id[typo & typo_white] = mistype_ids(self.rng, white_id[typo & typo_white], all_ids_sorted)
            black_id[typo & ~typo_white] = mistype_ids(self.rng, black_id[typo & ~typo_white], all_ids_sorted)
            self.stats.id_typos += int(typo.sum())
            events = self.game_event[mine]
            rounds = table.game_round[mine]
            early = self.early_date[mine]
            self.stats.dated_outside_month += int(early.sum())
            month = self.first + s.month[events].astype(np.int64)
            day = s.start_day[events] + (rounds * s.span_days[events]) // s.rounds[events]
            # A typo'd month: the same day (clamped to 28) one month earlier, outside the folder's month.
            game_month = np.where(early, month - 1, month)
            game_day = np.where(early, np.minimum(day, 28), day)
            rapid = s.rapid[events]
            w_rating = s.entry_stated_rating[table.game_white[mine]]
            b_rating = s.entry_stated_rating[table.game_black[mine]]
            event_ids = np.asarray(s.event_id, dtype=object)
            frame = pl.DataFrame({
                "event_id": pl.Series(event_ids[events], dtype=pl.Utf8),
                "y": month // 12, "m": month % 12 + 1, "d": s.start_day[events],
                "gy": game_month // 12, "gm": game_month % 12 + 1, "gd": game_day,
                "round": (rounds + 1).astype(np.int32),
                "white_id": white_id,
                "black_id": black_id,
                "result": pl.Series(_RESULT_BY_CODE[table.game_code[mine]], dtype=pl.Utf8),
                "time_control": np.where(rapid, "rapid", "classical"),
                "tc_base_seconds": np.where(rapid, C.RAPID_TC[0], C.CLASSICAL_TC[0]).astype(np.int32),
                "tc_increment_seconds": np.where(rapid, C.RAPID_TC[1], C.CLASSICAL_TC[1]).astype(np.int32),
                "white_rating": w_rating.astype(np.int32),
                "black_rating": b_rating.astype(np.int32),
                "month": s.month[events],
            }).with_columns(
                pl.date("y", "m", "d").alias("event_start"),
                pl.date("gy", "gm", "gd").alias("date"),
                *(pl.when(pl.col(c) > 0).then(pl.col(c)).alias(c) for c in ("white_rating", "black_rating")),
            )
            by_month = frame.partition_by("month", as_dict=True, include_key=False)
            empty = frame.clear()
            for m, label in enumerate(self.labels):
                month_rows = by_month.get((m,), empty).select(CSV_COLUMNS)
                self._write(month_rows.write_csv().encode("utf-8"), f"raw/{fed}/{label}/games.csv")

    # -- registry, seed list, truth ----------------------------------------------------------------
    def write_registry(self) -> None:
        pop = self.pop
        frame = pl.DataFrame({
            "player_id": pop.player_id,
            "name": pop.name,
            "federation": [C.FEDERATIONS[f] for f in pop.federation],
            "sex": np.where(pop.female, "F", "M"),
            "birth_year": pop.birth_year,
            "title": [t or None for t in pop.title],
            "entry": pop.entry_month,
        }, schema_overrides={"title": pl.Utf8}).sort("player_id")
        by_month = frame.partition_by("entry", as_dict=True, include_key=False)
        empty = frame.clear()
        for m, label in enumerate(self.labels):
            month_rows = by_month.get((m,), empty).select(REGISTRY_COLUMNS)
            self._write(month_rows.write_csv().encode("utf-8"), f"raw/players/{label}/players.csv")

    def write_seed_list(self) -> None:
        pop = self.pop
        rated = pop.seed_rating > 0
        frame = pl.DataFrame({
            "player_id": pop.player_id[rated],
            "rating": pop.seed_rating[rated],
            "games_total": pop.seed_games_total[rated],
            "birth_year": pop.birth_year[rated],
            "ever_2400": pop.seed_ever_2400[rated],
        }).sort("player_id")
        self._write(frame.write_csv().encode("utf-8"), f"raw/players/{self.labels[0]}/seed_list.csv")

    def write_truth(self) -> None:
        player, month = np.nonzero(~np.isnan(self.pop.strength))
        frame = pl.DataFrame({
            "player_id": pl.Series(self.pop.player_id[player], dtype=pl.Int64),
            "month": pl.Series(np.asarray(self.labels, dtype=object)[month], dtype=pl.Utf8),
            "strength": pl.Series(self.pop.strength[player, month], dtype=pl.Float64),
        }).sort(["player_id", "month"])
        buffer = io.BytesIO()
        frame.write_parquet(buffer, compression="zstd", statistics=True)  # as ObjectStore.write_parquet
        self._write(buffer.getvalue(), "truth/strength.parquet")


def mistype_ids(rng: np.random.Generator, ids: np.ndarray, registered_sorted: np.ndarray) -> np.ndarray:
    """Change one of the last four digits of each id, retrying until the result is not a registered id."""
    result = ids.copy()
    todo = np.arange(len(ids))
    for _ in range(1000):
        if not len(todo):
            return result
        power = 10 ** rng.integers(0, 4, len(todo))
        digit = (ids[todo] // power) % 10
        new_digit = (digit + rng.integers(1, 10, len(todo))) % 10
        result[todo] = ids[todo] + (new_digit - digit) * power
        hit = np.searchsorted(registered_sorted, result[todo])
        hit = np.minimum(hit, len(registered_sorted) - 1)
        todo = todo[registered_sorted[hit] == result[todo]]
    raise ValueError(f"could not mistype ids {ids[todo][:5]}: all nearby ids are registered")
