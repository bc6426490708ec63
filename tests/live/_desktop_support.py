"""Shared helpers of the desktop (X11 / DICOMscope) live tests."""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path

from _orthanc_support import require_live

from medspot.live.tasks import LiveTask, load_task_file


def require_x11() -> None:
    from medspot.live.x11 import missing_x11_tools

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
    from medspot.live.atspi import atspi_available
    from medspot.live.dicomscope import JARS, SYSTEM_CFG

    require_x11()
    for jar in JARS:
        require_live(os.path.exists(jar), f"{jar} (apt-get install dicomscope libatk-wrapper-java)")
    require_live(SYSTEM_CFG.exists(), f"{SYSTEM_CFG} (apt-get install dicomscope)")
    require_live(shutil.which("java") is not None, "java (apt-get install default-jre-headless)")
    require_live(shutil.which("dcmqridx") is not None, "dcmqridx (apt-get install dcmtk)")
    require_live(
        atspi_available(), "pyatspi for /usr/bin/python3 (apt-get install python3-pyatspi)"
    )
    try:
        import pydicom  # noqa: F401
    except ImportError:
        require_live(False, "the python package pydicom (pip install 'medspot[live]')")


def dicomscope_tasks() -> list[LiveTask]:
    path = resources.files("medspot.live") / "tasklists" / "dicomscope.json"
    with resources.as_file(path) as p:
        return list(load_task_file(Path(p)).tasks)
