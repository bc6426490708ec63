"""Live actions: what a model may do to a running application, in screenshot pixels.

Coordinates are pixels of the screenshot the model was shown (the environment's observation),
origin top-left, x to the right, y down; floats are allowed and rounded by the environment.
Every card already outputs a click point; the other kinds are for cards and prompts that can
emit them. The JSON form (`action_to_json` / `action_from_json`) is what the live journal stores.

Whatever an action holds (it is what a model wrote: 1e308, NaN, a lone surrogate, a tool
argument of 400 digits), its JSON form is writable and reads back to an action the environment
refuses as it refused the original (`medspot.live.core.executable`): its values go through
`medspot.jsonsafe.json_safe` (a lone surrogate is U+FFFD, which no keyboard types; an integer
beyond 64 bits is clamped; a non-finite number is null, which does not read back as an action:
a no-action step). A scroll amount a reader computes from a model's numbers goes through
`read_notches` (rounded, bounded by `MAX_READ_NOTCHES`: never a huge integer).

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
from medspot.jsonsafe import finite_float, json_safe

__all__ = [
    "ENDINGS",
    "MAX_READ_NOTCHES",
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
    "read_notches",
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
# the most notches a scroll read from a model holds: more is kept at this bound (far beyond
# what any environment executes, so still refused as `scroll_amount`, never a huge integer)
MAX_READ_NOTCHES = 1_000_000
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


def read_notches(value: object) -> int | None:
    """A scroll amount read from a model (notches, any sign) as whole notches: rounded, and
    kept within +-`MAX_READ_NOTCHES`; None when it is no finite number. No reader converts a
    model's number to an integer otherwise (`round(1e308)` is an integer of 309 digits)."""
    f = finite_float(value)
    if f is None:
        return None
    return round(max(-MAX_READ_NOTCHES, min(MAX_READ_NOTCHES, f)))


def _num(d: dict[str, Any], name: str) -> float:
    v = finite_float(d.get(name))
    if v is None:
        raise _bad(d, f"field '{name}' must be a finite number")
    return v


def _bad(d: object, what: str) -> ActionFormatError:
    return ActionFormatError(f"live action {_shown(d)}: {what}")


def _shown(d: object) -> str:
    """A JSON form in a message: its repr, at most 200 characters."""
    try:
        text = repr(d)
    except (RecursionError, ValueError):  # nested too deeply, an int too long to print
        text = f"<a {type(d).__name__} too large to show>"
    return text if len(text) <= 200 else text[:200] + "..."


def action_to_json(action: LiveAction) -> dict[str, Any]:
    """The journal form: `{"kind": "click", "x": .., "y": .., ...}`; always writable as JSON
    (`json_safe`: what a model wrote cannot make the journal unwritable)."""
    form: dict[str, Any] = json_safe(_json_form(action))
    return form


def _json_form(action: LiveAction) -> dict[str, Any]:
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
        case Infeasible(reason):  # free text: anything else is shown as text
            return {
                "kind": "infeasible",
                "reason": reason if isinstance(reason, str) else _shown(reason),
            }
        case ToolCall(name, args):
            return {"kind": "tool", "name": name, "args": args}
    raise TypeError(f"not a live action: {action!r}")


def action_from_json(d: dict[str, Any]) -> LiveAction:
    """An action from its journal form; `ActionFormatError` when it does not read."""
    if not isinstance(d, dict):
        raise _bad(d, "not a JSON object")
    kind = d.get("kind")
    if kind == "click":
        button, double = d.get("button", "left"), d.get("double", False)
        if button not in ("left", "right"):
            raise _bad(d, "field 'button' must be left or right")
        if not isinstance(double, bool):
            raise _bad(d, "field 'double' must be true or false")
        return Click(_num(d, "x"), _num(d, "y"), button, double)
    if kind == "drag":
        return Drag(_num(d, "x1"), _num(d, "y1"), _num(d, "x2"), _num(d, "y2"))
    if kind == "scroll":
        dy = _num(d, "dy")
        if not dy.is_integer():
            raise _bad(d, "field 'dy' must be a whole number of notches")
        return Scroll(_num(d, "x"), _num(d, "y"), read_notches(dy) or 0)
    if kind == "type":
        if not isinstance(d.get("text"), str):
            raise _bad(d, "field 'text' must be a string")
        return TypeText(d["text"])
    if kind == "key":
        if not isinstance(d.get("key"), str) or not d["key"]:
            raise _bad(d, "field 'key' must be a non-empty string")
        return Key(d["key"])
    if kind == "done":
        return Done()
    if kind == "infeasible":
        reason = d.get("reason", "")
        if not isinstance(reason, str):
            raise _bad(d, "field 'reason' must be a string")
        return Infeasible(reason)
    if kind == "tool":
        name, args = d.get("name"), d.get("args", {})
        if not isinstance(name, str) or not name:
            raise _bad(d, "field 'name' must be a non-empty string")
        if not isinstance(args, dict):
            raise _bad(d, "field 'args' must be an object")
        return ToolCall(name, args)
    raise _bad(d, f"unknown kind {_shown(kind)}")


def _px(v: object) -> str:
    """A coordinate in the text form: whole pixels (what an action object holds may be no
    number at all: it is then shown as it is, never an error while describing it)."""
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    f = finite_float(v) if isinstance(v, numbers.Real) else None
    if f is None:  # no number (or one too large for a float)
        return _shown(v)
    return f"{f:.0f}" if abs(f) < 1e15 else f"{f:g}"


def _lit(v: object) -> str:
    """A string argument in the text form (what an action holds may be no string)."""
    return repr(v) if isinstance(v, str) else _shown(v)


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
            return f"scroll({_px(x)}, {_px(y)}, {_px(dy)})"
        case TypeText(text):
            return f"type({_lit(text)})"
        case Key(key):
            return f"key({_lit(key)})"
        case Done():
            return "done()"
        case Infeasible(reason):
            return f"infeasible({_lit(reason)})"
        case ToolCall(name, args):
            return f"tool({name if isinstance(name, str) else _shown(name)}, {_args_text(args)})"
    return repr(action)


def _args_text(args: object) -> str:
    """A tool call's arguments in the text form, whatever they hold (at most 500 characters)."""
    try:
        text = json.dumps(json_safe(args), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(args)
    return text if len(text) <= 500 else text[:500] + "..."


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
