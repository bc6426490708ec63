"""Hostile input found by a new user's audit: each ends in a located error with exit 2 (or,
for a closed pipe, a quiet exit), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from medspot.cli import main

REPO = Path(__file__).resolve().parents[1]


def _annotation(root: Path, bbox_text: str) -> Path:
    (root / "Annotations").mkdir(parents=True)
    (root / "Images").mkdir()
    from PIL import Image

    Image.new("RGB", (100, 100)).save(root / "Images" / "a.png")
    text = (
        '{"tasks": [{"task_overview": "t", "steps": [{"step_id": 1, "image_path": '
        '"Images/a.png", "instruction": "x", "actions": [{"type": "click", "target": "t", '
        f'"bbox": {bbox_text}}}]}}]}}]}}'
    )
    (root / "Annotations" / "A_Annotation.json").write_text(text)
    return root


@pytest.mark.parametrize("big", ["1" + "0" * 400, "1" + "0" * 5000, "-1" + "0" * 400])
@pytest.mark.parametrize("command", ["validate", "stats", "eval"])
def test_an_enormous_integer_in_a_bbox_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], big: str, command: str
) -> None:
    root = _annotation(tmp_path / "d", f"[{big}, 1, 2, 3]")
    argv = {
        "validate": ["validate", str(root)],
        "stats": ["stats", str(root)],
        "eval": [
            "eval",
            "--data",
            str(root),
            "--model",
            "oracle",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
    }[command]
    assert main(argv) == 2
    text = "".join(capsys.readouterr())
    assert "A_Annotation.json" in text
    assert len(text) < 5000  # the number is not printed in full


def _upstream(folder: Path, step: dict[str, Any], **task: Any) -> Path:
    app = folder / "GPT5" / "Alpha_Annotation"
    app.mkdir(parents=True)
    row = {
        "task_overview": "t",
        "completed": 0,
        "correct_steps": 0,
        "num_steps": 1,
        "weighted_prefix_score": 0.0,
        "steps": [{"step_id": 1, "hit": 0, **step}],
        **task,
    }
    (app / "task_results.json").write_text(json.dumps([row]))
    return folder / "GPT5"


@pytest.mark.parametrize(
    ("step", "task", "field"),
    [
        ({"gt_bbox": ["a", "b", "c", "d"]}, {}, "gt_bbox"),
        ({"gt_bbox": [1, 2, 3]}, {}, "gt_bbox"),
        ({"hit": "yes"}, {}, "hit"),
        ({"pred_point": [1e400, 2]}, {}, "pred_point"),
        ({"pred_point": ["x", 2]}, {}, "pred_point"),
        ({}, {"steps": "nope"}, "steps"),
        ({}, {"num_steps": "three"}, "num_steps"),
        ({}, {"steps": [5]}, "steps"),
    ],
)
def test_import_upstream_refuses_unusable_fields_with_a_location(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    step: dict[str, Any],
    task: dict[str, Any],
    field: str,
) -> None:
    src = _upstream(tmp_path / "theirs", step, **task)
    out = tmp_path / "run"
    assert main(["import-upstream", str(src), "--out", str(out), "--bootstrap", "10"]) == 2
    err = capsys.readouterr().err
    assert "task_results.json" in err and "task 0" in err and f"field '{field}'" in err
    assert "Traceback" not in err
    assert not (out / "run.json").exists()


def test_an_imported_run_has_a_real_preset_never_upstream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _upstream(tmp_path / "theirs", {"pred_point": [1, 2]})
    unnamed = src.rename(src.parent / "results")  # no script family in the name
    assert main(["import-upstream", str(unnamed), "--out", str(tmp_path / "a")]) == 2
    assert "--protocol" in capsys.readouterr().err
    assert not (tmp_path / "a" / "run.json").exists()
    argv = ["import-upstream", str(unnamed), "--out", str(tmp_path / "b"), "--protocol"]
    assert main([*argv, "upstream"]) == 2
    assert "unknown protocol" in capsys.readouterr().err
    assert main([*argv, "upstream-b", "--bootstrap", "10"]) == 0
    info = json.loads((tmp_path / "b" / "run.json").read_text())
    assert info["protocol"] == "upstream-b"


def test_validate_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    root = _annotation(tmp_path / "d", "[10, 10, 20, 20]")
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -1` that has already gone
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "medspot", "validate", str(root)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env=env,
        timeout=120,
    )
    os.close(write_end)
    assert b"Traceback" not in proc.stderr and b"BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 141
