"""uscf: a simplified national-federation system: logistic Elo, K = 800 / (Ne + m), USCF rating floors."""

from __future__ import annotations

import polars as pl
from pydantic import Field

from pipeline.systems import RatingSystem, SystemParams, signed_advantage, with_opponents
from schemas.system_state import UscfState


class UscfParams(SystemParams):
    init_rating: float = Field(1500.0, description="a new player's rating (USCF imputes one from age; here one value)")
    initial_games: int = Field(0, ge=0, description="N a new player's rating is taken to rest on")
    established_after: int = Field(
        25, ge=0, description="a rating is established when based on more than this many games (peak floors need one)"
    )
    floors: bool = Field(True, description="apply the absolute and peak-rating floors")


def effective_games(rating: pl.Expr, games: pl.Expr) -> pl.Expr:
    """Glickman, 'The US Chess Rating system' (2004), Step 2, eq. (1): N* = 50 / sqrt(1 + (2200 - R0)^2 / 100000)
    for R0 <= 2200, else 50; the effective number of games N' is the smaller of N and N*.
    """
    n_star = pl.when(rating <= 2200).then(50.0 / (1.0 + (2200.0 - rating).pow(2) / 100000.0).sqrt()).otherwise(50.0)
    return pl.min_horizontal(games.cast(pl.Float64), n_star)


def absolute_floor(wins: pl.Expr, draws: pl.Expr, events_3plus: pl.Expr) -> pl.Expr:
    """US Chess rulebook ch. 8 s. 5: min(100 + 4 wins + 2 draws + events with 3+ games, 150)."""
    return pl.min_horizontal(100 + 4 * wins + 2 * draws + events_3plus, pl.lit(150)).cast(pl.Float64)


def peak_floor(peak: pl.Expr) -> pl.Expr:
    """US Chess rulebook ch. 8 s. 5: peak rating minus 200, rounded down to a 100, from 1200 to 2100 (none below a 1400
    peak).
    """
    floor = ((peak - 200.0) / 100.0).floor() * 100.0
    return pl.when(floor >= 1200.0).then(pl.min_horizontal(floor, pl.lit(2100.0)))


def _expected(params: UscfParams) -> pl.Expr:
    diff = pl.col("white_rating") - pl.col("black_rating") + pl.col("advantage")
    return 1.0 / (1.0 + pl.lit(10.0).pow(-diff / 400.0))


def _update(players: pl.DataFrame, sides: pl.DataFrame, params: UscfParams, period: int) -> pl.DataFrame:
    sides = with_opponents(sides, players, ["rating"]).with_columns(
        expected=1.0
        / (1.0 + pl.lit(10.0).pow(-(pl.col("own_rating") - pl.col("opp_rating") + signed_advantage(params)) / 400.0))
    )
    # An event with 3+ of the player's games; without event ids, the period is the player's one event.
    events = (
        sides.with_columns(pl.col("event_id").fill_null(""))
        .group_by("player_id", "event_id")
        .agg(n=pl.len())
        .group_by("player_id")
        .agg(period_events=(pl.col("n") >= 3).sum().cast(pl.Int64))
    )
    sums = sides.group_by("player_id").agg(delta=(pl.col("score") - pl.col("expected")).sum())
    frame = (
        players.join(sums, on="player_id", how="left")
        .join(events, on="player_id", how="left")
        .with_columns(
            n=(pl.col("games") + params.initial_games),
        )
        .with_columns(
            # Standard formula: K = 800 / (N' + m), R_post = R_pre + K (S - E) (no bonus, no special formula here).
            k=800.0 / (effective_games(pl.col("rating"), pl.col("n")) + pl.col("period_games")),
            events_3plus=pl.col("events_3plus").fill_null(0) + pl.col("period_events").fill_null(0),
            established=(pl.col("n") + pl.col("period_games")) > params.established_after,
        )
        .with_columns(raw=pl.col("rating") + pl.col("k") * pl.col("delta"))
    )
    if params.floors:
        floor = pl.max_horizontal(
            absolute_floor(
                pl.col("wins") + pl.col("period_wins"), pl.col("draws") + pl.col("period_draws"), pl.col("events_3plus")
            ),
            pl.when(pl.col("established")).then(peak_floor(pl.col("peak"))),
        )
        frame = frame.with_columns(new_rating=pl.max_horizontal(pl.col("raw"), floor))
    else:
        frame = frame.with_columns(new_rating=pl.col("raw"))
    return frame.select(
        "player_id",
        rating="new_rating",
        # The peak that floors rest on: highest rating reached while established.
        peak=pl.when(pl.col("established"))
        .then(pl.max_horizontal(pl.col("peak"), pl.col("new_rating")))
        .otherwise(pl.col("peak")),
        events_3plus="events_3plus",
    )


SYSTEM = RatingSystem(
    name="uscf",
    description=(
        "uscf: logistic/400, K = 800/(N' + m) with USCF's effective games, absolute and peak-rating floors (simplified)"
    ),
    source="Glickman, 'The US Chess Rating system' (2004), Steps 2 and 4; US Chess rulebook ch. 8 s. 5",
    params=UscfParams,
    state_columns=("rating", "peak", "events_3plus"),
    initial=lambda params: {"rating": params.init_rating, "peak": None, "events_3plus": 0},
    expected=_expected,
    update=_update,
    extra_state={"peak": pl.Float64, "events_3plus": pl.Int64},
    state_model=UscfState,
)
