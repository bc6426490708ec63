"""Qwen2.5-VL's and Qwen3-VL's `computer_use` function calls (QwenLM/Qwen2.5-VL and
QwenLM/Qwen3-VL, cookbooks/utils/agent_function_call.py `ComputerUse`; the answer is one or more
`<tool_call>\\n{"name": "computer_use", "arguments": {...}}\\n</tool_call>` blocks, as their
cookbooks/mobile_agent.ipynb read them). Pure.

Actions (`arguments.action`): `left_click`, `right_click`, `double_click`, `triple_click` (a
double click, flagged) at `coordinate`, or where a `mouse_move` earlier in the same answer left
the pointer; `left_click_drag` from that pointer to `coordinate` (so `mouse_move` then
`left_click_drag` is one drag); `type` (`text`); `key` (`keys`, pressed together); `scroll`
(`pixels`, positive up, as wheel notches, like OSWorld's Qwen agent's `pyautogui.scroll(pixels)`;
at `coordinate`, the pointer, or the screen's centre, flagged); `terminate` (`status`: success
is `Done`, failure `Infeasible`); Qwen3's `answer` ends the task as `Done` (flagged). A
`mouse_move` alone, `middle_click`, `hscroll` and the mobile actions execute nothing (flagged);
`wait` is a no-action flagged `wait`. A click with no point is not guessed. Coordinates are the
card's convention: Qwen2.5-VL pixels of the image as resized and sent, Qwen3-VL its 0..999 grid.

The thought is the `Thought:` text (Qwen3's response format) or whatever precedes the first
tool call. The memory of an earlier answer is what the cookbooks put after `Step k:` in the
prompt's "Task progress": Qwen2.5-VL the tool call JSON itself, Qwen3-VL the answer's `Action:`
description (without double quotes, as its cookbook strips them), else the tool call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from medspot.adapters.parsing import strip_think
from medspot.jsonsafe import finite_float
from medspot.live.agents.answer_reader import (
    BAD_ARGS,
    UNSUPPORTED,
    Frame,
    ParsedAction,
)
from medspot.live.agents.formats.reading import (
    MALFORMED,
    WAIT,
    AgentFormat,
    AgentReading,
    collect,
)
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    Scroll,
    TypeText,
    normalise_key,
    read_notches,
)

__all__ = [
    "QWEN3_COMPUTER_USE",
    "QWEN25_COMPUTER_USE",
    "qwen3_memory",
    "qwen25_memory",
    "read_computer_use",
    "tool_calls",
]

SOURCE = "computer_use"
ASSUMED_CENTRE = "scroll_at_screen_centre"  # a scroll without a point
TRIPLE_AS_DOUBLE = "triple_click_as_double"
ANSWER_AS_DONE = "answer_as_done"

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_THOUGHT = re.compile(r"Thought\s*:\s*(.+?)(?=\n\s*Action\s*:|<tool_call>|$)", re.I | re.DOTALL)
_ACTION_LINE = re.compile(r"^\s*Action\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_CLICKS = {
    "left_click": False, "right_click": False, "double_click": True, "triple_click": True,
    "click": False,  # the mobile_use tool's click, at its coordinate
}  # fmt: skip
# executed nowhere here: the mobile tool's phone actions, GUI-Owl's `interact` (a window for the
# user to resolve)
_NOTHING = {
    "middle_click", "hscroll", "long_press", "swipe", "system_button", "open", "interact",
}  # fmt: skip


def tool_calls(text: str) -> list[str]:
    """The bodies of the `<tool_call>` blocks of an answer, in order."""
    return [m.group(1).strip() for m in _TOOL_CALL.finditer(text)]


def _thought(text: str) -> str | None:
    m = _THOUGHT.search(text)
    if m:
        return m.group(1).strip() or None
    head = text.split("<tool_call>", 1)[0].strip()
    return head or None


def _point(v: Any) -> tuple[float, float] | None:
    if isinstance(v, list | tuple) and len(v) == 2:
        x, y = finite_float(v[0]), finite_float(v[1])
        if x is not None and y is not None:
            return x, y
    return None


def _one(
    args: dict[str, Any], frame: Frame, here: tuple[float, float] | None
) -> tuple[ParsedAction | None, tuple[float, float] | None]:
    """One computer_use call: its action (None: a pointer move) and the pointer after it."""
    action = args.get("action")
    at = _point(args.get("coordinate"))
    if action == "mouse_move":
        return (None, at) if at is not None else (ParsedAction(None, SOURCE, (BAD_ARGS,)), here)
    if action in _CLICKS:
        pt = at or here
        if pt is None:
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        x, y = frame.px(*pt)
        triple = (TRIPLE_AS_DOUBLE,) if action == "triple_click" else ()
        click = Click(x, y, "right" if action == "right_click" else "left", _CLICKS[action])
        return ParsedAction(click, SOURCE, triple), pt
    if action == "left_click_drag":
        if at is None or here is None:
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        (x1, y1), (x2, y2) = frame.px(*here), frame.px(*at)
        return ParsedAction(Drag(x1, y1, x2, y2), SOURCE), at
    if action == "type":
        text = args.get("text")
        if not isinstance(text, str):
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        return ParsedAction(TypeText(text), SOURCE), here
    if action == "key":
        keys = args.get("keys", args.get("text"))
        if isinstance(keys, str):
            keys = [keys]
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        chord = normalise_key(keys)
        if not chord:
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        return ParsedAction(Key(chord), SOURCE), here
    if action == "scroll":
        notches = read_notches(args.get("pixels"))  # Qwen's "pixels" are wheel notches
        if not notches:
            return ParsedAction(None, SOURCE, (BAD_ARGS,)), here
        pt = at or here
        flags: tuple[str, ...] = ()
        if pt is None:
            x, y = frame.centre
            flags = (ASSUMED_CENTRE,)
        else:
            x, y = frame.px(*pt)
        return ParsedAction(Scroll(x, y, -notches), SOURCE, flags), pt
    if action == "terminate":
        status = str(args.get("status", "success")).strip().lower()
        if status == "failure":
            return ParsedAction(Infeasible("terminate(status='failure')"), SOURCE), here
        return ParsedAction(Done(), SOURCE), here
    if action == "answer":
        return ParsedAction(Done(), SOURCE, (ANSWER_AS_DONE,)), here
    if action == "wait":
        return ParsedAction(None, SOURCE, (WAIT,)), here
    if action in _NOTHING:
        return ParsedAction(None, SOURCE, (UNSUPPORTED,)), here
    return ParsedAction(None, SOURCE, (BAD_ARGS,)), here


def read_computer_use(text: str, frame: Frame) -> AgentReading:
    cleaned, _ = strip_think(text or "")
    thought = _thought(cleaned)
    bodies = tool_calls(cleaned)
    if not bodies:
        return AgentReading((), thought, (MALFORMED,))
    parsed: list[ParsedAction] = []
    here: tuple[float, float] | None = None
    for body in bodies:
        try:
            call = json.loads(body)
        except ValueError:
            parsed.append(ParsedAction(None, SOURCE, (MALFORMED,)))
            break
        args = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(args, str):  # some servers send the arguments as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                args = None
        if not isinstance(args, dict):
            parsed.append(ParsedAction(None, SOURCE, (MALFORMED,)))
            break
        found, here = _one(args, frame, here)
        if found is not None:
            parsed.append(found)
    if not parsed:  # pointer moves only
        parsed.append(ParsedAction(None, SOURCE, (UNSUPPORTED,)))
    reading = collect(parsed, thought)
    if isinstance(reading.first, Infeasible) and thought:
        rest = reading.actions[1:]
        reading = AgentReading((Infeasible(thought), *rest), thought, reading.flags)
    return reading


def qwen25_memory(text: str) -> str:
    bodies = tool_calls(strip_think(text or "")[0])
    return "; ".join(bodies) if bodies else (text or "").strip()


def qwen3_memory(text: str) -> str:
    cleaned, _ = strip_think(text or "")
    m = _ACTION_LINE.search(cleaned)
    if m:
        return m.group(1).replace("\n", "").replace('"', "").strip()
    return qwen25_memory(cleaned)


QWEN25_COMPUTER_USE = AgentFormat(
    name="qwen2.5-computer-use",
    read=read_computer_use,
    memory=qwen25_memory,
    summary="<tool_call> computer_use JSON, pixels of the resized image; terminate(status)",
)
QWEN3_COMPUTER_USE = AgentFormat(
    name="qwen3-computer-use",
    read=read_computer_use,
    memory=qwen3_memory,
    summary="Thought/Action then <tool_call> computer_use JSON on a 0..999 grid; terminate",
)
