"""The X11 session machinery on a real Xvfb: start/stop, screenshots, input, settling."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from _desktop_support import require_x11

from medspot.live.core.contract import EnvironmentFault
from medspot.live.drivers.x11 import X11Session, xdotool_key

pytestmark = pytest.mark.live


def test_key_names_follow_the_action_format() -> None:
    assert xdotool_key("Enter") == "Return"
    assert xdotool_key("Escape") == "Escape"
    assert xdotool_key("ctrl+a") == "ctrl+a"
    assert xdotool_key("Control+A") == "ctrl+a"
    assert xdotool_key("ArrowDown") == "Down"
    assert xdotool_key("F5") == "F5"
    assert xdotool_key("a") == "a"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_session_starts_screenshots_and_stops(tmp_path: Path) -> None:
    require_x11()
    s = X11Session(tmp_path, screen=(640, 400))
    s.start()
    try:
        assert s.display and s.display.startswith(":")
        assert "DBUS_SESSION_BUS_ADDRESS" in s.env
        shot = s.screenshot((640, 400))
        assert (shot.width, shot.height) == (640, 400)
        assert shot.png.startswith(b"\x89PNG")
        from io import BytesIO

        from PIL import Image

        assert Image.open(BytesIO(shot.png)).size == (640, 400)
        small = s.screenshot((320, 200))
        assert (small.width, small.height) == (320, 200)
        # an idle screen settles; a window drawn by a client changes the digest
        settle_s, changed = s.settle((640, 400), quiet_s=0.2, before=shot.digest)
        assert settle_s >= 0.2
        assert changed is False
        app = s.spawn(["xlogo", "-geometry", "200x200+0+0", "-bg", "red"], log_name="xlogo")
        s.find_window("xlogo", 20, app)
        _, changed = s.settle((640, 400), quiet_s=0.2, before=shot.digest, alive=app)
        assert changed is True
        xvfb_pid, dbus_pid = s._xvfb.pid, s._dbus_pid  # type: ignore[union-attr]
    finally:
        s.close()
    assert not _pid_alive(app.pid)
    assert not _pid_alive(xvfb_pid)
    assert dbus_pid is not None and not _pid_alive(dbus_pid)
    with pytest.raises(EnvironmentFault):
        s.screenshot((640, 400))


def test_settle_notices_a_dead_application(tmp_path: Path) -> None:
    require_x11()
    s = X11Session(tmp_path)
    s.start()
    try:
        proc = s.spawn(["sleep", "30"], log_name="sleep")
        proc.kill()
        proc.wait()
        with pytest.raises(EnvironmentFault, match="exited"):
            s.settle((1280, 800), alive=proc)
    finally:
        s.close()


def test_two_sessions_side_by_side(tmp_path: Path) -> None:
    require_x11()
    a, b = X11Session(tmp_path / "a"), X11Session(tmp_path / "b")
    a.start()
    b.start()
    try:
        assert a.display != b.display
        assert a.env["DBUS_SESSION_BUS_ADDRESS"] != b.env["DBUS_SESSION_BUS_ADDRESS"]
        # a window on one display does not appear on the other
        app = a.spawn(["xlogo", "-geometry", "100x100+0+0"], log_name="xlogo")
        a.find_window("xlogo", 20, app)
        out = subprocess.run(
            ["xdotool", "search", "--name", "xlogo"], env=b.env, capture_output=True, text=True
        )
        assert out.stdout.strip() == ""
        # input goes to its own display
        a.xdotool("mousemove", "10", "20")
        b.xdotool("mousemove", "30", "40")
        time.sleep(0.05)
        assert "x:10 y:20" in a.xdotool("getmouselocation")
        assert "x:30 y:40" in b.xdotool("getmouselocation")
    finally:
        a.close()
        b.close()


def test_the_screen_reader_reads_what_xwd_and_import_read(tmp_path: Path) -> None:
    """The default capture (`xlib`: the reader child) gives the pixels of a spawned `xwd`
    and ImageMagick `import`, crops, sees a window appear, and is stopped with the session;
    with the X server gone a read is an environment fault."""
    require_x11()
    s = X11Session(tmp_path, screen=(640, 400))
    assert s.capture == "xlib"
    s.start()
    try:
        app = s.spawn(["xlogo", "-geometry", "200x150+30+40", "-bg", "red"], log_name="xlogo")
        s.find_window("xlogo", 20, app)
        s.settle((640, 400), quiet_s=0.3, alive=app)
        frames = {}
        for capture in ("xlib", "xwd", "import"):
            s.capture = capture
            frames[capture] = s.frame((640, 400))
        assert frames["xlib"] == frames["xwd"] == frames["import"]
        s.capture = "xlib"
        raw, w, h, _ = s.frame((100, 60))
        assert (w, h) == (100, 60) and len(raw) == 100 * 60 * 3
        full = frames["xlib"][0]
        assert raw == b"".join(full[y * 640 * 3 : (y * 640 + 100) * 3] for y in range(60))
        reader = s._reader
        assert reader is not None and reader.proc is not None
        pid = reader.proc.pid
        assert _pid_alive(pid)
        os.kill(s._xvfb.pid, 9)  # type: ignore[union-attr]
        s._xvfb.wait()  # type: ignore[union-attr]
        with pytest.raises(EnvironmentFault, match="not running"):
            s.frame((640, 400))
        with pytest.raises(EnvironmentFault, match="reader"):
            reader.rgb(640, 400)  # the server is gone: the child exited
    finally:
        s.close()
    assert not _pid_alive(pid)
