"""The `dicomscope.*` check kinds on states built by hand (no application): the applied window
and zoom read from the status line, not from the fields an agent types into; the image the
viewer shows; their parameters, and the start states they cannot hold at (an infeasible task's
contradiction)."""

from __future__ import annotations

from typing import Any

import pytest

from medspot.errors import DataError
from medspot.live.core.tasks import CheckSpec, StartSpec
from medspot.live.drivers.atspi import AtspiNode, AtspiTree
from medspot.live.envs.dicomscope.checks import (
    CHECK_KINDS,
    VIEWER_KINDS,
    ViewerState,
    image_problem,
    parse_file_ref,
    read_viewer_state,
)
from medspot.live.envs.dicomscope.env import IMAGE_FILES
from medspot.live.services.seed import CATALOGUE

SHOWN = ViewerState("CT-DOE-JOHN/AXIAL/3", (40.0, 400.0), (1, 1, 389, 256), (1006, 662))


def judge(state: ViewerState, kind: str, /, **params: Any) -> bool:
    spec = CheckSpec(kind=kind, **params)
    return VIEWER_KINDS.kind(kind).holds(VIEWER_KINDS.parse(spec), state)


def params_of(kind: str, **params: Any) -> Any:
    return VIEWER_KINDS.parse(CheckSpec(kind=kind, **params))


def _node(i: int, parent: int, role: str, name: str = "", *,
          states: tuple[str, ...] = ("showing",), box: tuple[int, int, int, int] = (0, 0, 10, 10),
          text: str | None = None) -> AtspiNode:  # fmt: skip
    path = (0, i) if parent == -1 else (0, 0, i)
    return AtspiNode(i, path, parent, role, name, "", frozenset(states), box, text, None, "x")


def _viewer_tree(window: str, area: str, typed_centre: str) -> AtspiTree:
    """DICOMscope's showing tree on the Viewer tab as read on the real application: the status
    line's Window/Level and Displayed Area labels, the window centre field, the image canvas in
    "Image Viewer"."""
    return AtspiTree((
        _node(0, -1, "frame", "DICOMscope 3.6.0"),
        _node(1, 0, "panel", "Window/Level"),
        _node(2, 1, "label", window, box=(794, 769, 160, 15)),
        _node(3, 0, "panel", "Displayed Area"),
        _node(4, 3, "label", area, box=(964, 769, 249, 15)),
        _node(5, 0, "panel", "Image Viewer", box=(2, 54, 1033, 698)),
        _node(6, 5, "scroll bar", box=(1013, 68, 17, 662)),
        _node(7, 5, "panel", box=(7, 68, 1006, 662)),
        _node(8, 0, "label", "c: "),
        _node(9, 0, "text", text=typed_centre),
    ))  # fmt: skip


BROWSER = AtspiTree((  # the Browser tab: no Window/Level, Displayed Area, canvas
    _node(0, -1, "frame", "DICOMscope 3.6.0"),
    _node(1, 0, "panel", "Info"),
    _node(2, 1, "label", "Ready."),
    _node(3, 0, "page tab", "Browser", states=("showing", "selected")),
))  # fmt: skip


def test_the_state_is_the_status_line_not_the_fields() -> None:
    # digits typed into the centre field and not applied: the status line still says 40
    typed = _viewer_tree("c/w: 40.0/400.0", "da: (1/1),(389/256)", typed_centre="120")
    state = read_viewer_state(typed, "CT-DOE-JOHN/AXIAL/3")
    assert state == ViewerState("CT-DOE-JOHN/AXIAL/3", (40.0, 400.0), (1, 1, 389, 256),
                                (1006, 662))  # fmt: skip
    assert not judge(state, "dicomscope.window", center=120)
    applied = _viewer_tree("c/w: 120.0/400.0", "da: (1/1),(389/256)", typed_centre="120.0")
    assert judge(read_viewer_state(applied, "CT-DOE-JOHN/AXIAL/3", state), "dicomscope.window",
                 center=120)  # fmt: skip
    # a preset's negative centre
    lung = _viewer_tree("c/w: -500.0/2000.0", "da: (174/1),(425/166)", typed_centre="-500.0")
    s = read_viewer_state(lung, "CT-DOE-JOHN/AXIAL/3")
    assert s.window == (-500.0, 2000.0) and s.area == (174, 1, 425, 166)
    assert judge(s, "dicomscope.window", center=-500, width=2000)
    assert judge(s, "dicomscope.zoom", equals=4)  # 252 columns of 1006 pixels (panned)


def test_the_browser_tab_keeps_what_the_viewer_last_showed() -> None:
    """The status line and the canvas show only on the Viewer tab; the viewer keeps its image,
    window and zoom while the Browser shows: the state is the one it last showed, of that
    image only."""
    one_to_one = _viewer_tree("c/w: 500.0/4000.0", "da: (1/1),(1006/662)", "500.0")
    seen = read_viewer_state(one_to_one, "CT-MILLER/AXIAL/8")
    assert seen.zoom == 1.0 and seen.window == (500.0, 4000.0)
    assert read_viewer_state(BROWSER, "CT-MILLER/AXIAL/8") == ViewerState(
        "CT-MILLER/AXIAL/8", None, None, None)  # fmt: skip
    later = read_viewer_state(BROWSER, "CT-MILLER/AXIAL/8", seen)
    assert later == seen
    assert judge(later, "dicomscope.zoom", equals=1)
    assert judge(later, "dicomscope.window", center=500, width=4000)
    # another image read since: its window is not the old one's (the layout's canvas stays)
    other = read_viewer_state(BROWSER, "CT-MILLER/AXIAL/7", seen)
    assert other == ViewerState("CT-MILLER/AXIAL/7", None, None, (1006, 662))
    # no status line (no image opened yet): nothing holds
    empty = read_viewer_state(BROWSER, None)
    assert not judge(empty, "dicomscope.window", center=40)
    assert not judge(empty, "dicomscope.zoom", min=0.1)
    assert not judge(empty, "dicomscope.image", study="CT-DOE-JOHN")


def test_window_and_zoom_judges() -> None:
    assert judge(SHOWN, "dicomscope.window", center=40, width=400)
    assert judge(SHOWN, "dicomscope.window", width=400.04)
    assert not judge(SHOWN, "dicomscope.window", width=400.1)
    assert judge(SHOWN, "dicomscope.window", width=401, tol=1)
    assert not judge(SHOWN, "dicomscope.window", center=40, width=1000)
    # the fitted 256-pixel image: 389 columns on a 1006-pixel canvas (2.59)
    assert judge(SHOWN, "dicomscope.zoom", equals=2.59)
    assert not judge(SHOWN, "dicomscope.zoom", equals=2)
    assert judge(SHOWN, "dicomscope.zoom", equals=2.6, tol=0.02)
    assert judge(SHOWN, "dicomscope.zoom", min=2.5, max=2.7)
    assert not judge(SHOWN, "dicomscope.zoom", min=3)
    at2 = ViewerState(SHOWN.image, SHOWN.window, (1, 1, 503, 331), SHOWN.canvas)
    assert judge(at2, "dicomscope.zoom", equals=2) and not judge(at2, "dicomscope.zoom", equals=4)
    # as read on the real application: 1:1 flipped (x reversed), and rotated (sides swapped)
    for area in ((255, 1, -750, 662), (1, 255, 662, -750), (1, 1, 1006, 662)):
        s = ViewerState(SHOWN.image, SHOWN.window, area, SHOWN.canvas)
        assert s.zoom == 1.0 and judge(s, "dicomscope.zoom", equals=1), area
    flipped_fit = ViewerState(SHOWN.image, SHOWN.window, (255, 1, -133, 256), SHOWN.canvas)
    assert judge(flipped_fit, "dicomscope.zoom", equals=2.59)


def test_image_judge() -> None:
    assert judge(SHOWN, "dicomscope.image", image="CT-DOE-JOHN/AXIAL/3")
    assert not judge(SHOWN, "dicomscope.image", image="CT-DOE-JOHN/AXIAL/4")
    assert judge(SHOWN, "dicomscope.image", series="CT-DOE-JOHN/AXIAL")
    assert not judge(SHOWN, "dicomscope.image", series="CT-DOE-JOHN/SCOUT")
    assert judge(SHOWN, "dicomscope.image", study="CT-DOE-JOHN")
    assert not judge(SHOWN, "dicomscope.image", study="CT-DOE-JOAN")


@pytest.mark.parametrize(
    ("kind", "bad", "why"),
    [
        ("dicomscope.image", {}, "exactly one of 'image', 'series', 'study'"),
        ("dicomscope.image", {"image": "CT-DOE-JOHN/AXIAL/9"}, "has slices 1..8"),
        ("dicomscope.image", {"image": "CT-DOE-JOHN/AXIAL"}, "expected STUDY/SERIES/SLICE"),
        ("dicomscope.image", {"series": "CT-DOE-JOHN/AXIAL", "study": "CT-DOE-JOHN"},
         "exactly one"),
        ("dicomscope.image", {"study": "CT-NOBODY"}, "no seeded study"),
        ("dicomscope.window", {}, "needs 'center' and/or 'width'"),
        ("dicomscope.window", {"center": "40"}, "valid number"),
        ("dicomscope.window", {"width": 0}, "greater than 0"),
        ("dicomscope.zoom", {}, "needs 'equals', or 'min' and/or 'max'"),
        ("dicomscope.zoom", {"equals": 2, "min": 1}, "needs 'equals', or"),
        ("dicomscope.zoom", {"min": 3, "max": 2}, "no zoom satisfies it"),
        ("dicomscope.zoom", {"min": 1, "tol": 1}, "'tol' goes with 'equals'"),
        ("dicomscope.zoom", {"equals": True}, "valid number"),
    ],
)  # fmt: skip
def test_bad_parameters(kind: str, bad: dict[str, Any], why: str) -> None:
    with pytest.raises(DataError, match=why):
        params_of(kind, **bad)


def test_what_a_start_cannot_show() -> None:
    """`needs_change`: the claims no start can satisfy (an infeasible task's contradiction)."""
    browser, viewer = StartSpec(), StartSpec(file="CT-DOE-JOHN/AXIAL/3")
    image = params_of("dicomscope.image", image="CT-DOE-JOHN/AXIAL/3")
    assert "no image" in image.needs_change(browser)
    assert image.needs_change(viewer) is None
    assert "the start shows CT-DOE-JOHN/AXIAL/3" in params_of(
        "dicomscope.image", study="MR-SMITH-ANN").needs_change(viewer)  # fmt: skip
    window = params_of("dicomscope.window", center=40, width=400)  # the series' own window
    assert window.needs_change(viewer) is None and window.needs_change(browser)
    assert "c/w 40/400" in params_of("dicomscope.window", center=120).needs_change(viewer)
    prepared = StartSpec.model_validate({"file": "CT-DOE-JOHN/AXIAL/3", "prepare": [
        {"instruction": "Invert", "target": {"text": "x"}}]})  # fmt: skip
    assert params_of("dicomscope.window", center=120).needs_change(prepared) is None
    assert params_of("dicomscope.zoom", equals=1).needs_change(browser) is None


def test_the_audit_rules_on_these_kinds() -> None:
    """The typed-value form docs/live.md gave before (`after_label`) reads the field: the
    audit's `unapplied`; the status-line kinds do not."""
    field = CHECK_KINDS.parse(CheckSpec(kind="atspi.text", after_label="c:", number=120))
    assert field.unapplied() is not None and "'c:'" in str(field.unapplied())
    status = CHECK_KINDS.parse(CheckSpec(kind="atspi.text", contains="c/w:", includes="120"))
    assert status.unapplied() is None
    assert params_of("dicomscope.window", center=120).unapplied() is None
    assert params_of("dicomscope.window", center=1, tol=70000).vacuous() is not None


def test_image_files_are_the_seeded_images() -> None:
    assert IMAGE_FILES["CT-DOE-JOHN_AXIAL_003.dcm"] == "CT-DOE-JOHN/AXIAL/3"
    assert IMAGE_FILES["MR-GARCIA_PD_006.dcm"] == "MR-GARCIA/PD/6"
    assert len(IMAGE_FILES) == sum(se.slices for se in CATALOGUE.all_series())
    assert all(image_problem(ref) is None for ref in IMAGE_FILES.values())
    assert str(parse_file_ref("CT-MILLER/AXIAL/8")) == "CT-MILLER/AXIAL/8"
    assert image_problem("CT-MILLER/AXIAL/0") is not None  # slices are 1-based
