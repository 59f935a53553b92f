"""Who a player is across months: a local id's name given an id later, an unregistered id rated for months.

A name rated under a local id before a registry folder gives it an id; an unregistered id the chain has rated before the
registry holds its name under another id.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

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


def test_an_id_rated_before_the_registry_gives_its_name_to_another_id_is_no_mistyped_id(tmp_path: Path) -> None:
    # Larry plays as the unregistered 13 from February, by name in one file and without it in another; April's
    # registry registers 'Late, Larry' as 21. 14 first plays in April, beside the name April registers as 22.
    files = {
        "raw/players/2023-01/players.csv": HEADER + '1,"One, Olga",NOR\n2,"Two, Tom",NOR\n',
        "raw/players/2023-04/players.csv": HEADER + '21,"Late, Larry",NOR\n22,"Other, Otto",NOR\n',
    }
    months = month_range("2023-02", "2023-04")
    for month in months:
        files[f"raw/NOR/{month}/named.csv"] = GAMES + f'named {month},1,13,"Late, Larry",1,,1-0\n'
        files[f"raw/NOR/{month}/bare.csv"] = GAMES + f"bare {month},1,13,,2,,0-1\n"
    files["raw/NOR/2023-04/named.csv"] += 'named 2023-04,2,14,"Other, Otto",2,,1-0\n'
    files["raw/NOR/2023-04/bare.csv"] += "bare 2023-04,2,1,,14,,1-0\n"
    # A run of the three months, and a run of April alone after February and March were stored: alike.
    whole = _validated(_store(tmp_path / "whole", files), months)["2023-04"]
    store = _store(tmp_path / "from-april", files)
    _validated(store, months[:2])
    split = MonthValidator(store, ["2023-04"])("2023-04", read_month(store, "2023-04"))
    assert split.identities.equals(whole)
    larry = split.games.filter((pl.col("white_id") == 13) | (pl.col("black_id") == 13))
    assert larry.height == 2  # both files' games, named or not, are rated under 13 as before
    identities = split.identities.filter(pl.col("given_id") == 13)
    assert identities["status"].unique().to_list() == ["new"]
    # 14 has no history: each of its records is quarantined as a mistyped id, the one without a name too.
    quarantined = split.quarantine.filter(pl.col("reason") == "unknown_player").sort("source_file")
    assert quarantined["source_file"].to_list() == ["NOR/2023-04/bare.csv", "NOR/2023-04/named.csv"]
    assert all("id 14 is not registered, and 'Other, Otto' is registered as 22" in d for d in quarantined["detail"])
    assert "another record of the month writes the id beside that name" in quarantined["detail"][0]
    assert split.games.filter((pl.col("white_id") == 14) | (pl.col("black_id") == 14)).is_empty()
    # 13 keeps its history, and the run's summary says whose name its records write: the months, both ids, what to do.
    assert identities["registered_as"].to_list() == [21] * identities.height
    stored = store.read_parquet(table_key(["identity"], "2023-02"))
    store.write_parquet(stored.drop("registered_as"), table_key(["identity"], "2023-02"))  # as an older run stored it
    store.write_parquet(split.identities, table_key(["identity"], "2023-04"))
    [line] = run_outcome(store, ["2023-04"], [])["names_registered_elsewhere"]
    assert "id 13 is not registered, and its records of 2023-04 write 'Late, Larry'" in line
    assert "registers as 21: they are rated as 13, whose games since 2023-02" in line
    assert (
        "write 21 in the dumps instead of 13 and run again from 2023-02" in line
        and "register it in raw/players/2023-02/" in line
    )
    assert run_outcome(store, ["2023-02", "2023-03"], [])["names_registered_elsewhere"] == []


@pytest.mark.parametrize("rated_before", [False, True])
def test_an_unregistered_id_copied_onto_a_registered_player_s_line_quarantines_that_line_alone(
    tmp_path: Path, rated_before: bool
) -> None:
    # Doe plays under the unregistered 2000002 in b.csv; a.csv's arbiter copied her id onto Smith's line (registered as
    # 1000001). Whether or not an earlier month rated 2000002, only Smith's line is the mistyped id.
    files = {"raw/players/2023-01/players.csv": HEADER + '1000001,"Smith, John",GER\n5,"Five, F",GER\n6,"Six, S",GER\n'}
    files["raw/GER/2023-02/a.csv"] = GAMES + 'a,1,2000002,"Smith, John",5,,1-0\n'
    files["raw/GER/2023-02/b.csv"] = GAMES + 'b,1,2000002,"Doe, Jane",6,,0-1\nb,2,5,,2000002,"Doe, Jane",1/2-1/2\n'
    if rated_before:
        files["raw/GER/2023-01/c.csv"] = GAMES + 'c,1,2000002,"Doe, Jane",6,,1-0\n'
    store = _store(tmp_path, files)
    if rated_before:
        _validated(store, ["2023-01"])
    split = MonthValidator(store, ["2023-02"])("2023-02", read_month(store, "2023-02"))
    doe = split.games.filter((pl.col("white_id") == 2000002) | (pl.col("black_id") == 2000002))
    assert doe["source_file"].to_list() == ["GER/2023-02/b.csv"] * 2
    [detail] = split.quarantine.filter(pl.col("reason") == "unknown_player")["detail"].to_list()
    assert split.quarantine["source_file"].to_list() == ["GER/2023-02/a.csv"]
    assert detail == "white id 2000002 is not registered, and 'Smith, John' is registered as 1000001 (a mistyped id?)"
    statuses = dict(split.identities.select("name", "status").iter_rows())
    assert statuses == {"Smith, John": "id_mismatch", "Doe, Jane": "new"}
    store.write_parquet(split.identities, table_key(["identity"], "2023-02"))
    assert run_outcome(store, ["2023-02"], [])["names_registered_elsewhere"] == []


def test_a_renumbered_id_makes_its_name_ambiguous_until_the_old_id_is_listed_under_another_name(
    tmp_path: Path,
) -> None:
    # What docs/federation-files.md's "Renumbered ids" promises: ids are not merged, the old id stays registered, and
    # listing it again under a name that tells it apart gives the name to the new id alone.
    files = {
        "raw/players/2023-01/players.csv": HEADER + '1,"One, Olga",NOR\n12,"Eleven, Paul",GER\n',
        "raw/players/2023-04/players.csv": HEADER + '30,"Eleven, Paul",GER\n',
        "raw/NOR/2023-05/extra.csv": GAMES + 'extra,1,,"Eleven, Paul",1,,1-0\n',
    }
    store = _store(tmp_path / "as-is", files)
    as_is = MonthValidator(store, ["2023-05"])("2023-05", read_month(store, "2023-05"))
    assert as_is.games.is_empty() and as_is.quarantine["detail"].to_list() == [
        "white has no id and name 'Eleven, Paul' matches 2 players"
    ]
    files["raw/players/2023-04/players.csv"] += '12,"Eleven, Paul (renumbered 30)",GER\n'
    store = _store(tmp_path / "renamed", files)
    renamed = MonthValidator(store, ["2023-05"])("2023-05", read_month(store, "2023-05"))
    assert renamed.games["white_id"].to_list() == [30]
