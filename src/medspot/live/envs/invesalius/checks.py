"""The check kinds of the `invesalius` environment (`CHECK_KINDS`: its own `inv.*`, the
collateral-harm rule of `collateral`, the desktop's `atspi.*` and `window.*`): InVesalius's state
read by the probe inside the application, the masks' voxels compared with the phantoms' truth,
the files an agent wrote; each judged by a pure function.

    {"kind": "inv.mask", "name": "Lesion", "threshold": [150, 250]}
    {"kind": "inv.mask", "name": "Mask 1", "present": false}
    {"kind": "inv.mask_dice", "mask": "Lesion", "structures": ["lesion"], "min": 0.9}
    {"kind": "inv.mask_dice", "mask": "Liver", "structures": ["liver"], "max": 0.99}  (altered)
    {"kind": "inv.mask_dice", "current": true, "structures": ["lesion"], "min": 0.8,
     "view": "axial", "slices": [30, 34]}                      (those slices only)
    {"kind": "inv.surface", "volume_of": ["lesion"], "tolerance": 0.1}
    {"kind": "inv.measure", "kind_of": "linear", "view": "axial", "slice": 40,
     "points": ["axial:lesion.left", "axial:lesion.right"], "tolerance_mm": 3}
    {"kind": "inv.slice", "view": "axial", "slice": 40}
    {"kind": "inv.window", "preset": "Abdomen"}
    {"kind": "inv.layout", "maximized": "axial"}
    {"kind": "inv.project", "open": true, "modified": false}
    {"kind": "inv.dialog", "title": "Region growing"}
    {"kind": "inv.file", "file": "lesion.stl", "volume_of": ["lesion"], "tolerance": 0.1}

The Dice coefficient of a mask with the truth is `mask_dice` (also the runner's segmentation
quality metric, `InvesaliusEnv.task_quality`). A region where the truth is empty is never a
pass: the judge says no there, and task validation refuses such a region, or slices past the
volume, when the task file is read (each kind's `geometry_problem` on the task's phantom,
`medspot.live.envs.invesalius.regions`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from medspot.live.core.checks import CheckKind, CheckKinds, CheckParams, Regex
from medspot.live.drivers.atspi_checks import DESKTOP_KINDS
from medspot.live.envs.invesalius.collateral import COLLATERAL_KINDS
from medspot.live.envs.invesalius.files import ExportedFile, NiftiImage
from medspot.live.envs.invesalius.geometry import distance_mm, landmark_world, parse_landmark
from medspot.live.envs.invesalius.names import (
    ExportName,
    ExportPattern,
    LandmarkName,
    PhantomStructure,
)
from medspot.live.envs.invesalius.phantoms import true_mask, volume
from medspot.live.envs.invesalius.regions import VIEWS, PhantomGeometry, view_region
from medspot.live.envs.invesalius.state import InvState, MaskVoxels

__all__ = [
    "CHECK_KINDS",
    "INV_KINDS",
    "WINDOW_PRESETS",
    "ExportSnapshot",
    "dice",
    "mask_dice",
    "nifti_to_phantom",
]

View = Literal["axial", "coronal", "sagittal"]
# InVesalius's window presets (constants.WINDOW_LEVEL): name -> (width, level)
WINDOW_PRESETS: dict[str, tuple[int, int]] = {
    "Abdomen": (350, 50), "Bone": (2000, 300), "Brain posterior fossa": (120, 40),
    "Brain": (80, 40), "Emphysema": (500, -850), "Ischemia - Hard, non contrast": (15, 32),
    "Ischemia - Soft, non contrast": (80, 20), "Larynx": (180, 80), "Liver": (2000, -500),
    "Lung - Soft": (1600, -600), "Lung - Hard": (1000, -600), "Mediastinum": (350, 25),
    "Pelvis": (450, 50), "Sinus": (4000, 400), "Vasculature - Hard": (240, 80),
    "Vasculature - Soft": (650, 160), "Contour": (255, 127),
}  # fmt: skip
PresetName = Literal[
    "Abdomen", "Bone", "Brain posterior fossa", "Brain", "Emphysema",
    "Ischemia - Hard, non contrast", "Ischemia - Soft, non contrast", "Larynx", "Liver",
    "Lung - Soft", "Lung - Hard", "Mediastinum", "Pelvis", "Sinus", "Vasculature - Hard",
    "Vasculature - Soft", "Contour",
]  # fmt: skip


def dice(a: np.ndarray, b: np.ndarray) -> float:
    """The Dice coefficient of two boolean volumes (1.0 when both are empty: callers judging a
    segmentation use `region_dice`, which has no value there)."""
    sa, sb = int(a.sum()), int(b.sum())
    if sa + sb == 0:
        return 1.0
    return 2.0 * int(np.logical_and(a, b).sum()) / (sa + sb)


def region_dice(
    mask: np.ndarray,
    vol: str,
    structures: tuple[str, ...] | list[str],
    view: str | None = None,
    slices: tuple[int, int] | None = None,
) -> float | None:
    """Dice of a mask (phantom order) with the union of the structures' true masks, over the
    whole volume or the slices [first, last] of one view; None where the truth is empty (past
    the volume, or slices the structures do not reach): nothing to judge a mask against."""
    truth = true_mask(vol, *structures)
    keep = view_region(truth.shape, view, slices)
    truth &= keep
    if not truth.any():
        return None
    if mask.shape != truth.shape:
        return 0.0
    return dice(mask & keep, truth)


def mask_dice(
    mask: np.ndarray,
    vol: str,
    structures: tuple[str, ...] | list[str],
    view: str | None = None,
    slices: tuple[int, int] | None = None,
) -> float:
    """`region_dice` as a segmentation's quality: 0.0 where the truth is empty (an empty mask
    there is no segmentation of anything)."""
    d = region_dice(mask, vol, structures, view, slices)
    return 0.0 if d is None else d


# -- masks -------------------------------------------------------------------------------------


def _exactly_or_within(name: str, exact: int | None, low: int | None, high: int | None) -> None:
    """A number given exactly (`name`), or a range [`min`, `max`] (one end may be open): a
    `ValueError` for neither, both, or an empty range."""
    if (exact is None) == (low is None and high is None):
        raise ValueError(f"needs '{name}', or 'min' and/or 'max'")
    if low is not None and high is not None and low > high:
        raise ValueError(f"min {low} > max {high}")


class CountParams(CheckParams):
    """How many there are: exactly `count`, or within [`min`, `max`]."""

    count: int | None = Field(None, ge=0)
    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _range(self) -> CountParams:
        _exactly_or_within("count", self.count, self.min, self.max)
        return self

    def holds_for(self, n: int) -> bool:
        if self.count is not None:
            return n == self.count
        return (self.min is None or n >= self.min) and (self.max is None or n <= self.max)

    def vacuous(self) -> str | None:
        if self.count is None and (self.min in (None, 0)) and self.max is None:
            return "the range holds for any number"
        return None


class _Named(CheckParams):
    """Which objects: exactly `name`, or names matching the regex `matches`; neither: any."""

    name: str | None = Field(None, min_length=1)
    matches: Regex | None = None

    @model_validator(mode="after")
    def _one_name(self) -> _Named:
        if self.name is not None and self.matches is not None:
            raise ValueError("give 'name' or 'matches', not both")
        return self

    def names(self, name: str) -> bool:
        if self.name is not None:
            return name == self.name
        if self.matches is not None:
            return re.search(self.matches, name) is not None
        return True


class MaskParams(_Named):
    """A mask with these properties exists (`present: false`: no mask of that name/regex)."""

    present: bool = True
    threshold: list[int] | None = Field(None, min_length=2, max_length=2)
    current: bool | None = None
    visible: bool | None = None
    edited: bool | None = None
    min_voxels: int | None = Field(None, ge=0)
    max_voxels: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _absent_alone(self) -> MaskParams:
        if self.name is None and self.matches is None:
            raise ValueError("names no mask: give 'name' or 'matches'")
        props = (self.threshold, self.current, self.visible, self.edited, self.min_voxels,
                 self.max_voxels)  # fmt: skip
        if not self.present and any(p is not None for p in props):
            raise ValueError("'present: false' takes no other property")
        if (self.min_voxels is not None and self.max_voxels is not None
                and self.min_voxels > self.max_voxels):  # fmt: skip
            raise ValueError(f"min_voxels {self.min_voxels} > max_voxels {self.max_voxels}")
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry) or self.min_voxels is None:
            return None
        total = int(np.prod(geometry.info.shape))
        if self.min_voxels > total:
            return ("min_voxels", f"{geometry.volume} has {total} voxels, fewer than "
                                  f"min_voxels {self.min_voxels}")  # fmt: skip
        return None


def _mask(p: MaskParams, s: InvState) -> bool:
    hits = [m for m in s.masks if p.names(m.name)]
    if not p.present:
        return not hits
    for m in hits:
        if p.threshold is not None and list(m.threshold) != p.threshold:
            continue
        if p.current is not None and m.current != p.current:
            continue
        if p.visible is not None and m.visible != p.visible:
            continue
        if p.edited is not None and m.edited != p.edited:
            continue
        if p.min_voxels is not None and (m.voxels is None or m.voxels < p.min_voxels):
            continue
        if p.max_voxels is not None and (m.voxels is None or m.voxels > p.max_voxels):
            continue
        return True
    return False


def _mask_count(p: CountParams, s: InvState) -> bool:
    return p.holds_for(len(s.masks))


class DiceParams(CheckParams):
    """The Dice coefficient of a mask (`mask` by name, or `current: true`) with the union of
    the phantom's `structures`, within [`min`, `max`]; over the slices [first, last] of `view`
    when `slices` is given."""

    mask: str | None = Field(None, min_length=1)
    current: bool | None = None
    structures: list[PhantomStructure] = Field(min_length=1, max_length=8)
    min: float | None = Field(None, ge=0, le=1)
    max: float | None = Field(None, ge=0, le=1)
    view: View | None = None
    slices: list[int] | None = Field(None, min_length=2, max_length=2)

    @model_validator(mode="after")
    def _rules(self) -> DiceParams:
        if (self.mask is None) == (self.current is not True):
            raise ValueError("give 'mask' (a name) or 'current: true', one of them")
        if self.current is False:
            raise ValueError("'current: false' names no mask")
        if self.min is None and self.max is None:
            raise ValueError("needs 'min' and/or 'max'")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        if (self.view is None) != (self.slices is None):
            raise ValueError("'view' and 'slices' go together")
        if self.slices is not None and not 0 <= self.slices[0] <= self.slices[1]:
            raise ValueError("'slices' is [first, last], 0 <= first <= last")
        return self

    def vacuous(self) -> str | None:
        if (self.min in (None, 0.0)) and (self.max in (None, 1.0)):
            return "the range holds for any Dice coefficient"
        return None

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry):
            return None
        why = geometry.structures_problem(self.structures)
        if why is not None:
            return ("structures", why)
        if self.view is not None and self.slices is not None:
            why = geometry.region_problem(self.structures, self.view, *self.slices)
            if why is not None:
                return ("slices", why)
        return None


@dataclass(frozen=True)
class MaskReading:
    """What a Dice check reads: the state (for the current mask's name) and the voxels."""

    state: InvState
    voxels: MaskVoxels


def _dice(p: DiceParams, r: MaskReading) -> bool:
    name = p.mask
    if p.current:
        cur = r.state.current_mask()
        name = cur.name if cur is not None else None
    vol = r.voxels.volume
    if name is None or vol is None or name not in r.voxels.masks:
        return False
    if any(s not in {x.name for x in volume(vol).structures} for s in p.structures):
        return False
    slices = (p.slices[0], p.slices[1]) if p.slices is not None else None
    d = region_dice(r.voxels.masks[name], vol, p.structures, p.view, slices)
    if d is None:  # no truth there: nothing holds (task validation refuses such a region)
        return False
    return (p.min is None or d >= p.min) and (p.max is None or d <= p.max)


# -- surfaces ----------------------------------------------------------------------------------


class SurfaceParams(_Named):
    """A surface with these properties exists (`present: false`: none of that name/regex);
    `volume_of`: its volume is within `tolerance` (relative) of the structures' true volume."""

    present: bool = True
    volume_of: list[PhantomStructure] | None = Field(None, min_length=1, max_length=8)
    tolerance: float = Field(0.05, gt=0, le=1)
    min_volume: float | None = Field(None, ge=0)
    max_volume: float | None = Field(None, ge=0)
    transparency: float | None = Field(None, ge=0, le=1)
    colour: list[float] | None = Field(None, min_length=3, max_length=3)
    tol: float = Field(0.05, ge=0, le=1)
    visible: bool | None = None

    @model_validator(mode="after")
    def _absent_alone(self) -> SurfaceParams:
        props = (self.volume_of, self.min_volume, self.max_volume, self.transparency,
                 self.colour, self.visible)  # fmt: skip
        if not self.present and any(p is not None for p in props):
            raise ValueError("'present: false' takes no other property")
        if (self.min_volume is not None and self.max_volume is not None
                and self.min_volume > self.max_volume):  # fmt: skip
            raise ValueError(f"min_volume {self.min_volume} > max_volume {self.max_volume}")
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry):
            return None
        if self.volume_of is not None:
            why = geometry.structures_problem(self.volume_of)
            if why is not None:
                return ("volume_of", why)
        v = geometry.info
        whole = v.slices * v.rows * v.cols * v.voxel_mm3
        if self.min_volume is not None and self.min_volume > whole:
            return ("min_volume", f"{geometry.volume} holds {whole:.0f} mm³, less than "
                                  f"min_volume {self.min_volume}")  # fmt: skip
        return None


def true_volume_mm3(vol: str, structures: list[str] | tuple[str, ...]) -> float:
    v = volume(vol)
    return float(true_mask(vol, *structures).sum()) * v.voxel_mm3


def _surface(p: SurfaceParams, s: InvState) -> bool:
    hits = [x for x in s.surfaces if p.names(x.name)]
    if not p.present:
        return not hits
    for x in hits:
        if p.volume_of is not None:
            if s.volume is None or any(
                n not in {y.name for y in volume(s.volume).structures} for n in p.volume_of
            ):
                return False
            want = true_volume_mm3(s.volume, p.volume_of)
            if abs(x.volume - want) > p.tolerance * want:
                continue
        if p.min_volume is not None and x.volume < p.min_volume:
            continue
        if p.max_volume is not None and x.volume > p.max_volume:
            continue
        if p.transparency is not None and abs(x.transparency - p.transparency) > p.tol:
            continue
        if p.colour is not None and (
            len(x.colour) < 3
            or max(abs(a - b) for a, b in zip(x.colour[:3], p.colour, strict=True)) > p.tol
        ):
            continue
        if p.visible is not None and x.visible != p.visible:
            continue
        return True
    return False


def _surface_count(p: CountParams, s: InvState) -> bool:
    return p.holds_for(len(s.surfaces))


# -- measurements ------------------------------------------------------------------------------


class MeasureParams(CheckParams):
    """A measurement (`kind_of` linear or angular) with these properties exists
    (`present: false`: none does): on `view` (its location) and `slice`; `value` within `tol`
    or [`min`, `max`] (mm, degrees); `points`: its points lie within `tolerance_mm` of these
    landmarks (on the measurement's own slice; a linear one's two ends in either order, an
    angular one's three points with the vertex in the middle)."""

    kind_of: Literal["linear", "angular"] | None = None
    present: bool = True
    view: View | None = None
    slice: int | None = Field(None, ge=0)
    value: float | None = None
    tol: float = Field(1.0, ge=0)
    min: float | None = None
    max: float | None = None
    points: list[LandmarkName] | None = Field(None, min_length=2, max_length=3)
    tolerance_mm: float = Field(3.0, gt=0, le=20)

    @model_validator(mode="after")
    def _rules(self) -> MeasureParams:
        if self.value is not None and (self.min is not None or self.max is not None):
            raise ValueError("give 'value' (with 'tol') or 'min'/'max', not both")
        if self.points is not None:
            views = {parse_landmark(x).view for x in self.points}
            if len(views) != 1 or (self.view is not None and views != {self.view}):
                raise ValueError("the points' landmarks must name the measurement's view")
            need = {"linear": 2, "angular": 3}.get(self.kind_of or "")
            if need is None or len(self.points) != need:
                raise ValueError("'points' needs 'kind_of' (linear: 2 landmarks, angular: 3)")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry):
            return None
        if self.slice is not None:
            views = [self.view] if self.view is not None else list(VIEWS)
            whys = [geometry.slice_problem(v, self.slice) for v in views]
            if all(w is not None for w in whys):  # no view (of those it may lie on) has it
                return ("slice", str(whys[0]))
        if self.points is not None:
            why = geometry.structures_problem([parse_landmark(x).structure for x in self.points])
            if why is None and self.slice is not None:
                why = next((w for x in self.points
                            if (w := geometry.landmark_problem(x, self.slice))), None)  # fmt: skip
            if why is not None:
                return ("points", why)
        # a value no measurement in the volume can have: longer than its diagonal, an angle
        # over 180 degrees
        diagonal = geometry.diagonal_mm
        limit, what = {
            "linear": (diagonal, f"no length in {geometry.volume} is over {diagonal:.0f} mm"),
            "angular": (180.0, "no angle is over 180 degrees"),
        }.get(self.kind_of or "", (max(diagonal, 180.0), "no measurement can be that large"))
        for name, low in (("value", None if self.value is None else self.value - self.tol),
                          ("min", self.min)):  # fmt: skip
            if low is not None and low > limit:
                return (name, what)
        if self.max is not None and self.max < 0:
            return ("max", "no measurement is below 0")
        return None


def _points_match(p: MeasureParams, vol: str, pts: tuple[tuple[float, float, float], ...],
                  number: int) -> bool:  # fmt: skip
    assert p.points is not None
    want = [landmark_world(vol, parse_landmark(x), number) for x in p.points]
    if any(w is None for w in want) or len(pts) != len(want):
        return False
    ws = [w for w in want if w is not None]

    def near(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return distance_mm(a, b) <= p.tolerance_mm

    if len(ws) == 2:
        return (near(pts[0], ws[0]) and near(pts[1], ws[1])) or (
            near(pts[0], ws[1]) and near(pts[1], ws[0])
        )
    return near(pts[1], ws[1]) and (
        (near(pts[0], ws[0]) and near(pts[2], ws[2]))
        or (near(pts[0], ws[2]) and near(pts[2], ws[0]))
    )


def _measure(p: MeasureParams, s: InvState) -> bool:
    ok = False
    for m in s.measures:
        if p.kind_of is not None and m.kind != p.kind_of:
            continue
        if p.view is not None and m.location != p.view:
            continue
        if p.slice is not None and m.slice != p.slice:
            continue
        if p.value is not None and abs(m.value - p.value) > p.tol:
            continue
        if p.min is not None and m.value < p.min:
            continue
        if p.max is not None and m.value > p.max:
            continue
        if p.points is not None and (
            s.volume is None or not _points_match(p, s.volume, m.points, m.slice)
        ):
            continue
        ok = True
        break
    return ok == p.present


class MeasureCountParams(CountParams):
    kind_of: Literal["linear", "angular"] | None = None


def _measure_count(p: MeasureCountParams, s: InvState) -> bool:
    return p.holds_for(sum(1 for m in s.measures if p.kind_of in (None, m.kind)))


# -- views, window, layout, project, dialogs ---------------------------------------------------


class SliceParams(CheckParams):
    """The slice a view shows: exactly `slice`, or within [`min`, `max`]."""

    view: View
    slice: int | None = Field(None, ge=0)
    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one(self) -> SliceParams:
        _exactly_or_within("slice", self.slice, self.min, self.max)
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry):
            return None
        for name in ("slice", "min", "max"):
            k = getattr(self, name)
            why = geometry.slice_problem(self.view, k) if k is not None else None
            if why is not None:
                return (name, why)
        return None


def _slice(p: SliceParams, s: InvState) -> bool:
    v = s.view(p.view)
    if v is None or v.slice is None:
        return False
    if p.slice is not None:
        return v.slice == p.slice
    return (p.min is None or v.slice >= p.min) and (p.max is None or v.slice <= p.max)


class WindowParams(CheckParams):
    """The slices' window: exactly one of `preset` (InVesalius's name), `width` + `level`, or
    `changed` (true: differs from the study's own window; false: equals it); within
    `tolerance`."""

    preset: PresetName | None = None
    width: float | None = None
    level: float | None = None
    changed: bool | None = None
    tolerance: float = Field(1.0, ge=0)

    @model_validator(mode="after")
    def _one(self) -> WindowParams:
        n = sum((self.preset is not None, self.width is not None or self.level is not None,
                 self.changed is not None))  # fmt: skip
        if n != 1:
            raise ValueError("needs exactly one of 'preset', 'width'+'level', 'changed'")
        if (self.width is None) != (self.level is None):
            raise ValueError("'width' and 'level' go together")
        return self


def _window(p: WindowParams, s: InvState) -> bool:
    if s.window is None:
        return False
    w, lv = s.window

    def near(width: float, level: float) -> bool:
        return abs(w - width) <= p.tolerance and abs(lv - level) <= p.tolerance

    if p.preset is not None:
        return near(*WINDOW_PRESETS[p.preset])
    if p.width is not None and p.level is not None:
        return near(p.width, p.level)
    if s.volume is None:
        return False
    level, width = volume(s.volume).window
    return near(width, level) != p.changed


class LayoutParams(CheckParams):
    """The task panel shown (`task_panel`) and/or the view shown alone (`maximized`: a view,
    or `none` for the four views side by side)."""

    task_panel: bool | None = None
    maximized: Literal["axial", "coronal", "sagittal", "volume", "none"] | None = None

    @model_validator(mode="after")
    def _one(self) -> LayoutParams:
        if self.task_panel is None and self.maximized is None:
            raise ValueError("needs 'task_panel' and/or 'maximized'")
        return self


def _layout(p: LayoutParams, s: InvState) -> bool:
    if p.task_panel is not None and s.task_panel != p.task_panel:
        return False
    return p.maximized is None or (s.maximized() or "none") == p.maximized


class ProjectParams(CheckParams):
    """The project: `open`, `modified` (unsaved changes), `saved_as` (the project is saved, no
    change left unsaved, as this name in the export folder: the open project, or when none is
    open the one closed last, as "Yes, save" on closing leaves it), `discarded` (true: a
    project was closed with its changes unsaved since the task's start; false: none was)."""

    open: bool | None = None
    modified: bool | None = None
    saved_as: ExportName | None = None
    discarded: bool | None = None

    @model_validator(mode="after")
    def _one(self) -> ProjectParams:
        if all(x is None for x in (self.open, self.modified, self.saved_as, self.discarded)):
            raise ValueError("needs 'open', 'modified', 'saved_as' and/or 'discarded'")
        return self


def _project(p: ProjectParams, s: InvState) -> bool:
    if p.discarded is not None and (s.discarded > 0) != p.discarded:
        return False
    if p.open is not None and s.project_open != p.open:
        return False
    if p.modified is not None and (not s.project_open or s.modified != p.modified):
        return False
    if p.saved_as is not None:
        if s.project_open:
            path = (s.project_path if s.saved else None) or ""
        else:
            path = s.closed_saved or ""
        path = path.replace("\\", "/")
        if not (path.endswith("/" + p.saved_as) and "/exports/" in path):
            return False
    return True


class DialogParams(CheckParams):
    """A window other than the main one whose title matches `title` (a regex) is open
    (`present: false`: none is): InVesalius's own dialogs and GTK's (message boxes, file
    choosers), by AT-SPI."""

    title: Regex
    present: bool = True


def _dialog(p: DialogParams, titles: tuple[str, ...]) -> bool:
    return any(re.search(p.title, t) for t in titles) == p.present


# -- files -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportSnapshot:
    """The export folder as a file check sees it: the files its parameters name, the digests of
    the files the task's start put there, and the loaded phantom."""

    files: dict[str, ExportedFile]
    names: tuple[str, ...]  # every file name in the folder
    seeded: dict[str, str] = field(default_factory=dict)
    volume: str | None = None


def nifti_to_phantom(img: NiftiImage, shape: tuple[int, int, int]) -> np.ndarray | None:
    """A NIfTI written by InVesalius's "Export project" (x, y, z: an image, or a mask with its
    one-voxel border of flags) as a boolean volume in phantom order; None when the geometry
    is not the phantom's."""
    z, r, c = shape
    a = img.data
    if a.ndim != 3:
        return None
    if a.shape == (c, r, z):
        return np.asarray(a.transpose(2, 1, 0))
    if a.shape == (c + 1, r + 1, z + 1):  # a mask: border slabs at x=0, y=last, z=0
        out: np.ndarray = np.asarray(a[1:, :r, 1:].transpose(2, 1, 0)) > 127
        return out
    return None


class FileParams(CheckParams):
    """A file in the export folder: `file` (a name) or `pattern` (a glob; the check holds when
    one matching file satisfies the rest); `exists` (false: no such file); `format` it must
    parse as (stl, nifti; png, jpeg by their signature); `volume_of` (an STL's enclosed volume
    within `tolerance` of the structures');
    `dice_with` + `min` (a NIfTI mask's Dice with the structures); `geometry` (a NIfTI has the
    phantom's dimensions and voxel size); `unchanged` (true: the file the task's start put there
    is untouched; false: it was replaced)."""

    file: ExportName | None = None
    pattern: ExportPattern | None = None
    exists: bool = True
    format: Literal["stl", "nifti", "png", "jpeg", "any"] = "any"
    volume_of: list[PhantomStructure] | None = Field(None, min_length=1, max_length=8)
    tolerance: float = Field(0.1, gt=0, le=1)
    dice_with: list[PhantomStructure] | None = Field(None, min_length=1, max_length=8)
    min: float = Field(0.9, ge=0, le=1)
    geometry: bool | None = None
    unchanged: bool | None = None

    @model_validator(mode="after")
    def _rules(self) -> FileParams:
        if (self.file is None) == (self.pattern is None):
            raise ValueError("give 'file' or 'pattern', one of them")
        props = (self.volume_of, self.dice_with, self.geometry, self.unchanged)
        if not self.exists and (any(p is not None for p in props) or self.format != "any"):
            raise ValueError("'exists: false' takes no other property")
        if self.volume_of is not None and self.format != "stl":
            raise ValueError("'volume_of' needs 'format: stl'")
        if (self.dice_with is not None or self.geometry is not None) and self.format != "nifti":
            raise ValueError("'dice_with' and 'geometry' need 'format: nifti'")
        if self.unchanged is not None and self.file is None:
            raise ValueError("'unchanged' needs 'file'")
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, PhantomGeometry):
            return None
        for name in ("volume_of", "dice_with"):
            names = getattr(self, name)
            why = geometry.structures_problem(names) if names is not None else None
            if why is not None:
                return (name, why)
        return None

    def wanted(self, names: tuple[str, ...]) -> list[str]:
        if self.file is not None:
            return [self.file]
        assert self.pattern is not None
        return [n for n in names if fnmatch.fnmatchcase(n, self.pattern)]


def _file_ok(p: FileParams, f: ExportedFile, snap: ExportSnapshot) -> bool:
    if not f.exists:
        return False
    if p.format == "stl" and f.mesh is None:
        return False
    if p.format == "nifti" and f.nifti is None:
        return False
    if p.format in ("png", "jpeg") and f.picture != p.format:
        return False
    if p.unchanged is not None:
        seeded = snap.seeded.get(f.name)
        if seeded is None or (f.sha256 == seeded) != p.unchanged:
            return False
    vol = snap.volume
    if p.volume_of is not None:
        if vol is None or f.mesh is None:
            return False
        want = true_volume_mm3(vol, p.volume_of)
        if abs(f.mesh.volume - want) > p.tolerance * want:
            return False
    if p.geometry is not None or p.dice_with is not None:
        if vol is None or f.nifti is None:
            return False
        v = volume(vol)
        arr = nifti_to_phantom(f.nifti, v.shape)
        zooms_ok = np.allclose(f.nifti.zooms[:3], (v.spacing, v.spacing, v.thickness), atol=1e-3)
        if p.geometry is not None and ((arr is not None and zooms_ok) != p.geometry):
            return False
        if p.dice_with is not None:
            if arr is None or arr.dtype != bool:
                return False
            if mask_dice(arr, vol, p.dice_with) < p.min:
                return False
    return True


def _file(p: FileParams, snap: ExportSnapshot) -> bool:
    names = p.wanted(snap.names)
    found = [snap.files[n] for n in names if n in snap.files and snap.files[n].exists]
    if not p.exists:
        return not found
    return any(_file_ok(p, f, snap) for f in found)


# -- the kinds ---------------------------------------------------------------------------------

INV_KINDS = CheckKinds(
    CheckKind("inv.mask", MaskParams, "inv", _mask,
              "a mask (name or regex) with a threshold, current, visible, voxel count"),
    CheckKind("inv.mask_count", CountParams, "inv", _mask_count, "the number of masks"),
    CheckKind("inv.mask_dice", DiceParams, "inv_voxels", _dice,
              "a mask's Dice coefficient with the phantom's true structures"),
    CheckKind("inv.surface", SurfaceParams, "inv", _surface,
              "a 3D surface: volume (vs the truth), transparency, colour, visibility"),
    CheckKind("inv.surface_count", CountParams, "inv", _surface_count,
              "the number of surfaces"),
    CheckKind("inv.measure", MeasureParams, "inv", _measure,
              "a linear or angular measurement: view, slice, value, end points"),
    CheckKind("inv.measure_count", MeasureCountParams, "inv", _measure_count,
              "the number of measurements"),
    CheckKind("inv.slice", SliceParams, "inv", _slice, "the slice a view shows"),
    CheckKind("inv.window", WindowParams, "inv", _window, "the slices' window width and level"),
    CheckKind("inv.layout", LayoutParams, "inv", _layout, "task panel, the view shown alone"),
    CheckKind("inv.project", ProjectParams, "inv", _project, "open, modified, saved as"),
    CheckKind("inv.dialog", DialogParams, "inv_titles", _dialog, "a dialog open (by title)"),
    CheckKind("inv.file", FileParams, "inv_files", _file,
              "a file in the export folder: STL volume, NIfTI mask Dice, untouched"),
)  # fmt: skip

# every kind the environment's `check` understands
CHECK_KINDS = INV_KINDS + COLLATERAL_KINDS + DESKTOP_KINDS
