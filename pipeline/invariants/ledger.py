"""The ledger_balance check: every month's points ledger accounts for every point.

Each grouping of its flows adds up to its games channel, and each month starts from the pool the month before ended
with.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.invariants.catalog import MonthProblems
from pipeline.months import add_months
from pipeline.scenarios.chain import FLOWS, LEDGER
from pipeline.scenarios.ledger import CHANNELS, GROUPINGS
from pipeline.store.monthly import read_stored_month
from pipeline.store.object_store import ObjectStore

#: Float sums of a few hundred thousand points agree to far better than this many points.
FLOW_TOLERANCE = 1e-6


def ledger_problems(
    store: ObjectStore, months: Sequence[str], scenario_name: str, first_month: str | None = None
) -> MonthProblems:
    """The check's outcome over `months` of a scenario's chain (its ledgers and flows as stored; a month not stored is
    a problem). `first_month` is the chain's first month, which starts from the seed list, not from the month before.
    """
    ledger_path, flow_path = [scenario_name, LEDGER], [scenario_name, FLOWS]
    problems: list[str] = []
    for month in months:
        ledger = read_stored_month(store, ledger_path, month)
        flows = read_stored_month(store, flow_path, month)
        if ledger is None or flows is None or ledger.height != 1:
            problems.append(f"{month}: no points ledger stored for the month")
            continue
        row = ledger.row(0, named=True)
        # The identity again from the stored channels (a channel computed wrong does not hide behind `unexplained`).
        left = row["pool_after"] - row["pool_before"] - sum(sign * row[name] for name, sign in CHANNELS.items())
        if left != 0 or row["unexplained"] != 0:
            problems.append(
                f"{month}: {left:+,} rating points not accounted for by any channel (pool "
                f"{row['pool_before']:,} -> {row['pool_after']:,}; the ledger's unexplained: {row['unexplained']:+,})"
            )
        problems += _flow_problems(month, row, flows)
        if month == first_month:
            # A ledger stored for the month before is another chain's, left when the first month moved later.
            continue
        previous = read_stored_month(store, ledger_path, add_months(month, -1), ["pool_after"])
        if previous is not None and previous.height == 1 and previous["pool_after"][0] != row["pool_before"]:
            problems.append(
                f"{month}: the pool starts at {row['pool_before']:,} points, the month before ended at "
                f"{previous['pool_after'][0]:,}"
            )
    failing = {problem.split(":", 1)[0] for problem in problems}
    return MonthProblems(problems, {"months_balanced": len([m for m in months if m not in failing])})


def _flow_problems(month: str, row: dict, flows: pl.DataFrame) -> list[str]:
    """Each grouping of the month's flow matrix (a grouping not stored adds up to 0) against the games channel: its
    total is the games' points before rounding, and with the rounding it is the games channel, games_change (issue 37,
    part 4: "the flow matrix's total equals the games channel").
    """
    problems = []
    scale = max(1.0, float(row["games_points_moved"]))
    for grouping in GROUPINGS:
        total = float(flows.filter(pl.col("grouping") == grouping)["points"].sum())
        if abs(total - row["games_not_zero_sum"]) > FLOW_TOLERANCE * scale:
            problems.append(
                f"{month}: the flows by {grouping} add up to {total:,.3f} points, the games' points to "
                f"{row['games_not_zero_sum']:,.3f}"
            )
        elif abs(total + row["games_rounding"] - row["games_change"]) > FLOW_TOLERANCE * scale:
            problems.append(
                f"{month}: the flows by {grouping} ({total:,.3f} points) and the rounding "
                f"({row['games_rounding']:+,.3f}) add up to {total + row['games_rounding']:,.3f}, the games channel to "
                f"{row['games_change']:,}"
            )
    return problems
