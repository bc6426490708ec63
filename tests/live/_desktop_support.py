"""Shared helpers of the desktop (X11 / DICOMscope) live tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from _orthanc_support import require_live

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.taskfiles import load_task_file


def require_x11() -> None:
    from medspot.live.drivers.x11 import missing_x11_tools

    missing = missing_x11_tools()
    require_live(
        not missing, f"{', '.join(missing)} (apt-get install xvfb xdotool x11-apps dbus-x11)"
    )
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError:
        require_live(False, "pillow/numpy")


def require_dicomscope() -> None:
    from medspot.live.envs.dicomscope.hooks import doctor

    problems = doctor()
    require_live(not problems, "; ".join(problems))


def dicomscope_tasks() -> list[LiveTask]:
    path = resources.files("medspot.live.envs.dicomscope") / "tasks" / "dicomscope.json"
    with resources.as_file(path) as p:
        return list(load_task_file(Path(p)).tasks)
