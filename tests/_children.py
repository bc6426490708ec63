"""Every process a test starts goes through here.

- `start(cmd, ...)` is `subprocess.Popen` with SIGINT and SIGTERM at their defaults in the child:
  a suite started in the background (`make test &`, CI under nohup) inherits SIGINT ignored, and
  a child started from it would ignore Ctrl-C, so that a test that stops it with SIGINT waits
  for nothing and leaves it running.
- `stop(proc)` ends one: the signal (SIGINT by default, as Ctrl-C; to its whole process group
  when it was started in a session of its own), a bounded wait that reads its pipes, then
  SIGKILL. It says whether the kill was needed (`Stopped.killed`): a child that had to be
  killed did not obey the signal, which a test may assert on.
- `stop_all()` runs in every test's teardown (tests/conftest.py), pass or fail: whatever a test
  started and left running is stopped the same way, so that no server outlives its test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Stopped", "ctrl_c_raises", "default_signals", "running", "start", "stop", "stop_all",
]  # fmt: skip

STOP_TIMEOUT_S = 30.0  # the wait after the signal before SIGKILL
_started: list[tuple[subprocess.Popen[Any], bool]] = []  # (process, its own process group)


def default_signals() -> None:
    """In a child before exec (`preexec_fn`): SIGINT and SIGTERM back to their defaults."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start(
    cmd: Sequence[str],
    *,
    preexec_fn: Callable[[], Any] | None = None,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """`subprocess.Popen(cmd, **popen)` with SIGINT and SIGTERM at their defaults in the child
    (then `preexec_fn`, when given), remembered for `stop_all`."""

    def before_exec() -> None:
        default_signals()
        if preexec_fn is not None:
            preexec_fn()

    proc: subprocess.Popen[Any] = subprocess.Popen(list(cmd), preexec_fn=before_exec, **popen)
    _started.append((proc, bool(popen.get("start_new_session") or popen.get("process_group"))))
    return proc


@dataclass(frozen=True)
class Stopped:
    """How a child ended: its status, what was left on its pipes, and whether it had to be
    killed (it did not end within the wait after the signal)."""

    returncode: int
    out: Any
    err: Any
    killed: bool


def _signal(proc: subprocess.Popen[Any], sig: int, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)


def _own_group(proc: subprocess.Popen[Any]) -> bool:
    return any(p is proc and group for p, group in _started)


def stop(
    proc: subprocess.Popen[Any],
    sig: int = signal.SIGINT,
    timeout_s: float = STOP_TIMEOUT_S,
    *,
    group: bool | None = None,
) -> Stopped:
    """Send `sig` unless `proc` has ended (to its process group when it leads one: `group`
    None decides by how `start` started it), wait at most `timeout_s` while reading its pipes,
    then SIGKILL it and wait."""
    group = _own_group(proc) if group is None else group
    if proc.poll() is None:
        _signal(proc, sig, group)
    killed = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        killed = True
        _signal(proc, signal.SIGKILL, group)
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    if group:  # what is left of its group (a grandchild that ignored the signal)
        _signal(proc, signal.SIGKILL, True)
    return Stopped(proc.returncode, out, err, killed)


@contextlib.contextmanager
def running(cmd: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`start(cmd)` for the block; stopped after it (`stop`, SIGINT first) if still running."""
    proc = start(cmd, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            stop(proc)


def stop_all(timeout_s: float = 10.0) -> list[int]:
    """Stop every child `start` started that is still running (SIGINT, `timeout_s`, SIGKILL);
    the pids of those that were still running."""
    left = [(p, g) for p, g in _started if p.poll() is None]
    _started.clear()
    for proc, group in left:
        _signal(proc, signal.SIGINT, group)
    for proc, group in left:
        try:
            proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL, group)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=STOP_TIMEOUT_S)
        except (ValueError, OSError):  # its pipes were closed by the test: wait only
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=timeout_s)
            if proc.poll() is None:
                _signal(proc, signal.SIGKILL, group)
                proc.wait(timeout=STOP_TIMEOUT_S)
    return [p.pid for p, _ in left]


@contextlib.contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """In the block SIGINT raises `KeyboardInterrupt` in this process, as in a terminal: for a
    test that sends SIGINT to itself, also when the suite was started in the background (which
    leaves SIGINT ignored, and a signal sent then would do nothing)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
