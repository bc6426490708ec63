"""No action hangs: the same click twice and the same drag twice are executed and scored in
every environment (DICOMscope used to hang in `xdotool mousemove --sync` when the pointer was
already there), and a page whose script never yields is an environment fault within the
watchdog's limit, not a hang."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from _desktop_support import dicomscope_tasks
from _orthanc_support import CHROMIUM, require_orthanc_stack

from medspot.live.core.actions import Click, Drag, LiveAction
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.episode import Episode, StepResult
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.envs.taskfiles import load_task_file

pytestmark = pytest.mark.live

ENVS = Path(__file__).parents[2] / "src" / "medspot" / "live" / "envs"
ORTHANC_EXPLORER_TASKS = ENVS / "orthanc_explorer" / "tasks" / "orthanc_explorer.json"
OHIF_TASKS = ENVS / "ohif" / "tasks" / "ohif.json"


def _each_twice(env: Any, task: LiveTask, actions: list[LiveAction]) -> list[StepResult]:
    """Every action twice in a row through `Episode` (the runner's step), budget permitting."""
    ep = Episode(env, task.model_copy(update={"max_steps": 2 * len(actions) + 1}))
    ep.reset()
    results = []
    for action in actions:
        for _ in range(2):
            res = ep.step(action)
            results.append(res)
            assert res.executed and res.changed is not None and res.settle_s is not None
            if res.terminated or res.truncated:
                return results
    return results


def test_dicomscope_repeats_a_click_and_a_drag(dicomscope_env: Any) -> None:
    env = dicomscope_env
    task = {t.id: t for t in dicomscope_tasks()}["invert-and-zoom-1to1"]
    env.reset(task)
    invert = env.locate(Locator(description="Invert"))
    assert invert is not None
    inverted = CheckSpec(kind="atspi.state", description="Invert", state="checked")
    results = _each_twice(env, task, [Click(*invert.center), Drag(300, 300, 500, 320)])
    assert len(results) == 4
    assert [r.changed for r in results[:2]] == [True, True]  # on, then off again
    assert not env.check(inverted)
    assert results[1].element is not None and results[1].element.role == "toggle button"
    # a drag that starts where the pointer is (the end of the last one), and one of no length
    env.act(Drag(500, 320, 300, 300))
    env.act(Drag(300, 300, 300, 300))


def test_orthanc_explorer_repeats_a_click_and_a_drag(orthanc_env: Any) -> None:
    env = orthanc_env
    tasks = {t.id: t for t in load_task_file(ORTHANC_EXPLORER_TASKS).tasks}
    task = tasks["open-study-ct-doe-john"]
    env.reset(task)
    row = env.locate(Locator(css="#all-patients li", contains="MS0002"))  # not the task's
    assert row is not None
    results = _each_twice(env, task, [Click(*row.center), Drag(200, 700, 600, 700)])
    assert len(results) == 4 and not any(r.success for r in results)
    assert results[0].changed  # the first click opened the patient


def test_ohif_repeats_a_click_and_a_drag(ohif_env: Any) -> None:
    env = ohif_env
    task = {t.id: t for t in load_task_file(OHIF_TASKS).tasks}["wl-drag-ct-doe-joan"]
    env.reset(task)
    p, q = env.locate(Locator(at=(0.3, 0.3))), env.locate(Locator(at=(0.4, 0.35)))
    assert p is not None and q is not None
    voi0 = env.state()["viewports"][0]["voi"]
    results = _each_twice(env, task, [Click(*p.center), Drag(*p.center, *q.center)])
    assert len(results) >= 3
    assert env.state()["viewports"][0]["voi"] != voi0  # the drags did act


def test_a_page_that_never_yields_is_a_fault_not_a_hang(tmp_path: Path) -> None:
    require_orthanc_stack()
    from medspot.live.drivers.web import WebSession

    web = WebSession(tmp_path / "w", chromium=CHROMIUM, call_limit_s=5.0, settle_timeout_s=5.0)
    web.start()
    try:
        web.guard(
            web.page.set_content,
            "<button style='width:300px;height:200px' "
            "onclick='setTimeout(() => { for (;;) {} }, 10)'>loop</button>",
        )
        t0 = time.monotonic()
        with pytest.raises(EnvironmentFault, match="did not return in time"):
            web.act(Click(100, 100))
            web.act(Click(100, 100))
        assert time.monotonic() - t0 < 60  # bounded by the watchdog, not by a test timeout
        with pytest.raises(EnvironmentFault):
            web.observe()
    finally:
        web.close()
