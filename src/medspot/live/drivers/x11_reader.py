"""The screen of an X display read by a small child process of ours: Xlib's `XGetImage` of the
root window through ctypes, one frame per request on a pipe.

A frame costs about 5 ms this way, against 30-60 ms for a spawned `xwd` or ImageMagick
`import` (a process start, a dump and a parse each time); a settle polls the screen several
times per action. It reads what `import -window root` reads, OpenGL views included (checked on
InVesalius's VTK views: the same pixels). Xlib ends a process whose X server went away, which is
why the reader is a child and not this process: the session sees its pipe close and raises an
`EnvironmentFault`.

Protocol: the parent writes `"<width> <height>\\n"`; the child answers a 4-byte little-endian
length and then that many bytes of RGB (`width * height * 3`), or length 0 and a line of error
text. The child runs `python -m medspot.live.drivers.x11_reader` with `DISPLAY` set.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault

__all__ = ["ScreenReader"]

_HEADER = struct.Struct("<I")
_ZPIXMAP = 2
_ALL_PLANES = 0xFFFFFFFF


class ScreenReader:
    """The reader child of one X display, started on first use (on the session's thread: the
    child dies with that thread, as the session's other children do). The session tracks the
    child and stops it with its other processes."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir, self.env = workdir, env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        self.proc = processes.popen(
            [sys.executable, "-m", "medspot.live.drivers.x11_reader"],
            self.workdir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self.proc

    def rgb(self, width: int, height: int, timeout_s: float = 10.0) -> bytes:
        """The top-left `width` x `height` of the screen as RGB bytes."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            raise EnvironmentFault("the screen reader is not running")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(f"{width} {height}\n".encode())
            proc.stdin.flush()
            deadline = time.monotonic() + timeout_s
            size = _HEADER.unpack(_read(proc.stdout, _HEADER.size, deadline))[0]
            if size == 0:
                raise EnvironmentFault(f"the screen reader: {_line(proc.stdout, deadline)}")
            return _read(proc.stdout, size, deadline)
        except (BrokenPipeError, EOFError):
            raise EnvironmentFault("the screen reader exited (the X server went away?)") from None


def _read(stream: Any, n: int, deadline: float) -> bytes:
    fd = stream.fileno()
    chunks: list[bytes] = []
    while n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise EnvironmentFault("the screen reader did not answer in time")
        data = os.read(fd, min(n, 1 << 20))
        if not data:
            raise EOFError
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def _line(stream: Any, deadline: float) -> str:
    out = b""
    while not out.endswith(b"\n") and len(out) < 2000:
        out += _read(stream, 1, deadline)
    return out.decode(errors="replace").strip()


# -- the child ------------------------------------------------------------------------------------


class _XImage(ctypes.Structure):
    _fields_ = [
        ("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
        ("format", ctypes.c_int), ("data", ctypes.c_void_p), ("byte_order", ctypes.c_int),
        ("bitmap_unit", ctypes.c_int), ("bitmap_bit_order", ctypes.c_int),
        ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
        ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int),
        ("red_mask", ctypes.c_ulong), ("green_mask", ctypes.c_ulong),
        ("blue_mask", ctypes.c_ulong),
    ]  # fmt: skip


_ERRORS: list[str] = []
_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def _note_x_error(_display: Any, _event: Any) -> int:  # a protocol error: reported, not fatal
    _ERRORS.append("an X protocol error")
    return 0


_ON_X_ERROR = _ERROR_HANDLER(_note_x_error)  # kept referenced: Xlib calls it later


def main() -> int:
    name = ctypes.util.find_library("X11")
    if name is None:
        sys.stdout.buffer.write(_HEADER.pack(0) + b"libX11 is missing\n")
        return 1
    x = ctypes.CDLL(name)
    x.XOpenDisplay.restype, x.XOpenDisplay.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    x.XDefaultRootWindow.restype = ctypes.c_ulong
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x.XGetImage.restype = ctypes.POINTER(_XImage)
    x.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                            ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]  # fmt: skip
    x.XFree.argtypes = [ctypes.c_void_p]
    x.XSetErrorHandler(_ON_X_ERROR)
    out = sys.stdout.buffer
    display = x.XOpenDisplay(None)
    if not display:
        out.write(_HEADER.pack(0) + f"cannot open {os.environ.get('DISPLAY')}\n".encode())
        out.flush()
        return 1
    root = x.XDefaultRootWindow(display)
    from PIL import Image

    for line in sys.stdin.buffer:
        w, h = (int(v) for v in line.split())
        _ERRORS.clear()
        ptr = x.XGetImage(display, root, 0, 0, w, h, _ALL_PLANES, _ZPIXMAP)
        if not ptr or _ERRORS:
            out.write(_HEADER.pack(0) + f"XGetImage failed: {_ERRORS or 'no image'}\n".encode())
        else:
            im = ptr.contents
            try:
                if im.bits_per_pixel != 32:
                    raise ValueError(f"{im.bits_per_pixel} bits per pixel")
                data = ctypes.string_at(im.data, im.bytes_per_line * h)
                mode = "BGRX" if im.byte_order == 0 else "XRGB"
                rgb = Image.frombuffer("RGB", (w, h), data, "raw", mode, im.bytes_per_line, 1)
                raw = rgb.tobytes()
                out.write(_HEADER.pack(len(raw)) + raw)
            except ValueError as e:
                out.write(_HEADER.pack(0) + f"unsupported screen: {e}\n".encode())
            finally:
                x.XFree(im.data)
                x.XFree(ptr)
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
