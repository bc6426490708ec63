"""The contract every live environment implements.

An environment owns real processes (a server, a browser, an X server, an application). It is
used from ONE thread only (the live runner gives each environment a worker thread of its own),
so implementations may use synchronous clients (Playwright's sync API, subprocess, pyatspi).

Life cycle: `start()` once (launch processes), then for each task `reset(task)` (bring the
application to the task's start state; fast: reuse processes), `observe()` / `act(action)` /
`check(spec)` as often as needed, and `close()` once at the end (idempotent; also after a fault).

Faults of the environment itself (the server died, the browser crashed, an action never
settled) raise `EnvironmentFault`: the runner records an environment error, throws the
environment away, and retries the task on a fresh one. They are never model failures. Bad task
data raises `medspot.errors.DataError` with a location.

An action reaches `act` only once `medspot.live.core.executable` found it executable (its
points finite and on the screen, its scroll and text within bounds, its key in the
environment's key table), so an action the model got wrong is never a fault. An environment
declares the keys its driver presses as `key_table` (a `medspot.live.core.keys.KeyTable`:
`drivers.web.KEY_TABLE`, `drivers.x11.KEY_TABLE`); without one, the action format's
(Playwright's) names are the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from medspot.errors import MedspotError

if TYPE_CHECKING:
    from medspot.live.core.actions import LiveAction
    from medspot.live.core.tasks import CheckSpec, LiveTask, Locator

__all__ = [
    "ActResult",
    "ElementInfo",
    "Environment",
    "EnvironmentFault",
    "Observation",
    "PixelBox",
]


class EnvironmentFault(MedspotError):
    """The environment failed (process died, browser crashed, settle timeout): not the model's
    fault. The runner retries the task on a fresh environment."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class PixelBox:
    """A box in screenshot pixels: (x1, y1) top-left, (x2, y2) bottom-right, exclusive."""

    x1: float
    y1: float
    x2: float
    y2: float

    @property
    def center(self) -> tuple[float, float]:
        return (self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2

    def contains(self, x: float, y: float) -> bool:
        return self.x1 <= x < self.x2 and self.y1 <= y < self.y2


@dataclass(frozen=True, slots=True)
class Observation:
    """What the model sees: a PNG screenshot of the application, and where it is."""

    png: bytes
    width: int
    height: int
    url: str | None = None  # web environments: the page URL (with its hash route)
    title: str | None = None  # the page or window title


@dataclass(frozen=True, slots=True)
class ElementInfo:
    """The element under a point (DOM element or AT-SPI accessible), for "did the click hit the
    intended element" and for the oracle. `key` identifies it stably within one screen."""

    key: str  # e.g. a CSS path or an AT-SPI path
    role: str  # tag or AT-SPI role
    name: str  # visible text / accessible name (trimmed)
    box: PixelBox


@dataclass(frozen=True, slots=True)
class ActResult:
    """What executing one action did: how long the application took to settle and whether the
    screen changed (None when the environment cannot tell)."""

    settle_s: float
    changed: bool | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """One running instance of an application under test."""

    name: str  # the registry name, e.g. "orthanc-explorer"
    viewport: tuple[int, int]  # (width, height) of its screenshots

    def start(self) -> None: ...

    def reset(self, task: LiveTask) -> Observation:
        """Bring the application to the task's start state and return the first screen."""
        ...

    def observe(self) -> Observation: ...

    def act(self, action: LiveAction) -> ActResult:
        """Execute the action (pixels of the last observation) and wait until settled."""
        ...

    def check(self, spec: CheckSpec) -> bool:
        """Whether the application's state satisfies `spec` now (kinds this env declares)."""
        ...

    def locate(self, locator: Locator) -> PixelBox | None:
        """The on-screen box of the element `locator` names (visible, hit-testable), or None."""
        ...

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        """The element a click at (x, y) would hit, or None."""
        ...

    def close(self) -> None: ...
