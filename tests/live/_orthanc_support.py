"""Helpers for the orthanc-explorer tests: what a live test needs, and a plain oracle loop.

The loop uses the runner's oracle (`medspot.live.agents.oracle_action`: the step's target on the
current screen, acted on at its centre) without the runner, to check the environment itself.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import pytest

from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import Environment, PixelBox
from medspot.live.core.tasks import LiveTask, Locator, StepSpec

CHROMIUM = os.environ.get("MEDSPOT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def require_live(ok: bool, what: str) -> None:
    """Skip when a system part is missing; fail instead under MEDSPOT_REQUIRE_LIVE=1 (CI)."""
    if ok:
        return
    if os.environ.get("MEDSPOT_REQUIRE_LIVE") == "1":
        pytest.fail(f"MEDSPOT_REQUIRE_LIVE=1 but {what} is missing")
    pytest.skip(f"{what} is missing")


def require_orthanc_stack() -> None:
    from medspot.live.services.orthanc import PLUGINS, orthanc_binary

    require_live(orthanc_binary() is not None, "Orthanc (apt-get install orthanc)")
    require_live(
        os.path.isdir(PLUGINS) and any("WebViewer" in f for f in os.listdir(PLUGINS)),
        "the Orthanc plugins (apt-get install orthanc-webviewer orthanc-dicomweb)",
    )
    require_live(os.access(CHROMIUM, os.X_OK), "chromium (apt-get install chromium)")
    for mod, pkg in (("playwright.sync_api", "playwright"), ("pydicom", "pydicom")):
        try:
            __import__(mod)
        except ImportError:
            require_live(False, f"the python package {pkg} (pip install 'medspot[live]')")


def step_action(step: StepSpec, box: PixelBox | None, to: PixelBox | None) -> LiveAction | None:
    """The oracle's action for `step` (`Episode`'s own `oracle_step_action`), given the boxes
    located on the current screen."""
    from medspot.live.core.episode import oracle_step_action

    return oracle_step_action(step, box, to)


@dataclass
class Walk:
    task: LiveTask
    located: list[bool] = field(default_factory=list)  # per step: its target was found
    hit: list[bool] = field(default_factory=list)  # per step: element_at(click) inside target
    done_if: list[bool | None] = field(default_factory=list)  # per step, after acting
    settle_s: list[float] = field(default_factory=list)
    success_at_start: bool = False
    fail_at_start: bool = False
    fired: list[str] = field(default_factory=list)  # fail_if kinds that fired, any time
    success: bool = False
    reset_s: float = 0.0


def walk_oracle(
    env: Environment, task: LiveTask, replace: dict[int, Locator] | None = None
) -> Walk:
    """Reset, then act each step on its located target; record what happened. `replace`
    (1-based step -> locator) scripts a wrong click: that step acts on another element."""
    import time

    w = Walk(task)
    t0 = time.perf_counter()
    env.reset(task)
    w.reset_s = time.perf_counter() - t0
    w.success_at_start = all(env.check(c) for c in task.success)
    w.fail_at_start = any(env.check(c) for c in task.fail_if)
    for k, step in enumerate(task.steps, 1):
        if replace and k in replace:
            step = step.model_copy(update={"target": replace[k]})
        box = env.locate(step.target) if step.target is not None else None
        to = env.locate(step.to) if step.to is not None else None
        action = step_action(step, box, to)
        w.located.append(action is not None)
        if action is None:
            break
        if box is not None:
            x, y = box.center
            el = env.element_at(x, y)
            w.hit.append(el is not None and el.box.contains(x, y))
        w.settle_s.append(env.act(action).settle_s)
        w.done_if.append(env.check(step.done_if) if step.done_if is not None else None)
        w.fired += [c.kind for c in task.fail_if if env.check(c)]
    w.success = all(env.check(c) for c in task.success)
    return w
