"""PNG charts (matplotlib, Agg canvas, no pyplot state) of the analysis frames, returned as bytes."""

from __future__ import annotations

import hashlib
import io
import struct
import zlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import matplotlib
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

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


# A chart's stamp: a PNG text chunk (ISO/IEC 15948 §11.3.4.3, tEXt) under this keyword, saying what it was drawn from.
STAMP_KEYWORD = b"ratings-drawn-from"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@cache
def _chart_code() -> bytes:
    """The chart code (this module) and matplotlib's version: what a chart's pixels depend on besides its data."""
    return Path(__file__).read_bytes() + matplotlib.__version__.encode()


def chart_stamp(data: pl.DataFrame, *labels: str) -> str:
    """What a chart is drawn from, as a digest: its data, its labels, this module's code and matplotlib's version. Two
    charts with the same stamp have the same pixels, so a stored chart with this stamp need not be drawn again.
    """
    digest = hashlib.sha256(_chart_code())
    for label in labels:
        digest.update(b"\0" + label.encode())
    buffer = io.BytesIO()
    data.rechunk().write_ipc(buffer)
    digest.update(buffer.getvalue())
    return digest.hexdigest()


def stamped(png: bytes, stamp: str) -> bytes:
    """The PNG with its stamp as a text chunk before IEND (the last chunk, 12 bytes)."""
    body = STAMP_KEYWORD + b"\0" + stamp.encode("ascii")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return png[:-12] + chunk + png[-12:]


def stamp_of(png: bytes) -> str | None:
    """The stamp a PNG carries (stamped), None when it carries none or is not a PNG."""
    if not png.startswith(_PNG_SIGNATURE):
        return None
    at = len(_PNG_SIGNATURE)
    while at + 8 <= len(png):
        (length,), kind = struct.unpack(">I", png[at : at + 4]), png[at + 4 : at + 8]
        body = png[at + 8 : at + 8 + length]
        if kind == b"tEXt" and body.startswith(STAMP_KEYWORD + b"\0"):
            return body[len(STAMP_KEYWORD) + 1 :].decode("ascii", "replace")
        at += 12 + length
    return None


def _groups(frame: pl.DataFrame, key: str) -> Iterator[tuple[str, pl.DataFrame]]:
    for label in frame[key].unique(maintain_order=True).to_list():
        yield str(label), frame.filter(pl.col(key) == label)


def _empty_note(axes: Axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes, color="#666")


def expected_dashes(index: int, count: int) -> tuple[float, tuple[float, float]]:
    """(offset, (on, off)) of the index-th of `count` expected lines: equal dashes shifted along the
    line, so lines over the same points interleave their colours instead of one hiding the others.
    """
    on = 5.0
    return (on * index, (on, on * max(count - 1, 1)))


def score_curves_figure(score_curves: pl.DataFrame, title: str = "Favourite's score vs rating advantage") -> Figure:
    """The score-curve chart: above, one colour per period (actual solid with dots, expected dashed,
    each period's dashes offset); below, the games per bin of each period (log scale).
    """
    figure = Figure(figsize=(FIGURE_SIZE[0], FIGURE_SIZE[1] * 1.35), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes, counts = figure.subplots(2, 1, sharex=True, height_ratios=[3, 1.2])
    for each in (axes, counts):
        each.grid(True, alpha=0.3)
    groups = list(_groups(score_curves, "period"))
    width = 50.0 / max(len(groups), 1)
    for index, (period, curve) in enumerate(groups):
        curve = curve.sort("bin_low")
        colour = f"C{index % 10}"
        games = int(curve["games"].sum())
        axes.plot(
            curve["bin_low"],
            curve["score_pct"],
            color=colour,
            marker="o",
            markersize=3,
            label=f"{period} actual ({games:,} games)",
        )
        axes.plot(
            curve["bin_low"],
            curve["expected_pct"],
            color=colour,
            linestyle=expected_dashes(index, len(groups)),
            marker=EXPECTED_MARKERS[index % len(EXPECTED_MARKERS)],
            markersize=4,
            markerfacecolor="none",
            label=f"{period} expected",
        )
        counts.bar(
            curve["bin_low"].cast(pl.Float64) + index * width,
            curve["games"],
            width=width,
            align="edge",
            color=colour,
            label=period,
        )
    if score_curves.height == 0:
        _empty_note(axes, "no game rated for both players")
    else:
        axes.legend(fontsize=8, ncols=2)
        counts.set_yscale("log")
    axes.set_ylabel("Favourite's score, %")
    axes.set_title(title)
    counts.set_xlabel("Rating advantage of the favourite (bin start, points; last bin: that and more)")
    counts.set_ylabel("Games per bin")
    return figure


# Hollow markers on the expected lines tell the periods apart in black-and-white print too.
EXPECTED_MARKERS = ("s", "^", "D", "v", "P", "X", "<", ">")


def plot_score_curves(score_curves: pl.DataFrame, title: str = "Favourite's score vs rating advantage") -> bytes:
    """PNG of `score_curves_figure` (ScoreCurve frame, one curve per period)."""
    return _png(score_curves_figure(score_curves, title))


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
        locator = axes.xaxis.get_major_locator()
        if isinstance(locator, MaxNLocator):  # the default AutoLocator; other locators take no `integer`
            locator.set_params(integer=True)
    axes.set_xlabel("Year")
    axes.set_ylabel("Row band's score, %")
    axes.set_title(title)
    return _png(figure)


def _steps(distribution: pl.DataFrame, value: str) -> tuple[list[float], list[float]]:
    """Step outline over whole bins: each bin drawn from its low to its high end, the last one included."""
    lows = distribution["bin_low"].cast(pl.Float64).to_list()
    values = distribution[value].cast(pl.Float64).to_list()
    width = float(distribution["bin_high"][0] - distribution["bin_low"][0] + 1) if distribution.height else 1.0
    return [*lows, lows[-1] + width], [*values, values[-1]]


def rating_distribution_figure(
    distributions: pl.DataFrame, title: str = "Rating distribution", value: str = "players", columns: int = 4
) -> Figure:
    """Small multiples: one panel per list of a RatingDistribution frame, in frame order, all on the
    same axes (x covers every list's whole range, y the largest bin), each titled with its players.

    With two lists (before/after compression) each panel also shows the other list in grey, for
    comparison. `value` is 'players' (counts) or 'share_pct' (lists of different sizes).
    """
    if value not in ("players", "share_pct"):
        raise ValueError(f"value must be 'players' or 'share_pct', got {value!r}")
    groups = [(period, frame.sort("bin_low")) for period, frame in _groups(distributions, "period")]
    if not groups:
        figure, axes = _new_figure()
        _empty_note(axes, "no rated player")
        axes.set_title(title)
        return figure
    columns = max(1, min(columns, len(groups)))
    rows = -(-len(groups) // columns)
    width, height = FIGURE_SIZE[0] * (1.3 if columns > 2 else 1.0), max(4.5, 1.0 + 2.3 * rows)
    if rows == 1:
        figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    else:
        # Margins in inches, set once: the constrained layout measures every panel's labels again, and that was half
        # the drawing of a 17-panel chart of January lists.
        figure = Figure(figsize=(width, height), dpi=DPI)
        figure.subplots_adjust(
            left=0.9 / width, right=1 - 0.15 / width, bottom=0.7 / height, top=1 - 0.8 / height, wspace=0.1, hspace=0.4
        )
    FigureCanvasAgg(figure)
    grid = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    lowest, highest = distributions["bin_low"].min(), distributions["bin_high"].max()
    assert isinstance(lowest, (int, float)) and isinstance(highest, (int, float))  # bins of a non-empty frame
    low = float(lowest)
    high = float(highest) + 1.0
    for index, (period, distribution) in enumerate(groups):
        axes = grid[index // columns][index % columns]
        axes.grid(True, alpha=0.3)
        if len(groups) == 2:
            other = groups[1 - index][1]
            axes.step(*_steps(other, value), where="post", color="#999999", linewidth=0.9, label=groups[1 - index][0])
        xs, ys = _steps(distribution, value)
        axes.fill_between(xs, ys, step="post", color=f"C{index % 10}", alpha=0.35)
        axes.step(xs, ys, where="post", color=f"C{index % 10}", linewidth=1.2, label=period)
        rated = int(distribution["players"].sum())
        axes.set_title(f"{period} · {rated:,} rated", fontsize=9)
        if len(groups) == 2:
            axes.legend(fontsize=7, loc="upper right")
    for index in range(len(groups), rows * columns):
        grid[index // columns][index % columns].set_visible(False)
    # Every panel shows the whole range of every list: no list is cut where another one ends.
    grid[0][0].set_xlim(low, high)
    grid[0][0].set_ylim(bottom=0)
    figure.supxlabel("Rating (bin start)")
    figure.supylabel("Players" if value == "players" else "Share of rated players, %")
    figure.suptitle(title)
    return figure


def plot_rating_distribution(
    distributions: pl.DataFrame, title: str = "Rating distribution", value: str = "players"
) -> bytes:
    """PNG of `rating_distribution_figure`: one panel per list (e.g. each January list, or a list
    before and after compression).
    """
    return _png(rating_distribution_figure(distributions, title, value))


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
            axes.plot(
                first_days,
                [float("nan") if v is None else v for v in ratings],
                marker="o",
                markersize=3,
                label=scenario,
            )
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


def plot_pool_ledger(yearly: pl.DataFrame, channels: list[str], title: str) -> bytes:
    """PNG: the pool's points by year as stacked bars, one colour per channel (above zero what came in, below what
    went), and the year's net change as a line with dots.
    """
    figure, axes = _new_figure()
    years = yearly["year"].cast(pl.Int32).to_list()
    above = [0.0] * len(years)
    below = [0.0] * len(years)
    for index, channel in enumerate(channels):
        values = yearly[channel].cast(pl.Float64).to_list()
        bottoms = [above[i] if v >= 0 else below[i] for i, v in enumerate(values)]
        axes.bar(years, values, bottom=bottoms, color=f"C{index % 10}", label=channel.replace("_", " "), width=0.8)
        above = [a + max(v, 0.0) for a, v in zip(above, values, strict=True)]
        below = [b + min(v, 0.0) for b, v in zip(below, values, strict=True)]
    if yearly.height:
        axes.plot(years, yearly["pool_change"].to_list(), color="black", marker="o", label="net change")
        axes.legend(fontsize=7, ncol=2)
    else:
        _empty_note(axes, "no list")
    axes.axhline(0, color="#666", linewidth=0.8)
    axes.set_xlabel("Year")
    axes.set_ylabel("Rating points")
    axes.set_title(title)
    return _png(figure)


def plot_cohort_drift(table: pl.DataFrame, title: str) -> bytes:
    """PNG: one line per column of `table` but `year` (a scenario's median yearly change of the stable cohort), the
    true strength's dashed in black.
    """
    figure, axes = _new_figure()
    years = table["year"].cast(pl.Int32).to_list()
    columns = [c for c in table.columns if c != "year"]
    # A one-time event (a compression adds 100-200 points in its year) would flatten the drift of every other year
    # to a line: the axis covers the usual years, and a year beyond it is marked at the edge with its value.
    sizes = sorted(abs(v) for c in columns for v in table[c].cast(pl.Float64).drop_nulls().to_list())
    limit = max(20.0, 1.5 * sizes[int(0.8 * (len(sizes) - 1))]) if sizes else 20.0
    for index, column in enumerate(columns):
        values = [float("nan") if v is None else v for v in table[column].cast(pl.Float64).to_list()]
        shown = [max(-limit, min(limit, v)) for v in values]
        if column == "true strength":
            axes.plot(years, shown, color="black", linestyle="--", marker="x", label=column)
        else:
            axes.plot(years, shown, color=f"C{index % 10}", marker="o", label=column)
        for year, value in zip(years, values, strict=True):
            if abs(value) > limit:
                edge = limit if value > 0 else -limit
                axes.annotate(
                    f"{value:+.0f}",
                    (year, edge),
                    fontsize=7,
                    color=f"C{index % 10}",
                    ha="center",
                    xytext=(0, -10 if value > 0 else 4),
                    textcoords="offset points",
                )
    axes.set_ylim(-limit * 1.05, limit * 1.05)
    axes.axhline(0, color="#666", linewidth=0.8)
    if table.height:
        axes.legend(fontsize=8)
    else:
        _empty_note(axes, "no December lists a year apart")
    axes.set_xlabel("Year")
    axes.set_ylabel("Median change over the year, rating points")
    axes.set_title(title)
    return _png(figure)
