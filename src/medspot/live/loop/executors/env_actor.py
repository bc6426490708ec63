"""The body of one environment actor (`--executor ray`) and of the worker in an environment
container (`--executor container`, `container_worker`): ONE environment slot (its instance
and, where the environment keeps them, its spares: `seats.SlotSeats`, each instance on a thread of
its own) and the `Episode` of its current task, in the actor's process on whichever node Ray
placed it.

It creates, starts, resets, steps and closes the environment through the same `Episode` and
environment contract as the thread executor; it returns plain data (the `Observation` with its
screen as PNG bytes, `StepResult` with the next screen's boxes, actions) and the episode's
counters (`EpisodeState`) with every answer, so that the runner's stand-in
(`remote.RemoteEpisode`) reads them without a second round trip: a step is one call. It
uses no shared file system: its private folder is on its node (the instances' folders inside
it).
Nothing here imports Ray; `ray_actors` wraps the class with `ray.remote`.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from medspot._version import __version__
from medspot.errors import MedspotError
from medspot.live.core import processes
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import Environment, Observation, PixelBox
from medspot.live.core.episode import Boxes, Episode, Mode, StepResult
from medspot.live.core.processes import WORKDIR_PREFIX
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.loop.executors.base import (
    SlotConfig,
    SpareCounts,
    create_for_slot,
    fault_from,
    private_workdir,
    slot_episode,
)
from medspot.live.loop.executors.seats import Key, SlotSeats, Upcoming

__all__ = ["ActorPlace", "EnvironmentHost", "EpisodeState"]

T = TypeVar("T")


@dataclass(frozen=True)
class EpisodeState:
    """The counters of the actor's episode after a call, the time the call took inside the
    actor (the rest of a round trip is Ray's), and what the slot's spare does (`swapped`: the
    last reset was the spare swapped in)."""

    n: int
    current: int
    achieved: tuple[bool, ...]
    reset_s: float
    inside_s: float
    swapped: bool = False
    spare_depth: int = 0
    spares: SpareCounts = field(default_factory=SpareCounts)


@dataclass(frozen=True)
class ActorPlace:
    """Where an environment actor runs."""

    pid: int
    node_id: str
    hostname: str
    medspot_version: str


class _ReapedChildNoise(logging.Filter):
    """Drop asyncio's "Unknown child process pid N" warning: with Ray's subreaper (a killed
    actor's processes are killed too) the worker ignores SIGCHLD, so the kernel reaps the
    environment's children before Playwright's watcher can; their exit is expected."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unknown child process pid")


class EnvironmentHost:
    """One environment and its current `Episode`, inside an actor. Every method but `place`
    and `close` answers with the episode's state; anything the environment raises that is not
    a medspot error comes back as an `EnvironmentFault` (a plain, picklable exception)."""

    def __init__(self, cfg: SlotConfig, index: int) -> None:
        self.cfg = cfg
        self.index = index
        self.pair: SlotSeats | None = None
        self.workdir: Path | None = None  # the actor's folder (its instances' folders in it)
        self.ep: Episode | None = None
        self.swapped = False
        logging.getLogger("asyncio").addFilter(_ReapedChildNoise())

    @property
    def env(self) -> Environment | None:
        """The active instance."""
        return self.pair.active.env if self.pair is not None else None

    def _on_env(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on the active instance's thread."""
        if self.pair is None:
            raise RuntimeError("the environment is not started")
        return self.pair.run(self.pair.active, fn, *args, **kwargs)

    def _guard(self, fn: Callable[[], T]) -> tuple[T, EpisodeState]:
        t0 = time.perf_counter()
        try:
            out = fn()
        except MedspotError:
            raise
        except Exception as e:
            raise fault_from(self.cfg.env, e) from None
        return out, self._state(time.perf_counter() - t0)

    def _state(self, inside_s: float) -> EpisodeState:
        ep, pair = self.ep, self.pair
        spare: dict[str, Any] = {}
        if pair is not None:
            spare = {
                "swapped": self.swapped, "spare_depth": pair.depth,
                "spares": SpareCounts(pair.spares_started, pair.swaps, pair.spare_faults),
            }  # fmt: skip
        if ep is None:
            return EpisodeState(0, 0, (), 0.0, inside_s, **spare)
        return EpisodeState(ep.n, ep.current, tuple(ep.achieved), ep.reset_s, inside_s, **spare)

    def _episode(self) -> Episode:
        if self.ep is None:
            raise RuntimeError("no episode: reset() first")
        return self.ep

    # -- life cycle ---------------------------------------------------------------------------

    def place(self) -> ActorPlace:
        """This process: in a Ray actor, its node's id (Ray is imported there already); in a
        container's worker, no node id."""
        ray = sys.modules.get("ray")
        node = ray.get_runtime_context().get_node_id() if ray is not None else ""
        return ActorPlace(os.getpid(), node, socket.gethostname(), __version__)

    def start(self) -> ActorPlace:
        """Create and start the environment; where it runs."""

        def go() -> None:
            # the actor claims its folder and sweeps what dead actors (and runs) on this node
            # left beside it (`core.processes`); each instance claims its own folder in it
            home = private_workdir(self.cfg.workroot, f"{WORKDIR_PREFIX}{self.index}-")
            self.workdir = home
            processes.claim(home)
            processes.sweep(home.parent, keep=home)
            # this process is the environment's alone: what its programs put in the temp
            # folder (the browser's profile) goes into its private folder, removed with it
            os.environ["TMPDIR"] = str(home)
            tempfile.tempdir = None
            self.pair = SlotSeats(
                f"medspot-env-{self.index}", lambda wd: create_for_slot(self.cfg, wd),
                lambda: private_workdir(home, WORKDIR_PREFIX), env_name=self.cfg.env,
                spares=self.cfg.spares, timeout_s=self.cfg.call_timeout_s,
                episode=functools.partial(slot_episode, self.cfg),
            )  # fmt: skip
            self.pair.ensure()

        self._guard(go)
        return self.place()

    def close(self) -> None:
        pair, self.pair, self.ep = self.pair, None, None
        try:
            if pair is not None:
                pair.close()
        finally:
            if self.workdir is not None:
                processes.stop_folder(self.workdir)
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    # -- the episode (the same `Episode` as in the runner's own process) ---------------------

    def reset(
        self, task: LiveTask, mode: Mode, key: Key | None = None
    ) -> tuple[tuple[Observation, Boxes | None], EpisodeState]:
        """The task's start: the spare prepared for `key` swapped in, or a reset of the
        active instance (a new one after a fault); and its first step's boxes on it as the
        reset located them (None: locating failed; the runner asks `intended` then, where a
        fault is handled)."""

        def go() -> tuple[Observation, Boxes | None]:
            if self.pair is None:
                raise RuntimeError("the environment is not started")
            self.ep, self.swapped = None, False
            begun = self.pair.take(task, key) if key is not None else None
            if begun is None:
                env = self.pair.ensure()
                self.ep = self._on_env(slot_episode, self.cfg, env, task, mode)
                return self._on_env(self.ep.reset), self.ep.located
            self.ep, self.swapped = begun.episode, True
            return begun.observation, begun.episode.located

        return self._guard(go)

    def prepare(self, upcoming: Upcoming, mode: Mode) -> EpisodeState:
        """Bring the spares to the next tasks' starts in the background (returns at once)."""
        if self.pair is not None:
            self.pair.prepare(upcoming, mode)
        return self._state(0.0)

    def start_checks(self) -> tuple[dict[str, list[bool]], EpisodeState]:
        return self._guard(lambda: self._on_env(self._episode().start_checks))

    def intended(self) -> tuple[Boxes, EpisodeState]:
        return self._guard(lambda: self._on_env(self._episode().intended))

    def oracle_action(self) -> tuple[LiveAction | None, EpisodeState]:
        return self._guard(lambda: self._on_env(self._episode().oracle_action))

    def locate(self, locator: Locator) -> tuple[PixelBox | None, EpisodeState]:
        return self._guard(lambda: self._on_env(self._episode().locate, locator))

    def step(
        self, action: LiveAction | None, flags: tuple[str, ...] = ()
    ) -> tuple[StepResult, EpisodeState]:
        return self._guard(lambda: self._on_env(self._episode().step, action, flags=flags))

    def look(self) -> tuple[tuple[Observation, Boxes | None], EpisodeState]:
        """The screen again (no action), and the current step's boxes on it."""

        def go() -> tuple[Observation, Boxes | None]:
            ep = self._episode()
            return self._on_env(ep.look), ep.located

        return self._guard(go)

    def echo(self, payload: Any) -> Any:
        """A round trip that does nothing (benchmarks: Ray's own cost of a call)."""
        return payload
