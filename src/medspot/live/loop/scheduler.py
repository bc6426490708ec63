"""The closed loop: tasks run in real applications, several environments side by side.

Per task and repeat (`LiveOptions.repeats`: each task runs K times, repeat-major: every task's
first run, then every task's second, ...; each on a freshly reset environment, with answers
replayed from that repeat's journal only, the model's request seed the run's seed plus the
repeat): reset -> observe -> the current step is the first step of the task's path not yet
achieved (a step is achieved when its `done_if` holds, or, without one, when the executed action
hit its target's box) -> ask the agent -> act -> settle -> checks. The task ends as a success
when every `success` check holds, a harmful failure when a `fail_if` check fires (checked
first), a failure when the agent says `done` without success or the budget is spent.

Each environment lives in a slot (`executors`: a worker thread of this process, a Ray actor
anywhere in a cluster, or a container of its image; environments use synchronous Playwright /
subprocess / pyatspi); the loop and the model calls are asyncio, so a served model's latency
overlaps the other environments' work; the agent, the journal and the run folder stay in this
process. Every step is journaled as it happens.
Pipelined starts: where the environment keeps spares (`LiveOptions.spares`, the environment's
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.errors import MedspotError, ModelCallError
from medspot.live.agents.turn import (
    QUEUED,
    AgentAnswer,
    AgentTurn,
    AnsweredCallError,
    LiveAgent,
    PastTurn,
)
from medspot.live.core.actions import (
    ENDINGS,
    ActionFormatError,
    LiveAction,
    action_from_json,
    describe_action,
)
from medspot.live.core.contract import EnvironmentFault, Observation
from medspot.live.core.episode import Boxes, Mode
from medspot.live.core.tasks import LiveTask, StepSpec
from medspot.live.envs.toolsets import offered_tools, tools_fields
from medspot.live.loop.executors import ContainerOptions, ExecutorName, create_executor
from medspot.live.loop.executors.base import EnvSlot, SlotConfig
from medspot.live.loop.livefolder import RunFolder, now_iso, save_screen, screen_rel
from medspot.live.loop.steplog import FaultRecord, JournalState, StepRecord, TaskRecord
from medspot.progress import ProgressEvent
from medspot.runfolder.journal import Journal

__all__ = [
    "HISTORY_MODES",
    "LiveOptions",
    "LiveStats",
    "run_tasks",
]

log = logging.getLogger(__name__)

HISTORY_MODES = ("none", "text", "actions")
# the flag of a turn whose answer (or journaled action) cannot be turned into an action
UNREADABLE_ACTION = "unreadable_action"


@dataclass(frozen=True)
class LiveOptions(SlotConfig):
    """How the loop runs: where environments are made (`SlotConfig`: the environment, its
    options, the call timeout, the work root) and the rest of the run's options; a
    `request.LiveRequest` is one, with what the request adds."""

    concurrency: int = 1  # environments side by side
    env_retries: int = 2  # fresh environments per task after a fault
    history: str = "actions"
    seed: int = 0
    mode: Mode = "guided"  # guided: the current step's instruction; agent: the goal only
    executor: ExecutorName = "threads"  # where environments run: threads | ray | container
    ray_address: str | None = None  # ray: None starts a local cluster; "auto" / HOST:PORT
    ray_cpus_per_env: float | None = None  # ray: CPUs per environment actor (None: default)
    # container: the engine, the image, the limits of each slot's container
    container: ContainerOptions = field(default_factory=ContainerOptions)
    max_cost: float | None = None  # USD: no new model call once the run has spent this much
    retry_env_errors: bool = False  # run again the tasks given up on (their fault recurred)
    repeats: int = 1  # runs of each task, each on a freshly reset environment
    start_checks: bool = False  # read every check at each task's start (`TaskRecord`; audit)

    @property
    def recurrence(self) -> int:
        """Faults in a row at one place after which a task is given up on."""
        return max(2, self.env_retries + 1)


@dataclass
class LiveStats:
    calls: int = 0  # model calls made in this run
    replayed: int = 0  # answers taken from the journal instead
    errors: int = 0  # model-call errors
    faults: int = 0  # environment faults
    cost_usd: float = 0.0
    envs_started: int = 0
    previous_cost_usd: float = 0.0  # spent by earlier runs of this folder (the journal)
    budget_reached: bool = False  # `max_cost` stopped the run
    spares_started: int = 0  # environments started as spares (not in envs_started)
    swaps: int = 0  # tasks started on a spare swapped in
    spare_faults: int = 0  # spares that failed (never a task's fault)


@dataclass
class _Place:
    """Where an attempt is, for naming a fault: `n` the action number (0: the reset; None: the
    environment is starting), the action being executed, and whether every answer so far came
    from the journal."""

    n: int | None = None
    action: dict[str, Any] | None = None
    replayed: bool = True

    def fault(self, task: str, env: str, attempt: int, message: str, repeat: int) -> FaultRecord:
        return FaultRecord(
            task=task, env=env, attempt=attempt, message=message, n=self.n, action=self.action,
            replayed=self.replayed, repeat=repeat, time=now_iso(),
        )  # fmt: skip


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _recurring_fault_reason(streak: Sequence[FaultRecord]) -> str:
    """What a task given up on says: where its fault recurs, and the fault."""
    last = streak[-1]
    if last.n == 0:
        where = "the task's reset"
    elif last.action is not None:
        where = f"action {last.n}, {describe_action(action_from_json(last.action))}, replayed"
    else:
        where = f"action {last.n}, before the answer (the answers before it replayed)"
    return (
        f"environment fault recurs at {where}, in {len(streak)} attempts in a row (a fresh "
        f"environment for each retry): {_first_line(last.message)}"
    )


class _BudgetReached(Exception):
    """`max_cost` is reached: the attempt stops before its next model call (not journaled)."""


def _with(rec: StepRecord, **update: Any) -> StepRecord:
    """`rec` with `update`, validated (the call fields' validator runs on what is journaled)."""
    return StepRecord.model_validate({**rec.model_dump(), **update})


class _Run:
    def __init__(
        self,
        tasks: Sequence[LiveTask],
        agent: LiveAgent,
        journal: Journal,
        out: Path,
        opts: LiveOptions,
        state: JournalState,
        on_progress: Callable[[ProgressEvent], None] | None,
    ) -> None:
        self.tasks = tasks
        self.agent = agent
        self.journal = journal
        self.out = out
        self.folder = RunFolder(out)
        self.opts = opts
        self.state = state
        self.on_progress = on_progress
        self.stats = LiveStats(previous_cost_usd=state.spent_usd())
        self.sem = asyncio.Semaphore(agent.max_concurrency)
        self.done = 0
        self.total = 0
        self.task_errors = 0
        self.queue: asyncio.Queue[tuple[LiveTask, int]] = asyncio.Queue()
        # slot -> the (task, repeat)s it claimed for its spares, in its order, not started yet
        self.claims: dict[int, list[tuple[LiveTask, int]]] = {}
        self.ended: dict[int, float] = {}  # slot -> when its last attempt ended

    def _append(self, rec: StepRecord | TaskRecord | Any) -> None:
        self.journal.append(rec)
        self.state.add(rec)

    async def _save_screen(self, obs: Observation) -> str:
        return await save_screen(self.folder, obs)

    def _history_line(
        self, step: StepSpec, action: LiveAction | None, not_executed: str | None
    ) -> str | None:
        if self.opts.history == "none":
            return None
        did = describe_action(action) + (" (not executed)" if not_executed else "")
        if self.opts.mode == "agent":  # its own actions only: nothing of the oracle's path
            return did
        if self.opts.history == "text":
            return step.instruction
        return f"{step.instruction} -> {did}"

    def _replayed(self, replay: StepRecord) -> AgentAnswer:
        """A journaled answer as the agent's answer; an action that does not read back (a
        journal written by hand, or by a version that wrote it) is no action, flagged."""
        self.stats.replayed += 1
        fields = {**replay.call_fields(), "latency_s": 0.0}
        try:
            action = action_from_json(replay.action) if replay.action is not None else None
        except ActionFormatError as e:
            log.warning("task %s, turn %d: a journaled action does not read (%s); it is no "
                        "action", replay.task, replay.n, e)  # fmt: skip
            action = None
            fields["flags"] = [*fields["flags"], UNREADABLE_ACTION]
        return AgentAnswer(
            **fields,
            action=action,
            source=replay.source or "replay",
            thought=replay.thought,
            call_state=replay.call_state,
            model_calls=replay.model_calls,
        )

    async def _ask(self, turn: AgentTurn, replay: StepRecord | None) -> AgentAnswer:
        if replay is not None:
            return self._replayed(replay)
        cap = self.opts.max_cost
        if cap is not None and self.stats.previous_cost_usd + self.stats.cost_usd >= cap:
            self.stats.budget_reached = True
            raise _BudgetReached
        async with self.sem:
            try:
                ans = await self.agent.answer(turn)
            except AnsweredCallError as e:  # it answered (and cost) but may not be acted on
                self.stats.cost_usd += e.answer.cost_usd or 0.0
                raise
            except ActionFormatError as e:  # an answer that cannot become an action
                log.warning(
                    "task %s, turn %d: the agent's answer cannot be turned into an action "
                    "(%s); it is a no-action turn", turn.task.id, turn.n, e,
                )  # fmt: skip
                ans = AgentAnswer(
                    action=None, source=UNREADABLE_ACTION, flags=[UNREADABLE_ACTION],
                    not_executed=f"the answer cannot be read as an action: {e}",
                )  # fmt: skip
        if QUEUED not in ans.flags:  # a later action of an earlier answer is no new call
            self.stats.calls += 1
        self.stats.cost_usd += ans.cost_usd or 0.0
        return ans

    async def _episode(
        self, slot: EnvSlot, task: LiveTask, repeat: int, attempt: int, place: _Place
    ) -> TaskRecord:
        t0 = time.perf_counter()
        ep = await slot.episode(task, self.opts.mode, (task.id, repeat))
        place.n = 0
        obs = await slot.reset(ep)
        shown = time.perf_counter()
        last = self.ended.get(slot.index)
        between = round(shown - last, 4) if last is not None else None
        swapped = slot.swapped
        await self._prepare_next(slot)
        at_start: dict[str, list[bool]] | None = None
        if self.opts.start_checks:
            at_start = dict(await slot.call(ep.start_checks))
        history: list[str] = []
        previous: list[PastTurn] = []
        tools, reach = offered_tools(self.opts.env, self.opts.tools, task)
        replay = dict(self.state.of(repeat).answers.get(task.id, {}))
        fired: tuple[str, ...] = ()
        quality: dict[str, float] = {}

        async def oracle() -> LiveAction | None:
            return await slot.call(ep.oracle_action)

        def end(outcome: str, reason: str, screen: str) -> TaskRecord:
            return TaskRecord(
                task=task.id, env=self.opts.env, attempt=attempt, outcome=outcome,  # type: ignore[arg-type]
                repeat=repeat, reason=reason, steps_used=ep.n, oracle_steps=len(task.steps),
                achieved=sum(ep.achieved), fired=list(fired), final_screen=screen,
                final_url=obs.url, reset_s=round(ep.reset_s, 4), start_checks=at_start,
                duration_s=round(time.perf_counter() - t0, 4), between_tasks_s=between,
                swapped=swapped, quality=quality or None, time=now_iso(),
                **tools_fields(tools, reach),
            )  # fmt: skip

        sha = await self._save_screen(obs)
        boxes: Boxes | None = None  # the current step's boxes on this screen, once located
        while True:
            ts, busy0 = time.perf_counter(), slot.busy_s
            n, k = ep.n + 1, ep.current
            place.n, place.action = n, None
            step = task.steps[k]
            if boxes is None:  # after the reset (located there: no environment work)
                boxes = await slot.call(ep.intended)
            intended, intended_to = boxes
            turn = AgentTurn(
                env=self.opts.env, task=task, step_index=k, n=n, observation=obs,
                screen_path=(self.out / screen_rel(sha)).resolve(), screen_rel=screen_rel(sha),
                history=tuple(history), oracle=oracle, seed=self.opts.seed + repeat, mode=ep.mode,
                previous=tuple(previous), attempt=attempt, repeat=repeat, tools=tools,
            )  # fmt: skip
            rec = StepRecord(
                task=task.id, env=self.opts.env, attempt=attempt, repeat=repeat, n=n,
                target_step=k + 1,
                instruction=step.instruction, screen=sha, screen_size=(obs.width, obs.height),
                url=obs.url, intended_box=intended.to_json() if intended is not None else None,
                intended_to=intended_to.to_json() if intended_to is not None else None,
            )  # fmt: skip
            try:
                ans = await self._ask(turn, replay.get(n))
            except ModelCallError as e:
                self.stats.errors += 1
                answered = e.answer.record_fields() if isinstance(e, AnsweredCallError) else {}
                retries = getattr(e, "retries", 0)  # CallFailed says how many were made
                update = {"retries": retries, **answered, "error": str(e), "time": now_iso()}
                self._append(_with(rec, **update))
                log.warning("task %s, turn %d: the model call failed (asked again when the run "
                            "is resumed): %s", task.id, n, e)  # fmt: skip
                return end("error", f"model call failed at turn {n}: {e}", sha)
            action = ans.action
            upd: dict[str, Any] = {**ans.record_fields(), "replayed": n in replay}
            place.action, place.replayed = upd["action"], place.replayed and n in replay
            if upd["latency_s"] is not None:
                upd["latency_s"] = round(upd["latency_s"], 6)
            acts = action is not None and not isinstance(action, ENDINGS)
            if acts and n not in replay:  # the paid answer is on disk before the action is tried
                self._append(_with(rec, **upd, time=now_iso()))
            res = await slot.call(ep.step, action)  # the one environment call of a step
            obs, boxes = res.observation, res.next_intended
            quality = dict(res.quality)
            if res.executed:
                sha = await self._save_screen(obs)
                fired = res.fired
            upd.update(
                res.journal_fields(), flags=list(dict.fromkeys([*upd["flags"], *res.flags])),
                step_s=round(time.perf_counter() - ts, 4),
                env_s=round(slot.busy_s - busy0, 4), time=now_iso(),
            )  # fmt: skip
            self._append(_with(rec, **upd))
            if not (action is not None and isinstance(action, ENDINGS)):
                history_line = self._history_line(step, action, res.not_executed)
                if history_line:
                    history.append(history_line)
            tool = upd.get("tool_result")
            previous.append(
                PastTurn(n, turn.screen_path, turn.screen_rel, ans, res.not_executed, tool)
            )
            if res.outcome is not None:
                return end(res.outcome, res.reason, sha)

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
            place = _Place()
            try:
                rec = await self._episode(slot, task, repeat, attempt, place)
            except _BudgetReached:
                return  # unfinished: resumed later, its journaled answers replayed
            except EnvironmentFault as e:
                self.stats.faults += 1
                # the whole message (a browser's log, say) goes to the log file; stderr shows
                # its first line (commands._runlog)
                log.warning("task %s, attempt %d: environment fault: %s", task.id, attempt, e)
                last_fault = str(e)
                self._append(place.fault(task.id, self.opts.env, attempt, last_fault, repeat))
                await slot.discard()
                self.ended[slot.index] = time.perf_counter()
                streak = state.fault_streak.get(task.id, [])
                if len(streak) >= self.opts.recurrence:
                    self._give_up(task, repeat, attempt, streak)
                    return
                continue
            self._append(rec)
            if rec.outcome == "error":
                self.task_errors += 1
            return
        self.task_errors += 1
        self._append(TaskRecord(task=task.id, env=self.opts.env, attempt=attempt,
                                outcome="env_error", repeat=repeat,
                                reason=f"environment kept failing: {_first_line(last_fault)}",
                                oracle_steps=len(task.steps), time=now_iso()))  # fmt: skip

    def _give_up(
        self, task: LiveTask, repeat: int, attempt: int, streak: Sequence[FaultRecord]
    ) -> None:
        reason = _recurring_fault_reason(streak)
        log.warning("task %s: %s; not retried on a resume (--retry-env-errors)", task.id, reason)
        self.task_errors += 1
        self._append(TaskRecord(task=task.id, env=self.opts.env, attempt=attempt,
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
        executor = create_executor(
            self.opts.executor, self.opts.slot_config(),
            ray_address=self.opts.ray_address, ray_cpus_per_env=self.opts.ray_cpus_per_env,
            container=self.opts.container,
        )  # fmt: skip
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
    tasks: Sequence[LiveTask],
    agent: LiveAgent,
    journal: Journal,
    out: Path,
    opts: LiveOptions,
    state: JournalState,
    on_progress: Callable[[ProgressEvent], None] | None = None,
) -> LiveStats:
    """Run every (task, repeat) not finished in `state` (the journal read back); journal as
    it goes."""
    if opts.history not in HISTORY_MODES:
        raise MedspotError(f"unknown history mode {opts.history!r}")
    if opts.repeats < 1:
        raise MedspotError(f"repeats {opts.repeats}: must be 1 or more")
    return await _Run(tasks, agent, journal, out, opts, state, on_progress).run()
