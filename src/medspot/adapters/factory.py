"""Registry factories for model cards: pick the backend and the prompt style, build the adapter.

`create_card_adapter(ctx)` serves every named card (`qwen2.5-vl-7b`, `gpt-5`, ...); the name
comes from `ctx.options["model"]`. `create_generic_adapter(ctx, name)` serves `openai:NAME`.
Options read here: `backend` ("openai" or "hf"; default: the card's first backend),
`prompt_style` ("native", "upstream"; live: "agent", "planner"), `convention` and
`prompt_template` (a file) for generic cards. The backends read the rest (see `openai_backend`
and `hf_backend`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from medspot.adapters.base import Adapter, AdapterContext, Convention
from medspot.adapters.card import ModelCard, PromptStyle
from medspot.adapters.options import BACKENDS, AdapterOptions
from medspot.errors import ConfigError

__all__ = [
    "BACKENDS",
    "build_adapter",
    "choose_backend",
    "choose_style",
    "create_card_adapter",
    "create_generic_adapter",
    "resolve_card",
]

log = logging.getLogger(__name__)


def choose_backend(card: ModelCard, options: AdapterOptions) -> str:
    backend = options.backend or (card.backends[0] if card.backends else None)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend not in card.backends:
        why = f": {card.hf_refusal}" if backend == "hf" and card.hf_refusal else ""
        raise ConfigError(
            f"model {card.name!r} cannot run on the {backend} backend "
            f"(it supports: {', '.join(card.backends)}){why}"
        )
    return str(backend)


def choose_style(options: AdapterOptions) -> PromptStyle:
    value = options.prompt_style or "native"
    try:
        return PromptStyle(str(value))
    except ValueError:
        raise ConfigError(
            f"unknown prompt style {value!r}; use native, upstream, agent or planner"
        ) from None


def build_adapter(card: ModelCard, ctx: AdapterContext) -> Adapter:
    """The adapter for `card` on the backend chosen by `ctx.options`."""
    options = ctx.options
    backend = choose_backend(card, options)
    style = choose_style(options)
    card.check_model_id(options.api_model)
    card.check_model_id(options.checkpoint)
    if backend == "openai":
        from medspot.adapters.backends.openai import OpenAIAdapter

        adapter: Adapter = OpenAIAdapter.from_options(card, style, options)
        return adapter
    from medspot.adapters.backends.hf.adapter import HFAdapter

    hf: Adapter = HFAdapter.from_options(card, style, options)
    return hf


def _cards() -> Any:
    import medspot.adapters.cards as cards

    return cards


def create_card_adapter(ctx: AdapterContext, name: str | None = None) -> Adapter:
    """Registry factory of the named cards; the name is `ctx.options["model"]`."""
    model = name or ctx.options.model
    if not model:
        raise ConfigError("no model name given to the card adapter factory")
    card: ModelCard = _cards().get_card(str(model))
    return build_adapter(card, ctx)


def _read_template(value: Any) -> str | None:
    if value is None:
        return None
    path = Path(str(value))
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the prompt template {path}: {e.strerror or e}") from None


def resolve_card(name: str, options: AdapterOptions | None = None) -> ModelCard:
    """The card `name` stands for, as `eval --model NAME` reads it: a registered card, or for
    `openai:NAME` a generic card in `options.convention` (default rel1000) with
    `options.prompt_template` (a file) if given. A registered card takes neither option."""
    options = options or AdapterOptions()
    cards = _cards()
    prefix, sep, rest = name.partition(":")
    if not (sep and prefix == "openai"):
        for key in ("convention", "prompt_template"):
            if getattr(options, key) is not None:
                raise ConfigError(f"{key} is for generic models (openai:NAME), not {name!r}")
        card: ModelCard = cards.get_card(name)
        return card
    raw = options.convention or "rel1000"
    try:
        convention = Convention(str(raw))
    except ValueError:
        raise ConfigError(f"unknown convention {raw!r}") from None
    template = _read_template(options.prompt_template)
    generic: ModelCard = cards.with_planner(cards.make_generic_card(rest, convention, template))
    return generic


def create_generic_adapter(ctx: AdapterContext, model: str) -> Adapter:
    """Registry factory of `openai:NAME`: a generic card for any OpenAI-compatible model."""
    card = resolve_card(f"openai:{model}", ctx.options)
    options = ctx.options.with_defaults(backend="openai")
    return build_adapter(card, AdapterContext(ctx.dataset, ctx.images, ctx.seed, options))
