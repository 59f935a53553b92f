"""Who a player is across months: a local id's name given an id later, an unregistered id rated for months.

A name rated under a local id before a registry folder gives it an id; an unregistered id the chain has rated before the
registry holds its name under another id.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.ingest.dumps import read_month
from pipeline.months import month_range
from pipeline.operations.run_plan import closing_lines, run_outcome
from pipeline.store.monthly import table_key
from pipeline.store.object_store import ObjectStore
from pipeline.validate.identity import local_id
from pipeline.validate.split import MonthValidator

HEADER = "player_id,name,federation\n"
GAMES = "event_id,round,white_id,white_name,black_id,black_name,result\n"
NORA = "Nameonly, Nora"


def _store(tmp_path: Path, files: dict[str, str]) -> ObjectStore:
    store = ObjectStore(str(tmp_path))
    for key, text in files.items():
        store.write_text(text, key)
    return store


def _validated(store: ObjectStore, months: list[str]) -> dict[str, pl.DataFrame]:
    """Each month's identity table, validated in order and stored as a run stores it."""
    validate = MonthValidator(store, months)
    identities = {}
    for month in months:
        split = validate(month, read_month(store, month))
        store.write_parquet(split.games, table_key(["games"], month))
        store.write_parquet(split.identities, table_key(["identity"], month))
        identities[month] = split.identities
    return identities


def test_a_name_rated_under_a_local_id_then_given_an_id_is_named_in_the_summary(tmp_path: Path) -> None:
    # Nora plays by name only from February; April's registry registers her as 20.
    files = {
        "raw/players/2023-01/players.csv": HEADER + '1,"One, Olga",NOR\n2,"Two, Tom",NOR\n',
        "raw/players/2023-04/players.csv": HEADER + f'20,"{NORA}",NOR\n',
    }
    months = month_range("2023-02", "2023-05")
    for month in months:
        files[f"raw/NOR/{month}/extra.csv"] = GAMES + f'extra {month},1,,"{NORA}",1,,1-0\nextra {month},2,2,,1,,0-1\n'
    store = _store(tmp_path, files)
    identities = _validated(store, months)
    nora = local_id(pl.Series([NORA])).item()
    assert identities["2023-03"].filter(pl.col("status") == "new_name")["player_id"].to_list() == [nora]
    assert identities["2023-04"].filter(pl.col("status") == "matched_by_name")["player_id"].to_list() == [20]
    # A run of April and May alone still names February's local id: it read the stored months before it.
    outcome = run_outcome(store, ["2023-04", "2023-05"], [])
    [line] = outcome["names_given_ids"]
    assert f"local id {nora} from 2023-02" in line and "from 2023-04 the name's records are rated as 20" in line
    assert "raw/players/2023-02/" in line and "run again from 2023-02" in line
    # A local id that keeps its name, and a month before the local id, name nothing.
    assert run_outcome(store, ["2023-02", "2023-03"], [])["names_given_ids"] == []
    summary = {
        **outcome,
        "store": str(tmp_path),
        "first_month": "2023-04",
        "last_month": "2023-05",
        "months": 2,
        "run_succeeded": True,
        "reconciliation_passed": True,
        "failed_steps": {},
        "rated_players": {},
        "run_id": "r1",
        "run_seconds": 1.0,
        "dagster_home": str(tmp_path / ".dagster"),
    }
    assert f"  WARNING: {line}" in closing_lines(summary, {}, "Run").splitlines()
