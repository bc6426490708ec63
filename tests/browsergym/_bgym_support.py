"""What the BrowserGym tests share: the live requirements, a task's environment made as a user
makes it, and BrowserGym's actions on elements located by medspot's locators."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _orthanc_support import require_live, require_orthanc_stack

from medspot.live.core.tasks import Locator

# BrowserGym's high-level actions of the tests: its defaults, and the coordinate ones
ACTION_SUBSETS = ["chat", "infeas", "bid", "coord", "nav"]


def require_stack(env: str) -> None:
    require_orthanc_stack()
    if env == "ohif":
        from medspot.live.envs.ohif.package import installed_dist

        require_live(
            installed_dist() is not None, "the OHIF viewer (medspot live setup --env ohif)"
        )


def make_task_env(env: str, task: str, seed_cache: Path, workroot: Path, **kwargs: Any) -> Any:
    """`gym.make("browsergym/medspot.<env>.<task>")` with the seed cache and a private workroot
    (task_kwargs, JSON-friendly as AgentLab passes them) and the coordinate actions."""
    import gymnasium as gym
    from browsergym.core.action.highlevel import HighLevelActionSet

    import medspot.live.browsergym as mbg

    require_stack(env)
    task_kwargs = {"env_options": {"seed_cache": str(seed_cache)}, "workroot": str(workroot)}
    return gym.make(
        mbg.gym_id(env, task),
        task_kwargs=task_kwargs,
        action_mapping=HighLevelActionSet(subsets=ACTION_SUBSETS).to_python_code,
        **kwargs,
    )


def click_at(env: Any, locator: Locator) -> str:
    """BrowserGym's `mouse_click` at the centre of the element `locator` names on the page now
    (located by the task's medspot environment, on BrowserGym's page)."""
    box = env.unwrapped.task.env.locate(locator)
    assert box is not None, f"not on the page: {locator}"
    x, y = box.center
    return f"mouse_click({x}, {y})"


def assert_lays_out_at_the_screen(env: Any, obs: Any) -> None:
    """The page lays out at the size of the screenshot the agent was given (BrowserGym's
    screenshot emulates the viewport from a CDP session it detaches, which drops chromium's
    emulation: the window is sized so that nothing changes, `WebSession.fit_window`)."""
    height, width = obs["screenshot"].shape[:2]
    inner = env.unwrapped.page.evaluate("() => [window.innerWidth, window.innerHeight]")
    assert inner == [width, height]


def bid_script(patient: str) -> Callable[[Any], str]:
    """A scripted chat model for AgentLab's generic agent on `open-study-ct-doe-john`: click the
    study CT CHEST where the page lists it, else the link of the patient with PatientID
    `patient`, each by its bid in the AXTree of the agent's prompt."""

    def answer(req: Any) -> str:
        found = re.search(r"\[(\w+)\] link '[^'\n]*CT CHEST", req.text) or re.search(
            rf"\[(\w+)\] link '[^'\n]*PatientID: {patient}", req.text
        )
        bid = found.group(1) if found else "none"
        return f"<think>I open what the goal names.</think>\n<action>\nclick('{bid}')\n</action>"

    return answer
