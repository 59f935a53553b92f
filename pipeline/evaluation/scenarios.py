"""Every scenario on one train/test split of the store's own games, and the leaderboard's page and data file.

Each scenario: freeze each chain at the end of training, predict the test months, score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache, partial
from typing import NamedTuple

import polars as pl

from pipeline.evaluation.protocol import month_accuracy, pooled_metrics
from pipeline.ingest.registry import registry_history
from pipeline.reports.index import LEADERBOARD_SECTION, REPORTS_PREFIX
from pipeline.reports.page import render_table_page
from pipeline.reports.writer import store_report
from pipeline.scenarios.chain import players_of
from pipeline.scenarios.model import Scenario, predict_scenario_month
from pipeline.scenarios.restriction import Restriction, restricted_in_month
from pipeline.store.monthly import months_stored, stored_games, table_key
from pipeline.store.object_store import ObjectStore
from pipeline.systems import predict
from schemas.leaderboard import Leaderboard
from schemas.util import conform

#: Test on the last twelve months by default (a year of lists); fewer when the store holds under two years.
DEFAULT_TEST_MONTHS = 12
LEADERBOARD_PAGE = f"{LEADERBOARD_SECTION}/leaderboard.html"  # under reports/, like the data file
LEADERBOARD_DATA = f"{LEADERBOARD_SECTION}/leaderboard.parquet"
PREDICTION_COLUMNS = ["game_id", "month", "white_id", "black_id", "white_score", "white_expected", "black_expected"]


class Split(NamedTuple):
    train: list[str]
    test: list[str]


def split_months(months: list[str], test_months: int = DEFAULT_TEST_MONTHS) -> Split:
    """The last `test_months` months are the test, the ones before the training; at most half the months are test."""
    if len(months) < 2:
        raise ValueError(
            f"an evaluation needs at least two stored months (one to train, one to test), found {len(months)}"
        )
    if test_months < 1:
        raise ValueError("test_months must be at least 1")
    n = min(test_months, len(months) // 2)
    return Split(months[:-n], months[-n:])


def test_players_rows(scenario: Scenario, frozen_list: pl.DataFrame, players: pl.Series) -> pl.DataFrame:
    """The frozen list cut to `players` (the test games' players, or more) for a rule set; a system's as it is.

    A rule set's prediction of a game reads only its two players' rows of the list (a period of several months
    included: the month's own games are kept), so the cut list gives the same per-game table, from a list a fraction
    of the size at the fide scale.
    """
    if scenario.is_system:
        return frozen_list
    return frozen_list.filter(pl.col("player_id").is_in(players.implode()))


def month_predictions(
    scenario: Scenario,
    frozen_list: pl.DataFrame,
    frozen_state: pl.DataFrame | None,
    games_of: Callable[[str], pl.DataFrame],
    month: str,
) -> pl.DataFrame:
    """The test games of `month` with the expected scores of the list (or system state) frozen at the end of training
    (PREDICTION_COLUMNS).

    A rule set predicts a game for a side exactly as its per-game table would with that list in force
    (rated players, rated time controls, its expectancy and 400-point rule), from that list only: the ratings a
    file states for its players are not read (frozen_list_only); a system predicts every
    game of the time controls it rates, a player it has not seen at its initial values.
    """
    if scenario.is_system:
        assert frozen_state is not None, "a system scenario is predicted from its frozen system state"
        rules = scenario.system_rules()
        rated = games_of(month).filter(scenario.rates_game())
        expected = predict(rules.system, frozen_state, rated, rules.params)
        part = rated.with_columns(
            pl.col("game_id").cast(pl.UInt64),
            month=pl.lit(month),
            white_expected=expected,
            black_expected=1.0 - expected,
        )
    else:
        # The scenario's own month, but from the frozen list: only the per-game expectations, no list.
        part = predict_scenario_month(scenario, frozen_list, frozen_list_only(games_of), month)
    return part.select(PREDICTION_COLUMNS)


#: The ratings a game file states for its players (Games), which the engine uses over the list in force.
STATED_RATINGS = ("white_rating_used", "black_rating_used")


def frozen_list_only(games_of: Callable[[str], pl.DataFrame]) -> Callable[[str], pl.DataFrame]:
    """games_of with the ratings the files state removed: a test prediction reads the list frozen at the end of
    training and nothing else.

    A dump that states its players' ratings (TRF, PGN Elo tags, a CSV's white_rating) states the ratings of the test
    months themselves; the engine would rate a game with them over the frozen list, and the prediction would know
    what the test months did to the ratings.
    """

    def without_stated(month: str) -> pl.DataFrame:
        games = games_of(month)
        stated = [c for c in STATED_RATINGS if c in games.columns]
        return games.with_columns(pl.lit(None, dtype=games.schema[c]).alias(c) for c in stated)

    return without_stated


def leaderboard(
    scenarios: Mapping[str, Scenario],
    monthly: Iterable[tuple[str, Mapping[str, pl.DataFrame]]],
    split: Split,
    train_games: int,
    test_games: int,
) -> pl.DataFrame:
    """One Leaderboard row per scenario, scored on the games every scenario predicts for both sides, best deviance
    first. `monthly`: each test month with every scenario's predictions of it (month_predictions), in order; a month
    is scored and let go before the next (a year of four scenarios' predictions held at once was 0.8 GB at the fide
    scale, the peak of the run that writes the leaderboard).
    """
    names = list(scenarios)
    # A national scenario (restrict) predicts its federation's games only: the others' common games are not cut to
    # those, and it is scored on its own games among them, unranked (other games, other terms).
    whole = [name for name in names if scenarios[name].restrict is None] or names
    predicted, common_games = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
    accuracy: dict[str, list[pl.DataFrame]] = {name: [] for name in names}
    for month, predictions in monthly:
        both = {
            name: frame.filter(pl.col("white_expected").is_not_null() & pl.col("black_expected").is_not_null())
            for name, frame in predictions.items()
        }
        common = None
        for name in whole:
            ids = both[name].select("game_id")
            common = ids if common is None else common.join(ids, on="game_id", how="semi")
        for name, frame in both.items():
            assert common is not None  # set by the loop above, over these same frames
            shared = frame.join(common, on="game_id", how="semi").sort("game_id")
            predicted[name] += frame.height
            common_games[name] += shared.height
            if shared.height:
                accuracy[name].append(month_accuracy(shared.drop("game_id"), month))
    rows = []
    for name in names:
        scenario = scenarios[name]
        metrics = (
            pooled_metrics(pl.concat(accuracy[name]))
            if accuracy[name]
            else {
                "player_months": 0,
                "player_month_rmse": None,
                "mean_abs_error": None,
                "deviance_log10": None,
                "bdev": None,
            }
        )
        rows.append(
            {
                "scenario": name,
                "kind": "system" if scenario.is_system else "rule set",
                "setting": setting_of(scenario, split.test),
                "train_from": split.train[0],
                "train_to": split.train[-1],
                "train_games": train_games,
                "test_from": split.test[0],
                "test_to": split.test[-1],
                "test_games": test_games,
                "predicted_games": predicted[name],
                "common_games": common_games[name],
                **{
                    k: metrics[k]
                    for k in ("player_months", "deviance_log10", "bdev", "player_month_rmse", "mean_abs_error")
                },
            }
        )
    table = pl.DataFrame(rows, infer_schema_length=None).sort("deviance_log10", "scenario", nulls_last=True)
    # A scenario without a metric (no common test game) is not ranked: an order of empty cells would be made up.
    comparable = pl.col("deviance_log10").is_not_null() & pl.col("scenario").is_in(whole)
    table = table.sort(~comparable, maintain_order=True)
    ranked = table.with_row_index("rank", offset=1).with_columns(
        pl.when(comparable).then(pl.col("rank").cast(pl.Int64)).alias("rank")
    )
    return conform(ranked, Leaderboard)


def setting_of(scenario: Scenario, test: list[str]) -> str:
    only = f"; {scenario.restrict.describe()}" if scenario.restrict is not None else ""
    if scenario.is_system:
        rules = scenario.system_rules()
        params = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in rules.settings().items())
        return f"{rules.system.name}: {params}; {scenario.rated_games_description()}{only}"
    return ", ".join(dict.fromkeys(scenario.rules_name(m) for m in test)) + only


def caption(table: pl.DataFrame) -> str:
    """The split and the game counts, said once above the table."""
    if table.height == 0:
        return "No scenario to evaluate."
    first = table.row(0, named=True)
    return (
        f"Trained on {first['train_from']}..{first['train_to']} ({first['train_games']:,} validated games: "
        f"each scenario's stored chain up to {first['train_to']}), then frozen; tested on "
        f"{first['test_from']}..{first['test_to']} ({first['test_games']:,} games, of which "
        f"{first['common_games']:,} are predicted for both sides by every scenario and scored). Lower is better "
        "for every metric; ranked by deviance_log10."
    )


def stored_split(
    store: ObjectStore, scenarios: Mapping[str, Scenario], months: Sequence[str], test_months: int = DEFAULT_TEST_MONTHS
) -> Split:
    """The split of the `months` whose games and every scenario's list are stored (split_months: ValueError when
    fewer than two are).
    """
    held = months_stored(store, ["games"], months)
    for scenario in scenarios.values():
        lists = set(months_stored(store, [scenario.name, "rating_list"], held))
        held = [m for m in held if m in lists]
    return split_months(held, test_months)


def evaluate_stored(store: ObjectStore, scenarios: Mapping[str, Scenario], split: Split) -> pl.DataFrame:
    """The Leaderboard of the stored chains: each frozen at the split's last training month, predicting its test
    months' stored games a month at a time (leaderboard).
    """
    # Every scenario predicts a month from its games, and a list of several months reads the months of its period.
    games_of = lru_cache(maxsize=4)(partial(stored_games, store))

    train_to = split.train[-1]
    history = registry_history(store, split.test[-1]) if any(s.restrict for s in scenarios.values()) else None
    sides = [stored_games(store, month, ["white_id", "black_id"]) for month in split.test]
    # Every test game's players, a national scenario's among them: its list cut to more players predicts the same.
    players = players_of(sides)
    frozen, readers = {}, {}
    for name, scenario in scenarios.items():
        frozen_list = store.read_parquet(table_key([scenario.name, "rating_list"], train_to))
        frozen_state = (
            store.read_parquet(table_key([scenario.name, "system_state"], train_to)) if scenario.is_system else None
        )
        frozen[name] = test_players_rows(scenario, frozen_list, players), frozen_state
        readers[name] = games_of if scenario.restrict is None else _restricted(games_of, scenario.restrict, history)

    def month_rows(name: str, month: str) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        """The frozen list cut again to the players of the games the month's prediction reads (its period's): the engine
        merges the month's newcomers into it and searches it for every side, and a year's test players made that
        about twice the work of a month's (the same per-game table: test_players_rows).
        """
        frozen_list, frozen_state = frozen[name]
        scenario = scenarios[name]
        if scenario.is_system:
            return frozen_list, frozen_state
        read = players_of(readers[name](m) for m in scenario.months_read(month))
        return test_players_rows(scenario, frozen_list, read), frozen_state

    def monthly() -> Iterator[tuple[str, dict[str, pl.DataFrame]]]:
        for month in split.test:
            yield (
                month,
                {
                    name: month_predictions(scenario, *month_rows(name, month), readers[name], month)
                    for name, scenario in scenarios.items()
                },
            )

    train_games = sum(store.parquet_rows(table_key(["games"], m)) for m in split.train)
    test_games = sum(frame.height for frame in sides)
    return leaderboard(scenarios, monthly(), split, train_games, test_games)


def _restricted(
    games_of: Callable[[str], pl.DataFrame], restriction: Restriction, history: pl.DataFrame | None
) -> Callable[[str], pl.DataFrame]:
    """A national scenario's test games: those of its federation (the registry in force in their month)."""
    return lambda month: restricted_in_month(games_of(month), restriction, history, month)


def write_leaderboard(store: ObjectStore, table: pl.DataFrame) -> str:
    """The leaderboard's data file and page under reports/; returns the page's key."""
    store_report(store, LEADERBOARD_DATA, table)
    page = render_table_page(
        table, "Scenarios on held-out months", caption=caption(table), float_digits=6, back_href="../index.html"
    )
    store_report(store, LEADERBOARD_PAGE, page)
    return f"{REPORTS_PREFIX}/{LEADERBOARD_PAGE}"
