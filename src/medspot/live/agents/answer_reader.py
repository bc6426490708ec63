"""A model's answer to a live action in screenshot pixels (pure; docs/live.md "Action format").

First match wins: the pyautogui calls of Aguvis and other pyautogui emitters, UI-TARS's native
action syntax (the last `Action:` part), the documented text form of `medspot.live.core.actions`,
and finally the card's own click point (`Prediction.point`, read by the static benchmark's
parser). The numbers of the first three are mapped with the card's declared `Convention`
through `medspot.adapters.conventions.to_normalised`, exactly as its click points are; nothing
here guesses a convention from the numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medspot.adapters.base import Convention
from medspot.adapters.conventions import to_normalised
from medspot.adapters.parsing import clean_text, find_candidates, parse_number
from medspot.geometry import Point
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    LiveAction,
    Scroll,
    TypeText,
    normalise_key,
)

__all__ = [
    "PAGE_NOTCHES",
    "SCROLL_NOTCHES",
    "Frame",
    "ParsedAction",
    "parse_action",
    "parse_answer",
    "point_action",
]

# Notches of a scroll that names a direction but no amount (UI-TARS's own pyautogui code: 5).
SCROLL_NOTCHES = 5
# Aguvis scrolls by a fraction of the page (`pyautogui.scroll(page=-0.1)`): notches per page.
PAGE_NOTCHES = 8

# Flags a ParsedAction may carry.
UNSUPPORTED = "unsupported_action"  # hover, wait, horizontal scroll: nothing is executed
BAD_ARGS = "bad_action_args"  # a known action whose arguments could not be read


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

    action: LiveAction | None
    source: str
    flags: tuple[str, ...] = ()


def point_action(point: Point, screen: tuple[int, int]) -> Click:
    """A click at a normalised point of the screenshot."""
    return Click(point.x * screen[0], point.y * screen[1])


# ---- a tiny reader of call arguments --------------------------------------------------------

Arg = tuple[str | None, str | float | None]  # (keyword or None, value)


def _read_string(s: str, i: int) -> tuple[str, int]:
    q = s[i]
    out: list[str] = []
    i += 1
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
            continue
        if c == q:
            return "".join(out), i + 1
        out.append(c)
        i += 1
    return "".join(out), i  # unterminated: take the rest


def _call_end(s: str, i: int) -> int:
    """Index just after the `)` closing the `(` at s[i-1], quotes respected (or len(s))."""
    depth = 1
    while i < len(s):
        c = s[i]
        if c in "'\"":
            _, i = _read_string(s, i)
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(s)


def _split_args(body: str) -> list[Arg] | None:
    """`x=0.5, y=.3`, `'(1,2)'`, `'ctrl', 'a'`, `[1, 2]`: keyword/positional values; strings
    unescaped, numbers as floats, a bracketed group kept as its text. None when unreadable."""
    args: list[Arg] = []
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " \t\n,":
            i += 1
        if i >= n:
            break
        key = None
        m = re.match(r"([A-Za-z_]\w*)\s*=(?!=)\s*", body[i:])
        if m:
            key = m.group(1)
            i += m.end()
        if i >= n:
            return None
        c = body[i]
        value: str | float | None
        if c in "'\"":
            value, i = _read_string(body, i)
        elif c in "([":
            end = _call_end(body, i + 1)
            value, i = body[i:end], end
        else:
            m2 = re.match(r"[^,]*", body[i:])
            tok = m2.group(0).strip() if m2 else ""
            i += m2.end() if m2 else 1
            if tok in ("None", "null"):
                value = None
            elif tok in ("True", "False"):
                value = tok
            else:
                num = parse_number(tok)
                if num is None:
                    return None
                value = num
        args.append((key, value))
    return args


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    args: list[Arg]
    start: int

    def kw(self, *names: str) -> str | float | None:
        for k, v in self.args:
            if k in names:
                return v
        return None

    def pos(self) -> list[str | float | None]:
        return [v for k, v in self.args if k is None]


def _calls(text: str, names: set[str], prefix: str = "") -> list[_Call]:
    pat = re.compile(rf"(?<![\w.]){re.escape(prefix)}([A-Za-z_]\w*)\s*\(")
    out = []
    for m in pat.finditer(text):
        name = m.group(1)
        if name.lower() not in names:
            continue
        end = _call_end(text, m.end())
        args = _split_args(text[m.end() : max(m.end(), end - 1)])
        out.append(_Call(name.lower(), args if args is not None else [("?", None)], m.start()))
    return out


_POINT_TAG = re.compile(r"<point>\s*([-+\d.]+)[\s,]+([-+\d.]+)\s*</point>")


def _box_point(value: str | float | None) -> tuple[float, float] | None:
    """A UI-TARS box argument (`(x,y)`, `[x1,y1,x2,y2]`, `<point>x y</point>`) as a point in the
    model's units: a box is read as its centre."""
    if not isinstance(value, str):
        return None
    text = _POINT_TAG.sub(r"(\1,\2)", value)
    cands, _ = find_candidates(text)
    if not cands:
        return None
    return cands[0].x, cands[0].y


def _nums(values: list[str | float | None]) -> list[float] | None:
    if all(isinstance(v, float) for v in values):
        return [float(v) for v in values if isinstance(v, float)]
    return None


# ---- UI-TARS and the text form --------------------------------------------------------------

_CLICKS = {
    "click": ("left", False), "left_single": ("left", False), "left_click": ("left", False),
    "left_double": ("left", True), "double_click": ("left", True),
    "right_single": ("right", False), "right_click": ("right", False),
}  # fmt: skip
_DRAGS = {"drag", "select"}
_DONE = {"finished", "done", "call_user"}
_NOOP = {"wait", "hover", "long_press"}
_TEXT_NAMES = {
    *_CLICKS, *_DRAGS, *_DONE, *_NOOP, "scroll", "type", "hotkey", "press", "key", "infeasible",
}  # fmt: skip
_UITARS_KEYS = {"start_box", "end_box", "point", "start_point", "end_point", "content", "direction"}
_UITARS_ONLY = {"left_single", "left_double", "right_single", "finished", "hotkey", "call_user"}
_ACTION_ANCHOR = re.compile(r"Action\s*:", re.IGNORECASE)


def _from_named(call: _Call, frame: Frame, source: str) -> ParsedAction:
    name, pos = call.name, call.pos()
    if name in _CLICKS:
        button, double = _CLICKS[name]
        pt = _box_point(call.kw("start_box", "point", "start_point"))
        if pt is None and (nums := _nums(pos)) is not None and len(nums) in (2, 4):
            pt = (nums[0], nums[1]) if len(nums) == 2 else _centre(nums)
        if pt is None:
            return ParsedAction(None, source, (BAD_ARGS,))
        x, y = frame.px(*pt)
        return ParsedAction(Click(x, y, "right" if button == "right" else "left", double), source)
    if name in _DRAGS:
        a = _box_point(call.kw("start_box", "start_point"))
        b = _box_point(call.kw("end_box", "end_point"))
        if (a is None or b is None) and (nums := _nums(pos)) is not None and len(nums) == 4:
            a, b = (nums[0], nums[1]), (nums[2], nums[3])
        if a is None or b is None:
            return ParsedAction(None, source, (BAD_ARGS,))
        (x1, y1), (x2, y2) = frame.px(*a), frame.px(*b)
        return ParsedAction(Drag(x1, y1, x2, y2), source)
    if name == "scroll":
        pt = _box_point(call.kw("start_box", "point", "start_point"))
        direction = call.kw("direction")
        if pt is not None and isinstance(direction, str):
            d = direction.strip().lower()
            if d not in ("up", "down"):
                return ParsedAction(None, source, (UNSUPPORTED,))
            x, y = frame.px(*pt)
            return ParsedAction(Scroll(x, y, SCROLL_NOTCHES if d == "down" else -SCROLL_NOTCHES),
                                source)  # fmt: skip
        nums = _nums(pos)
        if nums is not None and len(nums) == 3:
            x, y = frame.px(nums[0], nums[1])
            return ParsedAction(Scroll(x, y, round(nums[2])), source)
        return ParsedAction(None, source, (BAD_ARGS,))
    if name == "type":
        content = call.kw("content", "text")
        if content is None and pos and isinstance(pos[0], str):
            content = pos[0]
        if not isinstance(content, str):
            return ParsedAction(None, source, (BAD_ARGS,))
        return ParsedAction(TypeText(content), source)
    if name in ("hotkey", "press", "key"):
        key = call.kw("key", "keys")
        if key is None and pos and isinstance(pos[0], str):
            key = pos[0]
        if not isinstance(key, str) or not normalise_key(key):
            return ParsedAction(None, source, (BAD_ARGS,))
        return ParsedAction(Key(normalise_key(key)), source)
    if name in _DONE:
        return ParsedAction(Done(), source)
    if name == "infeasible":
        reason = call.kw("reason", "content")
        if reason is None and pos and isinstance(pos[0], str):
            reason = pos[0]
        return ParsedAction(Infeasible(reason if isinstance(reason, str) else ""), source)
    return ParsedAction(None, source, (UNSUPPORTED,))


def _centre(nums: list[float]) -> tuple[float, float]:
    return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2


def _named_action(text: str, frame: Frame) -> ParsedAction | None:
    anchors = list(_ACTION_ANCHOR.finditer(text))
    part = text[anchors[-1].end() :] if anchors else text
    calls = _calls(part, _TEXT_NAMES)
    if not calls:
        return None
    call = calls[0]
    uitars = call.name in _UITARS_ONLY or any(k in _UITARS_KEYS for k, _ in call.args)
    return _from_named(call, frame, "ui-tars" if uitars else "text")


# ---- pyautogui -----------------------------------------------------------------------------

_PYAUTOGUI = {
    "click", "leftclick", "doubleclick", "tripleclick", "rightclick", "middleclick", "moveto",
    "dragto", "scroll", "vscroll", "write", "typewrite", "press", "hotkey",
}  # fmt: skip


def _xy(call: _Call) -> tuple[float, float] | None:
    x, y = call.kw("x"), call.kw("y")
    if isinstance(x, float) and isinstance(y, float):
        return x, y
    pos = call.pos()
    if len(pos) >= 2 and isinstance(pos[0], float) and isinstance(pos[1], float):
        return pos[0], pos[1]
    if pos and isinstance(pos[0], str):  # a tuple written as one argument: click((x, y))
        return _box_point(pos[0])
    return None


def _pyautogui_action(text: str, frame: Frame) -> ParsedAction | None:
    calls = _calls(text, _PYAUTOGUI, prefix="pyautogui.")
    done = re.search(r"(?<![\w.])(?:computer\.)?terminate\s*\(|^\s*DONE\s*$", text, re.M)
    if not calls:
        return ParsedAction(Done(), "pyautogui") if done else None
    src = "pyautogui"
    here: tuple[float, float] | None = None  # the pointer after moveTo, in the model's units
    for call in calls:
        name = call.name
        if name == "moveto":
            here = _xy(call) or here
            continue
        if name in ("click", "leftclick", "doubleclick", "tripleclick", "rightclick"):
            pt = _xy(call) or here
            if pt is None:
                return ParsedAction(None, src, (BAD_ARGS,))
            button = "right" if name == "rightclick" else call.kw("button") or "left"
            clicks = call.kw("clicks")
            double = name in ("doubleclick", "tripleclick") or (
                isinstance(clicks, float) and clicks >= 2
            )
            x, y = frame.px(*pt)
            return ParsedAction(Click(x, y, "right" if button == "right" else "left", double), src)
        if name == "dragto":
            end = _xy(call)
            if end is None or here is None:
                return ParsedAction(None, src, (BAD_ARGS,))
            (x1, y1), (x2, y2) = frame.px(*here), frame.px(*end)
            return ParsedAction(Drag(x1, y1, x2, y2), src)
        if name in ("scroll", "vscroll"):
            amount = call.kw("clicks")
            pos = call.pos()
            if amount is None and pos and isinstance(pos[0], float):
                amount = pos[0]
            page = call.kw("page")
            if amount is None and isinstance(page, float) and page != 0:
                amount = page * PAGE_NOTCHES
                amount = amount if abs(amount) >= 1 else (1.0 if amount > 0 else -1.0)
            if not isinstance(amount, float):
                return ParsedAction(None, src, (BAD_ARGS,))
            sx, sy = call.kw("x"), call.kw("y")
            if isinstance(sx, float) and isinstance(sy, float):
                px = frame.px(sx, sy)
            else:
                px = frame.px(*here) if here is not None else frame.centre
            notches = -round(amount)  # pyautogui: positive scrolls up
            return ParsedAction(Scroll(px[0], px[1], notches), src)
        if name in ("write", "typewrite"):
            msg = call.kw("message")
            pos = call.pos()
            if msg is None and pos:
                msg = pos[0]
            if isinstance(msg, str) and msg.startswith("["):  # typewrite(['a', 'enter'])
                keys = re.findall(r"['\"]([^'\"]+)['\"]", msg)
                return ParsedAction(Key(normalise_key(keys)) if keys else None, src)
            if not isinstance(msg, str):
                return ParsedAction(None, src, (BAD_ARGS,))
            return ParsedAction(TypeText(msg), src)
        if name in ("press", "hotkey"):
            keys = [v for k, v in call.args if k in (None, "keys") and isinstance(v, str)]
            if len(keys) == 1 and keys[0].startswith("["):
                keys = re.findall(r"['\"]([^'\"]+)['\"]", keys[0])
            if not keys:
                return ParsedAction(None, src, (BAD_ARGS,))
            return ParsedAction(Key(normalise_key(keys)), src)
    if done:
        return ParsedAction(Done(), src)
    return ParsedAction(None, src, (UNSUPPORTED,))  # only moveTo / middleClick


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
