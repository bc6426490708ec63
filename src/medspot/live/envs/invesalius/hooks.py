"""The `invesalius` environment's hooks: what `medspot live tasks --validate` finds wrong in a
task for it beyond its checks (`task_check`), the phantom its checks' regions are validated
against (`task_geometry`), what `medspot live doctor` reports missing (`doctor`) beyond the
Debian packages `medspot live setup` installs (`PACKAGES`)."""

from __future__ import annotations

import os
import shutil
import subprocess

from medspot.live.core import processes
from medspot.live.core.tasks import LiveTask
from medspot.live.envs.invesalius.env import APP_MODULES
from medspot.live.envs.invesalius.geometry import parse_landmark
from medspot.live.envs.invesalius.instance import INVESALIUS_DIR
from medspot.live.envs.invesalius.names import unknown_structure
from medspot.live.envs.invesalius.regions import PhantomGeometry
from medspot.live.envs.invesalius.start import parse_start

__all__ = ["PACKAGES", "doctor", "task_check", "task_geometry"]

PACKAGES = (
    "xvfb", "xdotool", "x11-apps", "dbus", "dbus-x11", "at-spi2-core", "libatk-adaptor",
    "python3-pyatspi", "imagemagick", "invesalius",
)  # fmt: skip


def task_geometry(task: LiveTask) -> PhantomGeometry | None:
    """The phantom the task's start loads, the geometry its checks' regions are validated
    against (the registry's `geometry` hook: `CheckParams.geometry_problem`); None for a start
    that is not valid (`task_check` says why)."""
    try:
        return PhantomGeometry(parse_start(task).volume)
    except ValueError:
        return None


def task_check(task: LiveTask) -> list[tuple[str, str]]:
    """What `medspot live tasks --validate` finds wrong for this environment beyond its
    checks (whose structures, slices and landmarks `task_geometry` validates): the start keys,
    the structures of the steps' landmarks in the task's volume."""
    out: list[tuple[str, str]] = []
    if task.start.route is not None:
        out.append(("start.route", "invesalius has no routes"))
    if task.start.file is not None:
        out.append(("start.file", "invesalius starts from start.volume, not a file"))
    try:
        start = parse_start(task)
    except ValueError as exc:
        return [*out, ("start", str(exc))]
    vol = start.volume
    steps = [(f"steps.{k}", s) for k, s in enumerate(task.steps)]
    steps += [(f"start.prepare.{k}", s) for k, s in enumerate(task.start.prepare)]
    for place, step in steps:
        for name, loc in (("target", step.target), ("to", step.to)):
            if loc is None or loc.landmark is None:
                continue
            try:
                lm = parse_landmark(loc.landmark)
            except ValueError as exc:
                out.append((f"{place}.{name}.landmark", str(exc)))
                continue
            why = unknown_structure(lm.structure, vol)
            if why:
                out.append((f"{place}.{name}.landmark", why))
    return out


def doctor() -> list[str]:
    """What `medspot live doctor --env invesalius` reports beyond the Debian packages."""
    from medspot.live.drivers.atspi import SYSTEM_PYTHON, atspi_available
    from medspot.live.drivers.x11 import missing_x11_tools

    problems = [f"{t} is not on PATH (apt-get install xvfb xdotool x11-apps dbus-x11)"
                for t in missing_x11_tools()]  # fmt: skip
    if shutil.which("import") is None:
        problems.append("import is not on PATH (apt-get install imagemagick)")
    if not (INVESALIUS_DIR / "app.py").exists():
        problems.append(f"{INVESALIUS_DIR}/app.py is missing (apt-get install invesalius)")
    elif not os.path.exists(SYSTEM_PYTHON):
        problems.append(f"{SYSTEM_PYTHON} is missing (InVesalius runs on Debian's Python)")
    else:
        try:
            out = processes.run(
                [SYSTEM_PYTHON, "-c", "import " + ", ".join(APP_MODULES)],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{SYSTEM_PYTHON} could not import InVesalius's modules ({exc})")
        else:
            if out.returncode != 0:
                why = out.stderr.strip()[-200:]
                problems.append(f"{SYSTEM_PYTHON} cannot import InVesalius's modules "
                                f"(apt-get install invesalius): {why}")  # fmt: skip
    if not atspi_available():
        problems.append(f"{SYSTEM_PYTHON} cannot import pyatspi (apt-get install python3-pyatspi)")
    return problems
