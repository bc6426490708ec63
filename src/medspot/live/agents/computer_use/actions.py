"""The computer-use APIs' actions in the one live action type (pure functions).

An API turn may return several actions (OpenAI's batched `actions`, several Anthropic
`tool_use` blocks); each is read into a `CuItem` of one of three kinds:

- `act`: a live action to execute (one runner turn each, in order);
- `observe`: an action that changes nothing the harness executes (`screenshot`, `wait`, a
  mouse `move`, `cursor_position`): answered with the current screen, no turn spent;
- `unsupported`: an action the live action type cannot express (a middle or triple click,
  holding keys, a click with modifier keys, a horizontal scroll, mouse down/up, zoom) or whose
  arguments cannot be read: a no-action turn (it uses one action of the budget and changes
  nothing), and the model is told it was not executed. Never a guessed click.

Coordinates are the API's display pixels, mapped to the screenshot's pixels by a
`DisplayMap` (the identity unless the screenshot was sent scaled down). Every number is read
without `float()`'s or `int()`'s errors (`medspot.jsonsafe.finite_float`: an integer of 400
digits is no number) and bounded before it becomes an integer: a scroll's amount through
`read_notches` (`"scroll_y": 1e308` is a scroll of `MAX_READ_NOTCHES` notches, which the
environment refuses: a no-action step flagged `not_executable:scroll_amount`, the note saying
what the model asked).

A final answer without any action ends the task: `Infeasible(reason)` when a line of it starts
with `INFEASIBLE` (the harness's instruction asks for "INFEASIBLE: reason"), else `Done`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from medspot.jsonsafe import finite_float, json_safe
from medspot.live.core import actions

__all__ = [
    "CuItem",
    "DisplayMap",
    "ItemKind",
    "anthropic_item",
    "ending_from_text",
    "fit_display",
    "openai_item",
    "openai_keys",
    "xdotool_keys",
]

ItemKind = Literal["act", "observe", "unsupported"]
Point = tuple[float, float]
MAX_REASON_CHARS = 500


@dataclass(frozen=True, slots=True)
class CuItem:
    """One action of an API turn. `id`: the tool_use id, or `<call_id>#<i>` for OpenAI;
    `name`: the API's action name; `cursor`: where the pointer is after it (screen pixels)."""

    id: str
    name: str
    kind: ItemKind
    action: actions.LiveAction | None = None
    note: str = ""
    cursor: Point | None = None

    def to_json(self) -> dict[str, Any]:
        """The journal form (`json_safe`: its name and note hold what the model wrote)."""
        form: dict[str, Any] = json_safe({
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "action": actions.action_to_json(self.action) if self.action is not None else None,
            "note": self.note,
            "cursor": list(self.cursor) if self.cursor is not None else None,
        })  # fmt: skip
        return form

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CuItem:
        """An item from the journal; one whose action does not read back (a journal written
        by a version that let a non-finite point through) is an unsupported item: a no-action
        turn, never a run that cannot go on."""
        action = d.get("action")
        raw_kind = d.get("kind")
        kind: ItemKind = (
            raw_kind if raw_kind in ("act", "observe", "unsupported") else "unsupported"
        )
        note = str(d.get("note", ""))
        read: actions.LiveAction | None = None
        if isinstance(action, Mapping):
            try:
                read = actions.action_from_json(dict(action))
            except actions.ActionFormatError as e:
                kind, note = "unsupported", f"its action does not read: {e}"
        return cls(
            id=str(d.get("id", "")),
            name=str(d.get("name", "")),
            kind=kind,
            action=read if kind == "act" else None,
            note=note,
            cursor=_pair(d.get("cursor")),
        )


@dataclass(frozen=True, slots=True)
class DisplayMap:
    """The screenshot's size and the display size the API was told (the size of the image it
    was sent); its coordinates are mapped back to the screenshot's pixels."""

    screen: tuple[int, int]
    display: tuple[int, int]

    @property
    def scaled(self) -> bool:
        return self.screen != self.display

    def to_screen(self, x: float, y: float) -> Point:
        return x * self.screen[0] / self.display[0], y * self.screen[1] / self.display[1]


def fit_display(screen: tuple[int, int], max_edge: int, max_pixels: int) -> tuple[int, int]:
    """The largest size of `screen`'s aspect with its long edge at most `max_edge` and at most
    `max_pixels` pixels (the screen itself when it fits; never scaled up)."""
    w, h = screen
    if w <= 0 or h <= 0:
        return screen
    s = min(1.0, max_edge / max(w, h), math.sqrt(max_pixels / (w * h)))
    if s >= 1.0:
        return screen
    return max(1, math.floor(w * s + 1e-9)), max(1, math.floor(h * s + 1e-9))


def _num(v: Any) -> float | None:
    return finite_float(v)


def _text(v: Any) -> str:
    """A value the model wrote, in a note: its repr, at most 80 characters."""
    try:
        text = repr(v)
    except (ValueError, RecursionError):  # an int too long to print, nesting too deep
        text = f"<a {type(v).__name__} too large to show>"
    return text if len(text) <= 80 else text[:80] + "..."


def _pair(v: Any) -> Point | None:
    if isinstance(v, Mapping):
        x, y = _num(v.get("x")), _num(v.get("y"))
    elif isinstance(v, Sequence) and not isinstance(v, str) and len(v) == 2:
        x, y = _num(v[0]), _num(v[1])
    else:
        return None
    return (x, y) if x is not None and y is not None else None


def _unsupported(item_id: str, name: str, note: str, cursor: Point | None) -> CuItem:
    return CuItem(item_id, name, "unsupported", None, note, cursor)


def _typing(item_id: str, name: str, text: Any, cursor: Point | None) -> CuItem:
    """A typing action (both APIs name it `type`), unsupported without readable text."""
    if not isinstance(text, str):
        return _unsupported(item_id, name, "no readable text", cursor)
    return CuItem(item_id, name, "act", actions.TypeText(text), cursor=cursor)


def _on_screen(dmap: DisplayMap, point: Point | None) -> Point | None:
    """`point` in the screenshot's pixels; None when it maps to no finite point (1e308 times
    a scale overflows)."""
    if point is None:
        return None
    x, y = dmap.to_screen(*point)
    return (x, y) if math.isfinite(x) and math.isfinite(y) else None


def _not_finite(item_id: str, name: str, raw: Any, cursor: Point | None) -> CuItem:
    return _unsupported(
        item_id, name, f"coordinates {_text(raw)} are no finite point of the screen", cursor
    )


# ---- keys ---------------------------------------------------------------------------------

# Names the APIs use that `normalise_key` does not know (xdotool keysyms, OpenAI's spellings).
_KEY_ALIASES = {
    "page_down": "PageDown", "page_up": "PageUp", "prior": "PageUp", "next": "PageDown",
    "kp_enter": "Enter", "super_l": "Meta", "super_r": "Meta", "control_l": "Control",
    "control_r": "Control", "shift_l": "Shift", "shift_r": "Shift", "alt_l": "Alt",
    "alt_r": "Alt", "caps_lock": "CapsLock", "capslock": "CapsLock", "arrowup": "ArrowUp",
}  # fmt: skip


def _key_parts(parts: Sequence[str]) -> str:
    names = [p.strip() for p in parts if p.strip()]
    mapped = [_KEY_ALIASES.get(p.lower(), p) for p in names]
    chord = actions.normalise_key(mapped).split("+")
    # one letter is the key itself, never a capital (Playwright would press Shift for "A")
    return "+".join(k.lower() if len(k) == 1 and k.isalpha() else k for k in chord)


def openai_keys(keys: Sequence[str]) -> str:
    """OpenAI's `keypress` keys (`["CTRL", "A"]`, `["ENTER"]`) as one Playwright chord."""
    return _key_parts(list(keys))


def xdotool_keys(text: str) -> str:
    """Anthropic's xdotool key text (`ctrl+a`, `Return`, `Page_Down`) as a Playwright chord."""
    return _key_parts(re.split(r"[+\s]+", text.strip()))


# ---- OpenAI Responses API computer actions ------------------------------------------------


def openai_item(
    action: Mapping[str, Any], item_id: str, dmap: DisplayMap, cursor: Point | None = None
) -> CuItem:
    """One action of a `computer_call` (`click`, `double_click`, `drag`, `keypress`, `type`,
    `scroll`, `move`, `wait`, `screenshot`)."""
    name = str(action.get("type", ""))
    point = _pair(action)
    at = _on_screen(dmap, point)
    if point is not None and at is None:
        return _not_finite(item_id, name, point, cursor)
    held = action.get("keys") if name not in ("keypress",) else None
    if held:
        what = f"{_text(name)} with keys held ({_text(held)}) is not supported"
        return _unsupported(item_id, name, what, cursor)
    if name in ("click", "double_click"):
        button = action.get("button", "left")
        if at is None:
            return _unsupported(item_id, name, "no readable x, y", cursor)
        if name == "double_click":
            return CuItem(item_id, name, "act", actions.Click(*at, double=True), cursor=at)
        if button not in ("left", "right"):
            return _unsupported(item_id, name, f"a {_text(button)} click is not supported", cursor)
        return CuItem(item_id, name, "act", actions.Click(*at, button=button), cursor=at)
    if name == "drag":
        raw = action.get("path")
        path = [p for p in (_pair(q) for q in raw or ()) if p is not None] if raw else []
        if len(path) < 2 or (raw is not None and len(path) != len(raw)):
            return _unsupported(item_id, name, "a drag needs a path of at least 2 points",
                                cursor)  # fmt: skip
        start, end = _on_screen(dmap, path[0]), _on_screen(dmap, path[-1])
        if start is None or end is None:
            return _not_finite(item_id, name, [path[0], path[-1]], cursor)
        (x1, y1), (x2, y2) = start, end
        note = f"path of {len(path)} points dragged from its first to its last" if len(
            path) > 2 else ""  # fmt: skip
        return CuItem(item_id, name, "act", actions.Drag(x1, y1, x2, y2), note, cursor=(x2, y2))
    if name == "keypress":
        keys = action.get("keys")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            return _unsupported(item_id, name, "no readable keys", cursor)
        return CuItem(item_id, name, "act", actions.Key(openai_keys(keys)), cursor=cursor)
    if name == "type":
        return _typing(item_id, name, action.get("text"), cursor)
    if name == "scroll":
        sy, sx = _num(action.get("scroll_y", 0)), _num(action.get("scroll_x", 0))
        if at is None or sy is None or sx is None:
            return _unsupported(item_id, name, "no readable x, y, scroll_y", cursor)
        if sy == 0:
            what = "a horizontal scroll" if sx else "a scroll of 0"
            return _unsupported(item_id, name, f"{what} is not supported", at)
        notches = actions.read_notches(sy / actions.WHEEL_NOTCH_PX) or (1 if sy > 0 else -1)
        note = f"{sy:g} px as {notches} notch(es) of {actions.WHEEL_NOTCH_PX} px"
        return CuItem(item_id, name, "act", actions.Scroll(*at, notches), note, cursor=at)
    if name == "move":
        return CuItem(item_id, name, "observe", None, "the pointer moved", at or cursor)
    if name in ("screenshot", "wait"):
        return CuItem(item_id, name, "observe", None, "", cursor)
    return _unsupported(item_id, name or "?", f"unknown action {_text(name)}", cursor)


# ---- Anthropic computer-use tool ----------------------------------------------------------

_ANTHROPIC_OBSERVE = ("screenshot", "wait", "cursor_position", "mouse_move")
_ANTHROPIC_UNSUPPORTED = (
    "middle_click", "triple_click", "left_mouse_down", "left_mouse_up", "hold_key", "zoom",
)  # fmt: skip


def anthropic_item(
    name: str,
    tool_input: Mapping[str, Any],
    item_id: str,
    dmap: DisplayMap,
    cursor: Point | None = None,
) -> CuItem:
    """One `tool_use` of the computer tool: `name` "computer" with `input.action` (the
    `computer_2025...` tools) or the member's own name (the `computer_toolset_...` toolset)."""
    action = str(tool_input.get("action", "")) if name == "computer" else name
    raw = tool_input.get("coordinate")
    point = _pair(raw) if raw is not None else None
    at = _on_screen(dmap, point) if point is not None else cursor
    if raw is not None and point is None:
        return _unsupported(item_id, action, f"unreadable coordinate {_text(raw)}", cursor)
    if point is not None and at is None:
        return _not_finite(item_id, action, raw, cursor)
    if action in _ANTHROPIC_OBSERVE:
        moved = at if action == "mouse_move" else cursor
        return CuItem(item_id, action, "observe", None, "", moved)
    if action in _ANTHROPIC_UNSUPPORTED:
        return _unsupported(item_id, action, f"{action} is not supported", cursor)
    modifier = tool_input.get("text") if action != "type" and action != "key" else None
    if modifier:
        what = f"{_text(action)} with {_text(modifier)} held is not supported"
        return _unsupported(item_id, action, what, cursor)
    if action in ("left_click", "right_click", "double_click"):
        if at is None:
            return _unsupported(item_id, action, "no coordinate and no known pointer", cursor)
        click = actions.Click(*at, button="right" if action == "right_click" else "left",
                              double=action == "double_click")  # fmt: skip
        return CuItem(item_id, action, "act", click, cursor=at)
    if action == "left_click_drag":
        start_raw = tool_input.get("start_coordinate")
        start = _pair(start_raw) if start_raw is not None else None
        begin = _on_screen(dmap, start) if start is not None else cursor
        if start is not None and begin is None:
            return _not_finite(item_id, action, start_raw, cursor)
        if begin is None or point is None or at is None:
            return _unsupported(item_id, action, "needs start_coordinate and coordinate", cursor)
        return CuItem(item_id, action, "act", actions.Drag(*begin, *at), cursor=at)
    if action == "type":
        return _typing(item_id, action, tool_input.get("text"), cursor)
    if action == "key":
        text = tool_input.get("text")
        if not isinstance(text, str) or not text.strip():
            return _unsupported(item_id, action, "no readable key", cursor)
        return CuItem(item_id, action, "act", actions.Key(xdotool_keys(text)), cursor=cursor)
    if action == "scroll":
        direction = tool_input.get("scroll_direction")
        raw_amount = tool_input.get("scroll_amount", 1)
        amount = actions.read_notches(raw_amount) if isinstance(raw_amount, int) else None
        if at is None or amount is None or amount < 0:
            return _unsupported(item_id, action, "no readable coordinate or amount", cursor)
        if direction not in ("up", "down"):
            return _unsupported(item_id, action, f"a scroll {_text(direction)} is not supported",
                                at)  # fmt: skip
        if amount == 0:
            return _unsupported(item_id, action, "a scroll of 0 is not supported", at)
        dy = amount if direction == "down" else -amount
        return CuItem(item_id, action, "act", actions.Scroll(*at, dy), cursor=at)
    return _unsupported(item_id, action or "?", f"unknown action {_text(action)}", cursor)


# ---- endings ------------------------------------------------------------------------------

_INFEASIBLE = re.compile(r"^[\s*_`#>\-]*INFEASIBLE\b[\s*_`]*[:\-\u2013\u2014]?\s*(.*)", re.I)


def ending_from_text(text: str) -> actions.Done | actions.Infeasible:
    """The ending a final message (one without actions) means: `Infeasible(reason)` when one of
    its lines starts with INFEASIBLE (markdown emphasis allowed), the reason being the rest of
    that line and the lines after it; otherwise `Done`."""
    lines = (text or "").splitlines()
    for i, line in enumerate(lines):
        m = _INFEASIBLE.match(line)
        if m:
            rest = " ".join([m.group(1), *lines[i + 1 :]]).strip(" *_`")
            return actions.Infeasible(" ".join(rest.split())[:MAX_REASON_CHARS])
    return actions.Done()
