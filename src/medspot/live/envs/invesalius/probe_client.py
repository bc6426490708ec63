"""The harness's side of the probe (`probe.py`, running inside InVesalius): one persistent
connection to 127.0.0.1, one JSON line per request and answer, every call bounded."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import time
from pathlib import Path
from typing import Any

from medspot.live.core.contract import EnvironmentFault

__all__ = ["PROBE_SCRIPT", "ProbeBusy", "ProbeClient"]

PROBE_SCRIPT = Path(__file__).with_name("probe.py")


class ProbeBusy(EnvironmentFault):
    """InVesalius's main thread did not run the request in time (it is computing)."""


class ProbeClient:
    def __init__(self, port_file: Path) -> None:
        self.port_file = Path(port_file)
        self.token = secrets.token_hex(16)
        self._sock: socket.socket | None = None
        self._file: Any = None

    def env(self) -> dict[str, str]:
        """The variables the probe reads from its environment."""
        return {"MEDSPOT_PROBE_FILE": str(self.port_file), "MEDSPOT_PROBE_TOKEN": self.token}

    def listening(self) -> bool:
        return self.port_file.exists()

    def _connect(self, timeout: float) -> None:
        try:
            port = int(self.port_file.read_text().strip())
        except (OSError, ValueError) as exc:
            raise EnvironmentFault(f"the InVesalius probe is not listening ({exc})") from None
        try:
            self._sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        except OSError as exc:
            raise EnvironmentFault(f"cannot reach the InVesalius probe: {exc}") from None
        self._file = self._sock.makefile("rwb")

    def call(self, op: str, args: dict[str, Any] | None = None, *, timeout: float = 10.0) -> Any:
        """The result of `op`; `ProbeBusy` when InVesalius's main thread did not run it within
        `timeout`; `EnvironmentFault` when the probe cannot be reached or the op failed."""
        if self._sock is None:
            self._connect(timeout + 5)
        assert self._sock is not None
        req = {"token": self.token, "op": op, "args": args or {}, "timeout": timeout}
        try:
            self._sock.settimeout(timeout + 5)
            self._file.write(json.dumps(req).encode() + b"\n")
            self._file.flush()
            line = self._file.readline()
        except OSError as exc:
            self.close()
            raise EnvironmentFault(f"the InVesalius probe went away during {op}: {exc}") from None
        if not line:
            self.close()
            raise EnvironmentFault(f"the InVesalius probe closed the connection during {op}")
        ans = json.loads(line)
        if ans.get("ok"):
            return ans.get("result")
        if ans.get("busy"):
            raise ProbeBusy(f"InVesalius is busy ({op}): {ans.get('error')}")
        raise EnvironmentFault(f"InVesalius probe {op}: {ans.get('error')}")

    def wait(self, op: str, args: dict[str, Any] | None, deadline: float, what: str) -> Any:
        """`call` repeated while InVesalius is busy, until `deadline` (monotonic)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EnvironmentFault(f"InVesalius: {what} (timed out)")
            try:
                return self.call(op, args, timeout=max(1.0, min(left, 30.0)))
            except ProbeBusy:
                continue

    def close(self) -> None:
        for obj in (self._file, self._sock):
            if obj is not None:
                with contextlib.suppress(OSError):
                    obj.close()
        self._file = self._sock = None
