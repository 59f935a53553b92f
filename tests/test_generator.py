"""Tests of the synthetic federation generator: determinism, layout, file formats, registry coverage, volumes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.generator import DEFAULT_DEMO, GenerationSummary, config, generate
from pipeline.generator.dumps import CSV_COLUMNS, DUPLICATE_SUFFIX, REGISTRY_COLUMNS, mistype_ids
from pipeline.generator.pairing import round_robin_template
from pipeline.months import month_range

SMALL = dict(seed=11, players=600, start="2020-01", end="2020-06")
TRF_RESULT_CODES = set("1=0+-HFUZ ")
PGN_REQUIRED_TAGS = ("Event", "Site", "Date", "Round", "White", "Black", "Result", "WhiteFideId", "BlackFideId",
                     "EventDate", "TimeControl")
LAYOUT = re.compile(
    r"^(raw/GER/\d{4}-\d{2}/[a-z0-9-]+\.trf"
    r"|raw/ENG/\d{4}-\d{2}/[a-z0-9-]+\.pgn"
    r"|raw/NOR/\d{4}-\d{2}/games\.csv"
    r"|raw/players/\d{4}-\d{2}/players\.csv"
    r"|raw/players/\d{4}-\d{2}/seed_list\.csv"
    r"|truth/strength\.parquet)$"
)


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, GenerationSummary]:
    root = tmp_path_factory.mktemp("gen-small")
    return root, generate(str(root), **SMALL)


@pytest.fixture(scope="module")
def registry(small) -> pl.DataFrame:
    """All registered players with the month of their registry file."""
    root, _ = small
    frames = [
        pl.read_csv(root / "raw" / "players" / month / "players.csv", schema_overrides={"title": pl.Utf8})
        .with_columns(pl.lit(month).alias("registered"))
        for month in month_range(SMALL["start"], SMALL["end"])
    ]
    return pl.concat(frames)


# -- parsers used by the tests -----------------------------------------------------------------------
def parse_trf(text: str) -> tuple[dict[str, str], list[dict]]:
    headers, players = {}, []
    for line in text.split("\n"):
        if not line:
            continue
        tag = line[:3]
        if tag != "001":
            headers[tag] = line
            continue
        cells = []
        r = 0
        while 91 + 10 * r < len(line):
            start = 91 + 10 * r  # 0-based column of the opponent field (1-based column 92 + 10 (r - 1))
            cells.append((int(line[start:start + 4]), line[start + 5], line[start + 7]))
            r += 1
        players.append({
            "start_rank": int(line[4:8]),
            "sex": line[9],
            "title": line[10:13].strip(),
            "name": line[14:47].rstrip(),
            "rating": line[48:52],
            "federation": line[53:56],
            "fide_id": int(line[57:68]) if line[67] != " " and line[68] == " " else None,
            "birth": line[69:79],
            "points": float(line[80:84]),
            "rank": int(line[85:89]),
            "cells": cells,
        })
    return headers, players


def parse_pgn(text: str) -> list[tuple[dict[str, str], str]]:
    games = []
    for block in text.strip("\n").split("\n\n[Event "):
        block = block if block.startswith("[Event ") else "[Event " + block
        header, _, moves = block.partition("\n\n")
        tags = dict(re.findall(r'^\[(\w+) "(.*)"\]$', header, flags=re.M))
        assert len(tags) == header.count("\n") + 1, header
        games.append((tags, moves.strip()))
    return games


def game_ids(root: Path) -> pl.DataFrame:
    """Every (month folder, format, player id) that appears in a game record of the dumps."""
    rows = []
    for path in sorted((root / "raw").glob("GER/*/*.trf")):
        for player in parse_trf(path.read_text())[1]:
            rows.append((path.parent.name, "trf", player["fide_id"]))
    for path in sorted((root / "raw").glob("ENG/*/*.pgn")):
        for tags, _ in parse_pgn(path.read_text()):
            rows += [(path.parent.name, "pgn", int(tags[tag])) for tag in ("WhiteFideId", "BlackFideId")]
    for path in sorted((root / "raw").glob("NOR/*/games.csv")):
        csv = pl.read_csv(path)
        rows += [(path.parent.name, "csv", int(i)) for i in csv["white_id"].to_list() + csv["black_id"].to_list()]
    return pl.DataFrame(rows, schema={"month": pl.Utf8, "format": pl.Utf8, "player_id": pl.Int64}, orient="row")


# -- determinism -------------------------------------------------------------------------------------
def test_same_arguments_give_byte_identical_files(small, tmp_path):
    root, summary = small
    again = generate(str(tmp_path), **SMALL)
    first, second = files_of(root), files_of(tmp_path)
    assert list(first) == list(second)
    differing = [key for key in first if first[key] != second[key]]
    assert differing == []
    assert again.games == summary.games and again.files == summary.files == len(first)


def test_another_seed_gives_other_data(small, tmp_path):
    root, _ = small
    generate(str(tmp_path), **{**SMALL, "seed": SMALL["seed"] + 1})
    first, second = files_of(root), files_of(tmp_path)
    common = set(first) & set(second)
    assert first["truth/strength.parquet"] != second["truth/strength.parquet"]
    assert sum(first[k] != second[k] for k in common) > len(common) / 2


def test_generator_does_not_import_dagster():
    code = "import sys, pipeline.generator; print('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- layout ------------------------------------------------------------------------------------------
def test_layout(small):
    root, summary = small
    keys = list(files_of(root))
    assert [k for k in keys if not LAYOUT.match(k)] == []
    months = month_range(SMALL["start"], SMALL["end"])
    for month in months:
        assert f"raw/players/{month}/players.csv" in keys
        assert f"raw/NOR/{month}/games.csv" in keys
        assert any(k.startswith(f"raw/GER/{month}/") for k in keys), month
        assert any(k.startswith(f"raw/ENG/{month}/") for k in keys), month
    assert f"raw/players/{months[0]}/seed_list.csv" in keys
    assert [k for k in keys if k.endswith("seed_list.csv")] == [f"raw/players/{months[0]}/seed_list.csv"]
    assert summary.months == len(months) and summary.players == SMALL["players"]
    assert summary.federations == ("ENG", "GER", "NOR") and summary.files == len(keys)
    assert summary.root == str(root)


def test_csv_headers(small):
    root, _ = small
    for path in sorted(root.glob("raw/NOR/*/games.csv")):
        assert path.read_text().split("\n", 1)[0] == ",".join(CSV_COLUMNS)
    for path in sorted(root.glob("raw/players/*/players.csv")):
        assert path.read_text().split("\n", 1)[0] == ",".join(REGISTRY_COLUMNS)
    seed = next(root.glob("raw/players/*/seed_list.csv")).read_text()
    assert seed.split("\n", 1)[0] == "player_id,rating,games_total,birth_year,ever_2400"


# -- TRF ---------------------------------------------------------------------------------------------
def test_trf_columns_and_crosstable_consistency(small, registry):
    root, _ = small
    ids = set(registry["player_id"].to_list())
    paths = sorted(root.glob("raw/GER/*/*.trf"))
    assert paths
    for path in paths:
        text = path.read_text()
        assert text.endswith("\n") and "\r" not in text
        headers, players = parse_trf(text)
        assert {"012", "022", "032", "042", "052", "062", "072", "092", "122", "132"} <= set(headers)
        month = path.parent.name
        assert re.fullmatch(rf"042 {month.replace('-', '/')}/\d\d", headers["042"])
        assert int(headers["062"][4:]) == len(players)
        assert int(headers["072"][4:]) == sum(p["rating"].strip() != "" for p in players)
        rounds = len(players[0]["cells"])
        round_dates = headers["132"][91:]
        assert [round_dates[10 * r:10 * r + 8] for r in range(rounds)] == \
            [f"{month[2:4]}/{month[5:7]}/{round_dates[10 * r + 6:10 * r + 8]}" for r in range(rounds)]
        by_rank = {p["start_rank"]: p for p in players}
        assert sorted(by_rank) == list(range(1, len(players) + 1))
        for p in players:
            assert p["fide_id"] in ids  # columns 58-68 hold a registered FIDE id
            assert p["rating"] == "    " or (p["rating"].isdigit() and int(p["rating"]) >= config.RATING_FLOOR)
            assert p["sex"] in "mw" and p["federation"] in config.FEDERATIONS
            assert re.fullmatch(r"\d{4}/01/01", p["birth"])
            assert len(p["cells"]) == rounds
            points = 0.0
            for r, (opponent, colour, result) in enumerate(p["cells"]):
                assert result in TRF_RESULT_CODES
                points += {"1": 1, "+": 1, "F": 1, "U": 1, "=": 0.5, "H": 0.5}.get(result, 0)
                if opponent == 0:
                    assert colour == "-" and result in "HFUZ "
                    continue
                other = by_rank[opponent]["cells"][r]
                assert other[0] == p["start_rank"] and {colour, other[1]} == {"w", "b"}
                assert result + other[2] in ("10", "01", "==", "+-", "-+")
            assert p["points"] == points


def test_trf_line_positions_on_a_sample(small):
    root, _ = small
    line = next(l for l in sorted(root.glob("raw/GER/*/*.trf"))[0].read_text().split("\n") if l.startswith("001"))
    # Columns are 1-based in the TRF16 specification.
    column = lambda a, b: line[a - 1:b]  # noqa: E731
    assert column(1, 3) == "001" and column(5, 8).strip().isdigit()
    # The id is right-aligned in 58-68: a digit in column 68, blanks in 57 and 69, the birth date in 70-79.
    assert column(57, 57) == " " and column(58, 68).strip().isdigit() and column(68, 68).isdigit()
    assert column(69, 69) == " " and re.fullmatch(r"\d{4}/01/01", column(70, 79))
    assert column(49, 52).strip() == "" or column(49, 52).isdigit()
    assert column(54, 56) in config.FEDERATIONS and re.fullmatch(r"[ \d]\d\.\d", column(81, 84))
    assert column(99, 99) in TRF_RESULT_CODES and column(97, 97) in "wb-"
    assert column(92, 95).strip().isdigit() and column(109, 109) in TRF_RESULT_CODES


# -- PGN ---------------------------------------------------------------------------------------------
def test_pgn_headers_parse(small, registry):
    root, _ = small
    ids = set(registry["player_id"].to_list())
    names = dict(zip(registry["player_id"].to_list(), registry["name"].to_list()))
    games = [g for path in sorted(root.glob("raw/ENG/*/*.pgn")) for g in parse_pgn(path.read_text())]
    assert games
    for tags, moves in games:
        assert all(tag in tags for tag in PGN_REQUIRED_TAGS), tags
        assert tags["Result"] in ("1-0", "0-1", "1/2-1/2")
        assert moves.endswith(tags["Result"])
        assert all(re.fullmatch(r"\d{4}\.\d\d\.\d\d", tags[tag]) for tag in ("Date", "EventDate"))
        assert tags["TimeControl"] == "5400+30" and tags["Round"].isdigit()
        white, black = int(tags["WhiteFideId"]), int(tags["BlackFideId"])
        assert white in ids and black in ids and white != black
        assert names[white] == tags["White"] and names[black] == tags["Black"]
        if tags.get("Termination") == "forfeit":
            assert moves == tags["Result"]  # no moves
        else:
            assert moves.startswith("1. ")


# -- registry and seed list --------------------------------------------------------------------------
def test_every_game_id_is_registered_by_then_except_csv_typos(small, registry):
    root, summary = small
    seen = game_ids(root).join(registry.select("player_id", "registered"), on="player_id", how="left")
    unknown = seen.filter(pl.col("registered").is_null())
    assert set(unknown["format"].to_list()) <= {"csv"}
    assert unknown.height == summary.id_typos
    csv_games = seen.filter(pl.col("format") == "csv").height / 2
    assert unknown.height <= max(3, 4 * config.ID_TYPO_RATE * csv_games)
    known = seen.filter(pl.col("registered").is_not_null())
    assert known.filter(pl.col("registered") > pl.col("month")).height == 0


def test_registry_and_seed_list(small, registry):
    root, _ = small
    assert registry.height == SMALL["players"] and registry["player_id"].is_unique().all()
    assert registry["player_id"].min() >= 1_000_000 and registry["player_id"].max() < 100_000_000
    assert set(registry["sex"].to_list()) <= {"M", "F"}
    assert set(registry["federation"].to_list()) == set(config.FEDERATIONS)
    assert all(re.fullmatch(r"[A-Za-z]+, [A-Za-z]+", n) for n in registry["name"].to_list())
    first = registry.filter(pl.col("registered") == SMALL["start"])
    assert 0.4 * SMALL["players"] < first.height < 0.7 * SMALL["players"]  # about half exist at start
    seed = pl.read_csv(root / "raw" / "players" / SMALL["start"] / "seed_list.csv")
    assert seed["player_id"].is_in(first["player_id"].to_list()).all()
    assert seed["rating"].min() >= config.RATING_FLOOR and seed["games_total"].min() >= 5
    assert seed.filter(pl.col("rating") >= 2400)["ever_2400"].all()
    assert 0.5 * first.height < seed.height <= first.height


def test_truth_strength(small, registry):
    root, _ = small
    truth = pl.read_parquet(root / "truth" / "strength.parquet")
    assert truth.schema == pl.Schema({"player_id": pl.Int64, "month": pl.Utf8, "strength": pl.Float64})
    assert truth.select("player_id", "month").is_unique().all()
    # A player exists from the month of registration on (until quitting).
    firsts = truth.group_by("player_id").agg(pl.col("month").min()).join(registry, on="player_id")
    assert firsts.filter(pl.col("month") != pl.col("registered")).height == 0
    assert truth["strength"].is_between(300, 3200).all()


# -- volumes -----------------------------------------------------------------------------------------
def test_volumes_scale_with_the_population(small):
    root, summary = small
    truth = pl.read_parquet(root / "truth" / "strength.parquet")
    existing = truth.group_by("month").len().sort("month")["len"].to_numpy()
    per_player = np.asarray(summary.games_per_month) / existing
    # The demo's 5,000-15,000 games a month for ~20,000 existing players is 0.25-0.75 per player.
    assert ((per_player > 0.2) & (per_player < 0.8)).all(), per_player
    assert sum(summary.games_per_month) == summary.games


@pytest.mark.slow
def test_default_demo_volume(tmp_path):
    summary = generate(str(tmp_path), **DEFAULT_DEMO)
    assert summary.months == 120
    assert all(5_000 <= g <= 15_000 for g in summary.games_per_month), summary.games_per_month


# -- dirty records -----------------------------------------------------------------------------------
def test_dirty_records_at_raised_rates(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "DUPLICATE_FILE_RATE", 0.3)
    monkeypatch.setattr(config, "ID_TYPO_RATE", 0.05)
    monkeypatch.setattr(config, "DATE_OUTSIDE_MONTH_RATE", 0.05)
    monkeypatch.setattr(config, "FORFEIT_RATE", 0.05)
    summary = generate(str(tmp_path), seed=5, players=1500, start="2019-11", end="2020-02")
    files = files_of(tmp_path)
    copies = [k for k in files if DUPLICATE_SUFFIX in k]
    assert copies and len(copies) == summary.duplicate_files
    for copy in copies:
        assert files[copy] == files[copy.replace(DUPLICATE_SUFFIX, "")]
    assert summary.id_typos > 0 and summary.forfeits > 0 and summary.dated_outside_month > 0
    trf_codes = "".join(
        l[91:] for k, v in files.items() if k.endswith(".trf") for l in v.decode().split("\n") if l.startswith("001"))
    assert {"+", "-", "H", "U"} <= set(trf_codes)
    pgn = "".join(v.decode() for k, v in files.items() if k.endswith(".pgn"))
    assert '[Termination "forfeit"]' in pgn
    early = 0
    for key, data in files.items():
        if key.endswith("games.csv"):
            month = key.split("/")[2]
            early += pl.read_csv(data).filter(~pl.col("date").str.starts_with(month)).height
    assert early > 0


def test_mistyped_ids_are_unregistered_and_close():
    rng = np.random.default_rng(0)
    registered = np.arange(4_600_000, 4_601_000, dtype=np.int64)  # every id nearby is taken ...
    ids = registered[::100]
    typos = mistype_ids(rng, ids, np.sort(registered))
    assert not np.isin(typos, registered).any()  # ... so only a change of the 4th-last digit escapes
    differing = [sum(a != b for a, b in zip(str(x), str(y))) for x, y in zip(ids, typos)]
    assert differing == [1] * len(ids)


def test_round_robin_template_meets_everyone_once():
    for n in (8, 9, 10):
        opponent, white = round_robin_template(n)
        for player in range(n):
            met = opponent[:, player][opponent[:, player] >= 0]
            assert sorted(met.tolist()) == [p for p in range(n) if p != player]
            seated = opponent[:, player] >= 0
            assert abs(int(white[seated, player].sum()) * 2 - int(seated.sum())) <= 1
