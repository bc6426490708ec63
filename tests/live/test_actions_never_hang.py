"""No action hangs: the same click twice and the same drag twice are executed and scored in
every environment (DICOMscope used to hang in `xdotool mousemove --sync` when the pointer was
already there), and a page whose script never yields is an environment fault within the
watchdog's limit, not a hang."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
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


def _stopped_driver(web: Any) -> int:
    """SIGSTOP the session's Playwright driver: from now on it answers no call (a hung driver,
    as seen under load: `new_page` never answered, even after chromium died)."""
    driver = web.driver_process
    assert driver is not None, "the session does not know its driver process"
    os.kill(driver.pid, signal.SIGSTOP)
    return int(driver.pid)


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return True  # a zombie: killed, not yet reaped
        time.sleep(0.05)
    return False


def test_a_call_blocked_in_the_driver_fails_once_the_watchdog_kills_it(tmp_path: Path) -> None:
    """Killing the browser does not end a call the driver never answers: the driver is killed
    `DRIVER_GRACE_S` later, and the call is an environment fault."""
    require_orthanc_stack()
    from medspot.live.drivers.web import DRIVER_GRACE_S, WebSession

    web = WebSession(tmp_path / "w", chromium=CHROMIUM, call_limit_s=2.0, settle_timeout_s=5.0)
    web.start()
    try:
        pid = _stopped_driver(web)
        t0 = time.monotonic()
        with pytest.raises(EnvironmentFault, match="did not return in time"):
            web.guard(web.page.title)
        took = time.monotonic() - t0
        assert 2.0 + DRIVER_GRACE_S - 1 < took < 2.0 + DRIVER_GRACE_S + 20, took
        assert _gone(pid, 5)
    finally:
        web.close()


def test_stopping_the_folder_ends_a_call_blocked_in_the_driver(tmp_path: Path) -> None:
    """A run stopped while an environment's thread is blocked in a Playwright call (a spare's
    `new_page`, say) stops its folder's processes: the driver is among them, and the blocked
    call fails at once instead of after the watchdog's minute. A session closed normally takes
    its driver out of the folder's record: the folder's cleanup leaves the thread's other
    session working."""
    require_orthanc_stack()
    from medspot.live.core import processes
    from medspot.live.drivers.web import WebSession

    pool = ThreadPoolExecutor(1)
    webs = [WebSession(tmp_path / n, chromium=CHROMIUM, call_limit_s=120.0) for n in "ab"]
    try:
        for w in webs:
            pool.submit(w.start).result(timeout=60)
        first, second = webs
        pool.submit(first.close).result(timeout=30)
        assert processes.stop_folder(first.workdir) == 0  # the driver is not first's any more
        assert pool.submit(second.guard, second.page.title).result(timeout=30) == ""
        pid = _stopped_driver(second)
        blocked = pool.submit(second.guard, second.page.title)
        time.sleep(1.0)
        assert not blocked.done()
        t0 = time.monotonic()
        assert processes.stop_folder(second.workdir) >= 2  # chromium and the driver
        with pytest.raises(EnvironmentFault):
            blocked.result(timeout=20)
        assert time.monotonic() - t0 < 10
        assert _gone(pid, 5)
    finally:
        for w in webs:
            pool.submit(w.close).result(timeout=60)
        pool.shutdown()
