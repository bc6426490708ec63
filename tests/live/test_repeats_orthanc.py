"""`--repeats 3` in the real Orthanc Explorer (Orthanc + headless chromium): the oracle's run,
SIGKILLed once the first repeat of every task is journaled, is resumed by the same command
without running any finished (task, repeat) again, and writes pass@k = pass^k = 1; the noop
agent's run writes pass@k = pass^k = 0."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, KillAndResume, kill, processes_mentioning

from _children import start, stop
from medspot.cli import main
from medspot.live.loop.steplog import TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
IDS = ["open-study-ct-doe-john", "open-study-mr-smith-ann"]


def _ends(out: Path) -> list[TaskRecord]:
    return [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)]


def test_oracle_repeats_resume_after_a_kill_between_repeats(
    tmp_path: Path, kill_and_resume: Callable[..., KillAndResume]
) -> None:
    require_orthanc_stack()
    out = tmp_path / "oracle"
    cmd = [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
        "--repeats", "3", "--tasks", ",".join(IDS), "--out", str(out),
        "--env-option", f"chromium={CHROMIUM}", "--no-progress", "--bootstrap", "50",
    ]  # fmt: skip
    run = kill_and_resume(cmd, dict(os.environ, PYTHONPATH=str(REPO / "src")))
    # the first repeat of every task is done: killed between repeats
    run.kill_when(lambda: sum(1 for r in _ends(out) if r.repeat == 0) == len(IDS))
    before = _ends(out)
    assert {(r.task, r.repeat) for r in before} >= {(t, 0) for t in IDS}
    done = run.resume()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pass@3 100.0%" in done.stdout and "pass^3 100.0%" in done.stdout
    ends = _ends(out)
    runs = Counter((r.task, r.repeat) for r in ends)
    assert runs == Counter({(t, k): 1 for t in IDS for k in range(3)})  # nothing ran twice
    assert ends[: len(before)] == before and all(r.outcome == "success" for r in ends)
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["pass_hat_k"] == 1.0 and m["pass_at_k"] == 1.0 and m["repeats"] == 3
    assert m["confidence_intervals"]["pass_hat_k"] == [1.0, 1.0]
    rows = json.loads((out / ENV / "task_results.json").read_text())
    assert len(rows) == 6 and {r["success_fraction"] for r in rows} == {1.0}
    info = json.loads((out / "run.json").read_text())
    assert info["repeats"] == 3 and info["status"] == "complete"


def test_noop_repeats_write_pass_hat_k_zero(tmp_path: Path) -> None:
    require_orthanc_stack()
    out = tmp_path / "noop"
    argv = [
        "live", "run", "--env", ENV, "--model", "noop", "--repeats", "3", "--tasks",
        ",".join(IDS), "--out", str(out), "--env-option", f"chromium={CHROMIUM}",
        "--no-progress", "--bootstrap", "50",
    ]  # fmt: skip
    assert main(argv) == 0
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["pass_hat_k"] == 0.0 and m["pass_at_k"] == 0.0 and m["task_success_rate"] == 0.0
    assert m["endings"] == {"done": 6} and m["num_task_repeats_complete"] == 2


def test_sigterm_ends_a_run_of_many_repeats_within_seconds_and_builds_only_what_ran(
    tmp_path: Path,
) -> None:
    """`--repeats 100` (the most allowed; more is refused before anything starts) of one task:
    SIGTERM once two repeats ended stops the run within 10 s, the summary included, and the
    rows and intervals cover the repeats that ran, not the 100 asked."""
    require_orthanc_stack()
    out = tmp_path / "many"
    workroot = Path(tempfile.mkdtemp(prefix="msrp", dir="/tmp"))
    cmd = [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
        "--repeats", "100", "--tasks", IDS[0], "--out", str(out),
        "--env-option", f"chromium={CHROMIUM}", "--no-progress",
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    try:
        refused = subprocess.run([*cmd[:-1], "--repeats", "101", "--no-progress"], env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
        assert refused.returncode == 2 and "must be 100 at most" in refused.stderr
        assert not out.exists()
        proc = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if len(_ends(out)) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        t0 = time.monotonic()
        stopped = stop(proc, signal.SIGTERM, timeout_s=60)
        took = time.monotonic() - t0
    finally:
        kill(processes_mentioning(str(workroot)))
        shutil.rmtree(workroot, ignore_errors=True)
    assert not stopped.killed and stopped.returncode == 143, stopped.err.decode()[-2000:]
    assert took < 10, f"{took:.1f} s from SIGTERM to the end"
    ran = max(r.repeat for r in _ends(out)) + 1
    assert 2 <= ran < 100
    rows = json.loads((out / ENV / "task_results.json").read_text())
    assert len(rows) <= ran + 1  # the repeats that ran (the one cut short included), not 100
    assert all(r["repeats"] == 100 for r in rows)
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "interrupted" and info["repeats"] == 100
    m = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert m["pass_at_k"] is None  # not every repeat ran: no pass@100
