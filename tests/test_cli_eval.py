"""`medspot eval` / `score` / `models` end to end through the CLI, on the real annotations with
placeholder screenshots painted by a fixture."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _builders import run_eval
from medspot.cli import main
from medspot.runfolder.journal import read_journal

SECTION4_APP_FILES = (
    "task_results.json",
    "task_failures.json",
    "task_metrics.json",
    "failure_statistics.json",
)


def _overall(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "overall_dataset_metrics.json").read_text())
    return data


def test_oracle_is_perfect_under_medspot_v1(
    placeholder_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "oracle"
    assert run_eval(placeholder_root, out, "--model", "oracle") == 0
    m = _overall(out)
    assert m["task_completion_accuracy"] == 1.0
    assert m["step1_accuracy"] == 1.0
    assert m["step_hit_rate"] == 1.0
    assert m["num_tasks"] == 216
    text = capsys.readouterr().out
    assert "task_completion_accuracy" in text or "TCA" in text
    # the layout of protocol.md section 4 exists and parses
    info = json.loads((out / "run.json").read_text())
    assert info["model"] == "oracle" and info["status"] == "complete"
    assert info["dataset"]["fingerprint"]
    apps = info["dataset"]["apps"]
    assert len(apps) == 10
    for app in apps:
        for name in SECTION4_APP_FILES:
            json.loads((out / app / name).read_text())
    json.loads((out / "overall_failure_statistics.json").read_text())
    recs = list(read_journal(out / "predictions.jsonl"))
    # the oracle hits every step, so every annotated step is asked: 607 - 4 unannotated
    assert len(recs) == 603


def test_second_eval_makes_no_new_calls(placeholder_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "random"
    args = ("--model", "random", "--apps", "Weasis,Orthanc")
    assert run_eval(placeholder_root, out, *args) == 0
    n = len((out / "predictions.jsonl").read_bytes().splitlines())
    before = _overall(out)
    assert run_eval(placeholder_root, out, *args) == 0
    assert len((out / "predictions.jsonl").read_bytes().splitlines()) == n
    after = _overall(out)
    assert before["task_completion_accuracy"] == after["task_completion_accuracy"]
    assert before["step_hit_rate"] == after["step_hit_rate"]


def test_random_sequential_calls_are_the_protocol_minimum(
    placeholder_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    assert run_eval(placeholder_root, out, "--model", "random", "--seed", "7") == 0
    tasks = []
    for app in json.loads((out / "run.json").read_text())["dataset"]["apps"]:
        tasks += json.loads((out / app / "task_results.json").read_text())
    # a task is asked up to and including its first miss, never beyond
    expected_calls = 0
    for t in tasks:
        expected_calls += t["steps_evaluated"]
    assert len(list(read_journal(out / "predictions.jsonl"))) == expected_calls


def test_a_resumed_run_in_another_setting_is_refused(
    placeholder_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x"
    assert run_eval(placeholder_root, out, "--model", "random", "--apps", "Orthanc") == 0
    code = run_eval(placeholder_root, out, "--model", "center", "--apps", "Orthanc")
    assert code == 2
    assert "model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "preset", ["upstream-a", "upstream-b", "upstream-c", "upstream-d", "upstream-e"]
)
def test_score_of_all_steps_run_equals_eval_under_preset(
    placeholder_root: Path, tmp_path: Path, preset: str
) -> None:
    base = tmp_path / "all"
    common = ("--model", "random", "--seed", "3", "--apps", "3DSlicer,Weasis,DICOMscope")
    assert run_eval(placeholder_root, base, *common, "--all-steps") == 0
    rescored = tmp_path / f"rescored-{preset}"
    assert (
        main(
            ["score", str(base), "--protocol", preset, "--out", str(rescored), "--bootstrap", "200"]
        )
        == 0
    )
    direct = tmp_path / f"direct-{preset}"
    assert (
        run_eval(
            placeholder_root,
            direct,
            *common,
            "--all-steps",
            "--protocol",
            preset,
            "--prompt",
            "native",
        )
        == 0
    )
    for app in ("3DSlicer", "Weasis", "DICOMscope"):
        for name in ("task_metrics.json", "task_results.json"):
            assert json.loads((rescored / app / name).read_text()) == json.loads(
                (direct / app / name).read_text()
            )
    a, b = _overall(rescored), _overall(direct)
    for key in (
        "task_completion_accuracy",
        "step_hit_rate",
        "step1_accuracy",
        "avg_weighted_prefix_score",
        "independent_step_accuracy",
    ):
        assert a[key] == b[key]


def test_score_of_sequential_run_under_other_preset_is_marked_incomplete(
    placeholder_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "seq"
    assert (
        run_eval(
            placeholder_root,
            out,
            "--model",
            "oracle",
            "--protocol",
            "upstream-b",
            "--prompt",
            "native",
        )
        == 0
    )
    # upstream-b never asks drag/type/hover steps; medspot-v1 evaluates them
    code = main(
        [
            "score",
            str(out),
            "--protocol",
            "medspot-v1",
            "--out",
            str(tmp_path / "v1"),
            "--bootstrap",
            "100",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "INCOMPLETE" in err
    m = _overall(tmp_path / "v1")
    assert m["complete"] is False and m["missing_steps"]


def test_oracle_ceilings_of_upstream_c_and_d(placeholder_root: Path, tmp_path: Path) -> None:
    for preset, shr in (("upstream-c", None), ("upstream-d", Fraction(537, 607))):
        out = tmp_path / preset
        assert (
            run_eval(
                placeholder_root,
                out,
                "--model",
                "oracle",
                "--protocol",
                preset,
                "--prompt",
                "native",
            )
            == 0
        )
        m = _overall(out)
        assert m["task_completion_accuracy"] == pytest.approx(178 / 216)
        if shr is not None:
            assert m["step_hit_rate"] == pytest.approx(float(shr))


def test_models_lists_baselines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in ("random", "center", "oracle", "replay"):
        assert name in out


def test_models_lists_the_live_agents_in_a_section_of_their_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from medspot.live.agents.factory import LIVE_AGENTS

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    section = out.split("Live agents (`medspot live run --model NAME`", 1)[1]
    listed = {line.split()[0] for line in section.splitlines()[1:] if line.strip()}
    assert set(LIVE_AGENTS) <= listed and "noop" in listed
    for line in section.splitlines():
        if line.startswith(("openai-computer-use", "anthropic-computer-use")):
            assert "--mode agent only" in line
    assert "--planner MODEL --grounder CARD" in section
    assert main(["models", "--json"]) == 0
    live = [e for e in json.loads(capsys.readouterr().out) if e["kind"] == "live-agent"]
    assert [e["name"] for e in live] == list(LIVE_AGENTS)


def test_replay_scores_predictions_made_elsewhere(placeholder_root: Path, tmp_path: Path) -> None:
    # answers for Orthanc: the oracle's points for task 0, nothing readable for the rest
    from medspot.dataset.loading import load_dataset

    ds = load_dataset(placeholder_root, apps=["Orthanc"])
    lines = []
    for t in ds.tasks():
        for s in t.steps:
            if t.index == 0 and s.boxes:
                c = s.boxes[0].center
                lines.append({"step": s.uid, "point": [c.x, c.y]})
            else:
                lines.append({"step": s.uid, "raw_text": "I cannot find it."})
    f = tmp_path / "answers.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines))
    out = tmp_path / "replay"
    assert (
        run_eval(
            placeholder_root, out, "--model", "replay", "--replay-file", str(f), "--apps", "Orthanc"
        )
        == 0
    )
    m = _overall(out)
    assert m["task_completion_accuracy"] == pytest.approx(1 / 10)
    shutil.rmtree(out)
