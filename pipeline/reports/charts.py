"""PNG charts (matplotlib, Agg canvas, no pyplot state) of the analysis frames, returned as bytes."""

from __future__ import annotations

import io
from collections.abc import Iterator

import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FIGURE_SIZE = (9.0, 5.5)
DPI = 100


def _new_figure() -> tuple[Figure, Axes]:
    # A bare Figure on an Agg canvas: no display needed, no global pyplot state shared between threads.
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.grid(True, alpha=0.3)
    return figure, axes


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    # No 'Software' stamp: the same data gives the same bytes, so unchanged charts are not rewritten.
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _groups(frame: pl.DataFrame, key: str) -> Iterator[tuple[str, pl.DataFrame]]:
    for label in frame[key].unique(maintain_order=True).to_list():
        yield str(label), frame.filter(pl.col(key) == label)


def _empty_note(axes: Axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes, color="#666")


def plot_score_curves(score_curves: pl.DataFrame, title: str = "Favourite's score vs rating advantage") -> bytes:
    """PNG: one colour per period (ScoreCurve frame), actual score solid with dots, expected dashed."""
    figure, axes = _new_figure()
    for index, (period, curve) in enumerate(_groups(score_curves, "period")):
        curve = curve.sort("bin_low")
        colour = f"C{index % 10}"
        axes.plot(curve["bin_low"], curve["score_pct"], color=colour, marker="o", markersize=3, label=f"{period} actual")
        axes.plot(curve["bin_low"], curve["expected_pct"], color=colour, linestyle="--", label=f"{period} expected")
    if score_curves.height == 0:
        _empty_note(axes, "no game rated for both players")
    axes.set_xlabel("Rating advantage of the favourite (bin start, points)")
    axes.set_ylabel("Favourite's score, %")
    axes.set_title(title)
    if score_curves.height:
        axes.legend(fontsize=8, ncols=2)
    return _png(figure)


def plot_band_trend(band_trends: pl.DataFrame, title: str = "Band vs band score by year") -> bytes:
    """PNG: one colour per band pair (BandTrend frame), actual score by year solid, expected dashed."""
    figure, axes = _new_figure()
    for index, (pair, trend) in enumerate(_groups(band_trends, "pair")):
        trend = trend.sort("period")
        years = trend["period"].cast(pl.Int32)
        colour = f"C{index % 10}"
        axes.plot(years, trend["score_pct"], color=colour, marker="o", label=f"{pair} actual")
        axes.plot(years, trend["expected_pct"], color=colour, linestyle="--", label=f"{pair} expected")
    if band_trends.height == 0:
        _empty_note(axes, "no game between the bands")
    else:
        axes.legend(fontsize=8)
        axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_xlabel("Year")
    axes.set_ylabel("Row band's score, %")
    axes.set_title(title)
    return _png(figure)


def plot_rating_distribution(
    distributions: pl.DataFrame, title: str = "Rating distribution", value: str = "players"
) -> bytes:
    """PNG: each list of a RatingDistribution frame as a step line over the bins, overlaid.

    `value` is 'players' (counts; before/after compression of one list) or 'share_pct' (lists of
    different sizes, e.g. January lists years apart).
    """
    if value not in ("players", "share_pct"):
        raise ValueError(f"value must be 'players' or 'share_pct', got {value!r}")
    figure, axes = _new_figure()
    for period, distribution in _groups(distributions, "period"):
        distribution = distribution.sort("bin_low")
        axes.step(distribution["bin_low"], distribution[value], where="post", label=period)
    if distributions.height == 0:
        _empty_note(axes, "no rated player")
    else:
        axes.legend(fontsize=8)
    axes.set_xlabel("Rating (bin start)")
    axes.set_ylabel("Players" if value == "players" else "Share of rated players, %")
    axes.set_title(title)
    return _png(figure)


def plot_accuracy(accuracy: pl.DataFrame, metric: str = "deviance", title: str | None = None) -> bytes:
    """PNG: one line per scenario (Accuracy frame), the monthly `metric` (deviance, rmse or mean_abs_error)."""
    if metric not in ("deviance", "rmse", "mean_abs_error"):
        raise ValueError(f"metric must be deviance, rmse or mean_abs_error, got {metric!r}")
    figure, axes = _new_figure()
    for scenario, rows in _groups(accuracy.sort("scenario"), "scenario"):
        rows = rows.sort("month")
        # Real dates, so that 15 years of months get year ticks rather than 180 crowded labels.
        first_days = (rows["month"] + "-01").str.to_date("%Y-%m-%d").to_list()
        axes.plot(first_days, rows[metric].to_list(), marker="o", markersize=3, label=scenario)
    if accuracy.height == 0:
        _empty_note(axes, "no accuracy figures")
    else:
        axes.legend(fontsize=8)
        axes.tick_params(axis="x", labelrotation=30, labelsize=8)
    axes.set_xlabel("Month")
    axes.set_ylabel(metric)
    axes.set_title(title or f"Predictive accuracy by month: {metric} (lower is better)")
    return _png(figure)


def plot_rating_history(history: pl.DataFrame, scenarios: list[str], title: str = "Rating history") -> bytes:
    """PNG: one line per scenario column of a player's history (column `month`, one rating column per scenario)."""
    figure, axes = _new_figure()
    first_days = (history["month"] + "-01").str.to_date("%Y-%m-%d").to_list()
    plotted = 0
    for scenario in scenarios:
        ratings = history[scenario].cast(pl.Float64).to_list()  # null -> a gap while unrated
        if any(value is not None for value in ratings):
            axes.plot(first_days, [float("nan") if v is None else v for v in ratings], marker="o", markersize=3, label=scenario)
            plotted += 1
    if plotted:
        axes.legend(fontsize=8)
        axes.tick_params(axis="x", labelrotation=30, labelsize=8)
    else:
        _empty_note(axes, "never rated")
    axes.set_xlabel("Month (list after the month's games)")
    axes.set_ylabel("Rating")
    axes.set_title(title)
    return _png(figure)
