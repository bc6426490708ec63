"""Agent-mode answer readers (pure, no application): realistic answers of each model's own
format (thoughts, several actions in one answer, endings, malformed ones) read into the one
action type, in the card's declared convention; a malformed answer is a no-action with a flag,
never a guessed click. UI-TARS answers are checked against ByteDance's own `ui_tars` parser."""

from __future__ import annotations

import json

import pytest

from medspot.adapters.base import Convention
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE, UI_TARS_RESIZE, smart_resize
from medspot.live.agents.answer_reader import Frame
from medspot.live.agents.formats import FORMATS, get_format
from medspot.live.agents.formats.cogagent import SENSITIVE
from medspot.live.agents.formats.reading import (
    AFTER_ENDING,
    MALFORMED,
    SEVERAL,
    STOPPED,
    WAIT,
    AgentReading,
)
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    LiveAction,
    Scroll,
    TypeText,
)

W, H = 1280, 800
TARS_SENT = smart_resize(W, H, UI_TARS_RESIZE)
QWEN_SENT = smart_resize(W, H, QWEN_DEFAULT_RESIZE)
TARS15 = Frame(Convention.ABS_RESIZED, (W, H), TARS_SENT)
TARS1 = Frame(Convention.REL1000, (W, H))
AGUVIS = Frame(Convention.REL1, (W, H))
QWEN25 = Frame(Convention.ABS_RESIZED, (W, H), QWEN_SENT)
QWEN3 = Frame(Convention.REL999, (W, H))
REL1000 = Frame(Convention.REL1000, (W, H))


def read(fmt: str, text: str, frame: Frame) -> AgentReading:
    return get_format(fmt).read(text, frame)


def same(got: tuple[LiveAction, ...], want: list[LiveAction]) -> None:
    assert len(got) == len(want), (got, want)
    for a, b in zip(got, want, strict=True):
        assert type(a) is type(b), (a, b)
        for f in a.__slots__:
            va, vb = getattr(a, f), getattr(b, f)
            assert va == (pytest.approx(vb) if isinstance(va, float) else vb), (f, a, b)


def tx(x: float, y: float) -> tuple[float, float]:  # UI-TARS-1.5 pixels -> screen pixels
    return x * W / TARS_SENT[0], y * H / TARS_SENT[1]


# ---- UI-TARS ---------------------------------------------------------------------------------

UITARS_CLICK = (
    "Thought: The lookup form is open and the Patient Name field is empty. I'll click it to "
    "type the name.\nAction: click(start_box='<|box_start|>(412,233)<|box_end|>')"
)
UITARS_TYPE_AND_SUBMIT = (
    "Thought: The field is focused. Type the name, then press the Do lookup button.\n"
    "Action: type(content='DOE^JOAN')\n\nclick(start_box='(640,420)')"
)


def test_ui_tars_click_and_its_thought() -> None:
    r = read("ui-tars", UITARS_CLICK, TARS15)
    same(r.actions, [Click(*tx(412, 233))])
    assert r.thought is not None and r.thought.startswith("The lookup form is open")
    assert r.flags == ()


def test_ui_tars_several_actions_in_order_match_bytedance_parser() -> None:
    parser = pytest.importorskip("ui_tars.action_parser", reason="pip install ui-tars")
    r = read("ui-tars", UITARS_TYPE_AND_SUBMIT, TARS15)
    same(r.actions, [TypeText("DOE^JOAN"), Click(*tx(640, 420))])
    assert SEVERAL in r.flags
    ref = parser.parse_action_to_structure_output(
        UITARS_TYPE_AND_SUBMIT, 1000, H, W, model_type="qwen25vl"
    )
    assert [a["action_type"] for a in ref] == ["type", "click"]
    x1, y1, x2, y2 = json.loads(ref[1]["action_inputs"]["start_box"])
    click = r.actions[1]
    assert isinstance(click, Click)
    assert (click.x, click.y) == pytest.approx(((x1 + x2) / 2 * W, (y1 + y2) / 2 * H))
    assert ref[0]["thought"] == r.thought


@pytest.mark.parametrize(
    ("text", "want", "flags"),
    [
        ("Thought: submit.\nAction: type(content='DOE^JOAN\\n')", [TypeText("DOE^JOAN\n")], ()),
        (
            "Thought: measure A to B.\nAction: drag(start_box='(100,200)', end_box='(300,400)')",
            [Drag(*tx(100, 200), *tx(300, 400))],
            (),
        ),
        ("Thought: select all.\nAction: hotkey(key='ctrl a')", [Key("Control+a")], ()),
        (
            "Thought: the list continues below.\n"
            "Action: scroll(start_box='(640,500)', direction='down')",
            [Scroll(*tx(640, 500), 5)],
            (),
        ),
        ("Thought: The study is open.\nAction: finished(content='Opened.')", [Done()], ()),
        ("Thought: The page is loading.\nAction: wait()", [], (WAIT,)),
        (
            "Thought: done.\nAction: finished(content='ok')\n\nclick(start_box='(1,1)')",
            [Done()],
            (AFTER_ENDING,),
        ),
        (
            "Thought: x\nAction: click(start_box='(abc)')\n\nclick(start_box='(5,5)')",
            [],
            ("bad_action_args", STOPPED),
        ),
        ("Thought: x\nAction: open_app(app_name='Orthanc')", [], ("unsupported_action",)),
        ("I should click the OK button at (500, 300).", [], (MALFORMED,)),
    ],
)
def test_ui_tars_forms(text: str, want: list[LiveAction], flags: tuple[str, ...]) -> None:
    r = read("ui-tars", text, TARS15)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


def test_ui_tars_v1_call_user_is_infeasible_and_coordinates_are_rel1000() -> None:
    text = (
        "Thought: There is no patient called SMITH^JOHN in the list; the task cannot be done.\n"
        "Action: call_user()"
    )
    r = read("ui-tars", text, TARS1)
    assert r.actions == (Infeasible(r.thought or ""),) and "SMITH^JOHN" in (r.thought or "")
    r = read("ui-tars", "Thought: t\nAction: click(start_box='(500,250)')", TARS1)
    same(r.actions, [Click(0.5 * W, 0.25 * H)])


def test_ui_tars_memory_puts_the_box_tokens_back() -> None:
    mem = get_format("ui-tars").memory("Thought: t\nAction: click(start_box='(412,233)')\n")
    assert mem == "Thought: t\nAction: click(start_box='<|box_start|>(412,233)<|box_end|>')"


# ---- Aguvis ---------------------------------------------------------------------------------

AGUVIS_CLICK = (
    "all\nThought: The lookup form is open. I need to enter the patient name first.\n"
    "Action: Click on the Patient Name input field.\nassistantos\n"
    "pyautogui.click(x=0.3211, y=0.2912)"
)


def test_aguvis_inner_monologue_then_code() -> None:
    r = read("aguvis", AGUVIS_CLICK, AGUVIS)
    same(r.actions, [Click(0.3211 * W, 0.2912 * H)])
    assert r.thought == "The lookup form is open. I need to enter the patient name first."
    assert get_format("aguvis").memory(AGUVIS_CLICK) == "Click on the Patient Name input field."


@pytest.mark.parametrize(
    ("text", "want", "flags"),
    [
        (  # special tokens kept by the server: the same answer
            "<|recipient|>all\nThought: type it.\nAction: Type the name.<|im_end|>\n"
            "<|im_start|>assistant<|recipient|>os\npyautogui.write(message='DOE^JOAN')"
            "<|diff_marker|>",
            [TypeText("DOE^JOAN")],
            (),
        ),
        (
            "os\npyautogui.write(message='DOE^JOAN')\npyautogui.press('enter')",
            [TypeText("DOE^JOAN"), Key("Enter")],
            (SEVERAL,),
        ),
        (
            "os\npyautogui.moveTo(x=0.4, y=0.5)\npyautogui.dragTo(x=0.6, y=0.5, duration=0.5)",
            [Drag(0.4 * W, 0.5 * H, 0.6 * W, 0.5 * H)],
            (),
        ),
        (
            "all\nThought: The study is open; the task is complete.\nAction: Finish.\n"
            "assistantos\ncomputer.terminate(status='success')",
            [Done()],
            (),
        ),
        ("os\nmobile.terminate(status='failure')", [Infeasible("terminate(status='failure')")], ()),
        (
            "os\nmobile.swipe(from_coord=[0.5, 0.8], to_coord=[0.5, 0.2])",
            [],
            ("unsupported_action",),
        ),
        ("all\nThought: I am not sure what to do here.", [], (MALFORMED,)),
        ("os\npyautogui.dragTo(x=0.6, y=0.5)", [], ("bad_action_args",)),
    ],
)
def test_aguvis_forms(text: str, want: list[LiveAction], flags: tuple[str, ...]) -> None:
    r = read("aguvis", text, AGUVIS)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


# ---- Qwen computer_use ----------------------------------------------------------------------


def tool(**arguments: object) -> str:
    body = json.dumps({"name": "computer_use", "arguments": arguments})
    return f"<tool_call>\n{body}\n</tool_call>"


def qx(x: float, y: float) -> tuple[float, float]:  # Qwen2.5-VL pixels -> screen pixels
    return x * W / QWEN_SENT[0], y * H / QWEN_SENT[1]


@pytest.mark.parametrize(
    ("text", "want", "flags"),
    [
        (tool(action="left_click", coordinate=[412, 233]), [Click(*qx(412, 233))], ()),
        (tool(action="double_click", coordinate=[10, 20]), [Click(*qx(10, 20), double=True)], ()),
        (tool(action="right_click", coordinate=[10, 20]), [Click(*qx(10, 20), "right")], ()),
        (
            tool(action="mouse_move", coordinate=[100, 200])
            + "\n"
            + tool(action="left_click_drag", coordinate=[300, 400]),
            [Drag(*qx(100, 200), *qx(300, 400))],
            (),
        ),
        (
            tool(action="mouse_move", coordinate=[100, 200]) + "\n" + tool(action="left_click"),
            [Click(*qx(100, 200))],
            (),
        ),
        (
            tool(action="type", text="DOE^JOAN") + "\n" + tool(action="key", keys=["Return"]),
            [TypeText("DOE^JOAN"), Key("Enter")],
            (SEVERAL,),
        ),
        (tool(action="key", keys=["ctrl", "a"]), [Key("Control+a")], ()),
        (tool(action="scroll", pixels=-5, coordinate=[640, 400]), [Scroll(*qx(640, 400), 5)], ()),
        (tool(action="scroll", pixels=3), [Scroll(W / 2, H / 2, -3)], ("scroll_at_screen_centre",)),
        (tool(action="terminate", status="success"), [Done()], ()),
        (tool(action="wait", time=2), [], (WAIT,)),
        (tool(action="left_click"), [], ("bad_action_args",)),  # no point: never guessed
        (tool(action="mouse_move", coordinate=[5, 5]), [], ("unsupported_action",)),
        (
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinate": [412, 233]}\n</tool_call>',  # a brace missing
            [],
            (MALFORMED,),
        ),
        ("I will click on the Patient Name field at (412, 233).", [], (MALFORMED,)),
        (
            tool(action="terminate", status="success")
            + tool(action="left_click", coordinate=[1, 1]),
            [Done()],
            (AFTER_ENDING,),
        ),
    ],
)
def test_qwen25_computer_use_forms(
    text: str, want: list[LiveAction], flags: tuple[str, ...]
) -> None:
    r = read("qwen2.5-computer-use", text, QWEN25)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


QWEN3_ANSWER = (
    "Thought: The Patient Name field is empty; I should click it to enter the name.\n"
    'Action: "Click the Patient Name field."\n' + tool(action="left_click", coordinate=[322, 291])
)


def test_qwen3_thought_action_and_grid() -> None:
    r = read("qwen3-computer-use", QWEN3_ANSWER, QWEN3)
    same(r.actions, [Click(322 / 999 * W, 291 / 999 * H)])
    assert r.thought == "The Patient Name field is empty; I should click it to enter the name."
    assert get_format("qwen3-computer-use").memory(QWEN3_ANSWER) == "Click the Patient Name field."
    assert get_format("qwen2.5-computer-use").memory(QWEN3_ANSWER) == json.dumps(
        {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [322, 291]}}
    )


def test_qwen3_failure_is_infeasible_with_its_thought() -> None:
    text = "Thought: No study of SMITH^JOHN exists in the list.\nAction: Stop.\n" + tool(
        action="terminate", status="failure"
    )
    r = read("qwen3-computer-use", text, QWEN3)
    assert r.actions == (Infeasible("No study of SMITH^JOHN exists in the list."),)
    answer = read("qwen3-computer-use", tool(action="answer", text="42"), QWEN3)
    assert answer.actions == (Done(),) and "answer_as_done" in answer.flags


# ---- CogAgent -------------------------------------------------------------------------------

COG_CLICK = (
    "Action: Left click on the 'Patient Name' input box in the lookup form.\n"
    "Grounded Operation: CLICK(box=[[289,279,507,304]], element_type='Text input box', "
    "element_info='Patient Name')\n<<一般操作>>"
)


def cbox(a: float, b: float, c: float, d: float) -> tuple[float, float]:
    return (a + c) / 2 / 1000 * W, (b + d) / 2 / 1000 * H


def test_cogagent_click_thought_memory() -> None:
    r = read("cogagent", COG_CLICK, REL1000)
    same(r.actions, [Click(*cbox(289, 279, 507, 304))])
    assert r.thought == "Left click on the 'Patient Name' input box in the lookup form."
    assert SENSITIVE not in r.flags
    mem = get_format("cogagent").memory(COG_CLICK)
    step, action = mem.split("\t")
    assert step.startswith("CLICK(box=[[289,279,507,304]]") and action.startswith("Left click")


@pytest.mark.parametrize(
    ("text", "want", "flags"),
    [
        (
            "Action: Type 'DOE^JOAN' into the Patient Name box.\nGrounded Operation: TYPE(box="
            "[[289,279,507,304]], text='DOE^JOAN', element_type='Text input box', "
            "element_info='Patient Name')\n<<一般操作>>",
            [Click(*cbox(289, 279, 507, 304)), TypeText("DOE^JOAN")],
            (SEVERAL,),
        ),
        (
            "Action: Click Delete to delete the study.\nGrounded Operation: CLICK(box=[[880,120,"
            "940,150]], element_type='Button', element_info='Delete')\n<<敏感操作>>",
            [Click(*cbox(880, 120, 940, 150))],
            (SENSITIVE,),
        ),
        (
            "Action: Scroll down.\nGrounded Operation: SCROLL_DOWN(box=[[0,86,999,932]], "
            "step_count=5, element_info='[None]')",
            [Scroll(*cbox(0, 86, 999, 932), 5)],
            (),
        ),
        ("Action: Submit.\nGrounded Operation: KEY_PRESS(key='Return')", [Key("Enter")], ()),
        (
            "Action: Select all.\nGrounded Operation: GESTURE(actions=[KEY_DOWN(key='Lcontrol'), "
            "KEY_PRESS(key='A'), KEY_UP(key='Lcontrol')])",
            [Key("Control+a")],
            (),
        ),
        ("Action: The task is complete.\nGrounded Operation: END()", [Done()], ()),
        (
            "Action: Hover.\nGrounded Operation: HOVER(box=[[1,2,3,4]], element_info='x')",
            [],
            ("unsupported_action",),
        ),
        ("I cannot find the patient on this screen.", [], (MALFORMED,)),
    ],
)
def test_cogagent_forms(text: str, want: list[LiveAction], flags: tuple[str, ...]) -> None:
    r = read("cogagent", text, REL1000)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


# ---- the harness text form ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want", "flags"),
    [
        (
            "Thought: open the lookup form.\nAction: click(512, 48)",
            [Click(0.512 * W, 0.048 * H)],
            (),
        ),
        (
            'Thought: type and submit.\nAction: type("DOE^JOAN")\nkey("Enter")',
            [TypeText("DOE^JOAN"), Key("Enter")],
            (SEVERAL,),
        ),
        (
            'Thought: There is no SMITH^JOHN.\nAction: infeasible("no patient SMITH^JOHN")',
            [Infeasible("no patient SMITH^JOHN")],
            (),
        ),
        ("Thought: It is open.\nAction: done()", [Done()], ()),
        ("Thought: x\nAction: drag(100, 200, 300, 400)", [Drag(128, 160, 384, 320)], ()),
        ("Thought: x\nAction: hover(10, 20)", [], ("unsupported_action",)),
        ("The OK button is at (500, 300).", [], (MALFORMED,)),
    ],
)
def test_text_form(text: str, want: list[LiveAction], flags: tuple[str, ...]) -> None:
    r = read("text", text, REL1000)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


# ---- MAI-UI (mobile_use on a 0..999 grid) ------------------------------------------------------

MAI999 = Frame(Convention.REL999, (W, H))


def m999(x: float, y: float) -> tuple[float, float]:
    return x / 999 * W, y / 999 * H


def mai(args: dict[str, object], thought: str = "I need to open the lookup form first.") -> str:
    call = json.dumps({"name": "mobile_use", "arguments": args})
    return f"<thinking>\n{thought}\n</thinking>\n<tool_call>\n{call}\n</tool_call>"


def test_mai_ui_click_thought_and_grid() -> None:
    r = read("mai-ui", mai({"action": "click", "coordinate": [321, 287]}), MAI999)
    same(r.actions, [Click(*m999(321, 287))])
    assert r.thought == "I need to open the lookup form first." and r.flags == ()


@pytest.mark.parametrize(
    ("args", "want", "flags"),
    [
        ({"action": "click", "coordinate": [100, 200, 300, 400]}, [Click(*m999(200, 300))], ()),
        ({"action": "double_click", "coordinate": [10, 20]},
         [Click(*m999(10, 20), "left", True)], ()),
        ({"action": "type", "text": "DOE^JOAN"}, [TypeText("DOE^JOAN")], ()),
        ({"action": "drag", "start_coordinate": [10, 20], "end_coordinate": [30, 40]},
         [Drag(*m999(10, 20), *m999(30, 40))], ()),
        ({"action": "system_button", "button": "enter"}, [Key("Enter")], ()),
        ({"action": "system_button", "button": "back"}, [], ("unsupported_action",)),
        ({"action": "swipe", "direction": "up", "coordinate": [500, 500]}, [],
         ("unsupported_action",)),
        ({"action": "long_press", "coordinate": [500, 500]}, [], ("unsupported_action",)),
        ({"action": "open", "text": "Chrome"}, [], ("unsupported_action",)),
        ({"action": "wait"}, [], (WAIT,)),
        ({"action": "terminate", "status": "success"}, [Done()], ()),
        ({"action": "answer", "text": "3 studies"}, [Done()], ("answer_as_done",)),
        ({"action": "click"}, [], ("bad_action_args",)),
        ({"action": "click", "coordinate": [1, 2, 3]}, [], ("bad_action_args",)),
        ({"action": "fly"}, [], ("bad_action_args",)),
    ],
)  # fmt: skip
def test_mai_ui_forms(
    args: dict[str, object], want: list[LiveAction], flags: tuple[str, ...]
) -> None:
    r = read("mai-ui", mai(args), MAI999)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


def test_mai_ui_fail_is_infeasible_with_its_thought_and_think_closes_a_thought() -> None:
    r = read("mai-ui", mai({"action": "terminate", "status": "fail"}, "No such patient."), MAI999)
    same(r.actions, [Infeasible("No such patient.")])
    call = json.dumps({"name": "mobile_use", "arguments": {"action": "click",
                                                           "coordinate": [5, 6]}})  # fmt: skip
    thinking = read("mai-ui", f"The form is open.\n</think>\n<tool_call>\n{call}\n</tool_call>",
                    MAI999)  # fmt: skip
    same(thinking.actions, [Click(*m999(5, 6))])
    assert thinking.thought == "The form is open."


def test_mai_ui_malformed_and_memory() -> None:
    bad = read("mai-ui", "<thinking>x</thinking>\n<tool_call>\n{not json\n</tool_call>", MAI999)
    assert bad.actions == () and MALFORMED in bad.flags
    text = mai({"action": "click", "coordinate": [321, 287]}, "Open the form.")
    assert get_format("mai-ui").memory(text) == (
        "<thinking>\nOpen the form.\n</thinking>\n<tool_call>\n"
        '{"name":"mobile_use","arguments":{"action":"click","coordinate":[321,287]}}\n'
        "</tool_call>"
    )
    assert get_format("mai-ui").memory("no call at all") == "no call at all"


# ---- GUI-Owl-1.5 (computer_use on a 0..1000 grid) -----------------------------------------------


def owl(args: dict[str, object], action: str = "Click the Lookup tab.") -> str:
    call = json.dumps({"name": "computer_use", "arguments": args})
    return f"Action: {action}\n<tool_call>\n{call}\n</tool_call>"


def test_gui_owl_click_grid_and_memory() -> None:
    text = owl({"action": "left_click", "coordinate": [250, 500]})
    r = read("gui-owl-computer-use", text, REL1000)
    same(r.actions, [Click(0.25 * W, 0.5 * H)])
    assert get_format("gui-owl-computer-use").memory(text) == "Click the Lookup tab."


@pytest.mark.parametrize(
    ("args", "want", "flags"),
    [
        ({"action": "double_click", "coordinate": [500, 500]},
         [Click(W / 2, H / 2, "left", True)], ()),
        ({"action": "type", "text": "DOE^JOAN"}, [TypeText("DOE^JOAN")], ()),
        ({"action": "key", "keys": ["ctrl", "a"]}, [Key("Control+a")], ()),
        ({"action": "scroll", "coordinate": [500, 500], "pixels": -3}, [Scroll(W / 2, H / 2, 3)],
         ()),
        ({"action": "terminate", "status": "success"}, [Done()], ()),
        ({"action": "interact", "text": "Please log in."}, [], ("unsupported_action",)),
        ({"action": "wait", "time": 2}, [], (WAIT,)),
    ],
)  # fmt: skip
def test_gui_owl_forms(
    args: dict[str, object], want: list[LiveAction], flags: tuple[str, ...]
) -> None:
    r = read("gui-owl-computer-use", owl(args), REL1000)
    same(r.actions, want)
    for f in flags:
        assert f in r.flags


def test_gui_owl_failure_is_infeasible() -> None:
    r = read("gui-owl-computer-use", owl({"action": "terminate", "status": "failure"},
                                         "The study is not in the list."), REL1000)  # fmt: skip
    assert isinstance(r.first, Infeasible)


def test_every_format_reads_empty_and_garbage_as_no_action() -> None:
    for name, fmt in FORMATS.items():
        for text in ("", "   ", "(500, 300)", "click here please"):
            r = fmt.read(text, REL1000)
            assert r.actions == (), (name, text)
            assert r.flags, (name, text)
