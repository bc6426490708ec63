"""User mistakes on the command line that no other test covers: each one is refused with exit 2
and a `medspot: error:` line on stderr that names the problem (in-process, so an exception other
than MedspotError would fail the test instead of printing a traceback). Runs on the small
two-app dataset of _report_runs (Alpha: 3 tasks, Beta: 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from _builders import eval_argv
from _report_runs import PLAN_A, make_run, write_dataset
from medspot.cli import main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli-errors")
    root = write_dataset(d / "data")
    return {"root": root, "run": make_run(d / "run", root, PLAN_A, model="model-a")}


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], *fragments: str) -> str:
    """Run the CLI, expect exit 2 and every fragment in its one error line."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("medspot: error: "), err
    for f in fragments:
        assert f in err, (f, err)
    assert "Traceback" not in err
    return err


def test_eval_apps_with_no_name(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = eval_argv(tiny["root"], tmp_path / "o", "--model", "oracle", "--apps", " , ")
    refused(capsys, argv, "--apps needs at least one application name")


def test_eval_unknown_app(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = eval_argv(tiny["root"], tmp_path / "o", "--model", "oracle", "--apps", "Alpha,Gamma")
    refused(capsys, argv, "unknown application(s) Gamma in ", "known: Alpha, Beta")


def test_eval_unknown_model(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = eval_argv(tiny["root"], tmp_path / "o", "--model", "no-such-model")
    refused(capsys, argv, "unknown model 'no-such-model';", "medspot models")


def test_eval_misspelt_model_names_the_nearest(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = eval_argv(tiny["root"], tmp_path / "o", "--model", "cogagent-9")
    refused(capsys, argv, "unknown model 'cogagent-9' (did you mean 'cogagent-9b'?);")


def test_eval_without_a_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = eval_argv(tmp_path / "missing", tmp_path / "o", "--model", "oracle")
    refused(capsys, argv, "no dataset at", "missing")
    assert not (tmp_path / "o" / "run.json").exists()


def test_eval_on_broken_annotations_points_to_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_dataset(tmp_path / "data")
    (root / "Annotations" / "Beta_Annotation.json").write_text('{"tasks": [')
    argv = eval_argv(root, tmp_path / "o", "--model", "oracle")
    refused(capsys, argv, "Beta_Annotation.json: invalid JSON", f"medspot validate {root}")


def test_eval_refuses_a_journal_without_run_json_and_leaves_it_alone(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    out.mkdir()
    journal = (tiny["run"] / "predictions.jsonl").read_bytes()
    (out / "predictions.jsonl").write_bytes(journal)
    argv = eval_argv(tiny["root"], out, "--model", "oracle")
    refused(capsys, argv, "predictions.jsonl but no run.json", "another --out")
    assert (out / "predictions.jsonl").read_bytes() == journal
    assert not (out / "run.json").exists()


def test_score_of_a_folder_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x").mkdir()
    refused(capsys, ["score", str(tmp_path / "x")], "not a medspot run", "run.json")


def test_score_without_a_journal(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(tiny["run"], run)
    (run / "predictions.jsonl").unlink()
    refused(capsys, ["score", str(run)], "has no predictions.jsonl")


def test_score_asks_for_data_when_run_json_names_none(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(tiny["run"], run)
    info = json.loads((run / "run.json").read_text())
    info["dataset"]["root"] = info["dataset"]["source"] = ""
    (run / "run.json").write_text(json.dumps(info))
    refused(capsys, ["score", str(run), "--bootstrap", "50"], "names no dataset", "--data")
    # the advice works: the same command with --data scores the run
    capsys.readouterr()
    argv = ["score", str(run), "--data", str(tiny["root"]), "--bootstrap", "50"]
    assert main(argv) == 0


def test_report_into_a_run_folder_is_refused(
    tiny: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.name for p in tiny["run"].iterdir())
    argv = ["report", str(tiny["run"]), "--out", str(tiny["run"]), "--no-plots"]
    refused(capsys, argv, "is a run folder", "choose another folder")
    assert sorted(p.name for p in tiny["run"].iterdir()) == before


def test_compare_runs_without_a_common_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two datasets of one app each: no task id in common
    only_alpha = write_dataset(tmp_path / "a-data", images=False)
    (only_alpha / "Annotations" / "Beta_Annotation.json").unlink()
    only_beta = write_dataset(tmp_path / "b-data", images=False)
    (only_beta / "Annotations" / "Alpha_Annotation.json").unlink()
    a = make_run(tmp_path / "a", only_alpha, {"Alpha/0": [True, True]}, model="a")
    b = make_run(tmp_path / "b", only_beta, {"Beta/0": [True, True]}, model="b")
    refused(capsys, ["compare", str(a), str(b)], "different data", "--mixed")
    refused(capsys, ["compare", str(a), str(b), "--mixed"], "no scored task in common")


def test_import_upstream_refuses_a_missing_folder_and_a_full_out(
    tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    refused(
        capsys, ["import-upstream", str(missing), "--out", str(tmp_path / "o")], "is not a folder"
    )
    src = tmp_path / "theirs" / "Alpha_Annotation"
    src.mkdir(parents=True)
    (src / "task_results.json").write_text("[]")
    argv = ["import-upstream", str(src.parent), "--out", str(tiny["run"])]
    refused(capsys, argv, "exists and is not empty", "another --out")
