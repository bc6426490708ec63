"""Coordinate conventions (models.md 1.1): numbers in a model's frame to normalised coordinates
of the original screenshot, and the Qwen-style `smart_resize` that abs_resized cards apply to the
screenshot before sending it.

`smart_resize` is a pure, exact copy of qwen-vl-utils' algorithm (also UI-TARS's copy): Python's
`round` (half to even), floor/ceil to the factor, the 200:1 aspect limit. It never imports
qwen-vl-utils itself (that imports torch); when the module is already loaded (the transformers
backend loaded it) its function is used, and the tests check both agree.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import cast

from medspot.adapters.base import Convention
from medspot.adapters.card import ResizeSpec
from medspot.errors import ConfigError, DataError
from medspot.geometry import Point

__all__ = [
    "MAX_RATIO",
    "QWEN_DEFAULT_RESIZE",
    "UI_TARS_RESIZE",
    "smart_resize",
    "smart_resize_pure",
    "to_normalised",
]

MAX_RATIO = 200
QWEN_DEFAULT_RESIZE = ResizeSpec(factor=28, min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28)
UI_TARS_RESIZE = ResizeSpec(factor=28, min_pixels=100 * 28 * 28, max_pixels=16384 * 28 * 28)

_QwenFn = Callable[..., tuple[int, int]]


def _round_by(number: float, factor: int) -> int:
    return round(number / factor) * factor


def _ceil_by(number: float, factor: int) -> int:
    return math.ceil(number / factor) * factor


def _floor_by(number: float, factor: int) -> int:
    return math.floor(number / factor) * factor


def smart_resize_pure(width: int, height: int, spec: ResizeSpec) -> tuple[int, int]:
    """(width, height) after qwen-vl-utils' smart_resize with `spec`; pure Python."""
    if width <= 0 or height <= 0:
        raise DataError(f"cannot resize an image of size {width}x{height}")
    if spec.max_pixels < spec.min_pixels:
        raise ConfigError("a ResizeSpec's max_pixels must be at least its min_pixels")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise DataError(
            f"image {width}x{height}: aspect ratio above {MAX_RATIO} cannot be smart-resized"
        )
    factor = spec.factor
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > spec.max_pixels:
        beta = math.sqrt((height * width) / spec.max_pixels)
        h_bar = _floor_by(height / beta, factor)
        w_bar = _floor_by(width / beta, factor)
    elif h_bar * w_bar < spec.min_pixels:
        beta = math.sqrt(spec.min_pixels / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return w_bar, h_bar


def _loaded_qwen_smart_resize() -> _QwenFn | None:
    mod = sys.modules.get("qwen_vl_utils.vision_process")
    fn = getattr(mod, "smart_resize", None) if mod is not None else None
    return cast(_QwenFn, fn) if callable(fn) else None


def smart_resize(width: int, height: int, spec: ResizeSpec) -> tuple[int, int]:
    """(width, height) the screenshot is resized to before sending, for an abs_resized card.

    Example: 1920x1080 with factor 28 and the default bounds gives 1932x1092."""
    qwen = _loaded_qwen_smart_resize()
    if qwen is None:
        return smart_resize_pure(width, height, spec)
    if width <= 0 or height <= 0:
        raise DataError(f"cannot resize an image of size {width}x{height}")
    try:
        h, w = qwen(
            height,
            width,
            factor=spec.factor,
            min_pixels=spec.min_pixels,
            max_pixels=spec.max_pixels,
        )
    except (ValueError, AssertionError) as exc:
        raise DataError(f"image {width}x{height}: {exc}") from None
    return int(w), int(h)


def to_normalised(
    x: float,
    y: float,
    convention: Convention,
    sent_size: tuple[int, int],
    original_size: tuple[int, int],
) -> Point:
    """Map a point in `convention` to normalised coordinates of the original screenshot.

    Sizes are (width, height). Values outside the frame are kept, never clamped."""
    if convention is Convention.REL1000:
        return Point(x / 1000, y / 1000)
    if convention is Convention.REL999:
        return Point(x / 999, y / 999)
    if convention in (Convention.REL1, Convention.POINTER, Convention.NORMALISED):
        return Point(x, y)
    if convention in (Convention.ABS_RESIZED, Convention.ABS_SENT):
        w, h = sent_size
    elif convention is Convention.ABS_ORIGINAL:
        w, h = original_size
    else:  # pragma: no cover - every Convention is handled above
        raise ConfigError(f"unknown convention {convention!r}")
    if w <= 0 or h <= 0:
        raise DataError(f"cannot normalise pixels by an image size of {w}x{h}")
    return Point(x / w, y / h)
