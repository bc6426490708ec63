"""`medspot.live.core.processes` on real processes (no application): a child dies when the
process that started it is SIGKILLed; the record and the marker find what is left; a stale
folder of a dead owner is swept, a live owner's is not, a recycled pid is never killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _children import start
from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault

pytestmark = pytest.mark.live  # its tests start, signal and kill child processes

REPO = Path(__file__).resolve().parents[2]

# A parent that starts a long `sleep` through `processes.popen` in `folder`, prints its pid,
# then waits to be killed.
_PARENT = """
import sys, time
from pathlib import Path
from medspot.live.core import processes
folder = Path(sys.argv[1])
processes.claim(folder)
child = processes.popen(["sleep", "300"], folder)
print(child.pid, flush=True)
time.sleep(300)
"""


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if processes.stamp(pid) is None:
            return True
        time.sleep(0.05)
    return False


def _parent(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = start([sys.executable, "-c", _PARENT, str(folder)], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    return proc, child


def test_a_child_dies_when_its_parent_is_sigkilled(tmp_path: Path) -> None:
    parent, child = _parent(tmp_path / "w")
    assert processes.stamp(child) is not None
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert _wait_gone(child), "the child outlived its SIGKILLed parent"


def _environ_after_exec(pid: int, seconds: float = 5.0) -> list[bytes]:
    """The environment of `pid` once its exec has finished: `Popen` returns when the kernel
    closes the error pipe, which is before the new image's environment is laid out, and
    `/proc/PID/environ` reads empty in between."""
    deadline = time.monotonic() + seconds
    while True:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        if raw or time.monotonic() > deadline:
            return raw.split(b"\0")
        time.sleep(0.01)


def test_marker_and_record_name_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    proc = processes.popen(["sleep", "300"], folder)
    try:
        environ = _environ_after_exec(proc.pid)
        assert f"{processes.MARKER_ENV}={folder.resolve()}".encode() in environ
        s = processes.stamp(proc.pid)
        assert s is not None and s in processes.marked(folder)
        assert s in processes.marked(tmp_path)  # a folder above finds it too
        assert s not in processes.marked(tmp_path / "other")
        rec = [json.loads(x) for x in (folder / processes.RECORD_FILE).read_text().splitlines()]
        assert rec == [{"pid": s.pid, "start": s.start}]
        assert processes.stop_folder(folder) == 1
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_missing_program_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        processes.popen(["medspot-no-such-program"], tmp_path)


def test_sweep_cleans_a_dead_runs_folder_and_leaves_a_live_ones(tmp_path: Path) -> None:
    dead = tmp_path / f"{processes.WORKDIR_PREFIX}0-dead"
    parent, child = _parent(dead)
    os.kill(parent.pid, signal.SIGSTOP)  # the owner stays alive but still: nothing happens
    try:
        assert processes.sweep(tmp_path) == []
        assert dead.exists() and processes.stamp(child) is not None
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    # a grandchild-like leftover the parent-death signal does not reach: marked, not a child
    leftover = processes.popen(["setsid", "sleep", "300"], dead / "x11")
    kept = tmp_path / "user-folder"  # a dead owner's folder the runner did not make
    kept_parent, kept_child = _parent(kept)
    os.kill(kept_parent.pid, signal.SIGKILL)
    kept_parent.wait()
    mine = tmp_path / f"{processes.WORKDIR_PREFIX}1-mine"
    processes.claim(mine)
    cleaned = processes.sweep(tmp_path, keep=mine)
    assert sorted(cleaned) == sorted([dead, kept])
    assert not dead.exists(), "the runner's stale folder is removed"
    assert kept.exists() and not (kept / processes.OWNER_FILE).exists()
    assert (mine / processes.OWNER_FILE).exists()
    assert _wait_gone(child) and _wait_gone(kept_child)
    leftover.wait(10)


def test_a_recycled_pid_is_not_killed(tmp_path: Path) -> None:
    folder = tmp_path / f"{processes.WORKDIR_PREFIX}0-x"
    folder.mkdir()
    victim = start(["sleep", "300"])  # not started by the folder's owner
    try:
        s = processes.stamp(victim.pid)
        assert s is not None
        # the record names the same pid with another start time: a recycled pid
        (folder / processes.RECORD_FILE).write_text(
            json.dumps({"pid": s.pid, "start": s.start - 1}) + "\n"
        )
        (folder / processes.OWNER_FILE).write_text(json.dumps({"pid": 1, "start": -1, "ns": 0}))
        assert processes.sweep(tmp_path) == [folder]
        assert victim.poll() is None and processes.running(s)
    finally:
        victim.kill()
        victim.wait()


def test_claim_refuses_a_folder_a_running_process_owns(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    parent, child = _parent(folder)
    try:
        with pytest.raises(EnvironmentFault, match="another running process"):
            processes.claim(folder)
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    _wait_gone(child)
    processes.claim(folder)  # its owner is dead now: taken over
    owner = json.loads((folder / processes.OWNER_FILE).read_text())
    assert owner["pid"] == os.getpid()


def test_a_child_that_ends_at_once_is_returned_promptly(tmp_path: Path) -> None:
    """`popen` waits for the child to be past setpriv, but not for a child that is gone."""
    t0 = time.monotonic()
    proc = processes.popen(["true"], tmp_path)
    assert proc.wait(10) == 0 and time.monotonic() - t0 < 4.0  # under the 5 s bound


def test_the_subreaper_flag_reads_back_what_was_set() -> None:
    before = processes.child_subreaper()
    try:
        processes.set_child_subreaper(1)
        assert processes.child_subreaper() == 1
        processes.set_child_subreaper(0)
        assert processes.child_subreaper() == 0
    finally:
        processes.set_child_subreaper(before)
