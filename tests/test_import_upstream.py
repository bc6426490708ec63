"""`medspot import-upstream`: a results folder written in the authors' layout (per-app
`<App>_Annotation/task_results.json` etc., their key names: pixel `pred_point` for GPT-5,
normalised points with `image_w`/`image_h` and no raw answer for Aguvis) becomes a run that
`report`, `leaderboard` and `compare` accept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _report_runs import PLAN_A, make_run, write_dataset
from medspot.cli import main
from medspot.report.build import build_report
from medspot.runfolder.reader import load_run
from medspot.runfolder.upstream import guess_protocol


def _step(
    idx: int, hit: int, ftype: str | None, pt: Any, img: str, diff: str = "large", **extra: Any
) -> dict[str, Any]:
    return {
        "step_id": idx,
        "hit": hit,
        "failure_type": ftype,
        "difficulty": diff,
        "pred_point": pt,
        "image_path": img,
        **extra,
    }


def _task(
    overview: str, completed: int, correct: int, num: int, wps: float, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "task_overview": overview,
        "completed": completed,
        "step1_hit": int(bool(steps) and steps[0]["hit"] == 1),
        "correct_steps": correct,
        "num_steps": num,
        "weighted_prefix_score": wps,
        "steps": steps,
    }


def _metrics(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Their compute_metrics, as the GPT-5 script writes it."""
    n = len(rows)
    return {
        "task_completion_accuracy": sum(r["completed"] for r in rows) / n,
        "step1_accuracy": sum(r["step1_hit"] for r in rows) / n,
        "avg_correct_prefix": sum(r["correct_steps"] for r in rows) / n,
        "step_hit_rate": sum(r["correct_steps"] for r in rows) / sum(r["num_steps"] for r in rows),
        "avg_weighted_prefix_score": sum(r["weighted_prefix_score"] for r in rows) / n,
    }


def write_gpt5_results(folder: Path, *, normalised: bool = False) -> None:
    """Their layout: RESULTS_ROOT/<json stem>/{task_results,task_failures,task_metrics,
    failure_statistics}.json and the overall files. Images are 1000x500."""

    def p(x: float, y: float) -> list[float]:
        return [x / 1000, y / 500] if normalised else [x, y]

    def extra(raw: str) -> dict[str, Any]:
        return {"image_w": 1000, "image_h": 500} if normalised else {"raw_output": raw}

    i = "Images/Alpha/t{}_s{}.png"
    j = "Images/Beta/t{}_s{}.png"
    apps = {
        "Alpha": [
            _task(
                "Alpha task 0",
                1,
                2,
                2,
                1.8,
                [
                    _step(1, 1, None, p(200, 100), i.format(0, 1), **extra("(200, 100)")),
                    _step(2, 1, None, p(550, 275), i.format(0, 2), **extra("(550,275)")),
                ],
            ),
            _task(
                "Alpha task 1",
                0,
                0,
                1,
                0.0,
                [
                    _step(1, 0, "far_miss", p(500, 475), i.format(1, 1), **extra("(500, 475)")),
                ],
            ),
            _task(
                "Alpha task 2",
                0,
                1,
                3,
                1.0,
                [
                    _step(1, 1, None, p(300, 250), i.format(2, 1), **extra("(300, 250)")),
                    _step(2, 0, "no_prediction", None, i.format(2, 2), **extra("I cannot see it")),
                ],
            ),
        ],
        "Beta": [
            _task(
                "Beta task 0",
                1,
                2,
                2,
                1.8,
                [
                    _step(1, 1, None, p(400, 200), j.format(0, 1), **extra("(400, 200)")),
                    _step(2, 1, None, p(200, 350), j.format(0, 2), **extra("(200, 350)")),
                ],
            ),
            _task(
                "Beta task 1",
                0,
                0,
                1,
                0.0,
                [
                    _step(
                        1, 0, "toolbar_confusion", p(100, 20), j.format(1, 1), **extra("(100,20)")
                    ),
                ],
            ),
        ],
    }
    everything = []
    for app, rows in apps.items():
        d = folder / f"{app}_Annotation"
        d.mkdir(parents=True)
        fails = [r for r in rows if not r["completed"]]
        (d / "task_results.json").write_text(json.dumps(rows, indent=2))
        (d / "task_failures.json").write_text(json.dumps(fails, indent=2))
        (d / "task_metrics.json").write_text(json.dumps(_metrics(rows), indent=2))
        hist: dict[str, int] = {}
        for r in fails:
            t = r["steps"][-1]["failure_type"]
            hist[t] = hist.get(t, 0) + 1
        (d / "failure_statistics.json").write_text(
            json.dumps(
                {
                    "total_failed_tasks": len(fails),
                    "failure_type_histogram": hist,
                    "failure_by_difficulty": {"large": hist},
                }
            )
        )
        everything += rows
    (folder / "overall_dataset_metrics.json").write_text(json.dumps(_metrics(everything)))


@pytest.fixture()
def data_root(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "data")


def test_guess_protocol() -> None:
    assert guess_protocol("GPT5") == "upstream-b"
    assert guess_protocol("UI-TARS") == "upstream-e"
    assert guess_protocol("AGUVIS-7B") == "upstream-a"
    assert guess_protocol("Qwen25VL") == "upstream-c"
    assert guess_protocol("Qwen2VL") == "upstream-a"
    assert guess_protocol("SeeClick") == "upstream-d"
    assert guess_protocol("something") is None


def test_import_gpt5_layout(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "GPT5"
    write_gpt5_results(src)
    out = tmp_path / "imported"
    assert (
        main(
            [
                "import-upstream",
                str(src),
                "--out",
                str(out),
                "--data",
                str(data_root),
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    assert "upstream-b (guessed" in capsys.readouterr().out
    run = load_run(out)
    assert run.info.model == "GPT5" and run.protocol == "upstream-b" and run.kind == "imported"
    # their numbers, recomputed from the rows: TCA 2/5, S1A 3/5, SHR 5/9, ACP 1, WPS 4.6/5
    assert run.metric("task_completion_accuracy") == pytest.approx(2 / 5)
    assert run.metric("step1_accuracy") == pytest.approx(3 / 5)
    assert run.metric("step_hit_rate") == pytest.approx(5 / 9)
    assert run.metric("avg_correct_prefix") == pytest.approx(1.0)
    assert run.metric("avg_weighted_prefix_score") == pytest.approx(4.6 / 5)
    assert run.interval("task_completion_accuracy") is not None
    alpha = {t.task_id: t for t in run.tasks if t.app == "Alpha"}
    s1 = alpha["Alpha/0"].steps[0]
    assert s1.pred_point == pytest.approx((0.2, 0.2))  # pixels / (1000, 500)
    assert s1.target_boxes == [pytest.approx((0.1, 0.1, 0.3, 0.3))]
    assert s1.instruction == "Open the File menu" and s1.raw_output == "(200, 100)"
    assert s1.image_size == (1000, 500)
    t2 = alpha["Alpha/2"]
    assert [s.outcome for s in t2.steps] == ["hit", "miss", "not_reached"]
    assert t2.failed_step == 2 and t2.failure_type == "no_prediction"
    # Alpha/1 missed at (0.5, 0.95); its box (0.6..0.8, 0.2..0.4) has centre (0.7, 0.3)
    off = alpha["Alpha/1"].steps[0].offset
    assert off == pytest.approx(((0.5 - 0.7) / 0.2, (0.95 - 0.3) / 0.2))
    info = json.loads((out / "run.json").read_text())
    assert info["imported"]["protocol_guessed"] is True
    assert info["imported"]["notes"] == []  # every recomputed metric agrees with their files
    assert "raw_output" not in info["imported"]["lacks"]
    fs = json.loads((out / "Alpha" / "failure_statistics.json").read_text())
    assert fs["failure_type_histogram"] == {"far_miss": 1, "no_prediction": 1}
    assert len(json.loads((out / "Alpha" / "task_failures.json").read_text())) == 2
    # a journal of what they predicted, for rescoring
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 8


def test_imported_run_feeds_report_leaderboard_compare(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "GPT5"
    write_gpt5_results(src)
    out = tmp_path / "imported"
    assert main(["import-upstream", str(src), "--out", str(out), "--data", str(data_root)]) == 0
    ours = make_run(tmp_path / "ours", data_root, PLAN_A, model="model-a", protocol="upstream-b")
    capsys.readouterr()
    assert main(["leaderboard", str(out), str(ours)]) == 0
    text = capsys.readouterr().out
    assert "protocol upstream-b" in text and "GPT5 (imported)" in text
    assert main(["compare", str(out), str(ours), "--format", "json", "--bootstrap", "50"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    # GPT5 completes Alpha/0 and Beta/0; PLAN_A completes Alpha/0, Alpha/1, Beta/0
    assert cmp["completed_by_b_not_a"] == ["Alpha/1"] and cmp["completed_by_a_not_b"] == []
    res = build_report([out, ours], tmp_path / "site", plots=False, n_boot=50)
    assert res.thumbnails == 18
    index = (tmp_path / "site" / "index.html").read_text()
    assert "imported from the authors" in index


def test_aguvis_layout_normalised_points_without_raw_answers(
    tmp_path: Path, data_root: Path
) -> None:
    src = tmp_path / "AGUVIS-7B"
    write_gpt5_results(src, normalised=True)
    out = tmp_path / "imp"
    assert main(["import-upstream", str(src), "--out", str(out), "--data", str(data_root)]) == 0
    run = load_run(out)
    assert run.protocol == "upstream-a"
    s = run.tasks[0].steps[1]
    assert s.pred_point == pytest.approx((0.55, 0.55)) and s.raw_output is None
    info = json.loads((out / "run.json").read_text())
    assert "raw_output" in info["imported"]["lacks"]


def test_without_the_dataset(tmp_path: Path) -> None:
    src = tmp_path / "GPT5"
    write_gpt5_results(src)
    out = tmp_path / "imp"
    assert (
        main(
            [
                "import-upstream",
                str(src),
                "--out",
                str(out),
                "--protocol",
                "upstream-b",
                "--model",
                "gpt-5",
            ]
        )
        == 0
    )
    run = load_run(out)
    info = json.loads((out / "run.json").read_text())
    assert set(info["imported"]["lacks"]) >= {"image_size", "target_boxes", "instructions"}
    assert run.info.model == "gpt-5" and run.metric("step_hit_rate") == pytest.approx(5 / 9)
    assert all(s.pred_point is None for t in run.tasks for s in t.steps)  # pixels, no size
    build_report([out], tmp_path / "site", plots=False)
    assert "no screenshot" in (tmp_path / "site" / "tasks-1.html").read_text()


def test_not_their_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    assert main(["import-upstream", str(tmp_path / "x"), "--out", str(tmp_path / "o")]) == 2
    assert "task_results.json" in capsys.readouterr().err
