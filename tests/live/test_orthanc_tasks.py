"""Every packaged orthanc-explorer task, walked by the oracle on the real application: each
step's target resolves on its screen and the click lands on it, the task is not already
solved at its start, it succeeds at the end, and no collateral-damage check fires."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
from _orthanc_support import walk_oracle

from medspot.live.core.taskfiles import load_task_file
from medspot.live.core.tasks import LiveTask

pytestmark = pytest.mark.live


def _tasks() -> list[LiveTask]:
    path = resources.files("medspot.live") / "tasklists" / "orthanc_explorer.json"
    with resources.as_file(path) as p:
        return list(load_task_file(p).tasks)


TASKS = _tasks()


def test_task_file_is_big_enough() -> None:
    assert len(TASKS) >= 32
    assert all(2 <= len(t.steps) <= 6 for t in TASKS)
    tags = {tag for t in TASKS for tag in t.tags}
    assert {"look-alike", "below-fold", "cancel-default", "last-study", "download"} <= tags
    assert all(t.fail_if for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_oracle_completes(orthanc_env: Any, task: LiveTask) -> None:
    w = walk_oracle(orthanc_env, task)
    assert w.located == [True] * len(task.steps), f"target not found at step {len(w.located)}"
    assert all(w.hit), f"a click missed its own target: {w.hit}"
    assert not w.success_at_start, "the task is already solved at its start"
    assert not w.fail_at_start
    for k, (step, got) in enumerate(zip(task.steps, w.done_if, strict=True), 1):
        assert step.done_if is None or got, f"step {k}: done_if not reached"
    assert w.success
    assert not w.fired, f"fail_if fired: {w.fired}"
