"""DICOMscope's tasks hold only on the right end state, on the real application: a typed window
centre counts once DICOMscope applied it (the status line), not when the digits are in the
field; "open image N" holds for image N only, whatever the Browser's selected row says."""

from __future__ import annotations

from typing import Any

import pytest

from medspot.live.core.actions import Click, Done, Key, TypeText
from medspot.live.core.episode import Episode, StepResult
from medspot.live.core.tasks import CheckSpec, Locator
from medspot.live.envs.taskfiles import env_task_file

pytestmark = pytest.mark.live

TASKS = {t.id: t for t in env_task_file("dicomscope")[0].tasks}
# the form docs/live.md gave for typed window-centre tasks: it reads the text field
TYPED_FIELD = CheckSpec(kind="atspi.text", after_label="c:", number=120, tol=0.01)
STATUS_LINE = CheckSpec(kind="atspi.text", contains="c/w:", equals="c/w: 40.0/400.0")


def _click(env: Any, double: bool = False, **locator: Any) -> Click:
    box = env.locate(Locator(**locator))
    assert box is not None, locator
    x, y = box.center
    return Click(x, y, double=double)


def _oracle(ep: Episode) -> StepResult:
    res = None
    while not ep.ended:
        action = ep.oracle_action()
        assert action is not None, ep.current_step
        res = ep.step(action)
    assert res is not None
    return res


def test_a_typed_window_centre_counts_once_applied(dicomscope_env: Any) -> None:
    env, task = dicomscope_env, TASKS["type-window-centre"]
    ep = Episode(env, task)
    ep.reset()
    for action in (_click(env, role="text", nth=1), Key("ctrl+a"), TypeText("120")):
        res = ep.step(action)
        assert not res.terminated, res.reason  # before: a success right after the typing
    # the digits are in the field, the application still shows its old window
    assert env.check(TYPED_FIELD) and env.check(STATUS_LINE)
    end = ep.step(Done())
    assert end.outcome == "failure" and end.reason == "done without success"
    # Enter applies it: the oracle's path succeeds
    ep.reset()
    res = _oracle(ep)
    assert res.outcome == "success", res.reason
    assert env.check(CheckSpec(kind="dicomscope.window", center=120, width=400))
    assert not env.check(STATUS_LINE)


def test_open_image_n_holds_for_image_n_only(dicomscope_env: Any) -> None:
    """Open image 4 instead of 3, then single-click row 3 in the Browser (it is selected) and
    go back to the Viewer: before, a success (the Viewer tab, the study and series expanded);
    now the viewer says it shows image 4."""
    env, task = dicomscope_env, TASKS["open-ct-doe-john-slice3"]
    image = CheckSpec(kind="dicomscope.image", image="CT-DOE-JOHN/AXIAL/3")
    ep = Episode(env, task)
    ep.reset()
    wrong: list[tuple[bool, dict[str, Any]]] = [
        (True, {"text": "Study DOE^JOHN, 04/02/1961 * CT CHEST"}),
        (True, {"text": "Series CT * Chest Axial 5mm"}),
        (True, {"role": "label", "text": "CT", "nth": 3}),  # image 4 opens in the Viewer
        (False, {"role": "page tab", "text": "Browser"}),
        (False, {"role": "label", "text": "CT", "nth": 2}),  # row 3: selected
        (False, {"role": "page tab", "text": "Viewer"}),
    ]
    for double, where in wrong:
        res = ep.step(_click(env, double=double, **where))
        assert not res.terminated, res.reason
    row3 = CheckSpec(kind="atspi.state", role="label", text="CT", nth=2, state="selected")
    assert env.check(row3)  # what the old checks could be fooled by
    assert all(env.check(c) for c in task.success if c.kind != "dicomscope.image")
    assert env.check(CheckSpec(kind="dicomscope.image", image="CT-DOE-JOHN/AXIAL/4"))
    assert not env.check(image)
    assert ep.step(Done()).outcome == "failure"
    ep.reset()
    assert not env.check(image)  # a Browser start shows no image
    assert _oracle(ep).outcome == "success" and env.check(image)


def test_every_open_image_task_checks_the_image() -> None:
    """Each packaged task whose path opens an image (a double-click on an image row) checks
    which image the viewer shows."""
    opens = [
        t for t in TASKS.values()
        if any(s.action == "double_click" and s.target is not None
               and (s.target.text or "").strip() in ("CT", "MR") for s in t.steps)
    ]  # fmt: skip
    assert len(opens) >= 10
    for t in opens:
        assert any(c.kind == "dicomscope.image" for c in t.success), t.id
