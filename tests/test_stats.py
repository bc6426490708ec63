"""`medspot stats`: counts per application and overall, on hand-made and real data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.dataset.summary import dataset_stats, format_stats
from medspot.testing import write_dataset


def st(image: str, bbox: list[float] | None, typ: str = "click", k: int = 1) -> dict[str, Any]:
    actions = [] if bbox is None else [{"type": typ, "target": "t", "bbox": bbox}]
    return {"step_id": k, "image_path": image, "instruction": "do it", "actions": actions}


def small_dataset(root: Path) -> Path:
    # App A: task 0 has 3 steps (one unannotated), task 1 has 1 step; a.png used twice.
    # App B: one task with 2 steps, a drag and a hover.
    # Box areas: 1x1 % = 1e-4 (small), 3x5 % = 1.5e-3 (medium), 10x10 % = 1e-2 (large).
    a = {"tasks": [
        {"task_overview": "x", "steps": [
            st("Images/A/a.png", [1, 1, 1, 1]),
            st("Images/A/b.png", None, k=2),
            st("Images/A/a.png", [10, 10, 3, 5], "double_click", k=3),
        ]},
        {"task_overview": "y", "steps": [st("Images/A/c.png", [50, 50, 10, 10])]},
    ]}  # fmt: skip
    b = {"tasks": [
        {"task_overview": "z", "steps": [
            st("Images/B/a.png", [20, 20, 10, 10], "drag"),
            st("Images/B/b.png", [0, 0, 3, 5], "hover", k=2),
        ]},
    ]}  # fmt: skip
    return write_dataset(root, {"A": a, "B": b})


def test_hand_made_counts(tmp_path: Path) -> None:
    s = dataset_stats(load_dataset(small_dataset(tmp_path)))
    a, b = s.per_app
    assert (a.name, a.tasks, a.steps, a.evaluable_steps, a.screenshots) == ("A", 2, 4, 3, 3)
    assert (a.steps_per_task_mean, a.steps_per_task_min, a.steps_per_task_max) == (2.0, 1, 3)
    assert dict(a.action_types) == {"click": 2, "double_click": 1}
    assert dict(a.target_sizes) == {"small": 1, "medium": 1, "large": 1}
    assert (b.tasks, b.steps, b.evaluable_steps, b.screenshots) == (1, 2, 2, 2)
    assert dict(b.target_sizes) == {"small": 0, "medium": 1, "large": 1}
    o = s.overall
    assert (o.tasks, o.steps, o.evaluable_steps, o.screenshots) == (3, 6, 5, 5)
    assert o.steps_per_task_mean == pytest.approx(6 / 3)
    assert (o.steps_per_task_min, o.steps_per_task_max) == (1, 3)
    assert dict(o.action_types) == {"click": 2, "double_click": 1, "drag": 1, "hover": 1}
    assert dict(o.target_sizes) == {"small": 1, "medium": 2, "large": 2}


def test_cli_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = small_dataset(tmp_path)
    assert main(["stats", str(root)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    # app, tasks, steps, evaluable, steps/task, min, max, screens, small, medium, large
    assert rows["A"][:11] == ["A", "2", "4", "3", "2.00", "1", "3", "3", "1", "1", "1"]
    assert rows["overall"][:4] == ["overall", "3", "6", "5"]

    assert main(["stats", str(root), "--json", "--apps", "B"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["per_app"]) == ["B"]
    assert data["overall"]["steps_per_task"] == {"mean": 2.0, "min": 2, "max": 2}


def test_cli_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = small_dataset(tmp_path)
    assert main(["stats", str(root), "--json", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["per_app"]["A"]["tasks"] == 1
    assert data["per_app"]["A"]["steps"] == 3
    assert data["overall"]["tasks"] == 2


def test_real_annotations(annotations_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(annotations_dir), "--no-images", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    o = data["overall"]
    assert (o["tasks"], o["steps"], o["evaluable_steps"], o["screenshots"]) == (216, 607, 603, 597)
    assert o["steps_per_task"]["mean"] == pytest.approx(607 / 216)
    assert (o["steps_per_task"]["min"], o["steps_per_task"]["max"]) == (1, 10)
    assert sum(o["target_sizes"].values()) == 603  # one size per evaluable step
    assert data["per_app"]["GingkoCadx"]["screenshots"] == 65 - 10
    assert data["per_app"]["Bluelight"]["evaluable_steps"] == data["per_app"]["Bluelight"][
        "steps"] - 2  # fmt: skip
    text = format_stats(dataset_stats(load_dataset(annotations_dir, check_images=False)))
    assert text.splitlines()[0].split()[:3] == ["app", "tasks", "steps"]


def test_stats_refuses_missing_images(
    annotations_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", str(annotations_dir)]) == 2
    err = capsys.readouterr().err
    assert "is missing" in err and "medspot validate" in err
