"""What an environment can execute, checked before anything is executed (no application): each
kind of action a model can get wrong (a point that is not finite or lies off the screen, a
drag ending off it, a scroll of no or too many notches, text no keyboard types, a key the
driver's table lacks) is refused with the reason and a flag; what the drivers can do passes.
The key tables are the drivers' own: Playwright's names for the web environments
(`tests/live/test_web_session.py` presses them in chromium), the X keysyms xdotool resolves
for the desktop ones (through libX11, as xdotool itself)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from medspot.live.core.actions import (
    ActionFormatError,
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    LiveAction,
    Scroll,
    TypeText,
    action_from_json,
)
from medspot.live.core.contract import Observation
from medspot.live.core.executable import (
    MAX_SCROLL_NOTCHES,
    MAX_TEXT_CHARS,
    Capabilities,
    capabilities_of,
    unexecutable,
)
from medspot.live.core.keys import ACTION_FORMAT_KEYS, PLAYWRIGHT_KEYS, playwright_chord

WEB = Capabilities(screen=(1280, 800))

REFUSED: list[tuple[LiveAction, str]] = [
    (Click(math.nan, math.nan), "not_a_number"),
    (Click(math.inf, 5), "not_a_number"),
    (Click(True, 5), "not_a_number"),  # type: ignore[arg-type]
    (Click("10", "20"), "not_a_number"),  # type: ignore[arg-type]
    (Click(-0.5, 10), "off_screen"),
    (Click(1280, 10), "off_screen"),
    (Click(10, 800), "off_screen"),
    (Click(1e308, 5), "off_screen"),
    (Click(5, 5, button="middle"), "bad_button"),  # type: ignore[arg-type]
    (Drag(10, 10, 5000, 10), "off_screen"),
    (Drag(math.nan, 10, 20, 20), "not_a_number"),
    (Scroll(640, 400, 0), "scroll_amount"),
    (Scroll(640, 400, MAX_SCROLL_NOTCHES + 1), "scroll_amount"),
    (Scroll(640, 400, -1_000_000_000), "scroll_amount"),
    (Scroll(640, 400, 2.5), "scroll_amount"),  # type: ignore[arg-type]
    (Scroll(640, 4000, 3), "off_screen"),
    (TypeText("a\x00b"), "untypable_text"),
    (TypeText("bell\x07"), "untypable_text"),
    (TypeText("\ud800"), "untypable_text"),  # a lone surrogate: no UTF-8, no keystroke
    (TypeText("x" * (MAX_TEXT_CHARS + 1)), "text_too_long"),
    (Key(""), "empty_key"),
    (Key("   "), "empty_key"),
    (Key("NoSuchKeyXYZ"), "unknown_key"),
    (Key("Control+NoSuchKey"), "unknown_key"),
    (Key("Control+"), "unknown_key"),  # Playwright reads an empty key after the plus
    (Key("F13"), "unknown_key"),  # Playwright's layout stops at F12
    (Key("é"), "unknown_key"),
]


@pytest.mark.parametrize(("action", "why"), REFUSED, ids=[repr(a)[:40] for a, _ in REFUSED])
def test_an_action_the_environment_cannot_execute_is_refused_with_its_reason(
    action: LiveAction, why: str
) -> None:
    refused = unexecutable(action, WEB)
    assert refused is not None and refused.why == why
    assert refused.flag == f"not_executable:{why}" and refused.message


EXECUTABLE: list[LiveAction] = [
    Click(0, 0), Click(1279.9, 799.9), Click(np.float32(3.5), np.int64(7)),  # type: ignore[arg-type]
    Click(640, 400, button="right", double=True), Drag(1, 1, 1279, 799),
    Scroll(640, 400, 3), Scroll(640, 400, -MAX_SCROLL_NOTCHES), TypeText(""),
    TypeText("DOE^JOHN\n"), TypeText("Müller – 37 °C\t✓"), TypeText("x" * MAX_TEXT_CHARS),
    Key("Enter"), Key("ctrl+a"), Key("Control+Shift+F5"), Key("f12"), Key("esc"), Key("+"),
    Key("Control++"), Key("!"), Key("ArrowUp"), Key("PageDown"), Key("Numpad7"),
    Key("ControlOrMeta+c"), Done(), Infeasible("no such study"),
]  # fmt: skip


@pytest.mark.parametrize("action", EXECUTABLE, ids=[repr(a)[:40] for a in EXECUTABLE])
def test_what_the_drivers_can_do_passes(action: LiveAction) -> None:
    assert unexecutable(action, WEB) is None


def test_the_screen_is_the_screenshot_the_agent_saw() -> None:
    small = Capabilities(screen=(640, 400))
    assert unexecutable(Click(700, 300), small) is not None
    assert unexecutable(Click(700, 300), WEB) is None

    class NoTable:
        name = "plain"

    obs = Observation(b"", 640, 400)
    caps = capabilities_of(NoTable(), obs)  # type: ignore[arg-type]
    assert caps.screen == (640, 400) and caps.keys is ACTION_FORMAT_KEYS


def test_playwright_splits_a_chord_at_a_plus_after_a_key() -> None:
    assert playwright_chord("Control+a") == ["Control", "a"]
    assert playwright_chord("Control++") == ["Control", "+"]
    assert playwright_chord("+") == ["+"]
    assert playwright_chord("a+") == ["a", ""]
    # the table: key codes, modifiers, the unlocated keys' characters, and nothing else
    assert {"KeyA", "Digit0", "Numpad9", "F12", "Shift", "a", "A", "~", "\n"} <= PLAYWRIGHT_KEYS
    assert not {"F13", "Clear", "é", "", "ctrl", "enter"} & PLAYWRIGHT_KEYS


def test_a_journaled_action_that_does_not_read_is_an_action_format_error() -> None:
    for bad in ({"kind": "click", "x": None, "y": 1}, {"kind": "click", "x": math.inf, "y": 1},
                {"kind": "warp"}, "click(1, 2)"):  # fmt: skip
        with pytest.raises(ActionFormatError):
            action_from_json(bad)  # type: ignore[arg-type]


def _x11_table() -> Any:
    import ctypes.util

    from _orthanc_support import require_live

    require_live(ctypes.util.find_library("X11") is not None, "libX11 (apt-get install xdotool)")
    from medspot.live.drivers.x11 import KEY_TABLE

    return KEY_TABLE


@pytest.mark.parametrize(
    ("key", "unknown"),
    [
        ("Enter", None), ("ctrl+a", None), ("Control+Shift+F5", None), ("F35", None),
        ("!", None), ("é", None), ("+", None), ("Control++", None), ("Page_Down", None),
        ("KP_Enter", None), ("super+l", None), ("ArrowDown", None), ("ContextMenu", None),
        ("NoSuchKeyXYZ", "NoSuchKeyXYZ"), ("ctrl+NoSuchKey", "NoSuchKey"), ("F36", "F36"),
        ("12", "12"),  # xdotool would press raw keycode 12: not a key name
        ("a+", ""),
    ],
)  # fmt: skip
def test_the_x11_table_is_what_xdotool_resolves(key: str, unknown: str | None) -> None:
    table = _x11_table()
    assert table.unknown(key) == unknown
    refused = unexecutable(Key(key), Capabilities((1280, 800), keys=table))
    assert (refused is None) == (unknown is None)
    if refused is not None:
        assert refused.why == "unknown_key" and "X keysyms (xdotool)" in refused.message
