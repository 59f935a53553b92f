"""Ratings a dump states are checked against the list in force at the event's start (issue 36, part 2).

The list wins for a rated player, a stated rating never rates an unrated opponent, a trusted source's are used as they
are, and every difference is listed.
"""

from __future__ import annotations

import io
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipeline.scenarios.model import Scenario
from pipeline.scenarios.ratings_used import ListsInForce, record_stated_differences, stated_differences_key
from pipeline.store.object_store import ObjectStore
from schemas.stated_ratings import StatedRatings
from schemas.util import polars_schema
from tests.landing import pgn_game, write_raw

LISTS = {
    "2024-01": pl.DataFrame(
        {"player_id": [1, 2, 3], "rating": [2000, 1900, None]}, schema_overrides={"rating": pl.Int32}
    ),
    "2023-12": pl.DataFrame(
        {"player_id": [1, 2, 3], "rating": [1990, 1905, None]}, schema_overrides={"rating": pl.Int32}
    ),
}


def _games(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "game_id": pl.UInt64,
            "federation": pl.Utf8,
            "source_file": pl.Utf8,
            "event_id": pl.Utf8,
            "event_start": pl.Date,
            "white_id": pl.Int64,
            "black_id": pl.Int64,
            "white_rating_used": pl.Int32,
            "black_rating_used": pl.Int32,
        },
        orient="row",
    )


def _in_force(trust: tuple[str, ...] = ()) -> ListsInForce:
    scenario = Scenario(name="s", rules="fide-2024", trust_stated_ratings=trust)
    return ListsInForce(scenario, {"2024-01": LISTS["2024-01"]}, lambda month: LISTS[month])


GAMES = _games(
    [
        # In the period (February): player 1 stated 2100 (listed 2000), unrated player 3 stated 1500.
        (1, "GER", "GER/2024-02/a.pgn", "Feb Open", date(2024, 2, 3), 1, 3, 2100, 1500),
        # Stated as listed: no difference.
        (2, "GER", "GER/2024-02/a.pgn", "Feb Open", date(2024, 2, 3), 2, 1, 1900, 2000),
        # Started in January, rated in February: the list in force at its start (of December) without a statement.
        (3, "ENG", "ENG/2024-02/late.trf", "Jan Cup", date(2024, 1, 20), 2, 1, None, None),
        # Nothing stated, in the period: untouched.
        (4, "ENG", "ENG/2024-02/b.trf", "Feb Cup", date(2024, 2, 10), 1, 2, None, None),
    ]
)


def test_the_list_wins_and_a_stated_rating_never_rates_an_unrated_player():
    games, differences = _in_force().ratings_used(GAMES, "2024-02")
    used = games.select("game_id", "white_rating_used", "black_rating_used").rows()
    # In the period the used column is left empty: the engine reads the list in force (player 3: unrated).
    assert used == [(1, None, None), (2, None, None), (3, 1905, 1990), (4, None, None)]
    assert differences.select("player_id", "source_file", "stated", "listed", "used").rows() == [
        (1, "GER/2024-02/a.pgn", 2100, 2000, 2000),
        (3, "GER/2024-02/a.pgn", 1500, None, None),
    ]


@pytest.mark.parametrize("trust", [("GER",), ("GER/2024-*/*.pgn",)])
def test_a_trusted_source_is_used_as_stated_and_still_listed(trust):
    games, differences = _in_force(trust).ratings_used(GAMES, "2024-02")
    assert games.filter(pl.col("game_id") == 1).select("white_rating_used", "black_rating_used").row(0) == (2100, 1500)
    assert differences["used"].to_list() == [2100, 1500]


def test_a_game_without_statements_is_left_as_it_is():
    plain = GAMES.filter(pl.col("game_id") == 4)
    games, differences = _in_force().ratings_used(plain, "2024-02")
    assert games.equals(plain) and differences.is_empty()


def test_the_stated_ratings_file_has_its_contracts_columns_one_row_per_statement(tmp_path: Path):
    _, differences = _in_force().ratings_used(pl.concat([GAMES, GAMES.filter(pl.col("game_id") == 1)]), "2024-02")
    store = ObjectStore(str(tmp_path))
    assert record_stated_differences(store, "s", "2024-02", differences)["stated_ratings_differing"] == 2
    written = pl.read_csv(store.path(stated_differences_key("s", "2024-02")))
    # The contract scripts read: these columns, in this order; game 1 twice is one statement of two games.
    assert written.columns == ["player_id", "source_file", "event_id", "stated", "listed", "used", "games"]
    assert written.select("player_id", "games").rows() == [(1, 2), (3, 2)]
    StatedRatings.validate(written.cast(dict(polars_schema(StatedRatings))))


# -- end to end --------------------------------------------------------------------------------------------------

SEED = "player_id,rating,birth_year\n1,2000,1980\n2,1900,1981\n"


LISTED = "scenarios:\n  listed:\n    rules: fide-2024\n"
TRUSTING = LISTED + "  trusting:\n    rules: fide-2024\n    trust_stated_ratings: [GER]\n"
WITH_RAPID = LISTED + "  listed_rapid:\n    rules: fide-rapid-2024\n    standard_chain: listed\n"


def _run(store: Path, tmp_path: Path, scenarios_text: str) -> tuple[dict, io.StringIO]:
    """`ratings run` over the store under the scenarios given (it succeeds): its summary and what it printed."""
    from assets.runtime.runs import run_store

    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text(scenarios_text)
    out = io.StringIO()
    summary = run_store(str(store), scenarios_file=str(scenarios), dagster_home=str(tmp_path / "home"), out=out)
    assert summary["success"]
    return summary, out


def test_stated_ratings_in_a_run_are_listed_and_counted(tmp_path: Path):

    store = tmp_path / "store"
    files = {
        "players/2023-12/seed_list.csv": SEED,
        # Player 1 stated 2231 (listed 2000); player 9, unrated, stated 2400 against player 2.
        "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 1, 2, "1-0", elos=(2231, 1900))
        + pgn_game("Open", "2024.01.11", 9, 2, "1-0", elos=(2400, 1900)),
    }
    write_raw(store, files)
    summary, out = _run(store, tmp_path, TRUSTING)
    assert summary["stated_ratings_differing"] == {"listed": 2, "trusting": 2}
    assert pl.read_csv(store / "lists" / "listed" / "2024-01.stated-ratings.csv").columns == list(
        polars_schema(StatedRatings)
    )
    listed = pl.read_csv(store / "lists" / "listed" / "2024-01.stated-ratings.csv")
    assert listed.sort("player_id").select("player_id", "stated", "listed", "used").rows() == [
        (1, 2231, 2000, 2000),
        (9, 2400, None, None),
    ]
    # The list wins: player 2 lost to an unrated player, so only the game against player 1 moved 2's rating, as
    # rated from 2000; trusting the dump, 2 lost to a 2400 too.
    rated = pl.read_parquet(store / "listed" / "rated_games" / "2024-01.parquet").sort("white_id")
    assert rated["white_rating_used"].to_list() == [2000, None]
    trusted = pl.read_parquet(store / "trusting" / "rated_games" / "2024-01.parquet").sort("white_id")
    assert trusted["white_rating_used"].to_list() == [2231, 2400]
    games_of_2 = {
        name: pl.read_parquet(store / name / "rating_list" / "2024-01.parquet")
        .filter(pl.col("player_id") == 2)["games"]
        .item()
        for name in ("listed", "trusting")
    }
    assert games_of_2 == {"listed": 1, "trusting": 2}
    assert "listed: 2 rating(s) stated by the dumps differ from the list in force" in out.getvalue()


def test_a_chain_lists_only_the_stated_ratings_of_the_games_it_rates(tmp_path: Path):
    """A classical game's stated 2050 is a difference of the standard list, not of the rapid list, which does not rate
    the game (and a rapid game's stated rating not of the standard list): each file and count holds its own games.
    """
    store = tmp_path / "store"
    rapid = pgn_game("Rapid", "2024.01.13", 2, 1, "1-0", elos=(1950, None)).replace("5400+30", "900+10")
    write_raw(
        store,
        {
            "players/2023-12/seed_list.csv": SEED,
            "GER/2024-01/open.pgn": pgn_game("Open", "2024.01.10", 1, 2, "1-0", elos=(2050, None)) + rapid,
        },
    )
    summary, _ = _run(store, tmp_path, WITH_RAPID)
    assert summary["stated_ratings_differing"] == {"listed": 1, "listed_rapid": 1}
    for name, stated in (("listed", (1, 2050)), ("listed_rapid", (2, 1950))):
        differences = pl.read_csv(store / "lists" / name / "2024-01.stated-ratings.csv")
        assert differences.select("player_id", "stated").rows() == [stated]


def test_a_trusted_federation_covers_the_games_another_federations_copy_was_kept_for():
    """Game 1 was sent by GER and FRA; FRA's copy is kept (`federation` FRA, `also_reported_by` [GER]): trusting GER
    uses its stated ratings, as trusting FRA does, and trusting ENG does not. A games table without the column (an
    older store) trusts by `federation` alone.
    """
    games = GAMES.with_columns(
        federation=pl.when(pl.col("game_id") == 1).then(pl.lit("FRA")).otherwise(pl.col("federation")),
        also_reported_by=pl.when(pl.col("game_id") == 1).then(pl.lit(["GER"], dtype=pl.List(pl.Utf8))),
    )
    for trust, used in [("GER", (2100, 1500)), ("FRA", (2100, 1500)), ("ENG", (None, None))]:
        rated, _ = _in_force((trust,)).ratings_used(games, "2024-02")
        assert rated.filter(pl.col("game_id") == 1).select("white_rating_used", "black_rating_used").row(0) == used
    rated, _ = _in_force(("GER",)).ratings_used(games.drop("also_reported_by"), "2024-02")
    assert rated.filter(pl.col("game_id") == 1).select("white_rating_used", "black_rating_used").row(0) == (None, None)
