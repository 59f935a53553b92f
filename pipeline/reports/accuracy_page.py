"""The scenario comparison page: predictive accuracy on the games every compared scenario rated, in plain words."""

from __future__ import annotations

from html import escape

import polars as pl

from pipeline.reports.chart_pages import CHART_CSS, month_span
from pipeline.reports.page import frame_table_html, html_page

LOWER = "lower is better"


def _months_with_games(monthly: pl.DataFrame) -> pl.DataFrame:
    return monthly.filter(pl.col("games") > 0).group_by("scenario").agg(months_with_games=pl.len().cast(pl.Int64))


def comparison_table(comparison: pl.DataFrame, monthly: pl.DataFrame, baseline: str | None) -> pl.DataFrame:
    """An AccuracyComparison frame with plain-language headers, ready to print."""
    table = comparison.join(_months_with_games(monthly), on="scenario", how="left").with_columns(
        pl.col("months_with_games").fill_null(0)
    )
    against = baseline or "the baseline"
    columns = [
        pl.col("scenario").alias("Scenario"),
        pl.col("months_with_games").alias("Months with predicted games"),
        pl.col("games").alias("Games predicted"),
        pl.col("player_months").alias("Player-months"),
        pl.col("mean_abs_error").alias(f"Mean absolute error per player-month ({LOWER})"),
        pl.col("rmse").alias(f"RMSE per player-month ({LOWER})"),
        pl.col("deviance").alias(f"Deviance per game ({LOWER})"),
    ]
    if baseline is not None:
        share = {"mean_abs_error": "mean absolute error", "rmse": "RMSE", "deviance": "deviance"}
        columns.append(pl.col("months_compared").alias(f"Months compared with {against}"))
        columns += [
            (100 * pl.col(f"share_better_{metric}"))
            .round(0)
            .cast(pl.Int64, strict=False)
            .alias(f"Months with a lower {words} than {against}, % (higher is better)")
            for metric, words in share.items()
        ]
    return table.select(columns)


def render_accuracy_page(
    comparison: pl.DataFrame,
    monthly: pl.DataFrame,
    own_comparison: pl.DataFrame,
    own_monthly: pl.DataFrame,
    baseline: str | None,
    png_href: str | None = None,
    back_href: str | None = None,
) -> str:
    """The comparison on common games (`comparison`, from `monthly`) first, then, for context, each
    scenario on its own games (`own_comparison`, from `own_monthly`), saying the game sets differ.
    """
    scenarios = comparison["scenario"].to_list()
    common_games = int(monthly.filter(pl.col("scenario") == scenarios[0])["games"].sum()) if scenarios else 0
    months = sorted(monthly.filter(pl.col("games") > 0)["month"].unique().to_list())
    title = "Predictive accuracy by scenario"
    own_games = {row["scenario"]: row["games"] for row in own_comparison.iter_rows(named=True)}
    differing = len(set(own_games.values())) > 1
    own_note = (
        "Each scenario rates a different set of games (floors, initial ratings, rated time controls): "
        + ", ".join(f"{escape(s)} {g:,}" for s, g in own_games.items())
        + (
            " games. Figures on different games are not comparable; the table above uses only the games every "
            "scenario rated."
        )
        if differing
        else "Every scenario predicted the same games."
    )
    chart = (
        f'<img class="chart" src="{escape(png_href, quote=True)}" alt="monthly deviance by scenario">'
        if png_href
        else ""
    )
    body = (
        f"<h1>{title}</h1>\n"
        f'<p class="meta"><b>Compared on the {common_games:,} games every scenario rated</b>, on the sides of them '
        f"every scenario predicted ({len(scenarios)} scenarios: {escape(', '.join(scenarios))}) · months "
        f"{escape(month_span(months))}" + (f" · baseline {escape(baseline)}" if baseline else "") + ".</p>\n"
        "<p>Every error measure: <b>lower is better</b>. Mean absolute error and RMSE are per player-month "
        "(actual minus expected score of a player's month); deviance is the Kaggle 2011 capped log10 "
        "binomial deviance per game. A share counts the months in which both the scenario and the baseline "
        "predicted games, and a tie is not a win.</p>\n"
        + frame_table_html(
            comparison_table(comparison, monthly, baseline), "On the games every scenario rated", float_digits=3
        )
        + chart
        + "<h2>Each scenario on its own games</h2>\n"
        f"<p>{own_note}</p>\n"
        + frame_table_html(
            comparison_table(own_comparison, own_monthly, baseline),
            "On each scenario's own games (not comparable)",
            float_digits=3,
        )
    )
    return html_page(title, body, CHART_CSS, back_href, games=common_games)
