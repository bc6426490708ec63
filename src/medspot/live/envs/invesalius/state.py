"""InVesalius's state as the probe reports it, as frozen dataclasses the check judges read.

`InvState.from_probe(doc)` parses the probe's `state` answer; `MaskVoxels` holds masks' voxels
(read only for the checks that compare a mask with the truth); `ExportedFile` is a file the
task asked for, read from the instance's export folder (`files.read_export`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "VIEWS",
    "InvState",
    "MaskInfo",
    "MaskVoxels",
    "MeasureInfo",
    "SurfaceInfo",
    "ViewInfo",
]

VIEWS = ("axial", "coronal", "sagittal")


@dataclass(frozen=True, slots=True)
class MaskInfo:
    index: int
    name: str
    threshold: tuple[int, int]
    colour: tuple[float, ...]
    visible: bool
    current: bool
    edited: bool
    voxels: int | None  # None when the reader skipped counting


@dataclass(frozen=True, slots=True)
class SurfaceInfo:
    index: int
    name: str
    volume: float  # mm3, as InVesalius computes it
    area: float  # mm2
    colour: tuple[float, ...]  # 0..1
    transparency: float  # 0..1
    visible: bool


@dataclass(frozen=True, slots=True)
class MeasureInfo:
    index: int
    name: str
    kind: str  # linear | angular
    value: float  # mm or degrees
    location: str  # axial | coronal | sagittal | surface | volume
    slice: int
    points: tuple[tuple[float, float, float], ...]  # InVesalius's world coordinates (mm)
    visible: bool


@dataclass(frozen=True, slots=True)
class ViewInfo:
    view: str  # axial | coronal | sagittal | volume
    slice: int | None
    slices: int | None
    shown: bool
    box: tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class InvState:
    """What the probe read from InVesalius at one moment."""

    ready: bool
    title: str
    busy: bool
    project_open: bool
    modified: bool
    saved: bool
    project_path: str | None
    discarded: int  # projects closed with unsaved changes since the start (by the user)
    volume: str | None  # the phantom the environment loaded (its name), None when closed
    image_shape: tuple[int, ...] | None
    spacing: tuple[float, float, float] | None
    masks: tuple[MaskInfo, ...] = ()
    surfaces: tuple[SurfaceInfo, ...] = ()
    measures: tuple[MeasureInfo, ...] = ()
    views: tuple[ViewInfo, ...] = ()
    window: tuple[float, float] | None = None  # (width, level)
    task_panel: bool | None = None
    panes: dict[str, bool] = field(default_factory=dict)
    dialogs: tuple[str, ...] = ()  # titles of the application's own open dialogs (wx)
    style: str = ""
    # the file the project the user closed last was saved to, with no change left unsaved
    # (None: none was closed since the start, or it was closed with unsaved changes)
    closed_saved: str | None = None

    def mask(self, name: str) -> MaskInfo | None:
        return next((m for m in self.masks if m.name == name), None)

    def current_mask(self) -> MaskInfo | None:
        return next((m for m in self.masks if m.current), None)

    def view(self, name: str) -> ViewInfo | None:
        return next((v for v in self.views if v.view == name), None)

    def maximized(self) -> str | None:
        """The one view shown alone (an enlarged pane), or None when several are shown."""
        shown = [v.view for v in self.views if v.shown]
        return shown[0] if len(shown) == 1 else None

    @classmethod
    def from_probe(cls, d: dict[str, Any], volume: str | None) -> InvState:
        proj = d.get("project") or {}
        img = d.get("image") or {}
        layout = d.get("layout") or {}
        return cls(
            ready=bool(d.get("ready")),
            title=str(d.get("title", "")),
            busy=bool(d.get("busy")),
            project_open=bool(proj.get("open")),
            modified=bool(proj.get("modified")),
            saved=bool(proj.get("saved")),
            project_path=proj.get("path"),
            discarded=int(proj.get("discarded", 0)),
            volume=volume if proj.get("open") else None,
            image_shape=tuple(img["shape"]) if img.get("shape") else None,
            spacing=_spacing(img.get("spacing")),
            masks=tuple(
                MaskInfo(
                    int(m["index"]),
                    str(m["name"]),
                    (int(m["threshold"][0]), int(m["threshold"][1])),
                    tuple(m.get("colour") or ()),
                    bool(m["visible"]),
                    bool(m["current"]),
                    bool(m.get("edited")),
                    None if m.get("voxels") is None else int(m["voxels"]),
                )
                for m in d.get("masks") or ()
            ),
            surfaces=tuple(
                SurfaceInfo(
                    int(s["index"]),
                    str(s["name"]),
                    float(s["volume"]),
                    float(s["area"]),
                    tuple(s.get("colour") or ()),
                    float(s["transparency"]),
                    bool(s["visible"]),
                )
                for s in d.get("surfaces") or ()
            ),
            measures=tuple(
                MeasureInfo(
                    int(m["index"]),
                    str(m["name"]),
                    str(m["kind"]),
                    float(m["value"]),
                    str(m["location"]),
                    int(m["slice"]),
                    tuple((float(p[0]), float(p[1]), float(p[2])) for p in m["points"]),
                    bool(m["visible"]),
                )
                for m in d.get("measures") or ()
            ),
            views=tuple(
                ViewInfo(
                    str(v["view"]),
                    v.get("slice"),
                    v.get("slices"),
                    bool(v["shown"]),
                    (int(v["box"][0]), int(v["box"][1]), int(v["box"][2]), int(v["box"][3])),
                )
                for v in d.get("views") or ()
            ),
            window=(float(d["window"][0]), float(d["window"][1])) if d.get("window") else None,
            task_panel=layout.get("task_panel"),
            panes={str(k): bool(v) for k, v in (layout.get("panes") or {}).items()},
            dialogs=tuple(str(x.get("title", "")) for x in d.get("dialogs") or ()),
            style=str(d.get("style", "")),
            closed_saved=proj.get("closed_saved"),
        )


def _spacing(v: Any) -> tuple[float, float, float] | None:
    if not v:
        return None
    return (float(v[0]), float(v[1]), float(v[2]))


@dataclass(frozen=True)
class MaskVoxels:
    """The voxels of the masks a check names (phantom index order z, y, x), and the volume
    they belong to; a name missing from `masks` is a mask that does not exist."""

    volume: str | None
    masks: dict[str, np.ndarray]
