"""Summary crosstable (Sonas 2023): rating band vs rating band, actual vs expected score (docs/analytics.md)."""

from __future__ import annotations

import polars as pl

from pipeline.analytics.common import counted_for_both_sides, game_totals, resum, with_percentages
from schemas.crosstable import Crosstable
from schemas.util import conform, empty_frame

SUMMARY_BAND = "all"


def band_low_expr(rating: pl.Expr, band_width: int, top_band: int) -> pl.Expr:
    """Lowest rating of the band a rating falls in; everything at or above top_band is one band."""
    floored = (rating // band_width) * band_width
    return pl.when(rating >= top_band).then(pl.lit(top_band)).otherwise(floored).cast(pl.Int32)


def band_label_expr(low: pl.Expr, band_width: int, top_band: int) -> pl.Expr:
    """'1200-99' for 100-point bands (the way Sonas labels them), '1400-1599' for wider ones, '2500+' at the top."""
    high = low + (band_width - 1)
    if band_width == 100:
        upper = (high % 100).cast(pl.Utf8).str.zfill(2)
    else:
        upper = high.cast(pl.Utf8)
    return (
        pl.when(low >= top_band)
        .then(pl.lit(f"{top_band}+"))
        .otherwise(pl.concat_str([low.cast(pl.Utf8), pl.lit("-"), upper]))
    )


def summary_crosstable(
    rated_games: pl.DataFrame,
    period: str,
    band_width: int = 100,
    top_band: int = 2500,
) -> pl.DataFrame:
    """Band-vs-band cells (diagonal excluded) plus one 'all' row summary per band, as a Crosstable frame.

    Only games where both sides have an expected score count: a game that was rated for one side
    only (rated vs unrated) says nothing about how one band fares against another. For a year or a
    multi-year window pass the months' rated games concatenated, or add up the monthly tables with
    `combine_crosstables` (same result, far less memory).
    """
    if band_width <= 0:
        raise ValueError(f"band_width must be positive, got {band_width}")
    counted = counted_for_both_sides(rated_games)
    if counted.height == 0:
        return empty_frame(Crosstable)

    white_band = band_low_expr(pl.col("white_rating_used"), band_width, top_band)
    black_band = band_low_expr(pl.col("black_rating_used"), band_width, top_band)
    # Each game seen once from each side: White's row (score, white_expected) and Black's row
    # (1 - score, black_expected); a cell (A, B) then holds A's points against B.
    as_white = counted.select(
        band_low=white_band,
        opponent_band_low=black_band,
        score=pl.col("white_score").cast(pl.Float64),
        expected=pl.col("white_expected").cast(pl.Float64),
    )
    as_black = counted.select(
        band_low=black_band,
        opponent_band_low=white_band,
        score=(1.0 - pl.col("white_score")).cast(pl.Float64),
        expected=pl.col("black_expected").cast(pl.Float64),
    )
    sides = pl.concat([as_white, as_black]).filter(pl.col("band_low") != pl.col("opponent_band_low"))
    if sides.height == 0:
        return empty_frame(Crosstable)

    totals = game_totals()
    cells = sides.group_by("band_low", "opponent_band_low").agg(totals)
    summaries = sides.group_by("band_low").agg(totals).with_columns(opponent_band_low=pl.lit(None, dtype=pl.Int32))
    table = pl.concat([cells, summaries.select(cells.columns)]).pipe(with_percentages)
    return _labelled(table, period, band_width, top_band)


def _labelled(table: pl.DataFrame, period: str, band_width: int, top_band: int) -> pl.DataFrame:
    labelled = table.with_columns(
        period=pl.lit(period),
        band=band_label_expr(pl.col("band_low"), band_width, top_band),
        opponent_band=pl.when(pl.col("opponent_band_low").is_null())
        .then(pl.lit(SUMMARY_BAND))
        .otherwise(band_label_expr(pl.col("opponent_band_low"), band_width, top_band)),
    )
    # Rows by band, cells by opponent band, the band's summary last.
    return conform(labelled.sort("band_low", "opponent_band_low", nulls_last=True), Crosstable)


def combine_crosstables(
    tables: list[pl.DataFrame],
    period: str,
    band_width: int = 100,
    top_band: int = 2500,
) -> pl.DataFrame:
    """One crosstable for a year or window from its months' crosstables (same bands), labelled `period`.

    Equal to `summary_crosstable` over the concatenated rated games, because cells and row
    summaries are sums of games, points and expected points.
    """
    non_empty = [table for table in tables if table.height]
    if not non_empty:
        return empty_frame(Crosstable)
    summed = resum(non_empty, ["band_low", "opponent_band_low"])
    return _labelled(summed, period, band_width, top_band)


def format_difference(diff_pct: float) -> str:
    """A difference in percentage points as Sonas prints it: '+4.5%', '-3.1%' (never '-0.0%')."""
    rounded = round(float(diff_pct), 1)
    if rounded == 0:
        rounded = 0.0  # avoid '-0.0%'
    return f"{rounded:+.1f}%"


def format_row_summary(diff_pct: float, games: int) -> str:
    """A band's row summary as Sonas prints it: '+4.5% in 6,865 games' (sign always shown)."""
    noun = "game" if games == 1 else "games"
    return f"{format_difference(diff_pct)} in {games:,} {noun}"
