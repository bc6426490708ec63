"""The `dicomscope` environment: OFFIS DICOMscope under a private Xvfb, read through AT-SPI
(`env`), the viewer's check kinds (`checks`), its task check and doctor (`hooks`), its packaged
tasks (`tasks/`)."""

from importlib import resources

from medspot.live.core.contract import EnvEntry
from medspot.live.envs.dicomscope.env import CHECK_KINDS, LOCATOR_KEYS, NAME, PACKAGES, create
from medspot.live.envs.dicomscope.hooks import doctor, task_check

__all__ = ["ENTRY"]

ENTRY = EnvEntry(
    name=NAME,
    factory=create,
    summary="OFFIS DICOMscope 3.6 (Java/Swing) under Xvfb; widgets and states via AT-SPI",
    check_kinds=CHECK_KINDS,
    destructive="DICOMscope's Delete button (the Browser's toolbar: studies, series and images "
    "out of its database) and the viewer's Save to File and Save Screen to File (a file "
    "chooser that can name an existing file)",
    locator_keys=LOCATOR_KEYS,
    system_packages=PACKAGES,
    tasks=resources.files(__name__) / "tasks",
    python_modules=("PIL", "numpy", "pydicom"),
    doctor=doctor,
    task_check=task_check,
)
