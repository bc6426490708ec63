"""Live agents: what chooses the next action from the screen.

- `ModelAgent`: ANY model of the static benchmark (a card, `openai:NAME`, `random`, `ocr`, ...),
  built through the adapter registry exactly as `medspot eval` builds it, asked with a
  `StepRequest` (the screenshot written into the run folder, the current step's instruction,
  the task's goal and the steps done as history lines); its answer is read by
  `action_parse.parse_answer` with the adapter's declared convention.
- `OracleAgent`: the current step's target box from the environment (DOM / AT-SPI), its centre;
  a drag from the target to `to`. A ceiling and a check of the task files, not a model.
- `ReplayAgent`: LiveActions from a JSON-lines file, per task and action number: scripted agents
  for tests (one wrong click, then the right ones) and answers made elsewhere.

`create_agent(name, ...)` picks one: `oracle` and `replay` are live agents, every other name is
a registry model (`random` and `ocr` are the static baselines, run on live screens).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from medspot.adapters import registry
from medspot.adapters.base import Adapter, AdapterContext, Prediction, StepRequest
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError, ModelCallError, TransientModelError
from medspot.geometry import Point
from medspot.live.action_parse import Frame, parse_answer
from medspot.live.actions import (
    Click,
    Done,
    Drag,
    Key,
    LiveAction,
    Scroll,
    TypeText,
    action_from_json,
    action_to_json,
)
from medspot.live.base import Observation, PixelBox
from medspot.live.tasks import LiveTask, Locator, StepSpec

__all__ = [
    "AgentAnswer",
    "AgentTurn",
    "LiveAgent",
    "ModelAgent",
    "OracleAgent",
    "ReplayAgent",
    "create_agent",
    "oracle_action",
    "point_of",
]

log = logging.getLogger(__name__)


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
    locate: Callable[[Locator], Awaitable[PixelBox | None]]
    seed: int = 0

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


# ---- any registry model ---------------------------------------------------------------------


@dataclass
class ModelAgent:
    adapter: Adapter
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    @property
    def name(self) -> str:
        return self.adapter.name

    @property
    def max_concurrency(self) -> int:
        return max(1, int(self.adapter.max_concurrency))

    def request(self, turn: AgentTurn) -> StepRequest:
        return StepRequest(
            step_uid=f"{turn.env}/{turn.task.id}/{turn.n}",
            task_uid=f"{turn.env}/{turn.task.id}",
            image_rel=turn.screen_rel,
            image_path=turn.screen_path,
            image_size=turn.size,
            instruction=turn.step.instruction,
            task_overview=turn.task.instruction,
            history=turn.history,
            seed=turn.seed,
        )

    async def _predict(self, req: StepRequest) -> tuple[Prediction, int, float]:
        retries = 0
        t0 = time.perf_counter()
        while True:
            try:
                pred = await self.adapter.predict(req)
                return pred, retries, time.perf_counter() - t0
            except TransientModelError as e:
                if retries >= self.max_retries:
                    raise ModelCallError(f"{e} (after {retries} retries)") from None
                if e.retry_after is not None and e.retry_after >= 0:
                    delay = min(e.retry_after, 120.0)
                else:
                    delay = min(self.backoff_max, self.backoff_base * 2**retries)
                    delay *= 0.5 + random.random() / 2
                retries += 1
                await asyncio.sleep(delay)
            except ModelCallError:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as e:  # an adapter bug is a failed call, never a click
                log.debug("adapter raised", exc_info=True)
                raise ModelCallError(f"{type(e).__name__}: {e}") from None

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        pred, retries, latency = await self._predict(self.request(turn))
        frame = Frame(self.adapter.convention, turn.size, pred.sent_size)
        parsed = parse_answer(pred.raw_text, frame, pred.point)
        usage = pred.usage
        return AgentAnswer(
            raw_text=pred.raw_text,
            action=parsed.action,
            source=parsed.source,
            flags=(*pred.flags, *parsed.flags),
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


# ---- the oracle -----------------------------------------------------------------------------


async def oracle_action(turn: AgentTurn) -> LiveAction | None:
    """The action of the task's own path for the current step, on the current screen."""
    step = turn.step
    if step.action == "type":
        return TypeText(step.text or "")
    if step.action == "key":
        return Key(step.key or "")
    assert step.target is not None  # the task schema requires it for the other actions
    box = await turn.locate(step.target)
    if box is None:
        return None
    x, y = box.center
    if step.action == "drag":
        assert step.to is not None
        to = await turn.locate(step.to)
        if to is None:
            return None
        return Drag(x, y, *to.center)
    if step.action == "scroll":
        return Scroll(x, y, step.dy or 0)
    if step.action == "double_click":
        return Click(x, y, double=True)
    if step.action == "right_click":
        return Click(x, y, button="right")
    return Click(x, y)


@dataclass
class OracleAgent:
    name: str = "oracle"
    max_concurrency: int = 64

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        action = await oracle_action(turn)
        raw = json.dumps(action_to_json(action)) if action is not None else ""
        return AgentAnswer(raw_text=raw, action=action, source="oracle")

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "baseline",
            "note": "oracle: the target element's box from the application; not a model",
        }

    async def aclose(self) -> None:
        return None


# ---- replay / scripted ----------------------------------------------------------------------


@dataclass
class ReplayAgent:
    """Each line: `{"task": ID, "n": 1, "action": {...}}` (a LiveAction in JSON form) or
    `{"task": ID, "n": 1, "raw_text": "click(412, 233)"}` (read like a model's answer, in
    screenshot pixels); `"n"` may be omitted (the lines of a task in order). A task's actions
    after its last line are `done()`. `{"task": ID, "n": k, "oracle": true}` takes the oracle's
    action for that turn (scripts such as one wrong click, then the right ones)."""

    path: Path
    name: str = "replay"
    max_concurrency: int = 64

    def __post_init__(self) -> None:
        self.lines: dict[str, dict[int, dict[str, Any]]] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read replay file {self.path}: {e.strerror or e}") from None
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                task = obj["task"]
                if not isinstance(task, str):
                    raise TypeError("task must be a string")
                per = self.lines.setdefault(task, {})
                n = obj.get("n", len(per) + 1)
                if not isinstance(n, int) or n < 1:
                    raise TypeError("n must be a whole number from 1")
                if "action" in obj:
                    action_from_json(obj["action"])  # validated now, not mid-run
                elif not isinstance(obj.get("raw_text"), str) and obj.get("oracle") is not True:
                    raise TypeError('needs "action", "raw_text" or "oracle": true')
                per[n] = obj
            except (ValueError, KeyError, TypeError) as e:
                raise ConfigError(f"{self.path}, line {i}: not a live replay line ({e})") from None
            except Exception as e:  # MedspotError from action_from_json
                raise ConfigError(f"{self.path}, line {i}: {e}") from None

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        obj = self.lines.get(turn.task.id, {}).get(turn.n)
        if obj is None:
            return AgentAnswer(raw_text="done()", action=Done(), source="replay")
        if obj.get("oracle") is True:
            action = await oracle_action(turn)
            raw = json.dumps(action_to_json(action)) if action is not None else ""
            return AgentAnswer(raw_text=raw, action=action, source="replay-oracle")
        if "action" in obj:
            action = action_from_json(obj["action"])
            return AgentAnswer(raw_text=json.dumps(obj["action"]), action=action, source="replay")
        from medspot.adapters.base import Convention

        parsed = parse_answer(obj["raw_text"], Frame(Convention.ABS_ORIGINAL, turn.size))
        return AgentAnswer(obj["raw_text"], parsed.action, parsed.source, parsed.flags)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "replay", "file": str(self.path)}

    async def aclose(self) -> None:
        return None


# ---- choosing one ---------------------------------------------------------------------------


def adapter_options(
    model: str,
    options: AdapterOptions | Mapping[str, Any] | None,
    *,
    prompt_style: str,
    concurrency: int,
) -> AdapterOptions:
    """The options `medspot eval` gives the registry factory (`pipeline.evaluate`)."""
    return AdapterOptions.from_mapping(options).with_defaults(
        model=model, prompt_style=prompt_style, concurrency=concurrency
    )


def create_agent(
    model: str,
    *,
    options: AdapterOptions | Mapping[str, Any] | None = None,
    prompt_style: str = "native",
    concurrency: int = 4,
    seed: int = 0,
    max_retries: int = 4,
) -> LiveAgent:
    opts = adapter_options(model, options, prompt_style=prompt_style, concurrency=concurrency)
    if model == "oracle":
        return OracleAgent()
    if model == "replay":
        if not opts.replay_file:
            raise ConfigError("--model replay needs --replay-file FILE (live action JSON lines)")
        return ReplayAgent(Path(opts.replay_file))
    ctx = AdapterContext(dataset=None, images=None, seed=seed, options=opts)
    return ModelAgent(registry.create(model, ctx), max_retries=max_retries)


def point_of(action: LiveAction | None) -> Point | None:
    """Where an action acts, in pixels (None for type/key/done)."""
    match action:
        case Click(x, y, _, _) | Scroll(x, y, _):
            return Point(x, y)
        case Drag(x1, y1, _, _):
            return Point(x1, y1)
    return None
