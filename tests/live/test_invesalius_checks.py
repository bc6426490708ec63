"""The invesalius environment's pure parts, without InVesalius: the phantoms and their true
masks, the landmark geometry, the check judges on hand-built states, the STL and NIfTI readers,
the start keys and the task check, the widget merge."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from medspot.errors import DataError
from medspot.live.core.checks import CheckKinds
from medspot.live.core.tasks import CheckSpec, LiveTask
from medspot.live.drivers.atspi import AtspiNode, AtspiTree, NodeQuery
from medspot.live.envs.invesalius.checks import (
    INV_KINDS,
    ExportSnapshot,
    MaskReading,
    dice,
    mask_dice,
    nifti_to_phantom,
    region_dice,
    true_volume_mm3,
)
from medspot.live.envs.invesalius.env import task_check, task_geometry
from medspot.live.envs.invesalius.files import ExportedFile, parse_nifti, parse_stl, read_export
from medspot.live.envs.invesalius.geometry import (
    angle_deg,
    landmark_plane_point,
    landmark_world,
    parse_landmark,
    to_invesalius,
    to_phantom,
)
from medspot.live.envs.invesalius.phantoms import VOLUMES, true_mask, volume, volume_values
from medspot.live.envs.invesalius.regions import PhantomGeometry
from medspot.live.envs.invesalius.start import parse_start
from medspot.live.envs.invesalius.state import InvState, MaskVoxels
from medspot.live.envs.invesalius.widgets import clip_tree, merge_widgets
from medspot.live.envs.taskfiles import parse_task_file

CT = "CT-ABDOMEN-3D"
MR = "MR-HEAD-3D"


# -- phantoms ------------------------------------------------------------------------------------


def test_phantoms_are_3d_and_their_structures_are_separable_by_threshold() -> None:
    for name, v in VOLUMES.items():
        assert v.slices >= 48, name
        values = volume_values(name)
        assert values.shape == v.shape
        for s in v.structures:
            truth = true_mask(name, s.name)
            assert truth.sum() > 500, (name, s.name)
            inside = values[truth]
            # the noise stays far from the neighbouring intensities: a threshold halfway
            # between two structures' values segments each exactly
            assert np.abs(inside - s.value).max() < 6 * v.noise, (name, s.name)


def test_the_look_alikes_are_alike_and_apart() -> None:
    for vol, (a, b) in ((CT, ("kidney-left", "kidney-right")),
                        (MR, ("ventricle-left", "ventricle-right"))):  # fmt: skip
        ta, tb = true_mask(vol, a), true_mask(vol, b)
        assert ta.sum() == tb.sum() and not (ta & tb).any()
        assert volume(vol).structure(a).value == volume(vol).structure(b).value
        # the patient's left is the image's right: larger column index
        assert np.nonzero(ta)[2].mean() > np.nonzero(tb)[2].mean()


def test_phantom_values_are_deterministic_and_seeded() -> None:
    assert np.array_equal(volume_values(CT), volume_values(CT))
    assert not np.array_equal(volume_values(CT, seed=1), volume_values(CT))


def test_unknown_names_are_refused() -> None:
    with pytest.raises(KeyError, match="no phantom volume"):
        volume("CT-NOPE")
    with pytest.raises(KeyError, match="has no structure"):
        true_mask(CT, "tumour")


# -- geometry -------------------------------------------------------------------------------------


def test_index_orders_round_trip() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    assert np.array_equal(to_phantom(to_invesalius(a)), a)
    assert to_invesalius(a)[0, 0, 0] == a[0, 2, 0]


def test_landmarks_parse_and_reject() -> None:
    lm = parse_landmark("axial:lesion.left")
    assert (lm.view, lm.structure, lm.part) == ("axial", "lesion", "left")
    assert parse_landmark("coronal:kidney-left").part == "centre"
    for bad in ("lesion", "oblique:lesion", "axial:lesion.middle", "axial:"):
        with pytest.raises(ValueError, match="VIEW:STRUCTURE"):
            parse_landmark(bad)


def test_lesion_landmarks_span_its_diameter() -> None:
    # axial slice 36: 1 mm from the lesion's centre plane, radius 12 mm
    left = landmark_world(CT, parse_landmark("axial:lesion.left"), 36)
    right = landmark_world(CT, parse_landmark("axial:lesion.right"), 36)
    assert left is not None and right is not None
    assert 21 <= right[0] - left[0] <= 24.5  # voxel centres of the cross-section's ends
    assert left[2] == right[2] == 72.0  # slice 36, 2 mm apart
    assert landmark_plane_point(CT, parse_landmark("axial:lesion"), 5) is None  # not there


def test_angle() -> None:
    assert angle_deg((1, 0, 0), (0, 0, 0), (0, 1, 0)) == pytest.approx(90)
    assert angle_deg((1, 0, 0), (0, 0, 0), (-1, 0, 0)) == pytest.approx(180)


# -- judges ---------------------------------------------------------------------------------------


def _state(**kw: Any) -> InvState:
    base: dict[str, Any] = {
        "project": {"open": True, "status": 2, "modified": True, "saved": False,
                    "path": "/h/exports/liver.inv3", "discarded": 0},
        "ready": True, "title": "ROE^RICHARD  - InVesalius 3", "busy": False,
        "image": {"shape": [64, 128, 128], "spacing": [1.5, 1.5, 2.0]},
        "masks": [{"index": 0, "name": "Liver", "threshold": [30, 80], "colour": [0, 1, 0],
                   "visible": True, "current": True, "edited": False, "voxels": 22916}],
        "surfaces": [], "measures": [],
        "views": [{"view": "axial", "slice": 36, "slices": 64, "shown": True,
                   "box": [289, 88, 479, 332]},
                  {"view": "coronal", "slice": 64, "slices": 128, "shown": True,
                   "box": [289, 444, 479, 332]}],
        "window": [400.0, 50.0],
        "layout": {"task_panel": True, "panes": {}},
        "dialogs": [],
    }  # fmt: skip
    base.update(kw)
    return InvState.from_probe(base, CT)


def _judge(kinds: CheckKinds, spec: dict[str, Any], state: object) -> bool:
    s = CheckSpec.model_validate(spec)
    kind = kinds.kind(s.kind)
    return kind.holds(kind.parse(s.params), state)


def test_mask_judges() -> None:
    st = _state()
    assert _judge(INV_KINDS, {"kind": "inv.mask", "name": "Liver", "threshold": [30, 80]}, st)
    assert not _judge(INV_KINDS, {"kind": "inv.mask", "name": "Liver", "threshold": [30, 81]},
                      st)  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.mask", "name": "Lesion", "present": False}, st)
    assert not _judge(INV_KINDS, {"kind": "inv.mask", "matches": "^Liv", "present": False}, st)
    assert _judge(INV_KINDS, {"kind": "inv.mask", "name": "Liver", "current": True,
                              "min_voxels": 20000}, st)  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.mask_count", "count": 1}, st)
    with pytest.raises(DataError, match="present: false"):
        INV_KINDS.kind("inv.mask").parse({"name": "x", "present": False, "current": True})
    with pytest.raises(DataError, match="names no mask"):
        INV_KINDS.kind("inv.mask").parse({"present": True})


def test_dice_judge_over_the_volume_and_a_region() -> None:
    st = _state()
    truth = true_mask(CT, "lesion")
    half = truth.copy()
    half[:36] = False  # the lesion from slice 36 on
    reading = MaskReading(st, MaskVoxels(CT, {"Liver": half}))
    spec = {"kind": "inv.mask_dice", "mask": "Liver", "structures": ["lesion"]}
    d = dice(half, truth)
    assert 0.3 < d < 0.8
    assert _judge(INV_KINDS, {**spec, "max": 0.8}, reading)
    assert not _judge(INV_KINDS, {**spec, "min": 0.8}, reading)
    # on slices 36..40 alone the mask is exact
    assert _judge(INV_KINDS, {**spec, "min": 0.999, "view": "axial", "slices": [36, 40]},
                  reading)  # fmt: skip
    assert mask_dice(half, CT, ["lesion"], "axial", (30, 35)) == 0.0
    # the current mask, a missing mask, a structure of another volume
    assert _judge(INV_KINDS, {"kind": "inv.mask_dice", "current": True,
                              "structures": ["lesion"], "max": 0.8}, reading)  # fmt: skip
    assert not _judge(INV_KINDS, {**spec, "mask": "Nope", "max": 1.0, "min": 0.1}, reading)
    assert not _judge(INV_KINDS, {**spec, "structures": ["tumour"], "min": 0.0, "max": 0.5},
                      reading)  # fmt: skip
    for bad, msg in (({**spec, "min": 0.5, "max": 0.2}, "min 0.5 > max"),
                     ({**spec, "min": 0.5, "view": "axial"}, "go together"),
                     ({"kind": "inv.mask_dice", "structures": ["lesion"], "min": 0.5},
                      "one of them"),
                     ({**spec, "structures": ["spleen"], "min": 0.5}, "no structure")):  # fmt: skip
        with pytest.raises(DataError, match=msg):
            INV_KINDS.parse(CheckSpec.model_validate(bad))
    params = INV_KINDS.parse(CheckSpec.model_validate({**spec, "min": 0.0}))
    assert params.vacuous()


def test_a_dice_where_the_truth_is_empty_is_never_a_pass() -> None:
    """An empty mask judged on slices the lesion does not reach (it lies on axial 30..41), or
    on slices past the volume, compares nothing with nothing: no `min` or `max` holds there,
    and its quality is 0 (it was 1.0: a no-op "painted the lesion on slice 10")."""
    empty = np.zeros(volume(CT).shape, bool)
    reading = MaskReading(_state(), MaskVoxels(CT, {"Lesion": empty}))
    spec = {"kind": "inv.mask_dice", "mask": "Lesion", "structures": ["lesion"]}
    for slices in ([10, 10], [70, 80]):
        region = {**spec, "view": "axial", "slices": slices}
        assert not _judge(INV_KINDS, {**region, "min": 0.8}, reading), slices
        assert not _judge(INV_KINDS, {**region, "max": 0.5}, reading), slices
        assert region_dice(empty, CT, ["lesion"], "axial", (slices[0], slices[1])) is None
        assert mask_dice(empty, CT, ["lesion"], "axial", (slices[0], slices[1])) == 0.0
    # where the truth is, the empty mask is judged as it is: Dice 0
    assert region_dice(empty, CT, ["lesion"], "axial", (36, 36)) == 0.0
    assert _judge(INV_KINDS, {**spec, "max": 0.5, "view": "axial", "slices": [36, 36]}, reading)


def test_phantom_geometry() -> None:
    g = PhantomGeometry(CT)
    assert (g.slices("axial"), g.slices("coronal"), g.slices("sagittal")) == (64, 128, 128)
    assert g.span(["lesion"], "axial") == (30, 41)
    assert g.slice_problem("axial", 63) is None
    assert (
        g.slice_problem("axial", 64)
        == "axial slice 64 is past the volume (CT-ABDOMEN-3D: axial 0..63)"
    )
    assert g.region_problem(["lesion"], "axial", 36, 36) is None
    assert g.region_problem(["lesion"], "axial", 28, 30) is None  # it reaches slice 30
    assert "lesion lies on axial slices 30..41" in str(
        g.region_problem(["lesion"], "axial", 10, 29)
    )
    assert g.landmark_problem("axial:lesion.left", 36) is None
    assert "has no point on axial slice 10" in str(g.landmark_problem("axial:lesion.left", 10))
    assert g.structures_problem(["lesion", "liver"]) is None
    assert "no structure 'tumour' in CT-ABDOMEN-3D" in str(g.structures_problem(["tumour"]))
    assert task_geometry(_task(start={"volume": MR})) == PhantomGeometry(MR)
    assert task_geometry(_task(start={"volume": "CT-X"})) is None  # task_check says why


def _inv_file(**task: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "paint-slice", "instruction": "x",
                            "steps": [{"instruction": "x", "target": {"text": "OK"}}],
                            "success": [{"kind": "inv.mask_count", "count": 1}]}  # fmt: skip
    base.update(task)
    return {"format_version": 1, "env": "invesalius", "tasks": [base]}


LESION_DICE = {"kind": "inv.mask_dice", "mask": "Lesion", "structures": ["lesion"], "min": 0.8}
GEOMETRY_CASES = [
    # (a check, its place, the field named, what the message says)
    ({**LESION_DICE, "view": "axial", "slices": [10, 10]}, "success.0", "slices",
     "the truth is empty on axial slices 10..10 (lesion lies on axial slices 30..41)"),
    ({**LESION_DICE, "view": "axial", "slices": [70, 80]}, "success.0", "slices",
     "axial slice 70 is past the volume (CT-ABDOMEN-3D: axial 0..63)"),
    ({**LESION_DICE, "view": "coronal", "slices": [120, 130]}, "fail_if.0", "slices",
     "coronal slice 130 is past the volume"),
    ({**LESION_DICE, "structures": ["tumour"]}, "success.0", "structures",
     "no structure 'tumour' in CT-ABDOMEN-3D"),
    ({"kind": "inv.slice", "view": "axial", "slice": 99}, "success.0", "slice",
     "axial slice 99 is past the volume"),
    ({"kind": "inv.slice", "view": "axial", "min": 64}, "steps.0.done_if", "min",
     "axial slice 64 is past the volume"),
    ({"kind": "inv.slice", "view": "sagittal", "max": 128}, "success.0", "max",
     "sagittal slice 128 is past the volume (CT-ABDOMEN-3D: sagittal 0..127)"),
    ({"kind": "inv.measure", "view": "axial", "slice": 64}, "success.0", "slice",
     "axial slice 64 is past the volume"),
    ({"kind": "inv.measure", "slice": 200}, "success.0", "slice", "is past the volume"),
    ({"kind": "inv.measure", "kind_of": "linear", "view": "axial", "slice": 10,
      "points": ["axial:lesion.left", "axial:lesion.right"]}, "success.0", "points",
     "landmark 'axial:lesion.left' has no point on axial slice 10 (lesion lies on axial "
     "slices 30..41)"),
    ({"kind": "inv.measure", "kind_of": "angular", "points": ["axial:kidney-right",
      "axial:vertebra", "axial:tumour"]}, "success.0", "points", "no structure 'tumour'"),
    ({"kind": "inv.measure", "kind_of": "linear", "min": 500}, "success.0", "min",
     "no length in CT-ABDOMEN-3D is over 300 mm"),
    ({"kind": "inv.measure", "kind_of": "angular", "value": 200}, "success.0", "value",
     "no angle is over 180 degrees"),
    ({"kind": "inv.surface", "volume_of": ["ventricle-left"]}, "success.0", "volume_of",
     "no structure 'ventricle-left' in CT-ABDOMEN-3D"),
    ({"kind": "inv.surface", "min_volume": 1e9}, "success.0", "min_volume",
     "CT-ABDOMEN-3D holds 4718592 mm³, less than min_volume"),
    ({"kind": "inv.mask", "name": "Liver", "min_voxels": 2_000_000}, "success.0", "min_voxels",
     "CT-ABDOMEN-3D has 1048576 voxels, fewer than min_voxels 2000000"),
    ({"kind": "inv.file", "file": "x.nii", "format": "nifti", "dice_with": ["brain"]},
     "success.0", "dice_with", "no structure 'brain' in CT-ABDOMEN-3D"),
]  # fmt: skip


@pytest.mark.parametrize(("check", "place", "field", "says"), GEOMETRY_CASES)
def test_task_validation_refuses_a_region_off_the_phantom(
    check: dict[str, Any], place: str, field: str, says: str
) -> None:
    """Every `inv.*` kind that judges a region, validated against the task's phantom when the
    task file is read: a located `DataError` naming the task, the check's place and field."""
    if place.startswith("steps."):
        task = {"steps": [{"instruction": "x", "target": {"text": "OK"}, "done_if": check}]}
    elif place.startswith("fail_if."):
        task = {"fail_if": [{**check, "severity": "major", "dimension": "data_altered"}]}
    else:
        task = {"success": [check]}
    with pytest.raises(DataError) as exc:
        parse_task_file(_inv_file(**task), "f.json")
    steps = place.startswith("steps.")
    where = f"step 1, field 'done_if.{field}'" if steps else f"field '{place}.{field}'"
    message = str(exc.value)
    assert f"f.json, task 'paint-slice', {where}" in message, message
    assert says in message, message


def test_task_validation_keeps_regions_with_truth_and_other_volumes_own() -> None:
    ok = [{**LESION_DICE, "view": "axial", "slices": [30, 41]},
          {"kind": "inv.slice", "view": "coronal", "min": 0, "max": 127},
          {"kind": "inv.measure", "kind_of": "linear", "view": "axial", "slice": 36,
           "points": ["axial:lesion.left", "axial:lesion.right"], "max": 287}]  # fmt: skip
    parse_task_file(_inv_file(success=ok), "f.json")
    mr = [{"kind": "inv.mask_dice", "mask": "T", "structures": ["tumour"], "min": 0.9,
           "view": "axial", "slices": [36, 36]}]  # fmt: skip
    parse_task_file(_inv_file(start={"volume": MR}, success=mr), "f.json")
    with pytest.raises(DataError, match="lies on axial slices"):  # the MR tumour is higher up
        parse_task_file(_inv_file(start={"volume": MR}, success=[
            {**mr[0], "slices": [10, 12]}]), "f.json")  # fmt: skip


def test_surface_and_measure_judges() -> None:
    want = true_volume_mm3(CT, ["lesion"])
    st = _state(surfaces=[{"index": 0, "name": "Lesion surface", "volume": want * 1.03,
                           "area": 1.0, "colour": [1, 0, 0], "transparency": 0.5,
                           "visible": True}])  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.surface", "volume_of": ["lesion"]}, st)
    assert not _judge(INV_KINDS, {"kind": "inv.surface", "volume_of": ["lesion"],
                                  "tolerance": 0.01}, st)  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.surface", "name": "Lesion surface",
                              "transparency": 0.6, "tol": 0.15, "colour": [1.0, 0.0, 0.0]},
                  st)  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.surface_count", "count": 1}, st)
    lm = [landmark_world(CT, parse_landmark(x), 36) for x in ("axial:lesion.left",
                                                               "axial:lesion.right")]  # fmt: skip
    assert lm[0] is not None and lm[1] is not None
    shifted = [list(lm[1]), [lm[0][0] + 1, lm[0][1], lm[0][2]]]  # the other way round, 1 mm off
    st = _state(measures=[{"index": 0, "name": "M 1", "kind": "linear", "value": 22.0,
                           "location": "axial", "slice": 36, "points": shifted,
                           "visible": True}])  # fmt: skip
    spec = {"kind": "inv.measure", "kind_of": "linear", "view": "axial", "slice": 36,
            "points": ["axial:lesion.left", "axial:lesion.right"]}  # fmt: skip
    assert _judge(INV_KINDS, spec, st)
    assert not _judge(INV_KINDS, {**spec, "tolerance_mm": 0.5}, st)
    assert not _judge(INV_KINDS, {**spec, "slice": 35}, st)
    assert _judge(INV_KINDS, {"kind": "inv.measure", "value": 22.5, "tol": 1}, st)
    assert _judge(INV_KINDS, {"kind": "inv.measure", "kind_of": "angular", "present": False}, st)
    with pytest.raises(DataError, match="must name the measurement's view"):
        INV_KINDS.parse(CheckSpec.model_validate({**spec, "view": "coronal"}))


def test_view_window_layout_project_dialog_judges() -> None:
    st = _state()
    assert _judge(INV_KINDS, {"kind": "inv.slice", "view": "axial", "slice": 36}, st)
    assert _judge(INV_KINDS, {"kind": "inv.slice", "view": "coronal", "min": 60}, st)
    assert _judge(INV_KINDS, {"kind": "inv.window", "changed": False}, st)  # the DICOM window
    assert not _judge(INV_KINDS, {"kind": "inv.window", "preset": "Bone"}, st)
    bone = _state(window=[2000.0, 300.0])
    assert _judge(INV_KINDS, {"kind": "inv.window", "preset": "Bone"}, bone)
    assert _judge(INV_KINDS, {"kind": "inv.window", "changed": True}, bone)
    assert _judge(INV_KINDS, {"kind": "inv.layout", "maximized": "none", "task_panel": True}, st)
    alone = _state(views=[{"view": "axial", "slice": 36, "slices": 64, "shown": True,
                           "box": [289, 88, 975, 688]},
                          {"view": "coronal", "slice": 64, "slices": 128, "shown": False,
                           "box": [0, 0, 1, 1]}])  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.layout", "maximized": "axial"}, alone)
    assert _judge(INV_KINDS, {"kind": "inv.project", "open": True, "modified": True,
                              "discarded": False}, st)  # fmt: skip
    saved = _state(project={"open": True, "modified": False, "saved": True,
                            "path": "/h/exports/liver.inv3", "discarded": 1})  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.project", "saved_as": "liver.inv3"}, saved)
    assert _judge(INV_KINDS, {"kind": "inv.project", "discarded": True}, saved)
    # closed after "Yes, save" on closing: the project closed last was saved as the file
    closed = _state(project={"open": False, "modified": False, "saved": False, "path": None,
                             "discarded": 0, "closed_saved": "~/exports/work.inv3"})  # fmt: skip
    spec = {"kind": "inv.project", "open": False, "saved_as": "work.inv3"}
    assert _judge(INV_KINDS, spec, closed)
    assert not _judge(INV_KINDS, {**spec, "saved_as": "liver.inv3"}, closed)
    discarded = _state(project={"open": False, "path": None, "discarded": 1})
    assert not _judge(INV_KINDS, spec, discarded)  # closed with its changes unsaved
    changed = _state(project={"open": True, "modified": True, "saved": False,
                              "path": "~/exports/work.inv3", "closed_saved": None})  # fmt: skip
    assert not _judge(INV_KINDS, {"kind": "inv.project", "saved_as": "work.inv3"}, changed)
    assert _judge(INV_KINDS, {"kind": "inv.dialog", "title": "Region growing"},
                  ("Region growing",))  # fmt: skip
    assert _judge(INV_KINDS, {"kind": "inv.dialog", "title": "^Question$", "present": False},
                  ("Region growing",))  # fmt: skip
    with pytest.raises(DataError, match="exactly one of"):
        INV_KINDS.kind("inv.window").parse({"preset": "Bone", "changed": True})


# -- files -----------------------------------------------------------------------------------------


def _cube_stl(side: float, binary: bool = True) -> bytes:
    v = np.array([[x, y, z] for x in (0, side) for y in (0, side) for z in (0, side)], float)
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7),
             (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip
    if not binary:
        lines = ["solid cube"]
        for f in faces:
            lines += ["facet normal 0 0 0", " outer loop"]
            lines += [f"  vertex {v[i][0]} {v[i][1]} {v[i][2]}" for i in f]
            lines += [" endloop", "endfacet"]
        return ("\n".join([*lines, "endsolid cube"]) + "\n").encode()
    out = b"\0" * 80 + struct.pack("<I", len(faces))
    for f in faces:
        out += struct.pack("<12fH", 0, 0, 0, *v[f[0]], *v[f[1]], *v[f[2]], 0)
    return out


def test_stl_reader() -> None:
    for binary in (True, False):
        mesh = parse_stl(_cube_stl(10.0, binary))
        assert mesh.volume == pytest.approx(1000.0)
        assert mesh.area == pytest.approx(600.0)
        assert mesh.bounds == ((0.0, 0.0, 0.0), (10.0, 10.0, 10.0))
    with pytest.raises(ValueError, match="not an STL"):
        parse_stl(b"hello")


def _nifti(arr: np.ndarray, zooms: tuple[float, ...], gz: bool = False) -> bytes:
    hdr = bytearray(352)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, arr.ndim, *arr.shape, *([1] * (7 - arr.ndim)))
    struct.pack_into("<h", hdr, 70, 2)  # uint8
    struct.pack_into("<8f", hdr, 76, 1.0, *zooms, *([1.0] * (7 - len(zooms))))
    struct.pack_into("<f", hdr, 108, 352.0)
    hdr[344:348] = b"n+1\0"
    data = bytes(hdr) + arr.astype(np.uint8).tobytes(order="F")
    return gzip.compress(data) if gz else data


def test_nifti_reader_and_the_mask_export_geometry() -> None:
    v = volume(CT)
    truth = true_mask(CT, "lesion")
    # as InVesalius writes a mask: its matrix with the flag border, flipped and swapped
    m = np.zeros((v.slices + 1, v.rows + 1, v.cols + 1), np.uint8)
    m[1:, 1:, 1:] = np.where(to_invesalius(truth), 255, 0)
    m[0, :, :] = 1
    exported = np.swapaxes(np.fliplr(m), 0, 2)
    for gz in (False, True):
        img = parse_nifti(_nifti(exported, (1.5, 1.5, 2.0), gz))
        back = nifti_to_phantom(img, v.shape)
        assert back is not None and np.array_equal(back, truth)
    with pytest.raises(ValueError, match="NIfTI"):
        parse_nifti(b"\0" * 400)


def test_file_judges(tmp_path: Path) -> None:
    want = true_volume_mm3(CT, ["lesion"])
    side = want ** (1 / 3)
    (tmp_path / "lesion.stl").write_bytes(_cube_stl(side))
    (tmp_path / "old.stl").write_bytes(b"keep me")
    names = ("lesion.stl", "old.stl")
    snap = ExportSnapshot({n: read_export(tmp_path, n) for n in names}, names,
                          seeded={"old.stl": read_export(tmp_path, "old.stl").sha256 or ""},
                          volume=CT)  # fmt: skip
    spec = {"kind": "inv.file", "file": "lesion.stl", "format": "stl", "volume_of": ["lesion"]}
    assert _judge(INV_KINDS, spec, snap)
    assert not _judge(INV_KINDS, {**spec, "volume_of": ["liver"]}, snap)
    assert _judge(INV_KINDS, {"kind": "inv.file", "file": "old.stl", "unchanged": True}, snap)
    assert _judge(INV_KINDS, {"kind": "inv.file", "pattern": "*.stl", "format": "stl"}, snap)
    assert _judge(INV_KINDS, {"kind": "inv.file", "file": "none.nii", "exists": False}, snap)
    assert read_export(tmp_path, "../etc") == ExportedFile("../etc", False)
    with pytest.raises(DataError, match="plain file name"):
        INV_KINDS.kind("inv.file").parse({"file": "../x.stl"})


# -- start keys, task check, widgets ----------------------------------------------------------


def _task(**kw: Any) -> LiveTask:
    base: dict[str, Any] = {
        "id": "t", "instruction": "x", "steps": [{"instruction": "x",
                                                  "target": {"landmark": "axial:lesion"}}],
        "success": [{"kind": "inv.mask_count", "count": 1}],
    }  # fmt: skip
    base.update(kw)
    return LiveTask.model_validate(base)


def test_start_keys() -> None:
    st = parse_start(_task(start={"masks": [{"name": "A", "threshold": [1, 2],
                                              "structures": ["lesion"]}],
                                   "current": "A", "slices": {"axial": 10},
                                   "window": [350, 50]}))  # fmt: skip
    args = st.probe_args("/d")
    assert args["masks"][0]["voxels"] and args["current"] == "A" and args["window"] == [350, 50]
    for start, msg in (({"current": "B"}, "no start mask"), ({"slices": {"axial": 64}}, "0..63"),
                       ({"volume": "CT-X"}, "no phantom volume"),
                       ({"masks": [{"name": "A", "threshold": [1, 2],
                                    "structures": ["tumour"]}]}, "has no structure"),
                       ({"files": {"../x": "y"}}, "plain file name")):  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            parse_start(_task(start=start))


def test_task_check_names_structures_of_another_volume() -> None:
    assert task_check(_task()) == []
    wrong = _task(start={"volume": MR})  # the lesion is the CT's
    assert task_check(wrong) == [("steps.0.target.landmark", "no structure 'lesion' in "
                                  "MR-HEAD-3D (known: brain, scalp, skull, tumour, "
                                  "ventricle-left, ventricle-right)")]  # fmt: skip
    # a check's structures: its geometry validation, at the parameter
    dice_mr = _inv_file(
        start={"volume": MR},
        success=[{"kind": "inv.mask_dice", "mask": "A", "structures": ["kidney-left"], "min": 0.5}],
    )
    with pytest.raises(DataError) as exc:
        parse_task_file(dice_mr, "f.json")
    assert "field 'success.0.structures'" in str(exc.value)
    assert "no structure 'kidney-left' in MR-HEAD-3D (known: brain," in str(exc.value)
    assert task_check(_task(start={"route": "#x"}))[0][0] == "start.route"


def _node(i: int, path: tuple[int, ...], parent: int, role: str, box: tuple[int, int, int, int],
          name: str = "") -> AtspiNode:  # fmt: skip
    return AtspiNode(
        i,
        path,
        parent,
        role,
        name,
        "",
        frozenset({"showing", "visible"}),
        box,
        None,
        None,
        "app.py",
    )


def test_widgets_merge_under_their_window_and_hidden_panels_clip() -> None:
    tree = AtspiTree((
        _node(0, (0, 0), -1, "frame", (0, 0, 1280, 800), "Main - InVesalius 3"),
        _node(1, (0, 0, 0), 0, "panel", (0, 0, 200, 20)),  # a collapsed fold panel
        _node(2, (0, 0, 0, 0), 1, "push button", (10, 40, 80, 30), "Hidden"),
        _node(3, (0, 0, 1), 0, "panel", (0, 100, 400, 100)),
        _node(4, (0, 1), -1, "frame", (300, 120, 200, 100), "A dialog"),
    ))  # fmt: skip
    clipped = clip_tree(tree)
    assert "showing" not in clipped.nodes[2].states
    widgets = [{"role": "tool", "text": "", "description": "Zoom", "box": [10, 110, 20, 20],
                "states": ["checked"], "top": "Main - InVesalius 3"},
               {"role": "tool", "text": "", "description": "Covered", "box": [350, 150, 20, 20],
                "states": [], "top": "Main - InVesalius 3"}]  # fmt: skip
    merged = merge_widgets(tree, widgets, "app.py")
    (zoom,) = merged.find(NodeQuery(role="tool", description="Zoom"))
    assert merged.nodes[zoom.parent].index == 3 and "checked" in zoom.states
    assert merged.hittable_box(zoom, (1280, 800)) is not None
    assert not merged.find(NodeQuery(role="tool", description="Covered"))  # under the dialog
