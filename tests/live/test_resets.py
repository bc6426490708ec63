"""A reset restores the task's start state whatever the task before did, in every environment,
on the real applications: every mode and preset an environment has is changed (and a menu, a
dialog, another page, a download left behind), then the reset's observable state (the widget
states and texts through AT-SPI, the viewer state that the checks read, the database, the
screenshot) is compared with a fresh environment's after the same reset.

The fresh reference is each environment's first reset after `start()`, before any action: that
is exactly a fresh environment's reset (a second environment per test would double the cost).

The same holds for a runner slot's spare (`seats.SlotSeats`): an instance that ran a task, was
reset for a later one in the background while its twin ran the task between, and was swapped
in, shows what a fresh instance shows after the same reset.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _desktop_support import dicomscope_tasks, require_dicomscope
from _orthanc_support import CHROMIUM, require_orthanc_stack
from PIL import Image

from medspot.live.core.actions import Click, Drag, Key, TypeText
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.drivers.atspi import state_diff
from medspot.live.drivers.x11 import CARET_PIXELS
from medspot.live.envs.registry import create_environment
from medspot.live.envs.taskfiles import load_task_file
from medspot.live.loop.executors.seats import SlotSeats

pytestmark = pytest.mark.live

ENVS = Path(__file__).parents[2] / "src" / "medspot" / "live" / "envs"
ORTHANC_EXPLORER_TASKS = ENVS / "orthanc_explorer" / "tasks" / "orthanc_explorer.json"
OHIF_TASKS = ENVS / "ohif" / "tasks" / "ohif.json"


def _click(env: Any, **loc: Any) -> None:
    box = env.locate(Locator(**loc))
    assert box is not None, f"{loc} not on screen"
    env.act(Click(*box.center))


def _pixels(png: bytes) -> np.ndarray[Any, Any]:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


# chromium's text antialiasing varies by a few levels between two loads of the same page: a
# pixel differs when a channel differs by more than this (a line, a VOI change: far more)
WEB_LEVELS = 32


def _differing(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> int:
    assert a.shape == b.shape
    d = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2)
    return int(np.count_nonzero(d > WEB_LEVELS))


def _where(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> str:
    """Where two screenshots differ (for the assertion message), and the two images saved."""
    ys, xs = np.nonzero(np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2) > WEB_LEVELS)
    if not len(xs):
        return "nowhere"
    Image.fromarray(a).save("/tmp/medspot-reset-fresh.png")
    Image.fromarray(b).save("/tmp/medspot-reset-after.png")
    return f"x {xs.min()}-{xs.max()}, y {ys.min()}-{ys.max()}"


@contextmanager
def _seats(env: str, root: Path, **options: Any) -> Iterator[tuple[SlotSeats, Callable[..., Any]]]:
    """A slot's two instances (`SlotSeats`, spares on) and a function that calls on the active
    one's thread (where its browser session lives)."""
    n = iter(range(100))
    pair = SlotSeats(
        "reset-test", lambda wd: create_environment(env, workdir=wd, **options),
        lambda: root / f"i{next(n)}", env_name=env, spares=None, timeout_s=300,
    )  # fmt: skip

    def on(fn: Callable[..., Any], *args: Any) -> Any:
        return pair.run(pair.active, fn, *args)

    try:
        yield pair, on
    finally:
        pair.close()


def _swap(pair: SlotSeats, task: LiveTask, n: int) -> Any:
    """Prepare the spare for `task` in the background, then swap it in; its instance. The
    first observation it gives is what the screen shows."""
    pair.prepare([(task, (task.id, n))], "guided")
    assert pair.wait_prepared(300), "the spare did not get ready"
    begun = pair.begin(task, "guided", (task.id, n))
    assert begun.swapped
    env = begun.episode.env
    now = _pixels(pair.run(pair.active, env.observe).png)
    first = _pixels(begun.observation.png)
    assert _differing(first, now) <= CARET_PIXELS, _where(first, now)
    return env


# -- DICOMscope ------------------------------------------------------------------------------


def _dicomscope_changes(env: Any) -> None:
    """Every mode and preset of the viewer changed, and a menu left open."""
    for tip in ("Invert", "Flip"):
        _click(env, description=tip)
    _click(env, role="radio button", text="Magnify")
    _click(env, role="check box", text="Filled")
    _click(env, role="text", nth=0)  # the zoom factor
    for action in (Key("ctrl+a"), TypeText("4"), Key("Enter")):
        env.act(action)
    _click(env, description="Presets")
    _click(env, role="menu item", contains="Lung")
    _click(env, description="Presets")  # its menu stays open


def test_dicomscope_reset_restores_the_fresh_state(tmp_path: Path, seed_cache: Path) -> None:
    require_dicomscope()
    tasks = {t.id: t for t in dicomscope_tasks()}
    on_image, in_browser = tasks["invert-and-zoom-1to1"], tasks["open-ct-doe-john-slice3"]
    env: Any = create_environment("dicomscope", workdir=tmp_path / "d", seed_cache=seed_cache)
    env.start()
    try:
        env.reset(in_browser)
        fresh_browser = env.observable_state()
        env.reset(on_image)
        fresh_image = env.observable_state()
        assert env.restarts == 0

        _dicomscope_changes(env)
        changed = env.observable_state()
        assert state_diff(fresh_image[0], changed[0]), "the changes changed nothing"
        env.reset(on_image)
        state, frame = env.observable_state()
        assert state_diff(fresh_image[0], state) == []
        assert env.screen_diff(fresh_image[1], frame) <= CARET_PIXELS

        _dicomscope_changes(env)
        env.reset(in_browser)  # the viewer holds a changed image: not a fresh browser start
        assert env.restarts == 1  # so DICOMscope was restarted
        state, frame = env.observable_state()
        assert state_diff(fresh_browser[0], state) == []
        assert env.screen_diff(fresh_browser[1], frame) <= CARET_PIXELS
        # and a task on an image after it starts as fresh too
        env.reset(on_image)
        state, frame = env.observable_state()
        assert state_diff(fresh_image[0], state) == []
    finally:
        env.close()


def test_dicomscope_swapped_in_spares_are_fresh(tmp_path: Path, seed_cache: Path) -> None:
    require_dicomscope()
    tasks = {t.id: t for t in dicomscope_tasks()}
    on_image, in_browser = tasks["invert-and-zoom-1to1"], tasks["open-ct-doe-john-slice3"]
    with _seats("dicomscope", tmp_path, seed_cache=seed_cache) as (pair, on):
        a: Any = pair.begin(on_image, "guided", (on_image.id, 0)).episode.env
        fresh_image = on(a.observable_state)
        on(_dicomscope_changes, a)
        b = _swap(pair, in_browser, 1)  # a second DICOMscope, started meanwhile
        fresh_browser = on(b.observable_state)
        # the changed instance, reset for an image while the browser task ran
        assert _swap(pair, on_image, 2) is a
        state, frame = on(a.observable_state)
        assert state_diff(fresh_image[0], state) == []
        assert a.screen_diff(fresh_image[1], frame) <= CARET_PIXELS
        on(_dicomscope_changes, a)
        assert _swap(pair, in_browser, 3) is b
        # the changed instance again, now for a browser start: restarted in the background
        assert _swap(pair, in_browser, 4) is a and a.restarts == 1
        state, frame = on(a.observable_state)
        assert state_diff(fresh_browser[0], state) == []
        assert a.screen_diff(fresh_browser[1], frame) <= CARET_PIXELS
        assert pair.spare_faults == 0


# -- OHIF ------------------------------------------------------------------------------------


def _ohif_observed(env: Any) -> tuple[dict[str, Any], np.ndarray[Any, Any], Any]:
    return env.state(), _pixels(env.observe().png), env.web.eval("history.length")


def _ohif_changes(env: Any) -> None:
    """A measurement (the Length tool left active), zoom, VOI, the measurement panel, a layout."""
    _click(env, data_cy="Length-btn")
    a, b = env.locate(Locator(landmark="A")), env.locate(Locator(landmark="B"))
    assert a is not None and b is not None
    env.act(Drag(*a.center, *b.center))
    _click(env, data_cy="Zoom-btn")
    p, q = env.locate(Locator(at=(0.5, 0.3))), env.locate(Locator(at=(0.5, 0.6)))
    env.act(Drag(*p.center, *q.center))
    _click(env, data_cy="WindowLevel-btn")
    p, q = env.locate(Locator(at=(0.4, 0.5))), env.locate(Locator(at=(0.7, 0.7)))
    env.act(Drag(*p.center, *q.center))
    _click(env, data_cy="trackedMeasurements-btn")
    _click(env, data_cy="layout-button")
    _click(env, data_cy="Layout-1-0")
    _click(env, data_cy="Zoom-btn")  # another tool than the default left active


def test_ohif_reset_restores_the_fresh_state(tmp_path: Path, seed_cache: Path) -> None:
    from test_ohif_env import require_ohif_stack

    require_ohif_stack()
    tasks = {t.id: t for t in load_task_file(OHIF_TASKS).tasks}
    task: LiveTask = tasks["measure-ab-ct-doe-john"]
    env: Any = create_environment(
        "ohif",
        workdir=tmp_path / "o",
        chromium=CHROMIUM,
        seed_cache=seed_cache,
        reuse_document=True,
    )
    env.start()
    try:
        env.reset(task)
        fresh_state, fresh_png, fresh_history = _ohif_observed(env)
        assert fresh_state["measurements"] == [] and fresh_state["layout"] == [1, 1]
        _ohif_changes(env)
        changed = env.state()
        assert changed["measurements"] and changed["layout"] == [1, 2]
        assert changed["viewports"][0]["voi"] != fresh_state["viewports"][0]["voi"]
        assert changed["viewports"][0]["zoom"] != fresh_state["viewports"][0]["zoom"]
        env.reset(task)
        # the history is still at its first entry: the reset stayed in the open document
        assert "reused" in env.reset_phases, env.reset_phases
        state, png, history = _ohif_observed(env)
        assert state == fresh_state
        assert history == fresh_history
        assert len(env.web.context.pages) == 1
        assert _differing(fresh_png, png) <= CARET_PIXELS, _where(fresh_png, png)
        # the study list opened from the viewer (the router's history grows): a new page
        _click(env, data_cy="return-to-work-list")
        env.reset(task)
        assert "reloaded" in env.reset_phases, env.reset_phases
        state, png, history = _ohif_observed(env)
        assert state == fresh_state and history == fresh_history
        assert _differing(fresh_png, png) <= CARET_PIXELS, _where(fresh_png, png)
    finally:
        env.close()


def test_ohif_swapped_in_spare_is_fresh(tmp_path: Path, seed_cache: Path) -> None:
    from test_ohif_env import require_ohif_stack

    require_ohif_stack()
    tasks = {t.id: t for t in load_task_file(OHIF_TASKS).tasks}
    task, other = tasks["measure-ab-ct-doe-john"], tasks["open-ct-doe-john"]
    with _seats("ohif", tmp_path, chromium=CHROMIUM, seed_cache=seed_cache) as (pair, on):
        a: Any = pair.begin(task, "guided", (task.id, 0)).episode.env
        fresh_state, fresh_png, fresh_history = on(_ohif_observed, a)
        on(_ohif_changes, a)
        assert on(a.state)["measurements"]
        assert _swap(pair, other, 1) is not a
        assert _swap(pair, task, 2) is a  # the changed instance, reset while `other` ran
        state, png, history = on(_ohif_observed, a)
        assert state == fresh_state and history == fresh_history
        assert _differing(fresh_png, png) <= CARET_PIXELS, _where(fresh_png, png)
        assert pair.spare_faults == 0


# -- Orthanc Explorer ------------------------------------------------------------------------


def _explorer_observed(env: Any) -> dict[str, Any]:
    o = env.orthanc
    patients = sorted(o.get("/patients") or [])
    return {
        "url": env.web.page.url,
        "title": env.observe().title,
        "pages": len(env.web.context.pages),
        "history": env.web.eval("history.length"),
        "downloads": list(env.web.downloads),
        "patients": patients,
        "protected": [o.get(f"/patients/{p}/protected") for p in patients],
        "instances": sorted(o.get("/instances") or []),
        "jobs": o.get("/jobs"),
        "active_page": env.web.eval(
            "() => { const m = window.jQuery && jQuery.mobile;"
            " return m && m.activePage ? m.activePage.attr('id') : null; }"
        ),
        "ok_button": env.locate(Locator(text="OK")) is not None,
        "screen": _pixels(env.observe().png),
    }


def _same(fresh: dict[str, Any], now: dict[str, Any]) -> None:
    for key in fresh:
        if key == "screen":
            assert _differing(fresh[key], now[key]) <= CARET_PIXELS, _where(fresh[key], now[key])
        else:
            assert now[key] == fresh[key], key


def test_orthanc_explorer_reset_restores_the_fresh_state(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    tasks = {t.id: t for t in load_task_file(ORTHANC_EXPLORER_TASKS).tasks}
    task = tasks["open-study-ct-doe-john"]
    env: Any = create_environment(
        "orthanc-explorer", workdir=tmp_path / "e", chromium=CHROMIUM, seed_cache=seed_cache
    )
    env.start()
    try:
        env.reset(task)
        fresh = _explorer_observed(env)
        # another page of the Explorer, a download, the Web Viewer's page opened beside it,
        # and a protected patient
        _click(env, css="#all-patients li", contains="MS0001")
        _click(env, css="#list-studies li", contains="CT CHEST")
        _click(env, css="#study-archive")
        assert env.web.downloads
        _click(env, css="#list-series li", contains="Chest Axial 5mm")
        _click(env, text="Orthanc Web Viewer")
        assert len(env.web.context.pages) == 2
        pid = env.ids.patients["DOE^JOHN"]
        env.orthanc.request("PUT", f"/patients/{pid}/protected", b"1", "text/plain")
        env.reset(task)
        _same(fresh, _explorer_observed(env))
        # the delete dialog left open (not confirmed)
        _click(env, css="#all-patients li", contains="MS0001")
        _click(env, css="#list-studies li", contains="CT CHEST")
        _click(env, css="#study-delete")
        assert env.locate(Locator(text="OK")) is not None  # the dialog asks
        assert not fresh["ok_button"]
        env.reset(task)
        _same(fresh, _explorer_observed(env))
    finally:
        env.close()


def test_orthanc_explorer_swapped_in_spare_is_fresh(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    tasks = {t.id: t for t in load_task_file(ORTHANC_EXPLORER_TASKS).tasks}
    task, other = tasks["open-study-ct-doe-john"], tasks["delete-patient-doe-joan"]
    with _seats("orthanc-explorer", tmp_path, chromium=CHROMIUM, seed_cache=seed_cache) as (
        pair,
        on,
    ):
        a: Any = pair.begin(task, "guided", (task.id, 0)).episode.env
        fresh = on(_explorer_observed, a)
        on(_explorer_mess, a)
        assert _swap(pair, other, 1) is not a
        assert _swap(pair, task, 2) is a  # the changed instance, reset while `other` ran
        _same(fresh, on(_explorer_observed, a))
        assert pair.spare_faults == 0


def _explorer_mess(env: Any) -> None:
    """Another page, a download, the Web Viewer beside it, a protected patient, a deleted one."""
    _click(env, css="#all-patients li", contains="MS0001")
    _click(env, css="#list-studies li", contains="CT CHEST")
    _click(env, css="#study-archive")
    _click(env, css="#list-series li", contains="Chest Axial 5mm")
    _click(env, text="Orthanc Web Viewer")
    pid = env.ids.patients["DOE^JOHN"]
    env.orthanc.request("PUT", f"/patients/{pid}/protected", b"1", "text/plain")
    env.orthanc.request("DELETE", f"/patients/{env.ids.patients['DOE^JOAN']}")


# -- InVesalius --------------------------------------------------------------------------------


def _wait_for(env: Any, ready: Any, what: str, seconds: float = 30) -> None:
    """Polls the application's state until `ready(state)`; fails naming `what` otherwise."""
    deadline = time.monotonic() + seconds
    state, _ = env.observable_state()
    while not ready(state):
        assert time.monotonic() < deadline, f"not {what} after {seconds} s: {state}"
        time.sleep(0.5)
        state, _ = env.observable_state()


def _invesalius_changes(env: Any) -> None:
    """The editing tools' settings changed (brush size and operation, region growing in 3D),
    a measurement drawn, a surface built, a window preset, the measures tab, the axial view
    enlarged and the task panel hidden, a context menu left open."""
    _click(env, role="caption", text="Manual edition", at=(0.96, 0.5))
    _click(env, role="spin button", description="Brush size")
    for action in (Key("ctrl+a"), TypeText("12"), Key("Tab")):
        env.act(action)
    _click(env, role="combo box", text="Threshold", at=(0.9, 0.5))
    _click(env, role="menu item", text="Erase")
    env.act(Key("ctrl+shift+g"))
    _click(env, role="radio button", text="3D - All slices")
    _click(env, role="push button", text="Close")
    _wait_for(env, lambda s: not s["dialogs"], "the region-growing dialog closed")
    _click(env, role="push button", text="Create surface")
    # the surface is built in the background (under load, a minute or more)
    _wait_for(env, lambda s: bool(s["surfaces"]), "a surface built", seconds=180)
    _click(env, role="tool", description="Measure distance")
    a, b = (
        env.locate(Locator(landmark="axial:lesion.left")),
        env.locate(Locator(landmark="axial:lesion.right")),
    )
    assert a is not None and b is not None
    env.act(Click(*a.center))
    env.act(Click(*b.center))
    _click(env, role="page tab", text="Measures")
    _click(env, role="push button", description="Maximize Axial slice")
    _click(env, role="tool", description="Hide task panel")
    view = env.locate(Locator(role="view", text="axial", at=(0.8, 0.2)))
    assert view is not None
    x, y = view.center
    env.act(Click(x, y, button="right"))
    _click(env, role="menu", text="Window width and level")
    _click(env, role="radio menu item", text="Bone")
    env.act(Click(x, y, button="right"))  # and its menu left open


def test_invesalius_reset_and_swapped_in_spare_restore_the_fresh_state(tmp_path: Path) -> None:
    """One slot's two InVesalius (spares on): the changed instance is reset for the task again
    in the background, in the running InVesalius, while its twin starts `other`, and swapped
    in; then resets in place; then a change the reset cannot undo means a fresh InVesalius."""
    from _invesalius_support import invesalius_tasks, require_invesalius

    require_invesalius()
    tasks = invesalius_tasks()
    task, other = tasks["measure-lesion-axial"], tasks["paint-into-right-mask"]
    with _seats("invesalius", tmp_path) as (pair, on):
        env: Any = pair.begin(task, "guided", (task.id, 0)).episode.env
        fresh_state, fresh_frame = on(env.observable_state)
        on(_invesalius_changes, env)
        changed, _ = on(env.observable_state)
        assert changed["measures"] and changed["surfaces"] and changed["window"] != [400.0, 50.0]
        assert _swap(pair, other, 1) is not env
        assert _swap(pair, task, 2) is env  # the changed instance, reset while `other` ran
        assert (env.restarts, env.swaps) == (0, 0)  # in the running InVesalius
        assert "reset_ui" in env.reset_phases and env.last_reset["reset_s"] < 60
        state, frame = on(env.observable_state)
        assert state == fresh_state
        assert _differing(fresh_frame, frame) <= CARET_PIXELS, _where(fresh_frame, frame)
        assert pair.spare_faults == 0
        # another task's start, then this one's again, in place
        on(env.reset, other)
        on(env.reset, task)
        state, frame = on(env.observable_state)
        assert state == fresh_state
        assert _differing(fresh_frame, frame) <= CARET_PIXELS, _where(fresh_frame, frame)
        # what the reset cannot bring back (the main window resized: there is no window
        # manager to do it, so it stands for any change outside the application's settings)
        # means a fresh InVesalius
        inst = env.inst
        inst.x11.xdotool("windowsize", inst.desktop.window, "1000", "700")
        on(env.reset, task)
        assert env.restarts + env.swaps == 1
        state, frame = on(env.observable_state)
        assert state == fresh_state
        assert _differing(fresh_frame, frame) <= CARET_PIXELS, _where(fresh_frame, frame)
