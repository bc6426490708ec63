"""Reading models' answers into live actions: UI-TARS's and Aguvis's real output formats, the
documented text form, the card's own point, conventions as declared (never guessed).

UI-TARS answers are checked against ByteDance's own `ui_tars` package (the dev extra): its
parser's normalised boxes, and the pyautogui code it generates from them, read back by our
pyautogui reader, must give the same pixels as our UI-TARS reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.adapters.base import Convention
from medspot.adapters.cards import get_card
from medspot.adapters.conventions import UI_TARS_RESIZE, smart_resize
from medspot.errors import ConfigError
from medspot.geometry import Point
from medspot.live.agents.answer_reader import (
    PAGE_NOTCHES,
    SCROLL_NOTCHES,
    Frame,
    parse_action,
    parse_answer,
)
from medspot.live.agents.scripted import ReplayAgent
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    Scroll,
    TypeText,
    normalise_key,
)

W, H = 1280, 800
SENT = smart_resize(W, H, UI_TARS_RESIZE)
TARS = Frame(Convention.ABS_RESIZED, (W, H), SENT)
PX = Frame(Convention.ABS_ORIGINAL, (W, H))
REL1 = Frame(Convention.REL1, (W, H))

UI_TARS_ANSWERS = [
    "Thought: The patient list is on the left.\nAction: click(start_box='(197,525)')",
    "Action: click(start_box='<|box_start|>(197,525)<|box_end|>')",
    "Action: click(point='<point>212 46</point>')",
    "Action: left_double(start_box='(212,46)')",
    "Action: right_single(start_box='(30,40)')",
    "Thought: measure it.\nAction: drag(start_box='(100,200)', end_box='(300,400)')",
    "Action: drag(start_point='<point>100 200</point>', end_point='<point>300 410</point>')",
    "Action: hotkey(key='ctrl c')",
]


def _tars_reference(text: str) -> list[dict[str, object]]:
    parser = pytest.importorskip("ui_tars.action_parser", reason="pip install ui-tars")
    clean = text.replace("<|box_start|>", "").replace("<|box_end|>", "")
    return list(parser.parse_action_to_structure_output(clean, 1000, H, W, model_type="qwen25vl"))


def _centre(box: str) -> tuple[float, float]:
    x1, y1, x2, y2 = json.loads(box)
    return (x1 + x2) / 2 * W, (y1 + y2) / 2 * H


@pytest.mark.parametrize("text", UI_TARS_ANSWERS)
def test_ui_tars_matches_bytedance_parser(text: str) -> None:
    ref = _tars_reference(text)[0]
    got = parse_answer(text, TARS)
    assert got.source == "ui-tars"
    inputs = ref["action_inputs"]
    assert isinstance(inputs, dict)
    kind = ref["action_type"]
    a = got.action
    if kind == "drag":
        assert isinstance(a, Drag)
        assert (a.x1, a.y1) == pytest.approx(_centre(inputs["start_box"]))
        assert (a.x2, a.y2) == pytest.approx(_centre(inputs["end_box"]))
    elif kind == "hotkey":
        assert a == Key("Control+c")
    else:
        assert isinstance(a, Click)
        assert (a.x, a.y) == pytest.approx(_centre(inputs["start_box"]))
        assert a.double == (kind == "left_double")
        assert a.button == ("right" if kind == "right_single" else "left")


@pytest.mark.parametrize("text", UI_TARS_ANSWERS)
def test_ui_tars_pyautogui_code_reads_back_to_the_same_pixels(text: str) -> None:
    """ByteDance turns the answer into pyautogui code in screen pixels; our pyautogui reader
    (abs_original) must land where our UI-TARS reader (abs_resized) does."""
    parser = pytest.importorskip("ui_tars.action_parser", reason="pip install ui-tars")
    ref = _tars_reference(text)[0]
    code = parser.parsing_response_to_pyautogui_code(ref, H, W, scale_factor=1)
    via_code = parse_answer(code, PX)
    direct = parse_answer(text, TARS)
    assert via_code.source == "pyautogui"
    assert type(via_code.action) is type(direct.action)
    for f in ("x", "y", "x1", "y1", "x2", "y2"):
        if hasattr(direct.action, f):
            assert getattr(via_code.action, f) == pytest.approx(getattr(direct.action, f), abs=1e-2)
    if isinstance(direct.action, Key):
        assert via_code.action == direct.action


def test_ui_tars_scroll_type_finished() -> None:
    ref = _tars_reference("Action: scroll(start_box='(500,500)', direction='down')")[0]
    got = parse_answer("Action: scroll(start_box='(500,500)', direction='down')", TARS)
    assert isinstance(got.action, Scroll)
    inputs = ref["action_inputs"]
    assert isinstance(inputs, dict)
    assert (got.action.x, got.action.y) == pytest.approx(_centre(inputs["start_box"]))
    assert got.action.dy == SCROLL_NOTCHES  # down; UI-TARS's own code scrolls 5 notches
    up = parse_answer("Action: scroll(start_box='(500,500)', direction='up')", TARS).action
    assert isinstance(up, Scroll) and up.dy == -SCROLL_NOTCHES
    sideways = parse_answer("Action: scroll(start_box='(5,5)', direction='left')", TARS)
    assert sideways.action is None and "unsupported_action" in sideways.flags
    typed = parse_answer("Thought: type the name\nAction: type(content='DOE\\n')", TARS)
    assert typed.action == TypeText("DOE\n")  # UI-TARS: a trailing \n submits
    quoted = parse_answer("Action: type(content='it\\'s (1,2)')", TARS)
    assert quoted.action == TypeText("it's (1,2)")
    assert parse_answer("Action: finished(content='done')", TARS).action == Done()
    assert parse_answer("Action: finished()", TARS).action == Done()
    # README_v1: call_user() "when the task is unsolvable": infeasible, as OSWorld maps it to FAIL
    assert parse_answer("Action: call_user()", TARS).action == Infeasible("call_user()")


def test_ui_tars_last_action_part_is_read() -> None:
    text = (
        "Thought: earlier I tried click(start_box='(1,1)') which failed.\n"
        "Action: click(start_box='(644,406)')"
    )
    a = parse_answer(text, TARS).action
    assert isinstance(a, Click)
    assert (a.x, a.y) == pytest.approx((644 / SENT[0] * W, 406 / SENT[1] * H))


# ---- Aguvis / pyautogui (models.md's test answers, and Aguvis's action space) ----------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pyautogui.click(x=0.1102, y=0.0463)", Click(0.1102 * W, 0.0463 * H)),
        ("pyautogui.click(0.1102, 0.0463)", Click(0.1102 * W, 0.0463 * H)),
        (
            "<|recipient|>os\npyautogui.click(x=0.11, y=0.05)<|diff_marker|>",
            Click(0.11 * W, 0.05 * H),
        ),
        (
            "Thought: open the menu.\nAction: click File\npyautogui.click(x=0.11, y=0.05)",
            Click(0.11 * W, 0.05 * H),
        ),
        ("pyautogui.doubleClick(x=0.11, y=0.05)", Click(0.11 * W, 0.05 * H, double=True)),
        ("pyautogui.rightClick(x=0.5, y=0.5)", Click(0.5 * W, 0.5 * H, button="right")),
        (
            "pyautogui.moveTo(x=0.25, y=0.5)\npyautogui.dragTo(x=0.75, y=0.5, duration=1)",
            Drag(0.25 * W, 0.5 * H, 0.75 * W, 0.5 * H),
        ),
        ("pyautogui.scroll(-3)", Scroll(W / 2, H / 2, 3)),
        ("pyautogui.scroll(5, x=0.2, y=0.3)", Scroll(0.2 * W, 0.3 * H, -5)),
        ("pyautogui.scroll(page=-0.5)", Scroll(W / 2, H / 2, round(0.5 * PAGE_NOTCHES))),
        ("pyautogui.write(message='DOE^JOHN')", TypeText("DOE^JOHN")),
        ("pyautogui.typewrite('abc')", TypeText("abc")),
        ("pyautogui.press('enter')", Key("Enter")),
        ("pyautogui.hotkey('ctrl', 'a')", Key("Control+a")),
        ("pyautogui.press(['shift', 'tab'])", Key("Shift+Tab")),
        ("```python\n# Click OK\npyautogui.click(x=0.5, y=0.25)\n```", Click(0.5 * W, 0.25 * H)),
        ("computer.terminate(status='success')", Done()),
        ("DONE", Done()),
        ("computer.terminate(status='failure')", Infeasible("terminate(status='failure')")),
        ("FAIL", Infeasible("FAIL")),
    ],
)
def test_pyautogui_forms(text: str, expected: object) -> None:
    got = parse_answer(text, REL1)
    assert got.source == "pyautogui"
    assert _same(got.action, expected)


def _same(a: object, b: object) -> bool:
    assert type(a) is type(b), (a, b)
    for f in getattr(a, "__slots__", ()):
        va, vb = getattr(a, f), getattr(b, f)
        if isinstance(va, float):
            assert va == pytest.approx(vb), f
        else:
            assert va == vb, f
    return True


def test_drag_without_a_start_is_not_guessed() -> None:
    got = parse_answer("pyautogui.dragTo(x=0.75, y=0.5)", REL1)
    assert got.action is None and "bad_action_args" in got.flags


# ---- the text form, conventions, the card's point ----------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("click(412, 233)", Click(412, 233)),
        ("double_click(10, 20)", Click(10, 20, double=True)),
        ("right_click(10, 20)", Click(10, 20, button="right")),
        ("drag(100, 200, 300, 400)", Drag(100, 200, 300, 400)),
        ("scroll(640, 400, 3)", Scroll(640, 400, 3)),
        ('type("DOE^JOHN")', TypeText("DOE^JOHN")),
        ('key("Escape")', Key("Escape")),
        ('key("ctrl+a")', Key("Control+a")),
        ("done()", Done()),
        ('infeasible("no study of SMITH^JOHN")', Infeasible("no study of SMITH^JOHN")),
        ('infeasible("there is no patient SMITH")', Infeasible("there is no patient SMITH")),
        ("infeasible()", Infeasible("")),
        ("infeasible(reason='no such series')", Infeasible("no such series")),
        ("I will click the OK button: click(412, 233)", Click(412, 233)),
    ],
)
def test_text_form_in_pixels(text: str, expected: object) -> None:
    got = parse_answer(text, PX)
    assert got.source == "text"
    assert _same(got.action, expected)
    assert parse_action(text, (W, H)) == got  # the pixel reader of replay and Gymnasium


def test_numbers_follow_the_declared_convention_never_the_values() -> None:
    text = "drag(500, 250, 750, 500)"
    rel = parse_answer(text, Frame(Convention.REL1000, (W, H))).action
    px = parse_answer(text, PX).action
    assert _same(rel, Drag(0.5 * W, 0.25 * H, 0.75 * W, 0.5 * H))
    assert _same(px, Drag(500, 250, 750, 500))
    # small numbers under rel1000 are still rel1000 (no guessing that they are fractions)
    small = parse_answer("click(0.5, 0.5)", Frame(Convention.REL1000, (W, H))).action
    assert _same(small, Click(0.5 / 1000 * W, 0.5 / 1000 * H))


def test_the_cards_own_point_is_the_fallback() -> None:
    """A plain grounding answer: the card's parser (the static benchmark's) gives the point,
    and the live action is a click there."""
    card = get_card("ui-tars-7b-sft")  # rel1000, answers "(x,y)"
    text = "(500,250)"
    parsed = card.native.parse(text, (W, H), (W, H))
    assert parsed.point is not None
    got = parse_answer(text, Frame(card.native.convention, (W, H)), parsed.point)
    assert got.source == "point"
    assert _same(got.action, Click(0.5 * W, 0.25 * H))
    nothing = parse_answer("I cannot find it.", PX, None)
    assert nothing.action is None and nothing.source == "none"
    # an action call with unreadable arguments falls back to the point when there is one
    fallback = parse_answer("click(OK)", PX, Point(0.1, 0.2))
    assert fallback.source == "point" and _same(fallback.action, Click(0.1 * W, 0.2 * H))


def test_static_card_and_live_reader_agree_on_clicks() -> None:
    """For click answers, the live reader and the card's static parser land on the same pixel."""
    card = get_card("ui-tars-1.5-7b")
    for text in UI_TARS_ANSWERS:
        if "drag" in text or "hotkey" in text:
            continue
        parsed = card.native.parse(text, SENT, (W, H))
        live = parse_answer(text, TARS, parsed.point).action
        assert parsed.point is not None and isinstance(live, Click)
        assert (live.x, live.y) == pytest.approx((parsed.point.x * W, parsed.point.y * H))
    aguvis = get_card("aguvis-7b-720p")
    parsed = aguvis.native.parse("pyautogui.click(x=0.3, y=0.6)", (W, H), (W, H))
    live = parse_answer("pyautogui.click(x=0.3, y=0.6)", REL1, parsed.point).action
    assert parsed.point is not None and isinstance(live, Click)
    assert (live.x, live.y) == pytest.approx((parsed.point.x * W, parsed.point.y * H))


def test_normalise_key() -> None:
    assert normalise_key("ctrl c") == "Control+c"
    assert normalise_key("ctrl+shift+s") == "Control+Shift+s"
    assert normalise_key(["alt", "f4"]) == "Alt+F4"
    assert normalise_key("esc") == "Escape"
    assert normalise_key("PageDown") == "PageDown"


def test_replay_file_errors_are_located(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"task": "a", "action": {"kind": "click", "x": 1, "y": 2}}\n{"task": "a"}\n')
    with pytest.raises(ConfigError, match="line 2"):
        ReplayAgent(f)
    f.write_text('{"task": "a", "action": {"kind": "warp"}}\n')
    with pytest.raises(ConfigError, match=r"line 1.*unknown kind"):
        ReplayAgent(f)
    f.write_text('{"task": "a", "action": {"kind": "click", "x": 1, "y": 2}}\n\n')
    agent = ReplayAgent(f)
    assert agent.lines["a"][1]["action"]["x"] == 1
