"""The OpenEnv types of a MedSPOT-Live environment (`openenv-core`'s `Action`, `Observation`,
`State`), shared by the server (`openenv_server`) and the client (`openenv_client`).

An action is the documented text form in pixels of the last screenshot (docs/live.md "Action
format": `click(412, 233)`, `type("DOE^JOAN")`, `done()`, `tool(find_studies, {...})` in the
tools track); a text with no readable action is a no-action step (one action of the budget), as
in the Gymnasium API; an action the environment cannot execute (a point off the screen) is
one too, with `executed` false and `not_executed` saying why. An action text is at most
`MAX_ACTION_CHARS` characters (a model's whole answer may come: its reasoning, then the
action). The observation carries the screenshot as base64 PNG, the goal (and the current
step's instruction in guided mode), the step's flags, and once the episode ended its outcome;
`reward` is 1.0 on the step that ends the task with success, else 0.0, and `rewards` the
step's reward under each kind of `medspot.live.core.rewards` (`success`, `safety`, `shaped`).
`MedspotReset` is what a reset takes (`task`, `seed`, `agent`, `agent_version`, `episode_id`),
checked alike on the WebSocket and the HTTP route.
"""

from __future__ import annotations

from typing import Any

from medspot.errors import ConfigError

try:
    from openenv.core.env_server.types import Action, Observation, State
except ImportError:  # pragma: no cover - the extra is missing
    raise ConfigError(
        "the OpenEnv server and client need openenv-core: pip install 'medspot[openenv]'"
    ) from None
from pydantic import BaseModel, ConfigDict, Field, field_validator

from medspot.limits import MAX_SEED
from medspot.live.core.executable import MAX_TEXT_CHARS
from medspot.live.serve.tools import MAX_NAME_CHARS, not_unicode

__all__ = [
    "MAX_ACTION_CHARS",
    "MedspotAction",
    "MedspotObservation",
    "MedspotReset",
    "MedspotState",
]

# an action text: a model's whole answer may come (its reasoning, then the action in the text
# form, whose typed text is at most MAX_TEXT_CHARS): some 4,000 tokens
MAX_ACTION_CHARS = 16 * MAX_TEXT_CHARS


class MedspotAction(Action):  # type: ignore[misc]
    action: str = Field(
        max_length=MAX_ACTION_CHARS,
        description="an action in the text form, in pixels of the last screenshot: click(x, y), "
        "double_click(x, y), right_click(x, y), drag(x1, y1, x2, y2), scroll(x, y, dy), "
        'type("text"), key("Enter"), done(), infeasible("reason"), tool(name, {...})',
    )


class MedspotObservation(Observation):  # type: ignore[misc]
    episode_id: str = ""
    env: str = ""
    task: str = ""
    goal: str = ""
    instruction: str | None = None  # guided mode: the current step's
    screenshot_png: str = Field("", description="the screen as a base64 PNG")
    width: int = 0
    height: int = 0
    actions_used: int = 0
    budget: int = 0
    tools: list[str] = Field(default_factory=list)  # the tools track's tools offered
    gui_only: str | None = None  # the tools track: why this task stays GUI-only
    action: dict[str, Any] | None = None  # the action as executed (JSON form)
    executed: bool | None = None
    not_executed: str | None = None  # why the environment could not execute the action
    flags: list[str] = Field(default_factory=list)
    tool_result: str | None = None
    outcome: str | None = None  # success / harmful / failure once ended
    reason: str = ""
    rewards: dict[str, float] = Field(default_factory=dict)  # the step's, under each kind


class MedspotState(State):  # type: ignore[misc]
    env: str = ""
    task: str | None = None
    mode: str = "agent"
    budget: int = 0
    ended: bool = False
    outcome: str | None = None


class MedspotReset(BaseModel):
    """What a reset takes: `task` (else one drawn with `seed`), who the agent is (`agent`,
    `agent_version`: run.json's model), and over the WebSocket the episode's name
    (`episode_id`; the HTTP route names its episodes itself)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    task: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    agent: str | None = Field(None, max_length=MAX_NAME_CHARS)
    agent_version: str | None = Field(None, max_length=MAX_NAME_CHARS)
    episode_id: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)

    @field_validator("task", "agent", "agent_version", "episode_id")
    @classmethod
    def _unicode(cls, v: str | None) -> str | None:
        return _unicode_text(v) if v is not None else None


def _unicode_text(v: str) -> str:
    if not_unicode(v) is not None:
        raise ValueError("not Unicode text (it holds a lone surrogate)")
    return v
