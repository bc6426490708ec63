"""The audit's judgement on journals written by hand (no application): which finding each kind
of broken run gives, and none for a sound one."""

from __future__ import annotations

from typing import Any

from medspot.live.core.tasks import LiveTask
from medspot.live.loop.steplog import ResumeState, StepRecord, TaskRecord
from medspot.live.loop.task_audit import audit_tasks, judge_task

ENV = "orthanc-explorer"
TASK = LiveTask.model_validate({
    "id": "t", "instruction": "open it", "start": {"route": "#find-patients"},
    "steps": [{"instruction": "a", "target": {"text": "A"}},
              {"instruction": "b", "target": {"text": "B"}}],
    "success": [{"kind": "web.url_matches", "pattern": "#patient"},
                {"kind": "orthanc.study_present", "study": "CT-DOE-JOHN", "keep": True}],
    "fail_if": [{"kind": "orthanc.instance_count", "max": 64}],
})  # fmt: skip
CLICK = {"kind": "click", "x": 10.0, "y": 10.0, "button": "left", "double": False}
ON = {"key": "li", "role": "li", "name": "A", "box": [0, 0, 20, 20]}


def _step(
    n: int, screen: str, success: list[bool], fail: tuple[bool, ...] = (False,), **kw: Any
) -> StepRecord:
    base: dict[str, Any] = {
        "task": "t", "env": ENV, "attempt": 1, "n": n, "target_step": n, "screen": screen,
        "url": "u", "url_after": "u", "action": CLICK, "executed": True, "element": ON,
        "checks": {"success_each": success, "fail_if_each": list(fail)},
    }  # fmt: skip
    base.update(kw)
    return StepRecord.model_validate(base)


def _end(outcome: str, final: str = "s3") -> TaskRecord:
    return TaskRecord(task="t", env=ENV, attempt=1, outcome=outcome, final_screen=final)  # type: ignore[arg-type]


def _noop(
    success: list[bool], fail: tuple[bool, ...] = (False,), outcome: str = "failure"
) -> ResumeState:
    start = _step(1, "s1", success, fail, action={"kind": "done"}, executed=False, element=None)
    return ResumeState.from_records([start, _end(outcome, "s1")])


def _oracle(*steps: StepRecord, outcome: str = "success", final: str = "s3") -> ResumeState:
    return ResumeState.from_records([*steps, _end(outcome, final)])


SOUND = _oracle(_step(1, "s1", [False, True]), _step(2, "s2", [True, True]))


def kinds(oracle: ResumeState, noop: ResumeState, task: LiveTask = TASK) -> set[str]:
    return {f.kind for f in judge_task(task, oracle, noop)}


def test_a_sound_task_has_no_finding() -> None:
    assert kinds(SOUND, _noop([False, True])) == set()
    assert audit_tasks(ENV, [TASK], SOUND, _noop([False, True])) == []


def test_start_findings() -> None:
    assert "solved_at_start" in kinds(SOUND, _noop([True, True], outcome="success"))
    assert kinds(SOUND, _noop([False, True], (True,))) == {"fail_if_at_start"}
    assert kinds(SOUND, _noop([False, False])) == {"keep_not_at_start"}
    # a success check not marked keep that holds at the start and at the end
    unmarked = TASK.model_copy(update={"success": (TASK.success[0], TASK.success[1].model_copy(
        update={"keep": False}))})  # fmt: skip
    assert kinds(SOUND, _noop([False, True]), unmarked) == {"vacuous_check"}


def test_oracle_findings() -> None:
    noop = _noop([False, True])
    failed = _oracle(_step(1, "s1", [False, True]), outcome="failure", final="s2")
    assert kinds(failed, noop) == {"oracle_failed"}
    missing = _oracle(_step(1, "s1", [False, True]),
                      _step(2, "s2", [False, True], action=None, executed=False, element=None),
                      outcome="failure", final="s2")  # fmt: skip
    assert kinds(missing, noop) == {"oracle_failed", "target_missing"}
    nowhere = _oracle(_step(1, "s1", [False, True], element=None), _step(2, "s2", [True, True]))
    assert kinds(nowhere, noop) == {"lands_elsewhere"}
    # the first action left the screen, the URL and the checks as they were
    idle = _oracle(_step(1, "s1", [False, True]), _step(2, "s1", [True, True]))
    assert kinds(idle, noop) == {"no_change"}
    # ... a changed check alone is a change (a download shows nothing on the screen)
    quiet = _oracle(_step(1, "s1", [False, True]), _step(2, "s2", [True, True]), final="s2")
    assert kinds(quiet, noop) == set()
    env_err = ResumeState.from_records([_end("env_error")])
    assert kinds(env_err, noop) == {"env_error"}


def test_static_vacuity_is_reported_with_its_place() -> None:
    task = LiveTask.model_validate({**TASK.model_dump(exclude_defaults=True), "fail_if": [
        {"kind": "orthanc.instance_count", "min": 0}]})  # fmt: skip
    found = audit_tasks(ENV, [task], SOUND, _noop([False, True]))
    assert [(f.kind, f.message.split(":")[0]) for f in found] == [
        ("vacuous_check", "fail_if.0 (orthanc.instance_count)")
    ]
