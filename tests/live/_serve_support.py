"""Helpers of the `medspot live serve` tests: the oracle's actions on the screens a served agent
sees (from an oracle run in agent mode: the scripted agents click where the oracle would),
a server started as `medspot live serve` (SIGINT and SIGTERM at their defaults, its URL read
from stdout) and stopped or killed, and the commands that read its run folder."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _lamp_panel import NAME as LAMP
from _lamp_panel import lamp_command, process_env
from _orthanc_support import CHROMIUM
from _runner_support import ENV, processes_of

from _children import start
from medspot.live.core.actions import LiveAction, action_from_json, action_to_json
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import ResumeState, StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

MEDSPOT = [sys.executable, "-m", "medspot"]


@contextlib.contextmanager
def short_workroot() -> Iterator[Path]:
    """A short private TMPDIR for a server's environments (chromium's singleton socket path
    must fit the 108 bytes of a unix socket), removed after."""
    root = Path(tempfile.mkdtemp(prefix="msrv", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


# what says when and how long (not what happened), and who answered in which words
NOT_COMPARED = frozenset({"time", "step_s", "env_s", "settle_s", "latency_s", "duration_s",
                          "reset_s", "between_tasks_s", "source", "raw_text"})  # fmt: skip


def run_command(command: list[str], work: Path) -> subprocess.CompletedProcess[str]:
    """`command` run to its end, its environments' private folders under `work`."""
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env=process_env(work))  # fmt: skip


def replayed_run(
    folder: Path, work: Path, tasks: Path, task: str, actions: Sequence[LiveAction]
) -> Path:
    """`actions` on the lamp panel's `task` through `live run --model replay` (agent mode),
    into `folder`/run, its environments under `work`: the run another way of driving the same
    actions must journal alike (`journal_records`)."""
    replay = folder / "replay.jsonl"
    replay.write_text("".join(json.dumps({"task": task, "n": i, "action": action_to_json(a)})
                              + "\n" for i, a in enumerate(actions, 1)))  # fmt: skip
    out = folder / "run"
    ran = run_command(lamp_command(
        "live", "run", "--env", LAMP, "--tasks-file", str(tasks), "--model", "replay",
        "--replay-file", str(replay), "--mode", "agent", "--out", str(out),
        "--bootstrap", "20", "--no-progress"), work)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return out


def journal_records(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The step records as the journal reads (the later line of a step wins: a run journals a
    paid answer before acting on it) and the task records, without `NOT_COMPARED`: what two
    ways of driving the same actions must journal alike."""
    steps: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    tasks: list[dict[str, Any]] = []
    for rec in read_live_journal(out / LIVE_JOURNAL):
        fields = {k: v for k, v in rec.model_dump().items() if k not in NOT_COMPARED}
        if isinstance(rec, StepRecord):
            steps[(rec.task, rec.repeat, rec.attempt, rec.n)] = fields
        elif isinstance(rec, TaskRecord):
            tasks.append(fields)
    return list(steps.values()), tasks


def oracle_actions(out: Path, tasks: Sequence[str]) -> dict[str, list[LiveAction]]:
    """The oracle's actions per task (agent mode, the default seed cache: the screens a
    served agent sees)."""
    req = LiveRequest(
        spec=EnvSpec(ENV, task_ids=tuple(tasks), env_options={"chromium": CHROMIUM}),
        model="oracle",
        out=out,
        n_boot=20,
        loop=LiveOptions(mode="agent"),
    )
    assert run_live(req).metrics["task_success_rate"] == 1.0
    st = ResumeState.from_records(list(read_live_journal(out / LIVE_JOURNAL)))
    return {t: [action_from_json(s.action) for s in st.trajectory(t) if s.action] for t in tasks}


def serve_args(out: Path, *extra: str) -> list[str]:
    return [*MEDSPOT, "live", "serve", "--env", ENV, "--out", str(out), "--env-option",
            f"chromium={CHROMIUM}", "--bootstrap", "50", *extra]  # fmt: skip


def start_server(args: list[str], workroot: Path) -> tuple[subprocess.Popen[str], str]:
    """A server on HTTP (SIGINT and SIGTERM at their defaults) and the URL it printed."""
    workroot.mkdir(parents=True, exist_ok=True)
    proc: subprocess.Popen[str] = start(
        args, env=process_env(workroot), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        _, err = proc.communicate(timeout=60)
        raise AssertionError(f"the server printed no URL (exit {proc.returncode}): {err}")
    return proc, line.split()[-1]


def stop_server(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[int, str]:
    """Signal the server and wait for it; (exit status, stderr)."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def kill_leftovers(proc: subprocess.Popen[str] | None, workroot: Path) -> None:
    """Teardown, pass or fail: the server and whatever of its environments is left."""
    killed = proc is not None and proc.poll() is None
    if proc is not None and killed:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + (0 if killed else 15)
    while processes_of(workroot) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in processes_of(workroot):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if proc is not None and killed:  # its pipes close once its environments' children are gone
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=30)


def rows(out: Path, env: str = ENV) -> dict[str, dict[str, Any]]:
    """The run folder's task rows by id."""
    data = json.loads((out / env / "task_results.json").read_text(encoding="utf-8"))
    return {r["task_id"]: r for r in data}


def medspot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MEDSPOT, *args], capture_output=True, text=True, timeout=300,
                          env=process_env(Path(os.environ.get("TMPDIR", "/tmp"))))  # fmt: skip


def report_and_leaderboard(out: Path, report: Path) -> str:
    """`medspot report` and `medspot leaderboard` take the folder; the leaderboard's text."""
    rep = medspot("report", str(out), "--out", str(report))
    assert rep.returncode == 0, rep.stderr
    assert (report / "index.html").is_file()
    board = medspot("leaderboard", str(out))
    assert board.returncode == 0, board.stderr
    return board.stdout
