"""`ratings pool-health`: entries, exits and rating changes by group, and the cohort drift, from FIDE lists alone.

Every figure is recounted here in plain Python from the players the test wrote (or, for the real 2004 and 2013
lists in ../shared/realdata, from the ids and ratings parse_fide_list reads), never copied from the output.
"""

from __future__ import annotations

import json
import random
import statistics
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from pipeline.analytics.pool_lists import pool_health, read_pool_list
from pipeline.cli.commands import main
from pipeline.formats.fide_list import parse_fide_list, write_fide_combined_list
from schemas import CohortDrift, PoolTransitions

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
LISTS_2004 = ("fide-lists-2004", "JAN04FRL.TXT", "APR04FRL.TXT")
LISTS_2013 = ("fide-lists-2013-rapid", "rapid_jan13frl.txt", "rapid_feb13frl.txt")
FEDERATIONS = ["GER", "FRA", "ESP", "NOR", "ITA", None]


@dataclass(frozen=True)
class Player:
    rating: int
    games: int = 0
    inactive: bool = False
    birth: int | None = None
    federation: str | None = None


def realdata(*parts: str) -> Path:
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (shared/realdata not mounted)")
    return path


def pool_health_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["pool-health", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


# -- writing lists ---------------------------------------------------------------------------------
LAYOUT_D_HEADER = (
    "ID Number      Name                                                         Fed Sex Tit  WTit OTit           "
    "{month} Gms K  B-day Flag"
)


def layout_d(players: dict[int, Player], month_token: str) -> str:
    """A 2012-2015 per-type list (132 characters a line), as rapid_jan13frl.txt is written."""
    lines = [LAYOUT_D_HEADER.format(month=month_token)]
    for player_id, p in players.items():
        flag = "i" if p.inactive else ""
        lines.append(
            f"{player_id:<15}{f'Player, {player_id}':<61}{p.federation or '':<4}{'M':<4}{'':<5}{'':<5}{'':<15}"
            f"{p.rating:<6}{p.games:<4}{20:<3}{p.birth or '':<6}{flag:<4}"
        )
    return "\r\n".join(lines) + "\r\n"


def layout_f(players: dict[int, Player]) -> str:
    """A 2001-2004 quarterly list (79 characters, dd.mm.yy birthdays, no header), as JAN04FRL.TXT is written."""
    lines = [""]
    for player_id, p in players.items():
        birth = f"01.07.{p.birth % 100:02d}" if p.birth else " .  ."
        flag = "i" if p.inactive else ""
        lines.append(
            f"{player_id:>8}  {f'Player, {player_id}':<34}{'':<4}{p.federation or '':<4}{p.rating:>5} {p.games:>4} "
            f" {birth:<9}{flag:<6}"
        )
    return "\r\n".join(lines) + "\r\n"


def random_lists(seed: int, months: int, size: int = 400, born_by: int = 2012) -> list[dict[int, Player]]:
    """`months` lists of one pool: players come, go, come back, change rating or keep it, play or not."""
    rng = random.Random(seed)
    lists: list[dict[int, Player]] = [{} for _ in range(months)]
    for player_id in range(100_001, 100_001 + size):
        rating = rng.randint(1000, 2750)
        birth = rng.choice([None, rng.randint(1940, born_by), rng.randint(1978, 1998)])
        federation = rng.choice(FEDERATIONS)
        for listed in lists:
            if rng.random() < 0.2:
                continue  # not on this list (yet, any more, or for a while)
            if rng.random() < 0.05:
                federation = rng.choice(FEDERATIONS)  # a transfer: the earlier list's federation groups a stayer
            games = rng.choice([0, 0, rng.randint(1, 12)])
            rating = max(1000, rating + (rng.randint(-30, 30) if games or rng.random() < 0.1 else 0))
            listed[player_id] = Player(rating, games, rng.random() < 0.15, birth, federation)
    return lists


# -- the recount -----------------------------------------------------------------------------------
def age_group(age: int | None) -> str:
    if age is None or not 0 <= age <= 200:
        return "unknown"
    return "junior" if age < 20 else "adult" if age < 65 else "senior"


def recount(
    earlier: dict[int, Player], later: dict[int, Player], year: int | None, top: int = 10
) -> dict[tuple[str, str], dict[str, int]]:
    """Per (dimension, group): the four fates and the points, by the definitions of docs/analytics.md."""
    counts: dict[str, Counter] = {}
    largest = Counter(p.federation for p in later.values() if p.federation is not None)
    top_federations = sorted(largest, key=lambda fed: (-largest[fed], fed))[:top]
    for player_id in earlier.keys() | later.keys():
        a, b = earlier.get(player_id), later.get(player_id)
        first = a if a is not None else b
        assert first is not None
        fate = "entered" if a is None else "left" if b is None else "unchanged" if a.rating == b.rating else "changed"
        birth = a.birth if a is not None and a.birth is not None else (b.birth if b is not None else None)
        federation = a.federation if a is not None and a.federation is not None else (b.federation if b else None)
        band = first.rating // 200 * 200
        groups = [
            ("all", "all"),
            ("band", f"{band}-{band + 199}"),
            ("age", age_group(None if year is None or birth is None else year - birth)),
        ]
        if top:
            federation_group = (
                "unknown" if federation is None else federation if federation in top_federations else "other"
            )
            groups.append(("federation", federation_group))
        for group in groups:
            tally = counts.setdefault(group, Counter())
            tally[fate] += 1
            tally["points_before"] += a.rating if a else 0
            tally["points_after"] += b.rating if b else 0
            tally["points_entered"] += b.rating if fate == "entered" and b else 0
            tally["points_left"] += a.rating if fate == "left" and a else 0
            if a is not None and b is not None:
                tally["stayers_change"] += b.rating - a.rating
                tally["stayers_gained"] += max(b.rating - a.rating, 0)
                tally["stayers_lost"] += max(a.rating - b.rating, 0)
    keys = ["entered", "left", "changed", "unchanged", "points_before", "points_after", "points_entered"]
    keys += ["points_left", "stayers_change", "stayers_gained", "stayers_lost"]
    return {group: {key: tally[key] for key in keys} for group, tally in counts.items()}


def cohort_recount(
    earlier: dict[int, Player], later: dict[int, Player], year: int, games_filled: bool
) -> tuple[int, float | None]:
    changes = []
    for player_id in earlier.keys() & later.keys():
        a, b = earlier[player_id], later[player_id]
        birth = a.birth if a.birth is not None else b.birth
        if birth is None or not 25 <= year - birth <= 45 or a.inactive or b.inactive:
            continue
        if games_filled and b.games <= 0:
            continue
        changes.append(b.rating - a.rating)
    return len(changes), (float(statistics.median(changes)) if changes else None)


def ledger_rows(table: pl.DataFrame, transition: int) -> dict[tuple[str, str], dict[str, int]]:
    rows = table.filter(pl.col("transition") == transition)
    keys = ["entered", "left", "changed", "unchanged", "points_before", "points_after", "points_entered"]
    keys += ["points_left", "stayers_change", "stayers_gained", "stayers_lost"]
    return {(row["dimension"], row["group"]): {key: row[key] for key in keys} for row in rows.iter_rows(named=True)}


def json_rows(transition: dict) -> dict[tuple[str, str], dict[str, int]]:
    """The --json object's figures of one transition in the recount's form."""

    def flat(entry: dict) -> dict[str, int]:
        points = entry["points"]
        return {
            "entered": entry["entered"],
            "left": entry["left"],
            "changed": entry["changed"],
            "unchanged": entry["unchanged"],
            "points_before": points["before"],
            "points_after": points["after"],
            "points_entered": points["entered"],
            "points_left": points["left"],
            "stayers_change": points["stayers"],
            "stayers_gained": points["stayers_gained"],
            "stayers_lost": points["stayers_lost"],
        }

    rows = {("all", "all"): flat(transition)}
    for dimension, groups in transition["groups"].items():
        rows.update({(dimension, entry["group"]): flat(entry) for entry in groups})
    return rows


def assert_balanced(table: pl.DataFrame) -> None:
    """Every row: what the group holds after minus before = entered - left + the stayers' change."""
    for row in table.iter_rows(named=True):
        assert row["points_after"] - row["points_before"] == row["net_change"], row
        assert row["net_change"] == row["points_entered"] - row["points_left"] + row["stayers_change"], row
        assert row["stayers_change"] == row["stayers_gained"] - row["stayers_lost"], row


# -- synthetic lists -------------------------------------------------------------------------------
@pytest.fixture
def rapid_lists(tmp_path: Path) -> tuple[list[dict[int, Player]], list[Path]]:
    pools = random_lists(seed=37, months=3)
    paths = []
    for pool, token in zip(pools, ["jan23", "feb23", "apr23"], strict=True):
        path = tmp_path / f"rapid_{token}frl.txt"
        path.write_text(layout_d(pool, token), encoding="ascii")
        paths.append(path)
    return pools, paths


def test_every_count_and_point_sum_of_every_group_is_the_recount(rapid_lists) -> None:
    pools, paths = rapid_lists
    health = pool_health([read_pool_list(str(path)) for path in paths], federations=3)
    PoolTransitions.validate(health.transitions)
    CohortDrift.validate(health.cohorts)
    assert health.transitions["transition"].unique().sort().to_list() == [1, 2]
    for number, (earlier, later) in enumerate(zip(pools, pools[1:], strict=False), start=1):
        expected = recount(earlier, later, 2023, top=3)
        # The random pool holds every fate and group the test means to check.
        fates = expected["all", "all"]
        assert min(fates["entered"], fates["left"], fates["changed"], fates["unchanged"]) > 0
        assert {("age", "junior"), ("age", "adult"), ("age", "senior"), ("age", "unknown")} <= expected.keys()
        assert {("federation", "other"), ("federation", "unknown")} <= expected.keys()
        assert ledger_rows(health.transitions, number) == expected
        size, median = cohort_recount(earlier, later, 2023, games_filled=True)
        cohort = health.cohorts.row(number - 1, named=True)
        assert size > 10 and (cohort["players"], cohort["median_change"]) == (size, median)
        months = [1, 2][number - 1]
        assert cohort["months"] == months and cohort["annual_drift"] == pytest.approx(median * 12 / months)
        assert "games > 0" in cohort["activity"] and "inactive" in cohort["activity"]
    assert_balanced(health.transitions)


def test_the_pool_changes_by_exactly_what_enters_leaves_and_moves(rapid_lists) -> None:
    pools, paths = rapid_lists
    health = pool_health([read_pool_list(str(path)) for path in paths])
    pool_rows = health.transitions.filter(pl.col("dimension") == "all")
    for row, earlier, later in zip(pool_rows.iter_rows(named=True), pools, pools[1:], strict=False):
        total_change = sum(p.rating for p in later.values()) - sum(p.rating for p in earlier.values())
        assert row["net_change"] == total_change
        assert row["points_entered"] - row["points_left"] + row["stayers_change"] == total_change
    # Each dimension's groups share the pool out: their figures add up to the pool's.
    figures = ["entered", "left", "changed", "unchanged", "points_entered", "points_left", "stayers_change"]
    added = health.transitions.group_by("transition", "dimension").agg(pl.col(figures).sum())
    for row in added.iter_rows(named=True):
        pool = pool_rows.filter(pl.col("transition") == row["transition"]).row(0, named=True)
        assert {key: row[key] for key in figures} == {key: pool[key] for key in figures}, row["dimension"]


def test_the_cli_json_gives_one_transition_per_consecutive_pair_with_the_recount(rapid_lists, capsys) -> None:
    pools, paths = rapid_lists
    code, out, err = pool_health_cli(capsys, *paths, "--json", "--federations", "2")
    assert code == 0, err
    answer = json.loads(out)
    assert [entry["file"] for entry in answer["lists"]] == [str(path) for path in paths]
    assert [entry["players"] for entry in answer["lists"]] == [len(pool) for pool in pools]
    assert [entry["bytes"] for entry in answer["lists"]] == [path.stat().st_size for path in paths]
    assert [(t["from"], t["to"]) for t in answer["transitions"]] == [
        (str(paths[0]), str(paths[1])),
        (str(paths[1]), str(paths[2])),
    ]
    for transition, earlier, later in zip(answer["transitions"], pools, pools[1:], strict=False):
        entered, left = later.keys() - earlier.keys(), earlier.keys() - later.keys()
        both = earlier.keys() & later.keys()
        changed = {i for i in both if earlier[i].rating != later[i].rating}
        assert (transition["entered"], transition["left"]) == (len(entered), len(left))
        assert (transition["changed"], transition["unchanged"]) == (len(changed), len(both - changed))
        assert json_rows(transition) == recount(earlier, later, 2023, top=2)
        size, median = cohort_recount(earlier, later, 2023, games_filled=True)
        assert (transition["cohort"]["players"], transition["cohort"]["median_change"]) == (size, median)


def test_the_text_table_shows_each_pair_and_group_with_the_recounted_figures(rapid_lists, capsys) -> None:
    pools, paths = rapid_lists
    code, out, _ = pool_health_cli(capsys, *paths)
    assert code == 0
    blocks = out.split("\n\n")
    assert len(blocks) == 2
    for block, earlier, later in zip(blocks, pools, pools[1:], strict=False):
        expected = recount(earlier, later, 2023)
        all_line = next(line for line in block.splitlines() if line.split()[0] == "all")
        shown = [int(cell.replace(",", "").replace("+", "")) for cell in all_line.split()[1:]]
        pool = expected["all", "all"]
        assert shown == [
            pool["entered"],
            pool["left"],
            pool["changed"],
            pool["unchanged"],
            pool["points_entered"],
            pool["points_left"],
            pool["stayers_change"],
            pool["points_after"] - pool["points_before"],
        ]
        bands = {group for dimension, group in expected if dimension == "band"}
        assert {line.split()[1] for line in block.splitlines() if line.split()[0] == "band"} == bands
        assert "cohort: aged 25-45 in 2023" in block


def test_a_quarterly_list_without_games_is_compared_on_its_flags_and_the_note_says_so(tmp_path: Path) -> None:
    earlier, later = random_lists(seed=4, months=2, born_by=2003)
    # As in APR04FRL.TXT: the later list has the games column but 0 for everybody.
    later = {player_id: Player(p.rating, 0, p.inactive, p.birth, p.federation) for player_id, p in later.items()}
    paths = [tmp_path / "JAN04FRL.TXT", tmp_path / "APR04FRL.TXT"]
    for path, pool in zip(paths, [earlier, later], strict=True):
        path.write_text(layout_f(pool), encoding="latin-1")
    lists = [read_pool_list(str(path)) for path in paths]
    assert [pool.layout for pool in lists] == ["F", "F"] and [pool.period for pool in lists] == ["2004-01", "2004-04"]
    health = pool_health(lists)
    assert ledger_rows(health.transitions, 1) == recount(earlier, later, 2004)
    cohort = health.cohorts.row(0, named=True)
    assert (cohort["players"], cohort["median_change"]) == cohort_recount(earlier, later, 2004, games_filled=False)
    assert "games" not in cohort["activity"] and "not flagged inactive on either list" in cohort["activity"]
    assert "no player has games > 0" in cohort["note"]
    assert any("games not tested" in note for note in health.notes[1])


def test_unrated_players_of_a_combined_list_are_not_on_it_and_type_picks_the_rating(tmp_path: Path, capsys) -> None:
    rng = random.Random(8)
    frames, standard_pools, rapid_pools = [], [], []
    for _ in range(2):
        rows = []
        for player_id in range(1, 121):
            standard = rng.choice([None, rng.randint(1400, 2500)])
            rapid = rng.choice([None, rng.randint(1400, 2500)])
            rows.append(
                {
                    "player_id": player_id,
                    "name": f"Player, {player_id}",
                    "federation": "GER",
                    "sex": "M",
                    "title": "",
                    "birth_year": 1990,
                    "rating": standard,
                    "games": 1,
                    "k": 20,
                    "inactive": False,
                    "rapid_rating": rapid,
                    "rapid_games": 1 if rapid else None,
                    "rapid_k": 20 if rapid else None,
                }
            )
        frames.append(pl.DataFrame(rows))
        standard_pools.append({r["player_id"]: Player(r["rating"], 1, False, 1990, "GER") for r in rows if r["rating"]})
        rapid_pools.append(
            {r["player_id"]: Player(r["rapid_rating"], 1, False, 1990, "GER") for r in rows if r["rapid_rating"]}
        )
    paths = []
    for index, frame in enumerate(frames):
        path = tmp_path / f"month{index}" / "players_list_foa.txt"
        path.parent.mkdir()
        with open(path, "wb") as handle:
            write_fide_combined_list(frame, handle)
        paths.append(path)
    for rating_type, pools in (("standard", standard_pools), ("rapid", rapid_pools)):
        code, out, err = pool_health_cli(capsys, *paths, "--type", rating_type, "--months", "2025-01,2025-02", "--json")
        assert code == 0, err
        answer = json.loads(out)
        assert [entry["layout"] for entry in answer["lists"]] == ["A", "A"]
        assert [entry["players"] for entry in answer["lists"]] == [len(pool) for pool in pools]
        assert json_rows(answer["transitions"][0]) == recount(pools[0], pools[1], 2025)


def test_a_list_without_a_date_gets_it_from_months_or_says_what_is_missing(tmp_path: Path, capsys) -> None:
    earlier, later = random_lists(seed=12, months=2, born_by=2003)
    paths = [tmp_path / "first.txt", tmp_path / "second.txt"]
    for path, pool in zip(paths, [earlier, later], strict=True):
        path.write_text(layout_f(pool), encoding="latin-1")
    code, out, _ = pool_health_cli(capsys, *paths, "--json")
    assert code == 0
    transition = json.loads(out)["transitions"][0]
    assert transition["months"] is None and transition["cohort"]["annual_drift"] is None
    assert transition["cohort"]["players"] == 0 and "--months" in " ".join(transition["notes"])
    assert {entry["group"] for entry in transition["groups"]["age"]} == {"unknown"}
    code, out, _ = pool_health_cli(capsys, *paths, "--json", "--months", "2003-10,2004-01")
    transition = json.loads(out)["transitions"][0]
    size, median = cohort_recount(earlier, later, 2004, games_filled=True)
    assert (transition["months"], transition["cohort"]["players"]) == (3, size)
    assert median is not None and transition["cohort"]["annual_drift"] == pytest.approx(median * 4, abs=0.01)
    assert json_rows(transition) == recount(earlier, later, 2004)
    # In the wrong order the lists are still compared as given; a drift a year has no meaning then.
    code, out, _ = pool_health_cli(capsys, *paths, "--json", "--months", "2004-01,2003-10")
    transition = json.loads(out)["transitions"][0]
    assert transition["cohort"]["annual_drift"] is None and "not later than" in transition["cohort"]["note"]


def test_an_undated_layout_f_list_takes_its_birth_years_century_from_months(tmp_path: Path, capsys) -> None:
    """A layout F list without a header or a month in its name: its dd.mm.yy birthdays get their century from the
    month --months gives, not from a default chosen before it was known (dd.mm.25 on a 2004 list is 1925, not 2025:
    an age of -21 in no group). Dated by --months, it is compared as the same list dated by its name.
    """
    earlier, later = random_lists(seed=21, months=2, born_by=2003)
    for pool in (earlier, later):
        pool.update({900_001: Player(2100, 3, birth=1925, federation="GER"), 900_002: Player(1900, birth=1912)})
    undated, dated, april = tmp_path / "list_a.txt", tmp_path / "JAN04FRL.TXT", tmp_path / "APR04FRL.TXT"
    for path, pool in ((undated, earlier), (dated, earlier), (april, later)):
        path.write_text(layout_f(pool), encoding="latin-1")
    code, out, err = pool_health_cli(capsys, undated, april, "--json", "--months", "2004-01,2004-04")
    assert code == 0, err
    transition = json.loads(out)["transitions"][0]
    assert json_rows(transition) == recount(earlier, later, 2004)
    seniors = {entry["group"]: entry for entry in transition["groups"]["age"]}["senior"]
    assert seniors["changed"] + seniors["unchanged"] >= 2
    code, out, _ = pool_health_cli(capsys, dated, april, "--json")
    assert json_rows(json.loads(out)["transitions"][0]) == json_rows(transition)


def test_ages_outside_every_group_are_counted_in_the_note(rapid_lists) -> None:
    """A birth year after the list's year gives an age in no group: such players are in the unknown group, and the
    notes count them beside the players without a birth year, so that the counts add up to the group.
    """
    pools, paths = rapid_lists
    for pool in pools[:2]:
        pool[900_001] = Player(1500, birth=2030)
    for pool, path in zip(pools[:2], paths[:2], strict=True):
        path.write_text(layout_d(pool, path.name[6:11]), encoding="ascii")
    health = pool_health([read_pool_list(str(path)) for path in paths[:2]])
    unknown = health.transitions.filter((pl.col("dimension") == "age") & (pl.col("group") == "unknown")).row(
        0, named=True
    )
    missing = sum(1 for i in pools[0].keys() | pools[1].keys() if (pools[0].get(i) or pools[1][i]).birth is None)
    notes = " ".join(health.notes[1])
    assert f"{missing:,} players without a birth year" in notes
    assert "1 players whose birth year gives an age outside 0-200 in 2023" in notes
    assert sum(unknown[fate] for fate in ("entered", "left", "changed", "unchanged")) == missing + 1


def test_real_lists_a_renamed_january_2004_list_dated_by_months_is_the_dated_one(tmp_path: Path, capsys) -> None:
    january, april = (realdata(*LISTS_2004[:1], name) for name in LISTS_2004[1:])
    renamed = tmp_path / "list_a.txt"
    renamed.write_bytes(january.read_bytes())
    code, out, _ = pool_health_cli(capsys, renamed, april, "--json", "--months", "2004-01,2004-04")
    assert code == 0
    transition = json.loads(out)["transitions"][0]
    code, out, _ = pool_health_cli(capsys, january, april, "--json")
    dated = json.loads(out)["transitions"][0]
    assert json_rows(transition) == json_rows(dated) and transition["notes"] == dated["notes"]
    unknown = {entry["group"]: entry for entry in transition["groups"]["age"]}["unknown"]
    held = sum(unknown[fate] for fate in ("entered", "left", "changed", "unchanged"))
    assert f"{held:,} players without a birth year" in " ".join(transition["notes"])


def test_a_zipped_download_reads_as_the_list_it_holds(rapid_lists, tmp_path: Path, capsys) -> None:
    _, paths = rapid_lists
    zipped = tmp_path / "rapid_jan23frl.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(paths[0], "rapid_jan23frl.txt")
    code, out, err = pool_health_cli(capsys, zipped, paths[1], "--json")
    assert code == 0, err
    from_zip = json.loads(out)
    code, out, _ = pool_health_cli(capsys, paths[0], paths[1], "--json")
    plain = json.loads(out)
    assert from_zip["lists"][0]["period"] == "2023-01" and from_zip["lists"][0]["rating_type"] == "rapid"
    assert json_rows(from_zip["transitions"][0]) == json_rows(plain["transitions"][0])


def test_rejected_lines_are_warned_with_file_and_line_and_the_rest_is_compared(rapid_lists, capsys) -> None:
    pools, paths = rapid_lists
    text = paths[1].read_text().splitlines()
    text.insert(3, "x" * 10 + text[3][10:])  # line 4: an id that is not a number
    paths[1].write_text("\n".join(text) + "\n")
    code, out, err = pool_health_cli(capsys, paths[0], paths[1], "--json")
    assert code == 0
    assert f"ratings pool-health: warning: {paths[1]}: line 4: FIDE id" in err
    assert json_rows(json.loads(out)["transitions"][0]) == recount(pools[0], pools[1], 2023)


def test_a_player_whose_line_is_rejected_is_neither_left_nor_entered(rapid_lists, capsys) -> None:
    """A list line that cannot be read loses its player from that list: when its id is readable, the player is left
    out of both lists' comparison (not counted as left), and the notes say how many; a line without a readable id
    cannot be matched, and the notes say its player may count as left.
    """
    pools, paths = rapid_lists
    earlier, later = pools[0], pools[1]
    both = sorted(earlier.keys() & later.keys())
    spoiled, lost = both[0], both[1]
    lines = paths[1].read_text().splitlines()
    for number, line in enumerate(lines):
        if line.startswith(str(spoiled)):
            lines[number] = line[:109] + "12x4  " + line[115:]  # the rating: not a number
        elif line.startswith(str(lost)):
            lines[number] = "x" * 10 + line[10:]  # the id: not a number
    paths[1].write_text("\n".join(lines) + "\n")
    code, out, err = pool_health_cli(capsys, paths[0], paths[1], "--json")
    assert code == 0 and "rapid rating '12x4' is not a number" in err
    transition = json.loads(out)["transitions"][0]
    kept_earlier = {i: p for i, p in earlier.items() if i != spoiled}
    kept_later = {i: p for i, p in later.items() if i not in (spoiled, lost)}
    assert json_rows(transition) == recount(kept_earlier, kept_later, 2023)
    notes = " ".join(transition["notes"])
    assert f"1 player(s) on {paths[0]} whose line on {paths[1]} was rejected are left out of both lists" in notes
    assert (
        f"1 rejected line(s) of {paths[1]} have no readable FIDE id: their players, if on {paths[0]}, count as left"
        in (notes)
    )


# -- errors ----------------------------------------------------------------------------------------
def test_bad_input_is_one_line_naming_the_file_and_exit_code_2(rapid_lists, tmp_path: Path, capsys) -> None:
    _, paths = rapid_lists
    prose = tmp_path / "notes.txt"
    prose.write_text("These are the minutes of the rating commission.\nNothing here is a list.\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    standard = tmp_path / "JAN23FRL.TXT"
    standard.write_text(layout_f({1: Player(2000, birth=1980, federation="GER")}), encoding="latin-1")
    twice = tmp_path / "two.zip"
    with zipfile.ZipFile(twice, "w") as archive:
        archive.writestr("a.txt", paths[0].read_text())
        archive.writestr("b.txt", paths[1].read_text())
    broken_zip = tmp_path / "broken.zip"
    broken_zip.write_bytes(b"PK\x03\x04 not really")
    cases = [
        ([paths[0]], f"{paths[0]}: only one list given"),
        ([paths[0], tmp_path / "missing.txt"], f"{tmp_path / 'missing.txt'}: cannot be read"),
        ([paths[0], prose], f"{prose}: not a FIDE rating list"),
        ([empty, paths[0]], f"{empty}: empty file"),
        ([paths[0], standard], f"{standard}: a standard list, but the lists are compared as rapid lists"),
        ([paths[0], twice], f"{twice}: a zip of 2 files"),
        ([paths[0], broken_zip], f"{broken_zip}: not a readable zip file"),
        ([paths[0], paths[1], "--months", "2023-01"], "--months: 1 given for 2 lists"),
        ([paths[0], paths[1], "--months", "2023-01,2023-13"], "not a month in YYYY-MM form: '2023-13'"),
        (
            [paths[0], paths[1], "--months", "2023-02,2023-01"],
            f"{paths[0]}: the file states the list of 2023-01, --months gives 2023-02",
        ),
        ([paths[0], paths[1], "--type", "blitz"], f"{paths[0]}: a rapid list, but the lists are compared as blitz"),
    ]
    for args, message in cases:
        code, out, err = pool_health_cli(capsys, *args)
        assert code == 2, (args, err)
        assert out == "" and err.startswith("ratings pool-health: error: ") and message in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_help_lists_the_command_with_one_line(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps help text at the terminal's width
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("pool-health")]
    assert len(listed) == 1 and "stable cohort's drift, from published FIDE lists" in listed[0]
    with pytest.raises(SystemExit):
        main(["pool-health", "--help"])
    assert "--json" in capsys.readouterr().out


# -- the real lists --------------------------------------------------------------------------------
def parsed_pool(path: Path) -> dict[int, Player]:
    """The rated players of a real list as parse_fide_list reads them, in the recount's form."""
    parsed = parse_fide_list(path.read_bytes(), path.name)
    kind = parsed.rating_type
    frame = parsed.players.filter(pl.col(f"{kind}_rating").is_not_null())
    return {
        row["player_id"]: Player(
            row[f"{kind}_rating"], row[f"{kind}_games"], row["inactive"], row["birth_year"], row["federation"]
        )
        for row in frame.iter_rows(named=True)
    }


@pytest.mark.parametrize("folder, first, second", [LISTS_2004, LISTS_2013], ids=["standard-2004", "rapid-2013"])
def test_real_lists_entries_exits_and_changes_are_the_set_recount(folder, first, second, capsys) -> None:
    paths = [realdata(folder, first), realdata(folder, second)]
    earlier, later = (parsed_pool(path) for path in paths)
    entered, left = later.keys() - earlier.keys(), earlier.keys() - later.keys()
    both = earlier.keys() & later.keys()
    changed = {player_id for player_id in both if earlier[player_id].rating != later[player_id].rating}
    code, out, err = pool_health_cli(capsys, *paths, "--json")
    assert code == 0, err
    transition = json.loads(out)["transitions"][0]
    assert (transition["entered"], transition["left"], transition["changed"], transition["unchanged"]) == (
        len(entered),
        len(left),
        len(changed),
        len(both - changed),
    )
    points = transition["points"]
    assert points["entered"] == sum(later[i].rating for i in entered)
    assert points["left"] == sum(earlier[i].rating for i in left)
    assert points["stayers"] == sum(later[i].rating - earlier[i].rating for i in both)
    total_change = sum(p.rating for p in later.values()) - sum(p.rating for p in earlier.values())
    assert points["change"] == total_change == points["entered"] - points["left"] + points["stayers"]
    # The groups by hand: band, age and federation, every figure.
    year = int(transition["to_period"][:4])
    assert json_rows(transition) == recount(earlier, later, year)
    size, median = cohort_recount(earlier, later, year, games_filled=any(p.games for p in later.values()))
    assert (transition["cohort"]["players"], transition["cohort"]["median_change"]) == (size, median)
    assert size > 0


def test_real_lists_balance_in_every_group() -> None:
    for folder, first, second in (LISTS_2004, LISTS_2013):
        lists = [read_pool_list(str(realdata(folder, name))) for name in (first, second)]
        health = pool_health(lists)
        PoolTransitions.validate(health.transitions)
        assert_balanced(health.transitions)
        pool = health.transitions.row(0, named=True)
        assert pool["dimension"] == "all"
        assert pool["points_before"] == lists[0].players["rating"].cast(pl.Int64).sum()
        assert pool["points_after"] == lists[1].players["rating"].cast(pl.Int64).sum()


def test_the_2004_april_list_leaves_games_out_of_the_cohort_and_says_why(capsys) -> None:
    paths = [realdata(*LISTS_2004[:1], name) for name in LISTS_2004[1:]]
    code, out, _ = pool_health_cli(capsys, *paths)
    assert code == 0
    assert f"{paths[1]}: no player has games > 0" in out
    # Layout F has no sex column, which no figure here needs; its flag column gives the inactive players.
    assert "not flagged inactive on either list" in out


def test_gzip_is_read_as_the_list_it_holds(rapid_lists, tmp_path: Path) -> None:
    import gzip

    _, paths = rapid_lists
    packed = tmp_path / "rapid_feb23frl.txt.gz"
    packed.write_bytes(gzip.compress(paths[1].read_bytes()))
    plain, unpacked = read_pool_list(str(paths[1])), read_pool_list(str(packed))
    assert unpacked.period == plain.period == "2023-02"
    assert unpacked.players.equals(plain.players)
