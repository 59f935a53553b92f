"""Favourite's actual minus expected score by year and scenario, from the stored rated_games.

Run as python -m pipeline.analytics.favourites ROOT.
"""

from __future__ import annotations

import sys

import polars as pl

from pipeline.analytics.common import in_order_mean


def favourite_gap_by_year(rated_games: pl.LazyFrame) -> pl.DataFrame:
    """Per year: games between different ratings rated for both sides, and 100 x (favourite's mean score - mean
    expected).
    """
    counted = rated_games.filter(
        pl.col("white_expected").is_not_null()
        & pl.col("black_expected").is_not_null()
        & (pl.col("white_rating_used") != pl.col("black_rating_used"))
    )
    white_favourite = pl.col("white_rating_used") > pl.col("black_rating_used")
    return (
        counted.select(
            pl.col("month").str.slice(0, 4).alias("year"),
            pl.when(white_favourite).then(pl.col("white_score")).otherwise(1 - pl.col("white_score")).alias("score"),
            pl.when(white_favourite)
            .then(pl.col("white_expected"))
            .otherwise(pl.col("black_expected"))
            .alias("expected"),
        )
        .group_by("year")
        .agg(games=pl.len(), gap_pct=100 * (in_order_mean(pl.col("score")) - in_order_mean(pl.col("expected"))))
        .sort("year")
        .collect()
    )


def main(root: str, scenarios: list[str]) -> pl.DataFrame | None:
    """The favourites' gap per year, one column per scenario; None when no scenario is given."""
    table: pl.DataFrame | None = None
    for scenario in scenarios:
        gaps = favourite_gap_by_year(pl.scan_parquet(f"{root}/{scenario}/rated_games/*.parquet"))
        column = gaps.select("year", pl.col("gap_pct").round(2).alias(scenario))
        table = column if table is None else table.join(column, on="year", how="full", coalesce=True)
    return table


if __name__ == "__main__":
    with pl.Config(tbl_rows=40):
        print(main(sys.argv[1], sys.argv[2:] or ["actual", "sonas_2017", "sonas_2002", "elo_480"]))
