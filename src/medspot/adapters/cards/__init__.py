"""The model cards of the benchmark (models.md) and of the grounding models researchers run
since, one module per family, and their registry entries. Importing this package imports no
heavy package (torch, transformers, openai)."""

from __future__ import annotations

from dataclasses import replace

from medspot.adapters.base import Convention
from medspot.adapters.card import ModelCard
from medspot.adapters.cards import (
    aguvis,
    cogagent,
    deepseek,
    general,
    gta1,
    gui_actor,
    gui_grounders,
    gui_owl,
    holo,
    mai_ui,
    openai_models,
    qwen,
    seeclick,
    ui_venus,
    uitars,
)
from medspot.adapters.cards.harness_planner import planner_style
from medspot.adapters.cards.openai_models import make_generic_card
from medspot.adapters.registry import AdapterEntry, register, register_prefix
from medspot.errors import ConfigError

__all__ = [
    "CARDS",
    "CARD_TARGET",
    "GENERIC_TARGET",
    "get_card",
    "make_generic_card",
    "with_planner",
]

CARD_TARGET = "medspot.adapters.factory:create_card_adapter"
GENERIC_TARGET = "medspot.adapters.factory:create_generic_adapter"


def _all_cards() -> list[ModelCard]:
    return [
        openai_models.gpt4o_mini(),
        openai_models.gpt5(),
        gui_actor.gui_actor_7b(),
        gui_actor.gui_actor_7b_qwen2_vl(),
        uitars.ui_tars_15_7b(),
        uitars.ui_tars_7b_sft(),
        cogagent.cogagent_9b(),
        qwen.qwen2_vl_7b(),
        qwen.qwen2_5_vl_7b(),
        qwen.qwen3_vl_8b(),
        general.gemma_3_27b(),
        general.llama_32_11b_vision(),
        gui_grounders.os_atlas_7b(),
        seeclick.seeclick(),
        gui_grounders.uground_v1_7b(),
        aguvis.aguvis_7b_720p(),
        deepseek.deepseek_vl2("deepseek-vl2"),
        deepseek.deepseek_vl2("deepseek-vl2-small"),
        deepseek.deepseek_vl2("deepseek-vl2-tiny"),
        general.mistral("mistral-small-3.1-24b"),
        general.mistral("ministral-3-8b"),
        # the grounding models on the ScreenSpot-Pro leaderboard since (docs/models.md)
        holo.holo2(),
        ui_venus.ui_venus_15(),
        mai_ui.mai_ui(),
        gta1.gta1(),
        gta1.gta1_opencua(),
        gui_owl.gui_owl_15(),
    ]


def with_planner(card: ModelCard) -> ModelCard:
    """The card with the harness planner prompt on its native request settings."""
    return replace(card, planner=planner_style(card.native))


CARDS: dict[str, ModelCard] = {c.name: with_planner(c) for c in _all_cards()}


def get_card(name: str) -> ModelCard:
    """The card registered as `name`; `openai:NAME` gives a generic rel1000 card."""
    if name in CARDS:
        return CARDS[name]
    prefix, sep, rest = name.partition(":")
    if sep and prefix == "openai":
        return with_planner(make_generic_card(rest, Convention.REL1000))
    known = ", ".join(sorted(CARDS))
    raise ConfigError(f"no model card named {name!r} (known: {known})")


def _register() -> None:
    for card in CARDS.values():
        register(
            AdapterEntry(
                name=card.name,
                target=CARD_TARGET,
                convention=card.native.convention.value,
                summary=card.title,
                kind="model",
                extra="hf" if "hf" in card.backends else "api",
                info={
                    "checkpoint": card.checkpoint,
                    "other_checkpoints": ",".join(card.aliases),
                    "backends": ",".join(card.backends),
                    "upstream_preset": card.upstream_preset,
                    "upstream_convention": card.upstream.convention.value,
                    "status": card.status,
                },
            )
        )
    register_prefix(
        AdapterEntry(
            name="openai",
            target=GENERIC_TARGET,
            convention="rel1000",
            summary="any OpenAI-compatible model: openai:NAME (conventions rel1000, rel1, "
            "abs_sent; --prompt-template)",
            kind="generic",
            extra="api",
            info={"backends": "openai"},
        )
    )


_register()
