"""A private Orthanc as a plain process, its REST client, and the fast seeded reset.

`OrthancServer(workdir).start()` writes a config into `workdir` (free loopback HTTP port, DICOM
port off, no authentication, remote access off, storage/index/web-viewer cache in `workdir`,
the Debian plugins, DICOMweb on), starts `Orthanc CONFIG.json` and waits until REST answers.
`reset_to(seed)` brings the database to exactly the seeded instances: patients whose instances
differ are deleted and their stored files re-uploaded (Orthanc IDs are hashes of the DICOM UIDs,
so they stay stable), and a patient protected through the Explorer is unprotected again; no
finished job is kept (`JobsHistorySize` 0: the Explorer's Jobs page stays empty). Orthanc runs
in a process session of its own, with a parent-death signal and recorded in its workdir
(`medspot.live.core.processes`). A dead server raises `EnvironmentFault`; a request Orthanc
refuses (HTTP 4xx but 404, which is None) `OrthancRefused`, an `EnvironmentFault` to the
harness's own requests and the caller's mistake to a tool's (`envs.orthanc.tools`).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.services.seed import SeedSet

__all__ = ["OrthancIds", "OrthancRefused", "OrthancServer", "free_port", "orthanc_binary"]

log = logging.getLogger(__name__)
PLUGINS = "/usr/share/orthanc/plugins/"


class OrthancRefused(EnvironmentFault):
    """Orthanc answered a request with HTTP 4xx (but 404): it refused what it was sent."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def orthanc_binary() -> str | None:
    return shutil.which("Orthanc") or (
        "/usr/sbin/Orthanc" if os.access("/usr/sbin/Orthanc", os.X_OK) else None
    )


@dataclass(frozen=True, slots=True)
class OrthancIds:
    """Orthanc's IDs of the seeded resources, by catalogue name."""

    patients: dict[str, str]  # patient name -> Orthanc patient ID
    studies: dict[str, str]  # study name -> Orthanc study ID
    series: dict[str, str]  # "<study>/<series>" -> Orthanc series ID
    instances: dict[str, str]  # SOPInstanceUID -> Orthanc instance ID


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL, not SIGTERM: an instance's database and storage are its own and are deleted
    with its folder, so there is nothing to flush, and Orthanc's orderly shutdown waits about
    3.5 s in its own threads (the HTTP server's poll, the web viewer's finalizer) for nothing:
    a wait every run paid at its end and every environment at its close."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


class OrthancServer:
    """One Orthanc process serving `http://127.0.0.1:<port>`; used from one thread."""

    def __init__(self, workdir: Path, binary: str | None = None, timeout_s: float = 20.0) -> None:
        self.workdir = Path(workdir)
        self.binary = binary or orthanc_binary()
        self.timeout_s = timeout_s
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.ids: OrthancIds | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict[str, Any]:
        w = self.workdir
        return {
            "Name": f"medspot-live-{self.port}",
            "HttpPort": self.port,
            "DicomServerEnabled": False,
            "RemoteAccessAllowed": False,
            "AuthenticationEnabled": False,
            "StorageDirectory": str(w / "storage"),
            "IndexDirectory": str(w / "index"),
            "Plugins": [PLUGINS],
            "WebViewer": {"CachePath": str(w / "webviewer-cache"), "CacheSize": 100},
            "DicomWeb": {"Enable": True, "Root": "/dicom-web/", "EnableWado": True},
            "StableAge": 100000,  # no "Stable*" change events while a task runs
            "HttpThreadsCount": 16,
            "KeepAlive": True,
            "ConcurrentJobs": 1,
            "SaveJobs": False,
            "JobsHistorySize": 0,  # finished jobs are forgotten: nothing survives a reset
            # a stored instance is never rewritten (an upload with its UIDs is refused): a
            # seeded instance present under its ID holds its seeded content, so losing one
            # is the only change `orthanc.collateral_loss` has to see (Orthanc's default too)
            "OverwriteInstances": False,
        }

    def start(self) -> None:
        if self.binary is None:
            raise EnvironmentFault("Orthanc is not installed (apt-get install orthanc)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        err: str = ""
        for _attempt in range(3):  # a port taken between free_port() and bind: try another
            self.port = free_port()
            cfg = self.workdir / "orthanc.json"
            cfg.write_text(json.dumps(self.config(), indent=1), encoding="utf-8")
            with (self.workdir / "orthanc.log").open("wb") as logf:
                self.proc = processes.popen(
                    [self.binary, str(cfg)],
                    self.workdir,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=self.workdir,
                    start_new_session=True,
                )
            self._finalizer = weakref.finalize(self, _stop, self.proc)
            atexit.register(self._finalizer)
            try:
                self._wait_ready()
                return
            except EnvironmentFault as exc:
                err = str(exc)
                self.stop()
        raise EnvironmentFault(f"Orthanc did not start: {err}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise EnvironmentFault(f"Orthanc exited at start; see {self.workdir}/orthanc.log")
            try:
                self.get("/system", timeout=1.0)
                return
            except EnvironmentFault:
                time.sleep(0.05)
        raise EnvironmentFault(f"Orthanc REST did not answer within {self.timeout_s:.0f} s")

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def health(self) -> None:
        """Raise EnvironmentFault unless the process runs and REST answers."""
        if not self.alive():
            raise EnvironmentFault("Orthanc is not running (the process died)")
        self.get("/system", timeout=3.0)

    # -- REST ---------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> Any:
        """One REST call; JSON answers decoded. A 404 returns None; other failures fault."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                data = resp.read()
                ctype = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            if 400 <= exc.code < 500:
                raise OrthancRefused(
                    f"Orthanc {method} {path}: HTTP {exc.code}", exc.code
                ) from None
            raise EnvironmentFault(f"Orthanc {method} {path}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise EnvironmentFault(f"Orthanc {method} {path}: {exc}") from None
        if "json" in ctype and data:
            return json.loads(data)
        return data

    def get(self, path: str, timeout: float = 10.0) -> Any:
        return self.request("GET", path, timeout=timeout)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def upload(self, data: bytes) -> dict[str, Any]:
        ans = self.request("POST", "/instances", data, "application/dicom")
        if not isinstance(ans, dict) or "ID" not in ans:
            raise EnvironmentFault(f"Orthanc refused an upload: {ans!r}")
        return ans

    # -- seeding --------------------------------------------------------------------------------

    def seed(self, seed: SeedSet) -> OrthancIds:
        """Full reset: delete every patient, upload every seeded file; learn the IDs."""
        for pid in self.get("/patients") or []:
            self.delete(f"/patients/{pid}")
        self.ids = self._upload_all(seed, [p.name for p in seed.catalogue.patients])
        return self.ids

    def _upload_all(self, seed: SeedSet, patients: list[str]) -> OrthancIds:
        ids = self.ids or OrthancIds({}, {}, {}, {})
        for pname in patients:
            p = seed.catalogue.patient(pname)
            for s in p.studies:
                for se in s.series:
                    for uid in se.instance_uids:
                        ans = self.upload(seed.files[uid].read_bytes())
                        ids.instances[uid] = ans["ID"]
                        ids.series[se.name] = ans["ParentSeries"]
                    ids.studies[s.name] = ans["ParentStudy"]
            ids.patients[p.name] = ans["ParentPatient"]
        return ids

    def _unprotect(self) -> None:
        """Seeded patients are unprotected (the Explorer's patient page toggles protection)."""
        assert self.ids is not None
        present = set(self.get("/patients") or [])
        for pid in present & set(self.ids.patients.values()):
            if self.get(f"/patients/{pid}/protected") in (b"1", 1):
                self.request("PUT", f"/patients/{pid}/protected", b"0", "text/plain")

    def reset_to(self, seed: SeedSet) -> float:
        """Bring the database to exactly the seeded instances; returns the seconds it took.
        Same instance set as seeded: nothing to do. Otherwise patients with a missing or
        foreign instance are deleted and re-uploaded; foreign patients are deleted."""
        t0 = time.perf_counter()
        if self.ids is None:
            self.seed(seed)
            return time.perf_counter() - t0
        present = set(self.get("/instances") or [])
        expected = set(self.ids.instances.values())
        self._unprotect()
        if present == expected:
            return time.perf_counter() - t0
        redo: list[str] = []
        for p in seed.catalogue.patients:
            mine = {self.ids.instances[u] for s in p.studies for se in s.series
                    for u in se.instance_uids}  # fmt: skip
            if not mine <= present:
                redo.append(p.name)
        for iid in present - expected:  # e.g. modified copies, or a foreign patient
            info = self.get(f"/instances/{iid}/patient")
            name = info.get("MainDicomTags", {}).get("PatientName") if info else None
            if name in self.ids.patients:
                if name not in redo:
                    redo.append(name)
            elif info:
                self.delete(f"/patients/{info['ID']}")
        for name in redo:
            self.delete(f"/patients/{self.ids.patients[name]}")
        self._upload_all(seed, redo)
        return time.perf_counter() - t0
