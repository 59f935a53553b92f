"""Score vs rating difference (favourite's actual vs expected by rating advantage) and band-vs-band trends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.analytics.common import counted_for_both_sides, game_totals, resum, with_percentages
from schemas.band_trend import BandTrend
from schemas.deflation_index import DeflationIndex
from schemas.score_curve import ScoreCurve
from schemas.util import conform, empty_frame

# -- score vs rating difference --------------------------------------------------------------------


def score_curve(
    rated_games: pl.DataFrame,
    period: str,
    bin_width: int = 50,
    max_advantage: int = 800,
) -> pl.DataFrame:
    """The favourite's points and expected points per rating-advantage bin, as a ScoreCurve frame.

    Advantage = |White's rating used - Black's|, binned from 0 by `bin_width`; advantages of
    `max_advantage` or more share the last bin ('800+'). The favourite is the higher-rated side and
    its expected score is the rule set's (400-point rule included). A game between equal ratings has
    no favourite: it is counted from both sides at once (score 0.5, expected the mean of the two
    sides' expectations), so White's first-move edge does not leak into the 0-49 bin. Only games
    rated for both sides count.
    """
    if bin_width <= 0 or max_advantage <= 0 or max_advantage % bin_width:
        raise ValueError(f"max_advantage ({max_advantage}) must be a positive multiple of bin_width ({bin_width})")
    counted = counted_for_both_sides(rated_games)
    if counted.height == 0:
        return empty_frame(ScoreCurve)
    white, black = pl.col("white_rating_used"), pl.col("black_rating_used")
    advantage = (white - black).abs()
    favourite_score = (
        pl.when(white > black)
        .then(pl.col("white_score"))
        .when(black > white)
        .then(1.0 - pl.col("white_score"))
        .otherwise(pl.lit(0.5))
    )
    favourite_expected = (
        pl.when(white > black)
        .then(pl.col("white_expected"))
        .when(black > white)
        .then(pl.col("black_expected"))
        .otherwise((pl.col("white_expected") + pl.col("black_expected")) / 2.0)
    )
    per_game = counted.select(
        bin_low=pl.min_horizontal((advantage // bin_width) * bin_width, pl.lit(max_advantage)).cast(pl.Int32),
        score=favourite_score.cast(pl.Float64),
        expected=favourite_expected.cast(pl.Float64),
    )
    binned = per_game.group_by("bin_low").agg(game_totals())
    return _labelled_curve(with_percentages(binned), period, bin_width, max_advantage)


def _labelled_curve(frame: pl.DataFrame, period: str, bin_width: int, max_advantage: int) -> pl.DataFrame:
    bin_label = (
        pl.when(pl.col("bin_low") >= max_advantage)
        .then(pl.lit(f"{max_advantage}+"))
        .otherwise(
            pl.concat_str(
                [pl.col("bin_low").cast(pl.Utf8), pl.lit("-"), (pl.col("bin_low") + bin_width - 1).cast(pl.Utf8)]
            )
        )
    )
    return conform(frame.with_columns(period=pl.lit(period), bin=bin_label).sort("bin_low"), ScoreCurve)


def combine_score_curves(
    curves: list[pl.DataFrame], period: str, bin_width: int = 50, max_advantage: int = 800
) -> pl.DataFrame:
    """One curve for a window from its months' curves (same bins): sums are additive."""
    non_empty = [curve for curve in curves if curve.height]
    if not non_empty:
        return empty_frame(ScoreCurve)
    return _labelled_curve(resum(non_empty, ["bin_low"]), period, bin_width, max_advantage)


# -- band vs band trend ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BandPair:
    """Two inclusive rating ranges: the row side (usually the underdog) and its opponents."""

    band: tuple[int, int]
    opponent: tuple[int, int]

    def __post_init__(self) -> None:
        for low, high in (self.band, self.opponent):
            if high < low:
                raise ValueError(f"rating range {low}-{high} is empty")
        # Overlapping ranges would count a game twice, once from each side.
        if self.band[0] <= self.opponent[1] and self.opponent[0] <= self.band[1]:
            raise ValueError(f"band {self.band} and opponent band {self.opponent} overlap")

    @property
    def band_label(self) -> str:
        return f"{self.band[0]}-{self.band[1]}"

    @property
    def opponent_label(self) -> str:
        return f"{self.opponent[0]}-{self.opponent[1]}"

    @property
    def label(self) -> str:
        return f"{self.band_label} vs {self.opponent_label}"


# Sonas's example of deflation: how 1400-1599 players score against 2000-2199.
DEFAULT_BAND_PAIRS = (BandPair((1400, 1599), (2000, 2199)),)


def _in_range(rating: pl.Expr, bounds: tuple[int, int]) -> pl.Expr:
    return rating.is_between(bounds[0], bounds[1], closed="both")


def band_trend(rated_games: pl.DataFrame, pairs: Sequence[BandPair] = DEFAULT_BAND_PAIRS) -> pl.DataFrame:
    """Per calendar year (from `month`) and band pair, the row band's points vs expected, as a BandTrend frame.

    A game counts when one side's rating used is in the pair's band and the other's in the opponent
    band (either colour), rated for both sides. Feed one month, a year, or many years: rows are
    keyed by year; monthly results add up with `combine_band_trends`.
    """
    counted = counted_for_both_sides(rated_games)
    white, black = pl.col("white_rating_used"), pl.col("black_rating_used")
    parts = []
    for pair in pairs:
        white_is_band = _in_range(white, pair.band) & _in_range(black, pair.opponent)
        black_is_band = _in_range(black, pair.band) & _in_range(white, pair.opponent)
        sides = counted.filter(white_is_band | black_is_band).select(
            period=pl.col("month").str.slice(0, 4),
            score=pl.when(white_is_band).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")),
            expected=pl.when(white_is_band).then(pl.col("white_expected")).otherwise(pl.col("black_expected")),
        )
        yearly = sides.group_by("period").agg(game_totals())
        parts.append(
            yearly.with_columns(
                pair=pl.lit(pair.label),
                band=pl.lit(pair.band_label),
                opponent_band=pl.lit(pair.opponent_label),
                band_low=pl.lit(pair.band[0]),
                band_high=pl.lit(pair.band[1]),
                opponent_low=pl.lit(pair.opponent[0]),
                opponent_high=pl.lit(pair.opponent[1]),
            )
        )
    non_empty = [part for part in parts if part.height]
    if not non_empty:
        return empty_frame(BandTrend)
    return _finished_trend(with_percentages(pl.concat(non_empty)))


_PAIR_KEYS = ["period", "pair", "band", "opponent_band", "band_low", "band_high", "opponent_low", "opponent_high"]


def _finished_trend(frame: pl.DataFrame) -> pl.DataFrame:
    return conform(frame.sort("pair", "period"), BandTrend)


def combine_band_trends(trends: list[pl.DataFrame]) -> pl.DataFrame:
    """Add up band trends computed month by month into one row per year and pair."""
    non_empty = [trend for trend in trends if trend.height]
    if not non_empty:
        return empty_frame(BandTrend)
    return _finished_trend(resum(non_empty, _PAIR_KEYS))


#: The Deflation Index's bands of the favourite's rating used.
INDEX_BAND_WIDTH = 200


def deflation_index(rated_games: pl.DataFrame, month: str) -> pl.DataFrame:
    """The month's Deflation Index (Milvang 2023, as Ghita, The Rating Revolution, 2026, p. 50 uses it: "the
    favourites' expected minus actual score in per cent"), over the games rated for both sides between unequal
    ratings, by the favourite's 200-point band and for all of them (Ghita splits it by band, p. 51). Positive: the
    favourites score below what the rule set expects of them, which is what a deflated pool's underrated players do
    to them.
    """
    counted = counted_for_both_sides(rated_games)
    white, black = pl.col("white_rating_used"), pl.col("black_rating_used")
    unequal = counted.filter(white != black)
    white_favourite = white > black
    per_game = unequal.select(
        band_low=((pl.max_horizontal(white, black) // INDEX_BAND_WIDTH) * INDEX_BAND_WIDTH).cast(pl.Int32),
        expected=pl.when(white_favourite).then(pl.col("white_expected")).otherwise(pl.col("black_expected")),
        score=pl.when(white_favourite).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")),
    )
    totals = [pl.len().cast(pl.Int64).alias("games"), pl.col("expected").sum(), pl.col("score").sum()]
    by_band = (
        per_game.group_by("band_low")
        .agg(totals)
        .sort("band_low")
        .select(
            (pl.col("band_low").cast(pl.Utf8) + "-" + (pl.col("band_low") + INDEX_BAND_WIDTH - 1).cast(pl.Utf8)).alias(
                "band"
            ),
            "games",
            "expected",
            "score",
        )
    )
    overall = per_game.select(pl.lit("all").alias("band"), *totals)
    rows = pl.concat([overall, by_band], how="vertical_relaxed").with_columns(
        month=pl.lit(month),
        index_pct=pl.when(pl.col("games") > 0).then(100.0 * (pl.col("expected") - pl.col("score")) / pl.col("games")),
    )
    return conform(rows.select("month", "band", "games", "expected", "score", "index_pct"), DeflationIndex)
