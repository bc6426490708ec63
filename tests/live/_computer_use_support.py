"""Helpers of the computer-use agent tests: distinct screenshots per turn, and a small loop that
asks an agent turn after turn the way the runner does (the previous turns' answers given back,
a new screen after every action), without an application."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from medspot.live.agents.turn import AgentAnswer, AgentTurn, LiveAgent, PastTurn
from medspot.live.core.actions import ENDINGS
from medspot.live.core.contract import Observation
from medspot.live.core.tasks import LiveTask
from medspot.testing.cu_script import CuScript

GOAL = "Open the MR KNEE study of GARCIA^MARIA"
TASK = LiveTask.model_validate({
    "id": "t", "instruction": GOAL,
    "steps": [{"instruction": "Open GARCIA^MARIA", "target": {"text": "GARCIA^MARIA"}}],
    "success": [{"kind": "web.url_matches", "pattern": "#study"}],
})  # fmt: skip


def screen(folder: Path, n: int, size: tuple[int, int] = (1280, 800)) -> tuple[Path, bytes]:
    """Turn `n`'s screenshot: a PNG of its own colour (so every turn's sha differs)."""
    buf = io.BytesIO()
    Image.new("RGB", size, ((n * 37) % 256, (n * 91) % 256, 120)).save(buf, format="PNG")
    png = buf.getvalue()
    path = folder / f"{hashlib.sha256(png).hexdigest()}.png"
    path.write_bytes(png)
    return path, png


def sha(png: bytes) -> str:
    return hashlib.sha256(png).hexdigest()


async def _no_oracle() -> None:
    return None


def turn(
    folder: Path, n: int, previous: Sequence[PastTurn], size: tuple[int, int] = (1280, 800),
    url: str | None = "http://127.0.0.1/app/explorer.html#find-patients", mode: Any = "agent",
) -> AgentTurn:  # fmt: skip
    path, png = screen(folder, n, size)
    return AgentTurn(
        env="test", task=TASK, step_index=0, n=n, observation=Observation(png, *size, url=url),
        screen_path=path, screen_rel=f"screens/{path.name}", history=(), oracle=_no_oracle,
        mode=mode, previous=tuple(previous),
    )  # fmt: skip


async def drive(
    agent: LiveAgent, folder: Path, max_turns: int = 12, previous: Sequence[PastTurn] = (),
    size: tuple[int, int] = (1280, 800),
) -> list[PastTurn]:  # fmt: skip
    """Ask `agent` turn after turn until it ends the task (or `max_turns`); the turns, each with
    the screen it saw and its answer."""
    past = list(previous)
    for n in range(len(past) + 1, max_turns + 1):
        t = turn(folder, n, past, size)
        ans: AgentAnswer = await agent.answer(t)
        past.append(PastTurn(n, t.screen_path, t.screen_rel, ans))
        if isinstance(ans.action, ENDINGS):
            break
    return past


def script(turns: list[dict[str, Any]], match: str = "GARCIA^MARIA") -> CuScript:
    return CuScript.model_validate({"conversations": [{"match": match, "turns": turns}]})
