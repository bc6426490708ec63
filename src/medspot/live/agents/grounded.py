"""`PlannerGrounderAgent` (`live run --planner MODEL --grounder CARD`): a model that plans
names the element it wants in words (the harness planner prompt,
`medspot.adapters.cards.harness_planner`), and a grounding card of the static benchmark finds it
with its own unchanged prompt and convention: the static `StepRequest` of the current screen
with the element's description as the instruction, exactly as `medspot eval` asks it, the way
grounding models are evaluated inside agents in their own papers.

Per turn: the planner is asked (the goal, its own earlier steps); its first step is grounded on
this screen (a drag asks the grounder twice, for its start and its end) and executed; later
steps of the same answer are grounded on the screens of the following turns, without asking
the planner again (queued, as in `ModelAgent`). The journal keeps both: the planner's answer is
`raw_text` (its thought `thought`), the grounder's answers `grounding` (element, raw text,
point, flags, tokens). Tokens and cost of a turn are the planner's and the grounder's summed.
A planner step that cannot be read, or an element the grounder gives no point for, is a
no-action with a flag, never a guessed click.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from medspot.adapters.base import Prediction, StepRequest
from medspot.live.agents.formats.planner import PlanStep, plan_memory, read_plan
from medspot.live.agents.model import ModelAgent, own_memories
from medspot.live.agents.turn import QUEUED, AgentAnswer, AgentTurn
from medspot.live.core.actions import Click, Drag, LiveAction, Scroll

__all__ = ["NO_POINT", "PLANNED_EARLIER", "PlannerGrounderAgent"]

NO_POINT = "grounder_no_point"  # the grounder found no point for the element
# A later step of an earlier planner answer that the grounder was asked for on this turn (one
# with nothing to ground, such as typing, is `queued`: no model call at all).
PLANNED_EARLIER = "planned_earlier"


@dataclass
class _Grounded:
    action: LiveAction | None
    records: list[dict[str, Any]]
    flags: list[str]
    calls: list[tuple[Prediction, int, float]]


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
        return StepRequest(
            step_uid=f"{turn.env}/{turn.task.id}/{turn.n}",
            task_uid=f"{turn.env}/{turn.task.id}",
            image_rel=turn.screen_rel,
            image_path=turn.screen_path,
            image_size=turn.size,
            instruction=turn.task.instruction,
            history=own_memories(turn, plan_memory),
            seed=turn.seed,
        )

    def _grounder_request(self, turn: AgentTurn, element: str, i: int) -> StepRequest:
        return StepRequest(
            step_uid=f"{turn.env}/{turn.task.id}/{turn.n}/ground{i}",
            task_uid=f"{turn.env}/{turn.task.id}",
            image_rel=turn.screen_rel,
            image_path=turn.screen_path,
            image_size=turn.size,
            instruction=element,
            seed=turn.seed,
        )

    async def _ground(self, turn: AgentTurn, step: PlanStep) -> _Grounded:
        if step.kind == "act":
            return _Grounded(step.action, [], [], [])
        elements = [step.element, step.end] if step.kind == "drag" else [step.element]
        calls = await asyncio.gather(
            *(
                self.grounder.ask(self._grounder_request(turn, e, i))
                for i, e in enumerate(elements, 1)
            )
        )
        records, points = [], []
        for element, (pred, retries, latency) in zip(elements, calls, strict=True):
            pt = pred.point
            points.append(pt)
            records.append({
                "element": element, "raw_text": pred.raw_text,
                "point": [pt.x, pt.y] if pt is not None else None, "flags": list(pred.flags),
                "sent_size": list(pred.sent_size) if pred.sent_size else None,
                "latency_s": round(latency, 6), "retries": retries,
                "input_tokens": pred.usage.input_tokens if pred.usage else None,
                "output_tokens": pred.usage.output_tokens if pred.usage else None,
                "cost_usd": pred.cost_usd,
            })  # fmt: skip
        if any(p is None for p in points):
            return _Grounded(None, records, [NO_POINT], list(calls))
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
        return _Grounded(action, records, [], list(calls))

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        pending = self._pending(turn)
        calls: list[tuple[Prediction, int, float]] = []
        if pending is not None:
            step, rest, answer_n = pending
            raw, thought, flags = None, None, [QUEUED]
        else:
            call = await self.planner.ask(self._planner_request(turn))
            calls.append(call)
            raw = call[0].raw_text
            plan = read_plan(raw or "")
            thought, flags = plan.thought, [*call[0].flags, *plan.flags]
            if not plan.steps:
                return self._answer(raw, None, thought, flags, calls, None, None)
            step, rest, answer_n = plan.steps[0], list(plan.steps[1:]), turn.n
        grounded = await self._ground(turn, step)
        calls.extend(grounded.calls)
        if pending is not None and grounded.calls:
            flags = [PLANNED_EARLIER]
        state = {"pending": [s.to_json() for s in rest], "answer_n": answer_n} if rest else None
        records = [{"step": step.describe(), **r} for r in grounded.records] or None
        return self._answer(
            raw, grounded.action, thought, [*flags, *grounded.flags], calls, state, records
        )

    def _pending(self, turn: AgentTurn) -> tuple[PlanStep, list[PlanStep], Any] | None:
        """The steps left of the previous turn's planner answer, if any."""
        if not turn.previous:
            return None
        state = turn.previous[-1].answer.call_state or {}
        pending = state.get("pending")
        if not isinstance(pending, list) or not pending:
            return None
        steps = [PlanStep.from_json(d) for d in pending]
        return steps[0], steps[1:], state.get("answer_n")

    @staticmethod
    def _answer(
        raw: str | None,
        action: LiveAction | None,
        thought: str | None,
        flags: list[str],
        calls: list[tuple[Prediction, int, float]],
        state: dict[str, Any] | None,
        grounding: list[dict[str, Any]] | None,
    ) -> AgentAnswer:
        preds = [c[0] for c in calls]
        usage = [p.usage for p in preds if p.usage is not None]
        costs = [p.cost_usd for p in preds if p.cost_usd is not None]
        first = grounding[0]["point"] if grounding else None
        return AgentAnswer(
            raw_text=raw,
            action=action,
            source="planner:queued" if raw is None else "planner",
            flags=list(dict.fromkeys(flags)),
            point=(first[0], first[1]) if first else None,
            sent_size=preds[0].sent_size if raw is not None and preds else None,
            latency_s=sum(c[2] for c in calls),
            input_tokens=sum(u.input_tokens for u in usage) if usage else None,
            output_tokens=sum(u.output_tokens for u in usage) if usage else None,
            cost_usd=sum(costs) if costs else None,
            retries=sum(c[1] for c in calls),
            thought=thought,
            call_state=state,
            grounding=grounding,
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
