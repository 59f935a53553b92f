"""Evaluate stage: every scenario's rule set or system on one train/test split of the store's games, as a leaderboard.

Its logic: pipeline.evaluation.scenarios.
"""

import dagster as dg

from assets.metadata import KINDS, table_attributes
from assets.rate import chain_key
from assets.storage import ObjectStoreResource
from pipeline.analytics.previews import leaderboard_markdown
from pipeline.evaluation.scenarios import DEFAULT_TEST_MONTHS, caption, evaluate_stored, stored_split, write_leaderboard
from pipeline.scenarios.chain import chain_tables
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import Table
from pipeline.store.object_store import redact_url
from schemas import Leaderboard
from schemas.util import empty_frame


class EvaluationConfig(dg.Config):
    test_months: int = DEFAULT_TEST_MONTHS


def build_evaluation_assets(
    partitions: dg.PartitionsDefinition, scenarios: dict[str, Scenario]
) -> list[dg.AssetsDefinition]:
    # Every scenario is replayed from the stored games and evaluated from its lists and carried state.
    carried = [chain_key(s, table.name) for s in scenarios.values() for table in chain_tables(s) if table.carried]
    deps = [dg.AssetDep(key, partition_mapping=dg.AllPartitionMapping()) for key in [dg.AssetKey("games"), *carried]]

    @dg.asset(
        key=["evaluation", "leaderboard"],
        group_name="evaluation",
        deps=deps,
        **table_attributes(
            Leaderboard,
            "analyse",
            version="".join(s.model_dump_json() for s in scenarios.values()),
            kinds={*KINDS, "html"},
            tag="report",
        ),
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
