"""`eval` and `score --out` never write into a folder medspot did not make, and a resumed run
must ask the same --apps and --limit as the run folder holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _builders import eval_argv, step, write_app
from medspot.cli import main


def _dataset(root: Path, tasks: int = 3) -> Path:
    for app in ("Alpha", "Beta"):
        write_app(
            root,
            app,
            [[step(f"Images/{app}{i}.png", "click", (10, 10, 50, 50))] for i in range(tasks)],
        )
    return root


def _eval(root: Path, out: Path, *extra: str) -> list[str]:
    return eval_argv(root, out, "--model", "oracle", *extra, bootstrap=10)


def test_eval_refuses_the_dataset_root_and_a_foreign_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _dataset(tmp_path / "data")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert main(_eval(root, root)) == 2
    assert "not a medspot run folder" in capsys.readouterr().err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    foreign = tmp_path / "foreign"
    (foreign / "Alpha").mkdir(parents=True)
    (foreign / "Alpha" / "task_results.json").write_text('["mine"]')
    assert main(_eval(root, foreign)) == 2
    assert (foreign / "Alpha" / "task_results.json").read_text() == '["mine"]'
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main(_eval(root, a_file)) == 2
    assert "Traceback" not in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(_eval(root, empty)) == 0


def test_score_out_refuses_a_foreign_folder_and_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _dataset(tmp_path / "data")
    run = tmp_path / "run"
    assert main(_eval(root, run)) == 0
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main(["score", str(run), "--out", str(a_file), "--bootstrap", "10"]) == 2
    assert a_file.read_text() == "x"
    assert main(["score", str(run), "--out", str(root), "--bootstrap", "10"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert main(["score", str(run), "--out", str(tmp_path / "new"), "--bootstrap", "10"]) == 0


@pytest.mark.parametrize(
    ("first", "second", "word"),
    [
        ((), ("--limit", "2"), "limit"),
        (("--limit", "2"), (), "limit"),
        (("--apps", "Alpha"), ("--apps", "Alpha,Beta"), "apps"),
    ],
)
def test_other_limit_or_apps_are_other_settings(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: tuple[str, ...],
    second: tuple[str, ...],
    word: str,
) -> None:
    root = _dataset(tmp_path / "data")
    run = tmp_path / "run"
    assert main(_eval(root, run, *first)) == 0
    metrics = (run / "overall_dataset_metrics.json").read_text()
    capsys.readouterr()
    assert main(_eval(root, run, *second)) == 2
    err = capsys.readouterr().err
    assert "other settings" in err and f"{word}:" in err
    assert "annotations differ" not in err
    assert (run / "overall_dataset_metrics.json").read_text() == metrics
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
