"""A small real environment for the tests of the live commands: a panel of lamps, each under a
button; a click on a button toggles its lamp. It implements the `Environment` contract in full
(screenshots drawn with Pillow, element boxes, a check kind) and owns a real child process, its
"application" (a Python process whose command line names the workdir), started by `start()` and
stopped by `close()`, so that a test can see what a run leaves behind.

Faults happen on purpose, reliably: the button `crash` kills the application (the next call is
an `EnvironmentFault`, as a crashed browser is), `fail_reset` names tasks whose reset always
fails, `step_delay_s` makes every action slow (a run to interrupt or to race), `reset_delay_s`
every reset, `broken_observation` makes `reset` return something that is not an `Observation`
(an environment with a bug: what the runner does with it is a bug too), `start_log` with
`starts_allowed` makes every start after the first N fail (the N+1-th instance of a run: a
spare that cannot start), and `hold_while` holds every action while that file exists (a run
kept going, however slow the rest of the test is, until the test lets it on).

It keeps a spare like the real environments (`SparePlan`, `swap_in`): a run's slot holds a
second panel, reset for the next task while the current one runs.

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
    SparePlan,
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
    spare = SparePlan(default=True, memory_mb=15)

    def __init__(
        self,
        workdir: Path,
        step_delay_s: float = 0.0,
        fail_reset: tuple[str, ...] = (),
        broken_observation: bool = False,
        reset_delay_s: float = 0.0,
        start_log: Path | None = None,
        starts_allowed: int = -1,
        hold_while: Path | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.hold_while = hold_while
        self.step_delay_s = step_delay_s
        self.fail_reset = fail_reset
        self.broken_observation = broken_observation
        self.reset_delay_s = reset_delay_s
        self.start_log = start_log
        self.starts_allowed = starts_allowed
        self.on: dict[str, bool] = dict.fromkeys(LAMPS, False)
        self.app: subprocess.Popen[bytes] | None = None
        self.resets: list[str] = []  # the tasks this instance was reset for

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.start_log is not None:
            with self.start_log.open("a", encoding="utf-8") as f:
                f.write(f"{self.workdir}\n")
            started = len(self.start_log.read_text(encoding="utf-8").splitlines())
            if 0 <= self.starts_allowed < started:
                raise EnvironmentFault(f"{NAME}: start {started} refused (starts_allowed)")
        code = "import sys, time; time.sleep(3600)"
        self.app = subprocess.Popen([sys.executable, "-c", code, str(self.workdir)])

    def _alive(self) -> None:
        if self.app is None or self.app.poll() is not None:
            raise EnvironmentFault(f"{NAME}: the panel's application is not running")

    def reset(self, task: LiveTask) -> Observation:
        self._alive()
        time.sleep(self.reset_delay_s)
        if task.id in self.fail_reset:
            raise EnvironmentFault(f"{NAME}: cannot bring the panel to the start of {task.id}")
        self.resets.append(task.id)
        self.on = dict.fromkeys(LAMPS, False)
        if self.broken_observation:
            return None  # type: ignore[return-value]  # the bug this option is for
        return self.observe()

    def swap_in(self, task: LiveTask) -> Observation:
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
        held_until = time.monotonic() + 120
        while self.hold_while is not None and self.hold_while.exists():
            if time.monotonic() > held_until:
                raise EnvironmentFault(f"{NAME}: held for 120 s by {self.hold_while}")
            time.sleep(0.05)
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
    reset_delay_s: float = 0.0,
    start_log: Path | None = None,
    starts_allowed: int = -1,
    hold_while: Path | None = None,
) -> LampPanel:
    return LampPanel(
        workdir, step_delay_s, fail_reset, broken_observation, reset_delay_s, start_log,
        starts_allowed, hold_while,
    )  # fmt: skip


ENTRY = EnvEntry(
    name=NAME,
    factory=create,
    summary="a panel of lamps (the live commands' tests)",
    check_kinds=KINDS,
    locator_keys=("text",),
    python_modules=("PIL",),
)
