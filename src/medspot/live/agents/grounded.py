"""`PlannerGrounderAgent` (`live run --planner MODEL --grounder CARD`): a model that plans
names the element it wants in words (the harness planner prompt,
`medspot.adapters.cards.harness_planner`), and a grounding card of the static benchmark finds it
with its own unchanged prompt and convention: the static `StepRequest` of the current screen
with the element's description as the instruction, exactly as `medspot eval` asks it, the way
grounding models are evaluated inside agents in their own papers.

Per turn: the planner is asked (the goal, its own earlier steps); its first step is grounded on
this screen (a drag asks the grounder twice, for its start and its end) and executed; later
steps of the same answer are grounded on the screens of the following turns, without asking
the planner again (queued, as in `ModelAgent`). The journal keeps both answers: the step's
`raw_text` and `thought` are the planner's, and `model_calls` holds one model-call record per
call (`TurnCall`: the planner's, then the grounder's with the element it was asked for); the
step's latency, tokens, cost and retries are their sums.
A planner step that cannot be read, or an element the grounder gives no point for, is a
no-action with a flag, never a guessed click.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from medspot.adapters.base import Prediction, StepRequest
from medspot.live.agents.formats.planner import PlanStep, plan_memory, read_plan
from medspot.live.agents.model import ModelAgent, own_memories
from medspot.live.agents.tools_prompt import with_tools
from medspot.live.agents.turn import QUEUED, AgentAnswer, AgentTurn, TurnCall
from medspot.live.core.actions import Click, Drag, LiveAction, Scroll

__all__ = ["NO_POINT", "PLANNED_EARLIER", "PlannerGrounderAgent", "call_record"]

NO_POINT = "grounder_no_point"  # the grounder found no point for the element
# A later step of an earlier planner answer that the grounder was asked for on this turn (one
# with nothing to ground, such as typing, is `queued`: no model call at all).
PLANNED_EARLIER = "planned_earlier"


Call = tuple[Prediction, int, float]  # a prediction, the retries it took, its seconds


def call_record(call: Call, role: Literal["planner", "grounder"], **names: str) -> TurnCall:
    """One model call as a model-call record of the journal."""
    pred, retries, latency = call
    return TurnCall.of_prediction(pred, latency_s=latency, retries=retries, role=role, **names)


@dataclass
class _Grounded:
    action: LiveAction | None
    records: list[TurnCall]
    flags: list[str]


@dataclass
class PlannerGrounderAgent:
    planner: ModelAgent  # asked with the planner prompt style
    grounder: ModelAgent  # asked with its own grounding prompt (native or upstream)

    @property
    def name(self) -> str:
        return f"{self.planner.name}+{self.grounder.name}"

    @property
    def max_concurrency(self) -> int:
        return min(self.planner.max_concurrency, self.grounder.max_concurrency)

    def _planner_request(self, turn: AgentTurn) -> StepRequest:
        instruction = with_tools(turn.task.instruction, turn.tools)
        history = own_memories(turn, plan_memory)
        return turn.step_request(_task_uid(turn), str(turn.n), instruction, history=history)

    def _grounder_request(self, turn: AgentTurn, element: str, i: int) -> StepRequest:
        return turn.step_request(_task_uid(turn), f"{turn.n}/ground{i}", element)

    async def _ground(self, turn: AgentTurn, step: PlanStep) -> _Grounded:
        if step.kind == "act":
            return _Grounded(step.action, [], [])
        elements = [step.element, step.end] if step.kind == "drag" else [step.element]
        calls = await asyncio.gather(
            *(
                self.grounder.ask(self._grounder_request(turn, e, i))
                for i, e in enumerate(elements, 1)
            )
        )
        records = [
            call_record(c, "grounder", element=e, step=step.describe())
            for e, c in zip(elements, calls, strict=True)
        ]
        points = [c[0].point for c in calls]
        if any(p is None for p in points):
            return _Grounded(None, records, [NO_POINT])
        w, h = turn.size
        px = [(p.x * w, p.y * h) for p in points if p is not None]
        action: LiveAction
        if step.kind == "drag":
            action = Drag(*px[0], *px[1])
        elif step.kind == "scroll":
            action = Scroll(*px[0], step.dy)
        elif step.kind == "double_click":
            action = Click(*px[0], double=True)
        elif step.kind == "right_click":
            action = Click(*px[0], button="right")
        else:
            action = Click(*px[0])
        return _Grounded(action, records, [])

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        pending = self._pending(turn)
        records: list[TurnCall] = []
        if pending is not None:
            step, rest, answer_n = pending
            raw, thought, flags = None, None, [QUEUED]
        else:
            call = await self.planner.ask(self._planner_request(turn))
            records.append(call_record(call, "planner"))
            raw = call[0].raw_text
            plan = read_plan(raw or "")
            thought, flags = plan.thought, [*call[0].flags, *plan.flags]
            if not plan.steps:
                return self._answer(raw, None, thought, flags, records, None)
            step, rest, answer_n = plan.steps[0], list(plan.steps[1:]), turn.n
        grounded = await self._ground(turn, step)
        records.extend(grounded.records)
        if pending is not None and grounded.records:
            flags = [PLANNED_EARLIER]  # a model was asked: not a queued step
        state = {"pending": [s.to_json() for s in rest], "answer_n": answer_n} if rest else None
        return self._answer(
            raw, grounded.action, thought, [*flags, *grounded.flags], records, state
        )

    def _pending(self, turn: AgentTurn) -> tuple[PlanStep, list[PlanStep], Any] | None:
        """The steps left of the previous turn's planner answer, if any."""
        queued = turn.queued()
        if queued is None:
            return None
        pending, state = queued
        steps = [PlanStep.from_json(d) for d in pending]
        return steps[0], steps[1:], state.get("answer_n")

    @staticmethod
    def _answer(
        raw: str | None,
        action: LiveAction | None,
        thought: str | None,
        flags: list[str],
        records: list[TurnCall],
        state: dict[str, Any] | None,
    ) -> AgentAnswer:
        """The turn's answer: the planner's text and thought, the first grounded point, the
        calls' latency, tokens, cost and retries summed, and each call's own record."""
        tokens_in = [r.input_tokens for r in records if r.input_tokens is not None]
        tokens_out = [r.output_tokens for r in records if r.output_tokens is not None]
        costs = [r.cost_usd for r in records if r.cost_usd is not None]
        planner = next((r for r in records if r.role == "planner"), None)
        grounder = next((r for r in records if r.role == "grounder"), None)
        return AgentAnswer(
            raw_text=raw,
            action=action,
            source="planner:queued" if raw is None else "planner",
            flags=list(dict.fromkeys(flags)),
            point=grounder.point if grounder is not None else None,
            sent_size=planner.sent_size if planner is not None else None,
            latency_s=sum(r.latency_s or 0.0 for r in records),
            input_tokens=sum(tokens_in) if tokens_in else None,
            output_tokens=sum(tokens_out) if tokens_out else None,
            cost_usd=sum(costs) if costs else None,
            retries=sum(r.retries for r in records),
            thought=thought,
            call_state=state,
            model_calls=records or None,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "planner+grounder",
            "planner": self.planner.describe(),
            "grounder": self.grounder.describe(),
        }

    async def aclose(self) -> None:
        await asyncio.gather(self.planner.aclose(), self.grounder.aclose())


def _task_uid(turn: AgentTurn) -> str:
    return f"{turn.env}/{turn.task.id}"
