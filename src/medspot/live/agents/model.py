"""`ModelAgent`: ANY model of the static benchmark (a card, `openai:NAME`, `random`, `ocr`, ...),
built through the adapter registry exactly as `medspot eval` builds it, asked with a
`StepRequest` (the screenshot written into the run folder, the current step's instruction, the
task's goal and the steps done as history lines); its answer is read by
`answer_reader.parse_answer` with the adapter's declared convention."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from medspot.adapters.base import Adapter, Prediction, StepRequest
from medspot.adapters.retry import RetryPolicy, call_with_retries
from medspot.live.agents.answer_reader import Frame, parse_answer
from medspot.live.agents.turn import AgentAnswer, AgentTurn

__all__ = ["ModelAgent"]


@dataclass
class ModelAgent:
    adapter: Adapter
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def name(self) -> str:
        return self.adapter.name

    @property
    def max_concurrency(self) -> int:
        return max(1, int(self.adapter.max_concurrency))

    def request(self, turn: AgentTurn) -> StepRequest:
        """The static request of this turn. In agent mode the model is told the goal only:
        the goal is the instruction and the history holds its own actions, never the oracle's
        steps."""
        agent = turn.mode == "agent"
        return StepRequest(
            step_uid=f"{turn.env}/{turn.task.id}/{turn.n}",
            task_uid=f"{turn.env}/{turn.task.id}",
            image_rel=turn.screen_rel,
            image_path=turn.screen_path,
            image_size=turn.size,
            instruction=turn.task.instruction if agent else turn.step.instruction,
            task_overview=None if agent else turn.task.instruction,
            history=turn.history,
            seed=turn.seed,
        )

    async def _predict(self, req: StepRequest) -> tuple[Prediction, int, float]:
        """The adapter's prediction with the one retry loop; a failed call raises
        `ModelCallError` (`CallFailed`), an adapter bug included, never a click."""
        return await call_with_retries(
            functools.partial(self.adapter.predict, req), self.retry, label=req.step_uid
        )

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        pred, retries, latency = await self._predict(self.request(turn))
        frame = Frame(self.adapter.convention, turn.size, pred.sent_size)
        parsed = parse_answer(pred.raw_text, frame, pred.point)
        usage = pred.usage
        return AgentAnswer(
            raw_text=pred.raw_text,
            action=parsed.action,
            source=parsed.source,
            flags=[*pred.flags, *parsed.flags],
            point=(pred.point.x, pred.point.y) if pred.point is not None else None,
            sent_size=pred.sent_size,
            latency_s=latency,
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cost_usd=pred.cost_usd,
            retries=retries,
        )

    def describe(self) -> dict[str, Any]:
        return dict(self.adapter.describe())

    async def aclose(self) -> None:
        await self.adapter.aclose()
