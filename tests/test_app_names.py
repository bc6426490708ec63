"""Application names come from file names and become folders of a run: `.._Annotation.json`
never writes outside --out, and names that one folder would hold twice (case, white space)
are a validation error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _builders import step
from medspot.cli import main

BOX = (10.0, 10.0, 20.0, 20.0)


def _file(root: Path, name: str) -> None:
    ann: dict[str, Any] = {
        "tasks": [{"task_overview": f"{name} task", "steps": [step("Images/a.png", "Go", BOX)]}]
    }
    ann["tasks"][0]["steps"][0]["step_id"] = 1
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "Annotations" / f"{name}_Annotation.json").write_text(json.dumps(ann))
    if not (root / "Images" / "a.png").exists():
        from PIL import Image

        (root / "Images").mkdir(exist_ok=True)
        Image.new("RGB", (100, 100)).save(root / "Images" / "a.png")


def test_a_parent_folder_name_writes_nothing_outside_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    _file(root, "..")
    _file(root, "Good")
    assert main(["validate", str(root)]) == 2
    assert ".._Annotation.json" in "".join(capsys.readouterr())
    box = tmp_path / "box"
    out = box / "run"
    argv = ["eval", "--data", str(root), "--model", "oracle", "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    assert not any(p.name == "task_results.json" for p in tmp_path.rglob("*"))
    assert main([*argv[:-1], "--apps", "Good", "--no-progress"]) == 2  # the data is invalid


@pytest.mark.parametrize("name", [".", "._Hidden", " Lead", "Trail ", "Tab\tName"])
def test_unsafe_names_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    root = tmp_path / "data"
    _file(root, name)
    _file(root, "Good")
    assert main(["validate", str(root)]) == 2
    assert "application name" in "".join(capsys.readouterr())


@pytest.mark.parametrize("other", ["alpha", "ALPHA"])
def test_names_differing_only_by_case_are_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], other: str
) -> None:
    root = tmp_path / "data"
    _file(root, "Alpha")
    _file(root, other)
    assert main(["validate", str(root)]) == 2
    assert "differ only in case" in "".join(capsys.readouterr())
