"""A tiny reader of function calls written in a model's answer (pure): `click(x=0.5, y=.3)`,
`type(content='it\\'s')`, `hotkey('ctrl', 'a')`, `drag(start_box='(1,2)', end_box='[3,4,5,6]')`.

Strings are unescaped, numbers read as floats, a bracketed group is kept as its text; nothing is
evaluated. Used by the answer readers of `medspot.live.agents.answer_reader` and
`medspot.live.agents.formats`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medspot.adapters.parsing import find_candidates, parse_number

__all__ = [
    "Arg",
    "Call",
    "box_point",
    "call_end",
    "find_calls",
    "numbers",
    "read_string",
    "split_args",
]

Arg = tuple[str | None, str | float | None]  # (keyword or None, value)


def read_string(s: str, i: int) -> tuple[str, int]:
    """The quoted string starting at s[i] (its quote character) and the index after it."""
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


def call_end(s: str, i: int) -> int:
    """Index just after the `)` closing the `(` at s[i-1], quotes respected (or len(s))."""
    depth = 1
    while i < len(s):
        c = s[i]
        if c in "'\"":
            _, i = read_string(s, i)
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(s)


def split_args(body: str) -> list[Arg] | None:
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
            value, i = read_string(body, i)
        elif c in "([":
            end = call_end(body, i + 1)
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
class Call:
    """One call found in a text: its name (lower case), its arguments (`[("?", None)]` when
    they could not be read) and where it starts and ends in the text."""

    name: str
    args: list[Arg]
    start: int
    end: int = 0
    raw: str = ""  # the argument text as written (a tool call's JSON arguments)

    def kw(self, *names: str) -> str | float | None:
        for k, v in self.args:
            if k in names:
                return v
        return None

    def pos(self) -> list[str | float | None]:
        return [v for k, v in self.args if k is None]

    @property
    def readable(self) -> bool:
        return self.args != [("?", None)]


def find_calls(text: str, names: set[str], prefix: str = "") -> list[Call]:
    """Every call of one of `names` (case-insensitive) in `text`, in order, none inside
    another. `prefix` is a required qualifier such as `pyautogui.`; without one, a qualified
    call (`x.click(`) is not taken."""
    pat = re.compile(rf"(?<![\w.]){re.escape(prefix)}([A-Za-z_]\w*)\s*\(")
    out: list[Call] = []
    for m in pat.finditer(text):
        name = m.group(1)
        if name.lower() not in names or (out and m.start() < out[-1].end):
            continue  # another name, or inside the previous call (`type(content='click(1)')`)
        end = call_end(text, m.end())
        raw = text[m.end() : max(m.end(), end - 1)]
        out.append(_call(name.lower(), split_args(raw), m.start(), end, raw))
    return out


def _call(name: str, args: list[Arg] | None, start: int, end: int, raw: str = "") -> Call:
    return Call(name, args if args is not None else [("?", None)], start, end, raw)


_POINT_TAG = re.compile(r"<point>\s*([-+\d.]+)[\s,]+([-+\d.]+)\s*</point>")


def box_point(value: str | float | None) -> tuple[float, float] | None:
    """A box argument (`(x,y)`, `[x1,y1,x2,y2]`, `[[x1,y1,x2,y2]]`, `<point>x y</point>`) as a
    point in the model's units: a box is read as its centre."""
    if not isinstance(value, str):
        return None
    text = _POINT_TAG.sub(r"(\1,\2)", value)
    cands, _ = find_candidates(text)
    if not cands:
        return None
    return cands[0].x, cands[0].y


def numbers(values: list[str | float | None]) -> list[float] | None:
    """The values as floats when all of them are numbers, else None."""
    if all(isinstance(v, float) for v in values):
        return [float(v) for v in values if isinstance(v, float)]
    return None
