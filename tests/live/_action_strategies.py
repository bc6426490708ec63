"""Hypothesis strategies of what a model may write: numbers (1e308, -1e308, NaN, infinity,
integers of 400 digits, booleans), strings (full-width letters, emoji, control characters,
lone surrogates, very long ones), odd JSON (nested deeply, keys that read as numbers), and from
them every kind of live action (`medspot.live.core.actions`), tool calls (known and unknown
tools, arguments of any type), model texts in the forms the readers know (the text form,
pyautogui, UI-TARS, Qwen's `<tool_call>`), and the computer-use APIs' actions (OpenAI's action
objects, Anthropic's tool inputs). Shared by the tests that drive them through the readers, the
`Episode`, the runner and the servers (`tests/live/test_generated_actions.py`).

`json_text` writes a value the way an API's JSON would carry it (a lone surrogate as
`\\ud800`, an integer in all its digits), for the readers that parse JSON themselves.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    LiveAction,
    Scroll,
    ToolCall,
    TypeText,
)

__all__ = [
    "NASTY_NUMBERS",
    "NASTY_STRINGS",
    "actions",
    "anthropic_inputs",
    "deep",
    "json_text",
    "json_values",
    "model_texts",
    "numbers",
    "openai_actions",
    "plain_actions",
    "strings",
    "tool_args",
    "tool_calls",
]

NASTY_NUMBERS: tuple[Any, ...] = (
    1e308, -1e308, math.nan, math.inf, -math.inf, 0, -0.0, 1, -1, 0.4, 2.5, 640.5, 2**53 + 1,
    2**63, -(2**63) - 1, 2**64, 10**30, 10**400, -(10**400), True, False,
)  # fmt: skip
NASTY_STRINGS: tuple[str, ...] = (
    "", " ", "ＡＢＣ", "ｄｏｅ", "😀", "\ud800", "x\udfffy", "\x00", "\x1b[31m", "\u202e", "\ufffd",
    "\r\n", "Enter", "Control+a", "../../etc/passwd", "a" * 5000, "0" * 44,
    "0123abcd-0123abcd-0123abcd-0123abcd-0123abcd",
)  # fmt: skip


def deep(depth: int) -> Any:
    """A list nested `depth` levels deep (deeper than a serializer recurses)."""
    v: Any = []
    for _ in range(depth):
        v = [v]
    return v


numbers = (
    st.sampled_from(NASTY_NUMBERS)
    | st.floats(allow_nan=True, allow_infinity=True)
    | (st.integers(-(10**20), 10**20))
)
surrogates = st.integers(0xD800, 0xDFFF).map(chr)
strings = (
    st.sampled_from(NASTY_STRINGS)
    | st.text(max_size=20)
    | st.lists(st.text(max_size=3) | surrogates, max_size=5).map("".join)
)
scalars = st.none() | numbers | strings
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=8,
) | st.sampled_from([deep(300), {"a": deep(300)}, {1: "x"}, {"1": 1, "2": [1e308]}])

TOOL_NAMES = ("find_studies", "read_tags", "delete_study", "delete_series", "download_archive",
              "switch", "label", "scale", "drop_database", "", "ＡＢＣ", "\ud800")  # fmt: skip
tool_args = (
    st.dictionaries(
        st.sampled_from(["id", "study", "series", "lamp", "text", "factor", "patient_name", "x"])
        | strings,
        json_values,
        max_size=3,
    )
    | json_values
)
tool_calls = st.builds(ToolCall, st.sampled_from(TOOL_NAMES) | strings, tool_args)

actions: st.SearchStrategy[LiveAction] = st.one_of(
    st.builds(Click, numbers, numbers, st.sampled_from(["left", "right", "middle", 3]),
              st.booleans() | numbers),
    st.builds(Drag, numbers, numbers, numbers, numbers),
    st.builds(Scroll, numbers, numbers, numbers),
    st.builds(TypeText, strings | numbers),
    st.builds(Key, strings | numbers),
    st.just(Done()),
    st.builds(Infeasible, strings | numbers),
    tool_calls,
)  # fmt: skip
# well-placed actions too, so that examples also execute (the lamp panel's buttons)
plain_actions: st.SearchStrategy[LiveAction] = st.one_of(
    st.builds(Click, st.integers(0, 1279), st.integers(0, 799)),
    st.builds(Scroll, st.integers(0, 1279), st.integers(0, 799), st.integers(-5, 5)),
    st.builds(TypeText, st.text(max_size=5)),
)


def json_text(value: Any) -> str:
    """`value` as an API's JSON carries it: lone surrogates escaped, integers in full."""
    try:
        return json.dumps(value)
    except (ValueError, RecursionError):  # nested past json's recursion: a broken stand-in
        return "[" * 2000


NUMBER_TEXTS = ("1e308", "-1e308", "1e999", "nan", "inf", "-inf", "9" * 400, "-" + "9" * 400,
                "0", "5", "640.5", "2.5", "0x10", "１２")  # fmt: skip
number_texts = st.sampled_from(NUMBER_TEXTS) | numbers.map(str)
_TEXT_FORMS = (
    "click({0}, {1})", "double_click({0}, {1})", "right_click({0}, {1})",
    "drag({0}, {1}, {2}, {3})", "scroll({0}, {1}, {2})", "key({s})", "type({s})",
    "infeasible({s})", "done()", "tool({n}, {a})", "tool(read_tags, {a})",
    "pyautogui.click({0}, {1})", "pyautogui.scroll({2})", "pyautogui.scroll(page={2})",
    "pyautogui.moveTo({0}, {1})\npyautogui.dragTo({2}, {3})", "pyautogui.write({s})",
    "pyautogui.hotkey({s}, {s})", "Action: click(start_box='({0},{1})')",
    "Action: scroll(start_box='({0},{1})', direction={s})", "Action: type(content={s})",
    "Action: hotkey(key={s})", "<point>{0} {1}</point>",
    '<tool_call>{{"name": "computer_use", "arguments": {{"action": "left_click", '
    '"coordinate": [{0}, {1}]}}}}</tool_call>',
    '<tool_call>{{"name": "computer_use", "arguments": {{"action": "scroll", "pixels": {2}, '
    '"coordinate": [{0}, {1}]}}}}</tool_call>',
    '<tool_call>{{"name": "computer_use", "arguments": {{"action": "type", "text": {s}}}}}'
    "</tool_call>",
    "CLICK(box=[[{0},{1},{2},{3}]])", "SCROLL_DOWN(box=[[{0},{1},{2},{3}]], step_count={2})",
)  # fmt: skip


@st.composite
def model_texts(draw: st.DrawFn) -> str:
    """A model's answer in one of the forms the readers know, holding nasty numbers and
    strings, or any text at all."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(max_size=60) | strings)
    form = draw(st.sampled_from(_TEXT_FORMS))
    nums = [draw(number_texts) for _ in range(4)]
    s = json_text(draw(strings))
    return form.format(*nums, s=s, n=draw(st.sampled_from(TOOL_NAMES[:6])) or "x",
                       a=json_text(draw(tool_args)))  # fmt: skip


_OPENAI_TYPES = ("click", "double_click", "drag", "keypress", "type", "scroll", "move", "wait",
                 "screenshot", "triple_click", "", "ＡＢＣ")  # fmt: skip
openai_actions = st.fixed_dictionaries(
    {"type": st.sampled_from(_OPENAI_TYPES) | strings},
    optional={
        "x": numbers, "y": numbers, "scroll_x": numbers, "scroll_y": numbers,
        "button": st.sampled_from(["left", "right", "wheel"]) | strings,
        "keys": st.lists(strings, max_size=3) | json_values, "text": strings | json_values,
        "path": st.lists(st.fixed_dictionaries({"x": numbers, "y": numbers}), max_size=3)
        | json_values,
    },
)  # fmt: skip
_ANTHROPIC_ACTIONS = ("left_click", "right_click", "double_click", "left_click_drag", "type",
                      "key", "scroll", "mouse_move", "screenshot", "zoom", "", "ＡＢ")  # fmt: skip
anthropic_inputs = st.fixed_dictionaries(
    {"action": st.sampled_from(_ANTHROPIC_ACTIONS) | strings},
    optional={
        "coordinate": st.lists(numbers, min_size=2, max_size=2) | json_values,
        "start_coordinate": st.lists(numbers, min_size=2, max_size=2) | json_values,
        "text": strings | json_values, "scroll_direction": st.sampled_from(["up", "down"])
        | strings, "scroll_amount": numbers | json_values,
    },
)  # fmt: skip
