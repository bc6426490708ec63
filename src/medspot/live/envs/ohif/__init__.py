"""The `ohif` environment: the OHIF Viewer 3 over a private Orthanc's DICOMweb in chromium
(`env`), its check kinds and the viewer's state they read (`checks`), its task check, doctor and
setup (`hooks`), the viewer's server and installed copy (`server`, `package`), its packaged tasks
(`tasks/`)."""

from importlib import resources

from medspot.live.core.contract import EnvEntry
from medspot.live.envs.ohif.checks import CHECK_KINDS
from medspot.live.envs.ohif.env import LOCATOR_KEYS, NAME, OhifEnv
from medspot.live.envs.ohif.hooks import PACKAGES, doctor, setup, task_check
from medspot.live.envs.orthanc.tools import ORTHANC_TOOLSET
from medspot.live.services.seed import catalogue_geometry

__all__ = ["ENTRY"]

ENTRY = EnvEntry(
    name=NAME,
    factory=OhifEnv,
    summary="OHIF Viewer 3.13 (prebuilt, from npm) over Orthanc DICOMweb in chromium",
    check_kinds=CHECK_KINDS,
    toolsets=(ORTHANC_TOOLSET,),
    locator_keys=LOCATOR_KEYS,
    system_packages=PACKAGES,
    tasks=resources.files(__name__) / "tasks",
    doctor=doctor,
    setup=setup,
    task_check=task_check,
    geometry=catalogue_geometry,
)
