"""Helpers shared by the analyses: which games count, group sums in the rows' order, sums turned into percentages."""

from __future__ import annotations

import polars as pl


def counted_for_both_sides(rated_games: pl.DataFrame) -> pl.DataFrame:
    """Games rated for both players: both ratings used and both expected scores are known.

    A game rated for one side only (rated vs unrated, or a time control the rule set ignores)
    says nothing about how one rating group fares against another, so band and curve analyses
    leave it out.
    """
    return rated_games.filter(
        pl.col("white_expected").is_not_null()
        & pl.col("black_expected").is_not_null()
        & pl.col("white_rating_used").is_not_null()
        & pl.col("black_rating_used").is_not_null()
    )


def with_percentages(frame: pl.DataFrame) -> pl.DataFrame:
    """Add score_pct, expected_pct and diff_pct (percentage points) from games, score and expected sums."""
    return frame.with_columns(
        score_pct=100.0 * pl.col("score") / pl.col("games"),
        expected_pct=100.0 * pl.col("expected") / pl.col("games"),
    ).with_columns(diff_pct=pl.col("score_pct") - pl.col("expected_pct"))


SUM_COLUMNS = ("games", "score", "expected")


# Polars' group-by adds a group's floats in an order that varies from run to run (its threads merge partial
# sums), and the last bits vary with it. Adding each group's values as one list, in the rows' order, makes a
# rerun write the same bytes.
def in_order_sum(values: pl.Expr) -> pl.Expr:
    """The group's sum of `values`, added in the rows' order."""
    return values.implode().list.sum()


def in_order_mean(values: pl.Expr) -> pl.Expr:
    """The group's mean of `values` (nulls left out), added in the rows' order."""
    return values.implode().list.mean()


def in_order_std(values: pl.Expr) -> pl.Expr:
    """The group's sample standard deviation of `values`, added in the rows' order."""
    return values.implode().list.std()


def game_totals() -> list[pl.Expr]:
    """Each group's games, score and expected (SUM_COLUMNS) from its rows of one game side each."""
    return [pl.len().cast(pl.Int64).alias("games"), in_order_sum(pl.col("score")), in_order_sum(pl.col("expected"))]


def resum(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Add up games/score/expected of several partial tables by `keys` and recompute the percentages.

    Counts and sums are additive, so a window's table is exactly the sum of its months' tables:
    no need to load years of games at once.
    """
    stacked = pl.concat([frame.select(*keys, *SUM_COLUMNS) for frame in frames])
    summed = stacked.group_by(keys).agg(
        pl.col("games").sum().cast(pl.Int64), in_order_sum(pl.col("score")), in_order_sum(pl.col("expected"))
    )
    return with_percentages(summed)
