"""What a run's stored tables count for its summary: each scenario's games by what they did, players by identity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import months_stored, table_key
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


def game_outcome_masks() -> dict[str, pl.Expr]:
    """Each GAME_OUTCOMES key's rows of a rated_games table, as a mask: every row in exactly one."""
    not_rated = pl.col("weight") == 0
    counted = pl.col("white_expected").is_not_null() | pl.col("black_expected").is_not_null()
    both_unrated = pl.col("white_rating_used").is_null() & pl.col("black_rating_used").is_null()
    return {
        "time_control_not_rated": not_rated,
        "moved_a_rating": ~not_rated & counted,
        "between_unrated_players": ~not_rated & ~counted & both_unrated,
        "with_an_unrated_player": ~not_rated & ~counted & ~both_unrated,
    }


def game_outcomes(store: ObjectStore, scenario: Scenario, months: Sequence[str]) -> dict[str, int]:
    """How many of the games the scenario's lists of `months` rest on did what (GAME_OUTCOMES, every key present).

    Only the months whose rated_games table is stored count; a list of several months (quarterly lists)
    counts the games of its whole period.
    """
    keys = [
        table_key([scenario.name, "rated_games"], month)
        for month in months_stored(store, [scenario.name, "rated_games"], months)
    ]
    counts = dict.fromkeys(GAME_OUTCOMES, 0)
    if not keys:
        return counts
    # Each month's masks summed where it is read, then the months' sums: a group-by on the outcome of every game of
    # the history cost twice as much (2.1 CPU-s a fide-scale scenario, in every run's summary).
    sums = [
        store.scan_parquet(key).select(
            mask.sum().cast(pl.Int64).alias(name) for name, mask in game_outcome_masks().items()
        )
        for key in keys
    ]
    counts.update({name: int(total) for name, total in pl.concat(sums).sum().collect().row(0, named=True).items()})
    return counts


def scenario_game_outcomes(
    store: ObjectStore, scenarios: Mapping[str, Scenario], months: Sequence[str]
) -> dict[str, dict[str, int]]:
    """game_outcomes of every scenario, by the scenario's name as the run names it."""
    return {name: game_outcomes(store, scenario, months) for name, scenario in scenarios.items()}


def distinct_players(store: ObjectStore, months: Sequence[str]) -> int:
    """Distinct player ids in the validated games of `months`."""
    keys = [table_key(["games"], month) for month in months_stored(store, ["games"], months)]
    if not keys:
        return 0
    # Each month's distinct ids first: the history's 40 million sides exploded from lists cost 8.7 CPU-s at the fide
    # scale, the months' distinct ids 4.0.
    ids = [store.scan_parquet(key).select(pl.concat([pl.col("white_id"), pl.col("black_id")]).unique()) for key in keys]
    return pl.concat(ids).select(pl.col("white_id").n_unique()).collect().item()


def players_by_identity(identities: pl.DataFrame) -> dict[str, int]:
    """Distinct players of the identity tables by how they were identified (status), over every month given.

    A player is their id where one was given or found (a player named in many months, or under two
    spellings, counts once); a record that identified nobody (unmatched, ambiguous) counts by its name.
    """
    if identities.is_empty():
        return {}
    who = pl.coalesce(pl.col("player_id").cast(pl.Utf8), pl.lit("name:") + pl.col("name").fill_null(""))
    return dict(identities.group_by("status").agg(who.n_unique().alias("players")).sort("status").iter_rows())
