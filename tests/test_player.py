"""`ratings player`: a player's history, list calculations, lookup by name and HTML card.

History under every scenario (the months with activity), a list's calculation that adds up to the list's change in every
era (a quarterly list rates three months of games), a player found by name (local ids too), the HTML card the lists link
to.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest

from pipeline.cli.commands import main
from pipeline.publish.list_files import PLAYER_CARD_LINK
from pipeline.publish.lists import stored_published_month
from pipeline.reports import player_card
from pipeline.reports.player_card import (
    AmbiguousPlayerError,
    active_months,
    chart_title,
    find_players,
    period_change,
    period_games,
    player_page_key,
    player_report,
    render_html,
    render_text,
    resolve_player,
)
from pipeline.scenarios.model import Scenario
from pipeline.store.monthly import UnreadableTableError, stored_table_months
from pipeline.store.object_store import ObjectStore
from pipeline.validate.identity import LOCAL_ID_BASE
from schemas.performance import Performance

FIRST, LAST = "2024-01", "2024-02"  # two of the tiny landing zone's months keep this fast
SCENARIOS = {
    "actual": Scenario(name="actual", description="FIDE's regulations", rules="fide-historical"),
    "elo-32": Scenario(name="elo-32", description="plain Elo, K 32", rules="elo-32"),
}
NO_NAMES = pl.DataFrame(schema={"player_id": pl.Int64, "name": pl.Utf8})
LOCAL_NAME = "Localson, Lukas"  # a player the dumps name without an id: a local id
EARLY_NAME = "Earlyson, Emma"  # another, who plays in FIRST only


def materialize(root: Path, first: str, last: str, scenarios: dict[str, Scenario]) -> None:
    """Lists, rated games and performance of `scenarios` for first..last, materialized through Dagster."""
    from assets.automation import range_tags
    from assets.definitions import build_defs

    defs = build_defs(first, last, root=str(root), scenarios=scenarios)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    wanted = [key for key in keys if key.path[-1] in ("rating_list", "rated_games", "performance")]
    selection = dg.AssetSelection.assets(*wanted).upstream().required_multi_asset_neighbors()
    result = dg.materialize(
        list(defs.assets), resources=defs.resources, selection=selection, tags=range_tags(first, last)
    )
    assert result.success


def name_only_games(registered: pl.DataFrame, local: str = LOCAL_NAME, month: str = LAST) -> str:
    """A PGN of two games of `local`, written without an id, against two registered players in `month`."""
    games = []
    day = month.replace("-", ".")
    for round_, (opponent, name) in enumerate(registered.select("player_id", "name").head(2).iter_rows(), start=1):
        games.append(
            f'[Event "Club night"]\n[Site "Leeds"]\n[Date "{day}.2{round_}"]\n[Round "{round_}"]\n'
            f'[White "{local}"]\n[Black "{name}"]\n[BlackFideId "{opponent}"]\n[WhiteTitle "FM"]\n'
            f'[Result "1-0"]\n[TimeControl "5400+30"]\n\n1. e4 e5 1-0\n'
        )
    return "\n".join(games)


@pytest.fixture(scope="module")
def store(tiny_landing_zone: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Lists, rated games and performance of both scenarios for 2024-01..02, materialized through Dagster; the
    landing zone also holds two games of a player the dumps name without an id.
    """
    root = tmp_path_factory.mktemp("player") / "store"
    shutil.copytree(tiny_landing_zone, root / "raw")
    registered = pl.read_csv(root / "raw" / "players" / FIRST / "players.csv")
    (root / "raw" / "ENG" / LAST / "club-night.pgn").write_text(name_only_games(registered), encoding="utf-8")
    early = name_only_games(registered, EARLY_NAME, FIRST)
    (root / "raw" / "ENG" / FIRST / "club-night-early.pgn").write_text(early, encoding="utf-8")
    materialize(root, FIRST, LAST, SCENARIOS)
    object_store = ObjectStore(str(root))
    rating_list = object_store.read_parquet(f"actual/rating_list/{LAST}.parquet")
    # A player rated before the month who played several games in it, with a non-zero change.
    busy = rating_list.filter(pl.col("change").is_not_null() & (pl.col("change") != 0) & (pl.col("games") >= 3))
    player = int(busy.sort("games", "player_id", descending=[True, False])["player_id"][0])
    return SimpleNamespace(
        root=str(root), store=object_store, player=player, rating_list=rating_list, registered=registered
    )


def test_history_has_one_column_per_scenario(store: SimpleNamespace) -> None:
    report = player_report(store.store, store.player, all_months=True)
    assert report.scenarios == ["actual", "elo_32"] and report.scenario == "actual"
    assert report.history.columns == ["month", "actual", "elo_32", "games", "flags"]
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
            total, rounded = period_change(period_games(rated, player, k_used, NO_NAMES), k_used)
            assert rounded == change, (scenario, player, total)


def test_the_card_s_change_is_the_list_s_under_a_rule_set_that_rounds_per_event(tmp_path: Path) -> None:
    """A rule set given as data that rounds per event (§8.3.4's exception): the card rounds as the engine does, so its
    change is the list's for every player, where rounding the period's sum once would differ for some.
    """
    import numpy as np

    from pipeline.engine.period import rate_period
    from pipeline.rules.model import load_rules

    path = tmp_path / "per-event.yaml"
    path.write_text("extends: fide-2024\nname: per-event\nrounding: per-event\n", encoding="utf-8")
    rules = load_rules(str(path))
    rng = np.random.default_rng(5)
    players, count = 120, 3_000
    previous = pl.DataFrame(
        {"player_id": np.arange(1, players + 1), "rating": rng.integers(1500, 2500, players), "k": [20] * players}
    )
    white = rng.integers(1, players + 1, count)
    games = pl.DataFrame(
        {
            "event_id": [f"e{e}" for e in rng.integers(0, 40, count)],
            "white_id": white,
            "black_id": (white + rng.integers(1, players, count) - 1) % players + 1,
            "white_score": rng.choice([0.0, 0.5, 1.0], count),
        }
    )
    result = rate_period(previous, games, rules, "2024-05")
    listed = result.rating_list.filter(pl.col("games") > 0)
    once_differs = 0
    for player, change, k_used in listed.select("player_id", "change", "k_used").iter_rows():
        table = period_games(result.rated_games, player, k_used, NO_NAMES)
        assert period_change(table, k_used, rules)[1] == change, player
        once_differs += period_change(table, k_used)[1] != change
    assert listed.height == players and once_differs > 0


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


def test_cli_html_without_a_file_writes_the_card_the_lists_link_to(
    store: SimpleNamespace, capsys: pytest.CaptureFixture
) -> None:
    assert main(["player", str(store.player), "--store", store.root, "--html"]) == 0
    card = Path(store.root) / player_page_key(store.player)
    assert capsys.readouterr().out.rstrip().endswith(f"wrote {card}")
    # The link of the player's row on any list page (lists/<scenario>/<YYYY-MM>.html) is this file.
    linked = Path(store.root) / "lists" / "actual" / PLAYER_CARD_LINK.replace("<id>", str(store.player))
    assert linked.resolve() == card.resolve()
    page = card.read_text(encoding="utf-8")
    # No readable list of the month was published: the card says how to make it instead of linking nothing.
    assert "../lists/" not in page and f"ratings player {store.player} --html" in page
    assert f"ratings list --store {store.root} --scenario actual --month {LAST} --format html" in page
    # Made (as `ratings run` publishes it, or on demand into the store's lists/), the card links it.
    listed = Path(store.root) / "lists" / "actual" / f"{LAST}.html"
    listed.parent.mkdir(parents=True, exist_ok=True)
    assert main(["list", "--store", store.root, "--month", LAST, "--format", "html", "--out", str(listed)]) == 0
    try:
        assert main(["player", str(store.player), "--store", store.root, "--html"]) == 0
        assert f"readable list of {LAST}: {listed}" in capsys.readouterr().out
        assert f'href="../lists/actual/{LAST}.html"' in card.read_text(encoding="utf-8")
    finally:
        listed.unlink()


def test_a_player_is_found_by_name_and_a_local_id_too(store: SimpleNamespace, capsys: pytest.CaptureFixture) -> None:
    row = store.rating_list.filter(pl.col("player_id") == store.player)
    name = store.registered.filter(pl.col("player_id") == store.player)["name"][0]
    assert row.height and resolve_player(store.store, name) == store.player
    last, first = name.split(", ")
    # Blanks, case, the comma and the order of the words aside.
    assert resolve_player(store.store, f"  {first.upper()}   {last.lower()} ") == store.player
    local = resolve_player(store.store, "lukas localson")
    assert local >= LOCAL_ID_BASE and len(str(local)) == 16
    assert local in store.store.read_parquet(f"actual/rating_list/{LAST}.parquet")["player_id"].to_list()
    report = player_report(store.store, local)
    assert report.name == LOCAL_NAME and report.games.height == 2
    assert main(["player", "Localson,", "Lukas", "--store", store.root]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Player {local}  {LOCAL_NAME} (no FIDE id: a local id given by name)")
    assert resolve_player(store.store, str(store.player)) == store.player  # digits are an id


def test_a_local_player_is_named_in_a_month_without_games(
    store: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The name the dumps of the month and before gave a player without a registry entry, as the list names them."""
    early = resolve_player(store.store, "emma earlyson")
    assert early >= LOCAL_ID_BASE
    assert player_report(store.store, early, month=FIRST).name == EARLY_NAME
    assert player_report(store.store, early, month=LAST).name == EARLY_NAME
    html = tmp_path / "early.html"
    assert main(["player", "emma", "earlyson", "--store", store.root, "--month", LAST, "--html", str(html)]) == 0
    assert capsys.readouterr().out.startswith(f"Player {early}  {EARLY_NAME} (")
    assert f"<title>Player {early} {EARLY_NAME}" in html.read_text(encoding="utf-8")


def test_player_html_into_a_missing_folder_names_the_option(
    store: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "missing" / "card.html"
    assert main(["player", str(store.player), "--store", store.root, "--html", str(missing)]) == 2
    assert f"ratings player: error: --html {missing}: folder {missing.parent} does not exist" in capsys.readouterr().err


def test_a_name_several_players_hold_lists_them_and_stops(
    store: SimpleNamespace, capsys: pytest.CaptureFixture
) -> None:
    listed = store.rating_list["player_id"].implode()
    surnames = (
        store.registered.filter(pl.col("player_id").is_in(listed))
        .with_columns(pl.col("name").str.split(", ").list.first().alias("surname"))
        .group_by("surname")
        .agg("player_id")
        .filter(pl.col("player_id").list.len() >= 2)
        .sort("surname")
    )
    surname, ids = surnames.row(0)
    with pytest.raises(AmbiguousPlayerError) as ambiguous:
        resolve_player(store.store, surname)
    assert sorted(ambiguous.value.matches["player_id"]) == sorted(ids)
    assert main(["player", surname, "--store", store.root]) == 1
    captured = capsys.readouterr()
    assert all(str(player) in captured.out for player in ids)
    assert f"{len(ids)} players match '{surname}'" in captured.err and captured.err.count("\n") == 1
    assert main(["player", "Nobody, Nemo", "--store", store.root]) == 2
    assert "no player on the stored lists is named 'Nobody, Nemo'" in capsys.readouterr().err
    assert find_players(store.store, "nemo nobody").is_empty()


def test_the_chart_is_titled_with_the_name_and_the_history_reads_one_scan_per_scenario(
    store: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.reports.charts as charts

    scans = []
    scan_parquet = pl.scan_parquet

    def counted(source, *args, **kwargs):  # noqa: ANN001, ANN202
        scans.append(source)
        return scan_parquet(source, *args, **kwargs)

    monkeypatch.setattr(player_card.pl, "scan_parquet", counted)
    rows = player_card.rating_history(store.store, store.player, player_card.stored_list_months(store.store))
    assert len(scans) == 2 and all(len(files) == 2 for files in scans)  # one scan of both months per scenario
    assert rows.height == 4  # the player's row of each list, and nothing else
    monkeypatch.undo()
    report = player_report(store.store, store.player)
    titles = []
    plot = charts.plot_rating_history
    monkeypatch.setattr(charts, "plot_rating_history", lambda *a, **k: titles.append(k["title"]) or plot(*a, **k))
    render_html(report)
    assert titles == [f"Rating history of {report.name}"] and report.name
    # A '$' in a name is text, not Matplotlib's mathtext, and the name is printable.
    report.name = "Cash $x^2$ and $5\u202e, Eve"
    assert chart_title(report) == "Rating history of Cash \\$x^2\\$ and \\$5, Eve"
    render_html(report)


def test_only_months_with_activity_are_shown_unless_asked() -> None:
    def month(m: str, rating, change=0, games=0, inactive=False, delisted=False, new=False) -> dict:  # noqa: ANN001
        return {"scenario": "actual", "month": m, "rating": rating, "change": change, "k_used": None,
                "games": games, "inactive": inactive, "delisted": delisted, "newly_rated": new}  # fmt: skip

    rows = pl.DataFrame(
        [
            month("2024-01", None, None),  # first appearance
            month("2024-02", None, None),
            month("2024-03", 1500, None, games=5, new=True),  # first rating
            month("2024-04", 1500),
            month("2024-05", 1510, 10, games=3),
            month("2024-06", 1510),
            month("2025-06", 1510, inactive=True),  # flagged inactive
            month("2025-07", 1510, inactive=True),
            month("2025-08", None, None, delisted=True),
            month("2025-09", None, None),
        ]
    )
    assert active_months(rows).to_list() == ["2024-01", "2024-03", "2024-05", "2025-06", "2025-08"]
    # Another scenario's activity counts too.
    other = rows.with_columns(scenario=pl.lit("glicko2"), change=pl.lit(0), rating=pl.lit(1600), games=pl.lit(0))
    moved = pl.concat(
        [rows, other.with_columns(games=pl.when(pl.col("month") == "2024-04").then(2).otherwise(0))],
        how="vertical_relaxed",
    )
    assert "2024-04" in active_months(moved).to_list()


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


# -- a quarterly era: the list of March 2008 rates January to March ---------------------------------

QUARTER = ["2008-01", "2008-02", "2008-03"]


@pytest.fixture(scope="module")
def quarterly(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A federation's first quarter of 2008 rated under FIDE's regulations of the time (quarterly lists: the list of
    1 April 2008 is period 2008-03's, and rates the games of January, February and March).
    """
    from pipeline.generator import generate

    root = tmp_path_factory.mktemp("quarterly") / "store"
    generate(str(root), seed=4, players=300, start=QUARTER[0], end=QUARTER[-1])
    scenarios = {"actual": Scenario(name="actual", description="FIDE's regulations", rules="fide-historical")}
    materialize(root, QUARTER[0], QUARTER[-1], scenarios)
    store = ObjectStore(str(root))
    rated = pl.concat([store.read_parquet(f"actual/rated_games/{m}.parquet") for m in QUARTER])
    sides = pl.concat([rated.select("month", pl.col(side).alias("player_id")) for side in ("white_id", "black_id")])
    played = sides.group_by("player_id").agg(pl.col("month").n_unique().alias("months"), pl.len().alias("played"))
    listed = store.read_parquet(f"actual/rating_list/{QUARTER[-1]}.parquet")
    changed = listed.filter(pl.col("change").is_not_null() & (pl.col("change") != 0) & (pl.col("games") > 0))
    return SimpleNamespace(
        root=str(root), store=store, scenarios=scenarios, listed=listed, changed=changed.join(played, on="player_id")
    )


def test_a_quarterly_list_shows_the_games_of_every_month_it_rates(quarterly: SimpleNamespace) -> None:
    # The lists of January and February carry the ratings forward: no game changes a rating before March's list.
    for month in QUARTER[:2]:
        carried = quarterly.store.read_parquet(f"actual/rating_list/{month}.parquet")
        assert carried["k_used"].null_count() == carried.height and carried["games"].sum() == 0
    early = quarterly.changed.filter(pl.col("months") >= 2).sort("played", "player_id", descending=[True, False])
    assert early.height >= 5
    for scenarios in (quarterly.scenarios, {}):  # told by the scenario, or by the stored lists
        for row in early.head(5).iter_rows(named=True):
            report = player_report(quarterly.store, row["player_id"], scenarios=scenarios)
            assert report.month == QUARTER[-1] and report.period == QUARTER, row
            assert report.games.height == row["played"] and report.games["month"].n_unique() == row["months"]
            assert report.games.filter(pl.col("change").is_not_null()).height == row["games"]
            assert report.rounded_change == row["change"], row
    text = render_text(player_report(quarterly.store, int(early["player_id"][0]), scenarios=quarterly.scenarios))
    assert "Calculation for the list of 2008-03 under actual: rating period 2008-01..2008-03" in text
    assert "No game changed a rating" not in text and "equal to the list's change" in text


def test_every_changed_rating_of_a_quarterly_list_adds_up(quarterly: SimpleNamespace) -> None:
    for row in quarterly.changed.sort("player_id").head(30).iter_rows(named=True):
        report = player_report(quarterly.store, row["player_id"], "actual", QUARTER[-1], scenarios=quarterly.scenarios)
        assert report.rounded_change == row["change"], row


def test_a_month_without_a_list_says_which_list_rates_its_games(quarterly: SimpleNamespace) -> None:
    player = int(quarterly.changed.filter(pl.col("months") >= 2)["player_id"][0])
    report = player_report(quarterly.store, player, month=QUARTER[0], scenarios=quarterly.scenarios)
    assert not report.list_published and report.next_list == QUARTER[-1] and report.total_change is None
    text = render_text(report)
    assert f"Games of {QUARTER[0]} under actual" in text
    assert f"No list was published after {QUARTER[0]} under actual: its games are rated on the list of 2008-03" in text
    inferred = player_report(quarterly.store, player, month=QUARTER[0], scenarios={})
    assert not inferred.list_published and inferred.games.equals(report.games)


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A chain's first month, 2024-01, with a one-time compression after it: 3001 (seed 1004, K 40) loses twice to 3002
    (seed 1500) and falls below the floor of 1000.
    """
    root = tmp_path_factory.mktemp("compressed") / "store"
    players, games = root / "raw" / "players" / "2024-01", root / "raw" / "FED" / "2024-01"
    players.mkdir(parents=True)
    games.mkdir(parents=True)
    (players / "seed_list.csv").write_text(
        "player_id,rating,games_total,birth_year,ever_2400,k\n3001,1004,5,1980,false,40\n3002,1500,100,1985,false,20\n"
    )
    (games / "games.csv").write_text(
        "event_id,event_start,date,round,white_id,black_id,result,time_control\n"
        "ev,2024-01-10,2024-01-10,1,3001,3002,0-1,classical\nev,2024-01-11,2024-01-11,2,3002,3001,1-0,classical\n"
    )
    scenario = Scenario.model_validate(
        {
            "name": "actual",
            "description": "FIDE's regulations, compressed after 2024-01",
            "rules": "fide-historical",
            "events": [{"after": "2024-01", "compress": {}}],
        }
    )
    scenarios = {"actual": scenario}
    materialize(root, "2024-01", "2024-01", scenarios)
    return SimpleNamespace(store=ObjectStore(str(root)), scenarios=scenarios)


def test_a_delisted_players_rating_before_is_the_seed_lists(compressed: SimpleNamespace) -> None:
    report = player_report(compressed.store, 3001, scenarios=compressed.scenarios)
    assert report.list_row["rating"] is None and report.rating_before == 1004
    assert "Rating before 1004, K 40, rated games 2; rating after -." in render_text(report)


def test_the_compressions_share_makes_the_card_add_up_to_the_lists_change(compressed: SimpleNamespace) -> None:
    report = player_report(compressed.store, 3002, scenarios=compressed.scenarios)
    row = report.list_row
    assert report.rating_before == 1500 and report.rounded_change is not None and report.one_time_events
    assert report.rounded_change + report.one_time_events == row["change"] == row["rating"] - 1500
    text = render_text(report)
    assert f"one-time event (a compression) {report.one_time_events:+d}" in text
    assert f"equal to the list's change {row['change']:+d}" in text and "NOT equal" not in text


def test_a_compression_whose_share_is_not_kept_is_named_not_called_a_mismatch(
    compressed: SimpleNamespace, tmp_path: Path
) -> None:
    """Without the chain's record of the list before the compression (deleted, or a store rated before it was kept),
    the list's change holds a share the card cannot know: it says so instead of "NOT equal to".
    """
    copy = tmp_path / "store"
    shutil.copytree(compressed.store.root, copy, ignore=shutil.ignore_patterns("kept"))
    report = player_report(ObjectStore(str(copy)), 3002, scenarios=compressed.scenarios)
    assert report.one_time_events is None and report.one_time_events_unkept
    text = render_text(report)
    assert "NOT equal" not in text
    assert f"the list's change {report.list_row['change']:+d} also holds the month's one-time event" in text
    # Where the record is kept, nothing is said of it.
    assert not player_report(compressed.store, 3002, scenarios=compressed.scenarios).one_time_events_unkept


def test_a_stray_or_corrupt_file_among_the_lists_is_named_or_skipped(tmp_path: Path) -> None:
    """A corrupt Parquet file broke every scenario's card and `ratings list` with a ComputeError naming no file, and
    2024-13.parquet was taken for a stored month.
    """
    store = ObjectStore(str(tmp_path))
    for month in ("2024-01", "2024-02"):
        store.write_parquet(
            pl.DataFrame({"player_id": [7, 8], "rating": [2000, 2100]}), f"actual/rating_list/{month}.parquet"
        )
    store.write_parquet(pl.DataFrame({"player_id": [7], "rating": [1]}), "actual/rating_list/2024-13.parquet")
    store.write_parquet(pl.DataFrame({"player_id": [7], "rating": [1]}), "actual/rating_list/copy.parquet")
    assert stored_table_months(store, ["actual", "rating_list"]) == ["2024-01", "2024-02"]
    assert player_card.rating_history(store, 7, {"actual": ["2024-01", "2024-02"]})["rating"].to_list() == [2000, 2000]
    (tmp_path / "actual" / "rating_list" / "2024-02.parquet").write_bytes(b"junk")
    with pytest.raises(UnreadableTableError, match=r"actual/rating_list/2024-02\.parquet cannot be read \(parquet"):
        player_card.rating_history(store, 7, {"actual": ["2024-01", "2024-02"]})
    with pytest.raises(UnreadableTableError, match=r"actual/rating_list/2024-02\.parquet cannot be read"):
        stored_published_month(store, "actual", "2024-02")


def test_a_store_that_fails_to_read_a_list_is_not_taken_for_a_file_to_move_out(tmp_path: Path) -> None:
    """The file-by-file fallback caught every OSError: a store's read failure (a StorageReadError, an S3 network
    error, EIO) was reported as '... cannot be read: move it out of the store', of a file that is whole. The store's
    error is raised as it is.
    """
    import errno

    from pipeline.formats.common import StorageReadError
    from pipeline.store.object_store import StoreFault

    store = ObjectStore(str(tmp_path))
    for month in ("2024-01", "2024-02"):
        store.write_parquet(
            pl.DataFrame({"player_id": [7, 8], "rating": [2000, 2100]}), f"actual/rating_list/{month}.parquet"
        )
    store.is_local = False  # a store double: every table read through its read_parquet, one at a time
    read = store.read_parquet
    for error in (
        StorageReadError("cannot read actual/rating_list/2024-02.parquet: connection reset by peer"),
        StoreFault("object store unreachable: connection failed at s3://bucket/actual/rating_list/2024-02.parquet"),
        OSError(errno.EIO, "Input/output error"),
    ):

        def failing(*parts: str, columns: list[str] | None = None, error: OSError = error) -> pl.DataFrame:
            if parts[-1].endswith("2024-02.parquet"):
                raise error
            return read(*parts, columns=columns)

        store.read_parquet = failing  # type: ignore[method-assign]
        with pytest.raises(OSError) as raised:
            player_card.rating_history(store, 7, {"actual": ["2024-01", "2024-02"]})
        assert raised.value is error
        with pytest.raises(OSError) as raised:
            stored_published_month(store, "actual", "2024-02")
        assert raised.value is error


def newly_rated_cards_agree(store: ObjectStore, scenarios: dict[str, Scenario], month: str) -> int:
    """How many newly rated players of the `month` list have a card whose first rating, from the pool read back from
    the store, is the list's (each card asserted so); pipeline.reports.first_rating.
    """
    listed = store.read_parquet(f"actual/rating_list/{month}.parquet")
    newcomers = listed.filter(pl.col("newly_rated")).sort("player_id")["player_id"].head(25).to_list()
    for player in newcomers:
        report = player_report(store, player, "actual", month, scenarios=scenarios)
        text = render_text(report)
        assert report.first_rating is not None and report.first_rating.published, player
        assert "equal to the list's rating" in text and "NOT equal" not in text, text
    return len(newcomers)


def test_every_first_rating_of_a_rated_chain_is_shown_equal_to_the_list(
    store: SimpleNamespace, quarterly: SimpleNamespace
) -> None:
    """The pool, the first event disregarded and the formula as the card reads them back agree with the lists the
    Dagster chain stored: two-month 2024 pools, and a quarterly 2008 list (9 games, 12.5 per half point).
    """
    assert newly_rated_cards_agree(store.store, SCENARIOS, LAST) >= 1
    assert newly_rated_cards_agree(quarterly.store, quarterly.scenarios, QUARTER[-1]) >= 1
