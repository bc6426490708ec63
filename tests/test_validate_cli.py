"""`medspot validate` on the real annotations and on placeholder screenshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.cli import main
from medspot.dataset.validate import format_report, validate_dataset


def test_real_annotations_without_images(
    annotations_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(annotations_dir.parent), "--no-images"]) == 0
    out = capsys.readouterr().out
    assert "10 apps" in out
    assert "216 tasks, 607 steps (603 evaluable), 597 distinct images" in out
    assert "3DSlicer/19/5, Bluelight/2/2, Bluelight/6/1, DICOMscope/4/1" in out
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1
    assert "Annotations/Weasis_Annotation.json, task 18, step 3, field 'instruction'" in warnings[0]
    assert not any(line.startswith("error: ") for line in out.splitlines())
    assert "0 error(s), 1 warning(s)" in out


def test_real_annotations_json(annotations_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(annotations_dir), "--no-images", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ok"] is True
    assert r["counts"]["apps"] == 10
    assert r["counts"]["tasks"] == 216
    assert r["counts"]["steps"] == 607
    assert r["counts"]["evaluable_steps"] == 603
    assert r["counts"]["distinct_images"] == 597
    assert r["counts"]["shared_image_uses"] == 10
    assert r["counts"]["stripped_instructions"] == 25
    assert r["unannotated_steps"] == ["3DSlicer/19/5", "Bluelight/2/2", "Bluelight/6/1",
                                      "DICOMscope/4/1"]  # fmt: skip
    assert r["object_instructions"] == ["Weasis/18/3"]
    assert r["multi_action_steps"] == ["GingkoCadx/7/1", "Weasis/18/3"]
    assert r["tasks_without_click"] == ["DICOMscope/19"]
    assert r["duplicate_overviews"] == [["3DSlicer/12", "3DSlicer/13"]]
    assert r["action_types"] == {"click": 565, "drag": 15, "hover": 11, "type": 10,
                                 "double_click": 4}  # fmt: skip
    assert r["errors"] == []
    assert [w["field"] for w in r["warnings"]] == ["instruction"]


def test_real_annotations_with_images_fail(
    annotations_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the real folder has no Images/: every one of the 597 screenshots is missing
    assert main(["validate", str(annotations_dir.parent), "--json"]) == 2
    r = json.loads(capsys.readouterr().out)
    assert len(r["errors"]) == 597
    assert {e["field"] for e in r["errors"]} == {"image_path"}
    assert any("no Images/ folder" in w["message"] for w in r["warnings"])


def test_placeholder_root_validates_with_images(placeholder_root: Path) -> None:
    report = validate_dataset(placeholder_root)
    assert report.ok
    assert report.images_checked
    assert (report.tasks, report.steps, report.distinct_images) == (216, 607, 597)
    assert "OK: the data can be evaluated" in format_report(report)


def test_apps_option(annotations_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(annotations_dir), "--no-images", "--apps", "Bluelight,Weasis",
                 "--json"]) == 0  # fmt: skip
    r = json.loads(capsys.readouterr().out)
    assert r["apps"] == ["Bluelight", "Weasis"]
    assert r["counts"]["tasks"] == 12 + 30
    assert r["unannotated_steps"] == ["Bluelight/2/2", "Bluelight/6/1"]

    assert main(["validate", str(annotations_dir), "--no-images", "--apps", "Nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medspot: error: unknown application(s) Nope")
    assert "3DSlicer" in err and "Weasis" in err
