"""The asset graph (keys, groups, dependencies, checks) against a committed snapshot: lineage changes are deliberate."""

import json
import os
from pathlib import Path

from tests.graph import graph_of

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.json"


def test_asset_graph_matches_the_committed_snapshot():
    from assets.definitions import build_defs

    current = graph_of(build_defs("2015-01", "2024-12"))
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=2) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected, (
        "The asset graph changed. If that is deliberate, regenerate the snapshot with "
        "UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_graph_snapshot.py and commit it."
    )
