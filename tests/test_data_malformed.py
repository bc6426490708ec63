"""Malformed datasets: every problem is a located error (file, task, step, field), exit 2 from
the real CLI, never a traceback; `validate` lists several problems at once."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.errors import DataError
from medspot.testing import write_dataset

FILE = "Annotations/Demo_Annotation.json"


def base_doc() -> dict[str, Any]:
    """A valid one-app dataset: task 0 with two steps, task 1 with one step."""
    return {
        "tasks": [
            {
                "task_overview": "Open a study",
                "steps": [
                    {
                        "step_id": 1,
                        "image_path": "Images/Demo/a.png",
                        "instruction": "Click File",
                        "actions": [
                            {"type": "click", "target": "File menu", "bbox": [1, 2, 10, 5]}
                        ],
                    },
                    {
                        "step_id": 2,
                        "image_path": "Images/Demo/b.png",
                        "instruction": "Click Open",
                        "actions": [{"type": "click", "target": "Open", "bbox": [20, 30, 10, 5]}],
                    },
                ],
            },
            {
                "task_overview": "Zoom in",
                "steps": [
                    {
                        "step_id": 1,
                        "image_path": "Images/Demo/c.png",
                        "instruction": "Click the zoom tool",
                        "actions": [{"type": "click", "target": "Zoom", "bbox": [50, 50, 5, 5]}],
                    }
                ],
            },
        ]
    }


Doc = dict[str, Any]


def step(doc: Doc, t: int, k: int) -> dict[str, Any]:
    s: dict[str, Any] = doc["tasks"][t]["steps"][k - 1]
    return s


def set_bbox(t: int, k: int, value: object) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        step(doc, t, k)["actions"][0]["bbox"] = value

    return edit


def set_field(t: int, k: int, key: str, value: object) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        step(doc, t, k)[key] = value

    return edit


def drop_field(t: int, k: int, key: str) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        del step(doc, t, k)[key]

    return edit


def drop_task_field(t: int, key: str) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        del doc["tasks"][t][key]

    return edit


def set_action(t: int, k: int, key: str, value: object) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        step(doc, t, k)["actions"][0][key] = value

    return edit


# (case id, edit of the valid document, expected location text, a word of the message)
DOC_CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    (
        "missing-bbox",
        lambda d: step(d, 1, 1)["actions"][0].pop("bbox"),
        f"{FILE}, task 1, step 1, field 'actions[0].bbox'",
        "missing",
    ),
    (
        "missing-instruction",
        drop_field(0, 2, "instruction"),
        f"{FILE}, task 0, step 2, field 'instruction'",
        "missing",
    ),
    (
        "missing-image-path",
        drop_field(0, 1, "image_path"),
        f"{FILE}, task 0, step 1, field 'image_path'",
        "missing",
    ),
    (
        "missing-step-id",
        drop_field(1, 1, "step_id"),
        f"{FILE}, task 1, step 1, field 'step_id'",
        "missing",
    ),
    (
        "missing-actions",
        drop_field(0, 2, "actions"),
        f"{FILE}, task 0, step 2, field 'actions'",
        "missing",
    ),
    (
        "missing-overview",
        drop_task_field(1, "task_overview"),
        f"{FILE}, task 1, field 'task_overview'",
        "missing",
    ),
    ("missing-steps", drop_task_field(0, "steps"), f"{FILE}, task 0, field 'steps'", "missing"),
    (
        "step-id-string",
        set_field(0, 2, "step_id", "2"),
        f"{FILE}, task 0, step 2, field 'step_id'",
        "integer",
    ),
    (
        "step-id-bool",
        set_field(0, 1, "step_id", True),
        f"{FILE}, task 0, step 1, field 'step_id'",
        "integer",
    ),
    (
        "instruction-number",
        set_field(1, 1, "instruction", 5),
        f"{FILE}, task 1, step 1, field 'instruction'",
        "must be a string",
    ),
    (
        "instruction-blank",
        set_field(0, 1, "instruction", "   "),
        f"{FILE}, task 0, step 1, field 'instruction'",
        "empty",
    ),
    (
        "instruction-bad-object",
        set_field(0, 1, "instruction", {"text": 5}),
        f"{FILE}, task 0, step 1, field 'instruction'",
        "text",
    ),
    (
        "bbox-three-numbers",
        set_bbox(0, 2, [1, 2, 3]),
        f"{FILE}, task 0, step 2, field 'actions[0].bbox'",
        "four numbers",
    ),
    (
        "bbox-string",
        set_bbox(0, 1, "1,2,3,4"),
        f"{FILE}, task 0, step 1, field 'actions[0].bbox'",
        "four numbers",
    ),
    (
        "bbox-bool",
        set_bbox(0, 1, [1, 2, True, 4]),
        f"{FILE}, task 0, step 1, field 'actions[0].bbox'",
        "boolean",
    ),
    (
        "bbox-null-value",
        set_bbox(1, 1, [1, None, 3, 4]),
        f"{FILE}, task 1, step 1, field 'actions[0].bbox'",
        "number",
    ),
    (
        "bbox-past-right-edge",
        set_bbox(1, 1, [95, 10, 10, 5]),
        f"{FILE}, task 1, step 1, field 'actions[0].bbox'",
        "outside 0..100",
    ),
    (
        "bbox-past-bottom-edge",
        set_bbox(0, 2, [10, 96, 5, 5]),
        f"{FILE}, task 0, step 2, field 'actions[0].bbox'",
        "outside 0..100",
    ),
    (
        "bbox-negative-x",
        set_bbox(0, 1, [-1, 10, 5, 5]),
        f"{FILE}, task 0, step 1, field 'actions[0].bbox'",
        "outside 0..100",
    ),
    (
        "bbox-negative-width",
        set_bbox(0, 1, [10, 10, -5, 5]),
        f"{FILE}, task 0, step 1, field 'actions[0].bbox'",
        "above 0",
    ),
    (
        "bbox-zero-height",
        set_bbox(0, 2, [10, 10, 5, 0]),
        f"{FILE}, task 0, step 2, field 'actions[0].bbox'",
        "above 0",
    ),
    (
        "action-type-number",
        set_action(0, 1, "type", 3),
        f"{FILE}, task 0, step 1, field 'actions[0].type'",
        "string",
    ),
    (
        "action-target-null",
        set_action(1, 1, "target", None),
        f"{FILE}, task 1, step 1, field 'actions[0].target'",
        "string",
    ),
    (
        "actions-object",
        set_field(0, 2, "actions", {"type": "click"}),
        f"{FILE}, task 0, step 2, field 'actions'",
        "array",
    ),
    (
        "action-not-object",
        set_field(0, 2, "actions", ["click"]),
        f"{FILE}, task 0, step 2, field 'actions[0]'",
        "object",
    ),
    (
        "image-path-absolute",
        set_field(0, 2, "image_path", "/etc/passwd"),
        f"{FILE}, task 0, step 2, field 'image_path'",
        "relative",
    ),
    (
        "image-path-dotdot",
        set_field(1, 1, "image_path", "Images/../../outside.png"),
        f"{FILE}, task 1, step 1, field 'image_path'",
        "climbs out",
    ),
    (
        "image-path-number",
        set_field(1, 1, "image_path", 7),
        f"{FILE}, task 1, step 1, field 'image_path'",
        "string",
    ),
    (
        "task-not-object",
        lambda d: d["tasks"].__setitem__(1, "Zoom in"),
        f"{FILE}, task 1",
        "object",
    ),
    (
        "step-not-object",
        lambda d: d["tasks"][0]["steps"].__setitem__(1, [1, 2]),
        f"{FILE}, task 0, step 2",
        "object",
    ),
    (
        "steps-empty",
        lambda d: d["tasks"][1].__setitem__("steps", []),
        f"{FILE}, task 1, field 'steps'",
        "no steps",
    ),
    (
        "tasks-not-list",
        lambda d: d.__setitem__("tasks", {"0": "x"}),
        f"{FILE}, field 'tasks'",
        "array",
    ),
    ("tasks-missing", lambda d: d.pop("tasks"), f"{FILE}, field 'tasks'", "missing"),
]


@pytest.mark.parametrize(
    ("edit", "where", "word"),
    [pytest.param(e, w, m, id=i) for i, e, w, m in DOC_CASES],
)
def test_malformed_document_is_a_located_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[Doc], None],
    where: str,
    word: str,
) -> None:
    doc = base_doc()
    write_dataset(tmp_path, {"Demo": doc})  # images of the valid document
    edit(doc)
    write_dataset(tmp_path, {"Demo": doc}, paint=False)

    assert main(["validate", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert any(line.startswith(f"error: {where}: ") and word in line for line in errors), out
    assert "Traceback" not in err

    # the loader used by every other command refuses it the same way
    assert main(["stats", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"medspot: error: {where}: ")
    assert "medspot validate" in err
    assert "Traceback" not in err


def write_raw(root: Path, data: bytes) -> None:
    write_dataset(root, {"Demo": base_doc()})
    (root / FILE).write_bytes(data)


def symlink_out(root: Path) -> None:
    outside = root.parent / "outside.png"
    outside.write_bytes((root / "Images/Demo/a.png").read_bytes())
    (root / "Images/Demo/b.png").unlink()
    (root / "Images/Demo/b.png").symlink_to(outside)


def image_to_folder(root: Path) -> None:
    (root / "Images/Demo/a.png").unlink()
    (root / "Images/Demo/a.png").mkdir()


def truncated(root: Path) -> None:
    text = json.dumps(base_doc(), indent=1).encode()
    write_raw(root, text[: len(text) // 2])


FILE_CASES: list[tuple[str, Callable[[Path], object], str, str]] = [
    ("truncated-json", truncated, FILE, "invalid JSON"),
    ("empty-file", lambda r: write_raw(r, b""), FILE, "empty"),
    ("whitespace-file", lambda r: write_raw(r, b"  \n"), FILE, "empty"),
    ("not-utf8", lambda r: write_raw(r, b'{"tasks": ["\xff\xfe"]}'), FILE, "UTF-8"),
    ("top-level-list", lambda r: write_raw(r, b"[]"), FILE, "top level"),
    (
        "nan-in-bbox",
        lambda r: write_raw(
            r, json.dumps(base_doc()).replace("[50, 50, 5, 5]", "[NaN, 50, 5, 5]").encode()
        ),
        f"{FILE}, task 1, step 1, field 'actions[0].bbox'",
        "finite",
    ),
    (
        "missing-image",
        lambda r: (r / "Images/Demo/b.png").unlink(),
        f"{FILE}, task 0, step 2, field 'image_path'",
        "missing",
    ),
    (
        "not-an-image",
        lambda r: (r / "Images/Demo/c.png").write_bytes(b"this is not a PNG"),
        f"{FILE}, task 1, step 1, field 'image_path'",
        "not a readable image",
    ),
    (
        "image-is-a-folder",
        image_to_folder,
        f"{FILE}, task 0, step 1, field 'image_path'",
        "image",
    ),
    (
        "symlink-out-of-root",
        symlink_out,
        f"{FILE}, task 0, step 2, field 'image_path'",
        "leaves the dataset root",
    ),
    ("no-annotation-files", lambda r: (r / FILE).unlink(), "Annotations", "no annotation files"),
]


@pytest.mark.parametrize(
    ("damage", "where", "word"),
    [pytest.param(d, w, m, id=i) for i, d, w, m in FILE_CASES],
)
def test_malformed_file_or_image_is_a_located_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], object],
    where: str,
    word: str,
) -> None:
    root = tmp_path / "data"
    write_dataset(root, {"Demo": base_doc()})
    damage(root)

    assert main(["validate", str(root)]) == 2
    out, err = capsys.readouterr()
    assert any(
        line.startswith(f"error: {where}: ") and word in line for line in out.splitlines()
    ), out
    assert "Traceback" not in err
    with pytest.raises(DataError) as info:
        load_dataset(root)
    assert str(info.value).startswith(f"{where}: ")


def test_missing_image_is_fine_without_image_checks(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"Demo": base_doc()}, paint=False)
    assert main(["validate", str(tmp_path), "--no-images"]) == 0
    ds = load_dataset(tmp_path, check_images=False)
    assert [s.uid for s in ds.steps()] == ["Demo/0/1", "Demo/0/2", "Demo/1/1"]


def test_unsafe_paths_are_refused_even_without_image_checks(tmp_path: Path) -> None:
    doc = base_doc()
    step(doc, 0, 1)["image_path"] = "../a.png"
    step(doc, 1, 1)["image_path"] = "C:\\screens\\c.png"
    write_dataset(tmp_path, {"Demo": doc}, paint=False)
    with pytest.raises(DataError) as info:
        load_dataset(tmp_path, check_images=False)
    assert info.value.location is not None
    assert (info.value.location.task, info.value.location.step) == (0, 1)
    assert "and 1 more problem" in info.value.message


def test_bbox_float_noise_at_the_edge_is_accepted(tmp_path: Path) -> None:
    doc = base_doc()
    step(doc, 0, 1)["actions"][0]["bbox"] = [90.1, 0, 9.9, 100.0000000001]
    write_dataset(tmp_path, {"Demo": doc})
    ds = load_dataset(tmp_path)
    box = ds.step("Demo/0/1").actions[0].box
    assert box.x2 == pytest.approx(1.0)
    assert box.y2 == pytest.approx(1.0)


def test_validate_lists_every_problem_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = base_doc()
    step(doc, 0, 1)["actions"][0]["bbox"] = [1, 2, 3]  # Demo 0/1
    del step(doc, 0, 2)["instruction"]  # Demo 0/2
    step(doc, 1, 1)["step_id"] = "one"  # Demo 1/1
    other = copy.deepcopy(base_doc())
    write_dataset(tmp_path, {"Demo": doc, "Other": other})
    (tmp_path / "Images/Demo/c.png").unlink()  # used by Demo 1/1 and Other 1/1
    (tmp_path / "Annotations/Broken_Annotation.json").write_text('{"tasks": [')

    assert main(["validate", str(tmp_path), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    got = sorted((e["file"], e["task"], e["step"], e["field"]) for e in report["errors"])
    assert got == [
        ("Annotations/Broken_Annotation.json", None, None, None),
        (FILE, 0, 1, "actions[0].bbox"),
        (FILE, 0, 2, "instruction"),
        # the missing image is named once, at the first step that uses it (Demo before Other)
        (FILE, 1, 1, "image_path"),
        (FILE, 1, 1, "step_id"),
    ]
    missing = [e for e in report["errors"] if e["field"] == "image_path"]
    assert "used by 2 steps" in missing[0]["message"]
    assert report["ok"] is False

    with pytest.raises(DataError) as info:
        load_dataset(tmp_path)
    assert "and 4 more problem(s)" in info.value.message


def test_python_dash_m_gives_exit_2_and_no_traceback(tmp_path: Path) -> None:
    doc = base_doc()
    step(doc, 1, 1)["actions"][0]["bbox"] = [10, 10, -5, 5]
    write_dataset(tmp_path, {"Demo": doc})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    for cmd in (["validate", str(tmp_path)], ["stats", str(tmp_path)]):
        proc = subprocess.run(
            [sys.executable, "-m", "medspot", *cmd],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 2, proc
        assert "Traceback" not in proc.stderr
        text = proc.stdout + proc.stderr
        assert f"{FILE}, task 1, step 1, field 'actions[0].bbox'" in text
        assert "above 0" in text


def test_missing_dataset_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nowhere" / "at" / "all")]) == 2
    out, _ = capsys.readouterr()
    assert "no dataset at" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["stats", str(empty)]) == 2
    assert "no Annotations/ folder" in capsys.readouterr().err
