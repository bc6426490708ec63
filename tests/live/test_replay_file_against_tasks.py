"""A replay file held against the run's tasks on the real Orthanc Explorer: lines for a task this
run does not run, and a task run without a line (it ends with done() at once: a misspelt or
missing script is not a silent do-nothing agent), are warnings on stderr and in live.log; a task
that exists nowhere is refused (tests/live/test_live_cli_bad_input.py). live.log is in every
live run folder, also when nothing went wrong."""

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

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
RUN = "open-study-ct-doe-john"
OTHER = "lookup-doe-joan"


@pytest.fixture
def workroot() -> Iterator[Path]:
    require_orthanc_stack()
    root = Path(tempfile.mkdtemp(prefix="msrf", dir="/tmp"))  # short: chromium's socket
    yield root
    kill(processes_mentioning(str(root)))
    shutil.rmtree(root, ignore_errors=True)


def _live(workroot: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--tasks", RUN,
           "--out", str(out), "--env-option", f"chromium={CHROMIUM}", "--no-progress",
           "--bootstrap", "20", *extra]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_lines_for_tasks_not_run_and_tasks_without_lines_are_warned_of(
    tmp_path: Path, workroot: Path
) -> None:
    replay = tmp_path / "answers.jsonl"
    lines = [{"task": OTHER, "n": 1, "oracle": True}, {"task": OTHER, "n": 2, "oracle": True}]
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    done = _live(workroot, out, "--model", "replay", "--replay-file", str(replay))
    assert done.returncode == 0, done.stderr[-2000:]
    unused = f"has lines for 1 task(s) this run does not run: {OTHER} (line 1)"
    bare = f"has no line for 1 task(s) of this run, which end with done() at once: {RUN}"
    for text in (done.stderr, (out / "live.log").read_text()):
        assert unused in text and bare in text
    assert "success 0.0%" in done.stdout  # the scripted agent did nothing, and it was said


def test_live_log_is_in_every_run_folder(tmp_path: Path, workroot: Path) -> None:
    out = tmp_path / "run"
    done = _live(workroot, out, "--model", "oracle")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "WARNING" not in done.stderr  # nothing went wrong, and still:
    log = (out / "live.log").read_text()
    assert f"live run of oracle on {ENV} (guided mode, threads executor, 1 repeat(s))" in log


def test_an_oracle_line_whose_target_is_not_on_the_screen_is_flagged_and_logged(
    tmp_path: Path, workroot: Path
) -> None:
    """`{"oracle": true}` on a screen without the current step's target (the task starts on
    the Lookup page; its first step's patient row is on the patient list): a no-action turn
    flagged `oracle_target_missing`, its record saying why, a warning on stderr and in
    live.log (it was a silent no-action turn)."""
    from _runner_support import subset_file

    tasks = subset_file(tmp_path / "tasks.json", [RUN], max_steps=2)
    data = json.loads(tasks.read_text())
    data["tasks"][0]["start"]["route"] = "#lookup"
    tasks.write_text(json.dumps(data))
    replay = tmp_path / "answers.jsonl"
    replay.write_text(json.dumps({"task": RUN, "n": 1, "oracle": True}) + "\n")
    out = tmp_path / "run"
    done = _live(workroot, out, "--model", "replay", "--replay-file", str(replay),
                 "--tasks-file", str(tasks))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    why = "the oracle cannot act: the target of step 1 ('Open patient DOE^JOHN"
    for text in (done.stderr, (out / "live.log").read_text()):
        assert f"task {RUN}, turn 1 (replay-oracle): {why}" in text, text[-2000:]
        assert "flagged oracle_target_missing" in text
    journal = [json.loads(line) for line in (out / "live_journal.jsonl").read_text().splitlines()]
    first = [r for r in journal if r.get("task") == RUN and r.get("n") == 1][-1]
    assert first["flags"] == ["oracle_target_missing"] and first["executed"] is False
    assert first["source"] == "replay-oracle" and first["action"] is None
    assert first["not_executed"].startswith(why) and "is not on the screen" in first["not_executed"]
    row = json.loads((out / ENV / "task_results.json").read_text())[0]
    assert row["steps"][0]["not_executed"] == first["not_executed"]  # the report shows it
    assert row["live_outcome"] == "failure"  # then done() (no line for turn 2)
