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

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

__all__ = ["Terminated", "exit_status", "run_async", "sigterm_stops"]

T = TypeVar("T")


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


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`asyncio.run(make())`, also from a thread that already runs an event loop (a Jupyter
    kernel; Playwright's sync API, which a started web environment holds in its thread): there
    the coroutine runs on a loop and a thread of its own while this one waits. Ctrl-C or
    SIGTERM while it waits cancels it, as `asyncio.run` does, and is raised here once it has
    unwound."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(make)
    done: dict[str, Any] = {}
    started = threading.Event()

    async def main() -> T:
        done["loop"], done["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await make()

    def target() -> None:
        try:
            done["value"] = asyncio.run(main())
        except BaseException as e:  # handed to the waiting thread
            done["error"] = e
        finally:
            started.set()

    worker = threading.Thread(target=target, name="medspot-run", daemon=True)
    worker.start()
    interrupted: KeyboardInterrupt | None = None
    while worker.is_alive():
        try:
            worker.join(0.2)
        except KeyboardInterrupt as e:
            interrupted = interrupted or e
            started.wait()
            loop, task = done.get("loop"), done.get("task")
            if loop is not None and task is not None:
                with contextlib.suppress(RuntimeError):  # the loop already closed
                    loop.call_soon_threadsafe(task.cancel)
    if interrupted is not None:
        raise interrupted
    if "error" in done:
        raise done["error"]
    value: T = done["value"]
    return value


_HELD = (signal.SIGINT, signal.SIGTERM)


def _new_loop_held() -> asyncio.AbstractEventLoop:
    """A new event loop, built with SIGINT and SIGTERM held: an interrupt raised inside the
    loop's constructor left a half-built loop whose collection printed a traceback. They are
    held at Python's level (a handler that notes them for the constructor's time), not by the
    thread's signal mask: the kernel hands a process's signal to any thread not blocking it,
    and Python runs its handler in the main thread wherever that is. A signal noted meanwhile is
    raised again once the handlers are back, and the loop, now whole, is closed."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.new_event_loop()
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    previous: dict[int, Any] = {}
    try:
        for sig in _HELD:
            handler = signal.getsignal(sig)
            if handler is not None:  # one set outside Python cannot be put back: left alone
                previous[sig] = signal.signal(sig, note)
        loop = asyncio.new_event_loop()
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
    try:
        for signum in dict.fromkeys(noted):  # in the order they came, once each
            signal.raise_signal(signum)
    except BaseException:
        loop.close()
        raise
    return loop


def _run_here(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`asyncio.run(make())` on a loop built with the signals held (`_new_loop_held`); an
    interrupt before the coroutine starts closes the loop and the coroutine (no "never
    awaited" warning), and is raised."""
    loop = _new_loop_held()
    coro: Coroutine[Any, Any, T] | None = None
    try:
        coro = make()
        asyncio.set_event_loop(loop)
        with asyncio.Runner(loop_factory=lambda: loop) as runner:
            return runner.run(coro)
    finally:
        if coro is not None:
            coro.close()  # nothing once it ran; one that never started is not warned of
        if not loop.is_closed():
            loop.close()
        asyncio.set_event_loop(None)
