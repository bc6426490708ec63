"""The `ohif` environment on the real stack: a real Orthanc, the pinned OHIF Viewer served by
the harness, real chromium with SwiftShader WebGL. One environment per module (a viewer load
is seconds of CPU); skipped when a part is missing unless MEDSPOT_REQUIRE_LIVE=1."""

from __future__ import annotations

import http.client
import json
import math
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import require_live, require_orthanc_stack

from medspot.live.core.actions import Click, Drag
from medspot.live.core.tasks import CheckSpec, LiveTask, LiveTaskFile, Locator
from medspot.live.envs.taskfiles import load_task_file

pytestmark = pytest.mark.live

TASKS = (
    Path(__file__).parents[2] / "src" / "medspot" / "live" / "envs" / "ohif" / "tasks" / "ohif.json"
)


def require_ohif_stack() -> None:
    from medspot.live.envs.ohif.package import installed_dist

    require_orthanc_stack()
    require_live(installed_dist() is not None, "the OHIF viewer (medspot live setup --env ohif)")


@pytest.fixture(scope="module")
def tasks() -> LiveTaskFile:
    return load_task_file(TASKS)


def _task(tasks: LiveTaskFile, task_id: str) -> LiveTask:
    return next(t for t in tasks.tasks if t.id == task_id)


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, dict(resp.headers.items()), resp.read()


def test_server_serves_the_viewer_and_forwards_dicomweb(ohif_env: Any, tasks: LiveTaskFile) -> None:
    base = ohif_env.url
    status, headers, body = _get(base + "/")
    assert status == 200 and b"app-config.js" in body
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert _get(base + "/viewer/some/deep/route?x=1")[2] == body  # the router's fallback
    config = _get(base + "/app-config.js")[2].decode()
    assert f'"qidoRoot": "{base}/dicom-web"' in config and '"option": "never"' in config
    bundle = next(p.name for p in ohif_env.server.dist.glob("app.bundle.*.js"))
    assert "immutable" in _get(f"{base}/{bundle}")[1]["Cache-Control"]
    conn = http.client.HTTPConnection("127.0.0.1", ohif_env.server.port, timeout=10)
    conn.request("GET", "/../../../../etc/passwd")  # never outside dist/
    assert b"root:" not in conn.getresponse().read()
    conn.close()
    # QIDO through the same origin, with the viewer's comma form of includefield
    _, _, qido = _get(base + "/dicom-web/studies?includefield=00081030,00080060")
    studies = json.loads(qido)
    assert len(studies) == len(ohif_env.seed.catalogue.studies())
    descs = {s["00081030"]["Value"][0] for s in studies}
    assert {"CT CHEST", "MR BRAIN", "CT ABDOMEN"} <= descs
    assert all(s["00081190"]["Value"][0].startswith(base + "/dicom-web/") for s in studies)
    ohif_env.reset(_task(tasks, "open-ct-doe-john"))  # the study list, in the browser
    assert ohif_env.web.eval("crossOriginIsolated") is True
    text = ohif_env.web.eval("document.body.innerText")
    for p in ohif_env.seed.catalogue.patients:  # DOE^JOHN is shown as "DOE, JOHN"
        assert p.name.replace("^", ", ") in text
    assert "CT ABDOMEN" in text  # descriptions (Orthanc answers only the split includefield)


def test_tour_is_disabled(ohif_env: Any, tasks: LiveTaskFile) -> None:
    task = _task(tasks, "measure-ab-ct-doe-john")
    ohif_env.reset(task)
    tour = "() => !!document.querySelector('.shepherd-element')"
    assert ohif_env.web.eval(tour) is False
    assert ohif_env.locate(Locator(text="Skip all")) is None
    # without the viewer's own "tour shown" flag the tour does come up on this route ...
    page = ohif_env.web.page
    page.evaluate("() => localStorage.removeItem('shownTours')")
    page.add_init_script("localStorage.removeItem('shownTours')")
    try:
        page.reload(wait_until="load")
        page.wait_for_selector(".shepherd-element", timeout=90_000)
        assert ohif_env.locate(Locator(text="Skip all")) is not None
    finally:
        ohif_env.web.new_context()  # drops the page's own init script; the next reset loads
    # ... and a reset takes it away again
    ohif_env.reset(task)
    assert ohif_env.web.eval(tour) is False


def test_task_file_is_big_enough(tasks: LiveTaskFile) -> None:
    """(The oracle through every task: `tests/live/test_task_audit.py`.)"""
    assert len(tasks.tasks) >= 20
    assert all(2 <= len(t.steps) <= 6 for t in tasks.tasks)
    assert sum(any(s.action == "drag" for s in t.steps) for t in tasks.tasks) >= 10
    assert sum(bool(t.requires) for t in tasks.tasks) >= 1  # a process task
    assert sum(bool(t.start.prepare) for t in tasks.tasks) >= 2  # prepared starts


def _screen_mm(env: Any) -> float:
    """Screen pixels per mm on the active viewport (from the A-B landmark distance)."""
    a, b = env.locate(Locator(landmark="A")), env.locate(Locator(landmark="B"))
    series = env.seed.catalogue.series("CT-DOE-JOHN/AXIAL")
    return float(math.dist(a.center, b.center) / (128 * series.pixel_spacing))


def test_a_drag_between_the_wrong_points_fails(ohif_env: Any, tasks: LiveTaskFile) -> None:
    task = _task(tasks, "measure-ab-ct-doe-john")
    want = task.success
    count1 = CheckSpec(kind="ohif.measurement_count", count=1)
    ohif_env.reset(task)
    ohif_env.act(Click(*ohif_env.locate(Locator(data_cy="Length-btn")).center))
    a, c = ohif_env.locate(Locator(landmark="A")), ohif_env.locate(Locator(landmark="C"))
    ohif_env.act(Drag(a.center[0], a.center[1], c.center[0], c.center[1]))  # A to C, not B
    assert ohif_env.check(count1)
    assert ohif_env.check(CheckSpec(kind="ohif.measurement", **{"from": "A", "to": "C"}))
    assert not any(ohif_env.check(s) for s in want)
    # close, but 8 mm short of B: still not the measurement asked for
    ohif_env.reset(task)
    ohif_env.act(Click(*ohif_env.locate(Locator(data_cy="Length-btn")).center))
    a, b = ohif_env.locate(Locator(landmark="A")), ohif_env.locate(Locator(landmark="B"))
    short = 8 * _screen_mm(ohif_env)
    ohif_env.act(Drag(a.center[0], a.center[1], b.center[0] - short, b.center[1]))
    assert ohif_env.check(count1)
    assert not any(ohif_env.check(s) for s in want)
    assert ohif_env.check(
        CheckSpec(kind="ohif.measurement", tolerance_mm=9, **{"from": "A", "to": "B"})
    )


def _until(env: Any, check: CheckSpec, timeout_s: float = 60.0) -> bool:
    import time

    end = time.monotonic() + timeout_s
    while not env.check(check):
        if time.monotonic() > end:
            return False
        time.sleep(0.5)
    return True


def _act_on(env: Any, target: Locator, to: Locator | None = None, double: bool = False) -> None:
    box = env.locate(target)
    assert box is not None, target
    if to is None:
        x, y = box.center
        env.act(Click(x, y, double=double))
        return
    end = env.locate(to)
    assert end is not None, to
    env.act(Drag(box.center[0], box.center[1], end.center[0], end.center[1]))


def test_a_view_on_another_series_fails(ohif_env: Any, tasks: LiveTaskFile) -> None:
    """The two reproductions: zoom-in-mr-doe-john with DOE^JOHN's other study, the CT CHEST,
    loaded from the study browser into the MR's viewport and zoomed (the MR gone from the
    screen), and preset-lung-ct-doe-john with the Lung preset on the Scout instead of the
    axial series: the zoom and the preset are there, on another series, and the tasks fail."""
    zoom = _task(tasks, "zoom-in-mr-doe-john")
    ohif_env.reset(zoom)
    _act_on(ohif_env, Locator(text="CT CHEST"))  # the patient's other study, in the browser
    thumb = Locator(css="[data-cy=study-browser-thumbnail]", contains="Chest Axial 5mm")
    _act_on(ohif_env, thumb, double=True)  # loaded into the active viewport
    assert _until(ohif_env, CheckSpec(kind="ohif.active_series", series="CT-DOE-JOHN/AXIAL"))
    assert not ohif_env.check(CheckSpec(kind="ohif.active_series", series="MR-DOE-JOHN/T1"))
    _act_on(ohif_env, Locator(data_cy="Zoom-btn"))
    _act_on(ohif_env, Locator(at=(0.5, 0.3)), Locator(at=(0.5, 0.6)))
    assert ohif_env.check(CheckSpec(kind="ohif.zoom", min=1.5))  # zoomed, on the CT
    assert ohif_env.check(CheckSpec(kind="ohif.zoom", min=1.5, series="CT-DOE-JOHN/AXIAL"))
    assert not any(ohif_env.check(c) for c in zoom.success)

    preset = _task(tasks, "preset-lung-ct-doe-john")
    ohif_env.reset(preset)
    thumb = Locator(css="[data-cy=study-browser-thumbnail]", contains="Scout")
    _act_on(ohif_env, thumb, double=True)
    assert _until(ohif_env, CheckSpec(kind="ohif.active_series", series="CT-DOE-JOHN/SCOUT"))
    _act_on(ohif_env, Locator(data_cy="windowLevelMenu-btn"))
    _act_on(ohif_env, Locator(text="Modality Window Presets"))
    _act_on(ohif_env, Locator(text="Lung"))
    assert ohif_env.check(CheckSpec(kind="ohif.voi", preset="Lung"))  # on the Scout
    assert ohif_env.check(CheckSpec(kind="ohif.voi", preset="Lung", series="CT-DOE-JOHN/SCOUT"))
    assert not any(ohif_env.check(c) for c in preset.success)


def test_two_environments_side_by_side(
    ohif_env: Any, tasks: LiveTaskFile, tmp_path: Path, seed_cache: Path
) -> None:
    from _orthanc_support import CHROMIUM

    from medspot.live.envs.registry import create_environment

    task = _task(tasks, "measure-ab-ct-doe-john")
    other: Any = create_environment(
        "ohif", workdir=tmp_path, chromium=CHROMIUM, seed_cache=seed_cache
    )
    try:
        other.start()
        assert other.server.port != ohif_env.server.port
        assert other.orthanc.port != ohif_env.orthanc.port
        ohif_env.reset(task)
        other.reset(task)
        for step in task.steps:
            box = other.locate(step.target)
            to = other.locate(step.to) if step.to is not None else None
            if to is not None:
                other.act(Drag(box.center[0], box.center[1], to.center[0], to.center[1]))
            else:
                other.act(Click(*box.center))
        assert all(other.check(s) for s in task.success)
        assert not any(ohif_env.check(s) for s in task.success)  # untouched by the other
        assert ohif_env.check(CheckSpec(kind="ohif.measurement_count", count=0))
    finally:
        other.close()
    assert not other.orthanc.alive()
