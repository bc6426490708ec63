"""The `ohif.*` check kinds' judges on viewer states shaped like the page's (values as measured
in the real viewer: cornerstone's VOI ranges of the presets, image coordinates of drawn
Lengths), and their parameters."""

from __future__ import annotations

from typing import Any

import pytest

from medspot.errors import DataError
from medspot.live.core.tasks import CheckSpec
from medspot.live.envs.ohif.checks import OHIF_KINDS, OhifState, voi_center_width
from medspot.live.services.seed import CATALOGUE

CT = CATALOGUE.series("CT-DOE-JOHN/AXIAL")
SCOUT = CATALOGUE.series("CT-DOE-JOHN/SCOUT")


def _state(**kw: Any) -> dict[str, Any]:
    vp = {"id": "default", "ready": True, "series": CT.uid, "instance": 8, "index": 0, "n": 8,
          "voi": [-160, 239], "zoom": 1.0}  # fmt: skip
    base: dict[str, Any] = {
        "route": f"/viewer?StudyInstanceUIDs={CATALOGUE.study('CT-DOE-JOHN').uid}",
        "viewer": True, "layout": [1, 1], "active": "default", "viewports": [vp],
        "measurements": [],
    }  # fmt: skip
    base.update(kw)
    return base


def _length(
    p: tuple[float, float], q: tuple[float, float], spacing: float = 1.0, position: int = 1
) -> dict[str, Any]:
    return {"tool": "Length", "series": CT.uid, "points": [list(p), list(q)],
            "spacing": [spacing, spacing], "text": "", "position": position,
            "instance": 9 - position}  # fmt: skip


def check(kind: str, state: dict[str, Any], **p: Any) -> bool:
    """Parse the parameters as a task file's are parsed, then judge the state."""
    spec = CheckSpec(kind=kind, **p)
    k = OHIF_KINDS.kind(kind)
    return k.holds(OHIF_KINDS.parse(spec), OhifState(state, CATALOGUE))


def test_measurement_between_landmarks() -> None:
    # as drawn by the oracle: pixel centres (64.5, 128.5) and (192.5, 128.5), within a pixel
    drawn = _state(measurements=[_length((64.35, 128.35), (192.35, 128.35))])
    assert check("ohif.measurement", drawn, **{"from": "A", "to": "B"})
    assert check("ohif.measurement", drawn, **{"from": "B", "to": "A"})  # either direction
    assert check("ohif.measurement", drawn, **{"from": "A", "to": "B", "series": CT.name})
    assert not check("ohif.measurement", drawn, **{"from": "A", "to": "B", "series": SCOUT.name})
    assert not check("ohif.measurement", drawn, **{"from": "A", "to": "C"})
    assert check("ohif.measurement", drawn, **{"from": "A", "to": "C", "present": False})
    # an end 6 px (6 mm) past B fails the default 4 mm tolerance, passes a 7 mm one
    off = _state(measurements=[_length((64.5, 128.5), (198.5, 128.5))])
    assert not check("ohif.measurement", off, **{"from": "A", "to": "B"})
    assert check("ohif.measurement", off, **{"from": "A", "to": "B", "tolerance_mm": 7})
    # the tolerance is in mm: 4 px at 0.9 mm/px is 3.6 mm
    mr = _state(measurements=[_length((64.5, 128.5), (196.5, 128.5), spacing=0.9)])
    assert check("ohif.measurement", mr, **{"from": "A", "to": "B"})
    assert not check("ohif.measurement", _state(), **{"from": "A", "to": "B"})
    with pytest.raises(DataError, match="no seeded landmark 'Z'"):
        check("ohif.measurement", drawn, **{"from": "A", "to": "Z"})


def test_measurement_on_a_named_image() -> None:
    """Measuring on slice 1 and scrolling to slice 3 does not pass "measure on slice 3"."""
    on_1 = _state(measurements=[_length((64.5, 128.5), (192.5, 128.5), position=1)])
    on_3 = _state(measurements=[_length((64.5, 128.5), (192.5, 128.5), position=3)])
    ab = {"from": "A", "to": "B"}
    assert check("ohif.measurement", on_1, **ab)
    assert not check("ohif.measurement", on_1, **ab, position=3)
    assert check("ohif.measurement", on_3, **ab, position=3)
    assert check("ohif.measurement", on_3, **ab, instance=6)  # stack position 3 of 8 is #6
    assert not check("ohif.measurement", on_3, **ab, instance=8)
    assert check("ohif.measurement", on_1, **ab, position=3, present=False)
    with pytest.raises(DataError, match="'position' or 'instance', not both"):
        check("ohif.measurement", on_3, **ab, position=3, instance=6)


def test_measurement_count_and_other_tools() -> None:
    s = _state(
        measurements=[_length((0, 0), (1, 1)), {**_length((0, 0), (2, 2)), "tool": "Bidirectional"}]
    )
    assert check("ohif.measurement_count", s, count=2)
    assert check("ohif.measurement_count", s, count=1, tool="Length")
    assert not check("ohif.measurement_count", s, count=0)
    assert check("ohif.measurement_count", s, min=1, max=3)


def test_voi() -> None:
    assert voi_center_width(-160, 239) == (40, 400)  # the CT default, as cornerstone holds it
    assert voi_center_width(-1350, 149) == (-600, 1500)  # the Lung preset
    lung = _state(viewports=[{**_state()["viewports"][0], "voi": [-1350, 149]}])
    assert check("ohif.voi", lung, preset="Lung")
    assert not check("ohif.voi", lung, preset="Bone")
    assert check("ohif.voi", lung, changed=True)
    assert not check("ohif.voi", _state(), changed=True)
    # `changed: false` means what it says: the series' own window, not "anything"
    assert check("ohif.voi", _state(), changed=False)
    assert not check("ohif.voi", lung, changed=False)
    assert check("ohif.voi", _state(), center=40, width=400)
    assert not check("ohif.voi", _state(), center=40, width=800)
    with pytest.raises(DataError, match="preset"):
        check("ohif.voi", lung, preset="Sparkle")
    with pytest.raises(DataError, match="exactly one of"):
        check("ohif.voi", lung, preset="Lung", changed=True)
    with pytest.raises(DataError, match="exactly one of"):
        check("ohif.voi", lung)


def test_view_state() -> None:
    first = _state()["viewports"][0]
    second = {**first, "id": "vp2", "series": SCOUT.uid, "zoom": 2.5}
    two = _state(layout=[1, 2], viewports=[first, second])
    assert check("ohif.layout", two, rows=1, cols=2)
    assert not check("ohif.layout", two, rows=2, cols=2)
    assert check("ohif.active_series", two, series=CT.name)
    assert check("ohif.active_series", two, series=SCOUT.name, viewport=1)
    assert check("ohif.zoom", two, min=2.0, viewport=1)
    assert not check("ohif.zoom", two, min=1.5)
    assert check("ohif.slice_index", two, position=1) and check("ohif.slice_index", two, instance=8)
    assert not check("ohif.slice_index", two, position=2)
    assert check("ohif.route", two, path="^/viewer", study="CT-DOE-JOHN")
    assert not check("ohif.route", two, study="CT-DOE-JOAN")
    assert not check("ohif.route", {"route": "/", "viewer": False}, path="^/viewer")
    assert not check("ohif.layout", {"route": "/", "viewer": False}, rows=1, cols=1)


MR_T1 = CATALOGUE.series("MR-DOE-JOHN/T1")


def _vp(series: Any, **kw: Any) -> dict[str, Any]:
    """A viewport showing `series` (a catalogue SeriesInfo), its study's UID read with it."""
    study = CATALOGUE.study(series.name.partition("/")[0]).uid
    vp = {"id": "default", "ready": True, "series": series.uid, "study": study, "instance": 1,
          "index": 0, "n": series.slices, "voi": [-160, 239], "zoom": 1.0}  # fmt: skip
    vp.update(kw)
    return vp


def test_view_checks_judge_a_viewport_showing_their_series() -> None:
    """The zoom-in-mr-doe-john reproduction: DOE^JOHN's CT CHEST loaded from the study browser
    into the MR's viewport and zoomed 5.24x passes a zoom check on whatever is shown, not one
    about the MR's T1 series; the Lung preset on the Scout does not pass one about the axial
    series."""
    ct_zoomed = _state(viewports=[_vp(CT, zoom=5.24)])
    assert check("ohif.zoom", ct_zoomed, min=1.5)  # no series: whatever the viewport shows
    assert not check("ohif.zoom", ct_zoomed, min=1.5, series=MR_T1.name)
    assert check("ohif.zoom", ct_zoomed, min=1.5, series=CT.name)
    scout_lung = _state(viewports=[_vp(SCOUT, voi=[-1350, 149])])
    assert check("ohif.voi", scout_lung, preset="Lung")
    assert not check("ohif.voi", scout_lung, preset="Lung", series=CT.name)
    assert check("ohif.voi", scout_lung, preset="Lung", series=SCOUT.name)
    assert not check("ohif.voi", scout_lung, changed=True, series=CT.name)
    assert not check("ohif.voi", scout_lung, changed=False, series=CT.name)  # not shown at all
    assert not check("ohif.slice_index", scout_lung, position=1, series=CT.name)
    assert check("ohif.slice_index", scout_lung, position=1, series=SCOUT.name)


def test_view_checks_hold_on_any_viewport_showing_the_series() -> None:
    """In a layout, the check holds when a viewport showing the series has the state (not the
    active one only); `viewport` with `series` needs that viewport to show the series."""
    mr = _vp(MR_T1, id="left", voi=[0, 999])  # the MR's own window, 500/1000
    ct = _vp(CT, id="right", zoom=2.5, index=3, instance=5, voi=[-1350, 149])
    two = _state(layout=[1, 2], active="left", viewports=[mr, ct])
    assert check("ohif.zoom", two, min=2.0, series=CT.name)
    assert not check("ohif.zoom", two, min=2.0, series=MR_T1.name)
    assert not check("ohif.zoom", two, min=2.0)  # the active one, the MR
    assert check("ohif.zoom", two, min=2.0, series=CT.name, viewport=1)
    assert not check("ohif.zoom", two, min=2.0, series=CT.name, viewport=0)
    assert check("ohif.slice_index", two, position=4, series=CT.name)
    assert check("ohif.slice_index", two, instance=5, series=CT.name)
    assert not check("ohif.slice_index", two, position=4, series=MR_T1.name)
    assert check("ohif.voi", two, preset="Lung", series=CT.name)
    assert check("ohif.voi", two, changed=False, series=MR_T1.name)
    # the same series in two viewports: either one may have the state
    both = _state(layout=[1, 2], viewports=[_vp(CT), _vp(CT, id="vp2", zoom=3.0)])
    assert check("ohif.zoom", both, min=2.0, series=CT.name)
    assert not check("ohif.zoom", both, max=0.5, series=CT.name)


def test_the_series_is_judged_in_its_study() -> None:
    """A viewport whose image carries the series' UID under another study's UID is not that
    series; the active-series check reads the study too."""
    other_study = _state(viewports=[_vp(CT, zoom=3.0, study=CATALOGUE.study("CT-DOE-JOAN").uid)])
    assert not check("ohif.zoom", other_study, min=1.5, series=CT.name)
    assert not check("ohif.active_series", other_study, series=CT.name)
    assert check("ohif.active_series", _state(viewports=[_vp(CT)]), series=CT.name)
    not_ready = _state(viewports=[{**_vp(CT, zoom=3.0), "ready": False}])
    assert not check("ohif.zoom", not_ready, min=1.5, series=CT.name)
    assert not check("ohif.zoom", {"route": "/", "viewer": False}, min=1.5, series=CT.name)
    with pytest.raises(DataError, match="no seeded series"):
        check("ohif.zoom", _state(), min=1.5, series="CT-DOE-JOHN/CORONAL")


def test_what_the_audit_reads_from_the_parameters() -> None:
    def params(kind: str, **p: Any) -> Any:
        return OHIF_KINDS.parse(CheckSpec(kind=kind, **p))

    assert params("ohif.zoom", min=1.5).view_without_series() is not None
    assert params("ohif.zoom", min=1.5, series=CT.name).view_without_series() is None
    assert params("ohif.voi", preset="Lung").view_without_series() is not None
    assert params("ohif.slice_index", position=2).view_without_series() is not None
    assert params("ohif.layout", rows=1, cols=2).view_without_series() is None  # the grid
    assert params("ohif.measurement_count", min=1).unplaced_count() == 1
    assert params("ohif.measurement_count", count=2).unplaced_count() == 2
    assert params("ohif.measurement_count", max=3).unplaced_count() == 0
    ab = {"from": "A", "to": "B", "series": CT.name, "position": 1}
    assert params("ohif.measurement", **ab).placed_count() == 1
    assert params("ohif.measurement", **ab, present=False).placed_count() == 0
