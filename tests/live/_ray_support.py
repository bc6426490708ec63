"""Helpers of the Ray executor tests: Ray required like the other live parts, a cluster of two
nodes started with `ray start` on this machine (and stopped by process id, never by name), the
environment actors of the running test found through Ray, and the Ray processes a test left."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _orthanc_support import require_live
from _runner_support import descendants, kill, processes_mentioning

REPO = Path(__file__).resolve().parents[2]
# Token authentication, as on a real cluster (Ray 2.59+ uses it for local clusters anyway). Ray
# reads the mode when it is imported: a driver that joins a cluster started with `ray start`
# must have it in its environment before `import ray` (setting it later is not seen).
os.environ.setdefault("RAY_AUTH_MODE", "token")


def require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        require_live(False, "the python package ray (pip install 'medspot[ray]')")


def ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop_processes_under(folder: Path, timeout_s: float = 20.0) -> list[int]:
    """Stop every process whose command line names `folder` (Ray's processes name their
    session folder) and everything below them (actors, the environments' processes): SIGTERM,
    then SIGKILL what is left. Returns the pids that were found."""
    found = processes_mentioning(str(folder))
    pids = set(found)
    for p in found:
        pids.update(descendants(p))
    kill(sorted(pids), signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    kill([p for p in pids if _alive(p)])
    return sorted(pids)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    """`pids` still alive after `timeout_s` (Ray's subreaper kills a dead actor's processes
    within about 10 s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.3)
    return [p for p in pids if _alive(p)]


def env_actors() -> list[Any]:
    """The environment actors of this process's Ray connection (named `medspot-env-...`)."""
    import ray

    from medspot.live.loop.executors.ray_actors import ACTOR_PREFIX, NAMESPACE

    names = ray.util.list_named_actors(all_namespaces=True)
    out = []
    for entry in names:
        name, ns = (entry["name"], entry["namespace"]) if isinstance(entry, dict) else (entry, "")
        if ns == NAMESPACE and name.startswith(ACTOR_PREFIX):
            with contextlib.suppress(ValueError):
                out.append(ray.get_actor(name, namespace=NAMESPACE))
    return out


@dataclass
class TwoNodes:
    """A head without any environment resource and a worker that declares what
    `medspot live doctor --ray-resources` prints, both on this machine."""

    folder: Path
    port: int
    env: dict[str, str]
    worker_resources: dict[str, int] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def _ray_start(args: list[str], env: dict[str, str]) -> None:
    out = subprocess.run([ray_bin(), "start", *args], env=env, capture_output=True, text=True,
                         timeout=300, check=False)  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]


@contextlib.contextmanager
def two_nodes(folder: Path) -> Iterator[TwoNodes]:
    """`ray start --head` and `ray start --address`, stopped by process id at the end. Token
    authentication as on a real cluster: every node and the driver use the token of
    ~/.ray/auth_token (`ray get-auth-token --generate` makes it when missing; a local
    `ray.init` uses the same file)."""
    env = dict(
        os.environ, TMPDIR=str(folder), PYTHONPATH=str(REPO / "src"), RAY_AUTH_MODE="token",
        RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper="true",
    )  # fmt: skip
    subprocess.run([ray_bin(), "get-auth-token", "--generate"], env=env, capture_output=True,
                   timeout=120, check=True)  # fmt: skip
    port = free_port()
    doctor = subprocess.run(
        [sys.executable, "-m", "medspot", "live", "doctor", "--env", "orthanc-explorer",
         "--ray-resources"], env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert doctor.returncode == 0, doctor.stderr
    resources = json.loads(doctor.stdout)
    nodes = TwoNodes(folder, port, env, resources)
    common = ["--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    try:
        _ray_start(["--head", f"--port={port}", "--include-dashboard=false", "--num-cpus=1",
                    "--resources={}", *common], env)  # fmt: skip
        _ray_start([f"--address={nodes.address}", "--num-cpus=2",
                    f"--resources={doctor.stdout.strip()}", *common], env)  # fmt: skip
        yield nodes
    finally:
        stop_processes_under(folder)
