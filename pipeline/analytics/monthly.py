"""A scenario's monthly analyses: what each computes from a month's table, and the figures the UI shows of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandera.polars as pa
import polars as pl

from pipeline.analytics import predictive_accuracy, summary_crosstable
from pipeline.analytics.curves import band_trend, deflation_index, score_curve
from pipeline.analytics.drift import DRIFT_COLUMNS, cohort_drift
from pipeline.analytics.federations import federation_residuals
from pipeline.analytics.group_truth import GAME_COLUMNS, SIDE_K, START_COLUMNS, YEAR_COLUMNS, game_points, group_truth
from pipeline.analytics.performance import performance_ratings
from pipeline.analytics.previews import accuracy_markdown, crosstable_markdown
from pipeline.analytics.truth import TRUTH_KEY, rating_error_vs_truth
from pipeline.months import add_months, is_december
from pipeline.publish.ranked_registry import federations_in_force
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import read_stored_month, stored_table_months
from pipeline.store.object_store import ObjectStore
from schemas import (
    Accuracy,
    BandTrend,
    Crosstable,
    DeflationIndex,
    FederationResiduals,
    GroupTruth,
    Performance,
    ScoreCurve,
    TruthError,
    YearlyDrift,
)
from schemas.util import empty_frame

#: Figures whose text is Markdown (a table the UI renders).
MARKDOWN_FIGURES = frozenset({"preview"})
#: What the score curves and band trends read of a month's per-game table.
CURVE_COLUMNS = ("month", "white_score", "white_rating_used", "black_rating_used", "white_expected", "black_expected")

MonthTable = Callable[[pl.DataFrame, str], pl.DataFrame]
Figures = dict[str, int | float | str]


@dataclass(frozen=True)
class MonthlyAnalysis:
    """One analysis: its table under the scenario, its model, the table it reads, and how a month is computed."""

    table: str
    model: type[pa.DataFrameModel]
    reads: str  # rated_games or rating_list, of the same scenario
    # What computes a month (from the month's `reads` frame), made once per run: it may read the store.
    prepare: Callable[[ObjectStore, Scenario], MonthTable]
    figures: Callable[[pl.DataFrame], Figures]
    # The columns of `reads` it uses, when they are few (a rating list's pending games cost most of its reading).
    columns: tuple[str, ...] | None = None
    # The months whose `reads` frame it uses; in the others its table is empty and its columns are not read for it.
    reads_in: Callable[[str], bool] = lambda month: True


def _crosstable_figures(table: pl.DataFrame) -> Figures:
    summaries = table.filter(pl.col("opponent_band") == "all")
    if not summaries.height:
        return {"bands": 0, "games_counted": 0, "preview": "no game counted for both sides"}
    return {
        "bands": summaries.height,
        "games_counted": int(summaries["games"].sum()) // 2,
        "preview": crosstable_markdown(table),
    }


def _performance_figures(table: pl.DataFrame) -> Figures:
    events = table.filter(pl.col("scope") == "event")
    return {"players": table.height - events.height, "events": events["event_id"].n_unique()}


def _truth_error(store: ObjectStore, scenario: Scenario) -> MonthTable:
    if not store.exists(TRUTH_KEY):  # real federation data: there is no ground truth to compare with
        return lambda rating_list, month: empty_frame(TruthError)
    truth = store.scan_parquet(TRUTH_KEY)
    return lambda rating_list, month: rating_error_vs_truth(rating_list, truth, month)


def _truth_figures(table: pl.DataFrame) -> Figures:
    overall = table.filter(pl.col("band") == "all")
    if not overall.height:
        return {}
    return {name: float(overall[name][0] or 0.0) for name in ("pair_error_mean", "pair_error_rms", "slope")}


def _cohort_drift(store: ObjectStore, scenario: Scenario) -> MonthTable:
    truth = store.scan_parquet(TRUTH_KEY) if store.exists(TRUTH_KEY) else None

    def drift(rating_list: pl.DataFrame, month: str) -> pl.DataFrame:
        if not is_december(month):
            return empty_frame(YearlyDrift)
        earlier = read_stored_month(store, [scenario.name, "rating_list"], add_months(month, -12), list(DRIFT_COLUMNS))
        return cohort_drift(earlier, rating_list, month, truth)

    return drift


def _group_truth(store: ObjectStore, scenario: Scenario) -> MonthTable:
    truth = store.scan_parquet(TRUTH_KEY) if store.exists(TRUTH_KEY) else None
    path = [scenario.name, "rating_list"]

    def of_month(month: str, rating_list: pl.DataFrame | None = None) -> pl.DataFrame | None:
        """The month's (player_id, change, games): the points its games moved where its per-game table gives each
        side's K (game_points), else its list's change (a rating system).
        """
        games = read_stored_month(store, [scenario.name, "rated_games"], month, list(GAME_COLUMNS), optional=SIDE_K)
        points = game_points(games) if games is not None else None
        if points is not None:
            return points
        listed = rating_list if rating_list is not None else read_stored_month(store, path, month, list(YEAR_COLUMNS))
        return listed.select(YEAR_COLUMNS) if listed is not None else None

    def groups(rating_list: pl.DataFrame, month: str) -> pl.DataFrame:
        if not is_december(month):
            return empty_frame(GroupTruth)
        start = read_stored_month(store, path, add_months(month, -12), list(START_COLUMNS))
        year = [of_month(month, rating_list), *(of_month(add_months(month, -back)) for back in range(1, 12))]
        if start is None or any(frame is None for frame in year):  # a year not stored whole has no figures
            return empty_frame(GroupTruth)
        year_rows = pl.concat([frame.cast({"change": pl.Float64}) for frame in year if frame is not None])
        return group_truth(start, year_rows, month, scenario.k_policy(add_months(month, -11)), truth)

    return groups


def _group_figures(table: pl.DataFrame) -> Figures:
    kinds = table.filter(pl.col("grouping") == "kind")
    return {f"{row['group']}_points": round(float(row["points"]), 1) for row in kinds.iter_rows(named=True)}


def _federation_residuals(store: ObjectStore, scenario: Scenario) -> MonthTable:
    months = stored_table_months(store, [scenario.name, "rated_games"])
    if not months:
        return lambda games, month: empty_frame(FederationResiduals)
    # A player's federation as the month's list gives it: the registry's, else the dumps' (one registry a folder).
    federations = federations_in_force(store, months[-1])
    return lambda games, month: federation_residuals(games, federations(month), month)


def _residual_figures(table: pl.DataFrame) -> Figures:
    return {"federations": table.height, "games": int(table["games"].sum()) if table.height else 0}


def _drift_figures(table: pl.DataFrame) -> Figures:
    if not table.height:
        return {}
    row = table.row(0, named=True)
    figures: Figures = {"players": row["players"]}
    for name in ("median_change", "true_median_change"):
        if row[name] is not None:
            figures[name] = float(row[name])
    return figures


def _index_figures(table: pl.DataFrame) -> Figures:
    overall = table.filter(pl.col("band") == "all")
    if not overall.height or overall["index_pct"][0] is None:
        return {}
    return {"games": int(overall["games"][0]), "index_pct": round(float(overall["index_pct"][0]), 3)}


def _curve_figures(table: pl.DataFrame) -> Figures:
    return {"games": int(table["games"].sum()) if table.height else 0}


MONTHLY_ANALYSES = (
    MonthlyAnalysis(
        "crosstable", Crosstable, "rated_games", lambda store, scenario: summary_crosstable, _crosstable_figures
    ),
    MonthlyAnalysis(
        "performance", Performance, "rated_games", lambda store, scenario: performance_ratings, _performance_figures
    ),
    MonthlyAnalysis(
        "accuracy",
        Accuracy,
        "rated_games",
        lambda store, scenario: lambda games, month: predictive_accuracy(games, month, scenario.name),
        lambda row: {"preview": accuracy_markdown(row)},
    ),
    MonthlyAnalysis("truth_error", TruthError, "rating_list", _truth_error, _truth_figures, ("player_id", "rating")),
    # The month's sums behind the score-curve and band-trend pages (additive: a page over years adds the months up, so
    # a monthly run reads 200 small tables, not every month's per-game table).
    MonthlyAnalysis(
        "score_curve",
        ScoreCurve,
        "rated_games",
        lambda store, scenario: score_curve,
        _curve_figures,
        CURVE_COLUMNS,
    ),
    # The month's Deflation Index (favourites' expected minus actual score) by the favourite's band: pool health.
    MonthlyAnalysis(
        "deflation_index",
        DeflationIndex,
        "rated_games",
        lambda store, scenario: deflation_index,
        _index_figures,
        CURVE_COLUMNS,
    ),
    # The December lists' yearly drift of the stable cohort (the other months' tables are empty): pool health.
    MonthlyAnalysis(
        "cohort_drift", YearlyDrift, "rating_list", _cohort_drift, _drift_figures, DRIFT_COLUMNS, is_december
    ),
    # The ledger's groups' points in the year's games beside their true strength change (December lists): pool health.
    MonthlyAnalysis("group_truth", GroupTruth, "rating_list", _group_truth, _group_figures, YEAR_COLUMNS, is_december),
    # Each federation's players' actual minus expected score against other federations': pool health.
    MonthlyAnalysis(
        "federation_residuals",
        FederationResiduals,
        "rated_games",
        _federation_residuals,
        _residual_figures,
        ("white_id", "black_id", *CURVE_COLUMNS),
    ),
    MonthlyAnalysis(
        "band_trend",
        BandTrend,
        "rated_games",
        lambda store, scenario: lambda games, month: band_trend(games),
        _curve_figures,
        CURVE_COLUMNS,
    ),
)


def columns_read(analyses: Sequence[MonthlyAnalysis], table: str) -> list[str] | None:
    """The columns of `table` (rated_games or rating_list) that `analyses` read together, in a fixed order; None when
    one of them reads every column.
    """
    readers = [analysis for analysis in analyses if analysis.reads == table]
    if any(analysis.columns is None for analysis in readers):
        return None
    return list(dict.fromkeys(column for analysis in readers for column in analysis.columns or ()))


def month_analyses(
    analyses: Sequence[MonthlyAnalysis],
    prepared: dict[str, MonthTable],
    read: Callable[[str, list[str] | None], pl.DataFrame],
    month: str,
) -> list[tuple[pl.DataFrame, Figures]]:
    """Each analysis's table of `month` and its figures, from `prepared` (table -> what computes a month, made by its
    `prepare`); each table they read is read once for all of them (read(table, columns or None: every column)), with
    the columns of the analyses that use it in `month` (MonthlyAnalysis.reads_in): an analysis that does not has an
    empty table. Outside December the list's analyses read two of its columns, not seven (a month's string column of
    last plays was most of its reading).
    """
    using = [analysis for analysis in analyses if analysis.reads_in(month)]
    inputs = {name: read(name, columns_read(using, name)) for name in dict.fromkeys(a.reads for a in using)}
    done = []
    for analysis in analyses:
        if not analysis.reads_in(month):
            table = empty_frame(analysis.model)
            done.append((table, analysis.figures(table)))
            continue
        given = inputs[analysis.reads]
        table = prepared[analysis.table](given if analysis.columns is None else given.select(analysis.columns), month)
        done.append((table, analysis.figures(table)))
    return done
