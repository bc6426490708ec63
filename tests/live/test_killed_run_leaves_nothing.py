"""A `medspot live run` SIGKILLed in the middle of a task leaves no process behind, in every
environment (Orthanc in its own session, Xvfb, the session D-Bus and the AT-SPI bus, the JVM,
the AT-SPI reader, chromium and its helpers, Playwright's driver), its slot's spare included
(a second instance, started for the next task while the first runs): a few seconds later none
of the run's processes is alive. The next run in the same temp folder removes the stale private
folders. The run's processes are found by its private folder (`TMPDIR`, in their environment or
command line) and by parent links, never by name."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import descendants, kill, processes_of

from _children import start
from medspot.live.core import processes
from medspot.live.envs.registry import env_entry
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
# three tasks: the spares are started for the later ones while the first runs
CASES = [
    (
        "orthanc-explorer",
        "open-series-ct-doe-john-axial,open-study-ct-doe-john,open-study-mr-doe-john",
    ),
    ("dicomscope", "open-ct-doe-john-slice3,open-mr-smith-ann,open-miller-head-last"),
    ("ohif", "open-ct-doe-john,open-mr-doe-john,open-ct-doe-joan"),
    ("invesalius", "goto-axial-slice-40,bone-mask-preset,lesion-manual-threshold"),
]


def _require(env: str) -> None:
    if env == "dicomscope":
        from _desktop_support import require_dicomscope

        require_dicomscope()
    elif env == "invesalius":
        from _invesalius_support import require_invesalius

        require_invesalius()
    elif env == "ohif":
        from test_ohif_env import require_ohif_stack

        require_ohif_stack()
    else:
        require_orthanc_stack()


def _instances(env: str) -> int:
    """The active instance and the spares of a slot (the environment's `SparePlan`)."""
    cls: Any = env_entry(env).factory  # the environment class
    return 1 + int(cls.spare.count)


def _run(env: str, task: str, out: Path, workroot: Path, log: Path) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, "-m", "medspot", "live", "run", "--env", env, "--model", "oracle",
        "--tasks", task, "--out", str(out), "--no-progress", "--bootstrap", "50",
    ]  # fmt: skip
    if env not in ("dicomscope", "invesalius"):
        cmd += ["--env-option", f"chromium={CHROMIUM}"]
    child_env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    with log.open("wb") as sink:
        return start(
            cmd, env=child_env, stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True
        )


@pytest.mark.parametrize(("env", "task"), CASES, ids=[c[0] for c in CASES])
def test_a_sigkilled_run_leaves_no_process(env: str, task: str, tmp_path: Path) -> None:
    _require(env)
    # the active instance's private folder and its spares'
    folders = _instances(env)
    # a short path (chromium's singleton socket must stay under the unix socket limit)
    workroot = Path(tempfile.mkdtemp(prefix="mskill", dir="/tmp"))
    try:
        run = _run(env, task, tmp_path / "killed", workroot, tmp_path / "killed.log")
        journal = tmp_path / "killed" / LIVE_JOURNAL
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and run.poll() is None:
            stale = [p for p in workroot.iterdir() if p.name.startswith(processes.WORKDIR_PREFIX)]
            # the environment runs and has acted, and its spare's processes run too
            acted = journal.exists() and b'"type":"step"' in journal.read_bytes()
            if acted and len(stale) == folders and all(processes.marked(p) for p in stale):
                break
            time.sleep(0.2)
        assert run.poll() is None, (tmp_path / "killed.log").read_text()[-2000:]
        stale = [p for p in workroot.iterdir() if p.name.startswith(processes.WORKDIR_PREFIX)]
        assert len(stale) == folders, "the spares were not started"
        assert all((p / processes.OWNER_FILE).exists() for p in stale)
        theirs = {s for p in {*descendants(run.pid), *processes_of(workroot)}
                  if (s := processes.stamp(p)) is not None}  # fmt: skip
        assert len(theirs) >= 3, "the run's environment processes were not found"
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        deadline = time.monotonic() + 10
        alive = list(theirs)
        while time.monotonic() < deadline:
            alive = [s for s in theirs if processes.running(s)]
            if not alive and not processes_of(workroot):
                break
            time.sleep(0.2)
        survivors = [Path(f"/proc/{s.pid}/cmdline").read_bytes()[:80] for s in alive
                     if processes.running(s)]  # fmt: skip
        assert not alive, f"alive 10 s after the SIGKILL: {survivors}"
        assert not processes_of(workroot)
        assert all(p.exists() for p in stale)  # nothing removed them yet: the next run will

        first = task.partition(",")[0]
        again = _run(env, first, tmp_path / "again", workroot, tmp_path / "again.log")
        again.wait(timeout=600)
        assert again.returncode == 0, (tmp_path / "again.log").read_text()[-2000:]
        assert not any(p.exists() for p in stale), "the next run did not remove the dead folders"
        assert not processes_of(workroot)
    finally:
        kill(processes_of(workroot))
        shutil.rmtree(workroot, ignore_errors=True)
