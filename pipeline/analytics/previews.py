"""Markdown previews of the analyses for the Dagster UI's asset metadata."""

from __future__ import annotations

import polars as pl

from pipeline.analytics.crosstable import format_difference, format_row_summary
from pipeline.analytics.grid import DEFAULT_MIN_GAMES, crosstable_grid

INSUFFICIENT = "·"


def _table(header: list[str], rows: list[list[str]], align_right_from: int = 1) -> str:
    rule = ["---" if i < align_right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def crosstable_markdown(crosstable: pl.DataFrame, min_games: int = DEFAULT_MIN_GAMES) -> str:
    """One period's crosstable as a Markdown table: band, summary, then 'diff (games)' per opponent band;
    the diagonal 'X', cells below `min_games` '·'.
    """
    grid = crosstable_grid(crosstable)
    if not grid.bands:
        return "_No game was rated for both players in this period._"
    rows = []
    for band in grid.bands:
        summary = grid.summaries.get(band)
        row = [band, format_row_summary(summary.diff_pct, summary.games) if summary else "no games"]
        for opponent in grid.bands:
            cell = grid.cells.get((band, opponent))
            if opponent == band:
                row.append("X")
            elif cell is None or cell.games < min_games:
                row.append(INSUFFICIENT)
            else:
                row.append(f"{format_difference(cell.diff_pct)} ({cell.games:,})")
        rows.append(row)
    header = ["band", "overall"] + [f"vs. {band}" for band in grid.bands]
    note = (
        f"\n\n{grid.games_counted:,} games between different bands; actual minus expected score of the "
        f"row band, games in brackets; {INSUFFICIENT} = fewer than {min_games} games."
    )
    return _table(header, rows, align_right_from=2) + note


def _number(value: float | int | None, digits: int) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def accuracy_markdown(accuracy: pl.DataFrame) -> str:
    """Key numbers of Accuracy rows (one per month and scenario) as a Markdown table."""
    if accuracy.height == 0:
        return "_No accuracy figures._"
    rows = [
        [
            row["month"],
            row["scenario"],
            _number(row["players"], 0),
            _number(row["games"], 0),
            _number(row["total_abs_error"], 1),
            _number(row["mean_abs_error"], 3),
            _number(row["rmse"], 3),
            _number(row["deviance"], 4),
        ]
        for row in accuracy.sort("month", "scenario").iter_rows(named=True)
    ]
    header = ["month", "scenario", "players", "games", "total abs error", "mean abs error", "RMSE", "deviance"]
    return (
        _table(header, rows, align_right_from=2)
        + "\n\nLower is better for every error measure (see docs/analytics.md)."
    )


def accuracy_comparison_markdown(comparison: pl.DataFrame) -> str:
    """An AccuracyComparison frame as a Markdown table: pooled metrics and share of months beating the baseline."""
    if comparison.height == 0:
        return "_No scenarios to compare._"

    def share(value: float | None) -> str:
        return "—" if value is None else f"{100 * value:.0f}%"

    rows = [
        [
            row["scenario"],
            _number(row["months"], 0),
            _number(row["mean_abs_error"], 3),
            _number(row["rmse"], 3),
            _number(row["deviance"], 4),
            share(row["share_better_mean_abs_error"]),
            share(row["share_better_rmse"]),
            share(row["share_better_deviance"]),
        ]
        for row in comparison.iter_rows(named=True)
    ]
    baseline = comparison["baseline"].drop_nulls()
    against = f"`{baseline[0]}`" if baseline.len() else "the baseline"
    header = [
        "scenario",
        "months",
        "mean abs error",
        "RMSE",
        "deviance",
        "beats on MAE",
        "beats on RMSE",
        "beats on deviance",
    ]
    return _table(header, rows) + f"\n\n'beats' = share of months with a strictly lower error than {against}."


def leaderboard_markdown(table: pl.DataFrame) -> str:
    """The evaluation leaderboard for the Dagster UI: rank, scenario, the metrics (lower is better) and the games
    scored.
    """
    columns = ["deviance_log10", "bdev", "player_month_rmse", "mean_abs_error"]
    rows = [
        [
            str(r["rank"]),
            r["scenario"],
            *(_number(r[c], 4 if c == "bdev" else 6) for c in columns),
            _number(r["common_games"], 0),
        ]
        for r in table.iter_rows(named=True)
    ]
    return _table(["rank", "scenario", *columns, "games scored"], rows, align_right_from=2)
