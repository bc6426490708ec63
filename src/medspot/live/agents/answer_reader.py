"""A model's answer to a live action in screenshot pixels (pure; docs/live/agents.md
"Action format").

`parse_answer` reads any answer of guided mode, replay files and the Gymnasium API. First match
wins: the pyautogui calls of Aguvis and other pyautogui emitters, UI-TARS's native action syntax
(the last `Action:` part), the documented text form of `medspot.live.core.actions`, and finally
the card's own click point (`Prediction.point`, read by the static benchmark's parser). The
numbers of the first three are mapped with the card's declared `Convention` through
`medspot.adapters.conventions.to_normalised`, exactly as its click points are; nothing here
guesses a convention from the numbers.

`named_action` (one UI-TARS or text-form call) and `pyautogui_actions` (every action of a
pyautogui snippet) are the pieces the agent-mode formats (`medspot.live.agents.formats`) share.
Endings: `done()`, `finished(...)`, `terminate(status='success')` and `DONE` are `Done`;
`infeasible("...")`, `call_user()`, `terminate(status='failure')` and `FAIL` are `Infeasible`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from medspot.adapters.base import Convention
from medspot.adapters.conventions import to_normalised
from medspot.adapters.parsing import clean_text
from medspot.geometry import Point
from medspot.jsonsafe import json_safe
from medspot.live.agents.calls import Call, box_point, find_calls, numbers
from medspot.live.core import actions

__all__ = [
    "BAD_ARGS",
    "NO_ACTION",
    "PAGE_NOTCHES",
    "SCROLL_NOTCHES",
    "UNSUPPORTED",
    "Frame",
    "ParsedAction",
    "named_action",
    "parse_action",
    "parse_answer",
    "point_action",
    "pyautogui_actions",
    "tool_call_action",
]

# Notches of a scroll that names a direction but no amount (UI-TARS's own pyautogui code: 5).
SCROLL_NOTCHES = 5
# Aguvis scrolls by a fraction of the page (`pyautogui.scroll(page=-0.1)`): notches per page.
PAGE_NOTCHES = 8

# Flags a ParsedAction may carry.
UNSUPPORTED = "unsupported_action"  # hover, wait, horizontal scroll: nothing is executed
BAD_ARGS = "bad_action_args"  # a known action whose arguments could not be read
NO_ACTION = "no_action"  # a text with no readable action (a no-action step: Gymnasium, OpenEnv)


@dataclass(frozen=True, slots=True)
class Frame:
    """How an answer's numbers map to the screenshot: the card's convention, the screenshot's
    size and the size of the image actually sent (for abs_resized / abs_sent cards)."""

    convention: Convention
    screen: tuple[int, int]  # (width, height) of the screenshot
    sent: tuple[int, int] | None = None

    def px(self, x: float, y: float) -> tuple[float, float]:
        p = to_normalised(x, y, self.convention, self.sent or self.screen, self.screen)
        return p.x * self.screen[0], p.y * self.screen[1]

    @property
    def centre(self) -> tuple[float, float]:
        return self.screen[0] / 2, self.screen[1] / 2


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """The action read (None: no readable action) and where it came from: "pyautogui",
    "ui-tars", "text", "point" (the card's click point) or "none"."""

    action: actions.LiveAction | None
    source: str
    flags: tuple[str, ...] = ()


def point_action(point: Point, screen: tuple[int, int]) -> actions.Click:
    """A click at a normalised point of the screenshot."""
    return actions.Click(point.x * screen[0], point.y * screen[1])


# ---- UI-TARS and the text form --------------------------------------------------------------

_CLICKS = {
    "click": ("left", False), "left_single": ("left", False), "left_click": ("left", False),
    "left_double": ("left", True), "double_click": ("left", True),
    "right_single": ("right", False), "right_click": ("right", False),
}  # fmt: skip
_DRAGS = {"drag", "select"}
_DONE = {"finished", "done"}
_INFEASIBLE = {"infeasible", "call_user"}
_NOOP = {"wait", "hover", "long_press"}
NAMED_CALLS = frozenset(
    {*_CLICKS, *_DRAGS, *_DONE, *_INFEASIBLE, *_NOOP, "scroll", "type", "hotkey", "press", "key",
     "tool"}
)  # fmt: skip
_TOOL_CALL = re.compile(r"""\s*["']?([A-Za-z_][\w.-]*)["']?\s*(?:,\s*(.*))?\Z""", re.DOTALL)


def tool_call_action(raw: str) -> actions.ToolCall | None:
    """`tool(name, {"arg": value})`'s arguments (`raw`, as written) as a `ToolCall`; None when
    they do not read (the name, then one JSON object, or nothing)."""
    m = _TOOL_CALL.match(raw)
    if m is None:
        return None
    args: Any = {}
    if m.group(2) is not None and m.group(2).strip():
        try:
            args = json.loads(m.group(2))
        except (ValueError, RecursionError):  # not JSON, or nested past any reader
            return None
    return actions.ToolCall(m.group(1), json_safe(args)) if isinstance(args, dict) else None


_UITARS_KEYS = {"start_box", "end_box", "point", "start_point", "end_point", "content", "direction"}
_UITARS_ONLY = {"left_single", "left_double", "right_single", "finished", "hotkey", "call_user"}
_ACTION_ANCHOR = re.compile(r"Action\s*:", re.IGNORECASE)


def named_action(call: Call, frame: Frame, source: str) -> ParsedAction:
    """One call of UI-TARS's action space or of the text form, in pixels of `frame.screen`."""
    name, pos = call.name, call.pos()
    if name in _CLICKS:
        button, double = _CLICKS[name]
        pt = box_point(call.kw("start_box", "point", "start_point"))
        if pt is None and (nums := numbers(pos)) is not None and len(nums) in (2, 4):
            pt = (nums[0], nums[1]) if len(nums) == 2 else _centre(nums)
        if pt is None:
            return ParsedAction(None, source, (BAD_ARGS,))
        x, y = frame.px(*pt)
        return ParsedAction(
            actions.Click(x, y, "right" if button == "right" else "left", double), source
        )
    if name in _DRAGS:
        a = box_point(call.kw("start_box", "start_point"))
        b = box_point(call.kw("end_box", "end_point"))
        if (a is None or b is None) and (nums := numbers(pos)) is not None and len(nums) == 4:
            a, b = (nums[0], nums[1]), (nums[2], nums[3])
        if a is None or b is None:
            return ParsedAction(None, source, (BAD_ARGS,))
        (x1, y1), (x2, y2) = frame.px(*a), frame.px(*b)
        return ParsedAction(actions.Drag(x1, y1, x2, y2), source)
    if name == "scroll":
        pt = box_point(call.kw("start_box", "point", "start_point"))
        direction = call.kw("direction")
        if pt is not None and isinstance(direction, str):
            d = direction.strip().lower()
            if d not in ("up", "down"):
                return ParsedAction(None, source, (UNSUPPORTED,))
            x, y = frame.px(*pt)
            notches = SCROLL_NOTCHES if d == "down" else -SCROLL_NOTCHES
            return ParsedAction(actions.Scroll(x, y, notches), source)
        nums = numbers(pos)
        dy = actions.read_notches(nums[2]) if nums is not None and len(nums) == 3 else None
        if nums is not None and dy is not None:
            x, y = frame.px(nums[0], nums[1])
            return ParsedAction(actions.Scroll(x, y, dy), source)
        return ParsedAction(None, source, (BAD_ARGS,))
    if name == "type":
        content = call.kw("content", "text")
        if content is None and pos and isinstance(pos[0], str):
            content = pos[0]
        if not isinstance(content, str):
            return ParsedAction(None, source, (BAD_ARGS,))
        return ParsedAction(actions.TypeText(content), source)
    if name in ("hotkey", "press", "key"):
        key = call.kw("key", "keys")
        if key is None and pos and isinstance(pos[0], str):
            key = pos[0]
        if not isinstance(key, str) or not actions.normalise_key(key):
            return ParsedAction(None, source, (BAD_ARGS,))
        return ParsedAction(actions.Key(actions.normalise_key(key)), source)
    if name in _DONE:
        return ParsedAction(actions.Done(), source)
    if name == "tool":
        tool = tool_call_action(call.raw)
        return (
            ParsedAction(tool, source)
            if tool is not None
            else ParsedAction(None, source, (BAD_ARGS,))
        )
    if name in _INFEASIBLE:
        reason = call.kw("reason", "content", "text")
        if reason is None and pos and isinstance(pos[0], str):
            reason = pos[0]
        if not isinstance(reason, str):
            reason = "" if name == "infeasible" else f"{name}()"
        return ParsedAction(actions.Infeasible(reason), source)
    return ParsedAction(None, source, (UNSUPPORTED,))


def _centre(nums: list[float]) -> tuple[float, float]:
    return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2


def _named_action(text: str, frame: Frame) -> ParsedAction | None:
    anchors = list(_ACTION_ANCHOR.finditer(text))
    part = text[anchors[-1].end() :] if anchors else text
    calls = find_calls(part, set(NAMED_CALLS))
    if not calls:
        return None
    call = calls[0]
    uitars = call.name in _UITARS_ONLY or any(k in _UITARS_KEYS for k, _ in call.args)
    return named_action(call, frame, "ui-tars" if uitars else "text")


# ---- pyautogui -----------------------------------------------------------------------------

_PYAUTOGUI = {
    "click", "leftclick", "doubleclick", "tripleclick", "rightclick", "middleclick", "moveto",
    "dragto", "scroll", "vscroll", "write", "typewrite", "press", "hotkey",
}  # fmt: skip
# An ending of a pyautogui answer: Aguvis's `terminate(status=...)` (bare, `computer.` or
# `mobile.`), or OSWorld's special codes DONE / FAIL on a line of their own.
_ENDING = re.compile(
    r"(?<![\w.])(?:computer\.|mobile\.)?terminate\s*\((?P<args>[^)]*)\)|^\s*(?P<code>DONE|FAIL)\s*$",
    re.M,
)


def _xy(call: Call) -> tuple[float, float] | None:
    x, y = call.kw("x"), call.kw("y")
    if isinstance(x, float) and isinstance(y, float):
        return x, y
    pos = call.pos()
    if len(pos) >= 2 and isinstance(pos[0], float) and isinstance(pos[1], float):
        return pos[0], pos[1]
    if pos and isinstance(pos[0], str):  # a tuple written as one argument: click((x, y))
        return box_point(pos[0])
    return None


def _ending(m: re.Match[str]) -> actions.LiveAction:
    if m.group("code") is not None:
        return actions.Done() if m.group("code") == "DONE" else actions.Infeasible("FAIL")
    args = m.group("args") or ""
    if re.search(r"""['"]?(?:failure|fail|infeasible)['"]?""", args, re.I):
        return actions.Infeasible(f"terminate({args.strip()})")
    return actions.Done()


def _one_pyautogui(
    call: Call, frame: Frame, here: tuple[float, float] | None
) -> tuple[ParsedAction | None, tuple[float, float] | None]:
    """The action of one pyautogui call (None: none, e.g. `moveTo`) and the pointer after it."""
    src = "pyautogui"
    name = call.name
    if name == "moveto":
        return None, _xy(call) or here
    if name in ("click", "leftclick", "doubleclick", "tripleclick", "rightclick"):
        pt = _xy(call) or here
        if pt is None:
            return ParsedAction(None, src, (BAD_ARGS,)), here
        button = "right" if name == "rightclick" else call.kw("button") or "left"
        clicks = call.kw("clicks")
        double = name in ("doubleclick", "tripleclick") or (
            isinstance(clicks, float) and clicks >= 2
        )
        x, y = frame.px(*pt)
        return ParsedAction(
            actions.Click(x, y, "right" if button == "right" else "left", double), src
        ), pt
    if name == "dragto":
        end = _xy(call)
        if end is None or here is None:
            return ParsedAction(None, src, (BAD_ARGS,)), here
        (x1, y1), (x2, y2) = frame.px(*here), frame.px(*end)
        return ParsedAction(actions.Drag(x1, y1, x2, y2), src), end
    if name in ("scroll", "vscroll"):
        amount = call.kw("clicks")
        pos = call.pos()
        if amount is None and pos and isinstance(pos[0], float):
            amount = pos[0]
        page = call.kw("page")
        if amount is None and isinstance(page, float) and page != 0:
            amount = page * PAGE_NOTCHES
            amount = amount if abs(amount) >= 1 else (1.0 if amount > 0 else -1.0)
        notches = actions.read_notches(-amount) if isinstance(amount, float) else None
        if notches is None:  # pyautogui: positive scrolls up
            return ParsedAction(None, src, (BAD_ARGS,)), here
        sx, sy = call.kw("x"), call.kw("y")
        if isinstance(sx, float) and isinstance(sy, float):
            px = frame.px(sx, sy)
        else:
            px = frame.px(*here) if here is not None else frame.centre
        return ParsedAction(actions.Scroll(px[0], px[1], notches), src), here
    if name in ("write", "typewrite"):
        msg = call.kw("message")
        pos = call.pos()
        if msg is None and pos:
            msg = pos[0]
        if isinstance(msg, str) and msg.startswith("["):  # typewrite(['a', 'enter'])
            keys = re.findall(r"['\"]([^'\"]+)['\"]", msg)
            return ParsedAction(
                actions.Key(actions.normalise_key(keys)) if keys else None, src
            ), here
        if not isinstance(msg, str):
            return ParsedAction(None, src, (BAD_ARGS,)), here
        return ParsedAction(actions.TypeText(msg), src), here
    if name in ("press", "hotkey"):
        keys = [v for k, v in call.args if k in (None, "keys") and isinstance(v, str)]
        if len(keys) == 1 and keys[0].startswith("["):
            keys = re.findall(r"['\"]([^'\"]+)['\"]", keys[0])
        if not keys:
            return ParsedAction(None, src, (BAD_ARGS,)), here
        return ParsedAction(actions.Key(actions.normalise_key(keys)), src), here
    return ParsedAction(None, src, (UNSUPPORTED,)), here  # middleClick


def pyautogui_actions(text: str, frame: Frame) -> list[ParsedAction] | None:
    """Every action of the pyautogui code in `text`, in order, its ending last (a
    `terminate(...)` or DONE / FAIL; anything after an ending is not read). A `moveTo` only
    moves the pointer that a later `dragTo` or argument-less click starts from. None when the
    text holds neither pyautogui calls nor an ending."""
    calls = find_calls(text, _PYAUTOGUI, prefix="pyautogui.")
    ending = _ENDING.search(text)
    if not calls and ending is None:
        return None
    out: list[ParsedAction] = []
    here: tuple[float, float] | None = None  # the pointer, in the model's units
    for call in calls:
        if ending is not None and call.start > ending.start():
            break
        found, here = _one_pyautogui(call, frame, here)
        if found is not None:
            out.append(found)
    if ending is not None:
        out.append(ParsedAction(_ending(ending), "pyautogui"))
    return out


def _pyautogui_action(text: str, frame: Frame) -> ParsedAction | None:
    found = pyautogui_actions(text, frame)
    if found is None:
        return None
    if not found:
        return ParsedAction(None, "pyautogui", (UNSUPPORTED,))  # only moveTo
    return found[0]


# ---- the entry point -----------------------------------------------------------------------


def parse_answer(text: str | None, frame: Frame, point: Point | None = None) -> ParsedAction:
    """The live action in `text` (a model's raw answer), in pixels of `frame.screen`.

    `point` is the card's click point for this answer (normalised to the screenshot), used
    when the text holds no action syntax of its own."""
    cleaned, _ = clean_text(text)
    if cleaned:
        for reader in (_pyautogui_action, _named_action):
            found = reader(cleaned, frame)
            if found is not None and (found.action is not None or point is None):
                return found
    if point is not None:
        return ParsedAction(point_action(point, frame.screen), "point")
    return ParsedAction(None, "none")


def parse_action(text: str, screen: tuple[int, int]) -> ParsedAction:
    """An action written in screenshot pixels (the documented text form, or any form above read
    as abs_original): the replay agent's `raw_text`, the Gymnasium API's text actions."""
    return parse_answer(text, Frame(Convention.ABS_ORIGINAL, screen))
