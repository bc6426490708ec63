"""Qwen2-VL-7B, Qwen2.5-VL-7B and Qwen3-VL-8B (models.md section 4)."""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import (
    instruction_text,
    simple_parser,
    sized_text,
    style,
    with_history,
)
from medspot.adapters.cards.qwen_agent import qwen3_agent, qwen25_agent
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE

__all__ = ["QWEN2VL_GROUNDING", "qwen2_5_vl_7b", "qwen2_vl_7b", "qwen3_vl_8b"]

QWEN2VL_GROUNDING = (
    'Output the bounding box in the image corresponding to the instruction "{}" with grounding.'
)

_PKGS = ("transformers", "qwen-vl-utils")
_STATUS = (
    "Prompt texts and parsers tested offline. Loading and generation need a GPU (not run here)."
)


def qwen2_vl_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        # ScreenSpot-Pro's Qwen2-VL wrapper (likaixin2000/ScreenSpot-Pro-GUI-Grounding,
        # models/qwen2vl.py, ground_only_positive): image first, this text, special tokens kept.
        return QWEN2VL_GROUNDING.format(with_history(req.instruction, req))

    upstream_text = sized_text(upstream_prompts.qwen2vl)
    native = PromptSpec(user_text="", max_new_tokens=64, keep_special_tokens=True)
    upstream = PromptSpec(user_text="", max_new_tokens=64, resize=QWEN_DEFAULT_RESIZE)
    return ModelCard(
        name="qwen2-vl-7b",
        title="Qwen2-VL-7B-Instruct",
        family="qwen2_vl",
        checkpoint="Qwen/Qwen2-VL-7B-Instruct",
        backends=("openai", "hf"),
        native=style(
            native_text,
            native,
            simple_parser(Convention.REL1000, box_pairs=True),
            Convention.REL1000,
        ),
        upstream=style(upstream_text, upstream, upstream_parsers.qwen2vl, Convention.ABS_ORIGINAL),
        upstream_preset="upstream-a",
        status=_STATUS,
        packages=_PKGS,
        hf_loader="qwen2_vl",
        notes="Box tokens `(x1,y1),(x2,y2)` on a 0..1000 grid; the centre is scored.",
    )


def qwen2_5_vl_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        # Cookbook style ("Locate ..., output ... coordinates in JSON format").
        instr = with_history(req.instruction, req)
        return (
            f'Locate the UI element to click for the instruction "{instr}", '
            "output its bbox coordinates in JSON format."
        )

    upstream_text = instruction_text(upstream_prompts.qwen2_5vl)
    native = PromptSpec(user_text="", max_new_tokens=128, resize=QWEN_DEFAULT_RESIZE)
    upstream = PromptSpec(user_text="", max_new_tokens=64, resize=QWEN_DEFAULT_RESIZE)
    return ModelCard(
        name="qwen2.5-vl-7b",
        title="Qwen2.5-VL-7B-Instruct",
        family="qwen2_5_vl",
        checkpoint="Qwen/Qwen2.5-VL-7B-Instruct",
        backends=("openai", "hf"),
        native=style(
            native_text, native, simple_parser(Convention.ABS_RESIZED), Convention.ABS_RESIZED
        ),
        upstream=style(
            upstream_text, upstream, upstream_parsers.qwen2_5vl, Convention.ABS_ORIGINAL
        ),
        upstream_preset="upstream-c",
        status=_STATUS,
        packages=_PKGS,
        hf_loader="qwen2_5_vl",
        notes="Pixels of the smart-resized image (qwen-vl-utils defaults): the harness resizes "
        "and sends that image, and divides by the size it sent.",
        agent=qwen25_agent(QWEN_DEFAULT_RESIZE),
    )


def qwen3_vl_8b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        instr = with_history(req.instruction, req)
        return (
            f'Locate the UI element to click for the instruction "{instr}" in the image using '
            "points, and output their point coordinates in JSON format."
        )

    upstream_text = instruction_text(upstream_prompts.qwen3vl)
    native = PromptSpec(user_text="", max_new_tokens=128)
    # The script ran qwen-vl-utils with its default factor 28 before the processor.
    upstream = PromptSpec(user_text="", max_new_tokens=64, resize=QWEN_DEFAULT_RESIZE)
    return ModelCard(
        name="qwen3-vl-8b",
        title="Qwen3-VL-8B-Instruct",
        family="qwen3_vl",
        checkpoint="Qwen/Qwen3-VL-8B-Instruct",
        backends=("openai", "hf"),
        native=style(native_text, native, simple_parser(Convention.REL1000), Convention.REL1000),
        upstream=style(upstream_text, upstream, upstream_parsers.qwen3vl, Convention.REL1000),
        upstream_preset="upstream-c",
        status=_STATUS,
        packages=_PKGS,
        hf_loader="qwen3_vl",
        notes="JSON point_2d / bbox_2d on 0..1000; a -Thinking variant's <think> is stripped.",
        agent=qwen3_agent(),
    )
