"""`medspot live run` / `live export` as real processes, on the lamp-panel environment (a real
small environment with a child process of its own): one writer per run folder (a second run
into the same folder exits 2 naming the holder; the lock of a killed run is taken over), SIGTERM
exits 143 and SIGINT 130 with nothing of the run left alive, and the run resumes after either;
an environment fault with a long message is one line on stderr, in full in live.log."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from _lamp_panel import (
    NAME,
    lamp_command,
    process_env,
    switch_task,
    task_file,
)
from _runner_support import kill, processes_mentioning

from _children import start
from medspot.live.loop.steplog import TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live  # each test starts `medspot` processes and lamp panels

SLOW = "step_delay_s=0.8"


def _tasks(tmp: Path, n: int = 5) -> Path:
    lamps = ("red", "green", "blue")
    tasks = [switch_task(f"task-{i}", lamps[i % 3], lamps[(i + 1) % 3]) for i in range(n)]
    return task_file(tmp / "tasks.json", tasks)


def _run_args(tasks: Path, out: Path, *extra: str) -> list[str]:
    return lamp_command(
        "live", "run", "--env", NAME, "--model", "oracle", "--tasks-file", str(tasks),
        "--out", str(out), "--no-progress", "--bootstrap", "20", *extra,
    )  # fmt: skip


def _wait_for_steps(proc: subprocess.Popen[bytes], journal: Path, n: int = 1) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b'"type":"step"') >= n:
            return
        time.sleep(0.1)
    _, err = proc.communicate(timeout=30) if proc.poll() is not None else (b"", b"")
    raise AssertionError(f"no step journaled (exit {proc.poll()}): {err.decode()[-2000:]}")


def _finish(proc: subprocess.Popen[bytes], timeout: float = 180) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode(errors="replace")


def _start(args: list[str], workroot: Path) -> subprocess.Popen[bytes]:
    workroot.mkdir(parents=True, exist_ok=True)
    env = process_env(workroot)
    return start(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finished_once(journal: Path) -> Counter[str]:
    return Counter(r.task for r in read_live_journal(journal) if isinstance(r, TaskRecord))


def test_a_second_writer_is_refused_and_a_killed_holder_is_taken_over(tmp_path: Path) -> None:
    tasks, out, work = _tasks(tmp_path), tmp_path / "run", tmp_path / "w"
    hold = tmp_path / "hold"  # the first run's actions wait while it exists
    args = _run_args(tasks, out, "--env-option", SLOW, "--env-option", f"hold_while={hold}")
    first = _start(args, work)
    try:
        _wait_for_steps(first, out / LIVE_JOURNAL)
        hold.touch()
        code, err = _finish(_start(args, work / "second"))
        assert code == 2, err
        assert f"pid {first.pid}" in err and "Traceback" not in err
        assert first.poll() is None, "the first run ended before the second was refused"
    finally:
        hold.unlink(missing_ok=True)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        kill(processes_mentioning(str(work)))  # its panel's application (an orphan now)
    assert (out / ".medspot.lock").exists()  # left by the killed run: taken over below
    code, err = _finish(_start(args, work))
    assert code == 0, err
    assert set(_finished_once(out / LIVE_JOURNAL).values()) == {1}  # no task finished twice
    assert not processes_mentioning(str(work))


def test_a_second_export_into_the_same_folder_is_refused(tmp_path: Path) -> None:
    tasks, out, work = _tasks(tmp_path, 3), tmp_path / "export", tmp_path / "w"
    hold = tmp_path / "hold"  # the first export's actions wait while it exists
    args = lamp_command(
        "live", "export", "--env", NAME, "--tasks-file", str(tasks), "--out", str(out),
        "--no-progress", "--env-option", SLOW, "--env-option", f"hold_while={hold}",
    )  # fmt: skip
    first = _start(args, work)
    try:
        _wait_for_steps(first, out / ".live-run" / LIVE_JOURNAL)
        hold.touch()
        code, err = _finish(_start(args, work / "second"))
        assert code == 2, err
        assert f"pid {first.pid}" in err
        assert first.poll() is None, "the first export ended before the second was refused"
    finally:
        hold.unlink(missing_ok=True)
        first.send_signal(signal.SIGTERM)
        code, err = _finish(first)
    assert code == 143, err
    assert not processes_mentioning(str(work))


def test_sigterm_exits_143_and_sigint_130_leaving_nothing_and_the_run_resumes(
    tmp_path: Path,
) -> None:
    tasks, out, work = _tasks(tmp_path), tmp_path / "run", tmp_path / "w"
    args = _run_args(tasks, out, "--env-option", SLOW)
    journal = out / LIVE_JOURNAL
    for sig, status in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        before = journal.read_bytes().count(b'"type":"step"') if journal.exists() else 0
        proc = _start(args, work)
        _wait_for_steps(proc, journal, before + 1)
        assert processes_mentioning(str(work)), "the panel's application runs"
        t0 = time.monotonic()
        proc.send_signal(sig)
        code, err = _finish(proc, timeout=120)
        assert code == status, err
        assert time.monotonic() - t0 < 60
        assert "interrupted" in err and "Traceback" not in err, err
        assert not processes_mentioning(str(work)), f"left alive after {sig.name}"
        info = json.loads((out / "run.json").read_text())
        assert info["status"] == "interrupted"
    code, err = _finish(_start(_run_args(tasks, out), work))
    assert code == 0, err
    finished = _finished_once(journal)
    assert len(finished) == 5 and set(finished.values()) == {1}
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_an_environment_fault_is_one_line_on_stderr_and_in_full_in_live_log(
    tmp_path: Path,
) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("crash", "crash")])
    out, work = tmp_path / "run", tmp_path / "w"
    code, err = _finish(_start(_run_args(tasks, out, "--env-retries", "0"), work))
    assert code == 1, err  # one fault, not yet known to recur: run again
    faults = [line for line in err.splitlines() if "environment fault" in line]
    assert len(faults) == 1, err
    assert "crash pressed" in faults[0] and f"details in {out / 'live.log'}" in faults[0]
    assert "panel log line" not in err
    log = (out / "live.log").read_text()
    assert "panel log line 30" in log and "crash pressed" in log
