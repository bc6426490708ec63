"""Helpers for the orthanc-explorer tests: what a live test needs, and an oracle walk through
the `Episode` (the path's steps acted on their targets' centres, scripted wrong clicks allowed)
to check an environment itself; the oracle through every task is `medspot live audit`'s test.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import pytest

from medspot.live.core.contract import Environment
from medspot.live.core.tasks import LiveTask, Locator

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


@dataclass
class Walk:
    task: LiveTask
    located: list[bool] = field(default_factory=list)  # per step: its target was found
    hit: list[bool] = field(default_factory=list)  # per step: element_at(click) inside target
    done_if: list[bool | None] = field(default_factory=list)  # per step, after acting
    settle_s: list[float] = field(default_factory=list)
    success_at_start: bool = False
    fail_at_start: bool = False
    fired: list[str] = field(default_factory=list)  # fail_if kinds that fired
    success: bool = False
    reset_s: float = 0.0


def walk_oracle(
    env: Environment, task: LiveTask, replace: dict[int, Locator] | None = None
) -> Walk:
    """Reset, then each step of the task's path acted on its located target, through the
    `Episode` (which judges every action); record what happened. `replace` (1-based step ->
    locator) scripts a wrong click: that step acts on another element. The walk ends where
    the episode does (success, or a `fail_if` fired)."""
    from medspot.live.core.episode import Episode, oracle_step_action

    w = Walk(task)
    ep = Episode(env, task)
    ep.reset()
    w.reset_s = ep.reset_s
    w.success_at_start = all(env.check(c) for c in task.success)
    w.fail_at_start = any(env.check(c) for c in task.fail_if)
    for k, step in enumerate(task.steps, 1):
        if ep.ended:
            break
        if replace and k in replace:
            step = step.model_copy(update={"target": replace[k]})
        box = env.locate(step.target) if step.target is not None else None
        to = env.locate(step.to) if step.to is not None else None
        action = oracle_step_action(step, box, to)
        w.located.append(action is not None)
        if action is None:
            break
        if box is not None:
            x, y = box.center
            el = env.element_at(x, y)
            w.hit.append(el is not None and el.box.contains(x, y))
        res = ep.step(action)
        w.settle_s.append(res.settle_s or 0.0)
        w.done_if.append(env.check(step.done_if) if step.done_if is not None else None)
        w.fired += list(res.fired)
    w.success = ep.outcome == "success"
    return w
