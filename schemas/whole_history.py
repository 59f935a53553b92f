"""Tables of a Whole-History Rating chain: every player-month as it stands, and the chain's warm start."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class WhrHistory(pa.DataFrameModel):
    """Every player-month of a `system: whr` scenario's history as it stands after a month, one row each (the history
    holds one node per player and month; tests/test_whr_scenario.py checks it).

    Not a stored table: `pipeline.scenarios.whole_history_stored.history_as_it_stands` (and `ratings history`) makes
    it from the stored WhrState months, so "month K as it stands now" is month K's rows of it after the last month;
    the list of K as it stood after K is `<scenario>/rating_list` of K, never rewritten.
    """

    player_id: pl.Int64 = pa.Field(description="Player id")
    month: pl.Utf8 = pa.Field(description="A month the player played in (YYYY-MM)")
    rating: pl.Float64 = pa.Field(description="The estimate of the player's rating in that month (Elo, unrounded)")
    deviation: pl.Float64 = pa.Field(
        nullable=True, gt=0, description="Its deviation (Elo): the player's own uncertainty, others held fixed"
    )
    games: pl.Int32 = pa.Field(ge=0, description="Games the player played in that month")

    class Config:
        strict = True


class WhrState(pa.DataFrameModel):
    """The player-months whose estimate a `system: whr` chain's month changed, as they stand after it, by player_id and
    month: the nodes of the month's players (each sweep moves all of a player's months), or, in a checkpoint month
    (a full sweep, every `checkpoint_every` months, the chain's first month), every player-month. The history after
    month M is the last checkpoint up to M with the months after it laid over it, in order
    (`pipeline.scenarios.whole_history_stored.stored_state`); a run continuing the chain rebuilds the history from
    the chain's rated games and takes these estimates, so that it continues exactly where M stopped.
    """

    player_id: pl.Int64 = pa.Field(description="Player id")
    month: pl.Utf8 = pa.Field(description="A month the player played in (YYYY-MM)")
    r: pl.Float64 = pa.Field(description="The estimate in natural units, r = (rating - init_rating) ln 10 / 400")
    variance: pl.Float64 = pa.Field(
        nullable=True, description="Its variance in natural units (NaN: not swept yet, when sweeps is 0)"
    )
    games: pl.Int32 = pa.Field(ge=0, description="Games the player played in that month")

    class Config:
        strict = True
