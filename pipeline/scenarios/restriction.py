"""A scenario restricted to one federation: its players' games, or the games its dumps reported (Scenario.restrict)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import polars as pl

from pipeline.ingest.registry import registry_in_force
from pipeline.scenarios.model import Restriction


def sent_by(federations: Sequence[str], columns: Collection[str]) -> pl.Expr:
    """Whether a game was reported by one of `federations`: its kept copy's folder (`federation`) or that of a copy
    another federation's dump sent the same month (`also_reported_by`). A games table stored before that column
    (`columns` without it) has the kept copy's only.
    """
    sent = pl.col("federation").is_in(list(federations))
    if "also_reported_by" not in columns:
        return sent
    also = pl.col("also_reported_by").list.eval(pl.element().is_in(list(federations))).list.any()
    return sent | also.fill_null(False)


def restricted_games(games: pl.DataFrame, restriction: Restriction, registry: pl.DataFrame | None) -> pl.DataFrame:
    """The games of `games` the restriction keeps. `registry`: the registry in force (player_id, federation), needed
    for `players` (a player it does not hold belongs to no federation).
    """
    if restriction.reported_by is not None:
        return games.filter(sent_by([restriction.reported_by], games.columns))
    assert registry is not None, "a restriction to a federation's players reads the registry in force"
    members = registry.filter(pl.col("federation") == restriction.players)["player_id"].cast(pl.Int64).implode()
    return games.filter(
        pl.col("white_id").cast(pl.Int64).is_in(members) & pl.col("black_id").cast(pl.Int64).is_in(members)
    )


def restricted_in_month(
    games: pl.DataFrame, restriction: Restriction | None, history: pl.DataFrame | None, month: str
) -> pl.DataFrame:
    """`games` as a scenario restricted by `restriction` rates them in `month` (all of them without one), the players'
    federations read from the registry in force in `month` (`history`: registry_history's rows).
    """
    if restriction is None:
        return games
    registry = None
    if restriction.players is not None:
        assert history is not None, "a restriction to a federation's players reads the registry's history"
        sides = pl.concat([games["white_id"], games["black_id"]]).cast(pl.Int64).implode()
        registry = registry_in_force(history.filter(pl.col("player_id").is_in(sides)), month)
    return restricted_games(games, restriction, registry)


def members_only(
    listed: pl.DataFrame, restriction: Restriction | None, history: pl.DataFrame, month: str
) -> pl.DataFrame:
    """The players of a list (a seed list, a later FIDE list's newcomers) a national scenario's list starts with: the
    federation's players as registered in `month` (under `reported_by` too: a foreign player joins the list when
    they first play in the federation's events, as a player new to it).
    """
    if restriction is None:
        return listed
    registry = registry_in_force(history, month)
    members = registry.filter(pl.col("federation") == restriction.federation)["player_id"].cast(pl.Int64).implode()
    return listed.filter(pl.col("player_id").cast(pl.Int64).is_in(members))
