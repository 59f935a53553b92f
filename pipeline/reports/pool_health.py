"""The pool-health pages of a scenario, and the cohort's drift of every scenario side by side (docs/analytics.md).

A scenario's pages: its points ledger by year, its stable cohort's drift beside the truth, the points its groups won
from each other and against their true strength change, each federation's residual against the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import polars as pl

from pipeline.analytics.common import in_order_sum
from pipeline.reports.chart_pages import CHART_CSS, chart_image
from pipeline.reports.page import frame_table_html, html_page
from pipeline.scenarios.ledger import CHANNELS


def yearly_ledger(ledgers: pl.DataFrame) -> pl.DataFrame:
    """The monthly PointsLedger rows added up by year: each channel signed as it adds to the pool (a leaving channel
    negative), the pool at the year's start and end, and the year's change (the channels' sum).
    """
    ordered = ledgers.sort("month").with_columns(year=pl.col("month").str.slice(0, 4))
    return (
        ordered.group_by("year", maintain_order=True)
        .agg(
            pl.col("pool_before").first(),
            pl.col("pool_after").last(),
            pl.col("pool_change").sum(),
            *(pl.col(name).sum() * sign for name, sign in CHANNELS.items()),
            in_order_sum(pl.col("games_not_zero_sum")),
            in_order_sum(pl.col("games_rounding")),
            pl.col("unexplained").sum(),
        )
        .sort("year")
    )


def yearly_index(indexes: pl.DataFrame) -> pl.DataFrame:
    """The monthly DeflationIndex rows of every band ('all') added up by year: games, expected, score, index."""
    overall = indexes.filter(pl.col("band") == "all").sort("month").with_columns(year=pl.col("month").str.slice(0, 4))
    totals = (
        overall.group_by("year")
        .agg(pl.col("games").sum(), in_order_sum(pl.col("expected")), in_order_sum(pl.col("score")))
        .sort("year")
    )
    return totals.with_columns(
        index_pct=pl.when(pl.col("games") > 0).then(100.0 * (pl.col("expected") - pl.col("score")) / pl.col("games"))
    )


def flow_matrix(flows: pl.DataFrame, grouping: str = "kind") -> pl.DataFrame:
    """The PointsFlow rows of one grouping added up: one row per group, one column per opponent group, the points the
    row's players won (negative: lost) against the column's, before rounding.
    """
    chosen = flows.filter(pl.col("grouping") == grouping).sort("month", "group", "opponent_group")
    if chosen.is_empty():
        return pl.DataFrame({"group": []}, schema={"group": pl.Utf8})
    summed = chosen.group_by("group", "opponent_group").agg(in_order_sum(pl.col("points")).round(1))
    return (
        summed.pivot("opponent_group", index="group", values="points", sort_columns=True).sort("group").fill_null(0.0)
    )


#: The pool-health page shows the federations with the most games across federations, this many.
TOP_FEDERATIONS = 10


def yearly_residuals(residuals: pl.DataFrame) -> pl.DataFrame:
    """The monthly FederationResiduals rows added up by year and federation (the months' points, not their ratios)."""
    totals = (
        residuals.sort("month", "federation")
        .with_columns(year=pl.col("month").str.slice(0, 4))
        .group_by("year", "federation")
        .agg(pl.col("games").sum(), in_order_sum(pl.col("score")), in_order_sum(pl.col("expected")))
        .sort("year", "federation")
    )
    return totals.with_columns(residual=pl.col("score") - pl.col("expected")).with_columns(
        residual_per_game=pl.col("residual") / pl.col("games")
    )


def residual_table(yearly: pl.DataFrame, top: int = TOP_FEDERATIONS) -> pl.DataFrame:
    """The `top` federations with the most games (yearly_residuals' rows), most first: their games and residual per
    game (percent of a point) over every year, then the residual per game of each year.
    """
    totals = (
        yearly.sort("year", "federation")
        .group_by("federation")
        .agg(pl.col("games").sum(), in_order_sum(pl.col("residual")))
        .sort(["games", "federation"], descending=[True, False])
        .head(top)
    )
    by_year = (
        yearly.join(totals.select("federation"), on="federation", how="semi")
        .with_columns((100.0 * pl.col("residual_per_game")).round(2).alias("pct"))
        .pivot("year", index="federation", values="pct", sort_columns=True)
    )
    shown = totals.select(
        "federation", "games", (100.0 * pl.col("residual") / pl.col("games")).round(2).alias("all years")
    )
    return shown.join(by_year, on="federation", how="left", maintain_order="left")


def group_truth_table(groups: pl.DataFrame, grouping: str) -> pl.DataFrame:
    """The GroupTruth rows of one grouping, by year and group, as the page shows them."""
    return (
        groups.filter(pl.col("grouping") == grouping)
        .sort("year", "group")
        .select(
            "year",
            "group",
            "players",
            "games",
            pl.col("points").alias("points in games"),
            pl.col("true_change").round(1).alias("true change"),
            pl.col("gap").round(1).alias("points - true change"),
        )
    )


def _flows_by_year(flows: pl.DataFrame) -> str:
    """One <details> per year (the last open) with the points each kind and each band won from each other, and links
    to every year: any year's flows on the page, plain HTML.
    """
    years = sorted({month[:4] for month in flows["month"].to_list()})
    links = " · ".join(f'<a href="#flows-{escape(year)}">{escape(year)}</a>' for year in years)
    parts = [f"<h2>Points won between groups, by year</h2>\n<p>{links}</p>"]
    for year in years:
        of_year = flows.filter(pl.col("month").str.starts_with(year))
        tables = [
            frame_table_html(
                matrix, f"{label} (row) against each {label} (column) in {year}'s games, before rounding", 1
            )
            for grouping, label in (("kind", "Kind"), ("band", "Band"))
            if (matrix := flow_matrix(of_year, grouping)).width > 1
        ]
        opened = " open" if year == years[-1] else ""
        parts.append(
            f'<details id="flows-{escape(year)}"{opened}><summary>{escape(year)}</summary>\n'
            + "\n".join(tables)
            + "</details>"
        )
    return "\n".join(parts)


def render_pool_health_page(
    scenario: str,
    ledger: pl.DataFrame | None,
    drift: pl.DataFrame,
    index: pl.DataFrame | None,
    flows: pl.DataFrame | None,
    png_href: str | None,
    months: Sequence[str],
    back_href: str | None = None,
    residuals: pl.DataFrame | None = None,
    groups: pl.DataFrame | None = None,
) -> str:
    """The scenario's pool-health page: the ledger by year (chart and table), the cohort's drift, the Deflation Index,
    the ledger's groups against their true change (`groups`: GroupTruth rows), the federations' residuals
    (`residuals`: yearly_residuals) and the flows between groups of any year (`flows`: PointsFlow rows).
    """
    title = f"Pool health · {scenario}"
    parts = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">Lists {escape(months[0])} to {escape(months[-1])}. The pool is the rated players not '
        "flagged inactive; every channel is in rating points, and they add up to the pool's change exactly "
        "(the blocking check <code>ledger_balance</code>).</p>",
    ]
    if ledger is not None and ledger.height:
        if png_href:
            parts.append(chart_image(png_href, f"{scenario}: where the pool's points came from, by year"))
        parts.append(frame_table_html(ledger, "The points ledger by year (leaving channels negative)", float_digits=1))
    drift_shown = drift.select(
        pl.col("year").alias("Year"),
        pl.col("players").alias("Cohort"),
        pl.col("median_change").alias("Median rating change"),
        pl.col("true_median_change").alias("Median true change"),
        pl.col("mean_change").round(1).alias("Mean rating change"),
        pl.col("true_mean_change").round(1).alias("Mean true change"),
    )
    parts.append(
        frame_table_html(
            drift_shown,
            "The stable cohort's drift by year: adults aged 25-45, steadily active, on both December lists (the true "
            "change on generated data only)",
            float_digits=1,
        )
    )
    if index is not None and index.height:
        parts.append(
            frame_table_html(
                index.select("year", "games", pl.col("index_pct").round(2).alias("deflation_index_pct")),
                "The Deflation Index by year: the favourites' expected minus actual score, percent (Milvang 2023; "
                "positive: favourites under-score, the pool deflates)",
                float_digits=2,
            )
        )
    if groups is not None and groups.height:
        parts.append(
            "<h2>The ledger's groups against their true strength change</h2>\n<p>The players rated on the list a year "
            "before who played in the year, grouped on that list as the flows are: the rating points they gained in "
            "the year's games beside the change of their true strength (generated data only). A group that gains "
            "more points than strength takes them from the others.</p>"
        )
        parts.append(frame_table_html(group_truth_table(groups, "kind"), "By kind of player", 1))
        parts.append(
            "<details><summary>By 200-point band</summary>"
            + frame_table_html(group_truth_table(groups, "band"), "By band on the list a year before", 1)
            + "</details>"
        )
    if residuals is not None and residuals.height:
        table = residual_table(residuals)
        games = residuals.join(table.select("federation"), on="federation", how="semi").pivot(
            "year", index="federation", values="games", sort_columns=True
        )
        parts.append(
            frame_table_html(
                table,
                f"Federation residuals: the {table.height} federations with most games against other federations' "
                "players, their actual minus expected score per game in percent of a point, all years and by year",
                float_digits=2,
            )
        )
        parts.append(
            "<details><summary>Their games by year</summary>"
            + frame_table_html(
                table.select("federation").join(games, on="federation", how="left", maintain_order="left"), "Games", 0
            )
            + "</details>"
        )
    if flows is not None and flows.height:
        parts.append(_flows_by_year(flows))
    return html_page(title, "\n".join(parts), CHART_CSS, back_href)


def _by_year(columns: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Frames of (year, one value column) joined on the year into one table, in year order."""
    table = None
    for frame in columns.values():
        frame = frame.with_columns(pl.col("year").cast(pl.Int32))
        table = frame if table is None else table.join(frame, on="year", how="full", coalesce=True)
    return table.sort("year") if table is not None else pl.DataFrame({"year": []}, schema={"year": pl.Int32})


def drift_side_by_side(drifts: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Each scenario's cohort drift by year, one column per scenario, and the truth (the first scenario's cohort's
    true change, where generated data has one).
    """
    held = {name: frame for name, frame in drifts.items() if frame.height}
    columns = {name: frame.select("year", pl.col("median_change").alias(name)) for name, frame in held.items()}
    if held:
        truth = next(iter(held.values())).select("year", pl.col("true_median_change").alias("true strength"))
        if truth["true strength"].null_count() < truth.height:
            columns["true strength"] = truth
    return _by_year(columns)


def index_side_by_side(indexes: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Each scenario's yearly Deflation Index (yearly_index), one column per scenario."""
    return _by_year({name: f.select("year", pl.col("index_pct").round(2).alias(name)) for name, f in indexes.items()})


def render_drift_comparison_page(
    table: pl.DataFrame, png_href: str | None, back_href: str | None = None, index: pl.DataFrame | None = None
) -> str:
    """Did a repair stop the drift: the stable cohort's median yearly change under each scenario, side by side."""
    title = "Pool health across scenarios: the stable cohort's drift"
    parts = [
        f"<h1>{escape(title)}</h1>",
        '<p class="meta">The median rating change over each year of the adults aged 25-45 who stayed active, on '
        "both December lists of each scenario. Their strength hardly moves (the last column, on generated data): "
        "a scenario whose cohort drifts below it deflates, one that tracks it does not.</p>",
    ]
    if png_href:
        parts.append(chart_image(png_href, title))
    parts.append(frame_table_html(table, "Median yearly change of the stable cohort, rating points", float_digits=1))
    if index is not None and index.height:
        parts.append(
            frame_table_html(index, "The Deflation Index by year, percent (favourites' expected minus actual score)", 2)
        )
    return html_page(title, "\n".join(parts), CHART_CSS, back_href)
