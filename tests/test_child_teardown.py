"""The tests' one helper for child processes (`_children`): a child starts with SIGINT at its
default even when the suite runs with SIGINT ignored (as a suite started in the background
does), `stop` kills a child that ignores the signal after its bounded wait, and `stop_all`
(every test's teardown) leaves nothing running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _children import start, stop, stop_all

SLEEPER = [sys.executable, "-c", "import sys, time; print('up', flush=True); time.sleep(120)"]
DEAF = [
    sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('up', flush=True);"
    " time.sleep(120)",
]  # fmt: skip


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """This process as a suite started with `&` sees it: SIGINT ignored, inherited by
    children that do not reset it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _up(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"up"


def test_a_child_obeys_sigint_even_when_the_suite_ignores_it(sigint_ignored: None) -> None:
    proc = start(SLEEPER, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _up(proc)
    t0 = time.monotonic()
    stopped = stop(proc, signal.SIGINT, timeout_s=20)
    assert not stopped.killed and stopped.returncode != 0
    assert time.monotonic() - t0 < 15
    # the same child started without the helper inherits the ignored SIGINT: only a kill
    # ends it (what left servers running for an hour after a failed CI run)
    plain = subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _up(plain)
        assert stop(plain, signal.SIGINT, timeout_s=1).killed
    finally:
        if plain.poll() is None:
            plain.kill()
            plain.wait()


def test_a_child_that_ignores_the_signal_is_killed_after_the_wait() -> None:
    proc = start(DEAF, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _up(proc)
    stopped = stop(proc, signal.SIGINT, timeout_s=1)
    assert stopped.killed and stopped.returncode == -signal.SIGKILL
    assert proc.poll() is not None


def test_a_child_in_a_session_of_its_own_is_stopped_with_its_group() -> None:
    shell = "sleep 120 & echo up; wait"
    proc = start(["bash", "-c", shell], stdout=subprocess.PIPE, start_new_session=True)
    _up(proc)
    stopped = stop(proc, signal.SIGTERM, timeout_s=10)
    assert not stopped.killed and proc.poll() is not None
    assert _living_members(proc.pid) == []  # the sleep went with its group


def _living_members(group: int, wait_s: float = 5.0) -> list[int]:
    """The processes of `group` that still run after at most `wait_s`: a member the signal
    ended but nobody has reaped yet is a zombie, not a survivor (this worker may be a child
    subreaper, as the Ray actors' tests make it, and then the orphaned sleep is its child:
    reaped here)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True)
        living = []
        for pid in map(int, found.stdout.split()):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue  # gone meanwhile
            if state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                continue
            living.append(pid)
        if not living or time.monotonic() > deadline:
            return living
        time.sleep(0.1)


def test_what_a_test_leaves_running_is_stopped_in_its_teardown() -> None:
    left = [start(SLEEPER, stdout=subprocess.PIPE), start(DEAF, stdout=subprocess.PIPE)]
    for proc in left:
        _up(proc)
    assert sorted(stop_all(timeout_s=2)) == sorted(p.pid for p in left)
    assert all(p.poll() is not None for p in left)
    assert left[1].returncode == -signal.SIGKILL  # it ignored SIGINT: killed after the wait
    assert stop_all() == []
