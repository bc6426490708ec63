"""The phantom a task loads as the geometry its checks are validated against
(`PhantomGeometry`: the environment's `EnvEntry.geometry`), and the regions the `inv.*` checks
judge, checked on it without InVesalius (pure functions): the slices each view has, the
structures the volume has, the truth on the judged slices, a landmark on the judged slice.

A check whose region lies past the volume (axial slices `[70, 80]` of 64), or where its truth
is empty (a Dice on slices the structures do not reach would compare nothing with nothing), is
refused when the task file is read (`CheckParams.geometry_problem`), naming the parameter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medspot.live.envs.invesalius.geometry import (
    landmark_plane_point,
    parse_landmark,
    to_invesalius,
)
from medspot.live.envs.invesalius.names import unknown_structure
from medspot.live.envs.invesalius.phantoms import VolumeInfo, true_mask, volume

__all__ = ["VIEWS", "PhantomGeometry", "view_region", "view_slices"]

VIEWS = ("axial", "coronal", "sagittal")
# the axes of InVesalius's (z, y, x) matrix a view's slice spans: what `any` folds away
_ACROSS = {"axial": (1, 2), "coronal": (0, 2), "sagittal": (0, 1)}


def view_slices(v: VolumeInfo, view: str) -> int:
    """How many slices a view has: axial the volume's slices, coronal its rows, sagittal its
    columns (the numbers InVesalius shows run from 0)."""
    return {"axial": v.slices, "coronal": v.rows, "sagittal": v.cols}[view]


def view_region(
    shape: tuple[int, ...], view: str | None, slices: tuple[int, int] | None
) -> np.ndarray:
    """The voxels (phantom order) of the slices [first, last] of a view; everything without
    a view. Slices past the volume hold no voxel."""
    keep = np.zeros(shape, bool)
    if view is None or slices is None:
        keep[:] = True
        return keep
    lo, hi = slices
    inv = np.zeros(shape, bool)
    if view == "axial":
        inv[lo : hi + 1, :, :] = True
    elif view == "coronal":
        inv[:, lo : hi + 1, :] = True
    else:
        inv[:, :, lo : hi + 1] = True
    out: np.ndarray = to_invesalius(inv)  # the flip is its own inverse
    return out


@dataclass(frozen=True)
class PhantomGeometry:
    """What task validation knows of a task's images: the phantom volume its start loads."""

    volume: str

    @property
    def info(self) -> VolumeInfo:
        return volume(self.volume)

    def slices(self, view: str) -> int:
        return view_slices(self.info, view)

    @property
    def diagonal_mm(self) -> float:
        """The longest distance inside the volume (its bounding box's diagonal)."""
        v = self.info
        return math.dist((0, 0, 0), (v.cols * v.spacing, v.rows * v.spacing,
                                     v.slices * v.thickness))  # fmt: skip

    def slice_problem(self, view: str, number: int) -> str | None:
        """Why slice `number` is not one of the view's (None: it is)."""
        n = self.slices(view)
        if 0 <= number < n:
            return None
        return f"{view} slice {number} is past the volume ({self.volume}: {view} 0..{n - 1})"

    def structures_problem(self, names: Sequence[str]) -> str | None:
        """Why the structures are not all the volume's, each with voxels (None: they are)."""
        for name in names:
            why = unknown_structure(name, self.volume)
            if why is not None:
                return why
        for name in names:
            if not true_mask(self.volume, name).any():
                return f"{name} has no voxel in {self.volume} (structures drawn over it cover it)"
        return None

    def span(self, names: Sequence[str], view: str) -> tuple[int, int] | None:
        """The first and last slice of a view on which the structures have a voxel."""
        inv = to_invesalius(true_mask(self.volume, *names))
        on = np.nonzero(inv.any(axis=_ACROSS[view]))[0]
        return (int(on[0]), int(on[-1])) if len(on) else None

    def _lies_on(self, names: Sequence[str], view: str) -> str:
        span = self.span(names, view)
        what = " + ".join(names)
        if span is None:
            return f"{what} has no voxel in {self.volume}"
        return f"{what} lies on {view} slices {span[0]}..{span[1]}"

    def region_problem(self, names: Sequence[str], view: str, first: int, last: int) -> str | None:
        """Why the slices [first, last] of a view are no region to judge the structures on:
        past the volume, or none of the structures' voxels there (None: a region with truth)."""
        for k in (first, last):
            why = self.slice_problem(view, k)
            if why is not None:
                return why
        keep = view_region(self.info.shape, view, (first, last))
        if (true_mask(self.volume, *names) & keep).any():
            return None
        return (
            f"the truth is empty on {view} slices {first}..{last} ({self._lies_on(names, view)}):"
            " nothing there to judge a mask against"
        )

    def landmark_problem(self, text: str, number: int) -> str | None:
        """Why landmark `text` has no point on slice `number` of its view (None: it has)."""
        lm = parse_landmark(text)
        why = self.slice_problem(lm.view, number)
        if why is not None:
            return why
        if landmark_plane_point(self.volume, lm, number) is not None:
            return None
        return (
            f"landmark {text!r} has no point on {lm.view} slice {number} "
            f"({self._lies_on([lm.structure], lm.view)})"
        )
