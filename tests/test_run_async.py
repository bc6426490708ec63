"""`run_async`: a coroutine run to its end from plain code, also where the thread already runs
an event loop (a Jupyter kernel, Playwright's sync API holding a started web environment)."""

from __future__ import annotations

import _thread
import asyncio
import gc
import os
import signal
import threading
import time
import warnings

import pytest

from _children import ctrl_c_raises
from medspot.interrupts import Terminated, run_async, sigterm_stops


async def _answer() -> tuple[int, str]:
    await asyncio.sleep(0)
    return 42, threading.current_thread().name


async def _fails() -> None:
    raise ValueError("inside")


def test_without_a_running_loop_it_runs_here() -> None:
    assert run_async(_answer) == (42, threading.current_thread().name)


def test_inside_a_running_loop_it_runs_on_a_thread_of_its_own() -> None:
    async def outer() -> tuple[int, str]:
        return run_async(_answer)  # a blocking call from a coroutine, as from a notebook cell

    value, thread = asyncio.run(outer())
    assert value == 42 and thread == "medspot-run"


def test_an_error_inside_reaches_the_caller() -> None:
    async def outer() -> None:
        run_async(_fails)

    with pytest.raises(ValueError, match="inside"):
        asyncio.run(outer())
    with pytest.raises(ValueError, match="inside"):
        run_async(_fails)


def test_ctrl_c_while_waiting_cancels_the_coroutine() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        threading.Timer(0.3, _thread.interrupt_main).start()  # Ctrl-C in the waiting thread
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def outer() -> None:
        run_async(forever)

    # a loop run as a notebook's or Playwright's is (not asyncio.run, whose own SIGINT handler
    # would cancel `outer` instead of raising in it)
    loop = asyncio.new_event_loop()
    try:
        with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(outer())
    finally:
        loop.close()
    assert cancelled.wait(5)


@pytest.mark.parametrize("threads", ["main thread only", "another thread too"])
def test_sigterm_while_the_loop_is_built_stops_cleanly(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], threads: str
) -> None:
    """SIGTERM arriving inside the event loop's constructor (a run stopped as it starts), with
    the main thread alone or another thread beside it (a run's threads are there: the kernel
    hands a process's signal to any thread not blocking it, and Python raises it in the main
    thread): the run stops with `Terminated` once the loop is built, the coroutine never starts
    and is not warned of, and nothing prints a traceback (a half-built loop once did, when
    collected)."""
    policy = asyncio.get_event_loop_policy()
    built = policy.new_event_loop

    def signalled_midway() -> asyncio.AbstractEventLoop:
        os.kill(os.getpid(), signal.SIGTERM)  # held until the loop is built
        time.sleep(0.05)  # the main thread runs on: Python checks for signals meanwhile
        loop = built()
        whole.append(loop)
        return loop

    whole: list[asyncio.AbstractEventLoop] = []

    started: list[bool] = []

    async def body() -> None:
        started.append(True)

    monkeypatch.setattr(policy, "new_event_loop", signalled_midway)
    bystander_ends = threading.Event()
    if threads == "another thread too":
        threading.Thread(target=bystander_ends.wait, daemon=True).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with sigterm_stops(), pytest.raises(Terminated):
            run_async(body)
        gc.collect()
    bystander_ends.set()
    assert not started
    assert len(whole) == 1 and whole[0].is_closed()  # the signal waited for the whole loop
    assert not [w for w in caught if "never awaited" in str(w.message)]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err
