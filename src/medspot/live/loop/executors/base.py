"""What the runner needs of a place where environments run: a slot per environment.

A *slot* holds one environment (created and started on first use, thrown away after a fault)
and runs every call on it, one at a time, each bounded by the call timeout; an *executor* makes
the slots and owns what they share (nothing for threads, the Ray connection for Ray actors).
The runner drives a task through the slot's *episode*: the same `Episode` (`core/episode.py`)
wherever the environment runs; it calls `ep = await slot.episode(task, mode, key)`, `await
slot.reset(ep)` (the first observation and its intended boxes: one call),
`slot.call(ep.step, action)` (one call a step: the step's result holds the next screen's
boxes), ... The agent, the journal and the run folder
stay in the runner's process. Where the environment declares spares
(`core.contract.SpareCapable`), the slot keeps them (`seats.SlotSeats`): the runner says which
tasks come next (`slot.prepare`, as many as `spare_depth`), the spares are brought to their
starts meanwhile, and the next `episode` of such a task swaps its spare in, already reset.

Every slot runs its calls in a worker thread of its own (`CallSlot`): the environment's own
thread for `threads`, a thread waiting on the actor for `ray`. A call that does not return in
`call_timeout_s` is an `EnvironmentFault`, as is anything an environment raises that is not a
medspot error.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from medspot.errors import ConfigError, MedspotError
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import Environment, EnvironmentFault, Observation, PixelBox
from medspot.live.core.episode import Boxes, Episode, Mode, StepResult
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.core.tools import Toolset, tool_reach
from medspot.live.envs.registry import create_environment, env_entry
from medspot.live.loop.executors.seats import Key, Upcoming

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "CallSlot",
    "EnvSlot",
    "EpisodeCalls",
    "Executor",
    "SlotConfig",
    "SpareCounts",
    "create_for_slot",
    "episode_tools",
    "fault_from",
    "private_workdir",
    "reset_episode",
    "slot_episode",
    "timeout_fault",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
DEFAULT_CALL_TIMEOUT_S = 180.0  # an environment call that never returns is a fault


@dataclass(frozen=True)
class SlotConfig:
    """What every slot of a run needs to make its environment: the part of the run's
    `envspec.EnvSpec` that slots take (`EnvSpec.slot_config`; what a Ray actor receives,
    pickled: never more)."""

    env: str
    env_options: Mapping[str, Any] = field(default_factory=dict)
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    workroot: Path | None = None  # where environments' private folders go (default: temp)
    tools: str | None = None  # the toolset offered beside the GUI (`--tools`), or none
    # spare instances per slot, prepared for the next tasks (`seats`): None the environment's
    # `SparePlan` (its `count` when `default` is on), 0 none (`--no-spare`; `live serve`: the
    # next task is the agent's choice, not known in advance), N that many (`--spares N`)
    spares: int | None = None


@dataclass(frozen=True)
class SpareCounts:
    """What a slot's spares did: instances started as spares, swapped in, failed."""

    started: int = 0
    swaps: int = 0
    faults: int = 0


def episode_tools(env: Environment, task: LiveTask, cfg: SlotConfig) -> Toolset | None:
    """The toolset an episode of `task` is offered (`cfg.tools`): none for a task whose end
    state the toolset cannot reach (`tool_reach`: it stays GUI-only)."""
    if cfg.tools is None:
        return None
    make = getattr(env, "toolset", None)
    toolset: Toolset | None = make(cfg.tools) if callable(make) else None
    if toolset is None:
        raise ConfigError(f"{cfg.env} offers no toolset {cfg.tools!r} (--tools)")
    reach = tool_reach(task, env_entry(cfg.env).check_kinds, toolset.reads)
    return toolset if reach.reachable else None


def reset_episode(ep: EpisodeCalls) -> tuple[Observation, Boxes | None]:
    """`ep.reset()` and the first screen's boxes as the reset located them (no further
    environment work): a slot's reset, one call."""
    return ep.reset(), ep.located


def slot_episode(cfg: SlotConfig, env: Environment, task: LiveTask, mode: Mode) -> Episode:
    """An episode of `task` on `env` as a slot runs it: with the toolset it is offered
    (`episode_tools`). Used for the active instance and for a spare alike."""
    return Episode(env, task, mode=mode, tools=episode_tools(env, task, cfg))


class EpisodeCalls(Protocol):
    """What the runner uses of an episode: `Episode` itself, or its stand-in for an episode
    that runs elsewhere (a Ray actor). Its methods are called through `EnvSlot.call`."""

    @property
    def mode(self) -> Mode: ...
    @property
    def n(self) -> int: ...
    @property
    def current(self) -> int: ...
    @property
    def achieved(self) -> Sequence[bool]: ...
    @property
    def reset_s(self) -> float: ...
    @property
    def located(self) -> Boxes | None: ...

    def reset(self) -> Observation: ...
    def start_checks(self) -> dict[str, list[bool]]: ...
    def intended(self) -> Boxes: ...
    def oracle_action(self) -> LiveAction | None: ...
    def locate(self, locator: Locator) -> PixelBox | None: ...
    def step(self, action: LiveAction | None, *, flags: tuple[str, ...] = ()) -> StepResult: ...
    def look(self) -> Observation: ...


class EnvSlot(Protocol):
    """One environment of a run and the one worker that may touch it."""

    index: int
    busy_s: float  # time spent inside environment calls

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on this slot's worker, bounded by the call timeout; a fault of
        the environment (or of the machinery that reaches it) is an `EnvironmentFault`."""
        ...

    async def episode(self, task: LiveTask, mode: Mode, key: Key | None = None) -> EpisodeCalls:
        """A new episode of `task` on this slot's environment (created and started if
        needed); with `key` ((task id, repeat)), the spare prepared for it where there is one
        (swapped in: its episode is reset already)."""
        ...

    async def reset(self, ep: EpisodeCalls) -> tuple[Observation, Boxes | None]:
        """The episode's first observation and its current step's boxes on it (None: they
        could not be located there; `ep.intended()` says why): `ep.reset()`, or the swapped-in
        spare's start. One call: the reset locates the boxes as `step` does the next ones."""
        ...

    @property
    def swapped(self) -> bool:
        """Whether the last `episode` was a spare swapped in."""
        ...

    @property
    def spare_depth(self) -> int:
        """How many of its next tasks this slot prepares spares for (`prepare`; 0: none)."""
        ...

    async def prepare(self, upcoming: Upcoming, mode: Mode) -> None:
        """Bring the spares to the start of the slot's next tasks ((task, key) in the order
        it runs them) in the background; returns at once."""
        ...

    def spare_counts(self) -> SpareCounts: ...

    async def discard(self) -> None:
        """Throw the environment away (after a fault); the next episode starts a fresh one."""
        ...

    async def shutdown(self) -> None: ...


class Executor(Protocol):
    """Makes the slots of one run and owns what they share."""

    name: str

    def open(self, slots: int) -> int:
        """Prepare for `slots` environments side by side; returns how many can run."""
        ...

    def slot(self, index: int, on_started: Callable[[], None]) -> EnvSlot: ...

    def close(self) -> None: ...


def fault_from(env: str, e: BaseException) -> EnvironmentFault:
    """An exception an environment raised (a crashed browser, a dead process: anything), as
    the environment fault it is."""
    return EnvironmentFault(f"{env}: {type(e).__name__}: {e}")


def timeout_fault(env: str, name: str, timeout_s: float) -> EnvironmentFault:
    return EnvironmentFault(f"{env}: {name} did not return in {timeout_s:.0f} s")


def private_workdir(root: Path | None, prefix: str) -> Path:
    """A fresh private folder for one environment, under `root` (default: the temp folder)."""
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def create_for_slot(cfg: SlotConfig, workdir: Path) -> Environment:
    """The slot's environment (not started); an option its factory does not take is the
    user's error (`--env-option`), not a fault."""
    try:
        return create_environment(cfg.env, workdir=workdir, **dict(cfg.env_options))
    except TypeError as e:
        raise ConfigError(f"{cfg.env}: {e} (--env-option)") from None


class CallSlot(ABC):
    """The part every slot shares: one worker thread, calls bounded by the call timeout."""

    def __init__(self, index: int, cfg: SlotConfig, on_started: Callable[[], None]) -> None:
        self.index = index
        self.cfg = cfg
        self.on_started = on_started
        self.busy_s = 0.0
        self._stuck = False  # a call timed out: its thread may still be blocked in it
        self._pool = self._new_pool()

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"live-env-{self.index}")

    def _renew_pool_if_stuck(self) -> bool:
        """Leave a blocked thread behind (a fresh one for what follows); whether it was."""
        if not self._stuck:
            return False
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()
        self._stuck = False
        return True

    def _worker(self) -> ThreadPoolExecutor:
        """The thread `call` runs on."""
        return self._pool

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._worker(), functools.partial(fn, *args, **kwargs))
        t0 = time.perf_counter()
        try:
            return await asyncio.wait_for(fut, self.cfg.call_timeout_s)
        except TimeoutError:
            self._stuck = True
            name = getattr(fn, "__name__", "call")
            raise timeout_fault(self.cfg.env, name, self.cfg.call_timeout_s) from None
        except (EnvironmentFault, asyncio.CancelledError):
            raise
        except MedspotError:
            raise
        except Exception as e:  # a crashed browser / dead process surfaces as anything
            raise fault_from(self.cfg.env, e) from e
        finally:
            self.busy_s += time.perf_counter() - t0

    async def shutdown(self) -> None:
        await self.discard()
        # the thread ends with the environment closed, so what it held (a browser driver's
        # event loop and its futures) is released now, while the command still logs, not
        # at interpreter exit; a thread stuck in a call that never returned is left behind
        await asyncio.to_thread(self._pool.shutdown, not self._stuck)

    @abstractmethod
    async def episode(self, task: LiveTask, mode: Mode, key: Key | None = None) -> EpisodeCalls: ...

    @abstractmethod
    async def reset(self, ep: EpisodeCalls) -> tuple[Observation, Boxes | None]: ...

    @abstractmethod
    async def discard(self) -> None: ...
