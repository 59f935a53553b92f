"""What a chain's month records beside its tables.

The stated ratings that differ from the list in force, the late reports, and the changes of a list rated again; their
files, the list's metadata and the run's warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import polars as pl

from pipeline.scenarios.amendments import amendment_line, lazy_names, record_amendment
from pipeline.scenarios.chain import JOINED_FROM_LATER_LIST, ChainNotes
from pipeline.scenarios.model import Scenario
from pipeline.scenarios.ratings_used import record_stated_differences
from pipeline.scenarios.recalculation import LATE_REPORTS, LateReports
from pipeline.store.object_store import ObjectStore


class MonthRecord(NamedTuple):
    metadata: dict[str, Any]  # for the month's list, in the order the run shows it
    warnings: list[str]  # for the run's log


def month_records(
    store: ObjectStore,
    scenario: Scenario,
    months: Sequence[str],
    late: LateReports | None,
    notes: ChainNotes,
    list_path: Sequence[str],
) -> Callable[[str, pl.DataFrame, bool], MonthRecord]:
    """(month, its rating list, whether the list is stored) -> what the month records, for a run of `months` whose
    chain noted `notes` (rate_months) and found `late` reports (late_reports). Files are written only where the list is
    stored, and before the writer stores it: the changes file compares the new list with the one at `list_path`
    that it replaces, and the late reports' corrections are carried by it.
    """
    names = lazy_names(store, months[-1])

    def record(month: str, rating_list: pl.DataFrame, list_stored: bool) -> MonthRecord:
        metadata: dict[str, Any] = {}
        warnings: list[str] = []
        unconverged = notes.unconverged.pop(month, None)
        if unconverged is not None:
            warnings.append(unconverged)
            metadata["whr_fit"] = unconverged
        joined = notes.joined.pop(month, 0)
        if joined:
            metadata[JOINED_FROM_LATER_LIST] = joined
        differences = notes.stated.pop(month, None)  # None: a rating system, or a month kept as stored
        if list_stored and differences is not None:
            metadata.update(record_stated_differences(store, scenario.name, month, differences))
        if late is not None:
            if list_stored:
                metadata.update(late.record(month))
            metadata.update(late.metadata(month))
            lines = late.lines(month, months)
            warnings.extend(lines)
            if lines:
                metadata[LATE_REPORTS] = "\n".join(lines)
        if list_stored:
            amended = record_amendment(store, scenario.name, list_path, month, rating_list, names(month))
            if amended is not None:
                metadata.update(amended)
                warnings.append(amendment_line(scenario.name, month, amended))
        return MonthRecord(metadata, warnings)

    return record
