"""Evaluate stage: every scenario's rule set or system on one train/test split of the store's games, as a leaderboard
(pipeline.scenario_evaluation).
"""

import dagster as dg

from assets.metadata import KINDS, OWNERS, static_metadata, table_description
from assets.ratings import rating_list_key, system_state_key
from assets.resources import ObjectStoreResource
from pipeline.monthly import Table
from pipeline.reports.markdown import leaderboard_markdown
from pipeline.scenario_evaluation import DEFAULT_TEST_MONTHS, caption, evaluate_stored, stored_split, write_leaderboard
from pipeline.scenarios import Scenario
from pipeline.storage import redact_url
from pipeline.versions import code_version
from schemas import Leaderboard
from schemas.util import empty_frame


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
        description=table_description(Leaderboard),
        metadata=static_metadata(Leaderboard),
    )
    def leaderboard_table(
        context: dg.AssetExecutionContext, config: EvaluationConfig, store: ObjectStoreResource
    ) -> Table:
        object_store = store.store()
        try:
            split = stored_split(object_store, scenarios, partitions.get_partition_keys(), config.test_months)
        except ValueError as error:
            # Too few months to hold some out (a store of one month): nothing to rank, nothing failed.
            context.log.warning(f"no leaderboard: {error}")
            context.add_output_metadata({"skipped": str(error)})
            return Table(Leaderboard, empty_frame(Leaderboard))
        table = evaluate_stored(object_store, scenarios, split)
        page = write_leaderboard(object_store, table)
        context.add_output_metadata(
            {
                "preview": dg.MetadataValue.md(leaderboard_markdown(table)),
                "split": caption(table),
                "page": redact_url(object_store.url(page)),
            }
        )
        return Table(Leaderboard, table)

    return [leaderboard_table]
