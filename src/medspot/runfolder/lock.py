"""One writer per run folder: an advisory, exclusive lock on `<run>/.medspot.lock`.

The lock is an `flock` on an open file, so the kernel releases it when the process ends in any
way (exit, crash, kill -9): a lock file left by a dead process is simply taken over. The file
holds the pid of the holder, so that a second writer can say whom it is waiting for.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from medspot.errors import ConfigError, RunFolderError
from medspot.runfolder.layout import RunFolder

__all__ = ["RunFolderBusy", "lock_holder", "run_folder_lock"]


class RunFolderBusy(ConfigError):
    """Another live process writes into this run folder. Exit 2."""


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return f"pid {text}" if text.isdigit() else "another process"


def lock_holder(folder: Path) -> str | None:
    """Who holds the lock of `folder` now ("pid N"), or None when no process does (the
    lock file is only read: nothing is created)."""
    import fcntl

    path = RunFolder(folder).lock
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(path)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases a lock taken here
    return None


@contextlib.contextmanager
def run_folder_lock(folder: Path) -> Iterator[None]:
    """Hold the exclusive lock of `folder` (which must exist) for the `with` block; raise
    `RunFolderBusy` naming the holder's pid at once if another process holds it."""
    import fcntl

    path = RunFolder(folder).lock
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise RunFolderError(
            f"cannot write {path} (the lock of the run folder): {e.strerror or e}"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderBusy(
                f"{folder} is in use by another medspot process ({_holder(path)}); wait for it "
                "to finish, or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)
