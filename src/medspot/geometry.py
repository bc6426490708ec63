"""Pure geometry on normalised coordinates (0..1 of the original screenshot)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Box", "Point", "box_from_percent", "clamp_point", "is_finite", "point_in_box"]


@dataclass(frozen=True, slots=True)
class Point:
    """A point in normalised coordinates of the original screenshot; values may lie outside 0..1."""

    x: float
    y: float

    def as_list(self) -> list[float]:
        return [self.x, self.y]


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in normalised coordinates: corners (x1, y1) top-left, (x2, y2)."""

    x1: float
    y1: float
    x2: float
    y2: float

    @property
    def width(self) -> float:
        return self.x2 - self.x1

    @property
    def height(self) -> float:
        return self.y2 - self.y1

    @property
    def area(self) -> float:
        """Area as a fraction of the image."""
        return self.width * self.height

    @property
    def center(self) -> Point:
        return Point((self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2)

    def grown(self, dx: float, dy: float) -> Box:
        """The box grown by dx (normalised) on the left and right and dy on top and bottom."""
        return Box(self.x1 - dx, self.y1 - dy, self.x2 + dx, self.y2 + dy)

    def scaled(self, factor: float) -> Box:
        """The box scaled by `factor` about its centre."""
        c = self.center
        hw, hh = self.width * factor / 2, self.height * factor / 2
        return Box(c.x - hw, c.y - hh, c.x + hw, c.y + hh)

    def contains(self, p: Point) -> bool:
        """Edges included; no clamping."""
        return self.x1 <= p.x <= self.x2 and self.y1 <= p.y <= self.y2

    def as_list(self) -> list[float]:
        return [self.x1, self.y1, self.x2, self.y2]


def box_from_percent(x: float, y: float, w: float, h: float) -> Box:
    """MedSPOT's `[x, y, w, h]` in percent of the image to a normalised box."""
    return Box(x / 100.0, y / 100.0, (x + w) / 100.0, (y + h) / 100.0)


def point_in_box(
    p: Point, box: Box, tol_px: float = 0.0, size: tuple[int, int] | None = None
) -> bool:
    """Hit test: `p` inside `box` grown by `tol_px` pixels of the original image on every side."""
    if tol_px:
        if size is None:
            raise ValueError("a pixel tolerance needs the image size")
        box = box.grown(tol_px / size[0], tol_px / size[1])
    return box.contains(p)


def clamp_point(p: Point) -> Point:
    """The point clamped into the image (0..1 on each axis)."""
    return Point(min(max(p.x, 0.0), 1.0), min(max(p.y, 0.0), 1.0))


def is_finite(p: Point) -> bool:
    return math.isfinite(p.x) and math.isfinite(p.y)
