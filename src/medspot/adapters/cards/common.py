"""Pieces shared by the card modules: the harness-choice prompt (models.md 1.4), history
blocks, and small builders for StyleSpec."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ParsedAnswer, PromptSpec, StyleSpec
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "HARNESS_SUFFIX",
    "Parser",
    "harness_parser",
    "harness_style",
    "harness_text",
    "history_lines",
    "pyautogui_anchor",
    "simple_parser",
    "style",
    "with_history",
]

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
