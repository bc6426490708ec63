"""`medspot live run` on the real orthanc-explorer environment as a process: a second run into
the same folder exits 2 naming the holder; Ctrl-C as a terminal sends it (to the whole process
group: the browser's driver is interrupted too) exits 130 with no asyncio trace, SIGTERM exits
143, with nothing of the run left either way; a killed browser is one line on stderr (its log
in live.log), the task is retried on a fresh environment and the run completes."""

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
from collections.abc import Iterator
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, descendants, kill, processes_mentioning

from _children import start
from medspot.live.loop.steplog import FaultRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
IDS = "open-series-ct-doe-john-axial,open-study-mr-doe-john,viewer-invert-ct-miller"
# the first runs repeat the tasks: a run stopped after its first steps leaves many for the
# resumed one. A spare makes the oracle quick between tasks: 4 repeats (about 30 steps) were
# once all done before the Ctrl-C, while the lock's second run started under a loaded machine;
# the runs are stopped early, so more repeats cost nothing
REPEATED = ("--repeats", "25")


@pytest.fixture
def workroot() -> Iterator[Path]:
    """The environments' private folders (a short path: chromium's socket name must fit)."""
    require_orthanc_stack()
    root = Path(tempfile.mkdtemp(prefix="mslp", dir="/tmp"))
    yield root
    kill(processes_mentioning(str(root)))
    shutil.rmtree(root, ignore_errors=True)


def _start(out: Path, workroot: Path, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
        "--tasks", IDS, "--out", str(out), "--env-option", f"chromium={CHROMIUM}",
        "--bootstrap", "20", *extra,
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    return start(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def _steps(journal: Path) -> int:
    return journal.read_bytes().count(b'"type":"step"') if journal.exists() else 0


def _wait_for_more_steps(proc: subprocess.Popen[bytes], journal: Path, n: int = 2) -> None:
    target = _steps(journal) + n
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if _steps(journal) >= target:
            return
        time.sleep(0.05)
    raise AssertionError(f"no new steps (exit {proc.poll()})")


def _finish(proc: subprocess.Popen[bytes], timeout: float = 600) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode(errors="replace")


def _assert_short(err: str) -> None:
    """No traceback, no multi-line log record: each log record is one line; a Playwright
    driver that a signal or the cleanup ended is no error of its own (its calls fail)."""
    assert "Traceback" not in err and "future: <Future" not in err, err
    assert "Future exception was never retrieved" not in err, err
    assert "Connection closed while reading" not in err.replace("live.log", ""), err


def test_lock_signals_and_a_killed_browser_on_orthanc(tmp_path: Path, workroot: Path) -> None:
    out = tmp_path / "run"
    journal = out / LIVE_JOURNAL
    first = _start(out, workroot, *REPEATED)
    try:
        _wait_for_more_steps(first, journal)
        code, err = _finish(_start(out, workroot, *REPEATED))
        assert code == 2 and f"pid {first.pid}" in err, err
        assert first.poll() is None
        os.killpg(first.pid, signal.SIGINT)  # Ctrl-C on a terminal: the whole group
        code, err = _finish(first, timeout=120)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert code == 130, err
    _assert_short(err)
    time.sleep(1)
    assert not processes_mentioning(str(workroot)), "left alive after Ctrl-C"

    second = _start(out, workroot, *REPEATED)
    _wait_for_more_steps(second, journal)
    second.send_signal(signal.SIGTERM)
    code, err = _finish(second, timeout=120)
    assert code == 143, err
    _assert_short(err)
    time.sleep(1)
    assert not processes_mentioning(str(workroot)), "left alive after SIGTERM"

    out, journal = tmp_path / "run2", tmp_path / "run2" / LIVE_JOURNAL  # all tasks ahead
    third = _start(out, workroot)
    _wait_for_more_steps(third, journal, 1)
    browsers = [
        p for p in descendants(third.pid)
        if Path(f"/proc/{p}/exe").exists() and "--type=" not in _cmdline(p)
        and os.path.basename(_cmdline(p).split(" ")[0]).startswith("chrom")
    ]  # fmt: skip
    assert browsers, "no browser found below the run"
    kill(browsers)
    code, err = _finish(third)
    assert code == 0, err
    _assert_short(err)
    faults = [line for line in err.splitlines() if "environment fault" in line]
    assert len(faults) == 1, err
    (fault,) = [r.message for r in read_live_journal(journal) if isinstance(r, FaultRecord)]
    assert "web session:" in fault
    if "\n" in fault:  # the kill failed a call: its error carries the browser's log
        assert f"details in {out / 'live.log'}" in faults[0], err
        assert fault.splitlines()[-1] in (out / "live.log").read_text()  # kept in full
    else:  # it landed between two calls: the `disconnected` event is the whole story
        assert "the browser went away" in fault and "details in" not in faults[0], err
    ends = Counter(r.task for r in read_live_journal(journal) if isinstance(r, TaskRecord))
    assert set(ends) == set(IDS.split(",")) and set(ends.values()) == {1}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_environment_starts_ends_the_run_within_seconds(
    tmp_path: Path, workroot: Path, sig: signal.Signals, status: int
) -> None:
    """Ctrl-C (to the whole group, as a terminal sends it) or SIGTERM as soon as run.json is
    written, while Orthanc and chromium start: the run ends within seconds, run.json says
    "interrupted", nothing of it is left."""
    out = tmp_path / "run"
    proc = _start(out, workroot)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not (out / "run.json").exists():
        time.sleep(0.02)
    assert proc.poll() is None and _steps(out / LIVE_JOURNAL) == 0
    t0 = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    code, err = _finish(proc, timeout=120)
    took = time.monotonic() - t0
    assert code == status, err
    assert took < 20, f"{took:.1f} s from the signal to the end"
    _assert_short(err)
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    time.sleep(1)
    assert not processes_mentioning(str(workroot)), f"left alive after {sig.name}"
