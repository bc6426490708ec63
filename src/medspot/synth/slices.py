"""Synthetic CT and MR slices: ellipses of tissue, a lesion, noise, and window/level presets.

Pure functions of their arguments (the noise generator is seeded by the series), cached, so a
slice is computed once per size, series and preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image

__all__ = ["PRESETS", "SERIES", "Series", "lesion_box", "slice_image"]


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # caption of the thumbnail
    modality: str  # "CT" or "MR"
    anatomy: str  # "chest", "abdomen" or "head"


SERIES: tuple[Series, ...] = (
    Series("S1 CT Chest Axial", "CT", "chest"),
    Series("S2 CT Abdomen", "CT", "abdomen"),
    Series("S3 MR Brain T1", "MR", "head"),
    Series("S4 MR Brain T2", "MR", "head"),
)

# name -> (window width, window level) in HU-like units
PRESETS: dict[str, tuple[int, int]] = {
    "Default": (400, 40),
    "Lung": (1500, -600),
    "Bone": (2000, 300),
    "Brain": (80, 40),
    "Abdomen": (350, 50),
    "Mediastinum": (350, 40),
}


def _ellipse(h: int, w: int, cy: float, cx: float, ry: float, rx: float) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    mask: np.ndarray = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
    return mask


def lesion_box(w: int, h: int, series: int) -> tuple[int, int, int, int]:
    """The lesion's bounding rectangle (x1, y1, x2, y2 exclusive) in a w x h slice."""
    cx, cy, rx, ry = _lesion(w, h, series)
    return (int(cx - rx), int(cy - ry), int(cx + rx) + 1, int(cy + ry) + 1)


def _lesion(w: int, h: int, series: int) -> tuple[float, float, float, float]:
    s = min(w, h)
    offsets = ((0.2, -0.05), (-0.15, 0.12), (0.12, -0.14), (-0.1, 0.1))
    dx, dy = offsets[series % len(offsets)]
    r = s * 0.045
    return w / 2 + dx * s, h / 2 + dy * s, r * 1.2, r


@lru_cache(maxsize=64)
def _hu(w: int, h: int, series: int) -> np.ndarray:
    """Tissue values (HU-like) of the slice, before windowing."""
    spec = SERIES[series % len(SERIES)]
    s = min(w, h)
    cy, cx = h / 2, w / 2
    img = np.full((h, w), -1000.0)
    if spec.anatomy == "head":
        img[_ellipse(h, w, cy, cx, s * 0.42, s * 0.34)] = 700.0  # skull
        img[_ellipse(h, w, cy, cx, s * 0.39, s * 0.31)] = 35.0  # brain
        img[_ellipse(h, w, cy - s * 0.05, cx - s * 0.06, s * 0.1, s * 0.035)] = 8.0  # ventricles
        img[_ellipse(h, w, cy - s * 0.05, cx + s * 0.06, s * 0.1, s * 0.035)] = 8.0
        if spec.modality == "MR":
            img = np.where(img > 500, -200.0, img)
    else:
        img[_ellipse(h, w, cy, cx, s * 0.36, s * 0.46)] = 40.0  # body
        if spec.anatomy == "chest":
            img[_ellipse(h, w, cy - s * 0.02, cx - s * 0.2, s * 0.25, s * 0.16)] = -800.0
            img[_ellipse(h, w, cy - s * 0.02, cx + s * 0.2, s * 0.25, s * 0.16)] = -800.0
            img[_ellipse(h, w, cy - s * 0.05, cx + s * 0.03, s * 0.1, s * 0.08)] = 45.0  # heart
        else:
            img[_ellipse(h, w, cy - s * 0.05, cx - s * 0.17, s * 0.16, s * 0.18)] = 60.0  # liver
            img[_ellipse(h, w, cy + s * 0.02, cx + s * 0.22, s * 0.07, s * 0.05)] = 30.0
        img[_ellipse(h, w, cy + s * 0.24, cx, s * 0.06, s * 0.06)] = 900.0  # vertebra
    lx, ly, rx, ry = _lesion(w, h, series)
    img[_ellipse(h, w, ly, lx, ry, rx)] = 150.0
    rng = np.random.default_rng(1000 + series)
    # noise at half resolution: grainy like a real slice, and cheaper to compress
    noise = rng.normal(0.0, 18.0 if spec.modality == "CT" else 10.0, size=(h // 2 + 1, w // 2 + 1))
    noise = np.repeat(np.repeat(noise, 2, axis=0), 2, axis=1)[:h, :w]
    out: np.ndarray = img + noise
    return out


@lru_cache(maxsize=128)
def slice_image(w: int, h: int, series: int, preset: str) -> Image.Image:
    """A grey w x h slice of `series` shown with the window/level `preset`."""
    width, level = PRESETS.get(preset, PRESETS["Default"])
    if SERIES[series % len(SERIES)].modality == "MR":
        width, level = max(width, 200), level + 60  # MR ignores CT presets but still shifts
    lo = level - width / 2
    grey = np.clip((_hu(w, h, series) - lo) / width * 255.0, 0, 255).astype(np.uint8)
    return Image.fromarray(grey, mode="L").convert("RGB")
