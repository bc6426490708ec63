"""A slot's environment and its spares: the pipelined starts of a live run.

A slot holds one *active* instance of its environment, which runs the current task. When the
environment declares a `SparePlan` (`medspot.live.core.contract.SpareCapable`) and the run keeps
spares (the plan's default, `--spares N` or `--no-spare`), the slot also holds that many *spares*
(`SparePlan.count` by default):
more instances, each brought to the start of one of the slot's NEXT tasks in the run's order
(created and started once, then `Episode.reset` for that task, `start.prepare` included) on a
thread of its own while the current task runs (side by side: measured faster on two cores than
one after the other, benchmarks/README.md section 9). When the
current task ends, the spare prepared for the next task is swapped in (`swap_in`: the start
screen as it shows now) and becomes the active instance; the instance that ran the task becomes
a spare, reset in the background for a task after. The wait between two tasks is then a swap,
not a reset; with two spares each one has two tasks' time to get ready.

Each instance lives with the one thread that may touch it (a `Seat`): it is created, started,
used and closed there, and its processes' parent-death signal follows that thread
(`medspot.live.core.processes`), so a spare dies with the run like any environment. A spare is
an instance like the active one (the same options, its own private folder), reset completely:
what `Episode.reset` guarantees does not depend on which instance runs it.

What a spare does is never the task's: a spare that fails to start, to reset or to swap in is
an environment fault *of the spare* (logged, counted in `spare_faults`, the spare thrown away
and started again for a later task); the task is then reset on the active instance as without
spares, and its own faults are journaled as before. After `MAX_SPARE_FAULTS` in a row the slot
keeps no spare for the rest of the run. A task data error (`DataError`) or a settings error
(`ConfigError`: a `--tools` the environment lacks) met while preparing is left to the task's own
reset, which raises it where the runner expects it.

Used from one controlling thread at a time (the slot's caller); every environment call runs on
its instance's seat. `SlotSeats` is synchronous: the thread executor runs it for an asyncio
runner (`threads.ThreadSlot`), a Ray actor in its own process (`env_actor.EnvironmentHost`).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Sequence
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

__all__ = ["MAX_SPARE_FAULTS", "Begun", "Key", "Seat", "SlotSeats", "Spare", "Upcoming"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Key = tuple[str, int]  # what a spare is prepared for: (task id, repeat)
Upcoming = Sequence[tuple[LiveTask, Key]]  # a slot's next tasks, in the order it will run them
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

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        return self.pool.submit(fn, *args, **kwargs)

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


@dataclass
class Spare:
    """A spare seat: its instance's start while it is new, and the task it is prepared for."""

    seat: Seat
    start: Future[None] | None = None
    prep: _Preparation | None = None

    def started(self) -> bool:
        """Whether its instance is started (no start under way, none failed)."""
        return self.start is None or (self.start.done() and _start_error(self.start) is None)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


class SlotSeats:
    """The active instance of a slot and, where its environment declares them, its spares.

    `make(workdir)` creates an instance (not started), `workdir()` a fresh private folder for
    one; `spares` is the run's request (None: the environment's `SparePlan`, 0: none, N: N);
    `timeout_s` bounds every wait for an instance (a call that does not return in it is an
    `EnvironmentFault`); `episode(env, task, mode)` makes a task's episode on an instance
    (the slot's: with its toolset), for the active instance and the spares alike."""

    def __init__(
        self,
        label: str,
        make: Callable[[Path], Environment],
        workdir: Callable[[], Path],
        *,
        env_name: str,
        spares: int | None = None,
        timeout_s: float,
        on_started: Callable[[], None] | None = None,
        episode: Callable[[Environment, LiveTask, Mode], Episode] | None = None,
    ) -> None:
        self.env_name = env_name
        self._episode = episode or _plain_episode
        self._make = make
        self._workdir = workdir
        self._label = label
        self.requested = spares
        self.timeout_s = timeout_s
        self.on_started = on_started
        self.active = Seat(label)
        self.spares: list[Spare] = []  # `kept(plan)` of them, once the plan is known
        self.plan: SparePlan | None = None  # the environment's, known once an instance exists
        self._lock = threading.Lock()  # counters are read from other threads
        self.spares_started = 0
        self.swaps = 0
        self.spare_faults = 0
        self._faults_in_a_row = 0
        self._retiring: list[Future[None]] = []  # spares thrown away, closing in the background

    # -- the active instance ----------------------------------------------------------------

    @property
    def depth(self) -> int:
        """How many of its next tasks this slot prepares spares for (0: none; known once its
        first instance exists)."""
        if self.plan is None or self._faults_in_a_row >= MAX_SPARE_FAULTS:
            return 0
        return self.kept(self.plan)

    def kept(self, plan: SparePlan) -> int:
        """How many spares the run keeps of an environment with this plan: the run's request,
        or the plan's `count` where spares are on by default."""
        if self.requested is not None:
            return self.requested
        return plan.count if plan.default else 0

    @property
    def keeps_spare(self) -> bool:
        """Whether this slot prepares spares (known once its first instance exists)."""
        return self.depth > 0

    def run(self, seat: Seat, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on `seat`'s thread, waited for (bounded by `timeout_s`)."""
        fut = seat.submit(fn, *args, **kwargs)
        return self._result(seat, fut, getattr(fn, "__name__", "call"))

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
                if plan is not None:
                    n = self.kept(plan)
                    self.spares = [Spare(Seat(f"{self._label}s{i}")) for i in range(n)]
                    if n:
                        log.info("%s: %d spare instance(s) kept for the next tasks (about %d "
                                 "MB each; --spares N, --no-spare: none)", self.env_name, n,
                                 plan.memory_mb)  # fmt: skip
                elif self.requested:
                    log.info("%s keeps no spare instance: it declares no SparePlan",
                             self.env_name)  # fmt: skip
        assert seat.env is not None
        return seat.env

    def discard(self, *, stuck: bool = False) -> None:
        """Throw the active instance away (after a fault): closed on its thread (a fresh one
        when the old one is `stuck` in a call); the next task starts a fresh one or takes a
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
        for a later task), or it failed (`spare_faults`). When a
        fault threw the active instance away and a spare is started, that spare becomes the
        active instance, to be reset for `task` by the caller (a warm instance reset instead of
        a new one started)."""
        for sp in self.spares:
            prep = sp.prep
            if prep is not None and prep.key == key:
                sp.prep = None
                if self.active.env is not None and prep.reset.cancel():
                    return None
                return self._swap_in(sp, prep, task)
        if self.active.env is None:
            ready = [sp for sp in self.spares if sp.seat.env is not None and sp.started()]
            if ready:
                sp = min(ready, key=lambda x: x.prep is not None)  # an idle one first
                if sp.prep is not None:
                    # if it runs, the caller's reset follows it on that thread
                    sp.prep.reset.cancel()
                    sp.prep = None
                self._exchange(sp)
        return None

    def _exchange(self, sp: Spare) -> None:
        self.active, sp.seat = sp.seat, self.active
        sp.start = None  # the spare now is the instance the active one was

    def _swap_in(self, sp: Spare, prep: _Preparation, task: LiveTask) -> Begun | None:
        t0 = time.perf_counter()
        try:
            ep, _ = self._result(sp.seat, prep.reset, "the spare's reset")
            t1 = time.perf_counter()
            swap_in = getattr(ep.env, "swap_in")  # noqa: B009  (`SpareCapable`)
            ep.observation = self.run(sp.seat, swap_in, task)
        except Exception as e:
            self._spare_failed(sp, e)
            return None
        log.debug("%s: %s swapped in (waited %.3f s for the spare's reset, swap_in %.3f s)",
                  self.env_name, task.id, t1 - t0, time.perf_counter() - t1)  # fmt: skip
        self._exchange(sp)
        with self._lock:
            self.swaps += 1
            self._faults_in_a_row = 0
        assert ep.observation is not None
        return Begun(ep, ep.observation, swapped=True)

    def _spare_failed(self, sp: Spare, e: BaseException) -> None:
        """The spare is thrown away (closed in the background, on its thread); a data error
        of the task or of the run's settings is not the spare's fault (the task's own reset
        raises it again)."""
        self._retire(sp)
        if isinstance(e, DataError | ConfigError):
            return
        with self._lock:
            self.spare_faults += 1
            self._faults_in_a_row += 1
            given_up = self._faults_in_a_row >= MAX_SPARE_FAULTS
        log.warning(
            "%s: a spare failed (an environment fault of the spare, not of the task; the "
            "task's instance is reset instead): %s", self.env_name, _first_line(e),
        )  # fmt: skip
        if given_up:
            log.warning("%s: %d spare faults in a row: no spare for the rest of the run",
                        self.env_name, MAX_SPARE_FAULTS)  # fmt: skip
            for other in self.spares:
                if other.seat.env is not None or other.start is not None:
                    self._retire(other)

    def _retire(self, sp: Spare) -> None:
        """Close `sp`'s instance in the background on its own thread (its processes are
        stopped first, so a start or reset under way there ends at once), and give the seat
        a fresh thread."""
        seat = sp.seat
        if sp.prep is not None:
            sp.prep.reset.cancel()
            sp.prep = None
        old, env, workdir = seat.pool, seat.env, seat.workdir
        if workdir is not None:
            processes.stop_folder(workdir)
        self._retiring = [f for f in self._retiring if not f.done()]
        self._retiring.append(old.submit(_close_quietly, self.env_name, env, workdir))
        old.shutdown(wait=False)
        seat.pool, seat.env, seat.workdir = seat._new_pool(), None, None
        sp.start = None

    # -- preparing the spares ---------------------------------------------------------------

    def prepare(self, upcoming: Upcoming, mode: Mode) -> None:
        """Bring the spares to the start of the slot's next tasks (`upcoming`, in the order
        the slot runs them; as many as it keeps spares) in the background, each spare started
        first when it has no instance; a preparation for a task no longer upcoming is
        cancelled if it has not begun. Returns at once."""
        want = list(upcoming)[: self.depth]
        keys = {key for _, key in want}
        for sp in self.spares:
            if sp.prep is not None and sp.prep.key not in keys:
                sp.prep.reset.cancel()  # one that runs finishes; its result is not used
                sp.prep = None
        for task, key in want:
            if any(sp.prep is not None and sp.prep.key == key for sp in self.spares):
                continue
            idle = self._idle_spare()
            if idle is None:
                return
            self._prepare_one(idle, task, mode, key)

    def _idle_spare(self) -> Spare | None:
        """A spare prepared for nothing (its failed start, found now, is a spare fault): a
        started one first."""
        for sp in self.spares:
            if sp.prep is None and sp.start is not None and sp.start.done() and not sp.started():
                self._spare_failed(sp, _start_error(sp.start) or EnvironmentFault("no start"))
        if not self.keeps_spare:
            return None
        idle = [sp for sp in self.spares if sp.prep is None]
        return min(idle, key=lambda sp: sp.seat.env is None) if idle else None

    def _prepare_one(self, sp: Spare, task: LiveTask, mode: Mode, key: Key) -> None:
        """`sp` started if it has no instance, then reset for `task`, on its thread."""
        seat = sp.seat
        if seat.env is None and sp.start is None:
            seat.workdir = self._workdir()
            with self._lock:
                self.spares_started += 1
            sp.start = seat.submit(self._start_spare, seat)
        sp.prep = _Preparation(key, seat.submit(self._reset_spare, seat, task, mode, sp.start))

    def wait_prepared(self, timeout_s: float) -> bool:
        """Wait until every spare's preparation ended; whether they all are ready (tests)."""
        preps = [sp.prep for sp in self.spares if sp.prep is not None]
        if not preps:
            return False
        try:
            for prep in preps:
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
        """Close every instance and end their threads; the spares' processes are stopped
        first, so that a start or reset under way on their threads ends at once. Spares
        thrown away earlier and still closing in the background are waited for too: nothing
        of the slot runs once this returns."""
        closing: list[tuple[Spare, Future[None]]] = []
        for sp in self.spares:
            if sp.prep is not None:
                sp.prep.reset.cancel()
                sp.prep = None
            if sp.seat.workdir is not None:
                processes.stop_folder(sp.seat.workdir)
            closing.append((sp, sp.seat.submit(sp.seat.close_env)))
        try:
            self.discard(stuck=stuck)
        finally:
            closed: dict[int, bool] = {}
            for sp, fut in closing:
                closed[id(sp)] = False
                try:
                    fut.result(timeout=CLOSE_WAIT_S)
                    closed[id(sp)] = True
                except Exception as e:
                    log.warning("%s: closing a spare: %s", self.env_name, _first_line(e))
                    if sp.seat.workdir is not None:
                        processes.stop_folder(sp.seat.workdir)
            self.active.pool.shutdown(wait=not stuck)
            for sp, _ in closing:
                sp.seat.pool.shutdown(wait=closed[id(sp)])
            for fut in self._retiring:
                try:
                    fut.result(timeout=CLOSE_WAIT_S)
                except Exception as e:  # _close_quietly raises nothing; a wait may time out
                    log.warning("%s: a spare thrown away did not close: %s", self.env_name,
                                _first_line(e))  # fmt: skip
            self._retiring = []


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
