"""The Dagster Definitions of the pipeline: `defs`, built lazily from the settings and the store's landing zone."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta

import dagster as dg

from assets.analyse import build_analytics_defs
from assets.automation import build_landing_sensor, build_monthly_schedule
from assets.checks import CheckedTable, stage_checks
from assets.evaluation import build_evaluation_assets
from assets.executors import executor_def
from assets.ingest import build_ingest_assets, build_landing_asset
from assets.metadata import OWNERS
from assets.partitions import monthly_partitions
from assets.publish import build_published_assets
from assets.rate import build_rating_defs
from assets.report import build_cross_scenario_assets, build_cross_scenario_checks, build_report_assets
from assets.storage import ObjectStoreResource, ParquetIOManager
from assets.validate import build_validation_assets
from pipeline.cli.encoding import require_utf8_file_names
from pipeline.invariants.catalog import LANDING_ZONE_LAYOUT, QUARANTINE_SHARE, RECONCILIATION
from pipeline.operations.automation import month_closed_at
from pipeline.operations.first_month import definitions_months
from pipeline.scenarios.model import Scenario, compared_scenarios, load_scenarios, seeded_lists, standard_chain_of
from pipeline.settings import Settings
from pipeline.store.lock import store_tag
from pipeline.store.object_store import ObjectStore, store_root_from_env
from schemas import Games, Identity, Quarantine, RawGames

ALL_MONTHS_JOB = "all_months"


def build_resources(root: str | None = None) -> dict[str, ObjectStoreResource | ParquetIOManager]:
    """The resources every asset needs: one store, which the IO manager uses too (declared as its field)."""
    store = ObjectStoreResource(root=root)
    return {"store": store, "io_manager": ParquetIOManager(store=store)}


def month_just_closed(settings: Settings, now: datetime | None = None) -> str:
    """The month before the current one in the schedule's time zone: the month whose list is due next."""
    return month_closed_at(now or datetime.now(UTC), settings.schedule_timezone)[0]


def list_freshness(
    settings: Settings, partitions: dg.PartitionsDefinition, now: datetime | None = None
) -> dg.FreshnessPolicy | None:
    """The list of the month just closed is due by the end of the day the monthly schedule rates it; None when that
    month is not one of the list's months.

    The month closes on the 1st; the schedule runs on RATINGS_SCHEDULE_DAY, so a list materialized
    between the 1st and the end of that day is on time, and one older than the 1st is late after it.
    Dagster judges the policy by the list's latest materialization, whatever its month. It says
    something of the month just closed only where that month is a partition (its dumps have landed,
    or automation keeps the months open to it): there the monthly run rates it. A store whose months
    end earlier (the demo) has no list due, and re-rating an old month would read "Passing".
    """
    last = partitions.get_last_partition_key()
    if last is None or last < month_just_closed(settings, now):
        return None
    day = settings.schedule_day
    return dg.FreshnessPolicy.cron(
        deadline_cron=f"59 23 {day} * *",
        lower_bound_delta=timedelta(days=day - 1, hours=23, minutes=59),
        timezone=settings.schedule_timezone,
    )


def build_scenario_defs(
    partitions: dg.PartitionsDefinition,
    scenario: Scenario,
    settings: Settings | None = None,
    standard_chain: Scenario | None = None,
    partners: dict[str, Scenario] | None = None,
) -> dg.Definitions:
    """One scenario: its chain, analyses, report pages and published lists, each stage with the checks of its tables
    (`standard_chain`: the scenario whose standard list seeds a rapid or blitz chain; `partners`: the rapid and blitz
    chains a standard one seeds, by list type, for FIDE's combined list).
    """
    return dg.Definitions.merge(
        build_rating_defs(partitions, scenario, list_freshness(settings or Settings(), partitions), standard_chain),
        build_analytics_defs(partitions, scenario),
        dg.Definitions(
            assets=[*build_report_assets(partitions, scenario), *build_published_assets(partitions, scenario, partners)]
        ),
    )


def build_shared_defs(partitions: dg.PartitionsDefinition) -> dg.Definitions:
    """What every scenario reads: the raw records and the validated games, with their checks."""
    checked = {
        "raw_games": [CheckedTable(dg.AssetKey("raw_games"), RawGames, store_checks=(LANDING_ZONE_LAYOUT,))],
        "validate_games": [
            CheckedTable(dg.AssetKey("games"), Games, "game_id", store_checks=(RECONCILIATION,)),
            CheckedTable(dg.AssetKey("quarantine"), Quarantine, store_checks=(QUARANTINE_SHARE,)),
            CheckedTable(dg.AssetKey("identity"), Identity),
        ],
    }
    return dg.Definitions(
        assets=[*build_ingest_assets(partitions), *build_validation_assets(partitions)],
        asset_checks=[stage_checks(step, partitions, tables) for step, tables in checked.items()],
    )


def build_defs(
    first_month: str,
    last_month: str | None = None,
    root: str | None = None,
    scenarios: dict[str, Scenario] | None = None,
    executor: dg.ExecutorDefinition | None = None,
    settings: Settings | None = None,
) -> dg.Definitions:
    """Definitions for months first_month..last_month (open-ended without last_month), store at root (default
    from env), one rating chain per scenario (default: $RATINGS_SCENARIOS, else pipeline/scenarios/scenarios.yaml).
    """
    partitions = monthly_partitions(first_month, last_month)
    scenarios = scenarios if scenarios is not None else load_scenarios()
    with warnings.catch_warnings():
        # Deliberate: single-run backfill policies (beta) make a range one run, and partitions on the
        # reconciliation check (preview) make it check the months just materialized.
        warnings.filterwarnings("ignore", category=dg.BetaWarning)
        warnings.filterwarnings("ignore", category=dg.PreviewWarning)
        pipeline_defs = dg.Definitions.merge(
            build_shared_defs(partitions),
            *(
                build_scenario_defs(
                    partitions,
                    scenario,
                    settings,
                    standard_chain_of(scenario, scenarios),
                    {kind: scenarios[name] for kind, name in seeded_lists(scenarios, scenario.name).items()},
                )
                for scenario in scenarios.values()
            ),
            dg.Definitions(
                assets=[
                    *build_cross_scenario_assets(partitions, scenarios),
                    *build_evaluation_assets(partitions, compared_scenarios(scenarios, national=True)),
                ],
                asset_checks=build_cross_scenario_checks(partitions),
            ),
        )
        # Attributes every asset shares, applied once; tables stored on S3 say so in the UI.
        on_s3 = (root or store_root_from_env()).startswith("s3://")
        shared = dg.map_asset_specs(
            lambda spec: spec.replace_attributes(owners=OWNERS).merge_attributes(
                kinds={"s3"} if on_s3 and "parquet" in spec.kinds else set()
            ),
            [asset for asset in pipeline_defs.assets or [] if isinstance(asset, dg.AssetsDefinition)],
        )
    all_months = dg.define_asset_job(
        ALL_MONTHS_JOB,
        # Partitions are inferred from the selected assets (passing them is deprecated in 1.13).
        selection=dg.AssetSelection.all(),
        description=(
            "Ingest, validate, rate and analyse the selected months (a range runs as one run, months in order)."
        ),
        # Every run of the job names its store: dagster.yaml's tag limit lets one run per store at a time.
        tags=store_tag(ObjectStore(root or store_root_from_env())),
    )
    return dg.Definitions(
        # The landing zone is a source (the federations' files, not ours to own): added after the shared attributes.
        assets=[build_landing_asset(partitions), *shared],
        asset_checks=pipeline_defs.asset_checks,
        jobs=[all_months],
        schedules=[build_monthly_schedule(ALL_MONTHS_JOB, partitions, scenarios, settings)],
        sensors=[build_landing_sensor(ALL_MONTHS_JOB, partitions, scenarios, settings)],
        resources=build_resources(root),
        # One process by default: the months of a range are sequential anyway (each list needs the
        # previous one) and Polars already uses every core inside a step. RATINGS_EXECUTOR selects
        # another (assets/executors.py; docs/operations.md, Scaling out).
        executor=executor or dg.in_process_executor,
    )


def build_defs_from_settings(settings: Settings) -> dg.Definitions:
    """Definitions for the settings' months, by default those the store's landing zone holds, from the stored lists'
    first month on (definitions_months warns of the earlier folders it leaves out).
    """
    scenarios = load_scenarios(settings.scenarios)
    first, last = definitions_months(settings, scenarios)
    return build_defs(
        first,
        last,
        root=settings.store,
        scenarios=scenarios,
        executor=executor_def(settings),
        settings=settings,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` and the webserver load: built when Dagster asks, not when the module is imported."""
    require_utf8_file_names()  # `ratings` runs in UTF-8 mode; a deployment must too, or it rates otherwise
    return build_defs_from_settings(Settings.from_env())
