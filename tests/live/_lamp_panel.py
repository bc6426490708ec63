"""A small real environment for the tests of the live commands: a panel of lamps, each under a
button; a click on a button toggles its lamp. It implements the `Environment` contract in full
(screenshots drawn with Pillow, element boxes, a check kind) and owns a real child process, its
"application" (a Python process whose command line names the workdir), started by `start()` and
stopped by `close()`, so that a test can see what a run leaves behind.

Faults happen on purpose, reliably: the button `crash` kills the application (the next call is
an `EnvironmentFault`, as a crashed browser is), `fail_reset` names tasks whose reset always
fails, `step_delay_s` makes every action slow (a run to interrupt or to race), and
`broken_observation` makes `reset` return something that is not an `Observation` (an
environment with a bug: what the runner does with it is a bug too).

`register()` adds it to the registry as `lamp-panel`; `tests/live/_lamp_cli.py` is the `medspot`
command with it registered, for tests that run the command as a process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from medspot.errors import DataError, Location
from medspot.live.core.actions import Click, LiveAction
from medspot.live.core.checks import CheckKind, CheckKinds, CheckParams
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvEntry,
    EnvironmentFault,
    Observation,
    PixelBox,
)
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.envs.registry import register_env

NAME = "lamp-panel"
LAMPS = ("red", "green", "blue", "crash")
VIEWPORT = (1280, 800)


class LampParams(CheckParams):
    lamp: str  # any name: a lamp the panel lacks is found by the running panel (a DataError)
    value: bool = True


def _lamp_on(params: LampParams, lamps: dict[str, bool]) -> bool:
    if params.lamp not in lamps:  # bad task data, found at run time (the contract's DataError)
        raise DataError(f"lamp.on: the panel has no lamp {params.lamp!r}", Location(NAME))
    return lamps[params.lamp] == params.value


KINDS = CheckKinds(CheckKind("lamp.on", LampParams, "lamps", _lamp_on, "a lamp is on (off)"))


# what a crashed browser's error looks like: a first line, then the application's whole log
CRASH_MESSAGE = f"{NAME}: the panel's application died (crash pressed)\n" + "\n".join(
    f"  panel log line {i}" for i in range(1, 31)
)
LAMP_CLI = Path(__file__).with_name("_lamp_cli.py")
REPO = Path(__file__).resolve().parents[2]


def lamp_command(*args: str) -> list[str]:
    """The `medspot` command line (as a process) with this environment registered."""
    return [sys.executable, str(LAMP_CLI), *args]


def process_env(workroot: Path) -> dict[str, str]:
    """The environment of such a process: this checkout's sources, environments' private
    folders under `workroot`."""
    return dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))


def register() -> None:
    register_env(ENTRY)


def button_box(lamp: str) -> PixelBox:
    i = LAMPS.index(lamp)
    x = 80 + 300 * i
    return PixelBox(x, 500, x + 200, 600)


def task_file(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"format_version": 1, "env": NAME, "tasks": tasks}))
    return path


def switch_task(task_id: str, *lamps: str) -> dict[str, Any]:
    """A task that switches on `lamps`, one click each (a click on `crash` kills the panel)."""
    return {
        "id": task_id,
        "instruction": "Switch on " + " and ".join(lamps),
        "steps": [
            {
                "instruction": f"Click the {lamp} button",
                "target": {"text": lamp},
                "done_if": {"kind": "lamp.on", "lamp": lamp},
            }
            for lamp in lamps
        ],
        "success": [{"kind": "lamp.on", "lamp": lamp} for lamp in lamps],
    }


class LampPanel:
    name = NAME
    viewport = VIEWPORT

    def __init__(
        self,
        workdir: Path,
        step_delay_s: float = 0.0,
        fail_reset: tuple[str, ...] = (),
        broken_observation: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.step_delay_s = step_delay_s
        self.fail_reset = fail_reset
        self.broken_observation = broken_observation
        self.on: dict[str, bool] = dict.fromkeys(LAMPS, False)
        self.app: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        code = "import sys, time; time.sleep(3600)"
        self.app = subprocess.Popen([sys.executable, "-c", code, str(self.workdir)])

    def _alive(self) -> None:
        if self.app is None or self.app.poll() is not None:
            raise EnvironmentFault(f"{NAME}: the panel's application is not running")

    def reset(self, task: LiveTask) -> Observation:
        self._alive()
        if task.id in self.fail_reset:
            raise EnvironmentFault(f"{NAME}: cannot bring the panel to the start of {task.id}")
        self.on = dict.fromkeys(LAMPS, False)
        if self.broken_observation:
            return None  # type: ignore[return-value]  # the bug this option is for
        return self.observe()

    def observe(self) -> Observation:
        self._alive()
        img = Image.new("RGB", VIEWPORT, (20, 20, 20))
        draw = ImageDraw.Draw(img)
        for lamp in LAMPS:
            b = button_box(lamp)
            fill = (250, 220, 60) if self.on[lamp] else (70, 70, 70)
            draw.ellipse((b.x1 + 50, 250, b.x1 + 150, 350), fill=fill)
            draw.rectangle((b.x1, b.y1, b.x2, b.y2), fill=(120, 120, 160))
            draw.text((b.x1 + 20, b.y1 + 40), lamp, fill=(255, 255, 255))
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return Observation(buf.getvalue(), *VIEWPORT, title="lamp panel")

    def _button_at(self, x: float, y: float) -> str | None:
        return next((lamp for lamp in LAMPS if button_box(lamp).contains(x, y)), None)

    def act(self, action: LiveAction) -> ActResult:
        self._alive()
        time.sleep(self.step_delay_s)
        lamp = self._button_at(action.x, action.y) if isinstance(action, Click) else None
        if lamp == "crash":
            assert self.app is not None
            self.app.kill()
            self.app.wait()
            raise EnvironmentFault(CRASH_MESSAGE)
        if lamp is not None:
            self.on[lamp] = not self.on[lamp]
        return ActResult(settle_s=self.step_delay_s, changed=lamp is not None)

    def check(self, spec: CheckSpec) -> bool:
        self._alive()
        return KINDS.evaluate(spec, {"lamps": lambda _params: self.on}, NAME)

    def locate(self, locator: Locator) -> PixelBox | None:
        return button_box(locator.text) if locator.text in LAMPS else None

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        lamp = self._button_at(x, y)
        if lamp is None:
            return None
        return ElementInfo(f"button:{lamp}", "button", lamp, button_box(lamp))

    def close(self) -> None:
        if self.app is not None and self.app.poll() is None:
            self.app.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.app.wait(timeout=10)
        self.app = None


def create(
    workdir: Path,
    step_delay_s: float = 0.0,
    fail_reset: tuple[str, ...] = (),
    broken_observation: bool = False,
) -> LampPanel:
    return LampPanel(workdir, step_delay_s, fail_reset, broken_observation)


ENTRY = EnvEntry(
    name=NAME,
    factory=create,
    summary="a panel of lamps (the live commands' tests)",
    check_kinds=KINDS,
    locator_keys=("text",),
    python_modules=("PIL",),
)
