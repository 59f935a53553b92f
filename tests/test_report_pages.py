"""What an analyst checks on each report page (issue 18).

Months and games stated, values readable without hover and in print, a chronological index without empty pages, distinct
curves with game counts, distributions as small multiples and a fair scenario comparison; in headless Chromium where a
browser is what a person would use.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import polars as pl
import pytest

from pipeline.analytics import (
    compare_accuracy,
    covering_windows,
    parse_window,
    predictive_accuracy,
    rating_distributions,
    score_curve,
    summary_crosstable,
)
from pipeline.analytics.curves import band_trend
from pipeline.reports.charts import rating_distribution_figure, score_curves_figure
from pipeline.reports.crosstable_html import render_crosstable_html
from pipeline.reports.index import index_href_from, period_order, render_index, report_entry, report_path
from pipeline.reports.writer import (
    windows_for,
    write_accuracy_comparison,
    write_report_index,
    write_scenario_reports,
)
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from schemas import Accuracy
from schemas.util import conform
from tests.test_reports import rating_list_of, run_chromium, synthetic_rated_games

CHROMIUM = shutil.which("chromium")
PDFTOTEXT = shutil.which("pdftotext")
PDFTOPPM = shutil.which("pdftoppm")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH: headless rendering not checked")

DEMO_MONTHS = [f"{year}-{month:02d}" for year in range(2015, 2025) for month in range(1, 13)]


# -- windows ---------------------------------------------------------------------------------------


def test_windows_are_chronological_and_the_last_reaches_the_latest_year() -> None:
    windows = windows_for(DEMO_MONTHS)
    assert [w.label for w in windows] == ["2013-16", "2017-20", "2021-23", "2024"]
    assert [w.first_month for w in windows] == sorted(w.first_month for w in windows)
    assert windows[-1].contains("2024-12")
    # Every month with data is in a window; data before and between the named windows gets its own.
    assert [w.label for w in covering_windows(["2003-05", "2004-01", "2006-02", "2009-01"])] == [
        "2003-2004",
        "2006",
        "2008-12",
    ]
    assert [w.label for w in covering_windows(["2005-07"])] == ["2005"]  # not '2005-07..2005-07'


# -- crosstable page -------------------------------------------------------------------------------


def crosstable_page(window: str = "2013-16", months: list[str] | None = None) -> tuple[str, pl.DataFrame]:
    games = synthetic_rated_games(months=("2015-06", "2016-06"))
    table = summary_crosstable(games, window)
    months = months or [f"{y}-{m:02d}" for y in (2015, 2016) for m in range(1, 13)]
    page = render_crosstable_html(
        table, "actual", "fide-2014", window=parse_window(window), months=months, back_href="../../index.html"
    )
    return page, table


def test_a_window_the_data_covers_in_part_says_which_months() -> None:
    page, table = crosstable_page()
    text = re.sub(r"<[^>]+>", "", page)
    assert "2015-01 to 2016-12 only: 24 of the 48 months of 2013-16" in text
    assert "(data 2015-01 to 2016-12 only)" in re.search(r"<h1>(.*?)</h1>", page).group(1)
    games = int(table.filter(pl.col("opponent_band") == "all")["games"].sum()) // 2
    assert f"{games:,} games between different bands" in text
    full, _ = crosstable_page("2015-2016")
    assert "2015-01 to 2016-12 (24 months)" in full and "only" not in re.search(r"<h1>(.*?)</h1>", full).group(1)


def write_page(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / "reports" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


VISIBLE = """<script>
const seen = document.body.innerText;
document.body.innerHTML = '<pre id="visible-text"></pre>';
document.getElementById('visible-text').textContent = seen;
</script>"""


def visible_text(tmp_path: Path, page: Path) -> str:
    """The text a person sees on the page in Chromium (innerText: no title= hover text, nothing hidden)."""
    probe = page.with_name(f"visible-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", VISIBLE + "</body>"), encoding="utf-8")
    dom = run_chromium(tmp_path, "--dump-dom", probe.as_uri()).stdout
    probe.unlink()
    return html.unescape(re.search(r'<pre id="visible-text">(.*?)</pre>', dom, re.DOTALL).group(1))


def printed_pdf(tmp_path: Path, page: Path) -> Path:
    pdf = tmp_path / f"{page.stem}.pdf"
    run_chromium(tmp_path, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page.as_uri())
    assert pdf.exists() and pdf.stat().st_size > 1000
    return pdf


def cell_texts(table: pl.DataFrame, min_games: int = 30) -> list[str]:
    """'actual / expected' as the page should print them, for every cell shown with figures."""
    shown = table.filter(pl.col("games") >= min_games)
    return [f"{row['score_pct']:.1f} / {row['expected_pct']:.1f}" for row in shown.iter_rows(named=True)]


@needs_chromium
def test_crosstable_actual_and_expected_are_visible_without_hover_and_in_print(tmp_path: Path) -> None:
    page_html, table = crosstable_page()
    page = write_page(tmp_path, "actual/crosstable/2013-16.html", page_html)
    expected = cell_texts(table)
    assert len(expected) > 50
    seen = visible_text(tmp_path, page)
    missing = [text for text in expected if text not in seen]
    assert not missing, f"not visible without hover: {missing[:5]}"
    assert "24 of the 48 months of 2013-16" in seen

    if PDFTOTEXT is None:
        pytest.skip("pdftotext is not on PATH: the printed page is not read back")
    pdf = printed_pdf(tmp_path, page)
    printed = subprocess.run([PDFTOTEXT, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    missing = [text for text in expected if text not in printed]
    assert not missing, f"not in print: {missing[:5]}"
    assert "24 of the 48 months" in printed and "All reports" not in printed  # navigation is not printed
    if PDFTOPPM is not None:
        # The shading survives printing (browsers drop backgrounds unless the page asks to keep them).
        subprocess.run(
            [PDFTOPPM, "-png", "-r", "60", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "print")], check=True
        )
        pixels = matplotlib.image.imread(next(tmp_path.glob("print*.png")))[..., :3]
        assert ((pixels[..., 2] - pixels[..., 0]) > 0.25).sum() > 200  # blue cells
        assert ((pixels[..., 0] - pixels[..., 2]) > 0.25).sum() > 200  # red cells


# -- index -----------------------------------------------------------------------------------------


def test_index_periods_are_chronological() -> None:
    periods = [
        "2024",
        "compression-2016-06",
        "january-lists",
        "2013-16",
        "2015",
        "2016",
        "2017",
        "2015-2024",
        "2017-20",
        "2005-2007",
    ]
    assert sorted(periods, key=period_order) == [
        "2005-2007",
        "2013-16",
        "2015",
        "2015-2024",
        "2016",
        "compression-2016-06",
        "2017",
        "2017-20",
        "2024",
        "january-lists",
    ]
    page = render_index([report_entry("actual", "crosstable", p, "html") for p in periods])
    rows = re.findall(r'<th scope="row">([^<]+)</th>', page)
    assert rows.index("compression-2016-06") == rows.index("2016") + 1


SPARSE = Scenario(name="sparse", rules="fide-2024")


def sparse_store(root: Path) -> tuple[ObjectStore, list[str]]:
    """A scenario with stored months in 2019 and 2021 where 2019 holds no rated game (its players were unrated)."""
    store = ObjectStore(str(root))
    games = synthetic_rated_games(games=3000, months=("2021-03", "2021-04"))
    months = ["2019-05", "2021-03", "2021-04"]
    for month in months:
        rated = (
            games.filter(pl.col("month") == month)
            if month.startswith("2021")
            else games.head(40).with_columns(
                month=pl.lit(month),
                white_expected=pl.lit(None, dtype=pl.Float64),
                black_expected=pl.lit(None, dtype=pl.Float64),
            )
        )
        store.write_parquet(rated, ObjectStore.table_key("sparse/rated_games", month))
        store.write_parquet(summary_crosstable(rated, month), ObjectStore.table_key("sparse/crosstable", month))
        store.write_parquet(score_curve(rated, month), ObjectStore.table_key("sparse/score_curve", month))
        store.write_parquet(band_trend(rated), ObjectStore.table_key("sparse/band_trend", month))
        store.write_parquet(
            predictive_accuracy(rated, month, "sparse"), ObjectStore.table_key("sparse/accuracy", month)
        )
    return store, months


@needs_chromium
def test_the_index_links_no_empty_page(tmp_path: Path) -> None:
    store, months = sparse_store(tmp_path)
    # A page an older version wrote for the empty year is removed, not linked.
    stale = report_path("sparse", "crosstable", "2019-05..2021-04", "html")
    store.write_text("<html><body>No game was rated for both players in this period.</body></html>", "reports", stale)
    written = write_scenario_reports(store, SPARSE, months)
    assert not any("/2019" in path or "2019-05" in path for path in written)
    assert not store.exists("reports", stale)
    monthly = pl.concat(store.read_parquet(ObjectStore.table_key("sparse/accuracy", m)) for m in months)
    write_accuracy_comparison(store, monthly, baseline=None, stored=["sparse"])
    write_report_index(store)

    reports = tmp_path / "reports"
    seen_index = visible_text(tmp_path, reports / "index.html")
    assert "2019" not in seen_index
    for section in (reports / "index.html").read_text().split("<h2")[1:]:
        rows = re.findall(r'<th scope="row">([^<]+)</th>', section)
        assert rows == sorted(rows, key=period_order)
    links = re.findall(r'href="([^"#]+\.html)"', (reports / "index.html").read_text())
    assert len(links) >= 4
    for link in links:
        page = reports / link
        assert page.exists(), link
        seen = visible_text(tmp_path, page)
        counts = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) games", seen)]
        assert counts and max(counts) > 0, f"{link} states no game"
        assert "No game was rated" not in seen, link
        assert re.search(r"\d{4}-\d{2}", seen), f"{link} states no month"


# -- score curves ----------------------------------------------------------------------------------


def windowed_curves() -> pl.DataFrame:
    games = synthetic_rated_games(games=8000, months=("2020-06", "2024-06"))
    # The same games under two labels: identical expected curves, the case where one hid the other.
    same = score_curve(games, "2017-20")
    return pl.concat([same, same.with_columns(period=pl.lit("2024")), score_curve(games.head(3000), "2021-23")])


def test_score_curve_lines_are_distinct_and_bins_show_games() -> None:
    curves = windowed_curves()
    figure = score_curves_figure(curves)
    top, counts = figure.axes
    expected = [line for line in top.get_lines() if line.get_label().endswith("expected")]
    assert len(expected) == 3
    # Equal data, different dashes: the two identical expected lines interleave instead of overlapping.
    patterns = {(line.get_color(), str(line._unscaled_dash_pattern), line.get_marker()) for line in expected}
    assert len(patterns) == 3 and len({str(line._unscaled_dash_pattern) for line in expected}) == 3
    legend = [text.get_text() for text in top.get_legend().get_texts()]
    assert len(legend) == len(set(legend)) == 6
    handles = top.get_legend().legend_handles
    styles = {
        (h.get_color(), h.get_linestyle(), str(getattr(h, "_unscaled_dash_pattern", "")), h.get_marker())
        for h in handles
    }
    assert len(styles) == 6
    # Games per bin under the curves: one bar per bin and window, heights the games.
    bars = [patch.get_height() for patch in counts.patches]
    assert sorted(bars) == sorted(curves["games"].to_list())


@needs_chromium
def test_score_curve_page_states_windows_months_and_games_per_bin(tmp_path: Path) -> None:
    store, months = sparse_store(tmp_path)
    write_scenario_reports(store, SPARSE, months)
    page = tmp_path / "reports" / report_path("sparse", "score-curves", "2021-2021", "html")
    seen = visible_text(tmp_path, page)
    curves = store.read_parquet("reports", report_path("sparse", "score-curves", "2021-2021", "parquet"))
    assert curves["period"].unique().to_list() == ["2021-23"]
    assert "2021-03 to 2021-04 only: 2 of the 36 months of 2021-23" in seen
    for row in curves.iter_rows(named=True):
        assert re.search(
            rf"{re.escape(row['bin'])}\s+{row['games']:,}\s+{row['score_pct']:.1f}\s+{row['expected_pct']:.1f}", seen
        ), row["bin"]
    assert (page.parent / "2021-2021.png").exists()
    dom = run_chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert 'src="2021-2021.png"' in dom


# -- distributions ---------------------------------------------------------------------------------


def test_distributions_are_small_multiples_showing_each_whole_list() -> None:
    rng = np.random.default_rng(1)
    januaries = {
        f"January {y}": rating_list_of(rng.normal(1500 + 10 * i, 250, 2000).clip(1000, 2800))
        for i, y in enumerate(range(2016, 2026))
    }
    figure = rating_distribution_figure(rating_distributions(januaries), value="share_pct")
    panels = [axes for axes in figure.axes if axes.get_visible()]
    assert len(panels) == 10
    assert [axes.get_title().split(" · ")[0] for axes in panels] == list(januaries)

    ratings = rng.normal(1500, 300, 4000).clip(1000, 2800)
    before = rating_list_of(ratings)
    after = rating_list_of(np.where(ratings < 2000, ratings + np.round(0.4 * (2000 - ratings)), ratings))
    frame = rating_distributions({"before compression": before, "after compression": after})
    figure = rating_distribution_figure(frame)
    for axes, label in zip(figure.axes, ("before compression", "after compression"), strict=True):
        own = frame.filter(pl.col("period") == label)
        line = axes.get_lines()[-1]  # drawn last: nothing covers it
        assert line.get_label() == label
        xs = line.get_xdata()
        assert min(xs) == own["bin_low"].min() and max(xs) == own["bin_high"].max() + 1  # not cut at 2000
        low, high = axes.get_xlim()
        assert low <= frame["bin_low"].min() and high >= frame["bin_high"].max() + 1


# -- accuracy comparison ---------------------------------------------------------------------------


def test_months_compared_are_the_months_the_shares_come_from() -> None:
    months = [f"2024-{m:02d}" for m in range(1, 7)]
    rows = []
    for scenario, offset in (("actual", 0.0), ("new", -0.5)):
        for index, month in enumerate(months):
            predicted = index < 3  # three months with games, three without (real-data stores have hundreds)
            rows.append(
                {
                    "month": month,
                    "scenario": scenario,
                    "players": 10 if predicted else 0,
                    "games": 20 if predicted else 0,
                    "sides": 40 if predicted else 0,
                    "total_abs_error": 5.0 + offset if predicted else 0.0,
                    "sum_squared_error": 4.0 if predicted else 0.0,
                    "deviance_sum": 5.0 if predicted else 0.0,
                }
            )
    frame = pl.DataFrame(rows).with_columns(
        mean_abs_error=pl.when(pl.col("players") > 0).then(pl.col("total_abs_error") / pl.col("players")),
        rmse=pl.when(pl.col("players") > 0).then((pl.col("sum_squared_error") / pl.col("players")).sqrt()),
        deviance=pl.when(pl.col("games") > 0).then(pl.col("deviance_sum") / pl.col("games")),
    )
    new = (
        compare_accuracy(Accuracy.validate(conform(frame, Accuracy)), baseline="actual")
        .filter(pl.col("scenario") == "new")
        .row(0, named=True)
    )
    assert new["months_compared"] == 3
    assert new["share_better_mean_abs_error"] == 1.0


def two_scenario_store(root: Path) -> tuple[ObjectStore, pl.DataFrame]:
    """'actual' and 'floor' over two months; 'floor' predicts none of the games under 1400 (a rating floor),
    'actual' none of every seventh game (say, a time control it does not rate).
    """
    store = ObjectStore(str(root))
    games = synthetic_rated_games(games=4000, months=("2024-01", "2024-02"))
    unrated = (pl.col("game_id") % 7) == 0
    floored = games.with_columns(
        white_expected=pl.when(pl.col("white_rating_used") < 1400).then(None).otherwise(pl.col("white_expected")),
        black_expected=pl.when(pl.col("black_rating_used") < 1400).then(None).otherwise(pl.col("black_expected")),
    )
    rows = []
    games = games.with_columns(
        white_expected=pl.when(unrated).then(None).otherwise(pl.col("white_expected")),
        black_expected=pl.when(unrated).then(None).otherwise(pl.col("black_expected")),
    )
    for key, frame in (("actual", games), ("floor", floored)):
        for month in ("2024-01", "2024-02"):
            part = frame.filter(pl.col("month") == month)
            store.write_parquet(part, ObjectStore.table_key(f"{key}/rated_games", month))
            rows.append(predictive_accuracy(part, month, key))
    return store, pl.concat(rows)


@needs_chromium
def test_accuracy_page_compares_on_common_games_in_plain_words(tmp_path: Path) -> None:
    store, monthly = two_scenario_store(tmp_path)
    own = compare_accuracy(monthly, baseline="actual")
    assert len(set(own["games"].to_list())) == 2  # the scenarios predicted different game sets
    comparison = write_accuracy_comparison(store, monthly, "actual", stored=["actual", "floor"])
    common = int(comparison["games"][0])
    assert comparison["games"].to_list() == [common, common] and common < min(own["games"].to_list())
    floored = pl.concat(
        store.read_parquet(ObjectStore.table_key("floor/rated_games", m)) for m in ("2024-01", "2024-02")
    )
    by_floor = floored.filter(pl.col("white_expected").is_not_null() | pl.col("black_expected").is_not_null())
    assert common == by_floor.filter(pl.col("game_id") % 7 != 0).height  # exactly the intersection

    page = tmp_path / "reports" / report_path("all-scenarios", "accuracy-comparison", "2024-2024", "html")
    seen = visible_text(tmp_path, page)
    assert f"Compared on the {common:,} games every scenario rated" in seen
    assert "months 2024-01 to 2024-02 (2 months)" in seen
    assert seen.count("lower is better") >= 4
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", page.read_text())
    assert headers and not [h for h in headers if "_" in h], headers
    assert "Mean absolute error per player-month (lower is better)" in headers
    assert "Months compared with actual" in headers
    assert "not comparable" in seen and f"{int(own['games'][0]):,}" in seen


# -- determinism -----------------------------------------------------------------------------------


def test_a_rerun_writes_identical_bytes(tmp_path: Path) -> None:
    store, months = sparse_store(tmp_path)
    first = {p: store.read_bytes(p) for p in (f"reports/{w}" for w in write_scenario_reports(store, SPARSE, months))}
    second = {p: store.read_bytes(p) for p in (f"reports/{w}" for w in write_scenario_reports(store, SPARSE, months))}
    assert first == second and len(first) > 5
    assert index_href_from("sparse/score-curves/2021-2021.html") == "../../index.html"
