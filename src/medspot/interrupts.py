"""Stopping a run by a signal. SIGINT (Ctrl-C) and SIGTERM both stop a run cleanly: the
exception unwinds the run (journals are already on disk, environments are closed, results are
written) and the command exits with the shell's status for that signal, 128 + its number:
130 for SIGINT, 143 for SIGTERM.

SIGINT raises Python's own `KeyboardInterrupt`; `sigterm_stops()` makes SIGTERM raise
`Terminated`, a `KeyboardInterrupt` that remembers its signal, so that every `except
KeyboardInterrupt` cleanup path serves both. A second SIGTERM while the first is being handled
is ignored (the cleanup finishes; SIGKILL remains for an impatient caller).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "exit_status", "sigterm_stops"]


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop as after Ctrl-C, exit 143."""

    signum = signal.SIGTERM


def exit_status(exc: BaseException) -> int:
    """The exit status of a run stopped by `exc`: 128 + the signal's number (130 for Ctrl-C)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup that follows is not cut short
    raise Terminated()


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """Inside the block, SIGTERM raises `Terminated`; the previous handler is restored after.
    Outside the main thread (where handlers cannot be set) it does nothing."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
