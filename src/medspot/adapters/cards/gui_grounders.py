"""Qwen2-VL-based GUI grounders answering on a 0..1000 grid: OS-Atlas-Base-7B, UGround-V1-7B."""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import instruction_text, simple_parser, style, with_history
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE

__all__ = ["UGROUND_TEMPLATE", "os_atlas_7b", "uground_v1_7b"]

# OSU-NLP-Group/UGround grounding/uground_qwen2vl_serve.py (the README's "Visual Grounding
# Prompt" is the same text indented by its code block): it starts with a newline.
UGROUND_TEMPLATE = (
    "\nYour task is to help the user identify the precise coordinates (x, y) of a specific "
    "area/element/object on the screen based on a description.\n\n"
    "- Your response should aim to point to the center or a representative point within the "
    "described area/element/object as accurately as possible.\n"
    "- If the description is unclear or ambiguous, infer the most relevant area or element "
    "based on its likely context or purpose.\n"
    "- Your answer should be a single string (x, y) corresponding to the point of the "
    "interest.\n\nDescription: {instruction}\n\nAnswer:"
)

_STATUS = "Prompt texts and parsers tested offline; generation needs a GPU."


def os_atlas_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        instr = with_history(req.instruction, req)
        return (
            "In this UI screenshot, what is the position of the element corresponding to the "
            f'command "{instr}" (with bbox)?'
        )

    upstream_text = instruction_text(upstream_prompts.osatlas)
    return ModelCard(
        name="os-atlas-7b",
        title="OS-Atlas-Base-7B",
        family="qwen2_vl",
        checkpoint="OS-Copilot/OS-Atlas-Base-7B",
        backends=("openai", "hf"),
        native=style(
            native_text,
            PromptSpec(user_text="", max_new_tokens=128, keep_special_tokens=True),
            simple_parser(Convention.REL1000, box_pairs=True),
            Convention.REL1000,
        ),
        upstream=style(
            upstream_text,
            PromptSpec(user_text="", max_new_tokens=128, resize=QWEN_DEFAULT_RESIZE),
            upstream_parsers.osatlas,
            Convention.REL1000,
        ),
        upstream_preset="upstream-a",
        status=_STATUS,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_vl",
        notes="Decode with special tokens kept so the box markers survive; centre scored.",
    )


def uground_v1_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return UGROUND_TEMPLATE.replace("{instruction}", with_history(req.instruction, req))

    upstream_text = instruction_text(upstream_prompts.uground)
    return ModelCard(
        name="uground-v1-7b",
        title="UGround-V1-7B",
        family="qwen2_vl",
        checkpoint="osunlp/UGround-V1-7B",
        backends=("openai", "hf"),
        native=style(
            native_text,
            PromptSpec(user_text="", max_new_tokens=128),
            simple_parser(Convention.REL1000, box_pairs=True),
            Convention.REL1000,
        ),
        upstream=style(
            upstream_text,
            PromptSpec(
                user_text="", max_new_tokens=64, image_format="jpeg", resize=QWEN_DEFAULT_RESIZE
            ),
            upstream_parsers.uground,
            Convention.ABS_ORIGINAL,
        ),
        upstream_preset="upstream-a",
        status=_STATUS + " The authors serve it with vLLM in float16 at temperature 0.",
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_vl",
        aliases=("osunlp/UGround-V1-2B", "osunlp/UGround-V1-72B"),
        notes="Answers on [0,1000); the authors' MedSPOT script read them as original pixels.",
    )
