"""Live actions: what a model may do to a running application, in screenshot pixels.

Coordinates are pixels of the screenshot the model was shown (the environment's observation),
origin top-left, x to the right, y down; floats are allowed and rounded by the environment.
Every card already outputs a click point; the other kinds are for cards and prompts that can
emit them. The JSON form (`action_to_json` / `action_from_json`) is what the live journal stores.

Text form (documented in docs/live.md, parsed by `medspot.live.agents.answer_reader`):
    click(x, y)                 left click
    double_click(x, y)
    right_click(x, y)
    drag(x1, y1, x2, y2)        mouse down at (x1, y1), a few moves, mouse up at (x2, y2)
    scroll(x, y, dy)            wheel at (x, y); dy > 0 scrolls down, in notches
    type("text")                types into the focused element
    key("Enter")                one key or chord ("Escape", "ctrl+a"); Playwright key names
    done()                      the model declares the task finished
    infeasible("reason")        the model declares the request impossible (it ends the task)
    tool(name, {"arg": ..})     a typed tool of the tools track (`--tools orthanc`), JSON args
"""

from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from medspot.errors import MedspotError
from medspot.geometry import Point

__all__ = [
    "ENDINGS",
    "WHEEL_NOTCH_PX",
    "ActionFormatError",
    "Click",
    "Done",
    "Drag",
    "Infeasible",
    "Key",
    "LiveAction",
    "NotAnAction",
    "Scroll",
    "ToolCall",
    "TypeText",
    "action_from_json",
    "action_to_json",
    "describe_action",
    "is_action",
    "normalise_key",
    "point_of",
]

Button = Literal["left", "right"]


@dataclass(frozen=True, slots=True)
class Click:
    x: float
    y: float
    button: Button = "left"
    double: bool = False


@dataclass(frozen=True, slots=True)
class Drag:
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(frozen=True, slots=True)
class Scroll:
    x: float
    y: float
    dy: int  # wheel notches, > 0 down


@dataclass(frozen=True, slots=True)
class TypeText:
    text: str


@dataclass(frozen=True, slots=True)
class Key:
    key: str


@dataclass(frozen=True, slots=True)
class Done:
    pass


@dataclass(frozen=True, slots=True)
class Infeasible:
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of one of the tools offered beside the GUI (`medspot.live.core.tools`): its
    name and its arguments as JSON values."""

    name: str
    args: dict[str, Any]


LiveAction = Click | Drag | Scroll | TypeText | Key | Done | Infeasible | ToolCall
ENDINGS = (Done, Infeasible)  # actions that end the task instead of acting
WHEEL_NOTCH_PX = 100  # one wheel notch in pixels (Chromium's; what the web driver sends)
_ACTION_TYPES = (Click, Drag, Scroll, TypeText, Key, Done, Infeasible, ToolCall)


class ActionFormatError(MedspotError):
    """A live action's JSON form that does not read (`action_from_json`)."""


class NotAnAction(MedspotError, TypeError):
    """Something given as a live action that is not one (a string, a number, a dict): refused
    before anything is spent. Also a `TypeError`."""

    exit_code = 2


def is_action(x: object) -> TypeGuard[LiveAction]:
    """Whether `x` is an action object of this module."""
    return isinstance(x, _ACTION_TYPES)


def _num(d: dict[str, Any], name: str) -> float:
    v = d.get(name)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ActionFormatError(f"live action {d!r}: field '{name}' must be a finite number")
    return float(v)


def action_to_json(action: LiveAction) -> dict[str, Any]:
    """The journal form: `{"kind": "click", "x": .., "y": .., ...}`."""
    match action:
        case Click(x, y, button, double):
            return {"kind": "click", "x": x, "y": y, "button": button, "double": double}
        case Drag(x1, y1, x2, y2):
            return {"kind": "drag", "x1": x1, "y1": y1, "x2": x2, "y2": y2}
        case Scroll(x, y, dy):
            return {"kind": "scroll", "x": x, "y": y, "dy": dy}
        case TypeText(text):
            return {"kind": "type", "text": text}
        case Key(key):
            return {"kind": "key", "key": key}
        case Done():
            return {"kind": "done"}
        case Infeasible(reason):
            return {"kind": "infeasible", "reason": reason}
        case ToolCall(name, args):
            return {"kind": "tool", "name": name, "args": dict(args)}
    raise TypeError(f"not a live action: {action!r}")


def action_from_json(d: dict[str, Any]) -> LiveAction:
    """An action from its journal form; `ActionFormatError` when it does not read."""
    if not isinstance(d, dict):
        raise ActionFormatError(f"live action {d!r}: not a JSON object")
    kind = d.get("kind")
    if kind == "click":
        button = d.get("button", "left")
        if button not in ("left", "right"):
            raise ActionFormatError(f"live action {d!r}: field 'button' must be left or right")
        return Click(_num(d, "x"), _num(d, "y"), button, bool(d.get("double", False)))
    if kind == "drag":
        return Drag(_num(d, "x1"), _num(d, "y1"), _num(d, "x2"), _num(d, "y2"))
    if kind == "scroll":
        return Scroll(_num(d, "x"), _num(d, "y"), int(_num(d, "dy")))
    if kind == "type":
        if not isinstance(d.get("text"), str):
            raise ActionFormatError(f"live action {d!r}: field 'text' must be a string")
        return TypeText(d["text"])
    if kind == "key":
        if not isinstance(d.get("key"), str) or not d["key"]:
            raise ActionFormatError(f"live action {d!r}: field 'key' must be a non-empty string")
        return Key(d["key"])
    if kind == "done":
        return Done()
    if kind == "infeasible":
        reason = d.get("reason", "")
        if not isinstance(reason, str):
            raise ActionFormatError(f"live action {d!r}: field 'reason' must be a string")
        return Infeasible(reason)
    if kind == "tool":
        name, args = d.get("name"), d.get("args", {})
        if not isinstance(name, str) or not name:
            raise ActionFormatError(f"live action {d!r}: field 'name' must be a non-empty string")
        if not isinstance(args, dict):
            raise ActionFormatError(f"live action {d!r}: field 'args' must be an object")
        return ToolCall(name, args)
    raise ActionFormatError(f"live action {d!r}: unknown kind {kind!r}")


def _px(v: object) -> str:
    """A coordinate in the text form: whole pixels (what an action object holds may be no
    number at all: it is then shown as it is, never an error while describing it)."""
    return f"{v:.0f}" if isinstance(v, numbers.Real) and not isinstance(v, bool) else repr(v)


def describe_action(action: LiveAction | None) -> str:
    """The text form of an action (docs/live.md), for history lines and reports."""
    match action:
        case None:
            return "no action"
        case Click(x, y, button, double):
            name = "double_click" if double else ("right_click" if button == "right" else "click")
            return f"{name}({_px(x)}, {_px(y)})"
        case Drag(x1, y1, x2, y2):
            return f"drag({_px(x1)}, {_px(y1)}, {_px(x2)}, {_px(y2)})"
        case Scroll(x, y, dy):
            return f"scroll({_px(x)}, {_px(y)}, {dy})"
        case TypeText(text):
            return f"type({text!r})"
        case Key(key):
            return f"key({key!r})"
        case Done():
            return "done()"
        case Infeasible(reason):
            return f"infeasible({reason!r})"
        case ToolCall(name, args):
            return f"tool({name}, {json.dumps(args, ensure_ascii=False, sort_keys=True)})"
    return repr(action)


def point_of(action: LiveAction | None) -> Point | None:
    """Where an action acts, in pixels (None for type/key/done)."""
    match action:
        case Click(x, y, _, _) | Scroll(x, y, _):
            return Point(x, y)
        case Drag(x1, y1, _, _):
            return Point(x1, y1)
    return None


# ---- keys ---------------------------------------------------------------------------------

_KEY_NAMES = {
    "ctrl": "Control", "control": "Control", "shift": "Shift", "alt": "Alt", "option": "Alt",
    "cmd": "Meta", "command": "Meta", "win": "Meta", "meta": "Meta", "super": "Meta",
    "enter": "Enter", "return": "Enter", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "backspace": "Backspace", "delete": "Delete", "del": "Delete", "space": "Space",
    "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight",
    "arrowup": "ArrowUp", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight", "pageup": "PageUp", "pagedown": "PageDown", "home": "Home",
    "end": "End", "insert": "Insert",
}  # fmt: skip


def normalise_key(keys: list[str] | str) -> str:
    """Key names of UI-TARS (`ctrl c`), pyautogui (`['ctrl', 'a']`) or the text form
    (`ctrl+a`) as one Playwright chord: `Control+a`."""
    parts = re.split(r"[+\s]+", keys.strip()) if isinstance(keys, str) else list(keys)
    out = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        low = p.lower()
        if low in _KEY_NAMES:
            out.append(_KEY_NAMES[low])
        elif re.fullmatch(r"f\d{1,2}", low):
            out.append(low.upper())
        else:
            out.append(p)
    return "+".join(out)
