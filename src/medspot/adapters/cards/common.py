"""Pieces shared by the card modules: the harness-choice prompt (models.md 1.4), history
blocks, small builders for StyleSpec, and the card of a model the MedSPOT authors ran no
script for."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, StyleSpec
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "HARNESS_SUFFIX",
    "QWEN_FN_CALL",
    "Parser",
    "harness_parser",
    "harness_style",
    "harness_text",
    "history_lines",
    "native_only_card",
    "pyautogui_anchor",
    "simple_parser",
    "style",
    "with_history",
]

# The function-calling section of the Qwen2.5-VL / Qwen3-VL chat template (Hermes style), which
# the Qwen agent prompts and GUI-Owl's quote verbatim: `{tool}` is the tool's JSON signature.
QWEN_FN_CALL = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tool}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""  # noqa: E501

HARNESS_SUFFIX = (
    "Give the single point to click for this instruction as (x, y), with x and y integers "
    "from 0 (left/top edge) to 1000 (right/bottom edge) of the image. Reply with (x, y) only."
)

Parser = Callable[[str, tuple[int, int], tuple[int, int]], ParsedAnswer]
TextFn = Callable[[StepRequest], str]

_PYAUTOGUI_CALL = re.compile(r"pyautogui\.\w+\s*\(")


def history_lines(req: StepRequest) -> list[str]:
    """Earlier steps as numbered lines (empty unless a history mode is on)."""
    return [f"{i}. {h}" for i, h in enumerate(req.history, 1)]


def with_history(instruction: str, req: StepRequest) -> str:
    """The instruction, preceded by the task overview and earlier steps in history modes."""
    if not req.task_overview and not req.history:
        return instruction
    parts: list[str] = []
    if req.task_overview:
        parts.append(f"Overall task: {req.task_overview}")
    if req.history:
        parts.append("Previous steps:")
        parts.extend(history_lines(req))
    parts.append(f"Current step: {instruction}")
    return "\n".join(parts)


def harness_text(req: StepRequest) -> str:
    """models.md 1.4: the instruction, then the rel1000 point request."""
    return f"{with_history(req.instruction, req)}\n{HARNESS_SUFFIX}"


def style(text: TextFn, base: PromptSpec, parse: Parser, convention: Convention) -> StyleSpec:
    """A StyleSpec whose prompt is `base` with the user text from `text(request)`."""

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=text(req))

    return StyleSpec(build=build, parse=parse, convention=convention)


def simple_parser(
    convention: Convention, *, box_pairs: bool = False, rel1_drift: bool = False
) -> Parser:
    """The common parser (no anchor) under `convention`."""

    def parse(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
        return anchored_answer(
            text, convention, sent, original, box_pairs=box_pairs, rel1_drift=rel1_drift
        )

    return parse


def harness_parser(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The harness-choice rel1000 reader, with models.md 1.3's decimal exception."""
    return anchored_answer(text, Convention.REL1000, sent, original, harness_rel1000=True)


def harness_style(base: PromptSpec) -> StyleSpec:
    """The 1.4 prompt and reader (GPT, Gemma 3, Llama 3.2, Mistral, generic rel1000)."""
    return style(harness_text, base, harness_parser, Convention.REL1000)


def pyautogui_anchor(text: str) -> tuple[int, int] | None:
    """The span of the first `pyautogui.<name>(...)` call (Aguvis, OpenCUA and the GTA1 models
    built on it answer with one), None when the text has none."""
    m = _PYAUTOGUI_CALL.search(text)
    if m is None:
        return None
    end = text.find(")", m.end())
    return (m.start(), len(text) if end < 0 else end + 1)


def native_only_card(
    native: StyleSpec, *, backends: tuple[str, ...] = ("openai", "hf"), **fields: Any
) -> ModelCard:
    """The card of a model the MedSPOT authors ran no script for: its `upstream` style is its
    native prompt, under the `upstream-c` preset; served or in process unless `backends` says
    otherwise. `fields` are the card's other fields."""
    return ModelCard(
        backends=backends, native=native, upstream=native, upstream_preset="upstream-c", **fields
    )
