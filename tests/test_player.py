"""`ratings player`: history under every scenario, a month's calculation that adds up to the list's change, HTML
page.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.publish.player_card import month_games, period_change, player_report, render_html
from pipeline.scenarios.model import Scenario
from pipeline.store.object_store import ObjectStore
from schemas.performance import Performance

FIRST, LAST = "2024-01", "2024-02"  # two of the tiny landing zone's months keep this fast
SCENARIOS = {
    "actual": Scenario(name="actual", description="FIDE's regulations", rules="fide-historical"),
    "elo-32": Scenario(name="elo-32", description="plain Elo, K 32", rules="elo-32"),
}
NO_NAMES = pl.DataFrame(schema={"player_id": pl.Int64, "name": pl.Utf8})


@pytest.fixture(scope="module")
def store(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Lists, rated games and performance of both scenarios for 2024-01..02, materialized through Dagster."""
    from assets.automation import range_tags
    from assets.definitions import build_defs

    root = tmp_path_factory.mktemp("player") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    defs = build_defs(FIRST, LAST, root=str(root), scenarios=SCENARIOS)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    wanted = [key for key in keys if key.path[-1] in ("rating_list", "rated_games", "performance")]
    selection = dg.AssetSelection.assets(*wanted).upstream().required_multi_asset_neighbors()
    result = dg.materialize(
        list(defs.assets),
        resources=defs.resources,
        selection=selection,
        tags=range_tags(FIRST, LAST),
    )
    assert result.success
    object_store = ObjectStore(str(root))
    rating_list = object_store.read_parquet(f"actual/rating_list/{LAST}.parquet")
    # A player rated before the month who played several games in it, with a non-zero change.
    busy = rating_list.filter(pl.col("change").is_not_null() & (pl.col("change") != 0) & (pl.col("games") >= 3))
    player = int(busy.sort("games", "player_id", descending=[True, False])["player_id"][0])
    return SimpleNamespace(root=str(root), store=object_store, player=player, rating_list=rating_list)


def test_history_has_one_column_per_scenario(store: SimpleNamespace) -> None:
    report = player_report(store.store, store.player)
    assert report.scenarios == ["actual", "elo_32"] and report.scenario == "actual"
    assert report.history.columns == ["month", "actual", "elo_32", "games"]
    assert report.history["month"].to_list() == [FIRST, LAST]
    for scenario in ("actual", "elo_32"):
        for month in (FIRST, LAST):
            listed = pl.read_parquet(Path(store.root) / scenario / "rating_list" / f"{month}.parquet")
            rating = listed.filter(pl.col("player_id") == store.player)["rating"].to_list()
            assert report.history.filter(pl.col("month") == month)[scenario].to_list() == rating, (scenario, month)


def test_default_month_is_the_latest_played_and_the_changes_add_up(store: SimpleNamespace) -> None:
    report = player_report(store.store, store.player)
    listed = store.rating_list.filter(pl.col("player_id") == store.player).row(0, named=True)
    assert report.month == LAST and report.list_row["k_used"] == listed["k_used"]
    # Every rule set here rounds per period: the rounded sum of the games' changes is the list's change.
    assert report.rounded_change == listed["change"]
    assert report.games.filter(pl.col("change").is_not_null()).height == listed["games"]
    # One game by hand: K x (score - expected) x weight, from the stored rated_games row.
    rated = pl.read_parquet(Path(store.root) / "actual" / "rated_games" / f"{LAST}.parquet")
    game = report.games.filter(pl.col("change").is_not_null()).row(0, named=True)
    stored = rated.filter(pl.col("game_id") == game["game_id"]).row(0, named=True)
    white = stored["white_id"] == store.player
    score = stored["white_score"] if white else 1.0 - stored["white_score"]
    expected = stored["white_expected"] if white else stored["black_expected"]
    assert game["change"] == pytest.approx(listed["k_used"] * (score - expected) * stored["weight"])
    assert game["opponent_id"] == (stored["black_id"] if white else stored["white_id"])
    assert game["opponent_name"]  # from the generated registry


def test_per_game_changes_sum_to_the_list_change_for_many_players(store: SimpleNamespace) -> None:
    for scenario in ("actual", "elo_32"):
        listed = store.store.read_parquet(f"{scenario}/rating_list/{LAST}.parquet")
        rated = store.store.read_parquet(f"{scenario}/rated_games/{LAST}.parquet")
        changed = listed.filter(pl.col("change").is_not_null() & (pl.col("games") > 0)).sort("player_id").head(40)
        assert changed.height >= 10
        for player, change, k_used in changed.select("player_id", "change", "k_used").iter_rows():
            total, rounded = period_change(month_games(rated, player, k_used, NO_NAMES), k_used)
            assert rounded == change, (scenario, player, total)


def test_performance_of_the_month_by_hand(store: SimpleNamespace) -> None:
    from pipeline.rules.tables import DP_BY_PERCENT  # table 8.1.1 as data

    rated = pl.read_parquet(Path(store.root) / "actual" / "rated_games" / f"{LAST}.parquet")
    ratings, scores = [], []
    for g in rated.filter(pl.col("weight") > 0).iter_rows(named=True):
        for me, opponent_rating, score in (
            (g["white_id"], g["black_rating_used"], g["white_score"]),
            (g["black_id"], g["white_rating_used"], 1.0 - g["white_score"]),
        ):
            if me == store.player and opponent_rating is not None:
                ratings.append(opponent_rating)
                scores.append(score)
    n, points = len(ratings), sum(scores)
    wins, losses = scores.count(1.0), scores.count(0.0)
    # A few games, neither perfect nor zero: p to two decimals half up, Rp and the 400 figure half up.
    assert 0 < points < n
    fide = int(sum(ratings) / n + DP_BY_PERCENT[int(points / n * 100 + 0.5)] + 0.5)
    by_400 = int((sum(ratings) + 400 * (wins - losses)) / n + 0.5)
    stored = Performance.validate(pl.read_parquet(Path(store.root) / "actual" / "performance" / f"{LAST}.parquet"))
    month_row = stored.filter((pl.col("player_id") == store.player) & (pl.col("scope") == "month")).row(0, named=True)
    assert (month_row["games"], month_row["score"]) == (n, points)
    assert (month_row["performance_fide"], month_row["performance_400"]) == (fide, by_400)
    report = player_report(store.store, store.player)
    assert report.performance.filter(pl.col("scope") == "month").row(0, named=True) == month_row


def test_cli_text_and_html(store: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    html = tmp_path / "player.html"
    assert (
        main(
            [
                "player",
                str(store.player),
                "--store",
                store.root,
                "--scenario",
                "elo-32",
                "--month",
                LAST,
                "--html",
                str(html),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"Player {store.player}" in out and f"Calculation for {LAST} under elo_32" in out
    assert "equal to the list's change" in out
    page = html.read_text(encoding="utf-8")
    assert str(store.player) in page and "data:image/png;base64," in page and page.startswith("<!DOCTYPE html>")


def test_html_escapes_names(store: SimpleNamespace) -> None:
    report = player_report(store.store, store.player)
    report.name = "<script>alert(1)</script>"
    page = render_html(report)
    assert "<script>" not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize(
    "args, problem",
    [
        (["999999999"], "is on no rating list"),
        (["--scenario", "nope"], "scenario 'nope'"),
        (["--month", "2023-05"], "no actual rating list for 2023-05"),
    ],
)
def test_cli_errors_are_one_line_exit_2(store: SimpleNamespace, capsys: pytest.CaptureFixture, args, problem) -> None:
    argv = ["player", *(args if args[0].isdigit() else [str(store.player), *args]), "--store", store.root]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err and "Traceback" not in err


def test_cli_store_without_lists(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["player", "4600003", "--store", str(tmp_path)]) == 2
    assert "no rating list in the store" in capsys.readouterr().err
