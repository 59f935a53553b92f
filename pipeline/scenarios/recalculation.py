"""A scenario's recalculation policy: which stored lists a run may rate again.

And where games reported after their list was stored are rated instead.

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
and a rerun writes the same bytes. If a game it rated is no longer in the files as it was (a corrected file gives
another result or player at its place, or dropped it), its stored tables are kept as they are, byte for byte, and the
correction goes into the next list (FIDE: "the correction changes the next list"; how is the reading chosen here,
pipeline.scenarios.corrections): the list M would have had with the games the files give now is rated in memory, the
same way the chain rates a month (from the chain's list of M-1, the ratings of the lists in force at each event's
start, M's rule set); a player rated on both versions is corrected by the difference (the change M published was
wrong by this much, with M's own K), added to the next list not stored yet as its `correction` column (the list's
change stays the one its own games give). Corrections of several months add up. The players a correction changes
otherwise (newly rated or no longer rated, or an unrated player's pool of games) are not corrected and are named in
the run's words: a scenario under `full` re-rates them. A list that carries corrections records them
(lists/<scenario>/<YYYY-MM>.corrections.csv), so a run finding the same corrected games again (the sensor's run from
the corrected month, a rerun) carries only what no list carried yet; a stored list that carries corrections carries
them again, the same, when it is rated again. A list whose games the files give as it rated them again, though stored
lists carried a correction of it (the correction withdrawn: the file put back), needs none: what they carried is taken
back on the next list not stored yet, and said (LateReports.withdraw). The months before a run are searched for
corrected games as for late ones (LOOK_BACK_MONTHS): the monthly schedule's run of the next month carries a correction
the sensor's run found.
A rating-system scenario carries no corrections: its stored tables stand and the corrected games are only listed.
Stored tables stand only on the list they were rated from: when the run rates the list before a month otherwise (a code
or rule change reaches a frozen list), that month is rated again from the games it rated that the files still give as
they were, the others corrected or listed as above (LateReports.keeps): a run never writes a chain its list_continuity
check refuses.
Whatever the policy, a list that comes out different from the stored one says what changed
(pipeline.scenarios.amendments).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from pipeline.formats import event_named_by_row
from pipeline.ingest.registry import registry_history
from pipeline.months import add_months, month_range
from pipeline.rules.calendar import reporting_problems, stated_tournament_ends, tournament_end
from pipeline.rules.model import RuleSet
from pipeline.scenarios.corrections import (
    CORRECTION,
    POINTS_SCHEMA,
    ListCorrection,
    list_correction,
    record_corrections,
    recorded_corrections,
    stored_points,
    with_corrections,
)
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.restriction import restricted_in_month
from pipeline.store.monthly import read_stored_month, stored_games, stored_table_months
from pipeline.store.object_store import ObjectStore
from pipeline.text import some_names

FULL, FORWARD = "full", "forward"
#: Months before a run's first month searched for games reported after their list was stored and not rated yet (and
#: for games a stored list rated that the files give otherwise now): the longest late window (the third list after a
#: tournament's end, three quarters apart before July 2009) and more.
LOOK_BACK_MONTHS = 12
#: The metadata key of a month's notes as the run's words (the run summary prints them).
LATE_REPORTS = "late_reports"
#: A month's games answered by LateReports.games_of are kept at least this many months (a period reads a month twice).
_ANSWERED_MONTHS = 3
#: Player ids named in the run's words, at most.
NAMED_PLAYERS = 5


@dataclass
class CorrectionNote:
    """The correction of one stored list whose games the files give otherwise now (pipeline.scenarios.corrections)."""

    players: int = 0  # players this run corrects (what earlier lists carried taken off)
    gained: int = 0  # their points added, and taken off (lost, positive)
    lost: int = 0
    carried_to: str = ""  # the list that carries them
    carried_before: list[str] = field(default_factory=list)  # the lists that carried corrections of it already
    not_carried: list[int] = field(default_factory=list)  # players it changes otherwise (rated status, pool)
    problem: str = ""  # why it could not be computed
    withdrawn: bool = False  # the files give its games as it rated them again: what lists carried is taken back


@dataclass
class MonthNote:
    """What the policy did in one month of the run."""

    waiting: int = 0  # games of this month's files its stored list did not rate: kept for the next list
    rated: int = 0  # games reported after their own month's list was stored, rated on this list
    rated_from: list[str] = field(default_factory=list)  # the folders they were filed under
    too_late: int = 0  # such games beyond their reporting window at this list: not rated
    too_late_from: list[str] = field(default_factory=list)
    kept_as_stored: bool = False  # a game the stored list rated is given otherwise or gone: the stored tables stand
    rated_again: bool = False  # so, but the list before it changed in this run: its list is rated again (keeps)
    corrected: int = 0  # games the stored list rated that the files now give otherwise (a corrected result or player)
    gone: int = 0  # games the stored list rated that are no longer in the files
    corrected_files: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the files of `waiting`
    correction: CorrectionNote | None = None  # a list month's correction (rule-set scenarios)
    carries: list[str] = field(default_factory=list)  # the lists whose corrections this list carries
    carried_points: tuple[int, int] = (0, 0)  # the points this list adds and takes off for corrections
    corrected_players: list[int] = field(default_factory=list)  # the players this list corrects
    not_corrected: list[int] = field(default_factory=list)  # players of those corrections this list does not rate

    def metadata(self) -> dict[str, object]:
        values: dict[str, object] = {
            "late_games_waiting": self.waiting,
            "late_games_rated": self.rated,
            "late_games_too_late": self.too_late,
            "kept_as_stored": self.kept_as_stored,
            "corrected_games": self.corrected,
            "games_gone": self.gone,
        }
        if self.correction is not None:
            values["correction_players"] = self.correction.players
            values["correction_carried_to"] = self.correction.carried_to
            values["correction_not_carried"] = len(self.correction.not_carried)
        if self.carries:
            values["corrections_carried"] = len(self.corrected_players)
            values["corrections_of"] = ", ".join(self.carries)
        return {key: value for key, value in values.items() if value}

    def lines(
        self, scenario: str, policy: str, month: str, next_list: str, past_window: int, corrects: bool = True
    ) -> list[str]:
        """The run's words for this month (empty when the policy did nothing); `past_window` of the games waiting
        since this month are past their reporting window at `next_list`; `corrects`: the scenario carries
        corrections (a rule set; a rating system does not).
        """
        lines = []
        if self.waiting:
            files = some_names(self.files)
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
        lines += self.correction_lines(scenario, policy, month, corrects)
        if self.carries:
            gained, lost = self.carried_points
            of = ", ".join(f"{m}'s" for m in self.carries)
            line = (
                f"{scenario}: the list of {month} carries the corrections of {of} games: "
                f"{len(self.corrected_players)} player(s), +{gained} / -{lost} points (recalculation: {policy})"
            )
            if self.not_corrected:
                line += (
                    f"; {len(self.not_corrected)} player(s) it does not rate are not corrected (e.g. "
                    f"{_ids(self.not_corrected)})"
                )
            lines.append(line)
        return lines

    def correction_lines(self, scenario: str, policy: str, month: str, corrects: bool = True) -> list[str]:
        """The run's words for the games of this month the files give otherwise now, and the list's correction."""
        changed = []
        if self.corrected:
            changed.append(
                f"{self.corrected} game(s) the stored list of {month} rated are given otherwise by the files now "
                f"({some_names(sorted(set(self.corrected_files)))}: a corrected result or player)"
            )
        if self.gone:
            subject = "game(s) it rated are" if self.corrected else f"game(s) the stored list of {month} rated are"
            changed.append(f"{self.gone} {subject} no longer in the files")
        stands = (
            f"the list before it changed in this run, so the list of {month} is rated again from the games it rated "
            "that the files still give as they were (the stored one would no longer continue it)"
            if self.rated_again
            else "the stored list stands"
        )
        if not corrects:
            if not changed:
                return []
            return [
                f"{scenario}: {'; '.join(changed)}: {stands}, the games changed are not rated "
                f"(recalculation: {policy}; a rating system carries no corrections, a scenario under `full` re-rates "
                "them)"
            ]
        note = self.correction
        if note is None:
            return [f"{scenario}: {'; '.join(changed)}: {stands}"] if changed else []
        if note.withdrawn:
            return [
                f"{scenario}: the files give the games the stored list of {month} rated as it rated them again: the "
                f"stored list stands, and its correction, carried to the list of {', '.join(note.carried_before)}, "
                f"is taken back ({note.players} player(s), +{note.gained} / -{note.lost} points) on the list of "
                f"{note.carried_to} (recalculation: {policy})"
            ]
        head = "; ".join(changed) if changed else f"games the stored list of {month} rated in its period changed"
        if note.problem:
            tail = f"its correction cannot be computed ({note.problem})"
        elif note.players:
            tail = (
                f"its correction ({note.players} player(s), +{note.gained} / -{note.lost} points) is carried to the "
                f"list of {note.carried_to}"
            )
        elif note.carried_before:
            tail = f"its correction was carried to the list of {', '.join(note.carried_before)}"
        else:
            tail = "its correction changes no rating"
        lines = [f"{scenario}: {head}: {stands}, and {tail} (recalculation: {policy})"]
        if note.not_carried:
            lines.append(
                f"{scenario}: {len(note.not_carried)} player(s) whose rated status or pool of unrated games the "
                f"correction of {month} changes are not corrected (e.g. {_ids(note.not_carried)}): a scenario under "
                "`full` re-rates them"
            )
        return lines


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids[:NAMED_PLAYERS]) + (", ..." if len(ids) > NAMED_PLAYERS else "")


class LateReports:
    """The policy applied to one run of one scenario's chain: frozen months, the games waiting for a list, the
    corrections waiting for one, and notes.

    `frozen` are the run's months whose stored list the run must not rate other games on (months before the run, read
    by a rating period that starts earlier, are frozen too). Waiting games are kept as rows (the games table's
    columns) with the folder month they were filed under (`_filed`). `stored`: the months whose list was stored
    before the run. `carried_before`: the corrections the stored lists carry already (recorded_corrections, but for
    the lists this run rates again). `looked_back`: the lists before the run whose games the files give otherwise now,
    each with the games of its period as the files give them (pipeline.scenarios.chain.rate_months rates them in
    memory before the run's months).
    """

    def __init__(
        self,
        store: ObjectStore,
        scenario: Scenario,
        months: Sequence[str],
        frozen: Sequence[str],
        waiting: pl.DataFrame | None,
        policy: str = FORWARD,
        stored: Sequence[str] = (),
        carried_before: pl.DataFrame | None = None,
        looked_back: dict[str, pl.DataFrame] | None = None,
        notes: dict[str, MonthNote] | None = None,
    ):
        self.store, self.scenario, self.scenario_name = store, scenario, scenario.name
        self.months, self.first_month = list(months), months[0]
        self.policy = policy  # as the run's words name it: forward, window N
        self.frozen = set(frozen)
        self.stored = set(stored)
        self.waiting = waiting
        self.notes: dict[str, MonthNote] = dict(notes or {})
        self.corrects = not scenario.is_system
        self.carried_before = carried_before if carried_before is not None else _no_records()
        self.looked_back = dict(looked_back or {})
        self._answered: dict[str, pl.DataFrame] = {}  # each month's games as answered (a period reads a month twice)
        self._changed: dict[str, pl.DataFrame] = {}  # a frozen month's games the files give otherwise now
        self._pending: list[pl.DataFrame] = []  # corrections not carried yet (POINTS_SCHEMA)
        self._carrying: dict[str, pl.DataFrame] = {}  # a list of the run -> the corrections it carries
        self._before_changed = False  # the list the next month starts from is not the stored one (listed)
        self._rated_again: set[str] = set()  # frozen lists rated again though a game of theirs changed (keeps)
        # The lists whose recorded corrections do not add up to nothing (none on nearly every run): a withdrawn
        # correction is found among them (withdraw).
        net = self.carried_before.group_by("month", "player_id").agg(pl.col(CORRECTION).sum())
        self.carried_lists = set(net.filter(pl.col(CORRECTION) != 0)["month"].to_list())

    def is_frozen(self, month: str) -> bool:
        return month in self.frozen or month < self.first_month

    def games_of(self, month: str, games_of: Callable[[str], pl.DataFrame]) -> Callable[[str], pl.DataFrame]:
        """games_of for rating `month`: a frozen month's games as its stored list rated them (from the files and the
        games waiting), else the month's games, with the waiting ones within their window added to `month`'s own
        (the rest dropped, noted).
        """
        # The whole period of `month` stays answered (six months for the first rapid list), at least three months.
        kept = max(_ANSWERED_MONTHS, len(self.scenario.months_read(month)))

        def of(wanted: str) -> pl.DataFrame:
            if wanted not in self._answered:
                own = games_of(wanted).with_columns(pl.col("game_id").cast(pl.UInt64))
                self._answered[wanted] = self._games(wanted, own, wanted == month)
                for old in sorted(self._answered)[:-kept]:
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
        if self.waiting is not None:
            carried = self.waiting.filter(pl.col("game_id").is_in(listed))
            rated_before = pl.concat([rated_before, carried.select(own.columns)], how="vertical_relaxed")
            left = self.waiting.filter(~pl.col("game_id").is_in(listed))
            self.waiting = left if left.height else None
        # The stored list rated these games as they were: the same players and result at the same place of the same
        # file. Another game there now (a corrected result or player) is a correction, rated in memory only
        # (corrected_games).
        pool = rated_before.join(stored, on=list(stored.columns), how="semi")
        corrected = rated_before.join(pool.select("game_id"), on="game_id", how="anti")
        note.corrected += corrected.height
        note.gone += stored.height - rated_before.height
        note.corrected_files += corrected["source_file"].unique().sort().to_list()
        note.kept_as_stored = pool.height != stored.height
        if note.kept_as_stored:
            self._changed[month] = corrected
        if new.height:
            note.waiting += new.height
            note.files += new["source_file"].unique().sort().to_list()
            added = with_stated_ends(self.store, month, new.with_columns(_filed=pl.lit(month)))
            self.waiting = added if self.waiting is None else pl.concat([self.waiting, added], how="vertical_relaxed")
        return pool

    def kept(self, month: str) -> bool:
        """Whether `month` keeps its stored tables as they are (a game they rated is given otherwise or gone)."""
        return month in self.notes and self.notes[month].kept_as_stored

    def keeps(self, month: str, read: Iterable[str]) -> bool:
        """Whether the list of `month` (reading the games of `read`) keeps its stored tables: frozen, a game of its
        period is given otherwise or gone (kept), and the list it starts from is the one the stored list was rated
        from. When the run rated that list otherwise (a code or rule change reaches a frozen list), the stored list no
        longer continues it, so it is rated again from the games it rated that the files still give as they were
        (a rule-set scenario's correction of the others carried as ever): a run never writes a chain its
        list_continuity check refuses.
        """
        if not self.is_frozen(month) or not any(self.kept(m) for m in read):
            return False
        if not self._before_changed:
            return True
        for m in read:
            if self.kept(m):
                self.notes[m].kept_as_stored, self.notes[m].rated_again = False, True
        self._rated_again.add(month)
        return False

    def rated_again(self, month: str) -> bool:
        """Whether the list of `month` would have kept its stored tables but is rated again (keeps)."""
        return month in self._rated_again

    def listed(self, month: str, rating_list: pl.DataFrame) -> None:
        """The list the run made of `month`: whether it is the stored one (its players and ratings), which the next
        stored list rests on (keeps). Only a frozen list is compared: a list not frozen is new or rated again, as
        are all the lists after it.
        """
        if not self.is_frozen(month):
            self._before_changed = True
            return
        columns = ["player_id", "rating"]
        stored = read_stored_month(self.store, [self.scenario_name, "rating_list"], month, columns)
        made = rating_list.select(columns)
        self._before_changed = stored is None or not stored.cast(made.schema).equals(made)

    def changed(self, month: str) -> bool:
        """Whether the files give otherwise a game the stored tables of `month` (a month of the run) rated."""
        return month in self._changed

    def corrected_games(self, month: str, games: pl.DataFrame) -> pl.DataFrame:
        """`month`'s games as answered (games_of) with the games the files give otherwise now in their new version:
        what the stored list would have rated had the files said so then (the games gone are not there).
        """
        corrected = self._changed.get(month)
        if corrected is None or corrected.is_empty():
            return games
        return pl.concat([games, corrected.select(games.columns)], how="vertical_relaxed")

    def correct(self, month: str, stored: pl.DataFrame, corrected: pl.DataFrame) -> None:
        """The correction of the stored list of `month` (pipeline.scenarios.corrections.list_correction against
        `corrected`, the list rated again in memory), less what stored lists carried of it already, kept for the next
        list not stored yet.
        """
        self._carry(month, list_correction(stored, corrected))

    def withdraw(self, month: str) -> None:
        """The files give the games the stored list of `month` rated as it rated them (`month` a list month whose
        games changed in no month of its period): were a correction of it carried by a stored list, it is withdrawn,
        and what they carried is taken back on the next list not stored yet (the list corrected is the stored one,
        its correction nothing).
        """
        if month in self.carried_lists:
            nothing = pl.DataFrame(schema=POINTS_SCHEMA).drop("month")
            self._carry(month, ListCorrection(nothing, pl.Series("player_id", [], dtype=pl.Int64)), withdrawn=True)

    def _carry(self, month: str, found: ListCorrection, withdrawn: bool = False) -> None:
        """`found` less what stored lists carried of the list of `month` already, kept for the next list not stored
        yet, and noted.
        """
        before = (
            self.carried_before.filter(pl.col("month") == month)
            .group_by("player_id")
            .agg(_before=pl.col(CORRECTION).sum())
        )
        points = (
            found.points.join(before, on="player_id", how="full", coalesce=True)
            .select(
                pl.lit(month).alias("month"),
                "player_id",
                (pl.col(CORRECTION).fill_null(0) - pl.col("_before").fill_null(0)).cast(pl.Int32).alias(CORRECTION),
            )
            .filter(pl.col(CORRECTION) != 0)
            .sort("player_id")
        )
        carriers = self.carried_before.filter(pl.col("month") == month)["list"].unique().sort().to_list()
        note = self.notes.setdefault(month, MonthNote(kept_as_stored=not withdrawn))
        note.correction = CorrectionNote(
            players=points.height,
            gained=int(points[CORRECTION].clip(lower_bound=0).sum()),
            lost=-int(points[CORRECTION].clip(upper_bound=0).sum()),
            carried_to=self.next_list(month) if points.height else "",
            carried_before=carriers,
            not_carried=found.not_carried.to_list(),
            withdrawn=withdrawn,
        )
        if points.height:
            self._pending.append(points)
        self.carried_lists.discard(month)

    def cannot_correct(self, month: str, problem: str) -> None:
        """The correction of the stored list of `month` could not be computed (`problem` says why)."""
        note = self.notes.setdefault(month, MonthNote(kept_as_stored=True))
        note.correction = CorrectionNote(problem=problem)

    def with_corrections(
        self, month: str, rating_list: pl.DataFrame, previous: pl.DataFrame, rules: RuleSet
    ) -> pl.DataFrame:
        """The list of `month` (as its games rated it, from `previous`) with the corrections it carries: a frozen
        list's stored ones again, else, on the first list of the run not stored before it, every correction waiting.
        A frozen list rated from its games (not kept as stored) rates them as it rated them: a correction of it that
        stored lists carried was withdrawn (withdraw).
        """
        if self.is_frozen(month):
            if month not in self._rated_again:  # its games changed: corrected (chain.rate), not withdrawn
                self.withdraw(month)
            points = self._stored_points(month)
            return rating_list if points is None else with_corrections(rating_list, previous, points, rules, month)[0]
        if not self._pending or not rules.publishes_list_after(month):
            return rating_list
        pending = pl.concat(self._pending)
        self._pending = []
        points = (
            pending.group_by("player_id")
            .agg(pl.col(CORRECTION).sum())
            .filter(pl.col(CORRECTION) != 0)
            .sort("player_id")
        )
        corrected, not_applied = with_corrections(rating_list, previous, points, rules, month)
        carried = pending.filter(~pl.col("player_id").is_in(not_applied.implode()))
        self._carrying[month] = carried
        applied = points.filter(~pl.col("player_id").is_in(not_applied.implode()))
        note = self.notes.setdefault(month, MonthNote())
        note.carries = carried["month"].unique().sort().to_list()
        note.corrected_players = applied["player_id"].to_list()
        note.carried_points = (
            int(applied[CORRECTION].clip(lower_bound=0).sum()),
            -int(applied[CORRECTION].clip(upper_bound=0).sum()),
        )
        note.not_corrected = not_applied.to_list()
        return corrected

    def _stored_points(self, month: str) -> pl.DataFrame | None:
        """The corrections the stored list of `month` carries (None: none, or not stored)."""
        key = [self.scenario_name, "rating_list"]
        try:
            # The column alone first: empty on nearly every list, it is read for almost nothing.
            column = read_stored_month(self.store, key, month, [CORRECTION])
        except pl.exceptions.ColumnNotFoundError:  # a list stored before the column was: it carries none
            return None
        if column is None or column[CORRECTION].null_count() == column.height:
            return None
        stored = read_stored_month(self.store, key, month, ["player_id", CORRECTION])
        assert stored is not None  # its column was just read
        return stored_points(stored)

    def record(self, month: str) -> dict[str, object]:
        """The corrections the list of `month` carries, written to its corrections file (a list of the run not stored
        before it; a stored list's file stays as it is), and the metadata naming the file.
        """
        if self.is_frozen(month) or not self.corrects:
            return {}
        carried = self._carrying.get(month, pl.DataFrame(schema=POINTS_SCHEMA))
        return record_corrections(self.store, self.scenario_name, month, carried)

    def next_list(self, month: str) -> str:
        """The first list after `month` not stored before the run: in the run, else after it."""
        publishes = self.scenario.publishes_list_after
        for later in self.months:
            if later > month and later not in self.frozen and publishes(later):
                return later
        later = add_months(max(month, self.months[-1]), 1)
        while later in self.stored or not publishes(later):
            later = add_months(later, 1)
        return later

    def metadata(self, month: str) -> dict[str, object]:
        return self.notes[month].metadata() if month in self.notes else {}

    def lines(self, month: str, months: Sequence[str]) -> list[str]:
        """The run's words for `month` of the run `months` (with, for its first month, the corrections of the lists
        before the run that it carries or says where they go).
        """
        lines = []
        if month == months[0]:
            for before in sorted(m for m in self.notes if m < month):
                note = self.notes[before]
                # A list before the run is named when this run carries (or cannot compute) its correction, and the
                # months of a period the run rates when their games changed.
                carried = note.correction is not None and bool(note.correction.players or note.correction.problem)
                if carried or before in self._changed:
                    lines += note.correction_lines(self.scenario_name, self.policy, before, self.corrects)
        if month == months[-1]:
            lines += self._waiting_from_before(months[0])
        if month not in self.notes:
            return lines
        # A stored list after `month` is frozen (forward) and takes none of its games: the first list not stored does.
        next_list = self.next_list(month)
        past_window = 0
        if self.waiting is not None and self.notes[month].waiting:
            filed_here = self.waiting.filter(pl.col("_filed") == month)
            past_window = int(_too_late(filed_here, next_list).sum()) if filed_here.height else 0
        return lines + self.notes[month].lines(
            self.scenario_name, self.policy, month, next_list, past_window, self.corrects
        )

    def _waiting_from_before(self, first: str) -> list[str]:
        """The run's words for the games filed before its first month after their list was stored that no list of the
        run rated (each was stored, so frozen): which list they wait for. Named once, with the run's last month.
        """
        if self.waiting is None:
            return []
        still = self.waiting.filter(pl.col("_filed") < first)
        if still.is_empty():
            return []
        next_list = self.next_list(self.months[-1])
        past_window = int(_too_late(still, next_list).sum())
        where = f"they belong to the list of {next_list}"
        if past_window:
            where += f", where {past_window} of them will be past their reporting window (not rated)"
        return [
            f"{self.scenario_name}: {still.height} game(s) filed under "
            f"{', '.join(still['_filed'].unique().sort().to_list())} after their list was stored "
            f"({some_names(still['source_file'].unique().sort().to_list())}) are rated on no list of this run "
            f"(recalculation: {self.policy}): {where}"
        ]


def _no_records() -> pl.DataFrame:
    return pl.DataFrame(schema={**POINTS_SCHEMA, "list": pl.Utf8})


#: What a stored per-game table says of each game it rated: a game of the files is the one it rated when these agree.
GAME_IDENTITY = pl.Schema({"game_id": pl.UInt64, "white_id": pl.Int64, "black_id": pl.Int64, "white_score": pl.Float64})


def _stored_games(store: ObjectStore, scenario_name: str, month: str) -> pl.DataFrame | None:
    """GAME_IDENTITY of the scenario's stored per-game table of `month`, None when it is not stored."""
    frame = read_stored_month(store, [scenario_name, "rated_games"], month, list(GAME_IDENTITY))
    return None if frame is None else frame.cast(GAME_IDENTITY)


def _filed_games(store: ObjectStore, month: str) -> pl.DataFrame | None:
    """GAME_IDENTITY and source_file of the games filed under `month`, with `_filed`; None when none are stored."""
    frame = read_stored_month(store, ["games"], month, [*GAME_IDENTITY, "source_file"])
    if frame is None:
        return None
    return frame.with_columns(*(pl.col(c).cast(t) for c, t in GAME_IDENTITY.items()), _filed=pl.lit(month))


def _too_late(waiting: pl.DataFrame, month: str) -> pl.Series:
    """Which waiting games are past their reporting window at the list of `month` (pipeline.rules.calendar): the
    tournament's end is its last game's day among them (its start where undated), or the end its dump states when
    later (`_stated_end`: with_stated_ends), as the validation judged it (tournament_end).
    """
    event = pl.col("event_id").fill_null(pl.col("source_file"))
    named = pl.lit(event_named_by_row(waiting, event))
    day = pl.coalesce(pl.col("date"), pl.col("event_start"))
    end = tournament_end(day, ["_filed", "source_file", event], named, pl.col("_stated_end"))
    reason, _ = reporting_problems(end, pl.lit(None, dtype=pl.Date), month)
    return waiting.select((reason == "too_late").fill_null(False)).to_series()


def with_stated_ends(store: ObjectStore, month: str, games: pl.DataFrame) -> pl.DataFrame:
    """`games` of `month` with `_stated_end`: the end their dump states (a TRF's tag 052; stated_tournament_ends of
    the month's stored raw records), which the Games table does not keep. Raw records stored before they kept the
    stated end (no `event_end` column) state none: the tournament ends on its last game's day, as a PGN's does.
    """
    raw = read_stored_month(store, ["raw_games"], month, ["source_file", "event_id"], optional=["event_end"])
    ends = stated_tournament_ends(raw) if raw is not None and "event_end" in raw.columns else pl.DataFrame()
    if ends.is_empty():
        return games.with_columns(_stated_end=pl.lit(None, dtype=pl.Date))
    event = pl.col("event_id").fill_null(pl.col("source_file"))
    # A join on an expression keeps the right side's keys: without them every month's frame has the same columns, as
    # the concatenation of the months' waiting games needs (a month without stated ends has none).
    return games.join(
        ends.rename({"event_id": "_event", "event_end": "_stated_end"}),
        left_on=["source_file", event],
        right_on=["source_file", "_event"],
        how="left",
        maintain_order="left",
    ).select(*games.columns, "_stated_end")


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


def list_month(scenario: Scenario, month: str) -> str:
    """The list whose period holds `month`: the first from `month` on that the scenario's rules publish."""
    while not scenario.publishes_list_after(month):
        month = add_months(month, 1)
    return month


def late_reports(store: ObjectStore, scenario: Scenario, months: Sequence[str], chain_start: str) -> LateReports | None:
    """The policy of one run of the scenario's chain over `months` (None under `full`): the frozen months (read
    before anything is written), and of the LOOK_BACK_MONTHS before the run, the games filed after their list was
    stored and rated on no list since, and the lists whose rated games the files give otherwise now (changed_before),
    from the ids and identities (GAME_IDENTITY) of those months' games and stored per-game tables (whole rows read
    only where one waits or changed).
    """
    policy = scenario.recalculation_policy()
    if policy == FULL:
        return None
    name = scenario.name
    stored = set(stored_table_months(store, [name, "rating_list"]))
    frozen = frozen_months(policy, stored, months)
    before = month_range(add_months(months[0], -LOOK_BACK_MONTHS), add_months(months[0], -1))
    before = [m for m in before if m >= chain_start and m in stored]
    rated = {m: frame for m in before if (frame := _stored_games(store, name, m)) is not None}
    # A month's games are nearly all rated on its own list: each month's ids are looked up among its own hundred
    # thousand first, and only the few left among the year's million, which are probed against those few (a table of
    # the year's ids, built again for every month, was a tenth of a CPU-second a month).
    year_ids = pl.concat([frame.select("game_id") for frame in rated.values()]) if rated else None
    filed: dict[str, pl.DataFrame] = {}
    waiting = []
    for month in before:
        games_filed = _filed_games(store, month)
        if games_filed is None:
            continue
        filed[month] = games_filed
        left = games_filed.select("game_id")
        if month in rated:
            left = left.join(rated[month].select("game_id"), on="game_id", how="anti")
        if year_ids is not None and left.height:
            left = left.join(year_ids.join(left, on="game_id", how="semi"), on="game_id", how="anti")
        not_rated = left["game_id"].to_numpy()
        if not len(not_rated):
            continue
        games = stored_games(store, month).with_columns(pl.col("game_id").cast(pl.UInt64))
        games = games.filter(pl.col("game_id").is_in(pl.Series(not_rated).implode())).with_columns(_filed=pl.lit(month))
        waiting.append(with_stated_ends(store, month, games))
    found = pl.concat(waiting, how="vertical_relaxed") if waiting else None
    if found is not None:
        # Past their window already at the list before the run: the run that made it said so; not again.
        found = found.filter(~_too_late(found, add_months(months[0], -1)))
        # A national scenario never rated the other games filed then: they do not wait for its lists.
        found = restricted_in_month(found, scenario.restrict, _history(store, scenario, months), months[0])
    label = policy if isinstance(policy, str) else f"window {policy}"
    if scenario.is_system:
        return LateReports(store, scenario, months, frozen, found, label, sorted(stored))
    looked_back, notes = changed_before(store, scenario, months[0], chain_start, rated, filed)
    # The lists this run rates again carry again what they carry; the others' corrections are carried.
    carried = recorded_corrections(store, name, {m for m in months if m not in frozen})
    late = LateReports(store, scenario, months, frozen, found, label, sorted(stored), carried, looked_back, notes)
    # A list before the run whose games are all known and as it rated them (not looked back at), though lists
    # carried a correction of it: the correction was withdrawn (the run's frozen lists, as rated: with_corrections).
    for month in sorted(late.carried_lists):
        if (
            month < months[0]
            and month not in looked_back
            and all(m in rated for m in scenario.months_read(month, chain_start))
        ):
            late.withdraw(month)
    return late


def stands_as_stored(store: ObjectStore, scenario: Scenario, month: str, chain_start: str) -> bool:
    """Whether a run of the stored `month` alone keeps its stored tables as they are (LateReports.keeps: frozen under
    the scenario's policy, a game of its period given otherwise or gone): it rates nothing again.
    """
    late = late_reports(store, scenario, [month], chain_start)
    if late is None or not late.is_frozen(month):
        return False
    games_of = late.games_of(month, lambda wanted: stored_games(store, wanted))
    read = {m: games_of(m) for m in scenario.months_read(month, chain_start)}
    return late.keeps(month, read)


def _history(store: ObjectStore, scenario: Scenario, months: Sequence[str]) -> pl.DataFrame | None:
    """The registry's history a restriction to a federation's players reads (None where none is needed)."""
    restriction = scenario.restrict
    return registry_history(store, months[-1]) if restriction is not None and restriction.players else None


def changed_before(
    store: ObjectStore,
    scenario: Scenario,
    first_month: str,
    chain_start: str,
    rated: dict[str, pl.DataFrame],
    filed: dict[str, pl.DataFrame],
) -> tuple[dict[str, pl.DataFrame], dict[str, MonthNote]]:
    """The stored lists before `first_month` whose rated games (`rated`: month -> GAME_IDENTITY of its per-game
    table) the files give otherwise now (`filed`: month -> _filed_games), each with the games of its period as the
    files give them now (whole rows); and the notes of the months whose games changed.

    A game a list rated may have been filed under an earlier month (a late report): not found among `filed`, it is
    looked for in the months before them, back to LOOK_BACK_MONTHS more (within its reporting window), before it
    counts as gone. A list whose period reaches before `rated`'s months is left alone (its games are not all known).
    """
    if not rated:
        return {}, {}
    earlier = month_range(add_months(min(rated), -LOOK_BACK_MONTHS), add_months(min(rated), -1))
    earlier = [m for m in reversed(earlier) if m >= chain_start]
    empty = pl.DataFrame(schema={**GAME_IDENTITY, "source_file": pl.Utf8, "_filed": pl.Utf8})
    identity = [c for c in GAME_IDENTITY if c != "game_id"]

    def compared(rated_games: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
        joined = rated_games.join(files, on="game_id", how="left", suffix="_now")
        gone = pl.col("_filed").is_null()
        differs = ~gone & pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"{c}_now")) for c in identity)
        return joined.filter(gone | differs).with_columns(_gone=gone)

    # A list's games are nearly all filed under its own month: each month is compared with its own folder first (a
    # hundred thousand rows each side), and only the games not found there with every folder read.
    found = [compared(frame.with_columns(_month=pl.lit(m)), filed.get(m, empty)) for m, frame in rated.items()]
    elsewhere = pl.concat([frame.filter(pl.col("_gone")) for frame in found]).select(*GAME_IDENTITY, "_month")
    changed_here = pl.concat([frame.filter(~pl.col("_gone")) for frame in found])
    # Only the folders' rows of those games are kept (a semi join probing the few: no table of a million ids).
    wanted = elsewhere.select("game_id")
    files = pl.concat([frame.join(wanted, on="game_id", how="semi") for frame in filed.values()]) if filed else empty
    read_earlier = []
    while earlier and wanted.join(files, on="game_id", how="anti").height:
        more = _filed_games(store, earlier.pop(0))
        if more is not None:
            read_earlier.append(more)
            files = pl.concat([files, more.join(wanted, on="game_id", how="semi")])
    changed = pl.concat([changed_here, compared(elsewhere, files)])
    if changed.is_empty():
        return {}, {}
    notes: dict[str, MonthNote] = {}
    lists: dict[str, list[str]] = {}
    for month in changed["_month"].unique().sort().to_list():
        target = list_month(scenario, month)
        period = scenario.months_read(target, chain_start)
        if target >= first_month or any(m not in rated for m in period):
            continue  # the run rates its list (its frozen months find the games again), or its games are not all known
        of_month = changed.filter(pl.col("_month") == month)
        lists.setdefault(target, []).append(month)
        notes[month] = MonthNote(
            kept_as_stored=True,
            corrected=int((~of_month["_gone"]).sum()),
            gone=int(of_month["_gone"].sum()),
            corrected_files=of_month.filter(~pl.col("_gone"))["source_file"].unique().sort().to_list(),
        )
    looked_back = {}
    whole: dict[str, pl.DataFrame] = {}  # each folder's games, read once
    every_file = pl.concat([*filed.values(), *read_earlier]) if lists else empty
    for target in sorted(lists):
        ids = pl.concat([rated[m]["game_id"] for m in scenario.months_read(target, chain_start)])
        held = every_file.filter(pl.col("game_id").is_in(ids.implode()))
        rows = []
        for folder in held["_filed"].unique().sort().to_list():
            if folder not in whole:
                whole[folder] = stored_games(store, folder).with_columns(pl.col("game_id").cast(pl.UInt64))
            rows.append(whole[folder].filter(pl.col("game_id").is_in(ids.implode())))
        looked_back[target] = pl.concat(rows, how="vertical_relaxed").sort("game_id")
    return looked_back, notes
