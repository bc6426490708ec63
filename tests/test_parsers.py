"""Every **Tests** line of models.md, per card, under the native style; plus the shared
parsing rules of models.md 1.2-1.3 and awkward outputs for every card."""

from __future__ import annotations

import pytest

from medspot.adapters.card import ParsedAnswer
from medspot.adapters.cards import CARDS, get_card
from medspot.adapters.cards.gui_actor import format_points
from medspot.adapters.parsing import (
    clean_text,
    find_candidates,
    parse_number,
    strip_think,
)

ORIG = (1920, 1080)
RESIZED = (1932, 1092)  # smart_resize(1920, 1080), factor 28


def native(name: str, text: str, sent: tuple[int, int] = ORIG) -> ParsedAnswer:
    return get_card(name).native.parse(text, sent, ORIG)


def assert_point(ans: ParsedAnswer, x: float, y: float, tol: float = 1e-4) -> None:
    assert ans.point is not None, ans
    assert ans.point.x == pytest.approx(x, abs=tol)
    assert ans.point.y == pytest.approx(y, abs=tol)


# (card, text, sent size, expected (x, y) or None); expected worked out by hand.
SPEC_LINES: list[tuple[str, str, tuple[int, int], tuple[float, float] | None]] = [
    # GPT-4o-mini (rel1000)
    ("gpt-4o-mini", "(512, 38)", ORIG, (0.512, 0.038)),
    ("gpt-4o-mini", "(512, 38).", ORIG, (0.512, 0.038)),
    ("gpt-4o-mini", "The File menu is at the top left.\n(23, 41)", ORIG, (0.023, 0.041)),
    ("gpt-4o-mini", "```\n(23, 41)\n```", ORIG, (0.023, 0.041)),
    ("gpt-4o-mini", "[18, 30, 29, 52]", ORIG, ((18 + 29) / 2000, (30 + 52) / 2000)),
    ("gpt-4o-mini", "I cannot see a File menu.", ORIG, None),
    ("gpt-4o-mini", "(23, 41) or (60, 41)", ORIG, (0.023, 0.041)),
    # GPT-5: as GPT-4o-mini, plus empty
    ("gpt-5", "(512, 38)", ORIG, (0.512, 0.038)),
    ("gpt-5", "(512, 38).", ORIG, (0.512, 0.038)),
    ("gpt-5", "The File menu is at the top left.\n(23, 41)", ORIG, (0.023, 0.041)),
    ("gpt-5", "```\n(23, 41)\n```", ORIG, (0.023, 0.041)),
    ("gpt-5", "[18, 30, 29, 52]", ORIG, (0.0235, 0.041)),
    ("gpt-5", "I cannot see a File menu.", ORIG, None),
    ("gpt-5", "(23, 41) or (60, 41)", ORIG, (0.023, 0.041)),
    ("gpt-5", "", ORIG, None),
    # GUI-Actor (pointer points rendered by the backend)
    ("gui-actor-7b", "[(0.0312, 0.0417), (0.51, 0.9)]", ORIG, (0.0312, 0.0417)),
    ("gui-actor-7b", "[]", ORIG, None),
    # UI-TARS-1.5 (sent 1932x1092)
    (
        "ui-tars-1.5-7b",
        "Action: click(start_box='<|box_start|>(197,525)<|box_end|>')",
        RESIZED,
        (197 / 1932, 525 / 1092),
    ),
    ("ui-tars-1.5-7b", "Action: click(start_box='(212,46)')", RESIZED, (212 / 1932, 46 / 1092)),
    (
        "ui-tars-1.5-7b",
        "Thought: The File menu is top left.\nAction: click(start_box='(212,46)')",
        RESIZED,
        (0.1097, 0.0421),
    ),
    ("ui-tars-1.5-7b", "Action: click(point='<point>212 46</point>')", RESIZED, (0.1097, 0.0421)),
    ("ui-tars-1.5-7b", "Action: left_double(start_box='(212,46)')", RESIZED, (0.1097, 0.0421)),
    (
        "ui-tars-1.5-7b",
        "Action: click(start_box='[190,30,236,62]')",
        RESIZED,
        (213 / 1932, 46 / 1092),
    ),
    ("ui-tars-1.5-7b", "Action: finished(content='')", RESIZED, None),
    # UI-TARS-7B-SFT (rel1000)
    ("ui-tars-7b-sft", "(235,512)", ORIG, (0.235, 0.512)),
    ("ui-tars-7b-sft", "(235, 512)", ORIG, (0.235, 0.512)),
    (
        "ui-tars-7b-sft",
        "Action: click(start_box='<|box_start|>(235,512)<|box_end|>')",
        ORIG,
        (0.235, 0.512),
    ),
    ("ui-tars-7b-sft", "235,512", ORIG, (0.235, 0.512)),
    ("ui-tars-7b-sft", "The element is the File menu.", ORIG, None),
    # CogAgent (rel1000 box -> centre)
    (
        "cogagent-9b",
        "Action: Click File in the top menu bar.\nGrounded Operation: "
        "CLICK(box=[[012,031,058,052]], element_type='Menu', element_info='File')\n<<一般操作>>",
        ORIG,
        (0.035, 0.0415),
    ),
    (
        "cogagent-9b",
        "Status: ...window[[0, 2, 998, 905]]...\nGrounded Operation: "
        "CLICK(box=[[012,031,058,052]], element_type='Menu')",
        ORIG,
        (0.035, 0.0415),
    ),
    ("cogagent-9b", "Grounded Operation: HOVER(box=[[12,31,58,52]])", ORIG, (0.035, 0.0415)),
    ("cogagent-9b", "Grounded Operation: KEY_PRESS(key='F11')", ORIG, None),
    # Qwen2-VL (rel1000 box)
    (
        "qwen2-vl-7b",
        "<|object_ref_start|>File menu<|object_ref_end|><|box_start|>(5,12),(31,40)<|box_end|>",
        ORIG,
        (0.018, 0.026),
    ),
    ("qwen2-vl-7b", "File menu(5,12),(31,40)", ORIG, (0.018, 0.026)),
    ("qwen2-vl-7b", "(18,26)", ORIG, (0.018, 0.026)),
    # Qwen2.5-VL (abs_resized, sent 1932x1092)
    (
        "qwen2.5-vl-7b",
        '```json\n[{"point_2d": [212, 46], "label": "File menu"}]\n```',
        RESIZED,
        (0.1097, 0.0421),
    ),
    (
        "qwen2.5-vl-7b",
        '[{"bbox_2d": [190, 30, 236, 62], "label": "File"}]',
        RESIZED,
        (0.1102, 0.0421),
    ),
    ("qwen2.5-vl-7b", '{"bbox_2d": [190, 30, 236, 62]}', RESIZED, (0.1102, 0.0421)),
    (
        "qwen2.5-vl-7b",
        '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [212, 46]}}</tool_call>',
        RESIZED,
        (0.1097, 0.0421),
    ),
    ("qwen2.5-vl-7b", "(212, 46)", RESIZED, (0.1097, 0.0421)),
    # Qwen3-VL (rel1000)
    ("qwen3-vl-8b", '[{"point_2d": [110, 42], "label": "File menu"}]', ORIG, (0.110, 0.042)),
    ("qwen3-vl-8b", '[{"bbox_2d": [98, 30, 122, 54], "label": "File menu"}]', ORIG, (0.110, 0.042)),
    (
        "qwen3-vl-8b",
        '<think>The File menu is in the toolbar.</think>\n[{"point_2d": [110, 42]}]',
        ORIG,
        (0.110, 0.042),
    ),
    ("qwen3-vl-8b", "(110, 42)", ORIG, (0.110, 0.042)),
    ("qwen3-vl-8b", '[{"point_2d": [110, 42]}, {"point_2d": [400, 42]}]', ORIG, (0.110, 0.042)),
    # DeepSeek-VL2 (rel999 box)
    (
        "deepseek-vl2",
        "<|ref|>File menu<|/ref|><|det|>[[10, 20, 50, 44]]<|/det|>",
        ORIG,
        (30 / 999, 32 / 999),
    ),
    ("deepseek-vl2", "File menu[[10, 20, 50, 44]]", ORIG, (30 / 999, 32 / 999)),
    (
        "deepseek-vl2",
        "<|det|>[[10, 20, 50, 44], [600, 20, 640, 44]]<|/det|>",
        ORIG,
        (30 / 999, 32 / 999),
    ),
    # Gemma 3 (harness rel1000)
    ("gemma-3-27b", "(110, 42)", ORIG, (0.110, 0.042)),
    ("gemma-3-27b", "**(110, 42)**", ORIG, (0.110, 0.042)),
    ("gemma-3-27b", "(110,42)\n\nThe File menu is in the top-left corner.", ORIG, (0.110, 0.042)),
    ("gemma-3-27b", "(0.11, 0.04)", ORIG, (0.11, 0.04)),
    # Llama 3.2
    ("llama-3.2-11b-vision", "(110, 42)", ORIG, (0.110, 0.042)),
    ("llama-3.2-11b-vision", "x: 110, y: 42", ORIG, (0.110, 0.042)),
    ("llama-3.2-11b-vision", "(110,", ORIG, None),
    ("llama-3.2-11b-vision", "I'm unable to determine the exact location.", ORIG, None),
    # Mistral (and Ministral)
    ("mistral-small-3.1-24b", "(110, 42)", ORIG, (0.110, 0.042)),
    ("mistral-small-3.1-24b", "(110, 42)\n", ORIG, (0.110, 0.042)),
    ("mistral-small-3.1-24b", "The File menu: (110, 42).", ORIG, (0.110, 0.042)),
    ("mistral-small-3.1-24b", "(1100, 42)", ORIG, (1.1, 0.042)),
    ("ministral-3-8b", "The File menu: (110, 42).", ORIG, (0.110, 0.042)),
    # OS-Atlas (rel1000 box)
    (
        "os-atlas-7b",
        "<|object_ref_start|>File menu<|object_ref_end|><|box_start|>(10,20),(50,44)<|box_end|>"
        "<|im_end|>",
        ORIG,
        (0.030, 0.032),
    ),
    ("os-atlas-7b", "File menu(10,20),(50,44)", ORIG, (0.030, 0.032)),
    ("os-atlas-7b", "(30,32)", ORIG, (0.030, 0.032)),
    # SeeClick (rel1; Qwen-VL <box> on 0..1000)
    ("seeclick", "(0.17,0.06)", ORIG, (0.17, 0.06)),
    ("seeclick", "(0.17, 0.06).", ORIG, (0.17, 0.06)),
    ("seeclick", "(0.12,0.03,0.22,0.09)", ORIG, (0.17, 0.06)),
    ("seeclick", "<ref>add an event</ref><box>(120,30),(220,90)</box>", ORIG, (0.17, 0.06)),
    ("seeclick", "(0.17,0.06,0.2)", ORIG, None),
    # UGround (rel1000)
    ("uground-v1-7b", "(235, 512)", ORIG, (0.235, 0.512)),
    ("uground-v1-7b", "(235,512)", ORIG, (0.235, 0.512)),
    ("uground-v1-7b", "The element is at (235, 512).", ORIG, (0.235, 0.512)),
    ("uground-v1-7b", "(999, 0)", ORIG, (0.999, 0.0)),
    ("uground-v1-7b", "(235.5, 512)", ORIG, (0.2355, 0.512)),
    # Aguvis (rel1)
    ("aguvis-7b-720p", "pyautogui.click(x=0.1102, y=0.0463)", ORIG, (0.1102, 0.0463)),
    ("aguvis-7b-720p", "pyautogui.click(0.1102, 0.0463)", ORIG, (0.1102, 0.0463)),
    (
        "aguvis-7b-720p",
        "<|recipient|>os\npyautogui.click(x=0.11, y=0.05)<|diff_marker|>",
        ORIG,
        (0.11, 0.05),
    ),
    (
        "aguvis-7b-720p",
        "Thought: open the menu.\nAction: click File\npyautogui.click(x=0.11, y=0.05)",
        ORIG,
        (0.11, 0.05),
    ),
    ("aguvis-7b-720p", "pyautogui.doubleClick(x=0.11, y=0.05)", ORIG, (0.11, 0.05)),
]


@pytest.mark.parametrize(("name", "text", "sent", "expected"), SPEC_LINES)
def test_models_md_tests_lines(
    name: str, text: str, sent: tuple[int, int], expected: tuple[float, float] | None
) -> None:
    ans = native(name, text, sent)
    if expected is None:
        assert ans.point is None, ans
    else:
        assert_point(ans, *expected)


def test_second_candidate_is_kept_as_extra() -> None:
    ans = native("gpt-4o-mini", "(23, 41) or (60, 41)")
    assert ans.extra_points and ans.extra_points[0].x == pytest.approx(0.060)
    qwen3 = native("qwen3-vl-8b", '[{"point_2d": [110, 42]}, {"point_2d": [400, 42]}]')
    assert [p.x for p in qwen3.extra_points] == [pytest.approx(0.4)]
    ds = native("deepseek-vl2", "<|det|>[[10, 20, 50, 44], [600, 20, 640, 44]]<|/det|>")
    assert ds.extra_points[0].x == pytest.approx(620 / 999)


def test_harness_decimal_pair_is_rel1_and_flagged() -> None:
    ans = native("gemma-3-27b", "(0.11, 0.04)")
    assert "convention_drift" in ans.flags
    # Integers are never reinterpreted: (0, 1) stays on the 0..1000 grid.
    assert_point(native("gemma-3-27b", "(0, 1)"), 0.0, 0.001)
    # Decimals above 1 stay rel1000 and are not flagged.
    ans2 = native("gemma-3-27b", "(110.5, 42)")
    assert_point(ans2, 0.1105, 0.042)
    assert "convention_drift" not in ans2.flags


def test_native_rel1000_model_does_not_reinterpret_decimals() -> None:
    # UGround is not a harness-choice prompt: (0.5, 0.3) stays on the grid, flagged.
    ans = native("uground-v1-7b", "(0.5, 0.3)")
    assert_point(ans, 0.0005, 0.0003, tol=1e-7)
    assert "convention_drift" in ans.flags


def test_out_of_range_is_kept_and_flagged() -> None:
    ans = native("mistral-small-3.1-24b", "(1100, 42)")
    assert_point(ans, 1.1, 0.042)
    assert "out_of_image" in ans.flags
    assert_point(native("qwen3-vl-8b", "(-10, 42)"), -0.01, 0.042)


def test_aguvis_values_above_one_are_flagged_not_rescaled() -> None:
    ans = native("aguvis-7b-720p", "pyautogui.click(x=212, y=46)")
    assert_point(ans, 212.0, 46.0)
    assert "convention_drift" in ans.flags


def test_box_is_never_read_as_its_top_left() -> None:
    ans = native("os-atlas-7b", "File menu(10,20),(50,44)")
    assert ans.point is not None and ans.point.x != pytest.approx(0.010)


def test_gui_actor_format_points_round_trips() -> None:
    text = format_points([(0.0312, 0.0417), (0.51, 0.9), (0.25, 0.125)])
    ans = native("gui-actor-7b", text)
    assert_point(ans, 0.0312, 0.0417)
    assert [(p.x, p.y) for p in ans.extra_points] == [(0.51, 0.9), (0.25, 0.125)]
    assert format_points([]) == "[]"


# --- awkward outputs, every card ---------------------------------------------------------

AWKWARD_NONE = [
    "",
    "   \n\t ",
    "<think>The File menu should be at the top left, around (110, 42).</think>",
    "(1.2.3, 4)",
    "The button is 110 pixels from the left and 42 from the top.",
    "Click at 110, 42 please",
    "```\n```",
]


@pytest.mark.parametrize("name", sorted(CARDS))
@pytest.mark.parametrize("text", AWKWARD_NONE)
def test_awkward_outputs_give_no_prediction(name: str, text: str) -> None:
    assert native(name, text, RESIZED).point is None


@pytest.mark.parametrize("name", sorted(CARDS))
def test_malformed_number_is_flagged_not_crashing(name: str) -> None:
    ans = native(name, "(1.2.3, 4)", RESIZED)
    assert ans.point is None
    assert "malformed_number" in ans.flags


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o-mini",
        "gemma-3-27b",
        "qwen3-vl-8b",
        "uground-v1-7b",
        "ui-tars-7b-sft",
        "os-atlas-7b",
        "cogagent-9b",
    ],
)
def test_rel1000_cards_accept_fences_bold_think_and_tokens(name: str) -> None:
    for text in [
        "```json\n(110, 42)\n```",
        "**(110, 42)**",
        "`(110, 42)`",
        "<think>maybe (5, 5)?</think>(110, 42)",
        "(110, 42)<|im_end|>",
        "(0110, 042)",
    ]:
        assert_point(native(name, text), 0.110, 0.042)


# --- shared helpers ----------------------------------------------------------------------


def test_parse_number() -> None:
    assert parse_number("086") == 86.0
    assert parse_number("12.") == 12.0
    assert parse_number(".5") == 0.5
    assert parse_number("-3.5") == -3.5
    assert parse_number("1.2.3") is None
    assert parse_number(".") is None
    assert parse_number("1e3") is None


def test_strip_think() -> None:
    assert strip_think("<think>a (1,2)</think>\n(3, 4)") == ("\n(3, 4)", False)
    assert strip_think("reasoning (1,2)\n</think>(3, 4)") == ("(3, 4)", False)
    # An unclosed leading think keeps only its last line, flagged.
    assert strip_think("<think>looking at (1,2)\nso the answer is\n(3, 4)") == ("(3, 4)", True)
    assert strip_think("<think>cut off before any answer") == ("", True)


def test_clean_text_removes_decorations() -> None:
    text, flags = clean_text("```json\n**(1, 2)**<|im_end|>\n```")
    assert text == "(1, 2)" and flags == ()
    assert clean_text(None) == ("", ())


def test_find_candidates_shapes() -> None:
    cands, bad = find_candidates("a (1, 2) b [3,4] x=5, y=6 then x: 7 y: 8 and (1,2,3,4)")
    assert not bad
    assert [(c.x, c.y) for c in cands] == [(1, 2), (3, 4), (5, 6), (7, 8), (2, 3)]
    assert cands[-1].box == (1, 2, 3, 4)


def test_bare_pair_only_as_the_whole_answer() -> None:
    assert [(c.x, c.y) for c in find_candidates(" 110, 42. ")[0]] == [(110, 42)]
    assert find_candidates("the point is 110, 42")[0] == []


def test_box_pairs_only_when_asked() -> None:
    with_pairs, _ = find_candidates("(10,20),(50,44)", box_pairs=True)
    assert [(c.x, c.y) for c in with_pairs] == [(30, 32)]
    without, _ = find_candidates("(10,20),(50,44)")
    assert [(c.x, c.y) for c in without] == [(10, 20), (50, 44)]


def test_three_numbers_are_malformed() -> None:
    cands, bad = find_candidates("(0.17,0.06,0.2)")
    assert cands == [] and bad
