"""Shared helpers of the invesalius live tests."""

from __future__ import annotations

from _orthanc_support import require_live

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.taskfiles import env_task_file


def require_invesalius() -> None:
    from medspot.live.envs.invesalius.hooks import doctor

    problems = doctor()
    require_live(not problems, "; ".join(problems))


def invesalius_tasks() -> dict[str, LiveTask]:
    """The packaged tasks by id."""
    return {t.id: t for t in env_task_file("invesalius")[0].tasks}
