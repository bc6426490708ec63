"""Where the phantoms' structures are in InVesalius: index conventions and the landmark
locators (pure functions).

InVesalius holds a study as a matrix indexed (z, y, x) whose y axis runs opposite to the DICOM
rows (its row 0 is the phantom's last row): `to_phantom` / `to_invesalius` convert a voxel
volume between the two. Each slice view shows a plane of that matrix with its own slice number
(the number InVesalius draws in the view's corner): axial planes are numbered by z, coronal by
InVesalius's y, sagittal by x. A point in a view's plane is (u, v): axial (x, y), coronal
(x, z), sagittal (y, z) in InVesalius's indices; on screen u grows to the right and v upwards.
InVesalius's world coordinates (its measurements' points) are indices times the spacing.

Landmark locators name points of the structures on the slice a view shows:
`VIEW:STRUCTURE[.PART]`, VIEW one of axial / coronal / sagittal, PART one of `centre` (the
default: the centroid of the structure's cross-section on that slice), `left`, `right`, `top`,
`bottom` (the cross-section's extreme voxel on the screen, on the line through the centroid).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from medspot.live.envs.invesalius.phantoms import true_mask, volume

__all__ = [
    "LANDMARK",
    "PARTS",
    "Landmark",
    "angle_deg",
    "distance_mm",
    "landmark_plane_point",
    "landmark_world",
    "parse_landmark",
    "plane_of",
    "to_invesalius",
    "to_phantom",
]

PARTS = ("centre", "left", "right", "top", "bottom")
LANDMARK = re.compile(r"(axial|coronal|sagittal):([a-z][a-z0-9-]*)(?:\.(" + "|".join(PARTS) + "))?")


@dataclass(frozen=True, slots=True)
class Landmark:
    view: str
    structure: str
    part: str = "centre"


def parse_landmark(text: str) -> Landmark:
    m = LANDMARK.fullmatch(text)
    if not m:
        raise ValueError(
            f"landmark {text!r}: expected VIEW:STRUCTURE[.PART] "
            f"(VIEW axial/coronal/sagittal, PART {'/'.join(PARTS)})"
        )
    return Landmark(m.group(1), m.group(2), m.group(3) or "centre")


def to_phantom(inv: np.ndarray) -> np.ndarray:
    """A volume in InVesalius's index order -> the phantom's (z, row, column)."""
    out: np.ndarray = inv[:, ::-1, :]
    return out


def to_invesalius(ph: np.ndarray) -> np.ndarray:
    out: np.ndarray = ph[:, ::-1, :]
    return out


def plane_of(vol: np.ndarray, view: str, number: int) -> np.ndarray:
    """The plane a view shows at slice `number`, as a 2D array indexed [u, v] (InVesalius's
    order; `vol` in InVesalius's order)."""
    if view == "axial":
        out: np.ndarray = vol[number, :, :].T  # [x, y]
    elif view == "coronal":
        out = vol[:, number, :].T  # [x, z]
    elif view == "sagittal":
        out = vol[:, :, number].T  # [y, z]
    else:
        raise ValueError(f"unknown view {view!r}")
    return out


def landmark_plane_point(vol_name: str, lm: Landmark, number: int) -> tuple[float, float] | None:
    """The landmark's (u, v) on the view's slice `number`, or None when the structure is not
    on that slice."""
    section = plane_of(to_invesalius(true_mask(vol_name, lm.structure)), lm.view, number)
    us, vs = np.nonzero(section)
    if not len(us):
        return None
    cu, cv = float(us.mean()), float(vs.mean())
    if lm.part == "centre":
        return (cu, cv)
    if lm.part in ("left", "right"):
        row = np.nonzero(section[:, round(cv)])[0]
        if not len(row):
            return None
        return (float(row.min() if lm.part == "left" else row.max()), float(round(cv)))
    col = np.nonzero(section[round(cu), :])[0]
    if not len(col):
        return None
    return (float(round(cu)), float(col.max() if lm.part == "top" else col.min()))


def landmark_world(vol_name: str, lm: Landmark, number: int) -> tuple[float, float, float] | None:
    """The landmark in InVesalius's world coordinates (mm; the space of its measurements)."""
    p = landmark_plane_point(vol_name, lm, number)
    if p is None:
        return None
    v = volume(vol_name)
    sx = sy = v.spacing
    sz = v.thickness
    u, w = p
    if lm.view == "axial":
        return (u * sx, w * sy, number * sz)
    if lm.view == "coronal":
        return (u * sx, number * sy, w * sz)
    return (number * sx, u * sy, w * sz)


def distance_mm(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return math.dist(a, b)


def angle_deg(a: tuple[float, ...], vertex: tuple[float, ...], b: tuple[float, ...]) -> float:
    """The angle at `vertex` between the rays to `a` and `b`, in degrees."""
    u = np.subtract(a, vertex)
    w = np.subtract(b, vertex)
    c = float(np.dot(u, w) / (np.linalg.norm(u) * np.linalg.norm(w)))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))
