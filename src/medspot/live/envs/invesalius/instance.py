"""One running InVesalius: its private X server and session bus (`X11Session`), its own HOME
(the interface language written, so no first-start dialog; an `exports` folder the file
dialogs open in), the application started by Debian's Python with the probe in its process,
the AT-SPI reader (`DesktopDriver`). Every process dies with the run
(`medspot.live.core.processes`; the probe asks the kernel to kill InVesalius's own workers
when InVesalius dies).

A started instance has imported its default study once and closed it: the "fresh" state every
reset compares the application with (`probe.reset_ui` / `ui_diff`) is that of an InVesalius
that has closed one project.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.drivers.desktop import DesktopDriver
from medspot.live.drivers.x11 import X11Session
from medspot.live.envs.invesalius.geometry import to_phantom
from medspot.live.envs.invesalius.phantoms import volume_values
from medspot.live.envs.invesalius.probe_client import PROBE_SCRIPT, ProbeClient

__all__ = ["APP_NAME", "INVESALIUS_DIR", "InvInstance", "SpareSeat", "retire"]

log = logging.getLogger(__name__)

INVESALIUS_DIR = Path("/usr/share/invesalius")
LIBRARY_DIR = Path("/usr/lib/invesalius")  # the compiled invesalius_cy
APP_NAME = "app.py"  # the application's name on AT-SPI (its argv[0])
WINDOW_TITLE = "InVesalius 3$"
_CONFIG = {
    "session": {"language": "en", "mode": 0, "status": 3, "debug": False, "random_id": 1,
                "surface_interpolation": 1, "rendering": 0, "slice_interpolation": 0,
                "auto_reload_preview": False},
    "project": {"recent_projects": []},
}  # fmt: skip
# InVesalius builds a surface in a `multiprocessing` pool whose manager listens on a Unix socket
# at $TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX; a socket's path is at most 107 bytes, so a
# TMPDIR longer than this (a deep run folder) fails every surface
MAX_TMPDIR = 107 - len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def private_tmp(workdir: Path) -> tuple[Path, bool]:
    """The TMPDIR of an InVesalius in `workdir`: `workdir/tmp`, or, where that path is too
    long for InVesalius's sockets (`MAX_TMPDIR`), a new private folder of this process in the
    system's temporary folder (or /tmp), which `close` removes, and a later run's sweep if this
    one is killed (`processes.WORKDIR_PREFIX`). Returns it and whether it is such a folder."""
    tmp = workdir / "tmp"
    if len(os.fsencode(tmp.absolute())) <= MAX_TMPDIR:
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp, False
    prefix = f"{processes.WORKDIR_PREFIX}invesalius-tmp-"
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + len(prefix) + 10 > MAX_TMPDIR:
        base = "/tmp"
    short = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    processes.claim(short)
    log.info("invesalius: %s is too long a TMPDIR for its sockets; using %s", tmp, short)
    return short, True


class InvInstance:
    """One InVesalius in `workdir` (its X session, HOME, probe port file)."""

    def __init__(
        self,
        workdir: Path,
        *,
        viewport: tuple[int, int],
        python: str,
        invesalius_dir: Path,
        start_timeout_s: float,
        settle_quiet_s: float,
        settle_timeout_s: float,
    ) -> None:
        self.workdir = Path(workdir)
        self.viewport = viewport
        self.python = python
        self.invesalius_dir = Path(invesalius_dir)
        self.start_timeout_s = start_timeout_s
        self.x11 = X11Session(self.workdir / "x11", screen=viewport)
        self.probe = ProbeClient(self.workdir / "probe.port")
        self.app: subprocess.Popen[bytes] | None = None
        self.desktop = DesktopDriver(
            self.x11, APP_NAME, viewport=viewport, alive=self.alive,
            settle_quiet_s=settle_quiet_s, settle_timeout_s=settle_timeout_s,
        )  # fmt: skip
        self.launch_s = 0.0
        self.tmp: Path | None = None  # its TMPDIR (`private_tmp`); close() removes one outside

    @property
    def home(self) -> Path:
        return self.x11.workdir / "home"

    @property
    def exports(self) -> Path:
        return self.home / "exports"

    def alive(self) -> subprocess.Popen[bytes]:
        if self.app is None:
            raise EnvironmentFault("InVesalius is not started")
        if self.app.poll() is not None:
            raise EnvironmentFault(f"InVesalius exited (status {self.app.returncode}); "
                                   f"see {self.x11.workdir / 'invesalius.log'}")  # fmt: skip
        if not self.x11.alive():
            raise EnvironmentFault("the X server died")
        return self.app

    def start(self, dicom: Path, expect_volume: str) -> None:
        """Start InVesalius, import `dicom` once (checking the image is the phantom
        `expect_volume`, oriented as `geometry` says), close it, record the fresh state."""
        t0 = time.monotonic()
        if not (self.invesalius_dir / "app.py").exists():
            raise EnvironmentFault(f"{self.invesalius_dir}/app.py missing "
                                   "(apt-get install invesalius)")  # fmt: skip
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.x11.start()
        cfg = self.home / ".config" / "invesalius"
        cfg.mkdir(parents=True, exist_ok=True)
        conf = dict(_CONFIG, paths={"homedir": str(self.home), "tempdir": str(self.home),
                                    "last_dicom_folder": ""})  # fmt: skip
        (cfg / "config.json").write_text(json.dumps(conf, indent=1), encoding="utf-8")
        self.exports.mkdir(exist_ok=True)
        tmp, _ = private_tmp(self.workdir)
        self.tmp = tmp
        self.probe.port_file.unlink(missing_ok=True)
        env = {
            "GDK_BACKEND": "x11", "PYTHONPATH": str(LIBRARY_DIR), "GTK_MODULES": "gail:atk-bridge",
            "INVESALIUS_DIR": str(self.invesalius_dir), "TMPDIR": str(tmp),
            **self.probe.env(),
        }  # fmt: skip
        self.app = self.x11.spawn([self.python, str(PROBE_SCRIPT)], log_name="invesalius",
                                  extra_env=env, cwd=self.invesalius_dir)  # fmt: skip
        deadline = time.monotonic() + self.start_timeout_s
        while not self.probe.listening():
            self.alive()
            if time.monotonic() > deadline:
                raise EnvironmentFault("the InVesalius probe never listened")
            time.sleep(0.05)
        while not (self.probe.wait("ping", None, deadline, "start") or {}).get("frame"):
            self.alive()
            time.sleep(0.1)
        wid = self.x11.find_window(
            WINDOW_TITLE, max(1.0, deadline - time.monotonic()), self.alive()
        )
        self.x11.place_window(wid, self.viewport)
        self.desktop.window = wid
        self.probe.wait("reset_ui", {"cwd": str(self.exports)}, deadline, "the first reset")
        self.probe.wait("load_start", {"dicom": str(dicom)}, deadline, "the first import")
        self._check_orientation(expect_volume, deadline)
        self.probe.wait("reset_ui", {"cwd": str(self.exports)}, deadline, "the first close")
        self.probe.wait("ui_diff", {"record": True}, deadline, "recording the fresh state")
        self.launch_s = time.monotonic() - t0
        log.info("invesalius: started in %.1f s (%s)", self.launch_s, self.workdir.name)

    def _check_orientation(self, vol: str, deadline: float) -> None:
        """The imported image is the phantom, in the index order `geometry` assumes."""
        step = 8
        got = self.probe.wait("image_sample", {"step": step}, deadline, "reading the image")
        arr = np.frombuffer(base64.b64decode(got["data"]), "<i2").reshape(got["shape"])
        want = to_phantom(volume_values(vol))[::step, ::step, ::step]
        if arr.shape != want.shape or float(np.abs(arr - want).max()) > 2:
            raise EnvironmentFault(
                f"InVesalius imported {vol} differently from the phantom (orientation or "
                "values): the checks would misjudge"
            )

    def close(self) -> None:
        self.probe.close()
        self.desktop.close()
        if self.app is not None:
            self.x11.stop(self.app)
            self.app = None
        self.x11.close()
        processes.stop_folder(self.workdir)
        if self.tmp is not None and not self.tmp.is_relative_to(self.workdir):
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp = None


class SpareSeat:
    """A second InVesalius started on a thread of its own (a child's parent-death signal
    follows the thread that started it, so the thread waits until `release()`)."""

    def __init__(self, twin: InvInstance, dicom: Path, vol: str) -> None:
        self.twin = twin
        self.error: BaseException | None = None
        self._up = threading.Event()
        self._released = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(dicom, vol), daemon=True,
                                        name="medspot-invesalius-spare")  # fmt: skip
        self._thread.start()

    def _run(self, dicom: Path, vol: str) -> None:
        try:
            self.twin.start(dicom, vol)
            self.twin.desktop.tree()  # the AT-SPI reader started on this thread too
        except BaseException as exc:  # reported by ready(); the caller restarts instead
            self.error = exc
        finally:
            self._up.set()
        self._released.wait()

    def ready(self, timeout_s: float) -> InvInstance | None:
        self._up.wait(timeout_s)
        if not self._up.is_set() or self.error is not None:
            log.info("invesalius: no spare (%s)", self.error or "still starting")
            return None
        try:
            self.twin.alive()
        except EnvironmentFault as exc:
            log.info("invesalius: the spare died (%s)", exc)
            return None
        return self.twin

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        processes.stop_folder(self.twin.workdir)
        self._up.wait(10)
        self.twin.close()
        self.release()


def retire(inst: InvInstance, seat: SpareSeat | None) -> None:
    """Stop a used instance on a daemon thread; a former spare's folder is removed and its
    seat's thread released."""

    def stop() -> None:
        try:
            inst.close()
        finally:
            if seat is not None:
                seat.release()
                shutil.rmtree(inst.workdir, ignore_errors=True)

    threading.Thread(target=stop, name="medspot-invesalius-retire", daemon=True).start()
