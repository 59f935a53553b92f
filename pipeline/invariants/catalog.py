"""What each asset check asserts (the UI shows the text), and the outcome of a check over a run's months."""

from __future__ import annotations

from dataclasses import dataclass

RECONCILIATION = "reconciliation"
LANDING_ZONE_LAYOUT = "landing_zone_layout"
QUARANTINE_SHARE = "quarantine_share"
SCHEMA = "schema"
NO_DUPLICATE_GAMES = "no_duplicate_games"
NO_DUPLICATE_PLAYERS = "no_duplicate_players"
FLOOR_RESPECTED = "floor_respected"
LIST_CONTINUITY = "list_continuity"
POINTS_CONSERVED = "rating_points_conserved"
LEDGER_BALANCE = "ledger_balance"

CHECK_DESCRIPTIONS = {
    RECONCILIATION: """raw_games rows = games rows + quarantine rows, for every month of the run and every \
source file.

Per file, by record id: every raw record is exactly one game or one quarantined record. Nothing is
lost between the landing zone and the validated tables. Blocking: a failing month stops
the rating of the run.""",
    LANDING_ZONE_LAYOUT: """Every file under raw/ is read or accounted for in a month.

Files in a month folder that are not read (misplaced, links, special files) are quarantined in that
month; this check lists the files no month accounts for (directly under `raw/` or `raw/<FED>/`, or in a
folder that is no month), with where they belong. A warning: the dumps in place are rated all the same.""",
    QUARANTINE_SHARE: """At most half of a month's raw records are quarantined.

More usually means a missing registry, a dump in the wrong month folder or an export in another
layout, not a federation's bad month. A warning, not blocking: every record is still accounted for
(the reconciliation check), and the month's reasons are in its quarantine metadata.""",
    SCHEMA: """The stored Parquet file of every month of the run has exactly the columns and types of \
`{model}`.

Read from each file's footer (no data), so it also catches files written by another version of the
pipeline or by hand. Blocking: a table with the wrong shape never feeds the next stage.""",
    NO_DUPLICATE_GAMES: "No game_id occurs twice in a month (duplicate submissions are quarantined, not rated "
    "twice). Blocking.",
    NO_DUPLICATE_PLAYERS: "No player_id occurs twice on a month's list. Blocking.",
    FLOOR_RESPECTED: """No player whose rating was calculated this period is published below the rule set's floor.

The floor is the one of the rule set the scenario rates the month under (Scenario.rules_for). Only
players with games > 0 (or a first rating) are checked: a list legitimately carries untouched ratings
below a floor introduced later until those players play again. Blocking.""",
    LIST_CONTINUITY: """List M is list M-1 carried forward: nobody disappears, nobody loses a rating without the \
delisted flag,
and every rating on both lists moved by exactly its `change` and the `correction` it carries (rating_M =
rating_M-1 + change_M + correction_M; a correction of an earlier stored list's games, recalculation forward).

For the first month of the partitions, M-1 is the seed list the chain started from. Blocking.""",
    POINTS_CONSERVED: """Rating points are conserved in games between rated players, and the list rests on \
exactly these games.

For each month, from rated_games and the month's list:
1. zero-sum expectation: every game rated for both sides has white_expected + black_expected = 1, so
   the two sides' (score - expected) sum to 0. This holds for every expectancy model (FIDE table,
   logistic, Elo-Davidson, Sonas-linear) whenever the 400-point rule treats both sides alike; games
   where it may not (once-per-event capping, or the exemption of players rated 2650+) with a rating
   difference above the cap are left out;
2. conservation: over the games whose two sides were rated with the same K (white_k_used and black_k_used
   in rated_games: a player's K of the period, or of the list in force at the start of an event started
   before it),
   the rating points exchanged before rounding, K x weight x (score - expected) summed over both
   sides, add up to 0;
3. the list rests on these games: for every player rated before the period, `games` on the list is
   the number of games counted for them in rated_games, and `change` is sum(K x weight x (score -
   expected)) over the player's sides rounded as the rule set says (within 0.5, or 0.5 per event
   when rounding per event).
   Skipped for months whose list also rates earlier months' games (quarterly lists before 2009) or
   after a one-time event (the 2024 compression adds to `change`).
It fails on a game counted twice or for one side only, a wrong K, a one-sided 400-point rule, or a
list not computed from the stored per-game table. Blocking: crosstables and reports wait for it.""",
    LEDGER_BALANCE: """The pool's points ledger balances to the point (pipeline/scenarios/ledger.py, docs/analytics.md).

For each month: the change of the pool's total rating points (rated players not flagged inactive) equals
its channels, games + corrections + one-time events + newcomers + seeded + returning - became inactive -
delisted - left the list (`unexplained` is 0); the flows between groups add up, in each grouping, to the
games' points before rounding (`games_not_zero_sum`); and the pool the month starts from is the pool the
month before ended with. Blocking.""",
}


@dataclass(frozen=True)
class MonthProblems:
    """The outcome of one check over the months of a run: what failed, and numbers for the UI."""

    problems: list[str]
    stats: dict[str, int | float | str]

    @property
    def passed(self) -> bool:
        return not self.problems
