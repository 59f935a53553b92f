"""How far a rating list is from the generator's ground truth: offsets and rating-difference errors per band.

Pure Polars.
"""

from __future__ import annotations

import polars as pl

from pipeline.analytics.common import in_order_mean, in_order_std, in_order_sum

#: Where the generator writes the true strengths, in the store; real federation data has none.
TRUTH_KEY = "truth/strength.parquet"
BAND_WIDTH = 100
TOP_BAND = 2500  # ratings from here are lumped into one band, as in the summary crosstable

ERROR_COLUMNS = pl.Schema(
    {
        "month": pl.Utf8,
        "band": pl.Utf8,  # "all", or "1400-1499" ... "2500+"
        "band_floor": pl.Int32,  # lowest rating of the band (null for "all")
        "players": pl.Int64,  # rated players on the list that exist in the truth that month
        "mean_rating": pl.Float64,
        "mean_strength": pl.Float64,
        "mean_offset": pl.Float64,  # mean of rating - strength
        "sd_offset": pl.Float64,
        "pair_error_mean": pl.Float64,
        "pair_error_rms": pl.Float64,
        "slope": pl.Float64,  # "all" only: least-squares slope of rating on strength
    }
)


def rating_error_vs_truth(
    rating_list: pl.DataFrame,
    truth: pl.DataFrame | pl.LazyFrame,
    month: str,
    band_width: int = BAND_WIDTH,
    top_band: int = TOP_BAND,
) -> pl.DataFrame:
    """Compare the list of `month` (player_id, rating; null = unrated) with the true strengths of that month.

    `truth` has columns player_id, month, strength (truth/strength.parquet; other months are ignored).
    Only an Elo list's differences mean anything, so the errors are about pairs of rated players,
    e_ij = (rating_i - rating_j) - (strength_i - strength_j) = offset_i - offset_j, offset = rating - strength:

    - row "all": pair_error_mean is the mean of e_ij over every pair, i the higher-rated player (pairs
      with equal ratings left out): positive when rating differences overstate strength differences,
      i.e. favourites score below their expectation (deflation at the bottom reads this way);
      pair_error_rms is the root mean square of e_ij over all pairs; slope the least-squares slope of
      rating on strength (1 for a faithful scale, above 1 when the list is stretched).
    - one row per rating band (band_width points, ratings from top_band lumped): mean and sd of the
      offset; pair_error_mean / pair_error_rms of e_ij with i in the band and j anywhere else on the
      list (negative mean: the band is rated too low relative to the rest).

    Computed from sums and ranks, never by enumerating pairs: O(n log n) at FIDE scale.
    """
    strengths = (
        truth.lazy()
        .filter(pl.col("month") == month)
        .select(pl.col("player_id").cast(pl.Int64), pl.col("strength").cast(pl.Float64))
    )
    rated = (
        rating_list.lazy()
        .select(pl.col("player_id").cast(pl.Int64), pl.col("rating").cast(pl.Float64))
        .filter(pl.col("rating").is_not_null())
        .join(strengths, on="player_id", how="inner")
        .with_columns(offset=pl.col("rating") - pl.col("strength"))
        .collect()
        # A parallel join's row order varies between runs, and float sums in another order differ in
        # the last bits: one order makes a rerun write the same bytes.
        .sort("player_id")
    )
    n = rated.height
    if n == 0:
        return pl.DataFrame(schema=ERROR_COLUMNS)

    # Every whole-column sum in row order (in_order_*): Polars adds a long column in parallel pieces, chunk by chunk
    # and split by its threads, so POLARS_MAX_THREADS (and a run's timing) changed the last bits.
    centred = {name: pl.col(name) - in_order_mean(pl.col(name)) for name in ("rating", "strength")}
    total = rated.select(
        in_order_sum(pl.col("offset")).alias("sum"),
        in_order_sum(pl.col("offset") ** 2).alias("sumsq"),
        in_order_mean(pl.col("rating")).alias("mean_rating"),
        in_order_mean(pl.col("strength")).alias("mean_strength"),
        in_order_mean(pl.col("offset")).alias("mean_offset"),
        in_order_std(pl.col("offset")).alias("sd_offset"),
        # cov(rating, strength) / var(strength): their n - 1 cancels; with one player there is none (null, as they are).
        pl.when(pl.len() > 1)
        .then(in_order_sum(centred["rating"] * centred["strength"]) / in_order_sum(centred["strength"] ** 2))
        .alias("slope"),
    ).row(0, named=True)
    pairs = n * (n - 1) / 2
    # Each player is the higher-rated side against everyone rated below and the lower side against
    # everyone rated above; ties cancel out and are left out of the pair count.
    # Added in row order: a rank or window's result comes in chunks as the threads made them.
    oriented = rated.select(
        in_order_sum(
            pl.col("offset")
            * (pl.col("rating").rank("min").cast(pl.Float64) - 1 - (n - pl.col("rating").rank("max").cast(pl.Float64)))
        ).alias("sum"),
        # A rating shared by t players is t(t - 1) / 2 tied pairs: (t - 1) / 2 per player.
        in_order_sum((pl.len().over("rating") - 1) / 2).alias("tied"),
    ).row(0, named=True)
    ordered_pairs = pairs - oriented["tied"]
    all_row = {
        "month": month,
        "band": "all",
        "band_floor": None,
        "players": n,
        "mean_rating": total["mean_rating"],
        "mean_strength": total["mean_strength"],
        "mean_offset": total["mean_offset"],
        "sd_offset": total["sd_offset"],
        "pair_error_mean": oriented["sum"] / ordered_pairs if ordered_pairs > 0 else None,
        "pair_error_rms": ((n * total["sumsq"] - total["sum"] ** 2) / pairs) ** 0.5 if pairs > 0 else None,
        "slope": total["slope"],
    }

    band_floor = pl.min_horizontal((pl.col("rating") // band_width) * band_width, pl.lit(top_band)).cast(pl.Int32)
    bands = (
        rated.group_by(band_floor.alias("band_floor"), maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("players"),
            in_order_mean(pl.col("rating")).alias("mean_rating"),
            in_order_mean(pl.col("strength")).alias("mean_strength"),
            in_order_mean(pl.col("offset")).alias("mean_offset"),
            in_order_std(pl.col("offset")).alias("sd_offset"),
            in_order_sum(pl.col("offset")).alias("_sum"),
            in_order_sum(pl.col("offset") ** 2).alias("_sumsq"),
        )
        .sort("band_floor")
    )
    rest_n = n - pl.col("players")
    rest_mean = (total["sum"] - pl.col("_sum")) / rest_n
    rest_meansq = (total["sumsq"] - pl.col("_sumsq")) / rest_n
    # Over pairs (i in band, j elsewhere): E[o_i - o_j] and E[(o_i - o_j)^2] from the two groups' moments.
    bands = bands.with_columns(
        pl.lit(month).alias("month"),
        pl.when(pl.col("band_floor") >= top_band)
        .then(pl.format("{}+", pl.col("band_floor")))
        .otherwise(pl.format("{}-{}", pl.col("band_floor"), pl.col("band_floor") + band_width - 1))
        .alias("band"),
        pl.when(rest_n > 0).then(pl.col("mean_offset") - rest_mean).alias("pair_error_mean"),
        pl.when(rest_n > 0)
        .then(
            (pl.col("_sumsq") / pl.col("players") - 2 * pl.col("mean_offset") * rest_mean + rest_meansq).clip(0).sqrt()
        )
        .alias("pair_error_rms"),
        pl.lit(None, dtype=pl.Float64).alias("slope"),
    )
    rows = pl.concat(
        [pl.DataFrame([all_row], schema=ERROR_COLUMNS), bands.select(list(ERROR_COLUMNS)).cast(ERROR_COLUMNS)]
    )
    return rows
