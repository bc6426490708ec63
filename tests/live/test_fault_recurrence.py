"""An environment fault that recurs when the same journaled answer is replayed on a fresh
environment (or when the same reset fails again) ends the task as an environment error with its
cause named, and a rerun does not try it again unless `--retry-env-errors`; on the lamp-panel
environment, whose `crash` button kills its application every time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _lamp_panel import ENTRY, NAME, switch_task, task_file

from medspot.cli import main
from medspot.commands.live import GIVEN_UP_EXIT_STATUS
from medspot.live.envs import registry
from medspot.live.loop.steplog import (
    FaultRecord,
    ResumeState,
    TaskRecord,
    read_live_journal,
)
from medspot.runfolder.layout import LIVE_JOURNAL


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


def _run(tasks: Path, out: Path, *extra: str) -> int:
    return main([
        "live", "run", "--env", NAME, "--model", "oracle", "--tasks-file", str(tasks),
        "--out", str(out), "--no-progress", "--bootstrap", "20", *extra,
    ])  # fmt: skip


def _records(out: Path, task: str) -> tuple[list[FaultRecord], list[TaskRecord]]:
    recs = [r for r in read_live_journal(out / LIVE_JOURNAL) if r.task == task]
    faults = [r for r in recs if isinstance(r, FaultRecord)]
    return faults, [r for r in recs if isinstance(r, TaskRecord)]


@pytest.mark.live
def test_a_fault_recurring_on_replay_ends_the_task_and_reruns_leave_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = task_file(
        tmp_path / "tasks.json",
        [switch_task("red", "red"), switch_task("green-then-crash", "green", "crash")],
    )
    out = tmp_path / "run"
    assert _run(tasks, out) == GIVEN_UP_EXIT_STATUS
    err = capsys.readouterr().err
    assert "green-then-crash" in err and "--retry-env-errors" in err
    faults, ends = _records(out, "green-then-crash")
    assert len(faults) == 3  # the first attempt and --env-retries 2 fresh environments
    assert [f.n for f in faults] == [2, 2, 2]
    assert all(f.action is not None and f.action["kind"] == "click" for f in faults)
    assert [f.replayed for f in faults] == [False, True, True]  # asked once, then replayed
    assert len(ends) == 1 and ends[0].outcome == "env_error" and ends[0].fault_recurs
    assert "action 2, click(" in ends[0].reason and "crash pressed" in ends[0].reason
    assert "panel log line" not in ends[0].reason  # the cause's first line
    assert _records(out, "red")[1][-1].outcome == "success"
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "incomplete"

    before = (out / LIVE_JOURNAL).read_bytes()
    assert _run(tasks, out) == GIVEN_UP_EXIT_STATUS  # not tried again
    assert (out / LIVE_JOURNAL).read_bytes() == before
    assert "--retry-env-errors" in capsys.readouterr().err

    assert _run(tasks, out, "--retry-env-errors", "--env-retries", "1") == GIVEN_UP_EXIT_STATUS
    faults, ends = _records(out, "green-then-crash")
    assert len(faults) == 5 and len(ends) == 2  # two fresh attempts, given up again
    assert ends[-1].fault_recurs and "in 2 attempts in a row" in ends[-1].reason
    rows = json.loads((out / NAME / "task_results.json").read_text())
    assert {r["task_id"].split("/")[1] for r in rows} >= {"red", "green-then-crash"}


@pytest.mark.live
def test_a_reset_that_always_fails_is_given_up_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = task_file(
        tmp_path / "tasks.json", [switch_task("red", "red"), switch_task("blue", "blue")]
    )
    out = tmp_path / "run"
    opts = ("--env-option", "fail_reset=blue other-task", "--env-retries", "0")
    assert _run(tasks, out, *opts) == 1  # one fault: not known yet to recur, run again
    assert "run the same command again" in capsys.readouterr().err
    _, ends = _records(out, "blue")
    assert ends[-1].outcome == "env_error" and not ends[-1].fault_recurs
    assert "cannot bring the panel to the start of blue" in ends[-1].reason
    assert _run(tasks, out, *opts) == GIVEN_UP_EXIT_STATUS  # the same reset failed again
    faults, ends = _records(out, "blue")
    assert [f.n for f in faults] == [0, 0] and ends[-1].fault_recurs
    assert "the task's reset" in ends[-1].reason
    assert _run(tasks, out, *opts) == GIVEN_UP_EXIT_STATUS
    assert len(_records(out, "blue")[0]) == 2  # not tried a third time
    assert _run(tasks, out, "--retry-env-errors") == 0  # the fault is gone: it succeeds
    assert _records(out, "blue")[1][-1].outcome == "success"


def _fault(n: int | None, x: float, *, replayed: bool = True, attempt: int = 1) -> FaultRecord:
    action = {"kind": "click", "x": x, "y": 10.0, "button": "left", "double": False}
    return FaultRecord(task="t", env=NAME, attempt=attempt, message="m", n=n,
                       action=action if n else None, replayed=replayed)  # fmt: skip


def test_only_faults_at_one_place_with_the_same_replayed_answer_make_a_streak() -> None:
    st = ResumeState.from_records([_fault(2, 5.0, replayed=False), _fault(2, 5.0)])
    assert len(st.fault_streak["t"]) == 2
    st.add(_fault(3, 5.0))  # another place: a new streak
    assert len(st.fault_streak["t"]) == 1
    st.add(_fault(3, 6.0))  # another answer at that place
    assert len(st.fault_streak["t"]) == 1
    st.add(_fault(3, 6.0, replayed=False))  # the model was asked again: not the same input
    assert len(st.fault_streak["t"]) == 1
    st = ResumeState.from_records([_fault(None, 0), _fault(None, 0)])  # the start: never
    assert len(st.fault_streak["t"]) == 1
    st = ResumeState.from_records([_fault(0, 0), _fault(0, 0, replayed=False)])
    assert len(st.fault_streak["t"]) == 2  # the reset comes before any answer
    given_up = TaskRecord(task="t", env=NAME, attempt=2, outcome="env_error", fault_recurs=True)
    st.add(given_up)
    assert st.given_up["t"] == given_up and "t" not in st.fault_streak
    st.add(TaskRecord(task="t", env=NAME, attempt=3, outcome="success"))
    assert "t" not in st.given_up and "t" in st.finished
