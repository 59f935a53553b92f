"""The closing summary counts what happened; a test recounts them from the stored tables.

Each scenario's games by what they did, distinct players by how they were identified.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import polars as pl
import pytest

from assets.runtime.cli import main
from pipeline.operations.run_counts import GAME_OUTCOMES, game_outcomes, players_by_identity
from pipeline.scenarios.model import load_scenarios
from pipeline.store.object_store import ObjectStore
from pipeline.validate.identity import LOCAL_ID_BASE

SCENARIOS = """scenarios:
  actual:
    description: FIDE's regulations as they were
    rules: fide-historical
  every_control:
    description: every time control rated alike
    rules: fide-2024
    set: {weights.rapid: 1.0, weights.blitz: 1.0}
  glicko2:
    description: a rating system
    system: glicko2
"""
MONTHS = ["2024-01", "2024-02", "2024-03"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """Three generated months rated under three scenarios, and what the run printed."""
    from pipeline.generator import generate

    root = tmp_path_factory.mktemp("summary")
    (root / "scenarios.yaml").write_text(SCENARIOS)
    generate(str(root / "store"), seed=5, players=400, start=MONTHS[0], end=MONTHS[-1])
    _add_a_newcomer_known_by_name(root / "store")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(
            ["run", "--store", str(root / "store"), "--scenarios", str(root / "scenarios.yaml")]
            + ["--dagster-home", str(root / "home")]
        )
    assert code == 0, printed.getvalue()
    return root / "store", load_scenarios(str(root / "scenarios.yaml")), printed.getvalue()


def _add_a_newcomer_known_by_name(store: Path) -> None:
    """A PGN of the last month where a player written without a FIDE id draws six rated players: a first rating
    under the 2024 rules, on a local id, so the FIDE TXT cannot list her.
    """
    seed = pl.read_csv(next((store / "raw" / "players").glob("*/seed_list.csv")))
    opponents = seed.filter(pl.col("rating").is_between(1700, 2100))["player_id"].head(6).to_list()
    games = [
        f'[Event "Club night"]\n[Date "{MONTHS[-1].replace("-", ".")}.{day:02d}"]\n[Round "{day}"]\n'
        f'[White "Newcomer, Nina"]\n[Black "Rated, Opponent {day}"]\n[BlackFideId "{opponent}"]\n'
        f'[Result "1/2-1/2"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1/2-1/2\n'
        for day, opponent in enumerate(opponents, start=1)
    ]
    folder = store / "raw" / "ENG" / MONTHS[-1]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "club-night.pgn").write_text("\n".join(games))


def _stored(store: Path, *path: str) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(store.joinpath(*path, f"{month}.parquet")) for month in MONTHS])


def test_each_scenarios_games_are_counted_by_what_they_did_and_add_up(run) -> None:
    store, scenarios, out = run
    for name, scenario in scenarios.items():
        rated = _stored(store, name, "rated_games")
        # Recounted one condition at a time, in the order the categories are decided.
        weightless = rated.filter(pl.col("weight") == 0)
        weighted = rated.filter(pl.col("weight") != 0)
        moved = weighted.filter(pl.col("white_expected").is_not_null() | pl.col("black_expected").is_not_null())
        rest = weighted.filter(pl.col("white_expected").is_null() & pl.col("black_expected").is_null())
        both_unrated = rest.filter(pl.col("white_rating_used").is_null() & pl.col("black_rating_used").is_null())
        expected = {
            "time_control_not_rated": weightless.height,
            "moved_a_rating": moved.height,
            "between_unrated_players": both_unrated.height,
            "with_an_unrated_player": rest.height - both_unrated.height,
        }
        counted = game_outcomes(ObjectStore(str(store)), scenario, MONTHS)
        assert counted == expected and sum(counted.values()) == rated.height
        assert counted["moved_a_rating"] > 0
        shown = ", ".join(f"{counted[key]:,} {text}" for key, text in GAME_OUTCOMES.items() if counted[key])
        assert f"{name}: the lists rest on {rated.height:,} games: {shown}" in out
    # The generated federation plays rapid and blitz: FIDE's standard rules rate none of it, the variant all of it.
    actual = game_outcomes(ObjectStore(str(store)), scenarios["actual"], MONTHS)
    every = game_outcomes(ObjectStore(str(store)), scenarios["every_control"], MONTHS)
    assert actual["time_control_not_rated"] > 0 and every["time_control_not_rated"] == 0


def test_players_are_counted_once_however_many_months_name_them(run) -> None:
    store, _, out = run
    games = _stored(store, "games")
    players = pl.concat([games["white_id"], games["black_id"]]).n_unique()
    assert f"players in the validated games: {players:,}" in out
    identities = _stored(store, "identity")
    by_status = players_by_identity(identities)
    for status, frame in identities.group_by("status"):
        ids = {row["player_id"] if row["player_id"] is not None else f"name:{row['name']}" for row in frame.to_dicts()}
        assert by_status[status[0]] == len(ids)
    if by_status:
        assert "players not identified by a registered id, distinct" in out
        assert ", ".join(f"{status} {n:,}" for status, n in by_status.items()) in out
    # A player named in every month counts once: fewer players than identity rows wherever a player recurs.
    assert sum(by_status.values()) <= identities.height


def test_the_rated_players_the_fide_txt_leaves_out_are_counted_and_named(run) -> None:
    store, scenarios, out = run
    left = {}
    for name in scenarios:
        rated = pl.read_parquet(store / name / "rating_list" / f"{MONTHS[-1]}.parquet").filter(
            pl.col("rating").is_not_null()
        )
        local = rated.filter(pl.col("player_id") >= LOCAL_ID_BASE)["player_id"].to_list()
        txt = (store / "lists" / name / f"{MONTHS[-1]}.txt").read_text()
        assert not [player for player in local if str(player) in txt]
        if local:
            left[name] = len(local)
    assert left.get("every_control") == 1  # the newcomer, rated under the 2024 rules
    shown = ", ".join(f"{name} {n:,}" for name, n in left.items())
    assert f"rated players left out of the {MONTHS[-1]} FIDE TXT (no FIDE id" in out and f"): {shown}" in out


def test_an_amended_list_says_how_many_players_changed_otherwise_and_in_which_columns(tmp_path: Path) -> None:
    """A list rated again with the same ratings but other flags or dates read "0 rating(s) changed, 0 player(s) added,
    0 removed": the fourth count, and what it counts, were left out.
    """
    from pipeline.operations.run_plan import RunPlan, closing_lines, columns_changed, runs_summary
    from pipeline.scenarios.amendments import previous_key
    from pipeline.store.monthly import table_key

    store = ObjectStore(str(tmp_path))
    old = pl.DataFrame(
        {
            "player_id": [1, 2, 3],
            "rating": [2000, 1900, 1800],
            "change": [5, 0, -3],
            "last_played": ["2023-01", "2022-12", "2023-01"],
            "inactive": [False, False, False],
        }
    )
    # Player 1's rating and its change moved (counted as a rating changed); player 2 only played later.
    new = old.with_columns(
        rating=pl.Series([2010, 1900, 1800]),
        change=pl.Series([15, 0, -3]),
        last_played=pl.Series(["2023-01", "2023-01", "2023-01"]),
    )
    store.write_parquet(old, previous_key("actual", "2023-01"))
    store.write_parquet(new, table_key(["actual", "rating_list"], "2023-01"))
    assert columns_changed(store, "actual", "2023-01") == ["last_played"]
    assert columns_changed(store, "actual", "2023-02") == []  # nothing to compare: no words, no failure

    counts = {"players_created": 0, "players_updated": 1, "players_deleted": 0, "players_otherwise_changed": 1}
    row = {"scenario": "actual", "month": "2023-01", **counts, "changes_file": "lists/actual/2023-01.changes.csv"}
    plan = RunPlan(str(tmp_path), store, [], ["2023-01"], {}, ("2023-01", "2023-01"))
    outcome = {"run_id": "r1", "success": True, "checks": {}, "failed_steps": {}, "amended": [row]}
    summary = runs_summary(plan, [outcome], 1, 1.0, "home")
    assert summary["amended_lists"] == [{**row, "columns_changed": ["last_played"]}]
    assert (
        "actual: the list of 2023-01 changed from the stored one: 1 rating(s) changed, 0 player(s) added, 0 removed, "
        "1 otherwise changed (in last_played) (lists/actual/2023-01.changes.csv)"
    ) in closing_lines(summary, {}, "Run")


def test_the_summary_of_a_run_whose_store_went_away_is_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The store unreachable mid-run (an S3 outage): the summary reads nothing more and says so, rather than failing
    on its first read with the store's error as the run's last line.
    """
    from pipeline.ingest.landing import inventory
    from pipeline.operations.run_plan import RunPlan, closing_lines, runs_summary

    store = ObjectStore(str(tmp_path))
    store.write_text("white_id,black_id,result\n1,2,1-0\n", "raw/GER/2023-01/a.csv")
    store.write_text("ID Number Name\n", "raw/players/2023-01/standard_rating_list.txt")
    entries = inventory(store)

    class EndpointConnectionError(Exception):  # botocore's, by name: the store's faults are told by their names
        pass

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise EndpointConnectionError('Could not connect to the endpoint URL: "http://127.0.0.1:1/chess/games"')

    for name in ("list_files", "list_stamps", "list_dirs", "exists", "read_bytes", "read_parquet", "read_parquets"):
        monkeypatch.setattr(ObjectStore, name, unreachable)
    plan = RunPlan(str(tmp_path), store, entries, ["2023-01"], {}, ("2023-01", "2023-01"))
    fault = f"object store unreachable: connection failed at {tmp_path}"
    summary = runs_summary(plan, [], 2, 1.0, "home", fault)
    text = closing_lines(summary, {}, "Run")
    assert summary["fault"] == fault and not summary["success"]
    assert "Run FAILED" in text and f"Run stopped by a store fault: {fault}" in text


def test_ctrl_c_is_said_as_an_interruption_not_a_traceback(monkeypatch: pytest.MonkeyPatch, capsys):
    """Ctrl-C between Dagster's runs (a KeyboardInterrupt out of run_store) ends the command with the shell's code
    for SIGINT and one line; a step Dagster stopped is named interrupted in the summary, whose readable lists the run
    may not have reached.
    """
    import signal
    from types import SimpleNamespace

    from assets.runtime import runs
    from assets.runtime.cli import EXIT_INTERRUPTED
    from assets.runtime.interrupts import interrupted_line
    from pipeline.operations.run_plan import readable_lists_lines

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "run_store", interrupted)
    assert main(["run", "--store", "anywhere"]) == EXIT_INTERRUPTED == 130
    err = capsys.readouterr().err
    assert err.startswith("ratings run: interrupted (Ctrl-C).") and "Traceback" not in err
    # SIGTERM is named; `--from` is offered where the command has it; a demo cut off generating says what to remove.
    term = interrupted_line("run", signal.SIGTERM)
    assert term.startswith("ratings run: interrupted (SIGTERM).") and "--from" in term
    assert "run the same command again" in interrupted_line("demo", signal.SIGINT)
    assert "--from" not in interrupted_line("demo", signal.SIGINT)
    note = "while generating its data: remove /s/raw before running it again"
    cut = interrupted_line("demo", signal.SIGINT, note)
    assert cut.startswith("ratings demo: interrupted (Ctrl-C)") and cut.endswith(note)
    assert "run the same command again" not in cut

    stopped = SimpleNamespace(cls_name="DagsterExecutionInterruptedError", message="", cause=None)
    wrapper = SimpleNamespace(cls_name="DagsterExecutionStepExecutionError", message="Error in step", cause=stopped)
    assert runs._root_cause(wrapper) == runs.INTERRUPTED
    unfinished = readable_lists_lines("/s", ["2024-05"], [], finished=False)[0]
    assert "made only if the run got that far" in unfinished and ".csv|.txt|.html" not in unfinished


def test_a_step_that_failed_its_checks_is_summarised_in_the_checks_own_words():
    """Dagster fails a step whose blocking checks failed with an error naming the checks only; the summary says the
    first problem of each, as the check wrote it, and how many more there are.
    """
    from types import SimpleNamespace

    import dagster as dg

    from assets.runtime import runs
    from pipeline.text import markdown_list

    problem = "2023-10: the pool starts at 1,289,256 points, the month before ended at 1,299,560 (a_b)"

    def evaluation(step: str, problems: list[str], passed: bool = False, count: int | None = None) -> SimpleNamespace:
        metadata = {"problems": dg.MetadataValue.md(markdown_list(problems))}
        if count is not None:
            metadata["problem_count"] = dg.MetadataValue.int(count)
        data = dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(["actual", "points_ledger"]),
            check_name="ledger_balance",
            passed=passed,
            metadata=metadata,
            severity=dg.AssetCheckSeverity.ERROR,
        )
        return SimpleNamespace(event_type_value="ASSET_CHECK_EVALUATION", step_key=step, event_specific_data=data)

    events = [
        evaluation("rate_actual_checks", [problem]),  # the month's evaluation
        evaluation("rate_actual_checks", [problem, "2023-11: another"], count=3),  # the range's
        evaluation("rate_kfull_checks", [], passed=True),
    ]
    failed = runs._failed_checks(events)
    assert failed == {"rate_actual_checks": f"ledger_balance of actual/points_ledger: {problem} (and 2 more)"}
    error = SimpleNamespace(
        cls_name="DagsterAssetCheckFailedError",
        message="dagster._core.errors.DagsterAssetCheckFailedError: 2 blocking asset checks failed",
        cause=None,
    )
    assert runs._root_cause(error, failed["rate_actual_checks"]) == failed["rate_actual_checks"]
    assert runs._root_cause(error).startswith("dagster._core.errors.DagsterAssetCheckFailedError")


def test_the_commands_a_run_prints_can_be_copied_with_a_store_path_of_blanks():
    from pipeline.operations.run_plan import readable_lists_lines

    lines = readable_lists_lines("/data/my store", ["2024-05"], [])
    assert "ratings list --store '/data/my store' --scenario <scenario>" in lines[-1]
    assert "ratings list --store s3://chess/store --scenario" in readable_lists_lines("s3://chess/store", [], [])[-1]


def test_every_option_a_printed_command_carries_is_one_that_command_takes() -> None:
    """CommandLines repeats the store, scenarios file and instance of the command that printed a command where that
    command takes them: each is an option of its parser (a name it does not know would make the printed command exit
    2), and a command without --scenarios gets the file through its variable.
    """
    import shlex

    from assets.runtime.cli import add_dagster_commands
    from pipeline.cli.commands import build_parser
    from pipeline.text import CARRIED_OPTIONS, SCENARIOS_VARIABLE, CommandLines, Placeholder

    parser = build_parser(add_dagster_commands)
    lines = CommandLines("/data/my store", "/my files/two.yaml", "/var/dagster home")
    given = {"--store": "/data/my store", "--scenarios": "/my files/two.yaml", "--dagster-home": "/var/dagster home"}
    required = {"player": ["12345"], "list": []}
    for command, options in CARRIED_OPTIONS.items():
        words = shlex.split(lines.ratings(command, *required.get(command, [])))
        setting = [word for word in words if "=" in word and not word.startswith("-")]
        args = parser.parse_args(words[words.index("ratings") + 1 :])
        for option in options:
            assert getattr(args, option.removeprefix("--").replace("-", "_")) == given[option], (command, option)
        assert setting == (
            [f"{SCENARIOS_VARIABLE[command]}=/my files/two.yaml"] if command in SCENARIOS_VARIABLE else []
        )
    # Nothing given, nothing carried; a Placeholder is shown as written.
    assert CommandLines().ratings("run", "--from", "2024-03") == "ratings run --from 2024-03"
    template = CommandLines("/s").ratings("list", "--month", Placeholder("<YYYY-MM>"), "--scenario", "<x>")
    assert shlex.split(template) == ["ratings", "list", "--store", "/s", "--month", "<YYYY-MM>", "--scenario", "<x>"]
    assert "--month <YYYY-MM> --scenario '<x>'" in template  # the placeholder unquoted, a value quoted


def test_the_summary_counts_the_players_a_later_list_brought_in_by_scenario_and_month(tmp_path: Path) -> None:
    """The players a list filed after the chain's start brings in at its rating (chain.with_later_list_newcomers) are
    named by the run, as its plan line promises: each month's count goes from the chain's notes to the list's
    metadata, and the runs' counts to the summary, by scenario and month.
    """
    from pipeline.operations.run_plan import RunPlan, closing_lines, runs_summary
    from pipeline.scenarios.chain import JOINED_FROM_LATER_LIST, ChainNotes
    from pipeline.scenarios.model import Scenario
    from pipeline.scenarios.month_records import month_records

    store = ObjectStore(str(tmp_path))
    notes = ChainNotes()
    notes.joined["2023-03"] = 2
    record = month_records(store, Scenario(name="a", rules="fide-2024"), ["2023-03"], None, notes, ["a", "rating_list"])
    listed = pl.DataFrame({"player_id": [1], "rating": [2000]})
    assert record("2023-03", listed, False).metadata == {JOINED_FROM_LATER_LIST: 2}
    assert record("2023-03", listed, False).metadata == {}  # said once

    plan = RunPlan(str(tmp_path), store, [], ["2023-03", "2023-05"], {}, ("2023-03", "2023-05"))
    outcomes = [
        {
            "run_id": "r1",
            "success": True,
            "checks": {},
            "failed_steps": {},
            JOINED_FROM_LATER_LIST: {"a": {"2023-03": 2}},
        },
        {
            "run_id": "r2",
            "success": True,
            "checks": {},
            "failed_steps": {},
            JOINED_FROM_LATER_LIST: {"a": {"2023-05": 1}},
        },
    ]
    summary = runs_summary(plan, outcomes, 2, 1.0, "home")
    assert summary[JOINED_FROM_LATER_LIST] == {"a": {"2023-03": 2, "2023-05": 1}}
    line = next(line for line in closing_lines(summary, {}, "Run").splitlines() if line.startswith("  a: 3 player"))
    assert line.endswith(": 2023-03 2, 2023-05 1")
