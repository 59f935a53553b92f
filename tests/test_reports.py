"""Report rendering: the HTML crosstable and index, PNG charts and Markdown previews.

The crosstable and index are also rendered in headless Chromium.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import matplotlib.image
import numpy as np
import polars as pl
import pytest

from pipeline.analytics import (
    band_trend,
    compare_accuracy,
    predictive_accuracy,
    rating_distributions,
    score_curve,
    summary_crosstable,
)
from pipeline.analytics.previews import accuracy_comparison_markdown, accuracy_markdown, crosstable_markdown
from pipeline.reports.charts import plot_accuracy, plot_band_trend, plot_rating_distribution, plot_score_curves
from pipeline.reports.crosstable_html import render_crosstable_html, shade
from pipeline.reports.index import (
    CROSS_SCENARIO,
    LEADERBOARD_SECTION,
    ReportEntry,
    index_href_from,
    render_index,
    report_entry,
    report_path,
)
from pipeline.reports.page import render_table_page
from schemas import RatedGames, RatingList
from schemas.util import conform
from tests.screenshots import CHROMIUM, CHROMIUM_ARGS

CHROMIUM_TIMEOUT_S = 90
ROW = re.compile(r"<tr[\s>]")


def synthetic_rated_games(
    games: int = 6000, seed: int = 7, months: tuple[str, ...] = ("2023-06", "2024-06")
) -> pl.DataFrame:
    """Logistic-model games between ratings 1000-2700 where favourites score a little below expectation."""
    rng = np.random.default_rng(seed)
    white = rng.integers(1000, 2700, games)
    black = np.clip(white + rng.normal(0, 250, games).astype(int), 1000, 2800)
    white_expected = 1 / (1 + 10 ** ((black - white) / 400))
    # Outcomes follow a flatter curve (scale 480): the deflation pattern the crosstable exposes.
    true_white = 1 / (1 + 10 ** ((black - white) / 480))
    draw = rng.random(games) < 0.3
    white_score = np.where(draw, 0.5, (rng.random(games) < true_white).astype(float))
    frame = pl.DataFrame(
        {
            "game_id": np.arange(1, games + 1, dtype=np.uint64),
            "month": [months[i % len(months)] for i in range(games)],
            "event_id": "E",
            "white_id": np.arange(1, games + 1) * 2,
            "black_id": np.arange(1, games + 1) * 2 + 1,
            "white_score": white_score,
            "time_control": "classical",
            "white_rating_used": white.astype(np.int32),
            "black_rating_used": black.astype(np.int32),
            "white_expected": white_expected,
            "black_expected": 1 - white_expected,
            "weight": 1.0,
            "white_k_used": 20,
            "black_k_used": 20,
        }
    )
    return RatedGames.validate(conform(frame, RatedGames))


@pytest.fixture(scope="module")
def games() -> pl.DataFrame:
    return synthetic_rated_games()


@pytest.fixture(scope="module")
def crosstable(games: pl.DataFrame) -> pl.DataFrame:
    return summary_crosstable(games, "2008-12")


def bands_of(crosstable: pl.DataFrame) -> int:
    return crosstable["band"].n_unique()


# -- the HTML crosstable ------------------------------------------------------------------------------


def test_crosstable_page_layout(crosstable: pl.DataFrame) -> None:
    html = render_crosstable_html(crosstable, scenario="actual", rule_set="fide-2014", min_games=30)
    bands = bands_of(crosstable)
    assert bands == 16  # 1000-99 .. 2400-99 and 2500+
    assert len(ROW.findall(html)) == bands + 1  # the header row and one row per band
    assert html.count(">X</td>") == bands  # the diagonal
    assert "vs. 1000-99" in html and "vs. 2500+" in html
    # The row label of a band, as Sonas writes it, computed from the frame.
    summary = crosstable.filter((pl.col("band") == "1500-99") & (pl.col("opponent_band") == "all")).row(0, named=True)
    rounded = round(summary["diff_pct"], 1) + 0.0
    assert f"{rounded:+.1f}% in {summary['games']:,} games" in html
    # Caption: period, scenario, rule set, totals.
    games_counted = int(crosstable.filter(pl.col("opponent_band") == "all")["games"].sum()) // 2
    caption = re.search(r"<caption>(.*?)</caption>", html).group(1)
    for text in ("2008-12", "actual", "fide-2014", f"{games_counted:,} games"):
        assert text in caption


def test_crosstable_cells_shading_and_threshold() -> None:
    # Hand-made: 1200-99 over-performs 1400-99 by +40 points in 40 games; 1200-99 vs 1600-99 has 5 games.
    rows = {
        "period": ["2024-03"] * 6,
        "band": ["1200-99", "1200-99", "1200-99", "1400-99", "1400-99", "1600-99"],
        "band_low": [1200, 1200, 1200, 1400, 1400, 1600],
        "opponent_band": ["1400-99", "1600-99", "all", "1200-99", "all", "all"],
        "opponent_band_low": [1400, 1600, None, 1200, None, None],
        "games": [40, 5, 45, 40, 40, 5],
        "score": [30.0, 1.0, 31.0, 10.0, 10.0, 4.0],
        "expected": [14.0, 0.5, 14.5, 26.0, 26.0, 4.5],
    }
    table = (
        pl.DataFrame(rows)
        .with_columns(
            score_pct=100 * pl.col("score") / pl.col("games"), expected_pct=100 * pl.col("expected") / pl.col("games")
        )
        .with_columns(diff_pct=pl.col("score_pct") - pl.col("expected_pct"))
    )
    html = render_crosstable_html(table, scenario="<b>x</b>", rule_set="r", min_games=30)
    blue, _ = shade(40.0)
    red, _ = shade(-40.0)
    # Actual and expected are printed in the cell (not only on hover), then the games.
    assert (
        f'background:{blue};color:#fff" title="1200-99 vs. 1400-99: 75.0% actual, 35.0% expected, +40.0% in 40 games">'
        '+40.0%<small class="ae">75.0 / 35.0</small><small>40</small>'
    ) in html
    assert f"background:{red}" in html  # the mirror cell
    assert "5 games, fewer than 30" in html  # the thin cell, shown as a grey dot
    assert '<td class="thin"' in html and ">·</td>" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html  # names are escaped
    # Offline: no external stylesheet, script, image or font.
    assert not re.search(r"https?://|<link|<script|src=", html)


def test_shade_is_blue_over_red_under_and_grows_with_the_difference() -> None:
    def rgb(colour: str) -> tuple[int, int, int]:
        return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))

    small, large = rgb(shade(1.0)[0]), rgb(shade(8.0)[0])
    assert small[2] > small[0] and large[2] > large[0]  # blue dominates
    assert sum(large) < sum(small)  # deeper colour for a bigger difference
    under = rgb(shade(-8.0)[0])
    assert under[0] > under[2]
    assert shade(50.0) == shade(10.0)  # saturated


def test_empty_crosstable_page(crosstable: pl.DataFrame) -> None:
    html = render_crosstable_html(crosstable.head(0), scenario="s", rule_set="r", period="2024-05")
    assert "No game was rated for both players" in html and "2024-05" in html
    assert len(ROW.findall(html)) == 1


# -- index ---------------------------------------------------------------------------------------------


def index_entries() -> list[ReportEntry]:
    entries = [report_entry("actual", "crosstable", period, "html") for period in ("2008-12", "2013-16", "2024-03")]
    entries += [
        report_entry("actual", "score-curves", "2008-12", "png"),
        report_entry("fide-2024-from-2017", "crosstable", "2024-03", "html"),
        report_entry(CROSS_SCENARIO, "accuracy-comparison", "2008-2024", "html"),
        ReportEntry(LEADERBOARD_SECTION, "latest", "leaderboard", f"{LEADERBOARD_SECTION}/leaderboard.html"),
    ]
    return entries


def test_index_links_every_report_relatively() -> None:
    html = render_index(index_entries())
    hrefs = re.findall(r'<a href="([^"#]+)"', html)
    assert sorted(hrefs) == sorted(entry.href for entry in index_entries())
    assert all("://" not in href and not href.startswith("/") for href in hrefs)
    assert "actual/crosstable/2008-12.html" in hrefs
    # Sections: all scenarios first, the leaderboard (no scenario of its own), then each scenario; one row per period
    # plus a header each.
    assert (
        html.index("All scenarios</h2>")
        < html.index("Leaderboard: every scenario predicting the held-out months</h2>")
        < html.index("Scenario actual</h2>")
        < html.index("Scenario fide-2024-from-2017</h2>")
    )
    assert f"Scenario {LEADERBOARD_SECTION}" not in html
    assert len(ROW.findall(html)) == (1 + 1) + (1 + 1) + (1 + 3) + (1 + 1)


def test_report_paths() -> None:
    assert report_path("actual", "crosstable", "2013-16", "html") == "actual/crosstable/2013-16.html"
    assert index_href_from("actual/crosstable/2013-16.html") == "../../index.html"
    assert index_href_from("index.html") == "index.html"
    with pytest.raises(ValueError):
        report_path("../etc", "crosstable", "2024-03", "html")
    with pytest.raises(ValueError):
        ReportEntry("actual", "2024-03", "crosstable", "https://example.org/x.html")
    with pytest.raises(ValueError):
        ReportEntry("actual", "2024-03", "crosstable", "/abs/x.html")


# -- charts --------------------------------------------------------------------------------------------


def decoded(png: bytes) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def distinct_colours(image: np.ndarray) -> int:
    return len(np.unique(image.reshape(-1, image.shape[-1]), axis=0))


def rating_list_of(ratings: np.ndarray) -> pl.DataFrame:
    n = len(ratings)
    frame = pl.DataFrame(
        {
            "player_id": np.arange(1, n + 1),
            "rating": ratings.astype(np.int32),
            "change": 0,
            "correction": None,
            "k": 20,
            "k_used": 20,
            "games": 0,
            "games_total": 30,
            "inactive": False,
            "delisted": False,
            "newly_rated": False,
            "birth_year": 1990,
            "ever_2400": False,
            "last_played": "2024-01",
            "pending_games": 0,
            "pending_since": None,
            "pending": [[]] * n,
        },
        schema_overrides={"correction": pl.Int32, "pending_since": pl.Utf8},
    )
    return RatingList.validate(conform(frame, RatingList))


def test_charts_are_non_trivial_deterministic_pngs(games: pl.DataFrame) -> None:
    curves = pl.concat([score_curve(games.filter(pl.col("month") == m), m[:4]) for m in ("2023-06", "2024-06")])
    ratings = np.random.default_rng(1).normal(1600, 250, 3000).clip(1000, 2800)
    before = rating_list_of(ratings)
    after = rating_list_of(np.where(ratings < 2000, ratings + np.round(0.4 * (2000 - ratings)), ratings))
    accuracy = pl.concat(
        [
            predictive_accuracy(games.filter(pl.col("month") == m), m, s)
            for m in ("2023-06", "2024-06")
            for s in ("actual", "other")
        ]
    )
    charts = {
        "curves": plot_score_curves(curves),
        "trend": plot_band_trend(band_trend(games)),
        "distribution": plot_rating_distribution(rating_distributions({"before": before, "after": after})),
        "accuracy": plot_accuracy(accuracy),
    }
    for name, png in charts.items():
        image = decoded(png)
        assert image.shape[0] >= 400 and image.shape[1] >= 600, name
        assert distinct_colours(image) > 20, name
    # Same data, same bytes: a re-run does not rewrite unchanged charts.
    assert plot_score_curves(curves) == charts["curves"]
    # Empty data still gives a readable chart, not an exception.
    assert decoded(plot_score_curves(curves.head(0))).size


# -- Markdown previews ---------------------------------------------------------------------------------


def test_crosstable_markdown(crosstable: pl.DataFrame) -> None:
    markdown = crosstable_markdown(crosstable, min_games=30)
    lines = markdown.split("\n\n")[0].splitlines()
    assert len(lines) == 2 + bands_of(crosstable)  # header, rule, one per band
    assert lines[0].startswith("| band | overall | vs. 1000-99")
    first_band = lines[2].split(" | ")
    assert first_band[2] == "X"  # 1000-99 vs itself
    assert "·" in markdown  # e.g. 1000-99 vs 2500+: too few games
    cell = crosstable.filter((pl.col("band") == "1500-99") & (pl.col("opponent_band") == "1600-99")).row(0, named=True)
    assert f"{round(cell['diff_pct'], 1) + 0.0:+.1f}% ({cell['games']:,})" in markdown
    assert crosstable_markdown(crosstable.head(0)).startswith("_No game")


def test_accuracy_markdown_and_comparison(games: pl.DataFrame) -> None:
    accuracy = pl.concat(
        [
            predictive_accuracy(games, "2024-06", "actual"),
            predictive_accuracy(
                games.with_columns(white_expected=pl.lit(0.5), black_expected=pl.lit(0.5)), "2024-06", "coin"
            ),
        ]
    )
    markdown = accuracy_markdown(accuracy)
    actual = accuracy.row(0, named=True)
    assert f"| 2024-06 | actual | {actual['players']:,} | {actual['games']:,} |" in markdown
    assert f"{actual['deviance']:.4f}" in markdown
    comparison = compare_accuracy(accuracy, baseline="actual")
    text = accuracy_comparison_markdown(comparison)
    # A coin flip never beats real ratings on these games.
    assert "| coin | 1 |" in text and text.count("0%") >= 3 and "`actual`" in text
    page = render_table_page(comparison, "Scenario comparison", caption="pooled")
    assert len(ROW.findall(page)) == 1 + comparison.height


# -- headless Chromium ---------------------------------------------------------------------------------


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None  # the tests that call it skip without Chromium
    command = [CHROMIUM, "--headless", *CHROMIUM_ARGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=True)


def rendered(tmp_path: Path, page: Path) -> tuple[str, np.ndarray, int]:
    """(DOM after rendering, screenshot pixels, screenshot file size) of a page opened from disk."""
    dom = run_chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    shot = tmp_path / f"{page.stem}.png"
    run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,900", page.as_uri())
    assert shot.exists(), "chromium wrote no screenshot"
    return dom, matplotlib.image.imread(shot), shot.stat().st_size


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH: headless rendering not checked")
def test_crosstable_and_index_render_in_headless_chromium(tmp_path: Path, crosstable: pl.DataFrame) -> None:
    reports = tmp_path / "reports"
    path = report_path("actual", "crosstable", "2008-12", "html")
    (reports / path).parent.mkdir(parents=True)
    (reports / path).write_text(
        render_crosstable_html(crosstable, "actual", "fide-2014", back_href=index_href_from(path)), encoding="utf-8"
    )
    (reports / "index.html").write_text(render_index(index_entries()), encoding="utf-8")

    dom, pixels, size = rendered(tmp_path, reports / path)
    assert len(ROW.findall(dom)) == bands_of(crosstable) + 1
    assert "+0.0% in" in dom or re.search(r"[+-]\d+\.\d% in [\d,]+ games", dom)
    assert size > 20_000
    rgb = pixels[..., :3]
    assert distinct_colours(rgb) > 100
    # Both shadings made it to the screen: clearly blue pixels and clearly red ones.
    blue = (rgb[..., 2] - rgb[..., 0]) > 0.25
    red = (rgb[..., 0] - rgb[..., 2]) > 0.25
    assert blue.sum() > 500 and red.sum() > 500

    dom, pixels, size = rendered(tmp_path, reports / "index.html")
    assert len(ROW.findall(dom)) == (1 + 1) + (1 + 1) + (1 + 3) + (1 + 1)
    assert 'href="actual/crosstable/2008-12.html"' in dom
    assert size > 5_000 and distinct_colours(pixels[..., :3]) > 10


def test_a_chart_is_drawn_again_only_when_what_it_is_drawn_from_changed(tmp_path: Path):
    from pipeline.reports.charts import stamp_of
    from pipeline.reports.writer import drawn_chart, store_report
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    data = pl.DataFrame({"month": ["2024-01", "2024-02"], "value": [1.0, 2.0]})
    drawings: list[str] = []

    def draw(title: str):
        def png() -> bytes:
            drawings.append(title)
            figure = matplotlib.figure.Figure(figsize=(2, 1))
            figure.add_subplot().set_title(title)
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", metadata={"Software": None})
            return buffer.getvalue()

        return png

    first = drawn_chart(store, "x/chart.png", data, draw("a"), "a")
    assert drawings == ["a"] and stamp_of(first) is not None
    # The stamped PNG is still a PNG the readers open.
    assert matplotlib.image.imread(io.BytesIO(first), format="png").shape[:2] == (100, 200)
    store_report(store, "x/chart.png", first)
    assert drawn_chart(store, "x/chart.png", data, draw("a"), "a") == first and drawings == ["a"]
    drawn_chart(store, "x/chart.png", data.with_columns(value=pl.col("value") + 1), draw("a"), "a")
    drawn_chart(store, "x/chart.png", data, draw("b"), "b")
    assert drawings == ["a", "a", "b"]
    store_report(store, "x/chart.png", first[:-40] + b"\0" * 40)  # a damaged chart is drawn again
    drawn_chart(store, "x/chart.png", data, draw("a"), "a")
    assert drawings == ["a", "a", "b", "a"]


def loaded_at_import(start: str) -> set[str]:
    """The modules importing `start` loads: the project's modules reached by import statements run on import (a
    module's top level, not its functions nor `if TYPE_CHECKING:`), and every other module named there.
    """
    from tests.test_layout import _is_type_checking, modules, syntax

    def run_on_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
        for statement in body:
            if isinstance(statement, ast.If) and not _is_type_checking(statement):
                yield from run_on_import(statement.body + statement.orelse)
            elif isinstance(statement, ast.Try):
                yield from run_on_import(statement.body + statement.finalbody)
            elif isinstance(statement, (ast.Import, ast.ImportFrom)):
                yield statement

    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in modules():
            continue
        package = name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]
        for node in run_on_import(syntax(modules()[name]).body):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                named = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for dotted in named:
                parts = dotted.split(".")
                todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return seen


def test_the_definitions_load_matplotlib_only_when_a_chart_is_drawn() -> None:
    """A process that writes no report (the shared tables' and each chain's worker process) imports the definitions,
    and the report pages' writer with them, but not matplotlib (0.4-0.6 CPU-s): the writer imports the charts' module
    where it draws or compares a chart.
    """
    loaded = loaded_at_import("assets.definitions")
    assert {"assets.report", "pipeline.reports.writer", "pipeline.evaluation.scenarios"} <= loaded
    assert "pipeline.reports.charts" not in loaded
    assert not [name for name in loaded if name.split(".")[0] == "matplotlib"]


def test_pool_health_tables_add_up_by_year_and_the_pages_show_them(tmp_path: Path):
    from pipeline.reports.pool_health import (
        drift_side_by_side,
        flow_matrix,
        render_drift_comparison_page,
        render_pool_health_page,
        yearly_ledger,
    )
    from schemas import PointsLedger
    from schemas.util import conform

    def month(name: str, before: int, newcomers: int, inactive: int, games: int) -> dict:
        zero = {column: 0 for column in PointsLedger.to_schema().columns}
        after = before + newcomers - inactive + games
        return zero | {
            "month": name,
            "pool_before": before,
            "pool_after": after,
            "pool_change": after - before,
            "newcomers": newcomers,
            "became_inactive": inactive,
            "games_change": games,
            "games_not_zero_sum": games - 0.5,
            "games_rounding": 0.5,
        }

    rows = [month("2023-12", 1000, 10, 4, 1), month("2024-01", 1007, 20, 5, -2), month("2024-02", 1020, 0, 3, 3)]
    ledger = conform(pl.DataFrame(rows, infer_schema_length=None), PointsLedger)
    yearly = yearly_ledger(ledger).row(1, named=True)
    assert (yearly["year"], yearly["pool_before"], yearly["pool_after"], yearly["pool_change"]) == (
        "2024",
        1007,
        1020,
        13,
    )
    # Leaving channels count against the pool; the year's channels add up to its change.
    assert (yearly["newcomers"], yearly["became_inactive"], yearly["games_change"]) == (20, -8, 1)
    assert yearly["newcomers"] + yearly["became_inactive"] + yearly["games_change"] == yearly["pool_change"]
    flows = pl.DataFrame(
        {
            "month": ["2024-01"] * 3,
            "grouping": ["kind", "kind", "band"],
            "group": ["junior", "adult", "1800-1999"],
            "opponent_group": ["adult", "junior", "1600-1799"],
            "sides": [3, 3, 1],
            "points": [12.5, -10.0, 1.0],
        }
    )
    matrix = flow_matrix(flows)
    assert (
        matrix.columns == ["group", "adult", "junior"]
        and matrix.filter(pl.col("group") == "junior")["adult"][0] == 12.5
    )
    drift = pl.DataFrame(
        {
            "month": ["2024-12"],
            "year": [2024],
            "age_low": [25],
            "age_high": [45],
            "players": [9],
            "median_change": [-6.0],
            "mean_change": [-5.5],
            "true_median_change": [0.5],
            "true_mean_change": [0.2],
        },
        schema_overrides={"year": pl.Int32, "age_low": pl.Int32, "age_high": pl.Int32},
    )
    side = drift_side_by_side({"a<b": drift, "other": drift.with_columns(median_change=pl.lit(1.0))})
    assert side.row(0) == (2024, -6.0, 1.0, 0.5)
    # Flows of two years: each year's matrices in a <details> of its own, linked from the list of years, the last open.
    earlier = flows.with_columns(month=pl.lit("2023-12"), points=pl.col("points") * 3)
    page = render_pool_health_page(
        "a<b", yearly_ledger(ledger), drift, None, pl.concat([earlier, flows]), "x.png", ["2023-12", "2024-02"]
    )
    assert "Pool health · a&lt;b" in page and "a<b" not in page and "became_inactive" in page and "12.5" in page
    assert '<details id="flows-2023"><summary>2023' in page and '<details id="flows-2024" open><summary>2024' in page
    assert 'href="#flows-2023"' in page and 'href="#flows-2024"' in page
    flows_2023 = page.split('id="flows-2023"')[1].split("</details>")[0]
    assert "37.5" in flows_2023 and "12.5" not in flows_2023 and "Band (row)" in flows_2023
    assert "-6.0" in render_drift_comparison_page(side, "y.png")


def test_the_deflation_index_by_year_adds_up_the_months_not_their_percentages():
    from pipeline.reports.pool_health import index_side_by_side, yearly_index

    months = pl.DataFrame(
        {
            "month": ["2023-12", "2024-01", "2024-02", "2024-02"],
            "band": ["all", "all", "all", "1800-1999"],
            "games": [10, 100, 300, 50],
            "expected": [6.0, 70.0, 180.0, 40.0],
            "score": [5.0, 60.0, 186.0, 35.0],
            "index_pct": [10.0, 10.0, -2.0, 10.0],
        }
    )
    yearly = yearly_index(months)
    assert yearly["year"].to_list() == ["2023", "2024"]
    # 2024: (250 - 246) / 400, not the mean of 10 % and -2 %.
    assert yearly["index_pct"].to_list() == pytest.approx([10.0, 1.0])
    side = index_side_by_side({"a": yearly, "b": yearly.with_columns(index_pct=pl.lit(0.5))})
    assert side.row(1) == (2024, 1.0, 0.5)
