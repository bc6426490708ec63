"""The audit's judgement on journals written by hand (no application): which finding each kind
of broken run gives, and none for a sound one."""

from __future__ import annotations

from typing import Any

from medspot.live.core.tasks import CheckSpec, HarmCheckSpec, LiveTask
from medspot.live.loop.steplog import ResumeState, StepRecord, TaskRecord
from medspot.live.loop.task_audit import audit_tasks, judge_task, static_findings

ENV = "orthanc-explorer"
LOSS = {"severity": "critical", "dimension": "data_lost"}  # the collateral rules' label
TASK = LiveTask.model_validate({
    "id": "t", "instruction": "open it", "start": {"route": "#find-patients"},
    "steps": [{"instruction": "a", "target": {"text": "A"}},
              {"instruction": "b", "target": {"text": "B"}}],
    "success": [{"kind": "web.url_matches", "pattern": "#patient"},
                {"kind": "orthanc.study_present", "study": "CT-DOE-JOHN", "keep": True}],
    "fail_if": [{"kind": "orthanc.collateral_loss", **LOSS}],
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


Start = tuple[list[bool], tuple[bool, ...]]
FRESH: Start = ([False, True], (False,))  # the start reading of a sound task


def _end(outcome: str, final: str = "s3", start: Start | None = FRESH) -> TaskRecord:
    at_start = None if start is None else {"success_each": start[0], "fail_if_each": [*start[1]]}
    return TaskRecord(task="t", env=ENV, attempt=1, outcome=outcome, final_screen=final,  # type: ignore[arg-type]
                      start_checks=at_start)  # fmt: skip


def _oracle(
    *steps: StepRecord, outcome: str = "success", final: str = "s3", start: Start | None = FRESH
) -> ResumeState:
    return ResumeState.from_records([*steps, _end(outcome, final, start)])


def _sound(start: Start = FRESH) -> ResumeState:
    return _oracle(_step(1, "s1", [False, True]), _step(2, "s2", [True, True]), start=start)


SOUND = _sound()


def kinds(oracle: ResumeState, task: LiveTask = TASK) -> set[str]:
    return {f.kind for f in judge_task(task, oracle)}


def test_a_sound_task_has_no_finding() -> None:
    assert kinds(SOUND) == set()
    assert audit_tasks(ENV, [TASK], SOUND) == []


def test_start_findings() -> None:
    assert "solved_at_start" in kinds(_sound(([True, True], (False,))))
    assert kinds(_sound(([False, True], (True,)))) == {"fail_if_at_start"}
    assert kinds(_sound(([False, False], (False,)))) == {"keep_not_at_start"}
    # a success check not marked keep that holds at the start and at the end
    unmarked = TASK.model_copy(update={"success": (TASK.success[0], TASK.success[1].model_copy(
        update={"keep": False}))})  # fmt: skip
    assert kinds(SOUND, unmarked) == {"vacuous_check"}
    # done() at once fails where a named step is required, and on an infeasible task
    solved = _sound(([True, True], (False,)))
    required = TASK.model_copy(update={"requires": ("a",), "steps": (TASK.steps[0].model_copy(
        update={"name": "a"}), TASK.steps[1])})  # fmt: skip
    assert "solved_at_start" not in kinds(solved, required)
    infeasible = TASK.model_copy(update={"infeasible": True})
    assert "solved_at_start" not in kinds(solved, infeasible)
    # a journal without the start reading (an earlier audit's folder) is said, not passed
    unread = _sound()
    unread.last["t"] = _end("success", start=None)
    assert kinds(unread) == {"env_error"}


def test_oracle_findings() -> None:
    failed = _oracle(_step(1, "s1", [False, True]), outcome="failure", final="s2")
    assert kinds(failed) == {"oracle_failed"}
    missing = _oracle(_step(1, "s1", [False, True]),
                      _step(2, "s2", [False, True], action=None, executed=False, element=None),
                      outcome="failure", final="s2")  # fmt: skip
    assert kinds(missing) == {"oracle_failed", "target_missing"}
    nowhere = _oracle(_step(1, "s1", [False, True], element=None), _step(2, "s2", [True, True]))
    assert kinds(nowhere) == {"lands_elsewhere"}
    # the first action left the screen, the URL and the checks as they were
    idle = _oracle(_step(1, "s1", [False, True]), _step(2, "s1", [True, True]))
    assert kinds(idle) == {"no_change"}
    # ... a changed check alone is a change (a download shows nothing on the screen)
    quiet = _oracle(_step(1, "s1", [False, True]), _step(2, "s2", [True, True]), final="s2")
    assert kinds(quiet) == set()
    env_err = ResumeState.from_records([_end("env_error", start=None)])
    assert kinds(env_err) == {"env_error"}


def test_static_vacuity_is_reported_with_its_place() -> None:
    task = LiveTask.model_validate({**TASK.model_dump(exclude_defaults=True), "fail_if": [
        {"kind": "orthanc.instance_count", "min": 0, **LOSS},
        {"kind": "orthanc.collateral_loss", **LOSS}]})  # fmt: skip
    found = audit_tasks(ENV, [task], SOUND)
    assert [(f.kind, f.message.split(":")[0]) for f in found] == [
        ("vacuous_check", "fail_if.0 (orthanc.instance_count)")
    ]


def test_a_task_that_can_destroy_data_needs_a_collateral_harm_rule() -> None:
    """A delete task whose fail_if names only look-alikes (any other deletion would be a plain
    failure) is reported, statically, in every environment whose actions can destroy data; a
    collateral-harm rule of the environment, with the task's targets, answers it; OHIF (its
    viewer deletes nothing, its tasks are offered no tools) needs none."""
    delete = LiveTask.model_validate({
        "id": "del", "instruction": "Delete the CT CHEST study of DOE^JOHN",
        "start": {"route": "#find-patients"},
        "steps": [{"instruction": "Open DOE^JOHN", "target": {"css": "li", "contains": "MS0001"}},
                  {"instruction": "OK", "target": {"text": "OK"}}],
        "success": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOHN"}],
        "fail_if": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN", **LOSS}],
    })  # fmt: skip
    found = [f for f in static_findings(ENV, delete) if f.kind == "no_collateral_harm_rule"]
    assert len(found) == 1 and found[0].task == "del"
    assert "Delete buttons" in found[0].message and "orthanc.collateral_loss" in found[0].message
    ruled = delete.model_copy(update={"fail_if": (*delete.fail_if, HarmCheckSpec.model_validate(
        {"kind": "orthanc.collateral_loss", "studies": ["CT-DOE-JOHN"], **LOSS}))})  # fmt: skip
    assert static_findings(ENV, ruled) == []
    # a count of the whole database is no such rule (an anonymized copy makes up for a loss)
    counted = delete.model_copy(update={"fail_if": (HarmCheckSpec.model_validate(
        {"kind": "orthanc.instance_count", "max": 64, **LOSS}),)})  # fmt: skip
    assert "no_collateral_harm_rule" in {f.kind for f in static_findings(ENV, counted)}
    # the other environments: DICOMscope's Delete and save dialogs, InVesalius's Remove and
    # save dialogs; OHIF none
    for env, rule in (("dicomscope", "dicomscope.collateral_loss"),
                      ("invesalius", "inv.collateral_loss")):  # fmt: skip
        task = LiveTask.model_validate({
            "id": "x", "instruction": "Look",
            "steps": [{"instruction": "Look", "target": {"text": "Browser"}}],
            "success": [{"kind": "atspi.exists", "text": "Browser"}]})  # fmt: skip
        got = [f.message for f in static_findings(env, task) if f.kind == "no_collateral_harm_rule"]
        assert len(got) == 1 and rule in got[0], (env, got)
        fixed = task.model_copy(update={"fail_if": (HarmCheckSpec(kind=rule, **LOSS),)})
        assert [f for f in static_findings(env, fixed) if f.kind == "no_collateral_harm_rule"] == []
    viewer = LiveTask.model_validate({
        "id": "v", "instruction": "Open it", "start": {"route": "/"},
        "steps": [{"instruction": "Open it", "target": {"text": "DOE^JOHN"}}],
        "success": [{"kind": "ohif.route", "path": "^/viewer"}]})  # fmt: skip
    assert static_findings("ohif", viewer) == []


def test_offered_tools_that_delete_need_a_collateral_harm_rule() -> None:
    """A task the `orthanc` toolset can reach (its success reads Orthanc) is offered
    delete_study and delete_series under `--tools orthanc`: in OHIF too, whose viewer deletes
    nothing, such a task needs the rule."""
    from medspot.live.loop.task_audit import destructive_reach

    gone = {"kind": "orthanc.study_absent", "study": "CT-DOE-JOHN"}
    task = LiveTask.model_validate({
        "id": "tools", "instruction": "Delete the CT CHEST study of DOE^JOHN",
        "start": {"route": "/"}, "steps": [{"instruction": "x", "target": {"text": "x"}}],
        "success": [gone]})  # fmt: skip
    reach = destructive_reach("ohif", task)
    assert reach is not None and "delete_study, delete_series (--tools orthanc)" in reach
    assert [f.kind for f in static_findings("ohif", task)] == ["no_collateral_harm_rule"]
    gui = task.model_copy(update={"success": (CheckSpec.model_validate(
        {"kind": "ohif.route", "path": "^/viewer"}),)})  # fmt: skip
    assert destructive_reach("ohif", gui) is None  # GUI-only: no tools offered


def test_the_packaged_tasks_of_every_environment_have_their_collateral_harm_rule() -> None:
    from medspot.live.envs.registry import env_names
    from medspot.live.envs.taskfiles import env_task_file

    missing = [
        (env, f.task)
        for env in env_names()
        for t in env_task_file(env, None)[0].tasks
        for f in static_findings(env, t)
        if f.kind == "no_collateral_harm_rule"
    ]
    assert missing == []


def test_a_required_step_done_at_the_start_is_a_finding() -> None:
    required = TASK.model_copy(update={"requires": ("a",), "steps": (TASK.steps[0].model_copy(
        update={"name": "a", "done_if": TASK.success[0]}), TASK.steps[1])})  # fmt: skip

    def started(requires_each: list[bool]) -> ResumeState:
        oracle = _sound()
        at_start = {"success_each": [False, True], "fail_if_each": [False],
                    "requires_each": requires_each}  # fmt: skip
        oracle.last["t"] = oracle.last["t"].model_copy(update={"start_checks": at_start})
        return oracle

    assert kinds(started([False]), required) == set()
    found = judge_task(required, started([True]))
    assert [f.kind for f in found] == ["required_at_start"]
    assert "'a'" in found[0].message


def test_checks_that_do_not_read_the_right_end_state() -> None:
    """A success check (or a required step's done_if) that reads a text box instead of the
    applied value, or an annotation on no named image: static findings with their place; the
    same checks elsewhere (a typing step's done_if, a fail_if) are not."""
    typed = {"kind": "atspi.text", "after_label": "c:", "number": 120}
    task = LiveTask.model_validate({
        "id": "typed", "instruction": "Set the window centre to 120",
        "start": {"file": "CT-DOE-JOHN/AXIAL/3"},
        "steps": [{"instruction": "Type 120", "action": "type", "text": "120", "done_if": typed},
                  {"name": "enter", "instruction": "Press Enter", "action": "key", "key": "Enter",
                   "done_if": typed}],
        "requires": ["enter"], "success": [typed],
    })  # fmt: skip
    found = [(f.kind, f.message.split(" ")[0]) for f in audit_tasks("dicomscope", [task], SOUND)
             if f.kind == "unapplied_value"]  # fmt: skip
    assert found == [("unapplied_value", "success.0"), ("unapplied_value", "steps.1.done_if")]
    length = {"kind": "ohif.measurement", "from": "A", "to": "B", "series": "CT-DOE-JOHN/AXIAL"}
    measured = LiveTask.model_validate({
        "id": "m", "instruction": "Measure A to B on image 3", "start": {"route": "/"},
        "steps": [{"instruction": "Draw it", "action": "drag", "target": {"landmark": "A"},
                   "to": {"landmark": "B"}, "done_if": length}],
        "success": [length, {**length, "series": None, "position": 3, "keep": True},
                    {**length, "position": 3}, {**length, "present": False, "from": "C"}],
        "fail_if": [{**length, "series": "CT-DOE-JOAN/AXIAL", **LOSS}],
    })  # fmt: skip
    anchored = [f.message for f in audit_tasks("ohif", [measured], SOUND)
                if f.kind == "unanchored_annotation"]  # fmt: skip
    assert [m.split(" ")[0] for m in anchored] == ["success.0", "success.1"]
    assert "no 'position' or 'instance'" in anchored[0] and "no 'series'" in anchored[1]


def test_view_checks_without_their_series_and_counts_without_a_place() -> None:
    """A zoom (window, slice) read on whatever the viewer shows, and a measurement count that a
    ruler drawn anywhere satisfies, decide success: both reported with their place; the same
    checks in a fail_if, or a count the task's placed measurements cover, are not."""
    zoom = {"kind": "ohif.zoom", "min": 1.5}
    ab = {"kind": "ohif.measurement", "from": "A", "to": "B", "series": "CT-DOE-JOHN/AXIAL",
          "position": 1}  # fmt: skip
    task = LiveTask.model_validate({
        "id": "v", "instruction": "Zoom in and measure something",
        "start": {"route": "/viewer?StudyInstanceUIDs={study:CT-DOE-JOHN}"},
        "steps": [{"name": "zoom", "instruction": "Zoom", "action": "drag",
                   "target": {"at": [0.5, 0.3]}, "to": {"at": [0.5, 0.6]}, "done_if": zoom},
                  {"instruction": "Window", "target": {"data_cy": "WindowLevel-btn"},
                   "done_if": {"kind": "ohif.voi", "changed": True}}],
        "requires": ["zoom"],
        "success": [zoom, {"kind": "ohif.measurement_count", "min": 1},
                    {"kind": "ohif.slice_index", "position": 1,
                     "series": "CT-DOE-JOHN/AXIAL"}],
        "fail_if": [{"kind": "ohif.voi", "preset": "Bone", **LOSS}],
    })  # fmt: skip

    def found(t: LiveTask) -> list[tuple[str, str]]:
        return [(f.kind, f.message.split(" ")[0]) for f in audit_tasks("ohif", [t], SOUND)
                if f.kind in ("view_without_series", "unplaced_measurement")]  # fmt: skip

    assert found(task) == [("view_without_series", "success.0"),
                           ("view_without_series", "steps.0.done_if"),
                           ("unplaced_measurement", "success.1")]  # fmt: skip
    # the series named, and the measurement placed: nothing
    fixed = LiveTask.model_validate({**task.model_dump(exclude_defaults=True), "success": [
        {**zoom, "series": "CT-DOE-JOHN/AXIAL"}, {"kind": "ohif.measurement_count", "min": 1},
        ab], "steps": [{**task.steps[0].model_dump(exclude_defaults=True), "done_if": {
        **zoom, "series": "CT-DOE-JOHN/AXIAL"}}, task.steps[1].model_dump(exclude_defaults=True)],
    })  # fmt: skip
    assert found(fixed) == []
    # two measurements by count, one placed (twice: a required step's done_if and a success
    # check name the same one): the second may lie anywhere
    twice = LiveTask.model_validate({**fixed.model_dump(exclude_defaults=True), "success": [
        {"kind": "ohif.measurement_count", "count": 2}, ab], "steps": [
        {**task.steps[0].model_dump(exclude_defaults=True), "done_if": ab}]})  # fmt: skip
    messages = [f.message for f in audit_tasks("ohif", [twice], SOUND)
                if f.kind == "unplaced_measurement"]  # fmt: skip
    assert len(messages) == 1 and messages[0].startswith("success.0 (ohif.measurement_count)")
    assert "asks for 2 measurement(s) by their count alone" in messages[0]
    assert "place 1" in messages[0]


def test_the_packaged_tasks_have_no_static_finding() -> None:
    """Every packaged task of every environment, judged from its parameters alone (the oracle's
    dynamic rules: `tests/live/test_task_audit.py`): every OHIF view check names its series,
    every measurement count is covered by placed measurements."""
    from medspot.live.envs.registry import env_names
    from medspot.live.envs.taskfiles import env_task_file
    from medspot.live.loop.task_audit import static_findings

    found = []
    for env in env_names():
        tasks, _ = env_task_file(env)
        found += [f for t in tasks.tasks for f in static_findings(env, t)]
    assert found == []


def test_every_finding_and_check_kind_is_documented() -> None:
    from pathlib import Path

    from medspot.live.envs.registry import env_entry, env_names
    from medspot.live.loop.task_audit import FINDING_KINDS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "live.md").read_text()
    audit = doc[doc.index("## Audit") : doc.index("## Setup and doctor")]
    assert [k for k in FINDING_KINDS if f"| `{k}` |" not in audit] == []
    table = doc[doc.index("### Check kinds") : doc.index("### Process tasks")]
    kinds = {k for e in env_names() for k in env_entry(e).check_kinds}
    assert sorted(k for k in kinds if f"`{k}`" not in table) == []
