"""The closed loop of `live run`: tasks run in real applications, several environments side by
side, each (task, repeat) an attempt of the one episode driver (`driver.EpisodeDriver`) with the
run's agent as its action source (`sources.AgentSource`); what is here is which attempt runs
where and when, and what a fault means for the task.

Per task and repeat (`LiveOptions.repeats`: each task runs K times, repeat-major: every task's
first run, then every task's second, ...; each on a freshly reset environment, with answers
replayed from that repeat's journal only, the model's request seed the run's seed plus the
repeat): reset -> observe -> the current step is the first step of the task's path not yet
achieved (a step is achieved when its `done_if` holds, or, without one, when the executed action
hit its target's box) -> ask the agent -> act -> settle -> checks. The task ends as a success
when every `success` check holds, a harmful failure when a `fail_if` check fires (checked
first), a failure when the agent says `done` without success or the budget is spent.

Each environment lives in a slot made by the run's executor (`EnvSpec.executor`, `executors`:
a worker thread of this process, a Ray actor anywhere in a cluster, or a container of the
environment's image; environments use synchronous Playwright / subprocess / pyatspi); the
loop and the model calls are asyncio, so a served model's latency overlaps the other
environments' work; the agent, the journal and the run folder stay in this process. Every step
is journaled as it happens.
Pipelined starts: where the environment keeps spares (`EnvSpec.spares`, the environment's
`SparePlan`), a slot claims the next (task, repeat) of the queue, as many as it keeps spares
(`spare_depth`), as soon as its current task has its first observation, and its spares are
brought to those tasks' starts while the current task runs; the next task then starts with a
swap. A slot that finds the queue empty takes over the last claim of another slot, not started
yet. `between_tasks_s` of a task record is what the wait
between two tasks of a slot was: from the end of the slot's previous attempt to this task's
first observation (None for a slot's first task).
An `EnvironmentFault` (or any exception an environment raises that is not a medspot error)
throws the environment away and retries the task on a fresh one, replaying the answers already
journaled; it is never the model's failure. A fault that recurs at the same place on every fresh
environment (the same reset, or the same replayed answer: `FaultRecord.same_place`, at least
twice in a row and on every attempt the run allows) ends the task as an environment error with
its cause named and `fault_recurs` set; a resume does not run it again unless
`LiveOptions.retry_env_errors`. A failed model call ends the attempt as an error (asked again on
resume), never as a click. With `max_cost`, no new model call is started once
the run's spent cost (this run and the journal's earlier ones) reaches it: the task being run
is left unfinished (resumed later, its answers replayed) and no new task starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from medspot.errors import MedspotError
from medspot.live.agents.turn import LiveAgent
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.episode import Mode
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.driver import (
    HISTORY_MODES,
    BudgetReached,
    EpisodeDriver,
    Place,
    first_line,
    recurring_fault_reason,
)
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.executors import create_executor
from medspot.live.loop.executors.base import EnvSlot
from medspot.live.loop.livefolder import RunFolder, now_iso
from medspot.live.loop.sources import AgentSource, LiveStats
from medspot.live.loop.steplog import FaultRecord, JournalState, LiveRecord, TaskRecord
from medspot.progress import ProgressEvent
from medspot.runfolder.journal import Journal

__all__ = [
    "HISTORY_MODES",
    "LiveOptions",
    "LiveStats",
    "run_tasks",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveOptions:
    """How the loop runs a run's tasks (`request.LiveRequest.loop`); the environment they run
    in is the run's `EnvSpec`."""

    concurrency: int = 1  # environments side by side
    env_retries: int = 2  # fresh environments per task after a fault
    history: str = "actions"
    seed: int = 0
    mode: Mode = "guided"  # guided: the current step's instruction; agent: the goal only
    max_cost: float | None = None  # USD: no new model call once the run has spent this much
    retry_env_errors: bool = False  # run again the tasks given up on (their fault recurred)
    repeats: int = 1  # runs of each task, each on a freshly reset environment
    start_checks: bool = False  # read every check at each task's start (`TaskRecord`; audit)

    @property
    def recurrence(self) -> int:
        """Faults in a row at one place after which a task is given up on."""
        return max(2, self.env_retries + 1)


class _Run:
    def __init__(
        self,
        spec: EnvSpec,
        tasks: Sequence[LiveTask],
        agent: LiveAgent,
        journal: Journal,
        out: Path,
        opts: LiveOptions,
        state: JournalState,
        on_progress: Callable[[ProgressEvent], None] | None,
    ) -> None:
        self.spec = spec
        self.tasks = tasks
        self.journal = journal
        self.opts = opts
        self.state = state
        self.on_progress = on_progress
        self.stats = LiveStats(previous_cost_usd=state.spent_usd())
        self.source = AgentSource(agent, state, self.stats, opts.max_cost)
        self.driver = EpisodeDriver(
            env=spec.env, folder=RunFolder(out), record=self._append, mode=opts.mode,
            history=opts.history, seed=opts.seed, tools=spec.tools,
            start_checks=opts.start_checks, on_started=self._started,
        )  # fmt: skip
        self.done = 0
        self.total = 0
        self.task_errors = 0
        self.queue: asyncio.Queue[tuple[LiveTask, int]] = asyncio.Queue()
        # slot -> the (task, repeat)s it claimed for its spares, in its order, not started yet
        self.claims: dict[int, list[tuple[LiveTask, int]]] = {}
        self.ended: dict[int, float] = {}  # slot -> when its last attempt ended

    def _append(self, rec: LiveRecord) -> None:
        self.journal.append(rec)
        self.state.add(rec)

    async def _started(self, slot: EnvSlot, task: LiveTask) -> None:
        await self._prepare_next(slot)

    async def _prepare_next(self, slot: EnvSlot) -> None:
        """Claim the queue's next (task, repeat)s for this slot's spares, as many as it keeps
        (where it keeps any), and have the spares brought to their starts meanwhile."""
        depth = slot.spare_depth
        if depth == 0:
            return
        mine = self.claims.setdefault(slot.index, [])
        while len(mine) < depth:
            try:
                mine.append(self.queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        if mine:
            await slot.prepare([(task, (task.id, repeat)) for task, repeat in mine],
                               self.opts.mode)  # fmt: skip

    def _next(self, slot: EnvSlot) -> tuple[LiveTask, int] | None:
        """The slot's next (task, repeat): its own first claim, the queue's next, or the last
        claim of another slot, not started yet (a spare prepared it for nothing)."""
        mine = self.claims.get(slot.index)
        if mine:
            return mine.pop(0)
        try:
            return self.queue.get_nowait()
        except asyncio.QueueEmpty:
            pass
        for theirs in self.claims.values():
            if theirs:
                return theirs.pop()
        return None

    async def _task(self, slot: EnvSlot, task: LiveTask, repeat: int) -> None:
        try:
            await self._attempts(slot, task, repeat)
        finally:
            self.ended[slot.index] = time.perf_counter()

    async def _attempts(self, slot: EnvSlot, task: LiveTask, repeat: int) -> None:
        state = self.state.of(repeat)
        attempt = state.attempts.get(task.id, 0)
        last_fault = ""
        for _ in range(self.opts.env_retries + 1):
            attempt += 1
            place = Place()
            try:
                rec = await self.driver.attempt(
                    slot, task, repeat, attempt, self.source.episode(task.id, repeat), place,
                    key=(task.id, repeat), last_end=self.ended.get(slot.index),
                )  # fmt: skip
            except BudgetReached:
                return  # unfinished: resumed later, its journaled answers replayed
            except EnvironmentFault as e:
                self.stats.faults += 1
                # the whole message (a browser's log, say) goes to the log file; stderr shows
                # its first line (commands._runlog)
                log.warning("task %s, attempt %d: environment fault: %s", task.id, attempt, e)
                last_fault = str(e)
                self._append(place.fault(task.id, self.spec.env, attempt, last_fault, repeat))
                await slot.discard()
                self.ended[slot.index] = time.perf_counter()
                streak = state.fault_streak.get(task.id, [])
                if len(streak) >= self.opts.recurrence:
                    self._give_up(task, repeat, attempt, streak)
                    return
                continue
            if rec.outcome == "error":
                self.task_errors += 1
            return
        self.task_errors += 1
        self._append(TaskRecord(task=task.id, env=self.spec.env, attempt=attempt,
                                outcome="env_error", repeat=repeat,
                                reason=f"environment kept failing: {first_line(last_fault)}",
                                oracle_steps=len(task.steps), time=now_iso()))  # fmt: skip

    def _give_up(
        self, task: LiveTask, repeat: int, attempt: int, streak: Sequence[FaultRecord]
    ) -> None:
        reason = recurring_fault_reason(streak)
        log.warning("task %s: %s; not retried on a resume (--retry-env-errors)", task.id, reason)
        self.task_errors += 1
        self._append(TaskRecord(task=task.id, env=self.spec.env, attempt=attempt,
                                outcome="env_error", reason=reason, fault_recurs=True,
                                repeat=repeat,
                                oracle_steps=len(task.steps), time=now_iso()))  # fmt: skip

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(
                ProgressEvent(
                    done=self.stats.calls,
                    total=0,
                    errors=self.task_errors,
                    cost_usd=self.stats.cost_usd,
                    units_done=self.done,
                    units_total=self.total,
                    unit="task",
                )
            )

    async def run(self) -> LiveStats:
        todo: list[tuple[LiveTask, int]] = []
        for repeat in range(self.opts.repeats):  # repeat-major: every task once, then again
            st = self.state.of(repeat)
            skip = set(st.finished)
            if not self.opts.retry_env_errors:
                skip |= set(st.given_up)
            todo.extend((t, repeat) for t in self.tasks if t.id not in skip)
        self.total = len(todo)
        for t in todo:
            self.queue.put_nowait(t)
        n_slots = max(1, min(self.opts.concurrency, len(todo)))
        ex = self.spec.executor
        executor = create_executor(ex.name, self.spec.slot_config(), **ex.options())
        slots: list[EnvSlot] = []

        def started() -> None:
            self.stats.envs_started += 1

        async def worker(slot: EnvSlot) -> None:
            while not self.stats.budget_reached:
                item = self._next(slot)
                if item is None:
                    return
                await self._task(slot, *item)
                self.done += 1
                self._progress()

        try:
            if todo:
                n_slots = executor.open(n_slots)
                slots = [executor.slot(i, started) for i in range(n_slots)]
                self._progress()
                await asyncio.gather(*(worker(s) for s in slots))
        finally:
            await asyncio.gather(*(s.shutdown() for s in slots), return_exceptions=True)
            executor.close()
            for s in slots:
                c = s.spare_counts()
                self.stats.spares_started += c.started
                self.stats.swaps += c.swaps
                self.stats.spare_faults += c.faults
        return self.stats


async def run_tasks(
    spec: EnvSpec,
    tasks: Sequence[LiveTask],
    agent: LiveAgent,
    journal: Journal,
    out: Path,
    opts: LiveOptions,
    state: JournalState,
    on_progress: Callable[[ProgressEvent], None] | None = None,
) -> LiveStats:
    """Run every (task, repeat) of `tasks` (of `spec`) not finished in `state` (the journal
    read back); journal as it goes."""
    if opts.history not in HISTORY_MODES:
        raise MedspotError(f"unknown history mode {opts.history!r}")
    if opts.repeats < 1:
        raise MedspotError(f"repeats {opts.repeats}: must be 1 or more")
    return await _Run(spec, tasks, agent, journal, out, opts, state, on_progress).run()
