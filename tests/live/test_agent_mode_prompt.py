"""Agent mode tells the model the goal only: neither the request nor the history carries the
oracle's step instructions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medspot.live.agents.model import ModelAgent
from medspot.live.agents.turn import AgentTurn
from medspot.live.core.contract import Observation
from medspot.live.core.tasks import LiveTask

TASK = LiveTask.model_validate({
    "id": "t", "instruction": "Delete the CT study of DOE^JOHN",
    "steps": [{"instruction": "Open patient DOE^JOHN", "target": {"text": "DOE^JOHN"}},
              {"instruction": "Click Delete", "target": {"text": "Delete"}}],
    "success": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOHN"}],
})  # fmt: skip


def _turn(mode: Any) -> AgentTurn:
    async def oracle() -> None:
        return None

    return AgentTurn(
        env="orthanc-explorer", task=TASK, step_index=1, n=2,
        observation=Observation(b"", 1280, 800), screen_path=Path("s.png"), screen_rel="s.png",
        history=("click(10, 20)",), oracle=oracle, mode=mode,
    )  # fmt: skip


def test_agent_mode_request_holds_the_goal_only() -> None:
    agent = ModelAgent(adapter=None)  # type: ignore[arg-type]  # request() uses no adapter
    req = agent.request(_turn("agent"))
    assert req.instruction == TASK.instruction
    assert req.task_overview is None
    guided = agent.request(_turn("guided"))
    assert guided.instruction == "Click Delete" and guided.task_overview == TASK.instruction
