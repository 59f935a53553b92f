"""The report pages a scenario's stored tables produce (pipeline.reports.writer), without a Dagster run."""

from functools import partial
from pathlib import Path

import polars as pl
import pytest

from pipeline.analytics import predictive_accuracy, rating_distribution, summary_crosstable
from pipeline.analytics.curves import band_trend, score_curve
from pipeline.months import add_months
from pipeline.reports.index import REPORTS_PREFIX
from pipeline.reports.writer import (
    common_games_accuracy,
    list_before_and_after,
    windows_for,
    write_accuracy_comparison,
    write_report_index,
    write_scenario_reports,
)
from pipeline.scenarios.chain import rate_months
from pipeline.scenarios.model import Compression, Event, Scenario, rate_scenario_month
from pipeline.store.kept import BEFORE_EVENTS_COLUMNS, KEPT_BEFORE_EVENTS, ratings_digest
from pipeline.store.monthly import months_stored, stored_games
from pipeline.store.object_store import ObjectStore
from schemas import Games, empty_frame

# The list of December is FIDE's January list; the compression is applied after February.
MONTHS = ["2023-12", "2024-01", "2024-02"]
SEED = "seed/list.parquet"
COMPRESSING = Scenario(
    name="squeeze", rules="fide-2024", seed_list=SEED, events=(Event(after="2024-02", compress=Compression()),)
)


def stored_scenario(store: ObjectStore, scenario: Scenario, months: list[str] = MONTHS) -> None:
    """Months of the synthetic federation rated by `scenario`'s chain and stored as the rate and analyse stages do;
    the last month's events started the month before (rated with the list in force then).
    """
    from tests.test_operations import synthetic_month

    seed, games = synthetic_month(players=500, games=700)
    store.write_parquet(seed, SEED)
    rate = rate_months(store, scenario, months, months[0])
    for month in months:
        start = f"{add_months(month, -1)}-28" if month == months[-1] else f"{month}-03"
        dated = games.with_columns(event_start=pl.lit(start).str.to_date())
        month_games = pl.concat([empty_frame(Games), dated], how="diagonal_relaxed")  # the columns it lacks, null
        store.write_parquet(month_games, ObjectStore.table_key("games", month))
        rating_list, rated_games, *_ = rate(month, lambda m, g=month_games, mm=month: g if m == mm else g.clear())
        store.write_parquet(rating_list, ObjectStore.table_key(f"{scenario.name}/rating_list", month))
        store.write_parquet(rated_games, ObjectStore.table_key(f"{scenario.name}/rated_games", month))
        store.write_parquet(
            summary_crosstable(rated_games, month), ObjectStore.table_key(f"{scenario.name}/crosstable", month)
        )
        store.write_parquet(
            score_curve(rated_games, month), ObjectStore.table_key(f"{scenario.name}/score_curve", month)
        )
        store.write_parquet(band_trend(rated_games), ObjectStore.table_key(f"{scenario.name}/band_trend", month))
        store.write_parquet(
            predictive_accuracy(rated_games, month, scenario.name),
            ObjectStore.table_key(f"{scenario.name}/accuracy", month),
        )


def test_every_page_of_a_scenario_then_the_comparison_and_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ObjectStore(str(tmp_path))
    stored_scenario(store, COMPRESSING)
    months = months_stored(store, ["squeeze", "crosstable"], ["2023-11", *MONTHS, "2024-03"])
    assert months == MONTHS
    # A Sonas window overlaps the data, and 2024 (after the last one) gets its own: the windows reach the latest year.
    assert [w.label for w in windows_for(months)] == ["2021-23", "2024"]

    named: list[str] = []
    name_rules = Scenario.rules_name
    monkeypatch.setattr(Scenario, "rules_name", lambda self, month: named.append(month) or name_rules(self, month))
    written = write_scenario_reports(store, COMPRESSING, months)
    # Each month's rule set is named once, though each month is on a year's page and a window's.
    assert named == MONTHS
    assert set(written) == {
        "squeeze/crosstable/2023.parquet",
        "squeeze/crosstable/2023.html",
        "squeeze/crosstable/2024.parquet",
        "squeeze/crosstable/2024.html",
        "squeeze/crosstable/2021-23.parquet",
        "squeeze/crosstable/2021-23.html",
        "squeeze/score-curves/2023-2024.parquet",
        "squeeze/score-curves/2023-2024.png",
        "squeeze/score-curves/2023-2024.html",
        "squeeze/band-trend/2023-2024.parquet",
        "squeeze/band-trend/2023-2024.png",
        "squeeze/band-trend/2023-2024.html",
        "squeeze/rating-distribution/january-lists.parquet",
        "squeeze/rating-distribution/january-lists.png",
        "squeeze/rating-distribution/january-lists.html",
        "squeeze/rating-distribution/compression-2024-02.parquet",
        "squeeze/rating-distribution/compression-2024-02.png",
        "squeeze/rating-distribution/compression-2024-02.html",
    }
    assert all(store.exists(f"{REPORTS_PREFIX}/{path}") for path in written)
    before, after = list_before_and_after(store, COMPRESSING, "2024-02")
    assert before is not None and before["rating"].to_list() != after.drop_nulls("rating")["rating"].to_list()

    monthly = pl.concat(store.read_parquet(ObjectStore.table_key("squeeze/accuracy", m)) for m in months)
    comparison = write_accuracy_comparison(store, monthly, baseline=None)
    assert comparison["scenario"].to_list() == ["squeeze"]
    entries = write_report_index(store)
    assert {e.href for e in entries} >= {*written, "all-scenarios/accuracy-comparison/2023-2024.html"}
    assert store.exists(REPORTS_PREFIX, "index.html")


def _compression_page(store: ObjectStore, month: str) -> pl.DataFrame:
    return store.read_parquet(f"{REPORTS_PREFIX}/squeeze/rating-distribution/compression-{month}.parquet")


def test_the_compression_page_draws_the_list_the_chain_compressed(tmp_path: Path) -> None:
    """The list before the compression is the chain's list after the month's games, kept when it rated the month; the
    month rated again from the stored list before it is not that list: February's events started in January, and the
    chain rates their games with the list in force then.
    """
    store, plain = ObjectStore(str(tmp_path / "squeeze")), ObjectStore(str(tmp_path / "plain"))
    stored_scenario(store, COMPRESSING)
    no_events = COMPRESSING.model_copy(update={"events": ()})
    stored_scenario(plain, no_events)  # the same chain without the event: its February list is the one compressed
    key = ObjectStore.table_key("squeeze/rating_list", "2024-02")
    compressed = plain.read_parquet(key).drop_nulls("rating").select(BEFORE_EVENTS_COLUMNS)
    # Only the month with an event keeps anything.
    assert [Path(k).name for k in store.list_files(KEPT_BEFORE_EVENTS)] == [
        f"before-events-2024-02-{ratings_digest(store.read_parquet(key))[:16]}.parquet",
        "before-events-2024-02.json",
    ]
    before, _ = list_before_and_after(store, COMPRESSING, "2024-02")
    assert before is not None and before.equals(compressed)
    january = store.read_parquet(ObjectStore.table_key("squeeze/rating_list", "2024-01"))
    again = rate_scenario_month(no_events, january, partial(stored_games, store), "2024-02").rating_list
    assert not again.drop_nulls("rating").select(BEFORE_EVENTS_COLUMNS).equals(compressed)

    write_scenario_reports(store, COMPRESSING, MONTHS)
    page = _compression_page(store, "2024-02")
    drawn = page.filter(pl.col("period") == "2024-02 before compression").drop("period")
    assert drawn.equals(rating_distribution(compressed, "x").drop("period"))


def test_a_compression_in_the_chains_first_month_draws_the_seed_lists_ratings_before_it(tmp_path: Path) -> None:
    """No list is stored before the chain's first month: the list before its compression is still the chain's."""
    store = ObjectStore(str(tmp_path))
    first = COMPRESSING.model_copy(update={"events": (Event(after="2023-12", compress=Compression()),)})
    stored_scenario(store, first)
    write_scenario_reports(store, first, MONTHS)
    lowest = dict(_compression_page(store, "2023-12").group_by("period").agg(pl.col("bin_low").min()).iter_rows())
    assert lowest["2023-12 before compression"] < 1400 <= lowest["2023-12 after compression"]


def test_without_the_kept_list_the_page_shows_the_list_after_alone_and_says_how_to_get_it(tmp_path: Path) -> None:
    """A rerun writes the same bytes; a store whose record is gone, or goes with another list than the stored one,
    gets the list after the compression alone and the command that rates the month again, on the page and to `warn`.
    """
    store = ObjectStore(str(tmp_path))
    stored_scenario(store, COMPRESSING)
    store.write_bytes(b"{}", "kept/reports/squeeze/compression-2024-02.json")  # an older version's record
    notes: list[str] = []
    written = [f"{REPORTS_PREFIX}/{path}" for path in write_scenario_reports(store, COMPRESSING, MONTHS, notes.append)]
    first = {path: store.read_bytes(path) for path in written}
    assert notes == [] and not store.list_files("kept/reports")
    again = [f"{REPORTS_PREFIX}/{path}" for path in write_scenario_reports(store, COMPRESSING, MONTHS, notes.append)]
    assert {path: store.read_bytes(path) for path in again} == first

    key = ObjectStore.table_key("squeeze/rating_list", "2024-02")
    stored = store.read_parquet(key)
    store.write_parquet(stored.with_columns(pl.col("rating") + 1), key)  # another list than the one rated beside it
    assert list_before_and_after(store, COMPRESSING, "2024-02")[0] is None
    store.write_parquet(stored, key)
    assert list_before_and_after(store, COMPRESSING, "2024-02")[0] is not None
    for path in store.list_files(KEPT_BEFORE_EVENTS):
        store.remove(path)
    write_scenario_reports(store, COMPRESSING, MONTHS, notes.append)
    assert _compression_page(store, "2024-02")["period"].unique().to_list() == ["2024-02 after compression"]
    command = "ratings run --store {} --from 2024-02 --to 2024-02"
    html = store.read_bytes(f"{REPORTS_PREFIX}/squeeze/rating-distribution/compression-2024-02.html").decode()
    assert "before the compression is not kept" in html and command.format("&lt;this store&gt;") in html
    assert len(notes) == 1 and notes[0].startswith("squeeze: ") and command.format(store.url()) in notes[0]


def test_a_month_an_older_version_wrote_with_other_types_reads_as_the_model_says(tmp_path: Path) -> None:
    """group_truth's points were integers in older Decembers, floats in newer ones: the pool-health page's
    concatenation failed (SchemaError: type Float64 is incompatible with expected type Int64); each month is read as
    the model says, a column it was stored without empty.
    """
    from pipeline.reports.writer import stored_frames
    from schemas import GroupTruth
    from schemas.util import conform

    store = ObjectStore(str(tmp_path))
    row = {"month": "2023-12", "year": 2023, "grouping": "age", "group": "25-45", "players": 3, "games": 9}
    newer = conform(pl.DataFrame([{**row, "points": 1.5, "true_change": 2.0, "gap": -0.5}]), GroupTruth)
    older = newer.with_columns(month=pl.lit("2022-12"), year=pl.lit(2022, pl.Int32), points=pl.lit(4, pl.Int64))
    store.write_parquet(older.drop("gap"), ObjectStore.table_key("s/group_truth", "2022-12"))
    store.write_parquet(newer, ObjectStore.table_key("s/group_truth", "2023-12"))
    both = stored_frames(store, "s", "group_truth", ["2022-12", "2023-12", "2024-12"])
    assert both is not None and both.schema == newer.schema
    assert both["points"].to_list() == [4.0, 1.5] and both["gap"].to_list() == [None, -0.5]


def test_analyses_an_older_version_never_wrote_leave_the_pages_to_the_other_months_and_say_so(tmp_path: Path) -> None:
    """A month without score_curve and band_trend (rated by a version that made none) failed every report step with
    FileNotFoundError; the pages rest on the stored months and, as the run's words, name those lacking and the run
    that makes them.
    """
    store = ObjectStore(str(tmp_path))
    stored_scenario(store, COMPRESSING)
    for table in ("score_curve", "band_trend"):
        store.remove(ObjectStore.table_key(f"squeeze/{table}", "2024-01"))
    notes: list[str] = []
    written = write_scenario_reports(store, COMPRESSING, MONTHS, notes.append)
    assert "squeeze/score-curves/2023-2024.html" in written and "squeeze/crosstable/2024.html" in written
    said = "score_curve of 2024-01; band_trend of 2024-01 are not stored"
    command = "ratings run --store {} --from 2024-01 --to 2024-01"
    assert len(notes) == 1 and said in notes[0] and command.format(store.url()) in notes[0]
    for page in ("score-curves/2023-2024", "band-trend/2023-2024", "crosstable/2024"):
        html = store.read_bytes(f"{REPORTS_PREFIX}/squeeze/{page}.html").decode()
        assert said in html and command.format("&lt;this store&gt;") in html, page
    curves = store.read_parquet(f"{REPORTS_PREFIX}/squeeze/score-curves/2023-2024.parquet")
    assert curves["games"].sum() > 0


def test_the_compression_pages_hint_carries_the_runs_options_or_says_the_list_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint to rate the event month again left out --scenarios and --dagster-home (refused as printed); and under
    `forward`, where the stored list of the month stands (a game it rated is gone), the run it named changed nothing:
    the page says it cannot be drawn.
    """
    scenarios, home = tmp_path / "mine.yaml", tmp_path / "home"
    monkeypatch.setenv("RATINGS_SCENARIOS", str(scenarios))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    forward = COMPRESSING.model_copy(update={"recalculation": "forward"})
    store = ObjectStore(str(tmp_path / "store"))
    stored_scenario(store, forward)
    for path in store.list_files(KEPT_BEFORE_EVENTS):
        store.remove(path)
    notes: list[str] = []
    write_scenario_reports(store, forward, MONTHS, notes.append)
    rerun = (
        f"ratings run --store {store.url()} --from 2024-02 --to 2024-02 --scenarios {scenarios} --dagster-home {home}"
    )
    assert len(notes) == 1 and rerun in notes[0]
    page = f"{REPORTS_PREFIX}/squeeze/rating-distribution/compression-2024-02.html"
    placeholders = (
        "--scenarios &lt;the run&#x27;s scenarios file&gt; --dagster-home &lt;the run&#x27;s Dagster home&gt;"
    )
    assert placeholders in store.read_bytes(page).decode()

    key = ObjectStore.table_key("games", "2024-02")
    rated = store.read_parquet(ObjectStore.table_key("squeeze/rated_games", "2024-02"))["game_id"]
    games = store.read_parquet(key)
    store.write_parquet(games.filter(pl.col("game_id") != rated[0]), key)  # a game its list rated is gone
    notes.clear()
    write_scenario_reports(store, forward, MONTHS, notes.append)
    html = store.read_bytes(page).decode()
    assert "cannot be drawn" in html and "ratings run" not in html
    assert len(notes) == 1 and "cannot be drawn" in notes[0] and "ratings run" not in notes[0]


def test_the_common_games_accuracy_groups_a_month_s_sides_once_for_every_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each month's rows of the scenarios' accuracy on the games they all predicted (the cross-scenario stage's
    table) group the month's common sides by player once, not once per scenario, and are each scenario's own rows
    on those sides to the last bit.
    """
    from pipeline.analytics import common_sides
    from tests.test_analytics import common_month

    store, months = ObjectStore(str(tmp_path)), ["2024-01", "2024-02"]
    expected = []
    for seed, month in enumerate(months):
        tables = common_month(seed=seed)
        common = common_sides(tables)
        expected += [predictive_accuracy(frame, month, name, sides=common) for name, frame in tables.items()]
        for name, frame in tables.items():
            store.write_parquet(frame, ObjectStore.table_key(f"{name}/rated_games", month))
    grouped = []
    group_by = pl.DataFrame.group_by
    monkeypatch.setattr(pl.DataFrame, "group_by", lambda self, *a, **k: grouped.append(1) or group_by(self, *a, **k))
    rows = common_games_accuracy(store, ["a", "b", "c"], months)
    assert rows.equals(pl.concat(expected)) and len(grouped) == len(months)
