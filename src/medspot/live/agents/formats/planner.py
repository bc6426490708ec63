"""The planner's answers (`--planner MODEL --grounder CARD`; the harness planner prompt of
`medspot.adapters.cards.harness_planner`): `Thought: ...` then `Action: ...` with the element
named in words, `click(element="the 'Do lookup' button under the form")`, `drag(start="marker
A", end="marker B")`, `scroll(element="the study list", 3)`; `type`, `key`, `done` and
`infeasible` as in the text form. Pure: a `PlanStep` names what the grounder must find; the
grounding agent (`medspot.live.agents.grounded`) turns it into an action on the screen of the
turn it is executed on.

A click or a drag given as coordinates instead of words is not executed (flagged
`bad_action_args`): the planner plans, the grounder points. The shared rules of
`.reading` hold (several steps run one per turn, reading stops at an ending or an unreadable
step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from medspot.adapters.base import Convention
from medspot.adapters.parsing import clean_text
from medspot.live.agents.answer_reader import BAD_ARGS, UNSUPPORTED, Frame, named_action
from medspot.live.agents.calls import Call, find_calls
from medspot.live.agents.formats.reading import AFTER_ENDING, MALFORMED, NO_ACTION, SEVERAL, STOPPED
from medspot.live.agents.formats.textform import text_form_memory
from medspot.live.core.actions import (
    ENDINGS,
    LiveAction,
    action_from_json,
    action_to_json,
    describe_action,
    read_notches,
)

__all__ = ["GROUNDED_KINDS", "PlanReading", "PlanStep", "plan_memory", "read_plan"]

StepKind = Literal["click", "double_click", "right_click", "drag", "scroll", "act"]
GROUNDED_KINDS: tuple[StepKind, ...] = ("click", "double_click", "right_click", "drag", "scroll")
_NAMES = {*GROUNDED_KINDS, "type", "key", "done", "infeasible", "tool"}
_ACTION = re.compile(r"Action\s*:", re.IGNORECASE)
_THOUGHT = re.compile(r"Thought\s*:\s*(.+?)(?=\n\s*Action\s*:|$)", re.IGNORECASE | re.DOTALL)
_NO_FRAME = Frame(Convention.NORMALISED, (1, 1))  # type/key/done/infeasible hold no point


@dataclass(frozen=True)
class PlanStep:
    """One planned step: an element to ground (`element`, and `end` for a drag, `dy` for a
    scroll) or, for `act`, an action that needs no grounding (type, key, done, infeasible)."""

    kind: StepKind
    element: str = ""
    end: str = ""
    dy: int = 0
    action: LiveAction | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind == "act" and self.action is not None:
            d["action"] = action_to_json(self.action)
        else:
            d.update(element=self.element, end=self.end, dy=self.dy)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PlanStep:
        if d.get("kind") == "act":
            return cls("act", action=action_from_json(d["action"]))
        dy = read_notches(d.get("dy", 0)) or 0
        return cls(d["kind"], str(d.get("element", "")), str(d.get("end", "")), dy)

    @property
    def ending(self) -> bool:
        return self.kind == "act" and isinstance(self.action, ENDINGS)

    def describe(self) -> str:
        if self.kind == "act":
            return describe_action(self.action)
        if self.kind == "drag":
            return f"drag(start={self.element!r}, end={self.end!r})"
        if self.kind == "scroll":
            return f"scroll(element={self.element!r}, {self.dy})"
        return f"{self.kind}(element={self.element!r})"


@dataclass(frozen=True)
class PlanReading:
    steps: tuple[PlanStep, ...]
    thought: str | None = None
    flags: tuple[str, ...] = ()


def _words(call: Call, *keys: str, index: int = 0) -> str | None:
    v = call.kw(*keys)
    pos = [p for p in call.pos() if isinstance(p, str)]
    if v is None and len(pos) > index:
        v = pos[index]
    return v.strip() if isinstance(v, str) and v.strip() else None


def _step(call: Call) -> tuple[PlanStep | None, tuple[str, ...]]:
    name = call.name
    if not call.readable and name != "tool":  # a tool's JSON arguments are read from `raw`
        return None, (BAD_ARGS,)
    if name in ("type", "key", "done", "infeasible", "tool"):
        parsed = named_action(call, _NO_FRAME, "planner")
        if parsed.action is None:
            return None, parsed.flags
        return PlanStep("act", action=parsed.action), ()
    if name == "drag":
        start = _words(call, "start", "from_element", "element")
        end = _words(call, "end", "to", "to_element", index=1)
        if start is None or end is None:
            return None, (BAD_ARGS,)
        return PlanStep("drag", start, end), ()
    element = _words(call, "element", "target")
    if element is None:
        return None, (BAD_ARGS,)  # coordinates, or nothing: the planner must name the element
    if name == "scroll":
        dy = call.kw("dy")
        nums = [p for p in call.pos() if isinstance(p, float)]
        if not isinstance(dy, float) and nums:
            dy = nums[0]
        notches = read_notches(dy) if isinstance(dy, float) else None
        if not notches:
            return None, (BAD_ARGS,)
        return PlanStep("scroll", element, dy=notches), ()
    kind: StepKind = "click" if name == "click" else name  # type: ignore[assignment]
    return PlanStep(kind, element), ()


def read_plan(text: str) -> PlanReading:
    cleaned, _ = clean_text(text)
    m = _THOUGHT.search(cleaned)
    thought = m.group(1).strip() if m and m.group(1).strip() else None
    found = list(_ACTION.finditer(cleaned))
    part = cleaned[found[-1].end() :] if found else cleaned
    calls = find_calls(part, _NAMES)
    if not calls:
        flag = UNSUPPORTED if found and re.search(r"[A-Za-z_]\w*\s*\(", part) else MALFORMED
        return PlanReading((), thought, (flag,))
    steps: list[PlanStep] = []
    flags: list[str] = []
    for i, call in enumerate(calls):
        step, why = _step(call)
        more = i + 1 < len(calls)
        if step is None:
            flags.extend(why)
            if more:
                flags.append(STOPPED)
            break
        steps.append(step)
        if step.ending:
            if more:
                flags.append(AFTER_ENDING)
            break
    if not steps and not flags:
        flags.append(NO_ACTION)
    if len(steps) > 1:
        flags.append(SEVERAL)
    return PlanReading(tuple(steps), thought, tuple(dict.fromkeys(flags)))


def plan_memory(text: str) -> str:
    """The planner's own history of an earlier answer: its thought and its action part."""
    return text_form_memory(text)
