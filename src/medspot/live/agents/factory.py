"""`create_agent(name, ...)`: `oracle`, `noop` and `replay` are live agents,
`openai-computer-use` and `anthropic-computer-use` the computer-use APIs (agent mode only),
every other name is a registry model (`random` and `ocr` are the static baselines, run on
live screens)."""

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
from medspot.live.agents.scripted import NoopAgent, OracleAgent, ReplayAgent
from medspot.live.agents.turn import LiveAgent

__all__ = ["COMPUTER_USE_AGENTS", "adapter_options", "create_agent"]

COMPUTER_USE_AGENTS = ("openai-computer-use", "anthropic-computer-use")


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
    mode: str = "guided",
) -> LiveAgent:
    opts = adapter_options(model, options, prompt_style=prompt_style, concurrency=concurrency)
    if model in COMPUTER_USE_AGENTS:
        if mode != "agent":
            raise ConfigError(f"{model} plans by itself: run it with --mode agent")
        if model == "openai-computer-use":
            from medspot.live.agents.computer_use.openai_cu import OpenAIComputerUseAgent

            return OpenAIComputerUseAgent.from_options(opts, max_retries=max_retries)
        from medspot.live.agents.computer_use.anthropic_cu import AnthropicComputerUseAgent

        return AnthropicComputerUseAgent.from_options(opts, max_retries=max_retries)
    if opts.computer_tool or opts.acknowledge_safety_checks:
        raise ConfigError(
            "--computer-tool and --acknowledge-safety-checks are options of "
            + " and ".join(COMPUTER_USE_AGENTS)
        )
    if model == "oracle":
        return OracleAgent()
    if model == "noop":
        return NoopAgent()
    if model == "replay":
        if not opts.replay_file:
            raise ConfigError("--model replay needs --replay-file FILE (live action JSON lines)")
        return ReplayAgent(Path(opts.replay_file))
    ctx = AdapterContext(dataset=None, images=None, seed=seed, options=opts)
    return ModelAgent(registry.create(model, ctx), RetryPolicy(max_retries=max_retries))
