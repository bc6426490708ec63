"""The run-folder format: new runs carry `format_version`; a folder written before the field
existed (version 0) still reads, reports and re-scores; a newer format is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _report_runs import write_dataset
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.runfolder.layout import RunFolder
from medspot.runfolder.reader import load_run
from medspot.runfolder.runinfo import FORMAT_VERSION


def _old_format(run_dir: Path) -> None:
    """Turn a run folder into what the harness wrote before versioning: run.json without
    `format_version` and `rescored_from` (every other file was written the same way)."""
    p = run_dir / "run.json"
    info = json.loads(p.read_text())
    del info["format_version"], info["rescored_from"]
    p.write_text(json.dumps(info, indent=2))


@pytest.fixture(scope="module")
def old_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fmt")
    root = write_dataset(d / "data")
    out = d / "old"
    assert main(["eval", "--data", str(root), "--model", "oracle", "--out", str(out)]) == 0
    _old_format(out)
    return out


def test_new_run_json_carries_the_format_version(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "data")
    out = tmp_path / "run"
    assert main(["eval", "--data", str(root), "--model", "center", "--out", str(out)]) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["format_version"] == FORMAT_VERSION
    assert info["rescored_from"] is None
    assert load_run(out).info.format_version == FORMAT_VERSION


def test_old_folder_reads(old_run: Path) -> None:
    run = load_run(old_run)
    assert run.info.format_version == 0
    assert run.metric("task_completion_accuracy") == 1.0
    assert run.tasks and all(t.completed for t in run.tasks)
    assert RunFolder(old_run).result_apps() == sorted(run.apps)


def test_old_folder_rescores_into_the_current_format(old_run: Path, tmp_path: Path) -> None:
    new = tmp_path / "rescored"
    assert main(["score", str(old_run), "--protocol", "upstream-a", "--out", str(new)]) == 0
    info = json.loads((new / "run.json").read_text())
    assert info["format_version"] == FORMAT_VERSION
    assert info["rescored_from"] == str(old_run)
    assert info["protocol"] == "upstream-a"
    assert (new / "predictions.jsonl").read_bytes() == (old_run / "predictions.jsonl").read_bytes()
    assert load_run(new).metric("task_completion_accuracy") == 1.0
    assert "format_version" not in json.loads((old_run / "run.json").read_text())


def test_old_folder_reports(old_run: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["report", str(old_run), "--out", str(site), "--bootstrap", "50"]) == 0
    assert (site / "index.html").is_file()


def test_newer_format_is_refused(old_run: Path, tmp_path: Path) -> None:
    d = tmp_path / "future"
    d.mkdir()
    info = json.loads((old_run / "run.json").read_text())
    info["format_version"] = FORMAT_VERSION + 1
    (d / "run.json").write_text(json.dumps(info))
    (d / "overall_dataset_metrics.json").write_text("{}")
    with pytest.raises(ConfigError, match="format"):
        load_run(d)
