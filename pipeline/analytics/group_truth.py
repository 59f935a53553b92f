"""The points ledger's groups over a year against the truth, on generated data (issue 37, part 2).

For each group: the points it gained in games beside its players' change of true strength.

Sonas's 2023 report for FIDE ("Repairing the FIDE Standard Elo Rating System", ../shared/reference/
fide-rules-and-formats.md) reads deflation as new, improving players entering too low and pulling rating points from
established players; the truth of generated data says how many points each group's strength should have brought it.
"""

from __future__ import annotations

import polars as pl

from pipeline.analytics.common import in_order_sum
from pipeline.analytics.drift import true_moves
from pipeline.months import is_december
from pipeline.rules.model import KPolicy
from pipeline.scenarios.ledger import BAND_WIDTH, player_kind
from schemas.group_truth import GroupTruth
from schemas.util import conform, empty_frame

#: What the groups are read from on the list a year before, and what is added up over the year's lists.
START_COLUMNS = ("player_id", "rating", "games_total", "birth_year")
YEAR_COLUMNS = ("player_id", "change", "games")
#: What the points a player's games moved are read from in a month's per-game table (with the K of each side).
GAME_COLUMNS = ("white_id", "black_id", "white_score", "white_expected", "black_expected", "weight")
SIDE_K = ("white_k_used", "black_k_used")


def game_points(rated_games: pl.DataFrame) -> pl.DataFrame | None:
    """(player_id, change, games) of a month from its per-game table: each player's sum of K x weight x (score -
    expected) over the sides counted for them, before rounding (the quantity points_flow adds up), and those sides.
    A list's `change` would also hold the month's one-time events (the 2024 compression's uplift) and its rounding.
    None where the table gives no K (a rating system's, or one stored before it had the columns).
    """
    if not set(SIDE_K) <= set(rated_games.columns) or rated_games[SIDE_K[0]].null_count() == rated_games.height:
        return None
    sides = pl.concat(
        [
            rated_games.select(
                player_id="white_id", k="white_k_used", delta=pl.col("white_score") - pl.col("white_expected")
            ),
            rated_games.select(
                player_id="black_id", k="black_k_used", delta=1.0 - pl.col("white_score") - pl.col("black_expected")
            ),
        ]
    ).with_columns(weight=pl.concat([rated_games["weight"], rated_games["weight"]]))
    counted = sides.filter(pl.col("delta").is_not_null() & pl.col("k").is_not_null() & (pl.col("weight") > 0))
    return (
        counted.with_columns(
            pl.col("player_id").cast(pl.Int64), points=pl.col("k") * pl.col("weight") * pl.col("delta")
        )
        .sort("player_id", maintain_order=True)
        .group_by("player_id", maintain_order=True)
        .agg(in_order_sum(pl.col("points")).alias("change"), pl.len().cast(pl.Int32).alias("games"))
    )


def ledger_groups(start: pl.DataFrame, year: int, policy: KPolicy) -> pl.DataFrame:
    """(player_id, kind, band) of the rated players of the list `start`, as points_flow groups a side on the list before
    the period (pipeline.scenarios.ledger.player_kind under the K `policy`; 200-point bands of the rating).
    """
    rated = start.filter(pl.col("rating").is_not_null())
    kind = player_kind(policy, year)
    low = (pl.col("rating").cast(pl.Int64) // BAND_WIDTH) * BAND_WIDTH
    band = low.cast(pl.Utf8) + pl.lit("-") + (low + BAND_WIDTH - 1).cast(pl.Utf8)
    return rated.select(pl.col("player_id").cast(pl.Int64), kind.alias("kind"), band.alias("band"))


def group_truth(
    start: pl.DataFrame | None,
    year_lists: pl.DataFrame,
    month: str,
    policy: KPolicy,
    truth: pl.LazyFrame | None = None,
) -> pl.DataFrame:
    """The GroupTruth rows of the December list `month`: `start` is the list a year before (START_COLUMNS; None when not
    stored: no rows), `year_lists` the rows (YEAR_COLUMNS) of the year's twelve lists stacked, `policy` the K policy
    of the year's first period (the one `start` is in force for: Scenario.k_policy), `truth` the true strengths
    (player_id, month, strength; None on real data). Each player rated on `start` who played a rated game in the year
    keeps the group `start` gives them all year, so a group's points and its true change are of the same players; on
    generated data only the players the truth holds at both ends count (a truth without the two months: none). Empty
    in other months.
    """
    if not is_december(month) or start is None:
        return empty_frame(GroupTruth)
    year = int(month[:4])
    played = (
        year_lists.filter(pl.col("games") > 0)  # most of a list did not play that month: no change from games
        .group_by("player_id")
        .agg(
            in_order_sum(pl.col("change").fill_null(0).cast(pl.Float64)).alias("points"),
            pl.col("games").cast(pl.Int64).sum(),
        )
        .with_columns(pl.col("player_id").cast(pl.Int64))
    )
    players = ledger_groups(start, year, policy).join(played, on="player_id").sort("player_id")
    moves = true_moves(truth, players["player_id"], month) if truth is not None and players.height else None
    if moves is not None and moves.height:
        players = players.join(moves, on="player_id", maintain_order="left")
    else:
        players = players.with_columns(true_change=pl.lit(None, dtype=pl.Float64))
    if players.is_empty():
        return empty_frame(GroupTruth)
    parts = [
        players.group_by(pl.col(grouping).alias("group"))
        .agg(
            pl.len().cast(pl.Int64).alias("players"),
            pl.col("games").sum(),
            in_order_sum(pl.col("points")),  # floats: added in player order, the same bytes every run
            # Null on real data (no truth), else the players' changes added in player order: the same bytes every run.
            pl.when(pl.col("true_change").is_not_null().any()).then(in_order_sum(pl.col("true_change"))),
        )
        .with_columns(grouping=pl.lit(grouping))
        for grouping in ("kind", "band")
    ]
    rows = (
        pl.concat(parts)
        .with_columns(month=pl.lit(month), year=pl.lit(year), gap=pl.col("points") - pl.col("true_change"))
        .sort("grouping", "group")
    )
    return conform(rows, GroupTruth)
