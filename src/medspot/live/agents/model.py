"""`ModelAgent`: ANY model of the static benchmark (a card, `openai:NAME`, `random`, `ocr`, ...),
built through the adapter registry exactly as `medspot eval` builds it, asked with a
`StepRequest` (the screenshot written into the run folder, and the current step's instruction,
or in agent mode the task's goal).

Two ways to read the answer:
- a grounding prompt (native / upstream styles): `answer_reader.parse_answer` with the adapter's
  declared convention, the card's click point as the fallback; the history lines are the
  runner's (`AgentTurn.history`).
- an agent prompt (`action_format` set: the card's agent style, live agent mode): the format's
  own reader (`medspot.live.agents.formats`), never a point fallback. The history is the
  model's own: each earlier answer's memory in its format (its raw answer, action line or
  grounded operation), with its thoughts where the format keeps them. Several actions in one
  answer are executed one per turn: the first now, the others on the following turns without
  asking the model again (journaled as `queued` answers whose `call_state` holds what is left,
  so a resumed run goes on where it stopped).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from medspot.adapters.base import Adapter, Prediction, StepRequest
from medspot.adapters.retry import RetryPolicy, call_with_retries
from medspot.live.agents.answer_reader import Frame, parse_answer
from medspot.live.agents.formats import AgentFormat, get_format
from medspot.live.agents.tools_prompt import tool_result_line, with_tools
from medspot.live.agents.turn import QUEUED, AgentAnswer, AgentTurn
from medspot.live.core.actions import (
    ActionFormatError,
    LiveAction,
    action_from_json,
    action_to_json,
    point_of,
)

__all__ = ["ModelAgent", "own_memories"]


@dataclass
class ModelAgent:
    adapter: Adapter
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    action_format: str = ""  # an agent format's name: the card's agent style is asked
    _format: AgentFormat | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._format = get_format(self.action_format) if self.action_format else None

    @property
    def name(self) -> str:
        return self.adapter.name

    @property
    def max_concurrency(self) -> int:
        return max(1, int(self.adapter.max_concurrency))

    def memories(self, turn: AgentTurn) -> tuple[str, ...]:
        """The model's own history in its format: one memory per earlier model answer."""
        if self._format is None:
            return turn.history
        return own_memories(turn, self._format.memory)

    def request(self, turn: AgentTurn) -> StepRequest:
        """The static request of this turn. In agent mode the model is told the goal only:
        the goal is the instruction and the history holds its own actions, never the oracle's
        steps."""
        agent = turn.mode == "agent"
        # a repeat after the first is another request (the seeded baselines answer afresh)
        task_uid = f"{turn.env}/{turn.task.id}" + (f"@{turn.repeat + 1}" if turn.repeat else "")
        instruction = (
            with_tools(turn.task.instruction, turn.tools) if agent else turn.step.instruction
        )
        return turn.step_request(
            task_uid,
            str(turn.n),
            instruction,
            task_overview=None if agent else turn.task.instruction,
            history=self.memories(turn),
        )

    async def _predict(self, req: StepRequest) -> tuple[Prediction, int, float]:
        """The adapter's prediction with the one retry loop; a failed call raises
        `ModelCallError` (`CallFailed`), an adapter bug included, never a click."""
        return await call_with_retries(
            functools.partial(self.adapter.predict, req), self.retry, label=req.step_uid
        )

    async def ask(self, req: StepRequest) -> tuple[Prediction, int, float]:
        """One model call with the retries (the prediction, retries used, seconds)."""
        return await self._predict(req)

    def _queued(self, turn: AgentTurn, fmt: AgentFormat) -> AgentAnswer | None:
        """The next action left from the previous answer, if any (no model call)."""
        queued = turn.queued()
        if queued is None:
            return None
        pending, state = queued
        try:
            action = action_from_json(pending[0])
        except ActionFormatError as e:  # a journal of a version that let it through
            return AgentAnswer(
                raw_text=None, action=None, source=f"{fmt.name}:queued", latency_s=0.0,
                flags=[QUEUED, "actions_after_unreadable_dropped"],
                not_executed=f"a queued action does not read: {e}",
            )  # fmt: skip
        rest = pending[1:]
        return AgentAnswer(
            raw_text=None,
            action=action,
            source=f"{fmt.name}:queued",
            flags=[QUEUED],
            point=_normalised(action, turn.size),
            latency_s=0.0,
            call_state={"pending": rest, "answer_n": state.get("answer_n")} if rest else None,
        )

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        fmt = self._format
        if fmt is not None and (queued := self._queued(turn, fmt)) is not None:
            return queued
        pred, retries, latency = await self._predict(self.request(turn))
        frame = Frame(self.adapter.convention, turn.size, pred.sent_size)
        if fmt is None:
            parsed = parse_answer(pred.raw_text, frame, pred.point)
            return AgentAnswer.of_prediction(
                pred,
                latency_s=latency,
                retries=retries,
                action=parsed.action,
                source=parsed.source,
                flags=[*pred.flags, *parsed.flags],
            )
        reading = fmt.read(pred.raw_text or "", frame)
        first = reading.first
        pending = [action_to_json(a) for a in reading.actions[1:]]
        return AgentAnswer.of_prediction(
            pred,
            latency_s=latency,
            retries=retries,
            action=first,
            source=fmt.name,
            flags=[*pred.flags, *reading.flags],
            point=_normalised(first, turn.size),
            thought=reading.thought,
            call_state={"pending": pending, "answer_n": turn.n} if pending else None,
        )

    def describe(self) -> dict[str, Any]:
        d = dict(self.adapter.describe())
        if self._format is not None:
            d["action_format"] = self._format.name
        return d

    async def aclose(self) -> None:
        await self.adapter.aclose()


def own_memories(turn: AgentTurn, memory: Callable[[str], str]) -> tuple[str, ...]:
    """One memory per earlier answer the model gave in this attempt (queued actions of an
    answer and empty answers are not repeated)."""
    out = []
    for past in turn.previous:
        text = past.answer.raw_text
        if QUEUED not in past.answer.flags and text and text.strip():
            out.append(memory(text))
        result = tool_result_line(past.tool_result)
        if result is not None:  # what a tool call returned (the tools track)
            out.append(result)
    return tuple(out)


def _normalised(action: LiveAction | None, size: tuple[int, int]) -> tuple[float, float] | None:
    p = point_of(action)
    return (p.x / size[0], p.y / size[1]) if p is not None else None
