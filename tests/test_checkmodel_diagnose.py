"""`check-model` names a re-resize, a padded canvas and swapped axes,
each on synthetic screens answered by the test server as a model with that defect would."""

from __future__ import annotations

import json
from typing import Any

import pytest

from medspot.adapters.card import ResizeSpec
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE, smart_resize_pure
from medspot.cli import main
from medspot.commands.check_model_diagnose import (
    Observation,
    diagnose,
    square_fill,
    tiled_canvas_fill,
)
from medspot.commands.check_model_fit import SCREENS, CheckScreen
from medspot.geometry import Point
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

SERVER_MAX = 1280 * 28 * 28  # a vLLM server started with this max_pixels


def _screen_for(size: tuple[int, int]) -> CheckScreen:
    """The check screen an image of `size` was made from (as is, or smart-resized)."""
    for s in SCREENS:
        if size in (s.size, smart_resize_pure(*s.size, QWEN_DEFAULT_RESIZE)):
            return s
    raise AssertionError(f"no check screen of size {size}")


def _check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main([*argv, "--json"])
    report = json.loads(capsys.readouterr().out)
    return code, report, ""


def re_resized_answer(req: SeenRequest) -> str:
    """Qwen2.5-VL behind a server that re-resizes to SERVER_MAX: pixels of the smaller image."""
    assert req.image is not None
    sent = req.image.size
    s = _screen_for(sent)
    seen = smart_resize_pure(*sent, ResizeSpec(28, 4 * 28 * 28, SERVER_MAX))
    t = s.target
    return f'[{{"point_2d": [{round(t.x * seen[0])}, {round(t.y * seen[1])}], "label": "b"}}]'


def padded_answer(req: SeenRequest) -> str:
    """rel1000 relative to Llama 3.2 Vision's padded tile canvas."""
    assert req.image is not None
    s = _screen_for(req.image.size)
    fx, fy = tiled_canvas_fill(*req.image.size)
    return f"({round(s.target.x * fx * 1000)}, {round(s.target.y * fy * 1000)})"


def swapped_answer(req: SeenRequest) -> str:
    assert req.image is not None
    t = _screen_for(req.image.size).target
    return f"({round(t.y * 1000)}, {round(t.x * 1000)})"


def test_re_resize_is_named_with_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAITestServer(answer=re_resized_answer) as srv:
        argv = ["check-model", "qwen2.5-vl-7b", "--backend", "openai", "--base-url", srv.base_url]
        code = main(argv)
        text = capsys.readouterr().out
        code_j, rep, _ = _check(argv, capsys)
    assert code == 1 and code_j == 1
    d = rep["diagnosis"]
    assert d["cause"] == "re-resize"
    assert abs(d["max_pixels"] / SERVER_MAX - 1) < 0.03
    assert "cause: re-resize" in text and "max_pixels ~ 12" in text
    assert "16384 x 28 x 28" in text  # what the card sends


def test_padded_canvas_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAITestServer(answer=padded_answer) as srv:
        code, rep, _ = _check(["check-model", "openai:llama", "--base-url", srv.base_url], capsys)
    assert code == 1
    assert rep["diagnosis"]["cause"] == "padded canvas"
    assert "560-px tiles" in rep["diagnosis"]["detail"]
    assert abs(rep["fit_x"]["scale"] - 1) < 0.05  # x untouched on 16:9 screens ...
    assert rep["fit_y"]["scale"] < 0.75  # ... y squeezed into the top of the canvas


def test_swapped_axes_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAITestServer(answer=swapped_answer) as srv:
        code, rep, _ = _check(["check-model", "openai:gemma", "--base-url", srv.base_url], capsys)
    assert code == 1
    assert rep["diagnosis"]["cause"] == "swapped axes"
    sx = rep["fit_swapped_x"]
    assert abs(sx["scale"] - 1) < 0.02 and abs(sx["offset"]) < 0.02


def test_right_answers_name_no_cause(capsys: pytest.CaptureFixture[str]) -> None:
    def right(req: SeenRequest) -> str:
        assert req.image is not None
        t = _screen_for(req.image.size).target
        return f"({round(t.x * 1000)}, {round(t.y * 1000)})"

    with OpenAITestServer(answer=right) as srv:
        code, rep, _ = _check(["check-model", "openai:ok", "--base-url", srv.base_url], capsys)
    assert code == 0
    assert rep["diagnosis"]["cause"] is None
    assert rep["diagnosis"]["detail"] == "no systematic error"


def test_tiled_canvas_fill_is_transformers_mllama() -> None:
    m = pytest.importorskip("transformers.models.mllama.image_processing_pil_mllama")
    for w, h in [(1920, 1080), (1024, 768), (800, 1280), (400, 300), (3000, 500), (560, 560)]:
        ch, cw = m.get_optimal_tiled_canvas(
            image_height=h, image_width=w, max_image_tiles=4, tile_size=560
        )
        nh, nw = m.get_image_size_fit_to_canvas(
            image_height=h, image_width=w, canvas_height=ch, canvas_width=cw, tile_size=560
        )
        assert tiled_canvas_fill(w, h) == pytest.approx((nw / cw, nh / ch))
    assert tiled_canvas_fill(1920, 1080) == pytest.approx((1.0, 0.5625))
    assert square_fill(1920, 1080) == pytest.approx((1.0, 0.5625))


def test_diagnose_needs_answers_and_pixel_conventions_for_re_resize() -> None:
    obs = [Observation(Point(0.5, 0.5), Point(0.5, 0.5), (100, 100))] * 2
    assert diagnose(obs, "rel1000").cause is None
    # A uniformly shrunk pixel answer under rel1000: a re-resize is not considered there.
    obs = [
        Observation(s.target, Point(s.target.x * 0.6, s.target.y * 0.6), s.size) for s in SCREENS
    ]
    d = diagnose(obs, "rel1000")
    assert "re-resize" not in d.rmse and d.cause is None


def _tokens(size: tuple[int, int], max_pixels: int | None) -> int:
    w, h = size
    if max_pixels is not None:
        w, h = smart_resize_pure(w, h, ResizeSpec(28, 4 * 28 * 28, max_pixels))
    return (w // 28) * (h // 28)


@pytest.mark.parametrize("server_max", [SERVER_MAX, None])
def test_the_servers_token_counts_tell_what_it_saw(
    capsys: pytest.CaptureFixture[str], server_max: int | None
) -> None:
    """Item 2, served path: vLLM does not report its processor's max_pixels, but a Qwen-style
    model's prompt token count includes (w/28)*(h/28) image tokens: check-model reads it."""

    def usage(req: SeenRequest, answer: str) -> tuple[int, int]:
        assert req.image is not None
        return 20 + len(req.text.split()) + _tokens(req.image.size, server_max), 5

    answer = re_resized_answer if server_max else _right_qwen_answer
    with OpenAITestServer(answer=answer, usage=usage) as srv:
        argv = ["check-model", "qwen2.5-vl-7b", "--backend", "openai", "--base-url", srv.base_url]
        _, rep, _ = _check(argv, capsys)
    d = rep["diagnosis"]
    if server_max is None:
        assert d["server_seen"] == "as sent" and d["server_max_pixels"] is None
        assert d["cause"] is None
    else:
        assert d["server_seen"] == "re-resized"
        assert abs(d["server_max_pixels"] / SERVER_MAX - 1) < 0.03
        assert "prompt token counts say" in d["detail"]
    assert all(s["input_tokens"] for s in rep["screens"])


def _right_qwen_answer(req: SeenRequest) -> str:
    assert req.image is not None
    t = _screen_for(req.image.size).target
    w, h = req.image.size
    return f'[{{"point_2d": [{round(t.x * w)}, {round(t.y * h)}], "label": "b"}}]'
