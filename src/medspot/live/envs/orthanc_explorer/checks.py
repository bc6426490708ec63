"""The `orthanc-explorer` environment's check kinds (`CHECK_KINDS`): the Orthanc database's
(`orthanc.*`, shared), the page's (`web.*`) and its own `webviewer.*`, the Orthanc Web Viewer's
state (its slider and cornerstone's viewport), read from the page.

    {"kind": "webviewer.slice", "slice": 3}
    {"kind": "webviewer.inverted", "value": true}
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from medspot.live.core.checks import CheckKind, CheckKinds, CheckParams
from medspot.live.drivers.web import WebSession
from medspot.live.drivers.web_checks import PAGE_KINDS
from medspot.live.envs.orthanc.checks import ORTHANC_KINDS
from medspot.live.services.seed import Catalogue

__all__ = ["CHECK_KINDS", "WEBVIEWER_KINDS", "ViewerState", "read_viewer"]

VIEWER_JS = """() => {
  const s = window.jQuery && jQuery('#slider');
  const slice = s && s.length && s.slider('instance') ? s.slider('option', 'value') : null;
  let inverted = null;
  try { inverted = !!cornerstone.getViewport(document.getElementById('dicomImage')).invert; }
  catch (e) { inverted = null; }
  return [slice, inverted];
}"""


@dataclass(frozen=True)
class ViewerState:
    slice: int | None  # 0-based, the Web Viewer's slider
    inverted: bool | None


def read_viewer(web: WebSession) -> ViewerState:
    got = web.eval(VIEWER_JS) or [None, None]
    slice_, inv = got[0], got[1]
    return ViewerState(None if slice_ is None else int(slice_), None if inv is None else bool(inv))


class SliceParams(CheckParams):
    slice: int = Field(ge=1)  # 1-based

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        if not isinstance(geometry, Catalogue):
            return None
        why = geometry.slice_problem(self.slice)
        return ("slice", why) if why is not None else None


def _slice(p: SliceParams, s: ViewerState) -> bool:
    return s.slice is not None and s.slice + 1 == p.slice


class InvertedParams(CheckParams):
    value: bool = True


def _inverted(p: InvertedParams, s: ViewerState) -> bool:
    return s.inverted is not None and s.inverted is p.value


WEBVIEWER_KINDS = CheckKinds(
    CheckKind("webviewer.slice", SliceParams, "webviewer", _slice,
              "the Orthanc Web Viewer shows this slice (1-based)"),
    CheckKind("webviewer.inverted", InvertedParams, "webviewer", _inverted,
              "the Web Viewer's image is inverted (value false: it is not)"),
)  # fmt: skip

# every kind the environment's `check` understands
CHECK_KINDS = ORTHANC_KINDS + PAGE_KINDS + WEBVIEWER_KINDS
