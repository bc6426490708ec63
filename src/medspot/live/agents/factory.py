"""`create_agent(name, ...)`: `oracle`, `noop` and `replay` are live agents,
`openai-computer-use` and `anthropic-computer-use` the computer-use APIs (agent mode only),
every other name is a registry model (`random` and `ocr` are the static baselines, run on
live screens). `create_planner_grounder(planner, grounder, ...)`: a planning model and a
grounding card (`medspot.live.agents.grounded`).

`live_prompt_style` picks the prompt style of a live run: the one asked for, else in agent mode
the card's agent prompt (`agent`), which a card without one refuses with a hint; baselines,
the live agents and guided runs use `native`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medspot.adapters import registry
from medspot.adapters.base import AdapterContext
from medspot.adapters.card import ModelCard, PromptStyle
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import MAX_RETRIES, RetryPolicy
from medspot.errors import ConfigError
from medspot.live.agents.grounded import PlannerGrounderAgent
from medspot.live.agents.model import ModelAgent
from medspot.live.agents.scripted import NoopAgent, OracleAgent, ReplayAgent
from medspot.live.agents.turn import LiveAgent

__all__ = [
    "COMPUTER_USE_AGENTS",
    "GROUNDER_OWN_OPTIONS",
    "LIVE_AGENTS",
    "LIVE_AGENT_SUMMARIES",
    "adapter_options",
    "check_planner_grounder",
    "create_agent",
    "create_planner_grounder",
    "grounder_options",
    "live_prompt_style",
    "model_card",
]

# Options that name one model and so are not passed on from the planner's to the grounder's.
GROUNDER_OWN_OPTIONS = ("api_model", "checkpoint", "replay_file", "convention", "prompt_template")

COMPUTER_USE_AGENTS = ("openai-computer-use", "anthropic-computer-use")
# agents that are not registry models (no card, no prompt style)
LIVE_AGENTS = ("oracle", "noop", "replay", *COMPUTER_USE_AGENTS)
# what each does in `medspot live run` (`medspot models` lists them); "agent": --mode agent only
LIVE_AGENT_SUMMARIES: dict[str, tuple[str, str]] = {
    "oracle": ("both", "the target element read from the application: the tasks' ceiling and "
               "a pipeline check, not a model"),
    "noop": ("both", "answers done() at once: the do-nothing baseline (a task it solves was "
             "solved at its start)"),
    "replay": ("both", "actions from a JSON-lines file (--replay-file): scripted agents, "
               "answers made elsewhere"),
    "openai-computer-use": ("agent", "the OpenAI Responses API's computer-use tool "
                            "($OPENAI_API_KEY or --api-key-env; --base-url)"),
    "anthropic-computer-use": ("agent", "the Anthropic Messages API's computer-use tool "
                               "($ANTHROPIC_API_KEY or --api-key-env; --base-url)"),
}  # fmt: skip


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
    action_format = ""
    if prompt_style == PromptStyle.AGENT:
        card = model_card(model)
        if card is None:
            raise ConfigError(f"{model!r} is a baseline: it has no agent prompt")
        action_format = card.style(PromptStyle.AGENT).action_format
    ctx = AdapterContext(dataset=None, images=None, seed=seed, options=opts)
    return ModelAgent(
        registry.create(model, ctx), RetryPolicy(max_retries=max_retries), action_format
    )


def grounder_options(
    options: AdapterOptions | Mapping[str, Any] | None,
    overrides: Mapping[str, Any] | None = None,
) -> AdapterOptions:
    """The grounder's options: the planner's (backend, servers, key, timeouts, device) without
    those naming one model, then `overrides` (the `--grounder-*` options)."""
    base = AdapterOptions.from_mapping(options)
    kept = {
        f.name: getattr(base, f.name)
        for f in dataclasses.fields(base)
        if f.name not in (*GROUNDER_OWN_OPTIONS, "model", "prompt_style")
        and getattr(base, f.name) not in (None, ())
    }
    return AdapterOptions.from_mapping({**kept, **dict(overrides or {})})


def check_planner_grounder(planner: str, grounder: str, grounder_style: str = "native") -> None:
    """The pair's own refusals (a `ConfigError`), before anything is made."""
    if planner in LIVE_AGENTS or grounder in LIVE_AGENTS:
        raise ConfigError(
            "--planner and --grounder take models of the benchmark, not " + ", ".join(LIVE_AGENTS)
        )
    if grounder_style not in ("native", "upstream"):
        raise ConfigError(
            f"a grounder is asked with its native or upstream prompt, not {grounder_style}"
        )
    if model_card(planner) is None:
        raise ConfigError(f"--planner {planner!r} is a baseline; a planner is a model")
    registry.entry(grounder)  # an unknown name: a ConfigError naming the known ones


def create_planner_grounder(
    planner: str,
    grounder: str,
    *,
    options: AdapterOptions | Mapping[str, Any] | None = None,
    grounder_overrides: Mapping[str, Any] | None = None,
    grounder_style: str = "native",
    concurrency: int = 4,
    seed: int = 0,
    max_retries: int = MAX_RETRIES,
) -> PlannerGrounderAgent:
    """`planner` asked with the harness planner prompt, `grounder` with its own prompt style
    (`grounder_style`: native or upstream)."""
    check_planner_grounder(planner, grounder, grounder_style)
    p_opts = adapter_options(planner, options, prompt_style="planner", concurrency=concurrency)
    g_opts = adapter_options(
        grounder, grounder_options(options, grounder_overrides), prompt_style=grounder_style,
        concurrency=concurrency,
    )  # fmt: skip
    p_ctx = AdapterContext(dataset=None, images=None, seed=seed, options=p_opts)
    g_ctx = AdapterContext(dataset=None, images=None, seed=seed, options=g_opts)
    return PlannerGrounderAgent(
        ModelAgent(registry.create(planner, p_ctx), RetryPolicy(max_retries=max_retries)),
        ModelAgent(registry.create(grounder, g_ctx), RetryPolicy(max_retries=max_retries)),
    )
