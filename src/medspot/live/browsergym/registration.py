"""BrowserGym ids for the web environments' tasks: `browsergym/medspot.<env>.<task>`.

As BrowserGym's own benchmark packages do (`browsergym.miniwob`, `browsergym.webarena`, ...),
importing `medspot.live.browsergym` registers every packaged task of `orthanc-explorer` and
`ohif` through `browsergym.core.registration.register_task`, so that

    import gymnasium as gym
    import medspot.live.browsergym

    env = gym.make("browsergym/medspot.ohif.measure-ab-ct-doe-john")

works; `register_task_file(path)` registers a task file's tasks the same way (under another
namespace when their ids would clash: `browsergym/<namespace>.<env>.<task>`). The task itself
is frozen in the registration (`task_kwargs`: the environment and the validated task);
`env_options` and `workroot` are defaults a `gym.make(..., task_kwargs={...})` may replace. The
browser is launched by BrowserGym: the ids carry `pw_chromium_kwargs` that launch Debian's
chromium where it is installed (`chromium.chromium_kwargs`).
"""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
from browsergym.core.registration import register_task

from medspot.errors import ConfigError
from medspot.live.browsergym.chromium import chromium_kwargs
from medspot.live.browsergym.task import MedspotBrowserTask
from medspot.live.core.tasks import LiveTask, LiveTaskFile
from medspot.live.envs.taskfiles import env_task_file, load_task_file

__all__ = [
    "NAMESPACE",
    "WEB_ENVS",
    "gym_id",
    "register_packaged",
    "register_task_file",
    "task_name",
]

NAMESPACE = "medspot"
# the environments BrowserGym can drive: web applications in chromium (`task.PageDriven`)
WEB_ENVS = ("orthanc-explorer", "ohif")
# what BrowserGym's ids are registered under (`browsergym/<name>`)
BROWSERGYM_PREFIX = "browsergym/"
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def task_name(env: str, task: str, namespace: str = NAMESPACE) -> str:
    """BrowserGym's task name of `task` in `env` (what AgentLab's `EnvArgs.task_name` takes)."""
    return f"{namespace}.{env}.{task}"


def gym_id(env: str, task: str, namespace: str = NAMESPACE) -> str:
    """The Gymnasium id: `browsergym/<namespace>.<env>.<task>`."""
    return BROWSERGYM_PREFIX + task_name(env, task, namespace)


# the ids this module registered, and their tasks (an id registered again with the same task
# is left as it is)
_REGISTERED: dict[str, LiveTask] = {}


def _register(tf: LiveTaskFile, namespace: str, where: str) -> list[str]:
    if tf.env not in WEB_ENVS:
        raise ConfigError(
            f"{where}: its environment {tf.env!r} is not a web application; BrowserGym drives "
            f"pages ({', '.join(WEB_ENVS)})"
        )
    ids = []
    for task in tf.tasks:
        gid = gym_id(tf.env, task.id, namespace)
        if gid in gym.registry and _REGISTERED.get(gid) != task:
            raise ConfigError(
                f"{where}: {gid} is already registered with another task (register the file "
                "under another namespace: register_task_file(path, namespace=...))"
            )
        if gid not in _REGISTERED:
            register_task(
                gid.removeprefix(BROWSERGYM_PREFIX),
                MedspotBrowserTask,
                task_kwargs={"env_name": tf.env, "task": task},
                default_task_kwargs={"env_options": {}, "workroot": None},
                kwargs={"pw_chromium_kwargs": chromium_kwargs()},
            )
            _REGISTERED[gid] = task
        ids.append(gid)
    return ids


def register_packaged() -> list[str]:
    """Register every packaged task of the web environments (idempotent); the ids."""
    ids: list[str] = []
    for env in WEB_ENVS:
        tf, _ = env_task_file(env)
        ids += _register(tf, NAMESPACE, f"the packaged tasks of {env}")
    return ids


def register_task_file(path: str | Path, *, namespace: str = NAMESPACE) -> list[str]:
    """Register the tasks of the task file `path` (validated against its environment as `live
    run --tasks-file` validates it); the ids, `browsergym/<namespace>.<env>.<task>`. An id
    already registered with another task is a `ConfigError`: choose another `namespace`."""
    if not _NAMESPACE.fullmatch(namespace):
        raise ConfigError(f"namespace {namespace!r}: letters, digits, '-' and '_' only")
    return _register(load_task_file(Path(path)), namespace, str(path))
