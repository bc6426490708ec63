"""`--executor threads` (the default): every environment in this process, each instance in a
worker thread of its own (environments use synchronous Playwright / subprocess / pyatspi).

A slot's instances, the active one and its spares, are a `seats.SlotSeats`: every environment
call of the runner runs on the active instance's thread; what waits for an instance (its start,
a spare's preparation, a swap) runs on the slot's control thread, each wait bounded by the call
timeout."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from medspot.errors import MedspotError
from medspot.live.core.contract import Environment, EnvironmentFault, Observation
from medspot.live.core.episode import Boxes, Mode
from medspot.live.core.processes import WORKDIR_PREFIX
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.executors.base import (
    CallSlot,
    EpisodeCalls,
    SlotConfig,
    SpareCounts,
    create_for_slot,
    fault_from,
    private_workdir,
    reset_episode,
    slot_episode,
    timeout_fault,
)
from medspot.live.loop.executors.seats import Begun, Key, SlotSeats, Upcoming

__all__ = ["ThreadExecutor", "ThreadSlot"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class ThreadSlot(CallSlot):
    """One environment (and its spare, where it keeps one) and the threads that may touch
    them. The base's own worker thread is the slot's control thread."""

    def __init__(self, index: int, cfg: SlotConfig, on_started: Callable[[], None]) -> None:
        super().__init__(index, cfg, on_started)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.pair = SlotSeats(
            f"live-env-{index}",
            functools.partial(create_for_slot, cfg),
            lambda: private_workdir(cfg.workroot, f"{WORKDIR_PREFIX}{index}-"),
            env_name=cfg.env, spares=cfg.spares, timeout_s=cfg.call_timeout_s,
            on_started=self._started, episode=functools.partial(slot_episode, cfg),
        )  # fmt: skip
        self._begun: Begun | None = None

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"live-slot-{self.index}")

    def _started(self) -> None:  # on the control thread: counted on the event loop's
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.on_started)

    def _worker(self) -> ThreadPoolExecutor:
        return self.pair.active.pool

    def _renew_pool_if_stuck(self) -> bool:
        if not self._stuck:
            return False
        self.pair.active.abandon_thread()
        self._stuck = False
        return True

    async def _control(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the control thread: what waits for the instances (each wait is
        bounded there; this bound is a last net)."""
        self._loop = asyncio.get_running_loop()
        fut = self._loop.run_in_executor(self._pool, functools.partial(fn, *args))
        t0 = time.perf_counter()
        try:
            return await asyncio.wait_for(fut, 3 * self.cfg.call_timeout_s)
        except TimeoutError:
            name = getattr(fn, "__name__", "call")
            raise timeout_fault(self.cfg.env, name, 3 * self.cfg.call_timeout_s) from None
        except (EnvironmentFault, asyncio.CancelledError, MedspotError):
            raise
        except Exception as e:  # a crashed browser / dead process surfaces as anything
            raise fault_from(self.cfg.env, e) from e
        finally:
            self.busy_s += time.perf_counter() - t0

    @property
    def env(self) -> Any:
        """The active instance (None before the first task and after a fault)."""
        return self.pair.active.env

    async def episode(self, task: LiveTask, mode: Mode, key: Key | None = None) -> EpisodeCalls:
        self._begun = None
        if key is not None:
            begun = await self._control(self.pair.take, task, key)
            if begun is not None:
                self._begun = begun
                return begun.episode
        env = await self.ensure()
        return await self.call(slot_episode, self.cfg, env, task, mode)

    async def ensure(self) -> Environment:
        """The active instance, created and started when there is none (`live serve` starts
        its episodes on it: no spare, the next task is the agent's choice)."""
        return await self._control(self.pair.ensure)

    async def reset(self, ep: EpisodeCalls) -> tuple[Observation, Boxes | None]:
        begun = self._begun
        if begun is not None and begun.episode is ep:
            return begun.observation, begun.episode.located
        return await self.call(reset_episode, ep)

    @property
    def swapped(self) -> bool:
        return self._begun is not None

    @property
    def spare_depth(self) -> int:
        return self.pair.depth

    async def prepare(self, upcoming: Upcoming, mode: Mode) -> None:
        await self._control(self.pair.prepare, upcoming, mode)

    def spare_counts(self) -> SpareCounts:
        p = self.pair
        return SpareCounts(p.spares_started, p.swaps, p.spare_faults)

    async def discard(self) -> None:
        stuck, self._stuck = self._stuck, False
        self._begun = None
        await self._control(functools.partial(self.pair.discard, stuck=stuck))

    async def shutdown(self) -> None:
        stuck, self._stuck = self._stuck, False
        self._begun = None
        try:
            await self._control(functools.partial(self.pair.close, stuck=stuck))
        finally:
            # the threads end with the environments closed, so what they held (a browser
            # driver's event loop and its futures) is released now, while the command still
            # logs, not at interpreter exit
            await asyncio.to_thread(self._pool.shutdown, True)


class ThreadExecutor:
    name = "threads"

    def __init__(self, cfg: SlotConfig) -> None:
        self.cfg = cfg

    def open(self, slots: int) -> int:
        return slots

    def slot(self, index: int, on_started: Callable[[], None]) -> ThreadSlot:
        return ThreadSlot(index, self.cfg, on_started)

    def close(self) -> None:
        pass
