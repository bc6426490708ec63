"""Aguvis-7B-720P: `pyautogui.click(x=0.11, y=0.05)` fractions."""

from __future__ import annotations

from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, ResizeSpec, StyleSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import pyautogui_anchor, style
from medspot.adapters.cards.harness_agent import AGENT_MAX_TOKENS, agent_style
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "AGUVIS_720P_RESIZE",
    "GENERATION_PROMPT",
    "SELF_PLAN_PROMPT",
    "SYSTEM",
    "agent_user_text",
    "aguvis_7b_720p",
    "native_user_text",
    "parse_native",
]

# xlang-ai/aguvis src/aguvis/constants.py
SYSTEM = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. You need to "
    "perform a series of pyautogui actions to complete the task."
)
GENERATION_PROMPT = "<|im_start|>assistant<|recipient|>os\n"
# src/aguvis/serve/cli.py, mode "self-plan": the model chooses its recipient (`all` for its inner
# monologue, then `os` for the pyautogui code).
SELF_PLAN_PROMPT = "<|im_start|>assistant<|recipient|>"
AGUVIS_720P_RESIZE = ResizeSpec(factor=28, min_pixels=256 * 28 * 28, max_pixels=46 * 26 * 28 * 28)


def native_user_text(req: StepRequest) -> str:
    """Aguvis's user_instruction template (goal, previous actions or `None`)."""
    goal = req.instruction
    if req.task_overview:
        goal = f"{req.task_overview} Current step: {req.instruction}"
    previous = "\n".join(req.history) if req.history else "None"
    return (
        "Please generate the next move according to the ui screenshot, instruction and "
        f"previous actions.\n\nInstruction: {goal}\n\nPrevious actions:\n{previous}\n"
    )


def agent_user_text(req: StepRequest) -> str:
    """constants.py's user_instruction with the goal and the previous actions as cli.py joins
    them (`Step k: <low-level instruction>` lines, the live agent's memories), or `None`."""
    previous = "\n".join(f"Step {i}: {h}" for i, h in enumerate(req.history, 1)) or "None"
    return (
        "Please generate the next move according to the ui screenshot, instruction and "
        f"previous actions.\n\nInstruction: {req.instruction}\n\nPrevious actions:\n{previous}\n"
    )


def _agent() -> StyleSpec:
    """Aguvis planning (self-plan): the grounding system message of constants.py (the one the
    Aguvis agent of xlang-ai/computer-agent-arena-hub sends on desktops; constants.py's
    agent_system_message lists mobile plugins only), the user instruction, the self-plan
    generation prompt, stop at `<|diff_marker|>`."""
    base = PromptSpec(
        user_text="",
        system=SYSTEM,
        max_new_tokens=AGENT_MAX_TOKENS,
        resize=AGUVIS_720P_RESIZE,
        generation_prompt=SELF_PLAN_PROMPT,
        stop=("<|diff_marker|>",),
    )

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=agent_user_text(req))

    return agent_style(build, Convention.REL1, "aguvis")


def parse_native(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The first pyautogui call's x, y (named or positional) as fractions; > 1 is flagged."""
    return anchored_answer(
        text, Convention.REL1, sent, original, anchor=pyautogui_anchor, rel1_drift=True
    )


def aguvis_7b_720p() -> ModelCard:
    def upstream_text(req: StepRequest) -> str:
        return req.instruction

    native = PromptSpec(
        user_text="",
        system=SYSTEM,
        max_new_tokens=128,
        resize=AGUVIS_720P_RESIZE,
        generation_prompt=GENERATION_PROMPT,
        stop=("<|diff_marker|>",),
    )
    upstream = PromptSpec(
        user_text="",
        system=upstream_prompts.AGUVIS_SYSTEM,
        max_new_tokens=128,
        resize=QWEN_DEFAULT_RESIZE,
    )
    return ModelCard(
        name="aguvis-7b-720p",
        title="Aguvis-7B-720P",
        family="aguvis",
        checkpoint="xlangai/Aguvis-7B-720P",
        backends=("hf", "openai"),
        native=style(native_user_text, native, parse_native, Convention.REL1),
        upstream=style(upstream_text, upstream, upstream_parsers.aguvis, Convention.REL1),
        upstream_preset="upstream-a",
        status="Prompt texts and parsers tested offline; the `<|recipient|>os` prefix needs the "
        "hf backend (or a vLLM request-level template); generation needs a GPU.",
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen2_vl",
        notes="Pre-resized to the 720p training bounds (min 256*28*28, max 46*26*28*28); the "
        "answer is relative, so the bound changes accuracy, not the mapping.",
        agent=_agent(),
    )
