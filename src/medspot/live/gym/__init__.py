"""MedSPOT-Live as Gymnasium environments (`pip install 'medspot[gym]'`).

Importing this package registers `medspot/<env>-v1` for every live environment
(`registration.register_envs`); `LiveGymEnv` is the environment class (docs/live/library.md
"Gymnasium")."""

from __future__ import annotations

from medspot.errors import AdapterUnavailable


class GymUnavailable(AdapterUnavailable, ImportError):
    """The gymnasium package is missing (the `gym` extra)."""


try:
    import gymnasium  # noqa: F401
except ImportError as e:
    raise GymUnavailable(
        f"the Gymnasium API needs the gymnasium package ({e}): pip install 'medspot[gym]'"
    ) from None

from medspot.live.gym.env import NO_ACTION, LiveGymEnv  # noqa: E402
from medspot.live.gym.registration import env_id, register_envs  # noqa: E402

__all__ = ["NO_ACTION", "GymUnavailable", "LiveGymEnv", "env_id", "register_envs"]

register_envs()
