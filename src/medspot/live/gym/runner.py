"""`GymRun`: the run a Gymnasium environment drives, called from its synchronous methods.

A Gymnasium environment is one more way of acting from outside: like a served agent, its
caller brings the loop (`reset`, `step`, ...), so its episodes are those of a served run
(`loop.served.ServedRun`): slots of the spec's executor (threads, Ray, containers; spares),
each episode driven by the one episode driver (`loop.driver`) with the caller's actions as its
source, journaled into a live run folder as `live run` writes it. The served run lives on an
asyncio loop in a thread of its own (started at the first `start`); each method here runs one
coroutine there and waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from medspot.errors import MedspotError
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import PixelBox
from medspot.live.core.episode import Mode
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.loop.driver import Shown
from medspot.live.loop.served import FREE_WAIT_S, ServedEpisode, ServedRun, ServeOptions
from medspot.live.loop.sources import EpisodeEnded

__all__ = ["GymRun"]

T = TypeVar("T")

CLOSE_WAIT_S = 300.0  # the longest close waits for the run to end its episode and slots


class GymRun:
    """The served run of one Gymnasium environment (module docstring): `start` a task's
    episode (leaving the one before), `act`, `oracle`, `discard` after a fault, `close`.
    `agent` is run.json's model (the caller's name for its policy)."""

    def __init__(self, opts: ServeOptions, agent: str) -> None:
        self.opts = opts
        self.agent = agent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._run: ServedRun | None = None
        self._episode: ServedEpisode | None = None
        self._closed = False

    def _call(self, make: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """`make()` awaited on the run's loop; its result (or its exception)."""
        loop = self._loop
        assert loop is not None

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout)

    def _open(self) -> ServedRun:
        if self._closed:
            raise MedspotError("the Gymnasium environment is closed")
        if self._run is not None:
            return self._run
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="medspot-gym-run", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread

        async def open_run() -> ServedRun:
            run = ServedRun(self.opts)
            try:
                await run.open()
                run.agent(self.agent, self.agent, "")
            except BaseException:
                await run.close()
                raise
            return run

        try:
            self._run = self._call(open_run)
        except BaseException:
            self._stop_loop()
            raise
        return self._run

    def start(self, task: LiveTask, mode: Mode) -> Shown:
        """A new episode of `task` (the one running before is left: `abandoned`); its first
        screen. A fault of the reset is an `EnvironmentFault` (journaled as such)."""
        run = self._open()

        async def start() -> Shown:
            await self._leave("the Gymnasium environment was reset before the episode ended")
            slot = await run.acquire(task, FREE_WAIT_S)
            if slot is None:  # one slot, given back when the episode before ended
                raise MedspotError("the environment was not given back by the episode before")
            self._episode = episode = await run.start(task, slot, mode)
            return episode.shown

        return self._call(start)

    async def _leave(self, reason: str) -> None:
        episode, self._episode = self._episode, None
        if episode is not None and not episode.ended:
            await episode.leave(reason)

    def _running(self) -> ServedEpisode:
        episode = self._episode
        if episode is None or episode.ended:
            raise EpisodeEnded()
        return episode

    def act(
        self, action: LiveAction | None, *, raw: str | None, flags: tuple[str, ...], source: str
    ) -> Shown:
        """One step of the running episode (None: a no-action step); what it shows after."""
        episode = self._running()
        return self._call(lambda: episode.act(action, raw=raw, flags=flags, source=source))

    def oracle(self) -> LiveAction | None:
        """The oracle's action for the running episode's current step on its screen."""
        episode = self._running()
        return self._call(episode.oracle_action)

    def locate(self, locator: Locator) -> PixelBox | None:
        """Where the element `locator` names is on the running episode's screen."""
        episode = self._running()
        return self._call(lambda: episode.locate(locator))

    def discard(self, reason: str) -> None:
        """After a fault the episode did not see (a screen of the wrong size): the episode is
        left, its environment thrown away (the next start makes a fresh one)."""
        episode = self._episode
        if episode is None:
            return

        async def discard() -> None:
            await self._leave(reason)
            await episode.slot.discard()

        self._call(discard)

    def close(self) -> None:
        """Leave the running episode, write the results and run.json's final status, stop
        the environments and the loop (idempotent)."""
        if self._closed:
            return
        self._closed = True
        run = self._run
        if run is None or self._loop is None:
            self._stop_loop()
            return

        async def close() -> None:
            try:
                await self._leave("the Gymnasium environment was closed")
            finally:
                await run.close()

        try:
            self._call(close, CLOSE_WAIT_S)
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(CLOSE_WAIT_S)
        if not loop.is_running():
            loop.close()
