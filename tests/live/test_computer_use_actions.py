"""The computer-use APIs' actions read into the one action type (pure): every action of each
API, keys, the display scaling, the typed endings, malformed and unsupported actions (a clear
no-action, never a guessed click), and the transcript's bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.errors import ConfigError
from medspot.live.agents.computer_use.actions import (
    CuItem,
    DisplayMap,
    anthropic_item,
    ending_from_text,
    fit_display,
    openai_item,
    openai_keys,
    xdotool_keys,
)
from medspot.live.agents.computer_use.transcript import TurnLog, last_call, pending
from medspot.live.core.actions import Click, Done, Drag, Infeasible, Key, Scroll, TypeText
from medspot.testing.cu_script import load_script

SAME = DisplayMap((1280, 800), (1280, 800))
HALF = DisplayMap((2560, 1600), (1280, 800))


@pytest.mark.parametrize(("action", "kind", "expected"), [
    ({"type": "click", "button": "left", "x": 10, "y": 20}, "act", Click(10, 20)),
    ({"type": "click", "button": "right", "x": 10, "y": 20}, "act", Click(10, 20, "right")),
    ({"type": "double_click", "x": 3, "y": 4}, "act", Click(3, 4, double=True)),
    ({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]}, "act", Drag(1, 2, 3, 4)),
    ({"type": "keypress", "keys": ["CTRL", "A"]}, "act", Key("Control+a")),
    ({"type": "keypress", "keys": ["ENTER"]}, "act", Key("Enter")),
    ({"type": "type", "text": "DOE^JOAN"}, "act", TypeText("DOE^JOAN")),
    ({"type": "scroll", "x": 5, "y": 6, "scroll_x": 0, "scroll_y": -250}, "act",
     Scroll(5, 6, -2)),
    ({"type": "scroll", "x": 5, "y": 6, "scroll_x": 0, "scroll_y": 30}, "act", Scroll(5, 6, 1)),
    ({"type": "move", "x": 5, "y": 6}, "observe", None),
    ({"type": "screenshot"}, "observe", None),
    ({"type": "wait"}, "observe", None),
    ({"type": "click", "button": "wheel", "x": 1, "y": 1}, "unsupported", None),
    ({"type": "click", "button": "left", "x": 1, "y": 1, "keys": ["SHIFT"]}, "unsupported",
     None),
    ({"type": "click", "button": "left", "x": "a", "y": 1}, "unsupported", None),
    ({"type": "drag", "path": [{"x": 1, "y": 2}]}, "unsupported", None),
    ({"type": "scroll", "x": 5, "y": 6, "scroll_x": 100, "scroll_y": 0}, "unsupported", None),
    ({"type": "keypress", "keys": []}, "unsupported", None),
    ({"type": "teleport"}, "unsupported", None),
])  # fmt: skip
def test_openai_actions(action: dict[str, object], kind: str, expected: object) -> None:
    item = openai_item(action, "call_1#0", SAME)
    assert (item.kind, item.action) == (kind, expected)
    if kind == "unsupported":
        assert item.note


def test_openai_coordinates_are_mapped_from_the_display() -> None:
    item = openai_item({"type": "click", "button": "left", "x": 100, "y": 50}, "c#0", HALF)
    assert item.action == Click(200, 100) and item.cursor == (200, 100)


@pytest.mark.parametrize(("name", "tool_input", "kind", "expected"), [
    ("computer", {"action": "left_click", "coordinate": [10, 20]}, "act", Click(10, 20)),
    ("computer", {"action": "right_click", "coordinate": [10, 20]}, "act",
     Click(10, 20, "right")),
    ("computer", {"action": "double_click", "coordinate": [1, 2]}, "act",
     Click(1, 2, double=True)),
    ("computer", {"action": "left_click_drag", "start_coordinate": [1, 2],
                  "coordinate": [3, 4]}, "act", Drag(1, 2, 3, 4)),
    ("computer", {"action": "type", "text": "GARCIA"}, "act", TypeText("GARCIA")),
    ("computer", {"action": "key", "text": "ctrl+a"}, "act", Key("Control+a")),
    ("computer", {"action": "key", "text": "Page_Down"}, "act", Key("PageDown")),
    ("computer", {"action": "scroll", "coordinate": [5, 6], "scroll_direction": "down",
                  "scroll_amount": 3}, "act", Scroll(5, 6, 3)),
    ("left_click", {"coordinate": [7, 8]}, "act", Click(7, 8)),  # a toolset member
    ("computer", {"action": "mouse_move", "coordinate": [5, 6]}, "observe", None),
    ("computer", {"action": "screenshot"}, "observe", None),
    ("computer", {"action": "wait", "duration": 1}, "observe", None),
    ("computer", {"action": "triple_click", "coordinate": [1, 2]}, "unsupported", None),
    ("computer", {"action": "left_click", "coordinate": [1, 2], "text": "shift"},
     "unsupported", None),
    ("computer", {"action": "left_click", "coordinate": "near the top"}, "unsupported", None),
    ("computer", {"action": "left_click"}, "unsupported", None),  # no coordinate, no pointer
    ("computer", {"action": "scroll", "coordinate": [5, 6], "scroll_direction": "left",
                  "scroll_amount": 3}, "unsupported", None),
    ("computer", {"action": "zoom", "region": [0, 0, 10, 10]}, "unsupported", None),
])  # fmt: skip
def test_anthropic_actions(
    name: str, tool_input: dict[str, object], kind: str, expected: object
) -> None:
    item = anthropic_item(name, tool_input, "toolu_1", SAME)
    assert (item.kind, item.action) == (kind, expected)


def test_anthropic_click_without_coordinate_uses_the_pointer() -> None:
    moved = anthropic_item("computer", {"action": "mouse_move", "coordinate": [50, 60]}, "a",
                           HALF)  # fmt: skip
    assert moved.cursor == (100, 120)
    click = anthropic_item("computer", {"action": "left_click"}, "b", HALF, moved.cursor)
    assert click.action == Click(100, 120)


def test_keys() -> None:
    assert openai_keys(["CTRL", "SHIFT", "T"]) == "Control+Shift+t"
    assert openai_keys(["ESC"]) == "Escape"
    assert xdotool_keys("Return") == "Enter"
    assert xdotool_keys("super+l") == "Meta+l"
    assert xdotool_keys("KP_Enter") == "Enter"


@pytest.mark.parametrize(("text", "expected"), [
    ("The study is open.", Done()),
    ("", Done()),
    ("INFEASIBLE: there is no such study", Infeasible("there is no such study")),
    ("I looked everywhere.\n**INFEASIBLE:** no patient SMITH^ANN\nin the list",
     Infeasible("no patient SMITH^ANN in the list")),
    ("infeasible - the viewer has no such tool", Infeasible("the viewer has no such tool")),
    ("The task is not infeasible; it is done.", Done()),
])  # fmt: skip
def test_endings(text: str, expected: object) -> None:
    assert ending_from_text(text) == expected


def test_fit_display() -> None:
    assert fit_display((1280, 800), 1568, 1_150_000) == (1280, 800)
    w, h = fit_display((2560, 1600), 1568, 1_150_000)
    assert w * h <= 1_150_000 and abs(w / h - 1.6) < 0.01
    assert fit_display((3000, 500), 1568, 1_150_000)[0] == 1568


def _call(items: list[CuItem], **extra: object) -> dict[str, object]:
    return {"e": "call", "items": [i.to_json() for i in items], **extra}


def test_transcript_pending_follows_the_events() -> None:
    a = CuItem("x#0", "click", "act", Click(1, 2), cursor=(1, 2))
    b = CuItem("x#1", "screenshot", "observe")
    c = CuItem("x#2", "type", "act", TypeText("hi"))
    s = Path("s.png")
    logs = [TurnLog(s, (_call([a, b, c], response_id="r1"), {"e": "act", "id": "x#0"}))]
    st = pending(logs)
    assert st.awaiting == "x#0" and [i.id for i in st.queue] == ["x#1", "x#2"]
    assert st.cursor == (1, 2) and st.calls == 1
    logs.append(TurnLog(s, ({"e": "result", "id": "x#0"}, {"e": "result", "id": "x#1"},
                            {"e": "act", "id": "x#2"})))  # fmt: skip
    st = pending(logs)
    assert st.awaiting == "x#2" and st.queue == ()
    call = last_call(logs)
    assert call is not None and call["response_id"] == "r1"
    assert CuItem.from_json(json.loads(json.dumps(c.to_json()))) == c


def test_a_bad_script_is_a_located_error(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text('{"conversations": [{"match": "x", "turns": [{"tool_uses": [{"nput": {}}]}]}]}')
    with pytest.raises(ConfigError, match=r"s\.json: field 'conversations\.0\.turns\.0\."):
        load_script(f)
    f.write_text("{")
    with pytest.raises(ConfigError, match="not JSON"):
        load_script(f)
