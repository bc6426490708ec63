"""Every step of an episode is one environment call, the first one included, whoever drives it:
the reset brings back the first screen's intended boxes as a step brings back the next one's,
so neither `live run` nor `live serve` asks the environment for them in between (lamp panel: a
real small environment with a child process, in this process; every call a slot makes on its
environment's thread is counted by name)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _lamp_panel import ENTRY, NAME, button_box, switch_task, task_file

from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.core.actions import Click
from medspot.live.envs import registry
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.executors.base import CallSlot
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.serve.host import ClientInfo, EpisodeHost, ServeOptions

pytestmark = pytest.mark.live
T = TypeVar("T")
LAMPS = ("red", "green")


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calls slots make on their environments' threads, in order."""
    made: list[str] = []
    call = CallSlot.call

    async def counted(self: CallSlot, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        made.append(getattr(fn, "__name__", "?"))
        return await call(self, fn, *args, **kw)

    monkeypatch.setattr(CallSlot, "call", counted)
    return made


def _tasks(tmp_path: Path) -> Path:
    return task_file(tmp_path / "tasks.json", [switch_task("two", *LAMPS)])


class _Clicks:
    """An agent that clicks the lamps' buttons in order."""

    name = "clicks"
    max_concurrency = 1

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        x, y = button_box(LAMPS[turn.n - 1]).center
        return AgentAnswer(action=Click(x, y), source="scripted")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def _after_reset(made: list[str]) -> list[str]:
    """The calls after the first one that reset the episode."""
    first = next(i for i, name in enumerate(made) if name.startswith("reset"))
    return made[first + 1 :]


def test_a_run_makes_one_call_a_step(tmp_path: Path, calls: list[str]) -> None:
    req = LiveRequest(
        spec=EnvSpec(NAME, tasks_file=_tasks(tmp_path), spares=0, workroot=tmp_path / "w"),
        model="clicks",
        out=tmp_path / "run",
        agent=_Clicks(),
        n_boot=0,
    )
    assert run_live(req).metrics["task_success_rate"] == 1.0
    assert _after_reset(calls) == ["step", "step"]


def test_a_served_episode_makes_one_call_a_step(tmp_path: Path, calls: list[str]) -> None:
    host = EpisodeHost(
        ServeOptions(
            spec=EnvSpec(NAME, tasks_file=_tasks(tmp_path), workroot=tmp_path / "w"),
            out=tmp_path / "run",
        )
    )
    me = ClientInfo("agent", "1", "session")

    async def main() -> str | None:
        await host.open()
        try:
            await host.start("two", me)
            for lamp in LAMPS:
                turn = await host.act(None, Click(*button_box(lamp).center), me)
            return turn.outcome
        finally:
            await host.close()

    assert asyncio.run(main()) == "success"
    assert _after_reset(calls) == ["step", "step"]
