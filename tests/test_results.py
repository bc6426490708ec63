"""The results layout: every file, its field names (docs/results.md), atomic writes."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest

from _scoring_tasks import CLICK, IN, OUT, make_dataset, rec
from medspot.atomic_write import atomic_write_bytes, atomic_write_json, atomic_write_text
from medspot.errors import ConfigError, RunFolderError
from medspot.runfolder.writer import metrics_table, write_results
from medspot.scoring.protocol import get_protocol
from medspot.scoring.score import score_run

STEP_KEYS = {
    "step",
    "position",
    "step_id",
    "instruction",
    "action_types",
    "evaluable",
    "outcome",
    "hit",
    "failure_type",
    "difficulty",
    "target_boxes",
    "pred_point",
    "extra_points",
    "raw_output",
    "image_path",
    "image_size",
    "offset",
}
TASK_KEYS = {
    "task_id",
    "app",
    "task_index",
    "task_overview",
    "status",
    "completed",
    "correct_steps",
    "num_steps",
    "num_evaluable_steps",
    "steps_evaluated",
    "weighted_prefix_score",
    "normalized_weighted_prefix_score",
    "failure_type",
    "failed_step",
    "steps",
}
METRIC_KEYS = {
    "task_completion_accuracy",
    "step1_accuracy",
    "step_hit_rate",
    "avg_correct_prefix",
    "avg_weighted_prefix_score",
    "conditional_step_accuracy",
    "normalized_weighted_prefix_score",
    "num_tasks",
    "num_steps",
    "num_excluded_tasks",
    "num_errored_tasks",
    "num_unannotated_steps",
    "confidence_intervals",
    "protocol",
    "complete",
    "missing_steps",
}


def _run(tmp_path: Path, all_steps: bool = False) -> tuple[Path, object]:
    ds = make_dataset({"X": [[CLICK, CLICK], [CLICK, []]], "Y": [[CLICK]]})
    recs = [rec("X/0/1", IN), rec("X/0/2", OUT), rec("X/1/1", IN), rec("Y/0/1", None)]
    if all_steps:
        recs.append(rec("X/0/2", OUT))
    rs = score_run(ds, recs, get_protocol("medspot-v1"), all_steps=all_steps, n_boot=50)
    write_results(tmp_path, rs, dataset=ds)
    return tmp_path, rs


def test_layout_and_fields(tmp_path: Path) -> None:
    out, _ = _run(tmp_path)
    for app in ("X", "Y"):
        for f in ("task_results", "task_failures", "task_metrics", "failure_statistics"):
            assert (out / app / f"{f}.json").is_file()
    assert not list(out.rglob("*.tmp"))
    tr = json.loads((out / "X" / "task_results.json").read_text())
    assert [t["task_id"] for t in tr] == ["X/0", "X/1"]
    assert set(tr[0]) == TASK_KEYS and set(tr[0]["steps"][0]) == STEP_KEYS
    t0 = tr[0]
    assert (t0["completed"], t0["correct_steps"], t0["failed_step"]) == (False, 1, 2)
    assert t0["failure_type"] == "far_miss" and t0["steps"][1]["pred_point"] == [0.3, 0.3]
    assert t0["steps"][0]["target_boxes"] == [[0.4, 0.4, 0.6, 0.6]]
    assert tr[1]["steps"][1]["outcome"] == "not_evaluable"
    assert tr[1]["steps"][1]["difficulty"] is None
    fails = json.loads((out / "X" / "task_failures.json").read_text())
    assert [t["task_id"] for t in fails] == ["X/0"]
    tm = json.loads((out / "X" / "task_metrics.json").read_text())
    assert set(tm) >= METRIC_KEYS
    assert tm["task_completion_accuracy"] == 0.5 and tm["num_unannotated_steps"] == 1
    fs = json.loads((out / "Y" / "failure_statistics.json").read_text())
    assert fs == {
        "failure_type_histogram": {"no_prediction": 1},
        "failure_by_difficulty": {"large": {"no_prediction": 1}},
        "total_failed_tasks": 1,
    }
    ov = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert set(ov) >= METRIC_KEYS
    for key in ("macro_average", "per_app", "survival", "by_action_type", "by_target_size"):
        assert key in ov
    # pooled TCA: 1 of 3 tasks; macro: (1/2 + 0) / 2
    assert ov["task_completion_accuracy"] == pytest.approx(1 / 3)
    assert ov["macro_average"]["task_completion_accuracy"] == pytest.approx(0.25)
    assert ov["protocol"] == "medspot-v1" and ov["complete"] is True
    assert set(ov["per_app"]) == {"X", "Y"}
    assert "independent_step_accuracy" not in ov
    ofs = json.loads((out / "overall_failure_statistics.json").read_text())
    assert ofs["total_failed_tasks"] == 2


def test_all_steps_keys_and_incomplete(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, all_steps=True)
    ov = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert "independent_step_accuracy" in ov and "propagation_gap" in ov
    # X/0/2 has a record; nothing is missing
    assert ov["complete"] is True
    ofs = json.loads((out / "overall_failure_statistics.json").read_text())
    assert "step_failure_histogram" in ofs


def test_incomplete_marked(tmp_path: Path) -> None:
    ds = make_dataset({"X": [[CLICK, CLICK]]})
    rs = score_run(ds, [rec("X/0/1", IN)], get_protocol("medspot-v1"), all_steps=False, n_boot=10)
    write_results(tmp_path, rs, dataset=ds)
    ov = json.loads((tmp_path / "overall_dataset_metrics.json").read_text())
    assert ov["complete"] is False and ov["missing_steps"] == ["X/0/2"]
    assert ov["task_completion_accuracy"] is None  # no scored task
    tr = json.loads((tmp_path / "X" / "task_results.json").read_text())
    assert tr[0]["status"] == "incomplete" and tr[0]["steps"][1]["outcome"] == "missing"
    assert "INCOMPLETE" in metrics_table(rs)


def test_metrics_table(tmp_path: Path) -> None:
    _, rs = _run(tmp_path, all_steps=True)
    table = metrics_table(rs)  # type: ignore[arg-type]
    for short in ("TCA", "S1A", "SHR", "CSA", "ACP", "WPS", "nWPS", "ISA", "gap"):
        assert short in table
    assert "0.333" in table  # TCA 1/3
    assert "macro" in table


def test_atomic_writes(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "a.json"
    atomic_write_json(p, {"a": 1})
    atomic_write_json(p, {"a": 2})
    assert json.loads(p.read_text()) == {"a": 2}
    with pytest.raises(ValueError):
        atomic_write_json(p, {"a": math.nan})
    assert json.loads(p.read_text()) == {"a": 2}  # the old file survives a failed write
    assert [x.name for x in p.parent.iterdir()] == ["a.json"]
    atomic_write_text(tmp_path / "t.txt", "hello")
    assert (tmp_path / "t.txt").read_text() == "hello"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError):
        atomic_write_text(blocker / "inside.txt", "no")


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_atomic_write_bytes_follows_the_umask(tmp_path: Path, mask: int) -> None:
    """The one atomic writer of static files and live screens: a new file gets the mode the
    umask gives (not mkstemp's 0600); a failure is a RunFolderError naming the file."""
    old = os.umask(mask)
    try:
        atomic_write_bytes(tmp_path / "screens" / "a.png", b"\x89PNG...")
    finally:
        os.umask(old)
    path = tmp_path / "screens" / "a.png"
    assert path.read_bytes() == b"\x89PNG..."
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert [x.name for x in path.parent.iterdir()] == ["a.png"]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RunFolderError, match=r"inside\.png"):
        atomic_write_bytes(blocker / "inside.png", b"no")
