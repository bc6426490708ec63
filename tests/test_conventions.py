"""Coordinate conventions and smart_resize (models.md 1.1)."""

from __future__ import annotations

import ast
import importlib.util
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medspot.adapters.base import Convention
from medspot.adapters.card import ResizeSpec
from medspot.adapters.conventions import (
    QWEN_DEFAULT_RESIZE,
    UI_TARS_RESIZE,
    smart_resize,
    smart_resize_pure,
    to_normalised,
)
from medspot.errors import DataError


def test_smart_resize_1080p_factor_28() -> None:
    # 1920/28 = 68.57 -> 69*28 = 1932; 1080/28 = 38.57 -> 39*28 = 1092; area within bounds.
    assert smart_resize(1920, 1080, QWEN_DEFAULT_RESIZE) == (1932, 1092)
    assert smart_resize(1920, 1080, UI_TARS_RESIZE) == (1932, 1092)


def test_smart_resize_factor_32() -> None:
    # 1920/32 = 60 exactly; 1080/32 = 33.75 -> 34*32 = 1088.
    spec = ResizeSpec(factor=32, min_pixels=4 * 32 * 32, max_pixels=16384 * 32 * 32)
    assert smart_resize(1920, 1080, spec) == (1920, 1088)


def test_smart_resize_scales_down_above_max() -> None:
    # Aguvis 720p bounds: max = 46*26*784 = 937664 px; 1920x1080 = 2073600 px.
    # beta = sqrt(2073600/937664) = 1.48708; 1920/beta = 1291.1 -> floor to 28: 1288;
    # 1080/beta = 726.3 -> 700.
    spec = ResizeSpec(factor=28, min_pixels=256 * 28 * 28, max_pixels=46 * 26 * 28 * 28)
    assert smart_resize(1920, 1080, spec) == (1288, 700)


def test_smart_resize_scales_up_below_min() -> None:
    # 10x10 rounds to 28x28 = 784 < 3136; beta = sqrt(3136/100) = 5.6 -> 56 -> ceil 56.
    assert smart_resize(10, 10, QWEN_DEFAULT_RESIZE) == (56, 56)


def test_already_resized_image_is_a_fixed_point() -> None:
    assert smart_resize(1932, 1092, QWEN_DEFAULT_RESIZE) == (1932, 1092)


def test_extreme_aspect_ratio_is_a_data_error() -> None:
    with pytest.raises(DataError):
        smart_resize_pure(10_000, 20, QWEN_DEFAULT_RESIZE)
    with pytest.raises(DataError):
        smart_resize_pure(0, 20, QWEN_DEFAULT_RESIZE)


def _qwen_smart_resize() -> Callable[..., tuple[int, int]]:
    """qwen-vl-utils' own smart_resize, taken from its installed source without importing the
    package (it imports torch and torchvision at the top)."""
    spec = importlib.util.find_spec("qwen_vl_utils")
    if spec is None or spec.origin is None:
        pytest.skip("qwen-vl-utils is not installed")
    src = Path(spec.origin).with_name("vision_process.py").read_text()
    keep_f = {"round_by_factor", "ceil_by_factor", "floor_by_factor", "smart_resize"}
    keep_a = {"MAX_RATIO", "IMAGE_MIN_TOKEN_NUM", "IMAGE_MAX_TOKEN_NUM"}
    body: list[ast.stmt] = [
        n
        for n in ast.parse(src).body
        if (isinstance(n, ast.FunctionDef) and n.name in keep_f)
        or (
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in keep_a for t in n.targets)
        )
    ]
    ns: dict[str, Any] = {"math": math, "Optional": Optional, "Tuple": tuple}
    exec(compile(ast.Module(body=body, type_ignores=[]), "vision_process", "exec"), ns)
    assert "smart_resize" in ns
    fn: Callable[..., tuple[int, int]] = ns["smart_resize"]
    return fn


QWEN_SMART_RESIZE = _qwen_smart_resize()


@settings(max_examples=300, deadline=None)
@given(
    w=st.integers(min_value=28, max_value=9000),
    h=st.integers(min_value=28, max_value=9000),
    factor=st.sampled_from([14, 28, 32]),
    min_tokens=st.sampled_from([4, 100, 256]),
    max_tokens=st.sampled_from([1280, 16384, 46 * 26]),
)
def test_pure_equals_qwen_vl_utils(
    w: int, h: int, factor: int, min_tokens: int, max_tokens: int
) -> None:
    if max(w, h) / min(w, h) > 200:
        return
    spec = ResizeSpec(factor, min_tokens * factor**2, max_tokens * factor**2)
    rh, rw = QWEN_SMART_RESIZE(
        h, w, factor=factor, min_pixels=spec.min_pixels, max_pixels=spec.max_pixels
    )
    assert smart_resize_pure(w, h, spec) == (rw, rh)


def test_smart_resize_uses_loaded_qwen_vl_utils(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    def spy(height: int, width: int, **kw: int) -> tuple[int, int]:
        calls.append((height, width))
        return QWEN_SMART_RESIZE(height, width, **kw)

    monkeypatch.setitem(
        sys.modules, "qwen_vl_utils.vision_process", SimpleNamespace(smart_resize=spy)
    )
    assert smart_resize(1920, 1080, QWEN_DEFAULT_RESIZE) == (1932, 1092)
    assert calls == [(1080, 1920)]


def test_ui_tars_copy_agrees() -> None:
    ui = pytest.importorskip("ui_tars.action_parser")
    for w, h in [(1920, 1080), (2560, 1440), (800, 600), (3840, 2160), (300, 200)]:
        rh, rw = ui.smart_resize(h, w)
        assert smart_resize_pure(w, h, UI_TARS_RESIZE) == (rw, rh)


def test_conventions_module_does_not_import_torch() -> None:
    code = (
        "import sys, medspot.adapters.conventions as c;"
        "c.smart_resize(1920, 1080, c.QWEN_DEFAULT_RESIZE);"
        "print('torch' in sys.modules, 'qwen_vl_utils' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


@pytest.mark.parametrize(
    ("conv", "xy", "expected"),
    [
        (Convention.REL1000, (500, 250), (0.5, 0.25)),
        (Convention.REL999, (999, 0), (1.0, 0.0)),
        (Convention.REL1, (0.3, 0.7), (0.3, 0.7)),
        (Convention.POINTER, (0.3, 0.7), (0.3, 0.7)),
        (Convention.ABS_RESIZED, (966, 546), (0.5, 0.5)),  # sent 1932x1092
        (Convention.ABS_SENT, (483, 273), (0.25, 0.25)),
        (Convention.ABS_ORIGINAL, (960, 270), (0.5, 0.25)),  # original 1920x1080
        (Convention.REL1000, (1100, -20), (1.1, -0.02)),  # kept, not clamped
    ],
)
def test_to_normalised(
    conv: Convention, xy: tuple[float, float], expected: tuple[float, float]
) -> None:
    p = to_normalised(xy[0], xy[1], conv, (1932, 1092), (1920, 1080))
    assert (p.x, p.y) == pytest.approx(expected)
