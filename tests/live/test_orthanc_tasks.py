"""The packaged orthanc-explorer tasks cover what they should (the oracle through every one of
them, on the real application, is `tests/live/test_task_audit.py`: `medspot live audit`)."""

from __future__ import annotations

from importlib import resources

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.taskfiles import load_task_file


def _tasks() -> list[LiveTask]:
    path = resources.files("medspot.live.envs.orthanc_explorer") / "tasks" / "orthanc_explorer.json"
    with resources.as_file(path) as p:
        return list(load_task_file(p).tasks)


TASKS = _tasks()


def test_task_file_is_big_enough() -> None:
    assert len(TASKS) >= 32
    assert all(2 <= len(t.steps) <= 6 for t in TASKS)
    tags = {tag for t in TASKS for tag in t.tags}
    assert {"look-alike", "below-fold", "cancel-default", "last-study", "download"} <= tags
    assert all(t.fail_if for t in TASKS)
    assert sum(bool(t.requires) for t in TASKS) >= 2  # process tasks
    assert any(t.start.prepare for t in TASKS)  # a prepared start
