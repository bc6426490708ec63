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


class _State:
    depth = 0  # nested `sigterm_stops` blocks
    stopping = False  # a SIGTERM was raised; the blocks are unwinding


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    if _State.stopping:  # the cleanup of the first one is not cut short
        return
    _State.stopping = True
    raise Terminated()


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """Inside the block, SIGTERM raises `Terminated` (once: later ones are ignored until the
    outermost block is left); the previous handler is restored after. Outside the main thread
    (where handlers cannot be set) it does nothing."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    _State.depth += 1
    try:
        yield
    finally:
        _State.depth -= 1
        if _State.depth == 0:
            _State.stopping = False
        signal.signal(signal.SIGTERM, previous)
