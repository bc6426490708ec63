"""Name the cause of a systematic error found by `check-model`.

Each known cause predicts, per check screen, where an answer to a button at normalised `t`
lands (normalised over the image the harness sent). The cause whose prediction fits the
answers best, clearly better than "no error", is named with the setting that explains it:

- `swapped axes`: answers read (y, x), e.g. Gemma 3's `box_2d` order `[y1, x1, y2, x2]`.
- `re-resize`: the model saw the sent image resized again to at most M pixels (a server
  started with a smaller `max_pixels` than the card, or a checkpoint whose processor has
  one), and answered in pixels of that smaller image; only for pixel conventions.
- `padded canvas`: the image was pasted at the top-left of a larger canvas and the answer is
  relative to the canvas: Llama 3.2 Vision's 560-px tiles (transformers'
  `get_optimal_tiled_canvas`, at most 4 tiles; a 16:9 screen lands on a 1120x1120 canvas,
  y x 0.5625) or a pad to square.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from medspot.adapters.card import ResizeSpec
from medspot.adapters.conventions import smart_resize_pure
from medspot.geometry import Point

__all__ = [
    "Diagnosis",
    "Observation",
    "diagnose",
    "estimate_max_pixels",
    "server_seen_pixels",
    "square_fill",
    "tiled_canvas_fill",
]

PIXEL_CONVENTIONS = ("abs_resized", "abs_sent", "abs_original")
FIT_RMSE = 0.03  # a cause must fit the answers this well (fraction of the screen) ...
GAIN = 0.5  # ... and at least halve the error of "no error"
NO_ERROR_RMSE = 0.015  # answers this close to the targets need no cause

Size = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Observation:
    """One answered screen: target and answer normalised over the image sent, and its size."""

    target: Point
    answer: Point
    sent_size: Size
    input_tokens: int | None = None  # the server's prompt token count, when it reports one


@dataclass(frozen=True, slots=True)
class Diagnosis:
    cause: str | None  # "swapped axes", "re-resize", "padded canvas", or None
    detail: str
    rmse: dict[str, float]  # per hypothesis, "none" included
    max_pixels: int | None = None  # the re-resize's estimated bound
    # What the server's prompt token counts say about the image it saw (Qwen-style models
    # spend (w/28)*(h/28) tokens on an image): "as sent", "re-resized", or None (cannot tell)
    server_seen: str | None = None
    server_max_pixels: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "detail": self.detail,
            "rmse": {k: round(v, 4) for k, v in self.rmse.items()},
            "max_pixels": self.max_pixels,
            "server_seen": self.server_seen,
            "server_max_pixels": self.server_max_pixels,
        }


def tiled_canvas_fill(w: int, h: int, tile: int = 560, max_tiles: int = 4) -> tuple[float, float]:
    """Fraction of Llama 3.2 Vision's padded canvas the image fills (x, y): a port of
    transformers' mllama `get_optimal_tiled_canvas` and `get_image_size_fit_to_canvas`."""
    arrangements = [
        (a, b)
        for a in range(1, max_tiles + 1)
        for b in range(1, max_tiles + 1)
        if a * b <= max_tiles
    ]
    canvases = [(a * tile, b * tile) for a, b in arrangements]  # (height, width) as it reads them
    scales = [min(ch / h, cw / w) for ch, cw in canvases]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(s for s in scales if s < 1)
    candidates = [c for c, s in zip(canvases, scales, strict=True) if s == chosen]
    ch, cw = min(candidates, key=lambda c: c[0] * c[1])
    tw, th = min(max(w, tile), cw), min(max(h, tile), ch)
    sh, sw = th / h, tw / w
    if sw < sh:
        nw, nh = tw, min(math.floor(h * sw) or 1, th)
    else:
        nh, nw = th, min(math.floor(w * sh) or 1, tw)
    return nw / cw, nh / ch


def square_fill(w: int, h: int) -> tuple[float, float]:
    """Fraction of a square canvas (pad to the longer side, image at the top-left)."""
    m = max(w, h)
    return w / m, h / m


def _rmse(obs: Sequence[Observation], predict: Callable[[Observation], Point]) -> float:
    se = 0.0
    for o in obs:
        p = predict(o)
        se += (o.answer.x - p.x) ** 2 + (o.answer.y - p.y) ** 2
    return math.sqrt(se / (2 * len(obs)))


def _resized_ratio(size: Size, max_pixels: int, factor: int) -> tuple[float, float]:
    w, h = size
    spec = ResizeSpec(factor, min(factor * factor * 4, max_pixels), max_pixels)
    rw, rh = smart_resize_pure(w, h, spec)
    return rw / w, rh / h


def _resize_prediction(max_pixels: int, factor: int) -> Callable[[Observation], Point]:
    def predict(o: Observation) -> Point:
        rx, ry = _resized_ratio(o.sent_size, max_pixels, factor)
        return Point(o.target.x * rx, o.target.y * ry)

    return predict


def estimate_max_pixels(
    obs: Sequence[Observation], factor: int = 28, below: int | None = None
) -> tuple[int, float]:
    """The `max_pixels` (a multiple of factor²) whose re-resize best explains the answers,
    searched below the largest image sent (or `below`), and its rmse."""
    top = max(w * h for w, h in (o.sent_size for o in obs))
    top = min(top, below) if below else top
    best: tuple[int, float] | None = None
    k = 64
    while k * factor * factor <= top:
        m = k * factor * factor
        err = _rmse(obs, _resize_prediction(m, factor))
        if best is None or err < best[1] - 1e-9:
            best = (m, err)
        k = max(k + 1, int(k * 1.02))
    return best if best is not None else (top, math.inf)


def _fill_prediction(fill: Callable[[int, int], tuple[float, float]]) -> Callable[..., Point]:
    def predict(o: Observation) -> Point:
        fx, fy = fill(*o.sent_size)
        return Point(o.target.x * fx, o.target.y * fy)

    return predict


TOKEN_SPREAD = 16  # prompt texts of the check screens differ by a few tokens at most


def _token_spread(obs: Sequence[Observation], factor: int, max_pixels: int | None) -> int:
    rest = []
    for o in obs:
        w, h = o.sent_size
        if max_pixels is not None:
            w, h = smart_resize_pure(w, h, ResizeSpec(factor, factor * factor * 4, max_pixels))
        rest.append(int(o.input_tokens or 0) - (w // factor) * (h // factor))
    return max(rest) - min(rest)


def server_seen_pixels(obs: Sequence[Observation], factor: int) -> tuple[str | None, int | None]:
    """What the prompt token counts say: ("as sent", None), ("re-resized", max_pixels), or
    (None, None) when they cannot tell (fewer than 3 counts, or no bound explains them)."""
    counted = [o for o in obs if o.input_tokens]
    if len(counted) < 3 or len({o.sent_size for o in counted}) < 3:
        return None, None
    if _token_spread(counted, factor, None) <= TOKEN_SPREAD:
        return "as sent", None
    top = max(w * h for w, h in (o.sent_size for o in counted))
    best: tuple[int, int] | None = None
    k = 64
    while k * factor * factor <= top:
        spread = _token_spread(counted, factor, k * factor * factor)
        if best is None or spread < best[1]:
            best = (k * factor * factor, spread)
        k = max(k + 1, int(k * 1.02))
    if best is None or best[1] > TOKEN_SPREAD:
        return None, None
    return "re-resized", best[0]


def diagnose(
    obs: Sequence[Observation], convention: str, resize: ResizeSpec | None = None
) -> Diagnosis:
    """The known cause that explains the answers, if one does (needs 3 answers or more),
    with what the server's token counts say about the image it saw (cards with a resize)."""
    d = _diagnose(obs, convention, resize)
    if resize is None:
        return d
    seen, px = server_seen_pixels(obs, resize.factor)
    if seen is None:
        return d
    note = (
        "the server's prompt token counts match the images as sent"
        if px is None
        else f"the server's prompt token counts say it saw at most about {px} pixels "
        f"(max_pixels ~ {px / resize.factor**2:.0f} x {resize.factor} x {resize.factor})"
    )
    return replace(d, detail=f"{d.detail}; {note}", server_seen=seen, server_max_pixels=px)


def _diagnose(obs: Sequence[Observation], convention: str, resize: ResizeSpec | None) -> Diagnosis:
    if len(obs) < 3:
        return Diagnosis(None, "too few answers to name a cause", {})
    rmse = {"none": _rmse(obs, lambda o: o.target)}
    rmse["swapped axes"] = _rmse(obs, lambda o: Point(o.target.y, o.target.x))
    rmse["padded canvas (560-px tiles)"] = _rmse(obs, _fill_prediction(tiled_canvas_fill))
    rmse["padded canvas (square)"] = _rmse(obs, _fill_prediction(square_fill))
    max_px: int | None = None
    factor = resize.factor if resize else 28
    if convention in PIXEL_CONVENTIONS:
        below = resize.max_pixels if resize else None
        max_px, rmse["re-resize"] = estimate_max_pixels(obs, factor, below)
    best = min((k for k in rmse if k != "none"), key=lambda k: rmse[k])
    if rmse["none"] <= NO_ERROR_RMSE:
        return Diagnosis(None, "no systematic error", rmse)
    if rmse[best] > FIT_RMSE or rmse[best] > GAIN * rmse["none"]:
        return Diagnosis(None, "no known cause fits (padding, re-resize, swapped axes)", rmse)
    if best == "swapped axes":
        detail = (
            "the answers are (y, x): the model writes y first (e.g. Gemma 3's box_2d "
            "[y1, x1, y2, x2]); the card must read y first"
        )
        return Diagnosis("swapped axes", detail, rmse)
    if best == "re-resize" and max_px is not None:
        k = max_px / (factor * factor)
        card = f"{resize.max_pixels // (factor * factor)} x {factor} x {factor}" if resize else "?"
        detail = (
            f"the model saw the image resized again, to at most about {max_px} pixels "
            f"(max_pixels ~ {k:.0f} x {factor} x {factor}; the card sends up to {card}), and "
            "answered in pixels of that smaller image: start the server (vLLM "
            "--mm-processor-kwargs max_pixels) or load the checkpoint with the card's "
            "max_pixels"
        )
        return Diagnosis("re-resize", detail, rmse, max_px)
    how = "Llama 3.2 Vision's 560-px tiles" if "tiles" in best else "a pad to square"
    detail = (
        f"the answers are relative to a padded canvas ({how}): the image sits at its "
        "top-left and the padding is counted in the frame; divide by the canvas, not the image"
    )
    return Diagnosis("padded canvas", detail, rmse)
