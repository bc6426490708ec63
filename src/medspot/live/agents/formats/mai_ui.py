"""MAI-UI's `mobile_use` function calls (Tongyi-MAI/MAI-UI `src/prompt.py` MAI_MOBILE_SYS_PROMPT,
read as `src/mai_naivigation_agent.py` `parse_action_to_structure_output` reads them): the
answer is `<thinking>...</thinking>` then `<tool_call>\\n{"name": "mobile_use", "arguments":
{...}}\\n</tool_call>` (a thinking checkpoint's `</think>` closes the thought). Pure.

Actions (`arguments.action`) on the card's 0..999 grid; a `coordinate` of four numbers is its
centre, as the repository reads it:
- `click` at `coordinate` (left), `double_click` (the ask-user prompt's) a double click;
- `type` (`text`); `drag` from `start_coordinate` to `end_coordinate`;
- `system_button` `enter` presses Enter; `back`, `home`, `menu` are phone buttons the
  environments do not have (unsupported, flagged);
- `terminate` `success` is `Done`, `fail` is `Infeasible` with the thought as its reason;
  `answer` ends the task as `Done` (flagged, as Qwen3's `answer`);
- `wait` is a no-action flagged `wait`;
- `long_press`, `swipe`, `open` (an app by name) and `ask_user` execute nothing (flagged
  unsupported): a phone's swipe has no single desktop meaning (a scroll moves the other way
  round), so it is not guessed.

The memory of an earlier answer is what the repository's harness sends back as an assistant
turn (`mem2response`): `<thinking>\\n{thought}\\n</thinking>\\n<tool_call>\\n{compact JSON}\\n
</tool_call>`; an answer without a readable tool call is kept as it was.
"""

from __future__ import annotations

import json
import re
from typing import Any

from medspot.jsonsafe import finite_float
from medspot.live.agents.answer_reader import BAD_ARGS, UNSUPPORTED, Frame, ParsedAction
from medspot.live.agents.formats.qwen import ANSWER_AS_DONE, tool_calls
from medspot.live.agents.formats.reading import (
    MALFORMED,
    WAIT,
    AgentFormat,
    AgentReading,
    collect,
)
from medspot.live.core.actions import Click, Done, Drag, Infeasible, Key, TypeText

__all__ = ["MAI_UI", "mai_memory", "read_mai_ui"]

SOURCE = "mai-ui"
_THINKING = re.compile(r"<thinking>(.*?)</thinking>", re.DOTALL)
_NOTHING = {"long_press", "swipe", "open", "ask_user"}


def _normalise(text: str) -> str:
    """A thinking checkpoint's `...</think>` as the `<thinking>` block the reader expects (the
    repository's own `parse_tagged_text` does the same)."""
    if "</think>" in text and "</thinking>" not in text:
        text = "<thinking>" + text.replace("</think>", "</thinking>")
    return text


def _thought(text: str) -> str | None:
    m = _THINKING.search(text)
    if m:
        return m.group(1).strip() or None
    head = text.split("<tool_call>", 1)[0].strip()
    return head or None


def _point(v: Any) -> tuple[float, float] | None:
    """`[x, y]`, or the centre of `[x1, y1, x2, y2]`."""
    if not isinstance(v, list | tuple) or len(v) not in (2, 4):
        return None
    nums = [finite_float(n) for n in v]
    f = [n for n in nums if n is not None]
    if len(f) != len(v):
        return None
    if len(f) == 2:
        return f[0], f[1]
    return (f[0] + f[2]) / 2, (f[1] + f[3]) / 2


def _one(args: dict[str, Any], frame: Frame, thought: str | None) -> ParsedAction:
    action = args.get("action")
    if action in ("click", "double_click"):
        at = _point(args.get("coordinate"))
        if at is None:
            return ParsedAction(None, SOURCE, (BAD_ARGS,))
        x, y = frame.px(*at)
        return ParsedAction(Click(x, y, "left", action == "double_click"), SOURCE)
    if action == "type":
        text = args.get("text")
        if not isinstance(text, str):
            return ParsedAction(None, SOURCE, (BAD_ARGS,))
        return ParsedAction(TypeText(text), SOURCE)
    if action == "drag":
        start = _point(args.get("start_coordinate"))
        end = _point(args.get("end_coordinate"))
        if start is None or end is None:
            return ParsedAction(None, SOURCE, (BAD_ARGS,))
        (x1, y1), (x2, y2) = frame.px(*start), frame.px(*end)
        return ParsedAction(Drag(x1, y1, x2, y2), SOURCE)
    if action == "system_button":
        button = str(args.get("button", "")).strip().lower()
        if button == "enter":
            return ParsedAction(Key("Enter"), SOURCE)
        return ParsedAction(None, SOURCE, (UNSUPPORTED,))
    if action == "terminate":
        status = str(args.get("status", "success")).strip().lower()
        if status in ("fail", "failure"):
            return ParsedAction(Infeasible(thought or "terminate(status='fail')"), SOURCE)
        return ParsedAction(Done(), SOURCE)
    if action == "answer":
        return ParsedAction(Done(), SOURCE, (ANSWER_AS_DONE,))
    if action == "wait":
        return ParsedAction(None, SOURCE, (WAIT,))
    if action in _NOTHING:
        return ParsedAction(None, SOURCE, (UNSUPPORTED,))
    return ParsedAction(None, SOURCE, (BAD_ARGS,))


def _arguments(body: str) -> dict[str, Any] | None:
    try:
        call = json.loads(body)
    except ValueError:
        return None
    args = call.get("arguments") if isinstance(call, dict) else None
    if isinstance(args, str):  # some servers send the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    return args if isinstance(args, dict) else None


def read_mai_ui(text: str, frame: Frame) -> AgentReading:
    cleaned = _normalise(text or "")
    thought = _thought(cleaned)
    bodies = tool_calls(cleaned)
    if not bodies:
        return AgentReading((), thought, (MALFORMED,))
    parsed: list[ParsedAction] = []
    for body in bodies:
        args = _arguments(body)
        if args is None:
            parsed.append(ParsedAction(None, SOURCE, (MALFORMED,)))
            break
        parsed.append(_one(args, frame, thought))
    return collect(parsed, thought)


def mai_memory(text: str) -> str:
    cleaned = _normalise(text or "")
    bodies = tool_calls(cleaned)
    args = _arguments(bodies[0]) if bodies else None
    if args is None:
        return (text or "").strip()
    call = json.dumps({"name": "mobile_use", "arguments": args}, separators=(",", ":"))
    return f"<thinking>\n{_thought(cleaned) or ''}\n</thinking>\n<tool_call>\n{call}\n</tool_call>"


MAI_UI = AgentFormat(
    name="mai-ui",
    read=read_mai_ui,
    memory=mai_memory,
    summary="<thinking> then <tool_call> mobile_use JSON on a 0..999 grid; terminate(status)",
)
