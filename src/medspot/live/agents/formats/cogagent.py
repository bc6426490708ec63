"""CogAgent-9B-20241220's answers (THUDM/CogAgent README.md "Model Output", Action_space_en.md,
inference/cli_demo.py): `Action: <what it does>`, then `Grounded Operation: OP(box=[[a,b,c,d]],
...)` with the box on 0..999 of the screen (the operation acts at its centre), and in the
Sensitive formats a `<<敏感操作>>` (sensitive operation) or `<<一般操作>>` (general operation)
tag. Pure.

Operations: CLICK, DOUBLE_CLICK, RIGHT_CLICK at the box; TYPE(box, text) is two actions, a
click in its box then the typing ("entering text at a given location"); SCROLL_UP /
SCROLL_DOWN (step_count notches) at the box; KEY_PRESS(key) and GESTURE(actions=[KEY_DOWN,
KEY_PRESS, KEY_UP]) as one key chord, CogAgent's Windows / macOS key names mapped (Return,
Lcontrol, Lmenu, Command, Up Arrow, ...); END is `Done`. HOVER, SCROLL_LEFT / RIGHT, LAUNCH,
QUOTE_TEXT, QUOTE_CLIPBOARD and LLM execute nothing (flagged). CogAgent's action space has no
drag and no infeasible ending: a task it cannot do can only end by END or the budget.

The thought is the `Action:` text (with `Plan:` before it when asked for); a sensitive tag is
flagged `sensitive_operation`. The memory of an earlier answer is cli_demo.py's history item,
`{grounded operation}\\t{action}`.
"""

from __future__ import annotations

import re

from medspot.adapters.parsing import clean_text
from medspot.live.agents.answer_reader import BAD_ARGS, UNSUPPORTED, Frame, ParsedAction
from medspot.live.agents.calls import Call, box_point, find_calls
from medspot.live.agents.formats.reading import MALFORMED, AgentFormat, AgentReading, collect
from medspot.live.core.actions import (
    Click,
    Done,
    Key,
    Scroll,
    TypeText,
    normalise_key,
    read_notches,
)

__all__ = ["COGAGENT", "SENSITIVE", "cogagent_key", "cogagent_memory", "read_cogagent"]

SOURCE = "cogagent"
SENSITIVE = "sensitive_operation"
_OPERATION = re.compile(r"Grounded\s+Operation\s*:\s*(.*)", re.IGNORECASE)
_ACTION = re.compile(r"^\s*Action\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_PLAN = re.compile(r"^\s*Plan\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_OPS = {
    "click", "double_click", "right_click", "hover", "type", "scroll_up", "scroll_down",
    "scroll_left", "scroll_right", "key_press", "gesture", "launch", "quote_text", "llm",
    "quote_clipboard", "end",
}  # fmt: skip
_NOTHING = {
    "hover",
    "scroll_left",
    "scroll_right",
    "launch",
    "quote_text",
    "llm",
    "quote_clipboard",
}
_KEYS = {
    "return": "Enter", "lcontrol": "Control", "rcontrol": "Control", "right control": "Control",
    "lmenu": "Alt", "rmenu": "Alt", "lshift": "Shift", "rshift": "Shift", "right shift": "Shift",
    "command": "Meta", "right command": "Meta", "up arrow": "ArrowUp", "down arrow": "ArrowDown",
    "left arrow": "ArrowLeft", "right arrow": "ArrowRight", "back": "Backspace",
}  # fmt: skip


def cogagent_key(name: str) -> str:
    """A CogAgent key name as a Playwright key (`Lcontrol` -> `Control`, `A` -> `a`)."""
    low = name.strip().lower()
    if low in _KEYS:
        return _KEYS[low]
    if len(low) == 1:
        return low
    return normalise_key(name.strip())


def _key_value(call: Call) -> str | None:
    key = call.kw("key")
    if key is None and call.pos() and isinstance(call.pos()[0], str):
        key = call.pos()[0]
    return key if isinstance(key, str) and key.strip() else None


def _gesture(call: Call) -> ParsedAction:
    inner = call.kw("actions")
    if not isinstance(inner, str):
        return ParsedAction(None, SOURCE, (BAD_ARGS,))
    keys: list[str] = []
    for c in find_calls(inner, {"key_down", "key_press"}):
        k = _key_value(c)
        if k is None:
            return ParsedAction(None, SOURCE, (BAD_ARGS,))
        key = cogagent_key(k)
        if key not in keys:
            keys.append(key)
    if not keys:
        return ParsedAction(None, SOURCE, (BAD_ARGS,))
    return ParsedAction(Key("+".join(keys)), SOURCE)


def _operation(call: Call, frame: Frame) -> list[ParsedAction]:
    name = call.name
    if name == "end":
        return [ParsedAction(Done(), SOURCE)]
    if name in _NOTHING:
        return [ParsedAction(None, SOURCE, (UNSUPPORTED,))]
    if name == "key_press":
        key = _key_value(call)
        if key is None:
            return [ParsedAction(None, SOURCE, (BAD_ARGS,))]
        return [ParsedAction(Key(cogagent_key(key)), SOURCE)]
    if name == "gesture":
        return [_gesture(call)]
    pt = box_point(call.kw("box"))
    if name == "type":
        text = call.kw("text")
        if not isinstance(text, str):
            return [ParsedAction(None, SOURCE, (BAD_ARGS,))]
        typed = ParsedAction(TypeText(text), SOURCE)
        if pt is None:
            return [typed]
        return [ParsedAction(Click(*frame.px(*pt)), SOURCE), typed]
    if pt is None:
        return [ParsedAction(None, SOURCE, (BAD_ARGS,))]
    x, y = frame.px(*pt)
    if name in ("scroll_up", "scroll_down"):
        steps = call.kw("step_count")
        n = (read_notches(steps) or 1) if isinstance(steps, float) and steps > 0 else 1
        return [ParsedAction(Scroll(x, y, n if name == "scroll_down" else -n), SOURCE)]
    if name == "double_click":
        return [ParsedAction(Click(x, y, double=True), SOURCE)]
    if name == "right_click":
        return [ParsedAction(Click(x, y, button="right"), SOURCE)]
    return [ParsedAction(Click(x, y), SOURCE)]


def _thought(text: str) -> str | None:
    parts = [m.group(1).strip() for rx in (_PLAN, _ACTION) if (m := rx.search(text))]
    joined = " ".join(p for p in parts if p)
    return joined or None


def read_cogagent(text: str, frame: Frame) -> AgentReading:
    raw = text or ""
    cleaned, _ = clean_text(raw)
    thought = _thought(cleaned)
    ops = [m.group(1) for m in _OPERATION.finditer(cleaned)]
    if not ops:
        return AgentReading((), thought, (MALFORMED,))
    parsed: list[ParsedAction] = []
    for op in ops:
        calls = find_calls(op, _OPS)
        if not calls:
            parsed.append(ParsedAction(None, SOURCE, (UNSUPPORTED,)))
            break
        parsed.extend(_operation(calls[0], frame))
    reading = collect(parsed, thought)
    if "<<敏感操作>>" in raw:
        reading = AgentReading(reading.actions, thought, (*reading.flags, SENSITIVE))
    return reading


def cogagent_memory(text: str) -> str:
    cleaned, _ = clean_text(text or "")
    op = _OPERATION.search(cleaned)
    act = _ACTION.search(cleaned)
    step = op.group(1).strip() if op else ""
    action = act.group(1).strip() if act else ""
    return f"{step}\t{action}" if step or action else cleaned.strip()


COGAGENT = AgentFormat(
    name="cogagent",
    read=read_cogagent,
    memory=cogagent_memory,
    summary="Action: / Grounded Operation: OP(box=[[..]]) on 0..999; TYPE clicks its box; END",
)
