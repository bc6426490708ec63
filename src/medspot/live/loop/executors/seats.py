"""A slot's environment and its spare: the pipelined starts of a live run.

A slot holds one *active* instance of its environment, which runs the current task. When the
environment declares a `SparePlan` (`medspot.live.core.contract.SpareCapable`) and the run keeps
spares (the plan's default, or `--no-spare`), the slot also holds a *spare*: a second instance
that is brought to the NEXT task's start (created and started once, then `Episode.reset` for
that task, `start.prepare` included) on a thread of its own while the current task runs. When
the current task ends, the spare prepared for the next task is swapped in (`swap_in`: the start
screen as it shows now) and becomes the active instance; the instance that ran the task becomes
the spare, reset in the background for the task after. The wait between two tasks is then a
swap, not a reset.

Each instance lives with the one thread that may touch it (a `Seat`): it is created, started,
used and closed there, and its processes' parent-death signal follows that thread
(`medspot.live.core.processes`), so a spare dies with the run like any environment. The spare is
an instance like the active one (the same options, its own private folder), reset completely:
what `Episode.reset` guarantees does not depend on which instance runs it.

What the spare does is never the task's: a spare that fails to start, to reset or to swap in is
an environment fault *of the spare* (logged, counted in `spare_faults`, the spare thrown away
and started again for a later task); the task is then reset on the active instance as without
spares, and its own faults are journaled as before. After `MAX_SPARE_FAULTS` in a row the slot
keeps no spare for the rest of the run. A task data error (`DataError`) or a settings error
(`ConfigError`: a `--tools` the environment lacks) met while preparing is left to the task's own
reset, which raises it where the runner expects it.

Used from one controlling thread at a time (the slot's caller); every environment call runs on
its instance's seat. `SeatPair` is synchronous: the thread executor runs it for an asyncio
runner (`threads.ThreadSlot`), a Ray actor in its own process (`env_actor.EnvironmentHost`).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from medspot.errors import ConfigError, DataError
from medspot.live.core import processes
from medspot.live.core.contract import (
    Environment,
    EnvironmentFault,
    Observation,
    SparePlan,
    spare_plan,
)
from medspot.live.core.episode import Episode, Mode
from medspot.live.core.tasks import LiveTask

__all__ = ["MAX_SPARE_FAULTS", "Begun", "Key", "Seat", "SeatPair"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Key = tuple[str, int]  # what a spare is prepared for: (task id, repeat)
MAX_SPARE_FAULTS = 3  # spare faults in a row after which a slot keeps no spare
CLOSE_WAIT_S = 60.0  # a spare's close, waited for when the slot shuts down


class Seat:
    """One environment instance and the one thread that may touch it."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.pool = self._new_pool()
        self.env: Environment | None = None
        self.workdir: Path | None = None

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.label)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self.pool.submit(fn, *args)

    def abandon_thread(self) -> None:
        """Leave a thread blocked in a call behind; a fresh one for what follows."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = self._new_pool()

    def close_env(self) -> None:
        """Close the instance and remove its folder (on this seat's thread)."""
        env, self.env = self.env, None
        try:
            if env is not None:
                env.close()
        finally:
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None


@dataclass(frozen=True)
class Begun:
    """A task's start on a slot: its episode (reset), the first observation, and whether the
    spare prepared for it was swapped in."""

    episode: Episode
    observation: Observation
    swapped: bool


@dataclass
class _Preparation:
    key: Key
    reset: Future[tuple[Episode, Observation]]


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


class SeatPair:
    """The active instance of a slot and, where its environment declares one, its spare.

    `make(workdir)` creates an instance (not started), `workdir()` a fresh private folder for
    one; `spare` is the run's request (None: the environment's `SparePlan.default`);
    `timeout_s` bounds every wait for an instance (a call that does not return in it is an
    `EnvironmentFault`); `episode(env, task, mode)` makes a task's episode on an instance
    (the slot's: with its toolset), for the active instance and the spare alike."""

    def __init__(
        self,
        label: str,
        make: Callable[[Path], Environment],
        workdir: Callable[[], Path],
        *,
        env_name: str,
        spare: bool | None = None,
        timeout_s: float,
        on_started: Callable[[], None] | None = None,
        episode: Callable[[Environment, LiveTask, Mode], Episode] | None = None,
    ) -> None:
        self.env_name = env_name
        self._episode = episode or _plain_episode
        self._make = make
        self._workdir = workdir
        self.requested = spare
        self.timeout_s = timeout_s
        self.on_started = on_started
        self.active = Seat(label)
        self.spare = Seat(f"{label}s")
        self.plan: SparePlan | None = None  # the environment's, known once an instance exists
        self._prep: _Preparation | None = None
        self._spare_start: Future[None] | None = None  # the spare's start, while it is new
        self._lock = threading.Lock()  # counters are read from other threads
        self.spares_started = 0
        self.swaps = 0
        self.spare_faults = 0
        self._faults_in_a_row = 0

    # -- the active instance ----------------------------------------------------------------

    @property
    def keeps_spare(self) -> bool:
        """Whether this slot prepares spares (known once its first instance exists)."""
        if self.plan is None or self._faults_in_a_row >= MAX_SPARE_FAULTS:
            return False
        return self.plan.default if self.requested is None else self.requested

    def run(self, seat: Seat, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on `seat`'s thread, waited for (bounded by `timeout_s`)."""
        return self._result(seat, seat.submit(fn, *args), getattr(fn, "__name__", "call"))

    def _result(self, seat: Seat, fut: Future[T], name: str) -> T:
        try:
            return fut.result(timeout=self.timeout_s)
        except FutureTimeout:
            seat.abandon_thread()
            raise EnvironmentFault(
                f"{self.env_name}: {name} did not return in {self.timeout_s:.0f} s"
            ) from None
        except CancelledError:
            raise EnvironmentFault(f"{self.env_name}: {name} was cancelled") from None

    def _start(self, seat: Seat) -> Environment:
        """Create and start an instance in `seat` (on its thread); its folder is `seat.workdir`
        or a fresh one."""
        if seat.workdir is None:
            seat.workdir = self._workdir()
        env = self._make(seat.workdir)
        seat.env = env  # before start: a start that fails is closed by the caller
        env.start()
        return env

    def ensure(self) -> Environment:
        """The active instance, created and started (on its thread) when there is none."""
        seat = self.active
        if seat.env is None:
            try:
                env = self.run(seat, self._start, seat)
            finally:
                if seat.env is not None and self.on_started is not None:
                    self.on_started()
            if self.plan is None:
                self.plan = plan = spare_plan(env)
                if plan is not None and self.keeps_spare:
                    log.info("%s: a spare instance is kept for the next task (about %d MB "
                             "more; --no-spare: none)", self.env_name, plan.memory_mb)  # fmt: skip
        assert seat.env is not None
        return seat.env

    def discard(self, *, stuck: bool = False) -> None:
        """Throw the active instance away (after a fault): closed on its thread (a fresh one
        when the old one is `stuck` in a call); the next task starts a fresh one or takes the
        spare."""
        seat = self.active
        if stuck:
            seat.abandon_thread()
        if seat.env is None and seat.workdir is None:
            return
        try:
            self.run(seat, seat.close_env)
        except Exception as e:  # closing a broken environment may fail too
            log.warning("%s: closing a failed environment: %s", self.env_name, e)
            if seat.workdir is not None:
                processes.stop_folder(seat.workdir)
                shutil.rmtree(seat.workdir, ignore_errors=True)
            seat.env = seat.workdir = None

    # -- a task's start: the spare prepared for it, or a reset of the active instance --------

    def begin(self, task: LiveTask, mode: Mode, key: Key) -> Begun:
        """Start `task` on this slot: the spare prepared for `key` swapped in (`take`), else
        the active instance (created and started if needed) reset."""
        begun = self.take(task, key)
        if begun is not None:
            return begun
        env = self.ensure()
        ep = self.run(self.active, self._episode, env, task, mode)
        return Begun(ep, self.run(self.active, ep.reset), swapped=False)

    def take(self, task: LiveTask, key: Key) -> Begun | None:
        """The spare prepared for `key`, swapped in: it becomes the active instance, its
        episode reset, the start screen as it shows now (`swap_in`). None when there is no
        such spare (then the caller resets the active instance): none was prepared for `key`,
        its reset had not begun while the active instance is there (the spare was still
        starting: a reset of the active instance is the quicker way; the spare keeps starting,
        for a later task), or it failed (`spare_faults`). When a fault threw the active
        instance away and the spare is started, the spare becomes the active instance, to be
        reset for `task` by the caller (a warm instance reset instead of a new one started)."""
        prep = self._prep
        if prep is not None and prep.key == key:
            self._prep = None
            if self.active.env is not None and prep.reset.cancel():
                return None
            return self._swap_in(prep, task)
        if self.active.env is None and self.spare.env is not None and self._spare_started():
            if prep is not None:
                prep.reset.cancel()  # if it runs, the caller's reset follows it on that thread
                self._prep = None
            self._exchange()
        return None

    def _spare_started(self) -> bool:
        start = self._spare_start
        return start is None or (start.done() and _start_error(start) is None)

    def _exchange(self) -> None:
        self.active, self.spare = self.spare, self.active
        self._spare_start = None  # the spare now is the instance the active one was

    def _swap_in(self, prep: _Preparation, task: LiveTask) -> Begun | None:
        t0 = time.perf_counter()
        try:
            ep, _ = self._result(self.spare, prep.reset, "the spare's reset")
            t1 = time.perf_counter()
            swap_in = getattr(ep.env, "swap_in")  # noqa: B009  (`SpareCapable`)
            ep.observation = self.run(self.spare, swap_in, task)
        except Exception as e:
            self._spare_failed(e)
            return None
        log.debug("%s: %s swapped in (waited %.3f s for the spare's reset, swap_in %.3f s)",
                  self.env_name, task.id, t1 - t0, time.perf_counter() - t1)  # fmt: skip
        self._exchange()
        with self._lock:
            self.swaps += 1
            self._faults_in_a_row = 0
        assert ep.observation is not None
        return Begun(ep, ep.observation, swapped=True)

    def _spare_failed(self, e: BaseException) -> None:
        """The spare is thrown away (closed in the background, on its thread); a data error
        of the task or of the run's settings is not the spare's fault (the task's own reset
        raises it again)."""
        self._retire(self.spare)
        if isinstance(e, DataError | ConfigError):
            return
        with self._lock:
            self.spare_faults += 1
            self._faults_in_a_row += 1
            given_up = self._faults_in_a_row >= MAX_SPARE_FAULTS
        log.warning(
            "%s: the spare failed (an environment fault of the spare, not of the task; the "
            "task's instance is reset instead): %s", self.env_name, _first_line(e),
        )  # fmt: skip
        if given_up:
            log.warning("%s: %d spare faults in a row: no spare for the rest of the run",
                        self.env_name, MAX_SPARE_FAULTS)  # fmt: skip

    def _retire(self, seat: Seat) -> None:
        """Close `seat`'s instance in the background on its own thread (its processes are
        stopped first, so a start or reset under way there ends at once), and give the seat
        a fresh thread."""
        old, env, workdir = seat.pool, seat.env, seat.workdir
        if workdir is not None:
            processes.stop_folder(workdir)
        old.submit(_close_quietly, self.env_name, env, workdir)
        old.shutdown(wait=False)
        seat.pool, seat.env, seat.workdir = seat._new_pool(), None, None
        if seat is self.spare:
            self._spare_start = None

    # -- preparing the spare ------------------------------------------------------------------

    def prepare(self, task: LiveTask, mode: Mode, key: Key) -> None:
        """Bring the spare to `task`'s start in the background (started first when it has no
        instance); a preparation for another task that has not begun is cancelled. Returns at
        once."""
        if not self.keeps_spare:
            return
        prep = self._prep
        if prep is not None:
            if prep.key == key:
                return
            prep.reset.cancel()  # one that runs finishes; its result is not used
            self._prep = None
        start = self._spare_start
        if start is not None and start.done() and not self._spare_started():
            self._spare_failed(_start_error(start) or EnvironmentFault("the spare did not start"))
            if not self.keeps_spare:
                return
            start = None
        seat = self.spare
        if seat.env is None and start is None:
            seat.workdir = self._workdir()
            with self._lock:
                self.spares_started += 1
            start = self._spare_start = seat.submit(self._start_spare, seat)
        self._prep = _Preparation(key, seat.submit(self._reset_spare, seat, task, mode, start))

    def wait_prepared(self, timeout_s: float) -> bool:
        """Wait until the spare's preparation ended; whether the spare is ready (tests)."""
        prep = self._prep
        if prep is None:
            return False
        try:
            prep.reset.result(timeout=timeout_s)
        except Exception:
            return False
        return True

    def _start_spare(self, seat: Seat) -> None:
        try:
            self._start(seat)
        except BaseException:
            seat.close_env()
            raise

    def _reset_spare(
        self, seat: Seat, task: LiveTask, mode: Mode, start: Future[None] | None
    ) -> tuple[Episode, Observation]:
        if seat.env is None:
            why = _start_error(start) if start is not None and start.done() else None
            raise EnvironmentFault(f"{self.env_name}: the spare did not start: {why}")
        t0 = time.perf_counter()
        ep = self._episode(seat.env, task, mode)
        obs = ep.reset()
        log.debug("%s: spare ready for %s in %.2f s", self.env_name, task.id,
                  time.perf_counter() - t0)  # fmt: skip
        return ep, obs

    # -- the end ------------------------------------------------------------------------------

    def close(self, *, stuck: bool = False) -> None:
        """Close both instances and end their threads; the spare's processes are stopped
        first, so that a start or reset under way on its thread ends at once."""
        prep, self._prep = self._prep, None
        if prep is not None:
            prep.reset.cancel()
        spare = self.spare
        if spare.workdir is not None:
            processes.stop_folder(spare.workdir)
        closing = spare.submit(spare.close_env)
        try:
            self.discard(stuck=stuck)
        finally:
            closed = False
            try:
                closing.result(timeout=CLOSE_WAIT_S)
                closed = True
            except Exception as e:
                log.warning("%s: closing the spare: %s", self.env_name, _first_line(e))
                if spare.workdir is not None:
                    processes.stop_folder(spare.workdir)
            self.active.pool.shutdown(wait=not stuck)
            spare.pool.shutdown(wait=closed)


def _plain_episode(env: Environment, task: LiveTask, mode: Mode) -> Episode:
    return Episode(env, task, mode=mode)


def _start_error(start: Future[None]) -> BaseException | None:
    """What a finished start of a spare raised (a cancelled one: it never ran)."""
    if start.cancelled():
        return EnvironmentFault("the spare's start was cancelled")
    return start.exception()


def _close_quietly(env_name: str, env: Environment | None, workdir: Path | None) -> None:
    """Close a spare thrown away (on its thread, in the background) and remove its folder."""
    try:
        if env is not None:
            env.close()
    except Exception as e:
        log.info("%s: closing a failed spare: %s", env_name, _first_line(e))
    finally:
        if workdir is not None:
            processes.stop_folder(workdir)
            shutil.rmtree(workdir, ignore_errors=True)
