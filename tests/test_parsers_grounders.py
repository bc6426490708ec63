"""The parsers of the grounding cards added after the paper (Holo2, UI-Venus-1.5, MAI-UI, GTA1
and GTA1 on OpenCUA, GUI-Owl-1.5): realistic answers in each model's own syntax (the forms their
repositories' own readers accept), awkward ones, and the expected points worked out by hand."""

from __future__ import annotations

import pytest

from medspot.adapters.card import ParsedAnswer
from medspot.adapters.cards import get_card
from medspot.adapters.cards.gta1 import GTA1_RESIZE, OPENCUA_RESIZE
from medspot.adapters.cards.ui_venus import REFUSED
from medspot.adapters.conventions import smart_resize
from medspot.adapters.parsing import OUT_OF_IMAGE, UNCLOSED_THINK

ORIG = (1920, 1080)
GTA1_SENT = smart_resize(1920, 1080, GTA1_RESIZE)
CUA_SENT = smart_resize(1920, 1080, OPENCUA_RESIZE)  # (1932, 1092)


def cua(x: float, y: float) -> tuple[float, float]:
    return (x / CUA_SENT[0], y / CUA_SENT[1])


def parse(name: str, text: str, sent: tuple[int, int] = ORIG) -> ParsedAnswer:
    return get_card(name).native.parse(text, sent, ORIG)


MAI_THINK = (
    "<grounding_think>The instruction asks for the File menu, which sits at the far left of the "
    "menu bar at the top of the window, above the toolbar [120,300].</grounding_think>\n"
)
OWL_CALL = '<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "{a}", "coordinate": {c}}}}}\n</tool_call>'  # noqa: E501

# (card, answer, sent size, expected normalised (x, y) or None)
CASES: list[tuple[str, str, tuple[int, int], tuple[float, float] | None]] = [
    # Holo2: JSON click on 0..1000 (H Company's localization prompt)
    ("holo2", '{"x": 352, "y": 348}', ORIG, (0.352, 0.348)),
    ("holo2", '```json\n{"x": 12, "y": 40}\n```', ORIG, (0.012, 0.040)),
    (
        "holo2",
        '<think>\nThe File menu is top left.\n</think>\n{"x": 15, "y": 22}',
        ORIG,
        (0.015, 0.022),
    ),
    ("holo2", "Click(352, 348)", ORIG, (0.352, 0.348)),  # Holo1's older form
    ("holo2", '{"x": 352}', ORIG, None),  # half a click is no click
    ("holo2", "I cannot find that element.", ORIG, None),
    ("holo2", "<think>\nlooking at the toolbar", ORIG, None),  # thinking cut off
    # UI-Venus-1.5: [x,y] on 0..1000; boxes and point pairs as their centre
    ("ui-venus-1.5", "[512,38]", ORIG, (0.512, 0.038)),
    ("ui-venus-1.5", "[ 512, 38 ]", ORIG, (0.512, 0.038)),
    ("ui-venus-1.5", "[100,200,300,400]", ORIG, (0.2, 0.3)),
    ("ui-venus-1.5", "[100,200],[300,400]", ORIG, (0.2, 0.3)),
    ("ui-venus-1.5", "[100, 200], [300, 400]", ORIG, (0.2, 0.3)),
    ("ui-venus-1.5", "[-1,-1]", ORIG, None),  # infeasible: refused
    ("ui-venus-1.5", "The answer is [87,41].", ORIG, (0.087, 0.041)),
    ("ui-venus-1.5", "[1.2.3, 4]", ORIG, None),
    # MAI-UI: the point inside <answer>, on 0..1000 (the evaluation scripts)
    ("mai-ui", MAI_THINK + '<answer>\n{"coordinate": [23,41]}\n</answer>', ORIG, (0.023, 0.041)),
    ("mai-ui", '<answer>{"coordinate": [500, 250]}</answer>', ORIG, (0.5, 0.25)),
    ("mai-ui", MAI_THINK + "<answer>\n", ORIG, None),  # the reasoning's numbers are not clicks
    ("mai-ui", '{"coordinate": [23,41]}', ORIG, (0.023, 0.041)),  # no tags: the pair
    ("mai-ui", "", ORIG, None),
    # GTA1: (x,y) in pixels of the image sent (smart-resized, 28, 3136..4096x2160)
    ("gta1", "(640,360)", GTA1_SENT, (640 / GTA1_SENT[0], 360 / GTA1_SENT[1])),
    ("gta1", "(640, 360)", GTA1_SENT, (640 / GTA1_SENT[0], 360 / GTA1_SENT[1])),
    ("gta1", "The element is at (12,7).", GTA1_SENT, (12 / GTA1_SENT[0], 7 / GTA1_SENT[1])),
    ("gta1", "(x,y)", GTA1_SENT, None),
    # GTA1 on OpenCUA: OpenCUA's pyautogui call in pixels of the image sent (smart-resized, 28,
    # 3136..12845056); the first form is OpenCUA model/README.md's "Expected result"
    ("gta1-opencua", "```python\npyautogui.click(x=1443, y=343)\n```", CUA_SENT, cua(1443, 343)),
    ("gta1-opencua", "pyautogui.click(x=960, y=324)", CUA_SENT, cua(960, 324)),
    ("gta1-opencua", "pyautogui.click(960, 324)", CUA_SENT, cua(960, 324)),
    ("gta1-opencua", "pyautogui.doubleClick(x=12, y=7)", CUA_SENT, cua(12, 7)),
    (
        "gta1-opencua",
        "The Save button [900, 40] is in the toolbar.\n```python\npyautogui.click(x=37, y=92)\n```",
        CUA_SENT,
        cua(37, 92),
    ),
    ("gta1-opencua", "pyautogui.write(message='hello')", CUA_SENT, None),
    ("gta1-opencua", "pyautogui.click(x=1443)", CUA_SENT, None),
    ("gta1-opencua", "", CUA_SENT, None),
    # GUI-Owl-1.5: the last <tool_call>'s coordinate on 0..1000
    ("gui-owl-1.5", OWL_CALL.format(a="left_click", c="[503, 211]"), ORIG, (0.503, 0.211)),
    (
        "gui-owl-1.5",
        OWL_CALL.format(a="mouse_move", c="[10, 10]")
        + "\n"
        + OWL_CALL.format(a="left_click", c="[503, 211]"),
        ORIG,
        (0.503, 0.211),
    ),
    (
        "gui-owl-1.5",
        "<think>\nThe Save button [900, 40] is in the toolbar.\n</think>\n"
        + OWL_CALL.format(a="left_click", c="[37, 92]"),
        ORIG,
        (0.037, 0.092),
    ),
    (
        "gui-owl-1.5",
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "terminate", '
        '"status": "failure"}}\n</tool_call>',
        ORIG,
        None,
    ),
    ("gui-owl-1.5", "(503, 211)", ORIG, (0.503, 0.211)),
]


@pytest.mark.parametrize(("name", "text", "sent", "want"), CASES)
def test_answers(
    name: str, text: str, sent: tuple[int, int], want: tuple[float, float] | None
) -> None:
    ans = parse(name, text, sent)
    if want is None:
        assert ans.point is None, ans
    else:
        assert ans.point is not None, ans
        assert ans.point.x == pytest.approx(want[0], abs=1e-6)
        assert ans.point.y == pytest.approx(want[1], abs=1e-6)


def test_ui_venus_refusal_is_flagged_not_a_click() -> None:
    ans = parse("ui-venus-1.5", "[-1,-1]")
    assert ans.point is None and REFUSED in ans.flags
    assert REFUSED not in parse("ui-venus-1.5", "[-1,40]").flags  # one negative number: kept
    assert OUT_OF_IMAGE in parse("ui-venus-1.5", "[-1,40]").flags


def test_extra_candidates_are_kept_for_audit() -> None:
    ans = parse("mai-ui", MAI_THINK + '<answer>\n{"coordinate": [23,41]}\n</answer>')
    assert ans.point is not None and len(ans.extra_points) == 1  # the reasoning's [120,300]
    assert ans.extra_points[0].x == pytest.approx(0.12)


def test_cut_thinking_is_flagged() -> None:
    assert UNCLOSED_THINK in parse("holo2", "<think>\nlooking at the toolbar").flags


def test_frames_are_the_declared_ones() -> None:
    """The same numbers land where each card's convention puts them: nothing is guessed."""
    holo = parse("holo2", '{"x": 500, "y": 500}')
    gta = parse("gta1", "(500,500)", GTA1_SENT)
    assert holo.point is not None and gta.point is not None
    assert (holo.point.x, holo.point.y) == (0.5, 0.5)
    assert gta.point.x == pytest.approx(500 / GTA1_SENT[0])  # pixels of the sent image


def test_gta1_releases_read_their_own_frames() -> None:
    """The July GTA1 answers `(x,y)`; the October one (OpenCUA) a pyautogui call: each card
    reads its own release's form in pixels of the image it sent."""
    july = parse("gta1", "(640,360)", GTA1_SENT)
    october = parse("gta1-opencua", "pyautogui.click(x=640, y=360)", CUA_SENT)
    assert july.point is not None and october.point is not None
    assert july.point.x == pytest.approx(640 / GTA1_SENT[0])
    assert october.point.x == pytest.approx(640 / CUA_SENT[0])
    second = parse("gta1-opencua", "pyautogui.click(x=10, y=20)\npyautogui.click(x=50, y=60)")
    assert second.point is not None and len(second.extra_points) == 1  # the first call wins
