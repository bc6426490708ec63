"""The one driver of a live episode: what every way of acting shares, one step after another.

`live run` (and `live audit`, `live export`: the oracle through the runner) and `live serve`
(MCP, OpenEnv) drive their episodes here; they differ only in where the actions come from, an
*action source* (`ActionSource`): an agent asked turn by turn (`sources.AgentActions`: the
journal's answers replayed, the budget, unreadable answers), or a served client whose calls
wait in the episode's queue (`sources.ClientActions`). As in inspect_ai, where a human agent is
one more solver over the same task loop, a new way of acting is a new source, never a second
loop.

One attempt (`EpisodeDriver.attempt`) on an environment's slot (`executors`: a thread, a Ray
actor, ...): the task's episode is started (a reset, or the spare prepared for it swapped in:
one environment call that also brings back the first screen's intended boxes), then per step:

- the turn (`AgentTurn`: the screen, the current step, the history) and the step's record
  (`StepRecord`) are built once; the source decides: an action (`Answered`), a look at the
  screen without acting (`Look`: no action of the budget), or it leaves (`EpisodeLeft`: the
  attempt ends as `abandoned`);
- a paid answer is journaled before it is acted on (a resumed run never pays for it twice);
- the action is one environment call, `slot.call(ep.step, ...)`, whose result also holds the
  next screen's intended boxes; the screen is saved once, the record journaled with the step's
  wall time (`step_s`) and the part inside the environment (`env_s`);
- the source is shown what the episode shows now (`Shown`), and when the episode ended, the
  attempt's `TaskRecord` is journaled and returned.

A failed model call ends the attempt as an error (journaled with the error: asked again on a
resume); a source that stops before its next call (`BudgetReached`) leaves the attempt
unfinished, nothing journaled. An environment fault propagates, with `Place` saying where the
attempt was: the caller's policy decides (the runner retries on a fresh environment, a served
episode ends as an environment error: `scheduler`, `served`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from medspot.errors import ModelCallError
from medspot.live.agents.turn import AgentAnswer, AgentTurn, AnsweredCallError, PastTurn
from medspot.live.core.actions import (
    ENDINGS,
    ActionFormatError,
    LiveAction,
    action_from_json,
    describe_action,
)
from medspot.live.core.contract import Observation, PixelBox
from medspot.live.core.episode import Mode, StepResult, episode_score, tally_fields
from medspot.live.core.harm import HarmEvent
from medspot.live.core.rewards import START, EpisodeScore
from medspot.live.core.tasks import LiveTask, Locator, StepSpec
from medspot.live.envs.toolsets import offered_tools, tools_fields
from medspot.live.loop.executors.base import EnvSlot, EpisodeCalls
from medspot.live.loop.executors.seats import Key
from medspot.live.loop.livefolder import RunFolder, now_iso, save_screen, screen_rel
from medspot.live.loop.steplog import FaultRecord, LiveRecord, StepRecord, TaskRecord

__all__ = [
    "HISTORY_MODES",
    "ActionSource",
    "Answered",
    "BudgetReached",
    "Decision",
    "EpisodeDriver",
    "EpisodeLeft",
    "Look",
    "Place",
    "Shown",
    "first_line",
    "recurring_fault_reason",
]

log = logging.getLogger(__name__)

HISTORY_MODES = ("none", "text", "actions")


class BudgetReached(Exception):
    """The source stops before its next model call (`max_cost` is reached): the attempt is
    left unfinished, nothing journaled (a resume runs it again, its answers replayed)."""


class EpisodeLeft(Exception):
    """The source's agent left the episode (a served client went, or started another task):
    the attempt ends as `abandoned`, `reason` saying why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Answered:
    """The source's answer for this step: `answer` (its action, None for none; the call
    fields journaled), whether it came from the journal (`replayed`), whether it is journaled
    before it is acted on (`journal_first`: a paid model answer), and `since`, the moment the
    step is timed from when the source's own wait is not the step's (a served client's time
    to think: the moment its action arrived; None: from when it was asked)."""

    answer: AgentAnswer
    replayed: bool = False
    journal_first: bool = False
    since: float | None = None


@dataclass(frozen=True)
class Look:
    """No action: the screen again after `seconds` (a served agent's `wait`): not a step,
    nothing of the budget."""

    seconds: float


Decision = Answered | Look


@dataclass(frozen=True)
class Shown:
    """What an episode shows after its start (`n` 0), a step (`result`) or a look: the screen,
    the actions used, the current step's instruction (guided mode, while it runs), and how it
    ended once it has (`outcome`, `reason`)."""

    observation: Observation
    n: int
    instruction: str | None
    result: StepResult | None = None
    outcome: str | None = None
    reason: str = ""
    score: EpisodeScore = START  # where the episode stands for the rewards (`core.rewards`)
    current: int = 0  # the current step of the oracle's path (0-based)
    achieved: int = 0  # the steps of that path achieved so far

    @property
    def ended(self) -> bool:
        return self.outcome is not None


class ActionSource(Protocol):
    """Where one attempt's actions come from (`sources`): asked once per step (or again after
    a `Look`), shown what the episode shows after its start, each step and look, and its end
    (the end once its `TaskRecord` is journaled)."""

    async def decide(self, turn: AgentTurn) -> Decision:
        """The next step's decision; `ModelCallError` (a failed model call: the attempt ends
        as an error), `BudgetReached`, `EpisodeLeft`."""
        ...

    def shown(self, shown: Shown) -> None: ...


@dataclass
class Place:
    """Where an attempt is, for naming a fault: `n` the action number (0: the reset; None: the
    environment is starting), the action being executed, and whether every answer so far came
    from the journal (a served client's never does: `replayed` False from the start)."""

    n: int | None = None
    action: dict[str, Any] | None = None
    replayed: bool = True

    def fault(self, task: str, env: str, attempt: int, message: str, repeat: int) -> FaultRecord:
        return FaultRecord(
            task=task, env=env, attempt=attempt, message=message, n=self.n, action=self.action,
            replayed=self.replayed, repeat=repeat, time=now_iso(),
        )  # fmt: skip


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _described(form: dict[str, Any]) -> str:
    """A journaled action in the text form (its JSON, when it does not read as an action)."""
    try:
        return describe_action(action_from_json(form))
    except ActionFormatError:
        return first_line(json.dumps(form, ensure_ascii=False))[:120]


def recurring_fault_reason(streak: Sequence[FaultRecord]) -> str:
    """What a task given up on says: where its fault recurs, and the fault."""
    last = streak[-1]
    if last.n == 0:
        where = "the task's reset"
    elif last.action is not None:
        where = f"action {last.n}, {_described(last.action)}, replayed"
    else:
        where = f"action {last.n}, before the answer (the answers before it replayed)"
    return (
        f"environment fault recurs at {where}, in {len(streak)} attempts in a row (a fresh "
        f"environment for each retry): {first_line(last.message)}"
    )


def _with(rec: StepRecord, **update: Any) -> StepRecord:
    """`rec` with `update`, validated (the call fields' validator runs on what is journaled)."""
    return StepRecord.model_validate({**rec.model_dump(), **update})


def _instruction(ep: EpisodeCalls, task: LiveTask, ended: bool) -> str | None:
    """The current step's instruction in guided mode while the episode runs (as
    `Episode.instruction`), for what the source is shown."""
    if ended or ep.mode != "guided":
        return None
    return task.steps[ep.current].instruction


class EpisodeDriver:
    """Drives attempts of a run's tasks into its run folder: `record` journals a record (and
    adds it to the run's journal state), `on_started(slot, task)` runs once a task's first
    observation is there (the runner claims the slot's next tasks for its spares)."""

    def __init__(
        self,
        *,
        env: str,
        folder: RunFolder,
        record: Callable[[LiveRecord], None],
        mode: Mode,
        history: str = "actions",
        seed: int = 0,
        tools: str | None = None,
        start_checks: bool = False,
        on_started: Callable[[EnvSlot, LiveTask], Awaitable[None]] | None = None,
    ) -> None:
        self.env = env
        self.folder = folder
        self.record = record
        self.mode: Mode = mode
        self.history = history
        self.seed = seed
        self.tools = tools
        self.start_checks = start_checks
        self.on_started = on_started

    def _history_line(
        self, step: StepSpec, action: LiveAction | None, not_executed: str | None, mode: Mode
    ) -> str | None:
        if self.history == "none":
            return None
        did = describe_action(action) + (" (not executed)" if not_executed else "")
        if mode == "agent":  # its own actions only: nothing of the oracle's path
            return did
        if self.history == "text":
            return step.instruction
        return f"{step.instruction} -> {did}"

    async def attempt(
        self,
        slot: EnvSlot,
        task: LiveTask,
        repeat: int,
        attempt: int,
        source: ActionSource,
        place: Place,
        *,
        key: Key | None = None,
        last_end: float | None = None,
        mode: Mode | None = None,
    ) -> TaskRecord:
        """One attempt of `task` (repeat `repeat`) on `slot`, its actions from `source`, every
        step journaled; its `TaskRecord`, journaled too. `key` names the spare prepared for
        it (where the slot keeps one); `last_end`, when the slot's previous attempt ended
        (the wait between tasks); `mode`, this attempt's when not the driver's (a Gymnasium
        reset's). Environment faults propagate (`place` says where)."""
        t0 = time.perf_counter()
        ep = await slot.episode(task, mode or self.mode, key)
        place.n = 0
        obs, boxes = await slot.reset(ep)  # one call: the first screen and its boxes
        shown_at = time.perf_counter()
        between = round(shown_at - last_end, 4) if last_end is not None else None
        swapped = slot.swapped
        if self.on_started is not None:
            await self.on_started(slot, task)
        at_start: dict[str, list[bool]] | None = None
        if self.start_checks:
            at_start = dict(await slot.call(ep.start_checks))
        history: list[str] = []
        previous: list[PastTurn] = []
        tools, reach = offered_tools(self.env, self.tools, task)
        fired: tuple[str, ...] = ()
        quality: dict[str, float] = {}
        harms: list[HarmEvent] = []  # the episode's harm and subgoals, from its step results
        reached: tuple[bool, ...] = ()

        async def oracle() -> LiveAction | None:
            return await slot.call(ep.oracle_action)

        async def locate(locator: Locator) -> PixelBox | None:
            return await slot.call(ep.locate, locator)

        def shown(
            last: StepResult | None = None, outcome: str | None = None, reason: str = ""
        ) -> Shown:
            """What the episode shows now (after its start, a step, a look or its end)."""
            ended = outcome is not None
            return Shown(
                obs, ep.n, _instruction(ep, task, ended), last, outcome, reason,
                episode_score(harms, reached, outcome), ep.current, sum(ep.achieved),
            )  # fmt: skip

        def end(
            outcome: str, reason: str, screen: str, last: StepResult | None = None
        ) -> TaskRecord:
            rec = TaskRecord(
                task=task.id, env=self.env, attempt=attempt, outcome=outcome,  # type: ignore[arg-type]
                repeat=repeat, reason=reason, steps_used=ep.n, oracle_steps=len(task.steps),
                achieved=sum(ep.achieved), fired=list(fired), final_screen=screen,
                final_url=obs.url, reset_s=round(ep.reset_s, 4), start_checks=at_start,
                duration_s=round(time.perf_counter() - t0, 4), between_tasks_s=between,
                swapped=swapped, quality=quality or None, time=now_iso(),
                **tools_fields(tools, reach), **tally_fields(task, harms, reached),
            )  # fmt: skip
            self.record(rec)
            source.shown(shown(last, outcome, reason))
            return rec

        sha = await save_screen(self.folder, obs)
        source.shown(shown())
        while True:
            ts, busy0 = time.perf_counter(), slot.busy_s
            n, k = ep.n + 1, ep.current
            place.n, place.action = n, None
            step = task.steps[k]
            if boxes is None:  # not located with the screen: located now (or its fault)
                boxes = await slot.call(ep.intended)
            intended, intended_to = boxes
            screen_path = (self.folder.path / screen_rel(sha)).resolve()
            turn = AgentTurn(
                env=self.env, task=task, step_index=k, n=n, observation=obs,
                screen_path=screen_path, screen_rel=screen_rel(sha),
                history=tuple(history), oracle=oracle, seed=self.seed + repeat, mode=ep.mode,
                previous=tuple(previous), attempt=attempt, repeat=repeat, tools=tools,
                locate=locate,
            )  # fmt: skip
            rec = StepRecord(
                task=task.id, env=self.env, attempt=attempt, repeat=repeat, n=n,
                target_step=k + 1,
                instruction=step.instruction, screen=sha, screen_size=(obs.width, obs.height),
                url=obs.url, intended_box=intended.to_json() if intended is not None else None,
                intended_to=intended_to.to_json() if intended_to is not None else None,
            )  # fmt: skip
            try:
                decision = await source.decide(turn)
            except ModelCallError as e:
                answered = e.answer.record_fields() if isinstance(e, AnsweredCallError) else {}
                retries = getattr(e, "retries", 0)  # CallFailed says how many were made
                update = {"retries": retries, **answered, "error": str(e), "time": now_iso()}
                self.record(_with(rec, **update))
                log.warning("task %s, turn %d: the model call failed (asked again when the run "
                            "is resumed): %s", task.id, n, e)  # fmt: skip
                return end("error", f"model call failed at turn {n}: {e}", sha)
            except EpisodeLeft as e:
                return end("abandoned", f"abandoned: {e.reason}", sha)
            if isinstance(decision, Look):
                place.n = ep.n
                await asyncio.sleep(decision.seconds)
                obs = await slot.call(ep.look)
                boxes = None
                sha = await save_screen(self.folder, obs)
                source.shown(shown())
                continue
            if decision.since is not None:
                ts = decision.since
            ans = decision.answer
            action = ans.action
            replayed = decision.replayed
            upd: dict[str, Any] = {**ans.record_fields(), "replayed": replayed}
            place.action, place.replayed = upd["action"], place.replayed and replayed
            if upd["latency_s"] is not None:
                upd["latency_s"] = round(upd["latency_s"], 6)
            acts = action is not None and not isinstance(action, ENDINGS)
            if acts and decision.journal_first:  # the paid answer is on disk before acting
                self.record(_with(rec, **upd, time=now_iso()))
            # the one environment call of a step (its result holds the next screen's boxes)
            res = await slot.call(ep.step, action, flags=tuple(ans.flags))
            obs, boxes = res.observation, res.next_intended
            quality = dict(res.quality)
            harms, reached = [*harms, *res.harms], res.subgoals
            if res.executed:
                sha = await save_screen(self.folder, obs)
                fired = res.fired
            upd.update(
                res.journal_fields(), flags=list(dict.fromkeys([*upd["flags"], *res.flags])),
                step_s=round(time.perf_counter() - ts, 4),
                env_s=round(slot.busy_s - busy0, 4), time=now_iso(),
            )  # fmt: skip
            self.record(_with(rec, **upd))
            if not (action is not None and isinstance(action, ENDINGS)):
                history_line = self._history_line(step, action, res.not_executed, ep.mode)
                if history_line:
                    history.append(history_line)
            tool = upd.get("tool_result")
            previous.append(
                PastTurn(n, turn.screen_path, turn.screen_rel, ans, res.not_executed, tool)
            )
            if res.outcome is not None:
                return end(res.outcome, res.reason, sha, res)
            source.shown(shown(res))
