"""The landing zone's inventory: nothing under raw/ is ignored without a record.

Nothing outside the store is read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.ingest.dumps import read_month
from pipeline.ingest.landing import (
    DUMP,
    MISPLACED,
    NOT_A_FILE,
    classify,
    inventory,
    lenient_month,
    listing_of_the_run,
    months_held,
    unplaced,
)
from pipeline.store.object_store import ObjectStore
from pipeline.validate.split import split_games
from schemas import Players, empty_frame

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(
    "name, month",
    [
        ("2024-1", "2024-01"),
        ("2024_02", "2024-02"),
        ("2024.3", "2024-03"),
        ("202404", "2024-04"),
        ("Jan2024", "2024-01"),
        ("2024-February", "2024-02"),
        ("march_2024", "2024-03"),
        ("2024-13", None),
        ("notes", None),
        ("Foo2024", None),
    ],
)
def test_unusual_month_folder_names_are_understood(name, month):
    assert lenient_month(name) == month


def test_every_entry_is_placed_or_says_where_it_belongs():
    assert classify("raw/GER/2024-01/open.trf").kind == DUMP
    assert classify("raw/GER/2024-01/sub/open.trf").month == "2024-01"  # below a month folder: that month's
    odd = classify("raw/GER/2024-1/open.trf")
    assert (odd.kind, odd.month) == (MISPLACED, "2024-01") and "move the file to raw/GER/2024-01/" in odd.problem
    loose = classify("raw/GER/open.trf")
    assert (loose.kind, loose.month) == (MISPLACED, None) and "move it to raw/GER/<YYYY-MM>/" in loose.problem
    top = classify("raw/open.trf")
    assert top.month is None and "move it to raw/<FED>/<YYYY-MM>/" in top.problem
    for federation in ("bad fed", "-rf", ".hidden"):
        entry = classify(f"raw/{federation}/2024-01/x.trf")
        assert (entry.kind, entry.month) == (MISPLACED, "2024-01") and "is not a federation code" in entry.problem
    assert classify("raw/players/2024-01/players.csv").kind == "registry"
    assert "move it to raw/players/<YYYY-MM>/" in classify("raw/players/players.csv").problem


def test_misplaced_links_and_special_files_are_quarantined_and_never_followed(tmp_path: Path):
    store_root = tmp_path / "store"
    month = store_root / "raw" / "GER" / "2024-01"
    month.mkdir(parents=True)
    shutil.copyfile(DATA / "tiny.trf", month / "tiny.trf")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(DATA / "games.csv", outside / "secret.csv")
    (month / "link.csv").symlink_to(outside / "secret.csv")  # a file outside the store
    (month / "linked-folder").symlink_to(outside)  # a folder outside the store
    (month / "dangling.pgn").symlink_to(tmp_path / "nothing-here")  # a dangling link
    (month / "zeros.csv").symlink_to("/dev/zero")  # endless bytes
    os.mkfifo(month / "pipe.trf")  # would block a reader for ever
    odd_month = store_root / "raw" / "GER" / "2024_01"
    odd_month.mkdir()
    shutil.copyfile(DATA / "games.csv", odd_month / "late.csv")
    odd_fed = store_root / "raw" / "bad fed" / "2024-01"
    odd_fed.mkdir(parents=True)
    shutil.copyfile(DATA / "games.csv", odd_fed / "x.csv")
    shutil.copyfile(DATA / "games.csv", store_root / "raw" / "GER" / "loose.csv")
    store = ObjectStore(str(store_root))

    entries = inventory(store)
    assert months_held(entries) == ["2024-01"]
    assert [entry.key for entry in unplaced(entries)] == ["raw/GER/loose.csv"]
    raw = read_month(store, "2024-01", entries)
    games, quarantine = split_games(raw, empty_frame(Players), "2024-01")
    assert raw.height == games.height + quarantine.height
    by_file = {
        row["source_file"]: (row["reason"], row["detail"])
        for row in quarantine.iter_rows(named=True)
        if row["reason"] in (MISPLACED, NOT_A_FILE)
    }
    assert by_file == {
        "GER/2024-01/dangling.pgn": (
            NOT_A_FILE,
            "a symbolic link is not read (only regular files are): copy the file itself into the landing zone",
        ),
        "GER/2024-01/link.csv": (
            NOT_A_FILE,
            "a symbolic link is not read (only regular files are): copy the file itself into the landing zone",
        ),
        "GER/2024-01/linked-folder": (
            NOT_A_FILE,
            "a symbolic link is not read (only regular files are): copy the file itself into the landing zone",
        ),
        "GER/2024-01/pipe.trf": (
            NOT_A_FILE,
            "a special file (FIFO, device or socket) is not read (only regular files are):"
            " copy the file itself into the landing zone",
        ),
        "GER/2024-01/zeros.csv": (
            NOT_A_FILE,
            "a symbolic link is not read (only regular files are): copy the file itself into the landing zone",
        ),
        "GER/2024_01/late.csv": (
            MISPLACED,
            "folder '2024_01' is not written YYYY-MM: move the file to raw/GER/2024-01/",
        ),
        "bad fed/2024-01/x.csv": (
            MISPLACED,
            "federation folder 'bad fed' is not a federation code"
            " (a letter or digit first, then letters, digits, . _ = + -): move the file to raw/<FED>/2024-01/",
        ),
    }
    # Nothing from outside the store was read: the only rated games are tiny.trf's.
    assert set(games["source_file"]) == {"GER/2024-01/tiny.trf"}
    assert not raw.filter(pl.col("raw_text").str.contains("league-2024")).height


UNDATED_PGN = (
    '[Event "Club league"]\n[Round "3"]\n[White "Alpha, Anna"]\n[Black "Beta, Bernd"]\n[Result "1-0"]\n'
    '[WhiteFideId "1001"]\n[BlackFideId "1002"]\n\n1. e4 e5 1-0\n\n'
)


def test_an_undated_game_sent_again_in_a_later_month_is_a_duplicate_there(tmp_path: Path):
    """Undated games pass the month check; validation remembers them for a year, in a range run and alone."""
    import dagster as dg

    from assets.automation import range_tags
    from assets.definitions import build_defs
    from pipeline.scenarios.model import Scenario

    for month in ("2024-01", "2024-03"):
        folder = tmp_path / "raw" / "GER" / month
        folder.mkdir(parents=True)
        (folder / f"league-{month}.pgn").write_text(UNDATED_PGN)
    defs = build_defs(
        "2024-01", "2024-03", root=str(tmp_path), scenarios={"plain": Scenario(name="plain", rules="elo-32")}
    )
    validate = [
        a
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition) and {k.to_user_string() for k in a.keys} & {"raw_games", "games"}
    ]
    store = ObjectStore(str(tmp_path))

    def run(**kwargs) -> None:
        assert dg.materialize(validate, resources=defs.resources, **kwargs).success

    run(tags=range_tags("2024-01", "2024-03"))
    march = store.read_parquet("quarantine/2024-03.parquet")
    assert march.select("reason", "detail").rows() == [
        ("duplicate", "same game as 2024-01 GER/2024-01/league-2024-01.pgn:1")
    ]
    assert store.read_parquet("games/2024-01.parquet").height == 1
    assert store.read_parquet("games/2024-03.parquet").height == 0
    before = (tmp_path / "quarantine" / "2024-03.parquet").read_bytes()
    run(partition_key="2024-03")  # alone: January's games are read from the store
    assert (tmp_path / "quarantine" / "2024-03.parquet").read_bytes() == before


def test_a_run_reads_the_listing_it_was_planned_on(tmp_path: Path):
    store = ObjectStore(str(tmp_path))
    for key in ("raw/GER/2024-01/a.pgn", "raw/players/2024-01/players.csv", "raw/stray.txt"):
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text("x")
    planned = inventory(store)
    with listing_of_the_run(store, planned):
        (tmp_path / "raw/GER/2024-01/b.pgn").write_text("added after the plan")
        assert inventory(store) == planned
        assert [entry.key for entry in inventory(store, "players")] == ["raw/players/2024-01/players.csv"]
        assert inventory(ObjectStore(str(tmp_path / "other"))) == []  # another store lists for itself
    assert [entry.key for entry in inventory(store)] == sorted(
        [entry.key for entry in planned] + ["raw/GER/2024-01/b.pgn"]
    )


def test_a_dump_gone_or_refused_since_the_listing_is_one_record_and_the_others_are_read(tmp_path: Path):
    """Deleted (or made unreadable) between the run's listing and its read: that file is one unparseable record naming
    why, and every other dump of the month is still read; before, the whole month's ingest failed with a traceback. A
    file written to meanwhile is not rated as it happens to be: the run rates what it listed and recorded.
    """
    store_root = tmp_path / "store"
    month = store_root / "raw" / "GER" / "2024-01"
    month.mkdir(parents=True)
    for name in ("a.csv", "gone.csv", "gone.pgn.zst", "refused.csv", "grown.csv"):
        shutil.copyfile(DATA / "games.csv", month / name)
    store = ObjectStore(str(store_root))
    entries = inventory(store)
    listed = (month / "grown.csv").stat().st_size
    with (month / "grown.csv").open("a") as grown:  # written to while the run reads the landing zone
        grown.write("1001,1002,1-0\n")
    (month / "gone.csv").unlink()
    (month / "gone.pgn.zst").unlink()  # a streamed dump: opened only as it is parsed
    (month / "refused.csv").unlink()
    (month / "refused.csv").mkdir()  # reading it fails as a permission change would, whoever runs the tests

    raw = read_month(store, "2024-01", entries)
    games, quarantine = split_games(raw, empty_frame(Players), "2024-01")
    assert raw.height == games.height + quarantine.height
    assert games.filter(pl.col("source_file") == "GER/2024-01/a.csv").height > 0
    unread = raw.filter(pl.col("source_file") != "GER/2024-01/a.csv")
    assert dict(zip(unread["source_file"], unread["parse_error"], strict=True)) == {
        "GER/2024-01/gone.csv": "the file is gone: it was deleted or renamed after the landing zone was listed",
        "GER/2024-01/gone.pgn.zst": "the file is gone: it was deleted or renamed after the landing zone was listed",
        "GER/2024-01/refused.csv": "the file could not be read: IsADirectoryError: Is a directory",
        "GER/2024-01/grown.csv": f"the file changed while the run read it (listed with {listed:,} bytes, read with "
        f"{listed + 14:,}): run again to rate it as it is now",
    }


def test_the_landing_checks_problems_show_folder_names_and_placeholders_as_written(tmp_path: Path) -> None:
    """The check's problems are Markdown in the UI: a folder named like emphasis and a link stays its name, and the
    problem's own <FED> and <YYYY-MM> are not taken for HTML tags (which the UI drops).
    """
    from assets.checks import _listed
    from pipeline.invariants.store_checks import landing_layout_problems

    (tmp_path / "raw" / "GER" / "**bold**[x](javascript:alert(1))").mkdir(parents=True)
    (tmp_path / "raw" / "GER" / "**bold**[x](javascript:alert(1))" / "y.pgn").write_text("")
    (tmp_path / "raw" / "loose.pgn").write_text("")
    problems = landing_layout_problems(ObjectStore(str(tmp_path)), ["2024-01"]).problems
    assert _listed(problems).value == (
        "- raw/GER/\\*\\*bold\\*\\*\\[x\\]\\(javascript:alert\\(1\\)\\)/y.pgn: folder "
        "'\\*\\*bold\\*\\*\\[x\\]\\(javascript:alert\\(1\\)\\)' is not a month: move the file to "
        "raw/GER/\\<YYYY-MM\\>/\n"
        "- raw/loose.pgn: a file directly under raw/ is not read: move it to raw/\\<FED\\>/\\<YYYY-MM\\>/"
    )


# -- federation folders -------------------------------------------------------------------------------------------
FEDERATION_SCENARIOS = """scenarios:
  actual:
    rules: fide-historical
  ger_rep:
    rules: fide-historical
    restrict: {reported_by: GER}
  fra_rep:
    rules: fide-historical
    restrict: {reported_by: FRA}
  ita_trusted:
    rules: fide-historical
    trust_stated_ratings: [ITA, "FRA/*/x.pgn"]
"""


def test_federation_folders_not_named_as_a_code_are_named_and_so_are_scenarios_without_their_folder(
    tmp_path: Path,
) -> None:
    """raw/ger/ is read as federation 'ger', which `reported_by: GER` never takes: the plan, the summary and the
    definitions name it (and GER2, a long name, two folders differing in case), and the scenarios left without games.
    """
    from pipeline.operations.first_month import definitions_months
    from pipeline.operations.run_plan import closing_lines, plan_run, runs_summary
    from pipeline.scenarios.model import load_scenarios
    from pipeline.settings import Settings

    long = "A" * 250  # a stray folder's name
    keys = ["ger/2024-01/a.pgn", "GER2/2024-01/b.pgn", f"{long}/2024-01/c.pgn", "Ger/2024-02/d.pgn"]
    keys.append("FRA/2024-02/e.pgn")  # FRA reports in another month than the run's
    for key in keys:
        (tmp_path / "raw" / key).parent.mkdir(parents=True)
        (tmp_path / "raw" / key).write_text("")
    (tmp_path / "scenarios.yaml").write_text(FEDERATION_SCENARIOS)
    plan = plan_run(str(tmp_path), "2024-01", "2024-01", str(tmp_path / "scenarios.yaml"))
    code = "is not a federation code (three capital letters, as GER): its dumps are read as reported by"
    expected = [
        f"WARNING: federation folder raw/{'A' * 40}.../ {code} '{'A' * 40}...', which no scenario's `reported_by` "
        "names; move them to raw/<FED>/ (its code)",
        f"WARNING: federation folder raw/GER2/ {code} 'GER2', which no scenario's `reported_by` names; move them to "
        "raw/<FED>/ (its code)",
        f"WARNING: federation folder raw/Ger/ {code} 'Ger', which no scenario's `reported_by` names; move them to "
        "raw/GER/",
        f"WARNING: federation folder raw/ger/ {code} 'ger', which no scenario's `reported_by` names; move them to "
        "raw/GER/",
        "WARNING: federation folders raw/Ger/, raw/ger/ differ only in case: read as 2 federations (one folder on a "
        "case-insensitive file system); move their files to raw/GER/",
        "WARNING: scenario ger_rep rates only the games reported by GER (restrict: reported_by), but no folder "
        "raw/GER/ holds dumps of 2024-01: it rates no game (raw/ger/ differs only in case)",
    ]
    # A federation with no folder at all is noted in the plan (the default scenarios name federations a store may
    # never hold); one whose folder holds other months only (FRA: 2024-02) is not named.
    noted = (
        "Note: scenario ita_trusted trusts the ratings stated by ITA (trust_stated_ratings), but no folder raw/ITA/ "
        "is in the landing zone: it trusts none"
    )
    assert [note for note in plan.notes if "federation" in note or "scenario" in note] == [*expected, noted]
    summary = runs_summary(plan, [], 1, 0.0, str(tmp_path / "home"))
    closing = closing_lines(summary, plan.scenarios, "Run").splitlines()
    said = {f"  {note}" for note in [*expected, noted]}
    assert [line for line in closing if line in said] == [f"  {note}" for note in expected]
    # Loading the definitions names the folders (the scenarios' months are the run's, not the definitions').
    settings = Settings.from_env().model_copy(update={"store": str(tmp_path)})
    with pytest.warns(UserWarning) as warned:
        definitions_months(settings, load_scenarios(str(tmp_path / "scenarios.yaml")))
    assert [str(warning.message) for warning in warned] == [line.removeprefix("WARNING: ") for line in expected[:5]]


def test_an_invisible_character_in_a_folder_is_shown_escaped_by_the_summary_as_by_the_quarantine_detail(
    tmp_path: Path,
) -> None:
    """The summary's "quarantined by file" printed 'G<zero-width space>ER/...' raw, reading as GER's file, where the
    quarantine detail escaped it; and an advice for an S3 key raw/../GER/... said to move the file to raw/../.
    """
    from pipeline.operations.run_plan import closing_lines, run_summary

    month, folder = "2024-01", "G\u200bER"
    (tmp_path / "raw" / folder / month).mkdir(parents=True)
    (tmp_path / "raw" / folder / month / "zwsp.pgn").write_text("")
    store = ObjectStore(str(tmp_path))
    entries = inventory(store)
    _, quarantine = split_games(read_month(store, month, entries), empty_frame(Players), month)
    store.write_parquet(quarantine, "quarantine", f"{month}.parquet")
    assert "federation folder 'G\\u200bER' is not a federation code" in quarantine["detail"][0]
    summary = run_summary(
        store,
        [month],
        entries,
        {},
        run_succeeded=True,
        run_id="r1",
        reconciliation_passed=True,
        failed_steps={},
        run_seconds=1.0,
        dagster_home=str(tmp_path / "home"),
    )
    lines = closing_lines(summary, {}, "Run").splitlines()
    assert "  quarantined by file: G\\u200bER/2024-01/zwsp.pgn 1" in lines
    assert not any("\u200b" in line for line in lines)
    # An advice never repeats a federation folder's name that is none.
    assert (
        classify("raw/../GER/2024-01/x.trf").problem
        == "folder 'GER' is not a month: move the file to raw/<FED>/<YYYY-MM>/"
    )
    assert (
        classify("raw/../x.trf").problem == "a file directly under raw/../ is not read: move it to raw/<FED>/<YYYY-MM>/"
    )
    assert classify("raw/<b>/2024-1/x.trf").problem.endswith("move the file to raw/<FED>/2024-01/")
    assert classify("raw/GER/2024-1/x.trf").problem.endswith("move the file to raw/GER/2024-01/")
