"""What a run's stored tables count for its summary: each scenario's games by what they did, players by identity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore

# What a game of a scenario's rated_games did, each game in exactly one (decided in this order):
GAME_OUTCOMES = {
    # the rule set gives the game's time control weight 0 (rapid and blitz under FIDE's standard rules)
    "time_control_not_rated": "in a time control the rules do not rate",
    # an expected score for at least one side: a rating moved by it (or a system rated it)
    "moved_a_rating": "moved a rating",
    # neither player had a rating: nothing to move, and no rated opponent for a first rating either
    "between_unrated_players": "between two unrated players",
    # one side unrated: the game counts toward that player's first rating at most, and moves no rating
    "with_an_unrated_player": "with an unrated player (toward a first rating at most)",
}
RATED_GAMES_COLUMNS = ["white_rating_used", "black_rating_used", "white_expected", "black_expected", "weight"]


def game_outcome() -> pl.Expr:
    """The GAME_OUTCOMES key of each row of a rated_games table."""
    counted = pl.col("white_expected").is_not_null() | pl.col("black_expected").is_not_null()
    both_unrated = pl.col("white_rating_used").is_null() & pl.col("black_rating_used").is_null()
    return (
        pl.when(pl.col("weight") == 0)
        .then(pl.lit("time_control_not_rated"))
        .when(counted)
        .then(pl.lit("moved_a_rating"))
        .when(both_unrated)
        .then(pl.lit("between_unrated_players"))
        .otherwise(pl.lit("with_an_unrated_player"))
    )


def game_outcomes(store: ObjectStore, scenario: Scenario, months: Sequence[str]) -> dict[str, int]:
    """How many of the games the scenario's lists of `months` rest on did what (GAME_OUTCOMES, every key present).

    Only the months whose rated_games table is stored count; a list of several months (quarterly lists)
    counts the games of its whole period.
    """
    keys = [key for month in months if store.exists(key := table_key([scenario.name, "rated_games"], month))]
    counts = dict.fromkeys(GAME_OUTCOMES, 0)
    if not keys:
        return counts
    frames = [store.scan_parquet(key).select(RATED_GAMES_COLUMNS) for key in keys]
    tally = pl.concat(frames).group_by(game_outcome().alias("outcome")).len().collect()
    counts.update(dict(tally.iter_rows()))
    return counts


def scenario_game_outcomes(
    store: ObjectStore, scenarios: Mapping[str, Scenario], months: Sequence[str]
) -> dict[str, dict[str, int]]:
    """game_outcomes of every scenario, by the scenario's name as the run names it."""
    return {name: game_outcomes(store, scenario, months) for name, scenario in scenarios.items()}


def distinct_players(store: ObjectStore, months: Sequence[str]) -> int:
    """Distinct player ids in the validated games of `months`."""
    keys = [key for month in months if store.exists(key := table_key(["games"], month))]
    if not keys:
        return 0
    ids = pl.concat([store.scan_parquet(key).select(player_id=pl.concat_list("white_id", "black_id")) for key in keys])
    return ids.explode("player_id").select(pl.col("player_id").n_unique()).collect().item()


def players_by_identity(identities: pl.DataFrame) -> dict[str, int]:
    """Distinct players of the identity tables by how they were identified (status), over every month given.

    A player is their id where one was given or found (a player named in many months, or under two
    spellings, counts once); a record that identified nobody (unmatched, ambiguous) counts by its name.
    """
    if identities.is_empty():
        return {}
    who = pl.coalesce(pl.col("player_id").cast(pl.Utf8), pl.lit("name:") + pl.col("name").fill_null(""))
    return dict(identities.group_by("status").agg(who.n_unique().alias("players")).sort("status").iter_rows())
