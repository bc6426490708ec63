"""UI-TARS's computer-use answers (UI-TARS-1.5-7B and UI-TARS-7B-SFT): `Thought: ...` then
`Action: ...` with one or more calls of its action space (bytedance/UI-TARS prompts.py
COMPUTER_USE and README_v1.md; the `ui-tars` package's `parse_action_to_structure_output` is
the reference reader). Pure.

- The thought is the text before the last `Action:` (a `Thought:` / `Reflection:` label
  dropped); the calls are read from after it, in order (UI-TARS separates several actions with
  blank lines).
- `finished(content=...)` is `Done`; `call_user()` ("call the user when the task is unsolvable,
  or when you need the user's help", README_v1) is `Infeasible` with the thought as the reason,
  as OSWorld's UI-TARS agent maps it to FAIL; `wait()` is a no-action flagged `wait`.
- Coordinates are the card's convention (1.5: pixels of the smart-resized image; v1: 0..1000),
  through the frame, exactly as in `answer_reader`.
- The memory of an earlier answer is the answer itself with `<|box_start|>`/`<|box_end|>`
  around its coordinates again (README_deploy.md's `add_box_token`): UI-TARS's harnesses send
  earlier answers back as assistant turns.
"""

from __future__ import annotations

import re

from medspot.adapters.parsing import clean_text
from medspot.live.agents.answer_reader import UNSUPPORTED, Frame, ParsedAction, named_action
from medspot.live.agents.calls import find_calls
from medspot.live.agents.formats.reading import MALFORMED, WAIT, AgentFormat, AgentReading, collect
from medspot.live.core.actions import Done, Infeasible

__all__ = ["UI_TARS", "add_box_token", "read_ui_tars", "ui_tars_memory", "ui_tars_thought"]

SOURCE = "ui-tars"
_KNOWN = {
    "click", "left_single", "left_double", "right_single", "drag", "select", "hotkey", "type",
    "scroll", "wait", "finished", "call_user", "hover", "press", "release", "mouse_down",
    "mouse_up", "move_to", "long_press", "open_app", "press_home", "press_back",
}  # fmt: skip
_ACTION = re.compile(r"Action\s*:", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:Thought|Reflection|Action_Summary)\s*:\s*", re.IGNORECASE)
_BOX = re.compile(r"(start_box|end_box)='\((\d+),\s*(\d+)\)'")


def ui_tars_thought(text: str) -> str | None:
    """The text before the last `Action:`, its label removed (None when empty)."""
    found = list(_ACTION.finditer(text))
    head = text[: found[-1].start()] if found else ""
    thought = _LABEL.sub("", head.strip()).strip()
    return thought or None


def read_ui_tars(text: str, frame: Frame) -> AgentReading:
    cleaned, _ = clean_text(text)
    found = list(_ACTION.finditer(cleaned))
    thought = ui_tars_thought(cleaned)
    if not found:
        return AgentReading((), thought, (MALFORMED,))
    part = cleaned[found[-1].end() :]
    parsed: list[ParsedAction] = []
    for call in find_calls(part, _KNOWN):
        if call.name == "wait":
            parsed.append(ParsedAction(None, SOURCE, (WAIT,)))
        elif call.name == "finished":
            parsed.append(ParsedAction(Done(), SOURCE))
        elif call.name == "call_user":
            parsed.append(ParsedAction(Infeasible(thought or "call_user()"), SOURCE))
        elif call.name in ("press", "release", "mouse_down", "mouse_up", "move_to"):
            parsed.append(ParsedAction(None, SOURCE, (UNSUPPORTED,)))
        else:
            parsed.append(named_action(call, frame, SOURCE))
    if not parsed and re.search(r"[A-Za-z_]\w*\s*\(", part):
        parsed.append(ParsedAction(None, SOURCE, (UNSUPPORTED,)))  # a call of another space
    return collect(parsed, thought)


def add_box_token(text: str) -> str:
    """README_deploy.md's `add_box_token`: `start_box='(x,y)'` -> `start_box='<|box_start|>
    (x,y)<|box_end|>'` in the action part of an answer."""
    if "Action: " not in text or "start_box=" not in text:
        return text
    head, *actions = text.split("Action: ")
    boxed = [
        _BOX.sub(lambda m: f"{m[1]}='<|box_start|>({m[2]},{m[3]})<|box_end|>'", a.strip())
        for a in actions
    ]
    return head + "Action: " + "\n\n".join(boxed)


def ui_tars_memory(text: str) -> str:
    return add_box_token(text.strip())


UI_TARS = AgentFormat(
    name="ui-tars",
    read=read_ui_tars,
    memory=ui_tars_memory,
    summary="Thought:/Action: with UI-TARS's action calls; finished() done, call_user() infeasible",
)
