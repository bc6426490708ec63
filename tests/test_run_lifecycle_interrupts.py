"""`RunLife`: an interruption that ends the run between `start` (run.json written, "running")
and `finish` (Ctrl-C or SIGTERM while the environment or the model starts, before the run's
own handler) leaves run.json "interrupted", never "running"; one after `finish` changes
nothing; an error is still recorded as "failed"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.runfolder.layout import RunFolder
from medspot.runfolder.lifecycle import RunLife
from medspot.runfolder.runinfo import RunInfo, now_iso


def _life(out: Path) -> tuple[RunLife, Path]:
    folder = RunFolder(out)
    out.mkdir()
    return RunLife(folder, RunInfo(model="oracle", started=now_iso())), folder.run_json


def _status(run_json: Path) -> str:
    return str(json.loads(run_json.read_text())["status"])


def test_an_interruption_before_finish_is_recorded(tmp_path: Path) -> None:
    life, run_json = _life(tmp_path / "run")
    life.start()
    assert _status(run_json) == "running"
    with pytest.raises(KeyboardInterrupt), life.failure_recorded():
        raise KeyboardInterrupt
    assert _status(run_json) == "interrupted"
    assert json.loads(run_json.read_text())["finished"]


def test_an_interruption_recorded_by_finish_or_after_it_changes_nothing(tmp_path: Path) -> None:
    life, run_json = _life(tmp_path / "a")
    life.start()
    with pytest.raises(KeyboardInterrupt), life.failure_recorded():
        life.finish(complete=False, interrupted=KeyboardInterrupt())
    assert _status(run_json) == "interrupted"

    life, run_json = _life(tmp_path / "b")
    life.start()
    with pytest.raises(KeyboardInterrupt), life.failure_recorded():
        life.finish(complete=True)
        raise KeyboardInterrupt  # after the results were written: the run was complete
    assert _status(run_json) == "complete"


def test_an_error_is_still_a_failure(tmp_path: Path) -> None:
    life, run_json = _life(tmp_path / "run")
    life.start()
    with pytest.raises(ValueError), life.failure_recorded():
        raise ValueError("boom")
    info = json.loads(run_json.read_text())
    assert info["status"] == "failed" and "ValueError: boom" in info["error"]


def test_an_interruption_while_start_writes_run_json_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C just after run.json's rename, before `start` returned."""
    from medspot.atomic_write import atomic_write_json as real

    calls: list[Path] = []

    def write_then_interrupted(path: Path, data: object) -> None:
        real(path, data)
        calls.append(path)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr("medspot.runfolder.lifecycle.atomic_write_json", write_then_interrupted)
    life, run_json = _life(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        life.start()
    assert _status(run_json) == "interrupted"
