"""Rate stage: the monthly rating list (list M = list M-1 + games of M) and the per-game calculation."""

import dagster as dg
import polars as pl
from pydantic import Field

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream, split_stream, table_key
from assets.metadata import KINDS, redact_url, static_metadata, validate
from assets.partitions import PREVIOUS_MONTH
from assets.resources import ObjectStoreResource
from pipeline.engine import normalize_list, rate_period
from pipeline.ingest import read_players, read_seed_list
from pipeline.months import add_months
from pipeline.rules import resolve_rules
from pipeline.storage import ObjectStore
from schemas import RatedGames, RatingList
from schemas.util import empty_frame

GROUP = "rate"
DEFAULT_RULES = "fide-historical"

RATING_LIST_DESCRIPTION = """The monthly rating list: every player known to the pool, rated or not, after the month's games.

List M is list M-1 plus the validated games of M, rated under the run's rule set (config `rules`,
default `fide-historical`, which switches FIDE regulations by date). The first month starts from the
seed list in `raw/players/<first month>/` (or from nobody). A range run rates the months in order in
one process; a later single month continues from the stored list of the month before, and fails
if that month was never materialized."""

RATED_GAMES_DESCRIPTION = """Per-game calculation behind the month's list: ratings used, expected scores, time-control weight.

A side's expected score is null when the game does not count for that side (e.g. a rated player
against an unrated one). Feeds the crosstables and the accuracy reports."""


class RatingConfig(dg.Config):
    """Which rules the months of this run are rated under."""

    rules: str = Field(
        default=DEFAULT_RULES,
        description="Rule-set preset, schedule (e.g. fide-historical) or path to a YAML rule set",
    )


def previous_list(store: ObjectStore, month: str, first_partition: str) -> pl.DataFrame:
    """The list in force before `month`: the seed list for the first partition, else the stored list of M-1."""
    if month == first_partition:
        seed = read_seed_list(store)
        return normalize_list(seed, month) if seed is not None else empty_frame(RatingList)
    before = add_months(month, -1)
    key = table_key(["rating_list"], before)
    if not store.exists(key):
        raise dg.Failure(
            description=(
                f"rating_list for {before} is missing, so {month} cannot be rated "
                f"(the list for {month} is the list for {before} plus {month}'s games). "
                f"Materialize rating_list for {before} first, or run a range starting earlier."
            ),
            metadata={"missing_month": before, "expected_at": redact_url(store.url(key))},
        )
    return store.read_parquet(key)


def list_metadata(rating_list: pl.DataFrame, rated_games: pl.DataFrame, rules_name: str) -> dict[str, object]:
    """What a rating officer checks first on a new list: size, rated players, newcomers, games, range."""
    rated = rating_list.filter(pl.col("rating").is_not_null())
    low, high = rated["rating"].min(), rated["rating"].max()
    return {
        "players": rating_list.height,
        "rated_players": rated.height,
        "newly_rated": int(rating_list["newly_rated"].sum()),
        "games": rated_games.height,
        "rating_range": f"{low}-{high}" if rated.height else "no rated players",
        "rules": rules_name,
    }


def build_rating_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    first_partition = partitions.get_first_partition_key()

    @dg.multi_asset(
        name="rate_months",
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"games": dg.AssetIn("games")},
        # Lineage of the self-dependency only. The previous list is read from the store, not loaded
        # as an input: in a range run the IO manager would try to load months not yet written.
        deps=[dg.AssetDep("rating_list", partition_mapping=PREVIOUS_MONTH)],
        outs={
            "rating_list": dg.AssetOut(kinds=KINDS, description=RATING_LIST_DESCRIPTION, metadata=static_metadata(RatingList)),
            "rated_games": dg.AssetOut(kinds=KINDS, description=RATED_GAMES_DESCRIPTION, metadata=static_metadata(RatedGames)),
        },
    )
    def rate_months(
        context: dg.AssetExecutionContext,
        config: RatingConfig,
        store: ObjectStoreResource,
        games: MonthlyFrames,
    ) -> tuple[MonthStream, MonthStream]:
        months = list(context.partition_keys)
        object_store = store.store()
        # Read (or refused) before rating anything: a gap fails the step before any month is written.
        state = {"list": previous_list(object_store, months[0], first_partition)}

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
            rules = resolve_rules(config.rules, month)
            result = rate_period(state["list"], games[month], rules, month, players=read_players(object_store, month))
            rating_list = validate(RatingList, result.rating_list, f"rating_list {month}")
            rated_games = validate(RatedGames, result.rated_games, f"rated_games {month}")
            state["list"] = rating_list  # carried forward in memory to the next month
            # A schedule such as fide-historical names the preset it picked for this month.
            applied = rules.name if rules.name == config.rules else f"{config.rules} ({rules.name})"
            metadata = list_metadata(rating_list, rated_games, applied)
            context.add_asset_metadata(metadata, asset_key="rating_list", partition_key=month)
            context.add_asset_metadata({"games": rated_games.height}, asset_key="rated_games", partition_key=month)
            progress.report("rate", month, months.index(month) + 1, len(months))
            return rating_list, rated_games

        return split_stream(months, one_month, outputs=2)

    return [rate_months]
