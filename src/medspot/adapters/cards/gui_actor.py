"""GUI-Actor-7B (Qwen2.5-VL backbone): a pointer head, no coordinates in text.

The hf backend runs `gui_actor.inference.inference(..., topk=spec.topk)` and renders
`pred["topk_points"]` with `format_points`; the card's parser reads that text back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import simple_parser, style, with_history

__all__ = [
    "GROUNDING_SYSTEM",
    "INSTALL_HINT",
    "QWEN2VL_SYSTEM",
    "format_points",
    "gui_actor_7b",
    "gui_actor_7b_qwen2_vl",
]

INSTALL_HINT = (
    "GUI-Actor needs the gui_actor package from the microsoft/GUI-Actor repository (clone it "
    "and pip install -e .); it is not on PyPI."
)

# microsoft/GUI-Actor eval scripts, Qwen2.5-VL backbone.
GROUNDING_SYSTEM = (
    "You are a GUI agent. Given a screenshot of the current GUI and a human instruction, your "
    "task is to locate the screen element that corresponds to the instruction. You should "
    "output a PyAutoGUI action that performs a click on the correct position. To indicate the "
    "click location, we will use some special tokens, which is used to refer to a visual patch "
    "later. For example, you can output: pyautogui.click(<your_special_token_here>)."
)


# microsoft/GUI-Actor README (Qwen2-VL example) and eval/screenSpot_pro.py (model_type
# "qwen2vl"): the Qwen2-VL backbone was trained with Aguvis's system message.
QWEN2VL_SYSTEM = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. You need to "
    "perform a series of pyautogui actions to complete the task."
)


def format_points(points: Sequence[Sequence[float]]) -> str:
    """Ranked pointer points as the text the card parses: `[(0.0312, 0.0417), (0.51, 0.9)]`."""
    return "[" + ", ".join(f"({float(p[0])!r}, {float(p[1])!r})" for p in points) + "]"


def gui_actor_7b() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    def upstream_text(req: StepRequest) -> str:
        return req.instruction

    native = PromptSpec(user_text="", system=GROUNDING_SYSTEM, topk=3)
    upstream = PromptSpec(user_text="", system=upstream_prompts.GUI_ACTOR_SYSTEM, topk=5)
    return ModelCard(
        name="gui-actor-7b",
        title="GUI-Actor-7B (Qwen2.5-VL)",
        family="gui_actor",
        checkpoint="microsoft/GUI-Actor-7B-Qwen2.5-VL",
        backends=("hf",),
        native=style(native_text, native, simple_parser(Convention.POINTER), Convention.POINTER),
        upstream=style(upstream_text, upstream, upstream_parsers.gui_actor, Convention.POINTER),
        upstream_preset="upstream-d",
        status="Prompt texts and point reading tested offline; the gui_actor package and a GPU "
        "are needed (not servable by vLLM).",
        packages=("gui_actor", "qwen-vl-utils"),
        hf_loader="gui_actor",
        install_hint=INSTALL_HINT,
        aliases=("microsoft/GUI-Actor-3B-Qwen2.5-VL",),
        notes="Scores topk_points[0]; the others are kept as extra points.",
    )


def gui_actor_7b_qwen2_vl() -> ModelCard:
    """GUI-Actor-7B on the Qwen2-VL backbone: its own pointer class
    (`gui_actor.modeling.Qwen2VLForConditionalGenerationWithPointer`) and system message."""
    base = gui_actor_7b()

    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    native = PromptSpec(user_text="", system=QWEN2VL_SYSTEM, topk=3)
    return replace(
        base,
        name="gui-actor-7b-qwen2-vl",
        title="GUI-Actor-7B (Qwen2-VL)",
        checkpoint="microsoft/GUI-Actor-7B-Qwen2-VL",
        native=style(native_text, native, simple_parser(Convention.POINTER), Convention.POINTER),
        hf_loader="gui_actor_qwen2_vl",
        aliases=("microsoft/GUI-Actor-2B-Qwen2-VL",),
        notes="Scores topk_points[0]; the others are kept as extra points. The upstream style "
        "is the MedSPOT authors' GUI-Actor script, as for gui-actor-7b.",
    )
