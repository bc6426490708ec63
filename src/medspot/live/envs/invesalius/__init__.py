"""The `invesalius` environment: InVesalius 3.1 under a private Xvfb, its state read by a probe
inside the application (`env`, `instance`, `probe`, `probe_client`, `state`), the seeded
phantoms with their true masks (`phantoms`, `names`, `geometry`), the `inv.*` check kinds
(`checks`, `files`; the collateral-harm rule: `collateral`), its start keys (`start`), the
widgets wx draws (`widgets`), its task check and doctor (in `env`) and its packaged tasks
(`tasks/`)."""

from importlib import resources

from medspot.live.core.contract import EnvEntry
from medspot.live.envs.invesalius.env import (
    CHECK_KINDS,
    LOCATOR_KEYS,
    NAME,
    PACKAGES,
    create,
    doctor,
    task_check,
    task_geometry,
)

__all__ = ["ENTRY"]

ENTRY = EnvEntry(
    name=NAME,
    factory=create,
    summary="InVesalius 3.1 (wxPython + VTK), a 3D segmentation workstation, under Xvfb; "
    "state read by a probe inside it, masks judged against the phantoms' truth",
    check_kinds=CHECK_KINDS,
    destructive="InVesalius's Remove buttons and renaming in the masks and surfaces lists, and "
    "its save and export dialogs (they write over an existing file they are given)",
    locator_keys=LOCATOR_KEYS,
    system_packages=PACKAGES,
    tasks=resources.files(__name__) / "tasks",
    python_modules=("PIL", "numpy", "pydicom"),
    doctor=doctor,
    task_check=task_check,
    geometry=task_geometry,
)
