"""Engine workloads: one month through the rating engine alone."""

from __future__ import annotations

import numpy as np
import polars as pl

from bench.measure import timed
from pipeline.engine import rate_period
from pipeline.rules import load_rules


def synthetic_month(players: int, games: int, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A previous list (80 % rated, normal around 1700) and a month of random pairings between its players."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1_000_000, 1_000_000 + players, dtype=np.int64)
    ratings = np.clip(rng.normal(1700, 300, players), 1000, 2850).astype(np.int32)
    rated = rng.random(players) < 0.8
    previous = pl.DataFrame(
        {"player_id": ids, "rating": pl.Series(np.where(rated, ratings, 0)).cast(pl.Int32),
         "games_total": rng.integers(0, 300, players).astype(np.int32), "birth_year": rng.integers(1940, 2015, players).astype(np.int32)}
    ).with_columns(rating=pl.when(pl.Series(rated)).then(pl.col("rating")))
    white = rng.integers(0, players, games)
    black = (white + rng.integers(1, players, games)) % players
    month_games = pl.DataFrame(
        {"game_id": np.arange(games, dtype=np.uint64), "event_id": (white // 60).astype(str),
         "white_id": ids[white], "black_id": ids[black], "white_score": rng.choice([0.0, 0.5, 1.0], games)}
    )
    return previous, month_games


def engine_month(players: int = 500_000, games: int = 200_000) -> dict:
    """A FIDE-scale month: 500,000-player list, 200,000 games, fide-2024 rules."""
    previous, month_games = synthetic_month(players, games)
    rules = load_rules("fide-2024")
    result, seconds = timed(lambda: rate_period(previous, month_games, rules, "2024-05"))
    return {"seconds": round(seconds, 3), "items": games, "unit": "games", "players": result.rating_list.height}


WORKLOADS = {"engine-month": engine_month}


def engine_vs_reference(players: int = 100_000, games: int = 40_000) -> dict:
    """The same month through the engine and through the plain-Python per-game reference (bench/reference.py)."""
    from bench.reference import rate_period_reference
    from pipeline.engine import normalize_games, normalize_list

    previous, month_games = synthetic_month(players, games)
    rules = load_rules("fide-2024")
    full_list = normalize_list(previous)
    engine_result, engine_seconds = timed(lambda: rate_period(full_list, month_games, rules, "2024-05"))
    normalized = normalize_games(month_games, "2024-05")
    reference_list, reference_seconds = timed(lambda: rate_period_reference(full_list, normalized, rules, "2024-05"))
    return {
        "seconds": round(engine_seconds, 3),
        "items": games,
        "unit": "games",
        "reference_seconds": round(reference_seconds, 3),
        "speedup": round(reference_seconds / engine_seconds, 1),
        "identical": engine_result.rating_list.equals(reference_list),
    }


WORKLOADS["engine-vs-reference"] = engine_vs_reference
