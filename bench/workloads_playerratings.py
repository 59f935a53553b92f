"""Engine workload: engine-vs-yardstick's 24 months of games through the engine and through PlayerRatings' fide()."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from bench.workloads_engine import FIDE_GAMES, FIDE_PLAYERS, YARDSTICK_MONTHS, chain_months, engine_chain
from pipeline.rules.model import load_rules

ENGINE_RUNS, PLAYERRATINGS_RUNS = 3, 3
# fide() rates a player missing from `status` from `init` (its default 2200 is far above this population);
# 1800 is fide-2024's hypothetical opponents' rating for a first rating. K as fide-2024's 10/20/40 (kfide's
# default kv is the pre-2014 10/15/30).
PLAYERRATINGS_INIT, PLAYERRATINGS_KV = 1800, (10, 20, 40)
RLIB_ENV = "RATINGS_BENCH_RLIB"
HOW_TO = (
    "install R (apt-get install -y --no-install-recommends r-base-core r-base-dev) and PlayerRatings from its"
    f" sources (R CMD INSTALL -l DIR PlayerRatings-src, e.g. github.com/cran/PlayerRatings), then set {RLIB_ENV}=DIR"
    " (default: R's own library paths)"
)

# Reads the games and the starting list written by `_write_inputs`, runs fide() over all the periods in one
# call `runs` times (CPU of the call alone, by proc.time()), writes the final ratings of the last run.
R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]; lib <- args[2]; runs <- as.integer(args[3]); months <- as.integer(args[4])
games <- as.integer(args[5]); listed <- as.integer(args[6]); init <- as.numeric(args[7])
kv <- as.numeric(strsplit(args[8], ",")[[1]])
lib.loc <- if (nzchar(lib)) c(lib, .libPaths()) else NULL
suppressPackageStartupMessages(library(PlayerRatings, lib.loc = lib.loc))
ints <- function(name, n) {
  con <- file(file.path(dir, name), "rb"); on.exit(close(con))
  readBin(con, "integer", n, size = 4L, endian = "little")
}
n <- months * games
x <- data.frame(Month = rep(seq_len(months), each = games), White = ints("white.bin", n),
                Black = ints("black.bin", n), Score = ints("score.bin", n) / 100)
rating <- ints("rating.bin", listed)
status <- data.frame(Player = ints("player.bin", listed), Rating = as.numeric(rating),
                     Games = as.numeric(ints("games.bin", listed)), Elite = as.numeric(rating >= 2400))
cpu <- numeric(runs)
for (i in seq_len(runs)) {
  fit <- NULL
  invisible(gc())
  t0 <- proc.time()
  fit <- fide(x, status = status, init = init, kfac = kfide, kv = kv, sort = FALSE)
  t <- proc.time() - t0
  cpu[i] <- t[["user.self"]] + t[["sys.self"]]
}
con <- file(file.path(dir, "final_player.bin"), "wb")
writeBin(as.integer(fit$ratings$Player), con, size = 4L, endian = "little"); close(con)
con <- file(file.path(dir, "final_rating.bin"), "wb")
writeBin(as.double(fit$ratings$Rating), con, size = 8L, endian = "little"); close(con)
cat("r_version", paste(R.version$major, R.version$minor, sep = "."), "\n")
cat("playerratings_version", packageDescription("PlayerRatings", lib.loc = lib.loc)$Version, "\n")
cat("cpu", cpu, "\n")
"""


def _find_r() -> tuple[str | None, str, str | None]:
    """(Rscript, library folder or "", why not) for R with PlayerRatings installed."""
    rscript = shutil.which("Rscript")
    lib = os.environ.get(RLIB_ENV, "")
    if rscript is None:
        return None, lib, f"Rscript is not on PATH: {HOW_TO}"
    check = subprocess.run(
        [
            rscript,
            "-e",
            "lib <- commandArgs(TRUE)[1]; cat(requireNamespace('PlayerRatings', "
            "lib.loc = if (nzchar(lib)) c(lib, .libPaths()) else NULL, quietly = TRUE))",
            lib,
        ],
        capture_output=True,
        text=True,
    )
    if check.stdout.strip() != "TRUE":
        where = lib or "R's library paths"
        return None, lib, f"the R package PlayerRatings is not installed in {where}: {HOW_TO}"
    return rscript, lib, None


def _write_inputs(
    folder: Path, full_list: pl.DataFrame, pairings: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> int:
    """The games (player ids, white's score in hundredths) and the rated players of the starting list as raw
    little-endian int32 files; returns the number of rated players (fide()'s `status`; the unrated are left out,
    so fide() starts them from `init`).
    """
    ids = full_list["player_id"].to_numpy()
    for name, column in (("white", 0), ("black", 1), ("score", 2)):
        values = np.concatenate([p[column] for p in pairings])
        (ids[values] if column < 2 else values).astype("<i4").tofile(folder / f"{name}.bin")
    rated = full_list.filter(pl.col("rating").is_not_null())
    rated["player_id"].to_numpy().astype("<i4").tofile(folder / "player.bin")
    rated["rating"].to_numpy().astype("<i4").tofile(folder / "rating.bin")
    rated["games_total"].fill_null(30).to_numpy().astype("<i4").tofile(folder / "games.bin")
    return rated.height


def engine_vs_playerratings() -> dict:
    """engine-vs-yardstick's list and 24 months of games (500,000 players, 200,000 games a month) through the
    engine (fide-2024, month by month) and through PlayerRatings' fide() in R (all 24 periods in one call).

    CPU (user + system) of the rating work only: for the engine the rate_period calls (best of ENGINE_RUNS
    chains), for R the fide() call (proc.time() around it, best of PLAYERRATINGS_RUNS in one R process);
    building the games and reading them into R are excluded. mean_abs_difference compares the final ratings
    of the players rated at the start (the rules differ: no floor, 400-point rule, rounding, K x n cap, junior K
    or first-rating pool in fide(); unrated players start at PLAYERRATINGS_INIT there), and of those rated at
    or above fide-2024's floor at the start.
    """
    rscript, lib, why = _find_r()
    if rscript is None:
        return {"skipped": why}
    full_list, pairings, months, month_frames = chain_months()
    rules = load_rules("fide-2024")
    engine_cpus = []
    for _ in range(ENGINE_RUNS):
        cpu, _wall, engine_final = engine_chain(full_list, months, month_frames, rules)
        engine_cpus.append(cpu)

    with tempfile.TemporaryDirectory(prefix="bench-playerratings-") as tmp:
        folder = Path(tmp)
        listed = _write_inputs(folder, full_list, pairings)
        script = folder / "fide.R"
        script.write_text(R_SCRIPT)
        args = [str(folder), lib, PLAYERRATINGS_RUNS, YARDSTICK_MONTHS, FIDE_GAMES, listed, PLAYERRATINGS_INIT]
        args.append(",".join(str(k) for k in PLAYERRATINGS_KV))
        run = subprocess.run([rscript, str(script), *map(str, args)], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"Rscript failed: {run.stderr.strip()[-2000:]}")
        report = {line.split()[0]: line.split()[1:] for line in run.stdout.splitlines() if line.strip()}
        r_final = pl.DataFrame(
            {
                "player_id": np.fromfile(folder / "final_player.bin", dtype="<i4").astype(np.int64),
                "r_rating": np.fromfile(folder / "final_rating.bin", dtype="<f8"),
            }
        )
    r_cpus = [float(c) for c in report["cpu"]]

    start_rated = full_list.filter(pl.col("rating").is_not_null()).select("player_id", start="rating")
    compared = (
        start_rated.join(engine_final.select("player_id", "rating"), on="player_id")
        .join(r_final, on="player_id")
        .filter(pl.col("rating").is_not_null())
    )
    from_floor = compared.filter(pl.col("start") >= (rules.floor or 0))
    engine_cpu, r_cpu = min(engine_cpus), min(r_cpus)
    return {
        "seconds": round(engine_cpu, 3),
        "items": FIDE_GAMES * YARDSTICK_MONTHS,
        "unit": "games",
        "months": YARDSTICK_MONTHS,
        "players": FIDE_PLAYERS,
        "engine_cpu_seconds": round(engine_cpu, 3),
        "engine_cpu_seconds_all": [round(c, 3) for c in engine_cpus],
        "playerratings_cpu_seconds": round(r_cpu, 3),
        "playerratings_cpu_seconds_all": [round(c, 3) for c in r_cpus],
        "playerratings_ratio": round(r_cpu / engine_cpu, 1),
        "r_version": report["r_version"][0],
        "playerratings_version": report["playerratings_version"][0],
        "compared_players": compared.height,
        "mean_abs_difference": round(float((compared["rating"] - compared["r_rating"]).abs().mean()), 2),
        "correlation": round(float(compared.select(pl.corr("rating", "r_rating")).item()), 4),
        # fide-2024 delists a rating below its floor (1400): those players come back with a first rating.
        "compared_players_from_floor": from_floor.height,
        "mean_abs_difference_from_floor": round(float((from_floor["rating"] - from_floor["r_rating"]).abs().mean()), 2),
        "engine_mean_abs_change": round(float((compared["rating"] - compared["start"]).abs().mean()), 2),
        "playerratings_mean_abs_change": round(float((compared["r_rating"] - compared["start"]).abs().mean()), 2),
    }


WORKLOADS = {"engine-vs-playerratings": engine_vs_playerratings}
