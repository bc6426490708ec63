"""SIGTERM inside `sigterm_stops` raises `Terminated` (a KeyboardInterrupt: every Ctrl-C
cleanup path serves it) once; a second SIGTERM during the cleanup is ignored; the previous
handler comes back after; the exit statuses are 128 + the signal."""

from __future__ import annotations

import os
import signal
import time

import pytest

from medspot.interrupts import Terminated, exit_status, sigterm_stops


def _deliver(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.05)  # the handler runs between bytecodes of the main thread


def test_sigterm_raises_terminated_once_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    cleaned = False
    # nested, as the CLI and the runner do
    with pytest.raises(Terminated) as e, sigterm_stops(), sigterm_stops():
        try:
            _deliver(signal.SIGTERM)
        finally:
            _deliver(signal.SIGTERM)  # during the cleanup: ignored
            cleaned = True
    assert cleaned and isinstance(e.value, KeyboardInterrupt)
    assert exit_status(e.value) == 143
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(Terminated), sigterm_stops():  # a later block works again
        _deliver(signal.SIGTERM)


def test_ctrl_c_is_130() -> None:
    assert exit_status(KeyboardInterrupt()) == 130
