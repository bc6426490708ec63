"""Whether an environment can execute an action: checked before anything is executed.

A model that asks for something the environment cannot do (a key its driver does not have, a
point that is not a finite number or lies off the screen, a scroll of no notch or of
thousands, text with characters no keyboard types) made a mistake of its own: `Episode.step`
makes such an action a **no-action step** (one action of the budget, nothing executed, the
task goes on and is scored) with the flag `not_executable:<why>` and the reason in
`StepResult.not_executed`. The runner, `live export`, Gymnasium and any server all go through
that one step, so an unexecutable action is the model's in every one of them; only a fault of
the application or of the harness is an `EnvironmentFault`.

`unexecutable(action, capabilities)` is the pure check; `capabilities_of(env, observation)`
what an environment can execute on the screen it showed: its key table (an environment
declares its driver's as `key_table`; one that declares none gets the action format's,
Playwright's names) and the screenshot's size.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from medspot.jsonsafe import REPLACEMENT, finite_float
from medspot.live.core import actions
from medspot.live.core.contract import Environment, Observation
from medspot.live.core.keys import ACTION_FORMAT_KEYS, KeyTable

__all__ = [
    "MAX_SCROLL_NOTCHES",
    "MAX_TEXT_CHARS",
    "NOT_EXECUTABLE",
    "Capabilities",
    "Unexecutable",
    "capabilities_of",
    "unexecutable",
]

NOT_EXECUTABLE = "not_executable"  # the flag's prefix: not_executable:<why>
MAX_SCROLL_NOTCHES = 100  # wheel notches in one scroll (10,000 px in a browser)
MAX_TEXT_CHARS = 1000  # characters typed in one action (a browser types 10 ms a character)
_TYPABLE_CONTROLS = frozenset("\t\n\r")


@dataclass(frozen=True)
class Capabilities:
    """What an environment can execute: the screen the coordinates are on, its driver's keys,
    and the largest scroll and text one action may hold."""

    screen: tuple[int, int]  # (width, height) of the screenshot the action refers to
    keys: KeyTable = ACTION_FORMAT_KEYS
    max_scroll_notches: int = MAX_SCROLL_NOTCHES
    max_text_chars: int = MAX_TEXT_CHARS


@dataclass(frozen=True)
class Unexecutable:
    """Why an action cannot be executed: `why` a short code (the flag's suffix), `message`
    the sentence the journal and the reports show."""

    why: str
    message: str

    @property
    def flag(self) -> str:
        return f"{NOT_EXECUTABLE}:{self.why}"


def capabilities_of(env: Environment, observation: Observation) -> Capabilities:
    """What `env` can execute on `observation` (the screen the agent was shown)."""
    keys = getattr(env, "key_table", None) or ACTION_FORMAT_KEYS
    return Capabilities(screen=(observation.width, observation.height), keys=keys)


def _real(v: object) -> float | None:
    """`v` as a finite float (None: it is none; an integer too large for a float included)."""
    if isinstance(v, numbers.Real) and not isinstance(v, bool | int | float):
        try:
            v = float(v)  # a numpy number, a Fraction
        except (OverflowError, ValueError):
            return None
    return finite_float(v)


def _shown(v: object) -> str:
    """`v` in a message: its repr, at most 40 characters (an integer too long to print too)."""
    try:
        text = repr(v)
    except ValueError:  # an int of more than 4300 digits
        return "an integer of thousands of digits"
    return text if len(text) <= 40 else text[:40] + "..."


def _point(x: object, y: object, caps: Capabilities, what: str) -> Unexecutable | None:
    fx, fy = _real(x), _real(y)
    if fx is None or fy is None:
        return Unexecutable(
            "not_a_number", f"{what} ({_shown(x)}, {_shown(y)}) is no pair of finite numbers"
        )
    w, h = caps.screen
    if not (0 <= fx < w and 0 <= fy < h):
        return Unexecutable("off_screen", f"{what} ({fx:g}, {fy:g}) is off the {w}x{h} screen")
    return None


def _text(text: object, caps: Capabilities) -> Unexecutable | None:
    if not isinstance(text, str):
        return Unexecutable("untypable_text", f"the text {_shown(text)} is not a string")
    if len(text) > caps.max_text_chars:
        return Unexecutable(
            "text_too_long",
            f"a text of {len(text)} characters (one action types at most {caps.max_text_chars})",
        )
    for ch in text:
        if _untypable(ch):
            return Unexecutable("untypable_text", f"the text holds {ch!r}, which no key types")
    return None


def _untypable(ch: str) -> bool:
    """A control character (but tab, newline, carriage return), a lone surrogate, or U+FFFD
    (what a lone surrogate becomes in a journal: `medspot.jsonsafe`; so an action read back
    from the journal is refused as the original was)."""
    code = ord(ch)
    control = (code < 0x20 or 0x7F <= code < 0xA0) and ch not in _TYPABLE_CONTROLS
    return control or 0xD800 <= code < 0xE000 or ch == REPLACEMENT


def _key(key: object, caps: Capabilities) -> Unexecutable | None:
    if not isinstance(key, str) or not key.strip():
        return Unexecutable("empty_key", f"the key {_shown(key)} names no key")
    odd = next((ch for ch in key if _untypable(ch)), None)
    if odd is not None:
        return Unexecutable("unknown_key", f"the key {_shown(key)} holds {odd!r}, no key's name")
    bad = caps.keys.unknown(key)
    if bad is None:
        return None
    part = f"{_shown(bad)} of {_shown(key)}" if bad != key else _shown(key)
    return Unexecutable(
        "unknown_key", f"the key {part} is not in the key table of {caps.keys.name}"
    )


def unexecutable(action: actions.LiveAction, caps: Capabilities) -> Unexecutable | None:
    """Why the environment cannot execute `action` (None: it can). Endings (`done()`,
    `infeasible(...)`) execute nothing and are always fine."""
    match action:
        case actions.Click(x, y, button, double):
            if button not in ("left", "right") or not isinstance(double, bool):
                return Unexecutable("bad_button", f"a click with button {_shown(button)}")
            return _point(x, y, caps, "the click")
        case actions.Drag(x1, y1, x2, y2):
            return _point(x1, y1, caps, "the drag's start") or _point(
                x2, y2, caps, "the drag's end"
            )
        case actions.Scroll(x, y, dy):
            if not isinstance(dy, numbers.Integral) or isinstance(dy, bool) or dy == 0:
                return Unexecutable("scroll_amount", f"a scroll of {_shown(dy)} notches")
            if abs(int(dy)) > caps.max_scroll_notches:
                return Unexecutable(
                    "scroll_amount",
                    f"a scroll of {_shown(int(dy))} notches (one action scrolls at most "
                    f"{caps.max_scroll_notches})",
                )
            return _point(x, y, caps, "the scroll")
        case actions.TypeText(text):
            return _text(text, caps)
        case actions.Key(key):
            return _key(key, caps)
        case actions.Done() | actions.Infeasible() | actions.ToolCall():
            return None  # a tool call's arguments are the toolset's to check
    return Unexecutable("not_an_action", f"{action!r} is not a live action")
