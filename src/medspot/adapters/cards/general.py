"""General VLMs without a pointing convention (models.md section 5): the harness-choice rel1000
prompt natively; the authors' pixel prompts under `upstream`."""

from __future__ import annotations

from medspot.adapters.base import Convention
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import harness_style, instruction_text, sized_text, style
from medspot.adapters.cards.harness_agent import harness_agent_style

__all__ = ["gemma_3_27b", "llama_32_11b_vision", "mistral"]

_STATUS = (
    "Harness-choice rel1000 prompt (no native pointing format); prompt texts and parsers "
    "tested offline; generation needs a GPU."
)


def gemma_3_27b() -> ModelCard:
    upstream_text = instruction_text(upstream_prompts.gemma3)
    return ModelCard(
        name="gemma-3-27b",
        title="Gemma-3-27B-it",
        family="gemma3",
        checkpoint="google/gemma-3-27b-it",
        backends=("openai", "hf"),
        native=harness_style(PromptSpec(user_text="", max_new_tokens=64)),
        upstream=style(
            upstream_text,
            PromptSpec(user_text="", max_new_tokens=64),
            upstream_parsers.gemma3,
            Convention.ABS_ORIGINAL,
        ),
        upstream_preset="upstream-c",
        status=_STATUS + " Gated checkpoint (licence).",
        packages=("transformers",),
        hf_loader="gemma3",
        notes="Images are squashed to 896x896; relative answers survive, pixels cannot.",
        agent=harness_agent_style(PromptSpec(user_text="")),
    )


def llama_32_11b_vision() -> ModelCard:
    upstream_text = instruction_text(upstream_prompts.llama)
    return ModelCard(
        name="llama-3.2-11b-vision",
        title="Llama-3.2-11B-Vision-Instruct",
        family="mllama",
        checkpoint="meta-llama/Llama-3.2-11B-Vision-Instruct",
        backends=("hf", "openai"),
        native=harness_style(PromptSpec(user_text="", max_new_tokens=64)),
        upstream=style(
            upstream_text,
            PromptSpec(user_text="", max_new_tokens=20),
            upstream_parsers.llama,
            Convention.ABS_ORIGINAL,
        ),
        upstream_preset="upstream-c",
        status=_STATUS + " Gated; current vLLM does not serve Mllama (use transformers).",
        packages=("transformers",),
        hf_loader="mllama",
        notes="Tiles of 560x560 with padding: whether relative answers refer to the padded "
        "canvas is unverified.",
        agent=harness_agent_style(PromptSpec(user_text="")),
    )


_MISTRAL = {
    "mistral-small-3.1-24b": (
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "Mistral-Small-3.1-24B-Instruct",
    ),
    "ministral-3-8b": ("mistralai/Ministral-3-8B-Instruct-2512", "Ministral-3-8B-Instruct"),
}


def mistral(name: str = "mistral-small-3.1-24b") -> ModelCard:
    checkpoint, title = _MISTRAL[name]

    upstream_text = sized_text(upstream_prompts.mistral)
    return ModelCard(
        name=name,
        title=title,
        family="mistral3",
        checkpoint=checkpoint,
        backends=("openai", "hf"),
        native=harness_style(PromptSpec(user_text="", image_format="png", max_new_tokens=64)),
        upstream=style(
            upstream_text,
            PromptSpec(user_text="", image_format="png", max_new_tokens=20),
            upstream_parsers.mistral,
            Convention.ABS_ORIGINAL,
        ),
        upstream_preset="upstream-a",
        status=_STATUS + " Which 'Mistral-3-Instruct 8B' the paper ran is unverified.",
        packages=("transformers", "mistral-common"),
        hf_loader="mistral3",
        notes="The image goes as a PNG data URL in the user content (MistralCommonBackend).",
        agent=harness_agent_style(PromptSpec(user_text="", image_format="png")),
    )
