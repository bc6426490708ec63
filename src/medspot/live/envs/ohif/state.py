"""The OHIF Viewer's application state, read from the page, and the `ohif.*` checks on it.

`STATE_JS` reads, in one call, what the checks need from the viewer's own services
(`window.services`: viewport grid, cornerstone viewports, measurement service) and from
cornerstone (`window.cornerstone`: VOI range, zoom, current image, metadata): the route, the
layout, every viewport's series / slice / VOI / zoom, and every measurement with its end points
in image coordinates of the image it was drawn on (`utilities.worldToImageCoords`; image
coordinates put (0, 0) at the top-left CORNER of the first pixel, so a pixel (column, row) has
its centre at (column + 0.5, row + 0.5)). `LANDMARK_JS` projects an image point of the active
viewport's current image to page pixels (`imageToWorldCoords`, then `worldToCanvas`, plus the
canvas's offset), which is where the oracle drags, and the on-screen length of a radius in
image pixels (the marker's box).

`evaluate_check(kind, params, state, catalogue)` decides a check on such a state; it is pure
Python so that the rules are testable without a browser.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from medspot.errors import DataError
from medspot.live.services.seed import LANDMARKS, Catalogue, SeriesInfo

__all__ = [
    "CHECK_KINDS",
    "LANDMARK_JS",
    "READY_JS",
    "STATE_JS",
    "VOI_PRESETS",
    "evaluate_check",
    "voi_center_width",
]

CHECK_KINDS = (
    "ohif.measurement",
    "ohif.measurement_count",
    "ohif.voi",
    "ohif.zoom",
    "ohif.layout",
    "ohif.route",
    "ohif.active_series",
    "ohif.slice_index",
)
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
      instance: img.instanceNumber ?? null, index: vp.getCurrentImageIdIndex(), n: ids.length,
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
    return {tool: m.toolName, series: m.referenceSeriesUID || null, points: pts,
      spacing: spacing, text: (m.displayText && m.displayText.primary || []).join(' ')};
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
    " return !!(vp && vp.getCurrentImageId() && vp.getImageData && vp.getImageData()); }"
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


def _param(p: Mapping[str, Any], name: str, kind: str) -> Any:
    if name not in p:
        raise DataError(f"check {kind!r} needs the parameter {name!r}")
    return p[name]


def _series_named(cat: Catalogue, name: str, kind: str) -> SeriesInfo:
    try:
        return cat.series(name)
    except KeyError:
        raise DataError(f"check {kind!r}: no seeded series {name!r}") from None


def _viewport(state: Mapping[str, Any], p: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The viewport a check looks at: `viewport` (0-based, grid order) or the active one."""
    vps: list[Mapping[str, Any]] = list(state.get("viewports") or [])
    if "viewport" in p:
        k = int(p["viewport"])
        vp = vps[k] if 0 <= k < len(vps) else None
    else:
        vp = next((v for v in vps if v.get("id") == state.get("active")), None)
    return vp if vp is not None and vp.get("ready") else None


def _landmark_mm(points: list[list[float]], spacing: list[float], a: str, b: str) -> float:
    """The larger end-point error (mm) of a two-point measurement against landmarks a, b
    (either order)."""
    sx, sy = spacing

    def err(pt: list[float], lm: str) -> float:
        col, row = LANDMARKS[lm]
        return math.hypot((pt[0] - (col + 0.5)) * sx, (pt[1] - (row + 0.5)) * sy)

    p, q = points[0], points[-1]
    return min(max(err(p, a), err(q, b)), max(err(p, b), err(q, a)))


def _measurement(p: Mapping[str, Any], state: Mapping[str, Any], cat: Catalogue) -> bool:
    kind = "ohif.measurement"
    a, b = str(_param(p, "from", kind)), str(_param(p, "to", kind))
    for lm in (a, b):
        if lm not in LANDMARKS:
            raise DataError(f"check {kind!r}: unknown landmark {lm!r} (known: {sorted(LANDMARKS)})")
    tol = float(p.get("tolerance_mm", 4.0))
    tool = str(p.get("tool", "Length"))
    uid = _series_named(cat, str(p["series"]), kind).uid if "series" in p else None
    found = False
    for m in state.get("measurements") or []:
        if m.get("tool") != tool or not m.get("points") or len(m["points"]) < 2:
            continue
        if uid is not None and m.get("series") != uid:
            continue
        if _landmark_mm(m["points"], m.get("spacing") or [1.0, 1.0], a, b) <= tol:
            found = True
            break
    return found == bool(p.get("present", True))


def _count(p: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    tool = p.get("tool")
    n = sum(1 for m in state.get("measurements") or [] if tool is None or m.get("tool") == tool)
    if "count" in p:
        return n == int(p["count"])
    return int(p.get("min", 0)) <= n <= int(p.get("max", 10**9))


def _voi(p: Mapping[str, Any], vp: Mapping[str, Any], cat: Catalogue) -> bool:
    if not vp.get("voi"):
        return False
    center, width = voi_center_width(*vp["voi"])
    tol = float(p.get("tolerance", 1.0))
    if "preset" in p:
        name = str(p["preset"])
        if name not in VOI_PRESETS:
            raise DataError(
                f"check 'ohif.voi': unknown preset {name!r} (known: {list(VOI_PRESETS)})"
            )
        want_c, want_w = VOI_PRESETS[name]
        return abs(center - want_c) <= tol and abs(width - want_w) <= tol
    if p.get("changed"):
        default = next((se.window for se in cat.all_series() if se.uid == vp.get("series")), None)
        if default is None:
            return False
        return abs(center - default[0]) > tol or abs(width - default[1]) > tol
    ok = True
    if "center" in p:
        ok &= abs(center - float(p["center"])) <= tol
    if "width" in p:
        ok &= abs(width - float(p["width"])) <= tol
    return ok


def evaluate_check(
    kind: str, p: Mapping[str, Any], state: Mapping[str, Any], cat: Catalogue
) -> bool:
    """Whether the viewer `state` (what STATE_JS returned) satisfies check `kind` with `p`."""
    if kind == "ohif.route":
        parts = urlsplit(str(state.get("route", "")))
        if "path" in p and re.search(str(p["path"]), parts.path) is None:
            return False
        if "study" in p:
            study = str(p["study"])
            try:
                uid = cat.study(study).uid
            except KeyError:
                raise DataError(f"check {kind!r}: no seeded study {study!r}") from None
            uids = ",".join(parse_qs(parts.query).get("StudyInstanceUIDs", [])).split(",")
            return uid in uids
        return True
    if not state.get("viewer"):
        return False
    if kind == "ohif.measurement":
        return _measurement(p, state, cat)
    if kind == "ohif.measurement_count":
        return _count(p, state)
    if kind == "ohif.layout":
        rows, cols = int(_param(p, "rows", kind)), int(_param(p, "cols", kind))
        return list(state.get("layout") or []) == [rows, cols]
    vp = _viewport(state, p)
    if vp is None:
        return False
    if kind == "ohif.voi":
        return _voi(p, vp, cat)
    if kind == "ohif.zoom":
        zoom = float(vp.get("zoom") or 0.0)
        return float(p.get("min", 0.0)) <= zoom <= float(p.get("max", math.inf))
    if kind == "ohif.active_series":
        return vp.get("series") == _series_named(cat, str(_param(p, "series", kind)), kind).uid
    if kind == "ohif.slice_index":
        if "instance" in p:
            return vp.get("instance") == int(p["instance"])
        return int(vp.get("index", -1)) + 1 == int(_param(p, "position", kind))
    raise DataError(f"check kind {kind!r} is not understood by ohif")
