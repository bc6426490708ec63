"""The `upstream` readers reproduce the MedSPOT authors' scripts, mistakes included."""

from __future__ import annotations

import pytest

from _gpt4omini_port import extract_pixel_point, normalize_prediction
from medspot.adapters.card import ParsedAnswer
from medspot.adapters.cards import get_card, upstream_parsers

ORIG = (1920, 1080)
SENT = (1932, 1092)


def up(name: str, text: str) -> ParsedAnswer:
    return get_card(name).upstream.parse(text, SENT, ORIG)


def pt(ans: ParsedAnswer) -> tuple[float, float] | None:
    return None if ans.point is None else (ans.point.x, ans.point.y)


GPT_TRICKY = [
    "(512, 38)",
    "(960,540)",
    "[960, 540]",
    "x=100, y=200",
    "X: 100; Y: 200",
    "The element is at 640 360",
    "Click coordinates: 12,34",
    "format that 12 34",  # "at" inside "format"/"that" triggers pattern 5
    "I'd click the top menu around 300 and 20",
    "(1920, 1080)",
    "(1921, 1080)",  # outside -> no prediction
    "[18, 30, 29, 52]",  # box: pattern 2 fails (4 numbers), pattern 6 takes 18, 30
    "(0.5, 0.25)",
    "No idea.",
    "",
    "coordinate 123456 7",
    "(12.5, 40.)",
    "x=3 y=4",
    "point: 100-200",
]


@pytest.mark.parametrize("text", GPT_TRICKY)
@pytest.mark.parametrize("name", ["gpt-4o-mini", "gpt-5"])
def test_gpt_upstream_matches_their_script(name: str, text: str) -> None:
    w, h = ORIG
    theirs = normalize_prediction(extract_pixel_point(text), w, h)
    ours = up(name, text)
    if theirs is None:
        assert ours.point is None
    else:
        assert pt(ours) == pytest.approx((theirs[0] / w, theirs[1] / h))


# (card, text, expected (x, y) or None), under the upstream style; worked out from their scripts.
UPSTREAM_LINES: list[tuple[str, str, tuple[float, float] | None]] = [
    # GPT: their pixel-point script
    ("gpt-4o-mini", "[18, 30, 29, 52]", (18 / 1920, 30 / 1080)),
    ("gpt-4o-mini", "format that 12 34", (12 / 1920, 34 / 1080)),
    ("gpt-4o-mini", "(1921, 1080)", None),
    # UI-TARS: a box's top-left, fractions; case-sensitive CLICK(x, y) first.
    ("ui-tars-1.5-7b", "click(start_box='[190,30,236,62]')", (190 / 1920, 30 / 1080)),
    ("ui-tars-1.5-7b", "(212,46)", (212 / 1920, 46 / 1080)),
    ("ui-tars-7b-sft", "(0.25,0.5)", (0.25, 0.5)),
    ("ui-tars-1.5-7b", "CLICK(96, 54) or (1, 2)", (0.05, 0.05)),
    ("ui-tars-1.5-7b", "Action: finished()", None),
    # UGround: / the original size, clamped.
    ("uground-v1-7b", "(235, 512)", (235 / 1920, 512 / 1080)),
    ("uground-v1-7b", "(0.2, 0.4)", (0.2, 0.4)),
    ("uground-v1-7b", "(2500, 40)", (1.0, 40 / 1080)),
    # Qwen2.5-VL: pixels of the resized frame read as original pixels, not clamped.
    ("qwen2.5-vl-7b", "(1932, 46)", (1932 / 1920, 46 / 1080)),
    # Qwen2-VL: the native box's first pair (top-left), / W, H, clamped.
    ("qwen2-vl-7b", "File menu(5,12),(31,40)", (5 / 1920, 12 / 1080)),
    # Qwen3-VL: / 1000, not clamped.
    ("qwen3-vl-8b", "(1100, 42)", (1.1, 0.042)),
    ("qwen3-vl-8b", '[{"point_2d": [110, 42]}]', None),
    # OS-Atlas
    ("os-atlas-7b", "File menu(10,20),(50,44)", (0.01, 0.02)),
    ("os-atlas-7b", "[[10,20,50,44]]", (0.03, 0.032)),
    ("os-atlas-7b", "[[300, 1200]]", (0.3, 1.0)),
    # SeeClick
    ("seeclick", "(0.17,0.06)", (0.17, 0.06)),
    ("seeclick", "(0.12,0.03,0.22,0.09)", (0.17, 0.06)),
    ("seeclick", "<ref>x</ref><box>(120,30),(220,90)</box>", (0.17, 0.06)),
    ("seeclick", "(0.17,0.06,0.2)", None),
    ("seeclick", "a bbox somewhere", None),  # "box" with no <box>: IndexError
    ("seeclick", "1.2.3", (1.0, 1.0)),  # [1.2, 3.0], clamped
    # CogAgent; HOVER is not CLICK: their fallback takes the first [[...]], the status box.
    (
        "cogagent-9b",
        "Status: window[[0, 2, 998, 905]]\nGrounded Operation: CLICK(box=[[12,31,58,52]])",
        (0.035, 0.0415),
    ),
    (
        "cogagent-9b",
        "Status: window[[0, 2, 998, 905]]\nGrounded Operation: HOVER(box=[[12,31,58,52]])",
        (0.499, 0.4535),
    ),
    ("cogagent-9b", "DOUBLE_CLICK(box=[[12,31,58,52]])", (0.035, 0.0415)),
    # DeepSeek-VL2
    ("deepseek-vl2", "(0.11,0.04)", (0.11, 0.04)),
    ("deepseek-vl2", "<|det|>[[10, 20, 50, 44]]<|/det|>", None),
    ("deepseek-vl2", "(192, 0.5)", (0.1, 0.5 / 1080)),
    # Aguvis: pixels in its resized frame. smart_resize(1920, 1080, 28, 256*784, 1280*784):
    # 1932x1092 = 2.1 Mpx > 1003520; beta = sqrt(2073600/1003520) = 1.43746 -> 1335.7 -> 1316;
    # 751.3 -> 728.
    ("aguvis-7b-720p", "pyautogui.click(x=658, y=364)", (0.5, 0.5)),
    ("aguvis-7b-720p", "pyautogui.click(x=0.11, y=0.05)", (0.11, 0.05)),
    # General models
    ("gemma-3-27b", "(960, 540)", (0.5, 0.5)),
    ("gemma-3-27b", "(110, 42)", (110 / 1920, 42 / 1080)),
    # Llama's 3-way guess: fractions, percent, pixels.
    ("llama-3.2-11b-vision", "(0.5, 0.5)", (0.5, 0.5)),
    ("llama-3.2-11b-vision", "(50, 25)", (0.5, 0.25)),
    ("llama-3.2-11b-vision", "(960, 540)", (0.5, 0.5)),
    ("mistral-small-3.1-24b", "(960, 2000)", (0.5, 1.0)),
]


@pytest.mark.parametrize(("name", "text", "expected"), UPSTREAM_LINES)
def test_upstream_lines(name: str, text: str, expected: tuple[float, float] | None) -> None:
    ans = up(name, text)
    if expected is None:
        assert ans.point is None
    else:
        assert pt(ans) == pytest.approx(expected)


def test_gpt_upstream_parse_error_is_flagged() -> None:
    # Their script would crash on float("1.2.3"); the port says no prediction and flags it.
    crash = up("gpt-4o-mini", "(1.2.3, 4)")
    assert crash.point is None and "upstream_parse_error" in crash.flags


def test_gui_actor_upstream_clamps_and_keeps_all() -> None:
    ans = up("gui-actor-7b", "[(1.2, 0.5), (0.3, -0.1)]")
    assert pt(ans) == (1.0, 0.5)
    assert [(p.x, p.y) for p in ans.extra_points] == [(0.3, 0.0)]
    assert up("gui-actor-7b", "[]").point is None


def test_upstream_module_lists_every_script() -> None:
    for name in [
        "aguvis",
        "cogagent",
        "deepseek",
        "gemma3",
        "gpt",
        "gui_actor",
        "llama",
        "mistral",
        "osatlas",
        "qwen2_5vl",
        "qwen2vl",
        "qwen3vl",
        "seeclick",
        "tars",
        "uground",
    ]:
        assert callable(getattr(upstream_parsers, name))
