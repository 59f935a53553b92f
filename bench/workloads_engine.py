"""Engine workloads: one FIDE-scale month through the rating engine alone, and two years of months.

The month beside the per-game reference; the two years beside the yardstick of ../shared/yardsticks/bare_period_core.py.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import polars as pl

from bench.measure import repeated
from pipeline.engine.period import normalize_games, normalize_list, rate_period
from pipeline.months import add_months
from pipeline.rules.model import RuleSet, load_rules
from pipeline.rules.tables import PD_HIGHER_HUNDREDTHS

FIDE_PLAYERS, FIDE_GAMES = 500_000, 200_000
ENGINE_RUNS, REFERENCE_RUNS = 7, 2


def synthetic_month(players: int, games: int, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A previous list (80 % rated, normal around 1700) and a month of random pairings between its players."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1_000_000, 1_000_000 + players, dtype=np.int64)
    ratings = np.clip(rng.normal(1700, 300, players), 1000, 2850).astype(np.int32)
    rated = rng.random(players) < 0.8
    previous = pl.DataFrame(
        {
            "player_id": ids,
            "rating": pl.Series(np.where(rated, ratings, 0)).cast(pl.Int32),
            "games_total": rng.integers(0, 300, players).astype(np.int32),
            "birth_year": rng.integers(1940, 2015, players).astype(np.int32),
        }
    ).with_columns(rating=pl.when(pl.Series(rated)).then(pl.col("rating")))
    white = rng.integers(0, players, games)
    black = (white + rng.integers(1, players, games)) % players
    month_games = pl.DataFrame(
        {
            "game_id": np.arange(games, dtype=np.uint64),
            "event_id": (white // 60).astype(str),
            "white_id": ids[white],
            "black_id": ids[black],
            "white_score": rng.choice([0.0, 0.5, 1.0], games),
        }
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
    return {
        "seconds": round(best, 3),
        "median_seconds": round(median, 3),
        "runs": ENGINE_RUNS,
        "items": FIDE_GAMES,
        "unit": "games",
        "players": result.rating_list.height,
    }


def engine_vs_reference() -> dict:
    """The same FIDE-scale month through the engine and through the plain-Python per-game reference
    (bench/reference.py).

    Each is timed best of several runs in the same process; the speed-up is the ratio of the best
    times, and `identical` says whether the two lists are equal.
    """
    from bench.reference import rate_period_reference

    full_list, month_games = fide_month()
    rules = load_rules("fide-2024")
    engine_result, engine_best, engine_median = repeated(
        lambda: rate_period(full_list, month_games, rules, "2024-05"), ENGINE_RUNS
    )
    normalized = normalize_games(month_games, "2024-05")
    reference_list, reference_best, reference_median = repeated(
        lambda: rate_period_reference(full_list, normalized, rules, "2024-05"), REFERENCE_RUNS
    )
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


YARDSTICK_MONTHS, YARDSTICK_RUNS = 24, 5


def yardstick_period(
    rating: np.ndarray, k: np.ndarray, white: np.ndarray, black: np.ndarray, white_hundredths: np.ndarray
) -> None:
    """One period of ../shared/yardsticks/bare_period_core.py, its arithmetic unchanged: updates `rating` in place.

    Dense player indices, table 8.1.2 in hundredths, the 400-point rule, K x n <= 700, rounding once
    per period; no list columns, newcomers, floors, flags or per-game table. The file itself runs its
    180-month loop at import, so its per-period body is repeated here, statement for statement.
    """
    g = pl.DataFrame({"w": white.astype(np.int32), "b": black.astype(np.int32), "s": white_hundredths.astype(np.int32)})
    d = (pl.Series(rating[white]) - pl.Series(rating[black])).clip(-400, 400)
    ad = d.abs().to_numpy()
    ph = _PDH[np.minimum(ad, 735)].astype(np.int32)
    pw = np.where(d.to_numpy() >= 0, ph, 100 - ph)
    dw = g["s"].to_numpy() - pw
    pid = np.concatenate([white, black])
    delta = np.concatenate([dw, -dw])
    df = pl.DataFrame({"p": pid, "d": delta}).group_by("p").agg(pl.col("d").sum().alias("sd"), pl.len().alias("n"))
    pp = df["p"].to_numpy()
    kk = k[pp]
    n = df["n"].to_numpy()
    keff = np.minimum(kk, 700 // n)
    ch = keff * df["sd"].to_numpy()
    chg = np.sign(ch) * ((np.abs(ch) + 50) // 100)
    rating[pp] += chg.astype(np.int32)


_PDH = PD_HIGHER_HUNDREDTHS[:736].astype(np.int16)


def yardstick_months(
    players: int, games: int, months: int, seed: int = 2
) -> tuple[pl.DataFrame, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The previous list of engine-month and `months` months of random pairings between its players, as dense
    indices.
    """
    previous, _ = synthetic_month(players, 1)
    rng = np.random.default_rng(seed)
    pairings = []
    for _ in range(months):
        white = rng.integers(0, players, games)
        black = (white + rng.integers(1, players, games)) % players
        pairings.append((white, black, rng.choice([0, 50, 100], games)))
    return normalize_list(previous), pairings


def chain_months() -> tuple[
    pl.DataFrame, list[tuple[np.ndarray, np.ndarray, np.ndarray]], list[str], list[pl.DataFrame]
]:
    """engine-vs-yardstick's workload: the starting list, each month's pairings as dense indices, the months and each
    month's games as the engine reads them.
    """
    full_list, pairings = yardstick_months(FIDE_PLAYERS, FIDE_GAMES, YARDSTICK_MONTHS)
    ids = full_list["player_id"].to_numpy()
    months = [add_months("2022-01", i) for i in range(YARDSTICK_MONTHS)]
    month_frames = [
        pl.DataFrame(
            {
                "game_id": np.arange(len(w), dtype=np.uint64),
                "event_id": (w // 60).astype(str),
                "white_id": ids[w],
                "black_id": ids[b],
                "white_score": s / 100.0,
            }
        )
        for w, b, s in pairings
    ]
    return full_list, pairings, months, month_frames


def engine_chain(
    full_list: pl.DataFrame, months: list[str], month_frames: list[pl.DataFrame], rules: RuleSet
) -> tuple[float, float, pl.DataFrame]:
    """The months through the engine from `full_list`: CPU and wall seconds of the rate_period calls alone, the last
    list.
    """
    rating_list, cpu, wall = full_list, 0.0, 0.0
    for month, games in zip(months, month_frames, strict=True):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rating_list = rate_period(rating_list, games, rules, month).rating_list
        cpu += time.process_time() - cpu0
        wall += time.perf_counter() - wall0
    return cpu, wall, rating_list


def engine_vs_yardstick() -> dict:
    """500,000 players, 200,000 games a month, 24 months, the same games through the engine (fide-2024) and the
    yardstick.

    CPU time (process time: every thread of the process) of the rating work only; building each
    month's games frame is excluded for both. Each chain runs YARDSTICK_RUNS times, alternating, each
    side first every other time, and the best total of each is kept; the ratios of the chains run one
    after the other (a pair shares the machine's load) are reported beside it, and their median.
    """
    full_list, pairings, months, month_frames = chain_months()
    rules = load_rules("fide-2024")
    start_rating = full_list["rating"].fill_null(1800).to_numpy().astype(np.int32)

    def yardstick_chain() -> tuple[float, float]:
        rating, k, cpu, wall = start_rating.copy(), np.full(len(start_rating), 20, dtype=np.int32), 0.0, 0.0
        for w, b, s in pairings:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            yardstick_period(rating, k, w, b, s)
            cpu += time.process_time() - cpu0
            wall += time.perf_counter() - wall0
        return cpu, wall

    engine_runs, yardstick_runs = [], []
    for run in range(YARDSTICK_RUNS):
        # Neither side always runs after the other: the second of a pair meets the first's freed memory and caches.
        if run % 2:
            yardstick_runs.append(yardstick_chain())
        engine_runs.append(engine_chain(full_list, months, month_frames, rules)[:2])
        if not run % 2:
            yardstick_runs.append(yardstick_chain())
    engine_cpu, engine_wall = min(engine_runs)
    yard_cpu, yard_wall = min(yardstick_runs)
    pair_ratios = [round(e / y, 2) for (e, _), (y, _) in zip(engine_runs, yardstick_runs, strict=True)]
    return {
        "seconds": round(engine_wall, 3),
        "items": FIDE_GAMES * YARDSTICK_MONTHS,
        "unit": "games",
        "months": YARDSTICK_MONTHS,
        "runs": YARDSTICK_RUNS,
        "engine_cpu_seconds": round(engine_cpu, 3),
        "engine_cpu_seconds_all": [round(c, 3) for c, _ in engine_runs],
        "yardstick_cpu_seconds": round(yard_cpu, 3),
        "yardstick_cpu_seconds_all": [round(c, 3) for c, _ in yardstick_runs],
        "yardstick_wall_seconds": round(yard_wall, 3),
        "cpu_ratio": round(engine_cpu / yard_cpu, 2),
        "cpu_ratio_pairs": pair_ratios,
        "cpu_ratio_pairs_median": statistics.median(pair_ratios),
        "wall_ratio": round(engine_wall / yard_wall, 2),
    }


WORKLOADS = {
    "engine-month": engine_month,
    "engine-vs-reference": engine_vs_reference,
    "engine-vs-yardstick": engine_vs_yardstick,
}
