"""The action sources of `driver.EpisodeDriver`: where an attempt's actions come from.

- `AgentSource` (`live run`, `live audit`, `live export`): the run's agent asked turn by turn.
  An answer journaled for this (task, repeat) by an earlier attempt or run is replayed instead
  (never paid twice; an action that does not read back is no action, flagged
  `unreadable_action`); with `max_cost`, no new model call starts once the run has spent it
  (`BudgetReached`); an answer that cannot be turned into an action is a no-action turn, never
  an error; the run's counts (`LiveStats`) are kept here.
- `ClientActions` (`live serve`, MCP and OpenEnv): a served client's calls. The front's `act`
  puts the action in the episode's queue (`submit`) and awaits the step's outcome, the
  future `submit` returns: the driver takes it, steps, journals, and resolves it with what the
  episode shows (`driver.Shown`); `asked` is the turn it waits on (the Gymnasium environment's
  oracle). A `wait` is a `Look`; leaving (`leave`: a disconnect, a new
  task started over it, the server stopping) ends the attempt as `abandoned`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from medspot.errors import ModelCallError
from medspot.live.agents.turn import (
    QUEUED,
    AgentAnswer,
    AgentTurn,
    AnsweredCallError,
    LiveAgent,
)
from medspot.live.core.actions import ActionFormatError, LiveAction, action_from_json
from medspot.live.loop.driver import Answered, BudgetReached, Decision, EpisodeLeft, Look, Shown
from medspot.live.loop.steplog import JournalState, StepRecord

__all__ = [
    "UNREADABLE_ACTION",
    "AgentActions",
    "AgentSource",
    "ClientActions",
    "EpisodeEnded",
    "LiveStats",
]

log = logging.getLogger(__name__)

# the flag of a turn whose answer (or journaled action) cannot be turned into an action
UNREADABLE_ACTION = "unreadable_action"


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


class AgentSource:
    """A run's agent as the source of its attempts' actions (`episode` makes one attempt's),
    its answers replayed from the journal state `state` where it has them."""

    def __init__(
        self, agent: LiveAgent, state: JournalState, stats: LiveStats, max_cost: float | None
    ) -> None:
        self.agent = agent
        self.state = state
        self.stats = stats
        self.max_cost = max_cost
        self.sem = asyncio.Semaphore(agent.max_concurrency)

    def episode(self, task_id: str, repeat: int) -> AgentActions:
        """The source of one attempt of `task_id` (repeat `repeat`): the journal's answers of
        that (task, repeat) as they are now, by action number, replayed."""
        return AgentActions(self, dict(self.state.of(repeat).answers.get(task_id, {})))

    def replayed(self, replay: StepRecord) -> AgentAnswer:
        """A journaled answer as the agent's answer; an action that does not read back (a
        journal written by hand, or by a version that wrote it) is no action, flagged."""
        self.stats.replayed += 1
        fields = {**replay.call_fields(), "latency_s": 0.0}
        action: LiveAction | None
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

    async def ask(self, turn: AgentTurn) -> AgentAnswer:
        """The agent's answer to `turn` (a model call, unless `max_cost` is reached)."""
        cap = self.max_cost
        if cap is not None and self.stats.previous_cost_usd + self.stats.cost_usd >= cap:
            self.stats.budget_reached = True
            raise BudgetReached
        async with self.sem:
            try:
                ans = await self.agent.answer(turn)
            except AnsweredCallError as e:  # it answered (and cost) but may not be acted on
                self.stats.cost_usd += e.answer.cost_usd or 0.0
                self.stats.errors += 1
                raise
            except ModelCallError:  # the attempt ends as an error (asked again on a resume)
                self.stats.errors += 1
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


class AgentActions:
    """One attempt's actions from the run's agent (`AgentSource.episode`)."""

    def __init__(self, source: AgentSource, replay: dict[int, StepRecord]) -> None:
        self.source = source
        self.replay = replay

    async def decide(self, turn: AgentTurn) -> Decision:
        journaled = self.replay.get(turn.n)
        if journaled is not None:
            return Answered(self.source.replayed(journaled), replayed=True)
        return Answered(await self.source.ask(turn), journal_first=True)

    def shown(self, shown: Shown) -> None:
        """Nothing: the agent is given the screen in its next turn."""


class EpisodeEnded(Exception):
    """A call that reached an episode once it had ended (it waited behind the step that
    ended it, or came after): nothing was executed."""


@dataclass
class _Call:
    decision: Decision | None  # None: the client leaves (`reason`)
    reason: str
    reply: asyncio.Future[Shown]


class ClientActions:
    """A served client's actions for one attempt: its calls in a queue, each answered with
    what the episode shows after it (`submit`'s future). `started` is answered with the first
    screen (or the fault of the reset, set by the served run)."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.started: asyncio.Future[Shown] = loop.create_future()
        self.last: Shown | None = None  # what the episode shows now
        self._queue: asyncio.Queue[_Call] = asyncio.Queue()
        self._current: _Call | None = None
        self._turn: AgentTurn | None = None  # the turn the driver waits on a call for
        self._asking = asyncio.Event()  # set while it waits
        self.closed = False  # the attempt ended: no call is taken any more

    def submit(
        self,
        action: LiveAction | None,
        *,
        raw: str | None,
        flags: tuple[str, ...],
        source: str,
    ) -> asyncio.Future[Shown]:
        """Queue one action (None: a no-action step; `flags` the reader's, `raw` the text the
        client sent); the future is resolved with what the episode shows after the step."""
        answer = AgentAnswer(action=action, raw_text=raw, source=source, flags=list(flags))
        return self._put(Answered(answer, since=time.perf_counter()))

    def look(self, seconds: float) -> asyncio.Future[Shown]:
        """Queue a look at the screen after `seconds` (no action of the budget)."""
        return self._put(Look(seconds))

    def leave(self, reason: str) -> asyncio.Future[Shown]:
        """The client leaves: the attempt ends as abandoned once the call before is done."""
        return self._put(None, reason)

    def _put(self, decision: Decision | None, reason: str = "") -> asyncio.Future[Shown]:
        fut: asyncio.Future[Shown] = asyncio.get_running_loop().create_future()
        if self.closed:
            fut.set_exception(EpisodeEnded())
            fut.exception()  # retrieved: an unawaited ended call is no error to log
        else:
            self._queue.put_nowait(_Call(decision, reason, fut))
        return fut

    async def asked(self) -> AgentTurn:
        """The turn the driver is waiting on the client's next call for (once it is built:
        the current screen, its step, the oracle); `EpisodeEnded` once the attempt ended."""
        await self._asking.wait()
        if self.closed or self._turn is None:
            raise EpisodeEnded()
        return self._turn

    async def decide(self, turn: AgentTurn) -> Decision:
        self._turn = turn
        self._asking.set()
        call = await self._queue.get()
        self._asking.clear()
        self._current = call
        if call.decision is None:
            raise EpisodeLeft(call.reason)
        return call.decision

    def shown(self, shown: Shown) -> None:
        self.last = shown
        if not self.started.done():
            self.started.set_result(shown)
            return
        if shown.ended:  # answered by the served run once the end is written (`finish`)
            return
        self._answer(shown)

    def _answer(self, shown: Shown) -> None:
        call, self._current = self._current, None
        if call is not None and not call.reply.done():
            call.reply.set_result(shown)

    def finish(self, error: BaseException | None = None) -> None:
        """The attempt is over (its end journaled and written): the call that ended it is
        answered with the last screen (or `error`, a fault), every call still queued with
        `EpisodeEnded`."""
        self.closed = True
        self._asking.set()  # a wait for the next turn hears the end
        if not self.started.done():
            self.started.set_exception(error or EpisodeEnded())
            self.started.exception()
        call, self._current = self._current, None
        if call is not None and not call.reply.done():
            if error is not None:
                call.reply.set_exception(error)
                call.reply.exception()
            elif self.last is not None:
                call.reply.set_result(self.last)
        while not self._queue.empty():
            left = self._queue.get_nowait()
            if not left.reply.done():
                left.reply.set_exception(EpisodeEnded())
                left.reply.exception()
