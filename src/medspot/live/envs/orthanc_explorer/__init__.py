"""The `orthanc-explorer` environment: Orthanc Explorer and the Orthanc Web Viewer in chromium
(`env`), the Web Viewer's check kinds (`webviewer`), its packaged tasks (`tasks/`)."""

from importlib import resources

from medspot.live.core.contract import EnvEntry
from medspot.live.envs.orthanc.tools import TOOLSET
from medspot.live.envs.orthanc_explorer.env import (
    CHECK_KINDS,
    LOCATOR_KEYS,
    NAME,
    PACKAGES,
    create,
    doctor,
    task_check,
)
from medspot.live.services.seed import catalogue_geometry

__all__ = ["ENTRY"]

ENTRY = EnvEntry(
    name=NAME,
    factory=create,
    summary="Orthanc Explorer + Orthanc Web Viewer (Orthanc 1.10) in headless chromium",
    check_kinds=CHECK_KINDS,
    toolsets=(TOOLSET,),
    destructive="Orthanc Explorer's Delete buttons (on every patient, study, series and "
    "instance page, each a click or two from any page)",
    locator_keys=LOCATOR_KEYS,
    system_packages=PACKAGES,
    tasks=resources.files(__name__) / "tasks",
    doctor=doctor,
    task_check=task_check,
    geometry=catalogue_geometry,
)
