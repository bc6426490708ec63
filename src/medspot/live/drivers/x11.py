"""A private X11 desktop session: Xvfb, a session D-Bus (with its AT-SPI bus), xdotool input,
screenshots, and "settled" detection.

One `X11Session` per environment instance: its own Xvfb display (chosen by Xvfb itself,
`-displayfd`), its own D-Bus session bus (`dbus-daemon --nofork`, a child of ours, so that it
dies with the run; the AT-SPI bus it activates dies with it), its own XDG_RUNTIME_DIR and HOME
in the instance's workdir (so AT-SPI buses of instances side by side never meet). Every process
is started through `medspot.live.core.processes` (a parent-death signal, a marker, a record in
the workdir). Applications are started with `spawn()` and get the session's environment
(`env`). There is no window manager: windows open at (0, 0) undecorated; `place_window`
moves/resizes a window to the viewport. Screenshots are of the screen's top-left viewport (the
application's window placed there, dialogs included). `close()` stops everything this session
started.

Input never waits unboundedly: every xdotool call has a timeout, and `mousemove --sync` (which
waits until the pointer has moved, forever when it is already there and a window is under it)
is only used for a move that moves (`move_words`, `drag_words`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import io
import logging
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.keys import playwright_chord
from medspot.live.drivers.x11_reader import ScreenReader

__all__ = [
    "CARET_PIXELS",
    "KEY_TABLE",
    "Screenshot",
    "X11Session",
    "XKeysyms",
    "drag_words",
    "missing_x11_tools",
    "move_words",
    "parse_pointer",
    "xdotool_key",
]

log = logging.getLogger(__name__)

X11_TOOLS = ("Xvfb", "xdotool", "xwd", "dbus-daemon")
CARET_PIXELS = 64  # a text caret blinking is 1-2 px x the line height: not a change

# The action format's key names (Playwright's, `core.keys`) -> X keysyms (or xdotool's own
# modifier names: ctrl, shift, alt, super).
_KEYS = {
    "enter": "Return", "return": "Return", "escape": "Escape", "esc": "Escape", "tab": "Tab",
    "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "space": "space",
    "arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "pageup": "Prior", "pagedown": "Next", "home": "Home", "end": "End", "insert": "Insert",
    "capslock": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock",
    "printscreen": "Print", "pause": "Pause", "contextmenu": "Menu",
    "control": "ctrl", "ctrl": "ctrl", "controlormeta": "ctrl", "shift": "shift",
    "alt": "alt", "meta": "super", "cmd": "super", "super": "super",
}  # fmt: skip
# xdotool's own names for modifiers (its symbol map), beside the keysyms XStringToKeysym knows
_XDOTOOL_NAMES = frozenset({"ctrl", "control", "shift", "alt", "meta", "super"})
_MAX_KEYSYM = 0x0110FFFF  # the largest Unicode keysym (0x01000000 + U+10FFFF)


def _x_key(part: str, chord: bool) -> str:
    low = part.lower()
    if low in _KEYS:
        return _KEYS[low]
    if re.fullmatch(r"f\d{1,2}", low):
        return low.upper()
    if len(part) == 1 and part.isascii() and part.isalnum():
        return low if chord else part  # a letter in a chord is the key, not a capital
    if len(part) == 1:  # any other character: its Unicode keysym (xdotool binds it)
        return f"U{ord(part):04X}"
    return part


def xdotool_key(key: str) -> str:
    """'Enter' -> 'Return', 'Control+A' / 'ctrl+a' -> 'ctrl+a', 'F5' -> 'F5', '!' -> 'U0021'.
    The chord is split as Playwright splits it (`Control++` is Control and `+`)."""
    parts = playwright_chord(key.strip()) if key.strip() else []
    if not parts or any(not p for p in parts):
        raise ValueError(f"empty key in {key!r}")
    return "+".join(_x_key(p, len(parts) > 1) for p in parts)


class XKeysyms:
    """The keys xdotool can press: X keysym names as `XStringToKeysym` (libX11, what xdotool
    itself calls) resolves them, and xdotool's modifier names; reached through `xdotool_key`.
    A name xdotool does not resolve it skips with a warning (nothing is pressed), and a number
    it takes for a raw keycode: neither is a key here."""

    name = "X keysyms (xdotool)"

    def unknown(self, key: str) -> str | None:
        try:
            mapped = xdotool_key(key)
        except ValueError:
            return ""
        for part in mapped.split("+"):
            if part not in _XDOTOOL_NAMES and not 0 < _keysym(part) <= _MAX_KEYSYM:
                return part
        return None


@functools.lru_cache(maxsize=4096)
def _keysym(name: str) -> int:
    """`XStringToKeysym(name)` (0: no such keysym)."""
    fn = _xlib_string_to_keysym()
    try:
        return int(fn(name.encode("utf-8")))
    except UnicodeEncodeError:
        return 0


@functools.lru_cache(maxsize=1)
def _xlib_string_to_keysym() -> Callable[[bytes], int]:
    path = ctypes.util.find_library("X11")
    try:
        lib = ctypes.CDLL(path or "libX11.so.6")
    except OSError:
        raise EnvironmentFault("libX11 is missing (it comes with xdotool)") from None
    fn = lib.XStringToKeysym
    fn.restype, fn.argtypes = ctypes.c_ulong, [ctypes.c_char_p]
    return fn  # type: ignore[no-any-return]


KEY_TABLE = XKeysyms()


def missing_x11_tools() -> list[str]:
    return [t for t in X11_TOOLS if shutil.which(t) is None]


Point = tuple[int, int]


def move_words(pointer: Point | None, to: Point) -> list[str]:
    """xdotool words that put the pointer at `to` when it is at `pointer`: `mousemove --sync`
    when it moves; nothing when it is already there (`--sync` would wait for a move that never
    comes)."""
    if pointer == to:
        return []
    return ["mousemove", "--sync", str(to[0]), str(to[1])]


def drag_words(pointer: Point | None, start: Point, end: Point, steps: int = 8) -> list[str]:
    """A press at `start`, `steps` moves along the line to `end` (a move to where the pointer
    already is left out), a release: xdotool words."""
    words = [*move_words(pointer, start), "mousedown", "1", "sleep", "0.05"]
    at = start
    for i in range(1, steps + 1):
        p = (
            round(start[0] + (end[0] - start[0]) * i / steps),
            round(start[1] + (end[1] - start[1]) * i / steps),
        )
        step = move_words(at, p)
        if step:
            words += [*step, "sleep", "0.03"]
        at = p
    return [*words, "mouseup", "1"]


def parse_pointer(shell: str) -> Point | None:
    """`xdotool getmouselocation --shell` output -> (x, y)."""
    x = re.search(r"(?m)^X=(-?\d+)$", shell)
    y = re.search(r"(?m)^Y=(-?\d+)$", shell)
    return (int(x.group(1)), int(y.group(1))) if x and y else None


@dataclass(frozen=True, slots=True)
class Screenshot:
    png: bytes
    width: int
    height: int
    digest: str  # hash of the raw pixels (for "did the screen change")


def _xwd_rgb(data: bytes, crop: tuple[int, int]) -> tuple[bytes, int, int, str]:
    """Decode a 24/32-bit TrueColor XWD dump (`xwd -root`) into raw RGB cropped to the top-left
    `crop` = (width, height). Returns (rgb bytes, width, height, digest of the crop)."""
    from PIL import Image

    if len(data) < 100:
        raise EnvironmentFault("xwd: short screenshot")
    f = struct.unpack(">25I", data[:100])
    header_size, width, height = f[0], f[4], f[5]
    byte_order, bpp, bpl, ncolors = f[7], f[11], f[12], f[19]
    if bpp != 32:
        raise EnvironmentFault(f"xwd: unsupported {bpp} bits per pixel")
    start = header_size + 12 * ncolors
    w, h = min(crop[0], width), min(crop[1], height)
    pixels = data[start : start + bpl * height]
    mode = "BGRX" if byte_order == 0 else "XRGB"
    img = Image.frombuffer("RGB", (width, height), pixels, "raw", mode, bpl, 1)
    if (w, h) != (width, height):
        img = img.crop((0, 0, w, h))
    raw = img.tobytes()
    return raw, w, h, hashlib.blake2b(raw, digest_size=16).hexdigest()


class X11Session:
    """Xvfb + D-Bus session + xdotool, all private to `workdir`."""

    def __init__(
        self, workdir: Path, screen: tuple[int, int] = (1280, 800), capture: str = "xlib"
    ) -> None:
        self.workdir = Path(workdir)
        self.screen = screen
        # how the screen is read: `xlib` (a reader child of ours, `x11_reader`: Xlib's
        # XGetImage of the root window, OpenGL views included, about 5 ms a frame), `xwd`
        # (a spawned `xwd -root`, which leaves windows of another visual black once an OpenGL
        # application has installed a DirectColor colormap) or `import` (a spawned ImageMagick
        # `import`; each spawn costs 30-60 ms)
        self.capture = capture
        self._reader: ScreenReader | None = None
        self.display: str | None = None
        self.env: dict[str, str] = {}
        self._xvfb: subprocess.Popen[bytes] | None = None
        self._dbus: subprocess.Popen[bytes] | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        self._closed = False
        # what the finaliser (also run at interpreter exit) must stop; holds no ref to self
        self._st: dict[str, object] = {"procs": [], "workdir": self.workdir}
        self._finalizer = weakref.finalize(self, X11Session._cleanup, self._st)

    # -- life cycle -------------------------------------------------------------------------
    @staticmethod
    def _cleanup(st: dict[str, object]) -> None:
        procs = st.get("procs")
        if isinstance(procs, list):
            for p in reversed(procs):
                if isinstance(p, subprocess.Popen) and p.poll() is None:
                    _stop(p)
        workdir = st.get("workdir")
        if isinstance(workdir, Path):  # what they started (the AT-SPI bus, activated services)
            processes.stop_folder(workdir)

    @property
    def _dbus_pid(self) -> int | None:
        return None if self._dbus is None else self._dbus.pid

    def start(self) -> None:
        missing = missing_x11_tools()
        if missing:
            raise EnvironmentFault(f"X11 tools missing: {', '.join(missing)}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        runtime = self.workdir / "xdg-runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        home = self.workdir / "home"
        home.mkdir(exist_ok=True)
        w_, h_ = self.screen
        xvfb, number = self._start_reporting(
            "Xvfb",
            lambda fd: ["Xvfb", "-displayfd", str(fd), "-screen", "0", f"{w_}x{h_}x24",
                        "-nolisten", "tcp", "-noreset"],
            env=None,
        )  # fmt: skip
        self._xvfb = xvfb
        self.display = ":" + number
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DBUS_", "AT_SPI", "XDG_RUNTIME", "GTK_MODULES"))
        }
        base.update(
            DISPLAY=self.display,
            XDG_RUNTIME_DIR=str(runtime),
            HOME=str(home),
        )
        sock = runtime / "bus"
        listen = f"unix:path={sock}" if len(str(sock)) < 100 else "unix:tmpdir=/tmp"
        self._dbus, address = self._start_reporting(
            "dbus-daemon",
            lambda fd: ["dbus-daemon", "--session", "--nofork", "--nopidfile",
                        f"--print-address={fd}", f"--address={listen}"],
            env=base,
        )  # fmt: skip
        base["DBUS_SESSION_BUS_ADDRESS"] = address
        self.env = base
        log.debug("X11 session %s, bus %s", self.display, address)

    def _start_reporting(
        self, name: str, argv: Callable[[int], list[str]], env: dict[str, str] | None
    ) -> tuple[subprocess.Popen[bytes], str]:
        """Start a daemon that writes one line (its display, its bus address) to a pipe."""
        r, w = os.pipe()
        try:
            with open(self.workdir / f"{name.lower()}.log", "wb") as sink:
                proc = processes.popen(
                    argv(w),
                    self.workdir,
                    env=env,
                    pass_fds=(w,),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=sink,
                    start_new_session=True,
                )
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self._track(proc)
        line = b""
        deadline = time.monotonic() + 15
        try:
            while not line.endswith(b"\n"):
                ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise EnvironmentFault(f"{name} did not report within 15 s")
                chunk = os.read(r, 256)
                if not chunk:
                    raise EnvironmentFault(
                        f"{name} exited (status {proc.poll()}); see {name.lower()}.log"
                    )
                line += chunk
        finally:
            os.close(r)
        return proc, line.decode().strip()

    def _track(self, proc: subprocess.Popen[bytes]) -> None:
        procs = self._st["procs"]
        assert isinstance(procs, list)
        procs.append(proc)
        self._children.append(proc)

    def spawn(
        self,
        argv: list[str],
        *,
        log_name: str,
        extra_env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start an application in this session (own process group; stopped by close())."""
        env = dict(self.env)
        env.update(extra_env or {})
        with open(self.workdir / f"{log_name}.log", "ab") as sink:
            proc = processes.popen(
                argv,
                self.workdir,
                env=env,
                cwd=str(cwd or self.workdir),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._track(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        _stop(proc)

    def alive(self) -> bool:
        return self._xvfb is not None and self._xvfb.poll() is None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._finalizer()

    # -- windows ----------------------------------------------------------------------------
    def xdotool(self, *args: str, timeout: float = 10.0) -> str:
        if not self.alive():
            raise EnvironmentFault(f"the X server {self.display} is not running")
        try:
            out = processes.run(
                ["xdotool", *args],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise EnvironmentFault(f"xdotool {' '.join(args)} hung") from None
        return str(out.stdout)

    def find_window(self, name_regex: str, timeout: float, proc: subprocess.Popen[bytes]) -> str:
        """The id of a visible top-level window whose name matches, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            ids = self.xdotool("search", "--onlyvisible", "--name", name_regex).split()
            if ids:
                return ids[0]
            if proc.poll() is not None:
                raise EnvironmentFault(f"the application exited (status {proc.returncode})")
            if time.monotonic() > deadline:
                raise EnvironmentFault(f"no window named /{name_regex}/ after {timeout:.0f} s")
            time.sleep(0.1)

    def place_window(self, wid: str, size: tuple[int, int]) -> None:
        self.xdotool("windowmove", wid, "0", "0")
        self.xdotool("windowsize", wid, str(size[0]), str(size[1]))

    def window_title(self, wid: str) -> str:
        return self.xdotool("getwindowname", wid).strip()

    # -- input ------------------------------------------------------------------------------
    def pointer(self) -> Point | None:
        """Where the pointer is now (None when xdotool cannot tell)."""
        return parse_pointer(self.xdotool("getmouselocation", "--shell"))

    def move_pointer(self, x: int, y: int) -> None:
        words = move_words(self.pointer(), (x, y))
        if words:
            self.xdotool(*words)

    def click(self, x: int, y: int, button: int = 1, repeat: int = 1) -> None:
        args = [*move_words(self.pointer(), (x, y)), "click"]
        if repeat > 1:
            args += ["--repeat", str(repeat), "--delay", "80"]
        self.xdotool(*args, str(button))

    def drag(self, x1: int, y1: int, x2: int, y2: int, steps: int = 8) -> None:
        self.xdotool(*drag_words(self.pointer(), (x1, y1), (x2, y2), steps))

    def scroll(self, x: int, y: int, dy: int) -> None:
        button = "5" if dy > 0 else "4"
        n = max(1, abs(dy))
        self.xdotool(
            *move_words(self.pointer(), (x, y)),
            "click",
            "--repeat",
            str(n),
            "--delay",
            "40",
            button,
        )

    def type_text(self, text: str) -> None:
        self.xdotool("type", "--delay", "15", "--", text, timeout=30 + len(text) * 0.1)

    def key(self, key: str) -> None:
        self.xdotool("key", "--", xdotool_key(key))

    # -- screen -----------------------------------------------------------------------------
    def _xwd(self) -> bytes:
        if not self.alive():
            raise EnvironmentFault(f"the X server {self.display} is not running")
        try:
            out = processes.run(
                ["xwd", "-root", "-silent"],
                env=self.env,
                capture_output=True,
                timeout=10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise EnvironmentFault("xwd hung") from None
        if out.returncode != 0:
            raise EnvironmentFault(f"xwd failed: {out.stderr.decode(errors='replace')[:200]}")
        return bytes(out.stdout)

    def _import_rgb(self, crop: tuple[int, int]) -> tuple[bytes, int, int, str]:
        """The screen through ImageMagick's `import` as raw RGB, cropped to the top-left
        `crop`."""
        if not self.alive():
            raise EnvironmentFault(f"the X server {self.display} is not running")
        try:
            out = processes.run(
                ["import", "-silent", "-window", "root", "-depth", "8", "rgb:-"],
                env=self.env, capture_output=True, timeout=10, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise EnvironmentFault("import hung") from None
        sw, sh = self.screen
        if out.returncode != 0 or len(out.stdout) != sw * sh * 3:
            raise EnvironmentFault(f"import failed: {out.stderr.decode(errors='replace')[:200]}")
        w, h = min(crop[0], sw), min(crop[1], sh)
        raw = bytes(out.stdout)
        if (w, h) != (sw, sh):
            raw = b"".join(raw[y * sw * 3 : (y * sw + w) * 3] for y in range(h))
        return raw, w, h, hashlib.blake2b(raw, digest_size=16).hexdigest()

    def _reader_rgb(self, crop: tuple[int, int]) -> tuple[bytes, int, int, str]:
        """The screen through the reader child (started on first use), cropped to the
        top-left `crop`."""
        if not self.alive():
            raise EnvironmentFault(f"the X server {self.display} is not running")
        if self._reader is None:
            self._reader = ScreenReader(self.workdir, self.env)
            self._track(self._reader.start())
        sw, sh = self.screen
        w, h = min(crop[0], sw), min(crop[1], sh)
        raw = self._reader.rgb(w, h)
        return raw, w, h, hashlib.blake2b(raw, digest_size=16).hexdigest()

    def _grab(self, size: tuple[int, int]) -> tuple[bytes, int, int, str]:
        if self.capture == "import":
            return self._import_rgb(size)
        if self.capture == "xwd":
            return _xwd_rgb(self._xwd(), size)
        return self._reader_rgb(size)

    def digest(self, size: tuple[int, int]) -> str:
        return self._grab(size)[3]

    def frame(self, size: tuple[int, int]) -> tuple[bytes, int, int, str]:
        """Raw RGB of the viewport, its size and digest (no PNG encoding)."""
        return self._grab(size)

    def screenshot(self, size: tuple[int, int]) -> Screenshot:
        from PIL import Image

        raw, w, h, digest = self.frame(size)
        buf = io.BytesIO()
        Image.frombytes("RGB", (w, h), raw).save(buf, format="PNG", compress_level=1)
        return Screenshot(buf.getvalue(), w, h, digest)

    def settle(
        self,
        size: tuple[int, int],
        *,
        quiet_s: float = 0.5,
        timeout_s: float = 15.0,
        poll_s: float = 0.1,
        before: str | None = None,
        alive: subprocess.Popen[bytes] | None = None,
        cpu_idle: float = 0.15,
    ) -> tuple[float, bool]:
        """Wait until the screen has not changed for `quiet_s` (a blinking caret, at most
        `CARET_PIXELS` changed pixels, does not count) and, given `alive`, that process used
        under `cpu_idle` of a core meanwhile. Returns (seconds waited, whether the screen
        differs from the `before` digest). Timeout or a dead process: EnvironmentFault."""
        import numpy as np

        t0 = time.monotonic()
        raw, w, h, digest = self.frame(size)
        ref = np.frombuffer(raw, np.uint8).reshape(h, w, 3)
        changed = before is not None and digest != before
        since, cpu0 = time.monotonic(), _cpu_seconds(alive)
        while True:
            if alive is not None and alive.poll() is not None:
                raise EnvironmentFault(f"the application exited (status {alive.returncode})")
            now = time.monotonic()
            if now - since >= quiet_s:
                cpu1 = _cpu_seconds(alive)
                if cpu1 - cpu0 <= cpu_idle * (now - since):
                    return now - t0, changed
                since, cpu0 = now, cpu1  # the application is still working: wait on
            if now - t0 > timeout_s:
                raise EnvironmentFault(f"the screen did not settle within {timeout_s:.0f} s")
            time.sleep(poll_s)
            raw, w2, h2, cur = self.frame(size)
            if (w2, h2) != (w, h):
                raise EnvironmentFault("the screen size changed")
            if cur == digest:
                continue
            frame = np.frombuffer(raw, np.uint8).reshape(h, w, 3)
            moved = int(np.count_nonzero((frame != ref).any(axis=2)))
            digest = cur
            if before is not None:
                changed = changed or cur != before
            if moved > CARET_PIXELS:
                ref, since, cpu0 = frame, time.monotonic(), _cpu_seconds(alive)


def _cpu_seconds(proc: subprocess.Popen[bytes] | None) -> float:
    """User + system CPU seconds of `proc` (0 when unknown)."""
    if proc is None:
        return 0.0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM the process group, then SIGKILL after `grace` seconds."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
