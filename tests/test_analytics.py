"""Analyses on small hand-made frames with answers worked out by hand.

Windows, crosstables over windows, score curves, band trends, rating distributions, predictive accuracy and its
comparison.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from pipeline.analytics import (
    BandPair,
    PeriodWindow,
    accuracy_on_common_sides,
    band_trend,
    combine_band_trends,
    combine_crosstables,
    combine_score_curves,
    common_sides,
    compare_accuracy,
    format_row_summary,
    frames_in_window,
    january_lists,
    parse_window,
    predictive_accuracy,
    rating_distribution,
    rating_distributions,
    score_curve,
    summary_crosstable,
    years_of,
)
from pipeline.engine.period import compress
from schemas import (
    Accuracy,
    AccuracyComparison,
    BandTrend,
    Crosstable,
    RatedGames,
    RatingDistribution,
    RatingList,
    ScoreCurve,
    column_descriptions,
    polars_schema,
)
from schemas.util import conform

# (white_id, black_id, white_rating, black_rating, white_score, white_expected, black_expected)
Row = tuple[int, int, int | None, int | None, float, float | None, float | None]


def rated_games(rows: list[Row], month: str = "2024-03") -> pl.DataFrame:
    """A valid RatedGames frame of one month from compact rows."""
    frame = pl.DataFrame(
        {
            # Unique across months, so that months can be concatenated.
            "game_id": [int(month.replace("-", "")) * 1000 + i for i in range(len(rows))],
            "month": [month] * len(rows),
            "event_id": ["E1"] * len(rows),
            "white_id": [r[0] for r in rows],
            "black_id": [r[1] for r in rows],
            "white_score": [r[4] for r in rows],
            "time_control": ["classical"] * len(rows),
            "white_rating_used": [r[2] for r in rows],
            "black_rating_used": [r[3] for r in rows],
            "white_expected": [r[5] for r in rows],
            "black_expected": [r[6] for r in rows],
            "weight": [1.0] * len(rows),
            "white_k_used": [20] * len(rows),
            "black_k_used": [20] * len(rows),
        },
        schema_overrides={
            "white_expected": pl.Float64,
            "black_expected": pl.Float64,
            "white_rating_used": pl.Int32,
            "black_rating_used": pl.Int32,
        },
    )
    return RatedGames.validate(conform(frame, RatedGames))


def rating_list(ratings: list[int | None], inactive: list[bool] | None = None) -> pl.DataFrame:
    """A valid RatingList frame with the given ratings (null = unrated)."""
    n = len(ratings)
    frame = pl.DataFrame(
        {
            "player_id": list(range(1, n + 1)),
            "rating": ratings,
            "change": [0] * n,
            "correction": [None] * n,
            "k": [20] * n,
            "k_used": [20] * n,
            "games": [0] * n,
            "games_total": [50] * n,
            "inactive": inactive or [False] * n,
            "delisted": [False] * n,
            "newly_rated": [False] * n,
            "birth_year": [1990] * n,
            "ever_2400": [False] * n,
            "last_played": ["2024-01"] * n,
            "pending_games": [0] * n,
            "pending_since": [None] * n,
            "pending": [[] for _ in range(n)],
        },
        schema_overrides={"rating": pl.Int32, "correction": pl.Int32, "pending_since": pl.Utf8},
    )
    return RatingList.validate(conform(frame, RatingList))


# -- windows --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("2008-12", "2008-01", "2012-12"),
        ("2021-23", "2021-01", "2023-12"),
        ("2017-2020", "2017-01", "2020-12"),
        ("2019", "2019-01", "2019-12"),
        ("1998-02", "1998-01", "2002-12"),  # across a century: the first year from 1998 that ends in 02
        ("1999-2002", "1999-01", "2002-12"),
        ("2000-00", "2000-01", "2000-12"),
    ],
)
def test_parse_window(text: str, first: str, last: str) -> None:
    window = parse_window(text)
    assert (window.label, window.first_month, window.last_month) == (text, first, last)
    assert window.contains(first) and window.contains(last) and not window.contains("2030-01")


@pytest.mark.parametrize("text", ["2013-2012", "1998-2002-03", "20x8", "", "2012-08"])
def test_parse_window_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_window(text)


def test_years_and_frames_in_window() -> None:
    monthly = {"2023-12": "a", "2024-01": "b", "2024-02": "c"}
    assert [w.label for w in years_of(monthly)] == ["2023", "2024"]
    assert frames_in_window(monthly, PeriodWindow("w", "2024-01", "2024-12")) == ["b", "c"]
    assert len(PeriodWindow("w", "2024-01", "2025-02").months()) == 14


# -- crosstable over a window ------------------------------------------------------------------------

MARCH = [
    (1, 2, 1250, 1420, 1.0, 0.30, 0.70),  # 1200-99 beats 1400-99
    (3, 4, 1420, 1290, 0.5, 0.60, 0.40),  # draw, 1400-99 as White
]
APRIL = [
    (5, 6, 1201, 1450, 0.0, 0.20, 0.80),  # 1200-99 loses to 1400-99
    (7, 8, 1499, 1600, 1.0, 0.36, 0.64),  # 1400-99 beats 1600-99
    (9, 10, 1300, 1700, 1.0, None, 0.92),  # rated for Black only: not in the crosstable
]


def test_window_crosstable_cell_and_row_summary_by_hand() -> None:
    months = {"2024-03": rated_games(MARCH, "2024-03"), "2024-04": rated_games(APRIL, "2024-04")}
    window = parse_window("2024")
    direct = summary_crosstable(pl.concat(frames_in_window(months, window)), window.label)
    combined = combine_crosstables([summary_crosstable(g, m) for m, g in months.items()], window.label)
    Crosstable.validate(combined)
    assert combined.schema == polars_schema(Crosstable)
    assert combined.drop("score", "expected", "score_pct", "expected_pct", "diff_pct").equals(
        direct.drop("score", "expected", "score_pct", "expected_pct", "diff_pct")
    )
    for name in ("score", "expected", "diff_pct"):
        assert combined[name].to_list() == pytest.approx(direct[name].to_list())

    def cell(band: str, opponent: str) -> dict:
        (row,) = combined.filter((pl.col("band") == band) & (pl.col("opponent_band") == opponent)).to_dicts()
        return row

    # 1200-99 vs 1400-99: March 1 + 0.5 points (0.30 + 0.40 expected), April 0 (0.20): 1.5 / 0.9 in 3 games.
    got = cell("1200-99", "1400-99")
    assert (got["period"], got["games"]) == ("2024", 3)
    assert got["score_pct"] == pytest.approx(50.0)
    assert got["expected_pct"] == pytest.approx(30.0)
    assert got["diff_pct"] == pytest.approx(20.0)
    # 1400-99 overall: vs 1200-99 1.5 points / 2.1 expected, vs 1600-99 1 / 0.36, 4 games:
    # (2.5 - 2.46) / 4 = +1.0 percentage point.
    summary = cell("1400-99", "all")
    assert summary["games"] == 4
    assert summary["diff_pct"] == pytest.approx(1.0)
    assert format_row_summary(summary["diff_pct"], summary["games"]) == "+1.0% in 4 games"


# -- score vs rating difference ---------------------------------------------------------------------


def test_score_curve_bins_by_hand() -> None:
    games = rated_games(
        [
            (1, 2, 1600, 1500, 1.0, 0.64, 0.36),  # advantage 100, favourite White wins
            (3, 4, 1500, 1620, 0.5, 0.34, 0.66),  # advantage 120, favourite Black draws
            (5, 6, 1550, 1550, 1.0, 0.50, 0.50),  # equal: no favourite, 0.5 / 0.5 in bin 0-49
            (7, 8, 1549, 1500, 0.0, 0.57, 0.43),  # advantage 49, favourite White loses
            (9, 10, 2700, 1800, 1.0, 0.92, 0.08),  # advantage 900: lumped into 800+
            (11, 12, 1500, 1800, 1.0, None, 0.85),  # rated for one side: not counted
        ]
    )
    curve = score_curve(games, "2024-03")
    ScoreCurve.validate(curve)
    assert curve["bin"].to_list() == ["0-49", "100-149", "800+"]
    low = curve.row(0, named=True)
    assert low["games"] == 2 and low["score"] == pytest.approx(0.5) and low["expected"] == pytest.approx(1.07)
    # Bin 100-149: favourite scores 1 + 0.5 of 2 = 75 %, expected (0.64 + 0.66) / 2 = 65 %.
    mid = curve.row(1, named=True)
    assert (mid["bin_low"], mid["games"]) == (100, 2)
    assert mid["score_pct"] == pytest.approx(75.0)
    assert mid["expected_pct"] == pytest.approx(65.0)
    assert mid["diff_pct"] == pytest.approx(10.0)
    assert curve.row(2, named=True)["bin_low"] == 800


def test_score_curves_of_months_add_up_to_the_window() -> None:
    march, april = rated_games(MARCH, "2024-03"), rated_games(APRIL, "2024-04")
    combined = combine_score_curves([score_curve(march, "m"), score_curve(april, "a")], "2024")
    direct = score_curve(pl.concat([march, april]), "2024")
    assert combined.drop("score_pct", "expected_pct", "diff_pct", "score", "expected").equals(
        direct.drop("score_pct", "expected_pct", "diff_pct", "score", "expected")
    )
    assert combined["diff_pct"].to_list() == pytest.approx(direct["diff_pct"].to_list())


def test_score_curve_rejects_uneven_bins() -> None:
    with pytest.raises(ValueError):
        score_curve(rated_games(MARCH), "x", bin_width=30, max_advantage=800)


# -- band vs band trend ------------------------------------------------------------------------------


def test_band_trend_by_year_by_hand() -> None:
    pair = BandPair((1400, 1599), (2000, 2199))
    y2023 = rated_games(
        [
            (1, 2, 1450, 2050, 0.5, 0.02, 0.98),  # underdog White draws
            (3, 4, 2199, 1599, 0.0, 0.97, 0.03),  # underdog Black wins
            (5, 6, 1450, 2250, 1.0, 0.01, 0.99),  # opponent out of range
        ],
        "2023-06",
    )
    y2024 = rated_games([(7, 8, 2000, 1400, 1.0, 0.92, 0.08)], "2024-01")
    trend = band_trend(pl.concat([y2023, y2024]), [pair])
    BandTrend.validate(trend)
    assert trend["period"].to_list() == ["2023", "2024"]
    first = trend.row(0, named=True)
    # 2023: 0.5 + 1 = 1.5 points of 2, expected 0.02 + 0.03 = 0.05: 75 % vs 2.5 %.
    assert first["pair"] == "1400-1599 vs 2000-2199" and first["games"] == 2
    assert first["score_pct"] == pytest.approx(75.0)
    assert first["expected_pct"] == pytest.approx(2.5)
    second = trend.row(1, named=True)
    assert second["score"] == pytest.approx(0.0) and second["expected"] == pytest.approx(0.08)
    # Month by month, then combined: the same yearly rows.
    monthly = combine_band_trends([band_trend(y2023, [pair]), band_trend(y2024, [pair])])
    assert monthly.drop("score_pct", "expected_pct", "diff_pct").equals(
        trend.drop("score_pct", "expected_pct", "diff_pct")
    )


def test_band_pair_must_not_overlap() -> None:
    with pytest.raises(ValueError):
        BandPair((1400, 1599), (1500, 1699))


# -- rating distribution -----------------------------------------------------------------------------


def test_distribution_bins_by_hand() -> None:
    ratings = rating_list([1400, 1424, 1425, 1499, None, 1450], inactive=[False, False, False, False, False, True])
    distribution = rating_distribution(ratings, "January 2024")
    RatingDistribution.validate(distribution)
    # Bins 1400-1424 (2), 1425-1449 (1), 1450-1474 (1, inactive), 1475-1499 (1); the unrated one is out.
    assert distribution["bin_low"].to_list() == [1400, 1425, 1450, 1475]
    assert distribution["bin_high"].to_list() == [1424, 1449, 1474, 1499]
    assert distribution["players"].to_list() == [2, 1, 1, 1]
    assert distribution["share_pct"].to_list() == pytest.approx([40.0, 20.0, 20.0, 20.0])
    active = rating_distribution(ratings, "x", active_only=True)
    # The empty bin between occupied ones stays, with 0 players.
    assert active.filter(pl.col("bin_low") == 1450)["players"].to_list() == [0]


def test_distribution_before_and_after_compression() -> None:
    before = rating_list([1000, 1500, 2100])
    after = compress(before)  # 1000 -> 1400, 1500 -> 1700, 2100 unchanged
    both = rating_distributions({"before": before, "after": after}, bin_width=100)
    after_bins = both.filter((pl.col("period") == "after") & (pl.col("players") > 0))["bin_low"].to_list()
    assert after_bins == [1400, 1700, 2100]
    assert both.filter(pl.col("period") == "before")["bin_low"].min() == 1000


def test_january_lists_are_december_periods() -> None:
    assert january_lists(["2023-11", "2023-12", "2024-01", "2024-12"]) == {
        "January 2024": "2023-12",
        "January 2025": "2024-12",
    }


# -- predictive accuracy -----------------------------------------------------------------------------

ACCURACY_GAMES = [
    (1, 2, 1800, 1700, 1.0, 0.6, 0.4),  # A beats B
    (1, 3, 1800, 1650, 0.5, 0.7, 0.3),  # A draws C
    (2, 3, 1700, 1650, 0.0, 0.5, 0.5),  # B loses to C
    (1, 4, 1800, None, 1.0, None, None),  # A vs an unrated opponent: no prediction
    (5, 2, 1750, 1700, 1.0, None, 0.3),  # unrated E (source rating) beats B: only B's side predicted
]


def test_accuracy_by_hand() -> None:
    row = predictive_accuracy(rated_games(ACCURACY_GAMES), "2024-03", "actual").row(0, named=True)
    # Player totals: A 1.5 - 1.3 = +0.2, B 0 - 1.2 = -1.2, C 1.5 - 0.8 = +0.7 (D and E unrated).
    assert (row["month"], row["scenario"], row["players"], row["games"], row["sides"]) == ("2024-03", "actual", 3, 4, 7)
    assert row["total_abs_error"] == pytest.approx(2.1)
    assert row["mean_abs_error"] == pytest.approx(0.7)
    assert row["sum_squared_error"] == pytest.approx(1.97)
    assert row["rmse"] == pytest.approx(math.sqrt(1.97 / 3))
    # Deviance per game: -log10(0.6); -(0.5 log10 0.7 + 0.5 log10 0.3); -log10(0.5); B's side only: -log10(0.7).
    per_game = [
        -math.log10(0.6),
        -(0.5 * math.log10(0.7) + 0.5 * math.log10(0.3)),
        -math.log10(0.5),
        -math.log10(0.7),
    ]
    assert row["deviance_sum"] == pytest.approx(sum(per_game))
    assert row["deviance"] == pytest.approx(sum(per_game) / 4)
    assert row["deviance"] == pytest.approx(0.254168, abs=1e-6)


def test_deviance_is_capped_and_asymmetric_sides_are_averaged() -> None:
    # A certain prediction that misses costs -log10(0.01) = 2, not infinity.
    capped = predictive_accuracy(rated_games([(1, 2, 2800, 1000, 0.0, 1.0, 0.0)]), "2024-03", "s")
    assert capped["deviance"][0] == pytest.approx(2.0)
    # 400-point-rule variants can give 0.92 / 0.11: the game's deviance is the mean of the two sides'.
    uneven = predictive_accuracy(rated_games([(1, 2, 2700, 2200, 1.0, 0.92, 0.11)]), "2024-03", "s")
    assert uneven["deviance"][0] == pytest.approx((-math.log10(0.92) - math.log10(0.89)) / 2)


def test_accuracy_of_an_empty_month_is_null_not_an_error() -> None:
    row = predictive_accuracy(rated_games([]), "2024-03", "s")
    Accuracy.validate(row)
    assert row["players"][0] == 0 and row["rmse"][0] is None and row["deviance"][0] is None


def test_common_sides_restrict_the_comparison() -> None:
    actual = rated_games(ACCURACY_GAMES)
    # In the other scenario C (id 3) lost its rating to a floor: C's sides of games 2 and 3 have no
    # prediction, and neither has game 5.
    other = actual.with_columns(
        black_expected=pl.when((pl.col("black_id") == 3) | (pl.col("white_id") == 5))
        .then(None)
        .otherwise(pl.col("black_expected")),
    )
    common = common_sides({"actual": actual, "other": other})
    assert (common.white.len(), common.black.len()) == (3, 1)
    restricted = predictive_accuracy(actual, "2024-03", "actual", sides=common)
    assert (restricted["games"][0], restricted["sides"][0]) == (3, 4)


def test_common_sides_score_every_scenario_on_the_same_player_games() -> None:
    """Under A, C (id 3) is unrated, rated by the rating its games state: A predicts the games against C for C's
    opponents alone, B for both sides. On the common sides both are scored on the same sides, not B on C's too.
    """
    b = rated_games(ACCURACY_GAMES[:3])
    a = b.with_columns(black_expected=pl.when(pl.col("black_id") == 3).then(None).otherwise(pl.col("black_expected")))
    common = common_sides({"a": a, "b": b})
    rows = [predictive_accuracy(frame, "2024-03", name, sides=common) for name, frame in (("a", a), ("b", b))]
    assert [row.drop("scenario").row(0) for row in rows] == [rows[0].drop("scenario").row(0)] * 2
    assert (rows[1]["players"][0], rows[1]["games"][0], rows[1]["sides"][0]) == (2, 3, 4)  # C scored under neither


def _predicted_ids(ids: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"game_id": ids, "white_expected": [0.5] * len(ids), "black_expected": [None] * len(ids)},
        schema={"game_id": pl.UInt64, "white_expected": pl.Float64, "black_expected": pl.Float64},
    )


@pytest.mark.parametrize(
    "tables, common",
    [
        ([[1, 2, 3, 5], [2, 3, 4, 5], [0, 3, 5, 9]], [3, 5]),
        ([[5, 3, 1, 3], [3, 1, 7]], [1, 3]),  # out of order and repeated: each id once, in order
        ([[1, 2], []], []),
        ([[], [1, 2]], []),
        ([[4, 8]], [4, 8]),
    ],
)
def test_common_sides_are_the_sides_every_scenario_predicted(tables: list[list[int]], common: list[int]) -> None:
    frames = {f"s{n}": _predicted_ids(ids) for n, ids in enumerate(tables)}
    assert common_sides(frames).white.to_list() == common and common_sides(frames).black.to_list() == []


def common_month(
    seed: int = 5, games: int = 600, scenarios: tuple[str, ...] = ("a", "b", "c")
) -> dict[str, pl.DataFrame]:
    """The columns the common-games accuracy reads of each scenario's per-game table of one month: the same games
    (players, results) in game_id order, each scenario predicting its own sides (about four in five) with its own
    expected scores, random, so that a sum added in another order differs in its last bits.
    """
    rng = np.random.default_rng(seed)
    white = rng.integers(1, 41, games)
    games_of = pl.DataFrame(
        {
            "game_id": np.sort(rng.choice(10**9, games, replace=False)).astype(np.uint64),
            "white_id": white,
            "black_id": (white + rng.integers(0, 39, games)) % 40 + 1,  # never White's player
            "white_score": rng.choice([0.0, 0.5, 1.0], games),
        }
    )

    def expected() -> pl.Series:
        return pl.Series(np.where(rng.random(games) < 0.8, rng.uniform(0.01, 0.99, games), np.nan)).fill_nan(None)

    return {name: games_of.with_columns(white_expected=expected(), black_expected=expected()) for name in scenarios}


@pytest.mark.parametrize(
    "change, shared",
    [
        ({}, True),
        # Each scenario rated other games (a time control one rule set does not rate).
        ({"b": lambda f: f.gather_every(3), "c": lambda f: f.filter(pl.col("game_id") % 2 == 0)}, True),
        ({"c": lambda f: f.clear()}, True),  # a month one scenario has not rated
        ({"b": lambda f: f.reverse()}, False),  # not in game_id order
        ({"c": lambda f: f.with_columns(white_score=1.0 - pl.col("white_score"))}, False),  # rated before a resend
        ({"b": lambda f: f.with_columns(white_id=pl.col("white_id") + 100)}, False),
        (
            {"a": lambda f: f.with_columns(black_id=pl.when(pl.col("black_id") == 3).then(None).otherwise("black_id"))},
            False,
        ),
    ],
)
def test_the_accuracy_on_common_sides_is_each_scenario_s_on_them_grouped_once_where_the_games_agree(
    change: dict, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the tables agree on the common games' players and results (as tables rated from one games table do),
    the sides are grouped by player once for every scenario, with the rows of predictive_accuracy on the common
    sides to the last bit; else each scenario is scored on its own table as before.
    """
    tables = {name: change.get(name, lambda f: f)(frame) for name, frame in common_month().items()}
    common = common_sides(tables)
    each = pl.concat([predictive_accuracy(frame, "2024-03", name, sides=common) for name, frame in tables.items()])
    grouped = []
    group_by = pl.DataFrame.group_by
    monkeypatch.setattr(pl.DataFrame, "group_by", lambda self, *a, **k: grouped.append(1) or group_by(self, *a, **k))
    rows = accuracy_on_common_sides(tables, "2024-03")
    assert rows.equals(each) and (rows["games"][0] > 0) == all(frame.height for frame in tables.values())
    assert len(grouped) == (1 if shared else len(tables))


def test_compare_accuracy_by_hand() -> None:
    rows = pl.DataFrame(
        {
            "month": ["2024-01", "2024-02", "2024-03", "2024-01", "2024-02", "2024-03", "2024-01"],
            "scenario": ["actual"] * 3 + ["new"] * 3 + ["late"],
            "players": [10, 10, 10, 10, 10, 10, 10],
            "games": [20, 20, 20, 20, 20, 20, 20],
            "sides": [40] * 7,
            "total_abs_error": [5.0, 6.0, 7.0, 4.0, 6.5, 6.0, 5.0],
            "sum_squared_error": [4.0, 5.0, 6.0, 3.0, 6.0, 5.0, 4.0],
            "deviance_sum": [5.0, 5.0, 5.0, 4.0, 4.0, 6.0, 5.0],
        }
    ).with_columns(
        mean_abs_error=pl.col("total_abs_error") / 10,
        rmse=(pl.col("sum_squared_error") / 10).sqrt(),
        deviance=pl.col("deviance_sum") / 20,
    )
    accuracy = Accuracy.validate(conform(rows, Accuracy))
    table = compare_accuracy(accuracy, baseline="actual")
    AccuracyComparison.validate(table)
    assert table["scenario"].to_list() == ["actual", "late", "new"]
    baseline, late, new = table.to_dicts()
    assert baseline["share_better_rmse"] is None and baseline["months_compared"] is None
    # new beats actual on MAE in January and March (4 < 5, 6 < 7), not February (6.5 > 6): 2 of 3.
    assert new["months_compared"] == 3
    assert new["share_better_mean_abs_error"] == pytest.approx(2 / 3)
    assert new["share_better_deviance"] == pytest.approx(2 / 3)
    # Pooled: (4 + 6.5 + 6) / 30 player-months; RMSE sqrt(14 / 30); deviance 14 / 60.
    assert new["mean_abs_error"] == pytest.approx(16.5 / 30)
    assert new["rmse"] == pytest.approx(math.sqrt(14 / 30))
    assert new["deviance"] == pytest.approx(14 / 60)
    # A tie is not a win: late equals actual in January.
    assert late["months_compared"] == 1 and late["share_better_mean_abs_error"] == 0.0
    with pytest.raises(ValueError, match="baseline"):
        compare_accuracy(accuracy, baseline="fide-2024")
    assert compare_accuracy(accuracy, baseline=None)["share_better_rmse"].null_count() == 3


def test_new_schemas_describe_every_column() -> None:
    for model in (ScoreCurve, BandTrend, RatingDistribution, Accuracy, AccuracyComparison):
        descriptions = column_descriptions(model)
        assert descriptions and all(descriptions.values()), model.__name__


def test_favourite_gap_by_year_counts_only_games_rated_for_both_sides():
    from pipeline.analytics.favourites import favourite_gap_by_year

    games = pl.DataFrame(
        {
            "month": ["2020-01", "2020-02", "2020-03", "2021-01"],
            "white_rating_used": [2000, 1800, 2000, 1900],
            "black_rating_used": [1800, 2000, 2000, 2100],
            "white_score": [0.0, 0.0, 1.0, 0.5],
            "white_expected": [0.76, 0.24, 0.5, 0.24],
            "black_expected": [0.24, 0.76, 0.5, None],
        }
    )
    gaps = favourite_gap_by_year(games.lazy())
    # 2020: favourites White 2000 (lost, .76) and Black 2000 (won, .76); the equal game is left out.
    assert gaps.rows() == [("2020", 2, pytest.approx(100 * (0.5 - 0.76)))]


def test_each_monthly_analysis_computes_its_model_and_says_what_the_ui_shows(tmp_path) -> None:
    """The analyses an asset runs per month (pipeline.analytics.monthly): each frame matches its model, each figure
    is a number or Markdown text, and a store without ground truth gives an empty truth_error table.
    """
    from pipeline.analytics.monthly import MARKDOWN_FIGURES, MONTHLY_ANALYSES
    from pipeline.scenarios.model import Scenario
    from pipeline.store.object_store import ObjectStore

    games = rated_games([(1, 2, 2100, 1900, 1.0, 0.76, 0.24), (3, 4, 1500, None, 0.5, 0.5, None)])
    rating_list = pl.DataFrame({"player_id": [1, 2], "rating": [2105, 1895]})
    scenario = Scenario(name="plain", rules="fide-2024")
    store = ObjectStore(str(tmp_path))
    by_table = {}
    for analysis in MONTHLY_ANALYSES:
        month_table = analysis.prepare(store, scenario)
        frame = month_table(games if analysis.reads == "rated_games" else rating_list, "2024-03")
        analysis.model.validate(frame)
        by_table[analysis.table] = (frame, analysis.figures(frame))
    crosstable, figures = by_table["crosstable"]
    # Only the game rated for both sides counts: one game, seen from both bands.
    assert figures["games_counted"] == 1 and "|" in str(figures["preview"]) and "preview" in MARKDOWN_FIGURES
    assert by_table["truth_error"][0].is_empty() and by_table["truth_error"][1] == {}
    assert str(by_table["accuracy"][1]["preview"]).startswith("|")
    assert by_table["performance"][1]["players"] >= 1


def test_the_list_is_read_for_the_columns_its_analyses_use_that_month(tmp_path) -> None:
    """Outside December the yearly pool-health tables are empty and their columns of the list are not read; in
    December they are read with the rest, once for all the list's analyses.
    """
    from pipeline.analytics.drift import DRIFT_COLUMNS
    from pipeline.analytics.group_truth import YEAR_COLUMNS
    from pipeline.analytics.monthly import MONTHLY_ANALYSES, month_analyses
    from pipeline.engine.period import normalize_list
    from pipeline.scenarios.model import Scenario
    from pipeline.store.object_store import ObjectStore

    games = rated_games([(1, 2, 2100, 1900, 1.0, 0.76, 0.24)])
    rating_list = normalize_list(pl.DataFrame({"player_id": [1, 2], "rating": [2105, 1895]}))
    store, scenario = ObjectStore(str(tmp_path)), Scenario(name="plain", rules="fide-2024")
    prepared = {analysis.table: analysis.prepare(store, scenario) for analysis in MONTHLY_ANALYSES}
    for month, list_columns in (
        ("2024-03", {"player_id", "rating"}),
        ("2024-12", {"player_id", "rating", *DRIFT_COLUMNS, *YEAR_COLUMNS}),
    ):
        asked: list[tuple[str, list[str] | None]] = []

        def read(table: str, columns: list[str] | None, asked: list = asked) -> pl.DataFrame:
            asked.append((table, columns))
            frame = games if table == "rated_games" else rating_list
            return frame if columns is None else frame.select(columns)

        done = month_analyses(MONTHLY_ANALYSES, prepared, read, month)
        assert [table for table, _ in asked] == ["rated_games", "rating_list"], "each table read once"
        assert set(dict(asked)["rating_list"] or ()) == list_columns, month
        tables = {analysis.table: table for analysis, (table, _) in zip(MONTHLY_ANALYSES, done, strict=True)}
        for analysis in MONTHLY_ANALYSES:
            analysis.model.validate(tables[analysis.table])
        assert tables["cohort_drift"].is_empty() and tables["group_truth"].is_empty()


def test_group_sums_repeat_bit_for_bit() -> None:
    """A rerun writes the same bytes. Adding up 204 months' curves, Polars' group-by merged its threads' partial
    float sums in an order that varied from run to run (a quarter of the runs differed in the last bits);
    in_order_sum adds each group's values in the rows' order, so the windows' tables come out the same every time.
    """
    import numpy as np

    rng = np.random.default_rng(7)

    def month(number: int, games: int = 2_000) -> pl.DataFrame:
        ratings = rng.integers(1000, 2800, (games, 2))
        expected = 1 / (1 + 10 ** ((ratings[:, 1] - ratings[:, 0]) / 400))
        return pl.DataFrame(
            {
                "month": f"{2008 + number // 12}-{number % 12 + 1:02d}",
                "white_rating_used": ratings[:, 0].astype(np.int32),
                "black_rating_used": ratings[:, 1].astype(np.int32),
                "white_score": rng.choice([0.0, 0.5, 1.0], games),
                "white_expected": expected,
                "black_expected": 1 - expected,
            }
        )

    months = [month(number) for number in range(204)]
    curves = [score_curve(games, games["month"][0]) for games in months]
    crosstables = [summary_crosstable(games, games["month"][0]) for games in months]
    assert len({combine_score_curves(curves, "2008-2024").write_ipc(None).getvalue() for _ in range(40)}) == 1
    assert len({combine_crosstables(crosstables, "2008-2024").write_ipc(None).getvalue() for _ in range(10)}) == 1
    # The same sums as added one by one, to the last bits a different order may change.
    summed = combine_score_curves(curves, "2008-2024").filter(pl.col("bin") == "0-49")["expected"].item()
    assert summed == pytest.approx(
        math.fsum(curve.filter(pl.col("bin") == "0-49")["expected"].item() for curve in curves)
    )
