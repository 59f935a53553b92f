"""Where the stored lists start, and the Dagster definitions' months: a stray earlier folder moves them no earlier."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from pipeline.ingest.landing import REGISTRY, LandingEntry, federation_folder_problems, inventory, months_held
from pipeline.months import add_months
from pipeline.scenarios.model import Scenario
from pipeline.settings import Settings
from pipeline.store.monthly import stored_table_months
from pipeline.store.object_store import ObjectStore
from pipeline.text import some_names


def stored_lists_span(store: ObjectStore, scenarios: Mapping[str, Scenario]) -> tuple[str, str] | None:
    """The earliest and the latest month any scenario has a stored list of, or None (one listing per scenario)."""
    months = [month for scenario in scenarios.values() for month in stored_table_months(store, list_path(scenario))]
    return (min(months), max(months)) if months else None


def list_path(scenario: Scenario) -> list[str]:
    """The table path of a scenario's rating lists: [name, 'rating_list']."""
    return [scenario.name, "rating_list"]


def folders_before(entries: Sequence[LandingEntry], month: str) -> list[str]:
    """The month folders holding dumps before `month` ('raw/GER/2019-01'), sorted: what a stray folder looks like."""
    return sorted(
        {"/".join(e.key.split("/")[:3]) for e in entries if e.month and e.month < month and e.kind != REGISTRY}
    )


def setting_after_stored_lists(setting: str, stored_first: str, outcome: str, earlier_dumps: bool) -> str:
    """Why a RATINGS_FIRST_MONTH of `setting`, after `stored_first` where the stored lists start, is refused by
    `ratings run` (run_plan.chain_start) and named by the Dagster definitions (definitions_months), each saying its
    `outcome`, and the two remedies. `earlier_dumps`: the landing zone holds dumps before `stored_first`, so that
    unsetting the setting would start the chains at them (a stray folder, refused too): it must then be `stored_first`.
    """
    keep = (
        f"Set RATINGS_FIRST_MONTH={stored_first} (dumps before it are held)"
        if earlier_dumps
        else f"Unset RATINGS_FIRST_MONTH (or set it to {stored_first})"
    )
    return (
        f"the stored lists start at {stored_first}, and RATINGS_FIRST_MONTH={setting} starts the chains at {setting}: "
        f"that would rate every stored list from {setting} on again (frozen forward lists too), from the seed list "
        f"instead of the stored list of {add_months(setting, -1)}. {outcome} {keep} to continue the stored chains, "
        f"or remove the stored lists to restart them at {setting}"
    )


def _setting_after_stored_lists(
    store: ObjectStore, scenarios: Mapping[str, Scenario], setting: str, held: Sequence[str]
) -> str | None:
    """The definitions' warning of a RATINGS_FIRST_MONTH `setting` after the first month of the stored lists (None:
    not after it; `held`: the landing zone's months); a store that cannot be listed is said so instead.
    """
    try:
        span = stored_lists_span(store, scenarios)
    except Exception as error:  # an unreachable store must not stop the UI from loading the definitions
        return f"could not list the stored lists to check RATINGS_FIRST_MONTH={setting} ({type(error).__name__})"
    if span is None or span[0] >= setting:
        return None
    outcome = (
        f"The partitions start at {setting}: a run of the UI, the schedule or the sensor would (`ratings run` refuses)."
    )
    return setting_after_stored_lists(setting, span[0], outcome, any(month < span[0] for month in held))


def definitions_months(settings: Settings, scenarios: Mapping[str, Scenario]) -> tuple[str, str | None]:
    """The Dagster definitions' first and last partition (Settings.months_for): the settings where given, else the
    landing zone's months, the first never before the first month of the stored lists of `scenarios` while
    RATINGS_FIRST_MONTH is unset.

    The rate assets start the chains from the seed list at the first partition: a stray or mistyped earlier month
    folder (raw/GER/2019-01 beside lists from 2023-01) would otherwise have the sensor, the schedule and a UI backfill
    rate every stored list again from there, which `ratings run` refuses (run_plan.chain_start). Such folders are
    named in one warning with the two remedies, and federation folders named otherwise than a federation code
    (landing.federation_folder_problems) in one each. A RATINGS_FIRST_MONTH after the stored lists' first month
    would have them restart the chains there: named in a warning too (the definitions cannot refuse it as `ratings
    run` does without leaving the UI empty). A store that cannot be listed gives the default months, with a warning.

    With both RATINGS_FIRST_MONTH and RATINGS_LAST_MONTH set (a pinned deployment) the store is not listed at all:
    every load of the code location (each step process of a Celery or Kubernetes run) would pay the listings, and
    warn on each when the store cannot be reached. Such a setting after the stored lists is then not named here.
    """
    entries: list[LandingEntry] = []
    held: list[str] = []
    stored_first = None
    if not (settings.first_month and settings.last_month):
        store = ObjectStore(settings.store)
        try:
            entries = inventory(store)
            held = months_held(entries)
            span = stored_lists_span(store, scenarios) if held and settings.first_month is None else None
            stored_first = span[0] if span else None
        except Exception as error:  # an unreachable store must not stop the UI from loading the definitions
            held, stored_first = [], None
            warnings.warn(
                f"could not list the landing zone for the partition range ({type(error).__name__}); "
                f"using the default months",
                stacklevel=2,
            )
    # Federation folders a `ratings run` warns of too (run_plan.federation_warnings): named on every load.
    for problem in federation_folder_problems(entries):
        warnings.warn(problem, stacklevel=2)
    if settings.first_month is not None and settings.last_month is None:
        later = _setting_after_stored_lists(ObjectStore(settings.store), scenarios, settings.first_month, held)
        if later:
            warnings.warn(later, stacklevel=2)
    first, last = settings.months_for(held, stored_first=stored_first)
    if stored_first is not None and first == stored_first and held[0] < first:
        strays = folders_before(entries, first)
        warnings.warn(
            f"the landing zone holds dumps before {first}, where the stored lists start ({some_names(strays)}): "
            f"the partitions start at {first}, so no run of the UI, the schedule or the sensor rates them, nor rates "
            f"the stored lists again from the seed list there. A stray or mistyped month folder? Move it. To start "
            f"the chains at {held[0]} on purpose, set RATINGS_FIRST_MONTH={held[0]} (every stored list is then rated "
            f"again from the seed list)",
            stacklevel=2,
        )
    return first, last
