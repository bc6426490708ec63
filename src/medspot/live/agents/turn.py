"""What a live agent is given and what it answers: `AgentTurn` (one decision: the task, its
current step, the screen, the history) and `AgentAnswer`; `LiveAgent` is the protocol every agent
implements (`medspot.live.agents.model`, `.scripted`; `create_agent` in `.factory`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, SkipValidation

from medspot.adapters.base import StepRequest
from medspot.adapters.modelcall import ModelCall
from medspot.errors import ModelCallError
from medspot.live.core.actions import LiveAction, action_to_json
from medspot.live.core.contract import Observation, PixelBox
from medspot.live.core.episode import Mode
from medspot.live.core.tasks import LiveTask, Locator, StepSpec
from medspot.live.core.tools import ToolSpec

__all__ = [
    "QUEUED",
    "AgentAnswer",
    "AgentTurn",
    "AnsweredCallError",
    "LiveAgent",
    "PastTurn",
    "TurnCall",
]

# The flag of an answer that is a later action of an earlier answer (several actions in one
# answer), executed without a new model call: not counted as a call.
QUEUED = "queued"


@dataclass(frozen=True)
class AgentTurn:
    """One decision: the task, its current step (0-based index into `task.steps`), the action
    number `n` (1-based), the screen, and the history lines of the actions done."""

    env: str
    task: LiveTask
    step_index: int
    n: int
    observation: Observation
    screen_path: Path
    screen_rel: str
    history: tuple[str, ...]
    oracle: Callable[[], Awaitable[LiveAction | None]]  # the oracle's action on this screen
    seed: int = 0
    mode: Mode = "guided"  # agent: the model is told the goal only, never the current step
    previous: tuple[PastTurn, ...] = ()  # the earlier turns of this attempt, in order
    attempt: int = 1  # a fresh environment after an environment fault is a new attempt
    repeat: int = 0  # which run of the task (`--repeats`); nothing of other repeats is given
    # the tools offered beside the GUI actions (`--tools`; none for a GUI-only task)
    tools: tuple[ToolSpec, ...] = ()
    # where an element is on this screen (None: not there): the oracle's view of any element
    # (a served Gymnasium caller's `locate`); None where the turn was built without it
    locate: Callable[[Locator], Awaitable[PixelBox | None]] | None = None

    @property
    def step(self) -> StepSpec:
        return self.task.steps[self.step_index]

    @property
    def size(self) -> tuple[int, int]:
        return self.observation.width, self.observation.height

    def step_request(
        self,
        task_uid: str,
        call: str,
        instruction: str,
        *,
        task_overview: str | None = None,
        history: tuple[str, ...] = (),
    ) -> StepRequest:
        """A static model's request about this turn's screen: the step `task_uid/call`."""
        return StepRequest(
            step_uid=f"{task_uid}/{call}",
            task_uid=task_uid,
            image_rel=self.screen_rel,
            image_path=self.screen_path,
            image_size=self.size,
            instruction=instruction,
            task_overview=task_overview,
            history=history,
            seed=self.seed,
        )

    def queued(self) -> tuple[list[Any], dict[str, Any]] | None:
        """What the previous turn's answer left to do (the non-empty `pending` list of its
        `call_state`) and that state, None when nothing is left."""
        if not self.previous:
            return None
        state = self.previous[-1].answer.call_state or {}
        pending = state.get("pending")
        if not isinstance(pending, list) or not pending:
            return None
        return pending, state


class TurnCall(ModelCall):
    """One model call of a turn of an agent made of several models (planner + grounder), as a
    model-call record of its own: who was asked (`role`), what it said and cost; a grounder's
    call also names the element it was asked to find and the planned step it grounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["planner", "grounder"]
    element: str | None = None  # the grounder: the description it was given as instruction
    step: str | None = None  # the grounder: the planned step, in the planner's words


class AgentAnswer(ModelCall):
    """An agent's answer: the model call (the fields of `ModelCall`, shared with both
    journals) and what was read from it. `action` None is a no-action answer; `thought` is the
    agent's own reasoning where its format has one; `call_state` is what an agent needs to go on
    with its conversation on a later turn (e.g. a response id, actions left of an answer),
    journaled with the answer so that a resumed run never re-sends a paid turn; `model_calls`
    holds each call of a turn of an agent made of several models (planner + grounder: the
    planner's, then the grounder's), the answer's own call fields then being their sums."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    action: SkipValidation[LiveAction | None] = None
    source: str = ""
    thought: str | None = None
    call_state: dict[str, Any] | None = None
    model_calls: list[TurnCall] | None = None  # each model's call (planner + grounder)
    # why nothing is executed for this answer, when that is known before acting (an answer
    # that cannot be turned into an action); the episode adds its own reason (an action the
    # environment cannot execute)
    not_executed: str | None = None

    def record_fields(self) -> dict[str, Any]:
        """The fields a journal step record takes from this answer."""
        return {
            **self.call_fields(),
            "source": self.source,
            "thought": self.thought,
            "call_state": self.call_state,
            "model_calls": self.model_calls,
            "action": action_to_json(self.action) if self.action is not None else None,
            "not_executed": self.not_executed,
        }


class AnsweredCallError(ModelCallError):
    """A model call that answered, but whose answer may not be acted on (e.g. a pending safety
    check the run may not acknowledge): an error like any failed call (the attempt ends, the
    turn is asked again on resume), journaled with what the call answered and cost."""

    def __init__(self, message: str, answer: AgentAnswer) -> None:
        super().__init__(message)
        self.answer = answer


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn of the same attempt, as the agent saw and answered it (replayed answers
    included), for agents that keep a conversation or show the model its own history."""

    n: int
    screen_path: Path
    screen_rel: str
    answer: AgentAnswer
    # why the answer's action was not executed (an action the environment cannot execute)
    not_executed: str | None = None
    # the tools track: what the turn's tool call returned (`name`, `text`, `data`) or why it
    # did not run (`error`); None for a GUI action
    tool_result: Mapping[str, Any] | None = None


class LiveAgent(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def max_concurrency(self) -> int: ...

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        """The next action. A failed model call raises `ModelCallError` (after retries)."""
        ...

    def describe(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...
