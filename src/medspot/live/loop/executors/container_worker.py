"""The worker inside an environment container (`--executor container`):
`python -m medspot.live.loop.executors.container_worker --control DIR`.

It listens on `DIR/control.sock` (DIR is bind-mounted from the runner's private folder),
takes ONE connection and serves over it (`control`) the `env_actor.EnvironmentHost` of one
runner slot, the same host a Ray actor runs: first `hello` (the slot's config and index, and
the medspot the runner runs: another version or source is refused), then the host's methods.
It ends when the runner closes the channel, or dies: a watch thread sees the hang-up even
while a call never returns, and ends the worker after `HANGUP_GRACE_S`. The worker is the
only child of the container's init (`tini`), so the container, started with `--rm`, ends and
goes with it. A worker that nobody connects to ends after `ACCEPT_TIMEOUT_S`. Its log goes to
`DIR/worker.log`, which the runner shows when a container dies before it answers.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot._version import __version__
from medspot.errors import ConfigError
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.executors.control import SOCKET_NAME, picklable_error, receive, send
from medspot.live.loop.executors.env_actor import EnvironmentHost

__all__ = ["ACCEPT_TIMEOUT_S", "HOST_METHODS", "LOG_NAME", "WorkerHello", "main"]

log = logging.getLogger("medspot.live.container_worker")

LOG_NAME = "worker.log"
ACCEPT_TIMEOUT_S = 300.0  # a worker nobody connects to (its runner died while it started)
HANGUP_GRACE_S = 10.0  # a call still running when the runner hung up: then the worker ends
# what the runner may call: the host's methods (`EnvironmentHost`)
HOST_METHODS = frozenset(
    {"start", "reset", "prepare", "start_checks", "intended", "oracle_action", "locate", "step",
     "look", "echo", "close"}
)  # fmt: skip


@dataclass(frozen=True)
class WorkerHello:
    """The worker's answer to `hello`: what runs in the container."""

    version: str
    source: str
    hostname: str
    pid: int
    packages: dict[str, str] = field(default_factory=dict)  # the family's Debian packages


def _package_versions(names: Sequence[str]) -> dict[str, str]:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package}\t${Version}\n", *names],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = (line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)
    return {name: version for name, version in found if version}


def _hello(cfg: SlotConfig, version: str, source: str) -> WorkerHello:
    from medspot.live.envs.registry import env_entry
    from medspot.live.images.names import source_hash

    here = source_hash()
    if (version, source) != (__version__, here):
        raise ConfigError(
            f"the container runs medspot {__version__} (source {here}), the runner {version} "
            f"(source {source}): rebuild the image (medspot live image build --env {cfg.env})"
        )
    packages = _package_versions(env_entry(cfg.env).system_packages)
    return WorkerHello(__version__, here, socket.gethostname(), os.getpid(), packages)


class _Worker:
    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.host: EnvironmentHost | None = None
        self.busy = threading.Event()

    def watch(self) -> None:
        """End the worker when the runner hangs up while a call is still running."""
        poll = select.poll()
        poll.register(self.conn.fileno(), select.POLLRDHUP)
        while True:
            events = poll.poll(1000)
            if any(ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, ev in events):
                break
        deadline = time.monotonic() + HANGUP_GRACE_S
        while self.busy.is_set() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.busy.is_set():
            log.warning("the runner hung up during a call that did not end: stopping")
            os._exit(75)

    def answer(self, method: str, args: tuple[Any, ...]) -> Any:
        if method == "hello":
            cfg, index, version, source = args
            hello = _hello(cfg, version, source)
            self.host = EnvironmentHost(cfg, index)
            return hello
        if method not in HOST_METHODS:
            raise ConfigError(f"the container's worker has no method {method!r}")
        if self.host is None:
            raise RuntimeError("the worker was not greeted (hello) first")
        return getattr(self.host, method)(*args)

    def serve(self) -> int:
        threading.Thread(target=self.watch, name="medspot-hangup-watch", daemon=True).start()
        try:
            while True:
                try:
                    method, args = receive(self.conn)
                except (EOFError, ConnectionError, OSError):
                    log.info("the runner closed the channel")
                    return 0
                self.busy.set()
                try:
                    reply: tuple[bool, Any] = (True, self.answer(method, tuple(args)))
                except BaseException as e:  # handed to the runner, which decides
                    log.info("%s: %s: %s", method, type(e).__name__, e)
                    reply = (False, picklable_error(e))
                finally:
                    self.busy.clear()
                try:
                    send(self.conn, reply)
                except OSError:
                    return 0
        finally:
            if self.host is not None:
                self.host.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="medspot-container-worker", description=__doc__)
    p.add_argument("--control", required=True, type=Path, help="the bind-mounted folder")
    p.add_argument("--accept-timeout", type=float, default=ACCEPT_TIMEOUT_S)
    args = p.parse_args(argv)
    folder: Path = args.control
    logging.basicConfig(
        filename=folder / LOG_NAME, level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )  # fmt: skip
    path = folder / SOCKET_NAME
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0)  # the runner (another uid, rootless engines) must be able to connect
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(1)
    server.settimeout(args.accept_timeout)
    log.info("medspot %s worker listening on %s", __version__, path)
    try:
        conn, _ = server.accept()
    except TimeoutError:
        log.warning("nobody connected within %.0f s: stopping", args.accept_timeout)
        return 1
    finally:
        server.close()
        path.unlink(missing_ok=True)
    conn.settimeout(None)
    return _Worker(conn).serve()


if __name__ == "__main__":
    # run by `python -m`: this file is `__main__`; what it answers must be pickled by its
    # module's own name, so the worker is the imported module's
    from medspot.live.loop.executors import container_worker

    sys.exit(container_worker.main())
