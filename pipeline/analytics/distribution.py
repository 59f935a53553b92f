"""Rating distribution of a list: rated players per 25-point bin (January lists, before/after compression)."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from schemas.rating_distribution import RatingDistribution
from schemas.util import conform, empty_frame

# What rating_distribution reads of a list: a caller reading stored lists need not load their other columns.
DISTRIBUTION_COLUMNS = ["rating", "inactive"]


def rating_distribution(
    rating_list: pl.DataFrame,
    period: str,
    bin_width: int = 25,
    active_only: bool = False,
) -> pl.DataFrame:
    """Rated players per `bin_width`-point bin of `rating`, as a RatingDistribution frame labelled `period`.

    Every bin from the lowest to the highest occupied one is present (empty ones with 0 players), so
    two lists overlay cleanly. Unrated players (null rating) are not counted; with `active_only`,
    players flagged inactive are left out too.
    """
    if bin_width <= 0:
        raise ValueError(f"bin_width must be positive, got {bin_width}")
    rated = rating_list.filter(pl.col("rating").is_not_null())
    if active_only:
        rated = rated.filter(~pl.col("inactive"))
    if rated.height == 0:
        return empty_frame(RatingDistribution)
    counts = rated.group_by(bin_low=(pl.col("rating") // bin_width * bin_width).cast(pl.Int32)).agg(
        players=pl.len().cast(pl.Int64)
    )
    lowest, highest = counts["bin_low"].min(), counts["bin_low"].max()
    assert isinstance(lowest, int) and isinstance(highest, int)  # an Int32 column with at least one row
    all_bins = pl.DataFrame({"bin_low": pl.int_range(lowest, highest + 1, bin_width, dtype=pl.Int32, eager=True)})
    table = (
        all_bins.join(counts, on="bin_low", how="left")
        .with_columns(pl.col("players").fill_null(0))
        .with_columns(
            period=pl.lit(period),
            bin_high=pl.col("bin_low") + (bin_width - 1),
            share_pct=100.0 * pl.col("players") / rated.height,
        )
    )
    return conform(table.sort("bin_low"), RatingDistribution)


def rating_distributions(
    lists: Mapping[str, pl.DataFrame], bin_width: int = 25, active_only: bool = False
) -> pl.DataFrame:
    """Several lists' distributions in one frame, each labelled by its key (e.g. '2024-01', or
    'before compression' / 'after compression' for the same month), ready to overlay.
    """
    frames = [rating_distribution(frame, label, bin_width, active_only) for label, frame in lists.items()]
    non_empty = [frame for frame in frames if frame.height]
    return pl.concat(non_empty) if non_empty else empty_frame(RatingDistribution)


def january_lists(periods: list[str]) -> dict[str, str]:
    """Label -> rating period of each January list among `periods`, e.g. {'January 2024': '2023-12'}.

    The list of period M is published on the 1st of M+1 (docs/engine.md), so FIDE's January list
    is the list of the December period.
    """
    return {f"January {int(period[:4]) + 1}": period for period in sorted(periods) if period.endswith("-12")}
