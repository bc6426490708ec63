"""`--executor ray`: every environment is a Ray actor (`env_actor.EnvironmentHost`), placed
only on nodes that declare the environment's resource (`placement`), anywhere in a cluster.

The runner's process keeps the agent, the journal and the run folder; a slot holds one actor
and a `RemoteEpisode` stands in for the actor's `Episode` (each call one actor round trip,
waited for in the slot's thread and bounded by the call timeout). A dead actor, a lost node,
a lost object or a call that never returns is an `EnvironmentFault`: the actor is killed and
the task retried on a fresh one, exactly as with threads. By default a local cluster is
started on this machine (and stopped at the end); `--ray-address auto` or `HOST:PORT` joins one:
its head was reached before anything was written (`executors.check_ray_address`), and the
connection is made in a helper thread that this one waits for in short steps, so that Ctrl-C
and SIGTERM stop it at once (Ray's own wait, in C++, sees neither), bounded by
`CONNECT_TIMEOUT_S`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import ray
import ray.exceptions

from medspot._version import __version__
from medspot.errors import ConfigError, MedspotError
from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.loop.executors.base import (
    SlotConfig,
    fault_from,
    timeout_fault,
)
from medspot.live.loop.executors.env_actor import ActorPlace, EnvironmentHost
from medspot.live.loop.executors.placement import ENV_RESOURCE_UNITS, resource_name
from medspot.live.loop.executors.remote import RemoteEpisode, RemoteSlot

__all__ = ["NAMESPACE", "RayExecutor", "RaySlot", "RemoteEpisode"]

log = logging.getLogger(__name__)
T = TypeVar("T")

NAMESPACE = "medspot"  # the Ray namespace of the environment actors (`ray list actors`)
ACTOR_PREFIX = "medspot-env-"  # actor names: medspot-env-<env>-<run>-<slot>-<n>
LOCAL_OBJECT_STORE_BYTES = 128 * 1024**2  # screens are a few hundred kB, passed through
CLOSE_TIMEOUT_S = 60.0  # a graceful close before the actor is killed
CONNECT_TIMEOUT_S = 120.0  # joining a cluster (Ray's own retries last about 14 minutes)


class RaySlot(RemoteSlot):
    """One environment actor; a fresh one after a fault."""

    def __init__(
        self,
        index: int,
        cfg: SlotConfig,
        on_started: Callable[[], None],
        *,
        actor_class: Any,
        cpus: float,
        run_id: str,
    ) -> None:
        super().__init__(index, cfg, on_started)
        self._actor_class = actor_class
        self._cpus = cpus
        self._run_id = run_id
        self._made = 0
        self.actor: Any = None
        self.place: ActorPlace | None = None

    def remote(self, method: Any, *args: Any) -> Any:
        """`method.remote(*args)` and wait for its answer (in the slot's thread), bounded by
        the call timeout; Ray's failures are environment faults, the actor's medspot errors
        are raised as they are."""
        name = getattr(method, "_method_name", None) or "call"
        try:
            return ray.get(method.remote(*args), timeout=self.cfg.call_timeout_s)
        except ray.exceptions.GetTimeoutError:
            self._stuck = True
            raise timeout_fault(self.cfg.env, name, self.cfg.call_timeout_s) from None
        except ray.exceptions.RayTaskError as e:  # the actor's method raised
            cause = e.cause
            if isinstance(cause, MedspotError):
                raise cause from None
            raise fault_from(self.cfg.env, cause or e) from None
        except ray.exceptions.RayError as e:  # actor died, node lost, object lost, ...
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise EnvironmentFault(
                f"{self.cfg.env}: the environment's actor failed ({type(e).__name__}): {first}"
            ) from None

    async def ensure(self) -> Any:
        if self.actor is None:
            self._made += 1
            name = f"{ACTOR_PREFIX}{self.cfg.env}-{self._run_id}-{self.index}-{self._made}"
            self.actor = self._actor_class.options(
                name=name, namespace=NAMESPACE, num_cpus=self._cpus, num_gpus=0,
                resources={resource_name(self.cfg.env): 1}, max_restarts=0, max_task_retries=0,
            ).remote(self.cfg, self.index)  # fmt: skip
            self.on_started()
            place: ActorPlace = await self.call(self.remote, self.actor.start)
            self.place = place
            if place.medspot_version != __version__:
                raise ConfigError(
                    f"{self.cfg.env}: the node {place.hostname} runs medspot "
                    f"{place.medspot_version}, this process {__version__}; install the same "
                    "version on every node"
                )
            log.info("%s: environment actor %s on node %s (%s, pid %d)", self.cfg.env, name,
                     place.node_id, place.hostname, place.pid)  # fmt: skip
        return self.actor

    def host_handle(self) -> Any:
        return self.actor

    async def discard(self) -> None:
        actor, self.actor, self.place = self.actor, None, None
        if actor is None:
            return
        self.forget_host()
        if not self._renew_pool_if_stuck():  # a stuck actor is killed without a word
            try:
                await self.call(self._close, actor)
            except Exception as e:  # closing a broken environment may fail too
                log.warning("%s: closing a failed environment: %s", self.cfg.env, e)
        try:
            ray.kill(actor, no_restart=True)
        except Exception as e:  # already gone with its node
            log.debug("%s: ray.kill: %s", self.cfg.env, e)

    def _close(self, actor: Any) -> None:
        try:
            ray.get(actor.close.remote(), timeout=min(CLOSE_TIMEOUT_S, self.cfg.call_timeout_s))
        except ray.exceptions.RayError as e:
            raise EnvironmentFault(f"{self.cfg.env}: close: {type(e).__name__}") from None


@contextlib.contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Inside, Ctrl-C raises `KeyboardInterrupt` at once. `asyncio.run` answers Ctrl-C by
    cancelling its task, which a wait that never awaits (the runner opens the executor from
    its coroutine) would only see once the wait is over; an ignored SIGINT stays ignored."""
    import signal

    try:
        previous = signal.getsignal(signal.SIGINT)
        if previous is signal.SIG_IGN:
            yield
            return
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: no handler to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class RayExecutor:
    """Connects to (or starts) the Ray cluster and makes actor slots."""

    name = "ray"

    def __init__(self, cfg: SlotConfig, *, address: str | None, cpus_per_env: float) -> None:
        self.cfg = cfg
        self.address = address
        self.cpus = cpus_per_env
        self.run_id = uuid.uuid4().hex[:8]
        self._owns = False
        self._actor_class: Any = None

    def _where(self) -> str:
        return self.address or "a local cluster"

    def open(self, slots: int) -> int:
        if ray.is_initialized():  # a caller's own connection: used, left open
            self._owns = False
        else:
            self._init(slots)
            self._owns = True
        self._actor_class = ray.remote(EnvironmentHost)
        return self._fit(slots)

    def _init(self, slots: int) -> None:
        import signal

        kw: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": True}
        if self.address is None:  # a local cluster, only for this run, loopback, no dashboard
            need = math.ceil(slots * self.cpus)
            kw.update(
                address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
                num_cpus=max(os.cpu_count() or 1, need), num_gpus=0,
                resources={resource_name(self.cfg.env): ENV_RESOURCE_UNITS},
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                # an actor killed hard must not leave its browser and servers behind
                _system_config={"kill_child_processes_on_worker_exit_with_raylet_subreaper": True},
            )  # fmt: skip
        else:
            kw["address"] = self.address
        sigterm = signal.getsignal(signal.SIGTERM)
        subreaper = processes.child_subreaper()
        try:
            if self.address is None:
                ray.init(**kw)
            else:
                self._join(kw)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"--ray-address {self._where()}: cannot connect: {e}") from None
        finally:  # ray.init installs its own SIGTERM handler; the runner's stays in charge
            try:
                if signal.getsignal(signal.SIGTERM) is not sigterm and sigterm is not None:
                    signal.signal(signal.SIGTERM, sigterm)
            except ValueError:  # not the main thread: ray.init did not install one either
                pass
            # with the subreaper option the driver's SIGCHLD becomes SIG_IGN (from any
            # thread: Ray's core sets it): children are then reaped by the kernel, every later
            # `subprocess` sees exit status 0 and the children inherit the ignored SIGCHLD
            processes.default_sigchld()
            # ... and it makes the driver a child subreaper, for good (ray.shutdown leaves
            # it): the orphaned grandchildren of every later environment of this process
            # (chromium after its driver, the AT-SPI bus) would stay its zombies, never reaped
            processes.set_child_subreaper(subreaper)

    def _join(self, kw: dict[str, Any]) -> None:
        """`ray.init(**kw)` in a helper thread, waited for in steps of a fifth of a second
        (a signal stops the wait; the thread, a daemon, goes with the process), at most
        `CONNECT_TIMEOUT_S`."""
        failed: list[BaseException] = []

        def connect() -> None:
            try:
                ray.init(**kw)
            except BaseException as e:  # handed to the waiting thread
                failed.append(e)

        worker = threading.Thread(target=connect, name="medspot-ray-connect", daemon=True)
        worker.start()
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        with _ctrl_c_raises():
            while worker.is_alive():
                worker.join(0.2)
                if worker.is_alive() and time.monotonic() > deadline:
                    raise ConfigError(
                        f"--ray-address {self._where()}: the cluster did not take this driver "
                        f"within {CONNECT_TIMEOUT_S:g} s (is it a Ray head, of this Ray "
                        "version?)"
                    )
        if failed:
            raise failed[0]

    def _fit(self, slots: int) -> int:
        """How many of `slots` actors the cluster's nodes with the resource can hold."""
        res = resource_name(self.cfg.env)
        alive: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        nodes = [n for n in alive if n.get("Alive") and n["Resources"].get(res, 0) >= 1]
        if not nodes:
            raise ConfigError(
                f"no node of the Ray cluster ({self._where()}) declares the resource {res}: "
                "start every node that has the environment's applications with "
                '`ray start ... --resources "$(medspot live doctor --ray-resources)"` '
                "(docs/live/running.md, 'Run on a Ray cluster')"
            )
        fit = 0
        for n in nodes:
            units = int(n["Resources"][res])
            cpus = n["Resources"].get("CPU", 0.0)
            fit += units if self.cpus == 0 else min(units, int(cpus // self.cpus))
        if fit == 0:
            raise ConfigError(
                f"no node that declares {res} has {self.cpus:g} CPUs for an environment "
                "(--ray-cpus-per-env)"
            )
        if fit < slots:
            log.warning(
                "the Ray cluster holds %d %s environments at %g CPUs each: running %d side by "
                "side, not %d", fit, self.cfg.env, self.cpus, fit, slots,
            )  # fmt: skip
        return min(slots, fit)

    def slot(self, index: int, on_started: Callable[[], None]) -> RaySlot:
        return RaySlot(index, self.cfg, on_started, actor_class=self._actor_class,
                       cpus=self.cpus, run_id=self.run_id)  # fmt: skip

    def close(self) -> None:
        if self._owns and ray.is_initialized():
            ray.shutdown()
            if self.address is None:  # the local cluster's actors ran here: what a killed one
                processes.sweep(self.cfg.workroot or Path(tempfile.gettempdir()))  # left
        self._owns = False
