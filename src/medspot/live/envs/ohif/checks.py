"""The `ohif` environment's check kinds (`CHECK_KINDS`: its own `ohif.*`, the page's `web.*`
and the Orthanc database's `orthanc.*`), and the OHIF Viewer's application state they read,
read from the page.

`STATE_JS` reads, in one call, what the checks need from the viewer's own services
(`window.services`: viewport grid, cornerstone viewports, measurement service) and from
cornerstone (`window.cornerstone`: VOI range, zoom, current image, metadata): the route, the
layout, every viewport's series and study (those of the image it shows) / slice / VOI / zoom,
and every measurement with its end points in image coordinates of the image it was drawn on
(`utilities.worldToImageCoords`; image coordinates put (0, 0) at the top-left CORNER of the
first pixel, so a pixel (column, row) has its centre at (column + 0.5, row + 0.5)).
`LANDMARK_JS` projects an image point of the active viewport's current image to page pixels
(`imageToWorldCoords`, then `worldToCanvas`, plus the canvas's offset), which is where the
oracle drags, and the on-screen length of a radius in image pixels (the marker's box).

The `ohif.*` check kinds (`OHIF_KINDS`) judge such a state (`OhifState`: what STATE_JS
returned, and the environment's catalogue) with pure functions, testable without a browser.
Every measurement also carries the image it was drawn on (`instance`: its InstanceNumber;
`position`: 1-based in the stack of a viewport showing its series), so that "measure on
slice 3" is not passed by a Length drawn on slice 1; every view check (window, zoom, slice)
names the series it is about (`series`) and is judged on a viewport showing it, so that a
zoom of another series, or of another study of the patient loaded from the study browser,
does not pass "zoom in on the MR".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import Field, model_validator

from medspot.live.core.checks import CheckKind, CheckKinds, CheckParams, pattern_matches_anything
from medspot.live.core.tasks import StartSpec
from medspot.live.drivers.web_checks import PAGE_KINDS
from medspot.live.envs.orthanc.checks import ORTHANC_KINDS, CountRange
from medspot.live.services.names import Landmark, SeededSeries, SeededStudy
from medspot.live.services.seed import LANDMARKS, Catalogue

__all__ = [
    "CHECK_KINDS",
    "LANDMARK_JS",
    "OHIF_KINDS",
    "READY_JS",
    "STATE_JS",
    "VOI_PRESETS",
    "OhifState",
    "voi_center_width",
]

# The viewer's CT window presets (center, width), as its "Modality Window Presets" menu names them.
VOI_PRESETS: dict[str, tuple[float, float]] = {
    "Soft tissue": (40, 400),
    "Lung": (-600, 1500),
    "Liver": (90, 150),
    "Bone": (480, 2500),
    "Brain": (40, 80),
}

_VIEWPORT = """
  const vpState = (vid) => {
    const vp = s.cornerstoneViewportService.getCornerstoneViewport(vid);
    if (!vp || !vp.getCurrentImageId || !vp.getCurrentImageId()) return {id: vid, ready: false};
    const im = vp.getCurrentImageId(); const md = window.cornerstone.metaData;
    const ser = md.get('generalSeriesModule', im) || {};
    const img = md.get('generalImageModule', im) || {};
    const p = vp.getProperties ? vp.getProperties() : {};
    const ids = vp.getImageIds ? vp.getImageIds() : [];
    return {id: vid, ready: true, series: ser.seriesInstanceUID || null,
      study: ser.studyInstanceUID || null, instance: img.instanceNumber ?? null,
      index: vp.getCurrentImageIdIndex(), n: ids.length,
      voi: p.voiRange ? [p.voiRange.lower, p.voiRange.upper] : null,
      zoom: vp.getZoom ? vp.getZoom() : null};
  };
"""

STATE_JS = (
    "() => { const s = window.services; if (!s || !s.viewportGridService) "
    "return {route: location.pathname + location.search, viewer: false};"
    + _VIEWPORT
    + """
  const g = s.viewportGridService.getState(); const u = window.cornerstone.utilities;
  const vps = Array.from(g.viewports.keys()).map(vpState);
  const ms = s.measurementService.getMeasurements().map((m) => {
    let pts = null, spacing = null;
    try {
      if (m.referencedImageId && m.points) {
        pts = m.points.map((p) => Array.from(u.worldToImageCoords(m.referencedImageId, p)));
        const pl = window.cornerstone.metaData.get('imagePlaneModule', m.referencedImageId);
        spacing = pl ? [pl.columnPixelSpacing || 1, pl.rowPixelSpacing || 1] : null;
      }
    } catch (e) { pts = null; }
    let instance = null, position = null;
    if (m.referencedImageId) {
      const gi = window.cornerstone.metaData.get('generalImageModule', m.referencedImageId);
      instance = gi && gi.instanceNumber != null ? gi.instanceNumber : null;
      for (const vid of g.viewports.keys()) {
        const vp = s.cornerstoneViewportService.getCornerstoneViewport(vid);
        const k = vp && vp.getImageIds ? vp.getImageIds().indexOf(m.referencedImageId) : -1;
        if (k >= 0) { position = k + 1; break; }
      }
    }
    return {tool: m.toolName, series: m.referenceSeriesUID || null, points: pts,
      spacing: spacing, instance: instance, position: position,
      text: (m.displayText && m.displayText.primary || []).join(' ')};
  });
  return {route: location.pathname + location.search, viewer: true,
    layout: [g.layout.numRows, g.layout.numCols], active: g.activeViewportId,
    viewports: vps, measurements: ms};
}"""
)

READY_JS = (
    "() => { try { const s = window.services; const id ="
    " s.viewportGridService.getState().activeViewportId;"
    " const vp = s.cornerstoneViewportService.getCornerstoneViewport(id);"
    " return !!(vp && vp.element && vp.element.isConnected && vp.getCurrentImageId()"
    " && vp.getImageData && vp.getImageData()); }"
    " catch (e) { return false; } }"
)

LANDMARK_JS = """([x, y, rad]) => {
  const s = window.services; if (!s || !s.viewportGridService) return null;
  const vp = s.cornerstoneViewportService.getCornerstoneViewport(
    s.viewportGridService.getState().activeViewportId);
  if (!vp || !vp.getCurrentImageId || !vp.getCurrentImageId()) return null;
  const im = vp.getCurrentImageId(); const u = window.cornerstone.utilities;
  const c = vp.worldToCanvas(u.imageToWorldCoords(im, [x, y]));
  const e = vp.worldToCanvas(u.imageToWorldCoords(im, [x + rad, y]));
  const r = vp.canvas.getBoundingClientRect();
  return [r.left + c[0], r.top + c[1], Math.hypot(e[0] - c[0], e[1] - c[1])];
}"""


def voi_center_width(lower: float, upper: float) -> tuple[float, float]:
    """Cornerstone's linear VOI range -> DICOM (center, width): lower = c - 0.5 - (w - 1) / 2."""
    return (lower + upper) / 2 + 0.5, upper - lower + 1


@dataclass(frozen=True)
class OhifState:
    """What STATE_JS read, and the catalogue of the environment's seed (names -> UIDs)."""

    raw: Mapping[str, Any]
    catalogue: Catalogue

    @property
    def viewer(self) -> bool:
        return bool(self.raw.get("viewer"))

    def viewport(self, k: int | None) -> Mapping[str, Any] | None:
        """Viewport `k` (0-based, grid order), or the active one; None when it has no image."""
        vps: list[Mapping[str, Any]] = list(self.raw.get("viewports") or [])
        if k is not None:
            vp = vps[k] if 0 <= k < len(vps) else None
        else:
            vp = next((v for v in vps if v.get("id") == self.raw.get("active")), None)
        return vp if vp is not None and vp.get("ready") else None

    def shows(self, vp: Mapping[str, Any], series: str) -> bool:
        """Whether viewport `vp`'s image on screen is of the seeded `series`, in its study
        (a state read without the study is judged by the series' UID alone)."""
        study = self.catalogue.study(series.partition("/")[0]).uid
        return bool(
            vp.get("ready")
            and vp.get("series") == self.catalogue.series(series).uid
            and vp.get("study") in (None, study)
        )

    def showing(self, series: str) -> list[Mapping[str, Any]]:
        """The viewports (with `k`: their grid index) that show the seeded `series`."""
        vps: list[Mapping[str, Any]] = list(self.raw.get("viewports") or [])
        return [{**vp, "k": k} for k, vp in enumerate(vps) if self.shows(vp, series)]


class _OnViewport(CheckParams):
    viewport: int | None = Field(None, ge=0)  # 0-based in grid order; default: the active one


class _ViewCheck(_OnViewport):
    """A check of what a viewport displays (window, zoom, slice), about `series`: it holds when
    a viewport showing that series (that study's, the series of the image on screen) has the
    state; with `viewport` too, that viewport must show it. Without `series` the active (or
    `viewport`) viewport is judged whatever it shows, and the audit reports it: another series,
    even another study of the patient loaded from the study browser, would pass."""

    series: SeededSeries | None = None

    def view_without_series(self) -> str | None:
        if self.series is not None:
            return None
        return "no 'series': the same view of any other series (or study) loaded there passes"

    def candidates(self, s: OhifState) -> list[Mapping[str, Any]]:
        """The viewports this check is judged on (it holds when one of them has the state)."""
        if not s.viewer:
            return []
        if self.series is None:
            vp = s.viewport(self.viewport)
            return [] if vp is None else [vp]
        return [vp for vp in s.showing(self.series) if self.viewport in (None, vp["k"])]


# -- measurements ------------------------------------------------------------------------------


def _landmark_mm(points: list[list[float]], spacing: list[float], a: str, b: str) -> float:
    """The larger end-point error (mm) of a two-point measurement against landmarks a, b
    (either order)."""
    sx, sy = spacing

    def err(pt: list[float], lm: str) -> float:
        col, row = LANDMARKS[lm]
        return math.hypot((pt[0] - (col + 0.5)) * sx, (pt[1] - (row + 0.5)) * sy)

    p, q = points[0], points[-1]
    return min(max(err(p, a), err(q, b)), max(err(p, b), err(q, a)))


class MeasurementParams(CheckParams):
    """A `tool` measurement from landmark `from` to `to` (either order), within
    `tolerance_mm` at both ends; on `series`, on the image at stack `position` (1-based) or
    with InstanceNumber `instance`; `present: false`: no such measurement."""

    from_: Landmark = Field(alias="from")
    to: Landmark
    tolerance_mm: float = Field(4.0, gt=0)
    tool: str = "Length"
    series: SeededSeries | None = None
    position: int | None = Field(None, ge=1)
    instance: int | None = Field(None, ge=1)
    present: bool = True

    @model_validator(mode="after")
    def _one_image(self) -> MeasurementParams:
        if self.position is not None and self.instance is not None:
            raise ValueError("'position' or 'instance', not both")
        if self.from_ == self.to:
            raise ValueError("'from' and 'to' name the same landmark")
        return self

    def vacuous(self) -> str | None:
        if self.tolerance_mm >= 400:  # more than any seeded image's diagonal
            return f"tolerance_mm {self.tolerance_mm} accepts a measurement anywhere"
        return None

    def unanchored(self) -> str | None:
        if not self.present:
            return None  # "no such measurement on any image" is the stricter claim
        if self.series is None:
            return "no 'series': a measurement on any series passes"
        if self.position is None and self.instance is None:
            return "no 'position' or 'instance': a measurement on any image of the series passes"
        return None

    def placed_count(self) -> int:
        return 1 if self.present else 0

    def needs_change(self, start: StartSpec) -> str | None:
        if not self.present or start.prepare or start.params.get("measure"):
            return None
        return "a start without `measure` or `start.prepare` has no measurement"

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, Catalogue):
            return None
        for name in ("position", "instance"):
            k = getattr(self, name)
            why = geometry.slice_problem(k, self.series) if k is not None else None
            if why is not None:
                return (name, why)
        return None


def _measurement(p: MeasurementParams, s: OhifState) -> bool:
    if not s.viewer:
        return False
    uid = s.catalogue.series(p.series).uid if p.series is not None else None
    found = False
    for m in s.raw.get("measurements") or []:
        if m.get("tool") != p.tool or not m.get("points") or len(m["points"]) < 2:
            continue
        if uid is not None and m.get("series") != uid:
            continue
        if p.position is not None and m.get("position") != p.position:
            continue
        if p.instance is not None and m.get("instance") != p.instance:
            continue
        if (
            _landmark_mm(m["points"], m.get("spacing") or [1.0, 1.0], p.from_, p.to)
            <= p.tolerance_mm
        ):
            found = True
            break
    return found == p.present


class CountParams(CountRange):
    """`count` measurements (of `tool`, or of any tool), or between `min` and `max`."""

    tool: str | None = None

    def vacuous(self) -> str | None:
        if self.count is None and not self.min and self.max is None:
            return "the count range holds for any number of measurements"
        return None

    def unplaced_count(self) -> int:
        return self.count if self.count is not None else (self.min or 0)

    def needs_change(self, start: StartSpec) -> str | None:
        if start.prepare or start.params.get("measure"):
            return None
        zero_ok = self.count == 0 if self.count is not None else not self.min
        return None if zero_ok else "a start without `measure` or `start.prepare` has none"


def _count(p: CountParams, s: OhifState) -> bool:
    if not s.viewer:
        return False
    ms = s.raw.get("measurements") or []
    return p.holds_for(sum(1 for m in ms if p.tool is None or m.get("tool") == p.tool))


# -- the viewport ------------------------------------------------------------------------------


class VoiParams(_ViewCheck):
    """One of: `preset` (the viewer's CT presets), `center` and/or `width`, or `changed`
    (true: differs from the series' DICOM window; false: equals it); within `tolerance`; on a
    viewport showing `series`."""

    preset: Literal["Soft tissue", "Lung", "Liver", "Bone", "Brain"] | None = None
    center: float | None = None
    width: float | None = Field(None, gt=0)
    changed: bool | None = None
    tolerance: float = Field(1.0, ge=0)

    @model_validator(mode="after")
    def _one_rule(self) -> VoiParams:
        rules = [self.preset is not None, self.center is not None or self.width is not None,
                 self.changed is not None]  # fmt: skip
        if sum(rules) != 1:
            raise ValueError("needs exactly one of 'preset', 'center'/'width', 'changed'")
        return self

    def vacuous(self) -> str | None:
        return f"tolerance {self.tolerance} accepts any window" if self.tolerance >= 4096 else None

    def needs_change(self, start: StartSpec) -> str | None:
        if self.changed is not True or start.prepare:
            return None
        return "every viewer starts on the series' own window"


def _voi(p: VoiParams, s: OhifState) -> bool:
    return any(_voi_on(p, vp, s) for vp in p.candidates(s))


def _voi_on(p: VoiParams, vp: Mapping[str, Any], s: OhifState) -> bool:
    if not vp.get("voi"):
        return False
    center, width = voi_center_width(*vp["voi"])
    tol = p.tolerance
    if p.preset is not None:
        want_c, want_w = VOI_PRESETS[p.preset]
        return abs(center - want_c) <= tol and abs(width - want_w) <= tol
    if p.changed is not None:
        default = next(
            (se.window for se in s.catalogue.all_series() if se.uid == vp.get("series")), None
        )
        if default is None:
            return False
        same = abs(center - default[0]) <= tol and abs(width - default[1]) <= tol
        return same != p.changed
    ok = True
    if p.center is not None:
        ok &= abs(center - p.center) <= tol
    if p.width is not None:
        ok &= abs(width - p.width) <= tol
    return ok


class ZoomParams(_ViewCheck):
    """The zoom (`getZoom()`, 1 = fitted) of a viewport showing `series`, within
    `min`..`max`."""

    min: float | None = Field(None, ge=0)
    max: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _range(self) -> ZoomParams:
        if self.min is None and self.max is None:
            raise ValueError("needs 'min' or 'max'")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}: no zoom satisfies it")
        return self

    def vacuous(self) -> str | None:
        if not self.min and self.max is None:
            return "the zoom range holds for any zoom"
        return None


def _zoom(p: ZoomParams, s: OhifState) -> bool:
    for vp in p.candidates(s):
        zoom = float(vp.get("zoom") or 0.0)
        if (p.min is None or zoom >= p.min) and (p.max is None or zoom <= p.max):
            return True
    return False


class LayoutParams(CheckParams):
    rows: int = Field(ge=1, le=8)
    cols: int = Field(ge=1, le=8)


def _layout(p: LayoutParams, s: OhifState) -> bool:
    return s.viewer and list(s.raw.get("layout") or []) == [p.rows, p.cols]


class RouteParams(CheckParams):
    """The page's route: `path` (a regex searched in the path) and/or `study` (its UID among
    the route's StudyInstanceUIDs)."""

    path: str | None = None
    study: SeededStudy | None = None

    @model_validator(mode="after")
    def _something(self) -> RouteParams:
        if self.path is None and self.study is None:
            raise ValueError("needs 'path' or 'study'")
        if self.path is not None:
            try:
                re.compile(self.path)
            except re.error as exc:
                raise ValueError(f"path: not a valid regular expression: {exc}") from None
        return self

    def vacuous(self) -> str | None:
        if self.study is None and self.path is not None and pattern_matches_anything(self.path):
            return "the path pattern matches any route"
        return None


def _route(p: RouteParams, s: OhifState) -> bool:
    parts = urlsplit(str(s.raw.get("route", "")))
    if p.path is not None and re.search(p.path, parts.path) is None:
        return False
    if p.study is not None:
        uid = s.catalogue.study(p.study).uid
        uids = ",".join(parse_qs(parts.query).get("StudyInstanceUIDs", [])).split(",")
        return uid in uids
    return True


class SeriesParams(_OnViewport):
    series: SeededSeries


def _active_series(p: SeriesParams, s: OhifState) -> bool:
    vp = s.viewport(p.viewport) if s.viewer else None
    return vp is not None and s.shows(vp, p.series)


class SliceParams(_ViewCheck):
    """`position` (1-based in the viewport's stack, the overlay's "(k/n)") or `instance`
    (the InstanceNumber), shown by a viewport showing `series`."""

    position: int | None = Field(None, ge=1)
    instance: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _one(self) -> SliceParams:
        if (self.position is None) == (self.instance is None):
            raise ValueError("needs exactly one of 'position', 'instance'")
        return self

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, Catalogue):
            return None
        name, k = ("position", self.position) if self.position else ("instance", self.instance)
        why = geometry.slice_problem(k, self.series) if k is not None else None
        return (name, why) if why is not None else None


def _slice(p: SliceParams, s: OhifState) -> bool:
    for vp in p.candidates(s):
        if p.instance is not None and vp.get("instance") == p.instance:
            return True
        if p.position is not None and int(vp.get("index", -1)) + 1 == p.position:
            return True
    return False


OHIF_KINDS = CheckKinds(
    CheckKind("ohif.measurement", MeasurementParams, "ohif", _measurement,
              "a measurement between two landmarks (on a series / image)"),
    CheckKind("ohif.measurement_count", CountParams, "ohif", _count,
              "how many measurements"),
    CheckKind("ohif.voi", VoiParams, "ohif", _voi, "the viewport's window (VOI)"),
    CheckKind("ohif.zoom", ZoomParams, "ohif", _zoom, "the viewport's zoom"),
    CheckKind("ohif.layout", LayoutParams, "ohif", _layout, "the viewport grid"),
    CheckKind("ohif.route", RouteParams, "ohif", _route, "the page's route"),
    CheckKind("ohif.active_series", SeriesParams, "ohif", _active_series,
              "the series a viewport shows"),
    CheckKind("ohif.slice_index", SliceParams, "ohif", _slice, "the image a viewport shows"),
)  # fmt: skip

# every kind the environment's `check` understands
CHECK_KINDS = OHIF_KINDS + PAGE_KINDS + ORTHANC_KINDS
