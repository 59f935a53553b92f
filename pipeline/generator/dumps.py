"""Renders the simulation as landing-zone files: TRF, PGN, CSV and Parquet dumps, player registry, seed list, truth."""

from __future__ import annotations

import io
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.generator import config as C
from pipeline.generator.events import CLASSICAL, TC_SECONDS, TEAM, Schedule
from pipeline.generator.frames import RESULT_TEXT, games_frame
from pipeline.generator.pairing import BLACK, WHITE, Crosstable
from pipeline.generator.population import Population
from pipeline.months import month_from_index
from pipeline.rules.calendar import reporting_windows
from pipeline.store.object_store import ObjectStore

# PGN writes forfeits with an ordinary result and a Termination tag; CSV/Parquet with +- / -+.
_PGN_RESULT = {**RESULT_TEXT, ord("+"): "1-0", ord("-"): "0-1"}
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
_COLOUR_CHAR = {0: "-", WHITE: "w", BLACK: "b"}
DUPLICATE_SUFFIX = "-resubmitted"
REGISTRY_COLUMNS = ("player_id", "name", "federation", "sex", "birth_year", "title")
# Names beside the ids, as federations' exports write them: they also expose a mistyped id (the
# name is registered under another id).
CSV_COLUMNS = (
    "event_id",
    "event_start",
    "date",
    "round",
    "white_id",
    "black_id",
    "white_name",
    "black_name",
    "result",
    "time_control",
    "tc_base_seconds",
    "tc_increment_seconds",
    "white_rating",
    "black_rating",
)
TRUTH_SCHEMA = pa.schema([("player_id", pa.int64()), ("month", pa.string()), ("strength", pa.float64())])
WRITER_THREADS = 4  # each write ends in an fsync (or a PUT): overlap them, the content stays deterministic


@dataclass
class DumpStats:
    """What was written, for the generation summary."""

    files: int = 0
    bytes: int = 0
    duplicate_files: int = 0
    id_typos: int = 0
    dated_outside_month: int = 0
    late_reports: int = 0  # tournaments filed one or two lists late (rated)
    too_late_reports: int = 0  # filed after the third list since they ended (quarantined as too_late)


class DumpWriter:
    """Writes every landing-zone file of one simulation through the object store, a block of months at a time."""

    def __init__(
        self,
        store: ObjectStore,
        pop: Population,
        federations: tuple[C.Federation, ...],
        first_absolute_month: int,
        months: int,
        pool: ThreadPoolExecutor,
    ) -> None:
        self.store, self.pop, self.federations = store, pop, federations
        self.first, self.months = first_absolute_month, months
        self.labels = [month_from_index(first_absolute_month + m) for m in range(months)]
        self.stats = DumpStats()
        self.pool = pool
        self.pending: list[Future] = []
        self.registered_sorted = np.sort(pop.player_id)

    def _write(self, data: bytes, key: str) -> None:
        self.pending.append(self.pool.submit(self.store.write_bytes, data, key))
        self.stats.files += 1
        self.stats.bytes += len(data)

    def finish(self) -> DumpStats:
        for pending in self.pending:
            pending.result()  # re-raise any write error
        self.pending.clear()
        return self.stats

    # -- one block of months ---------------------------------------------------------------------------
    def write_block(
        self, rng: np.random.Generator, months: range, schedule: Schedule, table: Crosstable
    ) -> pl.DataFrame:
        """Write the event files and monthly game tables of the block `months`; returns its games frame."""
        games = games_frame(self.pop, schedule, table, self.first)
        n_games = games.height
        # Dirty records, drawn in a fixed order so that the files depend on the seed only.
        early = rng.random(n_games) < C.DATE_OUTSIDE_MONTH_RATE
        typo = rng.random(n_games) < C.ID_TYPO_RATE
        typo_white = rng.random(n_games) < 0.5
        opening = rng.integers(0, len(_OPENINGS), n_games)
        duplicate_event = rng.random(schedule.events) < C.DUPLICATE_FILE_RATE
        self.report_month = self._report_months(rng, schedule)
        formats = np.array([f.dump_format for f in self.federations], dtype=object)[games["host"].to_numpy()]
        text_dated = np.isin(formats, ("pgn", "csv", "parquet"))
        tabular = np.isin(formats, ("csv", "parquet"))
        early &= text_dated
        typo &= tabular
        games = games.with_columns(
            pl.Series("early", early),
            pl.Series("typo", typo),
            pl.Series("typo_white", typo_white),
            pl.Series("opening", opening.astype(np.int8)),
        )
        self.stats.dated_outside_month += int(early.sum())
        self.stats.id_typos += int(typo.sum())
        games = games.with_columns(
            # A typo'd month: the same day (clamped to 28) one month earlier, outside the folder's month.
            pl.when(pl.col("early"))
            .then(pl.col("date").dt.offset_by("-1mo").dt.replace(day=pl.col("date").dt.day().clip(1, 28)))
            .otherwise(pl.col("date"))
            .alias("written_date"),
        )
        for f, federation in enumerate(self.federations):
            hosted = games.filter(pl.col("host") == f)
            if federation.dump_format == "trf":
                self._write_trf(schedule, table, f, duplicate_event)
            elif federation.dump_format == "pgn":
                self._write_pgn(schedule, hosted, f, duplicate_event)
            else:
                self._write_tabular(rng, months, schedule, hosted, f, duplicate_event)
        return games

    def _report_months(self, rng: np.random.Generator, s: Schedule) -> np.ndarray:
        """Each event's folder (a month number of the data set): the list period FIDE's calendar first allows
        (pipeline.rules.calendar: its own month, or the next when it ended after its list's closing date), one or
        two months later for a late report, three or four for one too late; never past the data set's last month
        (an event of the last month ending after the closing date stays in it: a report filed too early).
        """
        rounds = s.rounds.astype(np.int64)
        end_day = s.start_day + ((rounds - 1) * s.span_days) // rounds
        absolute = self.first + s.month.astype(np.int64)
        ends = pl.DataFrame({"year": absolute // 12, "month": absolute % 12 + 1, "day": end_day}).select(
            pl.date("year", "month", "day").alias("end")
        )
        on_time = ends.select(reporting_windows(pl.col("end"))["folder"]).to_series().to_numpy() - self.first
        late = rng.random(s.events) < C.LATE_REPORT_RATE
        too_late = ~late & (rng.random(s.events) < C.TOO_LATE_REPORT_RATE)
        delay = np.where(late, rng.integers(1, 3, s.events), 0) + np.where(too_late, rng.integers(3, 5, s.events), 0)
        wanted = on_time + delay
        last = self.months - 1
        chosen = np.where(wanted <= last, wanted, np.where(on_time <= last, on_time, s.month)).astype(np.int64)
        self.stats.late_reports += int((late & (wanted <= last)).sum())
        self.stats.too_late_reports += int((too_late & (wanted <= last)).sum())
        return chosen

    def _event_file(self, s: Schedule, event: int, extension: str, data: bytes, duplicate: bool) -> None:
        fed = self.federations[s.host[event]].code
        month = self.labels[int(self.report_month[event])]
        event_id = s.event_id[event]
        self._write(data, f"raw/{fed}/{month}/{event_id}{extension}")
        if duplicate:
            # The organiser sent the same file again under another name.
            self._write(data, f"raw/{fed}/{month}/{event_id}{DUPLICATE_SUFFIX}{extension}")
            self.stats.duplicate_files += 1

    # -- TRF ---------------------------------------------------------------------------------------------
    def _write_trf(self, s: Schedule, table: Crosstable, f: int, duplicate_event: np.ndarray) -> None:
        events = np.nonzero(s.host == f)[0]
        if not len(events):
            return
        bodies = self._trf_player_lines(s, table, events)
        for event, body in zip(events.tolist(), bodies, strict=True):
            text = self._trf_header(s, event) + body + "\n"
            self._event_file(s, event, ".trf", text.encode("utf-8"), bool(duplicate_event[event]))

    def _round_dates(self, s: Schedule, event: int) -> list[tuple[int, int, int]]:
        year, month0 = divmod(self.first + int(s.month[event]), 12)
        return [(year, month0 + 1, s.round_day(event, r)) for r in range(int(s.rounds[event]))]

    def _trf_header(self, s: Schedule, event: int) -> str:
        first, size = int(s.first_entry[event]), int(s.size[event])
        dates = self._round_dates(s, event)
        rated = int((s.entry_stated_rating[first : first + size] > 0).sum())
        kind = {TEAM: "Team Round-Robin"}.get(
            int(s.kind[event]), "Individual: Round-Robin" if s.round_robin[event] else "Individual: Swiss-System"
        )
        base, increment = TC_SECONDS[int(s.time_control[event])]
        allotted = f"{base // 60}'+{increment}''"
        lines = [
            f"012 {s.name[event]}",
            f"022 {s.city[event]}",
            f"032 {self.federations[s.host[event]].code}",
            f"042 {dates[0][0]:04d}/{dates[0][1]:02d}/{dates[0][2]:02d}",
            f"052 {dates[-1][0]:04d}/{dates[-1][1]:02d}/{dates[-1][2]:02d}",
            f"062 {size}",
            f"072 {rated}",
            f"092 {kind}",
            f"122 {allotted}",
        ]
        if s.time_control[event] != CLASSICAL:
            lines.append(f"222 {base}+{increment}")  # TRF-2026's encoded time control: how readers tell rapid/blitz
        # Round dates start in column 92 (1-based), one every 10 columns.
        lines.append("132".ljust(91) + "  ".join(f"{y % 100:02d}/{m:02d}/{d:02d}" for y, m, d in dates))
        if s.kind[event] == TEAM:
            boards = int(s.boards[event])
            for t, team in enumerate(s.team_name[event]):
                ranks = " ".join(f"{first_rank:4d}" for first_rank in range(t * boards + 1, (t + 1) * boards + 1))
                lines.append(f"013 {team[:32]:<32}{ranks}")  # TRF16: name in 5-36, ranks from column 37
        return "\n".join(lines) + "\n"

    def _trf_player_lines(self, s: Schedule, table: Crosstable, events: np.ndarray) -> list[str]:
        """The 001 lines of each event, built column-wise for all events at once."""
        entry = np.concatenate([np.arange(s.first_entry[e], s.first_entry[e] + s.size[e]) for e in events])
        player = s.entry_player[entry]
        pop = self.pop
        rounds = s.rounds[s.entry_event[entry]]
        opponent = table.opponent[entry]
        opponent_rank = np.where(opponent >= 0, s.entry_start_rank[np.maximum(opponent, 0)], 0)
        points_x2 = np.round(table.points[entry] * 2).astype(np.int64)
        frame = pl.DataFrame(
            {
                "event": s.entry_event[entry],
                "rank": s.entry_start_rank[entry],
                "sex": np.where(pop.female[player], "w", "m"),
                "title": np.asarray(pop.title, dtype=object)[player].astype(str),
                "name": np.asarray(pop.name, dtype=object)[player].astype(str),
                "rating": s.entry_stated_rating[entry],
                "fed": np.array([f.code for f in self.federations], dtype=object)[pop.federation[player]].astype(str),
                "fide_id": pop.player_id[player],
                "birth": pop.birth_year[player],
                "points_x2": points_x2,
                "final_rank": table.final_rank[entry],
            }
        )
        cells = []
        for r in range(C.MAX_ROUNDS):
            colour = np.array([_COLOUR_CHAR[c] for c in range(3)], dtype=object)[table.colour[entry, r]].astype(str)
            code = table.code[entry, r].view("S1").astype(str)
            rank = pl.Series(opponent_rank[:, r])
            # Unpaired cells name opponent 0000 (byes, withdrawals, sit-outs).
            opponent_text = pl.when(rank == 0).then(pl.lit("0000")).otherwise(rank.cast(pl.Utf8).str.pad_start(4))
            cell = pl.concat_str(
                [pl.lit("  "), opponent_text, pl.lit(" "), pl.Series(colour), pl.lit(" "), pl.Series(code)]
            )
            cells.append(pl.when(pl.Series(rounds > r)).then(cell).otherwise(pl.lit("")))
        line = pl.concat_str(
            [
                pl.lit("001 "),
                pl.col("rank").cast(pl.Utf8).str.pad_start(4),
                pl.lit(" "),
                pl.col("sex"),
                pl.col("title").str.pad_start(3),
                pl.lit(" "),
                pl.col("name").str.slice(0, 33).str.pad_end(33),
                pl.lit(" "),
                pl.when(pl.col("rating") > 0)
                .then(pl.col("rating").cast(pl.Utf8))
                .otherwise(pl.lit(""))
                .str.pad_start(4),
                pl.lit(" "),
                pl.col("fed").str.pad_end(3),
                pl.lit(" "),
                pl.col("fide_id").cast(pl.Utf8).str.pad_start(11),
                pl.lit(" "),
                pl.col("birth").cast(pl.Utf8).str.zfill(4),
                pl.lit("/01/01 "),
                pl.concat_str(
                    [
                        (pl.col("points_x2") // 2).cast(pl.Utf8),
                        pl.when(pl.col("points_x2") % 2 == 1).then(pl.lit(".5")).otherwise(pl.lit(".0")),
                    ]
                ).str.pad_start(4),
                pl.lit(" "),
                pl.col("final_rank").cast(pl.Utf8).str.pad_start(4),
                *cells,
            ]
        )
        bodies = (
            frame.select("event", line.alias("line"))
            .group_by("event", maintain_order=True)
            .agg(pl.col("line").str.join("\n"))
        )
        return bodies["line"].to_list()

    # -- PGN ---------------------------------------------------------------------------------------------
    def _write_pgn(self, s: Schedule, games: pl.DataFrame, f: int, duplicate_event: np.ndarray) -> None:
        if games.is_empty():
            return
        pop = self.pop
        names = np.asarray(pop.name, dtype=object)
        events = games["event"].to_numpy()
        forfeit = ~games["played"].to_numpy()
        code = games["code"].to_numpy()
        team = s.kind[events] == TEAM
        frame = games.select(
            "event",
            pl.Series("event_tag", np.asarray(s.name, dtype=object)[events], dtype=pl.Utf8),
            pl.Series("site", np.asarray(s.city, dtype=object)[events], dtype=pl.Utf8),
            pl.col("written_date").dt.strftime("%Y.%m.%d").alias("date"),
            # Team events number games round.board, as team PGNs do.
            pl.when(pl.Series(team))
            .then(pl.format("{}.{}", pl.col("round"), pl.col("board")))
            .otherwise(pl.col("round").cast(pl.Utf8))
            .alias("round"),
            pl.Series("white", names[games["white_player"].to_numpy()], dtype=pl.Utf8),
            pl.Series("black", names[games["black_player"].to_numpy()], dtype=pl.Utf8),
            pl.Series(
                "result", np.array([_PGN_RESULT.get(c, "") for c in range(256)], dtype=object)[code], dtype=pl.Utf8
            ),
            pl.col("white_id").cast(pl.Utf8),
            pl.col("black_id").cast(pl.Utf8),
            pl.col("white_rating"),
            pl.col("black_rating"),
            pl.col("event_start").dt.strftime("%Y.%m.%d").alias("event_date"),
            pl.format("{}+{}", pl.col("tc_base_seconds"), pl.col("tc_increment_seconds")).alias("time_control"),
            pl.Series("forfeit", forfeit),
            pl.Series("opening", np.asarray(_OPENINGS, dtype=object)[games["opening"].to_numpy()], dtype=pl.Utf8),
        )

        def tag(name: str, value: pl.Expr) -> pl.Expr:
            return pl.concat_str([pl.lit(f'[{name} "'), value, pl.lit('"]\n')])

        optional = lambda condition, text: pl.when(condition).then(text).otherwise(pl.lit(""))  # noqa: E731
        block = pl.concat_str(
            [
                tag("Event", pl.col("event_tag")),
                tag("Site", pl.col("site")),
                tag("Date", pl.col("date")),
                tag("Round", pl.col("round")),
                tag("White", pl.col("white")),
                tag("Black", pl.col("black")),
                tag("Result", pl.col("result")),
                tag("WhiteFideId", pl.col("white_id")),
                tag("BlackFideId", pl.col("black_id")),
                optional(pl.col("white_rating").is_not_null(), tag("WhiteElo", pl.col("white_rating").cast(pl.Utf8))),
                optional(pl.col("black_rating").is_not_null(), tag("BlackElo", pl.col("black_rating").cast(pl.Utf8))),
                tag("EventDate", pl.col("event_date")),
                tag("TimeControl", pl.col("time_control")),
                optional(pl.col("forfeit"), pl.lit('[Termination "forfeit"]\n')),
                pl.lit("\n"),
                pl.when(pl.col("forfeit"))
                .then(pl.col("result"))
                .otherwise(pl.concat_str([pl.col("opening"), pl.col("result")], separator=" ")),
                pl.lit("\n"),
            ]
        )
        texts = (
            frame.select("event", block.alias("text"))
            .group_by("event", maintain_order=True)
            .agg(pl.col("text").str.join("\n"))
        )
        for event, text in texts.iter_rows():
            self._event_file(s, event, ".pgn", text.encode("utf-8"), bool(duplicate_event[event]))

    # -- CSV / Parquet -------------------------------------------------------------------------------------
    def _write_tabular(
        self,
        rng: np.random.Generator,
        months: range,
        s: Schedule,
        games: pl.DataFrame,
        f: int,
        duplicate_event: np.ndarray,
    ) -> None:
        """One games file per month (played games and forfeits), plus a resubmission file per duplicated event; the
        events reported in a later month than they were played (_report_months) in that month's folder, a file per
        month played.
        """
        fed, fmt = self.federations[f].code, self.federations[f].dump_format
        white_id, black_id = games["white_id"].to_numpy().copy(), games["black_id"].to_numpy().copy()
        typo, typo_white = games["typo"].to_numpy(), games["typo_white"].to_numpy()
        white_id[typo & typo_white] = mistype_ids(rng, white_id[typo & typo_white], self.registered_sorted)
        black_id[typo & ~typo_white] = mistype_ids(rng, black_id[typo & ~typo_white], self.registered_sorted)
        names = np.asarray(self.pop.name, dtype=object)
        rows = games.select(
            "month",
            "event",
            pl.Series("event_id", np.asarray(s.event_id, dtype=object)[games["event"].to_numpy()], dtype=pl.Utf8),
            "event_start",
            pl.col("written_date").alias("date"),
            "round",
            pl.Series("white_id", white_id),
            pl.Series("black_id", black_id),
            pl.Series("white_name", names[games["white_player"].to_numpy()], dtype=pl.Utf8),
            pl.Series("black_name", names[games["black_player"].to_numpy()], dtype=pl.Utf8),
            pl.col("code").replace_strict(RESULT_TEXT, default=None, return_dtype=pl.Utf8).alias("result"),
            "time_control",
            "tc_base_seconds",
            "tc_increment_seconds",
            "white_rating",
            "black_rating",
        )
        reported = self.report_month[rows["event"].to_numpy()]
        moved = reported != rows["month"].to_numpy()
        # The games reported in a later month, one file per month they were played in and month they were reported
        # for (named by the first: unique over the blocks of months, which each write their own months' files).
        late = rows.filter(pl.Series(moved)).with_columns(pl.Series("reported", reported[moved]))
        for (played, report), group in late.partition_by("month", "reported", as_dict=True).items():
            self._write(
                self._table_bytes(group.select(CSV_COLUMNS), fmt),
                f"raw/{fed}/{self.labels[int(report)]}/games-played-{self.labels[int(played)]}.{fmt}",
            )
        rows = rows.filter(pl.Series(~moved))
        by_month = rows.partition_by("month", as_dict=True, include_key=False)
        empty = rows.drop("month").clear()
        for m in months:
            month_rows = by_month.get((m,), empty)
            label = self.labels[m]
            self._write(self._table_bytes(month_rows.select(CSV_COLUMNS), fmt), f"raw/{fed}/{label}/games.{fmt}")
            for event in np.unique(month_rows["event"].to_numpy()[duplicate_event[month_rows["event"].to_numpy()]]):
                again = month_rows.filter(pl.col("event") == int(event)).select(CSV_COLUMNS)
                # Named to sort after games.<ext>: validation keeps the first copy by file name.
                self._write(
                    self._table_bytes(again, fmt),
                    f"raw/{fed}/{label}/games{DUPLICATE_SUFFIX}-{s.event_id[event]}.{fmt}",
                )
                self.stats.duplicate_files += 1

    @staticmethod
    def _table_bytes(frame: pl.DataFrame, fmt: str) -> bytes:
        if fmt == "csv":
            return frame.write_csv().encode("utf-8")
        buffer = io.BytesIO()
        frame.write_parquet(buffer, compression="zstd", statistics=True)
        return buffer.getvalue()

    # -- registry, seed list, truth ----------------------------------------------------------------------
    def write_registry(self) -> None:
        pop = self.pop
        frame = pl.DataFrame(
            {
                "player_id": pop.player_id,
                "name": pop.name,
                "federation": np.array([f.code for f in self.federations], dtype=object)[pop.federation].astype(str),
                "sex": np.where(pop.female, "F", "M"),
                "birth_year": pop.birth_year,
                "title": [t or None for t in pop.title],
                "entry": pop.entry_month,
            },
            schema_overrides={"title": pl.Utf8},
        ).sort("player_id")
        by_month = frame.partition_by("entry", as_dict=True, include_key=False)
        empty = frame.clear()
        for m, label in enumerate(self.labels):
            month_rows = by_month.get((m,), empty).select(REGISTRY_COLUMNS)
            self._write(month_rows.write_csv().encode("utf-8"), f"raw/players/{label}/players.csv")

    def write_seed_list(self) -> None:
        pop = self.pop
        rated = pop.seed_rating > 0
        frame = pl.DataFrame(
            {
                "player_id": pop.player_id[rated],
                "rating": pop.seed_rating[rated],
                "games_total": pop.seed_games_total[rated],
                "birth_year": pop.birth_year[rated],
                "ever_2400": pop.seed_ever_2400[rated],
            }
        ).sort("player_id")
        self._write(frame.write_csv().encode("utf-8"), f"raw/players/{self.labels[0]}/seed_list.csv")

    def write_truth(self) -> None:
        """truth/strength.parquet: one row per existing player and month, sorted by month then player,
        written a block of months at a time (one row group each) to bound memory at FIDE scale.
        """
        by_id = np.argsort(self.pop.player_id, kind="stable")
        ids = self.pop.player_id[by_id]
        buffer = io.BytesIO()
        with pq.ParquetWriter(buffer, TRUTH_SCHEMA, compression="zstd") as writer:
            for start in range(0, self.months, C.BLOCK_MONTHS):
                block = self.pop.strength[by_id, start : start + C.BLOCK_MONTHS].T  # [months, players]
                month, player = np.nonzero(~np.isnan(block))
                labels = pa.array(self.labels[start : start + C.BLOCK_MONTHS], pa.string())
                writer.write_table(
                    pa.table(
                        {
                            "player_id": pa.array(ids[player], pa.int64()),
                            "month": labels.take(pa.array(month)),
                            "strength": pa.array(block[month, player].astype(np.float64).round(1), pa.float64()),
                        },
                        schema=TRUTH_SCHEMA,
                    )
                )
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
