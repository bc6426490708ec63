"""`--repeats K`: every task runs K times, each on a freshly reset environment; the journal keys
results by (task, repeat) (a journal written before repeats reads as repeat 0), a resume runs
only the (task, repeat) pairs not finished, and the metrics add pass@k / pass^k (with intervals
that resample tasks), the per-task success fractions, infeasible accuracy and typed endings.
Built journals for the metrics; the lamp-panel environment (a real small environment with a
real child process) for the runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _lamp_panel import ENTRY, NAME, switch_task, task_file

from medspot.cli import main
from medspot.live.core.tasks import LiveTask
from medspot.live.envs import registry
from medspot.live.loop.outcomes import live_metrics, task_matrix, task_results
from medspot.live.loop.results import write_live_results
from medspot.live.loop.steplog import (
    JournalState,
    LiveRecord,
    ResumeState,
    StepRecord,
    TaskRecord,
    read_live_journal,
)
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.runfolder.live_schema import LiveTaskRow


def _task(tid: str, *, infeasible: bool = False) -> LiveTask:
    step: dict[str, Any] = {"instruction": "s", "target": {"text": "x"}}
    if infeasible:
        step = {"instruction": "say it cannot be done", "action": "infeasible"}
    return LiveTask.model_validate(
        {"id": tid, "instruction": tid, "steps": [step], "success": [{"kind": "k"}],
         "infeasible": infeasible}
    )  # fmt: skip


CLICK = {"kind": "click", "x": 5.0, "y": 5.0}


def _run_of(
    task: str,
    repeat: int,
    outcome: str,
    ending: dict[str, Any] | None = None,
    reason: str = "",
) -> list[LiveRecord]:
    """One finished run: a click, then `ending` (an unexecuted done / infeasible) if given."""
    hit = outcome == "success"
    click = StepRecord(
        task=task, env="e", attempt=1, repeat=repeat, n=1, action=CLICK, executed=True,
        hit_intended=hit,
    )  # fmt: skip
    recs: list[LiveRecord] = [click]
    if ending is not None:
        recs.append(StepRecord(task=task, env="e", attempt=1, repeat=repeat, n=2, action=ending))
    end = TaskRecord(
        task=task, env="e", attempt=1, repeat=repeat, outcome=outcome,  # type: ignore[arg-type]
        reason=reason, achieved=int(hit),
    )  # fmt: skip
    return [*recs, end]


def test_a_journal_before_repeats_reads_as_repeat_zero() -> None:
    old = json.dumps({"type": "task", "task": "a", "env": "e", "attempt": 1, "outcome": "success"})
    rec = TaskRecord.model_validate_json(old)
    assert rec.repeat == 0
    st = JournalState.from_records([rec, *_run_of("a", 1, "failure", reason="budget")])
    assert st.of(0).finished["a"].outcome == "success"
    assert st.of(1).finished["a"].outcome == "failure"
    assert st.highest_repeat() == 1
    # the state of one repeat: answers of other repeats are not replayed into it
    assert ResumeState.from_records(list(_run_of("a", 1, "failure")), repeat=0).answers == {}
    assert set(ResumeState.from_records(list(_run_of("a", 1, "failure")), 1).answers) == {"a"}


def test_pass_at_k_and_pass_hat_k_with_intervals_over_tasks() -> None:
    tasks = [_task("always"), _task("sometimes"), _task("never"), _task("unfinished")]
    recs: list[LiveRecord] = []
    for r in range(3):
        recs += _run_of("always", r, "success")
        won = r == 1
        recs += _run_of(
            "sometimes", r, "success" if won else "failure", reason="" if won else "budget"
        )
        recs += _run_of("never", r, "failure", {"kind": "done"}, "done without success")
    recs += _run_of("unfinished", 0, "success")  # repeats 1 and 2 not run: not complete
    res = task_results(tasks, JournalState.from_records(recs), "e", repeats=3)
    assert len(res) == 12 and [r.repeat for r in res[:5]] == [0, 0, 0, 0, 1]
    m = live_metrics(res, n_boot=400, seed=3)
    assert m["repeats"] == 3 and m["num_task_repeats_complete"] == 3
    assert m["pass_at_k"] == pytest.approx(2 / 3) and m["pass_hat_k"] == pytest.approx(1 / 3)
    assert m["num_pass_any"] == 2 and m["num_pass_all"] == 1
    assert m["task_success_rate"] == pytest.approx(5 / 10)  # pooled over the scored runs
    assert m["num_missing"] == 2
    for key in ("pass_at_k", "pass_hat_k", "task_success_rate"):
        lo, hi = m["live_confidence_intervals"][key]
        assert 0.0 <= lo <= m[key] <= hi <= 1.0
    assert m["by_env"]["e"]["pass_hat_k"] == pytest.approx(1 / 3)
    assert m["endings"] == {"budget": 2, "checks": 5, "done": 3, "missing": 2}
    # the bootstrap resamples tasks (a row per task, its repeats summed), not runs
    assert task_matrix(res).shape[0] == 4
    lo, hi = m["live_confidence_intervals"]["pass_hat_k"]
    assert lo == 0.0 and hi == 1.0  # 3 tasks: a resample may hold "always" only, or none


def test_with_one_repeat_the_metrics_are_as_without_repeats() -> None:
    tasks = [_task("a"), _task("b"), _task("c")]
    recs = [*_run_of("a", 0, "success"), *_run_of("b", 0, "failure", reason="budget"),
            *_run_of("c", 0, "harmful")]  # fmt: skip
    old = live_metrics(task_results(tasks, ResumeState.from_records(recs), "e"), seed=1)
    new = live_metrics(task_results(tasks, JournalState.from_records(recs), "e", repeats=1),
                       seed=1)  # fmt: skip
    assert old == new
    assert "pass_at_k" not in new and "pass_hat_k" not in new
    assert new["task_success_rate"] == pytest.approx(1 / 3)


def test_infeasible_accuracy_and_infeasible_on_a_feasible_task() -> None:
    tasks = [_task("no-such-study", infeasible=True), _task("no-such-patient", infeasible=True),
             _task("changed-anyway", infeasible=True), _task("feasible")]  # fmt: skip
    why = {"kind": "infeasible", "reason": "there is no such study"}
    recs = [
        *_run_of("no-such-study", 0, "success", why, "reported infeasible; nothing changed"),
        *_run_of("no-such-patient", 0, "failure", {"kind": "done"}, "done on an infeasible task"),
        *_run_of("changed-anyway", 0, "failure", why, "reported infeasible, but the state changed"),
        *_run_of("feasible", 0, "failure", why, "reported infeasible (the task is not)"),
    ]  # fmt: skip
    res = task_results(tasks, JournalState.from_records(recs), "e")
    m = live_metrics(res, n_boot=200, seed=0)
    assert m["num_infeasible_tasks"] == 3 and m["num_infeasible_right"] == 1
    assert m["infeasible_accuracy"] == pytest.approx(1 / 3)
    assert m["false_infeasible_rate"] == 1.0 and m["num_false_infeasible"] == 1
    assert m["task_success_rate"] == 0.25  # the feasible task ended infeasible: a failure
    assert [r.ending for r in res] == ["infeasible", "done", "infeasible", "infeasible"]
    assert res[0].ending_reason == "there is no such study" and res[1].ending_reason is None
    assert "infeasible_accuracy" in m["live_confidence_intervals"]


def test_task_rows_per_repeat_carry_the_success_fraction(tmp_path: Path) -> None:
    tasks = [_task("a"), _task("b")]
    recs: list[LiveRecord] = []
    for r in range(3):
        recs += _run_of("a", r, "success" if r else "failure", {"kind": "done"}, "done")
        recs += _run_of("b", r, "success")
    res = task_results(tasks, JournalState.from_records(recs), "e", repeats=3)
    overall = write_live_results(tmp_path, "e", res, n_boot=50)
    assert overall["pass_hat_k"] == 0.5 and overall["pass_at_k"] == 1.0
    assert overall["confidence_intervals"]["pass_hat_k"] is not None
    rows = [LiveTaskRow.model_validate(x)
            for x in json.loads((tmp_path / "e" / "task_results.json").read_text())]  # fmt: skip
    assert [r.task_id for r in rows[:3]] == ["e/a@1", "e/b@1", "e/a@2"]
    a = [r for r in rows if r.task == "a"]
    assert [r.repeat for r in a] == [0, 1, 2] and {r.repeats for r in a} == {3}
    assert [r.success_fraction for r in a] == [pytest.approx(2 / 3)] * 3
    assert {(r.task_successes, r.task_runs_scored) for r in a} == {(2, 3)}
    assert [r.ending for r in a] == ["done", "done", "done"]
    assert a[0].trajectory == "trajectories/a@1.json"
    traj = json.loads((tmp_path / "trajectories" / "a@3.json").read_text())
    assert traj["repeat"] == 2 and traj["outcome"] == "success"


# -- the runner, on the lamp panel ---------------------------------------------------------


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


INFEASIBLE_LAMP = {
    "id": "switch-on-purple",
    "instruction": "Switch on the purple lamp",
    "infeasible": True,
    "steps": [{"instruction": "Say that there is no purple lamp", "action": "infeasible"}],
    "success": [{"kind": "lamp.on", "lamp": "red", "value": False}],
}


def _run(tasks: Path, out: Path, model: str, *extra: str) -> int:
    return main([
        "live", "run", "--env", NAME, "--model", model, "--tasks-file", str(tasks),
        "--out", str(out), "--no-progress", "--bootstrap", "50", *extra,
    ])  # fmt: skip


def _lamp_tasks(tmp_path: Path) -> Path:
    return task_file(
        tmp_path / "tasks.json",
        [switch_task("red", "red"), switch_task("green-blue", "green", "blue"), INFEASIBLE_LAMP],
    )


def _ends(out: Path) -> list[TaskRecord]:
    return [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)]


@pytest.mark.live
def test_repeats_run_every_task_k_times_and_resume_per_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, out = _lamp_tasks(tmp_path), tmp_path / "oracle"
    assert _run(tasks, out, "oracle", "--repeats", "3") == 0
    assert "pass@3 100.0%" in capsys.readouterr().out
    ends = _ends(out)
    assert sorted((r.task, r.repeat) for r in ends) == sorted(
        (t, k) for t in ("red", "green-blue", "switch-on-purple") for k in range(3)
    )
    assert all(r.outcome == "success" and r.attempt == 1 for r in ends)
    assert [r.repeat for r in ends] == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # repeat-major
    info = json.loads((out / "run.json").read_text())
    assert info["repeats"] == 3 and info["status"] == "complete"
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["pass_hat_k"] == 1.0 and m["pass_at_k"] == 1.0 and m["repeats"] == 3
    assert m["infeasible_accuracy"] == 1.0 and m["num_infeasible_tasks"] == 3
    assert m["endings"] == {"checks": 6, "infeasible": 3}

    # a run killed between repeats: only repeat 0 is in the journal; the rerun runs repeats
    # 1 and 2 and nothing of repeat 0 again
    journal = out / LIVE_JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    kept = [ln for ln in lines if json.loads(ln).get("repeat", 0) == 0]
    journal.write_bytes(b"".join(kept))
    assert _run(tasks, out, "oracle", "--repeats", "3") == 0
    again = journal.read_bytes().splitlines(keepends=True)
    assert again[: len(kept)] == kept
    assert all(json.loads(ln)["repeat"] > 0 for ln in again[len(kept) :])
    assert sorted((r.task, r.repeat) for r in _ends(out)) == sorted(
        (r.task, r.repeat) for r in ends
    )
    before = journal.read_bytes()
    assert _run(tasks, out, "oracle", "--repeats", "3") == 0  # all finished: nothing runs
    assert journal.read_bytes() == before
    # another K is another run: refused (exit 2), naming the field
    assert _run(tasks, out, "oracle", "--repeats", "2") == 2
    assert "repeats" in capsys.readouterr().err


@pytest.mark.live
def test_repeats_ask_the_model_afresh_with_the_seed_of_the_repeat(tmp_path: Path) -> None:
    tasks, out = _lamp_tasks(tmp_path), tmp_path / "random"
    _run(tasks, out, "random", "--repeats", "2")
    steps = [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    first = {(s.task, s.n): s.raw_text for s in steps if s.repeat == 0}
    second = {(s.task, s.n): s.raw_text for s in steps if s.repeat == 1}
    assert first and second and not any(s.replayed for s in steps)
    assert first[("red", 1)] != second[("red", 1)]  # another request seed, another answer
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert "pass_hat_k" in m and m["repeats"] == 2


@pytest.mark.live
def test_noop_fails_every_repeat_and_no_infeasible_task(tmp_path: Path) -> None:
    tasks, out = _lamp_tasks(tmp_path), tmp_path / "noop"
    assert _run(tasks, out, "noop", "--repeats", "2") == 0
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["pass_at_k"] == 0.0 and m["pass_hat_k"] == 0.0 and m["task_success_rate"] == 0.0
    assert m["infeasible_accuracy"] == 0.0 and m["endings"] == {"done": 6}
    rows = json.loads((out / NAME / "task_results.json").read_text())
    assert {r["success_fraction"] for r in rows} == {0.0}
    assert np.all([r["ending"] == "done" for r in rows])


@pytest.mark.live
def test_leaderboard_and_compare_with_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = _lamp_tasks(tmp_path)
    oracle, noop, once = tmp_path / "oracle", tmp_path / "noop", tmp_path / "once"
    assert _run(tasks, oracle, "oracle", "--repeats", "3") == 0
    assert _run(tasks, noop, "noop", "--repeats", "3") == 0
    assert _run(tasks, once, "oracle") == 0
    capsys.readouterr()
    assert main(["leaderboard", str(oracle), str(noop)]) == 0
    board = capsys.readouterr().out
    head = next(ln for ln in board.splitlines() if ln.startswith("| #"))
    assert head.endswith("| pass@k | pass^k |")
    row = next(ln for ln in board.splitlines() if "| oracle" in ln)
    assert row.endswith("| 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] |")
    assert "K = 3 repeats per task" in board
    assert main(["leaderboard", str(oracle), str(once)]) == 2  # another K: refused
    assert "different --repeats (oracle (oracle): 3, oracle (once): 1)" in capsys.readouterr().err
    assert main(["leaderboard", "--mixed", str(oracle), str(once)]) == 0
    capsys.readouterr()

    assert main(["compare", str(noop), str(oracle), "--format", "json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["common_tasks"] == 9  # rows per task and repeat
    hat = c["repeats"]["pass_hat_k"]
    assert (hat["a"], hat["b"], hat["difference"], hat["tasks"]) == (0.0, 1.0, 1.0, 3)
    assert hat["interval"] == [1.0, 1.0]
    assert main(["compare", str(noop), str(oracle)]) == 0
    assert "pass^k over the 3 tasks both ran K times: A 0.0, B 100.0" in capsys.readouterr().out
    assert main(["compare", str(once), str(oracle)]) == 2
    assert "different --repeats" in capsys.readouterr().err
