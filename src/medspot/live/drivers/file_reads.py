"""Which files an application reads in a folder, in order: Linux inotify through ctypes (no
package), for applications that show no trace of what they loaded anywhere else (DICOMscope's
viewer names no image on screen nor on AT-SPI, but it reads the image's file to show it).

    reads = FileReads(workdir / "db")        # watch before the application starts
    ...
    reads.drain()                            # ["CT-DOE-JOHN_AXIAL_003.dcm", ...] since last time
    reads.close()

A read is an `IN_CLOSE_NOWRITE` event: a file opened without writing and closed, so files the
application writes (a saved presentation state) do not count. Events queue in the kernel until
`drain()` (non-blocking); more than the queue holds (`overflowed`) loses events, which the
caller must treat as not knowing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import weakref
from pathlib import Path

from medspot.live.core.contract import EnvironmentFault

__all__ = ["FileReads"]

_IN_CLOSE_NOWRITE = 0x00000010
_IN_Q_OVERFLOW = 0x00004000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class FileReads:
    """The names of the files read in `folder` (not below it), in the order they were read."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.overflowed = False
        libc = _libc()
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise EnvironmentFault(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        wd = libc.inotify_add_watch(fd, os.fsencode(self.folder), _IN_CLOSE_NOWRITE)
        if wd < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise EnvironmentFault(f"inotify_add_watch {self.folder}: {os.strerror(err)}")
        self._fd: int | None = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    def drain(self) -> list[str]:
        """The files read since the last call (oldest first)."""
        if self._fd is None:
            raise EnvironmentFault(f"the watch of {self.folder} is closed")
        names: list[str] = []
        while True:
            try:
                buf = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return names
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise EnvironmentFault(f"reading the watch of {self.folder}: {exc}") from None
            i = 0
            while i + _EVENT.size <= len(buf):
                _wd, mask, _cookie, size = _EVENT.unpack_from(buf, i)
                raw = buf[i + _EVENT.size : i + _EVENT.size + size]
                i += _EVENT.size + size
                if mask & _IN_Q_OVERFLOW:
                    self.overflowed = True
                elif mask & _IN_CLOSE_NOWRITE:
                    names.append(os.fsdecode(raw.rstrip(b"\0")))

    def close(self) -> None:
        if self._fd is not None:
            self._fd = None
            self._finalizer()
