"""`ratings run` as waves of runs: which runs, in which order, side by side in worker processes (no Dagster)."""

import os

from pipeline.waves import DEFAULT_WORKERS, Stage, run_waves, stages


def test_one_worker_is_one_run_and_more_are_shared_scenarios_comparison() -> None:
    assert stages(["actual", "glicko2"], workers=1) == [[Stage("all", ())]]
    assert stages(["actual", "glicko2"], workers=2) == [
        [Stage("shared", ("ingest", "validate"))],
        [Stage("actual", ("actual",)), Stage("glicko2", ("glicko2",))],
        [Stage("comparison", ("reports", "evaluation"))],
    ]
    assert DEFAULT_WORKERS == 1  # one run unless asked: side by side measured no faster on 2 cores


def outcome_in_process(stage: Stage, fail: str, reporter: object) -> dict:
    """A stand-in for one Dagster run: where it ran, and whether it succeeded."""
    if reporter is not None:
        reporter("rate", "2024-01", 1, 1)  # forwarded to the parent's progress
    return {"stage": stage.name, "pid": os.getpid(), "success": stage.name != fail}


def test_a_waves_runs_go_to_worker_processes_and_a_failed_wave_stops_the_rest() -> None:
    waves = stages(["a", "b", "c"], workers=2)
    done = run_waves(waves, outcome_in_process, ("none",), workers=2)
    assert [o["stage"] for o in done] == ["shared", "a", "b", "c", "comparison"]
    pids = {o["stage"]: o["pid"] for o in done}
    assert pids["shared"] == pids["comparison"] == os.getpid()  # a wave of one runs here
    assert os.getpid() not in {pids["a"], pids["b"], pids["c"]}
    stopped = run_waves(waves, outcome_in_process, ("b",), workers=2)
    assert [o["stage"] for o in stopped] == ["shared", "a", "b", "c"]  # no comparison after a failed scenario
