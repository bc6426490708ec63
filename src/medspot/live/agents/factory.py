"""`create_agent(name, ...)`: `oracle`, `noop` and `replay` are live agents, every other name is
a registry model (`random` and `ocr` are the static baselines, run on live screens).

`live_prompt_style` picks the prompt style of a live run: the one asked for, else in agent mode
the card's agent prompt (`agent`), which a card without one refuses with a hint; baselines and
guided runs use `native`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medspot.adapters import registry
from medspot.adapters.base import AdapterContext
from medspot.adapters.card import ModelCard, PromptStyle
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError
from medspot.live.agents.model import ModelAgent
from medspot.live.agents.scripted import NoopAgent, OracleAgent, ReplayAgent
from medspot.live.agents.turn import LiveAgent

__all__ = ["LIVE_AGENTS", "adapter_options", "create_agent", "live_prompt_style", "model_card"]

LIVE_AGENTS = ("oracle", "noop", "replay")  # agents that are not registry models


def adapter_options(
    model: str,
    options: AdapterOptions | Mapping[str, Any] | None,
    *,
    prompt_style: str,
    concurrency: int,
) -> AdapterOptions:
    """The options `medspot eval` gives the registry factory (`pipeline.evaluate`)."""
    return AdapterOptions.from_mapping(options).with_defaults(
        model=model, prompt_style=prompt_style, concurrency=concurrency
    )


def model_card(model: str) -> ModelCard | None:
    """The card of `model` (a named card or `openai:NAME`), None for a baseline."""
    if model in LIVE_AGENTS:
        return None
    kind = registry.entry(model).kind
    if kind not in ("model", "generic"):
        return None
    from medspot.adapters.cards import get_card

    return get_card(model)


def live_prompt_style(model: str, mode: str, asked: str | None = None) -> str:
    """The prompt style of a live run of `model` in `mode` (see the module docstring)."""
    if asked:
        return asked
    if mode != "agent":
        return "native"
    card = model_card(model)
    if card is None:
        return "native"
    card.style(PromptStyle.AGENT)  # a card without an agent prompt: a ConfigError with a hint
    return "agent"


def create_agent(
    model: str,
    *,
    options: AdapterOptions | Mapping[str, Any] | None = None,
    prompt_style: str = "native",
    concurrency: int = 4,
    seed: int = 0,
    max_retries: int = 4,
) -> LiveAgent:
    opts = adapter_options(model, options, prompt_style=prompt_style, concurrency=concurrency)
    if model == "oracle":
        return OracleAgent()
    if model == "noop":
        return NoopAgent()
    if model == "replay":
        if not opts.replay_file:
            raise ConfigError("--model replay needs --replay-file FILE (live action JSON lines)")
        return ReplayAgent(Path(opts.replay_file))
    action_format = ""
    if prompt_style == PromptStyle.AGENT:
        card = model_card(model)
        if card is None:
            raise ConfigError(f"{model!r} is a baseline: it has no agent prompt")
        action_format = card.style(PromptStyle.AGENT).action_format
    ctx = AdapterContext(dataset=None, images=None, seed=seed, options=opts)
    return ModelAgent(
        registry.create(model, ctx), action_format=action_format, max_retries=max_retries
    )
