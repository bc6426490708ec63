"""`--executor container`: every environment slot runs in a container of its family's image
(`medspot.live.images`), a worker inside serving the same `env_actor.EnvironmentHost` a Ray
actor runs (the slot's instance and its spares) over a unix socket (`control`).

The runner's process keeps the agent, the journal and the run folder; a `RemoteEpisode`
stands in for the container's `Episode`, each call one round trip, bounded by the call
timeout. A container started per slot (a fresh one after a fault):

    <engine> run -d --rm --network none --memory M --memory-swap M --cpus C --pids-limit N
      --shm-size 1g --cap-drop ALL --security-opt no-new-privileges   (the image's user: medspot)
      --label org.medspot.live.run=RUN --label org.medspot.live.owner=HOST/NS/PID/START
      -v <the slot's private folder>:/run/medspot-control IMAGE-ID python -m ...container_worker

No network at all: the only way in or out is the socket in the bind-mounted folder. A container
that cannot start, dies (its worker, an OOM kill) or hangs (a call past the timeout) is an
`EnvironmentFault` of that slot: the container is removed and the task retried on a fresh one,
as with threads. Nothing is left behind: a slot removes its container when it closes; a runner
that dies (SIGKILL) closes its end of the socket, and the worker, seeing the hang-up, ends and
its container goes (`--rm`); a container whose runner died before it connected ends after the
worker's accept timeout, and the next run's `sweep_dead_runs` removes at once every container
whose owner is dead. The image is checked before anything is written (`container_record`):
missing engine, missing or stale image is exit 2 naming the command that fixes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pickle
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medspot._version import __version__
from medspot.errors import ConfigError, MedspotError
from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.processes import WORKDIR_PREFIX
from medspot.live.images.check import require_image
from medspot.live.images.engine import Engine, ImageInfo, find_engine
from medspot.live.images.names import (
    CONTAINER_ENV_LABEL,
    CONTAINER_OWNER_LABEL,
    CONTAINER_RUN_LABEL,
    source_hash,
)
from medspot.live.loop.executors.base import SlotConfig, fault_from
from medspot.live.loop.executors.container_worker import LOG_NAME, WorkerHello
from medspot.live.loop.executors.control import SOCKET_NAME, receive, send
from medspot.live.loop.executors.options import (
    DEFAULT_CONTAINER_CPUS,
    DEFAULT_CONTAINER_MEMORY,
    ContainerOptions,
)
from medspot.live.loop.executors.remote import RemoteSlot
from medspot.runfolder.live_schema import ContainerImage, ContainerRun

__all__ = [
    "CONTROL_MOUNT",
    "ContainerExecutor",
    "ContainerSlot",
    "container_record",
    "owner_label",
    "sweep_dead_runs",
]

log = logging.getLogger(__name__)

CONTROL_MOUNT = "/run/medspot-control"  # the slot's folder inside the container
WORKER_ARGV = ("python", "-m", "medspot.live.loop.executors.container_worker")
PIDS_LIMIT = 4096  # processes and threads in one container (a browser has a few hundred)
SHM_SIZE = "1g"  # chromium's and a Ray node's shared memory
CLOSE_TIMEOUT_S = 60.0  # a graceful close before the container is removed
_SOCKET_PATH_MAX = 100  # a unix socket's path is at most 107 bytes


class _HostMethods:
    """The handle `RemoteEpisode` holds: its attributes are the host's method names."""

    def __getattr__(self, name: str) -> str:
        return name


def _socket_base(workroot: Path | None) -> Path:
    """Where the slots' folders go: the run's work root, else the temporary folder, else /tmp,
    the first short enough for the socket's path inside (a unix socket's path is at most 107
    bytes: a long $TMPDIR would make every connection fail)."""
    for base in (workroot, Path(tempfile.gettempdir()), Path("/tmp")):
        if base is not None and len(str(base.resolve())) <= _SOCKET_PATH_MAX - 48:
            return base
    raise ConfigError(
        f"no folder for the containers' sockets: {workroot or tempfile.gettempdir()} and /tmp "
        f"are too long for a unix socket's path ({_SOCKET_PATH_MAX} bytes)"
    )


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def owner_label() -> str:
    """This process as a container's owner: host, pid namespace, pid, start time."""
    me = processes.stamp(os.getpid())
    start = me.start if me is not None else 0
    return f"{socket.gethostname()}/{_pid_namespace()}/{os.getpid()}/{start}"


def _owner_dead(label: str) -> bool:
    """Whether the owner a label names is a dead process of this host (False where it cannot
    be told: another host, another pid namespace, a label medspot did not write)."""
    try:
        host, ns, pid, start = label.split("/")
        stamp = processes.ProcStamp(int(pid), int(start))
    except ValueError:
        return False
    if host != socket.gethostname() or ns != _pid_namespace():
        return False
    return not processes.running(stamp)


def sweep_dead_runs(engine: Engine) -> list[str]:
    """Remove every container of a live run whose runner is dead (killed before it could);
    returns their names."""
    dead = [c for c in engine.containers(CONTAINER_OWNER_LABEL)
            if _owner_dead(c.labels.get(CONTAINER_OWNER_LABEL, ""))]  # fmt: skip
    engine.remove_containers([c.id for c in dead])
    for c in dead:
        log.info("removed the container %s of a dead run", c.name)
    return [c.name for c in dead]


def _image_record(info: ImageInfo) -> ContainerImage:
    labels = info.labels
    assert labels is not None  # `require_image` refuses an image without them
    return ContainerImage(
        ref=info.ref, id=info.id, digest=info.digest, medspot_version=labels.version,
        source=labels.source, packages=dict(labels.packages), pinned=labels.pinned,
        base=labels.base,
    )  # fmt: skip


def container_record(env: str, opts: ContainerOptions) -> ContainerRun:
    """The engine and the image a run of `env` will use, checked (exit 2 when the engine is
    missing, the image missing or stale): run.json's `container`."""
    engine = find_engine(opts.engine)
    info = require_image(engine, env, opts.image)
    return ContainerRun(
        engine=engine.name, engine_version=engine.version, images={env: _image_record(info)}
    )


class ContainerSlot(RemoteSlot):
    """One container (its worker's `EnvironmentHost`); a fresh one after a fault."""

    def __init__(
        self,
        index: int,
        cfg: SlotConfig,
        on_started: Callable[[], None],
        *,
        owner: ContainerExecutor,
    ) -> None:
        super().__init__(index, cfg, on_started)
        self._x = owner
        self._made = 0
        self._handle = _HostMethods()
        self.name: str | None = None  # the current container
        self._cid: str | None = None
        self._conn: socket.socket | None = None
        self._folder: Path | None = None
        self.hello: WorkerHello | None = None

    # -- one round trip ---------------------------------------------------------------------

    def _exchange(self, conn: socket.socket, method: str, args: tuple[Any, ...]) -> Any:
        try:
            send(conn, (method, args))
            ok, value = receive(conn)
        except (EOFError, ConnectionError, OSError, pickle.UnpicklingError, ValueError) as e:
            raise EnvironmentFault(
                f"{self.cfg.env}: the container {self.name} stopped answering ({method}: "
                f"{type(e).__name__}){self._last_words()}"
            ) from None
        if ok:
            return value
        if isinstance(value, MedspotError):
            raise value
        raise fault_from(self.cfg.env, value)

    def remote(self, method: Any, *args: Any) -> Any:
        conn = self._conn
        if conn is None:
            raise EnvironmentFault(f"{self.cfg.env}: the environment's container is gone")
        return self._exchange(conn, str(method), args)

    def _last_words(self) -> str:
        """The end of the worker's log (why a container ended), for a fault's message."""
        if self._folder is None:
            return ""
        try:
            lines = (self._folder / LOG_NAME).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its worker's log ends: {lines[-1][-300:]}" if lines else ""

    # -- the container's life ---------------------------------------------------------------

    def _run_argv(self, name: str, folder: Path) -> list[str]:
        x = self._x
        labels = {CONTAINER_RUN_LABEL: x.run_id, CONTAINER_OWNER_LABEL: x.owner,
                  CONTAINER_ENV_LABEL: self.cfg.env}  # fmt: skip
        argv = [
            "run", "-d", "--rm", "--name", name, "--network", "none",
            "--memory", x.memory, "--memory-swap", x.memory, "--cpus", f"{x.cpus:g}",
            "--pids-limit", str(PIDS_LIMIT), "--shm-size", SHM_SIZE, "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "-v", f"{folder}:{CONTROL_MOUNT}",
        ]  # fmt: skip
        for key, value in labels.items():
            argv += ["--label", f"{key}={value}"]
        return [*argv, x.image_id, *WORKER_ARGV, "--control", CONTROL_MOUNT]

    def _running(self) -> bool:
        if self._cid is None:
            return False
        out = self._x.engine.run("container", "inspect", "--format", "{{.State.Running}}",
                                 self._cid)  # fmt: skip
        return out.returncode == 0 and out.stdout.decode().strip() == "true"

    def _start(self) -> WorkerHello:
        """Start the container, connect to its worker and greet it (in the slot's thread)."""
        x = self._x
        self._made += 1
        self.name = f"medspot-env-{self.cfg.env}-{x.run_id}-{self.index}-{self._made}"
        self._folder = folder = x.new_folder(f"s{self.index}-{self._made}")
        deadline = time.monotonic() + self.cfg.call_timeout_s
        try:
            out = x.engine.run(*self._run_argv(self.name, folder), timeout=self.cfg.call_timeout_s)
        except subprocess.TimeoutExpired:
            raise EnvironmentFault(
                f"{self.cfg.env}: `{x.engine.name} run` did not return"
            ) from None
        if out.returncode != 0:
            err = (out.stderr or out.stdout).decode(errors="replace").strip().splitlines()
            raise EnvironmentFault(
                f"{self.cfg.env}: the container {self.name} did not start: "
                f"{err[-1] if err else out.returncode}"
            )
        self._cid = out.stdout.decode().strip()
        self._conn = self._connect(folder / SOCKET_NAME, deadline)
        slot_cfg = dataclasses.replace(self.cfg, workroot=None)
        hello: WorkerHello = self.remote("hello", slot_cfg, self.index, __version__, x.source)
        return hello

    def _connect(self, path: Path, deadline: float) -> socket.socket:
        checked = time.monotonic()
        while True:
            if path.exists():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(str(path))
                    return s
                except OSError:
                    s.close()
            now = time.monotonic()
            if now > deadline:
                raise EnvironmentFault(
                    f"{self.cfg.env}: the worker in the container {self.name} did not listen "
                    f"within {self.cfg.call_timeout_s:.0f} s{self._last_words()}"
                )
            if now - checked > 1.0:
                checked = now
                if not self._running():
                    raise EnvironmentFault(
                        f"{self.cfg.env}: the container {self.name} ended before its worker "
                        f"listened{self._last_words()}"
                    )
            time.sleep(0.05)

    async def ensure(self) -> Any:
        if self._conn is None:
            if self._cid is not None or self._folder is not None:  # one that failed to start
                await self.discard()
            self.on_started()
            self.hello = await self.call(self._start)
            self.state = None
            await self.call(self.remote, "start")
            log.info("%s: environment container %s (%s, image %s)", self.cfg.env, self.name,
                     self._cid and self._cid[:12], self._x.image_id[:19])  # fmt: skip
        return self._handle

    def host_handle(self) -> Any:
        return self._handle if self._conn is not None else None

    def _close_host(self, conn: socket.socket) -> None:
        previous = conn.gettimeout()
        conn.settimeout(min(CLOSE_TIMEOUT_S, self.cfg.call_timeout_s))
        try:
            self._exchange(conn, "close", ())
        finally:
            conn.settimeout(previous)

    def _remove(self, cid: str | None, conn: socket.socket | None, folder: Path | None) -> None:
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if cid is not None:
            self._x.engine.remove_containers([cid])
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    async def discard(self) -> None:
        cid, conn, folder = self._cid, self._conn, self._folder
        self._cid, self._conn, self._folder, self.hello = None, None, None, None
        if cid is None and conn is None and folder is None:
            return
        if conn is not None:
            self.forget_host()
            if not self._renew_pool_if_stuck():  # a stuck one is removed without a word
                try:
                    await self.call(self._close_host, conn)
                except Exception as e:  # closing a broken environment may fail too
                    log.warning("%s: closing a failed environment: %s", self.cfg.env, e)
        else:
            self._renew_pool_if_stuck()
        await asyncio.to_thread(self._remove, cid, conn, folder)


class ContainerExecutor:
    """Finds the engine, checks the image and makes container slots."""

    name = "container"

    def __init__(self, cfg: SlotConfig, opts: ContainerOptions) -> None:
        self.cfg = cfg
        self.opts = opts
        self.memory = opts.memory or DEFAULT_CONTAINER_MEMORY
        self.cpus = opts.cpus if opts.cpus is not None else DEFAULT_CONTAINER_CPUS
        self.run_id = uuid.uuid4().hex[:8]
        self.owner = owner_label()
        self.source = source_hash()
        self._engine: Engine | None = None
        self._image: ImageInfo | None = None
        self._root: Path | None = None

    @property
    def engine(self) -> Engine:
        assert self._engine is not None, "open() first"
        return self._engine

    @property
    def image_id(self) -> str:
        assert self._image is not None, "open() first"
        return self._image.id

    def open(self, slots: int) -> int:
        self._engine = find_engine(self.opts.engine)
        self._image = require_image(self._engine, self.cfg.env, self.opts.image)
        sweep_dead_runs(self._engine)
        base = _socket_base(self.cfg.workroot)
        base.mkdir(parents=True, exist_ok=True)
        processes.sweep(base)  # the folders of dead runs' containers
        self._root = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}containers-", dir=base))
        processes.claim(self._root)
        return slots

    def new_folder(self, name: str) -> Path:
        """A slot container's folder (bind-mounted): writable by the image's user."""
        assert self._root is not None, "open() first"
        folder = self._root / name
        folder.mkdir()
        folder.chmod(0o777)
        return folder

    def slot(self, index: int, on_started: Callable[[], None]) -> ContainerSlot:
        return ContainerSlot(index, self.cfg, on_started, owner=self)

    def close(self) -> None:
        if self._engine is not None:  # what a slot could not remove (an interrupted close)
            left = self._engine.containers(f"{CONTAINER_RUN_LABEL}={self.run_id}")
            self._engine.remove_containers([c.id for c in left])
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
