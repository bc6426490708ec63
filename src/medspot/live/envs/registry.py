"""The live environments: `ENVIRONMENTS` lists every environment family (one package of
`medspot.live.envs` each, whose `ENTRY` is its `EnvEntry`), and the lookups by name.

Adding an environment is a new package and its line here. `register_env` adds an environment
defined elsewhere (a test's, a user's own) for this process. No environment module imports
playwright or pyatspi at its top, so importing this one starts nothing heavy. Core keeps no
table of its own: what it needs of a family is handed to it (the `EnvEntry` that made an
environment, `EnvEntry.create`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from medspot.errors import ConfigError
from medspot.live.core.contract import EnvEntry, Environment
from medspot.live.envs import dicomscope, invesalius, ohif, orthanc_explorer
from medspot.spelling import suggestion

__all__ = [
    "ENVIRONMENTS",
    "EnvEntry",
    "close_and_remove",
    "create_environment",
    "create_in_private_folder",
    "env_entry",
    "env_names",
    "register_env",
]

log = logging.getLogger(__name__)

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


def create_in_private_folder(
    name: str, root: Path | None, prefix: str, options: Mapping[str, Any]
) -> tuple[Environment, Path]:
    """A new environment of `name` (not started) in a fresh private folder under `root`
    (default: the temp folder), and that folder; an option its factory does not take is the
    caller's error (ConfigError). The folder is removed when the environment cannot be made."""
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    try:
        return create_environment(name, workdir=workdir, **options), workdir
    except TypeError as e:  # an option the factory does not take
        shutil.rmtree(workdir, ignore_errors=True)
        raise ConfigError(f"{name}: {e} (an environment option)") from None
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


class Closable(Protocol):
    def close(self) -> None: ...


def close_and_remove(env: Closable | None, workdir: Path | None) -> None:
    """End the application's processes (`env`: an environment, or what holds them: the
    Gymnasium environment's run) and remove its private folder (also at exit); a failure to
    close is logged, the folder goes anyway."""
    try:
        if env is not None:
            env.close()
    except Exception as e:  # closing a broken environment may fail too
        log.warning("closing a live environment: %s", e)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
