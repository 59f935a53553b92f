"""The yearly drift of a stable cohort beside the same players' change of true strength on generated data.

The drift is the median rating change over a year of the adults aged 25-45 who stayed active, from one December list to
the next.

The FIDE-watchers' pool monitor follows this "anchor cohort (aged 25-45, steadily active)": its median annual drift
was -6 to -2 points a year before March 2024 and +2 to +3 after (../shared/reference/systems-and-calendar.md,
zugzwang-foundation/Chess-ELO-Rating docs/evidence/E1_fide-lists.md). Their strength should hardly move, so their
rating's drift is the pool's. Reading chosen here: "steadily active" is played in the three months before each of
the two lists (last_played), and not flagged inactive on either; the age is the year's minus the birth year.
"""

from __future__ import annotations

import polars as pl

from pipeline.months import add_months, is_december
from schemas.util import conform, empty_frame
from schemas.yearly_drift import YearlyDrift

COHORT_AGES = (25, 45)
RECENT_MONTHS = 3
#: The list columns the drift reads.
DRIFT_COLUMNS = ("player_id", "rating", "inactive", "birth_year", "last_played")


def _steady(rating_list: pl.DataFrame, month: str, year: int) -> pl.DataFrame:
    """The list's rated adults of the cohort's ages who played in the RECENT_MONTHS up to `month`, not inactive."""
    low, high = COHORT_AGES
    age = pl.lit(year) - pl.col("birth_year")
    return rating_list.filter(
        pl.col("rating").is_not_null()
        & ~pl.col("inactive")
        & (pl.col("last_played") > add_months(month, -RECENT_MONTHS))
        & age.is_between(low, high)
    ).select("player_id", "rating")


def true_moves(truth: pl.LazyFrame, players: pl.Series, month: str) -> pl.DataFrame:
    """(player_id, true_change) of `players`: each one's true strength at `month` minus a year before (truth: player_id,
    month, strength), for the players the truth holds at both; empty when it holds neither month.
    """
    before = add_months(month, -12)
    strengths = (
        truth.filter(pl.col("month").is_in([month, before]))
        .join(pl.LazyFrame({"player_id": players}), on="player_id", how="semi")
        .collect()
        .pivot("month", index="player_id", values="strength")
    )
    if not {month, before} <= set(strengths.columns):
        return pl.DataFrame(schema={"player_id": pl.Int64, "true_change": pl.Float64})
    moved = strengths.select(
        pl.col("player_id").cast(pl.Int64), (pl.col(month) - pl.col(before)).cast(pl.Float64).alias("true_change")
    )
    return moved.drop_nulls("true_change")


def cohort_drift(
    earlier: pl.DataFrame | None, later: pl.DataFrame, month: str, truth: pl.LazyFrame | None = None
) -> pl.DataFrame:
    """The YearlyDrift row of the December list `later` (`earlier`: the list of a year before, None when not
    stored: no row), with the true drift where `truth` (player_id, month, strength) is given. Empty in other months.
    """
    if not is_december(month) or earlier is None:
        return empty_frame(YearlyDrift)
    year = int(month[:4])
    both = _steady(later, month, year).join(
        _steady(earlier, add_months(month, -12), year), on="player_id", suffix="_before"
    )
    change = both["rating"].cast(pl.Float64) - both["rating_before"].cast(pl.Float64)
    true_median = true_mean = None
    if truth is not None and both.height:
        moved = true_moves(truth, both["player_id"], month)["true_change"]
        if moved.len():
            true_median, true_mean = moved.median(), moved.mean()
    row = {
        "month": month,
        "year": year,
        "age_low": COHORT_AGES[0],
        "age_high": COHORT_AGES[1],
        "players": both.height,
        "median_change": change.median() if both.height else None,
        "mean_change": change.mean() if both.height else None,
        "true_median_change": true_median,
        "true_mean_change": true_mean,
    }
    return conform(pl.DataFrame([row], schema_overrides={"year": pl.Int32}), YearlyDrift)
