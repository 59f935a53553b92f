"""Evaluate stage: every scenario's rule set or system on one train/test split of the store's games, as a leaderboard
(pipeline.scenario_evaluation).
"""

import dagster as dg
import polars as pl

from assets.io_manager import table_key
from assets.metadata import KINDS, OWNERS, static_metadata
from assets.ratings import rating_list_key, system_state_key
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.reports import REPORTS_PREFIX
from pipeline.reports.markdown import leaderboard_markdown
from pipeline.reports.page import render_table_page
from pipeline.reports.writer import store_report, stored_months
from pipeline.scenario_evaluation import DEFAULT_TEST_MONTHS, caption, leaderboard, split_months, test_predictions
from pipeline.scenarios import Scenario
from pipeline.storage import redact_url
from schemas import Games, Leaderboard
from schemas.util import empty_frame

LEADERBOARD_PAGE = "evaluation/leaderboard.html"
LEADERBOARD_DATA = "evaluation/leaderboard.parquet"

LEADERBOARD_DESCRIPTION = """Every scenario's rule set or rating system predicting the same held-out months: one row \
each, best first.

Train: every stored month but the last `test_months` (12 by default, at most half the months); each
scenario's chain as stored up to the last training month is frozen (its list, and a system's state).
Test: every game of the test months is predicted from the frozen ratings (pipeline/evaluation.py's
metrics): Kaggle 2011 capped log10 deviance, PlayerRatings' bdev, Kaggle 2010 player-month RMSE and
Sonas's mean absolute error, all over the games every scenario predicts for both sides. Lower is
better. Also written to `reports/evaluation/leaderboard.html`, linked from `reports/index.html`."""


class EvaluationConfig(dg.Config):
    test_months: int = DEFAULT_TEST_MONTHS


def build_evaluation_assets(
    partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> list[dg.AssetsDefinition]:
    all_months = dg.AllPartitionMapping()
    deps = [dg.AssetDep("games", partition_mapping=all_months)]
    for scenario in scenarios.values():
        deps.append(dg.AssetDep(rating_list_key(scenario), partition_mapping=all_months))
        if scenario.is_system:
            deps.append(dg.AssetDep(system_state_key(scenario), partition_mapping=all_months))

    @dg.asset(
        key=["evaluation", "leaderboard"],
        group_name="evaluation",
        kinds={*KINDS, "html"},
        owners=OWNERS,
        tags={"stage": "report"},
        code_version=code_version("analyse", "".join(s.model_dump_json() for s in scenarios.values())),
        deps=deps,
        description=LEADERBOARD_DESCRIPTION,
        metadata=static_metadata(Leaderboard),
    )
    def leaderboard_table(
        context: dg.AssetExecutionContext, config: EvaluationConfig, store: ObjectStoreResource
    ) -> pl.DataFrame:
        object_store = store.store()
        months = stored_months(object_store, ["games"], partitions.get_partition_keys())
        for scenario in scenarios.values():
            held = set(stored_months(object_store, list(rating_list_key(scenario).path), months))
            months = [m for m in months if m in held]
        try:
            split = split_months(months, config.test_months)
        except ValueError as error:
            # Too few months to hold some out (a store of one month): nothing to rank, nothing failed.
            context.log.warning(f"no leaderboard: {error}")
            context.add_output_metadata({"skipped": str(error)})
            return empty_frame(Leaderboard)
        cache: dict[str, pl.DataFrame] = {}

        def games_of(month: str) -> pl.DataFrame:
            if month not in cache:
                key = table_key(["games"], month)
                cache[month] = object_store.read_parquet(key) if object_store.exists(key) else empty_frame(Games)
            return cache[month]

        train_to = split.train[-1]
        predictions = {}
        for name, scenario in scenarios.items():
            frozen_list = object_store.read_parquet(table_key(rating_list_key(scenario).path, train_to))
            frozen_state = (
                object_store.read_parquet(table_key(system_state_key(scenario).path, train_to))
                if scenario.is_system
                else None
            )
            predictions[name] = test_predictions(scenario, frozen_list, frozen_state, games_of, split.test)
        train_games = sum(object_store.parquet_rows(table_key(["games"], m)) for m in split.train)
        test_games = sum(games_of(m).height for m in split.test)
        table = leaderboard(scenarios, predictions, split, train_games, test_games)
        store_report(object_store, LEADERBOARD_DATA, table)
        store_report(
            object_store,
            LEADERBOARD_PAGE,
            render_table_page(
                table, "Scenarios on held-out months", caption=caption(table), float_digits=6, back_href="../index.html"
            ),
        )
        context.add_output_metadata(
            {
                "preview": dg.MetadataValue.md(leaderboard_markdown(table)),
                "split": caption(table),
                "page": redact_url(object_store.url(REPORTS_PREFIX, LEADERBOARD_PAGE)),
            }
        )
        return table

    return [leaderboard_table]
