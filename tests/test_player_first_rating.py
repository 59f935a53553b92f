"""`ratings player` on a newcomer: the first rating's calculation, and the one line of a player still unrated.

The calculation is from the pool the engine rated (2024: two hypothetical draws against 1800, the 2200 cap; 2014: the
plus-score rule, a zero first event disregarded). The chains are rated here month by month (rate_scenario_month), no
Dagster.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.period import normalize_games, normalize_list
from pipeline.months import add_months
from pipeline.reports.player_card import player_report, render_html, render_text
from pipeline.rules.tables import DP_BY_PERCENT  # table 8.1.1 as data
from pipeline.scenarios.model import Scenario, rate_scenario_month
from pipeline.store.object_store import ObjectStore

SCENARIO = Scenario(name="actual", description="FIDE's regulations", rules="fide-historical")
SCENARIOS = {"actual": SCENARIO}
# Rated opponents (seed list): five near 1800, five at 2400, five at 1050.
OPPONENTS = {1001: 1600, 1002: 1700, 1003: 1850, 1004: 1900, 1005: 2000}
STRONG = {1101 + i: 2400 for i in range(5)}
WEAK = {1201 + i: 1050 for i in range(5)}
NEWCOMER, PENDING, STAR, LOW = 9001, 9002, 9003, 9004


def game(event: str, start: str, white: int, black: int, white_score: float) -> dict:
    return {"event_id": event, "event_start": start, "white_id": white, "black_id": black, "white_score": white_score}


def rated_chain(root: Path, games_by_month: dict[str, list[dict]]) -> ObjectStore:
    """The seed list stored as the list before the first month, then each month rated and stored as the chain
    stores it: rating_list, rated_games, and the validated games (their event starts).
    """
    store = ObjectStore(str(root))
    seed = pl.DataFrame(
        {
            "player_id": [*OPPONENTS, *STRONG, *WEAK],
            "rating": [*OPPONENTS.values(), *STRONG.values(), *WEAK.values()],
            "games_total": [100] * (len(OPPONENTS) + len(STRONG) + len(WEAK)),
        }
    )
    months = sorted(games_by_month)
    previous = normalize_list(seed)
    store.write_parquet(previous, f"actual/rating_list/{add_months(months[0], -1)}.parquet")
    frames = {}
    for number, month in enumerate(months):
        rows = games_by_month[month]
        frame = pl.DataFrame(rows).with_columns(
            pl.col("event_start").str.to_date(), game_id=pl.int_range(pl.len(), dtype=pl.UInt64) + 1000 * number
        )
        frames[month] = normalize_games(frame, month)
        result = rate_scenario_month(SCENARIO, previous, lambda m: frames[m], month)
        store.write_parquet(result.rating_list, f"actual/rating_list/{month}.parquet")
        store.write_parquet(result.rated_games, f"actual/rated_games/{month}.parquet")
        store.write_parquet(frames[month], f"games/{month}.parquet")
        previous = result.rating_list
    return store


def listed(store: ObjectStore, month: str, player: int) -> dict:
    rows = store.read_parquet(f"actual/rating_list/{month}.parquet").filter(pl.col("player_id") == player)
    return rows.row(0, named=True)


def half_up(x: float) -> int:
    return int(x + 0.5)  # positive figures only


@pytest.fixture(scope="module")
def chain_2024(tmp_path_factory: pytest.TempPathFactory) -> ObjectStore:
    """2024-05: the newcomer scores 1.5 of 3, a second player 1 of 2, a third 5 of 5 against 2400s; 2024-06: the
    newcomer 2 of 2. Ratings of opponents stay: a rated player's game against an unrated one does not count.
    """
    may = [
        game("Open May", "2024-05-03", NEWCOMER, 1001, 1.0),
        game("Open May", "2024-05-03", 1002, NEWCOMER, 0.5),
        game("Open May", "2024-05-04", NEWCOMER, 1003, 0.0),
        game("Club <b>", "2024-05-10", PENDING, 1001, 1.0),
        game("Club <b>", "2024-05-11", 1002, PENDING, 1.0),
        *(game("Masters", "2024-05-20", STAR, opponent, 1.0) for opponent in STRONG),
    ]
    june = [
        game("Open June", "2024-06-07", 1004, NEWCOMER, 0.0),
        game("Open June", "2024-06-08", NEWCOMER, 1005, 1.0),
    ]
    return rated_chain(tmp_path_factory.mktemp("first2024") / "store", {"2024-05": may, "2024-06": june})


def test_a_2024_first_rating_is_shown_from_the_pool_of_two_months(chain_2024: ObjectStore) -> None:
    # B.02 2024 §8.2.2: "Ra is the average rating of the player's rated opponents plus two hypothetical opponents
    # rated 1800"; each hypothetical game "considered as a draw"; §8.2.3: Ru = Ra + dp, dp from table 8.1.1.
    opponents = [OPPONENTS[1001], OPPONENTS[1002], OPPONENTS[1003], OPPONENTS[1004], OPPONENTS[1005]]
    points = 1.0 + 0.5 + 0.0 + 1.0 + 1.0
    n = len(opponents) + 2
    ra = (sum(opponents) + 2 * 1800) / n
    p = (points + 1.0) / n
    dp = int(DP_BY_PERCENT[half_up(p * 100)])
    first = half_up(ra + dp)
    assert first < 2200  # the cap does not apply
    row = listed(chain_2024, "2024-06", NEWCOMER)
    assert row["newly_rated"] and row["rating"] == first  # the engine agrees with the regulation's text

    report = player_report(chain_2024, NEWCOMER, scenarios=SCENARIOS)
    assert report.month == "2024-06"
    text = render_text(report)
    assert "No game changed a rating" not in text
    assert "  2024-05: 3 games, 1.5 points, opponents' ratings 5,150" in text
    assert "  2024-06: 2 games, 2 points, opponents' ratings 3,900" in text
    assert "  pooled: 5 games, 3.5 points, opponents' ratings 9,050" in text
    assert (
        "  with 2 hypothetical opponents rated 1800, each game drawn (§8.2.2): 7 games, 4.5 points, opponents' "
        f"ratings {sum(opponents) + 3600:,}"
    ) in text
    assert f"  Ra = {sum(opponents) + 3600:,} / 7 = {ra:.2f}; p = 4.5 / 7 = {half_up(p * 100) / 100:.2f}" in text
    assert f"dp = {dp:+d} (table 8.1.1)" in text
    assert f"  Ru = Ra + dp = {ra + dp:.2f}, rounded {first}\n" in text
    assert f"First rating {first} from 5 games: equal to the list's rating {first} (5 games)." in text


def test_the_2200_cap_is_shown_where_it_applies(chain_2024: ObjectStore) -> None:
    # 5 wins against 2400s: Ra (5 x 2400 + 2 x 1800) / 7, p 6 / 7, Ru far above 2200 (§8.2.3: "at most 2200").
    ra = (5 * 2400 + 2 * 1800) / 7
    uncapped = half_up(ra + int(DP_BY_PERCENT[half_up(6 / 7 * 100)]))
    assert uncapped > 2200 and listed(chain_2024, "2024-05", STAR)["rating"] == 2200
    text = render_text(player_report(chain_2024, STAR, scenarios=SCENARIOS))
    assert f"rounded {uncapped}, at most 2200: 2200" in text
    assert "First rating 2200 from 5 games: equal to the list's rating 2200 (5 games)." in text


def test_a_pending_player_gets_the_games_pooled_of_the_minimum_and_since_when(chain_2024: ObjectStore) -> None:
    row = listed(chain_2024, "2024-06", PENDING)
    assert row["rating"] is None and row["pending_games"] == 2  # 2 games of May, none in June
    # The card's default month: the last list on which the player had rated games.
    report = player_report(chain_2024, PENDING, scenarios=SCENARIOS)
    assert report.month == "2024-05"
    line = "Unrated: 2 of the 5 games against rated opponents a first rating needs are pooled since 2024-05 (§7.1.4)."
    assert line in render_text(report)
    # The list of June holds the same pool: the card of June says so too.
    assert line in render_text(player_report(chain_2024, PENDING, month="2024-06", scenarios=SCENARIOS))
    # A scenario the scenarios file does not hold: the pool, without the rule set's minimum.
    assert "Unrated: 2 games against rated opponents pooled since 2024-05" in render_text(
        player_report(chain_2024, PENDING, scenarios={})
    )


@pytest.fixture(scope="module")
def chain_2015(tmp_path_factory: pytest.TempPathFactory) -> ObjectStore:
    """2015-03: the newcomer's first event is a zero (2 losses), then 3.5 of 5 in a second event; another player
    draws one of 5 games against 1050s.
    """
    march = [
        game("Blitzed <i>\x1b[31m", "2015-03-02", 1001, NEWCOMER, 1.0),
        game("Blitzed <i>\x1b[31m", "2015-03-03", NEWCOMER, 1002, 0.0),
        game("Spring", "2015-03-10", NEWCOMER, 1001, 1.0),
        game("Spring", "2015-03-11", 1002, NEWCOMER, 0.0),
        game("Spring", "2015-03-12", NEWCOMER, 1003, 0.5),
        game("Spring", "2015-03-13", 1004, NEWCOMER, 0.0),
        game("Spring", "2015-03-14", NEWCOMER, 1005, 0.0),
        *(game("Weekend", "2015-03-21", LOW, opponent, 0.5 if opponent == 1201 else 0.0) for opponent in WEAK),
    ]
    return rated_chain(tmp_path_factory.mktemp("first2015") / "store", {"2015-03": march})


def test_a_2014_era_first_rating_adds_20_per_half_point_over_half(chain_2015: ObjectStore) -> None:
    # 2014-2022 §8.21: a zero in the first event is disregarded (§8.21 a); "If he scores 50% or more: Ru = Ra + 20 for
    # each half point scored over 50%" (Ra the average rating of the opponents).
    opponents = list(OPPONENTS.values())  # the second event's five opponents
    points = 1.0 + 1.0 + 0.5 + 1.0 + 0.0
    half_points_over = int(2 * points - len(opponents))
    ra = sum(opponents) / len(opponents)
    first = half_up(ra + 20 * half_points_over)
    row = listed(chain_2015, "2015-03", NEWCOMER)
    assert row["newly_rated"] and row["rating"] == first and row["games"] == 5

    report = player_report(chain_2015, NEWCOMER, scenarios=SCENARIOS)
    text = render_text(report)
    assert "  not counted: the first event 'Blitzed <i>\\x1b[31m', 2 games, 0 points (§8.2.1" in text
    assert "\x1b" not in text  # the dump's control character is escaped on the terminal
    assert "  pooled: 5 games, 3.5 points, opponents' ratings 9,050 (2015-03)" in text
    assert "hypothetical" not in text
    assert (
        f"  Ra = 9,050 / 5 = {ra:.2f}; p = 3.5 / 5 = 0.70 (to the hundredth, half up): {half_points_over} half points "
        f"over 50 % x 20 = +{20 * half_points_over}"
    ) in text
    assert f"  Ru = Ra + {20 * half_points_over} = {ra + 20 * half_points_over:.2f}, rounded {first}\n" in text
    assert f"First rating {first} from 5 games: equal to the list's rating {first} (5 games)." in text
    page = render_html(report)
    assert "Blitzed &lt;i&gt;" in page and "<i>" not in page
    assert f"First rating {first} from 5 games: equal to the list&#x27;s rating {first} (5 games)." in page


def test_a_pool_of_enough_games_below_the_floor_says_so(chain_2015: ObjectStore) -> None:
    # 2014-2022 §8.21: "If he scores less than 50%: Ru = Ra + dp"; §7.1.4: a first rating is published from 1000 up.
    first = half_up(1050 + int(DP_BY_PERCENT[10]))  # 0.5 of 5: p 0.10
    assert first < 1000
    row = listed(chain_2015, "2015-03", LOW)
    assert row["rating"] is None and row["pending_games"] == 5
    assert (
        "Unrated: 5 games against rated opponents pooled since 2015-03, at least the 5 a first rating needs; the "
        f"rating they give, {first}, is below the floor 1000 (§7.1.4)."
    ) in render_text(player_report(chain_2015, LOW, scenarios=SCENARIOS))
