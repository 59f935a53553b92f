"""The Dagster Definitions of the pipeline: `defs`, built lazily from the settings and the store's landing zone."""

from __future__ import annotations

import warnings

import dagster as dg

from assets.analytics import build_analytics_assets
from assets.automation import build_landing_sensor, build_monthly_schedule
from assets.checks import build_checks, build_table_checks
from assets.evaluation import build_evaluation_assets
from assets.executors import executor_def
from assets.ingest import build_ingest_assets
from assets.io_manager import ParquetIOManager
from assets.landing import build_landing_asset
from assets.partitions import monthly_partitions
from assets.published import build_published_assets
from assets.ratings import build_rating_assets
from assets.reports import build_cross_scenario_assets, build_report_assets
from assets.resources import ObjectStoreResource
from assets.validation import build_validation_assets
from pipeline.landing import inventory, months_held
from pipeline.scenarios import Scenario, load_scenarios
from pipeline.settings import Settings
from pipeline.storage import ObjectStore, store_root_from_env

ALL_MONTHS_JOB = "all_months"


def build_resources(root: str | None = None) -> dict[str, ObjectStoreResource | ParquetIOManager]:
    """The resources every asset needs: one store, which the IO manager uses too (declared as its field)."""
    store = ObjectStoreResource(root=root)
    return {"store": store, "io_manager": ParquetIOManager(store=store)}


def build_assets(partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]) -> list:
    """Every asset, in pipeline order: landing zone -> ingest -> validate, then rate -> analyse per scenario, then
    evaluate.
    """
    per_scenario = [
        asset
        for scenario in scenarios.values()
        for asset in (
            *build_rating_assets(partitions, scenario),
            *build_analytics_assets(partitions, scenario),
            *build_report_assets(partitions, scenario),
            *build_published_assets(partitions, scenario),
        )
    ]
    return [
        build_landing_asset(partitions),
        *build_ingest_assets(partitions),
        *build_validation_assets(partitions),
        *per_scenario,
        *build_cross_scenario_assets(partitions, scenarios),
        *build_evaluation_assets(partitions, scenarios),
    ]


def build_defs(
    first_month: str,
    last_month: str | None = None,
    root: str | None = None,
    scenarios: dict[str, Scenario] | None = None,
    executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    """Definitions for months first_month..last_month (open-ended without last_month), store at root (default
    from env), one rating chain per scenario (default: $RATINGS_SCENARIOS, else pipeline/scenarios.yaml).
    """
    partitions = monthly_partitions(first_month, last_month)
    scenarios = scenarios if scenarios is not None else load_scenarios()
    with warnings.catch_warnings():
        # Deliberate: single-run backfill policies (beta) make a range one run, and partitions on the
        # reconciliation check (preview) make it check the months just materialized.
        warnings.filterwarnings("ignore", category=dg.BetaWarning)
        warnings.filterwarnings("ignore", category=dg.PreviewWarning)
        assets = build_assets(partitions, scenarios)
        if (root or store_root_from_env()).startswith("s3://"):
            # Tables stored on S3 say so in the UI.
            tables = [a for a in assets if isinstance(a, dg.AssetsDefinition)]
            others = [a for a in assets if not isinstance(a, dg.AssetsDefinition)]
            assets = [*others, *dg.map_asset_specs(lambda spec: spec.merge_attributes(kinds={"s3"}), tables)]
        # Reconciliation, then schema/duplicates/floor/continuity/conservation on every partitioned table.
        checks = [*build_checks(partitions), *build_table_checks(assets, scenarios)]
    all_months = dg.define_asset_job(
        ALL_MONTHS_JOB,
        # Partitions are inferred from the selected assets (passing them is deprecated in 1.13).
        selection=dg.AssetSelection.all(),
        description=(
            "Ingest, validate, rate and analyse the selected months (a range runs as one run, months in order)."
        ),
    )
    return dg.Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=[all_months],
        schedules=[build_monthly_schedule(ALL_MONTHS_JOB, partitions, scenarios)],
        sensors=[build_landing_sensor(ALL_MONTHS_JOB, partitions, scenarios)],
        resources=build_resources(root),
        # One process by default: the months of a range are sequential anyway (each list needs the
        # previous one) and Polars already uses every core inside a step. RATINGS_EXECUTOR selects
        # another (assets/executors.py; docs/operations.md, Scaling out).
        executor=executor or dg.in_process_executor,
    )


def build_defs_from_settings(settings: Settings) -> dg.Definitions:
    """Definitions for the settings' months, by default those the store's landing zone holds (Settings.months_for)."""
    held: list[str] = []
    if not (settings.first_month and settings.last_month):
        try:
            held = months_held(inventory(ObjectStore(settings.store)))
        except Exception as error:  # an unreachable store must not stop the UI from loading the definitions
            warnings.warn(
                f"could not list the landing zone for the partition range ({type(error).__name__}); "
                f"using the default months",
                stacklevel=2,
            )
    first, last = settings.months_for(held)
    return build_defs(
        first, last, root=settings.store, scenarios=load_scenarios(settings.scenarios), executor=executor_def(settings)
    )


def build_defs_from_env() -> dg.Definitions:
    """Definitions from the RATINGS_* environment (pipeline.settings.Settings.from_env)."""
    return build_defs_from_settings(Settings.from_env())


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` and the webserver load: built when Dagster asks, not when the module is imported."""
    return build_defs_from_env()
