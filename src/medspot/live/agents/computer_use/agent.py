"""The turn logic both computer-use agents share.

Per runner turn (`answer`):

1. the item acted on in the turn before is resolved with this turn's screen (and, when the
   environment could not execute it, with the reason: the model is told);
2. the next items of the last API call are taken in order: observation-only items
   (`screenshot`, `wait`, a pointer move) are resolved with this screen at once; the first
   item that acts (or is unsupported) is this turn's action: a batch of several actions is
   executed one runner turn each, without asking the API again;
3. when nothing is left, the API is called (with the normal retries) with the results: a call
   that only observes is answered at once with the same screen and the API called again, at
   most `MAX_CALLS_PER_TURN` times per turn (then a no-action turn); a final answer without
   actions ends the task (`Done`, or `Infeasible` by `actions.ending_from_text`).

Every turn's events go into the answer's `call_state` (`transcript`), so a resumed run
continues the conversation from the journal without asking any turn again. Tokens and cost are
those of the calls made in the turn (none for a batched action).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.adapters.backends.pricing import PriceTable
from medspot.adapters.base import Usage
from medspot.adapters.retry import RetryPolicy, call_with_retries
from medspot.errors import ConfigError
from medspot.jsonsafe import json_safe
from medspot.live.agents.computer_use.actions import CuItem, DisplayMap, ending_from_text
from medspot.live.agents.computer_use.transcript import TurnLog, call_items, pending, turn_logs
from medspot.live.agents.tools_prompt import tool_result_line
from medspot.live.agents.turn import AgentAnswer, AgentTurn, AnsweredCallError
from medspot.live.core.actions import ToolCall, action_from_json, action_to_json

__all__ = [
    "MAX_CALLS_PER_TURN",
    "CallResult",
    "ComputerUseAgent",
    "harness_instructions",
    "tool_item",
    "tool_outputs",
]

MAX_CALLS_PER_TURN = 4  # API calls in one runner turn (observation-only calls answered at once)
UNSUPPORTED = "unsupported_action"  # the flag of a no-action turn for an unsupported action


def harness_instructions(kind: str, tools: bool = False) -> str:
    """The harness's system instruction (its own choice, not the API vendor's): how to end,
    and the infeasible rule `actions.ending_from_text` reads; with the tools track, that the
    application's API tools may be used beside the computer."""
    where = "a web browser page" if kind == "browser" else "a desktop application window"
    also = (
        " Besides the computer tool you may call the other tools offered: they act on the "
        "same application through its API (a deletion there is as real as in the GUI)."
        if tools
        else ""
    )
    return (
        f"You operate clinical imaging software shown in {where}. Carry out the user's task "
        "yourself with the computer tool; nobody will answer questions or confirm anything."
        f"{also} "
        "When the task is done, stop and reply with a short message and no computer action. "
        "If the task cannot be done in this application (what it asks for does not exist or "
        "the application does not offer it), change nothing and reply with a message that "
        "starts with 'INFEASIBLE:' followed by the reason."
    )


def tool_item(
    ident: str, name: str, args: Any, cursor: tuple[float, float] | None, offered: frozenset[str]
) -> CuItem:
    """A call of one of the tools offered beside the computer (the tools track) as an item:
    a `ToolCall` (its arguments as JSON writes them back: `json_safe`; the tool checks them),
    or unsupported when the tool is not offered or its arguments do not read."""
    if name not in offered:
        shown = repr(name) if len(name) <= 80 else repr(name[:80]) + "..."
        return CuItem(ident, f"tool:{name}", "unsupported", None, f"unknown tool {shown}", cursor)
    if not isinstance(args, dict):
        return CuItem(ident, f"tool:{name}", "unsupported", None,
                      "the arguments are not a JSON object", cursor)  # fmt: skip
    return CuItem(ident, f"tool:{name}", "act", ToolCall(name, json_safe(args)), cursor=cursor)


def tool_outputs(turn: AgentTurn) -> dict[str, str]:
    """What each tool call executed in this attempt returned, by its item id (the API's call
    id), as the text sent back to the model."""
    out: dict[str, str] = {}
    for past in turn.previous:
        line = tool_result_line(past.tool_result)
        events = (past.answer.call_state or {}).get("events") or ()
        acted = [e.get("id") for e in events if isinstance(e, Mapping) and e.get("e") == "act"]
        if line is not None and acted:
            out[str(acted[-1])] = line
    return out


@dataclass
class CallResult:
    """What one API call gave: its `call` event (without the `e` key), the text the model
    wrote, usage, and the safety checks still pending (OpenAI)."""

    event: dict[str, Any]
    text: str = ""
    raw: Any = None  # the output as JSON (journaled as raw_text)
    usage: Usage | None = None
    flags: list[str] = field(default_factory=list)
    pending_checks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _TurnWork:
    """What one runner turn has done so far."""

    events: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    raws: list[Any] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    calls: int = 0
    retries: int = 0
    t0: float = field(default_factory=time.perf_counter)

    def add_cost(self, cost: float | None) -> None:
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


class ComputerUseAgent(ABC):
    """A computer-use API as a live agent; subclasses make one API call (`_request`)."""

    api: str = ""  # the transcript's api tag
    name: str = ""

    def __init__(
        self,
        *,
        model: str,
        prices: PriceTable,
        acknowledge_safety_checks: bool = False,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.prices = prices
        self.acknowledge = acknowledge_safety_checks
        self._concurrency = max(1, int(concurrency))
        self.retry = retry or RetryPolicy()

    @property
    def max_concurrency(self) -> int:
        return self._concurrency

    # -- what a subclass provides -------------------------------------------------------------

    @abstractmethod
    def display(self, turn: AgentTurn) -> DisplayMap:
        """The display size the API is told for this screen."""

    @abstractmethod
    async def _request(self, turn: AgentTurn, logs: list[TurnLog], dmap: DisplayMap) -> CallResult:
        """One API call continuing the conversation `logs` (the current turn last, with its
        events so far); raises `ModelCallError` / `TransientModelError` on failure."""

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    @abstractmethod
    async def aclose(self) -> None: ...

    # -- the turn -----------------------------------------------------------------------------

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        if turn.mode != "agent":
            raise ConfigError(f"{self.name} plans by itself: run it with --mode agent")
        dmap = self.display(turn)
        past = turn_logs(((p.screen_path, p.answer.call_state) for p in turn.previous), self.api)
        state = pending(past)
        work = _TurnWork()
        if state.awaiting is not None:
            resolved: dict[str, Any] = {"e": "result", "id": state.awaiting}
            last = turn.previous[-1] if turn.previous else None
            if last is not None and last.not_executed:  # the environment could not do it
                resolved["not_executed"] = last.not_executed
            work.events.append(resolved)
        queue = list(state.queue)
        cursor = state.cursor
        while True:
            while queue:
                item = queue.pop(0)
                cursor = item.cursor or cursor
                if item.kind == "observe":
                    work.events.append({"e": "result", "id": item.id})
                    continue
                work.events.append({"e": "act", "id": item.id})
                return self._answer(turn, work, dmap, item, cursor)
            if work.calls >= MAX_CALLS_PER_TURN:
                work.flags.append(f"observe_only_calls:{work.calls}")
                return self._answer(turn, work, dmap, None, cursor)
            current = TurnLog(Path(turn.screen_path), tuple(work.events))
            result = await self._call(turn, [*past, current], dmap, work)
            event = {"e": "call", **result.event}
            work.events.append(event)
            if result.pending_checks and not self.acknowledge:
                codes = ", ".join(str(c.get("code") or c.get("id")) for c in result.pending_checks)
                work.flags.extend(f"safety_check_pending:{c.get('code')}" for c in
                                  result.pending_checks)  # fmt: skip
                raise AnsweredCallError(
                    f"the model's action awaits a human's confirmation (pending safety checks: "
                    f"{codes}); nothing was executed. Rerun with --acknowledge-safety-checks to "
                    "acknowledge them (the turn is asked again)",
                    self._answer(turn, work, dmap, None, cursor),
                )
            work.flags.extend(f"safety_check_acknowledged:{c.get('code')}" for c in
                              result.pending_checks)  # fmt: skip
            ending = event.get("ending")
            if isinstance(ending, dict):
                return self._answer(turn, work, dmap, None, cursor, ending=ending)
            queue = call_items(event)
            if not queue:  # neither actions nor an ending (e.g. cut off at max tokens)
                work.flags.append("no_action")
                return self._answer(turn, work, dmap, None, cursor)

    async def _call(
        self, turn: AgentTurn, logs: list[TurnLog], dmap: DisplayMap, work: _TurnWork
    ) -> CallResult:
        result, retries, _ = await call_with_retries(
            lambda: self._request(turn, logs, dmap), self.retry, label=f"{self.name} turn {turn.n}"
        )
        work.calls += 1
        work.retries += retries
        if result.text:
            work.texts.append(result.text)
        work.raws.append(result.raw)
        work.flags.extend(result.flags)
        if result.usage is not None:
            work.input_tokens += result.usage.input_tokens
            work.output_tokens += result.usage.output_tokens
            work.add_cost(self.prices.cost(self.model, result.usage))
        return result

    def _answer(
        self,
        turn: AgentTurn,
        work: _TurnWork,
        dmap: DisplayMap,
        item: CuItem | None,
        cursor: tuple[float, float] | None,
        *,
        ending: dict[str, Any] | None = None,
    ) -> AgentAnswer:
        flags = list(work.flags)
        if item is not None and item.kind == "unsupported":
            flags.append(UNSUPPORTED)
        if item is not None and item.note and item.kind == "act":
            flags.append(f"note:{item.note}")
        if work.calls == 0:
            flags.append("batched")  # executed from an earlier call's batch: nothing was asked
        action = item.action if item is not None and item.kind == "act" else None
        if ending is not None:
            action = action_from_json(ending)
        raw: Any = work.raws if work.calls else (item.to_json() if item is not None else None)
        state = {
            "api": self.api,
            "events": work.events,
            "cursor": list(cursor) if cursor is not None else None,
            "display": list(dmap.display),
        }
        called = work.calls > 0
        what = item.name if item is not None else ("ending" if ending else "none")
        return AgentAnswer(
            raw_text=json.dumps(raw, ensure_ascii=False) if raw is not None else None,
            action=action,
            source=f"{self.name}:{what}",
            flags=flags,
            point=None,
            sent_size=dmap.display if called else None,
            latency_s=time.perf_counter() - work.t0,
            input_tokens=work.input_tokens if called else None,
            output_tokens=work.output_tokens if called else None,
            cost_usd=work.cost,
            retries=work.retries,
            thought="\n".join(work.texts) or None,
            call_state=state,
        )


def ending_json(text: str) -> dict[str, Any]:
    """The journal form of the ending a final message means."""
    return action_to_json(ending_from_text(text))
