"""Gymnasium ids for the live environments: `medspot/<env>-v1` for every registered one.

`register_envs()` runs when `medspot.live.gym` is imported, so after `import medspot.live.gym`
(or with the module-qualified id `gymnasium.make("medspot.live.gym:medspot/orthanc-explorer-v1")`,
which imports it) `gymnasium.make("medspot/orthanc-explorer-v1")` works. It is also the
`gymnasium.envs` entry point declared in pyproject.toml (the plugin hook of Gymnasium 0.26 to
0.29, which called it inside the namespace named by the entry point, "medspot"). Gymnasium 1.x
no longer loads entry points (its v1.0.0 release notes: "Removing the plugin system").

`gymnasium.make` wraps the environment in `checker.LiveEnvChecker` (an additional wrapper of
the spec), Gymnasium's passive checker with a first reset that may fail; Gymnasium's own is
disabled for these ids.

The ids are registered `nondeterministic=True`: a real browser's screenshot of the same state
can differ by one level in a few anti-aliased pixels between two resets (seen on Orthanc
Explorer's filter page: 14 pixels), so Gymnasium's exact-equality checks of observations do not
apply; the tests check determinism themselves, with that tolerance.
"""

from __future__ import annotations

import gymnasium

from medspot.live.envs.registry import env_names
from medspot.live.gym.checker import LiveEnvChecker

__all__ = ["ENTRY_POINT", "NAMESPACE", "VERSION", "env_id", "register_envs"]

NAMESPACE = "medspot"
VERSION = 1
ENTRY_POINT = "medspot.live.gym.env:LiveGymEnv"


def env_id(env: str) -> str:
    """The Gymnasium id of the live environment `env`: `medspot/<env>-v1`."""
    return f"{NAMESPACE}/{env}-v{VERSION}"


def register_envs() -> list[str]:
    """Register every live environment with Gymnasium (idempotent); the ids registered."""
    ids = []
    for name in env_names():
        gid = env_id(name)
        if gid not in gymnasium.registry:
            gymnasium.register(
                id=gid,
                entry_point=ENTRY_POINT,
                kwargs={"env_name": name},
                # Gymnasium's checker is left broken by a failed first reset: ours instead
                disable_env_checker=True,
                additional_wrappers=(LiveEnvChecker.wrapper_spec(),),
                # a real application: the same task and actions give the same state, but a
                # screen may differ by a level in a few anti-aliased pixels between two resets
                nondeterministic=True,
            )
        ids.append(gid)
    return ids
