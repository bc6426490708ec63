"""`create_agent(name, ...)`: `oracle` and `replay` are live agents, every other name is a
registry model (`random` and `ocr` are the static baselines, run on live screens)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medspot.adapters import registry
from medspot.adapters.base import AdapterContext
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import MAX_RETRIES, RetryPolicy
from medspot.errors import ConfigError
from medspot.live.agents.model import ModelAgent
from medspot.live.agents.scripted import OracleAgent, ReplayAgent
from medspot.live.agents.turn import LiveAgent

__all__ = ["adapter_options", "create_agent"]


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


def create_agent(
    model: str,
    *,
    options: AdapterOptions | Mapping[str, Any] | None = None,
    prompt_style: str = "native",
    concurrency: int = 4,
    seed: int = 0,
    max_retries: int = MAX_RETRIES,
) -> LiveAgent:
    opts = adapter_options(model, options, prompt_style=prompt_style, concurrency=concurrency)
    if model == "oracle":
        return OracleAgent()
    if model == "replay":
        if not opts.replay_file:
            raise ConfigError("--model replay needs --replay-file FILE (live action JSON lines)")
        return ReplayAgent(Path(opts.replay_file))
    ctx = AdapterContext(dataset=None, images=None, seed=seed, options=opts)
    return ModelAgent(registry.create(model, ctx), RetryPolicy(max_retries=max_retries))
