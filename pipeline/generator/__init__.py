"""Synthetic federation generator: seeded, deterministic raw dumps with a known true strength per player and month.

`generate(out, seed, players, start, end, scale=...)` simulates a population of players over the
months start..end (inclusive) and writes, through `pipeline.store.object_store.ObjectStore(out)` only:

- `raw/<FED>/<YYYY-MM>/<event_id>.trf`    one FIDE TRF16 file per event hosted by a TRF federation
                                          (team events carry TRF16 `013` team records);
- `raw/<FED>/<YYYY-MM>/<event_id>.pgn`    one PGN file per event hosted by a PGN federation;
- `raw/<FED>/<YYYY-MM>/games.csv|.parquet` every paired game of the events a CSV / Parquet
                                          federation hosted that month (one file per month);
- `raw/<FED>/<YYYY-MM>/<event_id>-resubmitted.trf|.pgn` and `games-resubmitted-<event_id>.csv|.parquet`
                                          an event submitted a second time (named to sort after
                                          the original: validation keeps the first copy by name);
- `raw/players/<YYYY-MM>/players.csv`     players registered that month (the first month: all present);
- `raw/players/<start>/seed_list.csv`     the rating list in force before the first month;
- `truth/strength.parquet`                true strength per player and month of existence
                                          (player_id, month, strength), sorted by month then player.

Scale presets (`config.SCALES`): `small` is the `ratings demo` data set (30,000 players,
2015-01..2024-12, ENG PGN / GER TRF / NOR CSV); `medium` a tenth of the FIDE pool and `fide` the
real pool's size (2008-01..2024-12, ~100,000 existing players in 2011 and ~400,000 in 2023, from
0.4 M classical games in 2008 to 2 M in 2024), where four more federations deliver Parquet.
Explicit arguments override the preset. `players` counts everybody who ever exists; their
registrations follow the FIDE pool's growth (`config.POOL_SIZE_BY_YEAR`), so a few hundred players
spread over 2008-2024 leave hardly anybody (and no events) in the first years.

The world: players register with a growing yearly influx (ever younger and weaker entrants);
juniors improve fast, adults are stable, seniors decline, everybody may quit. Each month players
enter events of their federation (sometimes abroad): opens, rating-restricted sections, junior-only
events, round robins and team round robins, paired by the rating the organisers know; Swiss events
are classical, rapid or blitz. Results come from true strengths (logistic, White +35, an explicit
draw model). Events run inside one month and are simulated a year at a time.

Conventions the ingestion side relies on:

- event_id = `<federation lower>-<YYYY-MM>-<serial>-<name slug>`, unique over the data set. TRF and
  PGN files are named `<event_id>.trf` / `.pgn`; CSV/Parquet carry it in their `event_id` column.
  The federation in the path is the organiser's; players of other federations play in it too.
- Ratings stated in the dumps (TRF columns 49-52, PGN WhiteElo/BlackElo, CSV white_rating /
  black_rating) are the list in force at the event start. The generator only knows the seed list,
  which is in force for the first month, so ratings are stated for events of the first month only
  (seed-rated players; blank for unrated ones) and left blank everywhere later: the pipeline then
  uses its own list in force. Every TRF's `072` counts the ratings stated in that file.
- Time controls: PGN `TimeControl`, TRF `222` (TRF-2026 encoded time control, written for rapid and
  blitz only; `122` always), CSV/Parquet columns. 5400+30 classical, 900+10 rapid, 180+2 blitz.
- All events take place inside their folder's month. Dirty records (rates in `config.py`):
  TRF forfeits `+`/`-`, byes `H`, `F`/`U` (the odd player out), `Z`, blank (withdrawals and
  round-robin sit-outs, written as `0000 - ` plus a blank result); PGN forfeits are games without
  moves and `[Termination "forfeit"]`; CSV/Parquet forfeits have result `+-` / `-+`; CSV/Parquet
  games with a mistyped (unregistered) id; CSV, Parquet and PGN games dated one month early (a mistyped
  month, before their event's stated start: quarantined as `unparseable`, naming both dates); events
  submitted twice (TRF/PGN: byte-identical file; CSV/Parquet: the event's rows again, typos and all).
- Files are UTF-8 (ASCII content), LF line endings; registry sex is `M`/`F`, TRF sex `m`/`w`.

This package never imports dagster.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass

import numpy as np

from pipeline.generator import config
from pipeline.generator.dumps import WRITER_THREADS, DumpWriter
from pipeline.generator.events import TEAM, EventNamer, Schedule, build_schedule
from pipeline.generator.pairing import Crosstable, pair_and_play
from pipeline.generator.population import Population, build_population
from pipeline.months import month_index, month_range
from pipeline.store.object_store import TEMP_MARK, ObjectStore, orphaned_temp_name

__all__ = [
    "DEFAULT_DEMO",
    "SCALES",
    "Block",
    "GenerationSummary",
    "Simulation",
    "generate",
    "resolve_scale",
    "simulate",
]

SCALES = config.SCALES
# The `ratings demo` data set (the `small` preset): ten years, tens of thousands of players.
DEFAULT_DEMO = {key: SCALES["small"][key] for key in ("seed", "players", "start", "end")}

# Independent random streams per stage (and per block for the monthly stages): changing one
# stage's draws leaves the others' untouched.
_POPULATION, _SCHEDULE, _RESULTS, _DUMPS = range(4)


@dataclass(frozen=True)
class GenerationSummary:
    """What `generate` wrote. `games` counts played games once (forfeits and duplicate files not included)."""

    months: int
    players: int
    games: int
    files: int
    federations: tuple[str, ...]
    root: str
    start: str = ""
    end: str = ""
    scale: str = ""
    seed: int = 0
    events: int = 0
    team_events: int = 0
    classical_games: int = 0  # of `games`: the standard-rated ones (others are rapid or blitz)
    forfeits: int = 0
    byes: int = 0  # round cells without an opponent (H, F, U, Z, blank)
    id_typos: int = 0
    dated_outside_month: int = 0
    late_reports: int = 0  # tournaments filed one or two lists late (rated)
    too_late_reports: int = 0  # filed after the third list since they ended (quarantined as too_late)
    duplicate_files: int = 0
    bytes_written: int = 0
    games_per_month: tuple[int, ...] = ()


@dataclass(frozen=True)
class Block:
    """The events of consecutive months and their crosstables."""

    months: range
    schedule: Schedule
    table: Crosstable


def resolve_scale(
    scale: str = config.DEFAULT_SCALE,
    seed: int | None = None,
    players: int | None = None,
    start: str | None = None,
    end: str | None = None,
) -> dict:
    """The preset's arguments with the explicit ones (not None) taking precedence."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; known: {', '.join(SCALES)}")
    chosen = dict(SCALES[scale])
    chosen.update({k: v for k, v in dict(seed=seed, players=players, start=start, end=end).items() if v is not None})
    if chosen["players"] < 1:
        raise ValueError(f"players must be positive, got {chosen['players']}")
    return chosen


class Simulation:
    """The simulated world without any file: the population up front, then events and games block by block."""

    def __init__(
        self,
        seed: int,
        players: int,
        start: str,
        end: str,
        federations: tuple[config.Federation, ...] = config.DEMO_FEDERATIONS,
    ) -> None:
        self.seed, self.start, self.end, self.federations = seed, start, end, federations
        self.labels = month_range(start, end)
        self.first, self.months = month_index(start), len(self.labels)
        self.population: Population = build_population(
            self._rng(_POPULATION), players, self.first, self.months, federations
        )

    def _rng(self, stage: int, block: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seed, stage, block])

    def blocks(self) -> Iterator[Block]:
        """Schedule, pair and play BLOCK_MONTHS months at a time (deterministic for the seed)."""
        namer = EventNamer(self.federations)
        for index, begin in enumerate(range(0, self.months, config.BLOCK_MONTHS)):
            months = range(begin, min(begin + config.BLOCK_MONTHS, self.months))
            schedule = build_schedule(
                self._rng(_SCHEDULE, index), self.population, self.first, months, self.federations, namer
            )
            yield Block(months, schedule, pair_and_play(self._rng(_RESULTS, index), schedule))

    def dumps_rng(self, block_index: int) -> np.random.Generator:
        return self._rng(_DUMPS, block_index)


def simulate(
    seed: int | None = None,
    players: int | None = None,
    start: str | None = None,
    end: str | None = None,
    *,
    scale: str = config.DEFAULT_SCALE,
) -> Simulation:
    """The world of `generate` with the same arguments, in memory (for experiments and checks)."""
    chosen = resolve_scale(scale, seed, players, start, end)
    return Simulation(chosen["seed"], chosen["players"], chosen["start"], chosen["end"], chosen["federations"])


#: The temporary folder, inside a local store, that `generate` writes the data set into (then its writer's pid).
GENERATING = ".generating"


def generate(
    out: str,
    seed: int | None = None,
    players: int | None = None,
    start: str | None = None,
    end: str | None = None,
    *,
    scale: str = config.DEFAULT_SCALE,
) -> GenerationSummary:
    """Simulate the preset `scale` (explicit arguments override it) and write the raw dumps to `out`.

    Into a local store without raw/, whole or not at all: written into a temporary folder inside it, then moved into
    place, raw/ first (a rename); cut short (Ctrl-C, a full disk), the folder is removed and the store is as it was.
    On S3 (a prefix cannot be renamed) and into a raw/ that is there (--force), each file is written whole in place.
    """
    chosen = resolve_scale(scale, seed, players, start, end)
    world = Simulation(chosen["seed"], chosen["players"], chosen["start"], chosen["end"], chosen["federations"])
    store = ObjectStore(out)
    if not store.is_local or store.exists("raw"):
        return _write_dumps(world, store, chosen, scale, store.url())
    made = not os.path.isdir(store.base)
    os.makedirs(store.base, exist_ok=True)
    for name in leftover_generations(store.base):  # of a generation killed outright
        shutil.rmtree(os.path.join(store.base, name), ignore_errors=True)
    folder = os.path.join(store.base, f"{GENERATING}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex}")
    try:
        summary = _write_dumps(world, ObjectStore(folder), chosen, scale, store.url())
        _move_into_place(folder, store.base)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        if made:  # the store's folder too, made for it and empty again
            with suppress(OSError):
                os.rmdir(store.base)
        raise
    shutil.rmtree(folder, ignore_errors=True)  # its folders, emptied
    return summary


def leftover_generations(base: str) -> list[str]:
    """The temporary folders in the local store `base` of generations whose process has ended (killed outright)."""
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return [name for name in names if name.startswith(GENERATING) and orphaned_temp_name(name)]


def _move_into_place(folder: str, base: str) -> None:
    """The data set generated in `folder` moved into the store `base`: raw/ first, in one rename (what `ratings run`
    and `demo` look for), then the other files (truth/strength.parquet), each replacing its namesake.
    """
    os.rename(os.path.join(folder, "raw"), os.path.join(base, "raw"))
    for parent, _dirs, files in os.walk(folder):
        for name in files:
            target = os.path.join(base, os.path.relpath(os.path.join(parent, name), folder))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(os.path.join(parent, name), target)


def _stop_writers(pool: ThreadPoolExecutor, writers: str) -> None:
    """Shut `pool` down and wait for every thread named `writers`: each write ended before the caller goes on (generate
    removes its temporary folder on an interrupt).

    Not the pool's `with`, nor its shutdown alone. One Ctrl-C was seen to raise KeyboardInterrupt twice in one
    generation (inside Polars' sink_csv, then where `with` calls the shutdown, which it skipped: the threads then wait
    for work for ever). Raised while the pool starts a thread, inside a submit, it leaves that thread out of the pool's
    own list, which its shutdown waits for (the cleanup then came before that thread's write). So the shutdown is made
    again and the threads are found by name until it is done; an interrupt meanwhile is raised once it is.
    """
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            pool.shutdown(wait=False)  # as often as need be: it only wakes the threads to end
            for thread in threading.enumerate():
                if thread.name.startswith(writers):
                    thread.join()
            break
        except KeyboardInterrupt as again:
            interrupted = again
    if interrupted is not None:
        raise interrupted


def _write_dumps(world: Simulation, store: ObjectStore, chosen: dict, scale: str, root: str) -> GenerationSummary:
    """The simulated world's files written to `store`; `root`: where the summary says they are."""
    played_per_month = np.zeros(world.months, dtype=np.int64)
    events = team_events = classical = forfeits = byes = 0
    writers = f"generate-writer-{uuid.uuid4().hex}"
    pool = ThreadPoolExecutor(max_workers=WRITER_THREADS, thread_name_prefix=writers)
    try:
        writer = DumpWriter(store, world.population, world.federations, world.first, world.months, pool)
        writer.write_registry()
        writer.write_seed_list()
        for index, block in enumerate(world.blocks()):
            games = writer.write_block(world.dumps_rng(index), block.months, block.schedule, block.table)
            played = games.filter("played")
            played_per_month += np.bincount(played["month"].to_numpy(), minlength=world.months)
            classical += played.filter(time_control="classical").height
            forfeits += games.height - played.height
            events += block.schedule.events
            team_events += int((block.schedule.kind == TEAM).sum())
            s, t = block.schedule, block.table
            in_event = np.arange(config.MAX_ROUNDS)[None, :] < s.rounds[s.entry_event][:, None]
            byes += int((in_event & (t.opponent < 0)).sum())
            writer.finish()  # one block's writes in flight at a time: bounded memory
        writer.write_truth()
        stats = writer.finish()
    finally:
        _stop_writers(pool, writers)

    return GenerationSummary(
        months=world.months,
        players=world.population.size,
        games=int(played_per_month.sum()),
        files=stats.files,
        federations=tuple(f.code for f in world.federations),
        root=root,
        start=chosen["start"],
        end=chosen["end"],
        scale=scale,
        seed=chosen["seed"],
        events=events,
        team_events=team_events,
        classical_games=classical,
        forfeits=forfeits,
        byes=byes,
        id_typos=stats.id_typos,
        dated_outside_month=stats.dated_outside_month,
        late_reports=stats.late_reports,
        too_late_reports=stats.too_late_reports,
        duplicate_files=stats.duplicate_files,
        bytes_written=stats.bytes,
        games_per_month=tuple(int(c) for c in played_per_month),
    )
