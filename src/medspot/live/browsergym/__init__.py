"""MedSPOT-Live's web environments as BrowserGym tasks (`pip install 'medspot[browsergym]'`).

Importing this package registers `browsergym/medspot.orthanc-explorer.<task>` and
`browsergym/medspot.ohif.<task>` for every packaged task (`registration.register_packaged`);
`register_task_file(path)` registers a task file's tasks. `MedspotBrowserTask` is the task
class (docs/browsergym.md)."""

from __future__ import annotations

from medspot.errors import AdapterUnavailable


class BrowserGymUnavailable(AdapterUnavailable, ImportError):
    """The browsergym-core package is missing (the `browsergym` extra)."""


try:
    import browsergym.core  # noqa: F401
except ImportError as e:
    raise BrowserGymUnavailable(
        f"BrowserGym environments need the browsergym-core package ({e}): "
        "pip install 'medspot[browsergym]'"
    ) from None

from medspot.live.browsergym.registration import (  # noqa: E402
    NAMESPACE,
    WEB_ENVS,
    gym_id,
    register_packaged,
    register_task_file,
    task_name,
)
from medspot.live.browsergym.task import MedspotBrowserTask  # noqa: E402

__all__ = [
    "NAMESPACE",
    "WEB_ENVS",
    "BrowserGymUnavailable",
    "MedspotBrowserTask",
    "gym_id",
    "register_packaged",
    "register_task_file",
    "task_name",
]

register_packaged()
