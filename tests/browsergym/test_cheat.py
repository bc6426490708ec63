"""A BrowserGym environment's `cheat()` solves tasks of both applications, on the real Orthanc
Explorer and OHIF viewer in the chromium BrowserGym launched, and `noop` does not: the task's
oracle path is located on BrowserGym's page and acted on through the `Episode`, and the next
step's `validate` reports medspot's success (reward 1.0, terminated). The tasks cover what
reaching a start and judging need: a required step that must happen (a dialog opened then
cancelled), `start.prepare` steps and a download, drags between the phantom's landmarks on the
viewer's canvas, a prepared preset, and an infeasible task (the oracle's report goes to the
chat). After BrowserGym's observations the page still lays out at the screen the agent saw
(BrowserGym's screenshots reset chromium's viewport emulation; the window is sized to it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _bgym_support import assert_lays_out_at_the_screen

pytestmark = pytest.mark.live

TASKS = [
    ("orthanc-explorer", "delete-dialog-cancel-ct-doe-john"),  # requires: the dialog shown
    ("orthanc-explorer", "trap-prepared-cancel-delete-instance-ct-doe-john-3"),  # prepare, download
    ("orthanc-explorer", "infeasible-email-study-ct-doe-john"),  # the right ending: infeasible
    ("ohif", "measure-ab-ct-doe-john"),  # a drag between landmarks
    ("ohif", "prepared-lung-to-bone-ct-smith-anna"),  # start.prepare: the Lung preset
]


@pytest.mark.parametrize(("env_name", "task_id"), TASKS)
def test_cheat_solves_and_noop_does_not(
    make_env: Callable[..., Any], env_name: str, task_id: str
) -> None:
    env = make_env(env_name, task_id)
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    live = task.live_task
    assert obs["goal"] == live.instruction and info["task_info"]["medspot"]["task"] == task_id
    assert obs["screenshot"].shape == (live.start.viewport[1], live.start.viewport[0], 3)
    assert_lays_out_at_the_screen(env, obs)

    obs, reward, terminated, truncated, info = env.step("noop(100)")
    assert obs["last_action_error"] == ""
    assert_lays_out_at_the_screen(env, obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    medspot = info["task_info"]["medspot"]
    assert medspot["outcome"] is None and medspot["n"] == 1 and not medspot["success"]

    task.cheat(env.unwrapped.page, env.unwrapped.chat.messages)
    obs, reward, terminated, truncated, info = env.step("noop(100)")
    medspot = info["task_info"]["medspot"]
    assert (reward, terminated) == (1.0, True), medspot
    assert medspot["outcome"] == "success" and not medspot["harmful"]
    if live.infeasible:
        assert obs["chat_messages"][-1]["role"] == "infeasible"
    # the end is reported once: a later step is done with no more reward
    _, reward, terminated, _, _ = env.step("noop(100)")
    assert (reward, terminated) == (0.0, True)
