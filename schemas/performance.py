"""Performance ratings per player per event and per month, by FIDE's method and the algorithm of 400.

See docs/analytics.md.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

SCOPES = ["month", "event"]


class Performance(pa.DataFrameModel):
    """Performance ratings of a month: one `month` row per player with a counted game, plus one `event`
    row per event they played.

    FIDE: Ra + dp (table 8.1.1, p to two decimals half up, +/-800 only for a perfect or zero score),
    rounded half up; algorithm of 400: (sum of opponents' ratings + 400 x (wins - losses)) / games. A
    game counts for a player when the opponent has a rating used and the scenario rates the game's time
    control (weight > 0); each counted game is one game, whatever its weight. The player's own rating
    does not matter: unrated players get performance ratings too.
    """

    month: pl.Utf8 = pa.Field(str_matches=r"^\d{4}-\d{2}$", description="Rating period (YYYY-MM)")
    scope: pl.Utf8 = pa.Field(
        isin=SCOPES, description="'month': all the player's counted games of the month; 'event': one event's"
    )
    player_id: pl.Int64 = pa.Field(gt=0, description="FIDE id (or local id)")
    event_id: pl.Utf8 = pa.Field(
        nullable=True, description="Event identifier for scope 'event'; null for scope 'month'"
    )
    games: pl.Int64 = pa.Field(
        gt=0, description="Counted games: against opponents with a rating used, in a rated time control"
    )
    wins: pl.Int64 = pa.Field(ge=0, description="Counted games won")
    draws: pl.Int64 = pa.Field(ge=0, description="Counted games drawn")
    losses: pl.Int64 = pa.Field(ge=0, description="Counted games lost")
    score: pl.Float64 = pa.Field(ge=0, description="Points in the counted games")
    opponent_rating_sum: pl.Int64 = pa.Field(ge=0, description="Sum of the opponents' ratings used")
    average_opponent: pl.Float64 = pa.Field(ge=0, description="Ra: opponent_rating_sum / games, unrounded")
    p: pl.Float64 = pa.Field(
        ge=0,
        le=1,
        description=(
            "Fractional score looked up in table 8.1.1: score / games to two decimals, half up; 1.00 and 0.00 "
            "only for a perfect or a zero score"
        ),
    )
    dp: pl.Int32 = pa.Field(ge=-800, le=800, description="Rating difference dp for p from table 8.1.1")
    performance_fide: pl.Int32 = pa.Field(description="FIDE: Ra + dp, rounded to the nearest whole number, 0.5 up")
    performance_400: pl.Int32 = pa.Field(
        description=(
            "Algorithm of 400: (opponent_rating_sum + 400 x (wins - losses)) / games, rounded to the nearest "
            "whole number, 0.5 up"
        )
    )

    class Config:
        strict = True

    @pa.dataframe_check
    @classmethod
    def event_id_only_for_events(cls, data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("scope") == "event") == pl.col("event_id").is_not_null())

    @pa.dataframe_check
    @classmethod
    def results_add_up(cls, data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("wins") + pl.col("draws") + pl.col("losses") == pl.col("games"))
            & (pl.col("score") == pl.col("wins") + 0.5 * pl.col("draws"))
        )
