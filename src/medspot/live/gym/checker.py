"""Gymnasium's passive environment checker, with a first `reset` (and `step`) that may fail.

`gymnasium.make` wraps every environment in `PassiveEnvChecker`, which checks the first
`reset` and the first `step` against the API. Gymnasium 1.4 marks them checked *before* they
run: after a first `reset` that raised (`reset(options={"task": "nope"})`, caught), a good
reset, then the first `step` acts on the application and only then fails inside the checker
(`TypeError: cannot unpack non-iterable NoneType`: it compares the step with the failed
reset's data). `LiveEnvChecker` marks a call checked once it returned, so a failed call leaves
the environment as usable as before it. The ids `medspot/<env>-v1` are registered with it (an
additional wrapper of their spec) in place of Gymnasium's own checker.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.passive_env_checker import (
    env_data_reuse_passive_checker,
    env_reset_passive_checker,
    env_step_passive_checker,
)
from gymnasium.wrappers import PassiveEnvChecker

__all__ = ["LiveEnvChecker"]

Obs = dict[str, Any]


class LiveEnvChecker(PassiveEnvChecker[Obs, Any]):
    """`PassiveEnvChecker`, checking the first reset and step that return (not the first
    called). Its spec is a wrapper's (the environment's spec with this wrapper added), so that
    `gymnasium.make(env.spec)` makes the same stack again."""

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        return gymnasium.Wrapper.spec.fget(self)  # type: ignore[attr-defined,no-any-return]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        if self.checked_reset:
            return super().reset(seed=seed, options=options)
        data: tuple[Obs, dict[str, Any]] = env_reset_passive_checker(
            self.env, seed=seed, options=options
        )
        self.checked_reset, self._previous_data = True, data
        return data

    def step(self, action: Any) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.checked_step:
            return super().step(action)
        result: tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]] = env_step_passive_checker(
            self.env, action
        )
        self.checked_step = True
        obs, _, _, _, info = result
        if self._previous_data is not None:
            env_data_reuse_passive_checker(self._previous_data, (obs, info), "reset", "step")
        self._previous_data = (obs, info)
        return result
