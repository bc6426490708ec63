"""`EnvSpec`: the environment a live run drives, in one frozen object, checked once.

What `live run`, `live serve`, `live audit`, `live export` and the Gymnasium environment share
about their environment: its name and options (typed by the environment's factory), the tasks
selected (their task file and its fingerprint), the toolset offered beside the GUI, where the
instances run (the executor and its options) and how many spares each slot keeps, the bound
of one environment call, and where the instances' private folders go. Each of them holds one
(`LiveRequest.spec`, `ServeOptions.spec`, ...), as BrowserGym's `ExpArgs` holds its `EnvArgs`.

    spec = EnvSpec("orthanc-explorer", env_options={"headless": "true"},
                   task_ids=("open-study-ct-doe-john",), executor=ExecutorSpec("ray"))

An `EnvSpec` is checked when it is made, in one place (`EnvSpec.__post_init__`), before
anything starts or is written: the environment's name, the spares and the call timeout against
`medspot.limits`, the executor and its options (Ray importable, a cluster's head reachable),
the toolset, the options (converted to the types the environment declares: `--env-option
quiet_s=0.5` is the number 0.5), the task file and the ids (an unknown id named with its
nearest one), the viewport against the tasks' screens, and with `--executor container` the
engine and the environment's image (present, and holding this medspot). An invalid spec cannot
exist; what the check found is its `tasks`, `task_file`, `fingerprint` and `container_run`
(the engine and the image, for run.json). The slots take the part they need (`slot_config`:
what a Ray actor receives).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.limits import MAX_SPARES, check_number, check_whole
from medspot.live.core.tasks import LiveTask, LiveTaskFile
from medspot.live.envs.envoptions import check_env_options, check_viewport
from medspot.live.envs.registry import env_entry
from medspot.live.envs.taskfiles import env_task_file, select_tasks
from medspot.live.envs.toolsets import toolset_info
from medspot.live.loop.executors import (
    ContainerOptions,
    ExecutorName,
    check_executor_options,
    container_run,
)
from medspot.live.loop.executors.base import DEFAULT_CALL_TIMEOUT_S, SlotConfig
from medspot.runfolder.live_schema import ContainerRun

__all__ = ["EnvSpec", "ExecutorSpec"]


@dataclass(frozen=True)
class ExecutorSpec:
    """Where a run's environments run (`--executor`) and that executor's own options (the
    others' stay None or their defaults): `ray_address` (None: a local cluster started for the
    run; `auto` or HOST:PORT joins one), `ray_cpus_per_env` (the CPUs an environment actor asks
    for), `container` (the engine, the image and the limits of each slot's container)."""

    name: ExecutorName = "threads"
    ray_address: str | None = None
    ray_cpus_per_env: float | None = None
    container: ContainerOptions = field(default_factory=ContainerOptions)

    def options(self) -> dict[str, Any]:
        """The executor's options, as `executors.create_executor` takes them."""
        return {"ray_address": self.ray_address, "ray_cpus_per_env": self.ray_cpus_per_env,
                "container": self.container}  # fmt: skip


@dataclass(frozen=True)
class EnvSpec:
    """The environment of a live run (module docstring): what is asked, checked when it is
    made; `tasks`, `task_file` and `fingerprint` are what the check found."""

    env: str
    env_options: Mapping[str, Any] = field(default_factory=dict)
    tasks_file: Path | None = None  # a task file (None: the environment's packaged tasks)
    task_ids: tuple[str, ...] = ()  # the tasks selected (none: every task of the file)
    tools: str | None = None  # the toolset offered beside the GUI (`--tools`), or none
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)
    # spare instances per slot, each prepared for one of the next tasks (`executors.seats`):
    # None the environment's `SparePlan` (`live serve`: none), 0 none, N that many
    spares: int | None = None
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S  # an environment call that never returns
    workroot: Path | None = None  # where the instances' private folders go (default: temp)
    tasks: tuple[LiveTask, ...] = field(init=False, repr=False, compare=False)
    task_file: LiveTaskFile = field(init=False, repr=False, compare=False)
    fingerprint: str = field(init=False, compare=False)
    # `--executor container`: the engine and the environment's image found (run.json's
    # `container`); None with the other executors
    container_run: ContainerRun | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """The one check of an environment spec (module docstring); a `ConfigError` or a
        `DataError` (a task file) naming what is wrong."""
        put = object.__setattr__  # frozen: the checked values replace what was given
        env_entry(self.env)
        if self.spares is not None:
            check_whole("--spares", self.spares, 0, MAX_SPARES)
        check_number("call timeout (s)", self.call_timeout_s, above=True)
        ex = self.executor
        check_executor_options(ex.name, **ex.options())
        if self.tools is not None:
            toolset_info(self.env, self.tools)
        put(self, "env_options", check_env_options(self.env, self.env_options))
        tasks_file = Path(self.tasks_file) if self.tasks_file is not None else None
        put(self, "tasks_file", tasks_file)
        put(self, "task_ids", tuple(self.task_ids))
        put(self, "workroot", Path(self.workroot) if self.workroot is not None else None)
        tf, fingerprint = env_task_file(self.env, tasks_file)
        tasks = tuple(select_tasks(tf, self.task_ids, tasks_file))
        check_viewport(self.env_options, tasks)
        put(self, "task_file", tf)
        put(self, "tasks", tasks)
        put(self, "fingerprint", fingerprint)
        # last (it asks the engine): the container engine and the environment's image
        # (missing, or another medspot's: exit 2 naming the command that fixes it)
        found = container_run(self.env, ex.container) if ex.name == "container" else None
        put(self, "container_run", found)

    def with_tasks(self, task_ids: tuple[str, ...]) -> EnvSpec:
        """The same spec selecting `task_ids` instead (checked again)."""
        return dataclasses.replace(self, task_ids=task_ids)

    def slot_config(self, *, spares: int | None = None) -> SlotConfig:
        """What every slot needs to make its environment (what a Ray actor receives, pickled:
        never more); `spares` overrides the spec's where given (`live serve`'s default)."""
        return SlotConfig(
            env=self.env, env_options=dict(self.env_options), call_timeout_s=self.call_timeout_s,
            workroot=self.workroot, tools=self.tools,
            spares=self.spares if spares is None else spares,
        )  # fmt: skip
