"""The pure parts of the runner: the journal (torn tail, answer-then-effect lines, resume
state across attempts), the intended-element hit rule, the live metrics and their intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medspot.live.core.actions import Click, Drag, Key, Scroll, TypeText, describe_action
from medspot.live.core.contract import PixelBox
from medspot.live.core.episode import POINT_TOLERANCE_PX, hit_intended
from medspot.live.core.tasks import LiveTask, StepSpec
from medspot.live.loop.outcomes import (
    BOOTSTRAP_COLUMNS,
    bootstrap_ratios,
    live_metrics,
    task_results,
)
from medspot.live.loop.steplog import (
    FaultRecord,
    LiveRecord,
    ResumeState,
    StepRecord,
    TaskRecord,
    read_live_journal,
)
from medspot.runfolder.journal import Journal


def _step(task: str, attempt: int, n: int, **kw: object) -> StepRecord:
    return StepRecord(task=task, env="e", attempt=attempt, n=n, **kw)  # type: ignore[arg-type]


def test_journal_round_trip_and_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path, fsync_interval=0) as j:
        j.append(_step("a", 1, 1, raw_text="click(1, 2)"))
        j.append(FaultRecord(task="a", env="e", attempt=1, message="orthanc died"))
        j.append(TaskRecord(task="b", env="e", attempt=1, outcome="success", steps_used=2))
    with path.open("ab") as f:
        f.write(b'{"type":"step","task":"a","env":"e","attempt":2,"n":1,"raw_te')  # torn
    recs = list(read_live_journal(path))
    assert [type(r).__name__ for r in recs] == ["StepRecord", "FaultRecord", "TaskRecord"]
    with Journal(path, fsync_interval=0) as j:  # the torn tail cannot glue onto the next record
        j.append(_step("a", 2, 1, raw_text="again"))
    recs = list(read_live_journal(path))
    assert len(recs) == 4 and isinstance(recs[-1], StepRecord) and recs[-1].raw_text == "again"


def test_resume_state_replays_answers_across_attempts() -> None:
    recs: list[LiveRecord] = [
        _step("a", 1, 1, raw_text="one"),  # the answer line
        _step("a", 1, 1, raw_text="one", executed=True, hit_intended=True),  # its effect
        _step("a", 1, 2, raw_text="two"),  # answered, then the environment died
        FaultRecord(task="a", env="e", attempt=1, message="died"),
        _step("a", 2, 1, raw_text="one", replayed=True, executed=True),
        _step("a", 2, 2, error="HTTP 500 (after 4 retries)"),
        TaskRecord(task="a", env="e", attempt=2, outcome="error"),
        TaskRecord(task="b", env="e", attempt=1, outcome="harmful"),
    ]
    st = ResumeState.from_records(recs)
    assert "a" not in st.finished and st.finished["b"].outcome == "harmful"
    assert st.attempts["a"] == 2 and st.faults["a"] == 1
    # answers 1 and 2 are replayed on the next attempt; the failed call is asked again
    assert {n: r.raw_text for n, r in st.answers["a"].items()} == {1: "one", 2: "two"}
    assert [r.n for r in st.steps["a"][1]] == [1, 2]  # the answer line was replaced by its effect
    assert st.steps["a"][1][0].executed
    assert [r.n for r in st.trajectory("a")] == [1, 2] and st.trajectory("a")[1].error


def _spec(action: str = "click", **kw: object) -> StepSpec:
    base: dict[str, object] = {"instruction": "x", "action": action}
    if action in ("click", "drag", "scroll"):
        base["target"] = {"text": "OK"}
    if action == "drag":
        base["to"] = {"text": "B"}
    if action == "scroll":
        base["dy"] = 3
    base.update(kw)
    return StepSpec.model_validate(base)


def test_hit_intended() -> None:
    box = PixelBox(100, 100, 200, 150)
    assert hit_intended(_spec(), Click(150, 120), box, None) is True
    assert hit_intended(_spec(), Click(250, 120), box, None) is False
    assert hit_intended(_spec(), Click(150, 120), None, None) is None  # target not on screen
    assert hit_intended(_spec(), TypeText("x"), box, None) is False
    to = PixelBox(300, 300, 301, 301)  # a landmark: a point
    d = _spec("drag")
    assert hit_intended(d, Drag(150, 120, 300 + POINT_TOLERANCE_PX - 1, 300), box, to) is True
    assert hit_intended(d, Drag(150, 120, 300 + POINT_TOLERANCE_PX + 2, 300), box, to) is False
    assert hit_intended(d, Click(150, 120), box, to) is False
    assert hit_intended(_spec("scroll"), Scroll(150, 120, 3), box, None) is True
    assert hit_intended(_spec("scroll"), Click(150, 120), box, None) is False
    assert hit_intended(_spec("type", text="DOE "), TypeText("DOE"), None, None) is True
    assert hit_intended(_spec("key", key="ctrl+a"), Key("Control+a"), None, None) is True
    assert hit_intended(_spec("key", key="Enter"), Key("Escape"), None, None) is False
    assert describe_action(Drag(1, 2, 3, 4)) == "drag(1, 2, 3, 4)"
    assert describe_action(Click(5, 6, "right")) == "right_click(5, 6)"


def _task(tid: str, n_steps: int, tags: tuple[str, ...] = ()) -> LiveTask:
    steps = [{"instruction": f"s{i}", "target": {"text": "x"}} for i in range(n_steps)]
    return LiveTask.model_validate(
        {
            "id": tid,
            "instruction": tid,
            "tags": list(tags),
            "steps": steps,
            "success": [{"kind": "k"}],
        }
    )


def test_live_metrics() -> None:
    tasks = [_task("ok", 2, ("a",)), _task("recovered", 2, ("a", "b")), _task("harm", 1, ("b",)),
             _task("budget", 1), _task("env", 1)]  # fmt: skip
    ex = {"executed": True, "action": {"kind": "click", "x": 1.0, "y": 1.0}}
    recs: list[LiveRecord] = [
        _step("ok", 1, 1, hit_intended=True, **ex), _step("ok", 1, 2, hit_intended=True, **ex),
        TaskRecord(task="ok", env="e", attempt=1, outcome="success", achieved=2),
        _step("recovered", 1, 1, hit_intended=False, **ex),
        _step("recovered", 1, 2, hit_intended=True, **ex),
        _step("recovered", 1, 3, hit_intended=True, **ex),
        TaskRecord(task="recovered", env="e", attempt=1, outcome="success", achieved=2),
        _step("harm", 1, 1, hit_intended=False, **ex),
        TaskRecord(task="harm", env="e", attempt=1, outcome="harmful", fired=["x"]),
        _step("budget", 1, 1, raw_text="??"),  # no readable action: a miss
        TaskRecord(task="budget", env="e", attempt=1, outcome="failure"),
        TaskRecord(task="env", env="e", attempt=3, outcome="env_error"),
    ]  # fmt: skip
    res = task_results(tasks, ResumeState.from_records(recs), "e")
    m = live_metrics(res, n_boot=500, seed=1)
    assert m["num_tasks"] == 4 and m["num_env_errors"] == 1
    assert m["task_success_rate"] == 0.5 and m["harmful_failure_rate"] == 0.25
    assert m["num_missed"] == 3 and m["recovery_rate"] == pytest.approx(1 / 3)
    assert m["intended_hit_rate"] == pytest.approx(4 / 6)
    assert m["steps_ratio"] == pytest.approx(5 / 4) and m["mean_steps_used"] == 2.5
    lo, hi = m["live_confidence_intervals"]["task_success_rate"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0 and lo < hi
    assert m["by_tag"]["a"]["task_success_rate"] == 1.0
    assert m["by_tag"]["b"]["task_success_rate"] == 0.5
    assert m["by_tag"]["untagged"]["num_tasks"] == 1  # "env" errored: not scored
    row = res[1].static_row()
    assert row.completed and not row.step1_hit and row.correct_steps == 2


def test_bootstrap_ratios_match_resampling_by_hand() -> None:
    rng = np.random.default_rng(0)
    m = np.zeros((40, len(BOOTSTRAP_COLUMNS)))
    m[:, 0] = 1
    m[:, 1] = rng.random(40) < 0.3
    ci = bootstrap_ratios(m, n_boot=4000, seed=2)["task_success_rate"]
    assert ci is not None
    p = m[:, 1].mean()
    se = np.sqrt(p * (1 - p) / 40)
    assert ci[0] == pytest.approx(p - 1.96 * se, abs=0.05)
    assert ci[1] == pytest.approx(p + 1.96 * se, abs=0.05)
    empty = np.zeros((0, len(BOOTSTRAP_COLUMNS)))
    assert bootstrap_ratios(empty, n_boot=10, seed=0)["recovery_rate"] is None
