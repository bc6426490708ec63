"""Where a live run's environments run: `threads` (this process, the default), `ray` (Ray
actors, on this machine or a cluster; `pip install 'medspot[ray]'`) or `container` (a
container of the environment's image per slot, podman or docker: `container`). See `base` for
the slot interface the runner uses. Light to import (the command line reads the names here)."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import urlsplit

from medspot.errors import ConfigError
from medspot.live.loop.executors.options import ContainerOptions, check_container_options

if TYPE_CHECKING:
    from medspot.live.loop.executors.base import Executor, SlotConfig
    from medspot.runfolder.live_schema import ContainerRun

__all__ = [
    "DEFAULT_RAY_CPUS_PER_ENV",
    "EXECUTORS",
    "ContainerOptions",
    "ExecutorName",
    "check_executor_options",
    "check_ray_address",
    "container_run",
    "create_executor",
]

ExecutorName = Literal["threads", "ray", "container"]  # also `runfolder.live_schema.LiveExecutor`
EXECUTORS: tuple[ExecutorName, ...] = get_args(ExecutorName)
# CPUs (Ray's logical CPUs) an environment actor asks for: one environment per core is the
# safe plan for a cluster (orthanc-explorer measured at about 0.7 cores here, DICOMscope's
# Java viewer more; benchmarks/README.md sections 6 and 8).
DEFAULT_RAY_CPUS_PER_ENV = 1.0
RAY_PROBE_TIMEOUT_S = 5.0  # a TCP connection to a cluster's head, before anything is written


def check_executor_options(
    name: str,
    ray_address: str | None = None,
    ray_cpus_per_env: float | None = None,
    container: ContainerOptions | None = None,
) -> None:
    """The executor options of a run, checked before anything starts (ConfigError); the
    container's engine and image are checked by `container_run`."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r} (known: {', '.join(EXECUTORS)})")
    if name != "ray" and (ray_address is not None or ray_cpus_per_env is not None):
        given = "--ray-address" if ray_address is not None else "--ray-cpus-per-env"
        raise ConfigError(f"{given} needs --executor ray")
    container = container or ContainerOptions()
    if name != "container" and container.given():
        raise ConfigError(f"{container.given()[0]} needs --executor container")
    check_container_options(container)
    if ray_cpus_per_env is not None and not ray_cpus_per_env >= 0:
        raise ConfigError(f"--ray-cpus-per-env {ray_cpus_per_env}: must be 0 or more")
    if ray_cpus_per_env is not None and not ray_cpus_per_env < float("inf"):
        raise ConfigError(f"--ray-cpus-per-env {ray_cpus_per_env}: must be a finite number")
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--executor ray needs Ray: pip install 'medspot[ray]' (or run with "
                "--executor threads)"
            ) from None
        if ray_address is not None:
            check_ray_address(ray_address)


def _resolved(address: str) -> str:
    """The address Ray will connect to for `address`: `$RAY_ADDRESS` wins over it, `auto`
    is the cluster started on this machine (Ray's own lookup)."""
    from ray._private import services

    try:
        return str(services.get_ray_address_from_environment(address, None))
    except ConnectionError as e:  # `auto` and no cluster on this machine
        raise ConfigError(
            f"--ray-address {address}: no running Ray cluster found ({e}); start one with "
            "`ray start --head`, or leave --ray-address out to start one for this run"
        ) from None


def check_ray_address(address: str, timeout_s: float = RAY_PROBE_TIMEOUT_S) -> None:
    """The head of the cluster at `address` (HOST:PORT, ray://HOST:PORT, `auto`) accepts a
    TCP connection within `timeout_s`, or a `ConfigError` naming the address typed (and the
    one Ray would use, when `$RAY_ADDRESS` or `auto` chose another)."""
    if not address.strip():
        raise ConfigError("--ray-address needs an address (HOST:PORT, ray://HOST:PORT, auto)")
    if address == "local":
        return
    try:
        target = _resolved(address)
    except ImportError:  # Ray's lookup moved: the address as typed
        target = address
    chosen = "" if target == address else f" (Ray would connect to {target}"
    if chosen and os.environ.get("RAY_ADDRESS"):
        chosen += ", from $RAY_ADDRESS"
    chosen += ")" if chosen else ""
    parts = urlsplit(target if "://" in target else "//" + target)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        host, port = None, None
    if not host or port is None:
        raise ConfigError(
            f"--ray-address {address}{chosen}: expected HOST:PORT of the cluster's head "
            "(like 10.0.0.5:6379), ray://HOST:PORT or auto"
        )
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise ConfigError(
            f"--ray-address {address}{chosen}: no Ray cluster answers at {host}:{port} "
            f"({why}, waited at most {timeout_s:g} s); start its head with `ray start --head "
            f"--port={port}`, or leave --ray-address out to start a local cluster for this run"
        ) from None


def container_run(env: str, container: ContainerOptions | None = None) -> ContainerRun:
    """The engine and image a container run of `env` uses, checked before anything is
    written (exit 2: no engine, no image, a stale one): run.json's `container`."""
    from medspot.live.loop.executors.container import container_record

    return container_record(env, container or ContainerOptions())


def create_executor(
    name: str,
    cfg: SlotConfig,
    *,
    ray_address: str | None = None,
    ray_cpus_per_env: float | None = None,
    container: ContainerOptions | None = None,
) -> Executor:
    """The executor `name`; the Ray options only go with `ray`, the container's with
    `container`."""
    check_executor_options(name, ray_address, ray_cpus_per_env, container)
    if name == "threads":
        from medspot.live.loop.executors.threads import ThreadExecutor

        return ThreadExecutor(cfg)
    if name == "container":
        from medspot.live.loop.executors.container import ContainerExecutor

        return ContainerExecutor(cfg, container or ContainerOptions())
    from medspot.live.loop.executors.ray_actors import RayExecutor

    cpus = DEFAULT_RAY_CPUS_PER_ENV if ray_cpus_per_env is None else ray_cpus_per_env
    return RayExecutor(cfg, address=ray_address, cpus_per_env=cpus)
