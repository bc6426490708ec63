"""Is the image the model saw the one the harness resized? (abs_resized cards, hf backend.)

An abs_resized card (Qwen2.5-VL, UI-TARS-1.5) answers in pixels of the image its processor
produced; the harness pre-resizes the screenshot with the card's `ResizeSpec` and divides by
the size it sent. A checkpoint whose image processor allows fewer pixels than the card
re-resizes that image silently, and every click is scaled toward the top-left. So the hf
backend pre-resizes within the checkpoint's own bounds (`processor_pixel_bounds`,
`resize_within`), and checks the processor's `image_grid_thw` against the size it sent
(`check_grid`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from medspot.adapters.card import ResizeSpec
from medspot.errors import ConfigError

__all__ = ["check_grid", "grid_size", "processor_pixel_bounds", "resize_within"]

log = logging.getLogger(__name__)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def processor_pixel_bounds(image_processor: Any) -> tuple[int, int] | None:
    """(min_pixels, max_pixels) of a Qwen-style image processor (its `size` shortest/longest
    edge, or its `min_pixels`/`max_pixels`), None when it has no such bounds."""
    size = _get(image_processor, "size")
    lo = _get(size, "shortest_edge") if size is not None else None
    hi = _get(size, "longest_edge") if size is not None else None
    lo = lo if lo is not None else _get(image_processor, "min_pixels")
    hi = hi if hi is not None else _get(image_processor, "max_pixels")
    if not isinstance(lo, int) or not isinstance(hi, int) or hi < lo or lo <= 0:
        return None
    return lo, hi


def resize_within(spec: ResizeSpec | None, bounds: tuple[int, int] | None) -> ResizeSpec | None:
    """The card's resize clipped to the checkpoint's own pixel bounds (what its processor would
    do to the image anyway); unchanged when the bounds are unknown or already agree."""
    if spec is None or bounds is None:
        return spec
    lo, hi = bounds
    if spec.min_pixels >= lo and spec.max_pixels <= hi:
        return spec
    new_lo, new_hi = max(spec.min_pixels, lo), min(spec.max_pixels, hi)
    if new_hi < new_lo:  # disjoint bounds: the checkpoint's win, the image must pass it
        new_lo, new_hi = lo, hi
    return replace(spec, min_pixels=new_lo, max_pixels=new_hi)


def grid_size(grid_thw: Sequence[int], patch_size: int) -> tuple[int, int]:
    """(width, height) in pixels of the image a Qwen-style processor produced."""
    _, h, w = (int(v) for v in grid_thw)
    return w * patch_size, h * patch_size


def check_grid(
    sent: Sequence[tuple[int, int] | None],
    grids: Sequence[Sequence[int]],
    patch_size: int,
    *,
    checkpoint: str,
    bounds: tuple[int, int] | None,
) -> None:
    """Raise ConfigError when an image the harness pre-resized (its size in `sent`; None for
    images sent as they are) came out of the processor at another size."""
    for size, grid in zip(sent, grids, strict=True):
        if size is None:
            continue
        seen = grid_size(grid, patch_size)
        if seen != size:
            have = f"min_pixels={bounds[0]}, max_pixels={bounds[1]}" if bounds else "unknown"
            raise ConfigError(
                f"the image processor of {checkpoint} resized the image again: the harness "
                f"sent {size[0]}x{size[1]} (abs_resized, answers divided by that size) but the "
                f"model saw {seen[0]}x{seen[1]} (image_grid_thw {list(grid)}, patch "
                f"{patch_size}; the processor's bounds: {have}). Every click would be scaled "
                f"by {seen[0] / size[0]:.2f} x {seen[1] / size[1]:.2f}."
            )
