"""A scenario's recalculation policy: which stored lists a run may rate again, and where games reported after their
list was stored are rated instead.

FIDE does not rewrite a published list: a late or corrected report changes the next list (B.02 2024 §9.1 and the
rating administration's practice, ../shared/reference/systems-and-calendar.md). The English federation recalculates
its last six monthly lists every month; the German central database re-rates everything in tournament order. A
scenario declares one of three policies (Scenario.recalculation):

- `full`: a run rates every month of its range from its games (re-rating from the earliest changed month); the default
  of a scenario that declares none.
- `forward`: a month whose list was stored before the run is *frozen*: it rates the games it rated then and no other.
  Games its folder holds now that its list did not rate (a file added or corrected after the list was stored) are
  rated on the next list that was not stored yet, within their reporting window (pipeline.rules.calendar); beyond it
  they are not rated, and the run says so either way.
- `window: N`: the last N months of the run are rated again from their games (the run's last month and the N-1
  before it: the monthly schedule asks for them); earlier stored months are frozen as under `forward`.

A frozen month rates again exactly the games of its stored per-game table, so a code or rule change still reaches it
and a rerun writes the same bytes; if a game it rated is no longer in the files as it was (a corrected file dropped it,
or gives another result or player at its place), its stored tables are kept as they are, and the corrected game is
listed in the run's words but not rated on a later list: the engine has no reversal of a rated game, so rating the
correction forward would count the game twice (reading chosen here; FIDE's text says corrections change the next
list, not how). A scenario under `full` re-rates it. Whatever the policy, a list that comes out different from the
stored one says what changed (pipeline.scenarios.amendments).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from pipeline.months import add_months, month_range
from pipeline.rules.calendar import reporting_problems
from pipeline.scenarios.model import MAX_PERIOD_MONTHS
from pipeline.store.monthly import read_stored_month, stored_table_months
from pipeline.store.object_store import ObjectStore

FULL, FORWARD = "full", "forward"
#: Months before a run's first month searched for games reported after their list was stored and not rated yet: the
#: longest late window (the third list after a tournament's end, three quarters apart before July 2009) and more.
LOOK_BACK_MONTHS = 12
#: The metadata key of a month's notes as the run's words (the run summary prints them).
LATE_REPORTS = "late_reports"


@dataclass
class MonthNote:
    """What the policy did in one month of the run."""

    waiting: int = 0  # games of this month's files its stored list did not rate: kept for the next list
    rated: int = 0  # games reported after their own month's list was stored, rated on this list
    rated_from: list[str] = field(default_factory=list)  # the folders they were filed under
    too_late: int = 0  # such games beyond their reporting window at this list: not rated
    too_late_from: list[str] = field(default_factory=list)
    kept_as_stored: bool = False  # a game the stored list rated is gone from the files: the stored tables stand
    corrected: int = 0  # games the stored list rated that the files now give otherwise: listed, not rated again
    corrected_files: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the files of `waiting`

    def metadata(self) -> dict[str, object]:
        values: dict[str, object] = {
            "late_games_waiting": self.waiting,
            "late_games_rated": self.rated,
            "late_games_too_late": self.too_late,
            "kept_as_stored": self.kept_as_stored,
            "corrected_games_not_rated": self.corrected,
        }
        return {key: value for key, value in values.items() if value}

    def lines(self, scenario: str, policy: str, month: str, next_list: str, past_window: int) -> list[str]:
        """The run's words for this month (empty when the policy did nothing); `past_window` of the games waiting
        since this month are past their reporting window at `next_list`.
        """
        lines = []
        if self.waiting:
            files = ", ".join(self.files[:3]) + (f" and {len(self.files) - 3} more" if len(self.files) > 3 else "")
            where = f"they belong to the list of {next_list}"
            if past_window:
                where += f", where {past_window} of them will be past their reporting window (not rated)"
            lines.append(
                f"{scenario}: {self.waiting} game(s) filed under {month} after its list was stored ({files}) are not "
                f"rated on it (recalculation: {policy}): {where}"
            )
        if self.rated:
            lines.append(
                f"{scenario}: the list of {month} rates {self.rated} game(s) filed under "
                f"{', '.join(sorted(set(self.rated_from)))} after their list was stored"
            )
        if self.too_late:
            lines.append(
                f"{scenario}: {self.too_late} game(s) filed under {', '.join(sorted(set(self.too_late_from)))} after "
                f"their list was stored are past their reporting window at the list of {month}: not rated"
            )
        if self.corrected:
            files = ", ".join(sorted(set(self.corrected_files))[:3])
            lines.append(
                f"{scenario}: {self.corrected} game(s) the stored list of {month} rated are given otherwise by the "
                f"files now ({files}: a corrected result or player): not rated again (recalculation: {policy}; "
                "a scenario under `full` re-rates them)"
            )
        if self.kept_as_stored:
            lines.append(
                f"{scenario}: a game the stored list of {month} rated is no longer in the files: the stored list "
                f"stands (recalculation: {policy})"
            )
        return lines


class LateReports:
    """The policy applied to one run of one scenario's chain: frozen months, the games waiting for a list, and notes.

    `frozen` are the run's months whose stored list the run must not rate other games on (months before the run, read
    by a rating period that starts earlier, are frozen too). Waiting games are kept as rows (the games table's
    columns) with the folder month they were filed under (`_filed`).
    """

    def __init__(
        self,
        store: ObjectStore,
        scenario_name: str,
        first_month: str,
        frozen: Sequence[str],
        waiting: pl.DataFrame | None,
        policy: str = FORWARD,
    ):
        self.store, self.scenario_name, self.first_month = store, scenario_name, first_month
        self.policy = policy  # as the run's words name it: forward, window N
        self.frozen = set(frozen)
        self.waiting = waiting
        self.notes: dict[str, MonthNote] = {}
        self._answered: dict[str, pl.DataFrame] = {}  # each month's games as answered (a period reads a month twice)

    def is_frozen(self, month: str) -> bool:
        return month in self.frozen or month < self.first_month

    def games_of(self, month: str, games_of: Callable[[str], pl.DataFrame]) -> Callable[[str], pl.DataFrame]:
        """games_of for rating `month`: a frozen month's games as its stored list rated them (from the files and the
        games waiting), else the month's games, with the waiting ones within their window added to `month`'s own
        (the rest dropped, noted).
        """

        def of(wanted: str) -> pl.DataFrame:
            if wanted not in self._answered:
                own = games_of(wanted).with_columns(pl.col("game_id").cast(pl.UInt64))
                self._answered[wanted] = self._games(wanted, own, wanted == month)
                for old in sorted(self._answered)[:-MAX_PERIOD_MONTHS]:
                    del self._answered[old]
            return self._answered[wanted]

        return of

    def _games(self, month: str, own: pl.DataFrame, rated_here: bool) -> pl.DataFrame:
        note = self.notes.setdefault(month, MonthNote())
        if self.is_frozen(month):
            stored = _stored_games(self.store, self.scenario_name, month)
            if stored is not None:
                return self._frozen_games(month, own, stored, note)
        if not rated_here or self.waiting is None:
            return own
        waiting, self.waiting = self.waiting, None
        late = _too_late(waiting, month)
        in_time = waiting.filter(~late)
        note.too_late += int(late.sum())
        note.too_late_from += waiting.filter(late)["_filed"].unique().to_list()
        note.rated += in_time.height
        note.rated_from += in_time["_filed"].unique().sort().to_list()
        return pl.concat([own, in_time.select(own.columns)], how="vertical_relaxed")

    def _frozen_games(self, month: str, own: pl.DataFrame, stored: pl.DataFrame, note: MonthNote) -> pl.DataFrame:
        listed = stored["game_id"].implode()
        is_stored = own["game_id"].is_in(listed)
        new, rated_before = own.filter(~is_stored), own.filter(is_stored)
        # The same place of the same file holding another game now (a corrected result or player): the stored list
        # rated the game as it was, and rating the correction on a later list would count the game twice.
        pool = rated_before.join(stored, on=list(stored.columns), how="semi")
        corrected = rated_before.join(pool.select("game_id"), on="game_id", how="anti")
        if corrected.height:
            note.corrected += corrected.height
            note.corrected_files += corrected["source_file"].unique().sort().to_list()
        if self.waiting is not None:
            carried = self.waiting.filter(pl.col("game_id").is_in(listed))
            pool = pl.concat([pool, carried.select(own.columns)], how="vertical_relaxed")
            left = self.waiting.filter(~pl.col("game_id").is_in(listed))
            self.waiting = left if left.height else None
        note.kept_as_stored = pool.height != stored.height
        if new.height:
            note.waiting += new.height
            note.files += new["source_file"].unique().sort().to_list()
            added = new.with_columns(_filed=pl.lit(month))
            self.waiting = added if self.waiting is None else pl.concat([self.waiting, added], how="vertical_relaxed")
        return pool

    def kept(self, month: str) -> bool:
        """Whether `month` keeps its stored tables as they are (a game they rated is gone from the files)."""
        return month in self.notes and self.notes[month].kept_as_stored

    def metadata(self, month: str) -> dict[str, object]:
        return self.notes[month].metadata() if month in self.notes else {}

    def lines(self, month: str, months: Sequence[str]) -> list[str]:
        """The run's words for `month` of the run `months`."""
        if month not in self.notes:
            return []
        later = [m for m in months if m > month and m not in self.frozen]
        next_list = later[0] if later else add_months(months[-1], 1)
        past_window = 0
        if self.waiting is not None and self.notes[month].waiting:
            filed_here = self.waiting.filter(pl.col("_filed") == month)
            past_window = int(_too_late(filed_here, next_list).sum()) if filed_here.height else 0
        return self.notes[month].lines(self.scenario_name, self.policy, month, next_list, past_window)


#: What a stored per-game table says of each game it rated: a game of the files is the one it rated when these agree.
GAME_IDENTITY = pl.Schema({"game_id": pl.UInt64, "white_id": pl.Int64, "black_id": pl.Int64, "white_score": pl.Float64})


def _stored_games(store: ObjectStore, scenario_name: str, month: str) -> pl.DataFrame | None:
    """GAME_IDENTITY of the scenario's stored per-game table of `month`, None when it is not stored."""
    frame = read_stored_month(store, [scenario_name, "rated_games"], month, list(GAME_IDENTITY))
    return None if frame is None else frame.cast(GAME_IDENTITY)


def _stored_ids(store: ObjectStore, scenario_name: str, month: str) -> pl.Series | None:
    """The game ids of the scenario's stored per-game table of `month`, None when it is not stored."""
    frame = read_stored_month(store, [scenario_name, "rated_games"], month, ["game_id"])
    return None if frame is None else frame["game_id"].cast(pl.UInt64)


def _too_late(waiting: pl.DataFrame, month: str) -> pl.Series:
    """Which waiting games are past their reporting window at the list of `month` (pipeline.rules.calendar): the
    tournament's end is its last game's day among them (its start where undated).
    """
    end = pl.coalesce(pl.col("date"), pl.col("event_start")).max().over("_filed", "event_id")
    reason, _ = reporting_problems(end, pl.lit(None, dtype=pl.Date), month)
    return waiting.select((reason == "too_late").fill_null(False)).to_series()


def frozen_months(policy: str | int, stored: set[str], months: Sequence[str]) -> list[str]:
    """The run's months whose list is frozen: none under `full`; the stored ones under `forward`; under a window of
    N (an int), the stored ones before the run's last N months.
    """
    if policy == FULL:
        return []
    if policy == FORWARD:
        return [m for m in months if m in stored]
    assert isinstance(policy, int)
    recalculated = set(months[-policy:])
    return [m for m in months if m in stored and m not in recalculated]


def late_reports(
    store: ObjectStore,
    scenario_name: str,
    policy: str | int,
    months: Sequence[str],
    chain_start: str,
) -> LateReports | None:
    """The policy of one run of the chain over `months` (None under `full`): the frozen months (read before anything
    is written), and the games of the LOOK_BACK_MONTHS before the run filed after their list was stored and rated on
    no list since (the game ids of those months' games and stored per-game tables; rows read only where one waits).
    """
    if policy == FULL:
        return None
    stored = set(stored_table_months(store, [scenario_name, "rating_list"]))
    frozen = frozen_months(policy, stored, months)
    before = month_range(add_months(months[0], -LOOK_BACK_MONTHS), add_months(months[0], -1))
    before = [m for m in before if m >= chain_start and m in stored]
    rated = {m: ids for m in before if (ids := _stored_ids(store, scenario_name, m)) is not None}
    # Sorted once: a month's games are nearly all rated on its own list, so each month's ids are looked up among its
    # own hundred thousand first, and only the few left among the year's million (a hash of those, built again for
    # every month, was a tenth of a CPU-second a month).
    year_ids = np.sort(pl.concat(list(rated.values())).to_numpy()) if rated else np.zeros(0, dtype=np.uint64)
    waiting = []
    for month in before:
        filed = read_stored_month(store, ["games"], month, ["game_id"])
        if filed is None:
            continue
        left = filed.cast({"game_id": pl.UInt64})
        if month in rated:
            left = left.join(rated[month].to_frame("game_id"), on="game_id", how="anti")
        not_rated = left["game_id"].to_numpy()
        if len(year_ids) and len(not_rated):
            at = np.minimum(np.searchsorted(year_ids, not_rated), len(year_ids) - 1)
            not_rated = not_rated[year_ids[at] != not_rated]
        if not len(not_rated):
            continue
        games = read_stored_month(store, ["games"], month)
        assert games is not None  # its ids were just read
        games = games.with_columns(pl.col("game_id").cast(pl.UInt64))
        waiting.append(
            games.filter(pl.col("game_id").is_in(pl.Series(not_rated).implode())).with_columns(_filed=pl.lit(month))
        )
    found = pl.concat(waiting, how="vertical_relaxed") if waiting else None
    if found is not None:
        # Past their window already at the list before the run: the run that made it said so; not again.
        found = found.filter(~_too_late(found, add_months(months[0], -1)))
    label = policy if isinstance(policy, str) else f"window {policy}"
    return LateReports(store, scenario_name, months[0], frozen, found, label)
