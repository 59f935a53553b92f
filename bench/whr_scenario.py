"""A `system: whr` scenario on the demo's world, month by month as its chain rates it.

Time, the gap of the stored history to a converged fit with and without full sweeps, and each December list against the
true strengths.

`python -m bench.whr_scenario` (the demo: scale small, 120 months): the generator's world in memory (same seed,
same games as `ratings generate --scale small`), its classical played games, seed list as the chain's; WHR through
`WholeHistory` with the scenario's full-sweep schedule (`WhrScenarioParams.full_sweep_after`), and, for the truth
comparison, the shipped `glicko2` and `stephenson` scenarios through `rate_system_period` from the same seed list.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import polars as pl

from pipeline.analytics.truth import rating_error_vs_truth
from pipeline.generator import simulate
from pipeline.generator.frames import games_frame
from pipeline.scenarios.model import Scenario, load_scenarios
from pipeline.scenarios.system_step import seed_state
from pipeline.systems import rate_system_period
from pipeline.whole_history.system import WhrScenarioParams
from pipeline.whole_history.whr import ELO_PER_NAT, WholeHistory


def truth_row(rating_list: pl.DataFrame, strengths: pl.DataFrame, label: str) -> dict:
    row = rating_error_vs_truth(rating_list, strengths.with_columns(month=pl.lit(label)), label).row(0, named=True)
    return {k: row[k] for k in ("players", "pair_error_mean", "pair_error_rms", "slope") if k in row}


def run(scale: str, variants: dict[str, dict], others: list[str], fit_sweeps: int) -> dict:
    world = simulate(scale=scale)
    pop = world.population
    seeds = pl.DataFrame({"player_id": pop.player_id, "rating": pop.seed_rating.astype(np.float64)}).filter(
        pl.col("rating") > 0
    )
    months: list[tuple[str, int, pl.DataFrame, pl.DataFrame]] = []
    for block in world.blocks():
        games = games_frame(pop, block.schedule, block.table, world.first).filter(
            pl.col("played") & (pl.col("time_control") == "classical")
        )
        parts = games.select("month", "white_id", "black_id", "white_score").partition_by("month", as_dict=True)
        for m in block.months:
            alive = ~np.isnan(pop.strength[:, m])
            strengths = pl.DataFrame(
                {"player_id": pop.player_id[alive], "strength": pop.strength[alive, m].astype(np.float64)}
            )
            part = parts.get((m,))
            empty = pl.DataFrame(schema={"white_id": pl.Int64, "black_id": pl.Int64, "white_score": pl.Float64})
            months.append(
                (world.labels[m], world.first + m, part.drop("month") if part is not None else empty, strengths)
            )
    print(f"  simulated {len(months)} months, {sum(g.height for _, _, g, _ in months):,} games", file=sys.stderr)
    report: dict = {"scale": scale, "months": len(months), "games": sum(g.height for _, _, g, _ in months)}
    converged: np.ndarray | None = None
    for name, settings in variants.items():
        params = WhrScenarioParams(**settings)
        history = WholeHistory(params)
        history.seeds = seeds
        seconds = full_seconds = 0.0
        truth = {}
        for label, index, games, strengths in months:
            t0 = time.perf_counter()
            history.add_month(index, games)
            full = params.full_sweep_after(index)
            if full is not None:
                t1 = time.perf_counter()
                history.fit(max_sweeps=full or None)
                full_seconds += time.perf_counter() - t1
            listed = history.list_at(index)
            seconds += time.perf_counter() - t0
            if label.endswith("-12"):
                truth[label] = truth_row(listed, strengths, label)
        stored = history.r[: history.n_nodes].copy()
        t2 = time.perf_counter()
        sweeps = history.fit(max_sweeps=fit_sweeps)
        fit_seconds = time.perf_counter() - t2
        if converged is None:
            converged = history.r[: history.n_nodes].copy()
        gap = np.abs(stored - converged) * ELO_PER_NAT
        label, index, _, strengths = months[-1]
        report[name] = {
            "params": settings,
            "seconds": round(seconds, 1),
            "full_sweep_seconds": round(full_seconds, 1),
            "player_months": history.n_nodes,
            "gap_to_converged_elo": {
                "p50": round(float(np.quantile(gap, 0.5)), 2),
                "p90": round(float(np.quantile(gap, 0.9)), 2),
                "p99": round(float(np.quantile(gap, 0.99)), 2),
                "max": round(float(gap.max()), 2),
            },
            "final_fit": {"sweeps": sweeps, "seconds": round(fit_seconds, 1)},
            "truth_as_it_stood": truth,
            "truth_converged_last": truth_row(history.list_at(index), strengths, label),
        }
        print(f"  {name}: {json.dumps(report[name])}", file=sys.stderr, flush=True)
    shipped = load_scenarios()
    for name in others:
        scenario: Scenario = shipped[name]
        rules = scenario.system_rules()
        state = seed_state(scenario, seeds, months[0][0])
        truth = {}
        t0 = time.perf_counter()
        for label, index, games, strengths in months:
            state = rate_system_period(rules.system, state, games, rules.params, index).state
            if label.endswith("-12"):
                truth[label] = truth_row(state, strengths, label)
        report[name] = {"seconds": round(time.perf_counter() - t0, 1), "truth": truth}
        print(f"  {name}: {json.dumps(report[name])}", file=sys.stderr, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small")
    parser.add_argument("--fit-sweeps", type=int, default=1000, help="the converged fit's most sweeps")
    parser.add_argument("--full-sweeps", type=int, default=0, help="the yearly variant's sweeps (0: a fit)")
    parser.add_argument("--others", default="glicko2,stephenson", help="shipped system scenarios to compare")
    args = parser.parse_args(argv)
    base = {"w2": 10.0, "virtual_draws": 5.0, "sweeps": 3}
    variants = {
        "whr_yearly": {**base, "full_sweeps_every": 12, "full_sweeps": args.full_sweeps},
        "whr_monthly": base,
    }
    others = [o for o in args.others.split(",") if o]
    print(json.dumps(run(args.scale, variants, others, args.fit_sweeps), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
