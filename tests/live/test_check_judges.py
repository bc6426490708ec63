"""Every check kind's judge on states built by hand (no application): the Orthanc database,
the page, the Web Viewer, the AT-SPI tree; boolean parameters mean what they say, negative
element checks (absent, exactly these rows), and the static vacuity the audit reports."""

from __future__ import annotations

from typing import Any

import pytest

from medspot.errors import DataError
from medspot.live.core.checks import CheckKinds, pattern_matches_anything, rows_match
from medspot.live.core.tasks import CheckSpec
from medspot.live.drivers.atspi import AtspiNode, AtspiTree
from medspot.live.drivers.atspi_checks import DESKTOP_KINDS
from medspot.live.drivers.web_checks import PAGE_KINDS, DownloadState, PageState
from medspot.live.envs.orthanc.checks import ORTHANC_KINDS, OrthancState
from medspot.live.envs.orthanc_explorer.checks import WEBVIEWER_KINDS, ViewerState
from medspot.live.services.names import instance_names
from medspot.live.services.seed import CATALOGUE


def judge(kinds: CheckKinds, state: Any, kind: str, /, **params: Any) -> bool:
    """Parse the parameters as a task file's are parsed, then judge `state`."""
    spec = CheckSpec(kind=kind, **params)
    return kinds.kind(kind).holds(kinds.parse(spec), state)


def vacuous(kinds: CheckKinds, kind: str, **params: Any) -> str | None:
    return kinds.parse(CheckSpec(kind=kind, **params)).vacuous()


# -- shared helpers ----------------------------------------------------------------------------


def test_rows_match() -> None:
    rows = ["DOE^JOHN MS0001", "DOE^JOAN MS0002"]
    assert rows_match(rows, ["DOE^JOAN", "DOE^JOHN"], "contains", ordered=False)
    assert not rows_match(rows, ["DOE^JOAN", "DOE^JOHN"], "contains", ordered=True)
    assert not rows_match(rows, ["DOE^JO", "DOE^JO", "DOE^JO"], "contains", ordered=False)
    assert not rows_match(rows, ["DOE^JOHN"], "contains", ordered=False)  # a row too many
    assert not rows_match(rows, ["DOE^JOHN", "DOE^JOHN"], "contains", ordered=False)
    assert rows_match(rows, ["DOE^JO", "DOE^JOHN"], "contains", ordered=False)  # a matching
    assert not rows_match(rows, ["DOE^JOHN", "DOE^JOAN"], "equals", ordered=False)
    assert rows_match(["  a  b "], ["a b"], "equals", ordered=True)  # whitespace collapsed
    assert rows_match([], [], "contains", ordered=False)


def test_pattern_matches_anything() -> None:
    for p in ("", ".*", "x?", "(?:)", "^"):
        assert pattern_matches_anything(p), p
    for p in ("^$", "study", "#series", "\\d", "[", "^DICOMscope"):
        assert not pattern_matches_anything(p), p


# -- orthanc.* ------------------------------------------------------------------------------------


def _db(*, without: tuple[str, ...] = (), extra: int = 0) -> OrthancState:
    """The seeded database, minus the named series (and their emptied study / patient)."""
    series = {se.name for se in CATALOGUE.all_series()} - set(without)
    studies = {se.partition("/")[0] for se in series}
    patients = {CATALOGUE.study(s).patient for s in studies}
    inst = frozenset(n for n in instance_names() if n.rpartition(":")[0] in series)
    return OrthancState(frozenset(patients), frozenset(studies), frozenset(series), inst,
                        len(inst) + extra)  # fmt: skip


def test_orthanc_presence() -> None:
    full, gone = _db(), _db(without=("CT-DOE-JOAN/AXIAL",))
    k = ORTHANC_KINDS
    assert judge(k, full, "orthanc.study_present", study="CT-DOE-JOAN")
    assert judge(k, gone, "orthanc.study_absent", study="CT-DOE-JOAN")
    assert judge(k, gone, "orthanc.patient_absent", patient="DOE^JOAN")
    assert judge(k, gone, "orthanc.patient_present", patient="DOE^JOHN")
    assert not judge(k, gone, "orthanc.series_present", series="CT-DOE-JOAN/AXIAL")
    assert judge(k, gone, "orthanc.series_present", series="CT-DOE-JOHN/AXIAL")
    assert not judge(k, full, "orthanc.series_absent", series="CT-DOE-JOHN/SCOUT")


def test_orthanc_instance_count() -> None:
    k = ORTHANC_KINDS
    full, gone = _db(), _db(without=("CT-DOE-JOHN/SCOUT",), extra=3)
    total = len(instance_names())
    assert total == 65
    assert judge(k, full, "orthanc.instance_count", count=total)
    assert judge(k, full, "orthanc.instance_count", max=total)
    assert not judge(k, full, "orthanc.instance_count", max=total - 1)
    assert judge(k, gone, "orthanc.instance_count", count=total - 1 + 3)  # foreign ones count
    assert judge(k, gone, "orthanc.instance_count", study="CT-DOE-JOHN", count=8)
    assert judge(k, gone, "orthanc.instance_count", patient="DOE^JOHN", count=20)
    assert judge(k, gone, "orthanc.instance_count", series="CT-DOE-JOHN/SCOUT", count=0)
    assert judge(k, full, "orthanc.instance_count", series="CT-DOE-JOHN/AXIAL", min=8, max=8)
    assert vacuous(k, "orthanc.instance_count", min=0) is not None
    assert vacuous(k, "orthanc.instance_count", series="CT-DOE-JOHN/AXIAL", max=8) is not None
    assert vacuous(k, "orthanc.instance_count", series="CT-DOE-JOHN/AXIAL", max=7) is None
    assert vacuous(k, "orthanc.instance_count", max=64) is None
    for bad, why in (({}, "needs 'count', 'min' or 'max'"), ({"count": 1, "max": 2}, "not both"),
                     ({"min": 3, "max": 2}, "no state"), ({"count": "3"}, "valid integer"),
                     ({"count": 1, "series": "CT-DOE-JOHN/AXIAL", "study": "CT-DOE-JOHN"},
                      "at most one"), ({"count": -1}, "greater than or equal")):  # fmt: skip
        with pytest.raises(DataError, match=why):
            judge(k, full, "orthanc.instance_count", **bad)


def test_orthanc_names_are_the_catalogues() -> None:
    with pytest.raises(DataError, match=r"no seeded study 'CT-DOE-JIM'.*CT-DOE-JOHN"):
        judge(ORTHANC_KINDS, _db(), "orthanc.study_absent", study="CT-DOE-JIM")
    with pytest.raises(DataError, match="study: unknown parameter"):
        judge(ORTHANC_KINDS, _db(), "orthanc.patient_absent", study="CT-DOE-JOHN")
    with pytest.raises(DataError, match="patient: Field required"):
        judge(ORTHANC_KINDS, _db(), "orthanc.patient_absent")


# -- web.* and webviewer.* ------------------------------------------------------------------------

NAMES = {"study": {"CT-DOE-JOHN": "aa11-bb22"}, "series": {"CT-DOE-JOHN/AXIAL": "cc33"},
         "patient": {"DOE^JOHN": "dd44"}, "instance": {"CT-DOE-JOHN/AXIAL:3": "ee55"}}  # fmt: skip


def test_url_and_title() -> None:
    page = PageState("http://h/app/explorer.html#study?uuid=aa11-bb22", "Orthanc Explorer", NAMES)
    k = PAGE_KINDS
    assert judge(k, page, "web.url_matches", pattern="#study\\?uuid={study:CT-DOE-JOHN}$")
    assert not judge(k, page, "web.url_matches", pattern="#series")
    assert judge(k, page, "web.title_matches", pattern="^Orthanc")
    assert vacuous(k, "web.url_matches", pattern=".*") is not None
    assert vacuous(k, "web.url_matches", pattern="{study:CT-DOE-JOHN}") is None
    with pytest.raises(DataError, match="no seeded study 'CT-NOPE'"):
        judge(k, page, "web.url_matches", pattern="{study:CT-NOPE}")
    with pytest.raises(DataError, match="regular expression"):
        judge(k, page, "web.title_matches", pattern="(")


def test_element_visible_false_means_not_visible() -> None:
    k = PAGE_KINDS
    target = {"text": "Cancel"}
    assert judge(k, True, "web.element_visible", target=target)
    assert not judge(k, False, "web.element_visible", target=target)
    assert judge(k, False, "web.element_visible", target=target, value=False)
    assert not judge(k, True, "web.element_visible", target=target, value=False)
    with pytest.raises(DataError, match="valid boolean"):
        judge(k, True, "web.element_visible", target=target, value="false")
    with pytest.raises(DataError, match="unknown parameter"):
        judge(k, True, "web.element_visible", target=target, visible=False)


def test_rows_exactly() -> None:
    k = PAGE_KINDS
    rows = ("DOE^JOHN MS0001 2 studies", "DOE^JOAN MS0002 1 study")
    of = {"css": "#all-patients li"}
    assert judge(k, rows, "web.rows", rows=of, exactly=["DOE^JOAN", "DOE^JOHN"])
    assert not judge(k, rows, "web.rows", rows=of, exactly=["DOE^JOHN"])
    assert not judge(k, rows, "web.rows", rows=of, exactly=["DOE^JOAN", "DOE^JOHN"], ordered=True)
    assert judge(k, (), "web.rows", rows=of, exactly=[])  # an empty list
    with pytest.raises(DataError, match="needs 'css', 'data_cy' or 'role'"):
        judge(k, rows, "web.rows", rows={"text": "x"}, exactly=[])
    with pytest.raises(DataError, match="nth not allowed"):
        judge(k, rows, "web.rows", rows={"css": "li", "nth": 1}, exactly=[])


def test_download() -> None:
    k = PAGE_KINDS
    zip_url = "http://h/studies/aa11-bb22/archive"
    ok = DownloadState(((zip_url, "zip", True),), NAMES)
    broken = DownloadState(((zip_url, "zip", False),), NAMES)
    other = DownloadState((("http://h/studies/aa11-bb22x/archive", "zip", True),), NAMES)
    assert not judge(k, other, "web.download", study="CT-DOE-JOHN")  # another ID's prefix
    assert judge(k, ok, "web.download", file="zip", study="CT-DOE-JOHN")
    assert judge(k, ok, "web.download")
    assert not judge(k, ok, "web.download", file="dicom")
    assert not judge(k, ok, "web.download", series="CT-DOE-JOHN/AXIAL")
    assert not judge(k, broken, "web.download", file="zip")
    with pytest.raises(DataError, match=r"no seeded instance 'CT-DOE-JOHN/AXIAL:9'.*1\.\.8"):
        judge(k, ok, "web.download", instance="CT-DOE-JOHN/AXIAL:9")
    with pytest.raises(DataError, match="file"):
        judge(k, ok, "web.download", file="tar")


def test_webviewer() -> None:
    k = WEBVIEWER_KINDS
    state = ViewerState(slice=2, inverted=True)
    assert judge(k, state, "webviewer.slice", slice=3)
    assert not judge(k, state, "webviewer.slice", slice=1)
    assert judge(k, state, "webviewer.inverted")
    assert not judge(k, state, "webviewer.inverted", value=False)
    assert judge(k, ViewerState(2, False), "webviewer.inverted", value=False)
    assert not judge(k, ViewerState(None, None), "webviewer.inverted", value=False)  # no viewer
    with pytest.raises(DataError, match="greater than or equal to 1"):
        judge(k, state, "webviewer.slice", slice=0)


# -- atspi.* and window.* -------------------------------------------------------------------------


def _node(i: int, parent: int, role: str, name: str = "", *, desc: str = "",
          states: tuple[str, ...] = ("showing",), box: tuple[int, int, int, int] = (0, 0, 10, 10),
          text: str | None = None, value: float | None = None) -> AtspiNode:  # fmt: skip
    path = (0, i) if parent == -1 else (0, 0, i)
    return AtspiNode(i, path, parent, role, name, desc, frozenset(states), box, text, value, "x")


def _tree() -> AtspiTree:
    return AtspiTree((
        _node(0, -1, "frame", "DICOMscope 3.6"),
        _node(1, 0, "toggle button", desc="Invert", states=("showing", "checked"),
              box=(0, 0, 20, 20)),
        _node(2, 0, "toggle button", desc="Flip", box=(20, 0, 20, 20)),
        _node(3, 0, "label", "c:", box=(0, 30, 20, 20)),
        _node(4, 0, "text", text="-500.0", box=(20, 30, 60, 20)),
        _node(5, 0, "label", "Series CT * Chest Axial 5mm", box=(0, 60, 200, 20)),
        _node(6, 0, "label", "Series CT * Scout", box=(0, 80, 200, 20)),
        _node(7, 0, "label", "Series MR * T1 Axial", states=(), box=(0, 100, 200, 20)),
        _node(8, 0, "scroll bar", value=1200.0, box=(0, 700, 900, 16)),
        _node(9, 0, "label", "c/w: -500.0/2000.0", box=(0, 750, 200, 20)),
    ))  # fmt: skip


def test_atspi_text_state_value() -> None:
    k, t = DESKTOP_KINDS, _tree()
    assert judge(k, t, "atspi.text", after_label="c:", number=-500, tol=0.01)
    assert not judge(k, t, "atspi.text", after_label="c:", number=-400)
    assert judge(k, t, "atspi.text", contains="c/w:", equals="c/w: -500.0/2000.0")
    assert judge(k, t, "atspi.text", contains="c/w:", includes="/2000")
    assert judge(k, t, "atspi.text", contains="c/w:", matches="^c/w: -5")
    assert judge(k, t, "atspi.state", description="Invert")
    assert judge(k, t, "atspi.state", description="Flip", state="checked", value=False)
    assert not judge(k, t, "atspi.state", description="Invert", value=False)
    assert judge(k, t, "atspi.value", role="scroll bar", min=1100)
    assert not judge(k, t, "atspi.value", role="scroll bar", max=1100)
    assert judge(k, t, "atspi.value", role="scroll bar", equals=1200.5, tol=1)
    assert vacuous(k, "atspi.text", contains="c/w:", matches=".*") is not None
    assert vacuous(k, "atspi.text", contains="c/w:", includes="") is not None
    for kind, bad, why in (
        ("atspi.text", {"after_label": "c:"}, "exactly one of"),
        ("atspi.text", {"after_label": "c:", "equals": "1", "number": 1}, "exactly one of"),
        ("atspi.text", {"after_label": "c:", "equals": "1", "tol": 1}, "'tol' goes with"),
        ("atspi.text", {"after_label": "c:", "role": "text", "equals": "1"}, "alone"),
        ("atspi.state", {"description": "Invert", "state": "chekced"}, "unknown AT-SPI state"),
        ("atspi.state", {"state": "checked"}, "names no widget"),
        ("atspi.state", {"description": "Invert", "nth": -1}, "greater than or equal"),
        ("atspi.value", {"role": "scroll bar"}, "needs 'equals', 'min' or 'max'"),
        ("atspi.value", {"role": "scroll bar", "min": 5, "max": 1}, "no value"),
        ("atspi.exists", {"role": "label", "value": 0}, "valid boolean"),
        ("atspi.exists", {"role": "label", "name": "x"}, "unknown parameter"),
    ):
        with pytest.raises(DataError, match=why):
            judge(k, t, kind, **bad)


def test_atspi_negative_checks() -> None:
    k, t = DESKTOP_KINDS, _tree()
    assert judge(k, t, "atspi.exists", role="label", text="c:")
    assert judge(k, t, "atspi.exists", role="push button", text="Ok", value=False)
    assert not judge(k, t, "atspi.exists", role="label", text="c:", value=False)
    # a hidden row exists in the whole tree, not on screen
    assert judge(k, t, "atspi.exists", role="label", contains="T1 Axial")
    assert judge(k, t, "atspi.exists", role="label", contains="T1 Axial", showing=True, value=False)
    series = ["Series CT * Chest Axial 5mm", "Series CT * Scout"]
    q = {"role": "label", "contains": "Series ", "showing": True}
    assert judge(k, t, "atspi.rows", **q, exactly=series, match="equals")
    assert judge(k, t, "atspi.rows", **q, exactly=["Scout", "Chest Axial"])
    assert not judge(k, t, "atspi.rows", **q, exactly=series[:1])
    assert not judge(k, t, "atspi.rows", role="label", contains="Series ", exactly=series)
    assert judge(k, t, "atspi.rows", role="label", contains="Study ", exactly=[])
    with pytest.raises(DataError, match="unknown parameter"):
        judge(k, t, "atspi.rows", **q, nth=1, exactly=[])


def test_window_title() -> None:
    k = DESKTOP_KINDS
    assert judge(k, ("DICOMscope 3.6",), "window.title_matches", pattern="^DICOMscope")
    assert not judge(k, ("Layer Settings",), "window.title_matches", pattern="^DICOMscope")
    assert vacuous(k, "window.title_matches", pattern="") is not None
    with pytest.raises(DataError, match="pattern: Field required"):
        judge(k, ("x",), "window.title_matches")
