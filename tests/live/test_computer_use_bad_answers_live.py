"""A computer-use model's answers that cannot be carried out, end to end on real Orthanc
Explorer tasks (a real Orthanc, real chromium) through `medspot live run --mode agent`, the
official `openai` client and the scripted test server: a click at `"x": 1e308` (infinite once
scaled) is a journaled no-action turn and a key Playwright does not have a scored no-action
step the model is told about; the task ends as a failure, the run goes on to the next task and
completes (exit 0, no environment error), `run.json` counts every API call, and a rerun,
replaying the journaled answers, scores the same without asking the model again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, kill, processes_mentioning

from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.cu_script import CuScript, ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live
pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[2]
TASKS = ["open-study-ct-doe-john", "filter-patients-garcia"]
SCRIPT = {"conversations": [
    {"match": "DOE^JOHN", "turns": [
        {"actions": [{"type": "click", "button": "left", "x": 1e308, "y": 5}]},
        {"actions": [{"type": "keypress", "keys": ["NoSuchKeyXYZ"]}]},
        {"text": "The study is open."}]},
    {"match": "GARCIA^MARIA", "turns": [{"text": "Done."}]},
]}  # fmt: skip


@pytest.fixture
def workroot() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="mscub", dir="/tmp"))  # short: chromium's socket path
    yield root
    kill(processes_mentioning(str(root)))
    shutil.rmtree(root, ignore_errors=True)


def _run(url: str, out: Path, workroot: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--mode", "agent",
           "--model", "openai-computer-use", "--base-url", url, "--api-key-env",
           "MEDSPOT_TEST_KEY", "--tasks", ",".join(TASKS), "--out", str(out), "--env-option",
           f"chromium={CHROMIUM}", "--no-progress", "--bootstrap", "20"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_TEST_KEY="test",
               TMPDIR=str(workroot))  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def _steps(out: Path, task: str) -> dict[int, StepRecord]:
    return {r.n: r for r in read_live_journal(out / LIVE_JOURNAL)
            if isinstance(r, StepRecord) and r.task == task}  # fmt: skip


def test_answers_that_cannot_be_carried_out_are_scored_and_the_run_goes_on(
    tmp_path: Path, workroot: Path
) -> None:
    require_orthanc_stack()
    cu = ScriptedComputerUse(CuScript.model_validate(SCRIPT))
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu) as srv:
        done = _run(srv.base_url, out, workroot)
        assert done.returncode == 0, done.stderr[-3000:]
        asked = srv.request_count
        told = str(srv.requests[2].body["input"])
        # a rerun after the results were lost: the journaled answers are replayed
        lines = (out / LIVE_JOURNAL).read_text().splitlines()
        (out / LIVE_JOURNAL).write_text(
            "".join(line + "\n" for line in lines if '"type":"task"' not in line)
        )
        again = _run(srv.base_url, out, workroot)
        assert again.returncode == 0, again.stderr[-3000:]
        assert srv.request_count == asked  # nothing asked again: no paid call repeated
    assert asked == 4  # three calls for the first task, one for the second
    assert "Pydantic" not in done.stderr and "Pydantic" not in again.stderr
    ends = {r.task: r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)}
    assert {t: r.outcome for t, r in ends.items()} == dict.fromkeys(TASKS, "failure")
    steps = _steps(out, TASKS[0])
    assert steps[1].action is None and "unsupported_action" in steps[1].flags
    assert steps[2].action == {"kind": "key", "key": "NoSuchKeyXYZ"} and not steps[2].executed
    assert "not_executable:unknown_key" in steps[2].flags and steps[2].not_executed
    assert steps[3].action == {"kind": "done"} and all(s.replayed for s in steps.values())
    assert "Not executed (the application cannot do it)" in told  # the model was told
    metrics = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert metrics["num_tasks"] == 2 and metrics["num_env_errors"] == 0
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["calls"] == asked


HUGE_SCRIPT = {"conversations": [
    {"match": "DOE^JOHN", "turns": [
        {"actions": [{"type": "scroll", "x": 640, "y": 400, "scroll_x": 0, "scroll_y": 1e308}]},
        {"actions": [{"type": "type", "text": "DOE\ud800"}]},
        {"actions": [{"type": "keypress", "keys": ["CTRL", "\udfff"]}]},
        {"text": "The study is open."}]},
    {"match": "GARCIA^MARIA", "turns": [{"text": "Done."}]},
]}  # fmt: skip


def test_a_scroll_of_1e308_and_text_of_no_utf8_are_scored_and_the_run_folder_writes(
    tmp_path: Path, workroot: Path
) -> None:
    """An OpenAI `scroll` with `"scroll_y": 1e308` was a no-action step whose notches (an
    integer of 306 digits) made `task_results.json` unwritable: exit 70, on every rerun. Now
    the scroll is bounded where it is read and refused by the environment (a scored no-action
    step), text and keys holding a lone surrogate likewise, and the run and its rerun exit 0."""
    require_orthanc_stack()
    cu = ScriptedComputerUse(CuScript.model_validate(HUGE_SCRIPT))
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu) as srv:
        done = _run(srv.base_url, out, workroot)
        assert done.returncode == 0, done.stderr[-3000:]
        asked = srv.request_count
        again = _run(srv.base_url, out, workroot)  # the results written again from the journal
        assert again.returncode == 0, again.stderr[-3000:]
        assert srv.request_count == asked
    steps = _steps(out, TASKS[0])
    scroll, typed, key = steps[1], steps[2], steps[3]
    assert scroll.action == {"kind": "scroll", "x": 640.0, "y": 400.0, "dy": 1_000_000}
    assert not scroll.executed and "not_executable:scroll_amount" in scroll.flags
    assert any(f.startswith("note:1e+308 px") for f in scroll.flags), scroll.flags
    assert typed.action == {"kind": "type", "text": "DOE\ufffd"} and not typed.executed
    assert "not_executable:untypable_text" in typed.flags
    assert not key.executed and "not_executable:unknown_key" in key.flags
    rows = json.loads((out / ENV / "task_results.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in rows] == ["scored", "scored"]
    (first,) = [r for r in rows if r["task_id"].endswith(TASKS[0])]
    assert first["steps"][0]["live_action"]["dy"] == 1_000_000
    assert first["steps"][0]["outcome"] == "miss"  # the no-action step: a scored miss
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete"
