"""SIGTERM to `medspot live run` in every registered environment: exit 143 within seconds, and
no process that the run started is left alive (every process below it and every process naming
its private folders)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_live, require_orthanc_stack
from _runner_support import descendants, kill, processes_mentioning

from _children import start
from medspot.cli import main
from medspot.live.envs.registry import env_names

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]


def _options(env: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    if env == "orthanc-explorer":
        require_orthanc_stack()
        return ["--env-option", f"chromium={CHROMIUM}"]
    code = main(["live", "doctor", "--env", env])
    require_live(code == 0, f"the system parts of {env} ({capsys.readouterr().out.strip()})")
    return []


def _identity(pid: int) -> tuple[int, str] | None:
    """The pid and its start time (a pid reused by another process differs), unless it is
    gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else (pid, fields[19])


@pytest.mark.parametrize("env", env_names())
def test_sigterm_exits_143_and_leaves_nothing(
    env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = _options(env, capsys)
    workroot = Path(tempfile.mkdtemp(prefix="msst", dir="/tmp"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", env, "--model", "oracle",
           "--out", str(out), "--no-progress", "--bootstrap", "20", *opts]  # fmt: skip
    proc_env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    proc = start(cmd, env=proc_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = out / "live_journal.jsonl"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_bytes().count(b'"type":"step"') >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        below = {i for i in map(_identity, descendants(proc.pid)) if i is not None}
        assert below, "the environment's processes run below the command"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 143, err.decode()[-2000:]
        assert time.monotonic() - t0 < 120
        time.sleep(2)
        assert not [i for i in below if _identity(i[0]) == i], "processes of the run left alive"
        assert not processes_mentioning(str(workroot))
    finally:
        if proc.poll() is None:
            proc.kill()
        kill(processes_mentioning(str(workroot)))
        shutil.rmtree(workroot, ignore_errors=True)
