"""Replays the synthetic federation under FIDE 2014 rules and under the 2017 reform, reporting deflation per year.

The replay runs through the rating engine.

    python -m pipeline.generator.experiment --scale medium --json medium.json   # ~40 s; fide: ~7 min

Simulates the world of `generate` in memory (no files), then rates every month with
`pipeline.engine.period.rate_period` under each scenario, from the generator's seed list:

- `fide-2014`: FIDE's 2014-era rules throughout (K 40/20/10, floor 1000, plus-score initial ratings);
- `reformed-2017`: the same until 2016-12; period 2017-01 is rated under them and its list then
  compressed (+0.4 x (2000 - R) below 2000); from 2017-02 the 2024 rules (floor 1400, initial
  rating with two hypothetical draws against 1800).

Only classical games are rated (both rule sets give rapid and blitz weight 0), and the games are
the clean ones validation would keep (no forfeits, typos, duplicates). Reported per calendar year:
the favourite's actual minus expected score over rated games (expected from the rule set's
table, incl. the 400-point rule), the same for 1400-1599 underdogs against 2000-2199 favourites,
and from each December list the error against the true strengths (`pipeline.analytics.truth`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipeline.analytics.truth import rating_error_vs_truth
from pipeline.engine.period import compress, normalize_list, rate_period
from pipeline.generator import config, simulate
from pipeline.generator.frames import engine_games, games_frame
from pipeline.rules.model import RuleSet, load_rules

TRUTH_BANDS = ("1200-1299", "1600-1699", "2000-2099", "2400-2499")


@dataclass(frozen=True)
class Scenario:
    """Rules before and after an optional reform month (rated under the old rules, then compressed)."""

    before: str
    after: str
    reform_month: str | None = None


SCENARIOS = {
    "fide-2014": Scenario("fide-2014", "fide-2014"),
    "reformed-2017": Scenario("fide-2014", "fide-2024", "2017-01"),
}


def favourite_stats(rated_games: pl.DataFrame, year: str, strengths: pl.DataFrame) -> pl.DataFrame:
    """Per-month sums for the yearly tables: favourites overall, 1400-1599 underdogs vs 2000-2199, and the
    truth behind them: (R_fav - R_dog) - (S_fav - S_dog) over the same games (strengths: player_id, strength).
    """
    rated = rated_games.filter(
        pl.col("white_expected").is_not_null()
        & pl.col("black_expected").is_not_null()
        & (pl.col("white_rating_used") != pl.col("black_rating_used"))
    )
    white_favourite = pl.col("white_rating_used") > pl.col("black_rating_used")
    rated = rated.join(
        strengths.rename({"player_id": "white_id", "strength": "white_strength"}), on="white_id", how="left"
    ).join(strengths.rename({"player_id": "black_id", "strength": "black_strength"}), on="black_id", how="left")
    rating_gap = (pl.col("white_rating_used") - pl.col("black_rating_used")).abs()
    strength_gap = (
        pl.when(white_favourite)
        .then(pl.col("white_strength") - pl.col("black_strength"))
        .otherwise(pl.col("black_strength") - pl.col("white_strength"))
    )
    with_sides = rated.with_columns(
        gap_error=rating_gap - strength_gap,
        favourite_score=pl.when(white_favourite).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")),
        favourite_expected=pl.when(white_favourite).then(pl.col("white_expected")).otherwise(pl.col("black_expected")),
        underdog_rating=pl.min_horizontal("white_rating_used", "black_rating_used"),
        favourite_rating=pl.max_horizontal("white_rating_used", "black_rating_used"),
    )
    band_game = pl.col("underdog_rating").is_between(1400, 1599) & pl.col("favourite_rating").is_between(2000, 2199)
    return with_sides.select(
        pl.lit(year).alias("year"),
        pl.len().alias("games"),
        pl.col("favourite_score").sum().alias("score"),
        pl.col("favourite_expected").sum().alias("expected"),
        pl.col("gap_error").sum().alias("gap_error"),
        band_game.sum().alias("band_games"),
        (1.0 - pl.col("favourite_score")).filter(band_game).sum().alias("band_score"),
        (1.0 - pl.col("favourite_expected")).filter(band_game).sum().alias("band_expected"),
    )


def run(
    seed: int | None = None,
    players: int | None = None,
    start: str | None = None,
    end: str | None = None,
    scale: str = "medium",
    scenarios: dict[str, Scenario] | None = None,
    progress=sys.stderr,
) -> dict:
    """Simulate and rate every month under each scenario; returns the per-year tables as plain data."""
    scenarios = scenarios or SCENARIOS
    started = time.perf_counter()
    world = simulate(seed, players, start, end, scale=scale)
    pop = world.population
    rules_cache: dict[str, RuleSet] = {}
    birth_years = pl.DataFrame({"player_id": pop.player_id, "birth_year": pop.birth_year})
    seed_frame = pl.DataFrame(
        {
            "player_id": pop.player_id,
            "rating": pop.seed_rating,
            "games_total": pop.seed_games_total,
            "birth_year": pop.birth_year,
            "ever_2400": pop.seed_ever_2400,
        }
    ).filter(pl.col("rating") > 0)
    lists = {name: normalize_list(seed_frame) for name in scenarios}
    sums: dict[str, list[pl.DataFrame]] = {name: [] for name in scenarios}
    truth_rows: dict[str, list[dict]] = {name: [] for name in scenarios}
    volume: list[dict] = []

    for block in world.blocks():
        games = engine_games(games_frame(pop, block.schedule, block.table, world.first), block.schedule.event_id)
        by_month = games.filter(pl.col("time_control") == "classical").partition_by(
            "month", as_dict=True, include_key=False
        )
        for m in block.months:
            label = world.labels[m]
            month_games = by_month.get((m,), games.clear().drop("month"))
            alive = ~np.isnan(pop.strength[:, m])
            strengths = pl.DataFrame(
                {"player_id": pop.player_id[alive], "strength": pop.strength[alive, m].astype(np.float64)}
            )
            volume.append({"month": label, "games": month_games.height, "existing": int(pop.exists(m).sum())})
            for name, scenario in scenarios.items():
                reformed = scenario.reform_month is not None and label > scenario.reform_month
                rules_name = scenario.after if reformed else scenario.before
                rules = rules_cache.setdefault(rules_name, load_rules(rules_name))
                result = rate_period(lists[name], month_games, rules, label, players=birth_years)
                lists[name] = compress(result.rating_list) if label == scenario.reform_month else result.rating_list
                sums[name].append(favourite_stats(result.rated_games, label[:4], strengths))
                if label.endswith("-12") or m == world.months - 1:
                    truth_rows[name].append(
                        _truth_summary(lists[name], strengths.with_columns(month=pl.lit(label)), label)
                    )
        if progress is not None:
            print(
                f"  rated {world.labels[block.months[-1]]} ({time.perf_counter() - started:.0f} s)",
                file=progress,
                flush=True,
            )

    yearly = {name: _yearly(pl.concat(frames)) for name, frames in sums.items()}
    games_per_year = (
        pl.DataFrame(volume)
        .group_by(pl.col("month").str.slice(0, 4).alias("year"), maintain_order=True)
        .agg(pl.col("games").sum(), pl.col("existing").last())
    )  # existing players in December
    return {
        "arguments": {"seed": world.seed, "players": pop.size, "start": world.start, "end": world.end, "scale": scale},
        "seconds": round(time.perf_counter() - started, 1),
        "classical_games_per_year": games_per_year.to_dicts(),
        "favourites": {name: table.to_dicts() for name, table in yearly.items()},
        "truth": truth_rows,
    }


def _yearly(sums: pl.DataFrame) -> pl.DataFrame:
    return (
        sums.group_by("year")
        .agg(pl.all().sum())
        .sort("year")
        .select(
            "year",
            "games",
            (100 * pl.col("score") / pl.col("games")).round(2).alias("favourite_score_pct"),
            (100 * pl.col("expected") / pl.col("games")).round(2).alias("favourite_expected_pct"),
            (100 * (pl.col("score") - pl.col("expected")) / pl.col("games")).round(2).alias("favourite_difference_pct"),
            (pl.col("gap_error") / pl.col("games")).round(1).alias("gap_error"),
            "band_games",
            (100 * (pl.col("band_score") - pl.col("band_expected")) / pl.col("band_games"))
            .round(2)
            .alias("band_underdog_difference_pct"),
        )
    )


def _truth_summary(rating_list: pl.DataFrame, truth: pl.DataFrame, label: str) -> dict:
    errors = rating_error_vs_truth(rating_list, truth, label)
    overall = errors.filter(pl.col("band") == "all").row(0, named=True)
    # Active players only (a game in the last 12 months): the part of the list that games can correct.
    active = rating_error_vs_truth(rating_list.filter(~pl.col("inactive")), truth, label).row(0, named=True)
    bands = {
        row["band"]: row["pair_error_mean"]
        for row in errors.filter(pl.col("band").is_in(TRUTH_BANDS)).iter_rows(named=True)
    }
    return {
        "month": label,
        "rated_players": int(rating_list["rating"].is_not_null().sum()),
        "pair_error_mean": round(overall["pair_error_mean"], 1),
        "pair_error_rms": round(overall["pair_error_rms"], 1),
        "active_pair_error_mean": round(active["pair_error_mean"], 1),
        "slope": round(overall["slope"], 3),
        **{f"band_{band[:4]}_vs_rest": round(bands[band], 1) if band in bands else None for band in TRUTH_BANDS},
    }


def markdown(report: dict) -> str:
    """The report as Markdown tables (docs/results.md quotes them)."""
    names = list(report["favourites"])
    by_name = {name: {row["year"]: row for row in rows} for name, rows in report["favourites"].items()}
    volume = {row["year"]: row for row in report["classical_games_per_year"]}
    head = ["year", "classical games", "existing players"]
    for name in names:
        head += [
            f"{name}: rated games",
            f"{name}: favourite actual - expected",
            f"{name}: rating gap - strength gap",
            f"{name}: 1400-1599 underdog vs 2000-2199",
        ]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for year in sorted(volume):
        cells = [year, f"{volume[year]['games']:,}", f"{volume[year]['existing']:,}"]
        for name in names:
            row = by_name[name].get(year)
            if row is None:
                cells += ["-"] * 4
                continue
            band = row["band_underdog_difference_pct"]
            cells += [
                f"{row['games']:,}",
                f"{row['favourite_difference_pct']:+.2f} %",
                f"{row['gap_error']:+.1f}",
                f"{band:+.1f} % ({row['band_games']:,})" if band is not None else "-",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "December lists against the truth (`pipeline.analytics.truth.rating_error_vs_truth`; Elo points):",
        "",
    ]
    head = [
        "month",
        "rated players",
        "pair error",
        "pair RMS",
        "slope",
        "pair error (active)",
        *[f"{b} vs rest" for b in TRUTH_BANDS],
    ]
    for name in names:
        lines += [f"**{name}**", "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for row in report["truth"][name]:
            bands = [row[f"band_{b[:4]}_vs_rest"] for b in TRUTH_BANDS]
            values = [
                row["month"],
                f"{row['rated_players']:,}",
                f"{row['pair_error_mean']:+.1f}",
                f"{row['pair_error_rms']:.1f}",
                f"{row['slope']:.3f}",
                f"{row['active_pair_error_mean']:+.1f}",
                *["-" if b is None else f"{b:+.0f}" for b in bands],
            ]
            lines.append("| " + " | ".join(values) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.generator.experiment", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--scale", default="medium", choices=sorted(config.SCALES))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--players", type=int)
    parser.add_argument("--start")
    parser.add_argument("--end")
    parser.add_argument("--json", help="also write the report as JSON here")
    args = parser.parse_args(argv)
    report = run(args.seed, args.players, args.start, args.end, scale=args.scale)
    print(markdown(report))
    print(f"\n{report['arguments']} in {report['seconds']} s", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
