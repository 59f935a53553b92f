"""Issue 37's federation residuals (part 3) and the ledger's groups against their true strength change (part 2).

Each on a small frame worked by hand.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.analytics.federations import federation_residuals
from pipeline.analytics.group_truth import group_truth
from pipeline.rules.model import load_rules
from schemas import FederationResiduals, GroupTruth

#: The K policy whose newcomers the groups are: FIDE's of 2024.
FIDE_K = load_rules("fide-2024").k


def games_of(rows: list[tuple]) -> pl.DataFrame:
    """Rated games from (white_id, black_id, white_score, white_expected, black_expected) rows, ratings known."""
    return pl.DataFrame(
        rows,
        schema={
            "white_id": pl.Int64,
            "black_id": pl.Int64,
            "white_score": pl.Float64,
            "white_expected": pl.Float64,
            "black_expected": pl.Float64,
        },
        orient="row",
    ).with_columns(white_rating_used=pl.lit(1800, pl.Int32), black_rating_used=pl.lit(1700, pl.Int32))


def test_each_federation_scores_against_the_others_what_its_players_scored_minus_what_was_expected():
    federations = pl.DataFrame(
        {"player_id": [1, 2, 3, 4, 5], "federation": ["GER", "GER", "FRA", "ESP", ""]}  # 5: none stated; 6: absent
    )
    games = games_of(
        [
            (1, 3, 1.0, 0.6, 0.4),  # GER 1 of 0.6, FRA 0 of 0.4
            (3, 2, 0.5, 0.7, 0.3),  # FRA 0.5 of 0.7, GER 0.5 of 0.3
            (1, 2, 1.0, 0.5, 0.5),  # within GER: left out
            (4, 5, 1.0, 0.5, 0.5),  # against a player of no federation: left out
            (4, 6, 1.0, 0.5, 0.5),  # against a player the registry does not hold: left out
            (4, 1, 0.0, 0.5, None),  # rated for one side only: left out
            (4, 3, 0.0, 0.25, 0.75),  # ESP 0 of 0.25, FRA 1 of 0.75
        ]
    )
    table = federation_residuals(games, federations, "2024-05")
    FederationResiduals.validate(table)
    rows = {row["federation"]: row for row in table.iter_rows(named=True)}
    assert set(rows) == {"ESP", "FRA", "GER"} and set(table["month"]) == {"2024-05"}
    assert (rows["GER"]["games"], rows["GER"]["score"], rows["GER"]["expected"]) == (2, 1.5, pytest.approx(0.9))
    assert rows["GER"]["residual"] == pytest.approx(0.6) and rows["GER"]["residual_per_game"] == pytest.approx(0.3)
    assert (rows["FRA"]["games"], rows["FRA"]["score"]) == (3, 1.5)
    assert rows["FRA"]["residual"] == pytest.approx(1.5 - 1.85)
    assert rows["ESP"]["games"] == 1 and rows["ESP"]["residual"] == pytest.approx(-0.25)
    # Nothing across federations: no rows.
    assert federation_residuals(games_of([(1, 2, 1.0, 0.5, 0.5)]), federations, "2024-05").is_empty()


def start_list(rows: list[tuple]) -> pl.DataFrame:
    """The list a year before from (player_id, rating, games_total, birth_year) rows."""
    schema = {"player_id": pl.Int64, "rating": pl.Int32, "games_total": pl.Int32, "birth_year": pl.Int32}
    return pl.DataFrame(rows, schema=schema, orient="row")


START = start_list(
    [
        (1, 1850, 10, 1990),  # newcomer (10 rated games), 1800-1999
        (2, 2050, 200, 2010),  # junior (14 in 2024), 2000-2199
        (3, 1990, 500, 1980),  # adult, 1800-1999
        (4, 2100, None, None),  # adult, but plays no game in the year
        (5, None, 0, 1990),  # unrated: no group
        (6, 1500, 40, 1990),  # adult, 1400-1599; the truth does not hold them
    ]
)
YEAR = pl.DataFrame(
    {
        "player_id": [1, 1, 1, 2, 3, 3, 4, 5, 6],
        "change": [10, 5, None, -4, 0, -6, 0, None, 3],
        "games": [3, 2, 0, 4, 1, 2, 0, 5, 1],
    },
    schema={"player_id": pl.Int64, "change": pl.Int32, "games": pl.Int32},
)
TRUTH = pl.DataFrame(
    {
        "player_id": [1, 2, 3, 4, 5] * 2,
        "month": ["2023-12"] * 5 + ["2024-12"] * 5,
        "strength": [1900.0, 2000.0, 2000.0, 2100.0, 1500.0, 1950.0, 2030.0, 1995.0, 2100.0, 1600.0],
    }
)


def test_each_group_gains_its_players_points_of_the_year_beside_their_true_change():
    table = group_truth(START, YEAR, "2024-12", FIDE_K, TRUTH.lazy())
    GroupTruth.validate(table)
    rows = {(r["grouping"], r["group"]): r for r in table.iter_rows(named=True)}
    assert set(table["year"]) == {2024}
    assert sorted(rows) == [
        ("band", "1800-1999"),
        ("band", "2000-2199"),
        ("kind", "adult"),
        ("kind", "junior"),
        ("kind", "newcomer"),
    ]
    figures = {key: (r["players"], r["games"], r["points"], r["true_change"], r["gap"]) for key, r in rows.items()}
    assert figures[("kind", "newcomer")] == (1, 5, 15, 50.0, -35.0)
    assert figures[("kind", "junior")] == (1, 4, -4, 30.0, -34.0)
    assert figures[("kind", "adult")] == (1, 3, -6, -5.0, -1.0)
    assert figures[("band", "1800-1999")] == (2, 8, 9, 45.0, -36.0)
    assert figures[("band", "2000-2199")] == (1, 4, -4, 30.0, -34.0)
    # Each grouping holds the same players.
    for grouping in ("kind", "band"):
        assert table.filter(pl.col("grouping") == grouping)["points"].sum() == 5


def test_without_a_truth_every_player_who_played_counts_and_the_true_figures_are_empty():
    table = group_truth(START, YEAR, "2024-12", FIDE_K)
    rows = {(r["grouping"], r["group"]): r for r in table.iter_rows(named=True)}
    assert (rows[("kind", "adult")]["players"], rows[("kind", "adult")]["points"]) == (2, -3)
    assert rows[("band", "1400-1599")]["players"] == 1
    assert table["true_change"].null_count() == table.height == table["gap"].null_count()
    assert (
        group_truth(START, YEAR, "2024-11", FIDE_K).is_empty() and group_truth(None, YEAR, "2024-12", FIDE_K).is_empty()
    )


def test_the_page_shows_the_federations_with_most_games_by_year_and_the_groups_against_the_truth():
    from pipeline.reports.pool_health import render_pool_health_page, residual_table, yearly_residuals
    from schemas import YearlyDrift
    from schemas.util import empty_frame

    monthly = pl.DataFrame(
        {
            "month": ["2023-05", "2024-01", "2024-02", "2024-02"],
            "federation": ["GER", "GER", "FRA", "<X>"],
            "games": [10, 30, 5, 50],
            "score": [6.0, 14.0, 3.0, 25.0],
            "expected": [5.0, 15.0, 2.0, 25.0],
        }
    )
    yearly = yearly_residuals(monthly)
    ger = yearly.filter(pl.col("federation") == "GER")
    assert ger["residual_per_game"].to_list() == pytest.approx([0.1, -1 / 30])
    table = residual_table(yearly, top=2)
    # Most games first; FRA (5 games) is not among the top two; GER's years pool their points: 0 over 40 games.
    assert table["federation"].to_list() == ["<X>", "GER"] and table["games"].to_list() == [50, 40]
    assert table.row(1) == ("GER", 40, 0.0, 10.0, -3.33)
    groups = group_truth(START, YEAR, "2024-12", FIDE_K, TRUTH.lazy())
    page = render_pool_health_page(
        "s", None, empty_frame(YearlyDrift), None, None, None, ["2024-01", "2024-12"], residuals=yearly, groups=groups
    )
    assert "&lt;X&gt;" in page and "<X>" not in page and "-3.33" in page
    kinds = page.split("By kind of player")[1].split("</table>")[0]
    assert "newcomer" in kinds and "-35.0" in kinds and "1800-1999" not in kinds


def test_a_months_points_are_what_its_games_moved_with_each_sides_k_not_the_lists_change():
    from pipeline.analytics.group_truth import game_points

    games = pl.DataFrame(
        {
            "white_id": [1, 3, 1],
            "black_id": [2, 1, 4],
            "white_score": [1.0, 0.5, 0.0],
            "white_expected": [0.64, 0.5, None],  # the third game does not count for White (unrated opponent)
            "black_expected": [0.36, 0.5, None],
            "weight": [1.0, 0.5, 1.0],
            "white_k_used": pl.Series([40, 20, None], dtype=pl.Int16),  # 1's first game: its late event's K
            "black_k_used": pl.Series([20, 20, None], dtype=pl.Int16),
        }
    )
    points = {row["player_id"]: (row["change"], row["games"]) for row in game_points(games).iter_rows(named=True)}
    assert points.keys() == {1, 2, 3}
    assert points[1] == (pytest.approx(40 * 0.36 + 20 * 0.5 * 0.0), 2)
    assert points[2] == (pytest.approx(-20 * 0.36), 1) and points[3] == (pytest.approx(0.0), 1)
    # A rating system's table (no K): the list's change is read instead.
    assert (
        game_points(
            games.with_columns(
                pl.lit(None, dtype=pl.Int16).alias("white_k_used"), pl.lit(None, dtype=pl.Int16).alias("black_k_used")
            )
        )
        is None
    )


def test_the_yearly_sums_do_not_depend_on_the_order_the_months_come_in() -> None:
    """Float sums in a fixed order: a rerun writes the same bytes however a parallel read or group_by orders rows."""
    import numpy as np

    from pipeline.reports.pool_health import flow_matrix, residual_table, yearly_index, yearly_residuals

    rng = np.random.default_rng(7)
    months = [f"{year}-{month:02d}" for year in range(2008, 2025) for month in range(1, 13)]
    federations = [f"F{i:02d}" for i in range(60)]
    rows = len(months) * len(federations)
    # Values whose float sums differ in their last bits with the order they are added in.
    residuals = pl.DataFrame(
        {
            "month": np.repeat(months, len(federations)),
            "federation": np.tile(federations, len(months)),
            "games": rng.integers(1, 500, rows),
            "score": rng.random(rows) * 1e3 + rng.random(rows) * 1e-9,
            "expected": rng.random(rows) * 1e3 + rng.random(rows) * 1e-9,
        }
    )
    flows = residuals.select(
        "month", grouping=pl.lit("kind"), group="federation", opponent_group=pl.lit("adult"), points="score"
    )
    index = residuals.filter(pl.col("federation") == "F00").select(
        "month", band=pl.lit("all"), games="games", expected="expected", score="score"
    )
    shuffled = [frame.sample(fraction=1.0, shuffle=True, seed=3) for frame in (residuals, flows, index)]
    assert yearly_residuals(shuffled[0]).equals(yearly_residuals(residuals))
    assert residual_table(yearly_residuals(shuffled[0])).equals(residual_table(yearly_residuals(residuals)))
    assert flow_matrix(shuffled[1]).equals(flow_matrix(flows))
    assert yearly_index(shuffled[2]).equals(yearly_index(index))


def test_the_groups_newcomers_are_those_of_the_k_policy_given():
    fewer = load_rules("fide-2024", ["k.newcomer_until_games=10"]).k  # player 1 has 10 rated games: no newcomer now
    kinds = group_truth(START, YEAR, "2024-12", fewer).filter(pl.col("grouping") == "kind")
    assert "newcomer" not in kinds["group"].to_list()
    assert kinds.filter(pl.col("group") == "adult")["players"].item() == 3


def test_a_player_the_dumps_alone_name_counts_for_the_federation_the_list_gives_them(tmp_path) -> None:
    """Two seeded players the registry does not hold, whose dumps say ITA, were ITA on the lists but counted for
    nobody in the residuals: both now take a player's federation from the lists' one rule (registry, else dumps).
    """
    from pipeline.analytics.monthly import MONTHLY_ANALYSES
    from pipeline.publish.ranked_registry import published_registries
    from pipeline.scenarios.model import Scenario
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    store.write_text('player_id,name,federation\n1,"A, A",GER\n2,"B, B",GER\n', "raw/players/2024-01/players.csv")
    identity = pl.DataFrame(
        {
            "month": ["2024-01"] * 2,
            "status": ["new"] * 2,
            "name": ["Rossi, Mario", "Bianchi, Luca"],
            "player_id": [3, 4],
            "records": [2, 2],
            "federation": ["ITA", "ITA"],
            "title": [None, None],
        },
        schema_overrides={"records": pl.UInt32, "title": pl.Utf8},
    )
    store.write_parquet(identity, table_key(["identity"], "2024-01"))
    games = games_of([(1, 3, 1.0, 0.6, 0.4), (4, 2, 0.5, 0.5, 0.5), (3, 4, 1.0, 0.5, 0.5)])
    store.write_parquet(games, table_key(["actual", "rated_games"], "2024-01"))
    analysis = next(analysis for analysis in MONTHLY_ANALYSES if analysis.table == "federation_residuals")
    table = analysis.prepare(store, Scenario(name="actual", rules="fide-historical"))(games, "2024-01")
    listed = dict(published_registries(store, "2024-01")("2024-01").select("player_id", "federation").iter_rows())
    assert [listed[player] for player in (1, 2, 3, 4)] == ["GER", "GER", "ITA", "ITA"]
    # GER 1 of 0.6 and 0.5 of 0.5; ITA 0 of 0.4 and 0.5 of 0.5 (ITA against ITA is within a federation).
    assert table.select("federation", "games", "score").rows() == [("GER", 2, 1.5), ("ITA", 2, 0.5)]
    assert table["expected"].to_list() == pytest.approx([1.1, 0.9])
