"""Engine workloads: one FIDE-scale month through the rating engine alone, and beside the per-game reference."""

from __future__ import annotations

import numpy as np
import polars as pl

from bench.measure import repeated
from pipeline.engine import normalize_games, normalize_list, rate_period
from pipeline.rules import load_rules

FIDE_PLAYERS, FIDE_GAMES = 500_000, 200_000
ENGINE_RUNS, REFERENCE_RUNS = 7, 2


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


def fide_month() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The FIDE-scale month as the pipeline hands it to the engine: a full list (normalised once) and the games."""
    previous, month_games = synthetic_month(FIDE_PLAYERS, FIDE_GAMES)
    return normalize_list(previous), month_games


def engine_month() -> dict:
    """A FIDE-scale month: 500,000-player list, 200,000 games, fide-2024 rules (best of ENGINE_RUNS runs)."""
    full_list, month_games = fide_month()
    rules = load_rules("fide-2024")
    result, best, median = repeated(lambda: rate_period(full_list, month_games, rules, "2024-05"), ENGINE_RUNS)
    return {"seconds": round(best, 3), "median_seconds": round(median, 3), "runs": ENGINE_RUNS, "items": FIDE_GAMES,
            "unit": "games", "players": result.rating_list.height}


def engine_vs_reference() -> dict:
    """The same FIDE-scale month through the engine and through the plain-Python per-game reference (bench/reference.py).

    Each is timed best of several runs in the same process; the speed-up is the ratio of the best
    times, and `identical` says whether the two lists are equal.
    """
    from bench.reference import rate_period_reference

    full_list, month_games = fide_month()
    rules = load_rules("fide-2024")
    engine_result, engine_best, engine_median = repeated(
        lambda: rate_period(full_list, month_games, rules, "2024-05"), ENGINE_RUNS)
    normalized = normalize_games(month_games, "2024-05")
    reference_list, reference_best, reference_median = repeated(
        lambda: rate_period_reference(full_list, normalized, rules, "2024-05"), REFERENCE_RUNS)
    return {
        "seconds": round(engine_best, 3),
        "median_seconds": round(engine_median, 3),
        "items": FIDE_GAMES,
        "unit": "games",
        "reference_seconds": round(reference_best, 3),
        "reference_median_seconds": round(reference_median, 3),
        "speedup": round(reference_best / engine_best, 1),
        "speedup_median": round(reference_median / engine_median, 1),
        "identical": engine_result.rating_list.equals(reference_list),
    }


WORKLOADS = {"engine-month": engine_month, "engine-vs-reference": engine_vs_reference}
