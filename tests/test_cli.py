"""`ratings rate-period` exactly as PRODUCT.md section 7 writes it, run as the installed command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.engine.period import rate_period
from pipeline.formats.table_files import write_file_whole
from pipeline.rules.model import RulesError, load_rules, preset_names, resolve_rules, schedule_of
from pipeline.scenarios.model import load_scenarios
from pipeline.systems.config import load_system_rules


def ratings(*args: str) -> subprocess.CompletedProcess:
    executable = shutil.which("ratings", path=str(Path(sys.executable).parent))
    command = [executable] if executable else [sys.executable, "-m", "pipeline"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "prev.csv").write_text(
        "player_id,rating,k,games_total,birth_year,ever_2400\n"
        "1,2000,20,100,1990,false\n2,1900,20,100,1985,false\n3,1500,40,10,2010,false\n4,,,,,\n"
    )
    (tmp_path / "games.csv").write_text(
        "event_id,white_id,black_id,result,white_rating,black_rating,date,time_control\n"
        "e1,1,2,1-0,,,2024-05-04,classical\n"
        "e1,3,1,1/2-1/2,,,2024-05-05,classical\n"
        "e1,4,1,0-1,,,2024-05-05,\n"
        "e2,2,3,0-1,1905,1500,2024-05-20,classical\n"
    )
    return tmp_path


def test_rate_period_csv_matches_engine(files: Path):
    run = ratings(
        "rate-period",
        "--rules",
        "fide-2024",
        "--month",
        "2024-05",
        "--list",
        str(files / "prev.csv"),
        "--games",
        str(files / "games.csv"),
        "--out",
        str(files / "new.csv"),
    )
    assert run.returncode == 0, run.stderr
    assert "2024-05 rated under fide-2024" in run.stderr
    new = pl.read_csv(files / "new.csv")
    assert {"player_id", "rating", "change", "k", "games"} <= set(new.columns)
    # The same period through the engine directly.
    previous = pl.DataFrame(
        {
            "player_id": [1, 2, 3, 4],
            "rating": [2000, 1900, 1500, None],
            "k": [20, 20, 40, None],
            "games_total": [100, 100, 10, None],
            "birth_year": [1990, 1985, 2010, None],
        }
    )
    games = pl.DataFrame(
        {
            "event_id": ["e1", "e1", "e1", "e2"],
            "white_id": [1, 3, 4, 2],
            "black_id": [2, 1, 1, 3],
            "white_score": [1.0, 0.5, 0.0, 0.0],
            "white_rating_used": [None, None, None, 1905],
            "black_rating_used": [None, None, None, 1500],
        }
    )
    expected = rate_period(previous, games, load_rules("fide-2024"), "2024-05").rating_list
    assert (
        new.select("player_id", "rating", "change", "games").sort("player_id").rows()
        == expected.select("player_id", "rating", "change", "games").sort("player_id").rows()
    )
    # Player 1: +20 x (1 - .64) + 20 x (.5 - .92); games against unrated player 4 do not count.
    assert new.filter(pl.col("player_id") == 1).select("rating", "games").row(0) == (1999, 2)


def test_rate_period_parquet_set_override_yaml_and_compress(files: Path):
    # Without a k column, K comes from the rule set's policy, so overrides of it show.
    pl.read_csv(files / "prev.csv").drop("k").write_parquet(files / "prev.parquet")
    pl.read_csv(files / "games.csv").write_parquet(files / "games.parquet")
    base = [
        "rate-period",
        "--month",
        "2024-05",
        "--list",
        str(files / "prev.parquet"),
        "--games",
        str(files / "games.parquet"),
    ]
    assert (
        ratings(
            *base,
            "--rules",
            "fide-2024",
            "--set",
            "k.standard=10",
            "--set",
            "k_games_cap=null",
            "--out",
            str(files / "a.parquet"),
        ).returncode
        == 0
    )
    overridden = pl.read_parquet(files / "a.parquet")
    assert overridden.filter(pl.col("player_id") == 1)["k_used"][0] == 10
    (files / "mine.yaml").write_text("extends: fide-2024\nname: my-rules\nk:\n  standard: 30\n")
    assert ratings(*base, "--rules", str(files / "mine.yaml"), "--out", str(files / "b.parquet")).returncode == 0
    assert pl.read_parquet(files / "b.parquet").filter(pl.col("player_id") == 1)["k_used"][0] == 30
    assert ratings(*base, "--rules", "fide-2024", "--compress", "--out", str(files / "c.parquet")).returncode == 0
    plain = rate_period(*_engine_inputs(files), load_rules("fide-2024"), "2024-05").rating_list
    compressed = pl.read_parquet(files / "c.parquet")
    for row in plain.filter(pl.col("rating").is_not_null()).iter_rows(named=True):
        got = compressed.filter(pl.col("player_id") == row["player_id"])["rating"][0]
        assert got == (row["rating"] + round(0.4 * (2000 - row["rating"])) if row["rating"] < 2000 else row["rating"])


def _engine_inputs(files: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    prev = pl.read_parquet(files / "prev.parquet")
    games = (
        pl.read_parquet(files / "games.parquet")
        .with_columns(
            white_score=pl.col("result").replace_strict(
                {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}, return_dtype=pl.Float64
            ),
            white_rating_used=pl.col("white_rating").cast(pl.Int32),
            black_rating_used=pl.col("black_rating").cast(pl.Int32),
        )
        .drop("result", "white_rating", "black_rating", "date", "time_control")
    )
    return prev, games


def test_rate_period_chains_through_csv_keeping_the_newcomer_pool(files: Path):
    first = ratings(
        "rate-period",
        "--rules",
        "fide-2024",
        "--month",
        "2024-05",
        "--list",
        str(files / "prev.csv"),
        "--games",
        str(files / "games.csv"),
        "--out",
        str(files / "may.csv"),
    )
    assert first.returncode == 0, first.stderr
    (files / "june.csv").write_text("event_id,white_id,black_id,result\nj,5,1,1/2-1/2\nj,5,2,1/2-1/2\n")
    second = ratings(
        "rate-period",
        "--rules",
        "fide-2024",
        "--month",
        "2024-06",
        "--list",
        str(files / "may.csv"),
        "--games",
        str(files / "june.csv"),
        "--out",
        str(files / "jun.csv"),
    )
    assert second.returncode == 0, second.stderr
    june = pl.read_csv(files / "jun.csv")
    assert june.filter(pl.col("player_id") == 5)["pending_games"][0] == 2
    # Player 4 lost in May to a rated player (zero in the first event: disregarded), still listed.
    assert june.filter(pl.col("player_id") == 4)["last_played"][0] == "2024-05"


@pytest.mark.parametrize(
    ("games_text", "message"),
    [
        ("event_id,white_id,black_id,result\ne,1,2,2-0\n", "line 2: result '2-0' is not 1-0, 0-1 or 1/2-1/2"),
        ("event_id,white_id,black_id,result\ne,1,2,1-0\ne,x,2,1-0\n", "line 3: games column 'white_id' has 'x'"),
        ("event_id,white_id,result\ne,1,1-0\n", "lacks required column(s) black_id"),
        ("event_id,white_id,black_id,result\ne,1,1,1-0\n", "line 2: white_id and black_id are the same player"),
    ],
)
def test_rate_period_bad_games_name_file_line_and_problem(files: Path, games_text: str, message: str):
    (files / "bad.csv").write_text(games_text)
    run = ratings(
        "rate-period",
        "--rules",
        "fide-2024",
        "--month",
        "2024-05",
        "--list",
        str(files / "prev.csv"),
        "--games",
        str(files / "bad.csv"),
        "--out",
        str(files / "x.csv"),
    )
    assert run.returncode == 2
    assert message in run.stderr and "bad.csv" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (files / "x.csv").exists()


def test_rate_period_unknown_rules_and_bad_month(files: Path):
    common = ["--list", str(files / "prev.csv"), "--games", str(files / "games.csv"), "--out", str(files / "x.csv")]
    run = ratings("rate-period", "--rules", "fide-1850", "--month", "2024-05", *common)
    assert run.returncode == 2 and "unknown rule set 'fide-1850'" in run.stderr
    run = ratings("rate-period", "--rules", "fide-2024", "--month", "2024-13", *common)
    assert run.returncode == 2 and "not a month in YYYY-MM form" in run.stderr
    run = ratings("rate-period", "--rules", "fide-2024", "--month", "2024-05", "--set", "cap_mode=sometimes", *common)
    assert run.returncode == 2 and "cap_mode" in run.stderr


def test_rules_command_lists_presets():
    run = ratings("rules")
    assert run.returncode == 0
    for name in ("fide-2014", "fide-2022", "fide-2024", "fide-2025-10", "elo-32", "fide-historical"):
        assert name in run.stdout


def test_rules_command_shows_whr_which_it_lists(capsys: pytest.CaptureFixture[str]):
    from pipeline.cli.commands import main
    from pipeline.whole_history.system import WhrScenarioParams

    # `ratings rules` lists whr beside the systems; `ratings rules whr` shows a whr scenario's parameters (those
    # examples/scenarios-whr.yaml sets among them), --set applied.
    assert main(["rules", "whr", "--set", "w2=20", "--set", "full_sweeps_every=12", "--set", "full_sweeps=20"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["system"] == "whr"
    assert (shown["w2"], shown["full_sweeps_every"], shown["full_sweeps"]) == (20.0, 12, 20)
    assert shown["virtual_draws"] == WhrScenarioParams.model_fields["virtual_draws"].default


def test_rules_command_shows_a_schedule_and_one_month_of_it():
    run = ratings("rules", "fide-historical")
    assert run.returncode == 0, run.stderr
    assert "from 2011-07  fide-2009 (k.newcomer=30)" in run.stdout and "from 2024-03  fide-2024" in run.stdout
    assert "ratings rules fide-historical --month YYYY-MM" in run.stdout and "resolve_rules" not in run.stdout
    month = ratings("rules", "fide-historical", "--month", "2011-08", "--set", "floor=1100")
    assert month.returncode == 0, month.stderr
    shown = json.loads(month.stdout)
    assert (shown["name"], shown["k"]["newcomer"], shown["floor"]) == ("fide-2009", 30, 1100)
    refused = ratings("rules", "fide-historical", "--set", "floor=1100")
    assert refused.returncode == 2 and "add --month YYYY-MM" in refused.stderr
    with pytest.raises(RulesError, match="is a schedule of rule sets by month") as error:
        load_rules("fide-historical")
    assert "resolve_rules" not in str(error.value)


def _period(files: Path, rules: str, month: str, games: str, *more: str) -> subprocess.CompletedProcess:
    (files / "clocks.csv").write_text(games)
    (files / "six.csv").write_text("player_id,rating,k\n" + "".join(f"{p},2000,20\n" for p in range(1, 7)))
    common = ["--list", str(files / "six.csv"), "--games", str(files / "clocks.csv"), "--out", str(files / "o.csv")]
    return ratings("rate-period", "--rules", rules, "--month", month, *common, *more)


def test_rate_period_classes_clocks_by_their_era_and_refuses_those_fide_does_not_rate(files: Path):
    games = "event_id,white_id,black_id,result,time_control\ne,1,2,1-0,1+0\ne,3,4,1-0,3+0\ne,5,6,1-0,12+0\n"
    for rules, month, minimum in (("fide-blitz-2024", "2024-05", "3 minutes"), ("fide-blitz-2012", "2013-05", "5")):
        run = _period(files, rules, month, games)
        assert run.returncode == 2 and not (files / "o.csv").exists()
        assert f"clocks.csv: line 2: time_control '1+0' on {month}-01 is not ratable by FIDE" in run.stderr
        assert f"blitz's minimum of {minimum}" in run.stderr and "(and 1 more such game)" in run.stderr
    # 12 minutes in 2013 are blitz (the 2012 rules: at least 5, under 15), rated on the blitz list: +20 x .5.
    run = _period(
        files, "fide-blitz-2012", "2013-05", "event_id,white_id,black_id,result,time_control\ne,5,6,1-0,12+0\n"
    )
    assert run.returncode == 0, run.stderr
    new = pl.read_csv(files / "o.csv").sort("player_id")
    assert new.filter(pl.col("player_id").is_in([5, 6]))["change"].to_list() == [10, -10]


def test_a_k_tier_on_a_constant_k_is_refused_and_the_constant_can_be_set(files: Path):
    games = "event_id,white_id,black_id,result\ne,1,2,1-0\n"
    for rules in ("elo-32", "sonas-2002"):
        run = _period(files, rules, "2024-05", games, "--set", "k.standard=24")
        assert run.returncode == 2 and f"preset {rules}: k.standard=24 does not apply: K is constant" in run.stderr
        assert "k.value=N" in run.stderr and "k.kind=fide" in run.stderr
        shown = ratings("rules", rules, "--set", "k.standard=24")
        assert shown.returncode == 2 and "does not apply" in shown.stderr
        run = _period(files, rules, "2024-05", games, "--set", "k.value=24")
        assert run.returncode == 0, run.stderr
        assert pl.read_csv(files / "o.csv").filter(pl.col("player_id") == 1)["k_used"][0] == 24
    # The tiers, once K is by player again; and a tiered K made constant drops its tiers.
    assert load_rules("elo-32", ("k.kind=fide", "k.standard=24")).k.standard == 24
    assert load_rules("fide-2024", ("k.kind=constant", "k.value=24")).k.value == 24
    # The help's example works on the presets it names.
    assert load_rules("fide-2024", ("k.standard=24",)).k.standard == 24
    assert load_rules("elo-32", ("k.value=24",)).k.value == 24


@pytest.mark.parametrize(
    ("assignment", "problem"),
    [
        ("k_games_cap=0", "k_games_cap: Input should be greater than or equal to 1 (given: 0)"),
        ("initial.pool_months=0", "initial.pool_months: Input should be greater than or equal to 1 (given: 0)"),
        ("k.elite_from=true", "k.elite_from: expects a number (given: true)"),
        ("cap_difference=-1", "cap_difference: Input should be greater than or equal to 0 (given: -1)"),
        ("floor=-5", "floor: Input should be greater than or equal to 0 (given: -5)"),
        ("k.standard=-20", "k.standard: Input should be greater than or equal to 0 (given: -20)"),
    ],
)
def test_nonsensical_rule_values_are_refused_by_set_and_by_file(tmp_path: Path, assignment: str, problem: str):
    with pytest.raises(RulesError) as error:
        load_rules("fide-2024", (assignment,))
    assert str(error.value) == f"preset fide-2024: invalid rule set: {problem}"
    key, value = assignment.split("=")
    *parents, leaf = key.split(".")
    body = f"{leaf}: {value}\n"
    for parent in reversed(parents):
        body = f"{parent}:\n" + "".join(f"  {line}\n" for line in body.splitlines())
    (tmp_path / "mine.yaml").write_text("extends: fide-2024\nname: mine\n" + body)
    with pytest.raises(RulesError) as error:
        load_rules(str(tmp_path / "mine.yaml"))
    assert str(error.value) == f"{tmp_path / 'mine.yaml'}: invalid rule set: {problem}"


@pytest.mark.parametrize(
    ("rules", "assignment", "key"),
    [
        ("sonas-2002", "sonas_slope=nan", "sonas_slope"),
        ("elo-32", "scale=inf", "scale"),
        ("elo-32", "k.value=.inf", "k.value"),
    ],
)
def test_non_finite_rule_and_system_values_are_refused_with_the_key(
    files: Path, tmp_path: Path, rules: str, assignment: str, key: str
):
    """NaN or infinity rated a period to empty ratings and a change of -2147483648 (sonas_slope), or every expectation
    to 0.5 (scale), and `ratings rules` printed it as null.
    """
    with pytest.raises(RulesError, match=f"invalid rule set: {key}: Input should be a finite number"):
        load_rules(rules, (assignment,))
    run = _period(files, rules, "2024-05", "event_id,white_id,black_id,result\ne,1,2,1-0\n", "--set", assignment)
    assert run.returncode == 2 and f"{key}: Input should be a finite number" in run.stderr
    assert not (files / "o.csv").exists()
    leaf, value = assignment.split("=")
    *parents, leaf = leaf.split(".")
    body = f"{leaf}: {value if value.startswith('.') else '.' + value}"
    for parent in reversed(parents):
        body = f"{parent}: {{{body}}}"
    (tmp_path / "bad.yaml").write_text(f"scenarios:\n  bad:\n    rules: {rules}\n    set: {{{body}}}\n")
    with pytest.raises(RulesError, match=f"scenario 'bad': .*{key}: Input should be a finite number"):
        load_scenarios(str(tmp_path / "bad.yaml"))
    with pytest.raises(ValueError, match="c: Input should be a finite number"):
        load_system_rules("glicko", ("c=.inf",))


def test_a_rules_file_naming_a_tier_of_a_constant_k_is_refused(tmp_path: Path):
    (tmp_path / "mine.yaml").write_text("extends: elo-32\nname: mine\nk:\n  standard: 24\n")
    with pytest.raises(RulesError, match="k: k.standard does not apply: K is constant \\(32\\)"):
        load_rules(str(tmp_path / "mine.yaml"))
    (tmp_path / "mine.yaml").write_text("extends: fide-2024\nname: mine\nk:\n  kind: constant\n  value: 24\n")
    assert load_rules(str(tmp_path / "mine.yaml")).k.value == 24


def test_every_shipped_rule_set_and_scenario_loads_under_the_constraints():
    for name in preset_names():
        schedule = schedule_of(name)
        for month in [entry[0] for entry in schedule] if schedule else ["2024-05"]:
            assert resolve_rules(name, month).name
    for scenario in load_scenarios().values():
        if scenario.system is None:
            for month in ("2008-01", "2012-07", "2017-02", "2024-03", "2025-10"):
                assert scenario.rules_for(month).name


def test_run_demo_and_ui_options_reach_their_handlers() -> None:
    import argparse

    from pipeline.cli.run_options import add_run_commands

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_commands(commands, run_handler=lambda a: 1, demo_handler=lambda a: 2, ui_handler=lambda a: 3)
    run = parser.parse_args(["run", "--store", "s", "--from", "2024-01", "--to", "2024-03", "--scenarios", "x.yaml"])
    assert (run.store, run.first, run.last, run.scenarios, run.dagster_home) == (
        "s",
        "2024-01",
        "2024-03",
        "x.yaml",
        None,
    )
    assert run.handler(run) == 1
    demo = parser.parse_args(["demo", "--generate", "--dagster-home", "h"])
    assert (demo.store, demo.generate, demo.dagster_home, demo.handler(demo)) == (None, True, "h", 2)
    ui = parser.parse_args(["ui"])
    assert (ui.host, ui.port, ui.handler(ui)) == ("127.0.0.1", 3000, 3)
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--month", "2024-01"])


def test_run_refuses_fewer_than_one_worker_and_a_file_as_its_instance(tmp_path: Path, capsys) -> None:
    """--workers 0 and -1 ran as one worker, silently; a file as --dagster-home ended in `[Errno 17] File exists`."""
    import argparse

    from pipeline.cli.run_options import add_run_commands

    parser = argparse.ArgumentParser(prog="ratings")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_commands(commands, run_handler=lambda a: 1, demo_handler=lambda a: 2, ui_handler=lambda a: 3)
    for command in ("run", "demo"):
        for workers in ("0", "-1", "two"):
            with pytest.raises(SystemExit):
                parser.parse_args([command, "--workers", workers])
            err = capsys.readouterr().err
            assert f"argument --workers: '{workers}': the number of worker processes, at least 1" in err
        assert parser.parse_args([command, "--workers", "2"]).workers == 2
    (afile := tmp_path / "home").write_text("")
    for command in ("run", "demo", "ui"):
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--dagster-home", str(afile)])
        assert f"argument --dagster-home: {afile} is a file: give the Dagster instance's directory" in (
            capsys.readouterr().err
        )
    assert parser.parse_args(["run", "--dagster-home", str(tmp_path / "new")]).dagster_home == str(tmp_path / "new")
    for port in ("99999", "0", "-1", "http"):  # 99999 was handed on to `dg dev`
        with pytest.raises(SystemExit):
            parser.parse_args(["ui", "--port", port])
        assert f"argument --port: '{port}': a TCP port, 1 to 65535" in capsys.readouterr().err
    assert parser.parse_args(["ui", "--port", "3001"]).port == 3001


def test_history_says_when_the_scenarios_have_no_whole_history_scenario_or_the_store_is_missing(
    tmp_path: Path, capsys
) -> None:
    from pipeline.cli.commands import main

    (tmp_path / "store").mkdir()
    assert main(["history", "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert "has no whole-history (system: whr) scenario: give the file the store was rated with (--scenarios)" in err
    assert "'None'" not in err and "examples/scenarios-whr.yaml" in err
    assert main(["history", "--store", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'} does not exist: no store to read" in capsys.readouterr().err
    whr = str(Path(__file__).parents[1] / "examples" / "scenarios-whr.yaml")
    assert main(["history", "--store", str(tmp_path / "store"), "--scenarios", whr]) == 1
    assert "holds no whr chain: rate it first" in capsys.readouterr().err


def test_an_out_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """--out files (rate-period, list, history, player --html): a failed write leaves the old file and nothing else."""
    target = tmp_path / "list.csv"
    target.write_bytes(b"old")

    def fails(handle) -> None:
        handle.write(b"half")
        raise RuntimeError("the writer failed")

    with pytest.raises(RuntimeError):
        write_file_whole(target, fails)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["list.csv"]
    write_file_whole(target, lambda handle: handle.write(b"new"))
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["list.csv"]
    with pytest.raises(OSError, match=r"^--out \S+missing/list\.csv: folder \S+/missing does not exist"):
        write_file_whole(tmp_path / "missing" / "list.csv", lambda handle: handle.write(b"x"))


def test_an_out_symlink_is_followed_and_its_file_replaced_beside_it(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    real = tmp_path / "lists" / "real.csv"
    real.write_bytes(b"old")
    link = tmp_path / "link.csv"
    link.symlink_to(Path("lists") / "real.csv")
    write_file_whole(link, lambda handle: handle.write(b"new"))
    assert link.is_symlink() and real.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["link.csv", "lists", "real.csv"]  # no temporary file left
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(Path("lists") / "made.csv")  # as the shell's `>` does, the file it names is made
    write_file_whole(dangling, lambda handle: handle.write(b"made"))
    assert dangling.is_symlink() and (tmp_path / "lists" / "made.csv").read_bytes() == b"made"


def test_an_out_file_keeps_its_permission_bits_and_a_read_only_one_is_refused(tmp_path: Path) -> None:
    kept = tmp_path / "kept.csv"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    write_file_whole(kept, lambda handle: handle.write(b"new"))
    assert kept.read_bytes() == b"new" and kept.stat().st_mode & 0o7777 == 0o640
    read_only = tmp_path / "ro.csv"
    read_only.write_bytes(b"keep me")
    read_only.chmod(0o444)
    # Refused even for root, who could write it: nobody may, as the file's mode says.
    with pytest.raises(OSError, match=r"^--html \S+/ro\.csv: is read-only: not replaced"):
        write_file_whole(read_only, lambda handle: handle.write(b"new"), option="--html")
    assert read_only.read_bytes() == b"keep me" and read_only.stat().st_mode & 0o7777 == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.csv", "ro.csv"]
    if Path("/proc/version").is_file():  # the audit's case: the error was the temporary file's
        with pytest.raises(OSError, match=r"^--out /proc/version: is read-only"):
            write_file_whole("/proc/version", lambda handle: handle.write(b"x"))
    with pytest.raises(OSError, match=r"^--out \S+: is a folder"):
        write_file_whole(tmp_path, lambda handle: handle.write(b"x"))


def test_an_out_fifo_or_device_is_written_into_not_replaced(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_file_whole(fifo, lambda handle: handle.write(b"through the pipe"))
    reader.join(timeout=10)
    assert received == [b"through the pipe"] and stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo.csv"]
    null = tmp_path / "null.csv"  # a character device of our own: /dev/null's
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        return
    write_file_whole(null, lambda handle: handle.write(b"gone"))
    assert stat.S_ISCHR(null.stat().st_mode)


def test_every_out_needs_its_folder_and_errors_name_the_option(files: Path, capsys: pytest.CaptureFixture) -> None:
    """rate-period --out no longer makes missing folders, as list, history and player --html never did."""
    from pipeline.cli.commands import main

    period = ["rate-period", "--rules", "fide-2024", "--month", "2024-05", "--list", str(files / "prev.csv")]
    out = files / "missing" / "new.csv"
    assert main([*period, "--games", str(files / "games.csv"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: --out {out}: folder {out.parent} does not exist" in err and not out.parent.exists()
    assert main([*period, "--games", str(files / "games.csv"), "--out", "/proc/x/o.csv"]) == 2
    assert "error: --out /proc/x/o.csv: folder /proc/x does not exist" in capsys.readouterr().err


def test_a_csv_of_the_wrong_kind_names_the_line_and_what_was_expected(
    files: Path, capsys: pytest.CaptureFixture
) -> None:
    from pipeline.cli.commands import main

    trf = files / "open.csv"  # a TRF under a CSV name
    trf.write_text("012 Open\n001    1 m    Smith, John                       2100 GER    12345678 1990/01/01\n")
    pgn = files / "games.txt"
    pgn.write_text('[Event "Club night"]\n[White "Smith, John"]\n\n1. e4 1-0\n')
    unclosed = files / "quote.csv"
    unclosed.write_text('player_id,rating\n1,2000\n"2,1900\n3,1800\n')
    period = ["rate-period", "--rules", "fide-2024", "--month", "2024-05", "--out", str(files / "new.csv")]
    games = ["--games", str(files / "games.csv")]
    assert main([*period, "--list", str(trf), *games]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ratings rate-period: error: {trf}: line 2: 2 fields, where the header (line 1: 012 Open) names 1 column: "
        "a previous list file's lines each hold one field per column of its header\n"
    )
    assert main([*period, "--list", str(files / "prev.csv"), "--games", str(pgn)]) == 2
    assert f'{pgn}: line 2: 2 fields, where the header (line 1: [Event "Club night"]) names 1 column: a games' in (
        capsys.readouterr().err
    )
    assert main([*period, "--list", str(unclosed), *games]) == 2
    assert f"{unclosed}: line 3: cannot read previous list: a quote opened on it is never closed" in (
        capsys.readouterr().err
    )
    evaluate = ["evaluate", "--train-to", "1", "--test-from", "2", "--test-to", "3", "--rules", "elo"]
    assert main([*evaluate, "--games", str(trf)]) == 2
    err = capsys.readouterr().err
    assert f"{trf}: line 2: 2 fields" in err and "a games file's lines" in err and "truncate_ragged" not in err
    assert not (files / "new.csv").exists()


# -- rate-period: what it refuses, counts and writes (the audit's findings F5 to F14) ---------------------------------

AUDIT_PREV = (
    "player_id,rating,k,games_total,birth_year,ever_2400\n1,2100,20,100,1980,false\n2,1900,20,100,1985,false\n"
    "3,1700,40,10,2010,false\n4,,,,,\n5,2450,10,300,1970,true\n6,1500,20,50,1990,false\n"
)
AUDIT_GAMES = (
    "event_id,white_id,black_id,result\nE1,1,2,1-0\nE1,3,1,1/2-1/2\nE1,2,3,0-1\nE1,5,6,1-0\nE1,4,1,0-1\n"
    "E1,4,2,1/2-1/2\nE1,4,3,1-0\nE1,4,6,1-0\nE1,4,5,0-1\nE1,7,1,0-1\n"
)


def _rate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    prev: str,
    games: str,
    *more: str,
    rules: str = "fide-2024",
    month: str = "2024-05",
):
    """The exit code, stderr and NEW (None when not written) for PREV and GAMES given as CSV text."""
    from pipeline.cli.commands import main

    (tmp_path / "p.csv").write_text(prev)
    (tmp_path / "g.csv").write_text(games)
    out = tmp_path / "new.csv"
    out.unlink(missing_ok=True)
    args = ["--list", str(tmp_path / "p.csv"), "--games", str(tmp_path / "g.csv"), "--out", str(out)]
    code = main(["rate-period", "--rules", rules, "--month", month, *args, *more])
    return code, capsys.readouterr().err, pl.read_csv(out) if out.exists() else None


def _rate_paths(previous: Path, games: Path, out: Path) -> int:
    """rate-period's exit code for files already written (fide-2024, 2024-05)."""
    from pipeline.cli.commands import main

    args = ["--list", str(previous), "--games", str(games), "--out", str(out)]
    return main(["rate-period", "--rules", "fide-2024", "--month", "2024-05", *args])


def test_the_audit_baseline_is_rated_as_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, AUDIT_GAMES)
    assert code == 0 and new is not None and "10 games, 7 players (6 rated, 1 newly rated" in err
    assert new.select("player_id", "rating", "change").rows() == [
        (1, 2096, -4), (2, 1880, -20), (3, 1747, 47), (4, 1893, None), (5, 2451, 1), (6, 1498, -2), (7, None, None)
    ]  # fmt: skip


def test_compress_is_refused_for_a_rating_system(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, AUDIT_GAMES, "--compress", rules="elo")
    assert code == 2 and new is None and "--compress: only a FIDE rule set's list has the compression" in err


@pytest.mark.parametrize(
    ("time_control", "more", "rated"),
    [
        ("rapid", (), 1),
        ("15+10", (), 1),
        ("", ("--set", "list_type=blitz"), 1),  # an empty cell is of the list's class, blitz
        ("classical", ("--set", "events_from=2030-01-01"), 0),
    ],
)
def test_games_the_rule_set_does_not_rate_are_counted_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture, time_control: str, more: tuple[str, ...], rated: int
) -> None:
    games = f"event_id,white_id,black_id,result,time_control\nE,1,2,1-0,{time_control}\nE,1,3,1-0,classical\n"
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, games, *more)
    assert code == 0 and new is not None
    assert f"rated under fide-2024: {rated} games ({2 - rated} the rule set does not rate" in err
    assert int(new["games"].sum()) == 2 * rated


@pytest.mark.parametrize(
    ("prev", "message"),
    [
        ("player_id,rating,k\n1,2100,-40\n", "line 2: previous list column 'k' has '-40', not a valid value (a whole"),
        ("player_id,rating,k\n1,2100,999999\n", "column 'k' has '999999', not a valid value (a whole number from 0"),
        ("player_id,rating\n1,-50\n", "column 'rating' has '-50', not a valid value (a rating from 1 to 4000"),
        ("player_id,rating\n1,0\n", "column 'rating' has '0', not a valid value (a rating from 1 to 4000; an empty"),
        ("player_id,rating\n1,99999\n", "column 'rating' has '99999'"),
        ("player_id,rating,games_total\n1,2000,-5\n", "column 'games_total' has '-5', not a valid value (a whole"),
        ("player_id,rating,birth_year\n1,2000,3000\n", "'birth_year' has '3000', not a valid value (a whole number "),
        ("player_id,rating,ever_2400\n1,2000,maybe\n", "column 'ever_2400' has 'maybe', not a valid value (true or"),
        ("player_id,rating\n-1,2000\n", "column 'player_id' has '-1', not a valid value (a whole number from 1 up)"),
        ("player_id,rating\n2,2000\n0,2000\n", "line 3: previous list column 'player_id' has '0'"),
        ("player_id,rating,last_played\n1,2000,2024-06\n", "'last_played' has '2024-06', not a valid value (a month"),
        ("player_id,rating,pending_since\n1,,garbage\n", "column 'pending_since' has 'garbage', not a valid value"),
        (
            "player_id,Rating\n1,2000\n",
            "needs a rating column (empty cells: unrated players): 'Rating' is not 'rating'",
        ),
        ("player_id,elo\n1,2000\n", "previous list needs a rating column (empty cells: unrated players) (has: player"),
    ],
)
def test_a_previous_list_value_out_of_its_range_is_refused_naming_line_column_and_range(
    tmp_path: Path, capsys: pytest.CaptureFixture, prev: str, message: str
) -> None:
    code, err, new = _rate(tmp_path, capsys, prev, AUDIT_GAMES)
    assert code == 2 and new is None and message in err and f"{tmp_path / 'p.csv'}: " in err
    assert "Traceback" not in err


def test_a_flag_is_read_in_its_spellings(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    prev = "player_id,rating,ever_2400\n1,2300,t\n2,2300,No\n3,2300,\n"
    games = "event_id,white_id,black_id,result\nE,1,2,1-0\nE,2,3,1-0\n"
    code, _, new = _rate(tmp_path, capsys, prev, games)
    assert code == 0 and new is not None and new["k"].to_list() == [10, 20, 20]


@pytest.mark.parametrize(
    ("games", "message"),
    [
        ("white_rating,black_rating\nE,1,2,1-0,20000,-5\n", "column 'white_rating' has '20000', not a valid value "
         "(a whole number from 1000 to 3000)"),
        ("white_rating,black_rating\nE,1,2,1-0,2000,-5\n", "column 'black_rating' has '-5'"),
        ("date\nE,-1,2,1-0,\n", "column 'white_id' has '-1', not a valid value (a whole number from 1 up)"),
        ("date\nE,1,0,1-0,\n", "column 'black_id' has '0'"),
        ("date\nE,1,2,1-0,2030-05-03\n", "line 2: date '2030-05-03' is after 2024-05, the month rated"),
        ("date\nE,1,2,,2024-05-03\n", "line 2: result is empty, not 1-0, 0-1 or 1/2-1/2"),
        ("result\nE,1,2,1-0,0-1\n", "line 1: column 'result' is named twice in the header of the games file"),
    ],
)  # fmt: skip
def test_a_games_value_out_of_its_range_is_refused_naming_line_column_and_range(
    tmp_path: Path, capsys: pytest.CaptureFixture, games: str, message: str
) -> None:
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, f"event_id,white_id,black_id,result,{games}")
    assert code == 2 and new is None and message in err and f"{tmp_path / 'g.csv'}: " in err


def test_a_game_reported_late_keeps_its_earlier_date(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    games = "event_id,white_id,black_id,result,date\nE,1,2,1-0,2024-04-28\n"
    assert _rate(tmp_path, capsys, AUDIT_PREV, games)[0] == 0


def test_a_rating_given_for_a_player_unrated_on_the_list_is_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """As the pipeline (scenarios.ratings_used): the game does not count for the rated opponent either."""
    games = "event_id,white_id,black_id,result,white_rating,black_rating\nE,4,2,0-1,2000,\nE,1,2,1-0,2100,1900\n"
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, games)
    assert code == 0 and new is not None
    assert "g.csv: line 2: white_rating given for a player unrated on the previous list: not used" in err
    player_2 = new.filter(pl.col("player_id") == 2)
    assert player_2.select("change", "games").row(0) == (-5, 1)


POOL = '"[{""month"":""2024-04"",""games"":2,""points_x2"":2,""opponent_rating_sum"":4000}]"'


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (f"4,,2,{POOL.replace('month', 'mnth')}", "line 2: previous list column 'pending' has"),
        (f"4,,2,{POOL.replace('2024-04', '2024-5x')}", "not a pool (entries"),
        (f"4,,2,{POOL.replace('2024-04', '2024-06')}", "a month YYYY-MM no later than 2024-05"),
        ("4,,2," + POOL.replace('""games"":2', '""games"":""two""'), "line 2: previous list column 'pending' has"),
        (f"4,,3,{POOL}", "line 2: previous list column 'pending_games' has 3, but the pool in 'pending' holds 2 games"),
    ],
)
def test_a_newcomer_pool_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture, row: str, message: str) -> None:
    code, err, new = _rate(tmp_path, capsys, f"player_id,rating,pending_games,pending\n{row}\n", AUDIT_GAMES)
    assert code == 2 and new is None and message in err and "Traceback" not in err
    pooled = "player_id,rating,pending_games,pending\n" + "".join(
        f"{player},{rating},0,[]\n" for player, rating in ((1, 2100), (2, 1900), (3, 1700), (5, 2450), (6, 1500))
    )
    code, _, new = _rate(tmp_path, capsys, f"{pooled}4,,2,{POOL}\n", AUDIT_GAMES)
    assert code == 0 and new is not None and new.filter(pl.col("player_id") == 4)["games_total"][0] == 7
    # Without a pending_games column there is no count to check the pool against: the pool is read as it is.
    without = "\n".join(line.replace(",0,[]", ",[]") for line in pooled.replace(",pending_games", "").splitlines())
    code, err, again = _rate(tmp_path, capsys, f"{without}\n4,,{POOL}\n", AUDIT_GAMES)
    assert code == 0, err
    assert again is not None and again.filter(pl.col("player_id") == 4)["games_total"][0] == 7


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("player_id", [1.0, 2.5], "row 2: previous list column 'player_id' has 2.5, not a valid value"),
        ("rating", [2100.7, 1900.0], "row 1: previous list column 'rating' has 2100.7, not a valid value"),
        ("rating", [True, None], "previous list column 'rating' holds Boolean values, not whole numbers"),
        ("rating", [[1], [2]], "previous list column 'rating' holds List(Int64) values, not whole numbers"),
    ],
)
def test_a_parquet_list_is_not_cast_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture, column: str, values: list, message: str
) -> None:
    frame = {"player_id": [1, 2], "rating": [2100, 1900], column: values}
    pl.DataFrame(frame).write_parquet(tmp_path / "p.parquet")
    (tmp_path / "g.csv").write_text(AUDIT_GAMES)
    code = _rate_paths(tmp_path / "p.parquet", tmp_path / "g.csv", tmp_path / "new.csv")
    err = capsys.readouterr().err
    assert code == 2 and message in err and not (tmp_path / "new.csv").exists()


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"white_id": [1.0, 1.4]}, "row 2: games column 'white_id' has 1.4, not a valid value"),
        ({"result": [["1-0"], ["0-1"]]}, "games column 'result' holds List(String) values, not one value a game"),
    ],
)
def test_parquet_games_are_not_cast_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture, frame: dict, message: str
) -> None:
    games = {"event_id": ["e", "e"], "white_id": [1, 3], "black_id": [2, 2], "result": ["1-0", "0-1"], **frame}
    pl.DataFrame(games).write_parquet(tmp_path / "g.parquet")
    (tmp_path / "p.csv").write_text(AUDIT_PREV)
    code = _rate_paths(tmp_path / "p.csv", tmp_path / "g.parquet", tmp_path / "new.csv")
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("system", ["elo", "glicko2", "dwz", "uscf", "ecf"])
def test_a_system_reads_its_list_through_the_checked_reader_and_writes_change_k_and_games(
    tmp_path: Path, capsys: pytest.CaptureFixture, system: str
) -> None:
    for prev, message in [
        ("player_id,rating\n1,2000\n1,1900\n", "previous list has duplicate player_id values: [1]"),
        ("player_id,rating\nabc,2000\n", "p.csv: line 2: previous list column 'player_id' has 'abc'"),
    ]:
        code, err, _ = _rate(tmp_path, capsys, prev, AUDIT_GAMES, rules=system)
        assert code == 2 and message in err and "Traceback" not in err
    code, err, _ = _rate(tmp_path, capsys, "player_id,rating,colour\n1,2000,x\n", AUDIT_GAMES, rules=system)
    assert code == 0 and "ignoring unknown column(s) colour" in err
    code, _, new = _rate(tmp_path, capsys, AUDIT_PREV, AUDIT_GAMES, rules=system)
    assert code == 0 and new is not None
    assert new.columns[-3:] == ["change", "k", "games"]
    assert new.filter(pl.col("player_id") == 1)["games"][0] == 4
    assert new.filter(pl.col("player_id") == 7)["change"][0] is None
    one = new.filter(pl.col("player_id") == 1)
    assert one["change"][0] == pytest.approx(one["rating"][0] - 2100)
    # NEW is read back as the next period's PREV.
    (tmp_path / "may.csv").write_text(new.write_csv())
    may = (tmp_path / "may.csv").read_text()
    code, err, june = _rate(tmp_path, capsys, may, AUDIT_GAMES, rules=system, month="2024-06")
    assert code == 0 and june is not None and "unknown column" not in err


@pytest.mark.parametrize(("rules", "more"), [("fide-2024", ("--set", "k=120")), ("elo", ("--set", "k=150"))])
def test_a_new_list_with_a_k_of_ones_own_is_read_back_as_the_next_previous_list(
    tmp_path: Path, capsys: pytest.CaptureFixture, rules: str, more: tuple[str, ...]
) -> None:
    code, _, new = _rate(tmp_path, capsys, AUDIT_PREV, AUDIT_GAMES, *more, rules=rules)
    assert code == 0 and new is not None
    code, err, again = _rate(tmp_path, capsys, new.write_csv(), AUDIT_GAMES, *more, rules=rules, month="2024-06")
    assert code == 0, err
    assert again is not None and again.height == new.height


@pytest.mark.parametrize("rules", ["uscf", "dwz", "ecf"])
def test_a_rating_system_takes_the_stated_ratings_of_its_own_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture, rules: str
) -> None:
    games = "event_id,white_id,black_id,result,white_rating,black_rating\nE3,1,2,1-0,2100,900\n"
    code, err, new = _rate(tmp_path, capsys, AUDIT_PREV, games, rules=rules)
    assert code == 0, err
    # A FIDE rule set still refuses it: validation quarantines such a rating as implausible.
    code, err, _ = _rate(tmp_path, capsys, AUDIT_PREV, games)
    assert code == 2 and "'black_rating' has '900'" in err
