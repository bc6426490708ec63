"""The OpenEnv client of a MedSPOT-Live server (`medspot live serve --openenv`): openenv-core's
`EnvClient` (its WebSocket session) with the MedSPOT-Live types; `medspot.live.MedspotEnvClient`.

    async with MedspotEnvClient(base_url="http://127.0.0.1:PORT") as env:
        result = await env.reset(task="open-study-ct-doe-john", agent="my-agent",
                                 agent_version="1.0")
        while not result.done:
            result = await env.step(MedspotAction(action="click(640, 251)"))
        print(result.observation.outcome)

`env.sync()` is the same client without `await` (openenv-core's `SyncEnvClient`). The
screenshot of an observation is `screenshot(obs)` (PNG bytes).
"""

from __future__ import annotations

import base64
from typing import Any

from medspot.errors import ConfigError

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
except ImportError:  # pragma: no cover - the extra is missing
    raise ConfigError(
        "the OpenEnv client needs openenv-core: pip install 'medspot[openenv]'"
    ) from None

from medspot.live.serve.openenv_models import MedspotAction, MedspotObservation, MedspotState

__all__ = ["MedspotAction", "MedspotEnvClient", "MedspotObservation", "MedspotState", "screenshot"]


class MedspotEnvClient(EnvClient[MedspotAction, MedspotObservation, MedspotState]):  # type: ignore[misc]
    """A WebSocket session with a MedSPOT-Live OpenEnv server: one episode at a time."""

    def _step_payload(self, action: MedspotAction) -> dict[str, Any]:
        return {"action": action.action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[MedspotObservation]:
        obs = MedspotObservation.model_validate(
            {
                **payload.get("observation", {}),
                "done": payload.get("done", False),
                "reward": payload.get("reward"),
            }
        )
        return StepResult(observation=obs, reward=payload.get("reward"), done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> MedspotState:
        state: MedspotState = MedspotState.model_validate(payload)
        return state


def screenshot(obs: MedspotObservation) -> bytes:
    """The observation's screen as PNG bytes."""
    return base64.b64decode(obs.screenshot_png)
