"""Rate stage, one chain per scenario: the monthly rating list (list M = list M-1 + games of M) and the per-game
calculation.
"""

import dagster as dg
import polars as pl

from assets import progress
from assets.io_manager import MonthlyFrames, MonthStream, split_stream, table_key
from assets.metadata import KINDS, OWNERS, Metadata, static_metadata
from assets.partitions import PREVIOUS_MONTH
from assets.resources import ObjectStoreResource
from assets.versions import code_version
from pipeline.engine import normalize_list
from pipeline.ingest import read_players, read_seed_list
from pipeline.months import add_months
from pipeline.scenarios import MAX_PERIOD_MONTHS, Scenario, rate_scenario_month
from pipeline.storage import ObjectStore, redact_url
from pipeline.system_scenarios import rate_system_month, seed_state
from schemas import Games, RatedGames, RatingList, SystemRatingList
from schemas.util import empty_frame


def period_games_mapping() -> dg.TimeWindowPartitionMapping:
    """A list month rates the games of the months since the previous list (quarterly before July 2009)."""
    return dg.TimeWindowPartitionMapping(
        start_offset=-(MAX_PERIOD_MONTHS - 1), end_offset=0, allow_nonexistent_upstream_partitions=True
    )


RATING_LIST_DESCRIPTION = """Monthly rating list of scenario `{name}`: every player known to the pool, rated or not, \
after the month's games.

{description}. List M is list M-1 plus the validated games of M, rated under the rule set the
scenario gives for M (before July 2012 FIDE published lists every two or three months: in the months
between, the list is carried unchanged and the games are rated on the next list). The first month
starts from the seed list in `raw/players/`. A range run rates the months in order in one process; a
later single month continues from the stored list of the month before, and fails if that month was
never materialized."""

SYSTEM_LIST_DESCRIPTION = """Monthly rating list of scenario `{name}`: every player known to the pool, rated or not, \
after the month's games.

{description}. Rated by system `{system}` (pipeline/systems), one rating period per month (a month
without games for a player is an idle period: the system grows the deviation when they next play).
`rating` is the system's rating rounded half away from zero, `deviation` and `volatility` its
estimate where it keeps them; `k` and `k_used` are empty and nobody is pooled or delisted. The first
month starts from the seed list in `raw/players/` (rated players at their seed rating)."""

RATED_GAMES_DESCRIPTION = """Per-game calculation behind scenario `{name}`'s lists: ratings used, expected scores, \
time-control weight.

A side's expected score is null when the game does not count for that side (e.g. a rated player
against an unrated one). Feeds the crosstables and the accuracy reports."""


SYSTEM_STATE_DESCRIPTION = """State of rating system `{system}` behind scenario `{name}`'s lists: one row per player \
it has rated, unrounded.

The next month starts from it (`pipeline.systems.rate_period`, one period per month): rating,
deviation and volatility where the system keeps them, games, wins, draws, losses and the last rated
period (a month index). The first month starts from the seed list: its rated players at their seed
rating with the system's initial deviation (and volatility)."""


def rating_list_key(scenario: Scenario) -> dg.AssetKey:
    return dg.AssetKey([scenario.key, "rating_list"])


def rated_games_key(scenario: Scenario) -> dg.AssetKey:
    return dg.AssetKey([scenario.key, "rated_games"])


def system_state_key(scenario: Scenario) -> dg.AssetKey:
    return dg.AssetKey([scenario.key, "system_state"])


def previous_state(store: ObjectStore, scenario: Scenario, month: str, first_partition: str) -> pl.DataFrame:
    """The system's state before `month`: from the seed list for the first partition, else the stored state of M-1."""
    if month == first_partition:
        return seed_state(scenario, previous_list(store, scenario, month, first_partition), month)
    return _stored_month(store, system_state_key(scenario), scenario, month)


def previous_list(store: ObjectStore, scenario: Scenario, month: str, first_partition: str) -> pl.DataFrame:
    """The list in force before `month`: the seed list for the first partition, else the stored list of M-1."""
    if month == first_partition:
        seed = read_scenario_seed(store, scenario)
        return normalize_list(seed, month) if seed is not None else empty_frame(RatingList)
    return _stored_month(store, rating_list_key(scenario), scenario, month)


def _stored_month(store: ObjectStore, asset: dg.AssetKey, scenario: Scenario, month: str) -> pl.DataFrame:
    """The stored table `asset` of the month before `month`, or a Failure naming the month to materialize first."""
    before = add_months(month, -1)
    key = table_key(asset.path, before)
    if not store.exists(key):
        raise dg.Failure(
            description=(
                f"{asset.to_user_string()} for {before} is missing, so {month} cannot be rated "
                f"(the list for {month} is the list for {before} plus {month}'s games). "
                f"Materialize it for {before} first, or run a range starting earlier."
            ),
            metadata={"missing_month": before, "expected_at": redact_url(store.url(key))},
        )
    return store.read_parquet(key)


def read_scenario_seed(store: ObjectStore, scenario: Scenario) -> pl.DataFrame | None:
    """The scenario's own seed list (a CSV or Parquet key in the store), else the landing zone's."""
    if scenario.seed_list is None:
        return read_seed_list(store)
    with store.open(scenario.seed_list) as handle:
        data = handle.read()
    if scenario.seed_list.endswith(".parquet"):
        return pl.read_parquet(data)
    return pl.read_csv(data, schema_overrides={"player_id": pl.Int64, "rating": pl.Int32})


def list_metadata(rating_list: pl.DataFrame, rated_games: pl.DataFrame, rules_name: str) -> Metadata:
    """What a rating officer checks first on a new list: size, rated players, newcomers, games, range."""
    rated = rating_list.filter(pl.col("rating").is_not_null())
    low, high = rated["rating"].min(), rated["rating"].max()
    return {
        "players": rating_list.height,
        "rated_players": rated.height,
        "newly_rated": int(rating_list["newly_rated"].sum()),
        "games": rated_games.height,
        "rating_range": f"{low!s}-{high!s}" if rated.height else "no rated players",
        "rules": rules_name,
    }


def build_rating_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    if scenario.is_system:
        return build_system_rating_assets(partitions, scenario)
    first_partition = partitions.get_first_partition_key()
    list_key, games_key = rating_list_key(scenario), rated_games_key(scenario)
    text = {"name": scenario.name, "description": scenario.description.rstrip(".") or scenario.name}
    # The scenario's own definition is part of its code: editing it in the YAML marks its chain stale.
    version = code_version("rate", scenario.model_dump_json())

    @dg.multi_asset(
        name=f"rate_{scenario.key}",
        group_name=scenario.key,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"games": dg.AssetIn("games", partition_mapping=period_games_mapping())},
        # Lineage of the self-dependency only. The previous list is read from the store, not loaded
        # as an input: in a range run the IO manager would try to load months not yet written.
        deps=[dg.AssetDep(list_key, partition_mapping=PREVIOUS_MONTH)],
        outs={
            "rating_list": dg.AssetOut(
                key=list_key,
                kinds=KINDS,
                description=RATING_LIST_DESCRIPTION.format(**text),
                metadata=static_metadata(RatingList),
                tags={"stage": "rate"},
                owners=OWNERS,
                code_version=version,
            ),
            "rated_games": dg.AssetOut(
                key=games_key,
                kinds=KINDS,
                description=RATED_GAMES_DESCRIPTION.format(**text),
                metadata=static_metadata(RatedGames),
                tags={"stage": "rate"},
                owners=OWNERS,
                code_version=version,
            ),
        },
    )
    def rate(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, games: MonthlyFrames
    ) -> tuple[MonthStream, MonthStream]:
        months = list(context.partition_keys)
        assert first_partition is not None  # a run has partitions, so the definition has a first one
        object_store = store.store()
        # Read (or refused) before rating anything: a gap fails the step before any month is written.
        state = {"list": previous_list(object_store, scenario, months[0], first_partition)}
        # Birth years of players new to the list; the registry is read once for the run.
        registry = read_players(object_store, months[-1])

        def games_of(month: str) -> pl.DataFrame:
            # Months before the first partition have no games (nothing was ingested for them).
            return games[month] if month in games else empty_frame(Games)

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
            players = registry.filter(pl.col("registered") <= month)
            result = rate_scenario_month(scenario, state["list"], games_of, month, players=players)
            rating_list, rated_games = result.rating_list, result.rated_games
            state["list"] = rating_list  # carried forward in memory to the next month
            context.add_asset_metadata(
                list_metadata(rating_list, rated_games, scenario.rules_name(month)),
                asset_key=list_key,
                partition_key=month,
            )
            context.add_asset_metadata({"games": rated_games.height}, asset_key=games_key, partition_key=month)
            progress.report(f"rate {scenario.name}", month, months.index(month) + 1, len(months))
            return rating_list, rated_games

        return split_stream(months, one_month, outputs=2)

    return [rate]


def build_system_rating_assets(partitions: dg.PartitionsDefinition, scenario: Scenario) -> list[dg.AssetsDefinition]:
    """A system scenario's chain: list, per-game table and the system's state, month by month (one period each)."""
    first_partition = partitions.get_first_partition_key()
    list_key, games_key, state_key = rating_list_key(scenario), rated_games_key(scenario), system_state_key(scenario)
    rules = scenario.system_rules()
    text = {
        "name": scenario.name,
        "description": scenario.description.rstrip(".") or scenario.name,
        "system": rules.system.name,
    }
    version = code_version("rate", scenario.model_dump_json())

    def out(key: dg.AssetKey, description: str, model: type) -> dg.AssetOut:
        return dg.AssetOut(
            key=key,
            kinds=KINDS,
            description=description.format(**text),
            metadata=static_metadata(model),
            tags={"stage": "rate"},
            owners=OWNERS,
            code_version=version,
        )

    @dg.multi_asset(
        name=f"rate_{scenario.key}",
        group_name=scenario.key,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"games": dg.AssetIn("games")},
        # As for rule sets: the previous month is read from the store, the deps are lineage only.
        deps=[
            dg.AssetDep(list_key, partition_mapping=PREVIOUS_MONTH),
            dg.AssetDep(state_key, partition_mapping=PREVIOUS_MONTH),
        ],
        outs={
            "rating_list": out(list_key, SYSTEM_LIST_DESCRIPTION, SystemRatingList),
            # Outputs are yielded in dependency order (the previous month's state is a dep of every output).
            "system_state": out(state_key, SYSTEM_STATE_DESCRIPTION, rules.system.state_model),
            "rated_games": out(games_key, RATED_GAMES_DESCRIPTION, RatedGames),
        },
    )
    def rate(
        context: dg.AssetExecutionContext, store: ObjectStoreResource, games: MonthlyFrames
    ) -> tuple[MonthStream, MonthStream, MonthStream]:
        months = list(context.partition_keys)
        assert first_partition is not None  # a run has partitions, so the definition has a first one
        object_store = store.store()
        carried = {
            "list": previous_list(object_store, scenario, months[0], first_partition),
            "state": previous_state(object_store, scenario, months[0], first_partition),
        }
        registry = read_players(object_store, months[-1])

        def one_month(month: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
            players = registry.filter(pl.col("registered") <= month)
            result = rate_system_month(
                scenario, carried["list"], carried["state"], games[month], month, players=players
            )
            carried.update(list=result.rating_list, state=result.state)
            context.add_asset_metadata(
                list_metadata(result.rating_list, result.rated_games, scenario.rules_name(month)),
                asset_key=list_key,
                partition_key=month,
            )
            context.add_asset_metadata({"games": result.rated_games.height}, asset_key=games_key, partition_key=month)
            context.add_asset_metadata({"players": result.state.height}, asset_key=state_key, partition_key=month)
            progress.report(f"rate {scenario.name}", month, months.index(month) + 1, len(months))
            return result.rating_list, result.state, result.rated_games

        return split_stream(months, one_month, outputs=3)

    return [rate]
