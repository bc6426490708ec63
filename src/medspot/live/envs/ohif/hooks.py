"""The `ohif` environment's hooks: what `medspot live tasks --validate` finds wrong in a task
for it beyond its checks (`task_check`), what `medspot live setup` fetches that apt-get cannot
(`setup`: the pinned viewer) and what `medspot live doctor` reports missing (`doctor`) beyond
the Debian packages `medspot live setup` installs (`PACKAGES`)."""

from __future__ import annotations

import shutil

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.ohif.env import NAME
from medspot.live.envs.ohif.package import OHIF_PACKAGE, OHIF_VERSION, ensure_ohif, installed_dist
from medspot.live.services.names import locator_name_problems, template_problems
from medspot.live.services.seed import LANDMARKS

__all__ = ["PACKAGES", "doctor", "setup", "task_check"]

PACKAGES = ("orthanc", "orthanc-dicomweb", "chromium", "fonts-dejavu-core")


def task_check(task: LiveTask) -> list[tuple[str, str]]:
    """What `medspot live tasks --validate` finds wrong in a task for this environment beyond
    its checks (the registry's `task_check` hook): the start route, `start.measure`, landmark
    locators."""
    out: list[tuple[str, str]] = []
    route = task.start.route
    if route is not None:
        if not route.startswith("/"):
            out.append(("start.route", f"must start with '/': {route!r}"))
        out += [("start.route", why) for why in template_problems(route, ("study", "series"))]
    if task.start.file is not None:
        out.append(("start.file", f"{NAME} opens no files (a start route instead)"))
    for k, v in task.start.params.items():
        if k != "measure":
            out.append((f"start.{k}", f"not a start key of {NAME}"))
        elif not isinstance(v, list) or not all(
            isinstance(pq, list) and len(pq) == 2 and all(x in LANDMARKS for x in pq) for pq in v
        ):
            out.append(
                ("start.measure", f"a list of [landmark, landmark] pairs of {sorted(LANDMARKS)}")
            )
    steps = [(f"steps.{k}", s) for k, s in enumerate(task.steps)]
    steps += [(f"start.prepare.{k}", s) for k, s in enumerate(task.start.prepare)]
    for place, step in steps:
        for name, loc in (("target", step.target), ("to", step.to)):
            if loc is not None and loc.landmark is not None and loc.landmark not in LANDMARKS:
                out.append((f"{place}.{name}", f"unknown landmark {loc.landmark!r} "
                                               f"(known: {sorted(LANDMARKS)})"))  # fmt: skip
    out += locator_name_problems(task)
    return out


def setup() -> str:
    """`medspot live setup --env ohif`: fetch, check and unpack the pinned viewer (npm)."""
    dist = ensure_ohif()
    return f"{OHIF_PACKAGE}@{OHIF_VERSION} (integrity checked) in {dist}"


def doctor() -> list[str]:
    """What `medspot live doctor --env ohif` reports beyond the Debian packages."""
    if installed_dist() is not None:
        return []
    problem = f"{OHIF_PACKAGE}@{OHIF_VERSION} is not in the cache: medspot live setup --env ohif"
    if shutil.which("npm") is None:
        problem += " (needs npm: apt-get install npm)"
    return [problem]
