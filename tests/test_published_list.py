"""The published list: CSV columns and values, the FIDE TXT round trip, the HTML page and the Dagster asset.

The HTML page is checked in Chromium.
"""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import dagster as dg
import numpy as np
import polars as pl
import pytest

from pipeline.formats import fide_list
from pipeline.formats.fide_list import LAYOUTS, WIDTHS, parse_fide_list
from pipeline.publish.list_files import (
    fide_list_month,
    published_csv,
    published_html,
    published_html_bytes,
    published_txt,
    published_txt_bytes,
    write_published_txt,
)
from pipeline.publish.lists import (
    PUBLISHED_COLUMNS,
    _published,
    published_list,
    published_list_key,
    stored_txt_left_out,
    txt_left_out,
    with_previous_list_ratings,
    write_published_month,
)
from pipeline.publish.ranked_registry import NAME_ORDER, published_registries, ranked_registry
from pipeline.text import printable
from pipeline.validate.identity import LOCAL_ID_BASE
from schemas import Players, PublishedList, RatingList
from schemas.util import conform, empty_frame
from tests.screenshots import CHROMIUM, CHROMIUM_ARGS

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
EXPECTED_COLUMNS = [
    "id",
    "name",
    "federation",
    "title",
    "sex",
    "birth_year",
    "rating",
    "change",
    "games",
    "k",
    "inactive",
    "delisted",
    "newly_rated",
    "rank",
    "previous_rating",
]
HOSTILE_NAME = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">, Eve'


def rating_list(rows: list[dict]) -> pl.DataFrame:
    """RatingList rows from a few hand-written fields (the rest defaulted)."""
    defaults = {
        "rating": None,
        "change": None,
        "correction": None,
        "k": None,
        "k_used": None,
        "games": 0,
        "games_total": None,
        "inactive": False,
        "delisted": False,
        "newly_rated": False,
        "birth_year": None,
        "ever_2400": False,
        "last_played": None,
        "pending_games": 0,
        "pending_since": None,
        "pending": [],
    }
    frame = pl.DataFrame(
        [defaults | row for row in rows],
        schema_overrides={"pending": RatingList.to_schema().columns["pending"].dtype.type},
    )
    return conform(frame, RatingList)


def registry(rows: list[dict]) -> pl.DataFrame:
    defaults = {"federation": "", "sex": None, "birth_year": None, "title": None, "registered": "2024-01"}
    return pl.DataFrame([defaults | row for row in rows]).with_columns(pl.col("birth_year").cast(pl.Int32))


@pytest.fixture
def small() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Five players: a tie on rating (name decides), an unrated one, one the registry does not know."""
    players = rating_list(
        [
            {"player_id": 30, "rating": 2105, "change": -4, "k": 20, "games": 7, "birth_year": 1990},
            {"player_id": 10, "rating": 2450, "change": 12, "k": 10, "games": 9, "birth_year": 1985, "ever_2400": True},
            {
                "player_id": 20,
                "rating": 2105,
                "change": 0,
                "k": 40,
                "games": 2,
                "birth_year": 2009,
                "newly_rated": True,
            },
            {"player_id": 40, "rating": None, "games": 3, "birth_year": 2001, "delisted": True},
            {
                "player_id": 50,
                "rating": 1830,
                "change": None,
                "k": 20,
                "games": 0,
                "birth_year": 1971,
                "inactive": True,
            },
        ]
    )
    known = registry(
        [
            {
                "player_id": 10,
                "name": "Zeta, Anna",
                "federation": "GER",
                "sex": "F",
                "birth_year": 1984,
                "title": "WGM",
            },
            {"player_id": 20, "name": "Beta, Carl", "federation": "FRA", "sex": "M", "title": "FM"},
            {"player_id": 30, "name": "Alpha, Dora", "federation": "", "sex": "F"},
            {"player_id": 40, "name": "Gamma, Emil", "federation": "NOR", "sex": "M"},
            {"player_id": 99, "name": "Not, Listed", "federation": "ESP", "sex": "M"},  # registered, not on the list
        ]
    )  # player 50 is on the list but not in the registry
    return players, known


# -- CSV -------------------------------------------------------------------------------------------


def test_csv_columns_order_and_values(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, known = small
    data = published_csv(published_list(players, known))
    assert data.decode().splitlines()[0] == ",".join(EXPECTED_COLUMNS) and PUBLISHED_COLUMNS == EXPECTED_COLUMNS
    csv = pl.read_csv(io.BytesIO(data), infer_schema=False)
    # Rating descending, unrated last; equal ratings by name (Alpha before Beta), whatever the input order.
    assert csv["id"].to_list() == ["10", "30", "20", "50", "40"]
    row = {r["id"]: r for r in csv.iter_rows(named=True)}
    assert row["10"] == {
        "id": "10",
        "name": "Zeta, Anna",
        "federation": "GER",
        "title": "WGM",
        "sex": "F",
        "birth_year": "1984",  # the registry's year wins over the list's 1985
        "rating": "2450",
        "change": "12",
        "games": "9",
        "k": "10",
        "inactive": "false",
        "delisted": "false",
        "newly_rated": "false",
        "rank": "1",
        "previous_rating": "2438",  # 2450 - 12
    }
    assert row["20"]["birth_year"] == "2009" and row["20"]["newly_rated"] == "true" and row["20"]["k"] == "40"
    # Equal ratings share a place; the inactive and the unrated have none. A first rating has no previous one.
    assert [row[i]["rank"] for i in ("30", "20", "50", "40")] == ["2", "2", None, None]
    assert [row[i]["previous_rating"] for i in ("30", "20", "50", "40")] == ["2109", None, None, None]
    assert row["30"]["federation"] is None and row["30"]["name"] == "Alpha, Dora"  # a blank registry cell stays empty
    # Not in the registry: the registry's cells are empty, the list's own values are all there.
    assert {c: row["50"][c] for c in ("name", "federation", "title", "sex")} == dict.fromkeys(
        ("name", "federation", "title", "sex")
    )
    assert (row["50"]["birth_year"], row["50"]["rating"], row["50"]["inactive"], row["50"]["change"]) == (
        "1971",
        "1830",
        "true",
        None,
    )
    assert row["40"]["rating"] is None and row["40"]["delisted"] == "true"
    assert "99" not in row  # only players on the list are published


def test_csv_without_any_registry(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, _ = small
    for missing in (None, empty_frame(Players)):
        csv = pl.read_csv(io.BytesIO(published_csv(published_list(players, missing))))
        assert csv.height == players.height and csv["name"].null_count() == players.height
        # Without names the order is rating, then id; the birth years are the list's own.
        assert csv["id"].to_list() == [10, 20, 30, 50, 40]
        assert dict(zip(csv["id"], csv["birth_year"], strict=True)) == dict(
            zip(players["player_id"], players["birth_year"], strict=True)
        )


def test_empty_list_writes_headers_only() -> None:
    published = published_list(empty_frame(RatingList), None)
    assert published_csv(published).decode().strip() == ",".join(EXPECTED_COLUMNS)
    parsed = parse_fide_list(published_txt(published, "2024-03").encode(), "2024-03.txt")
    assert parsed.layout == "B" and parsed.players.height == 0
    assert "<b>0</b> players" in published_html(published, "actual", "2024-03")


# -- FIDE TXT ------------------------------------------------------------------------------------


def round_trip(published: pl.DataFrame, month: str = "2024-03"):
    text = published_txt(published, month)
    return text, parse_fide_list(text.encode("utf-8"), f"{month}.txt")


def assert_same_players(published: pl.DataFrame, parsed: pl.DataFrame) -> None:
    """The reader gives back every rated player with a name, field by field."""
    expected = published.filter(pl.col("rating").is_not_null() & pl.col("name").is_not_null())
    got = parsed.select(
        pl.col("player_id").alias("id"),
        "name",
        "federation",
        "sex",
        "title",
        "birth_year",
        pl.col("standard_rating").alias("rating"),
        pl.col("standard_games").alias("games"),
        pl.col("standard_k").alias("k"),
        "inactive",
    )
    want = expected.select(got.columns).with_columns(pl.col("name").str.slice(0, 60))
    assert got.height == want.height > 0
    assert got.to_dicts() == want.to_dicts()


def test_txt_round_trips_through_the_projects_reader(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, known = small
    long_name = "Wolfeschlegelsteinhausenbergerdorff-Hubert, Alexander Maximilian Friedrich"
    known = pl.concat(
        [
            known,
            registry(
                [
                    {"player_id": 60, "name": long_name, "federation": "AUT", "sex": "M", "title": "IM"},
                    {"player_id": 70, "name": "Ørsted,\nJosé", "federation": "DEN", "sex": "F"},
                    {"player_id": 80, "name": HOSTILE_NAME, "federation": "USA", "sex": "F"},
                ]
            ),
        ]
    )
    players = pl.concat(
        [
            players,
            rating_list(
                [
                    {"player_id": 60, "rating": 2399, "games": 1000, "k": 10, "birth_year": 1999},
                    {"player_id": 70, "rating": 1200, "games": 1, "k": 40, "inactive": True},
                    {"player_id": 80, "rating": 1500, "games": 5, "k": 20, "birth_year": 1960},
                ]
            ),
        ]
    )
    published = published_list(players, known)
    text, parsed = round_trip(published)
    assert parsed.layout == "B" and parsed.rating_type == "standard"
    assert parsed.period == "2024-04"  # period 2024-03 is FIDE's list of 1 April 2024
    lines = text.split("\r\n")
    assert lines[0].split() == [
        "ID",
        "Number",
        "Name",
        "Fed",
        "Sex",
        "Tit",
        "WTit",
        "OTit",
        "FOA",
        "APR24",
        "Gms",
        "K",
        "B-day",
        "Flag",
    ]
    assert all(len(line) == WIDTHS["B"] for line in lines[1:-1]) and lines[-1] == ""
    for field, (start, _) in LAYOUTS["B"].items():  # every heading starts at its column
        assert lines[0][start] != " " and (start == 0 or lines[0][start - 1] == " "), field
    # The control character in a name became a space; the hostile name is just text.
    expected = published.with_columns(pl.col("name").str.replace_all("\n", " "))
    assert_same_players(expected, parsed.players)
    flags = dict(zip(parsed.players["player_id"], parsed.players["flag"], strict=True))
    assert (flags[10], flags[70], flags[20]) == ("w", "wi", None)
    women_titles = dict(zip(parsed.players["player_id"], parsed.players["women_title"], strict=True))
    assert women_titles[10] == "WGM" and women_titles[20] is None
    # FIDE's per-type lists list rated players only; a line without a name is the reader's one refusal.
    assert 40 not in set(parsed.players["player_id"])
    assert parsed.rejected["reason"].to_list() == ["unparseable"] and "no name" in parsed.rejected["detail"][0]
    assert parsed.rejected["raw_text"][0].startswith("50 ") and parsed.rejected["raw_text"][0].rstrip().endswith(" i")


def test_txt_refuses_a_number_too_wide_for_its_column(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, known = small
    wide = published_list(
        players.with_columns(
            pl.when(pl.col("player_id") == 10).then(1000).otherwise(pl.col("k")).cast(pl.Int16).alias("k")
        ),
        known,
    )
    with pytest.raises(ValueError, match="k value of 4 characters"):
        published_txt(wide, "2024-03")


@pytest.mark.parametrize("name", ["fide-lists-2013-rapid/rapid_jan13frl.txt", "fide-lists-2004/JAN04FRL.TXT"])
def test_txt_round_trips_a_real_fide_list(name: str) -> None:
    """Real players (accents, women's titles, the w flag) through the writer and back."""
    path = REALDATA / name
    if not path.is_file():
        pytest.skip(f"real FIDE list not present at {path}")
    source = parse_fide_list(path.read_bytes(), path.name)
    kind = source.rating_type
    players = source.players.select(
        "player_id",
        "birth_year",
        "inactive",
        pl.col(f"{kind}_rating").alias("rating"),
        pl.col(f"{kind}_games").fill_null(0).alias("games"),
        pl.col(f"{kind}_k").alias("k"),
    )
    known = source.players.select(
        "player_id",
        "name",
        pl.col("federation").fill_null(""),
        pl.coalesce("sex", pl.when(pl.col("flag").str.contains("w")).then(pl.lit("F"))).alias("sex"),
        "birth_year",
        pl.coalesce("title", "women_title").alias("title"),
        pl.lit("2004-01").alias("registered"),
    )
    published = published_list(
        conform(
            players.with_columns(
                *[
                    pl.lit(None).alias(c)
                    for c in ("change", "correction", "k_used", "games_total", "last_played", "pending_since")
                ],
                *[pl.lit(False).alias(c) for c in ("delisted", "newly_rated", "ever_2400")],
                pl.lit(0).alias("pending_games"),
                pl.lit([], dtype=RatingList.to_schema().columns["pending"].dtype.type).alias("pending"),
            ),
            RatingList,
        ),
        known,
    )
    _, parsed = round_trip(published, "2013-01")
    assert parsed.rejected.height == 0
    assert_same_players(published, parsed.players)
    assert parsed.players["sex"].value_counts().height == 2 and parsed.players["women_title"].drop_nulls().len() > 0


# -- HTML ----------------------------------------------------------------------------------------


def test_html_states_the_list_and_embeds_names_only_as_data(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, known = small
    known = pl.concat([known, registry([{"player_id": 50, "name": HOSTILE_NAME, "federation": "USA", "sex": "F"}])])
    page = published_html(published_list(players, known), "sonas-2017", "2024-12")
    assert "Scenario <b>sonas-2017</b>" in page
    assert "December 2024" in page and "1 January 2025" in page
    assert "<b>5</b> players, <b>4</b> rated" in page
    assert "pwned" in page and "</script><script>window.pwned" not in page and "<img" not in page
    assert page.count("</script>") == 3  # the two data blocks and the page's own script
    assert 'href="2024-12.csv"' in page and 'href="2024-12.txt"' in page
    assert "http://" not in page and "https://" not in page  # nothing to fetch: the page works from file://


def test_html_data_is_the_list_column_by_column(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """The page's data (written a column at a time) decodes to every row of the list, hostile names included."""
    players, known = small
    known = pl.concat([known, registry([{"player_id": 50, "name": HOSTILE_NAME, "federation": "USA", "sex": "F"}])])
    published = published_list(players, known)
    page = published_html(published, "actual", "2024-12")
    data = json.loads(re.search(r'id="list-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    dictionaries = json.loads(re.search(r'id="list-dictionaries">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert list(data) == ["id", "name", "federation", "title", "sex", "birth_year", "rating", "previous_rating",
                          "change", "games", "k", "inactive", "delisted", "newly_rated"]  # fmt: skip
    decoded = {
        column: [None if i is None else dictionaries[column][i] for i in values] if column in dictionaries else values
        for column, values in data.items()
    }
    flags = ("inactive", "delisted", "newly_rated")
    expected = published.select(*(pl.col(c).cast(pl.Int8) if c in flags else pl.col(c) for c in data))
    assert decoded == expected.to_dict(as_series=False)
    assert HOSTILE_NAME in decoded["name"]


def big_list(players: int, seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A random list of `players` (a fifth unrated) and a registry knowing all but a few of them."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(100_000, 60_000_000), players, replace=False).astype(np.int64)
    rated = rng.random(players) < 0.8
    ratings = np.where(rated, rng.normal(1750, 280, players).clip(1000, 2880), np.nan)
    frame = pl.DataFrame({"player_id": ids, "rating": ratings}).with_columns(
        pl.col("rating").fill_nan(None).cast(pl.Int32),
        pl.Series(rng.integers(-30, 30, players)).cast(pl.Int32).alias("change"),
        pl.Series(rng.choice([10, 20, 40], players)).cast(pl.Int16).alias("k"),
        pl.Series(rng.integers(0, 12, players)).cast(pl.Int32).alias("games"),
        pl.Series(rng.random(players) < 0.3).alias("inactive"),
        pl.Series(rng.integers(1940, 2016, players)).cast(pl.Int32).alias("birth_year"),
    )
    lists = rating_list([{"player_id": 1}]).head(0)
    frame = conform(
        pl.concat([lists, frame], how="diagonal_relaxed")
        .with_columns(pl.col(c).fill_null(False) for c in ("delisted", "newly_rated", "ever_2400"))
        .with_columns(pl.col("pending_games").fill_null(0), pl.col("pending").fill_null([])),
        RatingList,
    )
    first = np.array(["Anna", "Boris", "Chloé", "Dmitri", "Eve", "Farid", "Güler", "Hiro", "Ivana", "Jonas"])
    last = np.array(
        ["Smith", "Ivanov", "Müller", "García", "Nakamura", "O'Brien", "Kowalski", "Nguyen", "Papadopoulos", "Singh"]
    )
    names = pl.DataFrame(
        {
            "last": last[rng.integers(0, len(last), players)],
            "first": first[rng.integers(0, len(first), players)],
            "n": rng.integers(0, 1_000_000, players),
        }
    )
    known = (
        pl.DataFrame({"player_id": ids})
        .with_columns(
            names.select(pl.format("{}{}, {}", "last", "n", "first")).to_series().alias("name"),
            pl.Series(np.array(["GER", "FRA", "IND", "USA", "NOR"])[rng.integers(0, 5, players)]).alias("federation"),
            pl.Series(np.array(["M", "F"])[rng.integers(0, 2, players)]).alias("sex"),
            pl.lit(None, dtype=pl.Int32).alias("birth_year"),
            pl.lit(None, dtype=pl.Utf8).alias("title"),
            pl.lit("2024-01").alias("registered"),
        )
        .slice(10)
    )  # the registry misses ten players
    return frame, known


def test_writing_a_500k_list_takes_seconds() -> None:
    frame, known = big_list(500_000)
    started = time.perf_counter()
    published = published_list(frame, known)
    sizes = [
        len(published_csv(published)),
        len(published_txt(published, "2024-03")),
        len(published_html(published, "actual", "2024-03")),
    ]
    elapsed = time.perf_counter() - started
    assert min(sizes) > 10_000_000
    assert elapsed < 15, f"writing three files for 500,000 players took {elapsed:.1f} s"  # ~1.5 s on 2 cores


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pl.DataFrame]:
    frame, known = big_list(500_000)
    known = pl.concat(
        [
            known,
            registry([{"player_id": frame["player_id"][3], "name": HOSTILE_NAME, "federation": "USA", "sex": "F"}]),
        ],
        how="diagonal_relaxed",
    ).unique("player_id", keep="last")
    published = published_list(frame, known)
    page = tmp_path_factory.mktemp("published") / "2024-03.html"
    page.write_text(published_html(published, "actual", "2024-03"), encoding="utf-8")
    return page, published


# The page's columns: Rank, FIDE id, Name, Fed, Title, Sex, Born, Rating, Previous, Change, Games, K and the flags.
RANK, ID, NAME, FEDERATION, SEX, BORN, RATING, PREVIOUS = 0, 1, 2, 3, 5, 6, 7, 8


def cells(page, row: int) -> list[str]:
    return page.locator("#rows tr:not(.pad)").nth(row).locator("td").all_inner_texts()


def test_html_500k_rows_in_chromium(big_page: tuple[Path, pl.DataFrame]) -> None:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; `make test` installs it where it can)")
    sync_api = pytest.importorskip("playwright.sync_api")
    path, published = big_page
    rated = published.filter(pl.col("rating").is_not_null())
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            blocked: list[str] = []

            def files_only(route) -> None:
                if route.request.url.startswith("file:"):
                    route.continue_()
                else:
                    blocked.append(route.request.url)
                    route.abort()

            page.route("**/*", files_only)
            started = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
            loaded = time.perf_counter() - started
            assert loaded < 20, f"the 500,000-row page took {loaded:.1f} s to open"
            shown = page.locator("#rows tr:not(.pad)")
            assert 10 <= shown.count() < 100  # only the rows in view exist in the DOM
            top = [cells(page, i) for i in range(5)]
            assert [int(r[ID]) for r in top] == rated["id"].head(5).to_list()
            assert [r[RANK] for r in top] == ["" if r is None else str(r) for r in rated["rank"].head(5)]
            assert (
                [int(r[RATING]) for r in top]
                == rated["rating"].head(5).to_list()
                == sorted(rated["rating"].head(5), reverse=True)
            )
            assert (
                "500,000" in page.locator("p.meta").inner_text()
                and f"{rated.height:,}" in page.locator("p.meta").inner_text()
            )

            # Rating header: ascending (lowest first, unrated still last), then back to descending.
            page.locator("th", has_text="Rating").click()
            low = [int(cells(page, i)[RATING]) for i in range(5)]
            assert low == sorted(low) and low[0] == rated["rating"].min()
            page.locator("th", has_text="Rating").click()
            assert int(cells(page, 0)[ID]) == rated["id"][0]
            page.locator("th", has_text="Name").click()
            names = [cells(page, i)[NAME] for i in range(5)]
            assert names == sorted(names) and names[0] == published["name"].drop_nulls().min()

            # Search by (part of) a name, then by an id.
            target = published.filter(pl.col("rating").is_not_null()).row(1234, named=True)
            search = page.locator("#search")
            search.fill(target["name"].split(",")[0])
            page.wait_for_function("document.getElementById('status').textContent.includes(' of ')")
            found = [cells(page, i) for i in range(page.locator("#rows tr:not(.pad)").count())]
            assert [str(target["id"]), target["name"]] in [row[ID : NAME + 1] for row in found]
            search.fill(str(target["id"]))
            page.wait_for_function(
                f"document.querySelector('#rows tr:not(.pad) td:nth-child(2)')?.textContent === '{target['id']}'"
            )
            assert cells(page, 0)[NAME] == target["name"]

            # The hostile name is found and shown as text, and nothing ran.
            search.fill("window.pwned")
            # Wait for the new result itself: the id search before it also left '1 of ...' in the status.
            page.wait_for_function(
                "document.querySelector('#rows tr:not(.pad) td:nth-child(3)')?.textContent.includes('window.pwned')"
            )
            assert page.locator("#status").inner_text().startswith("1 of")
            assert cells(page, 0)[NAME] == HOSTILE_NAME
            assert page.evaluate("window.pwned === undefined") and page.locator("#rows img").count() == 0
            assert blocked == []  # the page asked for nothing beyond itself
        finally:
            browser.close()


def test_html_filters_rank_previous_rating_and_card_links_in_chromium(tmp_path: Path) -> None:
    """The page's filters keep the players a rating officer asks for, ranks them among themselves as the CSV ranks the
    whole list, shows the previous rating, and links each player to players/<id>.html in the store.
    """
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; `make test` installs it where it can)")
    sync_api = pytest.importorskip("playwright.sync_api")
    frame, known = big_list(3_000, seed=7)
    published = published_list(frame, known)
    root = tmp_path / "store"
    path = root / "lists" / "actual" / "2024-03.html"  # FIDE's list of 1 April 2024: ages count from 2024
    path.parent.mkdir(parents=True)
    path.write_text(published_html(published, "actual", "2024-03"), encoding="utf-8")
    top = published.row(0, named=True)
    (root / "players").mkdir()
    (root / "players" / f"{top['id']}.html").write_text("<title>the card</title>", encoding="utf-8")

    def expected_ranks(kept: pl.DataFrame) -> list[int | None]:
        rank = pl.when(pl.col("rating").is_not_null() & ~pl.col("inactive")).then(pl.col("rating"))
        return kept.select(rank.rank("min", descending=True).cast(pl.Int32))["rating"].to_list()

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']")

            def shown(rows: int = 8) -> list[list[str]]:
                return [cells(page, i) for i in range(min(rows, page.locator("#rows tr:not(.pad)").count()))]

            def status_after(change) -> str:  # noqa: ANN001
                before = page.locator("#status").inner_text()
                change()
                page.wait_for_function(f"document.getElementById('status').textContent !== {json.dumps(before)}")
                return page.locator("#status").inner_text()

            # Unfiltered: the CSV's rank and previous rating.
            first = shown()
            assert [row[RANK] for row in first] == ["" if r is None else str(r) for r in published["rank"].head(8)]
            previous = published["previous_rating"].head(8)
            assert [row[PREVIOUS] for row in first] == ["" if r is None else str(r) for r in previous]
            assert published["previous_rating"].drop_nulls().len() > 2_000

            # A federation: only its players, ranked among themselves.
            nor = published.filter(pl.col("federation") == "NOR")
            assert status_after(lambda: page.select_option("#f-federation", label="NOR")).startswith(
                f"{nor.height:,} of 3,000"
            )
            rows = shown()
            assert {row[FEDERATION] for row in rows} == {"NOR"}
            assert [row[RANK] for row in rows] == ["" if r is None else str(r) for r in expected_ranks(nor)[:8]]
            # Then women only, then juniors (U20: born 2004 or later), then born 1980..1985.
            women = nor.filter(pl.col("sex") == "F")
            assert status_after(lambda: page.select_option("#f-sex", label="F")).startswith(f"{women.height:,} of")
            juniors = women.filter(pl.col("birth_year") >= 2004)
            assert status_after(lambda: page.select_option("#f-age", value="u20")).startswith(f"{juniors.height:,} of")
            assert all(int(row[BORN]) >= 2004 and row[SEX] == "F" for row in shown())
            assert [row[RANK] for row in shown()] == ["" if r is None else str(r) for r in expected_ranks(juniors)[:8]]
            assert status_after(lambda: page.select_option("#f-age", value="")).startswith(f"{women.height:,} of")
            since = women.filter(pl.col("birth_year") >= 1980)
            assert status_after(lambda: page.fill("#f-born-from", "1980")).startswith(f"{since.height:,} of")
            born = women.filter(pl.col("birth_year").is_between(1980, 1985))
            assert status_after(lambda: page.fill("#f-born-to", "1985")).startswith(f"{born.height:,} of")
            assert all(1980 <= int(row[BORN]) <= 1985 for row in shown())
            # The inactive: rated, flagged, and no rank.
            page.click("#f-clear")
            inactive = published.filter(pl.col("rating").is_not_null() & pl.col("inactive"))
            assert status_after(lambda: page.select_option("#f-activity", value="inactive")).startswith(
                f"{inactive.height:,} of"
            )
            assert {(row[RANK], row[12]) for row in shown()} == {("", "yes")}
            # Sorting by rank among the active of one federation: 1 first.
            page.click("#f-clear")
            page.select_option("#f-activity", value="active")
            page.select_option("#f-federation", label="GER")
            page.locator("th", has_text="Rank").click()
            ranks = [int(row[RANK]) for row in shown()]
            assert ranks == sorted(ranks) and ranks[0] == 1

            # Each player links to their card in the store's players/ folder; the link opens it.
            page.click("#f-clear")
            page.locator("th", has_text="Rating").click()
            page.wait_for_function(
                f"document.querySelector('#rows tr:not(.pad) td:nth-child(2)')?.textContent === '{top['id']}'"
            )
            name_link = page.locator("#rows tr:not(.pad)").first.locator("td").nth(NAME).locator("a")
            assert name_link.get_attribute("href") == f"../../players/{top['id']}.html"
            name_link.click()
            page.wait_for_load_state()
            assert page.url == (root / "players" / f"{top['id']}.html").as_uri() and page.title() == "the card"
        finally:
            browser.close()


# -- the fast writers give the bytes of the plain ones ------------------------------------------------

# Names to trip a writer: CSV quoting, HTML and script text, JSON escapes, control characters (the TXT
# turns them into blanks), blanks around or alone (empty cells), wide and combining characters, a name
# longer than the TXT column, and equal names (the id decides their order).
TRICKY_NAMES = [
    HOSTILE_NAME,
    'Quote "q", Comma',
    '"Start, quoted"',
    "  Ørsted,\nJosé  ",
    "Tab,\tand\rreturn\x00nul\x7fdel",
    "Line\u2028sep,\u0085next\u2029para",
    "   ",
    "",
    "名字, 中文",
    "Zoë & <b>bold</b> -->",
    "Cafe\u0301, combining",
    "Back\\slash, \\u003c",
    "Emoji, 🏆♞",
    "\u00a0Nbsp, edge\u00a0",
    "Wolfeschlegelsteinhausenbergerdorff-Hubert, Alexander Maximilian Friedrich Ü",
    "Smith, Anna",
    "Smith, Anna",
    " Smith, Anna",
    "smith, anna",
]


def reference_published_list(
    rating_list: pl.DataFrame, registry: pl.DataFrame | None, published_text: bool = True
) -> pl.DataFrame:
    """published_list as first written (one join, then Polars sorting the three columns, the name as text), its
    registry cells printable (pipeline.text.printable) unless not `published_text`.
    """
    known = pl.DataFrame(
        schema={
            "player_id": pl.Int64,
            "name": pl.Utf8,
            "federation": pl.Utf8,
            "title": pl.Utf8,
            "sex": pl.Utf8,
            "registry_birth_year": pl.Int32,
        }
    )
    if registry is not None and registry.height:
        shown = {
            c: printable(pl.col(c)) if published_text else pl.col(c) for c in ("name", "federation", "title", "sex")
        }
        blank_is_null = [
            pl.when(text.str.strip_chars() != "").then(text.str.strip_chars()).alias(c) for c, text in shown.items()
        ]
        known = registry.select(
            "player_id", *blank_is_null, pl.col("birth_year").cast(pl.Int32).alias("registry_birth_year")
        ).unique("player_id", keep="first", maintain_order=True)
    frame = rating_list.join(known, on="player_id", how="left").with_columns(
        pl.col("player_id").alias("id"), pl.coalesce("registry_birth_year", "birth_year").alias("birth_year")
    )
    frame = frame.sort(["rating", "name", "id"], descending=[True, False, False], nulls_last=True)
    # Rank: 1 + the rated active players rated higher; the previous rating: rating - change but for a first rating.
    ranked = frame.filter(pl.col("rating").is_not_null() & ~pl.col("inactive"))
    higher = (
        ranked.group_by("rating")
        .len()
        .sort("rating", descending=True)
        .select("rating", (pl.col("len").cum_sum() - pl.col("len") + 1).cast(pl.Int32).alias("rank"))
    )
    frame = frame.join(higher, on="rating", how="left", maintain_order="left").with_columns(
        rank=pl.when(pl.col("rating").is_not_null() & ~pl.col("inactive")).then(pl.col("rank")),
        previous_rating=pl.when(pl.col("change").is_not_null() & ~pl.col("newly_rated"))
        .then(pl.col("rating") - pl.col("change"))
        .cast(pl.Int32),
    )
    return conform(frame, PublishedList)


def reference_fide_list(players: pl.DataFrame, list_month: str, line_end: str = "\r\n") -> str:
    """FIDE's per-type list as the first writer made it (before write_fide_list): the reference the files must equal.

    `players`: player_id, name, federation, sex, title, birth_year, rating, games, k, inactive, in the
    order to print (any may be null but player_id). `list_month` (YYYY-MM) is the date of the list,
    the heading of its rating column. Like FIDE's per-type lists, unrated players are left out. Women
    (sex F) carry the flag w, inactive players i. Text fields are cut to leave one blank before the
    next column; a number too wide for its column raises ValueError rather than shift the line.
    """
    fields = LAYOUTS["B"]
    width = {field: end - start for field, (start, end) in fields.items()}
    headings = dict(fide_list._LAYOUT_B_HEADINGS, rating=fide_list.list_month_token(list_month))
    header = "".join(headings[field].ljust(width[field]) for field in fields).rstrip()

    def text(column: str, field: str) -> pl.Expr:
        cleaned = printable(pl.col(column).cast(pl.Utf8)).str.strip_chars()
        return cleaned.fill_null("").str.slice(0, width[field] - 1)

    def number(column: str, unknown: str = "") -> pl.Expr:
        return pl.col(column).cast(pl.Utf8).fill_null(unknown)

    title = text("title", "title")
    birth = (
        pl.when(pl.col("birth_year").is_between(1000, 9999))
        .then(pl.col("birth_year").cast(pl.Utf8))
        .otherwise(pl.lit("0000"))
    )
    flag = pl.concat_str(
        pl.when(pl.col("sex") == "F").then(pl.lit("w")).otherwise(pl.lit("")),
        pl.when(pl.col("inactive").fill_null(False)).then(pl.lit("i")).otherwise(pl.lit("")),
    )
    cells = {
        "player_id": number("player_id"),
        "name": text("name", "name"),
        "federation": text("federation", "federation"),
        "sex": text("sex", "sex"),
        "title": title,
        "women_title": pl.when(title.is_in(fide_list.WOMEN_TITLES)).then(title).otherwise(pl.lit("")),
        "other_titles": pl.lit(""),
        "foa_title": pl.lit(""),
        "rating": number("rating"),
        "games": number("games", "0"),
        "k": number("k"),
        "birth": birth,
        "flag": flag,
    }
    rows = players.filter(pl.col("rating").is_not_null()).select([expr.alias(field) for field, expr in cells.items()])
    widest = rows.select(pl.all().str.len_chars().max()).row(0, named=True) if rows.height else {}
    for field, longest in widest.items():
        if longest is not None and longest > width[field]:
            raise ValueError(
                f"a {field} value of {longest} characters does not fit FIDE's {width[field]}-character column"
            )
    lines = rows.select(pl.concat_str([pl.col(field).str.pad_end(width[field]) for field in fields]).alias("line"))[
        "line"
    ]
    body = lines.str.join(line_end).item() if rows.height else ""
    return header + line_end + (body + line_end if body else "")


def reference_files(published: pl.DataFrame, month: str) -> tuple[bytes, bytes]:
    """The CSV and the TXT as first written: Polars' CSV as a string, the first TXT writer's text, both encoded."""
    csv = conform(published, PublishedList).write_csv(null_value="").encode("utf-8")
    fide_ids = published.filter(pl.col("id") < LOCAL_ID_BASE).rename({"id": "player_id"})
    return csv, reference_fide_list(fide_ids, fide_list_month(month)).encode("utf-8")


def tricky_list(players: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """big_list with TRICKY_NAMES, titles and blanks in the registry, local ids, rating ties, unknown birth years."""
    rng = np.random.default_rng(seed)
    frame, known = big_list(players, seed=seed)
    local = rng.random(players) < 0.02  # players known by name only: in the CSV and HTML, not in the TXT
    frame = frame.with_columns(
        pl.when(pl.Series(local)).then(pl.col("player_id") + LOCAL_ID_BASE).otherwise(pl.col("player_id")),
        # Few ratings, so that many players share one and the names (then the ids) decide.
        (pl.col("rating") // 50 * 50).cast(pl.Int32),
        pl.when(pl.Series(rng.random(players) < 0.1)).then(None).otherwise(pl.col("birth_year")).alias("birth_year"),
        pl.when(pl.Series(rng.random(players) < 0.1)).then(None).otherwise(pl.col("k")).alias("k"),
    )
    ids = frame["player_id"].to_numpy()
    tricky = rng.random(known.height) < 0.05
    known = known.with_columns(
        pl.Series("player_id", ids[10:]),  # big_list's registry is its list's ids but the first ten
        pl.when(pl.Series(tricky))
        .then(pl.Series(np.array(TRICKY_NAMES, dtype=object)[rng.integers(0, len(TRICKY_NAMES), known.height)]))
        .otherwise(pl.col("name"))
        .alias("name"),
        pl.Series(
            np.array(["GM", "WGM", "IM", "WIM", "wf", " FM ", "", None], dtype=object)[rng.integers(0, 8, known.height)]
        ).alias("title"),
        pl.when(pl.Series(rng.random(known.height) < 0.03))
        .then(pl.lit(" "))
        .otherwise(pl.col("federation"))
        .alias("federation"),
        pl.when(pl.Series(rng.random(known.height) < 0.5))
        .then(pl.Series(ids[10:]) % 90 + 1930)
        .cast(pl.Int32)
        .alias("birth_year"),
    )
    return frame, known


@pytest.mark.parametrize(("players", "seed"), [(3_000, 1), (3_000, 2), (60_000, 3)])
def test_the_fast_writers_give_the_files_of_the_plain_ones(players: int, seed: int) -> None:
    frame, known = tricky_list(players, seed)
    reference = reference_published_list(frame, known)
    ranked = ranked_registry(known)
    # The same rows in the same order, whether the names are ranked beforehand or sorted as text.
    assert published_list(frame, known).equals(reference)
    assert published_list(frame, ranked).equals(reference)
    assert reference["name"].is_in(["Smith, Anna"]).sum() > 1 and reference["id"].ge(LOCAL_ID_BASE).any()
    csv, txt = reference_files(reference, "2024-03")
    assert published_csv(reference) == csv
    assert published_txt_bytes(reference, "2024-03") == txt and published_txt(reference, "2024-03") == txt.decode()
    assert (
        published_html_bytes(reference, "actual", "2024-03") == published_html(reference, "actual", "2024-03").encode()
    )
    # Names with control characters given to the TXT writer itself: it makes them printable as the registry would.
    raw = reference_published_list(frame, known, published_text=False)
    shown = raw.with_columns(printable(pl.col("name")))
    assert not raw.equals(shown) and published_txt_bytes(raw, "2024-03") == reference_files(shown, "2024-03")[1]
    names = set(pl.read_csv(csv, infer_schema=False)["name"])
    for name in ('Quote "q", Comma', "Zoë & <b>bold</b> -->", "名字, 中文"):  # the tricky names made it to the files
        assert name in names and name.encode() in txt


def test_the_ranked_registrys_identity_text_is_the_start_of_each_txt_line() -> None:
    """ranked_registry makes each player's id, name, federation, sex and titles as the TXT writes them, once: the
    month's TXT takes them from there, and makes its own only for the players the registry does not name.
    """
    frame, known = tricky_list(3_000, seed=11)
    published, identity = _published(frame, ranked_registry(known))
    assert identity is not None and published.equals(reference_published_list(frame, known))
    txt = reference_files(published, "2024-03")[1].decode().split("\r\n")[1:-1]
    written = published.with_columns(identity.alias("identity")).filter(
        pl.col("id") < LOCAL_ID_BASE, pl.col("rating").is_not_null()
    )
    assert len(txt) == written.height
    named = [line[:113] for line, text in zip(txt, written["identity"], strict=True) if text is not None]
    assert named == written["identity"].drop_nulls().to_list() and len(named) > 2_000
    unregistered = ~published["id"].is_in(known["player_id"].to_list())
    assert identity.is_null().to_list() == unregistered.to_list() and unregistered.sum() >= 5
    buffer = io.BytesIO()
    write_published_txt(published, "2024-03", buffer, identity)
    assert buffer.getvalue().decode().split("\r\n")[1:-1] == txt
    # Where given, the identity text is what the line starts with: the writer does not make it again.
    marked = identity.str.replace(r"^.", "X")
    buffer = io.BytesIO()
    write_published_txt(published, "2024-03", buffer, marked)
    changed = [a != b for a, b in zip(buffer.getvalue().decode().split("\r\n")[1:-1], txt, strict=True)]
    assert sum(changed) == len(named)


@pytest.mark.parametrize(
    ("column", "dtype", "values"),
    [
        ("k", pl.Int8, [-99, 0, 99, None]),  # a narrow type whose range would overflow it when shifted
        ("k", pl.UInt16, [0, 40, 999]),
        ("games", pl.Int64, [-999, 0, 9_999, None]),
        ("rating", pl.Int32, [0, 999_999, -99_999, None]),  # wider than a table of the range: looked up by hash
        ("birth_year", pl.Int64, [None, 999, 1_000, 9_999, 10_000, -(2**40), 2**40]),
        ("birth_year", pl.Int16, [1950, None, 2010]),
    ],
)
def test_txt_numbers_looked_up_per_value_are_the_plain_writers(column: str, dtype: pl.DataType, values: list) -> None:
    rows = len(values)
    players = pl.DataFrame(
        {
            "player_id": range(1, rows + 1),
            "name": ["Smith, Anna"] * rows,
            "federation": (["ENG", None, " F\x1fR "] * rows)[:rows],  # a control character: cleaned per value
            "sex": (["F", "M", None] * rows)[:rows],
            "title": (["WGM", None, "GM"] * rows)[:rows],
            "birth_year": [1980] * rows,
            "rating": [2000] * rows,
            "games": [3] * rows,
            "k": [20] * rows,
            "inactive": ([True, None, False] * rows)[:rows],
        }
    )
    players = players.with_columns(pl.Series(column, values, dtype=dtype))
    if column == "rating":
        players = players.with_columns(pl.col("rating").fill_null(2000))  # the unrated are not listed
    buffer = io.BytesIO()
    fide_list.write_fide_list(players, "2024-04", buffer)
    assert buffer.getvalue().decode() == reference_fide_list(players, "2024-04")


def test_published_registry_places_give_the_text_order_and_duplicates_fall_back(
    small: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    players, known = small
    ranked = ranked_registry(known)
    assert published_list(players, ranked).equals(reference_published_list(players, known))
    # A player registered twice: the first row names them, as the plain join would.
    twice = pl.concat([ranked, ranked.filter(pl.col("player_id") == 20).with_columns(name=pl.lit("Aaa, Second"))])
    assert published_list(players, twice).equals(reference_published_list(players, twice.drop(NAME_ORDER)))
    assert published_list(players, twice.head(0)).equals(reference_published_list(players, None))
    # A player listed twice: both rows published, as the plain join would (no row may take another's place).
    doubled = pl.concat([players, players.filter(pl.col("player_id") == 10)])
    assert published_list(doubled, ranked).height == 6
    assert published_list(doubled, ranked).equals(reference_published_list(doubled, known))


def test_txt_refusals_are_the_plain_writers(small: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    players, known = small
    for column, value in (("games", 10_000), ("games", -1000), ("k", 1000), ("rating", 1_000_000)):
        wide = reference_published_list(players, known).with_columns(
            pl.when(pl.col("id") == 10).then(value).otherwise(pl.col(column)).cast(pl.Int32).alias(column)
        )
        with pytest.raises(ValueError) as plain:
            reference_files(wide, "2024-03")
        with pytest.raises(ValueError, match=str(plain.value)):
            published_txt_bytes(wide, "2024-03")


def test_publishing_a_900k_month_writes_each_file_once(tmp_path: Path) -> None:
    """A FIDE-size month: the files as the plain writers make them, each written once."""
    from pipeline.scenarios.model import Scenario
    from pipeline.store.object_store import ObjectStore

    frame, known = tricky_list(900_000, seed=5)
    registry = ranked_registry(known)
    store = ObjectStore(str(tmp_path))
    largest_write: dict[str, int] = {}  # each file written: the most bytes handed over at once
    write_with = store.write_with

    def recording_write_with(write: Callable[[BinaryIO], object], *parts: str) -> str:
        key = parts[-1]
        assert key not in largest_write, f"{key} written twice"
        largest_write[key] = 0

        class Recorded(io.RawIOBase):
            def __init__(self, handle: BinaryIO) -> None:
                self.handle = handle

            def writable(self) -> bool:
                return True

            def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
                largest_write[key] = max(largest_write[key], len(data))
                return self.handle.write(data)

        return write_with(lambda handle: write(Recorded(handle)), *parts)  # type: ignore[arg-type]

    store.write_with = recording_write_with  # type: ignore[method-assign]
    started = time.process_time()
    write_published_month(
        store, Scenario(name="actual", description="", rules="fide-2024"), "2024-03", frame, registry, lambda *_: None
    )
    seconds = time.process_time() - started
    keys = [published_list_key("actual", "2024-03", ext) for ext in ("csv", "txt", "html")]
    assert sorted(largest_write) == sorted(keys)  # made side by side, each written once
    reference = reference_published_list(frame, known)
    csv, txt = reference_files(reference, "2024-03")
    assert store.read_bytes(keys[0]) == csv and store.read_bytes(keys[1]) == txt
    html = published_html(reference, "actual", "2024-03").encode()
    assert store.read_bytes(keys[2]) == html
    # The CSV and the TXT reach the file piece by piece, never held whole in memory; the page a column at a time
    # (its names are the largest, about a third of it).
    assert largest_write[keys[0]] < len(csv) / 10 and largest_write[keys[1]] < len(txt) / 10, largest_write
    assert largest_write[keys[2]] < len(html) / 2, largest_write
    assert seconds < 20, f"publishing 900,000 players took {seconds:.1f} s of CPU"  # ~2.5 s on 2 cores


# -- the published files of a month, and the registry naming them -----------------------------------


def test_published_registry_adds_the_players_the_dumps_name_after_the_registry(tmp_path: Path) -> None:
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    store.write_text('player_id,name\n10,"Zeta, Anna"\n', "raw/players/2024-01/players.csv")
    store.write_text('player_id,name\n20,"Beta, Carl"\n', "raw/players/2024-03/players.csv")  # after the run

    def identity(month: str, rows: list[tuple[str, str, int]]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "month": [month] * len(rows),
                "status": [r[0] for r in rows],
                "name": [r[1] for r in rows],
                "player_id": [r[2] for r in rows],
                "records": [1] * len(rows),
            },
            schema_overrides={"records": pl.UInt32},
        )

    store.write_parquet(identity("2023-12", [("new", "Old, Olga", 70)]), table_key(["identity"], "2023-12"))
    store.write_parquet(
        identity("2024-01", [("new", "Other, Name", 10), ("new_name", "Local, Lou", 10**15 + 1)]),
        table_key(["identity"], "2024-01"),
    )
    store.write_parquet(identity("2024-02", [("new", "New, Nina", 30)]), table_key(["identity"], "2024-02"))
    store.write_parquet(identity("2024-03", [("new", "New-Later, Nina", 30)]), table_key(["identity"], "2024-03"))
    named_by = published_registries(store, "2024-03")
    # The registry's own name wins; a player the dumps name counts from the month they named them, under the name
    # the dumps of that month and before give (a later month's new name is not known yet).
    assert named_by("2024-02").select("player_id", "name", "registered").rows() == [
        (10, "Zeta, Anna", "2024-01"),
        (30, "New, Nina", "2024-02"),
        (70, "Old, Olga", "2023-12"),
        (10**15 + 1, "Local, Lou", "2024-01"),
    ]
    assert named_by("2024-03").filter(pl.col("player_id") == 30)["name"].to_list() == ["New-Later, Nina"]
    assert named_by("2024-01")["player_id"].to_list() == [10, 70, 10**15 + 1]
    # A month named alone (`ratings list`) is named as the whole run named it, with the same name order.
    assert published_registries(store, "2024-02")("2024-02").equals(named_by("2024-02"))


def test_each_month_is_named_by_the_registry_in_force_then_whatever_months_a_run_publishes(tmp_path: Path) -> None:
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    store.write_text('player_id,name,title\n10,"Zeta, Anna",\n', "raw/players/2024-01/players.csv")
    store.write_text('player_id,name,title\n10,"Zeta-Neu, Anna",WFM\n', "raw/players/2024-03/players.csv")
    whole_run = published_registries(store, "2024-04")
    assert whole_run("2024-02").select("name", "title").row(0) == ("Zeta, Anna", None)
    assert whole_run("2024-03").select("name", "title").row(0) == ("Zeta-Neu, Anna", "WFM")
    # February published alone (a one-month rerun) is named as the whole run named it.
    assert published_registries(store, "2024-02")("2024-02").equals(whole_run("2024-02"))


@pytest.mark.parametrize("seed", range(6))
def test_players_added_to_a_ranked_registry_take_the_places_a_whole_ranking_gives(seed: int) -> None:
    """_with_more_players places the dumps' names among the ranked registry's by binary search: the (name, id) order
    it gives is the one ranking all of them together gives, equal names, unnamed rows and names that are prefixes of
    others included.
    """
    from pipeline.publish.ranked_registry import NAME_ORDER, _name_keys, _prepared_rows, _with_more_players

    rng = np.random.default_rng(seed)
    names = ["Ab", "Ab c", "Ab, C", "Äb", "ab", "  ", None, "Zz", "Ab c"]

    def players(ids: np.ndarray) -> pl.DataFrame:
        chosen = [names[i] for i in rng.integers(0, len(names), len(ids))]
        frame = pl.DataFrame({"player_id": ids, "name": chosen}, schema_overrides={"name": pl.Utf8})
        unknown = [pl.lit(None).alias(c) for c in ("federation", "sex", "birth_year", "title")]
        return conform(frame.with_columns(*unknown, pl.lit("2024-01").alias("registered")), Players)

    ids = rng.permutation(np.arange(1, 200))
    registry, more = players(ids[:150]), players(ids[150:] * 10**13)
    ranked = ranked_registry(registry)
    named = ranked.filter(pl.col(NAME_ORDER).is_not_null())
    merged = _with_more_players(ranked, _name_keys(named).gather(named[NAME_ORDER].arg_sort()), _prepared_rows(more))
    whole = ranked_registry(pl.concat([registry, more]))
    assert merged.drop(NAME_ORDER).equals(whole.drop(NAME_ORDER).select(merged.drop(NAME_ORDER).columns))
    in_order = merged.filter(pl.col(NAME_ORDER).is_not_null()).sort(NAME_ORDER)["player_id"]
    assert in_order.equals(whole.filter(pl.col(NAME_ORDER).is_not_null()).sort(NAME_ORDER)["player_id"])
    assert merged[NAME_ORDER].null_count() == whole[NAME_ORDER].null_count() > 0


def test_write_published_month_checks_then_writes_three_files_and_says_what_it_wrote(
    tmp_path: Path, small: tuple[pl.DataFrame, pl.DataFrame]
) -> None:
    from pipeline.scenarios.model import Scenario
    from pipeline.store.object_store import ObjectStore

    players, known = small
    known = known.with_columns(
        registered=pl.when(pl.col("player_id") == 40).then(pl.lit("2024-03")).otherwise(pl.lit("2024-01"))
    )
    store = ObjectStore(str(tmp_path))
    scenario = Scenario(name="elo-k32", description="Elo", rules="elo-32")
    checked = []
    figures = write_published_month(
        store, scenario, "2024-02", players, known, lambda model, frame, what: checked.append((model, what))
    )
    assert checked == [(PublishedList, "elo_k32/published_list 2024-02")]
    # Player 40 registers in March: unregistered on February's list, like 50 whom the registry never knew.
    expected = published_list(players, known.filter(pl.col("registered") <= "2024-02"))
    assert dict(figures) == {
        "players": 5,
        "rated_players": 4,
        "unregistered_players": 2,
        "txt_players": 4,
        "txt_left_out": 0,
        **{f"{ext}_path": store.url(published_list_key("elo_k32", "2024-02", ext)) for ext in ("csv", "txt", "html")},
    }
    assert store.read_bytes("lists/elo_k32/2024-02.csv") == published_csv(expected)
    assert store.read_bytes("lists/elo_k32/2024-02.txt").decode() == published_txt(expected, "2024-02")
    assert store.read_bytes("lists/elo_k32/2024-02.html").decode() == published_html(expected, "elo_k32", "2024-02")

    def refuse(model, frame, what):
        raise ValueError(what)

    with pytest.raises(ValueError, match="2024-03"):
        write_published_month(store, scenario, "2024-03", players, known, refuse)
    assert not store.exists("lists/elo_k32/2024-03.csv")  # checked before anything is written


def test_the_txt_leaves_out_the_rated_players_without_a_fide_id_and_says_how_many(tmp_path: Path) -> None:
    from pipeline.scenarios.model import Scenario
    from pipeline.store.object_store import ObjectStore

    frame, known = tricky_list(3_000, seed=4)
    published = published_list(frame, known)
    without_id = published.filter(pl.col("rating").is_not_null() & (pl.col("id") >= LOCAL_ID_BASE)).height
    assert without_id > 20 and txt_left_out(published) == without_id
    txt = parse_fide_list(published_txt_bytes(published, "2024-03"), "2024-03.txt")
    assert txt.players.height + txt.rejected.height == published["rating"].drop_nulls().len() - without_id
    store = ObjectStore(str(tmp_path))
    store.write_parquet(frame, "actual/rating_list/2024-03.parquet")
    assert stored_txt_left_out(store, "actual", "2024-03") == without_id
    figures = write_published_month(
        store, Scenario(name="actual", description="", rules="fide-2024"), "2024-03", frame, known, lambda *_: None
    )
    assert figures["txt_left_out"] == without_id
    assert figures["txt_players"] == published["rating"].drop_nulls().len() - without_id


def test_a_delisted_players_previous_rating_is_the_stored_list_before(tmp_path: Path) -> None:
    from pipeline.store.object_store import ObjectStore

    before = rating_list([{"player_id": 1, "rating": 1405, "change": -3}, {"player_id": 2, "rating": 1500}])
    now = rating_list(
        [
            {"player_id": 1, "rating": None, "change": -5, "delisted": True},
            {"player_id": 2, "rating": 1510, "change": 10},
        ]
    )
    published = published_list(now, None)
    assert published["previous_rating"].to_list() == [1500, None]  # rating - change; the delisted: not from this list
    store = ObjectStore(str(tmp_path))
    store.write_parquet(before, "actual/rating_list/2024-02.parquet")
    store.write_parquet(now, "actual/rating_list/2024-03.parquet")
    filled = with_previous_list_ratings(published, store, "actual", "2024-03")
    assert filled["id"].to_list() == [2, 1] and filled["previous_rating"].to_list() == [1500, 1405]
    assert filled["change"].to_list() == [10, None], "unrated after: no change"
    assert filled.drop("previous_rating", "change").equals(published.drop("previous_rating", "change"))
    # A month after a gap in the stored lists: the list before is not at hand, the rows stay as they are.
    assert with_previous_list_ratings(published, store, "actual", "2024-05").equals(published)


def test_the_first_months_list_before_is_the_seed_list(tmp_path: Path) -> None:
    """In the chain's first month the list before is the seed list: a delisted player's previous rating is his seed,
    and a player unrated on it (a rapid player seeded from the standard list) has no previous rating and no change.
    """
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    store.write_bytes(
        b"player_id,rating,games_total,rapid_rating\n1,1004,5,1004\n2,1500,100,\n", "raw/players/2024-01/seed_list.csv"
    )
    now = rating_list(
        [
            {"player_id": 1, "rating": None, "change": -5, "delisted": True},
            {"player_id": 2, "rating": 1514, "change": 14},  # seeded at 1500 from the standard list, then +14
        ]
    )
    published = published_list(now, None)
    assert published["previous_rating"].to_list() == [1500, None] and published["change"].to_list() == [14, -5]
    rapid = with_previous_list_ratings(published, store, "actual_rapid", "2024-01", "rapid")
    assert rapid["previous_rating"].to_list() == [None, 1004] and rapid["change"].to_list() == [None, None]
    standard = with_previous_list_ratings(published, store, "actual", "2024-01")
    assert standard["previous_rating"].to_list() == [1500, 1004] and standard["change"].to_list() == [14, None]


def test_the_published_change_holds_the_correction_the_list_carries(tmp_path: Path) -> None:
    """A list that carries a correction (recalculation forward) publishes its move: change + correction, from the
    previous list's rating; no column is added to the published files.
    """
    from functools import partial

    from pipeline.publish.lists import read_published_list
    from pipeline.store.object_store import ObjectStore

    now = rating_list(
        [
            {"player_id": 1, "rating": 2000 + 5 - 12, "change": 5, "correction": -12},
            {"player_id": 2, "rating": 1900 - 5, "change": -5},
        ]
    )
    published = published_list(now, None)
    assert published.columns == list(PublishedList.to_schema().columns)
    moved = {row["id"]: (row["change"], row["previous_rating"]) for row in published.iter_rows(named=True)}
    assert moved == {1: (5 - 12, 2000), 2: (-5, 1900)}
    # What publishing reads of a stored list: its corrections, and none from a list stored before the column.
    store = ObjectStore(str(tmp_path))
    store.write_parquet(now, "a/rating_list/2024-03.parquet")
    store.write_parquet(now.drop("correction"), "a/rating_list/2024-02.parquet")
    assert "correction" in read_published_list(partial(store.read_parquet, "a/rating_list/2024-03.parquet")).columns
    older = read_published_list(partial(store.read_parquet, "a/rating_list/2024-02.parquet"))
    assert "correction" not in older.columns
    assert published_list(older, None)["change"].to_list() == [5, -5]


# -- Dagster -------------------------------------------------------------------------------------


def test_published_list_asset_writes_three_files_per_month_and_scenario(tiny_store: str) -> None:
    from assets.automation import range_tags
    from assets.definitions import build_defs
    from pipeline.scenarios.model import Scenario
    from pipeline.store.monthly import table_key
    from pipeline.store.object_store import ObjectStore
    from tests.conftest import TINY_END, TINY_START

    scenarios = {
        name: Scenario(name=name, description=name, rules=rules)
        for name, rules in (("plain", "fide-historical"), ("elo-k32", "elo-32"))
    }
    defs = build_defs(TINY_START, TINY_END, root=tiny_store, scenarios=scenarios)
    published_keys = [dg.AssetKey([s.name, "published_list"]) for s in scenarios.values()]
    # The files and what they need (checks, crosstables and reports are other tests' business).
    needed = dg.AssetSelection.assets(
        *published_keys
    ).upstream().required_multi_asset_neighbors() - dg.AssetSelection.assets("landing_zone")
    result = dg.materialize(
        defs.assets, resources=defs.resources, selection=needed, tags=range_tags(TINY_START, "2024-02")
    )
    assert result.success
    store = ObjectStore(tiny_store)
    found = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key in published_keys:
            found[(materialization.asset_key.path[0], materialization.partition)] = dict(materialization.metadata)
    assert set(found) == {(s.name, m) for s in scenarios.values() for m in ("2024-01", "2024-02")}
    for scenario in scenarios.values():
        for month in ("2024-01", "2024-02"):
            # Same folder spelling as the scenario's Parquet tables (elo-k32 -> elo_k32).
            listed = store.read_parquet(table_key([scenario.name, "rating_list"], month))
            csv = pl.read_csv(store.read_bytes(published_list_key(scenario.name, month, "csv")))
            assert csv.columns == EXPECTED_COLUMNS and csv.height == listed.height
            assert set(csv["id"]) == set(listed["player_id"]) and csv["name"].null_count() < csv.height
            rated = csv["rating"].drop_nulls()
            assert rated.is_sorted(descending=True) and csv["rating"].head(rated.len()).null_count() == 0
            txt = parse_fide_list(store.read_bytes(published_list_key(scenario.name, month, "txt")), f"{month}.txt")
            assert txt.players.height == listed.filter(pl.col("rating").is_not_null()).height - txt.rejected.height
            html = store.read_bytes(published_list_key(scenario.name, month, "html")).decode()
            assert f"<b>{listed.height:,}</b> players" in html
            metadata = found[(scenario.name, month)]
            assert metadata["players"].value == listed.height
            assert metadata["csv_path"].value == store.url(published_list_key(scenario.name, month, "csv"))
            PublishedList.validate(conform(csv, PublishedList))
    assert not list(Path(tiny_store).rglob("*.tmp-*"))


def test_publishing_a_month_without_its_stored_list_fails_in_one_message_naming_it(tiny_store: str) -> None:
    from assets.definitions import build_defs
    from pipeline.scenarios.model import Scenario
    from tests.conftest import TINY_END, TINY_START

    plain = Scenario(name="plain", description="plain", rules="fide-historical")
    defs = build_defs(TINY_START, TINY_END, root=tiny_store, scenarios={"plain": plain})
    result = dg.materialize(
        defs.assets,
        resources=defs.resources,
        selection=dg.AssetSelection.assets(["plain", "published_list"]),
        partition_key="2024-02",
        raise_on_error=False,
    )
    [failure] = [event for event in result.all_events if event.event_type_value == "STEP_FAILURE"]
    error = failure.step_failure_data.error
    assert error is not None and error.cls_name == "Failure" and error.cause is None  # no wrapped traceback
    assert "Failure: plain/rating_list has no stored partition 2024-02" in error.message
    assert "materialize plain/rating_list for 2024-02 first" in error.message


def test_a_registry_ranked_from_the_kept_one_is_the_one_ranked_whole(tmp_path: Path) -> None:
    """A run keeps its last month's ranked registry (KEPT_RANKED_FOLDER); the next ranks only the players added, and a
    kept row whose player changed since makes it rank the registry whole: the same frame either way.
    """
    from pipeline.ingest.registry import read_players
    from pipeline.publish.ranked_registry import KEPT_RANKED_FOLDER, _kept_ranked, _ranked_from, ranked_registry
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    store.write_text('player_id,name,title\n10,"Zeta, Anna",\n30,"Beta, Bo",FM\n', "raw/players/2024-01/players.csv")
    published_registries(store, "2024-01", keep=True)("2024-01")
    kept = _kept_ranked(store)
    assert kept is not None and kept["player_id"].to_list() == [10, 30]
    assert len(store.list_stamps(KEPT_RANKED_FOLDER)) == 2  # the rows and the description naming them
    # Added: an equal name with a lower id, an unnamed player, a name before all others.
    store.write_text('player_id,name\n20,"Beta, Bo"\n5,\n40,"Alpha, Al"\n', "raw/players/2024-02/players.csv")
    added = read_players(store, "2024-02")
    frame, _, fresh = _ranked_from(kept, added)
    assert fresh == 3 and frame.equals(ranked_registry(added))
    store.write_text('player_id,name\n30,"Gamma, Bo"\n', "raw/players/2024-03/players.csv")
    changed = read_players(store, "2024-03")
    frame, _, fresh = _ranked_from(kept, changed)
    assert fresh == changed.height and frame.equals(ranked_registry(changed))


def test_a_range_keeps_its_last_months_registry_and_a_month_published_again_leaves_it(tmp_path: Path) -> None:
    """The kept ranked registry serves the next month: a run over several months keeps its last month's, however few
    players each month adds, and publishing an earlier month again (`ratings run --from M --to M` of a stored month)
    leaves it, so that a rerun leaves the store as the full run did.
    """
    from pipeline.publish.ranked_registry import KEPT_RANKED_FOLDER, _kept_ranked
    from pipeline.store.object_store import ObjectStore

    store = ObjectStore(str(tmp_path))
    rows = "".join(f'{10 + i},"Player, No{i:02d}"\n' for i in range(40))
    store.write_text("player_id,name\n" + rows, "raw/players/2024-01/players.csv")
    store.write_text('player_id,name\n5,"Added, One"\n', "raw/players/2024-02/players.csv")
    registry_of = published_registries(store, "2024-02", keep=True)
    registry_of("2024-01"), registry_of("2024-02")  # as a run publishes its months, in order
    kept = _kept_ranked(store)
    assert kept is not None and kept.height == 41 and 5 in kept["player_id"].to_list()
    later = {key: store.read_bytes(key) for key in store.list_stamps(KEPT_RANKED_FOLDER)}
    published_registries(store, "2024-01", keep=True)("2024-01")
    assert {key: store.read_bytes(key) for key in store.list_stamps(KEPT_RANKED_FOLDER)} == later
    # With none kept, the month published is kept, however early.
    alone = ObjectStore(str(tmp_path / "alone"))
    alone.write_text("player_id,name\n" + rows, "raw/players/2024-01/players.csv")
    published_registries(alone, "2024-01", keep=True)("2024-01")
    assert (kept := _kept_ranked(alone)) is not None and kept.height == 40
