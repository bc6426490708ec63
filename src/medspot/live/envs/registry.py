"""The live environments: `ENVIRONMENTS` lists every environment family (one package of
`medspot.live.envs` each, whose `ENTRY` is its `EnvEntry`), and the lookups by name.

Adding an environment is a new package and its line here. `register_env` adds an environment
defined elsewhere (a test's, a user's own) for this process. No environment module imports
playwright or pyatspi at its top, so importing this one starts nothing heavy. Core keeps no
table of its own: what it needs of a family is handed to it (the `EnvEntry` that made an
environment, `EnvEntry.create`).
"""

from __future__ import annotations

from typing import Any

from medspot.errors import ConfigError
from medspot.live.core.contract import EnvEntry, Environment
from medspot.live.envs import dicomscope, invesalius, ohif, orthanc_explorer
from medspot.spelling import suggestion

__all__ = [
    "ENVIRONMENTS",
    "EnvEntry",
    "create_environment",
    "env_entry",
    "env_names",
    "register_env",
]

ENVIRONMENTS: tuple[EnvEntry, ...] = (
    orthanc_explorer.ENTRY,
    dicomscope.ENTRY,
    ohif.ENTRY,
    invesalius.ENTRY,
)

_ENVS: dict[str, EnvEntry] = {entry.name: entry for entry in ENVIRONMENTS}  # the lookups' table


def register_env(entry: EnvEntry) -> None:
    _ENVS[entry.name] = entry


def env_names() -> list[str]:
    return sorted(_ENVS)


def env_entry(name: str) -> EnvEntry:
    try:
        return _ENVS[name]
    except KeyError:
        known = ", ".join(sorted(_ENVS)) or "(none)"
        raise ConfigError(
            f"unknown live environment {name!r}{suggestion(name, _ENVS)}; known: {known}"
        ) from None


def create_environment(name: str, **options: Any) -> Environment:
    """A new environment of `name` (not started), made by its entry (`EnvEntry.create`:
    `options` given to its factory, `workdir` among them)."""
    return env_entry(name).create(**options)
