"""The report pages a scenario's stored tables produce (pipeline.reports.writer), without a Dagster run."""

from pathlib import Path

import polars as pl
import pytest

from pipeline.analytics import predictive_accuracy, summary_crosstable
from pipeline.analytics.curves import band_trend, score_curve
from pipeline.engine.period import normalize_list
from pipeline.reports.index import REPORTS_PREFIX
from pipeline.reports.writer import (
    KEPT_REPORT_INPUTS,
    list_before_and_after,
    windows_for,
    write_accuracy_comparison,
    write_report_index,
    write_scenario_reports,
)
from pipeline.scenarios.model import Compression, Event, Scenario, rate_scenario_month
from pipeline.store.monthly import months_stored
from pipeline.store.object_store import ObjectStore

# The list of December is FIDE's January list; the compression is applied after February.
MONTHS = ["2023-12", "2024-01", "2024-02"]
COMPRESSING = Scenario(name="squeeze", rules="fide-2024", events=(Event(after="2024-02", compress=Compression()),))


def stored_scenario(store: ObjectStore, scenario: Scenario) -> None:
    """Two months of the synthetic federation rated under `scenario` and stored as the rate and analyse stages do."""
    from tests.test_operations import synthetic_month

    seed, games = synthetic_month(players=500, games=700)
    previous = normalize_list(seed)
    for month in MONTHS:
        month_games = games.with_columns(event_start=pl.lit(f"{month}-03").str.to_date())
        store.write_parquet(month_games, ObjectStore.table_key("games", month))
        result = rate_scenario_month(
            scenario, previous, lambda m, g=month_games, mm=month: g if m == mm else g.clear(), month
        )
        store.write_parquet(result.rating_list, ObjectStore.table_key(f"{scenario.name}/rating_list", month))
        store.write_parquet(result.rated_games, ObjectStore.table_key(f"{scenario.name}/rated_games", month))
        store.write_parquet(
            summary_crosstable(result.rated_games, month), ObjectStore.table_key(f"{scenario.name}/crosstable", month)
        )
        store.write_parquet(
            score_curve(result.rated_games, month), ObjectStore.table_key(f"{scenario.name}/score_curve", month)
        )
        store.write_parquet(band_trend(result.rated_games), ObjectStore.table_key(f"{scenario.name}/band_trend", month))
        store.write_parquet(
            predictive_accuracy(result.rated_games, month, scenario.name),
            ObjectStore.table_key(f"{scenario.name}/accuracy", month),
        )
        previous = result.rating_list


def test_every_page_of_a_scenario_then_the_comparison_and_the_index(tmp_path: Path) -> None:
    store = ObjectStore(str(tmp_path))
    stored_scenario(store, COMPRESSING)
    months = months_stored(store, ["squeeze", "crosstable"], ["2023-11", *MONTHS, "2024-03"])
    assert months == MONTHS
    # A Sonas window overlaps the data, and 2024 (after the last one) gets its own: the windows reach the latest year.
    assert [w.label for w in windows_for(months)] == ["2021-23", "2024"]

    written = write_scenario_reports(store, COMPRESSING, months)
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
    assert before["rating"].to_list() != after["rating"].to_list()  # re-rated without the compression
    stored, same = list_before_and_after(store, COMPRESSING, "2023-12")  # no stored M-1: the list as stored, twice
    assert stored is same

    monthly = pl.concat(store.read_parquet(ObjectStore.table_key("squeeze/accuracy", m)) for m in months)
    comparison = write_accuracy_comparison(store, monthly, baseline=None)
    assert comparison["scenario"].to_list() == ["squeeze"]
    entries = write_report_index(store)
    assert {e.href for e in entries} >= {*written, "all-scenarios/accuracy-comparison/2023-2024.html"}
    assert store.exists(REPORTS_PREFIX, "index.html")


def test_the_compression_page_re_rates_its_month_only_when_what_it_was_made_from_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list before the compression is re-rated in the first run; the next runs read the stored distribution
    while the lists and games it was made from hold what they held (the same bytes either way, whenever written), and
    a list that changed makes it again.
    """
    from pipeline.reports import writer

    store = ObjectStore(str(tmp_path))
    stored_scenario(store, COMPRESSING)
    data = f"{REPORTS_PREFIX}/squeeze/rating-distribution/compression-2024-02.parquet"
    re_rated: list[str] = []

    def counted(store: ObjectStore, scenario: Scenario, month: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        re_rated.append(month)
        return list_before_and_after(store, scenario, month)

    monkeypatch.setattr(writer, "list_before_and_after", counted)
    write_scenario_reports(store, COMPRESSING, MONTHS)
    chart = data.removesuffix(".parquet") + ".png"
    first, drawn = store.read_bytes(data), store.read_bytes(chart)
    assert re_rated == ["2024-02"] and store.exists(KEPT_REPORT_INPUTS, "squeeze", "compression-2024-02.json")
    write_scenario_reports(store, COMPRESSING, MONTHS)
    assert re_rated == ["2024-02"] and store.read_bytes(data) == first and store.read_bytes(chart) == drawn
    before = ObjectStore.table_key("squeeze/rating_list", "2024-01")
    listed = store.read_parquet(before)
    store.write_parquet(listed, before)  # the same bytes written again: what they hold is what counts
    write_scenario_reports(store, COMPRESSING, MONTHS)
    assert re_rated == ["2024-02"]
    store.write_parquet(listed.with_columns(pl.col("rating") + 1), before)  # another list before
    write_scenario_reports(store, COMPRESSING, MONTHS)
    assert re_rated == ["2024-02", "2024-02"]
    kept = store.read_bytes(KEPT_REPORT_INPUTS, "squeeze", "compression-2024-02.json")
    write_scenario_reports(store, COMPRESSING, MONTHS)
    assert re_rated == ["2024-02", "2024-02"]
    assert store.read_bytes(KEPT_REPORT_INPUTS, "squeeze", "compression-2024-02.json") == kept
    # A damaged record is made again (the month re-rated), never a failed page.
    store.write_bytes(b"{damaged", KEPT_REPORT_INPUTS, "squeeze", "compression-2024-02.json")
    write_scenario_reports(store, COMPRESSING, MONTHS)
    assert re_rated == ["2024-02", "2024-02", "2024-02"]
    assert store.read_bytes(KEPT_REPORT_INPUTS, "squeeze", "compression-2024-02.json") == kept
