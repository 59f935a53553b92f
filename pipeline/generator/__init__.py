"""Synthetic federation generator: seeded, deterministic raw dumps with a known true strength per player and month.

`generate(out, seed, players, start, end)` simulates a population of players over the months
start..end (inclusive) and writes, through `pipeline.storage.ObjectStore(out)` only:

- `raw/GER/<YYYY-MM>/<event_id>.trf`  one FIDE TRF16 file per event hosted by GER;
- `raw/ENG/<YYYY-MM>/<event_id>.pgn`  one PGN file per event hosted by ENG (games and forfeits);
- `raw/NOR/<YYYY-MM>/games.csv`       every played game of events hosted by NOR that month;
- `raw/players/<YYYY-MM>/players.csv` players registered that month (the first month: all present);
- `raw/players/<start>/seed_list.csv` the rating list in force before the first month;
- `truth/strength.parquet`            true strength per player and month of existence.

Conventions the ingestion side relies on:

- event_id = `<federation lower>-<YYYY-MM>-<serial>-<name slug>`, unique over the data set. TRF and
  PGN files are named `<event_id>.trf` / `.pgn`; the CSV carries it in its `event_id` column. The
  federation in the path is the organiser's; players of other federations play in it too.
- Ratings stated in the dumps (TRF columns 49-52, PGN WhiteElo/BlackElo, CSV white_rating /
  black_rating) are the list in force at the event start. The generator only knows the seed list,
  which is in force for the first month, so ratings are stated for events of the first month only
  (seed-rated players; blank for unrated ones) and left blank everywhere later: the pipeline then
  uses its own list in force. Every TRF's `072` counts the ratings stated in that file.
- All events take place inside their folder's month. Dirty records (rates in `config.py`):
  TRF forfeits `+`/`-`, byes `H`, `F`/`U` (the odd player out), `Z`, blank (withdrawals and
  round-robin sit-outs, written as `0000 - ` plus a blank result); PGN forfeits are games without
  moves and `[Termination "forfeit"]`; CSV games with a mistyped (unregistered) id; CSV and PGN games
  dated one month early; TRF/PGN event files submitted twice (`<event_id>-resubmitted.<ext>`,
  byte-identical). CSV files hold played games only; rapid games (900+10) appear only there.
- Files are UTF-8 (ASCII content), LF line endings; registry sex is `M`/`F`, TRF sex `m`/`w`.

This package never imports dagster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.generator import config
from pipeline.generator.dumps import DumpWriter
from pipeline.generator.events import build_schedule
from pipeline.generator.pairing import pair_and_play
from pipeline.generator.population import build_population
from pipeline.months import month_index, month_range
from pipeline.storage import ObjectStore

__all__ = ["DEFAULT_DEMO", "GenerationSummary", "generate"]

# The `ratings demo` data set: ten years, tens of thousands of players.
DEFAULT_DEMO = dict(seed=2024, players=30000, start="2015-01", end="2024-12")


@dataclass(frozen=True)
class GenerationSummary:
    """What `generate` wrote. `games` counts played games once (duplicate files not included)."""

    months: int
    players: int
    games: int
    files: int
    federations: tuple[str, ...]
    root: str
    start: str = ""
    end: str = ""
    events: int = 0
    forfeits: int = 0
    byes: int = 0                    # round cells without an opponent (H, F, U, Z, blank)
    id_typos: int = 0
    dated_outside_month: int = 0
    duplicate_files: int = 0
    games_per_month: tuple[int, ...] = ()


def generate(out: str, seed: int, players: int, start: str, end: str) -> GenerationSummary:
    """Simulate `players` players from `start` to `end` (YYYY-MM, inclusive) and write the raw dumps to `out`."""
    if players < 1:
        raise ValueError(f"players must be positive, got {players}")
    labels = month_range(start, end)
    first, months = month_index(start), len(labels)
    # Independent streams per stage: changing one stage's draws leaves the others' untouched.
    population_rng, schedule_rng, results_rng, dumps_rng = np.random.default_rng(seed).spawn(4)

    pop = build_population(population_rng, players, first, months)
    schedule = build_schedule(schedule_rng, pop, first, months)
    table = pair_and_play(results_rng, schedule)
    store = ObjectStore(out)
    stats = DumpWriter(store, dumps_rng, pop, schedule, table, first, months).write_all()

    played = table.played
    game_month = schedule.month[schedule.entry_event[table.game_white]]
    in_event = np.arange(config.MAX_ROUNDS)[None, :] < schedule.rounds[schedule.entry_event][:, None]
    return GenerationSummary(
        months=months,
        players=players,
        games=int(played.sum()),
        files=stats.files,
        federations=config.FEDERATIONS,
        root=store.url(),
        start=start,
        end=end,
        events=schedule.events,
        forfeits=int((~played).sum()),
        byes=int((in_event & (table.opponent < 0)).sum()),
        id_typos=stats.id_typos,
        dated_outside_month=stats.dated_outside_month,
        duplicate_files=stats.duplicate_files,
        games_per_month=tuple(int(c) for c in np.bincount(game_month[played], minlength=months)),
    )
