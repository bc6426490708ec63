"""`--executor threads` (the default): every environment in this process, each in a worker
thread of its own (environments use synchronous Playwright / subprocess / pyatspi)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from medspot.live.core.contract import Environment
from medspot.live.core.episode import Episode, Mode
from medspot.live.core.processes import WORKDIR_PREFIX
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.executors.base import (
    CallSlot,
    SlotConfig,
    create_for_slot,
    episode_tools,
    private_workdir,
)

__all__ = ["ThreadExecutor", "ThreadSlot"]

log = logging.getLogger(__name__)


class ThreadSlot(CallSlot):
    """One environment and the one thread that may touch it."""

    def __init__(self, index: int, cfg: SlotConfig, on_started: Callable[[], None]) -> None:
        super().__init__(index, cfg, on_started)
        self.env: Environment | None = None
        self.workdir: Path | None = None

    async def ensure(self) -> Environment:
        if self.env is None:
            self.workdir = private_workdir(self.cfg.workroot, f"{WORKDIR_PREFIX}{self.index}-")
            env = await self.call(create_for_slot, self.cfg, self.workdir)
            self.env = env
            self.on_started()
            await self.call(env.start)
        return self.env

    async def episode(self, task: LiveTask, mode: Mode) -> Episode:
        env = await self.ensure()
        tools = await self.call(episode_tools, env, task, self.cfg)
        return Episode(env, task, mode=mode, tools=tools)

    async def discard(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            self._renew_pool_if_stuck()  # its thread is blocked: close from a fresh thread
            try:
                await self.call(env.close)
            except Exception as e:  # closing a broken environment may fail too
                log.warning("%s: closing a failed environment: %s", self.cfg.env, e)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


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
