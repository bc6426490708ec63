"""Where a live run's environments run: `threads` (this process, the default) or `ray` (Ray
actors, on this machine or a cluster; `pip install 'medspot[ray]'`). See `base` for the slot
interface the runner uses. Light to import (the command line reads the names here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from medspot.errors import ConfigError

if TYPE_CHECKING:
    from medspot.live.loop.executors.base import Executor, SlotConfig

__all__ = [
    "DEFAULT_RAY_CPUS_PER_ENV",
    "EXECUTORS",
    "ExecutorName",
    "check_executor_options",
    "create_executor",
]

ExecutorName = Literal["threads", "ray"]  # also `runfolder.live_schema.LiveExecutor`
EXECUTORS: tuple[ExecutorName, ...] = get_args(ExecutorName)
# CPUs (Ray's logical CPUs) an environment actor asks for: one environment per core is the
# safe plan for a cluster (orthanc-explorer measured at about 0.7 cores here, DICOMscope's
# Java viewer more; benchmarks/README.md sections 6 and 8).
DEFAULT_RAY_CPUS_PER_ENV = 1.0


def check_executor_options(
    name: str, ray_address: str | None = None, ray_cpus_per_env: float | None = None
) -> None:
    """The executor options of a run, checked before anything starts (ConfigError)."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r} (known: {', '.join(EXECUTORS)})")
    if name == "threads" and (ray_address is not None or ray_cpus_per_env is not None):
        given = "--ray-address" if ray_address is not None else "--ray-cpus-per-env"
        raise ConfigError(f"{given} needs --executor ray")
    if ray_cpus_per_env is not None and not ray_cpus_per_env >= 0:
        raise ConfigError(f"--ray-cpus-per-env {ray_cpus_per_env}: must be 0 or more")
    if name == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--executor ray needs Ray: pip install 'medspot[ray]' (or run with "
                "--executor threads)"
            ) from None


def create_executor(
    name: str,
    cfg: SlotConfig,
    *,
    ray_address: str | None = None,
    ray_cpus_per_env: float | None = None,
) -> Executor:
    """The executor `name`; the Ray options only go with `ray`."""
    check_executor_options(name, ray_address, ray_cpus_per_env)
    if name == "threads":
        from medspot.live.loop.executors.threads import ThreadExecutor

        return ThreadExecutor(cfg)
    from medspot.live.loop.executors.ray_actors import RayExecutor

    cpus = DEFAULT_RAY_CPUS_PER_ENV if ray_cpus_per_env is None else ray_cpus_per_env
    return RayExecutor(cfg, address=ray_address, cpus_per_env=cpus)
