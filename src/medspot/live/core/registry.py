"""The registry of live environments: names to factories, imported only when used.

An environment module calls `register_env(EnvEntry(...))` when imported; the built-in modules
are listed in `_BUILTIN` and imported on the first lookup (none imports playwright or pyatspi at
its top).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from medspot.errors import ConfigError
from medspot.live.core.checks import CheckKinds
from medspot.live.core.contract import Environment

__all__ = ["EnvEntry", "create_environment", "env_entry", "env_names", "register_env"]


@dataclass(frozen=True)
class EnvEntry:
    """A registered environment family. `target` is "module:attribute" of a factory called as
    factory(**options) -> Environment; imported only when used."""

    name: str
    target: str
    summary: str
    check_kinds: CheckKinds  # the check kinds its `check` understands (names -> CheckKind)
    locator_keys: tuple[str, ...]  # the Locator keys its `locate` understands
    system_packages: tuple[str, ...] = ()  # Debian packages `medspot live setup` installs
    # packaged tasks, e.g. "orthanc_explorer.json" (+ "-*.json") in medspot/live/tasklists, or
    # "package:path/stem.json" inside an environment's own package
    tasks_resource: str | None = None
    python_modules: tuple[str, ...] = ("playwright", "pydicom")  # `medspot[live]` brings them
    # "module:function" hooks, imported only when called: `doctor() -> list[str]` (what is
    # missing beyond the packages and modules), `setup() -> str` (fetch what apt-get cannot)
    doctor: str | None = None
    setup: str | None = None
    # "module:function": `task_check(task) -> list[(field, message)]`, what is wrong with a
    # task for this environment beyond its checks and locator keys (start keys, seeded names in
    # routes, landmarks); `field` is a dotted path in the task ("start.route", "steps.2.target")
    task_check: str | None = None
    # the toolsets its environments offer beside the GUI (`--tools NAME`; the environment's
    # `toolset(name)` makes one: `medspot.live.core.tools`)
    toolsets: tuple[str, ...] = ()

    def hook(self, which: str) -> Callable[..., Any] | None:
        """The `doctor`, `setup` or `task_check` hook, imported."""
        target = {"doctor": self.doctor, "setup": self.setup, "task_check": self.task_check}.get(
            which
        )
        if target is None:
            return None
        module, _, attr = target.partition(":")
        fn: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return fn


_ENVS: dict[str, EnvEntry] = {}

# Modules that call `register_env` on import; none imports playwright/pyatspi at the top.
_BUILTIN: list[str] = [
    "medspot.live.envs.orthanc_explorer",
    "medspot.live.envs.dicomscope",
    "medspot.live.envs.ohif.env",
    "medspot.live.envs.invesalius.env",
]


def register_env(entry: EnvEntry) -> None:
    _ENVS[entry.name] = entry


def _load() -> None:
    for mod in _BUILTIN:
        importlib.import_module(mod)


def env_names() -> list[str]:
    _load()
    return sorted(_ENVS)


def env_entry(name: str) -> EnvEntry:
    _load()
    try:
        return _ENVS[name]
    except KeyError:
        known = ", ".join(sorted(_ENVS)) or "(none)"
        raise ConfigError(f"unknown live environment {name!r}; known: {known}") from None


def create_environment(name: str, **options: Any) -> Environment:
    entry = env_entry(name)
    module, _, attr = entry.target.partition(":")
    factory: Callable[..., Environment] = getattr(importlib.import_module(module), attr)
    return factory(**options)
