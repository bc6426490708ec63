"""The loader on the real annotation files: counts and each quirk of protocol.md 1.2."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from medspot.dataset.loading import find_root, load_dataset, scan
from medspot.dataset.records import Dataset
from medspot.errors import ConfigError, DataError

APPS = (
    "3DSlicer", "Bluelight", "DICOMscope", "GingkoCadx", "ITKsnap",
    "MITK", "MicroDicom", "Orthanc", "RadiAnt", "Weasis",
)  # fmt: skip
# tasks per app, counted in the files by hand (jq '.tasks | length'); they sum to 216
TASKS_PER_APP = {
    "3DSlicer": 25, "Bluelight": 12, "DICOMscope": 25, "GingkoCadx": 23, "ITKsnap": 20,
    "MITK": 25, "MicroDicom": 19, "Orthanc": 10, "RadiAnt": 27, "Weasis": 30,
}  # fmt: skip


@pytest.fixture(scope="module")
def ds(annotations_dir: Path) -> Dataset:
    return load_dataset(annotations_dir.parent, check_images=False)


def test_counts(ds: Dataset) -> None:
    assert ds.app_names == APPS
    assert {a.name: len(a.tasks) for a in ds.apps} == TASKS_PER_APP
    assert sum(TASKS_PER_APP.values()) == 216
    assert len(list(ds.tasks())) == 216
    assert len(list(ds.steps())) == 607
    assert len({s.image_path for s in ds.steps()}) == 597
    lengths = [len(t.steps) for t in ds.tasks()]
    assert (min(lengths), max(lengths)) == (1, 10)


def test_identities_are_file_positions(ds: Dataset) -> None:
    for app in ds.apps:
        assert [t.index for t in app.tasks] == list(range(len(app.tasks)))
        for t in app.tasks:
            assert t.uid == f"{app.name}/{t.index}"
            assert [s.position for s in t.steps] == list(range(1, len(t.steps) + 1))
    assert ds.step("MITK/3/2").uid == "MITK/3/2"


def test_unannotated_steps_are_kept_without_actions(ds: Dataset) -> None:
    unannotated = [s.uid for s in ds.steps() if not s.annotated]
    assert unannotated == ["3DSlicer/19/5", "Bluelight/2/2", "Bluelight/6/1", "DICOMscope/4/1"]
    for uid in unannotated:
        assert ds.step(uid).actions == ()
        assert ds.step(uid).boxes == ()


def test_action_types_other_than_click(ds: Dataset) -> None:
    counts: dict[str, int] = {}
    for s in ds.steps():
        for a in s.actions:
            counts[a.type] = counts.get(a.type, 0) + 1
    # protocol.md 1.2: double_click 4, drag 15, type 10, hover 11; the rest are clicks
    assert counts == {"click": 565, "double_click": 4, "drag": 15, "type": 10, "hover": 11}


def test_two_actions_in_a_step(ds: Dataset) -> None:
    two = [s.uid for s in ds.steps() if len(s.actions) == 2]
    assert two == ["GingkoCadx/7/1", "Weasis/18/3"]
    g = ds.step("GingkoCadx/7/1")
    # bboxes [0.75, 93.8, 1.5, 2.35] and [4.73, 2.43, 2.53, 2.28] in percent
    assert g.actions[0].bbox_percent == (0.75, 93.8, 1.5, 2.35)
    b0, b1 = g.boxes
    assert b0.as_list() == pytest.approx([0.0075, 0.938, 0.0225, 0.9615])
    assert (b1.x1, b1.y1, b1.x2, b1.y2) == pytest.approx((0.0473, 0.0243, 0.0726, 0.0471))


def test_object_instruction_is_joined_with_a_warning(annotations_dir: Path) -> None:
    result = scan(annotations_dir.parent, check_images=False)
    s = result.dataset.step("Weasis/18/3")
    assert s.instruction == "Select the DICOM file Click on the Open button"
    assert result.object_instructions == ("Weasis/18/3",)
    assert result.errors == ()
    [w] = result.warnings
    assert w.location is not None
    assert (w.location.file, w.location.task, w.location.step, w.location.field) == (
        "Annotations/Weasis_Annotation.json", 18, 3, "instruction",
    )  # fmt: skip
    assert "Weasis/18/3" not in " ".join(result.stripped_instructions)


def test_shared_screenshots(ds: Dataset) -> None:
    g = ds.apps[ds.app_names.index("GingkoCadx")]
    paths = [s.image_path for t in g.tasks for s in t.steps]
    assert len(paths) - len(set(paths)) == 10
    others = [s.image_path for s in ds.steps() if s.app != "GingkoCadx"]
    assert len(others) == len(set(others))


def test_duplicate_overviews_are_distinct_tasks(ds: Dataset) -> None:
    a, b = ds.task("3DSlicer/12"), ds.task("3DSlicer/13")
    assert a.overview == b.overview == "Change the Layout of the DICOM viewer"
    assert a.uid != b.uid
    assert a.steps != b.steps


def test_instructions_are_stripped(ds: Dataset, annotations_dir: Path) -> None:
    raw_unstripped = 0
    for f in annotations_dir.glob("*_Annotation.json"):
        for t in json.loads(f.read_text())["tasks"]:
            for s in t["steps"]:
                text = s["instruction"]
                raw_unstripped += isinstance(text, str) and text != text.strip()
    assert raw_unstripped == 25
    assert all(s.instruction == s.instruction.strip() for s in ds.steps())
    assert len(scan(annotations_dir, check_images=False).stripped_instructions) == 25


def test_task_without_a_click(ds: Dataset) -> None:
    no_click = [
        t.uid for t in ds.tasks() if not any(a.type == "click" for s in t.steps for a in s.actions)
    ]
    assert no_click == ["DICOMscope/19"]
    t = ds.task("DICOMscope/19")
    assert all(s.annotated for s in t.steps)
    assert {a.type for s in t.steps for a in s.actions} == {"drag"}


def test_fingerprint_is_sha256_of_the_files_in_app_order(
    ds: Dataset, annotations_dir: Path
) -> None:
    h = hashlib.sha256()
    for app in APPS:
        h.update((annotations_dir / f"{app}_Annotation.json").read_bytes())
    assert ds.fingerprint == h.hexdigest()
    weasis = load_dataset(annotations_dir, apps=["Weasis"], check_images=False)
    expected = hashlib.sha256((annotations_dir / "Weasis_Annotation.json").read_bytes())
    assert weasis.fingerprint == expected.hexdigest()


def test_apps_and_limit(annotations_dir: Path) -> None:
    ds = load_dataset(annotations_dir, apps=["Weasis", "3DSlicer"], limit=2, check_images=False)
    assert ds.app_names == ("3DSlicer", "Weasis")
    assert [t.uid for t in ds.tasks()] == ["3DSlicer/0", "3DSlicer/1", "Weasis/0", "Weasis/1"]
    assert load_dataset(annotations_dir, limit=100, check_images=False).app_names == APPS
    # Orthanc has 10 tasks: a limit above that keeps them all
    assert len(load_dataset(annotations_dir, apps=["Orthanc"], limit=11,
                            check_images=False).apps[0].tasks) == 10  # fmt: skip


def test_unknown_app_lists_the_known_ones(annotations_dir: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_dataset(annotations_dir, apps=["Weasis", "Osirix"], check_images=False)
    assert "Osirix" in str(info.value)
    for app in APPS:
        assert app in str(info.value)
    with pytest.raises(ConfigError):
        load_dataset(annotations_dir, limit=0, check_images=False)


def test_root_is_found_in_a_larger_tree(annotations_dir: Path, tmp_path: Path) -> None:
    bench = tmp_path / "snapshot" / "MedPSOT_bench"
    shutil.copytree(annotations_dir, bench / "Annotations")
    (tmp_path / "snapshot" / "README.md").write_text("hi")
    assert find_root(tmp_path / "snapshot") == bench
    assert find_root(bench / "Annotations") == bench
    ds = load_dataset(tmp_path, check_images=False)
    assert ds.root == bench
    assert len(list(ds.steps())) == 607
    # two roots at the same depth are ambiguous
    shutil.copytree(annotations_dir, tmp_path / "snapshot" / "copy" / "Annotations")
    with pytest.raises(DataError, match="several dataset roots"):
        find_root(tmp_path / "snapshot")


def test_images_are_checked_by_default(annotations_dir: Path) -> None:
    with pytest.raises(DataError) as info:
        load_dataset(annotations_dir)  # the real folder has no Images/
    assert info.value.location is not None
    assert info.value.location.field == "image_path"
    assert "596 more problem(s)" in info.value.message
