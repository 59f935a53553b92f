"""Per-player state of a rating system after a period (pipeline/systems): what the next period starts from."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class SystemState(pa.DataFrameModel):
    """State of a rating system behind a scenario's lists: one row per player it has rated, unrounded.

    The next month starts from it (`pipeline.systems.rate_period`, one period per month); the first
    month starts from the seed list: its rated players at their seed rating with the system's initial
    deviation (and volatility). The columns below are common to every system; a system leaves the ones
    it does not keep null (Elo has no deviation, Glicko no volatility). A system may add its own columns
    after these (declared in its module as `extra_state`, e.g. uscf's `peak` and `events_3plus`), which
    is why the model is not strict: the list that stores the state keeps them.
    """

    player_id: pl.Int64 = pa.Field(unique=True, description="Player id")
    rating: pl.Float64 = pa.Field(
        description="Rating after the period (unrounded; the system's own scale mapped to Elo points)"
    )
    deviation: pl.Float64 = pa.Field(
        nullable=True,
        gt=0,
        description="Rating deviation RD after the period (Glicko, Glicko-2, Stephenson); null for systems without one",
    )
    volatility: pl.Float64 = pa.Field(
        nullable=True, gt=0, description="Rating volatility sigma (Glicko-2 only); null otherwise"
    )
    games: pl.Int64 = pa.Field(ge=0, description="Games rated so far")
    wins: pl.Int64 = pa.Field(ge=0, description="Wins so far")
    draws: pl.Int64 = pa.Field(ge=0, description="Draws so far")
    losses: pl.Int64 = pa.Field(ge=0, description="Losses so far")
    last_period: pl.Int64 = pa.Field(
        nullable=True,
        description="Last period with a rated game (month index, or the file's integer period); null if none yet",
    )

    class Config:
        strict = False


class UscfState(SystemState):
    """SystemState plus uscf's own columns (pipeline/systems/uscf.py `extra_state`)."""

    peak: pl.Float64 = pa.Field(
        nullable=True, description="Highest rating after any period (peak floor); null before the first"
    )
    events_3plus: pl.Int64 = pa.Field(ge=0, description="Events of three or more games played (absolute floor)")
    birth_year: pl.Int64 = pa.Field(nullable=True, description="Year of birth (an unrated player's imputed rating)")

    class Config:
        strict = True


class DwzState(SystemState):
    """SystemState plus dwz's own columns (pipeline/systems/dwz.py `extra_state`)."""

    birth_year: pl.Int64 = pa.Field(nullable=True, description="Year of birth (the age class of E)")
    dwz_index: pl.Int64 = pa.Field(ge=0, description="Evaluations since the first DWZ (0: no DWZ yet)")
    rest_games: pl.Int64 = pa.Field(ge=0, description="Restpartien carried forward: games against Auswahl I (WO 3.4.2)")
    rest_score: pl.Float64 = pa.Field(ge=0, description="Restpartien: points scored in them")
    rest_opponents: pl.Float64 = pa.Field(ge=0, description="Restpartien: sum of the opponents' ratings")
    rest_ratings: pl.Utf8 = pa.Field(
        nullable=True,
        description="Restpartien: each opponent's rating then, space-separated (the Gesamtiteration needs each)",
    )
    rest_since: pl.Int64 = pa.Field(nullable=True, description="Period of the oldest Restpartie (they lapse)")

    class Config:
        strict = True


class EcfState(SystemState):
    """SystemState plus ecf's own columns (pipeline/systems/ecf.py `extra_state`)."""

    ecf_status: pl.Int64 = pa.Field(
        isin=[0, 1, 2], description="What the rating is: 0 none (New Player), 1 Partial Rating, 2 Full Rating"
    )
    p_games: pl.Int64 = pa.Field(ge=0, description="Games a Partial Rating rests on (0 for a Full Rating)")
    p_score: pl.Float64 = pa.Field(ge=0, description="Points scored in those games")
    p_opponents: pl.Float64 = pa.Field(ge=0, description="Sum of the opponents' ratings in those games")
    p_fictional: pl.Float64 = pa.Field(
        nullable=True,
        description="The fictional opponent of a returning player's P Rating (his last Full Rating); null: nominal",
    )
    recent_games: pl.Utf8 = pa.Field(
        nullable=True,
        description=(
            "Rated games of the 12 months ending at last_period, newest month first, space-separated; null before any"
        ),
    )
    inherited_results: pl.Int64 = pa.Field(
        nullable=True,
        ge=0,
        description=(
            "Rated results an inherited (seeded) rating rested on in the 60 months before (category H); null when "
            "unknown, or once the player has played"
        ),
    )

    class Config:
        strict = True
