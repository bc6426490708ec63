"""What a live agent is given and what it answers: `AgentTurn` (one decision: the task, its
current step, the screen, the history) and `AgentAnswer`; `LiveAgent` is the protocol every agent
implements (`medspot.live.agents.model`, `.scripted`; `create_agent` in `.factory`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import Observation
from medspot.live.core.episode import Mode
from medspot.live.core.tasks import LiveTask, StepSpec

__all__ = ["AgentAnswer", "AgentTurn", "LiveAgent"]


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

    @property
    def step(self) -> StepSpec:
        return self.task.steps[self.step_index]

    @property
    def size(self) -> tuple[int, int]:
        return self.observation.width, self.observation.height


@dataclass(frozen=True)
class AgentAnswer:
    raw_text: str | None
    action: LiveAction | None
    source: str
    flags: tuple[str, ...] = ()
    point: tuple[float, float] | None = None
    sent_size: tuple[int, int] | None = None
    latency_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    retries: int = 0


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
