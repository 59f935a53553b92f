"""Whole-History Rating at scale: the generator's world (in memory) added month by month, warm-started, timed.

`python -m bench.whr_scale --scale fide` (or small, medium): every month's classical played games go through
`WholeHistory.add_month` with `--sweeps` Newton sweeps over the month's players; prints per-year seconds, the
history's size, the peak RSS, the seconds of one full sweep over everybody at the end, and (with --fit N) the
largest move of a rating after N more full sweeps (how far the incremental estimate was from converged).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np
import polars as pl

from pipeline.generator import simulate
from pipeline.generator.frames import games_frame
from pipeline.whole_history.whr import ELO_PER_NAT, WholeHistory, WhrParams


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(scale: str, sweeps: int, w2: float, virtual_draws: float, fit: int) -> dict:
    started = time.perf_counter()
    world = simulate(scale=scale)
    params = WhrParams(init_rating=1500.0, w2=w2, virtual_draws=virtual_draws, sweeps=sweeps)
    history = WholeHistory(params)
    simulate_seconds = 0.0
    rate_seconds = 0.0
    years: dict[str, float] = {}
    for block in world.blocks():
        t0 = time.perf_counter()
        games = games_frame(world.population, block.schedule, block.table, world.first).filter(
            pl.col("played") & (pl.col("time_control") == "classical")
        )
        parts = games.select("month", "white_id", "black_id", "white_score").partition_by("month", as_dict=True)
        simulate_seconds += time.perf_counter() - t0
        for m in block.months:
            part = parts.get((m,))
            if part is None:
                continue
            t1 = time.perf_counter()
            history.add_month(world.first + m, part.drop("month"))
            spent = time.perf_counter() - t1
            rate_seconds += spent
            label = world.labels[m][:4]
            years[label] = years.get(label, 0.0) + spent
        print(
            f"  {world.labels[block.months[-1]]}: {history.n_games:,} games, {history.n_nodes:,} player-months, "
            f"rating {rate_seconds:.0f} s, peak RSS {peak_rss_mb():,.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    selection = history._select(None)
    t2 = time.perf_counter()
    before = history.r[: history.n_nodes].copy()
    history._sweep(selection)
    full_sweep = time.perf_counter() - t2
    moved = None
    if fit:
        for _ in range(fit - 1):
            history._sweep(selection)
        moved = float(np.abs(history.r[: history.n_nodes] - before).max() * ELO_PER_NAT)
        moved_p99 = float(np.quantile(np.abs(history.r[: history.n_nodes] - before), 0.99) * ELO_PER_NAT)
    t3 = time.perf_counter()
    final_list = history.list_at(world.first + world.months - 1)
    list_seconds = time.perf_counter() - t3
    return {
        "scale": scale,
        "params": params.model_dump(),
        "months": world.months,
        "games": history.n_games,
        "player_months": history.n_nodes,
        "players": history.players.height,
        "listed_at_end": final_list.height,
        "simulate_seconds": round(simulate_seconds, 1),
        "incremental_seconds": round(rate_seconds, 1),
        "seconds_per_year": {y: round(s, 1) for y, s in years.items()},
        "full_sweep_seconds": round(full_sweep, 2),
        "list_at_seconds": round(list_seconds, 2),
        "extra_full_sweeps": fit,
        "max_move_after_extra_sweeps_elo": moved,
        "p99_move_after_extra_sweeps_elo": moved_p99 if fit else None,
        "peak_rss_mb": round(peak_rss_mb()),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small")
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--w2", type=float, default=WhrParams().w2)
    parser.add_argument("--virtual-draws", type=float, default=WhrParams().virtual_draws)
    parser.add_argument("--fit", type=int, default=0, help="full sweeps after the last month, to measure the gap")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.scale, args.sweeps, args.w2, args.virtual_draws, args.fit), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
