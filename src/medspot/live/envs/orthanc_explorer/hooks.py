"""The `orthanc-explorer` environment's hooks: what `medspot live tasks --validate` finds wrong
in a task for it beyond its checks (`task_check`), what `medspot live doctor` reports missing
(`doctor`) beyond the Debian packages `medspot live setup` installs (`PACKAGES`)."""

from __future__ import annotations

import os

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.orthanc_explorer.env import NAME
from medspot.live.services.names import locator_name_problems, template_problems

__all__ = ["PACKAGES", "doctor", "task_check"]

PACKAGES = ("orthanc", "orthanc-webviewer", "orthanc-dicomweb", "chromium", "fonts-dejavu-core")


def task_check(task: LiveTask) -> list[tuple[str, str]]:
    """What `medspot live tasks --validate` finds wrong in a task's start for this
    environment (the registry's `task_check` hook)."""
    out: list[tuple[str, str]] = []
    route = task.start.route
    if route is not None:
        if not route.startswith(("#", "/")):
            out.append(("start.route", f"must start with '#' or '/': {route!r}"))
        out += [("start.route", why) for why in template_problems(route)]
    if task.start.file is not None:
        out.append(("start.file", f"{NAME} opens no files (a start route instead)"))
    out += [(f"start.{k}", f"not a start key of {NAME}") for k in task.start.params]
    out += locator_name_problems(task)
    return out


def doctor() -> list[str]:
    """What `medspot live doctor --env orthanc-explorer` reports beyond the Debian packages."""
    from medspot.live.services.orthanc import PLUGINS, orthanc_binary

    problems = []
    if orthanc_binary() is None:
        problems.append("the Orthanc executable is not on PATH (apt-get install orthanc)")
    plugins = os.listdir(PLUGINS) if os.path.isdir(PLUGINS) else []
    for lib, pkg in (("WebViewer", "orthanc-webviewer"), ("DicomWeb", "orthanc-dicomweb")):
        if not any(lib in f for f in plugins):
            problems.append(f"no {lib} plugin in {PLUGINS} (apt-get install {pkg})")
    if not os.access("/usr/bin/chromium", os.X_OK):
        problems.append("/usr/bin/chromium is missing (apt-get install chromium)")
    return problems
