"""The `dicomscope` environment's hooks: what `medspot live tasks --validate` finds wrong in a
task for it beyond its checks (`task_check`) and what `medspot live doctor` reports missing
(`doctor`) beyond the Debian packages `medspot live setup` installs (`PACKAGES`)."""

from __future__ import annotations

import os
import shutil

from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.envs.dicomscope.checks import image_problem, row_labels
from medspot.live.envs.dicomscope.env import JARS, JNI_DIR, NAME, SYSTEM_CFG
from medspot.live.services.names import locator_name_problems

__all__ = ["PACKAGES", "doctor", "task_check"]

PACKAGES = (
    "xvfb", "xdotool", "x11-apps", "dbus", "dbus-x11", "at-spi2-core", "libatk-adaptor",
    "python3-pyatspi", "dicomscope", "dcmtk", "libatk-wrapper-java", "libatk-wrapper-java-jni",
    "default-jre-headless",
)  # fmt: skip


def _row_problem(loc: Locator) -> str | None:
    """Why a locator naming a Browser row ("Study ..." / "Series ...") names none."""
    from medspot.live.services.seed import CATALOGUE

    rows = {row_labels(CATALOGUE, s.name)[0] for s in CATALOGUE.studies()}
    rows |= {str(row_labels(CATALOGUE, se.name.partition("/")[0], se.short)[1])
             for se in CATALOGUE.all_series()}  # fmt: skip
    for key, value in (("text", loc.text), ("contains", loc.contains)):
        if value is None or not value.strip().startswith(("Study ", "Series ")):
            continue
        want = value.strip()
        if not any(want == r if key == "text" else want in r for r in rows):
            return f"no Browser row of the seeded studies is {key} {value!r}"
    return None


def task_check(task: LiveTask) -> list[tuple[str, str]]:
    """What `medspot live tasks --validate` finds wrong in a task for this environment beyond
    its checks (the registry's `task_check` hook): `start.file` names a seeded image; a
    locator of a step or `start.prepare` step naming a Browser row or a patient names a seeded
    one."""
    out: list[tuple[str, str]] = []
    if task.start.file is not None:
        why = image_problem(task.start.file)
        if why is not None:
            out.append(("start.file", why))
    if task.start.route is not None:
        out.append(("start.route", f"{NAME} has no routes (start.file opens an image)"))
    out += [(f"start.{k}", f"not a start key of {NAME}") for k in task.start.params]
    for place, name, loc in task.step_locators():
        why = _row_problem(loc)
        if why is not None:
            out.append((f"{place}.{name}", why))
    return out + locator_name_problems(task)


def doctor() -> list[str]:
    """What `medspot live doctor --env dicomscope` reports beyond the Debian packages (and what
    the desktop tests require)."""
    from medspot.live.drivers.atspi import SYSTEM_PYTHON, atspi_available
    from medspot.live.drivers.x11 import missing_x11_tools

    problems = [f"{t} is not on PATH (apt-get install xvfb xdotool x11-apps dbus-x11)"
                for t in missing_x11_tools()]  # fmt: skip
    problems += [f"{jar} is missing (apt-get install dicomscope libatk-wrapper-java)"
                 for jar in JARS if not os.path.exists(jar)]  # fmt: skip
    if not os.path.isdir(JNI_DIR) or not any("atk" in f for f in os.listdir(JNI_DIR)):
        problems.append(f"no ATK wrapper JNI library in {JNI_DIR} "
                        "(apt-get install libatk-wrapper-java-jni)")  # fmt: skip
    if not SYSTEM_CFG.exists():
        problems.append(f"{SYSTEM_CFG} is missing (apt-get install dicomscope)")
    for exe, pkg in (("java", "default-jre-headless"), ("dcmqridx", "dcmtk")):
        if shutil.which(exe) is None:
            problems.append(f"{exe} is not on PATH (apt-get install {pkg})")
    if not atspi_available():
        problems.append(f"{SYSTEM_PYTHON} cannot import pyatspi (apt-get install python3-pyatspi)")
    return problems
