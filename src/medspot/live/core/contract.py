"""The contract every live environment implements, and what an environment family declares.

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

Optional capability, `SpareCapable`: an environment that declares a `SparePlan` lets the
runner's slot keep more instances of it (*spares*, `SparePlan.count`), each started and reset
for one of the NEXT tasks on a thread of its own while the current task runs; when the current
task ends the spare prepared for the next one is swapped in (`swap_in`: the prepared start
screen, now) and the used instance is reset in the background for a task after. A spare is an
instance like any other (same options, its own private folder and processes, reset completely),
so nothing else of the contract changes (`medspot.live.loop.executors.seats`).

An action reaches `act` only once `medspot.live.core.executable` found it executable (its
points finite and on the screen, its scroll and text within bounds, its key in the
environment's key table), so an action the model got wrong is never a fault. An environment
declares the keys its driver presses as `key_table` (a `medspot.live.core.keys.KeyTable`:
`drivers.web.KEY_TABLE`, `drivers.x11.KEY_TABLE`); without one, the action format's
(Playwright's) names are the table.

An environment family (one package of `medspot.live.envs`) declares itself with an `EnvEntry`:
its factory, check kinds, locator keys, system packages, packaged tasks and hooks, as
references; `medspot.live.envs.registry` lists the families.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from medspot.errors import MedspotError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from medspot.live.core.actions import LiveAction
    from medspot.live.core.checks import CheckKinds
    from medspot.live.core.tasks import CheckSpec, LiveTask, Locator

__all__ = [
    "REGISTERED",
    "ActResult",
    "ElementInfo",
    "EnvEntry",
    "Environment",
    "EnvironmentFault",
    "Observation",
    "PixelBox",
    "SpareCapable",
    "SparePlan",
    "spare_plan",
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

    def to_json(self) -> list[float]:
        """Its JSON form, `[x1, y1, x2, y2]` (the journals, Gymnasium's info)."""
        return [self.x1, self.y1, self.x2, self.y2]


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

    def to_json(self) -> dict[str, Any]:
        """Its JSON form (the journals, Gymnasium's info)."""
        return {"key": self.key, "role": self.role, "name": self.name, "box": self.box.to_json()}


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


@dataclass(frozen=True, slots=True)
class SparePlan:
    """An environment's declaration that a runner slot may keep spare instances of it, each
    brought to one of the next tasks' start while the current task runs (`SpareCapable`)."""

    # spares are on unless the run says `--no-spare`: measured to keep tasks per minute at
    # least as high as without them on two cores (benchmarks/README.md)
    default: bool
    # about what one more instance adds to the run's memory (the proportional set size of all
    # the run's processes grows by it), for docs/live.md and the run's log
    memory_mb: int
    # how many spares a slot keeps, each prepared for one of the slot's next tasks in the run's
    # order: more than one where the environment's reset outlasts a short task (the oracle's),
    # so that each spare has that many tasks' time to get ready
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"SparePlan.count must be 1 or more, not {self.count}")


@runtime_checkable
class SpareCapable(Protocol):
    """An `Environment` that declares how a spare of it is kept: its `SparePlan`, and what
    happens when an instance, reset for a task in the background, takes over."""

    spare: ClassVar[SparePlan]

    def swap_in(self, task: LiveTask) -> Observation:
        """This instance was reset for `task` (the whole `Episode.reset`, on its own thread)
        and now becomes the slot's: check that it is still alive and return the start screen
        as it shows now. Fast (a screenshot): it is all a user waits for between two tasks. A
        fault here is the spare's, not the task's (the slot then resets its instance)."""
        ...


def spare_plan(env: object) -> SparePlan | None:
    """The environment's `SparePlan`, or None when it keeps no spare."""
    plan = getattr(env, "spare", None)
    return plan if isinstance(plan, SparePlan) and callable(getattr(env, "swap_in", None)) else None


@dataclass(frozen=True)
class EnvEntry:
    """An environment family, as its package declares it (`ENTRY` in its `__init__`)."""

    name: str
    factory: Callable[..., Environment]  # factory(workdir=..., **options): not started
    summary: str
    check_kinds: CheckKinds  # the check kinds its `check` understands (names -> CheckKind)
    locator_keys: tuple[str, ...]  # the Locator keys its `locate` understands
    system_packages: tuple[str, ...] = ()  # Debian packages `medspot live setup` installs
    # the folder of its packaged task files: `<stem>.json` and `<stem>-<part>.json` beside it
    # (read as one: `medspot.live.envs.taskfiles`)
    tasks: Traversable | None = None
    python_modules: tuple[str, ...] = ("playwright", "pydicom")  # `medspot[live]` brings them
    # `doctor() -> list[str]`: what is missing beyond the packages and modules
    doctor: Callable[[], list[str]] | None = None
    # `setup() -> str`: fetch what apt-get cannot (`medspot live setup`), what it did
    setup: Callable[[], str] | None = None
    # `task_check(task) -> list[(field, message)]`: what is wrong with a task for this
    # environment beyond its checks and locator keys (start keys, seeded names in routes,
    # landmarks); `field` is a dotted path in the task ("start.route", "steps.2.target")
    task_check: Callable[[LiveTask], list[tuple[str, str]]] | None = None
    # `geometry(task) -> object | None`: what the environment knows of the images the task's
    # checks judge without starting the application (the phantom volume the task loads, the
    # seeded studies), given to each check's `CheckParams.geometry_problem` when a task is
    # checked; None for a task whose start cannot be told (`task_check` says why)
    geometry: Callable[[LiveTask], object | None] | None = None
    # the toolsets its environments offer beside the GUI (`--tools NAME`; the environment's
    # `toolset(name)` makes one: `medspot.live.core.tools`)
    toolsets: tuple[str, ...] = ()
    # what in the application, within reach of every task's actions, can destroy data (delete
    # or overwrite what a task's start holds: a Delete button, a save dialog that can name an
    # existing file), in words; None: nothing can. Such a task needs a collateral-harm rule in
    # its `fail_if` (`CheckParams.guards_collateral`), as does a task offered a toolset's tools
    # that change state; `medspot live audit` reports one without (`no_collateral_harm_rule`)
    destructive: str | None = None


# Every environment family registered in this process, by name: `medspot.live.envs.registry`
# fills it from its list (`ENVIRONMENTS`) when imported; core reads it (an `Episode` checks its
# task against its environment's entry, when there is one).
REGISTERED: dict[str, EnvEntry] = {}
