"""The dicomscope environment on the real application (DICOMscope under Xvfb, AT-SPI through
the Java ATK wrapper): boxes where clicks land, a wrong click, a killed application, two
environments side by side (the oracle through every packaged task is
`tests/live/test_task_audit.py`: `medspot live audit`)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from _desktop_support import dicomscope_tasks, require_dicomscope

from medspot.live.core.actions import Click
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.tasks import CheckSpec, Locator

pytestmark = pytest.mark.live

TASKS = dicomscope_tasks()
BY_ID = {t.id: t for t in TASKS}


def test_task_file_is_big_enough() -> None:
    assert len(TASKS) >= 10
    assert all(2 <= len(t.steps) <= 6 for t in TASKS)
    assert all(
        s.instruction and (s.target or s.action in ("type", "key")) for t in TASKS for s in t.steps
    )
    assert {t.start.file is None for t in TASKS} == {True, False}  # browser and viewer starts
    assert sum(bool(t.requires) for t in TASKS) >= 1  # a process task
    assert sum(bool(t.start.prepare) for t in TASKS) >= 2  # starts with a mode already on


def test_observation_has_the_viewport_size(dicomscope_env: Any) -> None:
    obs = dicomscope_env.reset(BY_ID["invert-and-zoom-1to1"])
    assert (obs.width, obs.height) == (1280, 800) == dicomscope_env.viewport
    from io import BytesIO

    from PIL import Image

    assert Image.open(BytesIO(obs.png)).size == (1280, 800)
    assert obs.title and obs.title.startswith("DICOMscope")


def test_click_on_a_located_button_changes_its_state(dicomscope_env: Any) -> None:
    env = dicomscope_env
    env.reset(BY_ID["invert-and-zoom-1to1"])
    inverted = CheckSpec(kind="atspi.state", description="Invert", state="checked")
    assert not env.check(inverted)
    box = env.locate(Locator(description="Invert"))
    assert box is not None and 20 <= box.x2 - box.x1 <= 40  # an icon button, not a panel
    x, y = box.center
    el = env.element_at(x, y)
    assert el is not None and el.role == "toggle button" and el.box.contains(x, y)
    env.act(Click(x, y))
    assert env.check(inverted)
    # a point just outside the button is another element, and a click there does not toggle it
    el2 = env.element_at(box.x1 - 3, y)
    assert el2 is None or el2.key != el.key


def test_a_wrong_click_leaves_the_task_unsolved(dicomscope_env: Any) -> None:
    env = dicomscope_env
    task = BY_ID["invert-and-zoom-1to1"]
    env.reset(task)
    wrong = env.locate(Locator(description="Flip"))  # the neighbour of Invert
    assert wrong is not None
    env.act(Click(*wrong.center))
    assert not all(env.check(c) for c in task.success)
    assert any(env.check(c) for c in task.fail_if)
    # and the next reset brings the start state back (Flip off again)
    env.reset(task)
    assert not any(env.check(c) for c in task.fail_if)


def test_killing_the_application_is_an_environment_fault(tmp_path: Path, seed_cache: Path) -> None:
    require_dicomscope()
    from medspot.live.envs.registry import create_environment

    env = create_environment("dicomscope", workdir=tmp_path / "k", seed_cache=seed_cache)
    env.start()
    try:
        task = BY_ID["preset-lung"]
        env.reset(task)
        assert task.steps[0].target is not None
        box = env.locate(task.steps[0].target)
        assert box is not None
        os.killpg(env._app.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        env._app.wait(10)  # type: ignore[attr-defined]
        with pytest.raises(EnvironmentFault):
            env.act(Click(*box.center))
        with pytest.raises(EnvironmentFault):
            env.observe()
    finally:
        env.close()


def test_two_environments_side_by_side(
    dicomscope_env: Any, tmp_path: Path, seed_cache: Path
) -> None:
    from medspot.live.envs.registry import create_environment

    other = create_environment("dicomscope", workdir=tmp_path / "two", seed_cache=seed_cache)
    other.start()
    try:
        assert other.x11.display != dicomscope_env.x11.display  # type: ignore[attr-defined]
        task = BY_ID["invert-and-zoom-1to1"]
        dicomscope_env.reset(task)
        other.reset(task)
        box = other.locate(Locator(description="Invert"))
        assert box is not None
        other.act(Click(*box.center))
        inverted = CheckSpec(kind="atspi.state", description="Invert", state="checked")
        assert other.check(inverted)
        assert not dicomscope_env.check(inverted)  # the click went to its own display only
    finally:
        other.close()


def test_drag_pans_only_on_the_scroll_bar(dicomscope_env: Any) -> None:
    """The drag action is a real press-move-release: on the knob it pans, on the image (no tool
    selected) it leaves the scroll position alone."""
    from medspot.live.core.actions import Drag, Key, TypeText

    env = dicomscope_env
    task = BY_ID["zoom4-pan-right-drag"]
    panned = task.success[1]
    env.reset(task)
    field = env.locate(task.steps[0].target)
    assert field is not None
    for action in (Click(*field.center), Key("ctrl+a"), TypeText("4"), Key("Enter")):
        env.act(action)
    env.act(Drag(300, 300, 600, 300))  # on the image
    assert not env.check(panned)
    knob, to = env.locate(task.steps[-1].target), env.locate(task.steps[-1].to)
    assert knob is not None and to is not None
    env.act(Drag(*knob.center, *to.center))
    assert env.check(panned)
