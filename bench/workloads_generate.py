"""Generator workloads: the synthetic federation at FIDE scale written to a temporary directory."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from bench.measure import timed
from pipeline.generator import generate


def generate_fide(scale: str = "fide") -> dict:
    """`generate(scale="fide")`: ~900,000 players, 2008-01..2024-12, all dumps, registry and truth."""
    root = Path(tempfile.mkdtemp(prefix="bench-generate-"))
    try:
        summary, seconds = timed(lambda: generate(str(root), scale=scale))
        disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "seconds": round(seconds, 2),
        "items": summary.games,
        "unit": "games",
        "players": summary.players,
        "classical_games": summary.classical_games,
        "events": summary.events,
        "files": summary.files,
        "disk_mb": round(disk / 1e6, 1),
    }


WORKLOADS = {"generate-fide": generate_fide}
