"""Key tables: which key names a driver can press.

The action format names keys as Playwright does (`key("Enter")`, `key("Control+a")`;
`medspot.live.core.actions.normalise_key` maps the models' spellings to these names, and
`playwright_key` the short forms the text form allows, `ctrl+a`). Each
driver declares the keys it can press as a `KeyTable` (`medspot.live.drivers.web`: Playwright's
table; `medspot.live.drivers.x11`: the X keysyms xdotool knows), and `Episode.step` refuses a
key the table does not have before anything is executed (`medspot.live.core.executable`): an
unknown key is the model's mistake, never an environment fault.

`PLAYWRIGHT_KEYS` is Playwright's US keyboard layout as its `keyboard.press` resolves names
(playwright-core `server/usKeyboardLayout.ts` and `server/input.ts`, `buildLayoutClosure`):
every key code (`KeyA`, `Digit1`, `Numpad0`, `ArrowUp`, `F1`-`F12`, ...), the aliases `Shift`,
`Control`, `Alt`, `Meta`, the characters of the unlocated keys (printable ASCII, `\\n`, `\\r`),
and `ControlOrMeta`; anything else makes Playwright raise `Unknown key`.
`tests/live/test_web_session.py` presses every one of them in chromium and checks that names
outside the table are refused there.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = [
    "ACTION_FORMAT_KEYS",
    "PLAYWRIGHT_KEYS",
    "KeyTable",
    "PlaywrightKeys",
    "playwright_chord",
    "playwright_key",
]

_NAMES = """
Alt AltGraph AltLeft AltRight ArrowDown ArrowLeft ArrowRight ArrowUp AudioVolumeDown
AudioVolumeMute AudioVolumeUp Backquote Backslash Backspace BracketLeft BracketRight CapsLock
Comma ContextMenu Control ControlLeft ControlOrMeta ControlRight Delete End Enter Equal Escape
F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11 F12 Home Insert MediaPlayPause MediaTrackNext
MediaTrackPrevious Meta MetaLeft MetaRight Minus NumLock NumpadAdd NumpadDecimal NumpadDivide
NumpadEnter NumpadMultiply NumpadSubtract PageDown PageUp Pause Period PrintScreen Quote
ScrollLock Semicolon Shift ShiftLeft ShiftRight Slash Space Tab
"""
PLAYWRIGHT_KEYS: frozenset[str] = frozenset(
    [
        *_NAMES.split(),
        *(f"Key{chr(c)}" for c in range(ord("A"), ord("Z") + 1)),
        *(f"Digit{d}" for d in range(10)),
        *(f"Numpad{d}" for d in range(10)),
        *(chr(c) for c in range(0x20, 0x7F)),  # the characters of the unlocated keys
        "\n",
        "\r",
    ]
)


class KeyTable(Protocol):
    """The keys a driver can press. `name` says whose table it is (for messages)."""

    @property
    def name(self) -> str: ...

    def unknown(self, key: str) -> str | None:
        """The first part of the key or chord `key` (as an action holds it) that the driver
        cannot press; None when it can press all of it."""
        ...


def playwright_chord(chord: str) -> list[str]:
    """The keys of a chord as Playwright's `keyboard.press` splits it: at a `+` that follows a
    key name (so `Control++` is Control and `+`; a trailing `+` leaves an empty key)."""
    keys: list[str] = []
    building = ""
    for ch in chord:
        if ch == "+" and building:
            keys.append(building)
            building = ""
        else:
            building += ch
    keys.append(building)
    return keys


_ALIASES = {
    "ctrl": "Control", "control": "Control", "alt": "Alt", "shift": "Shift", "meta": "Meta",
    "cmd": "Meta", "super": "Meta", "enter": "Enter", "return": "Enter", "esc": "Escape",
    "escape": "Escape", "tab": "Tab", "backspace": "Backspace", "delete": "Delete",
    "del": "Delete", "space": "Space", "up": "ArrowUp", "down": "ArrowDown",
    "left": "ArrowLeft", "right": "ArrowRight", "pageup": "PageUp", "pagedown": "PageDown",
    "home": "Home", "end": "End", "insert": "Insert",
}  # fmt: skip


def playwright_key(key: str) -> str:
    """Key names as Playwright wants them: ctrl+a -> Control+a, enter -> Enter, f5 -> F5."""
    parts = []
    for part in key.split("+") if key != "+" else ["+"]:
        low = part.strip().lower()
        if low in _ALIASES:
            parts.append(_ALIASES[low])
        elif re.fullmatch(r"f\d{1,2}", low):
            parts.append(low.upper())
        elif re.fullmatch(r"arrow(up|down|left|right)", low):
            parts.append("Arrow" + low[5:].capitalize())
        else:
            parts.append(part.strip() or part)
    return "+".join(parts)


class PlaywrightKeys:
    """Playwright's key table, for the action's key as the web driver presses it
    (`playwright_key`, then Playwright's own split of the chord)."""

    name = "Playwright"

    def unknown(self, key: str) -> str | None:
        for part in playwright_chord(playwright_key(key)):
            if part not in PLAYWRIGHT_KEYS:
                return part
        return None


# The table of an environment that declares none: the action format's names (Playwright's).
ACTION_FORMAT_KEYS: KeyTable = PlaywrightKeys()
