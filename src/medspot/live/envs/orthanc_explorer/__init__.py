"""The `orthanc-explorer` environment: Orthanc Explorer and the Orthanc Web Viewer in chromium
(`env`), its check kinds (`checks`: the Web Viewer's, beside the database's and the page's), its
task check and doctor (`hooks`), its packaged tasks (`tasks/`)."""

from importlib import resources

from medspot.live.core.contract import EnvEntry
from medspot.live.envs.orthanc.tools import ORTHANC_TOOLSET
from medspot.live.envs.orthanc_explorer.checks import CHECK_KINDS
from medspot.live.envs.orthanc_explorer.env import LOCATOR_KEYS, NAME, OrthancExplorerEnv
from medspot.live.envs.orthanc_explorer.hooks import PACKAGES, doctor, task_check
from medspot.live.services.seed import catalogue_geometry

__all__ = ["ENTRY"]

ENTRY = EnvEntry(
    name=NAME,
    factory=OrthancExplorerEnv,
    summary="Orthanc Explorer + Orthanc Web Viewer (Orthanc 1.10) in headless chromium",
    check_kinds=CHECK_KINDS,
    toolsets=(ORTHANC_TOOLSET,),
    destructive="Orthanc Explorer's Delete buttons (on every patient, study, series and "
    "instance page, each a click or two from any page)",
    locator_keys=LOCATOR_KEYS,
    system_packages=PACKAGES,
    tasks=resources.files(__name__) / "tasks",
    doctor=doctor,
    task_check=task_check,
    geometry=catalogue_geometry,
)
